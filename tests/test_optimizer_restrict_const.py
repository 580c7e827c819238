"""Pass ``restrict_const``: qualifiers on the kernel's pointer parameters, nothing else."""

from __future__ import annotations

import re

import pytest

from cudalens.optimizer.context import PassNotApplicable
from cudalens.optimizer.passes import restrict_const
from cudalens.source.parser import parse_source

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context, context_with_spec


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    """(old line, new line) pairs of a line-for-line edit."""
    a, b = before.splitlines(), after.splitlines()
    assert len(a) == len(b), "restrict_const must not add or remove lines"
    return [(x, y) for x, y in zip(a, b) if x != y]


def test_saxpy_parameter_list():
    ctx = context("elementwise.cu", "saxpy")
    result = restrict_const.apply(ctx)
    assert _changed_lines(ctx.text, result.source) == [(
        "__global__ void saxpy(int n, float a, const float* x, float* y) {",
        "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {",
    )]
    assert result.launch == ctx.launch
    assert result.tags == ("restrict",)
    assert result.explanation.startswith("__restrict__ on x, y: the compiler may assume")


def test_const_added_to_inputs_and_their_declarations():
    # iadd has a prototype; scale (a template) an explicit instantiation: both must keep
    # matching the definition once its inputs become const.
    ctx = context("elementwise.cu", "iadd")
    result = restrict_const.apply(ctx)
    assert _changed_lines(ctx.text, result.source) == [
        ("__global__ void iadd(int* a, int* b, int* c, int n);",
         "__global__ void iadd(const int* a, const int* b, int* c, int n);"),
        ("__global__ void iadd(int* a, int* b, int* c, int n)",
         "__global__ void iadd(const int* __restrict__ a, const int* __restrict__ b, "
         "int* __restrict__ c, int n)"),
    ]
    assert result.explanation.startswith(
        "__restrict__ on a, b, c and const on the inputs a, b: the compiler may assume")
    ctx = context("elementwise.cu", "scale")
    result = restrict_const.apply(ctx)
    assert _changed_lines(ctx.text, result.source) == [
        ("__global__ void scale(T* y, T* x, T s, int n) {",
         "__global__ void scale(T* __restrict__ y, const T* __restrict__ x, T s, int n) {"),
        ("template __global__ void scale<float>(float*, float*, float, int);",
         "template __global__ void scale<float>(float*, const float*, float, int);"),
    ]


@pytest.mark.parametrize("kernel", ["saxpy", "squares", "daxpy_clamp", "scale", "iadd"])
def test_signature_identical_except_qualifiers(kernel):
    ctx = context("elementwise.cu", kernel)
    new = parse_source(restrict_const.apply(ctx).source, "x.cu").kernel(kernel)
    old = ctx.kernel
    assert [(p.name, p.type, p.is_pointer) for p in new.parameters] == \
        [(p.name, p.type, p.is_pointer) for p in old.parameters]
    for before, after in zip(old.parameters, new.parameters):
        assert after.is_restrict == (before.is_restrict or before.is_pointer)
        assert after.is_const >= before.is_const


@needs_nvcc
@pytest.mark.parametrize("kernel", ["saxpy", "squares", "daxpy_clamp", "scale", "iadd"])
def test_result_compiles(kernel):
    compiled = compile_source(restrict_const.apply(context("elementwise.cu", kernel)).source)
    assert compiled.ok, compiled.stderr
    assert "warning" not in compiled.stderr, compiled.stderr


def test_spelling_variants():
    text = ("__global__ void k(float x[], float *y, float * const z, const float *__restrict w, "
            "int n) { int i = threadIdx.x; if (i < n) { z[i] = x[i] + w[i]; y[i] = 0; } }\n")
    spec = """
kernel k
size n = 64
in x: float[n]
out y: float[n]
out z: float[n]
in w: float[n]
scalar n: int = n
block = 64
grid = 1
"""
    result = restrict_const.apply(context_with_spec(text, "k", spec))
    assert result.source.startswith(
        "__global__ void k(const float *__restrict__ x, float *__restrict__ y, "
        "float * __restrict__ const z, const float *__restrict w, int n) {")


