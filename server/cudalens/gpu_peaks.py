"""Compute peaks of a GPU from its device facts: the one place cudalens keeps them.

A peak in GFLOP/s is ``SMs x SM clock x FLOP per clock per SM`` (an FMA counts two
operations), with the SM count and clock the runner reported (``DeviceInfo.sm_count``,
``DeviceInfo.sm_clock_mhz``: the maximum SM clock, so every figure is the boost-clock upper
bound) and the per-SM rates from NVIDIA's published figures:

- FP32 on the CUDA cores: results per clock per SM for 32-bit floating-point add, multiply
  and multiply-add, CUDA C++ Programming Guide (12.x), "Arithmetic Instructions", throughput
  table (64 on compute capability 7.0/7.5/8.0, 128 on 8.6/8.7/8.9/9.0), times 2.
- FP16 and BF16 on the CUDA cores (paired ``__half2``/``__nv_bfloat162`` arithmetic): twice
  the FP32 rate on compute capability 9.0, 512 FLOP per clock per SM: NVIDIA H100 Tensor Core
  GPU Architecture whitepaper (2022), table "NVIDIA H100 compared to A100": peak FP16 and
  BF16 (non-tensor) 133.8 TFLOPS against FP32 66.9 TFLOPS on the H100 SXM5's 132 SMs.
- FP16 and BF16 on the tensor cores (dense, FP32 accumulate): 4096 FLOP per clock per SM on
  compute capability 9.0 (2048 dense FP16 FMA per clock per SM, twice the A100 SM's 1024),
  the same whitepaper, "H100 SM architecture": its peak FP16/BF16 Tensor 989.4 TFLOPS is
  132 SMs x 1830 MHz x 4096; here the device's own clock is used.

Only compute capability 9.0 has half-precision figures here (the GPU cudalens is measured
on); an architecture without a figure gets no peak for it (None), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

# FP32 results (FMA lanes) per clock per SM, CUDA C++ Programming Guide "Arithmetic Instructions".
FP32_LANES: dict[tuple[int, int], int] = {
    (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128,
}

# FLOP per clock per SM of the half-precision paths (module doc), by compute capability.
HALF_FLOP_PER_CLOCK: dict[tuple[int, int], dict[str, int]] = {
    (9, 0): {"fp16": 512, "bf16": 512, "fp16_tensor": 4096, "bf16_tensor": 4096},
}

# Element types (gpu_runner.problem DTYPES, plus "bfloat16") that bring the half peaks.
_HALF_OF_TYPE = {"float16": ("fp16", "fp16_tensor"), "bfloat16": ("bf16", "bf16_tensor")}
_TITLES = {"fp32": "FP32", "fp16": "FP16 (CUDA cores, half2)", "bf16": "BF16 (CUDA cores, bf162)",
           "fp16_tensor": "FP16 tensor cores (dense)", "bf16_tensor": "BF16 tensor cores (dense)"}


@dataclass(frozen=True)
class Peak:
    """One compute roof: ``key`` (``fp32``, ``fp16``, ``bf16``, ``fp16_tensor``,
    ``bf16_tensor``), ``title`` as a chart labels it, ``gflops`` (GFLOP/s) and the
    ``flop_per_clock_per_sm`` it was computed from."""

    key: str
    title: str
    gflops: float
    flop_per_clock_per_sm: int


def _gflops(per_clock: int, sm_count: int, sm_clock_mhz: int) -> float:
    return per_clock * sm_count * sm_clock_mhz / 1000.0


def fp32_peak_gflops(cc: tuple[int, int], sm_count: int, sm_clock_mhz: int) -> Optional[float]:
    """FP32 peak in GFLOP/s: 2 x lanes x SMs x clock (MHz); None for an unknown architecture
    or a clock of 0."""
    lanes = FP32_LANES.get(tuple(cc))
    if lanes is None or sm_clock_mhz <= 0 or sm_count <= 0:
        return None
    return _gflops(2 * lanes, sm_count, sm_clock_mhz)


def compute_peaks(cc: tuple[int, int], sm_count: int, sm_clock_mhz: int,
                  element_types: Iterable[str] = ()) -> tuple[Peak, ...]:
    """The compute roofs of a device for a kernel whose buffers and scalars have
    ``element_types`` (``float32``, ``float16``, ...): FP32 always (where known), and the
    FP16/BF16 CUDA-core and tensor-core peaks where a type of that width is present and the
    architecture has a published figure. Empty for an unknown architecture."""
    out: list[Peak] = []
    fp32 = fp32_peak_gflops(cc, sm_count, sm_clock_mhz)
    if fp32 is None:
        return ()
    out.append(Peak("fp32", _TITLES["fp32"], fp32, 2 * FP32_LANES[tuple(cc)]))
    rates = HALF_FLOP_PER_CLOCK.get(tuple(cc), {})
    types = set(element_types)
    for dtype, keys in _HALF_OF_TYPE.items():
        if dtype not in types:
            continue
        for key in keys:
            if key in rates:
                out.append(Peak(key, _TITLES[key], _gflops(rates[key], sm_count, sm_clock_mhz),
                                rates[key]))
    return tuple(out)
