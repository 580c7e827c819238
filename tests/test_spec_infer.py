"""Drafting specs from real kernels: roles, lengths, sizes, scalars, launch and notes."""

from __future__ import annotations

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.parser import parse_spec, validate
from cudalens.spec.resolve import build_problem
from cudalens.spec.writer import format_spec


def infer(source: str, name: str | None = None) -> KernelSpec:
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0] if name is None else sf.kernel(name)
    spec = infer_spec(kernel, source, sf.launch_sites)
    # every draft must be a valid spec for its kernel, through the text form too
    reparsed = parse_spec(format_spec(spec), "draft.spec")[spec.kernel]
    validate(reparsed, kernel)
    build_problem(reparsed, kernel)
    return spec


def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return {p.name: (p.role, p.type, p.length) + ((p.low, p.high) if p.low else ())
            for p in spec.params if isinstance(p, BufferDecl)}


def scalars(spec: KernelSpec) -> dict[str, tuple[str, str]]:
    return {p.name: (p.type, p.expr) for p in spec.params if isinstance(p, ScalarDecl)}


def sizes(spec: KernelSpec) -> dict[str, str]:
    return {s.name: s.expr for s in spec.sizes}


SAXPY = """\
__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}

void launch(int n, float a, const float* x, float* y)
{
    saxpy<<<(n + 127) / 128, 128>>>(n, a, x, y);
}
"""


def test_saxpy_full_text():
    assert format_spec(infer(SAXPY)) == """\
kernel saxpy
# scalar a = 0.5: GUESS (the launch at line 11 passes 'a', a variable whose value is not known here), confirm it
# block 128: the launch at line 11
# sizes are defaults (n = 1 << 24): set them to your problem
size n = 1 << 24
scalar n: int = n
scalar a: float = 0.5  # GUESS: see the notes
in x: float[n]
inout y: float[n]
block = 128
grid = ceil_div(n, block.x)
"""


TRANSPOSE = """\
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out,
                          int rows, int cols)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols)
        out[col * rows + row] = in[row * cols + col];
}
"""


def test_transpose_2d():
    spec = infer(TRANSPOSE)
    assert buffers(spec) == {"in": ("in", "float", "rows * cols"),
                             "out": ("out", "float", "rows * cols")}
    assert sizes(spec) == {"rows": "4096", "cols": "4096"}
    assert scalars(spec) == {"rows": ("int", "rows"), "cols": ("int", "cols")}
    assert spec.launch.block == ("32", "8")
    assert spec.launch.grid == ("ceil_div(cols, block.x)", "ceil_div(rows, block.y)")
    assert "block 32, 8: GUESS, the default for a body that uses threadIdx.y (no launch site " \
           "with a literal block)" in spec.notes
    assert "block = 32, 8  # GUESS: see the notes" in format_spec(spec).splitlines()


REDUCE = """\
#define THREADS 512
__global__ void sum_atomic(const float* x, float* total, int n)
{
    __shared__ float s[THREADS];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = (i < n) ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(total, s[0]);
}
void run(const float* x, float* t, int n) { sum_atomic<<<(n + THREADS - 1) / THREADS, THREADS>>>(x, t, n); }
"""


def test_reduction_with_atomic_add():
    spec = infer(REDUCE)
    assert buffers(spec) == {"x": ("in", "float", "n"), "total": ("inout", "float", "1")}
    assert sizes(spec) == {"n": "1 << 24"}
    assert spec.atomics is True
    assert spec.launch.block == ("512",) and spec.launch.grid == ("ceil_div(n, block.x)",)
    assert "total: inout: atomicAdd accumulates into its initial contents" in spec.notes
    assert "block 512: the launch at line 15" in spec.notes


SOFTMAX = """\
__global__ void softmax_rows(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
    float sum = 0.0f;
    for (int c = 0; c < cols; ++c) sum += expf(xr[c] - m);
    for (int c = 0; c < cols; ++c) yr[c] = expf(xr[c] - m) / sum;
}
"""


def test_softmax_per_row_with_a_row_loop():
    spec = infer(SOFTMAX)
    assert buffers(spec) == {"x": ("in", "float", "rows * cols"),
                             "y": ("out", "float", "rows * cols")}
    assert sizes(spec) == {"rows": "4096", "cols": "4096"}
    assert spec.launch.block == ("256",) and spec.launch.grid == ("ceil_div(rows, block.x)",)


SOFTMAX_BLOCK_PER_ROW = """\
__global__ void softmax_block(const float* x, float* y, int rows, int cols)
{
    int row = blockIdx.x;
    if (row >= rows) return;
    const float* xr = &x[row * cols];
    float* yr = y + row * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = expf(xr[c]);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) yr[c] /= 2.0f;
}
"""


def test_block_per_row_grid_is_the_row_count():
    spec = infer(SOFTMAX_BLOCK_PER_ROW)
    # yr[c] /= 2 reads only what the same thread wrote at yr[c] before: y is out
    assert buffers(spec) == {"x": ("in", "float", "rows * cols"),
                             "y": ("out", "float", "rows * cols")}
    assert spec.launch.grid == ("rows",)


