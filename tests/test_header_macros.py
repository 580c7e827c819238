"""Bounds and types written through the macros of the headers a kernel file includes
(issues 13 and 14): the passes and spec drafts see the headers' macros and the build's -D
values through ``target.FileContext``, and say why a macro has no value.

The project is ``tests/data/macro_bench`` (its README): ``scale/scale.cu`` includes
``../common/bench.h`` and ``scale.cuh``; each test works on a copy in ``tmp_path``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from cudalens.engine.plan import plan_for_target
from cudalens.kernel_model.macros import header_macros
from cudalens.spec.model import BufferDecl, ScalarDecl
from cudalens.target import load_target

DATA = Path(__file__).parent / "data" / "macro_bench"


def project(tmp_path: Path, toml: str = "") -> Path:
    """A copy of the project; ``toml``: the text of its ``cudalens.toml`` (none when "")."""
    root = tmp_path / "macro_bench"
    shutil.copytree(DATA, root)
    (root / ".git").mkdir()  # a repository: its cudalens.toml is looked for up to its root
    if toml:
        (root / "cudalens.toml").write_text(toml)
    return root / "scale" / "scale.cu"


def line_of(path: Path, needle: str) -> int:
    """1-based line of the first line of ``path`` holding ``needle``."""
    for i, line in enumerate(path.read_text().split("\n"), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def inline(text: str) -> str:
    """``scale.cu`` with the headers' macros written out by hand, line for line: the quoted
    includes blanked, ``N_ROWS``/``N_COLS`` as the parameters they expand to by default,
    the element type, sizes and block as their values."""
    text = re.sub(r'^#include "[^"]+"$', "", text, flags=re.M)
    text = re.sub(r"BENCH_CEIL\(([^,]+), ([^)]+)\)", r"(((\1) + (\2) - 1) / (\2))", text)
    for word, value in (("N_ROWS", "rows"), ("N_COLS", "cols"), ("ELEM_T", "float"),
                        ("ROWS", "1024"), ("COLS", "2048"), ("BLOCK_X", "32"),
                        ("BLOCK_Y", "8")):
        text = re.sub(rf"\b{word}\b", value, text)
    return text


def plan_of(path: Path, kernel: str):
    return plan_for_target(load_target(path, kernel))


def labels(plan) -> list[str]:
    return [c.label for c in plan.candidates]


def types(spec) -> dict[str, str]:
    return {p.name: p.type for p in spec.params if isinstance(p, (BufferDecl, ScalarDecl))}


def sizes(spec) -> dict[str, str]:
    return {s.name: s.expr for s in spec.sizes}


@pytest.mark.parametrize("kernel, expected_pass", [("scale_kernel", "vectorize_2d"),
                                                   ("axpy_kernel", "gridstride")])
def test_plan_through_header_macros_matches_inline(tmp_path, kernel, expected_pass):
    cu = project(tmp_path)
    flat = tmp_path / "inline" / "scale.cu"
    flat.parent.mkdir()
    flat.write_text(inline(cu.read_text()))
    assert "N_ROWS" not in flat.read_text() and "ELEM_T" not in flat.read_text()

    through = plan_of(cu, kernel)
    written = plan_of(flat, kernel)

    assert labels(through) == labels(written)
    assert any(expected_pass in c.passes for c in through.candidates)
    reasons = [n.reason for n in through.not_applied]
    assert not any("not a scalar parameter" in r for r in reasons), reasons
    assert not any("N_ROWS" in r or "N_COLS" in r for r in reasons), reasons
    assert [(n.pass_name, n.line) for n in through.not_applied] == \
        [(n.pass_name, n.line) for n in written.not_applied]


def test_draft_types_and_sizes_from_headers(tmp_path):
    cu = project(tmp_path)
    target = load_target(cu, "scale_kernel")
    spec = target.spec
    assert target.spec_inferred
    assert target.around.header_names == ("../common/bench.h", "scale.cuh")  # include order
    assert sizes(spec) == {"rows": "1024", "cols": "2048"}
    assert types(spec) == {"rows": "int", "cols": "int", "alpha": "float", "a": "float",
                           "b": "float"}
    assert "a: element type ELEM_T is float" in spec.notes
    assert not any("unknown, assumed float" in n for n in spec.notes), spec.notes
    assert spec.launch.grid == ("ceil_div(cols, block.x)", "ceil_div(rows, block.y)")


def test_build_defines_change_the_draft(tmp_path):
    cu = project(tmp_path, '[build]\ndefines = { ELEM_T = "double", HUGE_SET = true }\n')
    spec = load_target(cu, "scale_kernel").spec
    assert sizes(spec) == {"rows": "8192", "cols": "4096"}
    assert types(spec) == {"rows": "int", "cols": "int", "alpha": "double", "a": "double",
                           "b": "double"}
    assert "a: element type ELEM_T is double" in spec.notes


def test_define_in_the_file_wins_over_the_header_default(tmp_path):
    cu = project(tmp_path)
    cu.write_text("#define ELEM_T double\n" + cu.read_text())
    spec = load_target(cu, "axpy_kernel").spec
    assert types(spec) == {"rows": "int", "alpha": "double", "x": "double", "y": "double"}


def test_typedef_in_a_header_gives_the_type(tmp_path):
    cu = project(tmp_path)
    cuh = cu.parent / "scale.cuh"
    text = cuh.read_text()
    assert "# define ELEM_T float" in text
    cuh.write_text(text.replace("# define ELEM_T float", "typedef double ELEM_T;"))
    spec = load_target(cu, "axpy_kernel").spec
    assert types(spec)["x"] == "double" and types(spec)["alpha"] == "double"


def test_macro_in_a_branch_not_taken_is_reported(tmp_path):
    cu = project(tmp_path)
    cuh = cu.parent / "scale.cuh"
    use = line_of(cu, "if (i < PAD_COLS)")
    branch = line_of(cuh, "#ifdef WITH_PADDING")
    target = load_target(cu, "padded_kernel")

    plan = plan_for_target(target)
    grid = [n for n in plan.not_applied if n.pass_name == "gridstride"]
    assert len(grid) == 1 and grid[0].line == use
    assert grid[0].reason == (
        f"the guard's bound 'PAD_COLS' (line {use}) is not a scalar parameter of the kernel: "
        f"PAD_COLS is defined only under '#ifdef WITH_PADDING' (line {branch} of scale.cuh), "
        f"a branch not taken, at line {line_of(cuh, 'define PAD_COLS')} of scale.cuh")

    note = [n for n in target.spec.notes if n.startswith("acc: element type")]
    assert note == [f"acc: element type 'ACC_T' unknown, assumed float: ACC_T is defined only "
                    f"under '#ifdef WITH_PADDING' (line {branch} of scale.cuh), a branch not "
                    f"taken, at line {line_of(cuh, 'define ACC_T')} of scale.cuh"]


def test_build_define_takes_the_branch(tmp_path):
    cu = project(tmp_path, "[build]\ndefines = [\"WITH_PADDING\"]\n")
    target = load_target(cu, "padded_kernel")
    assert types(target.spec)["acc"] == "double"
    use = line_of(cu, "if (i < PAD_COLS)")
    grid = [n for n in plan_for_target(target).not_applied if n.pass_name == "gridstride"]
    # defined now: PAD_COLS is (COLS + 8), whose COLS is a size, not a parameter
    assert [n.reason for n in grid] == [f"the guard's bound 'PAD_COLS' (line {use}) expands to "
                                        f"'COLS', which is not a scalar parameter of the kernel"]


def test_undefined_macro_is_reported_with_its_name_and_line(tmp_path):
    cu = project(tmp_path)
    text = cu.read_text()
    assert "if (i < N_ROWS)" in text
    cu.write_text(text.replace("if (i < N_ROWS)", "if (i < MISSING_ROWS)"))
    use = line_of(cu, "if (i < MISSING_ROWS)")
    plan = plan_of(cu, "axpy_kernel")
    grid = [n for n in plan.not_applied if n.pass_name == "gridstride"]
    assert len(grid) == 1 and grid[0].line == use
    assert grid[0].reason.startswith(f"the guard's bound 'MISSING_ROWS' (line {use}) is not a "
                                     f"scalar parameter of the kernel: MISSING_ROWS is not "
                                     f"defined in the file, in the headers it includes (")
    assert "scale.cuh" in grid[0].reason and "../common/bench.h" in grid[0].reason


def test_expansion_to_a_non_parameter_names_the_use(tmp_path):
    cu = project(tmp_path)
    text = cu.read_text()
    assert "axpy_kernel(int rows," in text
    cu.write_text(text.replace("axpy_kernel(int rows,", "axpy_kernel(int count,"))
    use = line_of(cu, "if (i < N_ROWS)")
    plan = plan_of(cu, "axpy_kernel")
    grid = [n for n in plan.not_applied if n.pass_name == "gridstride"]
    assert len(grid) == 1 and grid[0].line == use
    assert grid[0].reason == (f"the guard's bound 'N_ROWS' (line {use}) expands to 'rows', "
                              f"which is not a scalar parameter of the kernel")


def test_header_macros_conditionals():
    found = header_macros([
        ("a.h", "#ifndef T\n# define T float\n#endif\n#define TWICE(x) ((x) * 2)\n"
                "#if FAST\n# define MODE 1\n#else\n# define MODE 2\n#endif\n"
                "#ifdef BIG\n# define N 4096\n#elif SMALL\n# define N 16\n#else\n"
                "# define N 1024\n#endif\n#define GONE 1\n#undef GONE\n"),
    ], build=[("T", "double")])
    assert found.macros["T"].body == "double" and found.macros["T"].origin == "-D"
    assert found.macros["TWICE"].params == ("x",)
    assert found.macros["TWICE"].where == "line 4 of a.h"
    # FAST and SMALL are no macros: 0, as in C, so the #else branches hold
    assert found.macros["MODE"].body == "2" and found.macros["MODE"].line == 8
    assert found.macros["N"].body == "1024" and found.macros["N"].line == 15
    unsure = header_macros([("a.h", "#if FAST(1)\n# define MODE 1\n#else\n# define MODE 2\n"
                                     "#endif\n")])
    assert "MODE" not in unsure.macros
    assert unsure.unknown["MODE"] == (
        "MODE is defined differently at line 2 of a.h and at line 4 of a.h, under '#else "
        "(the branch after #if FAST(1))' (line 3 of a.h), which cudalens cannot evaluate: "
        "'FAST(' calls no macro cudalens knows of")
    assert "GONE" not in found.macros and found.why_unknown("GONE") is not None
    big = header_macros([("a.h", "#ifdef BIG\n# define N 4096\n#else\n# define N 1024\n"
                                  "#endif\n")], build=[("BIG", "1")])
    assert big.macros["N"].body == "4096" and big.macros["N"].line == 2
    small = header_macros([("a.h", "#ifdef BIG\n# define N 4096\n#else\n# define N 1024\n"
                                    "#endif\n")])
    assert small.macros["N"].body == "1024" and small.macros["N"].line == 4
    assert small.why_unknown("lower_case") is None


def test_editor_plan_hover_sees_the_header_macros(tmp_path):
    from cudalens.lsp.documents import SpecCache, analyze
    from cudalens.lsp.plan_hover import _build

    cu = project(tmp_path)
    snap = analyze(cu.as_uri(), cu, 1, cu.read_text(), "utf-16", SpecCache())
    view = snap.kernel("axpy_kernel")
    assert view.spec is not None
    plan = _build(snap, view)
    assert labels(plan) == labels(plan_of(cu, "axpy_kernel"))
    assert any("gridstride" in c.passes for c in plan.candidates)
    assert snap.target(view).header_macros.macros["N_ROWS"].origin == "scale.cuh"


def test_file_macros_take_the_branch_the_build_selects():
    from cudalens.kernel_model.macros import bind_header_macros, file_macros
    from cudalens.kernel_model.syntax import parse

    text = ("#ifdef BIG\n#define LEN 4096\n#else\n#define LEN 1024\n#endif\n"
            "#define TWICE(x) ((x) * 2)\n#define TWICE(x) ((x) + (x))\n"
            "__global__ void k(float *a) { a[threadIdx.x % LEN] = 1.0f; }\n")
    plain = file_macros(parse(text))
    assert plain["LEN"].body == "1024" and plain["LEN"].line == 4
    assert "TWICE" not in plain  # redefined without #undef: which one holds is not read
    other = text.replace("a[", "a [")
    bind_header_macros(other, header_macros([], build=[("BIG", "1")]))
    try:
        big = file_macros(parse(other))
        assert big["LEN"].body == "4096" and big["LEN"].line == 2
        assert big["BIG"].origin == "-D" and "TWICE" not in big
    finally:
        bind_header_macros(other, None)
