"""Planning a kernel, and analyzing a document on open, cost the kernel, not the whole file:
what is read from the whole file is read a fixed number of times however many kernels the
file holds (``kernel_model.file_facts``), a candidate's text is parsed incrementally from the
original's tree and only its changed declarations are read again
(``source.incremental.derived_source``), large tables of constants are not walked
(``syntax.tables``), and the language server reads a file's headers and build once, not per
kernel (``target.file_context``). Each fast path is compared with the plain one. No timings:
``benchmarks/bench_plan_scale.py`` measures them."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest
import tree_sitter
from click.testing import CliRunner

from cudalens.cli import main
from cudalens.kernel_model import file_facts, syntax
from cudalens.kernel_model.file_facts import FILE_NODE_TYPES, file_identifiers, file_nodes
from cudalens.kernel_model.syntax import (
    TABLE_BYTES, captures, captures_outside_tables, identifiers, new_parser, parse, tables, walk,
)
from cudalens.lsp.documents import SpecCache, analyze
from cudalens.optimizer.context import make_context
from cudalens.optimizer.staged_search import ordered
from cudalens.source import incremental, parser as source_parser
from cudalens.source.incremental import DERIVED_CHUNKS, derived_source
from cudalens.source.parser import parse_source, parse_tree
from cudalens.target import load_spec, load_target

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_plan_scale import spec_sections, trivial_kernels  # noqa: E402

SOURCES = sorted([*ROOT.glob("examples/*.cu"), *(ROOT / "tests" / "data").rglob("*.cu")])


def _key(n: tree_sitter.Node) -> tuple:
    return n.start_byte, n.end_byte, n.type


def _plan_counts(monkeypatch, tmp_path: Path, n: int) -> dict:
    """What ``cudalens plan`` of kernel k3 in a file of ``n`` trivial kernels parses, scans
    and reads, from empty caches."""
    path = tmp_path / f"kernels{n}.cu"
    path.write_text(trivial_kernels(n))
    parses: list[tuple[int, bool]] = []  # (bytes, whether an old tree was given)
    real = tree_sitter.Parser

    class Counting:
        def __init__(self, *a, **k):
            self._real = real(*a, **k)

        def parse(self, data, *args, **kwargs):
            parses.append((len(data), bool(args) or "old_tree" in kwargs))
            return self._real.parse(data, *args, **kwargs)

        def __getattr__(self, name):
            return getattr(self._real, name)

    monkeypatch.setattr(tree_sitter, "Parser", Counting)
    monkeypatch.setattr(syntax, "_local", type(syntax._local)())
    syntax.clear_parses()
    DERIVED_CHUNKS.clear()
    file_facts.SCANS.clear()
    reads = collections.Counter()
    for module in (source_parser, incremental):
        original = module.kernel_from_definition

        def counting(*a, _original=original, **k):
            reads["kernels"] += 1
            return _original(*a, **k)

        monkeypatch.setattr(module, "kernel_from_definition", counting)
    res = CliRunner().invoke(main, ["plan", str(path), "--kernel", "k3"])
    assert res.exit_code == 0, res.output
    monkeypatch.undo()
    syntax.clear_parses()
    return {"first line": res.output.splitlines()[0].replace(path.name, "FILE"),
            "full parses": sum(1 for _, inc in parses if not inc),
            "incremental parses": sum(1 for _, inc in parses if inc),
            "scans": dict(file_facts.SCANS),
            # the file's kernels are read twice: by the target's parse, and by the first
            # candidate's (which fills the chunk cache); the rest are the candidates' own
            "other kernel reads": reads["kernels"] - 2 * n}


def test_a_plan_parses_scans_and_reads_as_much_for_8_kernels_as_for_48(monkeypatch, tmp_path):
    small = _plan_counts(monkeypatch, tmp_path, 8)
    large = _plan_counts(monkeypatch, tmp_path, 48)
    assert small == large
    assert small["first line"].startswith("plan for k3 in ")
    assert " 99 candidate(s)" in small["first line"], small["first line"]
    assert small["full parses"] == 1  # the file; every candidate's text from its tree
    assert small["incremental parses"] >= 4  # the distinct candidate texts
    assert 1 <= small["scans"]["nodes"] <= small["incremental parses"] + 1
    assert small["other kernel reads"] <= small["incremental parses"]


@pytest.mark.parametrize("name", ["saxpy", "matmul", "softmax", "transpose", "reduce_sum",
                                  "histogram"])
def test_every_candidate_text_parses_as_a_full_parse_would(name):
    syntax.clear_parses()
    DERIVED_CHUNKS.clear()
    target = load_target(ROOT / "examples" / f"{name}.cu")
    ctx = make_context(target.text, str(target.path), target.kernel.qualified_name,
                       target.spec, source=target.source)
    texts = {c.source for c in ordered(ctx, 0)} - {target.text}
    assert len(texts) >= 2, name
    for text in sorted(texts):
        derived = derived_source(text, str(target.path), target.source)
        data = text.encode()
        tree = new_parser().parse(data)
        assert str(parse(text).tree.root_node) == str(tree.root_node)
        assert derived == parse_tree(data, text, tree.root_node, str(target.path))
    syntax.clear_parses()


def _table_file(names: bool = False, paren: bool = False) -> str:
    row = "    " + ", ".join(("kScale" if names and i == 3 else f"{i}.25f") for i in range(16))
    rows = [row + ("," if i else "") for i in range(TABLE_BYTES // len(row) + 2)]
    if paren:
        rows[5] = "    (float)1,"
    return ("#define N_ROWS 4\n"
            "__constant__ float kScale = 2.0f;\n"
            "__constant__ float table[] = {\n" + "\n".join(reversed(rows)) + "\n};\n"
            "const int TILE = 32;\n"
            "__global__ void scale(const float* x, float* y, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    if (i < n) y[i] = x[i] * table[i % TILE];\n"
            "}\n"
            "void run(const float* x, float* y, int n) { scale<<<(n + 255) / 256, 256>>>(x, y, n); }\n")


def test_a_large_table_of_constants_is_not_walked_and_nothing_is_missed():
    text = _table_file(names=True)
    parsed = parse(text)
    root = parsed.tree.root_node
    spans = tables(root, parsed.data)
    opening = text.index("= {") + 2
    assert spans == [(len(text[:opening].encode()), len(text[:text.index("};") + 1].encode()))]
    for pattern, name in [(file_facts._NODES_QUERY, "n"), ('"__global__" @k', "k"),
                          ("(call_expression (kernel_call_syntax)) @launch", "launch")]:
        outside = captures_outside_tables(pattern, root, name, parsed.data)
        assert [_key(n) for n in outside] == [_key(n) for n in captures(pattern, root, name)]
        assert outside, pattern
    assert [parsed.text_of(n).split("\n")[0] for n in file_nodes(parsed, "declaration")] == [
        "__constant__ float kScale = 2.0f;", "__constant__ float table[] = {",
        "const int TILE = 32;", "int i = blockIdx.x * blockDim.x + threadIdx.x;"]
    exact = identifiers(root, parsed)
    found = file_identifiers(parsed)
    assert exact <= found and "kScale" in found and "TILE" in found
    assert not {"f", "e5"} & found  # suffixes of the table's literals are not names
    source = parse_source(text)
    assert [k.name for k in source.kernels] == ["scale"]
    assert [(s.kernel, s.config) for s in source.launch_sites] == [
        ("scale", ("(n + 255) / 256", "256"))]
    syntax.clear_parses()


def test_an_initializer_list_with_a_parenthesis_is_walked_as_any_code():
    parsed = parse(_table_file(paren=True))
    assert tables(parsed.tree.root_node, parsed.data) == []
    syntax.clear_parses()


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_file_facts_are_what_walking_the_tree_finds(path):
    parsed = parse(path.read_text(encoding="utf-8", errors="replace"))
    root = parsed.tree.root_node
    for kind in FILE_NODE_TYPES:
        assert [_key(n) for n in file_nodes(parsed, kind)] == \
            [_key(n) for n in walk(root) if n.type == kind], kind
    assert file_identifiers(parsed) == identifiers(root, parsed)


def test_file_nodes_refuses_a_type_it_does_not_collect():
    with pytest.raises(ValueError, match="expected node types among preproc_def, .*found "
                                         "for_statement"):
        file_nodes(parse("int x;\n"), "for_statement")


def test_opening_a_file_reads_its_headers_and_build_once_not_per_kernel(monkeypatch, tmp_path):
    (tmp_path / "sizes.h").write_text("#define WIDTH 64\n")
    path = tmp_path / "many.cu"
    path.write_text('#include "sizes.h"\n' + trivial_kernels(12).replace(
        "+ 0.0f", "+ WIDTH"))
    from cudalens import build
    from cudalens.spec import headers

    calls = collections.Counter()
    for module, name in [(headers, "local_header_files"), (build, "project_header_files"),
                         (build, "build_defines"), (build, "build_macro_values")]:
        real = getattr(module, name)

        def counting(*a, _real=real, _name=name, **k):
            calls[_name] += 1
            return _real(*a, **k)

        monkeypatch.setattr(module, name, counting)
    text = path.read_text()
    snap = analyze(path.as_uri(), path, 1, text, "utf-16", SpecCache())
    assert len(snap.kernels) == 12 and all(v.spec is not None for v in snap.kernels)
    assert calls == {"local_header_files": 1, "project_header_files": 1, "build_defines": 1,
                     "build_macro_values": 1}
    for view in snap.kernels:  # the same specs as loading each kernel on its own
        assert (view.spec, view.spec_origin) == load_spec(path, snap.source, view.kernel)


def test_opening_a_file_parses_its_spec_file_once_not_per_kernel(monkeypatch, tmp_path):
    from cudalens.spec import parser as spec_parser

    path = tmp_path / "specced.cu"
    path.write_text(trivial_kernels(12))
    spec_path = tmp_path / "specced.cu.spec"
    spec_path.write_text(spec_sections(12))
    parsed = []
    real = spec_parser.parse_spec

    def counting(text, *a, **k):
        parsed.append(len(text))
        return real(text, *a, **k)

    monkeypatch.setattr(spec_parser, "parse_spec", counting)
    snap = analyze(path.as_uri(), path, 1, path.read_text(), "utf-16", SpecCache())
    assert [(v.spec_origin, v.spec.kernel, v.spec.line, v.spec_error) for v in snap.kernels] == [
        (str(spec_path), f"k{i}", 1 + 8 * i, "") for i in range(12)]
    assert parsed == [len(spec_path.read_text())]
    spec_path.write_text(spec_sections(12).replace("= 1024", "= 2048"))  # an edit is read
    snap = analyze(path.as_uri(), path, 2, path.read_text(), "utf-16", SpecCache())
    assert [v.spec.sizes[0].expr for v in snap.kernels] == ["2048"] * 12
    assert len(parsed) == 2
