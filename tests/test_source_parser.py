"""Tests for the CUDA source model parser (cudalens.source.parser.parse_source).

Positions are zero-based lines and byte columns. Expected positions are written out from the
fixtures (``grep -n`` line minus one) and cross-checked against plain string search.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.source.model import Kernel, Position, Range, SourceFile
from cudalens.source.parser import parse_source

DATA = Path(__file__).parent / "data" / "source"


def load(name: str) -> SourceFile:
    path = DATA / name
    return parse_source(path.read_text(encoding="utf-8"), str(path))


def byte_offset(text: str, position: Position) -> int:
    """Byte offset of a (line, byte column) position, computed without the parser."""
    lines = text.encode("utf-8").split(b"\n")
    return sum(len(line) + 1 for line in lines[: position.line]) + position.column


def cut(text: str, rng: Range) -> str:
    data = text.encode("utf-8")
    return data[byte_offset(text, rng.start) : byte_offset(text, rng.end)].decode("utf-8")


def locate(text: str, snippet: str, nth: int = 0) -> Range:
    """Range of the nth occurrence of ``snippet`` in ``text`` (ASCII fixtures), by string search."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(snippet, index + 1)
    before = text[:index]
    line = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1)
    end_text = text[: index + len(snippet)]
    end_line = end_text.count("\n")
    end_column = len(end_text) - (end_text.rfind("\n") + 1)
    return Range(Position(line, column), Position(end_line, end_column))


def rng(l1: int, c1: int, l2: int, c2: int) -> Range:
    return Range(Position(l1, c1), Position(l2, c2))


def assert_consistent(source: SourceFile, kernel: Kernel) -> None:
    """Byte offsets agree with ranges, and name/body/parameters slice to what they claim."""
    data = source.text.encode("utf-8")
    assert byte_offset(source.text, kernel.range.start) == kernel.start_byte
    assert byte_offset(source.text, kernel.range.end) == kernel.end_byte
    assert byte_offset(source.text, kernel.body_range.start) == kernel.body_start_byte
    assert byte_offset(source.text, kernel.body_range.end) == kernel.body_end_byte
    assert cut(source.text, kernel.name_range) == kernel.name
    body = data[kernel.body_start_byte : kernel.body_end_byte].decode()
    assert body.startswith("{") and body.endswith("}")
    assert "__global__" in data[kernel.start_byte : kernel.end_byte].decode()
    for parameter in kernel.parameters:
        assert cut(source.text, parameter.range) == parameter.text


# --- a realistic file: tests/data/source/kernels.cu (compiles with nvcc -c) ---------------


@pytest.fixture(scope="module")
def kernels_cu() -> SourceFile:
    return load("kernels.cu")


def test_finds_every_kernel_in_source_order(kernels_cu: SourceFile) -> None:
    assert [k.qualified_name for k in kernels_cu.kernels] == [
        "saxpy",
        "reduce_sum",
        "transpose",
        "grid_stride",
        "c_fill",
        "c_scale",
        "ops::detail::zero",
        "ops::copy",
    ]
    for kernel in kernels_cu.kernels:
        assert_consistent(kernels_cu, kernel)


def test_device_helpers_prototypes_and_host_functions_are_not_kernels(kernels_cu: SourceFile) -> None:
    names = {k.name for k in kernels_cu.kernels}
    assert "square" not in names  # __device__ __forceinline__ helper
    assert "declared_only" not in names  # __global__ prototype without a body
    assert "launch_all" not in names
    with pytest.raises(KeyError, match="no __global__ kernel named 'square'"):
        kernels_cu.kernel("square")


def test_plain_kernel_ranges_are_exact(kernels_cu: SourceFile) -> None:
    saxpy = kernels_cu.kernel("saxpy")
    assert saxpy.range == rng(11, 0, 14, 1)
    assert saxpy.name_range == rng(11, 16, 11, 21) == locate(kernels_cu.text, "saxpy", 0)
    assert saxpy.body_range == rng(11, 90, 14, 1)
    data = kernels_cu.text.encode()
    assert data[saxpy.start_byte : saxpy.end_byte].decode() == (
        "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = a * x[i] + y[i];\n"
        "}"
    )
    assert data[saxpy.body_start_byte : saxpy.body_end_byte].decode().startswith("{\n  int i = blockIdx.x")
    assert not saxpy.has_errors and not saxpy.extern_c
    assert saxpy.template_parameters == () and saxpy.launch_bounds == ()


