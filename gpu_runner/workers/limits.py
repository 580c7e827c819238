"""Time limits of a supervised evaluation, and the kernel time limit derived from the baseline.

A kernel that has not finished ``kernel_timeout_factor`` times the baseline's median time after
its launch is stopped (the runner reports ``timeout``): no rewrite that slow is worth keeping,
and a correct rewrite of the same work is never that much slower. The limit never goes below
``kernel_timeout_floor_s``: launch latency, the first launch's module load, clock ramp-up and a
busy display GPU each cost milliseconds, and a limit near them would call healthy kernels hung.
Before the baseline has been timed (the probe, see ``supervisor``) the limit is
``first_kernel_timeout_s``.

A worker is hung when it sends nothing, not even an event, for the kernel limit plus
``silence_grace_s``: the grace covers the longest quiet stretch of a healthy worker (nvcc on a
large translation unit, drawing random inputs for a large case, reading results back).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Seconds, except ``kernel_timeout_factor`` (a ratio)."""

    startup_s: float = 120.0  # spawn, import, CUDA context, copy bandwidth measurement
    stop_s: float = 5.0  # SIGTERM to SIGKILL, and SIGKILL to giving up waiting
    first_kernel_timeout_s: float = 10.0
    kernel_timeout_floor_s: float = 2.0
    kernel_timeout_factor: float = 1000.0
    silence_grace_s: float = 120.0

    def kernel_timeout_s(self, baseline_median_us: float) -> float:
        """The per-launch limit for candidates of a baseline whose median is
        ``baseline_median_us`` microseconds: max(floor, factor x median)."""
        return max(self.kernel_timeout_floor_s,
                   self.kernel_timeout_factor * baseline_median_us * 1e-6)

    def silence_s(self, kernel_timeout_s: float) -> float:
        """How long a worker may stay silent before it is called hung."""
        return kernel_timeout_s + self.silence_grace_s
