"""Drafts the new-user report showed to fault or refuse (its R1, R2, R3, R8 and R9,
reproduced here in kernels of the shapes PolyBench, Rodinia and hand-written code take):
bounds behind macros that are no integer (``#define BOUND PICK(N, m)``, ``IN_RANGE(x, 0,
cols - 1)``, PolyBench's ``_PB_NX`` through ``#ifdef``/``#else`` definitions), a 2D launch's
``dim3 grid`` over a body with no bounds check, a parameter named ``n`` that the host passes
its own value, a drafted grid of 0 blocks, and a pointer to a struct. Each test asserts the
drafted fields and notes, and that the draft is a valid spec for its kernel (through its
text form), as tests/test_spec_drafts_newuser.py checks."""

from __future__ import annotations

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.defines import active_text, file_constants, function_macros, object_macros
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.output_lengths import check_lengths
from cudalens.spec.parser import parse_spec, validate
from cudalens.spec.resolve import build_problem
from cudalens.spec.writer import format_spec


def infer(source: str, name: str | None = None, headers: tuple[str, ...] = ()) -> KernelSpec:
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0] if name is None else sf.kernel(name)
    spec = infer_spec(kernel, source, sf.launch_sites, headers=headers)
    context = "\n".join(headers + (source,))
    reparsed = parse_spec(format_spec(spec), "draft.spec", file_constants(context))[spec.kernel]
    validate(reparsed, kernel, source)
    check_lengths(reparsed, kernel, source)
    build_problem(reparsed, kernel)
    return spec


def buffers(spec: KernelSpec) -> dict[str, tuple]:
    return {p.name: (p.role, p.length) for p in spec.params if isinstance(p, BufferDecl)}


def scalars(spec: KernelSpec) -> dict[str, str]:
    return {p.name: p.expr for p in spec.params if isinstance(p, ScalarDecl)}


def sizes(spec: KernelSpec) -> dict[str, str]:
    return {s.name: s.expr for s in spec.sizes}


# -- R3: a parameter named n keeps the value the host passes ---------------------------------

SCALE_BY_N = """\
#define N 4096
__global__ void scale_by(int n, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = y[i] * n;
}
void host(int n, float *y, int blocks) { scale_by<<<blocks_for(n), 256>>>(n, y); }
int main() { int n = N; host(n, 0, 16); return 0; }
"""


def test_a_parameter_named_n_takes_the_hosts_value_not_the_default_size():
    """Before, ``n`` was tied to the invented size ``n = 1 << 24`` with no note, while the
    same kernel with the parameter named ``m`` drafted ``scalar m = 4096``."""
    spec = infer(SCALE_BY_N)
    assert scalars(spec) == {"n": "4096"}
    assert sizes(spec) == {"n_elements": "1 << 24"}
    assert buffers(spec) == {"y": ("inout", "n_elements")}
    assert "scalar n = 4096: from the host code (the launch at line 6 passes 'n' = N)" \
        in spec.notes
    assert "size n_elements = 1 << 24: no integer parameter bounds the kernel's indices" \
        in spec.notes
    renamed = infer(SCALE_BY_N.replace("int n", "int m").replace("(n,", "(m,")
                    .replace("* n;", "* m;"))
    assert scalars(renamed) == {"m": "4096"}


def test_a_grid_from_the_launching_functions_parameter_is_a_size_with_the_callers_value():
    """With ``<<<blocks, 256>>>`` (blocks a parameter of ``host``, not of the kernel) the grid
    is a size, 16 from the call in main, and y is the 4096 elements the launch covers."""
    spec = infer(SCALE_BY_N.replace("blocks_for(n)", "blocks"))
    assert scalars(spec) == {"n": "4096"}
    assert sizes(spec) == {"blocks": "16"}
    assert buffers(spec) == {"y": ("inout", "256 * blocks")}
    assert spec.launch.grid == ("blocks",)
    assert ("size blocks = 16: from the host code (the launch at line 6 takes its grid from "
            "'blocks', which the call at line 7 passes as '16')") in spec.notes
    assert "scalar n = 4096: from the host code (the launch at line 6 passes 'n' = N)" \
        in spec.notes


