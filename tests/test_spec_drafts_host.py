"""Drafts of shapes public kernels take that drafted wrong: pointer parameters bumped to a
thread's row before they are indexed (``p += C * idx`` then ``p[c]``), sizes and scalars the
host code sets (``int V = 50257;`` in ``main``), a guessed stride size marked on its line, a
block named by an integer local of the launching function of any integer type, pointers passed
to device helpers (``load128cs(p + i)``), template values the body can run with, indices
written with macros, unchecked sizes kept multiples of the block, and a written output shorter
than the kernel writes (a validation error). Each draft test asserts the drafted fields and the
notes exactly, and that the draft is a valid spec for its kernel (through its text form)."""

from __future__ import annotations

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.model import KernelSpec
from cudalens.spec.parser import parse_spec

import spec_fields
from spec_fields import infer, line_of, loads, scalars, sizes


def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return spec_fields.buffers(spec, "role", "length", "low", "high")


# -- pointer bumps -----------------------------------------------------------------------------

BUMPED = """\
__global__ void fuse(float* res, float* normed, float* mean, const float* x, const float* y,
                     const float* w, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx > N) return;
    res += C * idx;
    normed = normed + C * idx;
    x += C * idx;
    y = y + idx * C;
    float m = 0.0f;
    for (int c = 0; c < C; ++c) { float v = x[c] + y[c]; res[c] = v; m += v; }
    m /= C;
    for (int c = 0; c < C; c++) normed[c] = (res[c] - m) * w[c];
    mean[idx] = m;
}
"""


def test_bumped_pointers_index_from_the_thread_row():
    """Every bumped buffer reaches row N (the guard is ``idx > N``) times C; w is not bumped;
    res is written before each read (``++c`` and ``c++`` headers step alike), so it is out."""
    spec = infer(BUMPED)
    assert buffers(spec) == {
        "res": ("out", "N * C + C", None, None),
        "normed": ("out", "N * C + C", None, None),
        "mean": ("out", "N + 1", None, None),
        "x": ("in", "N * C + C", None, None),
        "y": ("in", "N * C + C", None, None),
        "w": ("in", "C", None, None),
    }
    assert spec.launch.grid == ("ceil_div(N + 1, block.x)",)
    assert not any("cannot follow" in n for n in spec.notes)


def test_a_bump_after_a_use_leaves_that_use_at_the_start():
    """``out[idx]`` before ``out += N`` reaches N; ``out[idx]`` after it reaches 2 * N."""
    spec = infer("""\
__global__ void two(float* out, const float* a, int N) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N) return;
    out[idx] = a[idx];
    out += N;
    out[idx] = 2.0f * a[idx];
}
""")
    assert buffers(spec) == {"out": ("out", "2 * N", None, None),
                             "a": ("in", "N", None, None)}


def test_a_bump_inside_a_counted_loop_moves_by_its_trip_count():
    """A bump before the use in a loop of 4 iterations has run 1 to 4 times at the use: the
    last read reaches N + 4 * C; out is not bumped."""
    spec = infer("""\
__global__ void k(float* out, const float* inp, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N) return;
    for (int r = 0; r < 4; r++) { inp += C; out[idx] += inp[idx]; }
}
""")
    assert buffers(spec) == {"out": ("inout", "N", None, None),
                             "inp": ("in", "N + 4 * C", None, None)}


def test_a_bump_in_an_uncounted_loop_is_an_unknown_offset():
    """A while loop runs an unknown number of times: the length is assumed (marked), never
    the unbumped index."""
    spec = infer("""\
__global__ void k(float* out, const float* inp, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= N) return;
    int r = 0;
    while (r < 4) { inp += C; out[idx] += inp[idx]; r++; }
}
""")
    assert line_of(spec, "in inp:") == "in inp: float[N]  # assumed: see the notes"
    assert "length of inp assumed N: index of 'inp[idx]' is not an affine expression" \
        in spec.notes


# -- values from the host code -----------------------------------------------------------------

