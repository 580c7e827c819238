"""The language server's garbage-collector thresholds (``cudalens.lsp.gc_tuning``): the
default, the environment override, and a bad override refused by ``cudalens lsp`` with a
usage error before the server starts."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudalens.lsp import gc_tuning

ROOT = Path(__file__).resolve().parent.parent


def test_thresholds_default_and_override():
    assert gc_tuning.thresholds_from_env(None) == gc_tuning.THRESHOLDS == (50_000, 50, 100)
    assert gc_tuning.thresholds_from_env("") == gc_tuning.THRESHOLDS
    assert gc_tuning.thresholds_from_env(" 700, 10,10 ") == (700, 10, 10)
    for bad in ("700,10", "a,b,c", "700,10,-1", "1,2,3,4"):
        with pytest.raises(ValueError, match=r"CUDALENS_LSP_GC must be three comma-separated "
                                             r"non-negative integers such as 700,10,10; found"):
            gc_tuning.thresholds_from_env(bad)


def test_apply_sets_the_collector(monkeypatch):
    before = gc.get_threshold()
    try:
        monkeypatch.setenv(gc_tuning.ENV, "1234,5,6")
        assert gc_tuning.apply() == (1234, 5, 6) == gc.get_threshold()
        monkeypatch.delenv(gc_tuning.ENV)
        assert gc_tuning.apply() == gc_tuning.THRESHOLDS == gc.get_threshold()
    finally:
        gc.set_threshold(*before)


def test_the_server_refuses_a_bad_override():
    env = dict(os.environ, CUDALENS_LSP_GC="lots")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-m", "cudalens.cli_lsp"], input="", text=True,
                          capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert ("Error: CUDALENS_LSP_GC must be three comma-separated non-negative integers such "
            "as 700,10,10; found 'lots'") in done.stderr
