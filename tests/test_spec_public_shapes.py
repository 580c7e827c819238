"""Drafts for five kernel shapes public projects write that drafted wrong (issue 13, item 5):
CSR row bounds read into locals, several ``dim3`` declarators in one declaration, a guarded or
padded 1D stencil, a buffer written before it is read (softmax's ``out``), and dynamic shared
memory declared as bytes and cast. Each test asserts the drafted fields exactly, and that the
draft is a valid spec for its kernel through its text form (guessed lines marked)."""

from __future__ import annotations

import pytest

from cudalens.spec.model import KernelSpec

import spec_fields
from spec_fields import infer, line_of, scalars, sizes


def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return spec_fields.buffers(spec, "role", "type", "length", "fill", "fill_args", "low", "high")


# -- 1. CSR row bounds -------------------------------------------------------------------------

CSR_LOCALS = """\
__global__ void spmv(const int* row_ptr, const int* col_idx, const float* val, const float* x,
                     float* y, int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        int row_start = row_ptr[row];
        int row_end = row_ptr[row + 1];
        float sum = 0.0f;
        for (int j = row_start; j < row_end; ++j) sum += val[j] * x[col_idx[j]];
        y[row] = sum;
    }
}
"""

CSR_EXPECTED = {
    "row_ptr": ("in", "int", "rows + 1", "csr", ("nnz",), None, None),
    "col_idx": ("in", "int", "nnz", "uniform", (), "0", "rows"),
    "val": ("in", "float", "nnz", "uniform", (), None, None),
    "x": ("in", "float", "rows", "uniform", (), None, None),
    "y": ("out", "float", "rows", "uniform", (), None, None),
}


@pytest.mark.parametrize("source", [
    CSR_LOCALS,
    CSR_LOCALS.replace("int row_start", "const int row_start")
              .replace("int row_end", "const int row_end"),
    CSR_LOCALS.replace("        int row_start = row_ptr[row];\n        int row_end = "
                       "row_ptr[row + 1];\n",
                       "        const int row_start = row_ptr[row], row_end = row_ptr[row + 1];\n"),
    CSR_LOCALS.replace("int row_start = row_ptr[row];\n        int row_end = row_ptr[row + 1];\n",
                       "").replace("for (int j = row_start; j < row_end; ++j)",
                                   "for (int j = row_ptr[row]; j < row_ptr[row + 1]; j++)"),
    CSR_LOCALS.replace("int row_end = row_ptr[row + 1];", "")
              .replace("j < row_end", "j < row_ptr[row + 1]"),
], ids=["locals", "const-locals", "one-declaration", "direct", "start-local-end-direct"])
def test_csr_row_bounds_through_locals_are_csr_nnz(source):
    spec = infer(source)
    assert buffers(spec) == CSR_EXPECTED
    assert sizes(spec) == {"rows": "1 << 24", "nnz": "1 << 24"}
    assert ("size nnz = 1 << 24: non-zeros of the CSR rows in row_ptr (a loop runs from "
            "row_ptr[r] to row_ptr[r + 1]); GUESS, set it") in spec.notes
    assert line_of(spec, "size nnz") == "size nnz = 1 << 24  # GUESS: see the notes"


def test_csr_with_unsigned_locals_and_a_warp_per_row_start():
    spec = infer("""\
__global__ void spmv_warp(const unsigned* ptr, const unsigned* idx, const double* a,
                          const double* x, double* y, unsigned m) {
    unsigned r = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    unsigned lane = threadIdx.x % 32;
    if (r < m) {
        unsigned begin = ptr[r];
        unsigned stop = ptr[r + 1];
        double t = 0.0;
        for (unsigned k = begin + lane; k < stop; k += 32) t += a[k] * x[idx[k]];
        if (lane == 0) y[r] = t;
    }
}
""")
    assert buffers(spec) == {
        "ptr": ("in", "unsigned", "m + 1", "csr", ("nnz",), None, None),
        "idx": ("in", "unsigned", "nnz", "uniform", (), "0", "m"),
        "a": ("in", "double", "nnz", "uniform", (), None, None),
        "x": ("in", "double", "m", "uniform", (), None, None),
        "y": ("out", "double", "m", "uniform", (), None, None),
    }


