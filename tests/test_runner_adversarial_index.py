"""The adversarial suite's index and kernels, checked without a GPU: every cheat the issue
lists has a candidate, every file is there and says what it is, and every kernel compiles for
sm_90 with the real nvcc and holds the kernel the spec names."""

from __future__ import annotations

import subprocess
import tempfile
import typing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nvcc_util import ARCH, needs_nvcc, nvcc_path
from test_adversarial_gpu import DATA, KERNELS, candidate, entries, load_index

from gpu_runner.cubin import find_kernel_symbol
from gpu_runner.report import VerdictStatus

# Issue 3, point 4, in its words.
ISSUE_CHEATS = (
    "writes only part of the output",
    "writes nothing and relies on the output buffer still holding the previous result",
    "changes an input",
    "writes past the end of a buffer",
    "a reduction with a missing barrier (race)",
    "hangs",
    "crashes with an illegal address",
    "correct only when the size is a multiple of the block size",
    "computes in lower precision than the original beyond tolerance",
    "caches its first result in device memory and replays it",
    "does the work only on some calls",
    "reads uninitialized shared memory",
)


# Cheats beyond the issue's list: a variant the runner missed before (see gpu_runner/timing.py).
EXTRA_CHEATS = ("does the work only on some calls, from the timing loop on",)


def test_every_cheat_of_the_issue_has_exactly_one_candidate():
    cheats = [e["cheat"] for e in entries() if e["cheat"] is not None]
    assert sorted(cheats) == sorted(ISSUE_CHEATS + EXTRA_CHEATS)


def test_correct_rewrites_cover_launch_configuration_vectorizing_and_reordering():
    correct = {e["label"]: e for e in entries() if e["cheat"] is None}
    assert set(correct) == {"gridstride_block128", "block1024", "vectorized",
                            "shuffle_reduction", "tiled_reordered"}
    assert all(e["expect"] == "passed" for e in correct.values())
    # Different launch configurations from the baseline's 256-thread blocks.
    assert correct["gridstride_block128"]["block"] == 128
    assert correct["block1024"]["block"] == 1024
    assert correct["vectorized"]["per_thread"] == 4


def test_entries_are_well_formed():
    statuses = set(typing.get_args(VerdictStatus))
    labels = [e["label"] for e in entries()]
    assert len(labels) == len(set(labels))
    for e in entries():
        assert e["problem"] in KERNELS, e
        assert (DATA / e["file"]).is_file(), e["file"]
        assert e["expect"] in statuses and e.get("or", "passed") in statuses, e
        assert (e["cheat"] is None) == (e["expect"] == "passed"), e
        v = candidate(e)
        assert len(v.launches) == 2 and all(x.block[0] == e["block"] for x in v.launches)
    for name, file in load_index()["baselines"].items():
        assert name in KERNELS and (DATA / file).is_file()


def test_each_new_kernel_says_what_it_is_on_its_first_line():
    for e in entries():
        if not e["file"].startswith("adversarial/"):
            continue
        first = (DATA / e["file"]).read_text().splitlines()[0]
        want = "// Cheat: " if e["cheat"] else "// Correct rewrite: "
        assert first.startswith(want), f"{e['file']}: {first}"


def _compile(path: Path, kernel: str) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "k.cubin"
        proc = subprocess.run([nvcc_path(), f"-arch={ARCH}", "-cubin", "-o", str(out), str(path)],
                              capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            return path.name, f"nvcc failed: {proc.stderr}"
        try:
            return path.name, find_kernel_symbol(out.read_bytes(), kernel)
        except Exception as e:  # noqa: BLE001 (reported with the file's name below)
            return path.name, f"no kernel '{kernel}': {e}"


@needs_nvcc
def test_every_kernel_of_the_suite_compiles_for_sm_90():
    jobs = {(DATA / e["file"], KERNELS[e["problem"]]) for e in entries()}
    jobs |= {(DATA / f, KERNELS[p]) for p, f in load_index()["baselines"].items()}
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = dict(pool.map(lambda job: _compile(*job), sorted(jobs)))
    bad = {k: v for k, v in found.items() if not v.startswith("_Z")}
    assert not bad, bad
    assert found["block_sum_race.cu"] == "_Z9block_sumiPKfPf"
    assert found["saxpy_nothing.cu"] == "_Z5saxpyifPKfS0_Pf"
