"""The editor side of the compute-sanitizer check (cudalens/sanitize_check.py) without a runner:
the small sizes it runs, where a finding lands in the file, and how a finding is printed."""

from __future__ import annotations

from pathlib import Path

from cudalens.sanitize_check import finding_line, locate, small_spec
from cudalens.spec.resolve import sizes_for
from cudalens.target import load_target
from gpu_runner.sanitizer_text import Finding

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_the_sanitizer_runs_small_ragged_sizes():
    saxpy = load_target(EXAMPLES / "saxpy.cu").spec
    assert sizes_for(saxpy, "ragged") == {"n": 20132659}
    assert sizes_for(small_spec(saxpy), "ragged") == {"n": 262145}
    assert sizes_for(small_spec(saxpy), "nominal") == {"n": 1 << 25}  # the timed run is kept
    matmul = small_spec(load_target(EXAMPLES / "matmul.cu").spec)
    assert sizes_for(matmul, "ragged") == {"m": 65, "n": 65, "k": 65}
    tiny = small_spec(saxpy, elements=1000)
    assert sizes_for(tiny, "ragged") == {"n": 1001}


def test_a_finding_lands_on_its_line_at_the_first_non_blank_character():
    text = "a\r\n\t  b = c;\r\nlast"
    f = Finding("memcheck", "out-of-bounds read", "Invalid __global__ read", own=True, line=2,
                file="cudalens-variant.cu")
    loc = locate(text, f)
    assert (loc.line, loc.column) == (1, 3)
    assert loc.position("k.cu") == "k.cu:2:4"
    assert finding_line("k.cu", loc) == ("k.cu:2:4: error: memcheck: out-of-bounds read: "
                                         "Invalid __global__ read")


def test_a_finding_outside_the_file_names_where_it_was():
    header = Finding("racecheck", "race", "Race reported", file="/inc/util.cuh", line=9)
    loc = locate("x\n", header)
    assert (loc.line, loc.column) == (None, None)
    assert finding_line("k.cu", loc) == "k.cu: error: racecheck: race: Race reported " \
                                        "(at /inc/util.cuh:9)"
    past_end = Finding("memcheck", "CUDA API error", "Program hit", own=True, line=40)
    assert locate("x\n", past_end).line is None
    assert finding_line("k.cu", locate("x\n", past_end)).startswith("k.cu: warning: memcheck")
