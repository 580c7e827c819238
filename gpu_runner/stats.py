"""Summary statistics of kernel durations (numpy, no GPU needed).

Quartiles use linear interpolation between order statistics (Hyndman & Fan 1996, definition
7; numpy's default ``percentile``). The speedup's confidence interval is the percentile
bootstrap (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13): resample each
variant's durations with replacement, independently, take the ratio of the two medians, and
read the 2.5th and 97.5th percentiles of that ratio over the resamples. The generator is
seeded, so the same samples always give the same interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Summary:
    """Median, first and third quartile, minimum (same unit as the samples) and count."""

    median: float
    q1: float
    q3: float
    min: float
    count: int


def _array(samples: Sequence[float], what: str) -> np.ndarray:
    a = np.asarray(samples, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{what}: expected a non-empty sequence of numbers, found shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: expected finite numbers, found {a[~np.isfinite(a)][:3]}")
    return a


def summarize(samples: Sequence[float]) -> Summary:
    """``Summary`` of a non-empty sequence of finite numbers; raises ``ValueError`` otherwise."""
    a = _array(samples, "summarize")
    q1, med, q3 = np.percentile(a, [25, 50, 75])
    return Summary(median=float(med), q1=float(q1), q3=float(q3), min=float(a.min()),
                   count=int(a.size))


def median(samples: Sequence[float]) -> float:
    return summarize(samples).median


def ratio_of_medians_ci(numerator: Sequence[float], denominator: Sequence[float], *,
                        confidence: float = 0.95, resamples: int = 2000,
                        seed: int = 0) -> tuple[float, float, float]:
    """``(median(numerator) / median(denominator), low, high)``: the point estimate and its
    percentile-bootstrap confidence interval at ``confidence``.

    For a speedup pass the baseline's durations as ``numerator`` and the candidate's as
    ``denominator``. Deterministic for a given ``seed``. Raises ``ValueError`` for empty or
    non-finite samples, a non-positive denominator median, or ``confidence`` outside (0, 1).
    """
    num = _array(numerator, "numerator")
    den = _array(denominator, "denominator")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), found {confidence}")
    point_den = float(np.median(den))
    if point_den <= 0.0:
        raise ValueError(f"denominator median must be positive, found {point_den}")
    point = float(np.median(num)) / point_den
    rng = np.random.default_rng(seed)
    num_medians = np.median(num[rng.integers(0, num.size, size=(resamples, num.size))], axis=1)
    den_medians = np.median(den[rng.integers(0, den.size, size=(resamples, den.size))], axis=1)
    ratios = num_medians / den_medians
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [alpha, 1.0 - alpha])
    return point, float(low), float(high)
