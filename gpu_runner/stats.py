"""Summary statistics of kernel durations (numpy, no GPU needed).

Quartiles use linear interpolation between order statistics (Hyndman & Fan 1996, definition
7; numpy's default ``percentile``). The speedup's confidence interval is the percentile
bootstrap (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13): resample each
variant's durations with replacement, independently, take the ratio of the two medians, and
read the 2.5th and 97.5th percentiles of that ratio over the resamples. The generator is
seeded, so the same samples always give the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

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


# Two-sided standard normal quantiles for the confidence levels the runner uses (Abramowitz &
# Stegun 1964, table 26.1): 0.90 -> 1.6449, 0.95 -> 1.9600, 0.99 -> 2.5758.
_Z = {0.90: 1.6448536269514722, 0.95: 1.959963984540054, 0.99: 2.5758293035489004}


def median_ci(samples: Sequence[float], *, confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval ``(low, high)`` of the median of ``samples``.

    The interval runs between two order statistics: with the samples sorted and numbered from
    1 to n, from rank ``round(n/2 - z*sqrt(n)/2)`` to rank ``round(1 + n/2 + z*sqrt(n)/2)``,
    clamped to [1, n], ``z`` the two-sided normal quantile of ``confidence`` (the normal
    approximation to the binomial count of samples below the median; Conover 1999, "Practical
    Nonparametric Statistics", 3rd ed., section 3.2; for n = 100 at 95% the 40th and 61st
    values). Needs no assumption about the shape of the distribution, which kernel durations
    (a floor plus a long right tail) do not meet. Below about 6 samples it is the whole range.
    ``confidence`` must be 0.90, 0.95 or 0.99; raises ``ValueError`` otherwise and for empty
    or non-finite samples.
    """
    a = np.sort(_array(samples, "median_ci"))
    z = _Z.get(round(confidence, 2))
    if z is None:
        raise ValueError(f"confidence must be one of {', '.join(map(str, _Z))}, found {confidence}")
    n = a.size
    half = z * math.sqrt(n) / 2.0
    lo_rank = min(max(math.floor(n / 2.0 - half + 0.5), 1), n)
    hi_rank = min(max(math.floor(1 + n / 2.0 + half + 0.5), 1), n)
    return float(a[lo_rank - 1]), float(a[hi_rank - 1])


def median_ci_half_width_pct(samples: Sequence[float], *, confidence: float = 0.95) -> float:
    """Half the width of ``median_ci`` as a percentage of the median (0.0 for a zero median
    with a zero-width interval; ``inf`` for a zero median with a wider one). Raises as
    ``median_ci``."""
    low, high = median_ci(samples, confidence=confidence)
    med = median(samples)
    half = (high - low) / 2.0
    if med == 0.0:
        return 0.0 if half == 0.0 else math.inf
    return abs(half / med) * 100.0