HOST = """\
__global__ void col_sum(float* dbias, const float* dout, int B, int T, int OC) {
    int o = blockIdx.x;
    float s = 0.0f;
    for (int i = threadIdx.x; i < B * T; i += blockDim.x) s += dout[i * OC + o];
    if (threadIdx.x == 0) dbias[o] = s;
}

void col_sum_launch(float* dbias, const float* dout, int B, int T, int OC) {
    col_sum<<<OC, 128>>>(dbias, dout, B, T, OC);
}

int main() {
    int B = 8;
    int T = 1024;
    int OC = 768 * 4;
    float* dbias = 0;
    float* dout = 0;
    col_sum_launch(dbias, dout, B, T, OC);
    return 0;
}
"""


def test_sizes_from_the_host_code_through_the_launching_function():
    spec = infer(HOST, "col_sum")
    assert sizes(spec) == {"OC": "3072", "B": "8", "T": "1024"}
    assert buffers(spec)["dout"] == ("in", "B * T * OC", None, None)
    assert buffers(spec)["dbias"] == ("out", "OC", None, None)
    assert spec.launch.grid == ("OC",)
    assert spec.launch.block == ("128",)
    assert "size OC = 3072: from the host code (the launch at line 9 passes 'OC' = 768 * 4)" \
        in spec.notes
    assert line_of(spec, "size OC") == "size OC = 3072"
    assert not any(n.startswith("sizes are defaults") for n in spec.notes)


def test_host_values_of_a_launching_functions_locals():
    """``int n = 1 << 20;`` in the function that launches: the size is that value, and the
    defaulted size beside it is still called a default."""
    spec = infer("""\
__global__ void scale(float* y, const float* x, int n, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && threadIdx.y < m) y[i * m + threadIdx.y] = 2.0f * x[i * m + threadIdx.y];
}
void run(float* y, const float* x, int m) {
    const int n = 1 << 20;
    scale<<<(n + 255) / 256, dim3(256, 1)>>>(y, x, n, m);
}
""")
    assert sizes(spec)["n"] == "1048576"
    assert "size n = 1048576: from the host code (the launch at line 7 passes 'n' = (1 << 20))" \
        in spec.notes
    assert any(n.startswith("sizes are defaults (m = ") for n in spec.notes)


def test_a_guessed_stride_carries_guess_on_its_line_and_a_host_value_replaces_it():
    kernel = """\
__global__ void xent(float* losses, const float* probs, const int* targets, int B, int T,
                     int V) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < B * T) losses[i] = -logf(probs[i * V + targets[i]]);
}
"""
    guessed = infer(kernel)
    assert line_of(guessed, "size V") == "size V = 1  # GUESS: see the notes"
    assert "size V = 1: a stride with no bounds check; GUESS, set it" in guessed.notes
    host = infer(kernel + """\
void xent_launch(float* l, const float* p, const int* t, int B, int T, int V) {
    xent<<<(B * T + 255) / 256, 256>>>(l, p, t, B, T, V);
}
int main() {
    int B = 4;
    int T = 64;
    int V = 50257;
    xent_launch(0, 0, 0, B, T, V);
}
""")
    assert sizes(host) == {"B": "4", "T": "64", "V": "50257"}
    assert line_of(host, "size V") == "size V = 50257"
    assert buffers(host)["targets"] == ("in", "B * T", "0", "V")


def test_integer_scalars_from_host_expressions():
    spec = infer("""\
__global__ void fill(float* y, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (float)(i % stride);
}
void go(float* y, int n) {
    int stride = 16 * 4;
    fill<<<(n + 127) / 128, 128>>>(y, n, stride);
}
""")
    assert scalars(spec)["stride"] == "64"
    assert "scalar stride = 64: from the host code (the launch at line 7 passes " \
           "'stride' = (16 * 4))" in spec.notes


# -- the block from a local of any integer type ----------------------------------------------

@pytest.mark.parametrize("decl", ["unsigned int block_size = 512;",
                                  "const unsigned block_size = 512;",
                                  "size_t block_size = 512;",
                                  "constexpr int block_size = 512;",
                                  "const long block_size = 512;"])
def test_a_block_from_an_integer_local_before_the_launch(decl):
    """Two launching functions declare the same local (so it is no file-wide constant); each
    launch takes its own function's value."""
    spec = infer(f"""\
__global__ void step(float* p, const float* g, long n) {{
    long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] -= 0.01f * g[i];
}}
void first(float* p, const float* g, long n) {{
    {decl}
    unsigned int blocks = (n + block_size - 1) / block_size;
    step<<<blocks, block_size>>>(p, g, n);
}}
void second(float* p, const float* g, long n) {{
    unsigned int block_size = 64;
    step<<<(n + 63) / 64, block_size>>>(p, g, n);
}}
""")
    assert spec.launch.block == ("512",)
    assert "block 512: the launch at line 8" in spec.notes


