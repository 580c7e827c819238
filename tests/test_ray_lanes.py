"""The runner on a local Ray instance (2 CPUs, 2 fake GPUs declared as ``num_gpus=2``): one
actor per GPU, each running the local supervisor and a worker process with the fake backend
of two speeds (tests/service_fakes.py ``TwoFakeGpus``; the fake GPU is the one Ray gives the
actor), through the HTTP API. Skipped where ray is not installed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'cudalens[ray]'); "
                                        "the Ray lanes are not tested")

from gpu_runner.report import Evaluation  # noqa: E402
from gpu_runner.service.schema import decode  # noqa: E402
from service_fakes import GPU_SPEED, TwoFakeGpus, variant  # noqa: E402
from test_service_api import body, make_client, wait_job  # noqa: E402

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def flags(tmp_path_factory):
    return tmp_path_factory.mktemp("ray-flags")


@pytest.fixture(scope="module")
def client(flags):
    path = os.pathsep.join([str(TESTS.parent), str(TESTS.parent / "server"), str(TESTS)])
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        with make_client(factory=TwoFakeGpus(str(flags)), ray_address="auto") as c:
            yield c
    finally:
        ray.shutdown()


def result(status) -> Evaluation:
    assert status["state"] == "done", status
    return decode(Evaluation, status["result"])


def fake_gpu(ev: Evaluation, lane: int) -> int:
    """The fake GPU (0 or 1) that Ray gave lane ``lane``, from its device name."""
    name = next(g.info.name for g in ev.gpus if g.index == lane)
    return int(name.rsplit(" ", 1)[1])


def pids(ev: Evaluation) -> dict[int, int]:
    out = {}
    for r in ev.candidates:
        out[r.device] = int(r.verdict.reason.split("passed in pid ")[1].split()[0])
    return out


def test_two_actors_share_an_evaluation_each_row_against_its_own_gpu(client):
    assert [d["index"] for d in client.get("/v1/devices").json()["devices"]] == [0, 1]
    ev = result(wait_job(client, client.post("/v1/evaluate", json=body(
        *[variant(f"c{i}") for i in range(1, 5)])).json()["id"], timeout=120))
    assert [(r.verdict.variant, r.device) for r in ev.candidates] == \
        [("c1", 0), ("c2", 1), ("c3", 0), ("c4", 1)]
    assert sorted(g.info.name for g in ev.gpus) == ["Fake GPU 0", "Fake GPU 1"]
    base = {g.index: g.baseline.median_us for g in ev.gpus}
    for r in ev.candidates:
        b, c = GPU_SPEED[fake_gpu(ev, r.device)]
        assert base[r.device] == b and r.timing.median_us == c
        assert r.speedup.value == pytest.approx(b / c)
    assert len(set(pids(ev).values())) == 2  # two worker processes, one per actor


def test_cancel_stops_both_actors_workers(client):
    before = pids(result(wait_job(client, client.post("/v1/evaluate", json=body(
        variant("a"), variant("b"))).json()["id"], timeout=120)))
    job = client.post("/v1/evaluate", json=body(variant("s1", "@slow"),
                                                variant("s2", "@slow"))).json()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = set(client.get(f"/v1/jobs/{job['id']}").json()["progress"])
        if {"gpu 0: verify: s1 still running", "gpu 1: verify: s2 still running"} <= lines:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"both actors did not start: {lines}")
    client.delete(f"/v1/jobs/{job['id']}")
    assert wait_job(client, job["id"], timeout=60)["state"] == "cancelled"
    after = pids(result(wait_job(client, client.post("/v1/evaluate", json=body(
        variant("a"), variant("b"))).json()["id"], timeout=120)))
    # Each actor's supervisor killed the worker running the cancelled part; fresh ones now.
    assert set(after) == {0, 1} and all(after[i] != before[i] for i in (0, 1))


def test_an_actor_killed_mid_evaluation_has_its_candidates_requeued(client, flags):
    pool = client.app.state.pool
    job = client.post("/v1/evaluate", json=body(variant("c1"), variant("c2", "@hold"),
                                                variant("c3"), variant("c4"))).json()
    deadline = time.monotonic() + 60
    while "gpu 1: verify: c2 holding" not in \
            client.get(f"/v1/jobs/{job['id']}").json()["progress"]:
        assert time.monotonic() < deadline, "lane 1 never held c2"
        time.sleep(0.05)
    ray.kill(pool.slots[1].supervisor.actor)
    (flags / "release").touch()
    status = wait_job(client, job["id"], timeout=120)
    ev = result(status)
    assert [(r.verdict.variant, r.verdict.status, r.device) for r in ev.candidates] == \
        [("c1", "passed", 0), ("c2", "passed", 0), ("c3", "passed", 0), ("c4", "passed", 0)]
    lost = [line for line in status["progress"] if line.startswith("gpu 1 lost")]
    assert len(lost) == 1 and "the Ray actor of GPU lane 1 was lost" in lost[0]
    assert lost[0].endswith("its 2 candidate(s) go to gpu 0")
    b, c = GPU_SPEED[fake_gpu(ev, 0)]
    assert all(r.speedup.value == pytest.approx(b / c) for r in ev.candidates)
    # The lane starts a fresh actor for the next evaluation.
    again = result(wait_job(client, client.post("/v1/evaluate", json=body(
        variant("d1"), variant("d2"))).json()["id"], timeout=120))
    assert [r.device for r in again.candidates] == [0, 1]


def test_profiles_are_refused_with_the_reason_on_ray(client):
    from service_fakes import problem

    resp = client.post("/v1/profile", json=json_body(problem(), variant("a")))
    assert resp.status_code == 200
    answer = resp.json()
    assert answer["available"] is False and answer["kind"] == "failed"
    assert answer["reason"].startswith("profiles are not taken on Ray actors yet")


def json_body(prob, var):
    import json
    from gpu_runner.problem import to_dict
    return json.loads(json.dumps({"problem": to_dict(prob), "variant": to_dict(var)}))
