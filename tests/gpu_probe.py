"""Whether this machine has a usable NVIDIA GPU (pycuda loads and finds a device), for tests
that only make sense without one (they check what cudalens says when no GPU is there)."""

from __future__ import annotations


def gpu_present() -> bool:
    try:
        import pycuda.driver as drv

        drv.init()
        return drv.Device.count() > 0
    except Exception:  # noqa: BLE001 - no pycuda, no driver, no device: all mean "none"
        return False
