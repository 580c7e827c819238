"""Medians, quartiles and the bootstrap interval of a speedup (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_runner.stats import median, ratio_of_medians_ci, summarize


def test_summary_of_known_data():
    s = summarize([7.0, 1.0, 3.0, 5.0, 9.0])
    assert (s.median, s.q1, s.q3, s.min, s.count) == (5.0, 3.0, 7.0, 1.0, 5)


def test_quartiles_interpolate_linearly():
    s = summarize([1.0, 2.0, 3.0, 4.0])
    assert s.median == 2.5
    assert s.q1 == pytest.approx(1.75) and s.q3 == pytest.approx(3.25)
    assert median([10, 20]) == 15.0


@pytest.mark.parametrize("bad, msg", [([], "non-empty"), ([1.0, float("nan")], "finite")])
def test_rejects_bad_samples(bad, msg):
    with pytest.raises(ValueError, match=msg):
        summarize(bad)


def test_ratio_point_estimate_and_interval():
    rng = np.random.default_rng(1)
    base = 100.0 + rng.normal(0, 2, 200)
    cand = 50.0 + rng.normal(0, 1, 200)
    value, low, high = ratio_of_medians_ci(base, cand)
    assert value == pytest.approx(np.median(base) / np.median(cand))
    assert low < value < high
    assert 1.9 < low and high < 2.1
    assert high - low < 0.1


def test_interval_is_deterministic_and_seed_dependent():
    rng = np.random.default_rng(2)
    a, b = rng.exponential(1, 50) + 10, rng.exponential(1, 50) + 9
    assert ratio_of_medians_ci(a, b) == ratio_of_medians_ci(a, b)
    assert ratio_of_medians_ci(a, b, seed=1) != ratio_of_medians_ci(a, b, seed=2)


def test_constant_samples_give_a_degenerate_interval():
    assert ratio_of_medians_ci([4.0] * 10, [2.0] * 10) == (2.0, 2.0, 2.0)


def test_wider_confidence_gives_wider_interval():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 40), rng.normal(8, 1, 40)
    _, l95, h95 = ratio_of_medians_ci(a, b, confidence=0.95)
    _, l50, h50 = ratio_of_medians_ci(a, b, confidence=0.50)
    assert l95 < l50 < h50 < h95


def test_ratio_errors():
    with pytest.raises(ValueError, match="denominator median must be positive, found 0.0"):
        ratio_of_medians_ci([1.0], [0.0])
    with pytest.raises(ValueError, match=r"confidence must lie in \(0, 1\), found 1.5"):
        ratio_of_medians_ci([1.0], [1.0], confidence=1.5)
