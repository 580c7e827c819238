"""One evaluation split over two fake GPUs of different speeds (tests/service_fakes.py
``TwoFakeGpus``: baseline 100 us / candidate 50 us on GPU 0, 60 us / 40 us on GPU 1), through
the HTTP API with real spawned worker processes; no GPU needed."""

from __future__ import annotations

import time

import pytest

from gpu_runner.report import Evaluation
from gpu_runner.service.schema import decode
from gpu_runner.problem import Launch
from gpu_runner.workers.split import deal, deal_indices
from service_fakes import GPU_SPEED, TwoFakeGpus, variant
from test_service_api import body, make_client, wait_job


@pytest.fixture(scope="module")
def client():
    with make_client(factory=TwoFakeGpus()) as c:
        yield c


def result(status) -> Evaluation:
    assert status["state"] == "done", status
    return decode(Evaluation, status["result"])


def check_speedups_against_own_gpu(ev: Evaluation) -> None:
    baselines = {g.index: g.baseline.median_us for g in ev.gpus}
    for row in ev.candidates:
        own = baselines[row.device]
        assert row.speedup.value == pytest.approx(own / row.timing.median_us)
        assert row.speedup.value == pytest.approx(GPU_SPEED[row.device][0] /
                                                  GPU_SPEED[row.device][1])


def test_deal_is_round_robin_over_at_most_as_many_lanes_as_candidates():
    vs = [variant(f"c{i}") for i in range(5)]
    assert [[v.label for v in p] for p in deal(vs, 2)] == [["c0", "c2", "c4"], ["c1", "c3"]]
    assert [[v.label for v in p] for p in deal(vs[:1], 2)] == [["c0"]]
    assert deal([], 3) == [()]
    with pytest.raises(ValueError, match="at least one GPU; found 0"):
        deal(vs, 0)


