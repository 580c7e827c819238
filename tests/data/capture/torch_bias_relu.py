"""A PyTorch program calling a CUDA kernel of its own (bias_relu_kernel.cu).

The extension is built with ``torch.utils.cpp_extension.load_inline`` when ninja is available;
otherwise (load_inline needs ninja) the same wrapper is compiled with nvcc into a shared
library and called through ctypes on the tensors' device pointers. Prints which way it was
built and a checksum of the result (sha256 of its bytes), so a run under ``cudalens capture``
can be compared with a plain run.
"""

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.utils.cpp_extension as ext

HERE = Path(__file__).resolve().parent
KERNEL = (HERE / "bias_relu_kernel.cu").read_text()
LAUNCH = """
extern "C" void launch_bias_relu(const float* x, const float* bias, float* y, int n, int cols,
                                 void* stream) {
    bias_relu<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>(x, bias, y, n, cols);
}
"""
TORCH_WRAPPER = """
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
extern "C" void launch_bias_relu(const float*, const float*, float*, int, int, void*);
torch::Tensor bias_relu_op(torch::Tensor x, torch::Tensor bias) {
    auto y = torch::empty_like(x);
    launch_bias_relu(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                     (int)x.numel(), (int)bias.numel(),
                     (void*)c10::cuda::getCurrentCUDAStream().stream());
    return y;
}
"""


def build():
    if ext.is_ninja_available():
        mod = ext.load_inline(name="cudalens_capture_bias_relu", cpp_sources=TORCH_WRAPPER,
                              cuda_sources=KERNEL + LAUNCH, functions=["bias_relu_op"],
                              verbose=False)
        return "load_inline", lambda x, b: mod.bias_relu_op(x, b)
    out = Path(tempfile.mkdtemp()) / "libbias_relu.so"
    src = out.with_suffix(".cu")
    src.write_text(KERNEL + LAUNCH)
    subprocess.run(["nvcc", "-O2", "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(src)],
                   check=True)
    lib = ctypes.CDLL(str(out))

    def call(x, b):
        y = torch.empty_like(x)
        stream = torch.cuda.current_stream().cuda_stream
        lib.launch_bias_relu(ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(b.data_ptr()),
                             ctypes.c_void_p(y.data_ptr()), ctypes.c_int(x.numel()),
                             ctypes.c_int(b.numel()), ctypes.c_void_p(stream))
        return y
    return "nvcc+ctypes (no ninja)", call


def main():
    how, op = build()
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, cols = 3000, 768
    x = torch.randn(rows, cols, device="cuda", generator=gen)
    bias = torch.randn(cols, device="cuda", generator=gen)
    for _ in range(2):
        y = op(x, bias)
    torch.cuda.synchronize()
    want = torch.relu(x + bias)
    assert torch.equal(y, want), "bias_relu disagrees with torch.relu(x + bias)"
    print(f"built with {how}")
    print("checksum", hashlib.sha256(y.cpu().numpy().tobytes()).hexdigest()[:16])


if __name__ == "__main__":
    sys.exit(main())