def test_a_length_loaded_into_a_local_is_no_csr():
    """``int len = lens[i]; for (j = 0; j < len; ...)``: the loop does not start at an element
    of lens, so lens is no row-pointer array (its length stays unknown, and says so)."""
    spec = infer("""\
__global__ void k(const int* lens, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int len = lens[i];
        for (int j = 0; j < len; j++) out[i * 8 + j] = 1.0f;
    }
}
""")
    assert buffers(spec)["lens"] == ("in", "int", "n", "uniform", (), None, None)
    assert "nnz" not in sizes(spec)
    assert "length of out assumed n: no bounds check found on j in 'out[i * 8 + j]'" \
        in spec.notes


# -- 2. dim3 declarations at the launch ----------------------------------------------------------

TRANSPOSE = """\
#define TILE 32
#define BLOCK_ROWS 8
__global__ void transpose(float* out, const float* in, int width, int height) {
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        out[x * height + (y + j)] = in[(y + j) * width + x];
}
void go(float* o, const float* i, int W, int H) {
LAUNCH
}
"""


@pytest.mark.parametrize("launch", [
    "    dim3 grid(W / TILE, H / TILE), threads(TILE, BLOCK_ROWS);\n"
    "    transpose<<<grid, threads>>>(o, i, W, H);",
    "    dim3 grid(W / TILE, H / TILE);\n    dim3 block(TILE, BLOCK_ROWS);\n"
    "    transpose<<<grid, block>>>(o, i, W, H);",
    "    dim3 g = dim3(W / TILE, H / TILE);\n    dim3 b = dim3(TILE, BLOCK_ROWS);\n"
    "    transpose<<<g, b>>>(o, i, W, H);",
], ids=["one-declaration", "two-declarations", "dim3-equals"])
def test_transpose_takes_block_grid_and_sizes_from_the_dim3_launch(launch):
    spec = infer(TRANSPOSE.replace("LAUNCH", launch))
    assert spec.launch.block == ("32", "8")
    assert spec.launch.grid == ("width / 32", "height / 32")
    assert sizes(spec) == {"width": "4096", "height": "4096"}
    assert scalars(spec) == {"width": "width", "height": "height"}
    assert buffers(spec) == {
        "out": ("out", "float", "width * height", "uniform", (), None, None),
        "in": ("in", "float", "width * height", "uniform", (), None, None),
    }
    assert spec.multiples == ()  # W / TILE covers whole tiles only: a ragged W stays inside
    assert not any("GUESS" in n for n in spec.notes)


def test_a_ceil_div_launch_over_an_unchecked_body_keeps_the_ragged_size_a_multiple():
    spec = infer(TRANSPOSE.replace("LAUNCH", "    dim3 grid((W + TILE - 1) / TILE, "
                                   "(H + TILE - 1) / TILE), threads(TILE, BLOCK_ROWS);\n"
                                   "    transpose<<<grid, threads>>>(o, i, W, H);"))
    assert spec.launch.grid == ("ceil_div(width, 32)", "ceil_div(height, 32)")
    assert [(m.name, m.expr) for m in spec.multiples] == [("width", "32"), ("height", "32")]
    assert ("multiple width = 32: the launch covers width with whole blocks of 32 and the body "
            "has no bounds check, so the ragged size stays a multiple") in spec.notes