def test_a_parameter_named_n_that_no_launch_gives_a_value_is_still_the_size():
    spec = infer(SCALE_BY_N.replace("int main() { int n = N; host(n, 0, 16); return 0; }\n",
                                    ""))
    assert scalars(spec) == {"n": "n"}
    assert sizes(spec) == {"n": "1 << 24"}


# -- R1: bounds behind macros ------------------------------------------------------------------

ROWSUM_PICK = """\
#define PICK(x, y) y
#define BOUND PICK(N, n)
#define N 4096
__global__ void rowsum(int n, const float *a, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < BOUND) { float s = 0.0f; for (int j = 0; j < BOUND; j++) s += a[i * N + j]; y[i] = s; }
}
void host(int n, const float *a, float *y) { rowsum<<<(N + 255) / 256, 256>>>(n, a, y); }
int main() { int n = N; host(n, 0, 0); return 0; }
"""


def test_a_guard_and_a_loop_bound_behind_an_object_macro_of_a_function_macro_are_bounds():
    """``i < BOUND`` and ``j < BOUND`` with ``#define BOUND PICK(N, n)``: both bound by n
    (before: no bounds check found, every length the invented 1 << 24, n tied to it)."""
    spec = infer(ROWSUM_PICK)
    assert sizes(spec) == {"n": "4096"}
    assert scalars(spec) == {"n": "n"}
    assert buffers(spec) == {"a": ("in", "4097 * n - 4096"), "y": ("out", "n")}
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert "size n = 4096: from the host code (the launch at line 8 passes 'n' = N)" \
        in spec.notes
    assert not [n for n in spec.notes if "no bounds check" in n]


def test_a_guard_written_as_a_function_macro_bounds_its_index():
    """``if (IN_RANGE(x, 0, cols - 1))``: cols bounds x (before: ``scalar cols = 1: GUESS
    (not a bound of any index ...)`` and every length the invented n)."""
    spec = infer("""\
#define IN_RANGE(x, lo, hi) ((x) >= (lo) && (x) <= (hi))
__global__ void copy_in_range(const int *in, int *out, int cols) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    if (IN_RANGE(x, 0, cols - 1)) out[x] = in[x];
}
""")
    assert sizes(spec) == {"cols": "1 << 24"}
    assert buffers(spec) == {"in": ("in", "cols"), "out": ("out", "cols")}
    assert scalars(spec) == {"cols": "cols"}
    assert spec.launch.grid == ("ceil_div(cols, block.x)",)
    assert not [n for n in spec.notes if n.startswith("scalar cols")]


LOOP_BOUNDS_HEADER = """\
#ifndef LOOPS_H
#define LOOPS_H
# ifdef USE_SCALAR_BOUNDS
#  define LOOP_BOUND(x, y) x
# else
#  define LOOP_BOUND(x, y) y
# endif
# define NX 4096
# define NY 1024
# define _B_NX LOOP_BOUND(NX, nx)
# define _B_NY LOOP_BOUND(NY, ny)
#endif
"""


def test_bounds_through_a_headers_conditional_macro_take_the_branch_compiled():
    """PolyBench's shape: ``i < _B_NX`` with ``_B_NX`` -> ``LOOP_BOUND(NX, nx)`` and
    ``LOOP_BOUND`` defined under ``#ifdef``/``#else``: the ``#else`` one (``y``, the
    parameter) holds, since nothing defines the ``#ifdef``'s name."""
    spec = infer("""\
#include "loops.h"
__global__ void row_dot(float *A, float *x, float *tmp, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < _B_NX) {
        int j;
        for (j = 0; j < _B_NY; j++) tmp[i] += A[i * NY + j] * x[j];
    }
}
void run(float *A, float *x, float *tmp) {
    dim3 block(256), grid((NX + 255) / 256);
    row_dot<<<grid, block>>>(A, x, tmp, NX, NY);
}
""", headers=(LOOP_BOUNDS_HEADER,))
    assert sizes(spec) == {"nx": "4096", "ny": "1024"}
    assert scalars(spec) == {"nx": "nx", "ny": "ny"}
    assert buffers(spec) == {"A": ("in", "1024 * nx + ny - 1024"), "x": ("in", "ny"),
                             "tmp": ("inout", "nx")}
    assert spec.launch.grid == ("ceil_div(nx, block.x)",)