def test_template_kernel_with_launch_bounds_includes_its_header(kernels_cu: SourceFile) -> None:
    reduce_sum = kernels_cu.kernel("reduce_sum")
    assert reduce_sum.template_parameters == ("T", "BLOCK")
    assert reduce_sum.launch_bounds == ("256", "2")
    assert reduce_sum.range == rng(16, 0, 22, 1)  # starts at `template`, not at `__global__`
    assert reduce_sum.name_range == rng(17, 42, 17, 52)
    text = kernels_cu.text.encode()[reduce_sum.start_byte : reduce_sum.end_byte].decode()
    assert text.startswith("template <typename T, int BLOCK>\n__global__ void __launch_bounds__(256, 2) reduce_sum(")
    assert [p.name for p in reduce_sum.parameters] == ["in", "out", "n"]


def test_macro_statement_without_semicolon_sets_has_errors_and_an_error_range(kernels_cu: SourceFile) -> None:
    # `SYNC_ALL()` on line 20 has its `;` inside the macro; the grammar cannot know that.
    reduce_sum = kernels_cu.kernel("reduce_sum")
    assert reduce_sum.has_errors
    assert kernels_cu.error_ranges, "the macro statement should leave an error range"
    for error in kernels_cu.error_ranges:
        assert error.start.line in (20, 21), error
    # the error stays inside reduce_sum: the neighbours are clean
    assert not kernels_cu.kernel("saxpy").has_errors
    assert not kernels_cu.kernel("transpose").has_errors


def test_macros_used_in_bodies_keep_name_parameters_and_ranges(kernels_cu: SourceFile) -> None:
    transpose = kernels_cu.kernel("transpose")  # IDX(r, c) used in an expression
    assert transpose.range == rng(24, 0, 27, 1)
    assert [p.name for p in transpose.parameters] == ["src", "dst", "rows", "cols"]
    assert "src[IDX(r, c)]" in cut(kernels_cu.text, transpose.body_range)
    assert not transpose.has_errors

    grid_stride = kernels_cu.kernel("grid_stride")  # CUDA_KERNEL_LOOP(i, n) { ... } statement
    assert grid_stride.range == rng(29, 0, 34, 1)
    assert grid_stride.body_range == rng(29, 91, 34, 1)
    assert [p.name for p in grid_stride.parameters] == ["data", "flag", "n"]
    assert cut(kernels_cu.text, grid_stride.body_range).endswith("if (threadIdx.x == 0) *flag = 1;\n}")


def test_extern_c_block_and_extern_c_declaration(kernels_cu: SourceFile) -> None:
    c_fill = kernels_cu.kernel("c_fill")  # inside extern "C" { ... }
    assert c_fill.extern_c
    assert c_fill.range == rng(37, 0, 40, 1)  # the block's braces are not part of the kernel
    c_scale = kernels_cu.kernel("c_scale")  # extern "C" __global__ ...
    assert c_scale.extern_c
    assert c_scale.range == rng(43, 0, 43, 103)
    assert cut(kernels_cu.text, c_scale.range).startswith('extern "C" __global__ void __launch_bounds__(128) c_scale(')
    assert c_scale.launch_bounds == ("128",)
    assert not any(k.extern_c for k in kernels_cu.kernels if k.name not in ("c_fill", "c_scale"))


def test_kernels_in_namespaces_get_qualified_names(kernels_cu: SourceFile) -> None:
    zero = kernels_cu.kernel("ops::detail::zero")
    assert zero.name == "zero"
    assert zero.range == rng(47, 0, 47, 59)  # `static` included
    copy = kernels_cu.kernel("copy")
    assert copy.qualified_name == "ops::copy"
    assert copy.template_parameters == ("T",)
    assert copy.range == rng(50, 0, 54, 1)


