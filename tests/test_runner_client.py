"""``cudalens.runner_client`` against live runners: a runner process started here (this
machine has no GPU, so it reports that), and a runner served over real HTTP whose workers
are the fake backends of tests/service_fakes.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import cudalens.runner_client as rc
from cudalens.errors import CudalensError
from cudalens.runner_client import RunnerClient, RunnerError, RunnerUnavailable
from gpu_probe import gpu_present
from gpu_runner.events import Verifying
from gpu_runner.service.local import LocalRunner
from gpu_runner.session import GPU_EXTRA
from service_fakes import FakeBackend, problem, variant

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "client-test-token-0123456789"


no_gpu_here = pytest.mark.skipif(gpu_present(), reason="this machine has a GPU")


@pytest.fixture(autouse=True)
def no_runner_env(monkeypatch):
    monkeypatch.delenv(rc.ENV_URL, raising=False)
    monkeypatch.delenv(rc.ENV_TOKEN, raising=False)


@pytest.fixture(scope="module")
def live_runner(tmp_path_factory):
    """``python -m gpu_runner.service`` on a free port with a token: (url, process)."""
    port_file = tmp_path_factory.mktemp("runner") / "port"
    env = dict(os.environ, CUDALENS_RUNNER_TOKEN=TOKEN)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "server"),
                                         env.get("PYTHONPATH", "")])
    proc = subprocess.Popen([sys.executable, "-m", "gpu_runner.service", "--port", "0",
                             "--port-file", str(port_file), "--log-level", "warning"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    yield f"http://127.0.0.1:{int(port_file.read_text())}", proc
    proc.terminate()
    proc.wait(10)


def wait_listening(url):
    import httpx
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(f"{url}/v1/health", headers={"Authorization": f"Bearer {TOKEN}"})
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


@no_gpu_here
def test_live_runner_without_gpu_is_unavailable_with_its_message(live_runner):
    url, _ = live_runner
    wait_listening(url)
    with pytest.raises(RunnerUnavailable) as e:
        RunnerClient(url, token=TOKEN)
    msg = str(e.value)
    assert "cudalens runs kernels on an NVIDIA GPU" in msg and f"pycuda ({GPU_EXTRA})" in msg


@no_gpu_here
def test_url_and_token_from_the_environment(live_runner, monkeypatch):
    url, _ = live_runner
    wait_listening(url)
    monkeypatch.setenv(rc.ENV_URL, url)
    monkeypatch.setenv(rc.ENV_TOKEN, TOKEN)

    class NoLocal(LocalRunner):
        def start(self):
            raise AssertionError("a URL was configured: no local runner may start")

    monkeypatch.setattr(rc, "LocalRunner", NoLocal)
    with pytest.raises(RunnerUnavailable, match="cudalens runs kernels on an NVIDIA GPU"):
        RunnerClient()


@no_gpu_here
def test_live_runner_without_gpu_says_so_on_stderr_and_keeps_serving(live_runner):
    import select

    url, proc = live_runner
    wait_listening(url)
    # os.read on the descriptor: a buffered readline could hold the next line where select
    # cannot see it
    text = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ("warning" in text and text.endswith("\n")):
        if select.select([proc.stderr], [], [], 0.5)[0]:
            text += os.read(proc.stderr.fileno(), 65536).decode("utf-8", "replace")
    lines = text.splitlines()
    port = int(url.rsplit(":", 1)[1])
    assert lines and lines[0] == \
        f"cudalens runner listening on http://127.0.0.1:{port} (token required)", lines
    warning = next(l for l in lines if "warning" in l)
    assert warning.startswith("cudalens runner: warning: no GPU can be used (unavailable): ")
    assert "cudalens runs kernels on an NVIDIA GPU" in warning
    assert warning.endswith("Requests that need a GPU are answered 503; /v1/health says the "
                            "same.")
    assert proc.poll() is None  # still serving


def test_wrong_token_is_unavailable_saying_so(live_runner):
    url, _ = live_runner
    wait_listening(url)
    with pytest.raises(RunnerUnavailable) as e:
        RunnerClient(url, token="not-the-token-0123456789")
    assert str(e.value) == (f"the GPU runner at {url} refused the request: the token sent in "
                            f"the Authorization header is not this runner's token (set "
                            f"CUDALENS_RUNNER_TOKEN to the runner's token)")
    with pytest.raises(RunnerUnavailable, match="this runner needs a token"):
        RunnerClient(url)


def test_unreachable_runner():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(RunnerUnavailable,
                       match=rf"^cannot reach the GPU runner at http://127.0.0.1:{port}: "):
        RunnerClient(f"http://127.0.0.1:{port}")


@no_gpu_here
def test_without_a_url_a_local_runner_is_started_and_stopped(monkeypatch):
    started = []

    class Recording(LocalRunner):
        def start(self):
            started.append(self)
            return super().start()

    monkeypatch.setattr(rc, "LocalRunner", Recording)
    with pytest.raises(RunnerUnavailable) as e:
        RunnerClient()
    assert f"pycuda ({GPU_EXTRA})" in str(e.value)
    (local,) = started
    assert local.url.startswith("http://127.0.0.1:") and len(local.token) >= 32
    assert local.proc is None  # closed: stopped and waited for
    import httpx
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{local.url}/v1/health", timeout=2)


def test_local_runner_needs_its_token_and_stops_when_its_parent_goes():
    import httpx
    with LocalRunner() as local:
        deadline = time.monotonic() + 30
        while True:
            try:
                r = httpx.get(f"{local.url}/v1/health")
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert r.status_code == 401
        r = httpx.get(f"{local.url}/v1/health",
                      headers={"Authorization": f"Bearer {local.token}"})
        assert r.status_code == 200
        proc = local.proc
        proc.stdin.close()  # what the parent's exit does
        assert proc.wait(15) is not None


# -- a full round trip over HTTP, with fake workers ---------------------------------------------

@pytest.fixture(scope="module")
def fake_runner():
    import uvicorn

    from gpu_runner.service.app import create_app
    from gpu_runner.service.serve import bind
    from gpu_runner.workers.limits import Limits
    from gpu_runner.workers.pool import GpuPool, PoolConfig

    limits = Limits(startup_s=30, stop_s=2, first_kernel_timeout_s=0.5,
                    kernel_timeout_floor_s=0.3, silence_grace_s=0.7)
    pool = GpuPool(PoolConfig(factory=FakeBackend, limits=limits, precompile_threads=0))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(pool, token=TOKEN), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    wait_listening(url)
    yield url
    server.should_exit = True
    thread.join(15)


def test_round_trip_evaluate_with_progress(fake_runner):
    events = []
    with RunnerClient(fake_runner, token=TOKEN, poll_interval_s=0.02) as client:
        info = client.device_info()
        assert info.name == "Fake H200" and info.compute_capability == (9, 0)
        ev = client.evaluate(problem(), variant("baseline"),
                             [variant("c1"), variant("c2", "@crash"), variant("c3", "@mismatch")],
                             repetitions=5, on_event=events.append)
    lines = [e.text() for e in events]
    assert [(c.verdict.variant, c.verdict.status) for c in ev.candidates] == [
        ("c1", "passed"), ("c2", "launch_error"), ("c3", "mismatch")]
    assert ev.candidates[0].timing.median_us == 50.0
    assert ev.candidates[0].speedup.ci_low == 1.9
    assert ev.baseline.samples == 5
    assert lines[0] == "probe: the baseline alone, to set the kernel time limit"
    assert lines.count("probe: the baseline alone, to set the kernel time limit") == 1
    assert lines.count("verify: c1 on case 'nominal', seed 1") >= 1
    assert any("worker replaced" in line for line in lines)
    # typed, as the runner sent them: the verdicts of the candidates that were judged
    assert Verifying("c1", "nominal", 1) in events
    assert all(type(e).__module__ == "gpu_runner.events" for e in events)


def test_round_trip_compile(fake_runner):
    with RunnerClient(fake_runner, token=TOKEN) as client:
        reports = client.compile([variant("a"), variant("b", "@syntax")])
    assert [(r.variant, r.ok) for r in reports] == [("a", True), ("b", False)]


def test_a_refused_evaluation_is_a_runner_error(fake_runner):
    with RunnerClient(fake_runner, token=TOKEN) as client:
        with pytest.raises(RunnerError) as e:
            client.evaluate(problem(), variant("baseline"), [variant("baseline")])
    assert isinstance(e.value, CudalensError)
    assert str(e.value) == (f"the GPU runner at {fake_runner} refused POST /evaluate: 422 "
                            f"invalid_request: variant labels must be unique; 'baseline' "
                            f"appears 2 times")


def test_unknown_device_is_unavailable(fake_runner):
    with pytest.raises(RunnerUnavailable, match=r"404 unknown_device: device 3 is not served"):
        RunnerClient(fake_runner, token=TOKEN, device_index=3)


def test_interrupting_an_evaluation_cancels_its_job(fake_runner):
    def interrupt(event):
        if isinstance(event, Verifying) and event.label == "c1":  # c1 is @slow: running
            raise KeyboardInterrupt

    with RunnerClient(fake_runner, token=TOKEN, poll_interval_s=0.02) as client:
        with pytest.raises(KeyboardInterrupt):
            client.evaluate(problem(), variant("baseline"), [variant("c1", "@slow")],
                            on_event=interrupt)
    # the job is cancelled on the runner: a new evaluation is not stuck behind it
    with RunnerClient(fake_runner, token=TOKEN, poll_interval_s=0.02) as client:
        started = time.monotonic()
        ev = client.evaluate(problem(), variant("baseline"), [variant("c1")])
        assert ev.candidates[0].verdict.status == "passed"
        assert time.monotonic() - started < 10  # the @slow job would take 20 s