def test_active_text_blanks_the_branches_the_preprocessor_skips():
    text = "#ifdef A\nx\n#elif B\ny\n#else\nz\n#endif\n#define A\n#ifdef A\np\n#else\nq\n#endif"
    assert active_text(text).split("\n") == [
        "#ifdef A", "", "#elif B", "", "#else", "z", "#endif", "#define A", "#ifdef A", "p",
        "#else", "", "#endif"]
    assert function_macros(LOOP_BOUNDS_HEADER)["LOOP_BOUND"] == (("x", "y"), "y")
    assert object_macros(LOOP_BOUNDS_HEADER) == {"_B_NX": "LOOP_BOUND(NX, nx)",
                                                 "_B_NY": "LOOP_BOUND(NY, ny)"}


def test_row_passes_read_a_bound_behind_macros():
    """warp_per_row and block_per_row took ``BOUND`` for a name that is "not a scalar
    parameter or an integer macro"; gridstride's guard likewise."""
    from optimizer_fixtures import context_with_spec

    from cudalens.optimizer.plan import make_plan

    spec = infer(ROWSUM_PICK)
    plan = make_plan(context_with_spec(ROWSUM_PICK, "rowsum", format_spec(spec)))
    passes = {p for c in plan.candidates for p in c.passes}
    assert {"warp_per_row", "block_per_row"} <= passes, plan.not_applied
    assert not [n for n in plan.not_applied if "BOUND" in n.reason]

    scale = """\
#define PICK(x, y) y
#define LIMIT PICK(N, n)
#define N 4096
__global__ void twice(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < LIMIT) y[i] = 2.0f * x[i];
}
"""
    spec = infer(scale)
    assert buffers(spec) == {"x": ("in", "n"), "y": ("out", "n")}
    plan = make_plan(context_with_spec(scale, "twice", format_spec(spec)))
    assert "gridstride" in {p for c in plan.candidates for p in c.passes}, plan.not_applied
    assert not [n for n in plan.not_applied if "LIMIT" in n.reason]


# -- R2: a 2D launch's dim3 grid over an unchecked body ----------------------------------------

SCALE2D = """\
#define W 4096
#define H 2048
__global__ void scale2d(const float *a, float *b) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    b[y * W + x] = 2.0f * a[y * W + x];
}
void launch(const float *a, float *b) {
    dim3 block(32, 8), grid(GRID);
    scale2d<<<grid, block>>>(a, b);
}
"""


@pytest.mark.parametrize("grid", ["W / 32, H / 8",
                                  "(size_t)ceil((float)W / block.x), "
                                  "(size_t)ceil((float)H / block.y)"])
def test_a_2d_launch_of_constants_gives_the_grid_and_the_lengths(grid):
    """Before: ``grid = ceil_div(n, block.x)`` (1D) with a and b ``float[n]``, n = 1 << 24:
    x reached 1 << 24 while y < 8, writing b past its end."""
    spec = infer(SCALE2D.replace("GRID", grid))
    assert spec.launch.grid == ("128", "256")
    assert spec.launch.block == ("32", "8")
    assert buffers(spec) == {"a": ("in", "8388608"), "b": ("out", "8388608")}
    assert sizes(spec) == {}
    assert "grid.y = 256: from the launch at line 9; the body has no bounds check along y, so " \
           "that grid and the block bound its indices" in spec.notes