@pytest.mark.parametrize(
    ("kernel", "name", "type_", "is_pointer", "is_const", "is_restrict", "text"),
    [
        ("saxpy", "n", "int", False, False, False, "int n"),
        ("saxpy", "x", "float", True, True, True, "const float* __restrict__ x"),
        ("saxpy", "y", "float", True, False, True, "float* __restrict__ y"),
        ("reduce_sum", "in", "T", True, True, True, "const T* __restrict__ in"),
        ("reduce_sum", "out", "T", True, False, False, "T* out"),
        ("reduce_sum", "n", "int", False, True, False, "const int n"),
        ("transpose", "src", "float", True, True, False, "float const * src"),
        ("transpose", "dst", "float", True, False, True, "float *__restrict dst"),
        ("grid_stride", "data", "float", True, False, True, "float * __restrict__ data"),
        ("grid_stride", "flag", "int", True, False, False, "volatile int* flag"),
        ("grid_stride", "n", "unsigned int", False, False, False, "unsigned int n"),
        # const on the pointer itself is not const on the pointee
        ("c_fill", "out", "float", True, False, True, "float* __restrict__ const out"),
        ("c_fill", "count", "size_t", False, False, False, "size_t count"),
        ("c_scale", "v", "double", True, False, False, "double* v"),
        ("ops::copy", "in", "T", True, True, False, "const T* in"),
    ],
)
def test_parameter_fields(
    kernels_cu: SourceFile,
    kernel: str,
    name: str,
    type_: str,
    is_pointer: bool,
    is_const: bool,
    is_restrict: bool,
    text: str,
) -> None:
    parameter = kernels_cu.kernel(kernel).parameter(name)
    assert (parameter.type, parameter.is_pointer, parameter.is_const, parameter.is_restrict) == (
        type_,
        is_pointer,
        is_const,
        is_restrict,
    )
    assert parameter.text == text
    assert parameter.range == locate(kernels_cu.text, text)


def test_launch_sites_in_the_file(kernels_cu: SourceFile) -> None:
    sites = kernels_cu.launch_sites
    assert [(s.kernel, s.config, s.arguments) for s in sites] == [
        ("saxpy", ("(n + 255) / 256", "256"), ("n", "2.0f", "x", "y")),
        ("reduce_sum", ("1", "256", "256 * sizeof(float)", "stream"), ("x", "y", "n")),
        ("transpose", ("dim3(n, 1)", "dim3(32)", "0"), ("x", "y", "n", "32")),
        ("ops::copy", ("1", "n", "0", "stream"), ("x", "y", "n")),
        ("c_fill", ("4", "128"), ("y", "0.f", "static_cast<size_t>(n)")),
    ]
    assert sites[0].range == rng(60, 2, 60, 48)
    assert cut(kernels_cu.text, sites[0].range) == "saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y)"
    assert cut(kernels_cu.text, sites[1].range) == (
        "reduce_sum<float, 256><<<1, 256, 256 * sizeof(float), stream>>>(x, y, n)"
    )


def test_launch_sites_attach_to_their_kernels(kernels_cu: SourceFile) -> None:
    by_kernel = {k.qualified_name: [s.range.start.line for s in k.launch_sites] for k in kernels_cu.kernels}
    assert by_kernel == {
        "saxpy": [60],
        "reduce_sum": [61],  # launched as reduce_sum<float, 256>
        "transpose": [62],
        "grid_stride": [],
        "c_fill": [64],
        "c_scale": [],
        "ops::detail::zero": [],
        "ops::copy": [63],  # launched as ops::copy<float>
    }


# --- parameters: every spelling --------------------------------------------------------------

SPELLINGS = """\
struct Params { int n; };
__global__ void spell(const float*__restrict__ const a, float const* const b, float* restrict c,
                      float* __restrict d, const unsigned int k, float** pp, const float* const* cpp,
                      float arr[], __grid_constant__ const Params prm, float*, const long long int* q) {}
__global__ void no_params(void) {}
__global__ void empty_params() {}
"""


@pytest.mark.parametrize(
    ("name", "type_", "is_pointer", "is_const", "is_restrict"),
    [
        ("a", "float", True, True, True),
        ("b", "float", True, True, False),
        ("c", "float", True, False, True),
        ("d", "float", True, False, True),
        ("k", "unsigned int", False, True, False),
        ("pp", "float*", True, False, False),  # pointee of float** is float*
        ("cpp", "float*", True, True, False),  # pointee is a const pointer
        ("arr", "float", True, False, False),  # array parameters are pointers
        ("prm", "Params", False, True, False),
        ("q", "long long int", True, True, False),
    ],
)
def test_parameter_qualifier_spellings(
    name: str, type_: str, is_pointer: bool, is_const: bool, is_restrict: bool
) -> None:
    source = parse_source(SPELLINGS)
    parameter = source.kernel("spell").parameter(name)
    assert (parameter.type, parameter.is_pointer, parameter.is_const, parameter.is_restrict) == (
        type_,
        is_pointer,
        is_const,
        is_restrict,
    )
    assert cut(SPELLINGS, parameter.range) == parameter.text


