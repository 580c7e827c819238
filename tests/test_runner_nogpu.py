"""The runner without pycuda: importable, and a clear NoGpuError (no GPU needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_import_without_pycuda_and_plain_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)  # makes `import pycuda...` fail
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    from gpu_runner.runner import NoGpuError, Runner
    with pytest.raises(NoGpuError) as e:
        Runner()
    msg = str(e.value)
    assert msg.startswith("pycuda is not installed or does not load")
    assert "NVIDIA GPU" in msg and "driver" in msg
    assert msg.endswith(f"and pycuda (pip install -e '{ROOT}[gpu]').")


def test_the_install_hint_fits_this_checkout():
    from gpu_runner.session import GPU_EXTRA, gpu_install_hint
    # cudalens is not on PyPI: the hint installs this checkout's gpu extra, from anywhere
    assert GPU_EXTRA == gpu_install_hint() == f"pip install -e '{ROOT}[gpu]'"
