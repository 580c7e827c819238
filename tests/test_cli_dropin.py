"""``cudalens optimize --apply`` for a winner that needs another launch: the launch sites of
the kernel in the workspace are rewritten with it (and the result builds with nvcc), a site
that cannot be mapped or a kernel launched nowhere in the workspace makes --apply refuse
without --accept-launch-change, and the JSON says what runs as a drop-in.

The runner is ``launch_fakes.LaunchAwareClient`` in-process (the warp-per-row winner fails
under the user's launch, as on the GPU); pruning by nvcc is off so the search is fast."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from launch_fakes import LaunchAwareClient
from nvcc_util import needs_nvcc, nvcc_path

ROOT = Path(__file__).resolve().parent.parent
HOST = ROOT / "examples" / "host" / "layernorm"
LAUNCHER = ROOT / "tests" / "data" / "launch" / "launcher"
NEW = "block = 128, grid = ceil_div(rows, 4)"


@pytest.fixture
def client(monkeypatch):
    import cudalens.check.nvcc as nvcc
    import cudalens.runner_client as rc

    fake = LaunchAwareClient()
    monkeypatch.setattr(rc, "RunnerClient", lambda: fake)

    def no_nvcc():
        raise nvcc.NvccNotFound("pruning is off in this test")

    monkeypatch.setattr(nvcc, "find_nvcc", no_nvcc)
    return fake


def _project(tmp_path: Path, source: Path) -> Path:
    dest = tmp_path / "proj"
    shutil.copytree(source, dest)
    (dest / ".git").mkdir()  # the workspace root
    return dest


def _optimize(path: Path, *args: str):
    from cudalens.cli import main

    return CliRunner().invoke(main, ["optimize", str(path), "--proposer", "builtin",
                                     "--budget", "8", *args], catch_exceptions=False)


def test_apply_rewrites_the_host_launch_and_the_spec_and_the_program_builds(tmp_path, client):
    proj = _project(tmp_path, HOST)
    done = _optimize(proj / "layernorm.cu", "--apply")
    assert done.exit_code == 0, done.output
    main_cu = (proj / "main.cu").read_text()
    assert "layernorm_rows<<<(n_rows + 4 - 1) / 4, 128>>>(d_x, d_gamma, d_beta, d_y," in main_cu
    assert "(n_rows + threads - 1) / threads, threads" not in main_cu
    assert main_cu.replace("<<<(n_rows + 4 - 1) / 4, 128>>>",
                           "<<<(n_rows + threads - 1) / threads, threads>>>") == \
        (HOST / "main.cu").read_text()
    assert "// One warp per row" in (proj / "layernorm.cu").read_text()
    spec = (proj / "layernorm.cu.spec").read_text()
    assert "\nblock = 128\ngrid = ceil_div(rows, 4)\n" in spec
    assert ("Rewrote the launch at main.cu:28:19: <<<(n_rows + threads - 1) / threads, "
            "threads>>> -> <<<(n_rows + 4 - 1) / 4, 128>>>") in done.output
    assert f"Under your launch: needs a new launch: 14.80x with {NEW}." in done.output
    # the grid-stride form of the same pass is correct under the program's launch too
    assert ("Best drop-in (no launch change): restrict warp-per-row+gridstride unroll=4 "
            "block=128: 1.80x (95% CI 1.75-1.85).") in done.output
    assert f"The spec {proj / 'layernorm.cu.spec'} now launches layernorm_rows with {NEW}." \
        in done.output


@needs_nvcc
def test_the_rewritten_host_program_compiles_with_nvcc(tmp_path, client):
    proj = _project(tmp_path, HOST)
    assert _optimize(proj / "layernorm.cu", "--apply").exit_code == 0
    built = subprocess.run([nvcc_path(), "-arch=sm_90", "-o", str(proj / "prog"),
                            str(proj / "main.cu")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    assert (proj / "prog").is_file()


def test_a_site_that_cannot_be_mapped_makes_apply_refuse_and_names_it(tmp_path, client):
    proj = _project(tmp_path, LAUNCHER)
    before = {p.name: p.read_text() for p in proj.iterdir() if p.is_file()}
    done = _optimize(proj / "layernorm.cu", "--apply")
    assert done.exit_code == 2, done.output
    assert (f"error: not applied: restrict warp-per-row unroll=4 block=128 must be launched "
            f"with {NEW} and it is wrong under your launch (mismatch: case 'nominal', seed 1: "
            f"output 'y' differs at index 1024 (expected 0.4, found nan)); 1 launch site(s) of "
            f"layernorm_rows cannot be rewritten: launcher.cu:9:5: layernorm_rows<<<(rows + "
            f"255) / 256, 256>>>(args...) (the launch passes 1 argument(s) where "
            f"layernorm_rows has 7 parameter(s) (a parameter pack or a macro): the sizes cannot "
            f"be read from it). Launch layernorm_rows with {NEW} there and run again with "
            f"--accept-launch-change, or keep the original kernel (the fastest drop-in, restrict "
            f"warp-per-row+gridstride unroll=4 block=128, is 1.80x under your launch)") in " ".join(
                done.output.split())
    assert {p.name: p.read_text() for p in proj.iterdir() if p.is_file()} == before
    # the table and the winner are still shown
    assert "Winner: restrict warp-per-row unroll=4 block=128" in done.output

    done = _optimize(proj / "layernorm.cu", "--apply", "--accept-launch-change")
    assert done.exit_code == 0, done.output
    assert "// One warp per row" in (proj / "layernorm.cu").read_text()
    assert "\nblock = 128\ngrid = ceil_div(rows, 4)\n" in (proj / "layernorm.cu.spec").read_text()
    assert (proj / "launcher.cu").read_text() == before["launcher.cu"]
    assert (f"Not rewritten: launcher.cu:9:5: layernorm_rows<<<(rows + 255) / 256, "
            f"256>>>(args...)") in done.output
    assert f"launch layernorm_rows there with {NEW} yourself." in " ".join(done.output.split())


def test_a_kernel_launched_nowhere_in_the_workspace_says_so_and_refuses(tmp_path, client):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".git").mkdir()
    for name in ("layernorm.cu", "layernorm.cu.spec"):
        shutil.copy(HOST / name, proj / name)
    done = _optimize(proj / "layernorm.cu", "--apply")
    assert done.exit_code == 2, done.output
    assert (f"no launch of layernorm_rows was found in {proj} (.cu, .cuh, .cpp files): its "
            f"launches are elsewhere (a PyTorch extension's launcher, another repository)") \
        in " ".join(done.output.split())
    assert (proj / "layernorm.cu").read_text() == (HOST / "layernorm.cu").read_text()


def test_json_carries_the_launch_change_and_the_drop_in_result(tmp_path, client):
    proj = _project(tmp_path, HOST)
    out = tmp_path / "r.json"
    done = _optimize(proj / "layernorm.cu", "--json", str(out))
    assert done.exit_code == 0, done.output
    record = json.loads(out.read_text())
    w = record["winner"]
    assert w["launch_change"] == {
        "original": {"block": ["256"], "grid": ["ceil_div(rows, block.x)"], "shared": "0",
                     "line": 12},
        "launch": {"block": ["128"], "grid": ["ceil_div(rows, 4)"], "shared": "0", "line": 12}}
    assert w["drop_in"]["ok"] is False and w["drop_in"]["own"] is False
    assert w["drop_in"]["verdict"]["status"] == "mismatch"
    assert w["drop_in"]["verdict"]["variant"].endswith("@user")
    kept = [c for c in record["candidates"] if c["launch_change"] is None]
    assert all(c["drop_in"] is None or c["drop_in"]["own"] for c in kept)
    # the user-launch variants are in the evaluations, with the spec's launch
    last = record["evaluations"][-1]["variants"]
    users = [v for v in last if v["label"].endswith("@user")]
    assert users and all(v["launches"][0]["block"] == [256, 1, 1] for v in users)