# -- pointers passed to device helpers ---------------------------------------------------------

VEC_HELPERS = """\
template <class E>
struct alignas(16) Pack {
    static constexpr int size = sizeof(float4) / sizeof(E);
    E v[size];
};
typedef Pack<float> p4;
template <class E>
__device__ Pack<E> fetch(const E* at) {
    Pack<E> r;
    *reinterpret_cast<float4*>(r.v) = *reinterpret_cast<const float4*>(at);
    return r;
}
template <class E>
__device__ void keep(E* at, Pack<E> value) {
    *reinterpret_cast<float4*>(at) = *reinterpret_cast<float4*>(value.v);
}
"""


def test_helpers_taking_a_pointer_are_reads_and_writes_of_whole_vectors():
    """``fetch(table + ix * C + c)`` reads table (from the helper's body), ``keep(out + i, v)``
    writes out; ix, loaded from ids, gets a range; the index steps by p4::size (4), so the
    grid covers 4 elements a thread and C stays a multiple of 4."""
    spec = infer(VEC_HELPERS + """\
__global__ void gather(float* out, const int* ids, const float* table, int R, int C) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * p4::size;
    if (i < R * C) {
        int r = i / C;
        int c = i % C;
        int ix = ids[r];
        keep(out + i, fetch(table + ix * C + c));
    }
}
""")
    assert buffers(spec) == {"out": ("out", "R * C", None, None),
                             "ids": ("in", "R", "0", "n_table"),
                             "table": ("in", "C * n_table", None, None)}
    assert spec.launch.grid == ("ceil_div(R * C, 4 * block.x)",)
    assert [(m.name, m.expr) for m in spec.multiples] == [("C", "4")]
    assert ("multiple C = 4: 'fetch(table + ix * C + c)' moves 4 elements "
            "(16 bytes) from an index that steps by 4, so the sizes stay multiples of 4 "
            "(whole, aligned vectors)") in spec.notes
    assert not any("cannot follow" in n or "passed on" in n for n in spec.notes)


def test_a_vector_helper_on_an_unaligned_index_reaches_past_it():
    """Per-element indices (no step of 4): the last thread's vector reaches 3 past the bound,
    so the buffers are padded (assumed, noted), never short."""
    spec = infer(VEC_HELPERS + """\
__global__ void shift(float* out, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) keep(out + i, fetch(x + i));
}
""")
    assert buffers(spec) == {"out": ("out", "n + 3", None, None),
                             "x": ("in", "n + 3", None, None)}
    assert not spec.multiples


def test_helpers_not_in_the_file_go_by_their_names():
    """``load_row``/``store_row`` defined elsewhere: a read and a write of one element."""
    spec = infer("""\
__global__ void cp(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store_row(y + i, load_row(x + i));
}
""")
    assert buffers(spec) == {"y": ("out", "n", None, None), "x": ("in", "n", None, None)}


def test_a_bump_later_in_a_loop_around_the_use_counts_the_earlier_iterations():
    """``x += T`` after ``x[i]`` in the loop body moves the next iteration's read: iteration 7
    reads ``x[i + 7 * T]``, so x is N + 7 * T, not the first iteration's N."""
    spec = infer("""\
__global__ void k(float* y, const float* x, int N, int T) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    float s = 0.0f;
    for (int r = 0; r < 8; r++) { s += x[i]; x += T; }
    y[i] = s;
}
""")
    assert line_of(spec, "in x:") == "in x: float[N + 7 * T]"


# -- template values a body can run with -------------------------------------------------------

TILED = """\
template <const int TILE>
__global__ void mm(int M, int N, int K, const float* A, const float* B, float* C) {
    const int row = blockIdx.x * TILE + threadIdx.x / TILE;
    const int col = blockIdx.y * TILE + threadIdx.x % TILE;
    if (row < M && col < N) {
        float t = 0.0f;
        for (int k = 0; k < K; ++k) t += A[row * K + k] * B[k * N + col];
        C[row * N + col] = t;
    }
}
"""


