"""What the model is told about the GPU and the original kernel's measurement.

Peak FP32 rate = SMs x FP32 results per clock per SM x 2 (a fused multiply-add counts as two
operations) x SM clock. Results per clock per SM are from the CUDA C++ Programming Guide,
"Arithmetic Instructions", table "Throughput of Native Arithmetic Instructions" (32-bit
floating-point add, multiply, multiply-add). For compute capabilities not in the table the
peak is not stated. Bandwidth shares are against the device-to-device copy bandwidth the
runner measured on the same GPU (``DeviceInfo.copy_bandwidth_gbps``).
"""

from __future__ import annotations

from typing import Optional

from gpu_runner.problem import Buffer, Case, Problem
from gpu_runner.report import CompileReport, DeviceInfo, Timing

FP32_PER_CLOCK_PER_SM = {
    (6, 0): 64, (6, 1): 128, (6, 2): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
}


def peak_fp32_gflops(device: DeviceInfo) -> Optional[float]:
    """The FP32 peak in GFLOP/s (see the module doc), None when the table lacks the device."""
    lanes = FP32_PER_CLOCK_PER_SM.get(tuple(device.compute_capability))
    if lanes is None or device.sm_clock_mhz <= 0:
        return None
    return device.sm_count * lanes * 2 * device.sm_clock_mhz / 1e3


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def device_facts(device: DeviceInfo) -> str:
    """The device as a short list of lines."""
    major, minor = device.compute_capability
    peak = peak_fp32_gflops(device)
    lines = [
        f"- {device.name}, compute capability {major}.{minor} (sm_{major}{minor}), "
        f"driver {device.driver_version}",
        f"- {device.sm_count} SMs at {device.sm_clock_mhz} MHz; at most "
        f"{device.max_threads_per_block} threads and {_bytes(device.max_shared_bytes_per_block)} "
        f"of shared memory per block",
        f"- L2 cache {_bytes(device.l2_bytes)} (flushed before every timed launch)",
        f"- measured device-to-device copy bandwidth {device.copy_bandwidth_gbps:,.0f} GB/s "
        f"(bytes read + written per second; the reference for bandwidth shares below)",
        (f"- peak FP32 rate {peak:,.0f} GFLOP/s ({device.sm_count} SMs x "
         f"{FP32_PER_CLOCK_PER_SM[(major, minor)]} FP32 lanes x 2 x {device.sm_clock_mhz} MHz)"
         if peak else f"- peak FP32 rate: not known for compute capability {major}.{minor}"),
    ]
    return "\n".join(lines)


def case_sizes(case: Case) -> str:
    """``x: 33554432 float32 (128 MiB), n = 33554432`` for the timed case's arguments."""
    parts = []
    for arg in case.args:
        if isinstance(arg, Buffer):
            parts.append(f"{arg.name}: {arg.length:,} {arg.dtype} ({_bytes(arg.nbytes)}, "
                         f"{arg.role})")
        else:
            parts.append(f"{arg.name} = {arg.value}")
    return ", ".join(parts)


def rate_text(timing: Timing, case: Case, device: DeviceInfo) -> str:
    """Achieved bandwidth and FP32 rate of ``timing`` as shares of the device's peaks."""
    text = (f"{timing.achieved_gbps:,.0f} GB/s = {timing.percent_of_copy:.0f}% of the measured "
            f"copy bandwidth (at least {_bytes(case.bytes_moved)} must move)")
    peak = peak_fp32_gflops(device)
    if case.flops and timing.gflops:
        pct = 100 * timing.gflops / peak if peak else 0.0
        share = f" = {pct:.1f}% of peak FP32" if pct >= 1 else f" = {pct:.2g}% of peak FP32"
        share = share if peak else ""
        text += f"; {timing.gflops:,.0f} GFLOP/s{share}"
    return text


def resources_text(report: CompileReport) -> str:
    return (f"{report.registers} registers/thread, {report.static_shared_bytes} B static shared "
            f"memory/block, {report.local_bytes} B local memory/thread"
            + (" (spills or stack)" if report.local_bytes else ""))


def baseline_facts(problem: Problem, timing: Timing, report: CompileReport,
                   device: DeviceInfo) -> str:
    case = problem.timed_case
    return "\n".join([
        f"- timed case ({case.label}): {case_sizes(case)}",
        f"- median {timing.median_us:,.2f} us (IQR {timing.q1_us:,.2f}-{timing.q3_us:,.2f} us, "
        f"{timing.samples} launches)",
        f"- {rate_text(timing, case, device)}",
        f"- {resources_text(report)}",
    ])