def test_dim3_declarations_read_every_declarator_and_nested_parentheses():
    from cudalens.spec.block_shape import dim3_declarations, literal_block

    text = ("dim3 grid((w + T - 1) / T, h / T), threads(T, ROWS); dim3 g = dim3(4, 2);\n"
            "dim3 b{8, 8}, c = {3}; dim3 e; dim3 f = (n + 1) / 2; dim3 q(1), r(2)\n")
    assert dim3_declarations(text) == {"grid": "(w + T - 1) / T, h / T", "threads": "T, ROWS",
                                       "g": "4, 2", "b": "8, 8", "c": "3", "q": "1"}
    assert literal_block("threads", "#define T 32\n#define ROWS 8\n" + text) == (32, 8)


def test_if_checks_bound_the_accesses_inside_them():
    """c is below W where src is read and below H where dst is written: each access takes the
    check around it (W = 2 * H would otherwise draft dst short)."""
    spec = infer("""\
#define TILE 32
__global__ void tr(float* dst, const float* src, int W, int H) {
    __shared__ float t[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
    if (c < W && r < H) t[threadIdx.y][threadIdx.x] = src[r * W + c];
    __syncthreads();
    c = blockIdx.y * TILE + threadIdx.x;
    r = blockIdx.x * TILE + threadIdx.y;
    if (c < H && r < W) dst[r * H + c] = t[threadIdx.x][threadIdx.y];
}
""")
    assert buffers(spec) == {
        "dst": ("out", "float", "W * H", "uniform", (), None, None),
        "src": ("in", "float", "W * H", "uniform", (), None, None),
    }


# -- 3. 1D stencils ------------------------------------------------------------------------------

def test_guarded_stencil_reads_stay_inside_n():
    spec = infer("""\
#define R 3
__global__ void stencil(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= R && i < n - R)
        out[i] = in[i - 3] + in[i - 2] + in[i - 1] + in[i] + in[i + 1] + in[i + 2] + in[i + 3];
}
""")
    assert buffers(spec) == {"in": ("in", "float", "n", "uniform", (), None, None),
                             "out": ("out", "float", "n", "uniform", (), None, None)}
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert not any(n.startswith(("length of in", "length of out")) for n in spec.notes)


def test_padded_stencil_says_it_assumed_the_padding():
    spec = infer("""\
#define R 3
__global__ void stencil(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = -R; k <= R; k++) s += in[i + R + k];
        out[i] = s;
    }
}
""")
    assert buffers(spec) == {"in": ("in", "float", "n + 6", "uniform", (), None, None),
                             "out": ("out", "float", "n", "uniform", (), None, None)}
    assert ("length of in = n + 6: 'in[i + R + k]' reaches 6 past the bound n of its index, so "
            "the caller is taken to pass a buffer padded by 6; assumed, confirm it") in spec.notes
    assert line_of(spec, "in in:") == "in in: float[n + 6]  # assumed: see the notes"
    assert line_of(spec, "out out:") == "out out: float[n]"


# -- 4. written before read ------------------------------------------------------------------

SOFTMAX = """\
__global__ void softmax(float* out, const float* inp, int N, int C) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        const float* x = inp + i * C;
        float maxval = -INFINITY;
        for (int j = 0; j < C; j++) maxval = fmaxf(maxval, x[j]);
        float sum = 0.0f;
        for (int j = 0; j < C; j++) {
            out[i * C + j] = expf(x[j] - maxval);
            sum += out[i * C + j];
        }
        for (int j = 0; j < C; j++) SCALE;
    }
}
"""


@pytest.mark.parametrize("scale", ["out[i * C + j] *= 1.0f / sum", "out[i * C + j] /= sum",
                                   "out[i * C + j] = out[i * C + j] / sum"])
def test_a_buffer_written_before_every_read_is_out(scale):
    spec = infer(SOFTMAX.replace("SCALE", scale))
    assert buffers(spec) == {"out": ("out", "float", "N * C", "uniform", (), None, None),
                             "inp": ("in", "float", "N * C", "uniform", (), None, None)}
    assert ("out: out: each read ('out[i * C + j]', line 10) follows the same thread's write of "
            "that element ('out[i * C + j]', line 9), so its initial contents are never read") \
        in spec.notes


