"""The runner on a local Ray instance (2 CPUs, 2 fake GPUs declared as ``num_gpus=2``): one
actor per GPU, each running the local supervisor and a worker process with the fake backend
of two speeds (tests/service_fakes.py ``TwoFakeGpus``; the fake GPU is the one Ray gives the
actor), through the HTTP API; sanitizer runs in the actors (``service_fakes.actor_sanitize``);
captured arrays named by a path sent inline. Skipped where ray is not installed. One Ray
instance for the module (its start is most of the time: ~10 s here, allowed
``RAY_STARTUP_S`` per actor on a loaded 2-core CI machine)."""

from __future__ import annotations

import os
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'cudalens[ray]', "
                                        "or the test extra); the Ray lanes are not tested")

from fastapi.testclient import TestClient  # noqa: E402

from gpu_runner.problem import to_dict  # noqa: E402
from gpu_runner.report import Evaluation  # noqa: E402
from gpu_runner.service.app import create_app  # noqa: E402
from gpu_runner.service.schema import decode  # noqa: E402
from gpu_runner.workers.pool import GpuPool, PoolConfig  # noqa: E402
from service_fakes import (GPU_SPEED, TwoFakeGpus, actor_sanitize, captured_problem,  # noqa: E402
                           problem, variant)
from test_service_api import AUTH, LIMITS, TOKEN, body, wait_job  # noqa: E402

TESTS = Path(__file__).resolve().parent
RAY_STARTUP_S = 120  # an actor's start: a Ray worker process, then its GPU worker process
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def test_a_cluster_without_gpus_leaves_the_runner_unavailable_saying_so(monkeypatch):
    # Before the module's Ray instance: "--ray local" starts one here, which sees no GPU
    # (CUDA_VISIBLE_DEVICES empty), and stops it again when the pool closes.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    pool = GpuPool(PoolConfig(ray_address="local", limits=LIMITS))
    pool.start()
    try:
        assert pool.wait_ready(RAY_STARTUP_S) == "unavailable"
        assert pool.message.startswith("the Ray cluster at local has no GPU (cluster "
                                       "resources: {"), pool.message
        assert pool.slots == {}
    finally:
        pool.close()
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def flags(tmp_path_factory):
    return tmp_path_factory.mktemp("ray-flags")


@pytest.fixture(scope="module")
def client(flags):
    path = os.pathsep.join([str(TESTS.parent), str(TESTS.parent / "server"), str(TESTS)])
    env = {"PYTHONPATH": path, "RAY_USAGE_STATS_ENABLED": "0"}
    # address="local": a fresh instance here even where RAY_ADDRESS names a cluster.
    ray.init(address="local", num_cpus=2, num_gpus=2, include_dashboard=False,
             log_to_driver=False, runtime_env={"env_vars": env})
    pool = GpuPool(PoolConfig(factory=TwoFakeGpus(str(flags)), ray_address="auto",
                              limits=replace(LIMITS, startup_s=RAY_STARTUP_S),
                              sanitize_fn=actor_sanitize))
    try:
        with TestClient(create_app(pool, token=TOKEN, ready_timeout_s=2 * RAY_STARTUP_S),
                        headers=AUTH) as c:
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
        if {"verify: s1 on case 'nominal', seed 1", "verify: s2 on case 'nominal', seed 1"} <= lines:
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


def sanitize(client, prob, var, **kw):
    resp = client.post("/v1/sanitize", json={"problem": to_dict(prob), "variant": to_dict(var),
                                             **kw})
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_sanitizer_runs_in_the_actor_on_its_gpu(client):
    answer = sanitize(client, problem(), variant("a"), tools=["memcheck", "racecheck"],
                      device=1, timeout_s=7)
    assert answer["available"] is True and answer["device"] == 1
    runs = answer["report"]["runs"]
    assert [r["tool"] for r in runs] == ["memcheck", "racecheck"]
    found = re.fullmatch(r"pid (\d+), CUDA_VISIBLE_DEVICES=(\S+), device_index=(\d+), "
                         r"timeout_s=(\S+)", runs[0]["note"])
    assert found, runs[0]["note"]
    pid, visible, index, timeout = found.groups()
    assert int(pid) != os.getpid()  # in the actor's process, not the runner's
    assert visible in ("0", "1") and index == "0" and timeout == "7"  # Ray's GPU is device 0
    # The tool's own error comes back with its kind and message.
    missing = sanitize(client, problem(), variant("b", "@nosanitizer"))
    assert missing["available"] is False and missing["kind"] == "sanitizer_missing"
    assert missing["reason"].startswith("compute-sanitizer was not found on the node of pid ")
    assert int(missing["reason"].rsplit(" ", 1)[1]) != os.getpid()


def test_captured_arrays_named_by_a_path_reach_the_actors_inline(client, tmp_path):
    prob = captured_problem(str(tmp_path))
    assert prob.cases[1].captured.path and not prob.cases[1].captured.payload
    status = wait_job(client, client.post("/v1/evaluate", json=body(
        variant("c1"), variant("c2"), problem=to_dict(prob))).json()["id"], timeout=120)
    ev = result(status)
    assert ev.error == "" and [r.verdict.status for r in ev.candidates] == ["passed", "passed"]
    for lane in (0, 1):
        assert f"gpu {lane}: captured case 'ragged' arrived inline" in status["progress"]
    report = sanitize(client, prob, variant("a"), tools=["memcheck"])["report"]
    assert report["case"] == "inline: ragged"
