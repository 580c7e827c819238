"""The runner's HTTP API against its schema: well-formed and malformed requests, the token,
body size, unknown jobs, devices and kernels (FastAPI's TestClient; workers are real spawned
processes with the fake backends of tests/service_fakes.py, so no GPU is needed)."""

from __future__ import annotations

import functools
import json
import time

import pytest
from fastapi.testclient import TestClient

from gpu_runner.problem import to_dict
from gpu_runner.report import Evaluation
from gpu_runner.service.app import create_app
from gpu_runner.service.schema import decode
from gpu_runner.session import GPU_EXTRA
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.pool import GpuPool, PoolConfig
from service_fakes import FakeBackend, NoGpuBackend, problem, two_devices, variant

TOKEN = "t0ken-for-the-tests-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LIMITS = Limits(startup_s=30, stop_s=2, first_kernel_timeout_s=0.5, kernel_timeout_floor_s=0.3,
                silence_grace_s=0.7)
COMPILED: list[tuple[str, str]] = []


def record_compile(v, arch, cache_dir):
    COMPILED.append((v.label, arch))


def make_client(factory=FakeBackend, token=TOKEN, max_body_bytes=64 * 1024, **pool_kw):
    pool = GpuPool(PoolConfig(factory=factory, limits=LIMITS, compile_fn=record_compile,
                              **pool_kw))
    app = create_app(pool, token=token, max_body_bytes=max_body_bytes, ready_timeout_s=30)
    return TestClient(app, headers=AUTH if token else {})


@pytest.fixture(scope="module")
def client():
    with make_client() as c:
        yield c


def body(*candidates, **kw):
    out = {"problem": to_dict(problem()), "baseline": to_dict(variant("baseline")),
           "candidates": [to_dict(c) for c in candidates], "repetitions": 5}
    out.update(kw)
    return json.loads(json.dumps(out))  # tuples become lists, as on the wire


