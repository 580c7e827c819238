"""Writing specs back: the exact text, and parse(format(spec)) == spec up to line numbers."""

from __future__ import annotations

import dataclasses

from cudalens.spec.model import (BufferDecl, CheckDecl, KernelSpec, LaunchDecl, ScalarDecl,
                                 SizeDecl)
from cudalens.spec.parser import parse_spec
from cudalens.spec.writer import format_spec, format_specs


def _without_lines(spec: KernelSpec) -> KernelSpec:
    def strip(d):
        return dataclasses.replace(d, line=0)
    return dataclasses.replace(
        spec, line=0, source="", sizes=tuple(map(strip, spec.sizes)),
        checks=tuple(map(strip, spec.checks)), params=tuple(map(strip, spec.params)),
        launch=strip(spec.launch))


SPEC = KernelSpec(
    kernel="gather",
    sizes=(SizeDecl("n", "1 << 24"), SizeDecl("m", "n / 4")),
    checks=(CheckDecl("n", "1000003"),),
    params=(BufferDecl("in", "src", "float", "m"),
            BufferDecl("in", "idx", "int32", "n", "0", "m"),
            BufferDecl("out", "out", "half", "n"),
            ScalarDecl("n", "int", "n"),
            ScalarDecl("scale", "float", "0.5")),
    launch=LaunchDecl(("128", "2"), ("ceil_div(n, block.x * block.y)",), "block.x * 4"),
    flops="2 * n",
    tolerance=0.0001,
    atomics=True,
    notes=("length of src assumed m: index is data-dependent", "range of idx set to [0, m)"),
)

TEXT = """\
kernel gather
# length of src assumed m: index is data-dependent
# range of idx set to [0, m)
size n = 1 << 24
check n = 1000003
size m = n / 4
in src: float[m]  # assumed: see the notes
in idx: int32[n] range(0, m)
out out: half[n]
scalar n: int = n
scalar scale: float = 0.5
block = 128, 2
grid = ceil_div(n, block.x * block.y)
shared = block.x * 4
flops = 2 * n
tolerance = 0.0001
atomics
"""


def test_format_spec_text():
    assert format_spec(SPEC) == TEXT


def test_round_trip_from_objects():
    parsed = parse_spec(format_spec(SPEC), "g.spec")["gather"]
    assert _without_lines(parsed) == _without_lines(SPEC)
    assert parsed.notes == SPEC.notes


def test_round_trip_from_text_keeps_lines_too():
    text = format_specs([SPEC, dataclasses.replace(SPEC, kernel="other", notes=(),
                                                   flops=None, tolerance=None, atomics=False,
                                                   launch=LaunchDecl(("256",), ("1",)))])
    first = parse_spec(text, "g.spec")
    again = parse_spec(format_specs(first.values()), "g.spec")
    assert again == first
    assert "kernel other" in text and "shared" not in text.split("kernel other")[1]


def test_round_trip_of_a_hand_written_file():
    hand = ("# header comment\nkernel k   # trailing\n#  a note\nsize n=8\n"
            "out y : float[ n ]\nblock=(32, 4)\ngrid = 1, ceil_div(n, block.y)\n")
    spec = parse_spec(hand, "k.spec")["k"]
    text = format_spec(spec)
    assert text == ("kernel k\n# a note\nsize n = 8\nout y: float[n]\nblock = 32, 4\n"
                    "grid = 1, ceil_div(n, block.y)\n")
    assert _without_lines(parse_spec(text, "k.spec")["k"]) == _without_lines(spec)


def test_multiline_note_becomes_several_comment_lines():
    spec = dataclasses.replace(SPEC, notes=("first\nsecond",))
    assert format_spec(spec).splitlines()[1:3] == ["# first", "# second"]


def test_half_given_range_gets_the_type_default_for_the_other_bound():
    spec = dataclasses.replace(SPEC, params=(BufferDecl("in", "src", "float", "m", low="0"),))
    assert "in src: float[m] range(0, 1.0)" in format_spec(spec)


def test_guessed_lines_say_so_and_still_parse():
    spec = dataclasses.replace(SPEC, notes=SPEC.notes + (
        "scalar scale = 0.5: GUESS (no launch site passes a value), confirm it",
        "shared = block.x * 4: GUESS, the body declares extern __shared__ float"))
    text = format_spec(spec)
    assert "scalar scale: float = 0.5  # GUESS: see the notes\n" in text
    assert "shared = block.x * 4  # GUESS: see the notes\n" in text
    assert "scalar n: int = n\n" in text
    again = parse_spec(text, "k.spec")["gather"]
    assert again.param("scale").expr == "0.5" and again.launch.shared == "block.x * 4"
