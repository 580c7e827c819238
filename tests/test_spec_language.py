"""The spec language for real code: narrow floats, template instances, #defines, fills,
reads/writes and ragged multiples (parser, resolver and writer; no GPU)."""

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.defines import file_constants
from cudalens.spec.errors import SpecError
from cudalens.spec.parser import parse_spec, pick_section
from cudalens.spec.resolve import build_problem, build_variant, instance_name, sizes_for
from cudalens.spec.writer import format_spec

GATHER = """\
#define TILE 32
#define ROWS (TILE * 4)
__global__ void gather(const __nv_bfloat16* table, const int* idx, const int* rowptr,
                       __nv_bfloat16* out, int n, int c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = table[idx[i] * c + rowptr[0]];
}
"""

SPEC = """\
kernel gather
size n = ROWS * 64
multiple n = TILE
size c = 768
size v = 1000
in table: bf16[v * c] normal(0, 0.02)
in idx: int[n] unique range(0, v * 10)
in rowptr: int[n + 1] csr(n * 3)
out out: bfloat16[n]
scalar n: int = n
scalar c: int = c
block = TILE * 8
grid = ceil_div(n, block.x)
reads = n * (4 + c * 2) + (n + 1) * 4
writes = n * 2
"""


def _kernel(text):
    return parse_source(text, "g.cu").kernels[0]


def test_defines_evaluate_in_order_and_build_wins():
    assert file_constants(GATHER) == {"TILE": 32, "ROWS": 128}
    assert file_constants(GATHER, {"TILE": 16}) == {"TILE": 16, "ROWS": 128}
    assert file_constants("#define F(x) (x)\n#define H 0.5\n#define K 4ul\n") == {"K": 4}


def test_full_section_resolves_into_a_problem():
    spec = parse_spec(SPEC, "g.cu.spec", file_constants(GATHER))["gather"]
    assert sizes_for(spec, "nominal") == {"n": 8192, "c": 768, "v": 1000, "TILE": 32,
                                          "ROWS": 128}
    # ragged n: an odd number of 32-element tiles (256 tiles -> 153), others as before
    assert sizes_for(spec, "ragged")["n"] == 32 * 153
    problem = build_problem(spec, _kernel(GATHER))
    nominal = problem.cases[0]
    table, idx, rowptr, out = nominal.args[:4]
    assert (table.dtype, table.length, table.fill, table.params) == \
        ("bfloat16", 768000, "normal", (0.0, 0.02))
    assert (idx.fill, idx.low, idx.high) == ("unique", 0.0, 10000.0)
    assert (rowptr.fill, rowptr.params, rowptr.length) == ("csr", (24576.0,), 8193)
    assert out.nbytes == 8192 * 2
    assert nominal.bytes_moved == 8192 * (4 + 768 * 2) + 8193 * 4 + 8192 * 2
    assert problem.cases[1].args[4].value == 32 * 153


def test_writer_round_trips_the_new_declarations():
    consts = file_constants(GATHER)
    spec = parse_spec(SPEC, "g.cu.spec", consts)["gather"]
    text = format_spec(spec)
    assert "multiple n = TILE" in text and "in rowptr: int[n + 1] csr(n * 3)" in text
    assert "in idx: int[n] unique range(0, v * 10)" in text and "reads = " in text
    again = parse_spec(text, "g.cu.spec", consts)["gather"]
    assert again.params == tuple(p.__class__(**{**p.__dict__, "line": q.line})
                                 for p, q in zip(spec.params, again.params))