def test_a_template_tile_squared_as_the_block_is_guessed_at_most_1024_threads():
    spec = infer(TILED)
    assert spec.kernel == "mm<32>"
    assert spec.launch.block == ("1024",)
    assert spec.launch.grid == ("ceil_div(M, 32)", "ceil_div(N, 32)")
    assert ("block 1024: template argument TILE = 32 of mm<32> squared: the body splits "
            "threadIdx.x into rows and columns of TILE") in spec.notes
    assert buffers(spec) == {"A": ("in", "M * K", None, None), "B": ("in", "N * K", None, None),
                             "C": ("out", "M * N", None, None)}


def test_a_template_guess_keeps_static_shared_memory_within_48_kib():
    """``__shared__ float a[BS * BS], b[...]`` twice: 256 would need 512 KiB and 128 128 KiB,
    64 needs 32 KiB; the block is the default, BS is no block name here."""
    spec = infer("""\
template <int BS>
__global__ void tiles(const float* x, float* y, int n) {
    __shared__ float a[BS * BS];
    __shared__ float b[BS][BS];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[threadIdx.x] = x[i]; b[0][threadIdx.x % BS] = a[threadIdx.x]; y[i] = b[0][0]; }
}
""")
    assert spec.kernel == "tiles<64>"


# -- sizes behind macros, and unchecked lengths ------------------------------------------------

def test_a_grid_stride_bound_written_with_macros_is_the_size():
    """``UMAD``/``UMUL`` macros expand to the thread index and the stride, ``uint`` is
    unsigned: ``pos < count`` bounds ``data`` by count; ``part``, indexed by blockIdx.x and
    threadIdx.x alone, keeps count a multiple of the block."""
    spec = infer("""\
typedef unsigned int uint;
#define UMUL(a, b) ((a) * (b))
#define UMAD(a, b, c) (UMUL((a), (b)) + (c))
__global__ void hist(uint* part, const uint* data, uint count) {
    uint s = 0;
    for (uint pos = UMAD(blockIdx.x, blockDim.x, threadIdx.x); pos < count;
         pos += UMUL(blockDim.x, gridDim.x))
        s += data[pos];
    part[blockIdx.x * 64 + threadIdx.x] = s;
}
void go(uint* part, const uint* data, uint count) {
    hist<<<(count + 63) / 64, 64>>>(part, data, count);
}
""")
    assert sizes(spec) == {"count": "1 << 24"}
    assert scalars(spec) == {"count": "count"}
    assert buffers(spec)["data"] == ("in", "count", None, None)
    assert [(m.name, m.expr) for m in spec.multiples] == [("count", "64")]
    assert spec.launch.block == ("64",)


def test_an_unchecked_kernel_keeps_its_assumed_size_a_multiple_of_the_block():
    spec = infer("""\
__global__ void copy4(uint4* dst, const uint4* src) {
    unsigned pos = blockIdx.x * blockDim.x + threadIdx.x;
    dst[pos] = src[pos];
}
void go(uint4* d, const uint4* s) { unsigned n = total_bytes(); copy4<<<n / 4 / 128, 128>>>(d, s); }
""")
    assert [(m.name, m.expr) for m in spec.multiples] == [("n", "128")]
    assert ("multiple n = 128: the launch covers n with whole blocks of 128 and the body has "
            "no bounds check, so the ragged size stays a multiple") in spec.notes


def test_an_unchecked_kernel_keeps_its_own_grid_where_the_hosts_does_not_divide_in():
    """``n`` a parameter of the launching function: its grid ``n / 4 / 128`` does not divide
    into ``dst[pos]`` (the lengths stay assumed), so the draft keeps its own grid over its
    own size n, a multiple of the block, as with a grid it cannot read."""
    spec = infer("""\
__global__ void copy4(uint4* dst, const uint4* src) {
    unsigned pos = blockIdx.x * blockDim.x + threadIdx.x;
    dst[pos] = src[pos];
}
void go(uint4* d, const uint4* s, unsigned n) { copy4<<<n / 4 / 128, 128>>>(d, s); }
""")
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert [(m.name, m.expr) for m in spec.multiples] == [("n", "128")]
    assert {p.name: p.length for p in spec.params} == {"dst": "4 * n", "src": "4 * n"}
    assert not any(n.startswith("grid.x = n / 512") for n in spec.notes)


