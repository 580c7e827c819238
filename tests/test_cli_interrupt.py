"""Ctrl-C during ``cudalens optimize`` (no GPU needed): the CLI runs as a subprocess against a
live runner process (``live_fake_runner``) whose workers take 20 s to verify a candidate whose
source says ``@slow``; SIGINT while the runner measures ends the command with exit status 130
and a sentence saying what happened, no traceback and no "Aborted!", and the file unchanged.
The CLI is started with SIGINT at its default disposition (``child_signals``), so that the
tests hold when the test run itself was started with SIGINT ignored (a background job)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from child_signals import sigint_as_on_a_terminal
from live_fake_runner import fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "interrupt-test-token-0123456789"


def test_ctrl_c_while_measuring_exits_130_and_leaves_the_file(tmp_path):
    source = tmp_path / "saxpy.cu"
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    # every candidate is the whole file, so each carries the marker that slows the fake worker
    original = "// @slow\n" + (ROOT / "examples" / "saxpy.cu").read_text()
    source.write_text(original)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
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
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
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
