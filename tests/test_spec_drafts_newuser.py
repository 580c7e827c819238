"""Drafts a new user's kernels showed to fault or mislead (the new-user report's
reproductions, rewritten here): every declarator of a host declaration
(``int nx = 1 << 10, ny = 1 << 13;``), integer locals inside a launch's ``dim3 block(dimx,
dimy)``, template defaults, checks of a sum (``(idx + i) < N ? a[idx + i] : 0``,
``if (idx + 2 < N)``), a dynamic shared size from host constants and a scalar, an instance
launched with named arguments (``rsum<BS, PER>``), bins read through ``int4`` lanes. Each test asserts the drafted fields and notes, and that the draft is a valid spec
for its kernel (through its text form)."""

from __future__ import annotations

from cudalens.source.parser import parse_source
from cudalens.spec.host_locals import declarations
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import KernelSpec

import spec_fields
from spec_fields import infer, scalars, sizes



def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return spec_fields.buffers(spec, "role", "length", "low", "high")



# -- host declarations -------------------------------------------------------------------------

SCALE2D = """\
__global__ void scale2d(const float* in, float* out, int nx, int ny) {
    int ix = blockIdx.x * blockDim.x + threadIdx.x;
    int iy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ix < nx && iy < ny) out[iy * nx + ix] = 2.f * in[iy * nx + ix];
}
int main() {
    int nx = 1 << 10, ny = 1 << 13;
    DIMS
    dim3 grid((nx - 1) / block.x + 1, (ny - 1) / block.y + 1);
    scale2d<<<grid, block>>>(0, 0, nx, ny);
}
"""


def test_every_declarator_of_a_host_declaration_gives_its_value():
    spec = infer(SCALE2D.replace("DIMS", "dim3 block(16, 16);"))
    assert sizes(spec) == {"nx": "1024", "ny": "8192"}
    assert "size nx = 1024: from the host code (the launch at line 10 passes 'nx' = " \
           "(1 << 10))" in spec.notes
    assert spec.launch.block == ("16", "16")


def test_declarations_split_at_top_level_commas_only():
    assert declarations("int a = min(x, y), b = 2; long c; int d = 4;") == [
        ("a", "min(x, y)", 25), ("b", "2", 25), ("d", "4", 44)]


def test_a_dim3_block_of_integer_locals_is_their_values():
    """``int dimx = 8, dimy = 8; dim3 block(dimx, dimy);``: the tile is 8x8, so a guessed
    32x8 block would index shared memory past it."""
    spec = infer(SCALE2D.replace("DIMS", "int dimx = 8, dimy = 4;\n    dim3 block(dimx, dimy);")
                 .replace("10,", "11,"))
    assert spec.launch.block == ("8", "4")
    assert "block 8, 4: the launch at line 11" in spec.notes
    assert spec.launch.grid == ("ceil_div(nx, block.x)", "ceil_div(ny, block.y)")


# -- template defaults -------------------------------------------------------------------------

def test_a_template_default_is_the_drafted_argument_and_its_block_stride_the_block():
    """``NT = 256 / 4`` is 64: a block of 256 would index ``sh[NT]`` past its end."""
    spec = infer("""\
template <const int NT = 256 / 4>
__global__ void sum_block(const float* x, float* y, int N) {
    __shared__ float sh[NT];
    int idx = blockIdx.x * NT + threadIdx.x;
    sh[threadIdx.x] = idx < N ? x[idx] : 0.f;
    __syncthreads();
    if (threadIdx.x == 0) { float s = 0.f; for (int j = 0; j < NT; j++) s += sh[j]; y[blockIdx.x] = s; }
}
""")
    assert spec.kernel == "sum_block<64>"
    assert spec.launch.block == ("64",)
    assert ("block 64: template argument NT = 64 of sum_block<64>: the body steps blockIdx.x "
            "by NT before adding threadIdx.x, so a block has NT threads") in spec.notes
    assert spec.launch.grid == ("ceil_div(N, 64)",)
    assert buffers(spec) == {"x": ("in", "N", None, None),
                             "y": ("out", "ceil_div(N, 64)", None, None)}


