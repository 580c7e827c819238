"""The Nsight Compute profile in the language server: the optimize job asks a runner that can
profile for the winner's profile (else the baseline's) and keeps it with the run; the hover
shows it from the results store, or says "not profiled" with the reason, and the model runner
(which cannot profile) leaves runs unprofiled. The profile is parsed from ncu's real CSV
format (tests/data/ncu/saxpy_metrics.csv); the optimize run's numbers are the model runner's
(``tests/data/lsp/model_runner.py``: modelled, NOT measurements), the stored records' were
recorded on an H200 (``recorded.py``)."""

from __future__ import annotations

import dataclasses
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from recorded import ROOT, record  # noqa: E402
from model_runner import ModelRunnerClient  # noqa: E402

from cudalens.lsp.bottleneck import profile_summary  # noqa: E402
from cudalens.lsp.config import parse_settings  # noqa: E402
from cudalens.lsp.documents import analyze  # noqa: E402
from cudalens.lsp.hover import hover  # noqa: E402
from cudalens.lsp.jobs import take_profile  # noqa: E402
from cudalens.lsp.results import KernelStatus  # noqa: E402
from cudalens.optimize import optimize  # noqa: E402
from cudalens.runner_client import ProfileAnswer  # noqa: E402
from cudalens.store import ResultsStore, result_key  # noqa: E402
from cudalens.store.records import BASELINE, RunProfile  # noqa: E402
from cudalens.target import load_target  # noqa: E402
from gpu_runner.ncu_csv import parse_profile  # noqa: E402

PROFILE = parse_profile((ROOT / "tests" / "data" / "ncu" / "saxpy_metrics.csv").read_text())
BEST = "vec4+gridstride block=128 grid=full"
CREATED = "2026-11-30T01:00:00+00:00"


@pytest.fixture(scope="module")
def saxpy():
    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    snap = analyze("file:///w/saxpy.cu", target.path, 1, target.text, "utf-16")
    key = result_key(snap.kernels[0].material, "NVIDIA H200/sm_90/132")
    vec4 = target.text.replace("y[i] = a * x[i] + y[i];", "y[i] = fmaf(a, x[i], y[i]);")
    return snap, record("saxpy", key, str(target.path), target.text, {BEST: vec4})


def hover_lines(snap, run, tmp_path) -> list[str]:
    """The hover's bullet lines for ``run`` after a round trip through a SQLite file."""
    store = ResultsStore(tmp_path / "results.db")
    store.put_run(run)
    stored = store.run_for_key(run.key)
    store.close()
    assert stored == run
    offers = stored.offers()
    status = KernelStatus(view=snap.kernels[0], key=stored.key, current=stored, stale=None,
                          offer=offers[0] if offers else None, rejected=frozenset())
    name = snap.name_range(snap.kernels[0])
    found = hover(snap, [status], name.start, None)
    assert found is not None and found.range == name
    return [line[2:] for line in found.contents.value.splitlines() if line.startswith("- ")]


def test_profile_summary_words_ncu_numbers():
    assert profile_summary(PROFILE) == ("achieved occupancy 83%, DRAM throughput 91% of peak, "
                                        "main stalls: long scoreboard 99%, lg throttle <1%, "
                                        "wait <1%")
    none = dataclasses.replace(PROFILE, stalls=())
    assert profile_summary(none).endswith("main stalls: none reported")


def test_hover_shows_the_stored_profile_of_the_winner(saxpy, tmp_path):
    snap, run = saxpy
    cand = run.candidates[0]
    prof = RunProfile(subject=cand.id, label=cand.label, created=CREATED, profile=PROFILE)
    lines = hover_lines(snap, dataclasses.replace(run, profile=prof), tmp_path)
    assert lines[-1] == (f"profile (Nsight Compute, one launch of candidate {BEST}): achieved "
                         f"occupancy 83%, DRAM throughput 91% of peak, main stalls: long "
                         f"scoreboard 99%, lg throttle <1%, wait <1%")
    assert not any("not profiled" in line for line in lines)
    assert lines[-2].startswith("registers: ")


