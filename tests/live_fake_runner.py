"""Starting ``tests/data/runner/fake_gpu_service.py`` (a live runner process without a GPU) for
a test, with an executable standing in for Nsight Compute that prints the CSV fixture."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVICE = ROOT / "tests" / "data" / "runner" / "fake_gpu_service.py"
CSV = ROOT / "tests" / "data" / "ncu" / "saxpy_metrics.csv"


@contextlib.contextmanager
def fake_runner_process(folder: Path, token: str, backend: str = "fake",
                        split: bool = False) -> Iterator[str]:
    """The runner process's URL while the block runs; stopped afterwards (stdin closed, then
    terminated). ``folder``: where its port file and stand-in ncu go; ``backend``: ``fake``
    (``service_fakes.FakeBackend``), ``model`` (``model_runner.ModelBackend``) or
    ``MODULE:NAME`` of a module in tests/; ``split``: every evaluation split over the
    backend's GPUs (``--split``)."""
    ncu = folder / "ncu"
    ncu.write_text(f"#!/bin/sh\necho '==PROF== Connected to process 7'\ncat '{CSV}'\n")
    ncu.chmod(0o755)
    port_file = folder / "port"
    proc = subprocess.Popen([sys.executable, str(SERVICE), "--port-file", str(port_file),
                             "--token", token, "--ncu", str(ncu), "--backend", backend]
                            + (["--split"] if split else []),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (port_file.exists() and port_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the runner process did not start: {proc.stderr.read()}")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{int(port_file.read_text())}"
    finally:
        proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(10)
