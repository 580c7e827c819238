"""The runner's hold on one GPU: pycuda, a CUDA context, a stream, and what faults do to it.

pycuda is imported here and only when a ``GpuSession`` is made, so the rest of the package
imports without it.

Faults. A launch the driver rejects (too many threads, too much shared memory) leaves the
context usable. A kernel that faults (illegal or misaligned address, trap, assert) does not:
CUDA documents that such an error "leaves the process in an inconsistent state and any further
CUDA work will return the same error. To continue using CUDA, the process must be terminated
and relaunched" (CUDA Runtime API, ``cudaErrorIllegalAddress``). Seen on an H200 with driver
580.159.04: after an illegal address, even ``cuCtxCreate`` of a fresh context in the same process
failed with that error. So after every launch failure ``after_failure`` probes the context; if
the probe fails too, the session is *wedged*: it refuses further work (``check_usable``) and
the runner reports the remaining candidates as not verified. A kernel that never finishes
cannot be stopped from inside the process either: ``wait`` reports it (``KernelTimeout``) and
wedges the session. Only a new process gets the GPU back; isolating candidates in worker
processes is the cure (a later issue).

A session's context is current only inside ``with session.active():``, so several sessions
(and other CUDA users) can share a thread. Use a session from the thread that made it: pycuda
destroys a context only from its creating thread.
"""

from __future__ import annotations

import hashlib
import shlex
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

def gpu_install_hint() -> str:
    """The command that installs pycuda for this copy of cudalens: ``pip install -e
    '/path/to/checkout[gpu]'`` when it runs from a checkout (a ``pyproject.toml`` beside the
    package; works from any directory), else ``pip install pycuda`` (cudalens is not on
    PyPI, so ``cudalens[gpu]`` names nothing there)."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        return f"pip install -e {shlex.quote(f'{root}[gpu]')}"
    return "pip install pycuda"


GPU_EXTRA = gpu_install_hint()


class NoGpuError(RuntimeError):
    """No usable GPU: pycuda is missing, the CUDA driver does not load, or no device is there."""


class LaunchFailure(RuntimeError):
    """A launch was rejected or the kernel faulted; the message is the CUDA error."""


class KernelTimeout(RuntimeError):
    """A kernel did not finish within the allowed time; the session is wedged."""


def _need(what: str, detail: str) -> NoGpuError:
    return NoGpuError(
        f"{what}: {detail}. cudalens runs kernels on an NVIDIA GPU: it needs the GPU, its driver "
        f"(libcuda), and pycuda ({GPU_EXTRA}).")


def import_driver():
    """``pycuda.driver``, initialised. Raises ``NoGpuError`` saying what is missing."""
    try:
        import pycuda.driver as drv  # noqa: PLC0415 (optional dependency, imported lazily)
    except ImportError as e:
        raise _need("pycuda is not installed or does not load", str(e)) from e
    except OSError as e:  # libcuda.so missing
        raise _need("the CUDA driver library does not load", str(e)) from e
    try:
        drv.init()
        count = drv.Device.count()
    except drv.Error as e:
        raise _need("the CUDA driver found no usable GPU", str(e)) from e
    if count == 0:
        raise _need("no CUDA device is visible", "cuDeviceGetCount returned 0")
    return drv


class GpuSession:
    """One CUDA context and stream on device ``device_index``.

    Raises ``NoGpuError`` when pycuda, the driver or the device is missing, and ``ValueError``
    for an index past the device count.
    """

    def __init__(self, device_index: int = 0):
        self.drv = import_driver()
        count = self.drv.Device.count()
        if not 0 <= device_index < count:
            raise ValueError(f"device index {device_index} out of range: {count} CUDA device(s)")
        self.device_index = device_index
        self.device = self.drv.Device(device_index)
        self.wedged = ""  # why the session can no longer be used, when it cannot
        self._depth = 0
        self._functions: dict[tuple[str, str], object] = {}
        self._modules: list[object] = []
        self._retained: list[object] = []
        self.ctx = self.device.make_context()
        try:
            self.stream = self.drv.Stream()
        finally:
            self.drv.Context.pop()

    @contextmanager
    def active(self) -> Iterator["GpuSession"]:
        """Make the session's context current for the block (re-entrant)."""
        if self.ctx is None:
            raise RuntimeError("the GPU session is closed")
        if self._depth == 0:
            self.ctx.push()
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            if self._depth == 0 and self.ctx is not None:
                try:
                    self.drv.Context.pop()
                except self.drv.Error:
                    pass

    def check_usable(self) -> None:
        """Raises ``RuntimeError`` when an earlier kernel timed out (see the module doc)."""
        if self.wedged:
            raise RuntimeError(self.wedged)

    def load(self, cubin: bytes, symbol: str):
        """The pycuda ``Function`` ``symbol`` of ``cubin`` in the current context (cached; the
        session keeps the module loaded). Raises ``pycuda.driver.Error`` when it does not load."""
        key = (hashlib.sha256(cubin).hexdigest(), symbol)
        fn = self._functions.get(key)
        if fn is None:
            module = self.drv.module_from_buffer(cubin)
            fn = module.get_function(symbol)
            self._modules.append(module)
            self._functions[key] = fn
        return fn

    def wait(self, event, timeout_s: float) -> None:
        """Block until ``event`` has completed. Raises ``LaunchFailure`` if the work before it
        failed, ``KernelTimeout`` (and marks the session wedged) after ``timeout_s`` seconds."""
        deadline = time.monotonic() + timeout_s
        pause = 1e-5
        while True:
            try:
                if event.query():
                    return
            except self.drv.Error as e:
                raise LaunchFailure(str(e)) from e
            if time.monotonic() > deadline:
                self.wedged = (f"a kernel did not finish within {timeout_s:g} s and is still "
                               f"running; the GPU cannot be used again in this process (restart "
                               f"the runner)")
                raise KernelTimeout(f"the kernel did not finish within {timeout_s:g} s")
            time.sleep(pause)
            pause = min(pause * 2, 2e-3)

    def retain(self, obj) -> None:
        """Keep ``obj`` (device buffers of a wedged session) alive until ``close``, so that
        freeing them cannot block on a hung kernel, or fail, in the middle of other work."""
        self._retained.append(obj)

    def after_failure(self, error: str) -> bool:
        """After a launch failure: probe the context with a synchronize and an event; when that
        fails too, wedge the session (see the module doc). Returns whether it is wedged."""
        if self.wedged:
            return True
        try:
            self.drv.Context.synchronize()
            probe = self.drv.Event()
            probe.record(self.stream)
            probe.synchronize()
        except self.drv.Error as e:
            self.wedged = (f"a kernel fault left CUDA unusable in this process ({error}; the "
                           f"probe that followed failed with: {e}); the GPU cannot be used again "
                           f"in this process (restart the runner)")
        return bool(self.wedged)

    def close(self) -> None:
        """Destroy the context. The session cannot be used afterwards.

        On a wedged session this waits for the hung kernel to end (the driver frees a context
        only once its work is done): a kernel that never ends blocks here, which is why a
        runner that saw a timeout should be ended as a process instead.
        """
        if self.ctx is None:
            return
        self._retained.clear()
        self._functions.clear()
        self._modules.clear()
        self.stream = None
        ctx, self.ctx = self.ctx, None
        try:
            if self._depth:
                self.drv.Context.pop()
                self._depth = 0
            ctx.detach()
        except self.drv.Error:
            pass
