"""Launching one loaded kernel on a case's device buffers.

The launch configuration is checked against the kernel's own limits first, so a block the
kernel cannot run (``__launch_bounds__``, too many registers) is reported in words rather than
as the driver's "too many resources requested". Dynamic shared memory above the default 48 KiB
is opted into with ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`` (CUDA Programming Guide,
"Shared Memory": allocations above 48 KB per block need that explicit opt-in).
"""

from __future__ import annotations

from gpu_runner.buffers import DeviceBuffers
from gpu_runner.problem import Launch
from gpu_runner.session import LaunchFailure

DEFAULT_DYNAMIC_SHARED = 48 * 1024


def launch_kernel(drv, function, buffers: DeviceBuffers, launch: Launch, stream) -> None:
    """Enqueue ``function`` on ``stream`` with ``launch`` and the buffers' arguments.

    Raises ``LaunchFailure`` when the block exceeds the kernel's thread limit, when the shared
    memory cannot be granted, or when the driver rejects the launch.
    """
    limit = function.get_attribute(drv.function_attribute.MAX_THREADS_PER_BLOCK)
    if launch.threads_per_block > limit:
        raise LaunchFailure(
            f"block {launch.block} has {launch.threads_per_block} threads, but this kernel can "
            f"run at most {limit} per block (its registers or __launch_bounds__ limit it)")
    try:
        if launch.shared_bytes > DEFAULT_DYNAMIC_SHARED:
            function.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   launch.shared_bytes)
        function(*buffers.kernel_args(), grid=tuple(launch.grid), block=tuple(launch.block),
                 shared=launch.shared_bytes, stream=stream)
    except drv.Error as e:
        raise LaunchFailure(f"launch with grid {launch.grid}, block {launch.block}, "
                            f"{launch.shared_bytes} bytes of dynamic shared memory failed: {e}") from e
