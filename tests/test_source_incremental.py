"""``IncrementalParser`` gives exactly what ``parse_source`` gives, edit after edit: kernels
(names, ranges, bytes, parameters, launch sites), launch sites and error ranges, through
clean edits, edits that break the file and edits that fix it again."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cudalens.source.incremental import IncrementalParser, edit_between, shift_kernel
from cudalens.source.parser import parse_source

ROOT = Path(__file__).absolute().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsp_source_gen import generate  # noqa: E402

BASE = generate(400, seed=3).text


def _same(parser: IncrementalParser, text: str) -> None:
    got, want = parser.parse(text, "f.cu"), parse_source(text, "f.cu")
    assert got.kernels == want.kernels
    assert got.launch_sites == want.launch_sites
    assert got.error_ranges == want.error_ranges
    assert got == want


def test_edit_between_finds_the_one_changed_span_with_points():
    old = "ab\ncd\nef\n".encode()
    new = "ab\ncXYd\nef\n".encode()
    assert edit_between(old, new) == {
        "start_byte": 4, "old_end_byte": 4, "new_end_byte": 6,
        "start_point": (1, 1), "old_end_point": (1, 1), "new_end_point": (1, 3)}
    # a deleted line: the span ends on the next row
    assert edit_between(old, "ab\nef\n".encode())["old_end_point"] == (2, 0)
    assert edit_between(old, old)["old_end_byte"] == edit_between(old, old)["new_end_byte"]


def test_scripted_edits_match_a_full_parse():
    parser = IncrementalParser()
    lines = BASE.split("\n")
    _same(parser, BASE)
    first = parse_source(BASE).kernels[0]
    body = first.body_range.start.line + 1

    steps = []
    steps.append(lines[:body] + ["    int added = 1;"] + lines[body:])  # kernels below move
    steps.append(lines[:body] + ["    int added = 2;  // µs"] + lines[body:])  # multi-byte
    steps.append(["__global__ void fresh(float* p) { p[0] = 0.0f; }", ""] + lines)  # new kernel
    steps.append(lines[:body] + ["    int broken = ;"] + lines[body:])  # an error
    steps.append(lines[:body] + ["    }"] + lines[body:])  # an unbalanced brace
    steps.append(lines)  # fixed again
    steps.append(lines[:body - 2] + lines[first.range.end.line + 1:])  # first kernel deleted
    steps.append(lines + ['extern "C" { __global__ void tail(int* q) { q[1] = 2; } }',
                          "namespace late { __global__ void inner(int* q) { q[0] = 1; } }",
                          "void go(int* q) { late::inner<<<1, 32>>>(q); tail<<<1, 1>>>(q); }"])
    steps.append(lines)
    for step in steps:
        _same(parser, "\n".join(step))


@pytest.mark.parametrize("seed", [0, 1])
def test_random_line_edits_match_a_full_parse(seed):
    rng = random.Random(seed)
    parser = IncrementalParser()
    lines = BASE.split("\n")
    _same(parser, BASE)
    snippets = ["", "    int z = 0;", "// note", "{", "}", "float q = ",
                "__global__ void r(int* p) { p[0] = 3; }", "namespace n {", "/*", "*/"]
    for _ in range(40):
        at = rng.randrange(len(lines))
        kind = rng.random()
        if kind < 0.4:
            lines = lines[:at] + [rng.choice(snippets)] + lines[at:]
        elif kind < 0.7:
            lines = lines[:at] + lines[at + 1:]
        else:
            lines = lines[:at] + [lines[at] + rng.choice(snippets)] + lines[at + 1:]
        _same(parser, "\n".join(lines))


def test_the_same_definition_in_another_namespace_or_linkage_is_not_taken_from_the_cache():
    parser = IncrementalParser()
    kernel = "__global__ void k(int* p) { p[0] = 1; }"
    for text in (f"namespace a {{\n{kernel}\n}}\n", f"namespace b {{\n{kernel}\n}}\n",
                 f'extern "C" {{\n{kernel}\n}}\n', f"{kernel}\n"):
        _same(parser, text)
    assert [k.qualified_name for k in parser.parse(f"namespace b {{\n{kernel}\n}}\n").kernels] \
        == ["b::k"]


def test_examples_parse_the_same_from_scratch_and_after_switching():
    parser = IncrementalParser()
    for path in sorted((ROOT / "examples").glob("*.cu")):
        _same(parser, path.read_text(encoding="utf-8"))


def test_shift_kernel_moves_every_range_and_byte_offset():
    k = parse_source("__global__ void k(int* a, float b) { a[0] = b; }\n").kernels[0]
    moved = shift_kernel(k, 3, 100)
    assert (moved.range.start.line, moved.range.end.line) == (3, 3)
    assert moved.name_range.start.line == 3 and moved.name_range.start.column == 16
    assert [p.range.start.line for p in moved.parameters] == [3, 3]
    assert [p.range.start.column for p in moved.parameters] == \
        [p.range.start.column for p in k.parameters]
    assert (moved.start_byte, moved.body_start_byte, moved.end_byte) == \
        (k.start_byte + 100, k.body_start_byte + 100, k.end_byte + 100)
    assert moved.parameters[0].name == "a" and moved.name == "k"


def test_text_must_be_str():
    with pytest.raises(TypeError, match="f.cu: IncrementalParser.parse expects the source "
                                        "text as str, found bytes"):
        IncrementalParser().parse(b"x", "f.cu")