@pytest.mark.parametrize("body, why", [
    ("if (i < n) y[i] += a * x[i];", "read-modify-write"),
    ("if (i < n) { float old = y[i]; y[i] = a * x[i] + old; }", "read before the write"),
    ("if (i < n) { if (x[i] > 0.0f) y[i] = 0.0f; y[i] = y[i] + x[i]; }", "conditional write"),
    ("if (i + 1 < n) { y[i] = x[i]; y[i] = y[i + 1] * a; }", "another element"),
    ("if (i < n) atomicAdd(&y[i], a * x[i]);", "atomic"),
])
def test_real_reads_of_the_initial_contents_stay_inout(body, why):
    spec = infer(f"""\
__global__ void k(float* y, const float* x, float a, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    {body}
}}
""")
    assert buffers(spec)["y"][0] == "inout", why


# -- 5. dynamic shared memory cast from bytes ----------------------------------------------------

SMEM = """\
__global__ void rows(float* out, const float* inp, int R, int C) {
    extern __shared__ DECL;
    CAST
    int r = blockIdx.x;
    if (r >= R) return;
    for (int c = threadIdx.x; c < C; c += blockDim.x) s[c] = inp[r * C + c];
    __syncthreads();
    for (int c = threadIdx.x; c < C; c += blockDim.x) out[r * C + c] = s[c] * 2.0f;
}
"""


@pytest.mark.parametrize("decl, cast, size, declared", [
    ("unsigned char smem[]", "float* s = reinterpret_cast<float*>(smem);", 4,
     "unsigned char smem[] (used as float through a cast)"),
    ("__align__(16) char smem[]", "double* s = (double*)&smem[0];", 8,
     "char smem[] (used as double through a cast)"),
    ("float s[]", "", 4, "float s[]"),
])
def test_dynamic_shared_without_a_launch_takes_the_cast_element(decl, cast, size, declared):
    spec = infer(SMEM.replace("DECL", decl).replace("CAST", cast))
    assert spec.launch.shared == f"block.x * {size}"
    assert (f"shared = block.x * {size}: GUESS, the body declares extern __shared__ {declared} "
            f"but no launch passes its size") in spec.notes
    assert line_of(spec, "shared") == f"shared = block.x * {size}  # GUESS: see the notes"


@pytest.mark.parametrize("launch, shared, note", [
    ("rows<<<R, 128, C * sizeof(*out)>>>(out, inp, R, C);", "C * 4", "C * sizeof(*out)"),
    ("rows<<<R, 128, C * sizeof(inp[0])>>>(out, inp, R, C);", "C * 4", "C * sizeof(inp[0])"),
    ("dim3 block(128); size_t smem = block.x * sizeof(float);\n"
     "    rows<<<R, block, smem>>>(out, inp, R, C);", "block.x * 4", "smem"),
    ("const size_t bytes = (size_t)C * sizeof(float);\n"
     "    rows<<<R, 128, bytes, stream>>>(out, inp, R, C);", "C * 4", "bytes"),
])
def test_dynamic_shared_bytes_from_the_launch(launch, shared, note):
    source = SMEM.replace("DECL", "unsigned char smem[]").replace(
        "CAST", "float* s = reinterpret_cast<float*>(smem);") + \
        f"void go(float* out, const float* inp, int R, int C, cudaStream_t stream) {{\n" \
        f"    {launch}\n}}\n"
    spec = infer(source)
    assert spec.launch.shared == shared
    assert spec.launch.block == ("128",)
    line = source.count("\n", 0, source.index("rows<<<")) + 1
    assert f"shared = {shared}: from the launch at line {line} ('{note}')" in spec.notes
    assert line_of(spec, "shared") == f"shared = {shared}"


