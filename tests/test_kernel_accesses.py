"""``kernel_model.accesses``: each global-memory access of a kernel with its parameter, mode,
element index (a polynomial after folding locals, row pointers and bumps, or why not), guards,
loops and line, built once per kernel model. The kernels of ``data/kernel_accesses.cu`` take
the shapes public kernels take: row pointers, ``unsigned`` and ``size_t`` indices, ``#define``
tiles and index macros, ``i / T`` and ``i % T``, index arrays, 2D tiles with loops, grid-stride
loops, early return against an if-block, pointer bumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.kernel_model import accesses as acc_mod
from cudalens.kernel_model.accesses import accesses, memory
from cudalens.kernel_model.model import kernel_model
from cudalens.source.parser import parse_source

TEXT = (Path(__file__).parent / "data" / "kernel_accesses.cu").read_text()
KERNELS = {k.name: k for k in parse_source(TEXT).kernels}
GID = "blockDim.x * blockIdx.x + threadIdx.x"


def _rows(name: str) -> list[tuple]:
    """(param, via, mode, kind, index or reason, guards, line) of each access of ``name``."""
    return [(a.param, a.via, a.mode, a.kind, a.index.render() if a.index is not None else a.reason,
             [str(g) for g in a.guards], a.line)
            for a in accesses(kernel_model(TEXT, KERNELS[name]))]


def _loops(name: str) -> list[list[tuple]]:
    return [[(lp.var, lp.start.render() if lp.start else None,
              lp.bound.render() if lp.bound else None, lp.step.render() if lp.step else None)
             for lp in a.loops] for a in accesses(kernel_model(TEXT, KERNELS[name]))]


def test_row_pointer_and_index_macro_fold_into_the_parameter_index():
    assert _rows("rows") == [
        ("y", "", "write", "affine", "C * blockIdx.x + j", [], 8),
        ("x", "row", "read", "affine", "C * blockIdx.x + j", [], 8),
    ]
    assert _loops("rows") == [[("j", "threadIdx.x", "C", "blockDim.x")]] * 2
    (alias,) = memory(kernel_model(TEXT, KERNELS["rows"])).aliases
    assert (alias.name, alias.param, alias.offset.render(), alias.const, alias.line) == \
        ("row", "x", "C * blockIdx.x", True, 6)


def test_size_t_index_with_early_return_is_guarded_by_its_negation():
    assert _rows("early") == [
        ("y", "", "read-write", "affine", GID, ["!(i >= n)"], 14),
        ("x", "", "read", "affine", GID, ["!(i >= n)"], 14),
    ]
    guard = accesses(kernel_model(TEXT, KERNELS["early"]))[0].guards[0]
    assert (guard.text, guard.holds, guard.line) == ("i >= n", False, 13)
    assert [str(c) for c in guard.facts] == [f"{GID} < n"]


def test_division_and_remainder_are_divmod_and_the_else_branch_is_negated():
    assert _rows("divmod") == [
        ("y", "", "write", "affine", GID, ["i < n"], 21),
        ("x", "", "read", "divmod", "t = 'i / T'", ["i < n"], 21),
        ("x", "", "read", "divmod", "'i % T'", ["i < n"], 21),
        ("y", "", "write", "affine", "0", ["!(i < n)"], 23),
    ]
    last = accesses(kernel_model(TEXT, KERNELS["divmod"]))[-1]
    assert [str(c) for c in last.guards[0].facts] == [f"{GID} >= n"]


def test_index_arrays_make_data_dependent_accesses_with_the_read_named():
    assert _rows("gather") == [
        ("idx", "", "read", "affine", GID, ["i < n"], 29),
        ("y", "", "write", "affine", GID, ["i < n && idx[i] >= 0"], 30),
        ("x", "", "read", "data_dependent", "it reads 'idx[i]'", ["i < n && idx[i] >= 0"], 30),
        ("idx", "", "read", "affine", GID, ["i < n && idx[i] >= 0"], 30),
        ("idx", "", "read", "affine", GID, [], 31),
        ("y", "", "read-write", "data_dependent", "j is computed from 'idx[i]'", [], 32),
    ]
    last = accesses(kernel_model(TEXT, KERNELS["gather"]))[-1]
    assert (last.atomic, last.text) == ("atomicAdd", "atomicAdd(&y[j], 1.0f)")
    # only the affine half of a mixed condition becomes a fact
    assert [str(c) for c in accesses(kernel_model(TEXT, KERNELS["gather"]))[1].guards[0].facts] \
        == [f"{GID} < n"]


def test_tiles_with_define_sizes_and_loops_over_the_tile():
    assert _rows("tiles") == [
        ("A", "", "read", "affine",
         "16 * W * blockIdx.y + W * k + W * threadIdx.y + 16 * blockIdx.x + threadIdx.x", [], 39),
        ("B", "", "write", "affine",
         "16 * W * blockIdx.x + W * threadIdx.y + 16 * blockIdx.y + k", [], 42),
    ]
    assert _loops("tiles") == [[("k", "0", "16", "4")], [("k", "0", "16", "1")]]  # k <= TILE - 1


def test_bumps_at_the_top_of_the_body_move_the_index():
    assert _rows("bumped") == [
        ("x", "", "read", "affine", "C * blockIdx.x + c", [], 50),
        ("y", "", "write", "affine", "blockIdx.x", [], 51),
    ]


def test_grid_stride_loop_keeps_its_variable_and_a_ternary_guards_its_arm():
    assert _rows("grid_stride") == [
        ("y", "", "write", "affine", "i", [], 56),
        ("x", "", "read", "affine", "i", [], 56),
        ("x", "", "read", "affine", "i", ["x[i] > 0.0f"], 56),
    ]
    assert _loops("grid_stride")[0] == [("i", GID, "n", "blockDim.x * gridDim.x")]
    assert accesses(kernel_model(TEXT, KERNELS["grid_stride"]))[2].guards[0].facts == ()


@pytest.mark.parametrize("body,kind,reason", [
    ("for (int k = 0; k < n; ++k) { x += 4; y[k] = x[0]; }", "opaque",
     "x moves at line 1, in a loop around the access"),
    ("if (n > 2) x += 4; y[0] = x[0];", "opaque", "x moves at line 1, inside a branch or loop"),
    ("int k = 0; k = n; y[0] = x[k];", "opaque",
     "k is a local without one initializer that never changes"),
    ("y[0] = x[foo(n)];", "opaque", "'foo(n)' is not an integer polynomial"),
    ("const float* p = x + 2; const float* q = p + n; y[0] = q[1];", "affine", "n + 3"),
    ("y[0] = x[n >> 1];", "divmod", "'n >> 1'"),
    ("x++; ++x; x += n; x -= 1; y[0] = x[1];", "affine", "n + 2"),
    ("x = x + n; y[0] = *(x + 2 * n);", "affine", "3 * n"),
    ("#define M(a) ((a) / 4)\n y[0] = x[M(n)];", "divmod", "M(n) = '((n)) / 4'"),
])
def test_the_last_read_of_x(body, kind, reason):
    text = f"__global__ void k(const float* x, float* y, int n) {{ {body} }}\n"
    (kern,) = parse_source(text).kernels
    a = [a for a in accesses(kernel_model(text, kern)) if a.param == "x"][-1]
    assert (a.kind, a.index.render() if a.index is not None else a.reason) == (kind, reason)


def test_escapes_are_not_accesses():
    text = ("__global__ void k(const float* x, float* y) {\n"
            "    load(x, 1);\n    const float* p = &x[1];\n    use(p);\n    y[0] = p[0];\n}\n")
    (kern,) = parse_source(text).kernels
    found = memory(kernel_model(text, kern))
    assert [(e.param, e.via, e.line, e.text, e.const) for e in found.escapes] == [
        ("x", "", 2, "load(x, 1)", False), ("x", "p", 4, "use(p)", True)]
    assert [(a.param, a.via, a.index.render()) for a in found.accesses if a.param == "x"] == \
        [("x", "p", "1")]


def test_built_once_per_kernel_model(monkeypatch):
    text = TEXT + "\n// another version of the file\n"
    kern = parse_source(text).kernels[0]
    calls = []
    real = acc_mod._build
    monkeypatch.setattr(acc_mod, "_build", lambda model: calls.append(model) or real(model))
    first = accesses(kernel_model(text, kern))
    assert accesses(kernel_model(text, kern)) is first
    assert memory(kernel_model(text, kern)).accesses is first
    assert len(calls) == 1
    changed = text.replace("y[IDX(r, j, C)]", "y[IDX(r, j, R)]")
    kern2 = parse_source(changed).kernels[0]
    assert accesses(kernel_model(changed, kern2))[0].index.render() == "R * blockIdx.x + j"
    assert len(calls) == 2
