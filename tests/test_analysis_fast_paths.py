"""The fast paths of re-analysis give what the plain paths give, and their caches follow edits.

* Whole-file scans (``validate.record_types``, ``block_shape.const_int``/``literal_block``)
  are one pass per text into tables, cached per text: compared with the scans as they were
  written before (one regular expression search per name, kept below as the reference) on
  every example and test source, a generated file and random token soups built to trip them.
* Spec inference on a document's incremental tree (``syntax.remember``) gives the draft a
  full parse gives, for every kernel of every example and test source.
* ``documents.analyze`` with its caches (spec cache, incremental parser, material cache),
  edit after edit, equals a fresh analysis of the same text with every cache emptied: kernels,
  specs, errors and store material keys. Edits that change only what inference reads outside
  a kernel (a ``#define``, a struct) reach the cached drafts.
"""

from __future__ import annotations

import random
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cudalens.lsp.documents import SpecCache, _share_tree, analyze
from cudalens.source.incremental import IncrementalParser
from cudalens.source.parser import parse_source
from cudalens.kernel_model.syntax import new_parser
from cudalens.kernel_model import syntax
from cudalens.spec import validate
from cudalens.spec.block_shape import const_int, dim3_declarations, literal_block
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import clear_text_caches, infer_spec
from cudalens.spec.validate import record_types
from cudalens.store.keys import MaterialCache, source_materials

ROOT = Path(__file__).absolute().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from lsp_source_gen import generate  # noqa: E402

SOURCES = sorted([*ROOT.glob("examples/*.cu"), *(ROOT / "tests" / "data").rglob("*.cu"),
                  *(ROOT / "tests" / "data").rglob("*.cuh")])
GEN = generate(700, seed=5)
GENERATED = GEN.text


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _clear_caches() -> None:
    """Everything inference keeps between calls, so the next call is the plain path."""
    clear_text_caches()
    assert syntax.PARSES.remembered.get(GENERATED) is None and \
        validate._record_types.cache_info().currsize == 0


# -- the scans as written before the tables (commit 560cc91), the reference -------------------


def ref_record_types(text: str) -> frozenset:
    names = set(re.findall(r"\b(?:struct|class|union)\s+([A-Za-z_]\w*)", text))
    # (a typedef's braced body may hold fields' semicolons: ``typedef struct { int a; } P;``)
    names |= set(re.findall(r"typedef\s+(?:struct|class|union)\b(?:[^;{]*\{[^{}]*\}|[^;]*?\})"
                            r"\s*([A-Za-z_]\w*)\s*;", text, flags=re.S))
    return frozenset(names)


def ref_named_int(name: str, source: str):
    name = re.escape(name)
    for pattern in (rf"#\s*define\s+{name}\s+\(?\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)?\s*$",
                    rf"\b(?:constexpr|const)\b[^;=(){{}}]*\b{name}\s*(?:=\s*|\{{\s*)"
                    rf"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\}}?\s*;"):
        found = re.search(pattern, source, flags=re.MULTILINE)
        if found:
            return int(found.group(1), 0)
    return None


def ref_dim3_args(name: str, source: str):
    """The first declarator NAME of a ``dim3`` declaration, read declaration by declaration
    (the reference of the declarator grammar, which the one-pass table must agree with):
    ``NAME``, ``NAME(ARGS)``, ``NAME{ARGS}``, ``NAME = {ARGS}``, ``NAME = dim3(ARGS)``, ARGS
    with brackets balanced (within 2000 characters), separated by ``,`` up to ``;``; a
    declarator followed by anything else ends the declaration and does not count."""
    for head in re.finditer(r"\bdim3\s+(?=[A-Za-z_])", source):
        rest = source[head.end():]
        while True:
            m = re.match(r"\s*([A-Za-z_]\w*)\s*(?:=\s*(?:dim3\s*)?)?([({])?", rest)
            if m is None:
                break
            args, rest = None, rest[m.end():]
            if m.group(2):
                depth, close = 1, None
                for i, c in enumerate(rest[:1999]):
                    depth += (c in "({") - (c in ")}")
                    if depth == 0:
                        close = i
                        break
                if close is None:
                    break
                args, rest = rest[:close], rest[close + 1:]
            sep = re.match(r"\s*([,;])", rest[:200])
            if sep is None:
                break
            if m.group(1) == name and args is not None:
                return args
            if sep.group(1) == ";" or m.group(1) == name:
                break
            rest = rest[sep.end():]
    return None


