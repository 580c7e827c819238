"""The README's Emacs (eglot) set-up, as written there, in headless Emacs: opening a .cu file
starts ``cudalens lsp`` through eglot, and the server answers eglot with the kernel's code lens
and its code actions. Emacs and eglot come from ``tests/data/lsp/install_emacs.sh`` (Debian's
emacs-nox, and elpa-eglot before Emacs 29); without them the test skips and says how to get
them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import HERE, copy_example, server_env  # noqa: E402
from test_lsp_neovim import cudalens_on_path, readme_snippet  # noqa: E402

EMACS = shutil.which("emacs")


def _eglot_problem() -> str | None:
    if EMACS is None:
        return "Emacs is not installed"
    done = subprocess.run([EMACS, "--batch", "--eval", "(require 'eglot)"], capture_output=True,
                          text=True, timeout=60)
    if done.returncode != 0:
        return f"this Emacs has no eglot ({done.stderr.strip().splitlines()[-1:]})"
    return None


_PROBLEM = _eglot_problem()


@pytest.mark.skipif(_PROBLEM is not None, reason=f"{_PROBLEM}: run "
                    "`bash tests/data/lsp/install_emacs.sh` (apt-get install emacs-nox "
                    "elpa-eglot) first")
def test_the_readme_eglot_snippet_starts_cudalens_on_a_cuda_file(tmp_path):
    init = tmp_path / "init.el"
    init.write_text(readme_snippet("elisp", "### Emacs (eglot)"), encoding="utf-8")
    path = copy_example(tmp_path, "saxpy.cu")
    env = server_env({"CUDALENS_FILE": str(path), "PATH": cudalens_on_path(tmp_path),
                      "HOME": str(tmp_path)})
    proc = subprocess.run([EMACS, "--batch", "-q", "-l", str(init),
                           "-l", str(HERE / "emacs_readme_check.el")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, (f"emacs exited {proc.returncode}\n{proc.stdout}\n"
                                  f"{proc.stderr[-3000:]}")
    assert lines[:3] == ["mode: cudalens-cuda-mode", "server: cudalens", "lens: 3: Optimize"], (
        proc.stdout)
    actions = [line.removeprefix("action: ") for line in lines[3:]]
    assert "Optimize kernel saxpy (built-in passes)" in actions, proc.stdout