def test_unnamed_and_void_parameters() -> None:
    source = parse_source(SPELLINGS)
    spell = source.kernel("spell")
    assert [p.name for p in spell.parameters] == ["a", "b", "c", "d", "k", "pp", "cpp", "arr", "prm", "", "q"]
    unnamed = spell.parameters[9]
    assert (unnamed.type, unnamed.is_pointer, unnamed.text) == ("float", True, "float*")
    assert source.kernel("no_params").parameters == ()
    assert source.kernel("empty_params").parameters == ()


# --- files that do not parse cleanly ---------------------------------------------------------


def test_broken_kernel_does_not_hide_the_good_ones() -> None:
    source = load("broken.cu")  # `broken` (lines 7-11) lacks the `}` closing its body
    assert [k.name for k in source.kernels] == ["before", "broken", "after", "last"]
    for kernel in source.kernels:
        assert_consistent(source, kernel)
    before, broken, after, last = source.kernels
    assert before.range == rng(2, 0, 5, 1) and not before.has_errors
    assert after.range == rng(13, 0, 17, 1) and not after.has_errors
    assert after.template_parameters == ("T",)
    assert after.parameter("in").is_restrict and after.parameter("in").is_const
    assert last.range == rng(19, 0, 19, 46) and not last.has_errors
    assert broken.has_errors
    assert broken.range.start == Position(7, 0)
    assert broken.range.end.line < after.range.start.line  # it does not swallow what follows
    # the missing brace is reported where the broken kernel ends, not only at the end of file
    assert any(broken.range.start.line <= e.start.line <= broken.range.end.line for e in source.error_ranges)
    assert all(
        not (k.range.start.line <= e.start.line <= k.range.end.line)
        for e in source.error_ranges
        for k in (before, after, last)
    )
    assert [s.kernel for s in after.launch_sites] == ["after"]
    assert after.launch_sites[0].range.start == Position(23, 2)


BROKEN_IN_NAMESPACE = """\
namespace ops {
__global__ void first(float* a) { a[0] = 1; }
__global__ void broken(float* a) {
  if (a[0] > 0) {
    a[0] = 1;
}
template <typename T>
__global__ void after(T* a, int n) { a[n] = 0; }
extern "C" {
__global__ void ec(float* a) { a[0] = 2; }
}
}  // namespace ops
"""


def test_broken_kernel_in_namespace_keeps_scope_of_the_others() -> None:
    source = parse_source(BROKEN_IN_NAMESPACE, "ns.cu")
    assert [k.qualified_name for k in source.kernels] == ["ops::first", "ops::broken", "ops::after", "ops::ec"]
    first, broken, after, ec = source.kernels
    assert not first.has_errors and first.range == rng(1, 0, 1, 45)
    assert broken.has_errors and broken.range.start == Position(2, 0) and broken.range.end.line == 5
    assert after.range == rng(6, 0, 7, 48) and after.template_parameters == ("T",) and not after.has_errors
    assert ec.extern_c and ec.range == rng(9, 0, 9, 42) and not ec.has_errors
    assert source.error_ranges


BROKEN_PARAMETER_LIST = """\
__global__ void ok1(int n) { }
__global__ void bad(float *a {
  if (a[0] > 0 {
    a[0] = 1;
}
__global__ void ok2(const float* __restrict__ x, float* y) { y[0] = x[0]; }
template <typename T> __global__ void ok3(T* p) { p[0] = T(); }
"""


def test_kernels_after_a_broken_parameter_list_are_found() -> None:
    source = parse_source(BROKEN_PARAMETER_LIST)
    good = {k.name: k for k in source.kernels if not k.has_errors}
    assert set(good) == {"ok1", "ok2", "ok3"}
    assert good["ok2"].range == rng(5, 0, 5, 75)
    assert [p.name for p in good["ok2"].parameters] == ["x", "y"]
    assert good["ok3"].range == rng(6, 0, 6, 63)
    assert good["ok3"].template_parameters == ("T",)
    # tree-sitter makes the whole file one ERROR; the broken kernel's own re-parse pins it down
    # to the broken definition: starting on its signature's line, ending before ok2
    ok2_start = (good["ok2"].range.start.line, good["ok2"].range.start.column)
    assert any(
        e.start.line == 1 and (e.end.line, e.end.column) <= ok2_start for e in source.error_ranges
    ), source.error_ranges
    for kernel in source.kernels:
        assert_consistent(source, kernel)


