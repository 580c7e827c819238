"""The deterministic model runner (``tests/data/lsp/model_runner.py``) that CI optimizes
against: its answers depend on a variant's structure only, rank structural changes the way
its documented model says, are labelled as a model everywhere a user could read them, and
are the same in-process, as a worker backend behind the live runner service, and through
``cudalens optimize`` (CLI) against that service."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from expected import expected  # noqa: E402
from live_fake_runner import fake_runner_process  # noqa: E402
from model_runner import (BANDWIDTH_GBPS, BASE_ACCESS, BLOCK_US, MODEL_DEVICE,  # noqa: E402
                          OVERHEAD_US, ModelBackend, ModelRunnerClient, features,
                          launch_factor, model_time_us)
from scripted import ScriptedVerdicts  # noqa: E402
from service_fakes import problem, variant  # noqa: E402

from gpu_runner.problem import Launch  # noqa: E402
from gpu_runner.workers.protocol import EvaluateSpec, EvaluateTask  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "model-runner-token-0123456789"
TILED = """__global__ void t(const float* __restrict__ in, float* out, int n)
{
    __shared__ float tile[32][33];
    tile[threadIdx.y][threadIdx.x] = in[threadIdx.x];
    out[threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}
"""


def _with_source(v, source: str):
    return dataclasses.replace(v, source=source)


def test_the_same_request_gets_the_same_answer_whatever_the_labels():
    p, base = problem(1), variant("baseline", cases=1)
    cands = [variant("c1", cases=1), _with_source(variant("c2", cases=1), TILED)]
    first = ModelRunnerClient().evaluate(p, base, cands, repetitions=9)
    again = ModelRunnerClient().evaluate(p, base, cands, repetitions=9)
    assert first == again
    renamed = [dataclasses.replace(c, label=f"x{i}") for i, c in enumerate(cands)]
    other = ModelRunnerClient().evaluate(p, base, renamed, repetitions=9)
    assert [c.timing.median_us for c in other.candidates] == \
        [c.timing.median_us for c in first.candidates]
    assert [c.verdict.variant for c in other.candidates] == ["x0", "x1"]


def test_time_is_the_documented_formula_of_bytes_and_launch():
    p, v = problem(1), variant("baseline", cases=1)
    case, launch = p.cases[0], v.launches[0]
    assert features(v) == ()
    want = (OVERHEAD_US + BLOCK_US * launch.grid[0]
            + case.bytes_moved / (BANDWIDTH_GBPS * 1e3 * BASE_ACCESS * launch_factor(launch)))
    assert model_time_us(p, v) == pytest.approx(want, rel=1e-12)
    t = ModelRunnerClient().evaluate(p, v, [], repetitions=7).baseline
    assert (t.median_us, t.samples) == (pytest.approx(want, rel=1e-12), 7)
    assert t.achieved_gbps == pytest.approx(case.bytes_moved / (want * 1e3))
    assert t.percent_of_copy == pytest.approx(t.achieved_gbps / BANDWIDTH_GBPS * 100)


def test_structure_and_launch_move_the_time_as_the_model_says():
    p, base = problem(1), variant("baseline", cases=1)
    tiled = _with_source(base, TILED)
    assert [f.name for f in features(tiled)] == ["restrict pointers", "shared-memory staging"]
    assert model_time_us(p, tiled) < model_time_us(p, base)
    fast = dataclasses.replace(base, options=("-use_fast_math",))
    assert model_time_us(p, fast) == model_time_us(p, base)  # memory-bound: no change
    grid = base.launches[0].grid
    tiny = dataclasses.replace(base, launches=(Launch(grid=(grid[0] * 8, 1, 1),
                                                      block=(32, 1, 1)),))
    assert launch_factor(tiny.launches[0]) < launch_factor(base.launches[0]) <= 1.0
    assert model_time_us(p, tiny) > model_time_us(p, base)
    with pytest.raises(ValueError, match=r"expected 1 to 1024 threads per block, found "
                                         r"\(2048, 1, 1\)"):
        launch_factor(Launch(grid=(1, 1, 1), block=(2048, 1, 1)))


def test_everything_a_user_reads_says_it_is_a_model(tmp_path):
    p, base = problem(1), variant("baseline", cases=1)
    ev = ModelRunnerClient().evaluate(p, base, [variant("c1", cases=1)])
    assert ev.device == MODEL_DEVICE and MODEL_DEVICE.name == "model GPU (not a measurement)"
    (c,) = ev.candidates
    assert (c.verdict.status, c.verdict.reason) == (
        "passed", "model verdict, not a measurement: nothing was compiled or run (features: "
                  "none of the modelled features)")
    assert "not measured on any GPU" in ModelRunnerClient.provenance
    f = tmp_path / "s.json"
    f.write_text(json.dumps({"candidates": [{"marker": "@bad", "status": "compile_error",
                                             "log": "no"}]}))
    scripted = ModelRunnerClient(scripted=ScriptedVerdicts(f))
    assert scripted.provenance.endswith("test-only candidates get scripted verdicts from s.json")
    (bad,) = scripted.evaluate(p, base, [variant("c1", "@bad", cases=1)]).candidates
    assert (bad.verdict.status, bad.compile.ok, bad.timing) == ("compile_error", False, None)


def test_progress_uses_the_real_runners_lines():
    said = []
    p = problem(1)
    ModelRunnerClient().evaluate(p, variant("baseline", cases=1), [variant("c1", cases=1)],
                                 repetitions=10, on_event=lambda e: said.append(e.text()))
    assert said == ["compile: baseline", "compile: c1", "verify: baseline on case 'nominal', "
                    "seed 1", "verify: c1 on case 'nominal', seed 1",
                    *[f"timing: round {r} of at most 10" for r in (1, 3, 5, 7, 9)]]


def test_the_backend_answers_as_the_client_does():
    p, base = problem(2), variant("baseline")
    cands = (variant("c1"), _with_source(variant("c2"), TILED))
    backend = ModelBackend()
    task = EvaluateTask(EvaluateSpec(p, base, cands, repetitions=5), kernel_timeout_s=2.0)
    assert backend.evaluate(task, lambda _m: None) == \
        ModelRunnerClient().evaluate(p, base, cands, repetitions=5)
    assert [r.registers for r in backend.compile(cands)] == [16, 24]
    assert (backend.device_info(), backend.device_count(), backend.wedged()) == \
        (MODEL_DEVICE, 1, "")


def test_cudalens_optimize_against_the_live_service_with_the_model_finds_the_expected_winner(
        tmp_path):
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        (tmp_path / name).write_text((ROOT / "examples" / name).read_text())
    env = dict(os.environ, CUDALENS_RUNNER_TOKEN=TOKEN)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [x for x in [env.get("PYTHONPATH")] if x])
    out = tmp_path / "r.json"
    with fake_runner_process(tmp_path, TOKEN, backend="model") as url:
        done = subprocess.run([sys.executable, "-m", "cudalens", "optimize",
                               str(tmp_path / "saxpy.cu"), "--proposer", "builtin", "--budget",
                               "8", "--repetitions", "5", "--json", str(out)],
                              capture_output=True, text=True, cwd=tmp_path, timeout=300,
                              env=dict(env, CUDALENS_RUNNER_URL=url))
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(out.read_text())
    want = expected("saxpy", 8, 5).run
    assert got["device"]["name"] == MODEL_DEVICE.name
    assert got["winner"]["label"] == want["winner"]["label"]
    assert got["winner"]["speedup"] == want["winner"]["speedup"]
    assert got["diff"].splitlines()[2:] == want["diff"].splitlines()[2:]
    assert f"{want['winner']['speedup']['value']:.2f}x" in done.stdout