SLICED = """\
template <const int BM = DBM, const int BN = 32, const int BK = 32>
__global__ void sliced(const float* a, const float* b, float* c, int M, int N, int K) {
    __shared__ float s_a[BM][BK], s_b[BK][BN];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * BM + ty, col = blockIdx.x * BN + tx;
    float sum = 0.f;
    for (int bk = 0; bk < K / BK; ++bk) {
        s_a[ty][tx] = a[row * K + bk * BK + tx];
        s_b[ty][tx] = b[(bk * BK + ty) * N + col];
        __syncthreads();
        for (int k = 0; k < BK; ++k) sum += s_a[ty][k] * s_b[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) c[row * N + col] = sum;
}
"""


def test_every_template_default_is_taken_and_guesses_count_every_shared_declarator():
    assert infer(SLICED.replace("DBM", "32")).kernel == "sliced<32, 32, 32>"
    # without defaults, 256 and 128 would need 512 and 128 KiB of s_a and s_b: 64 is 32 KiB
    no_defaults = SLICED.replace(" = DBM", "").replace(" = 32", "")
    assert infer(no_defaults).kernel == "sliced<64, 64, 64>"


# -- checks of a sum: ``idx + k < N`` ----------------------------------------------------------

def test_a_ternary_check_of_a_sum_bounds_the_read_it_guards():
    """The only check is inside ``?:``: before, a was drafted 1 element long with N = 1."""
    spec = infer("""\
__global__ void sum8(const float* a, float* y, int N) {
    int idx = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    float s = 0.f;
    for (int i = 0; i < 8; ++i) s += ((idx + i) < N) ? a[idx + i] : 0.f;
    atomicAdd(y, s);
}
""")
    assert buffers(spec) == {"a": ("in", "N", None, None), "y": ("inout", "1", None, None)}
    assert sizes(spec) == {"N": "1 << 24"}
    assert scalars(spec) == {"N": "N"}
    assert spec.launch.grid == ("ceil_div(N, 8 * block.x)",)
    assert "grid.x: each block covers 8 * block.x of idx (blockIdx.x * 8 * block.x in its " \
           "definition)" in spec.notes


def test_if_checks_of_sums_bound_their_stores_and_the_index():
    spec = infer("""\
__global__ void add4(const float* a, float* c, int N) {
    int idx = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (idx + 0 < N) c[idx + 0] = a[idx];
    if (idx + 2 < N) c[idx + 2] = a[idx + 2];
}
""")
    assert buffers(spec)["c"] == ("out", "N", None, None)
    assert buffers(spec)["a"] == ("in", "N", None, None)
    assert spec.launch.grid == ("ceil_div(N, 4 * block.x)",)
    assert "grid: idx has several bounds; the grid covers the smallest, N - 2" in spec.notes


# -- dynamic shared memory from host expressions -----------------------------------------------

TILES = """\
__global__ void tiles(const float* q, float* o, int d) {
    extern __shared__ float sram[];
    float* qi = sram;
    float* s = sram + 3 * 32 * d;
    for (int x = 0; x < d; x++) qi[threadIdx.x * d + x] = q[blockIdx.x * 32 * d + threadIdx.x * d + x];
    for (int y = 0; y < 16; y++) s[threadIdx.x * 16 + y] = qi[threadIdx.x * d];
    __syncthreads();
    o[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x * 16 + 15];
}
void run(const float* q, float* o, int nblocks, int d) {
    const int Bc = 32; const int Br = 16;
    const int sram_size = (3 * Bc * d * sizeof(float)) + (Bc * Br * sizeof(float));
    tiles<<<nblocks, Bc, sram_size>>>(q, o, d);
}
"""


def test_a_shared_size_built_from_host_constants_and_a_scalar_is_translated():
    """Before, ``sram_size`` was left a GUESS of one float per thread (128 B; the kernel
    needs (3 * 32 * d + 32 * 16) * 4 bytes)."""
    spec = infer(TILES.replace("<<<nblocks,", "<<<blocks_for(nblocks),"))
    assert scalars(spec) == {"d": "1"}
    assert spec.launch.block == ("32",)
    assert spec.launch.shared == "3 * block.x * 1 * 4 + block.x * 16 * 4"
    assert ("shared = 3 * block.x * 1 * 4 + block.x * 16 * 4: from the launch at line 13 "
            "('sram_size'); with scalar d = 1 written in: change it here with d") in spec.notes