def test_macros_before_kernels_do_not_hide_or_stretch_them() -> None:
    source = load("macro_prefix.cu")
    assert [k.name for k in source.kernels] == ["after_bare_macro", "after_macro_call", "macro_bounds", "plain"]
    bare = source.kernel("after_bare_macro")  # line 4 holds `KERNEL_PREFIX` alone
    assert bare.range == rng(5, 0, 5, 58) and not bare.has_errors
    call = source.kernel("after_macro_call")  # line 7 holds `DECLARE_TABLE(coeffs)` without `;`
    assert call.range == rng(8, 0, 8, 71) and not call.has_errors
    assert [p.name for p in call.parameters] == ["a", "n"]
    bounds = source.kernel("macro_bounds")  # `LB(256)` hides __launch_bounds__ in a macro
    assert bounds.has_errors
    assert bounds.name_range == rng(10, 24, 10, 36)
    assert bounds.parameter("p").is_pointer
    assert not source.kernel("plain").has_errors
    for kernel in source.kernels:
        assert_consistent(source, kernel)


@pytest.mark.parametrize(
    "text",
    ["", "__global__", "__global__ void", "template <", "}}}{{{", 'extern "C" {', "\x00\xff", "#define X {\n"],
)
def test_garbage_yields_no_kernels_and_no_exception(text: str) -> None:
    source = parse_source(text)
    assert source.kernels == ()
    assert source.text == text


# --- other shapes ----------------------------------------------------------------------------


def test_not_kernels_host_device_members_and_prototypes() -> None:
    text = (
        "__host__ __device__ float both(float v) { return v; }\n"
        "__device__ void dev() {}\n"
        "__global__ void proto(int);\n"
        "struct S { __device__ void member() {} };\n"
        "__global__ void real(int n) {}\n"
    )
    assert [k.name for k in parse_source(text).kernels] == ["real"]


def test_columns_are_utf8_bytes() -> None:
    text = "/* é */ __global__ void k(int n) {}\n"
    kernel = parse_source(text).kernel("k")
    column = len("/* é */ __global__ void ".encode("utf-8"))
    assert column == len("/* é */ __global__ void ") + 1
    assert kernel.name_range == rng(0, column, 0, column + 1)
    assert text.encode()[kernel.start_byte : kernel.end_byte].decode() == "__global__ void k(int n) {}"


def test_rejects_bytes_with_a_message_naming_the_file() -> None:
    with pytest.raises(TypeError, match=r"a\.cu: parse_source expects the source text as str, found bytes"):
        parse_source(b"__global__ void k() {}", "a.cu")  # type: ignore[arg-type]


def _generated(kernels: int, broken_at: int | None = None) -> str:
    """``kernels`` kernels of 20 lines each (a template kernel plus a host launcher)."""
    lines: list[str] = []
    for i in range(kernels):
        lines.append("template <typename T>")
        lines.append(f"__global__ void __launch_bounds__(256) k{i}(const T* __restrict__ in, T* out, int n) {{")
        lines.append("  int i = blockIdx.x * blockDim.x + threadIdx.x;")
        lines.append("  if (i < n) {")
        lines.append("    out[i] = in[i] * 2;")
        lines.append("  }" if i != broken_at else "  // closing brace lost")
        lines.extend(["  __syncthreads();"] * 12)
        lines.append("}")
        lines.append(f"void launch{i}(float* a, int n) {{ k{i}<float><<<(n + 255) / 256, 256>>>(a, a, n); }}")
    return "\n".join(lines) + "\n"


def test_large_generated_file() -> None:
    text = _generated(500)
    assert text.count("\n") == 10_000
    source = parse_source(text)
    assert len(source.kernels) == 500
    assert len(source.launch_sites) == 500


def test_large_generated_file_with_one_broken_kernel() -> None:
    source = parse_source(_generated(500, broken_at=3))
    assert len(source.kernels) == 500
    assert [k.name for k in source.kernels if k.has_errors] == ["k3"]
    assert all(len(k.launch_sites) == 1 for k in source.kernels)
