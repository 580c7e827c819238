"""``cudalens check --gpu`` and the compute-sanitizer check before ``cudalens optimize``, as
subprocesses against a live runner process without a GPU (``live_fake_runner``), whose
compute-sanitizer is tests/data/runner/fake_compute_sanitizer.py: it reports a race at each
line holding ``@race``, an out-of-bounds read at each ``@oob``. Checked: each finding printed at
FILE:LINE:COL, the exit statuses the README gives (0 clean, 1 findings, 3 no GPU; optimize 4
for a refused original), the refusal naming the finding and its line, and --no-sanitize."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from live_fake_runner import fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "cli-sanitize-token-0123456789"
SAXPY = (ROOT / "examples" / "saxpy.cu").read_text()
SPEC = (ROOT / "examples" / "saxpy.cu.spec").read_text()
RACY = SAXPY.replace("        y[i] = a * x[i] + y[i];", "        y[i] = a * x[i] + y[i]; // @race")
OOB = SAXPY.replace("    if (i < n) {", "    if (i < n) { // @oob")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with fake_runner_process(tmp_path_factory.mktemp("runner"), TOKEN) as found:
        yield found


def _env(url: str | None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.pop("CUDALENS_RUNNER_URL", None)
    if url:
        env.update({"CUDALENS_RUNNER_URL": url, "CUDALENS_RUNNER_TOKEN": TOKEN})
    return env


def _files(folder: Path, source: str) -> Path:
    path = folder / "saxpy.cu"
    path.write_text(source)
    (folder / "saxpy.cu.spec").write_text(SPEC)
    return path


def _cudalens(env: dict, cwd: Path, *args: str, timeout: float = 240):
    return subprocess.run([sys.executable, "-m", "cudalens", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout, check=False)


def test_check_gpu_prints_each_finding_at_its_line_and_exits_1(url, tmp_path):
    path = _files(tmp_path, RACY)
    done = _cudalens(_env(url), tmp_path, "check", "--gpu", str(path))
    assert done.returncode == 1, done.stderr + done.stdout
    lines = done.stdout.splitlines()
    assert lines[0] == (f"{path}:8:9: error: racecheck: race: Race reported between Write "
                        f"access and Read access; 96 hazards")
    assert lines[1].startswith("saxpy: 1 finding (compute-sanitizer on the ragged case at "
                               "n=262145 (memcheck "), lines
    assert "Traceback" not in done.stderr


def test_check_gpu_on_a_clean_kernel_exits_0(url, tmp_path):
    path = _files(tmp_path, SAXPY)
    done = _cudalens(_env(url), tmp_path, "check", "--gpu", str(path), "--kernel", "saxpy")
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.startswith("saxpy: 0 findings (compute-sanitizer on the ragged case at "
                                  "n=262145 (memcheck ")
    assert "synccheck" in done.stdout


def test_check_gpu_with_an_unknown_kernel_is_an_input_error(url, tmp_path):
    path = _files(tmp_path, SAXPY)
    done = _cudalens(_env(url), tmp_path, "check", "--gpu", str(path), "--kernel", "nope")
    assert done.returncode == 2
    assert "no __global__ kernel named 'nope'" in done.stderr


def test_kernel_without_gpu_is_the_compile_check_of_that_kernel(tmp_path):
    path = _files(tmp_path, SAXPY)
    done = _cudalens(_env(None), tmp_path, "check", str(path), "--kernel", "saxpy")
    assert done.returncode == 0, done.stderr
    assert [line.split(":", 1)[0] for line in done.stdout.splitlines()[:-1]] == ["saxpy"]


def test_optimize_refuses_an_original_with_an_invalid_access(url, tmp_path):
    path = _files(tmp_path, OOB)
    done = _cudalens(_env(url), tmp_path, "optimize", str(path), "--proposer", "builtin",
                     "--budget", "2")
    assert done.returncode == 4, done.stderr + done.stdout
    assert (f"{path}:7:5: error: memcheck: out-of-bounds read: Invalid __global__ read of size "
            f"4 bytes (thread (7,0,0), block (2,0,0))") in done.stderr
    assert "the original saxpy is not used as a reference" in done.stderr
    assert "--no-sanitize" in done.stderr
    assert done.stdout == ""  # nothing was timed or offered
    assert path.read_text() == OOB


def _record(folder: Path) -> dict:
    import json

    return json.loads((folder / "r.json").read_text())


def test_optimize_no_sanitize_skips_the_check(url, tmp_path):
    path = _files(tmp_path, OOB)
    done = _cudalens(_env(url), tmp_path, "optimize", str(path), "--proposer", "builtin",
                     "--budget", "2", "--no-sanitize", "--json", "r.json")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "not used as a reference" not in done.stderr
    assert _record(tmp_path)["sanitizer"] == {"state": "not_run",
                                              "reason": "--no-sanitize was given",
                                              "findings": []}


def test_optimize_goes_on_after_a_clean_check(url, tmp_path):
    path = _files(tmp_path, SAXPY)
    done = _cudalens(_env(url), tmp_path, "optimize", str(path), "--proposer", "builtin",
                     "--budget", "2", "--json", "r.json")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "not checked" not in done.stderr
    status = _record(tmp_path)["sanitizer"]
    assert (status["state"], status["findings"]) == ("clean", [])
    # what ran: the small ragged case (saxpy's n capped at 2^18 + 1) and every tool's seconds
    assert status["reason"].startswith("the ragged case at n=262145 (memcheck ")
    for tool in ("racecheck", "initcheck", "synccheck"):
        assert f"{tool} " in status["reason"]


def test_optimize_says_why_the_check_did_not_run(url, tmp_path):
    """The sanitizer's launch fails (the stand-in's @nocompile): the run goes on, with a note,
    and the record says the original was not checked and why."""
    path = _files(tmp_path, SAXPY.replace("    if (i < n) {", "    if (i < n) { // @nocompile"))
    done = _cudalens(_env(url), tmp_path, "optimize", str(path), "--proposer", "builtin",
                     "--budget", "2", "--json", "r.json")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "note: the original was not checked for races and memory errors" in done.stderr
    status = _record(tmp_path)["sanitizer"]
    assert status["state"] == "not_run" and status["findings"] == []
    assert status["reason"].startswith("compute-sanitizer could not check saxpy: ")


def test_check_gpu_without_a_runner_exits_3(tmp_path):
    import socket
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = _files(tmp_path, SAXPY)
    done = _cudalens(_env(f"http://127.0.0.1:{port}"), tmp_path, "check", "--gpu", str(path))
    assert done.returncode == 3, done.stderr
    assert "error: cannot check on the GPU: cannot reach the GPU runner at" in done.stderr
