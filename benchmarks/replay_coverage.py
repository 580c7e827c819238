"""Reports, per recorded kernel, whether the newest H200 recording still answers today's search.

Usage: python benchmarks/replay_coverage.py [KERNEL ...]   (no GPU; a few seconds per kernel)

For each kernel with an exactly replayable recording in ``benchmarks/results/`` (every
evaluation with its sources), the optimizer's search is run against the replay runner
(``tests/data/lsp/replay_runner.py``) with the recording's budget and seed 0; it prints
``covered`` or the replay's reason (the first candidate never measured). Exit status 1 when
any kernel is not covered: the recordings then describe an older search, and the way out is
to record the examples again on a GPU (``benchmarks/run_examples.py``). CI does not run this:
the language-server tests use the model runner (``tests/data/lsp/model_runner.py``) and
accept any search; this only says how current the recordings are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "server"), str(ROOT / "tests" / "data" / "lsp")]


def main(argv: list[str]) -> int:
    from replay_runner import coverage_problem, recorded_files

    kernels = argv or sorted({r["kernel"] for f in recorded_files()
                              for r in json.loads(f.read_text())["runs"]
                              if "kernel" in r and "evaluations" in r})
    gaps = 0
    for kernel in kernels:
        problem = coverage_problem(kernel)
        gaps += problem is not None
        print(f"{kernel}: {'covered' if problem is None else problem}", flush=True)
    print(f"{len(kernels) - gaps}/{len(kernels)} kernels covered by their newest recording")
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