def test_a_pointer_reassigned_to_out_reads_out_after_writing_it():
    """``x = out + row * C`` after the exponentials are stored: the sum reads out through x,
    which follows the writes, so out stays out (not an escape, not inout) and inp is read only
    before the reassignment."""
    spec = infer("""\
__global__ void sm(float* out, const float* inp, int N, int C) {
    int row = blockIdx.x;
    const float* x = inp + row * C;
    float m = -INFINITY;
    for (int i = threadIdx.x; i < C; i += blockDim.x) m = fmaxf(m, x[i]);
    for (int i = threadIdx.x; i < C; i += blockDim.x) out[row * C + i] = expf(x[i] - m);
    __syncthreads();
    x = out + row * C;
    float s = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) s += x[i];
    for (int i = threadIdx.x; i < C; i += blockDim.x) out[row * C + i] = x[i] / s;
}
void go(float* o, const float* in, int N, int C) { sm<<<N, 128>>>(o, in, N, C); }
""")
    assert buffers(spec) == {"out": ("out", "float", "N * C", "uniform", (), None, None),
                             "inp": ("in", "float", "N * C", "uniform", (), None, None)}
    assert spec.launch.grid == ("N",)
    assert ("out: out: each read ('x[i]', line 10) follows the same thread's write of that "
            "element ('out[row * C + i]', line 6), so its initial contents are never read") \
        in spec.notes
    assert not any("escape" in n or "cannot follow" in n for n in spec.notes)


def test_a_multiple_that_the_default_size_is_not_rounds_the_size_down():
    spec = infer("""\
__global__ void k(float* y, const float* x, int n) {
    int i = blockIdx.x * 48 + threadIdx.x;
    y[i] = 2.0f * x[i];
}
void go(float* y, const float* x, int n) { k<<<(n + 47) / 48, 48>>>(y, x, n); }
""")
    assert sizes(spec) == {"n": str((1 << 24) - (1 << 24) % 48)}
    assert [(m.name, m.expr) for m in spec.multiples] == [("n", "48")]
    assert spec.launch.grid == ("ceil_div(n, 48)",)
    assert buffers(spec)["y"] == ("out", "float", "n", "uniform", (), None, None)


def test_the_grid_of_each_launching_function_is_its_own():
    """Two host functions each declare ``grid_size`` and ``grid``; the first launch of the
    kernel sees the declarations of its own function (the last ones above it)."""
    spec = infer("""\
__global__ void rowk(float* out, const float* inp, int N, int C) {
    int r = blockIdx.x;
    for (int c = threadIdx.x; c < C; c += blockDim.x) out[r * C + c] = 2.0f * inp[r * C + c];
}
void other(int M) {
    int grid_size = M * 2;
    dim3 grid(M, 7);
}
void launch(float* out, const float* inp, int N, int C, int block_size) {
    int grid_size = N;
    rowk<<<grid_size, block_size>>>(out, inp, N, C);
}
""")
    assert spec.launch.grid == ("N",)
    assert buffers(spec) == {"out": ("out", "float", "N * C", "uniform", (), None, None),
                             "inp": ("in", "float", "N * C", "uniform", (), None, None)}
    assert "grid.x = N: from the launch at line 11; the body has no bounds check along x, so " \
           "that grid and the block bound its indices" in spec.notes


def test_a_write_loop_shorter_than_the_read_loop_leaves_the_buffer_inout():
    """Written for j <= t, scaled for every j < T: elements past t keep what the buffer held."""
    spec = infer("""\
__global__ void k(float* a, const float* p, int T) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < T) {
        float* row = a + t * T;
        for (int j = 0; j <= t; j++) row[j] = expf(p[t * T + j]);
        for (int j = 0; j < T; j++) row[j] *= 0.5f;
    }
}
""")
    assert buffers(spec)["a"][0] == "inout"


