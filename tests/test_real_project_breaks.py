"""Findings of breaking cudalens with kernels shaped like real projects', each fixed: a bf16
B*T*C draft of 2^34 elements (int overflow), a template drafted without an instance in the
file, a kernel whose loop steps by a tile (block taken from the tile; the launch-configuration
pass leaves it), optimize reporting a refused ``[build]`` table before any work, and ``check``
on a file without kernels. (``cudalens capture`` without a CUDA driver: test_capture.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from optimizer_fixtures import context_with_spec
from cudalens.optimizer.passes import launch_config
from cudalens.source.parser import parse_source
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import evaluate
from cudalens.spec.infer import MAX_DRAFT_ELEMENTS, infer_spec
from cudalens.spec.model import BufferDecl
from cudalens.spec.parser import parse_spec
from cudalens.spec.resolve import build_problem

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

RESIDUAL = """#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;

__global__ void residual_forward(floatX* out, const floatX* inp1, const floatX* inp2,
                                 int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < B * T * C) {
        out[idx] = (floatX)((float)inp1[idx] + (float)inp2[idx]);
    }
}
"""

SPEC_2_34 = """kernel residual_forward
size B = 4096
size T = 4096
size C = 1024
out out: bfloat16[B * T * C]
in inp1: bfloat16[B * T * C]
in inp2: bfloat16[B * T * C]
scalar B: {t} = B
scalar T: {t} = T
scalar C: {t} = C
block = 256
grid = ceil_div(B * T * C, block.x)
"""


def _draft(text: str, **kw):
    source = parse_source(text)
    return infer_spec(source.kernels[0], text, **kw)


# -- bf16 B, T, C: 2^34 elements ---------------------------------------------------------

def test_a_b_t_c_draft_keeps_every_buffer_within_what_int_indexes():
    spec = _draft(RESIDUAL)
    sizes = {s.name: int(s.expr) for s in spec.sizes}
    assert sizes == {"B": 256, "T": 512, "C": 512}
    lengths = {p.name: evaluate(p.length, sizes) for p in spec.params
               if isinstance(p, BufferDecl)}
    assert lengths == {"out": 1 << 26, "inp1": 1 << 26, "inp2": 1 << 26}
    assert MAX_DRAFT_ELEMENTS == 1 << 26
    assert ("sizes are defaults (B = 256, T = 512, C = 512): set them to your problem; made "
            "smaller so that no buffer has more than 67,108,864 elements (B * T * C = "
            "17,179,869,184, which would overflow the kernel's 32-bit int indices)") in spec.notes
    build_problem(spec, parse_source(RESIDUAL).kernels[0])  # the draft resolves


def test_a_spec_whose_int_sizes_overflow_is_refused_at_the_buffer_line():
    kernel = parse_source(RESIDUAL).kernels[0]
    spec = parse_spec(SPEC_2_34.format(t="int"), "residual.cu.spec")["residual_forward"]
    with pytest.raises(SpecError) as info:
        build_problem(spec, kernel)
    assert str(info.value) == (
        "residual.cu.spec:5: expected out: bfloat16[B * T * C] to have at most 2147483647 "
        "elements, found 17179869184 (B = 4096, T = 4096, C = 1024): the kernel takes B, T, C "
        "as 32-bit int, so its index arithmetic up to B * T * C overflows int; choose smaller "
        "sizes, or make the kernel's sizes and indices 64-bit (size_t, long long) in the "
        "nominal run (B=4096, T=4096, C=1024)")


def test_the_same_lengths_with_64_bit_sizes_are_not_refused():
    text = RESIDUAL.replace("int B, int T, int C", "long B, long T, long C")
    kernel = parse_source(text).kernels[0]
    spec = parse_spec(SPEC_2_34.format(t="int64"), "residual.cu.spec")["residual_forward"]
    problem = build_problem(spec, kernel)
    assert [a.length for a in problem.cases[0].args[:3]] == [1 << 34] * 3


# -- template kernels without an instance in the file -----------------------------------

REDUCE = """template <typename T, int BLOCK>
__global__ void reduce0(const T* in, T* out, int n) {
    __shared__ T buf[BLOCK];
    int i = blockIdx.x * BLOCK + threadIdx.x;
    buf[threadIdx.x] = i < n ? in[i] : T(0);
    __syncthreads();
    if (threadIdx.x == 0) { T s = 0; for (int k = 0; k < BLOCK; ++k) s += buf[k]; out[blockIdx.x] = s; }
}
"""


def test_a_template_without_an_instance_is_drafted_for_a_named_guessed_instance():
    spec = _draft(REDUCE)
    assert spec.kernel == "reduce0<float, 256>"
    assert spec.notes[0] == (
        "template reduce0: no instance found in the file; drafted for reduce0<float, 256> "
        "(T = float, BLOCK = 256): GUESS, confirm the arguments, or name the instance with "
        "--kernel 'reduce0<ARGS>'; the file must instantiate it (template __global__ void "
        "reduce0<float, 256>(...);) for the runner to find it")
    assert "block 256: template argument BLOCK = 256 of reduce0<float, 256>" in spec.notes
    assert spec.launch.block == ("256",) and spec.launch.grid == ("ceil_div(n, 256)",)


def test_an_asked_instance_keeps_its_arguments():
    spec = _draft(REDUCE, instance="reduce0<double, 128>")
    assert spec.kernel == "reduce0<double, 128>"
    assert "block 128: template argument BLOCK = 128 of reduce0<double, 128>" in spec.notes
    assert [p.type for p in spec.params if isinstance(p, BufferDecl)] == ["double", "double"]


# -- loops stepping by a tile ------------------------------------------------------------

TILED = """#define TILE 128