def test_a_shared_size_of_a_size_is_kept_within_what_a_launch_gets():
    """With the grid read from the launching function's ``nblocks``, q's rows bound d, so d
    is a size; its default (2048: 786 KiB of shared memory, which no launch gets) is halved
    until the shared size is within 48 KiB."""
    spec = infer(TILES)
    assert sizes(spec) == {"nblocks": "1024", "d": "64"}
    assert scalars(spec) == {"d": "d"}
    assert spec.launch.grid == ("nblocks",)
    assert spec.launch.shared == "3 * block.x * d * 4 + block.x * 16 * 4"
    assert ("shared = 3 * block.x * d * 4 + block.x * 16 * 4: from the launch at line 13 "
            "('sram_size')") in spec.notes
    note = next(n for n in spec.notes if n.startswith("sizes are defaults"))
    assert note.startswith("sizes are defaults (nblocks = 1024, d = 64): set them to your "
                           "problem")
    assert note.endswith("; made smaller so that the dynamic shared memory fits the 49,152 "
                         "bytes a launch gets without opting in (shared = 3 * block.x * d * 4 "
                         "+ block.x * 16 * 4 = 788,480 bytes)")


# -- a template instance named by constants and locals -----------------------------------------

def test_an_instance_launched_with_named_arguments_is_named_with_their_values():
    """``rsum<BS, PER>`` is ``rsum<256, 16>`` in the compiled module; its reads reach
    grid * B * PER elements of x (the fixed grid of 1024 blocks), not a default n."""
    spec = infer("""\
#define NTOTAL (1 << 22)
#define BS 256
template <unsigned int B, int PER>
__global__ void rsum(const float* x, float* out, unsigned int n) {
    unsigned int i = blockIdx.x * (B * PER) + threadIdx.x;
    float s = 0.f;
    for (int k = 0; k < PER; k++) s += x[i + k * B];
    __shared__ float sh[B];
    sh[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) { float t = 0.f; for (int j = 0; j < B; j++) t += sh[j]; out[blockIdx.x] = t; }
}
int main() {
    const int blocks = 1024;
    const int PER = NTOTAL / blocks / BS;
    dim3 grid(blocks, 1), block(BS, 1);
    rsum<BS, PER><<<grid, block>>>(0, 0, NTOTAL);
}
""")
    assert spec.kernel == "rsum<256, 16>"
    assert buffers(spec) == {"x": ("in", "4194304", None, None),
                             "out": ("out", "1024", None, None)}
    assert spec.launch.block == ("256",)
    assert spec.launch.grid == ("1024",)
    assert "length of x = 4194304: blockIdx.x in 'x[i + k * B]' runs over the launch's grid " \
           "(1024 blocks along x, line 17)" in spec.notes


# -- indices read through vector lanes ---------------------------------------------------------

def test_bins_read_through_int4_lanes_give_the_input_a_range():
    """``int4 r = INT4(a[idx]); atomicAdd(&y[r.x], 1)``: a's values index y, as the scalar
    form ``int r = a[idx]; y[r]`` drafts; before, a had no range (negative bins)."""
    spec = infer("""\
#define INT4(v) (reinterpret_cast<const int4*>(&(v))[0])
__global__ void hist4(const int* a, int* y, int N) {
    int idx = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    if (idx < N) {
        int4 r = INT4(a[idx]);
        atomicAdd(&y[r.x], 1); atomicAdd(&y[r.y], 1);
        atomicAdd(&y[r.z], 1); atomicAdd(&y[r.w], 1);
    }
}
""")
    assert buffers(spec) == {"a": ("in", "N", "0", "n_y"), "y": ("inout", "n_y", None, None)}
    assert sizes(spec) == {"N": "1 << 24", "n_y": "1024"}
    assert "range of a set to [0, n_y): its values index rows of y" in spec.notes


# -- the block from fixed-size shared arrays and constant strides (R5) -------------------------

TILE_FLIP = """\
#define TILE 16
__global__ void tile_flip(const int *in, int *out, int cols) {
    __shared__ int buf[TILE][TILE];
    int base = blockIdx.x * TILE;
    for (int r = 0; r < TILE; r++) buf[r][threadIdx.x] = in[r * cols + base + threadIdx.x];
    __syncthreads();
    for (int r = 0; r < TILE; r++) out[r * cols + base + threadIdx.x] = buf[threadIdx.x][r];
}
"""

