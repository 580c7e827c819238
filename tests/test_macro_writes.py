"""Writes through function-like macros and reinterpret_cast'ed elements: drafted roles, the
restrict_const pass, role checks, and specs that write nothing."""

from __future__ import annotations

import pytest

from cudalens.kernel_model.syntax import parse, walk
from cudalens.optimizer.passes import restrict_const
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import infer_spec
from cudalens.spec.parser import parse_spec, validate

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context_with_spec

F4 = "#define F4(v) (reinterpret_cast<float4 *>(&(v))[0])\n"
ADD4 = F4 + """\
__global__ void add4(float *a, float *c, int n) {
  int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) {
    float4 r = F4(a[i]);
    r.x += 1.f;
    F4(c[i]) = r;
  }
}
"""
SPELLED = ADD4.replace("F4(a[i])", "reinterpret_cast<float4 *>(&a[i])[0]").replace(
    "F4(c[i])", "reinterpret_cast<float4 *>(&c[i])[0]")
SPEC = """\
kernel add4
size n = 1024
{a} a: float[n]
{c} c: float[n]
scalar n: int = n
block = 256
grid = ceil_div(n, 4 * block.x)
"""


def _roles(text: str) -> dict[str, str]:
    sf = parse_source(text, "k.cu")
    spec = infer_spec(sf.kernels[0], text, sf.launch_sites)
    return {d.name: d.role for d in spec.params if hasattr(d, "role")}


def test_macro_write_drafts_as_the_spelled_out_cast():
    assert _roles(SPELLED) == {"a": "inout", "c": "inout"}
    assert _roles(ADD4) == {"a": "inout", "c": "inout"}  # was in, in: the spec wrote nothing
    sf = parse_source(ADD4, "k.cu")
    notes = infer_spec(sf.kernels[0], ADD4, sf.launch_sites).notes
    assert "c: inout assumed: the pointer goes where the analysis cannot follow ('c[i]', " \
           "line 7)" in notes


@pytest.mark.parametrize("macro,statement,role", [
    ("#define AT(v) (v)\n", "AT(y[i]) = x[i];", "out"),
    ("#define AT(v) (v)\n", "AT(y[i]) += x[i];", "inout"),
    ("#define INC(v, d) ((v) += (d))\n", "INC(y[i], x[i]);", "inout"),
    ("#define SET(v, d) ((v) = (d))\n", "SET(y[i], x[i]);", "out"),
    ("#define LD(v) __ldg(&(v))\n", "y[i] = LD(x[i]);", "out"),
])
def test_roles_through_macros(macro, statement, role):
    text = macro + ("__global__ void k(float *x, float *y, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    f"  if (i < n) {{ {statement} }}\n}}\n")
    roles = _roles(text)
    assert roles["y"] == role
    assert roles["x"] == "in"  # read only, also through __ldg(&(v))


def test_pointer_uses_see_macro_writes():
    parsed = parse(ADD4 + "#define AT(v) (v)\n__global__ void k(float* y) { AT(y[0]) = 1; }\n")
    uses = [(u.name, u.kind, u.text, u.line) for n in walk(parsed.tree.root_node)
            if n.type == "compound_statement" and n.parent.type == "function_definition"
            for u in pointer_uses(n, parsed, {"a", "c", "y"})]
    assert uses == [("a", "escape", "F4(a[i])", 5), ("c", "escape", "F4(c[i])", 7),
                    ("y", "write", "AT(y[0])", 11)]


def test_restrict_const_refuses_const_on_a_pointer_written_through_a_macro():
    ctx = context_with_spec(ADD4, "add4", SPEC.format(a="in", c="in"))
    assert restrict_const.check(ctx) == (
        "a escapes at line 5 ('F4(a[i])'): the pass cannot prove that nothing writes through it")
    ctx = context_with_spec(ADD4, "add4", SPEC.format(a="inout", c="in"))
    assert restrict_const.check(ctx) == (
        "c escapes at line 7 ('F4(c[i])'): the pass cannot prove that nothing writes through it")
    text = "#define AT(v) (v)\n__global__ void k(float* x, float* y) { AT(x[1]) = 2; y[0] = 1; }\n"
    spec = "kernel k\nin x: float[4]\nout y: float[4]\nblock = 1\ngrid = 1\n"
    assert restrict_const.check(context_with_spec(text, "k", spec)) == (
        "the body writes through x at line 2 ('AT(x[1])'), but the spec declares x as in")


@needs_nvcc
def test_restrict_const_on_the_macro_kernel_compiles():
    ctx = context_with_spec(ADD4, "add4", SPEC.format(a="inout", c="inout"))
    result = restrict_const.apply(ctx)
    assert "float *__restrict__ a" in result.source and "const" not in result.source
    compile_source(result.source)


def test_check_roles_sees_a_write_through_a_macro():
    text = "#define AT(v) (v)\n" + ("__global__ void k(const float *x, float *y, int n) {\n"
                                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                    "  if (i < n) { AT(y[i]) = x[i]; }\n}\n")
    kernel = parse_source(text, "k.cu").kernels[0]
    spec = parse_spec("kernel k\nsize n = 64\nin x: float[n]\nin y: float[n]\n"
                      "scalar n: int = n\nblock = 64\ngrid = 1\n", "k.cu.spec")["k"]
    with pytest.raises(SpecError) as info:
        validate(spec, kernel, text)
    assert (info.value.line, info.value.message) == (
        4, "kernel k writes y (writing 'y[i]', line 4), but role 'in' requires it unchanged: "
           "expected 'out y' (written only) or 'inout y' (read too), found 'in y'")


@pytest.mark.parametrize("spec_text,found", [
    (SPEC.format(a="in", c="in"), "only 'in' buffers (a, c)"),
])
def test_a_spec_without_outputs_is_refused(spec_text, found):
    kernel = parse_source(ADD4, "k.cu").kernels[0]
    spec = parse_spec(spec_text, "k.cu.spec")["add4"]
    with pytest.raises(SpecError) as info:
        validate(spec, kernel)
    assert info.value.path == "k.cu.spec"
    assert info.value.line == 1
    assert info.value.message == (
        f"kernel add4: expected at least one 'out' or 'inout' buffer, found {found}: with no "
        f"output the runner compares nothing, so the kernel would verify nothing and any "
        f"candidate would pass; give the role 'out' (written only) or 'inout' (read too) to "
        f"each buffer the kernel writes")


def test_a_kernel_without_pointers_is_refused():
    kernel = parse_source("__global__ void k(int n) {}\n", "k.cu").kernels[0]
    spec = parse_spec("kernel k\nscalar n: int = 3\nblock = 1\ngrid = 1\n", "k.cu.spec")["k"]
    with pytest.raises(SpecError, match=r"found no buffer \(the kernel has no pointer "
                                        r"parameter\): with no output"):
        validate(spec, kernel)
