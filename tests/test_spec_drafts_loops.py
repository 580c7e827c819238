"""Drafts of loop-carried advances and per-block rows, the shapes of cuda-samples' FDTD3d
(an index bumped one plane per step of a z march, flags for the bounds checks), a tiled SGEMM
(``A += TILE; B += TILE * N`` per tile of the K loop) and histogram64 (one 64-bin row per block
of a constant grid): each test asserts the drafted fields and notes exactly, and that the draft
is a valid spec for its kernel (through its text form). Kernels are this repository's own."""

from __future__ import annotations

from pathlib import Path

from cudalens.source.parser import parse_source
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, MultipleDecl
from cudalens.spec.output_lengths import check_lengths
from cudalens.spec.parser import parse_spec, validate
from cudalens.spec.resolve import build_problem
from cudalens.spec.writer import format_spec

CORPUS = Path(__file__).parent / "data" / "spec_corpus"


def infer(source: str, name: str | None = None) -> KernelSpec:
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0] if name is None else sf.kernel(name)
    spec = infer_spec(kernel, source, sf.launch_sites)
    reparsed = parse_spec(format_spec(spec), "draft.spec")[spec.kernel]
    validate(reparsed, kernel, source)
    check_lengths(reparsed, kernel, source)
    build_problem(reparsed, kernel)
    return spec


def buffers(spec: KernelSpec) -> dict[str, tuple[str, str]]:
    return {p.name: (p.role, p.length) for p in spec.params if isinstance(p, BufferDecl)}


def multiples(spec: KernelSpec) -> dict[str, str]:
    return {m.name: m.expr for m in spec.multiples if isinstance(m, MultipleDecl)}


def line_of(spec: KernelSpec, start: str) -> str:
    return next(ln for ln in format_spec(spec).splitlines() if ln.startswith(start))


# -- FDTD3d: an index advanced a plane per step, flags for the checks ---------------------------

def test_a_z_march_reads_the_whole_padded_volume():
    """``at`` starts at the inner point of plane 0 and moves R - 1 planes, one, R, then one per
    step of the march: the last read is the last point of plane dimz + 2R - 1. The writes go to
    an unpadded volume; the flags bound x and y (dimx + R for reads, dimx for writes) and the
    launch's grid is the write's."""
    spec = infer((CORPUS / "fd3d_march.cu").read_text())
    assert buffers(spec) == {"out": ("out", "dimx * dimy * dimz"),
                             "in": ("in", "(dimx + 8) * (dimy + 8) * (dimz + 8)")}
    assert spec.launch.grid == ("ceil_div(dimx, 32)", "ceil_div(dimy, 8)")
    assert spec.launch.block == ("32", "8")
    assert "length of in = (dimx + 8) * (dimy + 8) * (dimz + 8): 'in[at]' reaches past the " \
        "bounds of its index by 8 along dimx, 8 along dimy, 8 along dimz, so the caller is " \
        "taken to pass a volume padded by that much (a halo); assumed, confirm it" in spec.notes
    assert "grid.x = ceil_div(dimx, 32): from the launch at line 70 (x has several bounds, " \
        "one of them the launch's)" in spec.notes
    assert not any("GUESS" in n for n in spec.notes)


FDTD_POINTERS = """\
#define R 2
__global__ void zsum(float* out, const float* in, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    in += y * nx + x;
    out += y * nx + x;
    float acc = 0.0f;
    for (int r = 0; r < 2 * R; r++) { acc += in[0]; in += nx * ny; }
    for (int z = 0; z < nz; z++) {
        acc += in[0];
        out[0] = acc;
        in += nx * ny;
        out += nx * ny;
    }
}
"""


def test_pointers_bumped_in_loops_move_by_the_trip_counts():
    """in moves 2R planes in the preload and one per z step after its read; out one per step
    after its write: in is nx * ny * (nz + 2R) (written as its factors), out nx * ny * nz."""
    spec = infer(FDTD_POINTERS)
    assert buffers(spec) == {"out": ("out", "nx * ny * nz"),
                             "in": ("in", "nx * ny * (nz + 4)")}


