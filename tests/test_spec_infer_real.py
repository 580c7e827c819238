"""Inference on shapes real kernels take (one rule per test; the corpus measures them all)."""

from click.testing import CliRunner

from cudalens.cli import main
from cudalens.source.parser import parse_source
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl


def draft(text, **kw):
    sf = parse_source(text, "k.cu")
    return infer_spec(sf.kernels[0], text, sf.launch_sites, **kw)


def buffers(spec):
    return {p.name: (p.role, p.type, p.length, p.fill, p.low, p.high)
            for p in spec.params if isinstance(p, BufferDecl)}


def test_b_t_c_decomposition_through_a_pointer_offset():
    spec = draft("""
__global__ void k(float* out, const float* inp, int B, int T, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B * T) return;
    int b = i / T;
    int t = i % T;
    const float* x = inp + b * T * C + t * C;
    float* o = out + b * T * C + t * C;
    for (int c = 0; c < C; c++) o[c] = 2.0f * x[c];
}
""")
    assert buffers(spec)["inp"][2] == "B * T * C" and buffers(spec)["out"][2] == "B * T * C"
    assert spec.launch.grid == ("ceil_div(B * T, block.x)",)


def test_reassigned_remainder_follows_each_definition():
    spec = draft("""
__global__ void k(float* out, const float* inp, int A, int Bn) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < A * Bn * 4) {
        int rest = i % (Bn * 4);
        int a = i / (Bn * 4);
        int b = rest / 4;
        rest = rest % 4;
        out[i] = inp[a * Bn * 8 + b * 8 + rest];
    }
}
""")
    assert buffers(spec)["inp"][2] == "8 * A * Bn - 4"


def test_typedef_and_template_element_types():
    text = """
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
template <typename T, int N>
__global__ void k(T* y, const floatX* x, int n) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }
template __global__ void k<__nv_fp8_e5m2, 4>(__nv_fp8_e5m2*, const floatX*, int);
"""
    spec = draft(text)
    assert spec.kernel == "k<__nv_fp8_e5m2, 4>"
    assert buffers(spec)["y"][1] == "float8_e5m2" and buffers(spec)["x"][1] == "bfloat16"
    assert "x: element type floatX is __nv_bfloat16" in spec.notes
    assert spec.notes.count("y: element type T is __nv_fp8_e5m2") == 1
    other = draft(text, instance="k<float, 4>")
    assert other.kernel == "k<float, 4>" and buffers(other)["y"][1] == "float"


def test_block_in_a_variable_and_shared_through_sizeof():
    spec = draft("""
__global__ void k(float* y, const float* x, int n) {
    extern __shared__ float s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { s[threadIdx.x] = x[i]; y[i] = s[threadIdx.x]; }
}
void run(float* y, const float* x, int n) {
    int threads = 128;
    k<<<(n + threads - 1) / threads, threads, threads * sizeof(float)>>>(y, x, n);
}
""")
    assert spec.launch.block == ("128",) and spec.launch.shared == "block.x * 4"


def test_shared_without_a_launch_is_a_marked_guess():
    spec = draft("""
__global__ void k(double* y, int n) {
    extern __shared__ double s[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { s[threadIdx.x] = 1.0; y[i] = s[threadIdx.x]; }
}
""")
    assert spec.launch.shared == "block.x * 8"
    assert ("shared = block.x * 8: GUESS, the body declares extern __shared__ double s[] but "
            "no launch passes its size") in spec.notes


def test_scalars_from_the_launch_or_marked_guesses():
    spec = draft("""
__global__ void k(float* p, float lr, float eps, float decay, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * decay - lr / (p[i] + eps);
}
void step(float* p, int n) { const float eps = 1e-6f; k<<<n / 256, 256>>>(p, 3e-4f, eps, 0.5f + 0.4f, n); }
""")
    values = {p.name: p.expr for p in spec.params if not isinstance(p, BufferDecl)}
    assert values == {"lr": "3e-4", "eps": "1e-6", "decay": "0.5", "n": "n"}
    assert "scalar eps = 1e-6: from the launch at line 6 ('eps')" in spec.notes
    assert "scalar decay = 0.5: GUESS (the launch at line 6 passes '0.5f + 0.4f', an " \
        "expression whose value is not known here), confirm it" in spec.notes


def test_csr_row_pointers_and_gathered_vector():
    spec = draft("""
__global__ void spmv(const int* rp, const int* ci, const float* v, const float* x, float* y,
                     int m) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= m) return;
    float s = 0.0f;
    for (int j = rp[r]; j < rp[r + 1]; ++j) s += v[j] * x[ci[j]];
    y[r] = s;
}
""")
    b = buffers(spec)
    assert b["rp"] == ("in", "int", "m + 1", "csr", None, None)
    assert b["ci"] == ("in", "int", "nnz", "uniform", "0", "m")
    assert b["v"][2] == "nnz" and b["x"][2] == "m"
    assert [s.name for s in spec.sizes] == ["m", "nnz"]


def test_cli_spec_for_a_template_instance(tmp_path):
    src = tmp_path / "r.cu"
    src.write_text("template <typename T> __global__ void scale(T* y, int n) "
                   "{ int i = threadIdx.x; if (i < n) y[i] = y[i] * 2; }\n"
                   "template __global__ void scale<float>(float*, int);\n"
                   "template __global__ void scale<int>(int*, int);\n")
    out = CliRunner().invoke(main, ["spec", str(src), "--kernel", "scale<int>"])
    assert out.exit_code == 0, out.output
    assert "kernel scale<int>\n" in out.output and "inout y: int[n]\n" in out.output
    out = CliRunner().invoke(main, ["spec", str(src)])
    assert "kernel scale<float>\n" in out.output
    assert "# drafted for scale<float>, the first of 2 instances (scale<float>, scale<int>): " \
           "pick another with --kernel 'NAME<ARGS>'" in out.output


def test_block_from_a_template_argument_of_the_instance():
    text = (sc_text := (__import__("spec_corpus").CORPUS / "reduce_sum.cu").read_text())
    sf = parse_source(sc_text, "r.cu")
    spec = infer_spec(sf.kernels[0], text, sf.launch_sites, instance="reduce_sum<int, 128>")
    assert spec.launch.block == ("128",) and spec.launch.grid == ("ceil_div(n, 256)",)
    assert "block 128: template argument BLOCK = 128 of reduce_sum<int, 128>" in spec.notes
    assert buffers(spec)["partial"][:3] == ("out", "int", "ceil_div(n, 256)")
