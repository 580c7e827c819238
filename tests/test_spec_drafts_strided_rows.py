"""Drafts of a row per block walked by a thread-strided loop (``for (c = threadIdx.x; c <
ncols; c += blockDim.x)``, ggml's sum-rows shape; R6 of the first-use report): the row length
is a size bounding the loop, not a GUESS scalar of 1. Kernels are this repository's own."""

from __future__ import annotations

from test_spec_drafts_loops import buffers, infer

ROW_SUMS = """\
__global__ void row_sums(const float *x, float *out, int ncols) {
  int row = blockIdx.x;
  float s = 0.0f;
  for (int c = threadIdx.x; c < ncols; c += blockDim.x) s += x[row * ncols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x == 0) out[row] = s;
}
void launch(const float *x, float *out, int nrows, int ncols) {
  row_sums<<<nrows, 32>>>(x, out, ncols);
}
"""


def test_the_row_count_is_the_launching_functions_grid_parameter():
    """``row_sums<<<nrows, 32>>>`` with nrows a parameter of ``launch`` (not passed to the
    kernel): nrows is a size, the grid and the rows of x and out."""
    spec = infer(ROW_SUMS)  # also a valid spec for the kernel (infer checks it)
    assert buffers(spec) == {"x": ("in", "ncols * nrows"), "out": ("out", "nrows")}
    assert {p.name: p.expr for p in spec.params if p.name == "ncols"} == {"ncols": "ncols"}
    assert [(s.name, s.expr) for s in spec.sizes] == [("nrows", "4096"), ("ncols", "4096")]
    assert spec.launch.grid == ("nrows",)
    assert ("grid.x = nrows: from the launch at line 9; the body has no bounds check along x, "
            "so that grid and the block bound its indices") in spec.notes
    assert not any(n.startswith("scalar ncols") or "GUESS" in n for n in spec.notes), \
        spec.notes


def test_the_strided_loop_bound_is_the_row_length():
    # the grid from a function the draft cannot read: the rows follow the draft's own grid
    spec = infer(ROW_SUMS.replace("<<<nrows,", "<<<rows_of(nrows),"))
    assert buffers(spec) == {"x": ("in", "ncols * ceil_div(n, 32)"),
                             "out": ("out", "ceil_div(n, 32)")}
    scalars = {p.name: p.expr for p in spec.params if p.name == "ncols"}
    assert scalars == {"ncols": "ncols"}
    assert [s.name for s in spec.sizes] == ["n", "ncols"]
    assert spec.launch.grid == ("ceil_div(n, 32)",)
    assert not any(n.startswith("scalar ncols") for n in spec.notes), spec.notes
    assert "length of x = ncols * ceil_div(n, 32): 'x[row * ncols + c]' takes a row per block " \
        "and no launch gives the grid, so it follows the draft's (grid.x = ceil_div(n, 32)); " \
        "GUESS: set the grid the host launches, and the length with it" in spec.notes
