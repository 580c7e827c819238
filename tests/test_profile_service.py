"""``POST /v1/profile`` against its schema and the runner client's ``profile`` over real HTTP,
without a GPU: the GPU workers are the fake backends of tests/service_fakes.py, and ``ncu`` is
a shell script standing in for Nsight Compute that prints ncu's real CSV
(tests/data/ncu/saxpy_metrics.csv), ncu's permission error, or nothing for a while, chosen by
a marker in the request file that ``gpu_runner.profile`` wrote. Everything between the HTTP
request and that script is the real code: validation, the GPU's queue, the subprocess, the
parsing and the "not available" answers. A runner process started here (no GPU on CI)
answers "not available: no GPU"."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import gpu_runner.profile as gp
from cudalens.runner_client import ProfileUnavailable, RunnerClient, RunnerError
from gpu_runner.ncu_csv import parse_profile
from gpu_probe import gpu_present
from gpu_runner.problem import to_dict
from gpu_runner.service.app import create_app
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.pool import GpuPool, PoolConfig
from service_fakes import FakeBackend, NoGpuBackend, problem, variant

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT / "tests" / "data" / "ncu" / "saxpy_metrics.csv"
EXPECTED = parse_profile(CSV.read_text())
TOKEN = "profile-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMITS = Limits(startup_s=30, stop_s=2, first_kernel_timeout_s=0.5, kernel_timeout_floor_s=0.3,
                silence_grace_s=0.7)
PERMISSION = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
              "GPU Performance Counters on the target device 0.")
CALLS: list[dict] = []  # one per profile the pool ran: thread, device, start time


@pytest.fixture(scope="module")
def fake_ncu(tmp_path_factory) -> str:
    """An executable standing in for ncu. Its last argument is the request file."""
    path = tmp_path_factory.mktemp("ncu") / "ncu"
    path.write_text(f"""#!/bin/sh
for last; do :; done
if grep -q '@perm' "$last"; then
  echo '==PROF== Connected to process 7'
  echo '{PERMISSION}'
  exit 1
fi
if grep -q '@sleep' "$last"; then sleep 30; fi
if grep -q '@nocompile' "$last"; then
  echo 'profile_launch: kernel.cu(3): error: identifier "q" is undefined' >&2
  exit 3
