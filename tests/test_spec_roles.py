"""Buffer roles against what the kernel body does: ``out`` read before written, ``in`` written."""

from __future__ import annotations

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.parser import load_spec_for, parse_spec, validate

SPEC = """\
kernel k
size n = 1024
scalar n: int = n
in x: float[n]
{role} y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""

HEAD = "__device__ void store(float* p, int i) { p[i] = 0.0f; }\n"


def _kernel_text(body: str, x_type: str = "const float*") -> str:
    return HEAD + (f"__global__ void k(int n, {x_type} x, float* y)\n{{\n"
                   f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   f"    if (i < n) {{ {body} }}\n}}\n")


def _check(body: str, role: str, x_type: str = "const float*", x_role: str = "in") -> None:
    text = _kernel_text(body, x_type)
    kernel = parse_source(text, "k.cu").kernels[0]
    spec = parse_spec(SPEC.format(role=role).replace("in x:", f"{x_role} x:"), "k.cu.spec")["k"]
    validate(spec, kernel, text)


def _error(body: str, role: str, **kw) -> tuple[int, str]:
    with pytest.raises(SpecError) as info:
        _check(body, role, **kw)
    assert info.value.path == "k.cu.spec"
    return info.value.line, info.value.message


def test_out_read_by_saxpy_suggests_inout():
    assert _error("y[i] = 2.5f * x[i] + y[i];", "out") == (
        5, "kernel k reads y before writing it ('y[i]', line 5), but role 'out' gives it NaN "
           "poison before every launch: expected 'inout y', found 'out y'")
    _check("y[i] = 2.5f * x[i] + y[i];", "inout")


@pytest.mark.parametrize("body, first", [
    ("y[i] += x[i];", "reads y before writing it ('y[i]'"),
    ("float t = y[i]; y[i] = t * x[i];", "reads y before writing it ('y[i]'"),
    ("y[i]++;", "reads y before writing it ('y[i]'"),
    ("atomicAdd(&y[0], x[i]);", "atomicAdd accumulates into y before writing it ('&y[0]'"),
    ("float* r = y + 1; r[i - 1] = r[i - 1] * 2.0f;", "reads y before writing it ('r[i - 1]'"),
    # a float2 of y's floats, one lane accumulated: a read of y (the cast is followed)
    ("reinterpret_cast<float2*>(y)[0].x += x[i];",
     "reads y before writing it ('reinterpret_cast<float2*>(y)[0]'"),
])
def test_out_read_first(body, first):
    line, message = _error(body, "out")
    assert line == 5
    assert message.startswith("kernel k " + first)
    assert message.endswith("expected 'inout y', found 'out y'")


@pytest.mark.parametrize("body", [
    "y[i] = 2.5f * x[i];",
    "y[i] = 0.0f; y[i] += x[i];",  # written first, then accumulated
    "y[i] = x[i]; __syncthreads(); y[i] = y[i] * 2.0f;",
    "atomicExch(&y[i], x[i]);",
    "store(y, i); y[i] += x[i];",  # escapes: left to the runner
    "reinterpret_cast<float2*>(y)[0] = make_float2(x[i], 0.0f);",  # a float2 written first
    "reinterpret_cast<char*>(y)[0] += 1;",  # a part of an element: left to the runner
])
def test_out_accepted(body):
    _check(body, "out")


@pytest.mark.parametrize("body, how", [
    ("x[i] = 1.0f; y[i] = 0.0f;", "writing 'x[i]'"),
    ("x[i] *= 2.0f; y[i] = 0.0f;", "writing 'x[i]'"),
    ("atomicAdd(&x[0], 1.0f); y[i] = 0.0f;", "atomicAdd on '&x[0]'"),
    ("float* r = x + i; *r = 3.0f; y[i] = 0.0f;", "writing '*r'"),
])
def test_in_written_non_const(body, how):
    assert _error(body, "out", x_type="float*") == (
        4, f"kernel k writes x ({how}, line 5), but role 'in' requires it unchanged: expected "
           f"'out x' (written only) or 'inout x' (read too), found 'in x'")


def test_in_written_through_const_cast():
    line, message = _error("const_cast<float*>(x)[i] = 1.0f; y[i] = 0.0f;", "out")
    assert (line, message.split(" (")[0]) == (4, "kernel k writes x")
    assert "'const_cast<float*>(x)[i]'" in message


@pytest.mark.parametrize("body", [
    "store(x, i); y[i] = 0.0f;",  # passed to a __device__ function: the runner checks
    "y[i] = x[i];",  # not const but only read
])
def test_in_unknown_or_read_is_accepted(body):
    _check(body, "out", x_type="float*")


def test_load_spec_for_checks_roles_only_with_the_source_text(tmp_path):
    text = _kernel_text("y[i] = 2.5f * x[i] + y[i];")
    cu = tmp_path / "k.cu"
    cu.write_text(text)
    (tmp_path / "k.cu.spec").write_text(SPEC.format(role="out"))
    kernel = parse_source(text, str(cu)).kernels[0]
    assert load_spec_for(cu, kernel).param("y").role == "out"
    with pytest.raises(SpecError) as info:
        load_spec_for(cu, kernel, source_text=text)
    assert str(info.value).startswith(f"{tmp_path / 'k.cu.spec'}:5: kernel k reads y before")
