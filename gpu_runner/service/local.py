"""A runner service started as a child process, for a client that was given no runner URL.

``LocalRunner.start()`` runs ``python -m gpu_runner.service`` on 127.0.0.1 with a free port
(the child writes the port it bound to a file) and a fresh random token (passed in the
child's environment, never on its command line), so other users of the machine cannot send
it code. The child also stops when this process goes away: it watches its standard input,
which only this process holds open. ``close()`` stops it.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import gpu_runner


class LocalRunnerError(RuntimeError):
    """The child runner did not start; the message ends with its last output lines."""


class LocalRunner:
    """A child runner process. ``url`` and ``token`` are set once ``start`` returns."""

    def __init__(self, *, start_timeout_s: float = 60.0, python: str = sys.executable):
        self.start_timeout_s = start_timeout_s
        self.python = python
        self.url = ""
        self.token = ""
        self.proc: Optional[subprocess.Popen] = None
        self._dir: Optional[str] = None
        self._log = None

    def start(self) -> "LocalRunner":
        """Start the child and wait until it has bound its port. Raises ``LocalRunnerError``."""
        self.token = secrets.token_urlsafe(32)
        self._dir = tempfile.mkdtemp(prefix="cudalens-runner-")
        port_file = Path(self._dir) / "port"
        self._log = open(Path(self._dir) / "log", "w+b")  # noqa: SIM115 (closed in close())
        env = dict(os.environ)
        env["CUDALENS_RUNNER_TOKEN"] = self.token
        root = str(Path(gpu_runner.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        cmd = [self.python, "-m", "gpu_runner.service", "--host", "127.0.0.1", "--port", "0",
               "--port-file", str(port_file), "--exit-with-parent", "--log-level", "warning"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=self._log,
                                     stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            text = port_file.read_text().strip() if port_file.exists() else ""
            if text:
                self.url = f"http://127.0.0.1:{int(text)}"
                return self
            if self.proc.poll() is not None:
                message = f"the local GPU runner exited with code {self.proc.returncode}"
                break
            if time.monotonic() > deadline:
                message = f"the local GPU runner did not start within {self.start_timeout_s:g} s"
                break
            time.sleep(0.05)
        tail = self.output_tail()
        self.close()
        raise LocalRunnerError(f"{message}; its output ended with:\n{tail}")

    def output_tail(self, lines: int = 20) -> str:
        """The child's last output lines (its log)."""
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return "\n".join(self._log.read().decode(errors="replace").splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the child (closing its stdin, then SIGTERM, then SIGKILL) and clean up."""
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()
                if proc.poll() is None:
                    proc.terminate()
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout_s)
            except OSError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "LocalRunner":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
