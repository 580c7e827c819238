"""Ctrl-C during ``cudalens optimize`` (no GPU needed): the CLI runs as a subprocess against a
live runner process (``live_fake_runner``) whose workers take 20 s to verify a candidate whose
source says ``@slow``; SIGINT while the runner measures ends the command with exit status 130
and a sentence saying what happened, no traceback and no "Aborted!", and the file unchanged.
The CLI is started with SIGINT at its default disposition (``child_signals``), so that the
tests hold when the test run itself was started with SIGINT ignored (a background job).

The agent's Ctrl-C handler (``cli_agent.sigint_cancels``) in a child Python process: where
SIGINT was ignored when the process started, SIGINT changes nothing (the job stays immune to
it, as it was started); at SIGINT's default, it cancels the agent."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from child_signals import sigint_as_on_a_terminal, sigint_ignored
from live_fake_runner import fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "interrupt-test-token-0123456789"


def _env() -> dict[str, str]:
    """This environment with this checkout's packages first on the child's path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def test_ctrl_c_while_measuring_exits_130_and_leaves_the_file(tmp_path):
    source = tmp_path / "saxpy.cu"
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    # every candidate is the whole file, so each carries the marker that slows the fake worker
    original = "// @slow\n" + (ROOT / "examples" / "saxpy.cu").read_text()
    source.write_text(original)
    env = _env()
    with fake_runner_process(tmp_path, TOKEN) as url:
        env.update({"CUDALENS_RUNNER_URL": url, "CUDALENS_RUNNER_TOKEN": TOKEN})
        proc = subprocess.Popen([sys.executable, "-m", "cudalens", "optimize", str(source),
                                 "--proposer", "builtin", "--apply"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=tmp_path, preexec_fn=sigint_as_on_a_terminal)
        time.sleep(6)  # past start-up and the probe, into the first batch's slow verification
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert err.rstrip().endswith(f"error: interrupted (Ctrl-C): the measurement was stopped and "
                                 f"its results dropped; {source} is unchanged"), err
    assert "Traceback" not in err and "Aborted!" not in err, err
    assert source.read_text() == original


def test_ctrl_c_while_probing_the_llm_exits_130(tmp_path):
    import socket

    source = tmp_path / "saxpy.cu"
    shutil.copy(ROOT / "examples" / "saxpy.cu", source)
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    env = _env()
    # the model's server is probed only once a runner is there
    with socket.socket() as silent, fake_runner_process(tmp_path, TOKEN) as runner:
        env.update({"CUDALENS_RUNNER_URL": runner, "CUDALENS_RUNNER_TOKEN": TOKEN})
        silent.bind(("127.0.0.1", 0))  # accepts connections, never answers
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        proc = subprocess.Popen([sys.executable, "-m", "cudalens", "optimize", str(source),
                                 "--proposer", "auto", "--model", "m", "--base-url", url],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=tmp_path, preexec_fn=sigint_as_on_a_terminal)
        silent.settimeout(60)
        conn, _ = silent.accept()  # the probe is waiting for an answer (5 s limit)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        conn.close()
    assert proc.returncode == 130, err
    assert err.rstrip().endswith(f"error: interrupted (Ctrl-C); {source} is unchanged"), err
    assert "Traceback" not in err and "Aborted!" not in err


# The agent's handler around a wait: the child says it is ready (the handler installed or not)
# by writing a file, then waits for a line on stdin, which the test sends after SIGINT; it
# prints whether the agent would have been cancelled.
AGENT_CHILD = """
import sys, threading
from pathlib import Path
from cudalens.cli_agent import sigint_cancels

cancel = threading.Event()
with sigint_cancels(cancel):
    Path(sys.argv[1]).write_text("ready")
    sys.stdin.readline()
print("cancelled" if cancel.is_set() else "running")
"""


def _sigint_to_the_agent(tmp_path, preexec_fn) -> tuple[int, str, str]:
    """Starts ``AGENT_CHILD`` with ``preexec_fn``, sends it SIGINT once it is ready, then its
    line; its exit status, stdout and stderr."""
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", AGENT_CHILD, str(ready)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
                            preexec_fn=preexec_fn)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():  # written by the child inside sigint_cancels
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the child did not get ready in 60 s"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate("go\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def test_a_job_started_with_sigint_ignored_stays_immune_to_it(tmp_path):
    assert _sigint_to_the_agent(tmp_path, sigint_ignored) == (0, "running\n", "")


def test_ctrl_c_cancels_the_agent_where_sigint_is_at_its_default(tmp_path):
    assert _sigint_to_the_agent(tmp_path, sigint_as_on_a_terminal) == (
        0, "cancelled\n",
        "cudalens: cancelling: finishing the current step (Ctrl-C again to stop at once)\n")
