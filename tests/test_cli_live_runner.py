"""``cudalens optimize`` as a subprocess against a live runner process without a GPU
(``live_fake_runner``) or a web server that is not a runner: a kernel that does not compile
here, a runner URL that answers nonsense, ``--apply`` on a file with CRLF line endings, and
an LLM session stopped by Ctrl-C or by its runner dying. Each ends with a sentence and the
exit status the README gives, never a traceback, and leaves the file as it should."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from canned_http import Canned
from child_signals import sigint_as_on_a_terminal
from fake_openai import MODEL, FakeOpenAI, Step, reply
from live_fake_runner import fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "cli-live-runner-token-0123456789"
SAXPY = (ROOT / "examples" / "saxpy.cu").read_text()
SPEC = (ROOT / "examples" / "saxpy.cu.spec").read_text()
KEY_ENV = "CUDALENS_FAKE_LLM_KEY"
GOOD = """__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}"""


def _env(url: str, token: str = TOKEN) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({"CUDALENS_RUNNER_URL": url, "CUDALENS_RUNNER_TOKEN": token,
                KEY_ENV: "sk-fake-0123456789"})
    return env


def _files(folder: Path, source: str = SAXPY, newline: str = "\n") -> Path:
    path = folder / "saxpy.cu"
    path.write_bytes(source.replace("\n", newline).encode("utf-8"))
    (folder / "saxpy.cu.spec").write_text(SPEC)
    return path


def _optimize(path: Path, env: dict, *args: str, timeout: float = 240):
    return subprocess.run([sys.executable, "-m", "cudalens", "optimize", str(path), *args],
                          capture_output=True, text=True, env=env, cwd=path.parent,
                          timeout=timeout, check=False)


def test_an_original_that_does_not_compile_is_refused_before_the_runner(tmp_path):
    path = _files(tmp_path, SAXPY.replace("a * x[i] + y[i]", "a * x[i] + y[i] + undefined_q"))
    with fake_runner_process(tmp_path, TOKEN) as url:
        done = _optimize(path, _env(url), "--proposer", "builtin")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    line = 1 + SAXPY.splitlines().index("        y[i] = a * x[i] + y[i];")
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: {path}:{line}: identifier \"undefined_q\" is undefined ({path} does not compile "
        f"with nvcc for sm_90: 1 error; cudalens check {path} shows them all)")


def test_a_runner_url_that_answers_nonsense_is_no_runner(tmp_path):
    path = _files(tmp_path)
    with Canned(200, b"{}", "application/json") as server:
        done = _optimize(path, _env(server.url.removesuffix("/v1")))
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "error: cannot optimize with the configured runner (CUDALENS_RUNNER_URL): " \
        in done.stderr, done.stderr


def test_apply_keeps_crlf_line_endings(tmp_path):
    path = _files(tmp_path, newline="\r\n")
    with fake_runner_process(tmp_path, TOKEN) as url:
        done = _optimize(path, _env(url), "--proposer", "builtin", "--budget", "4", "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    data = path.read_bytes()
    assert data != SAXPY.replace("\n", "\r\n").encode()  # the winner was written
    assert data.count(b"\n") == data.count(b"\r\n") > 10  # every line ends in CRLF


def _llm_optimize(path: Path, fake: FakeOpenAI, url: str, rounds: int) -> subprocess.Popen:
    """``cudalens optimize PATH --proposer llm --apply`` started against ``fake`` and the
    runner at ``url``, one candidate per round."""
    return subprocess.Popen(
        [sys.executable, "-m", "cudalens", "optimize", str(path), "--proposer", "llm",
         "--model", MODEL, "--base-url", fake.url, "--api-key-env", KEY_ENV,
         "--rounds", str(rounds), "--candidates-per-round", "1", "--apply"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(url), cwd=path.parent,
        preexec_fn=sigint_as_on_a_terminal)  # the Ctrl-C test interrupts it


def test_apply_keeps_a_byte_order_mark(tmp_path):
    path = tmp_path / "saxpy.cu"
    path.write_bytes(b"\xef\xbb\xbf" + SAXPY.encode())
    (tmp_path / "saxpy.cu.spec").write_text(SPEC)
    with fake_runner_process(tmp_path, TOKEN) as url:
        done = _optimize(path, _env(url), "--proposer", "builtin", "--budget", "2", "--apply")
    assert done.returncode == 0, done.stderr + done.stdout
    assert path.read_bytes().startswith(b"\xef\xbb\xbf") and path.read_bytes().count(
        b"\xef\xbb\xbf") == 1


def test_results_that_cannot_be_written_are_an_error_after_the_table(tmp_path):
    # a link to a folder that does not exist: the path passes the check before the run (its
    # folder exists, nothing is there), and writing through it fails after the run
    path = _files(tmp_path)
    target = tmp_path / "r.json"
    target.symlink_to(tmp_path / "gone" / "r.json")
    with fake_runner_process(tmp_path, TOKEN) as url:
        done = _optimize(path, _env(url), "--proposer", "builtin", "--budget", "2", "--json",
                         str(target))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Winner:" in done.stdout
    assert done.stderr.rstrip().endswith(
        f"error: --json {target}: the results could not be written (No such file or "
        f"directory)"), done.stderr


def _when(condition, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_ctrl_c_stops_llm_rounds_shows_what_was_measured_and_applies_nothing(tmp_path):
    path = _files(tmp_path)
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\ntools = \"off\"\nmax_retries = 0\nconfirm_top = 0\n"
        "request_timeout_s = 60\n")
    steps = [reply(f"```cuda\n{GOOD}\n```"), Step(content="too late", delay_s=30)]
    with fake_runner_process(tmp_path, TOKEN) as url, FakeOpenAI(steps) as fake:
        proc = _llm_optimize(path, fake, url, rounds=3)
        # round 1 measured; round 2 waits on the model's slow reply
        _when(lambda: len(fake.chat_bodies()) >= 2 or proc.poll() is not None)
        paths = [r["path"] for r in fake.requests]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    err = err.decode()
    assert paths.count("/v1/chat/completions") == 2, (paths, err)
    assert proc.returncode == 130, err
    assert "cudalens: cancelling: finishing the current step (Ctrl-C again to stop at once)" in err
    assert err.rstrip().endswith(
        f"error: interrupted (Ctrl-C): the LLM rounds were stopped; the table shows what was "
        f"measured before; {path} is unchanged"), err
    assert "Winner: llm r1c1: 2.00x faster" in out.decode()
    assert path.read_text() == SAXPY


def test_an_llm_session_whose_runner_dies_fails(tmp_path):
    path = _files(tmp_path, "// @slow\n" + SAXPY)  # the fake worker takes 20 s per candidate
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\ntools = \"off\"\nmax_retries = 0\nconfirm_top = 0\n")
    with FakeOpenAI([reply(f"```cuda\n{GOOD}\n```")]) as fake:
        with fake_runner_process(tmp_path, TOKEN) as url:
            proc = _llm_optimize(path, fake, url, rounds=1)
            # the model answered: the runner is measuring the candidate (20 s)
            _when(lambda: len(fake.chat_bodies()) >= 1 or proc.poll() is not None)
            time.sleep(2)
        # the runner process is gone now (the block above stopped it) mid-measurement
        out, err = proc.communicate(timeout=120)
    err = err.decode()
    assert proc.returncode == 2, err
    assert "error: the LLM proposer stopped early: the runner failed: " in err, err
    assert err.rstrip().endswith(f"{path} is unchanged"), err
    assert path.read_text() == "// @slow\n" + SAXPY
