"""scripts/run_suites.sh (what scripts/test.sh ends with) runs pytest and the VS Code
end-to-end test whatever the first gives, and exits with pytest's status when pytest failed,
else with the end-to-end test's. Driven with stand-ins: a "python" whose ``-m pytest`` exits
with a chosen status, and an e2e run.sh that records that it ran and exits with another."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tree(tmp_path: Path, pytest_status: int, e2e_status: int) -> Path:
    """A stand-in checkout: scripts/run_suites.sh, a fake python, a fake e2e run.sh."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run_suites.sh", tmp_path / "scripts" / "run_suites.sh")
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho \"pytest $*\" >> {tmp_path}/ran\nexit {pytest_status}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    e2e = tmp_path / "client-vscode" / "e2e"
    e2e.mkdir(parents=True)
    (e2e / "run.sh").write_text(f"echo \"e2e $CUDALENS_E2E_PYTHON\" >> {tmp_path}/ran\n"
                                f"exit {e2e_status}\n")
    return python


def _run(tmp_path: Path, python: Path, env_extra: Optional[dict[str, str]] = None):
    env = {k: v for k, v in os.environ.items() if k != "CUDALENS_SKIP_VSCODE"}
    env.update(env_extra or {})
    return subprocess.run(["bash", str(tmp_path / "scripts" / "run_suites.sh"), str(python),
                           "-q", "tests/x.py"], capture_output=True, text=True, env=env,
                          timeout=60)


@pytest.mark.parametrize("pytest_status,e2e_status,status,summary", [
    (0, 0, 0, "pytest passed; VS Code end-to-end passed"),
    (1, 0, 1, "pytest failed (exit status 1); VS Code end-to-end passed"),
    (2, 3, 2, "pytest failed (exit status 2); VS Code end-to-end failed (exit status 3)"),
    (0, 3, 3, "pytest passed; VS Code end-to-end failed (exit status 3)"),
])
def test_both_suites_run_and_pytest_status_is_kept(tmp_path, pytest_status, e2e_status, status,
                                                   summary):
    python = _tree(tmp_path, pytest_status, e2e_status)
    done = _run(tmp_path, python)
    assert done.returncode == status, done.stdout + done.stderr
    assert (tmp_path / "ran").read_text().splitlines() == [
        "pytest -m pytest -q tests/x.py", f"e2e {python}"]
    assert done.stdout.splitlines()[-1] == f"test.sh: {summary}"


def test_skip_vscode_runs_pytest_only(tmp_path):
    python = _tree(tmp_path, 1, 0)
    done = _run(tmp_path, python, {"CUDALENS_SKIP_VSCODE": "1"})
    assert done.returncode == 1
    assert (tmp_path / "ran").read_text().splitlines() == ["pytest -m pytest -q tests/x.py"]
    assert done.stdout.splitlines()[-1] == ("test.sh: pytest failed (exit status 1); VS Code "
                                            "end-to-end not run (CUDALENS_SKIP_VSCODE=1)")