MATMUL = """\
__global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K)
{
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
void host(const float* a, const float* b, float* c, int m, int n, int k) {
    dim3 threads(16, 16);
    dim3 blocks((n + 15) / 16, (m + 15) / 16);
    matmul<<<blocks, threads>>>(a, b, c, m, n, k);
}
"""


def test_naive_matmul():
    spec = infer(MATMUL)
    assert buffers(spec) == {"A": ("in", "float", "M * K"), "B": ("in", "float", "N * K"),
                             "C": ("out", "float", "M * N")}
    # M and N are grid dimensions, K only a loop bound
    assert sizes(spec) == {"M": "4096", "N": "4096", "K": "1024"}
    assert spec.launch.block == ("16", "16")  # from the dim3 variable at the launch
    assert spec.launch.grid == ("ceil_div(N, block.x)", "ceil_div(M, block.y)")


GATHER = """\
__global__ void gather(const float* src, const int* idx, float* out, float scale, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale * src[idx[i]];
}
"""


def test_gather_with_an_index_array():
    spec = infer(GATHER)
    assert buffers(spec) == {"src": ("in", "float", "n"), "idx": ("in", "int", "n", "0", "n"),
                             "out": ("out", "float", "n")}
    assert scalars(spec) == {"scale": ("float", "0.125"), "n": ("int", "n")}
    assert spec.notes[:3] == (
        "length of src assumed n: index is data-dependent ('src[idx[i]]')",
        "range of idx set to [0, n): its values index src",
        "scalar scale = 0.125: GUESS (the usual value for that name), confirm it",
    )


HISTOGRAM = """\
__global__ void histogram(const unsigned char* data, unsigned int* bins, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[data[i]], 1u);
}
"""


def test_histogram_narrow_index_type_sizes_the_bins():
    spec = infer(HISTOGRAM)
    assert buffers(spec) == {"data": ("in", "uint8", "n", "0", "256"),
                             "bins": ("inout", "unsigned", "256")}
    assert spec.atomics and spec.launch.grid == ("ceil_div(n, block.x)",)
    assert "length of bins = 256: indexed by the values of data (unsigned char)" in spec.notes


PARTIALS = """\
__global__ void __launch_bounds__(128) partial_sums(const float* in, float* partial, int n)
{
    __shared__ float s[128];
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = (i < n) ? in[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0;
        for (int k = 0; k < 128; ++k) t += s[k];
        partial[blockIdx.x] = t;
    }
}
"""


def test_per_block_output_fixes_the_block_size():
    spec = infer(PARTIALS)
    assert buffers(spec) == {"in": ("in", "float", "n"),
                             "partial": ("out", "float", "ceil_div(n, 128)")}
    assert spec.launch.block == ("128",) and spec.launch.grid == ("ceil_div(n, 128)",)
    assert "block 128: __launch_bounds__(128)" in spec.notes


MISC = """\
__device__ void helper(float* p, int i) { p[i] = 0.0f; }
__global__ void escapes(float* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) helper(p, i);
}
__global__ void vec4(float4* v, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 t = v[i]; t.x *= w[i]; v[i] = t; }
}
__global__ void unbounded(float* p, int flag) {
    p[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}
__global__ void pitched(const float* a, float* b, int rows, int cols, int lda) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        int at = r * lda + c;
        *(b + r * cols + c) = a[at];
    }
}
__global__ void unused(float* never_written, const double* d, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = never_written[i] + (float)d[i];
    (void)v;
}
"""


def test_pointer_passed_to_a_function_is_inout():
    spec = infer(MISC, "escapes")
    assert buffers(spec) == {"p": ("inout", "float", "n")}
    assert spec.notes[:2] == (
        "p: inout assumed: the pointer goes where the analysis cannot follow ('helper(p, i)', "
        "line 4)",
        "length of p assumed n: the pointer is passed on in 'helper(p, i)'")


def test_vector_type_counts_lanes():
    spec = infer(MISC, "vec4")
    assert buffers(spec) == {"v": ("inout", "float", "4 * n"), "w": ("in", "float", "n")}
    assert "v: float4 counted as 4 float lanes" in spec.notes


def test_no_bounds_check_creates_a_size():
    spec = infer(MISC, "unbounded")
    assert sizes(spec) == {"n": "1 << 24"}
    assert buffers(spec) == {"p": ("out", "float", "n")}
    assert scalars(spec) == {"flag": ("int", "1")}
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert "length of p assumed n: no bounds check found on blockDim.x, blockIdx.x, threadIdx.x " \
           "in 'p[blockIdx.x * blockDim.x + threadIdx.x]'" in spec.notes