SMOOTH = """\
#define BS 16
__global__ void smooth(const float *img, float *out, int w, int h) {
    __shared__ float tile[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * BS + tx, y = blockIdx.y * BS + ty;
    tile[ty][tx] = img[y * w + x];
    __syncthreads();
    float right = tile[ty][tx];
    if (tx < BS - 1) right = tile[ty][tx + 1];
    out[y * w + x] = 0.5f * (tile[ty][tx] + right);
}
"""


def test_a_tile_indexed_by_threadidx_gives_the_block_instead_of_the_guess():
    spec = infer(TILE_FLIP)
    assert spec.launch.block == ("16",)
    assert ("block 16: from the fixed-size shared arrays (buf[r][threadIdx.x] with buf's extent "
            "TILE = 16 along threadIdx.x); no launch site gives the block") in spec.notes
    assert not any("GUESS, the default" in n for n in spec.notes)


def test_a_2d_tile_gives_both_axes_and_a_guarded_neighbour_read_does_not_shrink_them():
    spec = infer(SMOOTH)
    assert spec.launch.block == ("16", "16")
    assert ("block 16, 16: from the fixed-size shared arrays (tile[ty][tx] with tile's extent "
            "BS = 16 along threadIdx.x; tile[ty][tx] with tile's extent BS = 16 along "
            "threadIdx.y); no launch site gives the block") in spec.notes


def test_a_padded_tile_counts_as_its_power_of_two_and_a_launch_still_wins():
    padded = SMOOTH.replace("tile[BS][BS]", "tile[BS][BS + 1]").replace(
        "float right = tile[ty][tx];\n    if (tx < BS - 1) right = tile[ty][tx + 1];\n",
        "float right = tile[ty][tx];\n")
    spec = infer(padded)
    assert spec.launch.block == ("16", "16")
    assert any("tile[ty][tx] with tile's extent BS + 1 = 17 (padded) along threadIdx.x" in n
               for n in spec.notes), spec.notes
    launched = TILE_FLIP + ("void run(const int* a, int* b) "
                            "{ tile_flip<<<64, 8>>>(a, b, 1024); }\n")
    assert infer(launched).launch.block == ("8",)


def test_a_tile_too_large_for_a_block_or_without_a_thread_subscript_keeps_the_guess():
    big = SMOOTH.replace("#define BS 16", "#define BS 64")
    assert infer(big).launch.block == ("32", "8")
    assert any("GUESS, the default for a body that uses threadIdx.y" in n
               for n in infer(big).notes)
    lane = TILE_FLIP.replace("buf[r][threadIdx.x]", "buf[r][threadIdx.x % TILE]").replace(
        "buf[threadIdx.x][r]", "buf[threadIdx.x % TILE][r]")
    assert infer(lane).launch.block == ("256",)


def test_a_constant_stride_of_blockidx_before_threadidx_is_the_block():
    src = """\
#define CHUNK 512
__global__ void visit(const int *mask, int *cost, int n) {
    int tid = blockIdx.x * CHUNK + threadIdx.x;
    if (tid < n && mask[tid]) cost[tid] += 1;
}
"""
    spec = infer(src)
    assert spec.launch.block == ("512",)
    assert ("block 512: CHUNK = 512: the body steps blockIdx.x by CHUNK before adding "
            "threadIdx.x, so a block has CHUNK threads (no launch site gives the block)") \
        in spec.notes


def test_a_template_block_size_used_where_nonzero_is_the_instances_block():
    src = """\
template <int BLOCK_T>
__global__ void rowsum(const float *x, float *out, int ncols) {
    const int bs = BLOCK_T == 0 ? blockDim.x : BLOCK_T;
    float s = 0.0f;
    for (int c = threadIdx.x; c < ncols; c += bs) s += x[blockIdx.x * ncols + c];
    atomicAdd(&out[blockIdx.x], s);
}
template __global__ void rowsum<64>(const float *, float *, int);
"""
    sf = parse_source(src, "k.cu")
    spec = infer_spec(sf.kernels[0], src, sf.launch_sites, instance="rowsum<64>")
    assert spec.launch.block == ("64",)
    assert ("block 64: template argument BLOCK_T = 64 of rowsum<64>: the body uses BLOCK_T as "
            "its block size where it is not 0 ('BLOCK_T == 0 ? blockDim.x : BLOCK_T')") \
        in spec.notes


# -- a per-block chunk bounded through min() (the group-norm shape) ----------------------------