_TOKENS = ["struct", "class", "union", "typedef", "const", "constexpr", "#", "define", "dim3",
           "N", "BLOCK", "B2", "x", "_t", "é", "2x", "Nx", "int", "unsigned", "static",
           "=", "{", "}", "(", ")", ";", ",", "0x1F", "256", "8u", "1ul", "0", "//", "*",
           "xstruct", "constN", "dim3x", "#define", "# define",
           # fragments that complete a match often enough
           "dim3 N(", "dim3 x = {", "dim3 BLOCK = dim3(", "4, 2)", "8}", "const int N =",
           "constexpr unsigned x{", "4u};", "#define BLOCK", "(32)\n", "static const BLOCK = 7;",
           "typedef struct {", "} Pair;", "struct\n\nPair"]
_SEPARATORS = [" ", " ", "\n", "", "\t", "\n\n", "  \n "]


def _soup(rng: random.Random) -> str:
    n = rng.randint(5, 120)
    return "".join(rng.choice(_TOKENS) + rng.choice(_SEPARATORS) for _ in range(n))


def _names(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", text)) | {"N", "BLOCK", "block", "missing"}


def _assert_scans_match(text: str) -> None:
    assert record_types(text) == ref_record_types(text)
    for name in _names(text):
        assert const_int(name, text) == ref_named_int(name, text), name
        assert const_int(f" ({name}) ", text) == ref_named_int(name, text), name
        assert dim3_declarations(text).get(name) == ref_dim3_args(name, text), name


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_whole_file_scans_match_the_reference_on_sources(path: Path):
    _assert_scans_match(path.read_text(encoding="utf-8"))


def test_whole_file_scans_match_the_reference_on_a_generated_file_and_token_soups():
    _assert_scans_match(GENERATED)
    rng = random.Random(11)
    found = {"record": 0, "const": 0, "dim3": 0}
    for _ in range(600):
        text = _soup(rng)
        _assert_scans_match(text)
        found["record"] += bool(ref_record_types(text))
        found["const"] += any(ref_named_int(n, text) is not None for n in ("N", "BLOCK", "x"))
        found["dim3"] += any(ref_dim3_args(n, text) is not None for n in ("N", "BLOCK", "x"))
    # the soups do reach every pattern (the comparison is not between two empty answers)
    assert min(found.values()) >= 5, found


def test_scans_read_the_first_declaration_and_follow_the_text():
    text = ("#define BLOCK 128\nconst int BLOCK = 64;\nconstexpr unsigned T{32u};\n"
            "dim3 shape(16, 8);\ndim3 shape(4);\nstruct Pair { int a; };\n")
    assert const_int("BLOCK", text) == 128 and const_int("T", text) == 32
    assert literal_block("shape", text) == (16, 8)
    assert record_types(text) == {"Pair"}
    edited = text.replace("#define BLOCK 128\n", "").replace("struct Pair", "struct Pear")
    assert const_int("BLOCK", edited) == 64
    assert record_types(edited) == {"Pear"}


# -- inference on the document's tree --------------------------------------------------------


def _drafts(text: str) -> list:
    source = parse_source(text, "f.cu")
    out = []
    for kernel in source.kernels:
        try:
            out.append(infer_spec(kernel, text, source.launch_sites))
        except SpecError as exc:
            out.append(("error", str(exc)))
    return out


@pytest.mark.parametrize("path", SOURCES, ids=_id)
def test_inference_on_the_incremental_tree_equals_inference_on_the_text(path: Path):
    text = path.read_text(encoding="utf-8")
    _clear_caches()
    plain = _drafts(text)
    # the document reaches the text through edits, as in the editor
    parser = IncrementalParser()
    lines = text.split("\n")
    parser.parse("\n".join(lines[: len(lines) // 2]))
    parser.parse("// opened\n" + text)
    parser.parse(text)
    _clear_caches()
    _share_tree(text, text.encode("utf-8"), parser)
    remembered = syntax.PARSES.remembered.get(text)
    if parse_source(text).error_ranges or new_parser().parse(text.encode()).root_node.has_error:
        assert remembered is None  # a tree with errors is never shared
        return
    assert remembered is not None  # inference below reads the document's tree
    assert syntax.parse(text) is remembered
    assert _drafts(text) == plain


def test_a_remembered_tree_is_not_changed_by_the_next_edit():
    a = "__global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = 1; }\n"
    b = "// a comment above\n" + a.replace("= 1", "= 2")
    parser = IncrementalParser()
    parser.parse(a)
    _clear_caches()
    syntax.remember(a, parser.last_tree())
    parser.parse(b)  # edits the parser's own tree
    fresh = new_parser().parse(a.encode()).root_node
    kept = syntax.parse(a).tree.root_node
    assert str(kept) == str(fresh)
    assert (kept.start_byte, kept.end_byte) == (0, len(a))
    with pytest.raises(ValueError, match=r"expected a tree of the 5-byte text, found one "
                                         r"spanning bytes 0\.\.\d+"):
        syntax.remember("int;\n", parser.last_tree())


# -- store keys -------------------------------------------------------------------------------


def test_material_cache_gives_the_plain_keys_and_follows_edits():
    cache = MaterialCache(size=64)  # small: entries are dropped and computed again
    lines = GENERATED.split("\n")
    inside = GEN.kernels[3].body_line
    seen = []
    for text in (GENERATED, "\n".join(lines[:inside] + ["  x += 1;"] + lines[inside:]),
                 GENERATED.replace("#define", "#define  ", 1), "\n\n" + GENERATED):
        source = parse_source(text)
        specs = {(k.start_byte, k.end_byte): f"spec {k.name}" for k in source.kernels}
        got = source_materials(source, specs, ("-O3",), cache)
        assert got == source_materials(source, specs, ("-O3",))
        assert len(got) == len(source.kernels) > 20
        seen.append(got)
    # blank lines and spaces do not change keys; an edit inside one kernel changes its key only
    assert list(seen[3].values()) == list(seen[0].values())
    assert list(seen[2].values()) == list(seen[0].values())
    changed = [a != b for a, b in zip(seen[0].values(), seen[1].values())]
    assert sum(changed) == 1


# -- analysis with caches, edit after edit ----------------------------------------------------

SMALL = """#define BLOCK 128
struct Pair { float a; float b; };
__global__ void fill(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 0.0f;
}
__global__ void scale(float* y, Pair p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= 2.0f;
}
void go(float* x, int n) { fill<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(x, n); }
"""


def _view(snapshot) -> list:
    out = []
    for v in snapshot.kernels:
        spec = v.spec
        notes = tuple(re.sub(r"line \d+", "line L", n) for n in spec.notes) if spec else ()
        out.append((v.kernel, replace(spec, notes=()) if spec else None, notes, v.spec_origin,
                    v.spec_error, v.material))
    return out


def _versions(text: str) -> list[str]:
    lines = text.split("\n")
    source = parse_source(text)
    k = source.kernels[len(source.kernels) // 2]
    body = k.body_range.start.line + 1
    out = [text,
           "\n".join(lines[:body] + ["    // typed"] + lines[body:]),  # kernels below move
           "\n".join(lines[:body] + ["    // typed!"] + lines[body:]),  # one character
           "\n".join(lines[:body] + ["    int broken = ;"] + lines[body:]),  # an error
           "\n".join(lines[:k.range.start.line] + lines[k.range.end.line + 1:]),  # kernel gone
           text.replace("\n", "\n\n", 3),  # blank lines outside kernels
           "int added_outside = 1;\n" + text]  # text outside kernels: every key changes
    return out


@pytest.mark.parametrize("name", ["generated", "small", "matmul", "softmax"])
def test_analysis_with_caches_equals_a_fresh_analysis_edit_after_edit(tmp_path, name):
    text = {"generated": GENERATED, "small": SMALL}.get(name) or \
        (ROOT / "examples" / f"{name}.cu").read_text(encoding="utf-8")
    path = tmp_path / "doc.cu"
    path.write_text(text, encoding="utf-8")
    versions = _versions(text)
    if name == "small":  # what inference reads outside the kernels changes
        versions += [text.replace("BLOCK 128", "BLOCK 64"),
                     text.replace("struct Pair", "struct Pear"), text]
    specs, parser = SpecCache(), IncrementalParser()
    for version, new in enumerate(versions, start=1):
        got = analyze("file:///doc.cu", path, version, new, "utf-16", specs, parser)
        _clear_caches()
        want = analyze("file:///doc.cu", path, version, new, "utf-16")
        assert _view(got) == _view(want), f"version {version}"
        assert got.source == want.source


def test_cached_drafts_follow_a_define_and_a_struct_elsewhere_in_the_file(tmp_path):
    path = tmp_path / "small.cu"
    path.write_text(SMALL, encoding="utf-8")
    specs, parser = SpecCache(), IncrementalParser()

    def kernels(text: str, version: int):
        snap = analyze("file:///small.cu", path, version, text, "utf-16", specs, parser)
        return snap.kernel("fill"), snap.kernel("scale")

    fill, scale = kernels(SMALL, 1)
    assert fill.spec.launch.block == ("128",)
    assert scale.spec is None and "'Pair', a struct" in scale.spec_error
    fill, scale = kernels(SMALL.replace("BLOCK 128", "BLOCK 64"), 2)
    assert fill.spec.launch.block == ("64",)
    fill, scale = kernels(SMALL.replace("struct Pair", "struct Pear"), 3)
    assert fill.spec.launch.block == ("128",)
    assert scale.spec is not None and scale.spec_error == ""
    assert [p.name for p in scale.spec.params] == ["y", "p", "n"]