@pytest.mark.parametrize("line, message", [
    ("in x: float[n] csr(n)", "csr(NNZ) makes integer values: expected an integer element type "
                              "for x, found float"),
    ("in x: int[n] permutation range(0, 4)", "permutation sets the values of x itself: expected "
                                             "no range(LOW, HIGH) with it"),
    ("in x: int[n] unique", "'unique' draws distinct integers from a range: expected 'unique "
                            "range(LOW, HIGH)' for x"),
    ("in x: int[n] sorted unique range(0, 9)", "x has two ways of drawing its values ('sorted' "
                                               "and 'unique'): expected at most one of "
                                               "normal(MEAN, STD), csr(NNZ), sorted, permutation, "
                                               "unique, and one range"),
    ("in x: float[n] normal(0)", "expected 'normal(MEAN, STD)', found 'normal(0)'"),
    ("in x: float[n] gaussian(0, 1)", "expected 'ROLE NAME: TYPE[LENGTH]' followed by any of "
                                      "range(LOW, HIGH), normal(MEAN, STD), csr(NNZ), sorted, "
                                      "permutation, unique; found 'gaussian(0, 1)' after the "
                                      "length of x"),
    ("out x: float[n] normal(0, 1)", "normal set(s) how inputs are drawn, but x is 'out' "
                                     "(outputs are poisoned before each launch): expected role "
                                     "'in' or 'inout', or none of them"),
])
def test_fill_errors(line, message):
    with pytest.raises(SpecError) as info:
        parse_spec(f"kernel k\nsize n = 64\n{line}\nblock = 32\ngrid = 2\n", "k.spec")
    assert (info.value.line, info.value.message) == (3, message)


def test_value_errors_name_their_line():
    base = "kernel k\nsize n = 100\n{}\nin x: int[n]{}\nblock = 32\ngrid = 2\n"
    with pytest.raises(SpecError) as info:
        parse_spec(base.format("multiple n = 32", ""), "k.spec")
    assert info.value.line == 3
    assert info.value.message == ("expected size n = 100 to be a multiple of 32 "
                                  "('multiple n = 32') in the nominal run (n=100)")
    with pytest.raises(SpecError) as info:
        parse_spec(base.format("check n = 50", " unique range(0, 60)"), "k.spec")
    assert info.value.line == 4
    assert info.value.message.startswith("'unique' needs 100 distinct integers for x, but "
                                         "range(0, 60) holds 60 in the nominal run")
    with pytest.raises(SpecError) as info:
        parse_spec("kernel k\nsize n = Q\nblock = 32\ngrid = 2\n", "k.spec", {"TILE": 4})
    assert info.value.message == ("in size n: undefined name 'Q' in 'Q': expected one of the "
                                  "sizes declared above (none) or an integer #define of the "
                                  "kernel's file (TILE)")


TEMPLATE = """\
template <typename T, int B>
__global__ void reduce(const T* x, T* out, int n) { if (threadIdx.x < n) out[0] = x[0]; }
template __global__ void reduce<float, 256>(const float*, float*, int);
template __global__ void reduce<int, 128>(const int*, int*, int);
"""


def test_template_instance_sections_and_runner_name():
    text = ("kernel reduce<float, 256>\nsize n = 1024\nin x: float[n]\nout out: float[1]\n"
            "scalar n: int = n\nblock = 256\ngrid = 1\n\n"
            "kernel reduce<int, 128>\nsize n = 1024\nin x: int[n]\nout out: int[1]\n"
            "scalar n: int = n\nblock = 128\ngrid = 1\n")
    specs = parse_spec(text, "r.spec")
    spec = pick_section(specs, ["reduce"], "reduce<int,128u>", "r.spec")
    assert spec.kernel == "reduce<int, 128>"
    with pytest.raises(SpecError) as info:
        pick_section(specs, ["reduce"], None, "r.spec")
    assert info.value.message == ("several template instances of reduce have a section "
                                  "('kernel reduce<float, 256>' (line 1), 'kernel reduce<int, "
                                  "128>' (line 9)): expected --kernel 'NAME<ARGS>' naming one")
    assert instance_name("reduce", spec) == "reduce<int, 128>"
    assert instance_name("ops::reduce", spec) == "ops::reduce<int, 128>"
    kernel = _kernel(TEMPLATE)
    v = build_variant("baseline", TEMPLATE, kernel.qualified_name, spec, spec.launch, 132)
    assert v.name == "reduce<int, 128>"
    assert build_problem(spec, kernel).cases[0].args[0].dtype == "int32"
