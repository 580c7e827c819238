"""The drop-in flow (``cudalens.dropin``) through a live runner process that splits every
evaluation over two fake GPUs (``--split``; ``launch_fakes.LaunchAwareBackend``: the
launch-aware verdicts of tests/test_dropin.py in real worker processes): every row names its
GPU, a candidate's run under the user's launch (``LABEL@user``) is timed on the candidate's own
GPU, and the result says the same as on one GPU. Also the sanitizer check of the original on
that runner (its status kept for the run's record)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.dropin import describe
from cudalens.optimize import optimize
from cudalens.runner_client import RunnerClient
from cudalens.sanitize_check import check_original_status
from cudalens.target import load_target
from live_fake_runner import fake_runner_process

HOST = Path(__file__).resolve().parent.parent / "examples" / "host" / "layernorm"
NEW = "block = 128, grid = ceil_div(rows, 4)"
TOKEN = "split-dropin-token-0123456789"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("split-runner")
    lines: list[str] = []
    with fake_runner_process(folder, TOKEN, backend="launch_fakes:LaunchAwareBackend",
                             split=True) as url:
        with RunnerClient(url, token=TOKEN) as client:
            target = load_target(HOST / "layernorm.cu")
            status, _found = check_original_status(target, client)
            # confirm=2: three candidates confirmed (two fastest, one other family), then their
            # @user runs; dealt round-robin alone, c9@user would land on the other GPU.
            yield optimize(target, client, budget=8, prune=False, confirm=2,
                           on_event=lambda event: lines.append(event.text())), \
                lines, status


def test_every_batch_is_split_and_each_row_names_its_gpu(run):
    result, lines, _ = run
    assert result.confirmed
    for batch in result.batches:
        rows = batch.evaluation.candidates
        assert {r.device for r in rows} == ({0, 1} if len(rows) > 1 else {0})
        assert [g.index for g in batch.evaluation.gpus] == sorted({r.device for r in rows})
        assert [g.info.name for g in batch.evaluation.gpus] == \
            [f"Fake GPU {r}" for r in sorted({r.device for r in rows})]
    assert any(line.startswith("split over GPUs 0, 1: ") for line in lines)


def test_a_drop_in_check_runs_on_its_candidates_gpu(run):
    result, _, _ = run
    confirmation = result.batches[-1]
    labels = [v.label for v in confirmation.variants]
    device = {v.label: r.device for v, r in zip(confirmation.variants,
                                                 confirmation.evaluation.candidates)}
    users = [label for label in labels if label.endswith("@user")]
    assert users  # the warp-per-row candidates change the launch
    for label in users:
        assert device[label] == device[label.removesuffix("@user")]
    checked = [r for r in result.rows if r.launch_change is not None and r.drop_in is not None]
    assert checked
    for row in checked:
        assert row.drop_in.result.device == row.result.device


def test_the_words_are_those_of_one_gpu(run):
    result, _, _ = run
    warp = [r for r in result.rows if "warp-per-row" in r.candidate.family
            and r.drop_in is not None]
    plain = [r for r in warp if "+gridstride" not in r.candidate.family]
    strided = [r for r in warp if "+gridstride" in r.candidate.family]
    assert plain and strided
    for row in plain:
        assert row.drop_in.result.verdict.status == "mismatch"
        assert describe(row.result.speedup, row.drop_in, row.launch_change) == \
            f"needs a new launch: 14.80x with {NEW}"
    for row in strided:
        assert describe(row.result.speedup, row.drop_in, row.launch_change) == \
            f"1.80x as a drop-in; 14.50x with {NEW}"
    assert result.best_drop_in is strided[0] and result.winner is plain[0]


def test_the_sanitizer_check_runs_on_the_split_runner(run):
    _, _, status = run
    assert status.state == "clean", status
    assert status.reason.startswith("the ragged case at rows=513, cols=513 (memcheck ")