def test_hover_names_a_baseline_profile_and_the_reason_for_none(saxpy, tmp_path):
    snap, run = saxpy
    prof = RunProfile(subject=BASELINE, label=BASELINE, created=CREATED, profile=PROFILE)
    (tmp_path / "a").mkdir()
    lines = hover_lines(snap, dataclasses.replace(run, profile=prof), tmp_path / "a")
    assert lines[-1].startswith("profile (Nsight Compute, one launch of the baseline): "
                                "achieved occupancy 83%,")
    why = RunProfile(subject=BASELINE, label=BASELINE, created=CREATED,
                     reason="ncu failed profiling baseline (exit status 1): ==ERROR== "
                            "ERR_NVGPUCTRPERM - The user does not have permission")
    (tmp_path / "b").mkdir()
    lines = hover_lines(snap, dataclasses.replace(run, profile=why), tmp_path / "b")
    assert lines[-1] == ("stall reasons: not profiled (ncu failed profiling baseline (exit "
                         "status 1): ==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                         "permission)")
    (tmp_path / "c").mkdir()
    lines = hover_lines(snap, run, tmp_path / "c")
    assert lines[-1] == ("stall reasons: not profiled (no Nsight Compute profile was taken for "
                         "this run)")


def test_the_profile_setting_defaults_on_and_is_checked():
    assert parse_settings({})[0].profile is True
    assert parse_settings({"profile": False})[0].profile is False
    settings, problems = parse_settings({"profile": "yes"})
    assert settings.profile is True
    assert problems == ["cudalens.profile: expected true or false, found 'yes'; using the "
                        "default"]


class ProfilingModel(ModelRunnerClient):
    """The model runner plus a profile answer (test-only: the profile is the CSV fixture's)."""

    can_profile = True

    def __init__(self, answer: ProfileAnswer):
        super().__init__()
        self.answer = answer
        self.asked = []

    def try_profile(self, problem, variant):
        self.asked.append((problem, variant))
        return self.answer


@pytest.fixture(scope="module")
def modelled():
    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    client = ModelRunnerClient()
    return optimize(target, client, budget=24), client


def _job():
    return SimpleNamespace(cancel=threading.Event(), kernel="saxpy")


def test_the_job_profiles_the_winner_as_it_was_sent(modelled):
    result, _ = modelled
    assert result.winner is not None
    client = ProfilingModel(ProfileAnswer(PROFILE))
    said = []
    got = take_profile(_job(), client, result, lambda text, pct: said.append(text))
    (problem, variant), = client.asked
    assert problem == result.problem
    sent = [v for b in result.batches for v in b.variants
            if v.label == result.winner.result.verdict.variant]
    assert sent and variant == sent[-1]
    c = result.winner.candidate
    assert (got.label, got.profile, got.reason) == (c.label, PROFILE, "")
    from cudalens.store.from_optimize import run_record
    rec = run_record(result, key="k" * 64, provenance="model", created=CREATED)
    assert got.subject == rec.offers()[0].id
    assert said == [f"profiling {c.label} with Nsight Compute"]


def test_not_available_keeps_the_reason_and_the_model_runner_is_not_asked(modelled):
    result, model = modelled
    no = ProfileAnswer(None, "ncu_missing", "Nsight Compute (ncu) was not found on PATH")
    got = take_profile(_job(), ProfilingModel(no), result, lambda *_: None)
    assert got.profile is None and got.reason == "Nsight Compute (ncu) was not found on PATH"
    assert not model.can_profile  # the model runner says it cannot profile (Runner protocol)
    assert take_profile(_job(), model, result, lambda *_: None) is None


def test_without_a_winner_the_baseline_is_profiled(modelled):
    from cudalens.spec.resolve import build_variant

    result, _ = modelled
    client = ProfilingModel(ProfileAnswer(PROFILE))
    got = take_profile(_job(), client, dataclasses.replace(result, winner=None),
                       lambda *_: None)
    assert (got.subject, got.label, got.profile) == (BASELINE, BASELINE, PROFILE)
    t = result.target
    (_, variant), = client.asked
    assert variant == build_variant("baseline", t.text, t.kernel.qualified_name, t.spec,
                                    t.spec.launch, result.device.sm_count)
    assert variant.source == t.text and len(variant.launches) == len(result.problem.cases)


def test_a_cancelled_job_is_not_profiled(modelled):
    result, _ = modelled
    client = ProfilingModel(ProfileAnswer(PROFILE))
    job = _job()
    job.cancel.set()
    assert take_profile(job, client, result, lambda *_: None) is None and client.asked == []
