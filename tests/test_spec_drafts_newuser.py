"""Drafts a new user's kernels showed to fault or mislead (the new-user report's
reproductions, rewritten here): every declarator of a host declaration
(``int nx = 1 << 10, ny = 1 << 13;``), integer locals inside a launch's ``dim3 block(dimx,
dimy)``, template defaults, checks of a sum (``(idx + i) < N ? a[idx + i] : 0``,
``if (idx + 2 < N)``). Each test asserts the drafted fields and notes, and that the draft is a valid spec
for its kernel (through its text form)."""

from __future__ import annotations

from cudalens.source.parser import parse_source
from cudalens.spec.host_locals import declarations
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.output_lengths import check_lengths
from cudalens.spec.parser import parse_spec, validate
from cudalens.spec.resolve import build_problem
from cudalens.spec.writer import format_spec


def infer(source: str, name: str | None = None) -> KernelSpec:
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0] if name is None else sf.kernel(name)
    spec = infer_spec(kernel, source, sf.launch_sites)
    reparsed = parse_spec(format_spec(spec), "draft.spec")[spec.kernel]
    validate(reparsed, kernel, source)
    check_lengths(reparsed, kernel, source)
    build_problem(reparsed, kernel)
    return spec


def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return {p.name: (p.role, p.length, p.low, p.high)
            for p in spec.params if isinstance(p, BufferDecl)}


def scalars(spec: KernelSpec) -> dict[str, str]:
    return {p.name: p.expr for p in spec.params if isinstance(p, ScalarDecl)}


def sizes(spec: KernelSpec) -> dict[str, str]:
    return {s.name: s.expr for s in spec.sizes}


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
