"""Literal block shapes at launch sites and in __launch_bounds__."""

from __future__ import annotations

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec.block_shape import block_from_file, const_int, literal_block

SOURCE = """\
#define TILE 16
constexpr int kThreads = 128;
static const unsigned WIDTH{64};
dim3 shared_shape(8, 4, 1);
"""


@pytest.mark.parametrize("text, value", [
    ("256", 256), ("0x100", 256), ("256u", 256), ("(128)", 128),
    ("TILE", 16), ("kThreads", 128), ("WIDTH", 64), ("n", None), ("n + 1", None),
])
def test_const_int(text, value):
    assert const_int(text, SOURCE) == value


@pytest.mark.parametrize("text, shape", [
    ("256", (256,)), ("dim3(32, 8)", (32, 8)), ("dim3(TILE, TILE)", (16, 16)),
    ("{32, 4}", (32, 4)), ("dim3(128, 1, 1)", (128,)), ("shared_shape", (8, 4)),
    ("kThreads", (128,)), ("threads", None), ("dim3(n, 1)", None), ("dim3(0)", None),
])
def test_literal_block(text, shape):
    assert literal_block(text, SOURCE) == shape


def test_block_from_file_prefers_a_launch_then_launch_bounds():
    source = """\
__global__ void __launch_bounds__(512) k(float* x) { x[threadIdx.x] = 0; }
void host(float* x, int n, int t) {
    k<<<n, t>>>(x);
    k<<<n, dim3(64, 2)>>>(x);
}
"""
    sf = parse_source(source, "k.cu")
    kernel = sf.kernels[0]
    assert block_from_file(kernel, sf.launch_sites, source) == ((64, 2), "the launch at line 4")
    assert block_from_file(kernel, (), source) == ((512,), "__launch_bounds__(512)")
    bare = parse_source("__global__ void k(float* x) {}\n", "k.cu").kernels[0]
    assert block_from_file(bare, (), "") is None
