"""Refusal and guess texts that name what is really there (R12 of the first-use report): a
declaration between the index and its guard is named with the guard's line, and a scalar the
launch passes as a variable says so. Kernels are this repository's own."""

from __future__ import annotations

from cudalens.optimizer.passes import get
from cudalens.optimizer.reasons import line_of
from cudalens.source.parser import parse_source
from cudalens.spec.infer import infer_spec

from optimizer_fixtures import context_with_spec

TRANSPOSE_ROWS = """
__global__ void invert(float *input, float *output, int npoints, int nfeatures)
{
    int point_id = threadIdx.x + blockDim.x * blockIdx.x;
    int i;

    if (point_id < npoints) {
        for (i = 0; i < nfeatures; i++)
            output[point_id + npoints * i] = input[point_id * nfeatures + i];
    }
}
"""
SPEC = """
kernel invert
size npoints = 1000
size nfeatures = 34
scalar npoints: int = npoints
scalar nfeatures: int = nfeatures
in input: float[npoints * nfeatures]
out output: float[npoints * nfeatures]
block = 256
grid = ceil_div(npoints, block.x)
"""


def test_a_declaration_before_the_guard_is_named_with_the_guards_line():
    got = get("gridstride").check(context_with_spec(TRANSPOSE_ROWS, "invert", SPEC))
    assert got == ("expected the bounds guard 'if (point_id < n)' or 'if (point_id >= n) "
                   "return;' after the index, found 'int i;' at line 5; the guard at line 7 "
                   "must come first (move 'int i;' below it)")
    assert line_of(got) == 5


def test_no_guard_later_keeps_the_plain_text():
    text = TRANSPOSE_ROWS.replace("if (point_id < npoints) {", "{")
    got = get("gridstride").check(context_with_spec(text, "invert", SPEC))
    assert got == ("expected the bounds guard 'if (point_id < n)' or 'if (point_id >= n) "
                   "return;' after the index, found 'int i;' at line 5")


MODE = """\
__global__ void clear_if(float *m, int mode) {
  int i = threadIdx.x;
  if (mode == 2) m[i] = 0.0f; else m[i] *= 2.0f;
}
void run(float *m, int how) {
  clear_if<<<1, 16>>>(m, how);
}
"""


def _scalar_note(text, name):
    sf = parse_source(text, "k.cu")
    spec = infer_spec(sf.kernels[0], text, sf.launch_sites)
    return [n for n in spec.notes if n.startswith(f"scalar {name} ")]


def test_a_scalar_passed_as_a_variable_says_so():
    assert _scalar_note(MODE, "mode") == [
        "scalar mode = 1: GUESS (not a bound of any index, the launch at line 6 passes 'how', "
        "a variable whose value is not known here), confirm it"]


def test_a_scalar_passed_as_an_expression_and_with_no_launch():
    assert _scalar_note(MODE.replace("m, how)", "m, how + 1)"), "mode") == [
        "scalar mode = 1: GUESS (not a bound of any index, the launch at line 6 passes "
        "'how + 1', an expression whose value is not known here), confirm it"]
    assert _scalar_note(MODE.split("void run")[0], "mode") == [
        "scalar mode = 1: GUESS (not a bound of any index, no launch site passes a value), "
        "confirm it"]