def wait_job(client, job_id, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get(f"/v1/jobs/{job_id}").json()
        if status["state"] in ("done", "failed", "cancelled"):
            return status
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {status}")


def test_openapi_schema_describes_the_contract(client):
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {"/v1/health", "/v1/devices", "/v1/devices/{index}",
                                    "/v1/compile", "/v1/evaluate", "/v1/profile",
                                    "/v1/sanitize", "/v1/jobs/{job_id}",
                                    "/v1/jobs/{job_id}/cancel"}
    assert set(schema["paths"]["/v1/jobs/{job_id}"]) == {"get", "delete"}
    defs = schema["components"]["schemas"]
    for name in ("Problem", "Variant", "Buffer", "Scalar", "Launch", "Evaluation", "Verdict",
                 "DeviceInfo", "CompileReport", "ErrorBody"):
        assert name in defs, name
    verdict_status = defs["Verdict"]["properties"]["status"]["enum"]
    assert "timeout" in verdict_status and "out_of_bounds" in verdict_status
    req = defs["EvaluateRequest"]
    assert set(req["required"]) == {"problem", "baseline"}
    assert req["properties"]["repetitions"]["minimum"] == 1
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    responses = schema["paths"]["/v1/evaluate"]["post"]["responses"]
    assert {"202", "401", "413", "422", "503"} <= set(responses)


def test_devices(client):
    devices = client.get("/v1/devices").json()["devices"]
    assert [d["index"] for d in devices] == [0]
    assert devices[0]["info"]["name"] == "Fake H200"
    assert devices[0]["info"]["compute_capability"] == [9, 0]
    assert client.get("/v1/devices/0").json()["info"]["sm_count"] == 132
    r = client.get("/v1/devices/7")
    assert r.status_code == 404
    assert r.json() == {"error": "unknown_device",
                        "message": "device 7 is not served by this runner (devices: [0])"}
    assert client.get("/v1/health").json() == {"status": "ready", "message": "", "devices": [0]}


def test_evaluate_returns_a_job_whose_result_is_an_evaluation(client):
    r = client.post("/v1/evaluate", json=body(variant("c1"), variant("c2", "@mismatch"),
                                              variant("c3", "@crash")))
    assert r.status_code == 202, r.text
    created = r.json()
    assert created["state"] == "queued" and created["device"] == 0
    assert created["url"] == f"/v1/jobs/{created['id']}"
    status = wait_job(client, created["id"])
    assert status["state"] == "done", status
    ev = decode(Evaluation, status["result"])
    assert [(c.verdict.variant, c.verdict.status) for c in ev.candidates] == [
        ("c1", "passed"), ("c2", "mismatch"), ("c3", "launch_error")]
    assert ev.device.name == "Fake H200" and ev.baseline.median_us == 100.0
    assert status["candidates"] == 3 and status["error"] == ""
    assert status["finished_at"] >= status["started_at"] >= status["created_at"] > 0
    # progress: all lines from 0, none again from progress_next
    lines = status["progress"]
    assert status["progress_from"] == 0 and len(lines) == status["progress_next"]
    assert lines[0] == "compiling 4 variant(s) on the CPU"
    assert "probe: the baseline alone, to set the kernel time limit" in lines
    again = client.get(f"/v1/jobs/{created['id']}", params={"since": status["progress_next"]})
    assert again.json()["progress"] == []
    tail = client.get(f"/v1/jobs/{created['id']}", params={"since": len(lines) - 2}).json()
    assert tail["progress"] == lines[-2:] and tail["progress_from"] == len(lines) - 2
    # the CPU compile pool saw every variant, for the worker's architecture
    assert {("baseline", "sm_90"), ("c1", "sm_90"), ("c3", "sm_90")} <= set(COMPILED)


def test_compile(client):
    r = client.post("/v1/compile", json={"variants": [to_dict(variant("a")),
                                                      to_dict(variant("b", "@syntax"))]})
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["device"] == 0
    assert [(x["variant"], x["ok"]) for x in out["reports"]] == [("a", True), ("b", False)]
    assert out["reports"][1]["log"].endswith('expected a ";"')


@pytest.mark.parametrize("mutate, where", [
    (lambda b: b.pop("baseline"), "baseline: Field required"),
    (lambda b: b["problem"]["cases"][0]["args"][2].update(length="many"),
     "problem.cases.0.args.2"),
    (lambda b: b.update(repetitions=0), "repetitions: Input should be greater than or equal to 1"),
    (lambda b: b.update(colour="red"), "colour: Extra inputs are not permitted"),
    (lambda b: b["baseline"]["launches"][0].update(block="wide"), "baseline.launches.0.block"),
    (lambda b: b["problem"]["cases"][0]["args"][2].update(role="sideways"),
     "problem.cases.0.args.2"),
])
def test_malformed_requests_are_422_naming_the_field(client, mutate, where):
    b = body(variant("c1"))
    mutate(b)
    r = client.post("/v1/evaluate", json=b)
    assert r.status_code == 422, r.text
    out = r.json()
    assert out["error"] == "invalid_request"
    assert out["message"].startswith("malformed request: ")
    assert where in out["message"], out["message"]
    assert isinstance(out["detail"], list) and out["detail"]


def test_not_json_is_422(client):
    r = client.post("/v1/evaluate", content=b"{not json", headers={"content-type":
                                                                   "application/json"})
    assert r.status_code == 422 and r.json()["error"] == "invalid_request"


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b["candidates"][0].update(name="saxpy2"),
     "candidates[0] 'c1': unknown kernel 'saxpy2': 'saxpy2' does not occur in the variant's "
     "source"),
    (lambda b: b["baseline"].update(name="ops::scale<float>"),
     "baseline 'baseline': unknown kernel 'ops::scale<float>': 'scale' does not occur"),
    (lambda b: b["candidates"][0].update(label="baseline"),
     "variant labels must be unique; 'baseline' appears 2 times"),
    (lambda b: b["candidates"][0]["launches"].pop(),
     "candidates[0] 'c1': expected one launch per case (2), found 1"),
    (lambda b: b["problem"]["cases"][1]["args"][2].update(dtype="float128"),
     "problem.cases[1].args[2] 'x': unknown dtype 'float128'; expected one of float16"),
    (lambda b: b["problem"]["cases"][0]["args"][2].update(length=0),
     "problem.cases[0].args[2] 'x': length must be between 1 and"),
    (lambda b: b["baseline"]["launches"][0].update(grid=[0, 1, 1]),
     "baseline 'baseline'.launches[0]: grid and block must be positive, found grid (0, 1, 1)"),
    (lambda b: b["problem"].update(seeds=[]), "problem: expected at least one seed, found none"),
])
def test_inconsistent_requests_are_422_before_any_work(client, mutate, message):
    b = body(variant("c1"))
    mutate(b)
    r = client.post("/v1/evaluate", json=b)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "invalid_request"
    assert message in r.json()["message"], r.json()["message"]


def test_unknown_kernel_in_compile_is_422(client):
    r = client.post("/v1/compile", json={"variants": [to_dict(variant("a", name="nope"))]})
    assert r.status_code == 422
    assert "variants[0] 'a': unknown kernel 'nope'" in r.json()["message"]


def test_unknown_device_in_a_request_is_422(client):
    r = client.post("/v1/evaluate", json=body(variant("c1"), device=5))
    assert r.status_code == 422
    assert r.json() == {"error": "unknown_device",
                        "message": "device 5 is not served by this runner (devices: 0)"}


def test_unknown_jobs_are_404(client):
    for r in (client.get("/v1/jobs/nope"), client.delete("/v1/jobs/nope"),
              client.post("/v1/jobs/nope/cancel")):
        assert r.status_code == 404
        assert r.json()["error"] == "unknown_job"
        assert r.json()["message"].startswith("no job with id 'nope'")
    r = client.get("/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"] == "not_found"