def at_block(v, block: int, label: str):
    """``v`` under another launch (``block`` threads per block), labelled ``label``: what the
    optimize flow sends as ``LABEL@user`` for a drop-in check (``cudalens.dropin``)."""
    from dataclasses import replace
    return replace(v, label=label, launches=tuple(
        Launch(grid=(-(-n // block), 1, 1), block=(block, 1, 1)) for n in (1 << 20, 100_003)))


def test_deal_keeps_label_at_tag_with_label():
    # A confirmation batch: three candidates under their own launches, then two of them again
    # under the user's launch (LABEL@user), which go to their candidate's GPU.
    c1, c2, c3 = variant("c1", "@a"), variant("c2", "@b"), variant("c3", "@c")
    vs = [c1, c2, c3, at_block(c1, 128, "c1@user"), at_block(c3, 128, "c3@user")]
    assert deal_indices(vs, 2) == [[0, 3], [1, 2, 4]]
    assert [[v.label for v in p] for p in deal(vs, 2)] == \
        [["c1", "c1@user"], ["c2", "c3", "c3@user"]]
    assert deal_indices(vs, 3) == [[0, 3], [1], [2, 4]]
    # One kernel under several launches (a block-size sweep) is still spread over the GPUs, and
    # a tag without its candidate in the request is a candidate of its own.
    sweep = [at_block(variant("b"), b, f"block{b}") for b in (64, 128, 256, 512)]
    assert deal_indices(sweep, 2) == [[0, 2], [1, 3]]
    assert deal_indices([variant("x@user"), variant("y"), variant("y@user"), variant("z")], 2) \
        == [[0, 3], [1, 2]]


def test_an_evaluation_uses_both_gpus_each_row_against_its_own_baseline(client):
    cands = [variant(f"c{i}") for i in range(1, 6)]
    job = client.post("/v1/evaluate", json=body(*cands, devices=[0, 1])).json()
    assert job["device"] == 0
    status = wait_job(client, job["id"])
    ev = result(status)
    assert [r.verdict.variant for r in ev.candidates] == ["c1", "c2", "c3", "c4", "c5"]
    assert [r.device for r in ev.candidates] == [0, 1, 0, 1, 0]
    assert [(g.index, g.info.name, g.info.sm_count, g.baseline.median_us) for g in ev.gpus] == \
        [(0, "Fake GPU 0", 132, 100.0), (1, "Fake GPU 1", 114, 60.0)]
    assert [r.speedup.value for r in ev.candidates] == [2.0, 1.5, 2.0, 1.5, 2.0]
    check_speedups_against_own_gpu(ev)
    # Each row was verified by the worker of the GPU it names.
    pids = {i: s.supervisor.worker_pid for i, s in client.app.state.pool.slots.items()}
    for row in ev.candidates:
        assert f"passed in pid {pids[row.device]} " in row.verdict.reason
    assert ev.device.name == "Fake GPU 0" and ev.baseline.median_us == 100.0
    assert "split over GPUs 0, 1: 3, 2 candidate(s)" in status["progress"]
    assert any(line.startswith("gpu 1: probe") for line in status["progress"])


def test_a_drop_in_check_is_timed_on_the_gpu_of_its_candidate(client):
    c1, c2, c3 = variant("c1", "@a"), variant("c2", "@b"), variant("c3", "@c")
    sent = [c1, c2, c3, at_block(c1, 128, "c1@user"), at_block(c3, 128, "c3@user")]
    status = wait_job(client, client.post("/v1/evaluate", json=body(
        *sent, devices=[0, 1])).json()["id"])
    ev = result(status)
    assert [(r.verdict.variant, r.device) for r in ev.candidates] == \
        [("c1", 0), ("c2", 1), ("c3", 1), ("c1@user", 0), ("c3@user", 1)]
    assert "split over GPUs 0, 1: 2, 3 candidate(s)" in status["progress"]
    check_speedups_against_own_gpu(ev)


def test_device_names_the_first_gpu_of_a_split(client):
    ev = result(wait_job(client, client.post("/v1/evaluate", json=body(
        variant("a"), variant("b"), device=1, devices=[0])).json()["id"]))
    assert [r.device for r in ev.candidates] == [1, 0]
    assert [g.index for g in ev.gpus] == [1, 0] and ev.baseline.median_us == 60.0
    check_speedups_against_own_gpu(ev)


def test_one_gpu_rows_name_their_gpu(client):
    ev = result(wait_job(client, client.post("/v1/evaluate", json=body(
        variant("a"), device=1)).json()["id"]))
    assert ev.candidates[0].device == 1 and [g.index for g in ev.gpus] == [1]
    assert ev.candidates[0].speedup.value == 1.5


def test_unknown_device_in_devices_is_422(client):
    resp = client.post("/v1/evaluate", json=body(variant("a"), devices=[0, 7]))
    assert resp.status_code == 422
    assert "device 7 is not served by this runner (devices: 0, 1)" in resp.json()["message"]


def test_cancel_stops_both_gpus(client):
    pool = client.app.state.pool
    before = {i: len(s.supervisor.events) for i, s in pool.slots.items()}
    job = client.post("/v1/evaluate", json=body(variant("s1", "@slow"), variant("s2", "@slow"),
                                                devices=[0, 1])).json()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        lines = client.get(f"/v1/jobs/{job['id']}").json()["progress"]
        if {"verify: s1 on case 'nominal', seed 1", "verify: s2 on case 'nominal', seed 1"} <= set(lines):
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"both GPUs did not start: {lines}")
    client.delete(f"/v1/jobs/{job['id']}")
    assert wait_job(client, job["id"])["state"] == "cancelled"
    for i, s in pool.slots.items():
        deadline = time.monotonic() + 10
        while not any(e.kind == "cancelled" for e in s.supervisor.events[before[i]:]):
            assert time.monotonic() < deadline, f"GPU {i}'s worker was not stopped"
            time.sleep(0.05)


def test_a_gpu_lost_mid_evaluation_requeues_its_candidates_on_the_other(tmp_path):
    with make_client(factory=TwoFakeGpus(str(tmp_path)), split=True) as c:
        cands = [variant("c1"), variant("c2", "@lose-gpu1"), variant("c3"), variant("c4")]
        status = wait_job(c, c.post("/v1/evaluate", json=body(*cands)).json()["id"])
        ev = result(status)
        assert [(r.verdict.variant, r.verdict.status, r.device) for r in ev.candidates] == \
            [("c1", "passed", 0), ("c2", "passed", 0), ("c3", "passed", 0), ("c4", "passed", 0)]
        assert [g.index for g in ev.gpus] == [0]
        check_speedups_against_own_gpu(ev)
        lost = [line for line in status["progress"] if line.startswith("gpu 1 lost")]
        assert len(lost) == 1 and "fake GPU 1 fell off the bus" in lost[0]
        assert lost[0].endswith("its 2 candidate(s) go to gpu 0")


def test_a_captured_case_is_replayed_on_every_gpu_of_a_split(client, tmp_path):
    from gpu_runner.problem import to_dict
    from service_fakes import captured_problem

    prob = captured_problem(str(tmp_path))
    status = wait_job(client, client.post("/v1/evaluate", json=body(
        variant("c1"), variant("c2"), problem=to_dict(prob), devices=[0, 1])).json()["id"])
    ev = result(status)
    assert ev.error == "" and [(r.verdict.status, r.device) for r in ev.candidates] == \
        [("passed", 0), ("passed", 1)]
    path = prob.cases[1].captured.path
    for lane in (0, 1):  # local workers read the file where the runner is
        assert f"gpu {lane}: captured case 'ragged' arrived as the path {path}" in \
            status["progress"]


def test_inline_paths_reads_a_captured_file_and_leaves_what_it_cannot_read(tmp_path):
    import base64
    from dataclasses import replace

    from gpu_runner.captured import captured_inputs, inline_paths
    from service_fakes import captured_problem

    prob = captured_problem(str(tmp_path))
    data = prob.cases[1].captured
    inlined = inline_paths(prob)
    got = inlined.cases[1].captured
    assert got.path == "" and got.sha256 == data.sha256
    assert base64.b64decode(got.payload) == (tmp_path / "captured.npz").read_bytes()
    assert inlined.cases[0] == prob.cases[0]
    assert captured_inputs(inlined.cases[1])["x"][:3].tolist() == [0.0, 0.25, 0.5]
    gone = replace(prob, cases=(prob.cases[0], replace(prob.cases[1], captured=replace(
        data, path=str(tmp_path / "missing.npz")))))
    assert inline_paths(gone) == gone  # the worker says it cannot read it, as a local run
