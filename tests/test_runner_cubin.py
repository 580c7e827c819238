"""Kernel symbols in real cubins built by nvcc here (no GPU needed)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpu_runner.cubin import (CubinError, KernelNotFoundError, find_kernel_symbol,
                              list_functions, list_kernels)

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

SOURCE = r"""
__device__ __noinline__ float twice(float v) { return 2.0f * v; }
__global__ void plain(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = twice(y[i]); }
extern "C" __global__ void c_linkage(float* y, int n) { if (threadIdx.x < n) y[threadIdx.x] = 1; }
namespace ops {
__global__ void saxpy(int n, float a, const float* x, float* y)
{ int i = threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
}
template <typename T> __global__ void scale(T* y, int n) { if (threadIdx.x < n) y[threadIdx.x] *= 2; }
template __global__ void scale<float>(float*, int);
"""


@pytest.fixture(scope="module")
def cubin(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("cubin")
    (d / "k.cu").write_text(SOURCE)
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(d / "k.cubin"), str(d / "k.cu")],
                   check=True, capture_output=True)
    return (d / "k.cubin").read_bytes()


def test_lists_exactly_the_kernels(cubin):
    kernels = {k.name: k.symbol for k in list_kernels(cubin)}
    assert kernels == {"plain": "_Z5plainPfi", "c_linkage": "c_linkage",
                       "ops::saxpy": "_ZN3ops5saxpyEifPKfPf", "scale<float>": "_Z5scaleIfEvPT_i"}


def test_device_function_is_a_function_but_not_a_kernel(cubin):
    funcs = list_functions(cubin)
    helpers = [f for f in funcs if not f.entry]
    assert len(helpers) == 1 and "twice" in helpers[0].symbol
    assert all(f.size > 0 for f in funcs)


@pytest.mark.parametrize("name, symbol", [
    ("plain", "_Z5plainPfi"),
    ("c_linkage", "c_linkage"),
    ("ops::saxpy", "_ZN3ops5saxpyEifPKfPf"),
    ("saxpy", "_ZN3ops5saxpyEifPKfPf"),
    ("scale<float>", "_Z5scaleIfEvPT_i"),
    ("scale", "_Z5scaleIfEvPT_i"),
])
def test_find_kernel_symbol(cubin, name, symbol):
    assert find_kernel_symbol(cubin, name) == symbol


def test_missing_kernel_lists_what_is_there(cubin):
    with pytest.raises(KernelNotFoundError) as e:
        find_kernel_symbol(cubin, "twice")  # a device function, not a kernel
    msg = str(e.value)
    assert msg.startswith("kernel 'twice' not found in the compiled cubin; kernels found: ")
    for name in ("plain (_Z5plainPfi)", "c_linkage (c_linkage)", "ops::saxpy", "scale<float>"):
        assert name in msg
    assert len(e.value.found) == 4


def test_wrong_namespace_is_not_found(cubin):
    with pytest.raises(KernelNotFoundError, match="kernel 'blas::saxpy' not found"):
        find_kernel_symbol(cubin, "blas::saxpy")


def test_ambiguous_template_name(tmp_path):
    src = tmp_path / "t.cu"
    src.write_text("template <typename T> __global__ void k(T* y) { y[0] = 1; }\n"
                   "template __global__ void k<float>(float*);\n"
                   "template __global__ void k<double>(double*);\n")
    out = tmp_path / "t.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(out), str(src)], check=True,
                   capture_output=True)
    data = out.read_bytes()
    with pytest.raises(KernelNotFoundError, match=r"'k' is ambiguous.*k<double>.*k<float>"):
        find_kernel_symbol(data, "k")
    assert find_kernel_symbol(data, "k<double>") == "_Z1kIdEvPT_"


def test_not_an_elf():
    with pytest.raises(CubinError, match=r"expected an ELF cubin .* found b'\\x00asm'"):
        list_functions(b"\0asm" + bytes(100))


def test_32_bit_elf_rejected():
    data = b"\x7fELF" + bytes([1, 1]) + bytes(100)
    with pytest.raises(CubinError, match="expected a 64-bit little-endian ELF .* class 1"):
        list_functions(data)


def test_truncated_cubin(cubin):
    with pytest.raises(CubinError, match="run past the end"):
        list_functions(cubin[:200])


def test_template_instances_with_integer_arguments(tmp_path):
    """``kernel reduce<float, 256>`` finds the instance whose demangled name is
    ``reduce<float, 256u>`` (an unsigned non-type parameter), and only that one."""
    src = tmp_path / "r.cu"
    src.write_text("template <typename T, unsigned B> __global__ void reduce(T* y) "
                   "{ y[0] = B; }\n"
                   "template __global__ void reduce<float, 256>(float*);\n"
                   "template __global__ void reduce<float, 128>(float*);\n"
                   "template __global__ void reduce<int, 256>(int*);\n")
    out = tmp_path / "r.cubin"
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(out), str(src)], check=True,
                   capture_output=True)
    data = out.read_bytes()
    assert find_kernel_symbol(data, "reduce<float, 256>") == "_Z6reduceIfLj256EEvPT_"
    assert find_kernel_symbol(data, "reduce<int,256u>") == "_Z6reduceIiLj256EEvPT_"
    with pytest.raises(KernelNotFoundError, match=r"'reduce' is ambiguous"):
        find_kernel_symbol(data, "reduce")
