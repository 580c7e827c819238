"""The 16-byte kernels the copy bandwidth is measured with (``copy_bandwidth``, ``device``)
and the device-attribute read that sizes their buffers. Kept apart from both so that neither
imports the other (docs/architecture.md, "No cycles").
"""

from __future__ import annotations


def attribute(drv, device, name: str, default: int = 0) -> int:
    """Device attribute ``name`` (a ``pycuda.driver.device_attribute`` member), or
    ``default`` when this driver or pycuda does not know it."""
    member = getattr(drv.device_attribute, name, None)
    if member is None:
        return default
    try:
        return int(device.get_attribute(member))
    except drv.Error:
        return default


COPY_KERNEL_SOURCE = r"""
extern "C" __global__ void cudalens_copy16(const int4* __restrict__ src, int4* __restrict__ dst,
                                           unsigned long long count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < count) dst[i] = src[i];
}

// Two 16-byte reads per 16-byte write (vector add: saxpy's mix).
extern "C" __global__ void cudalens_mix_add(const float4* __restrict__ a,
                                            const float4* __restrict__ b,
                                            float4* __restrict__ c, unsigned long long count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < count) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}

// 16-byte reads only: the store depends on the data and never happens for the 1.0f the buffer
// holds, so the loads cannot be dropped.
extern "C" __global__ void cudalens_mix_read(const float4* __restrict__ a, float* __restrict__ out,
                                             unsigned long long count)
{
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < count) {
        float4 x = a[i];
        if (x.x + x.y + x.z + x.w == -1.0f) out[0] = x.x;
    }
}
"""
MIX_KERNELS = ("cudalens_copy16", "cudalens_mix_add", "cudalens_mix_read")


def copy_kernel(session, symbol: str = "cudalens_copy16"):
    """A kernel of ``COPY_KERNEL_SOURCE`` (default: the 16-byte copy) as a launchable function,
    or None when it does not compile."""
    from pycuda.compiler import compile as nvcc_compile  # noqa: PLC0415 (optional dependency)

    from gpu_runner.cubin import find_kernel_symbol

    major, minor = session.device.compute_capability()
    try:
        cubin = nvcc_compile(COPY_KERNEL_SOURCE, no_extern_c=True, arch=f"sm_{major}{minor}")
        return session.load(cubin, find_kernel_symbol(cubin, symbol))
    except Exception:  # noqa: BLE001 - the driver's copy alone still gives a ceiling
        return None