GROUPS = """\
__global__ void group_scale(const float* x, float* dst, const int group_size,
                            const unsigned ne_elements)
{
    int start = blockIdx.x * group_size;
    int end = min(start + group_size, (int)ne_elements);
    for (int j = start + threadIdx.x; j < end; j += blockDim.x) {
        dst[j] = x[j] * 2.0f;
    }
}

__global__ void clamp_direct(const float* x, float* dst, int n, int cap)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < ::min(n, cap)) dst[i] = x[i];
}

void launch(const float* x, float* d, int groups, int gs, unsigned n) {
    group_scale<<<groups, 128>>>(x, d, gs, n);
}
"""


def test_a_bound_through_min_is_a_size_and_a_per_block_extent_covers_the_grid():
    spec = infer(GROUPS, "group_scale")
    # j < end = min(start + group_size, ne_elements): ne_elements bounds j (was a GUESS of 1,
    # which verified one element)
    assert sizes(spec) == {"ne_elements": "1 << 24"}
    assert buffers(spec)["x"][:2] == ("in", "ne_elements")
    assert buffers(spec)["dst"][:2] == ("out", "ne_elements")
    # blockIdx.x * group_size with group_size = 1 would leave all but one element of each
    # block unverified: the block's size, so that the drafted grid covers ne_elements
    assert scalars(spec) == {"group_size": "128", "ne_elements": "ne_elements"}
    assert spec.launch.grid == ("ceil_div(ne_elements, block.x)",)
    note = next(n for n in spec.notes if n.startswith("scalar group_size"))
    assert note.startswith("scalar group_size = 128: GUESS (blockIdx.x * group_size: each "
                           "block covers group_size elements, set to the block's 128 threads")
    both = infer(GROUPS, "clamp_direct")
    assert buffers(both)["x"][:2] == ("in", "n") and buffers(both)["dst"][:2] == ("out", "n")


# -- a launch inside 'if (block_size == 16)' (the matrixMul sample's shape) --------------------

TILED = """\
template <int BS>
__global__ void mm_tiled(float* C, const float* A, const float* B, int wA, int wB)
{
    __shared__ float As[BS][BS];
    int tx = threadIdx.x, ty = threadIdx.y;
    As[ty][tx] = A[(blockIdx.y * BS + ty) * wA + tx];
    __syncthreads();
    C[(blockIdx.y * BS + ty) * wB + blockIdx.x * BS + tx] = As[ty][tx];
}

int main() {
    int block_size = 32;
    float *A = 0, *B = 0, *C = 0;
    dim3 threads(block_size, block_size);
    dim3 grid(640 / threads.x, 320 / threads.y);
    if (block_size == 16) {
        mm_tiled<16><<<grid, threads>>>(C, A, B, 64, 640);
    } else {
        mm_tiled<32><<<grid, threads>>>(C, A, B, 64, 640);
    }
}
"""


def test_a_launch_inside_an_equality_test_takes_the_tested_value():
    from cudalens.spec.host_locals import if_bindings

    at = TILED.index("mm_tiled<16><<<")
    assert if_bindings(TILED, at) == {"block_size": "16"}
    assert if_bindings(TILED, TILED.index("mm_tiled<32><<<")) == {}  # the else branch
    # reassigned between the test and the launch: nothing is fixed
    moved = TILED.replace("if (block_size == 16) {\n", "if (block_size == 16) {\n"
                          "        block_size = 8;\n")
    assert if_bindings(moved, moved.index("mm_tiled<16><<<")) == {}
    # As[BS][BS] indexed by threadIdx up to 31 would overflow with the initializer's 32
    sixteen = infer(TILED, "mm_tiled", instance="mm_tiled<16>")
    assert sixteen.launch.block == ("16", "16")
    assert infer(TILED, "mm_tiled", instance="mm_tiled<32>").launch.block == ("32", "32")


def test_the_plan_of_a_template_instance_is_named_with_its_arguments(tmp_path):
    from cudalens.engine.plan import plan_for_target
    from cudalens.target import load_target

    path = tmp_path / "tiled.cu"
    path.write_text(TILED)
    plan = plan_for_target(load_target(path, "mm_tiled<16>"))
    assert plan.kernel == "mm_tiled<16>"
    assert plan.candidates and all(c.launch.block == ("16", "16") for c in plan.candidates
                                   if "block=" not in c.label)