# -- a written spec shorter than what the kernel writes ----------------------------------------

CUBE = """\
__global__ void cube(float* out, const float* in, int N) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    int z = blockIdx.z;
    if (x < N && y < N && z < N) out[(z * N + y) * N + x] = in[x];
}
"""


def _written(out_length: str):
    text = ("kernel cube\nsize N = 64\n"
            f"out out: float[{out_length}]\nin in: float[N]\nscalar N: int = N\n"
            "block = 64\ngrid = ceil_div(N, 64), N, N\n")
    return parse_spec(text, "cube.cu.spec")["cube"]


def test_a_written_output_shorter_than_the_kernel_writes_is_an_error():
    from cudalens.spec.errors import SpecError

    kernel = parse_source(CUBE, "cube.cu").kernel("cube")
    with pytest.raises(SpecError) as err:
        loads(_written("N"), kernel, CUBE)
    assert str(err.value) == (
        "cube.cu.spec:3: kernel cube writes out up to N * N * N elements (from its bounds "
        "checks; 262,144 at the nominal sizes), but the spec gives it N (64): expected a "
        "length of at least N * N * N")
    loads(_written("N * N * N"), kernel, CUBE)  # long enough
    loads(_written("N * N * N + 7"), kernel, CUBE)  # longer is the user's business


def test_an_output_whose_length_inference_only_assumes_is_not_checked():
    source = """\
__global__ void k(float* out, const float* in, int n) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = in[0];
}
"""
    kernel = parse_source(source, "k.cu").kernel("k")
    spec = parse_spec("kernel k\nsize n = 64\nout out: float[1]\nin in: float[1]\n"
                      "scalar n: int = n\nblock = 64\ngrid = 1\n", "k.cu.spec")["k"]
    loads(spec, kernel, source)


def test_loading_a_written_spec_again_with_the_same_source_does_not_draft_again(
        monkeypatch, tmp_path):
    """The draft the output lengths are checked against is kept with the kernel's model
    (``output_lengths.drafted_for``): a second load of the same text and spec (a lens refresh,
    a hover, a re-analysis with an empty spec cache) refuses the short output as the first
    did, without inference; an edited text drafts again."""
    from cudalens.errors import CudalensError
    from cudalens.kernel_model import syntax
    from cudalens.lsp.documents import SpecCache, analyze
    from cudalens.spec import output_lengths
    from cudalens.target import load_spec

    drafts = []
    real = output_lengths.infer_spec

    def counting(kernel, *args, **kwargs):
        drafts.append(kernel.name)
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(output_lengths, "infer_spec", counting)
    syntax.clear_parses()
    path = tmp_path / "cube.cu"
    path.write_text(CUBE)
    spec_path = tmp_path / "cube.cu.spec"
    spec_path.write_text("kernel cube\nsize N = 64\nout out: float[N]\nin in: float[N]\n"
                         "scalar N: int = N\nblock = 64\ngrid = ceil_div(N, 64), N, N\n")
    expected = (f"{spec_path}:3: kernel cube writes out up to N * N * N elements (from its "
                f"bounds checks; 262,144 at the nominal sizes), but the spec gives it N (64): "
                f"expected a length of at least N * N * N")
    for _ in range(2):
        source = parse_source(CUBE, str(path))
        with pytest.raises(CudalensError) as err:
            load_spec(path, source, source.kernel("cube"))
        assert str(err.value) == expected
    assert drafts == ["cube"]
    for _ in range(2):  # the language server's analysis, each time with an empty spec cache
        snap = analyze(path.as_uri(), path, 1, CUBE, "utf-16", SpecCache())
        assert [v.spec_error for v in snap.kernels] == [expected]
    assert drafts == ["cube"]
    edited = CUBE.replace("in[x]", "in[x] * 2.0f")
    snap = analyze(path.as_uri(), path, 2, edited, "utf-16", SpecCache())
    assert [v.spec_error for v in snap.kernels] == [expected]
    assert drafts == ["cube", "cube"]
    syntax.clear_parses()