def test_row_stride_becomes_a_derived_size():
    spec = infer(MISC, "pitched")
    assert sizes(spec) == {"rows": "4096", "cols": "4096", "lda": "cols"}
    # the largest index is (rows - 1) * lda + cols - 1
    assert buffers(spec) == {"a": ("in", "float", "rows * lda + cols - lda"),
                             "b": ("out", "float", "rows * cols")}
    assert "size lda = cols: assumed a row stride equal to cols" in spec.notes


def test_non_const_pointer_never_written_is_in():
    sf = parse_source(MISC, "k.cu")
    kernel = sf.kernel("unused")
    spec = infer_spec(kernel, MISC, sf.launch_sites)
    assert buffers(spec) == {"never_written": ("in", "float", "n"), "d": ("in", "double", "n")}
    assert spec.notes[0] == "never_written: in: not const, but never written"
    # a kernel that writes nothing verifies nothing: its draft is refused as a written spec is
    with pytest.raises(SpecError, match=r"kernel unused: expected at least one 'out' or 'inout' "
                                        r"buffer, found only 'in' buffers \(never_written, d\)"):
        validate(spec, kernel)


def test_template_and_namespace():
    source = """\
namespace ops {
template <typename T>
__global__ void scale(T* x, T a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
}
"""
    sf = parse_source(source, "t.cu")
    spec = infer_spec(sf.kernels[0], source, sf.launch_sites)
    # no instance in the file: drafted for a named guessed one, its arguments kept
    assert spec.kernel == "ops::scale<float>" and spec.source == "inferred"
    assert buffers(spec) == {"x": ("inout", "float", "n")}
    assert scalars(spec) == {"a": ("float", "0.5"), "n": ("int", "n")}
    assert spec.notes[:3] == ("template scale: no instance found in the file; drafted for "
                              "scale<float> (T = float): GUESS, confirm the arguments, or name "
                              "the instance with --kernel 'scale<ARGS>'; the file must "
                              "instantiate it (template __global__ void ops::scale<float>(...);) "
                              "for the runner to find it",
                              "x: element type T is float",
                              "scalar a = 0.5: GUESS (no launch site passes a value), confirm it")


def test_stencil_bounds_with_offsets():
    source = """\
__global__ void stencil(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) out[i] = in[i - 1] + in[i] + in[i + 1];
}
"""
    # i <= n - 2, so in[i + 1] reaches n - 1; out[i] reaches n - 2, and the guard's n - 1
    # trims the edge of an array of n (what the caller allocates), so out is n too
    assert buffers(infer(source)) == {"in": ("in", "float", "n"),
                                      "out": ("out", "float", "n")}


def test_inference_needs_the_body_in_the_text():
    from cudalens.spec.errors import SpecError

    sf = parse_source(SAXPY, "k.cu")
    with pytest.raises(SpecError) as info:
        infer_spec(sf.kernels[0], "// another file\n", ())
    assert info.value.path == "inferred" and info.value.line == 1
    assert "kernel saxpy: no body found at bytes" in info.value.message


def test_read_only_loads_and_deref_writes():
    source = """\
__global__ void ldg(const float* __restrict__ x, float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        *(y + i) = __ldg(&x[i]) + __ldg(x + i);
        z[i]++;
    }
}
"""
    assert buffers(infer(source)) == {"x": ("in", "float", "n"), "y": ("out", "float", "n"),
                                      "z": ("inout", "float", "n")}


def test_launch_sites_argument_overrides_the_kernel_sites():
    sf = parse_source(SAXPY, "k.cu")
    spec = infer_spec(sf.kernels[0], SAXPY, launch_sites=())
    assert spec.launch.block == ("256",)
    assert "block 256: GUESS, the default (no launch site with a literal block)" in spec.notes
    assert infer_spec(sf.kernels[0], SAXPY).launch.block == ("128",)


def test_body_hidden_by_an_error_before_it_is_parsed_alone():
    from cudalens.kernel_model.model import kernel_model
    from cudalens.kernel_model.syntax import parse

    source = """\
__global__ void twice(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""
    prefix = "int q = f(a, [\n"  # error recovery swallows the kernel in the whole-file tree
    kernel = parse_source(" " * len(prefix) + source, "k.cu").kernels[0]
    text = prefix + source
    model = kernel_model(text, kernel)
    assert model.definition is None and model.loose_body is None
    parsed, body = model.salvaged_body()
    assert parsed is not parse(text)  # the definition's own text was parsed
    assert body.type == "compound_statement"
    spec = infer_spec(kernel, text, ())
    assert buffers(spec) == {"x": ("in", "float", "n"), "y": ("out", "float", "n")}


def test_created_size_is_passed_to_a_parameter_of_that_name():
    source = """\
__global__ void fill(float* p, int n) {
    p[blockIdx.x * blockDim.x + threadIdx.x] = n;
}
"""
    spec = infer(source)
    assert sizes(spec) == {"n": "1 << 24"} and scalars(spec) == {"n": ("int", "n")}
    assert spec.notes[0] == "size n = 1 << 24: no integer parameter bounds the kernel's indices"