def test_a_2d_launch_of_ceil_casts_over_parameters_gives_the_grid():
    spec = infer("""\
__global__ void scale2d(const float *a, float *b, int nx, int ny) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    b[y * nx + x] = 2.0f * a[y * nx + x];
}
void launch(const float *a, float *b, int nx, int ny) {
    dim3 block(32, 8);
    dim3 grid((size_t)ceil((float)nx / block.x), (size_t)ceil((float)ny / block.y));
    scale2d<<<grid, block>>>(a, b, nx, ny);
}
""")
    assert spec.launch.grid == ("ceil_div(nx, 32)", "ceil_div(ny, 8)")
    assert buffers(spec) == {"a": ("in", "nx * ny"), "b": ("out", "nx * ny")}
    assert {m.name: m.expr for m in spec.multiples} == {"nx": "32", "ny": "8"}


# -- R8: never a grid of 0 blocks --------------------------------------------------------------

def test_a_launch_grid_of_0_blocks_falls_back_to_a_guessed_grid():
    """``int blockCols = cols / (BLOCK - 2)`` with the host's cols = 12: the launch's grid
    is 0 blocks, so spec exited 2 and plan refused; now a GUESS grid over cols."""
    spec = infer("""\
#define BLOCK 16
__global__ void shift_copy(const float *in, float *out, int cols) {
    int x = blockIdx.x * (BLOCK - 2) + threadIdx.x;
    out[x] = in[x];
}
void run(const float *in, float *out, int cols) {
    int blockCols = cols / (BLOCK - 2);
    dim3 grid(blockCols), block(BLOCK);
    shift_copy<<<grid, block>>>(in, out, cols);
}
int main() { int cols = 12; run(0, 0, cols); return 0; }
""")
    assert spec.launch.grid == ("ceil_div(cols, block.x)",)
    assert spec.launch.block == ("16",)
    assert sizes(spec) == {"cols": "16"}
    assert {m.name: m.expr for m in spec.multiples} == {"cols": "16"}
    assert buffers(spec) == {"in": ("in", "cols"), "out": ("out", "cols")}
    assert "grid.x = ceil_div(cols, block.x): GUESS, the grid drafted from the kernel and its " \
           "launch, 'cols / 14', is 0 at the drafted sizes (not a number of blocks >= 1), so " \
           "a grid covering cols with blocks of block.x is drafted instead; set the grid the " \
           "host launches" in spec.notes
    assert not [n for n in spec.notes if n.startswith("grid.x = cols / 14")]
    assert "grid = ceil_div(cols, block.x)  # GUESS: see the notes" in format_spec(spec)


def test_a_check_against_0_is_no_extent_of_the_grid():
    """Rodinia hotspot's ``(blkX < 0) ? -blkX : 0`` bounded blkX by 0, and the draft's grid
    along x became 0."""
    spec = infer("""\
__global__ void halo_copy(const float *in, float *out) {
    int blkX = blockIdx.x * 14 - 1;
    int first = (blkX < 0) ? -blkX : 0;
    int x = blkX + threadIdx.x;
    if (threadIdx.x >= first) out[x] = in[x];
}
""")
    assert spec.launch.grid == ("ceil_div(n, block.x)",)
    assert buffers(spec) == {"in": ("in", "n"), "out": ("out", "n")}


# -- R9: a pointer to a struct is refused, never a silent float buffer ---------------------