def test_cancel_a_running_job(client):
    job = client.post("/v1/evaluate", json=body(variant("c1", "@slow"))).json()["id"]
    deadline = time.monotonic() + 20
    while client.get(f"/v1/jobs/{job}").json()["state"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    r = client.delete(f"/v1/jobs/{job}")
    assert r.status_code == 200 and r.json()["id"] == job
    assert wait_job(client, job)["state"] == "cancelled"
    # the next job runs normally, in a fresh worker
    nxt = client.post("/v1/evaluate", json=body(variant("c1"))).json()["id"]
    assert wait_job(client, nxt)["state"] == "done"


def test_cancel_a_queued_job_with_post(client):
    first = client.post("/v1/evaluate", json=body(variant("c1", "@slow"))).json()["id"]
    queued = client.post("/v1/evaluate", json=body(variant("c2"))).json()["id"]
    r = client.post(f"/v1/jobs/{queued}/cancel")
    assert r.json()["state"] == "cancelled"
    client.delete(f"/v1/jobs/{first}")
    assert wait_job(client, first)["state"] == "cancelled"
    assert client.get(f"/v1/jobs/{queued}").json()["state"] == "cancelled"


# -- token -------------------------------------------------------------------------------------

def test_requests_without_the_token_get_401(client):
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong-token-0123456789"},
                    {"Authorization": f"Basic {TOKEN}"}):
        r = client.get("/v1/devices", headers=headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"].startswith("Bearer")
        assert r.json()["error"] == "unauthorized"
    r = client.get("/v1/health", headers={"Authorization": ""})
    assert r.json()["message"].startswith("this runner needs a token: send 'Authorization: "
                                          "Bearer TOKEN'")
    r = client.get("/v1/health", headers={"Authorization": "Bearer wrong-token-0123456789"})
    assert r.json()["message"] == ("the token sent in the Authorization header is not this "
                                   "runner's token")
    # the schema is not public either, and the token is checked before the body is looked at
    assert client.get("/openapi.json", headers={"Authorization": ""}).status_code == 401
    r = client.post("/v1/evaluate", content=b"x" * 100_000, headers={"Authorization": ""})
    assert r.status_code == 401


# -- body size ---------------------------------------------------------------------------------

def test_oversized_bodies_get_413(client):
    big = body(variant("c1"))
    big["baseline"]["source"] += "//" + "x" * 70_000
    r = client.post("/v1/evaluate", json=big)
    assert r.status_code == 413
    out = r.json()
    assert out["error"] == "body_too_large"
    assert out["message"].endswith("bytes; this runner accepts at most 65536 bytes (cudalens "
                                   "runner --max-body-bytes)")

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(20):
            yield b"x" * 8192
    r = client.post("/v1/evaluate", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert r.json()["message"].startswith("request body is more than 65536 bytes")


# -- other pools -------------------------------------------------------------------------------

def test_no_gpu_is_503_with_the_workers_message():
    with make_client(factory=NoGpuBackend, token=None) as c:
        for r in (c.get("/v1/devices"), c.get("/v1/devices/0"),
                  c.post("/v1/evaluate", json=body(variant("c1"))),
                  c.post("/v1/compile", json={"variants": [to_dict(variant("a"))]})):
            assert r.status_code == 503
            assert r.json()["error"] == "no_gpu"
            assert r.json()["message"].startswith("the CUDA driver found no usable GPU: fake.")
            assert r.json()["message"].endswith(f"({GPU_EXTRA}).")
        health = c.get("/v1/health").json()
        assert health["status"] == "unavailable" and health["devices"] == []
        # still validated first: a bad request is 422 even here
        assert c.post("/v1/evaluate", json={"baseline": {}}).status_code == 422


def test_one_worker_per_gpu_and_jobs_go_to_the_device_asked_for():
    with make_client(factory=two_devices) as c:
        devices = c.get("/v1/devices").json()["devices"]
        assert [d["index"] for d in devices] == [0, 1]
        job = c.post("/v1/evaluate", json=body(variant("c1"), device=1)).json()
        assert job["device"] == 1
        status = wait_job(c, job["id"])
        assert status["state"] == "done" and status["device"] == 1
        pool = c.app.state.pool
        pids = {i: s.supervisor.worker_pid for i, s in pool.slots.items()}
        assert pids[0] != pids[1]
        ev = decode(Evaluation, status["result"])
        assert f"passed in pid {pids[1]} " in ev.candidates[0].verdict.reason


def test_explicit_devices_are_the_only_ones_served():
    with make_client(factory=functools.partial(FakeBackend, devices=4), devices=(2,)) as c:
        assert [d["index"] for d in c.get("/v1/devices").json()["devices"]] == [2]
        assert c.post("/v1/evaluate", json=body(variant("c1"))).json()["device"] == 2