__global__ void scale_tiles(const float* in, float* out, int n, float s)
{
    int start = blockIdx.x * TILE * 4;
    for (int i = start + threadIdx.x; i < start + TILE * 4 && i < n; i += TILE) {
        out[i] = s * in[i];
    }
}
"""


def test_a_tile_stepped_kernel_is_drafted_with_the_tile_as_block():
    spec = _draft(TILED)
    assert spec.launch.block == ("128",)
    assert ("block 128: the loop at line 6 steps i by TILE (= 128) from threadIdx.x, so the "
            "kernel covers its elements with exactly 128 threads") in spec.notes


def test_launch_config_leaves_the_block_of_a_tile_stepped_kernel():
    spec = ("kernel scale_tiles\nsize n = 1 << 20\nscalar n: int = n\nscalar s: float = 2\n"
            "in in: float[n]\nout out: float[n]\nblock = 256\ngrid = ceil_div(n, block.x * 4)\n")
    ctx = context_with_spec(TILED, "scale_tiles", spec)
    # the grid's constant tile is the first reason (line 5) ...
    assert launch_config.check(ctx) == (
        "'blockIdx.x * TILE * 4' (line 5) tiles the grid by TILE (= 128), not by blockDim.x: "
        "each block covers a fixed 128-wide tile along x, so another block would leave "
        "elements uncovered or cover them twice")
    assert launch_config.parameter_space(ctx) == ()
    # ... and with the grid tiled by the block, the loop's constant step still refuses
    block_grid = TILED.replace("blockIdx.x * TILE * 4", "blockIdx.x * blockDim.x * 4")
    assert launch_config.check(context_with_spec(block_grid, "scale_tiles", spec)) == (
        "the loop at line 6 steps i by TILE (= 128) from threadIdx.x, not by blockDim.x: the "
        "kernel covers its elements with exactly 128 threads, so the block cannot change")
    # stepping by blockDim.x over a grid tiled by the block, the block is free: searched
    free = block_grid.replace("i += TILE", "i += blockDim.x").replace("TILE * 4 &&",
                                                                      "blockDim.x * 4 &&")
    assert launch_config.check(context_with_spec(free, "scale_tiles", spec)) is None


# -- the command line --------------------------------------------------------------------

def _cli(args, cwd, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "cudalens", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=240, check=False)


def test_optimize_reports_a_refused_build_table_before_any_work(tmp_path):
    shutil.copy(ROOT / "examples" / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    (tmp_path / "cudalens.toml").write_text('[build]\noptions = ["-Xcompiler", "-fopenmp"]\n')
    done = _cli(["optimize", "saxpy.cu"], tmp_path,
                {"CUDALENS_RUNNER_URL": "http://127.0.0.1:9",
                 "CUDALENS_RUNNER_TOKEN": "break-test-token-0123456789"})
    assert done.returncode == 2, done.stderr
    err = " ".join(done.stderr.split())
    assert err == (f"error: {tmp_path / 'cudalens.toml'} [build]: options: '-Xcompiler' is not "
                   f"an option cudalens passes from a project file; accepted: "
                   f"--expt-relaxed-constexpr, --extended-lambda, -use_fast_math, -ftz=/-prec-div="
                   f"/-prec-sqrt=/-fmad= true|false, -restrict, -extra-device-vectorization "
                   f"(folders go in include_dirs, macros in defines)")
    assert done.stdout == ""


@needs_nvcc
@pytest.mark.parametrize("text, hint", [
    ("", ""),
    ("int twice(int x) { return 2 * x; }\n", ""),
    (REDUCE, " compiled: the template kernel(s) reduce0 are compiled only where instantiated "
             "(add template __global__ void reduce0<ARGS>(...);)"),
])
def test_check_of_a_file_without_kernels_says_so_and_fails(tmp_path, text, hint):
    (tmp_path / "k.cu").write_text(text)
    done = _cli(["check", "k.cu"], tmp_path)
    assert done.returncode == 2
    assert " ".join(done.stderr.split()) == (
        f"error: k.cu: expected at least one __global__ kernel, found none{hint}")
    assert done.stdout == ""