def test_a_pointer_to_a_struct_is_refused_at_its_parameter():
    source = """\
struct Span { int first; int count; };
__global__ void spans(const Span *s, const int *edges, int *hit, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        for (int e = s[i].first; e < s[i].first + s[i].count; e++) hit[edges[e]] = 1;
}
"""
    sf = parse_source(source, "k.cu")
    with pytest.raises(SpecError) as err:
        infer_spec(sf.kernels[0], source, sf.launch_sites)
    assert err.value.line == 2
    assert err.value.message.startswith(
        "cannot draft a spec for parameter s of spans: 'const Span *s' points to 'Span', a "
        "struct, class or union; a spec's buffer holds numbers of one type")
    assert "write the spec yourself, giving s as a buffer of its fields' number type" \
        in err.value.message
    typedef = source.replace("struct Span { int first; int count; };",
                             "typedef struct { int first; int count; } Span;")
    sf = parse_source(typedef, "k.cu")
    with pytest.raises(SpecError, match="points to 'Span'"):
        infer_spec(sf.kernels[0], typedef, sf.launch_sites)


def test_a_pointer_to_a_struct_of_another_file_is_refused_when_the_body_reads_its_fields():
    """Rodinia bfs's kernel.cu: ``Node* g_graph_nodes`` with ``struct Node`` declared in
    bfs.cu, and loop bounds read from ``g_graph_nodes[tid].starting``; before, a float
    buffer whose bit patterns became loop bounds."""
    source = """\
__global__ void visit(Node *nodes, const int *edges, int *cost, int count) {
    int tid = blockIdx.x * 256 + threadIdx.x;
    if (tid < count)
        for (int i = nodes[tid].starting; i < nodes[tid].starting + nodes[tid].no_of_edges; i++)
            cost[edges[i]] = cost[tid] + 1;
}
"""
    sf = parse_source(source, "k.cu")
    with pytest.raises(SpecError) as err:
        infer_spec(sf.kernels[0], source, sf.launch_sites)
    assert err.value.line == 1
    assert err.value.message.startswith(
        "cannot draft a spec for parameter nodes of visit: 'Node *nodes' points to 'Node', "
        "which this file does not declare, and the body reads a field of its elements "
        "('nodes[tid].starting'), so it is a struct, class or union")
    plain = source.replace("Node *nodes", "Weight *nodes").replace(
        "for (int i = nodes[tid].starting; i < nodes[tid].starting + nodes[tid].no_of_edges; "
        "i++)\n            cost[edges[i]] = cost[tid] + 1;", "cost[tid] = nodes[tid];")
    spec = infer(plain)  # an unknown type read whole is still drafted, with its note
    assert "nodes: element type 'Weight' unknown, assumed float" in spec.notes


def test_a_project_header_included_through_dotdot_is_read_for_the_draft(tmp_path):
    """PolyBench includes ``"../../common/polybench.h"``: the draft reads the header, inside
    the project, so ``_B_NX`` expands to the parameter ``nx``; the runner's request carries it
    at its relative place (``request_files``: the kernel at ``rows/row.cu``)."""
    from cudalens.build.headers import request_files
    from cudalens.build.project import build_for
    from cudalens.target import load_target

    root = tmp_path / "suite"
    (root / ".git").mkdir(parents=True)
    (root / "cudalens.toml").write_text("[build]\n")
    (root / "common").mkdir()
    (root / "common" / "bounds.h").write_text(LOOP_BOUNDS_HEADER)
    (root / "rows").mkdir()
    kernel = root / "rows" / "row.cu"
    kernel.write_text("""\
#include "../common/bounds.h"
__global__ void row_sum(const float *A, float *out, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < _B_NX) {
        float s = 0.0f;
        for (int j = 0; j < _B_NY; j++) s += A[i * NY + j];
        out[i] = s;
    }
}
void run(const float *A, float *out) { row_sum<<<(NX + 255) / 256, 256>>>(A, out, NX, NY); }
""")
    spec = load_target(kernel).spec
    assert sizes(spec) == {"nx": "4096", "ny": "1024"}
    assert buffers(spec) == {"A": ("in", "1024 * nx + ny - 1024"), "out": ("out", "nx")}
    # and the runner receives it at its place: the kernel at its own path under the project
    sent = request_files(kernel, kernel.read_text(), build_for(kernel))
    assert sent.source_path == "rows/row.cu"
    assert sent.files == {"common/bounds.h": LOOP_BOUNDS_HEADER}