@pytest.mark.parametrize("guard, noted", [
    ("if (i < n)", True),
    ("if (i >= R && i < n - R)", False),
    ("if (i >= 3 && i < n)", False),
])
def test_reads_before_element_zero_are_a_marked_guess(guard, noted):
    """``in[i + k]`` for k from -R: without a check i >= R the kernel reads before in[0]
    (the caller passes in + R); the draft says so on the buffer's line."""
    spec = infer(f"""\
#define R 3
__global__ void st(const float* in, float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    {guard} {{
        float s = 0.0f;
        for (int k = -R; k <= R; k++) s += in[i + k];
        out[i] = s;
    }}
}}
""")
    note = ("in: 'in[i + k]' (line 6) reads 3 before its element 0 where no check keeps the "
            "index at 0 or more: the kernel expects a pointer 3 into a padded buffer, which a "
            "spec cannot pass; GUESS, check it (add the check, or index from 0)")
    assert (note in spec.notes) is noted
    assert line_of(spec, "in in:").endswith("  # GUESS: see the notes") is noted


CSR_MORE = {
    "while": """\
__global__ void k(const int* row_ptr, const int* col_idx, const float* val, const float* x,
                  float* y, int rows) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows) {
        int j = row_ptr[row];
        int end = row_ptr[row + 1];
        float s = 0.0f;
        while (j < end) { s += val[j] * x[col_idx[j]]; j++; }
        y[row] = s;
    }
}
""",
    "grid-stride-ldg": """\
__global__ void k(const int* row_ptr, const int* col_idx, const float* val, const float* x,
                  float* y, int rows) {
    for (int row = blockIdx.x * blockDim.x + threadIdx.x; row < rows;
         row += gridDim.x * blockDim.x) {
        const int b = row_ptr[row], e = row_ptr[row + 1];
        float s = 0.0f;
        for (int j = b; j < e; j++) s += __ldg(&val[j]) * __ldg(&x[__ldg(&col_idx[j])]);
        y[row] = s;
    }
}
""",
    "warp-per-row-lane-mask": """\
__global__ void k(const int* row_ptr, const int* col_idx, const float* val, const float* x,
                  float* y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (row < rows) {
        int b = row_ptr[row], e = row_ptr[row + 1];
        float s = 0.0f;
        for (int j = b + lane; j < e; j += 32) s += val[j] * x[col_idx[j]];
        for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0) y[row] = s;
    }
}
""",
}


@pytest.mark.parametrize("name", sorted(CSR_MORE))
def test_csr_loops_in_other_spellings(name):
    assert buffers(infer(CSR_MORE[name])) == CSR_EXPECTED


def test_a_grid_local_of_another_function_is_not_read():
    """``grid_size`` is a parameter of the launching function; the ``int grid_size = 7`` of the
    function above is another variable, so the grid is a size of its own (a default, not 7:
    no call of ``launch`` passes a value)."""
    spec = infer("""\
__global__ void rowk(float* out, const float* inp, int N, int C) {
    int r = blockIdx.x;
    for (int c = threadIdx.x; c < C; c += blockDim.x) out[r * C + c] = 2.0f * inp[r * C + c];
}
void other() {
    int grid_size = 7;
}
void launch(float* out, const float* inp, int N, int C, int grid_size) {
    rowk<<<grid_size, 256>>>(out, inp, N, C);
}
""")
    assert spec.launch.grid == ("grid_size",)
    assert sizes(spec) == {"grid_size": "4096", "C": "4096"}
    assert spec_fields.buffers(spec, "length") == {"out": ("C * grid_size",),
                                                   "inp": ("C * grid_size",)}
    assert ("grid.x = grid_size: from the launch at line 9; the body has no bounds check along "
            "x, so that grid and the block bound its indices") in spec.notes
    assert "sizes are defaults (grid_size = 4096, C = 4096): set them to your problem" \
        in spec.notes
    assert line_of(spec, "grid") == "grid = grid_size"
