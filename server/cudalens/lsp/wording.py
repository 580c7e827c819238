"""The words the editor shows: measurement summaries, speedups, stale notes.

One place for them, so a code lens, an inlay hint, a hover and a diagnostic say the same
thing the same way. Times in microseconds (``us``), bandwidth in GB/s.
"""

from __future__ import annotations

from gpu_runner.report import DeviceInfo, Timing

from cudalens.store.records import CandidateRecord, RunRecord


def short_device(device: DeviceInfo) -> str:
    """``NVIDIA H200`` -> ``H200``."""
    name = device.name
    return name[len("NVIDIA "):] if name.startswith("NVIDIA ") else name


def fmt_us(us: float) -> str:
    """``412 us``, ``98.2 us``, ``1,234 us``: three significant digits below 1000."""
    if us >= 100:
        return f"{us:,.0f} us"
    if us >= 10:
        return f"{us:.1f} us"
    return f"{us:.2f} us"


# How the runner measures the copy bandwidth every share is of (gpu_runner/copy_bandwidth.py,
# method "flushed"; README, "Results"): the fastest of three 16-byte kernels of different
# read:write mixes, each timed the way kernels are.
COPY_METHOD = ("the fastest of a 16-byte copy, vector add and read-only kernel, each timed "
               "as kernels are, after an L2 flush")


def share_of_copy(timing: Timing) -> str:
    """``71% of copy bandwidth``: the achieved bandwidth against the device's copy bandwidth
    (``COPY_METHOD``), never called a peak."""
    return f"{timing.percent_of_copy:.0f}% of copy bandwidth"


def copy_bandwidth_note(device: DeviceInfo) -> str:
    """``copy bandwidth 4,388 GB/s on NVIDIA H200: the fastest of ...`` (``COPY_METHOD``)."""
    return (f"copy bandwidth {device.copy_bandwidth_gbps:,.0f} GB/s on {device.name}: "
            f"{COPY_METHOD}")


def measurement(timing: Timing, device: DeviceInfo) -> str:
    """``412 us, 71% of copy bandwidth, H200`` (``share_of_copy``)."""
    return f"{fmt_us(timing.median_us)}, {share_of_copy(timing)}, {short_device(device)}"


def speedup(c: CandidateRecord) -> str:
    """``2.31x``."""
    return f"{c.result.speedup.value:.2f}x"


def speedup_ci(c: CandidateRecord) -> str:
    """``2.31x [2.29, 2.33]`` (95% confidence interval)."""
    s = c.result.speedup
    return f"{s.value:.2f}x [{s.ci_low:.2f}, {s.ci_high:.2f}]"


def run_date(run: RunRecord) -> str:
    return run.created[:10]


def stale_note(run: RunRecord) -> str:
    """Why results are not shown as current."""
    return (f"results from {run_date(run)} on {short_device(run.device)} are stale: the kernel, "
            f"its spec or the device changed since; run Optimize again")


def no_offer(run: RunRecord, rejected: int) -> str:
    """What to say when a run has no candidate to offer."""
    best = run.best_verified()
    if rejected and any(c.significant for c in run.candidates):
        return "every faster candidate was rejected"
    if best is None:
        return "no candidate passed verification"
    return f"no verified candidate faster beyond noise (best {speedup(best)})"


def not_compiling(path, check) -> str:
    """Where a failed compile check's first error is, for a lens or a hover: ``line 4:
    expected a ";"`` (its own file), ``bad.cuh:2: ...`` (a header), or nvcc's message."""
    import os  # noqa: PLC0415

    errors = [d for d in check.diagnostics if d.severity == "error"]
    located = [d for d in errors if d.path is not None and d.line is not None]
    first = (located or errors or [None])[0]
    if first is None:
        return f"nvcc exited with status {check.returncode}"
    message = first.message.split("\n", 1)[0]
    if first.path is None or first.line is None:
        return f"{first.tool}: {message}"
    if os.path.normcase(os.path.abspath(first.path)) == os.path.normcase(os.path.abspath(path)):
        return f"line {first.line}: {message}"
    return f"{os.path.basename(first.path)}:{first.line}: {message}"


FAILURE_LENS_CHARS = 60


def failure_lens(failure) -> str:
    """A kernel's last failed optimize job (``lsp.jobs.Failure``) on its lens: ``Optimize
    failed: REASON (hover for details)``, the reason the message's first line cut to
    ``FAILURE_LENS_CHARS`` characters (an ellipsis where it was cut)."""
    first = failure.message.strip().split("\n", 1)[0].strip()
    if len(first) > FAILURE_LENS_CHARS:
        first = first[:FAILURE_LENS_CHARS - 1].rstrip() + "\u2026"
    return f"Optimize failed: {first} (hover for details)"


def failure_note(failure) -> str:
    """A kernel's last failed optimize job (``lsp.jobs.Failure``) in words."""
    when = failure.at.replace("T", " ").replace("+00:00", " UTC")
    return f"Last **Optimize** failed ({when}): {failure.message}"