def test_a_flag_stands_for_its_checks_only_inside_its_if():
    """``ok`` is cleared by ``if (i >= n) ok = false;``: ``if (ok) y[i] = ...`` is checked as
    ``i < n``; a flag set true again is no check (the length is assumed)."""
    spec = infer("""\
__global__ void k(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool ok = true;
    if (i >= n) ok = false;
    if (ok) y[i] = 2.0f * x[i];
}
""")
    assert buffers(spec) == {"y": ("out", "n"), "x": ("in", "n")}
    spec = infer("""\
__global__ void k(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool ok = true;
    if (i >= n) ok = false;
    ok = true;
    if (ok) y[i] = 2.0f * x[i];
}
""")
    assert line_of(spec, "out y:") == "out y: float[n]  # assumed: see the notes"
    assert "length of y assumed n: no bounds check found on blockDim.x, blockIdx.x, " \
        "threadIdx.x in 'y[i]'" in spec.notes


# -- SGEMM: A and B walk one tile per step of the K loop ----------------------------------------

def test_a_tiled_sgemm_walks_its_tiles():
    """A moves right one tile and B down one per step of ``k0 < K`` by TILE; with the launch's
    ceil_div grids and the 32 x 32 threads, A is M * K, B K * N, C M * N, and K stays a multiple
    of the tile (the last step has no bounds check)."""
    spec = infer((CORPUS / "sgemm_smem.cu").read_text())
    assert spec.kernel == "sgemm_smem<32>"
    assert buffers(spec) == {"A": ("in", "M * K"), "B": ("in", "N * K"), "C": ("inout", "M * N")}
    assert multiples(spec) == {"M": "32", "N": "32", "K": "32"}
    assert spec.launch.grid == ("ceil_div(M, 32)", "ceil_div(N, 32)")
    assert "multiple K = 32: the loop over k0 steps by 32 up to K with no bounds check on the " \
        "elements of its last step, so K stays a multiple of 32 (whole steps)" in spec.notes
    assert "scalar beta = 0.0: GUESS (the usual value for that name), confirm it" in spec.notes


def test_a_tile_loop_by_a_step_that_does_not_divide_the_bump_overestimates():
    """``p += 1`` per step of a loop by 4 up to K (kept a multiple of 4): the offset is a
    quotient bounded by its dividend (K - 4), never less than the K / 4 - 1 bumps really
    made."""
    spec = infer("""\
__global__ void k(float* y, const float* x, int n, int K) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 4) { s += x[i]; x += 1; }
    y[i] = s;
}
""")
    assert buffers(spec) == {"y": ("out", "n"), "x": ("in", "n + K - 4")}
    assert multiples(spec) == {"K": "4"}


# -- histogram64: a row of bins per block ----------------------------------------------------

def test_partial_histograms_take_a_row_per_block_of_the_launch_grid():
    spec = infer((CORPUS / "hist64_partial.cu").read_text())
    assert buffers(spec) == {"partial": ("out", "15360"), "data": ("in", "4 * count")}
    assert spec.launch.grid == ("240",)
    assert spec.launch.block == ("64",)
    assert "length of partial = 15360: blockIdx.x in 'partial[blockIdx.x * BIN_COUNT + " \
        "threadIdx.x]' runs over the launch's grid (240 blocks along x, line 34)" in spec.notes
    assert "grid.x = 240: from the launch at line 34 (pos is a grid-stride loop, so any grid " \
        "covers it)" in spec.notes


HOST_GRID = """\
#define BINS 64
__global__ void part(unsigned int* partial, const unsigned int* data, unsigned int count) {
    __shared__ unsigned int h[BINS];
    if (threadIdx.x < BINS) h[threadIdx.x] = 0;
    __syncthreads();
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += blockDim.x * gridDim.x)
        atomicAdd(&h[data[i] & 63u], 1u);
    __syncthreads();
    if (threadIdx.x < BINS) partial[blockIdx.x * BINS + threadIdx.x] = h[threadIdx.x];
}
__global__ void merge(unsigned int* hist, const unsigned int* partial, unsigned int rows) {
    unsigned int s = 0;
    for (unsigned int r = threadIdx.x; r < rows; r += 256) s += partial[blockIdx.x + r * BINS];
    if (threadIdx.x == 0) hist[blockIdx.x] = s;
}
void run(unsigned int* hist, unsigned int* partial, const unsigned int* data,
         unsigned int count, unsigned int rows) {
    part<<<rows, 64>>>(partial, data, count);
    merge<<<BINS, 256>>>(hist, partial, rows);
}
"""