fi
echo '==PROF== Connected to process 7'
cat '{CSV}'
""")
    path.chmod(0o755)
    return str(path)


def profiling(fn):
    def run(problem_, variant_, *, device_index, timeout_s):
        CALLS.append({"thread": threading.current_thread().name, "device": device_index,
                      "timeout_s": timeout_s, "at": time.time(), "label": variant_.label})
        return fn(problem_, variant_, device_index=device_index, timeout_s=timeout_s)
    return run


def make_pool(ncu, factory=FakeBackend) -> GpuPool:
    fn = profiling(functools.partial(gp.profile_variant, ncu=ncu))
    return GpuPool(PoolConfig(factory=factory, limits=LIMITS, precompile_threads=0,
                              profile_fn=fn))


@pytest.fixture(scope="module")
def client(fake_ncu):
    with TestClient(create_app(make_pool(fake_ncu), token=TOKEN, ready_timeout_s=30),
                    headers=AUTH) as c:
        yield c


def body(marker: str = "", **kw) -> dict:
    out = {"problem": to_dict(problem()), "variant": to_dict(variant("c7", marker))}
    out.update(kw)
    return json.loads(json.dumps(out))


def test_openapi_schema_has_the_profile_endpoint(client):
    schema = client.get("/openapi.json").json()
    post = schema["paths"]["/v1/profile"]["post"]
    assert {"200", "401", "413", "422", "503"} <= set(post["responses"])
    defs = schema["components"]["schemas"]
    req = defs["ProfileRequest"]
    assert set(req["required"]) == {"problem", "variant"}
    assert req["properties"]["timeout_s"]["maximum"] == 600
    assert req.get("additionalProperties") is False
    resp = defs["ProfileResponse"]
    assert resp["required"] == ["available"]
    kinds = next(k["enum"] for k in resp["properties"]["kind"]["anyOf"] if "enum" in k)
    assert set(kinds) == {"no_gpu", "ncu_missing", "no_permission", "timeout",
                          "variant_failed", "failed", "no_profile"}
    assert {"Profile", "Stall"} <= set(defs)
    assert set(defs["Profile"]["properties"]) == {"kernel", "achieved_occupancy_pct",
                                                  "dram_throughput_pct", "stalls", "tool"}


def test_a_profile_comes_back_as_ncu_measured_it(client):
    CALLS.clear()
    r = client.post("/v1/profile", json=body(timeout_s=20))
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["available"] is True and got["device"] == 0 and got["kind"] is None
    p = got["profile"]
    assert p["kernel"] == "saxpy" and p["tool"] == "Nsight Compute"
    assert p["achieved_occupancy_pct"] == 83.47 and p["dram_throughput_pct"] == 91.22
    assert [(s["reason"], s["cycles_per_issue"]) for s in p["stalls"]] == \
        [(s.reason, s.cycles_per_issue) for s in EXPECTED.stalls]
    assert [s["reason"] for s in p["stalls"]] == ["long scoreboard", "lg throttle", "wait"]
    # run by the GPU's own queue thread, for its device, with the request's time limit
    (call,) = CALLS
    assert call["thread"] == "cudalens-gpu0" and call["device"] == 0
    assert call["timeout_s"] == 20 and call["label"] == "c7"


@pytest.mark.parametrize("marker,timeout_s,kind,reason", [
    ("@perm", 20, "no_permission",
     "ncu failed profiling c7 (exit status 1): ==ERROR== ERR_NVGPUCTRPERM - The user does not "
     "have permission to access NVIDIA GPU Performance Counters on the target device 0."),
    ("@nocompile", 20, "variant_failed",
     "ncu failed profiling c7 (exit status 3): profile_launch: kernel.cu(3): error: identifier "
     "\"q\" is undefined"),
    ("@sleep", 0.5, "timeout", "ncu did not finish profiling c7 within 0.5 s"),
])
def test_no_profile_is_a_clear_not_available_answer(client, marker, timeout_s, kind, reason):
    started = time.monotonic()
    r = client.post("/v1/profile", json=body(marker, timeout_s=timeout_s))
    assert r.status_code == 200, r.text
    assert r.json() == {"available": False, "device": 0, "profile": None, "kind": kind,
                        "reason": reason}
    assert time.monotonic() - started < 10  # the sleeping "ncu" was killed, not waited for


def test_missing_ncu_is_not_available(client, monkeypatch):
    monkeypatch.setattr(gp, "find_ncu", lambda: None)
    pool = make_pool(None)
    with TestClient(create_app(pool, token=TOKEN, ready_timeout_s=30), headers=AUTH) as c:
        r = c.post("/v1/profile", json=body())
    assert r.status_code == 200
    assert r.json()["kind"] == "ncu_missing"
    assert r.json()["reason"] == ("Nsight Compute (ncu) was not found on PATH, under "
                                  "$CUDA_HOME/bin or in /usr/local/cuda/bin")


def test_a_profile_waits_for_the_evaluation_queued_before_it(client):
    CALLS.clear()
    job = client.post("/v1/evaluate", json={
        "problem": to_dict(problem()), "baseline": to_dict(variant("baseline")),
        "candidates": [to_dict(variant("c1")), to_dict(variant("c2"))], "repetitions": 5})
    assert job.status_code == 202
    r = client.post("/v1/profile", json=body())
    assert r.json()["available"] is True
    status = client.get(f"/v1/jobs/{job.json()['id']}").json()
    assert status["state"] == "done"
    assert CALLS[0]["at"] >= status["finished_at"] > 0


def test_auth_and_malformed_requests(client):
    r = client.post("/v1/profile", json=body(), headers={"Authorization": "Bearer wrong"})
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"
    r = client.post("/v1/profile", json={"problem": to_dict(problem())})
    assert r.status_code == 422
    assert r.json()["message"] == "malformed request: variant: Field required"
    r = client.post("/v1/profile", json=body(timeout_s=0))
    assert r.status_code == 422 and r.json()["message"].startswith(
        "malformed request: timeout_s: Input should be greater than 0")
    r = client.post("/v1/profile", json=body(shell="rm -rf /"))
    assert r.status_code == 422 and "shell: Extra inputs are not permitted" in r.json()["message"]
    one_launch = body()
    one_launch["variant"]["launches"] = one_launch["variant"]["launches"][:1]
    r = client.post("/v1/profile", json=one_launch)
    assert r.status_code == 422
    assert r.json() == {"error": "invalid_request", "message": "variant 'c7': expected one "
                        "launch per case (2), found 1"}
    unknown = body()
    unknown["variant"]["name"] = "not_there"
    r = client.post("/v1/profile", json=unknown)
    assert r.json()["message"] == ("variant 'c7': unknown kernel 'not_there': 'not_there' does "
                                   "not occur in the variant's source")
    r = client.post("/v1/profile", json=body(device=4))
    assert r.status_code == 422 and r.json()["error"] == "unknown_device"


def test_without_a_gpu_the_answer_is_not_available(fake_ncu):
    with TestClient(create_app(make_pool(fake_ncu, NoGpuBackend), token=TOKEN,
                               ready_timeout_s=30), headers=AUTH) as c:
        r = c.post("/v1/profile", json=body())
    assert r.status_code == 200
    got = r.json()
    assert (got["available"], got["kind"], got["device"]) == (False, "no_gpu", -1)
    assert got["reason"].startswith("no GPU on this runner: the CUDA driver found no usable "
                                    "GPU: fake.")


# -- the client, over real HTTP -----------------------------------------------------------------

@pytest.fixture(scope="module")
def http_runner(fake_ncu):
    import uvicorn

    from gpu_runner.service.serve import bind

    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(make_pool(fake_ncu), token=TOKEN),
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/v1/health", headers=AUTH)
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    yield url
    server.should_exit = True
    thread.join(15)


def test_client_profile_and_its_not_available_answer(http_runner):
    with RunnerClient(http_runner, token=TOKEN) as client:
        assert client.profile(problem(), variant("c7")) == EXPECTED
        answer = client.try_profile(problem(), variant("c7", "@perm"))
        assert answer.profile is None and answer.kind == "no_permission"
        assert "ERR_NVGPUCTRPERM" in answer.reason
        with pytest.raises(ProfileUnavailable) as e:
            client.profile(problem(), variant("c7", "@perm"))
        assert e.value.kind == "no_permission"
        assert str(e.value).startswith("no profile of c7: ncu failed profiling c7 (exit "
                                       "status 1): ==ERROR== ERR_NVGPUCTRPERM")
        with pytest.raises(RunnerError, match=r"refused POST /profile: 422 invalid_request: "
                                              r"variant 'c7': expected one launch per case"):
            client.profile(problem(), variant("c7", cases=1))


@pytest.mark.skipif(gpu_present(), reason="this machine has a GPU")
def test_a_runner_process_without_gpu_answers_not_available(tmp_path):
    port_file = tmp_path / "port"
    env = dict(os.environ, CUDALENS_RUNNER_TOKEN=TOKEN)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "server"),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "gpu_runner.service", "--port", "0",
                             "--port-file", str(port_file), "--log-level", "warning"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.05)
        url = f"http://127.0.0.1:{int(port_file.read_text())}"
        while True:
            try:
                r = httpx.post(f"{url}/v1/profile", json=body(), headers=AUTH, timeout=60)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.status_code == 200, r.text
        got = r.json()
        assert (got["available"], got["kind"], got["profile"]) == (False, "no_gpu", None)
        assert got["reason"].startswith("no GPU on this runner: ")
        assert "cudalens runs kernels on an NVIDIA GPU" in got["reason"]
        assert httpx.post(f"{url}/v1/profile", json=body()).status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)
