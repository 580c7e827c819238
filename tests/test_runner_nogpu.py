"""The runner without pycuda: importable, and a clear NoGpuError (no GPU needed)."""

from __future__ import annotations

import sys

import pytest


def test_import_without_pycuda_and_plain_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)  # makes `import pycuda...` fail
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    from gpu_runner.runner import NoGpuError, Runner
    with pytest.raises(NoGpuError) as e:
        Runner()
    msg = str(e.value)
    assert msg.startswith("pycuda is not installed or does not load")
    assert "NVIDIA GPU" in msg and "driver" in msg and "pip install 'cudalens[gpu]'" in msg