def test_partial_rows_without_a_launch_grid_follow_the_draft_grid():
    """The grid is a host value the draft cannot read: the partial rows follow the draft's
    own grid, and the note says so (GUESS)."""
    spec = infer(HOST_GRID.replace("part<<<rows,", "part<<<blocks_for(count),"), "part")
    assert buffers(spec) == {"partial": ("out", "64 * ceil_div(count, 64)"),
                             "data": ("in", "count")}
    assert spec.launch.grid == ("ceil_div(count, 64)",)
    assert "length of partial = 64 * ceil_div(count, 64): 'partial[blockIdx.x * BINS + " \
        "threadIdx.x]' takes a row per block and no launch gives the grid, so it follows the " \
        "draft's (grid.x = ceil_div(count, 64)); GUESS: set the grid the host launches, and " \
        "the length with it" in spec.notes
    assert line_of(spec, "out partial:") == \
        "out partial: unsigned[64 * ceil_div(count, 64)]  # GUESS: see the notes"


def test_partial_rows_of_a_grid_from_the_launching_functions_parameter():
    """``part<<<rows, 64>>>`` with rows a parameter of ``run`` (not of ``part``): the grid is a
    size rows and the partial rows follow it, as the merge's ``64 * rows`` reads them."""
    spec = infer(HOST_GRID, "part")
    assert buffers(spec) == {"partial": ("out", "64 * rows"), "data": ("in", "count")}
    assert spec.launch.grid == ("rows",)
    assert [(s.name, s.expr) for s in spec.sizes] == [("count", "4096"), ("rows", "4096")]
    assert ("grid.x = rows: from the launch at line 19 (i is a grid-stride loop, so any grid "
            "covers it)") in spec.notes
    assert not any("GUESS" in n for n in spec.notes), spec.notes
    assert line_of(spec, "out partial:") == "out partial: unsigned[64 * rows]"


def test_the_merge_reads_a_column_per_block_of_a_constant_grid():
    spec = infer(HOST_GRID, "merge")
    assert buffers(spec) == {"hist": ("out", "64"), "partial": ("in", "64 * rows")}
    assert spec.launch.grid == ("64",)


def test_a_static_const_grid_is_the_launch_grid():
    """``static const unsigned int ROWS = 240;`` names the grid as a #define would: the partial
    rows are 240 * 256 and the merge's row count is 240 from the host code."""
    spec = infer("""\
#define BINS 256
static const unsigned int ROWS = 240;
__global__ void part(unsigned int* partial, const unsigned int* data, unsigned int count) {
    __shared__ unsigned int h[BINS];
    for (unsigned int b = threadIdx.x; b < BINS; b += blockDim.x) h[b] = 0;
    __syncthreads();
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += blockDim.x * gridDim.x)
        atomicAdd(&h[data[i] & 255u], 1u);
    __syncthreads();
    for (unsigned int b = threadIdx.x; b < BINS; b += blockDim.x)
        partial[blockIdx.x * BINS + b] = h[b];
}
__global__ void merge(unsigned int* hist, const unsigned int* partial, unsigned int rows) {
    unsigned int s = 0;
    for (unsigned int r = threadIdx.x; r < rows; r += 256) s += partial[blockIdx.x + r * BINS];
    if (threadIdx.x == 0) hist[blockIdx.x] = s;
}
void run(unsigned int* hist, unsigned int* partial, const unsigned int* data,
         unsigned int count) {
    part<<<ROWS, 192>>>(partial, data, count);
    merge<<<BINS, 256>>>(hist, partial, ROWS);
}
""", "part")
    assert buffers(spec) == {"partial": ("out", "61440"), "data": ("in", "count")}
    assert spec.launch.grid == ("240",)