def test_already_qualified():
    text = "__global__ void k(const float* __restrict__ x, float* __restrict__ y) { y[0] = x[0]; }\n"
    spec = "kernel k\nin x: float[1]\nout y: float[1]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == (
        "every pointer parameter is already __restrict__ and every in pointer already const")


@pytest.mark.parametrize("file,kernel,reason", [
    ("rejects.cu", "aliased", "the launch at line 95 passes 'd' as both x and y: the pointers alias"),
    ("rejects.cu", "writes_input",
     "the body writes through x at line 43 ('x[i]'), but the spec declares x as in"),
    ("rejects.cu", "escapes",
     "x escapes at line 50 ('load(x, i)'): the pass cannot prove that nothing writes through it"),
])
def test_rejections_say_why(file, kernel, reason):
    ctx = context(file, kernel)
    assert restrict_const.check(ctx) == reason
    with pytest.raises(PassNotApplicable, match=re.escape(f"restrict_const on {kernel}: {reason}")):
        restrict_const.apply(ctx)


@pytest.mark.parametrize("body,reason", [
    ("y[0] = 1; x[1] += 2;", "the body writes through x at line 1 ('x[1]'), but the spec declares x as in"),
    ("*(x + 1) = 2;", "the body writes through x at line 1 ('*(x + 1)'), but the spec declares x as in"),
    ("float* p = x; p[0] = 1;", "x initializes p, a pointer to non-const, at line 1 ('float* p = x;'): x "
                                "cannot be made const"),
    ("const float* p = x + 1; y[0] = p[0]; p[1] = 2;",
     "the body writes through x at line 1 ('p[1]'), but the spec declares x as in"),
    ("y[0] = x[0]; atomicAdd(&x[1], 1.0f);",
     "the body writes through x at line 1 ('atomicAdd(&x[1], 1.0f)'), but the spec declares x as in"),
    ("y[0] = x[0]; load(x);", "x escapes at line 1 ('load(x)'): the pass cannot prove that nothing "
                              "writes through it"),
])
def test_writes_and_escapes_of_inputs(body, reason):
    text = f"__global__ void k(float* x, float* y) {{ {body} }}\n"
    spec = "kernel k\nin x: float[4]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == reason


@pytest.mark.parametrize("body", [
    "const float* p = &x[1]; y[0] = p[0] + p[2];",  # a column pointer taken as &x[k]
    "const float* row = x + 2; const float* q = row + 1; y[0] = q[0];",
    "x += 1; y[0] = x[0];",  # a bump moves the pointer, it writes nothing
])
def test_inputs_read_through_pointers_to_const_are_inputs(body):
    """The kernel model follows local pointers to const and bumps: nothing writes through
    them, so x is made const and every pointer __restrict__."""
    text = f"__global__ void k(float* x, float* y) {{ {body} }}\n"
    spec = "kernel k\nin x: float[4]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    ctx = context_with_spec(text, "k", spec)
    assert restrict_const.check(ctx) is None
    assert restrict_const.apply(ctx).source.startswith(
        "__global__ void k(const float* __restrict__ x, float* __restrict__ y) {")


def test_read_only_loads_do_not_count_as_escapes():
    text = "__global__ void k(const float* x, float* y) { y[0] = __ldg(&x[0]) + __ldg(x + 1); }\n"
    spec = "kernel k\nin x: float[4]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) is None


@pytest.mark.parametrize("body,reason", [
    ("const float* row = x + 4; y[0] = row[1];", None),
    ("float* row = x + 4; y[0] = row[1];",
     "x initializes row, a pointer to non-const, at line 1 ('float* row = x + 4;'): x cannot "
     "be made const"),
])
def test_row_pointers_into_inputs(body, reason):
    text = f"__global__ void k(const float* x, float* y) {{ {body} }}\n"
    spec = "kernel k\nin x: float[8]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == reason


def test_pointer_to_pointer_is_rejected():
    text = "__global__ void k(float** x, float* y) { y[0] = x[0][0]; }\n"
    spec = "kernel k\nin x: uint64[4]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == (
        "parameter x is a pointer to pointer ('float** x'); the pass only qualifies pointers "
        "to data")


def test_no_pointers():
    text = "__global__ void k(int n) { }\n"
    spec = "kernel k\nscalar n: int = 3\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == \
        "kernel k has no pointer parameters"