LAYOUT = """\
__global__ void step(float* out, const float* in, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    int at = (y + 1) * (nx + 2) + x + 1;
    for (int z = 0; z < nz; z++) {
        at += (nx + 2) * (ny + 2);
        out[at] = in[at - 1] + in[at + 1] + in[at - (nx + 2) * (ny + 2)] +
                  in[at + (nx + 2) * (ny + 2)];
    }
}
"""


def test_an_output_indexed_like_a_longer_input_says_so():
    """out is written at the same ``at`` the input is read around: its length is its last
    write, and the note gives the input's, for a buffer laid out like it."""
    spec = infer(LAYOUT)
    # in: plane nz + 1's row ny, column nx is the last read: (nz + 1) planes and ny rows of
    # (nx + 2) before it; out: plane nz's
    last_in = "nx * ny * nz + 2 * nx * ny + 2 * nx * nz + 2 * ny * nz + 3 * nx + 4 * ny + " \
        "4 * nz + 5"
    last_out = "nx * ny * nz + nx * ny + 2 * nx * nz + 2 * ny * nz + nx + 2 * ny + " \
        "4 * nz + 1"
    assert buffers(spec) == {"out": ("out", last_out), "in": ("in", last_in)}
    assert f"length of out = {last_out}: its last write; in, also indexed by at, is " \
        f"{last_in}: if out is laid out like in, give it that length; assumed, confirm it" \
        in spec.notes


def test_a_tile_loop_that_checks_its_last_tile_keeps_any_size():
    """``k0 + tx < K`` checks the partial last tile: K is not made a multiple of the tile, and
    the walk's last offset is taken as K - 1, plus tx's 15 (long enough for any K; the reads
    really stop at M * K, as the check is on k0 + tx, not on the offset alone)."""
    spec = infer("""\
#define T 16
__global__ void rowdot(float* y, const float* A, const float* x, int M, int K) {
    int r = blockIdx.x;
    int tx = threadIdx.x;
    A += r * K;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T) {
        if (k0 + tx < K) s += A[tx] * x[k0 + tx];
        A += T;
    }
    if (r < M && tx == 0) y[r] = s;
}
void run(float* y, const float* A, const float* x, int M, int K) {
    rowdot<<<M, T>>>(y, A, x, M, K);
}
""")
    assert multiples(spec) == {}
    assert buffers(spec)["A"] == ("in", "M * K + 15")


def test_each_launcher_s_own_block_declaration_is_read():
    """Two launching functions each declare ``dim3 blockDim``: the tiled kernel's launch sees
    the second (``32 * 32``, and ``(BM * BN) / TM`` of the launcher's constants for another),
    not the first function's ``(32, 32)``, so its threads split into 32 rows of 32."""
    tiled = (CORPUS / "sgemm_smem.cu").read_text().split("void run_sgemm_smem")[0]
    spec = infer(tiled + """\
__global__ void naive(int M, int N, float* C) {
    const unsigned int x = blockIdx.x * 32 + threadIdx.x;
    const unsigned int y = blockIdx.y * 32 + threadIdx.y;
    if (x < M && y < N) C[x * N + y] = 0.0f;
}
void run_naive(int M, int N, float* C) {
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim(32, 32);
    naive<<<gridDim, blockDim>>>(M, N, C);
}
void run_tiled(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
               float* C) {
    const unsigned int BM = 32;
    dim3 gridDim(CEIL_DIV(M, 32), CEIL_DIV(N, 32));
    dim3 blockDim((BM * BM) / 1);
    sgemm_smem<32><<<gridDim, blockDim>>>(M, N, K, alpha, A, B, beta, C);
}
""", "sgemm_smem")
    assert spec.launch.block == ("1024",)
    assert buffers(spec) == {"A": ("in", "M * K"), "B": ("in", "N * K"), "C": ("inout", "M * N")}
