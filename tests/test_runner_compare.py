"""Poison patterns, tolerances and comparisons (no GPU needed)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_runner.compare import Bounds, bounds_for, changed, mismatch, output_scale, unwritten
from gpu_runner.patterns import poison_array, poison_mask, poison_value
from gpu_runner.problem import Tolerance


@pytest.mark.parametrize("dtype, bits", [("float16", 0x7FFC), ("float32", 0x7FFC7FFC),
                                         ("float64", 0x7FFC7FFC7FFC7FFC)])
def test_float_poison_is_a_non_canonical_quiet_nan(dtype, bits):
    p = poison_array(dtype, 3)
    assert p.dtype == np.dtype(dtype) and np.all(np.isnan(p))
    assert p.view(f"uint{p.itemsize * 8}").tolist() == [bits] * 3
    canonical = np.array([np.nan], dtype=dtype)  # a NaN a kernel might compute
    assert not poison_mask(canonical)[0]


@pytest.mark.parametrize("dtype, value", [("int8", 0x7F), ("uint8", 0x7F), ("int16", 0x7F7F),
                                          ("int32", 0x7F7F7F7F), ("uint64", 0x7F7F7F7F7F7F7F7F)])
def test_int_poison_is_7f_bytes(dtype, value):
    assert int(poison_value(dtype)) == value
    assert poison_mask(np.array([value, 0, value], dtype=dtype)).tolist() == [True, False, True]


@pytest.mark.parametrize("dtype, rtol", [("float16", 1e-2), ("float32", 1e-4), ("float64", 1e-10)])
def test_default_bounds_scale_with_output(dtype, rtol):
    ref = np.array([0.5, -4.0, np.nan, np.inf, 2.0], dtype=dtype)
    b = bounds_for(ref)
    assert (b.rtol, b.exact) == (rtol, False)
    assert b.atol == pytest.approx(rtol * 4.0)  # max |ref| over finite elements
    assert output_scale(ref) == 4.0


def test_integer_outputs_are_exact_even_with_a_spec_tolerance():
    assert bounds_for(np.arange(5, dtype=np.int32), Tolerance(0.5, 0.5)) == Bounds(0, 0, True)


def test_spec_tolerance_overrides_and_scaling():
    ref = np.array([10.0, -20.0], dtype=np.float32)
    assert bounds_for(ref, Tolerance(rtol=1e-3, atol=1e-2)) == Bounds(1e-3, 1e-2 * 20.0)
    assert bounds_for(ref, Tolerance(rtol=1e-3, atol=1e-2, scaled=False)) == Bounds(1e-3, 1e-2)


def test_mismatch_finds_first_index_and_counts():
    ref = np.array([1.0, 2.0, 3.0, 4.0, 5.0], dtype=np.float32)
    cand = ref.copy()
    cand[3] = 4.1
    cand[1] = 2.5
    d = mismatch(ref, cand, bounds_for(ref))
    assert (d.index, d.expected, d.actual, d.count, d.total) == (1, 2.0, 2.5, 2, 5)


def test_mismatch_respects_atol_and_rtol_boundaries():
    ref = np.array([100.0, 0.0], dtype=np.float64)
    b = Bounds(rtol=1e-3, atol=1e-2)
    assert mismatch(ref, np.array([100.11, 0.01]), b) is None  # 0.11 <= 0.01 + 0.1; 0.01 <= 0.01
    d = mismatch(ref, np.array([100.0, 0.0101]), b)
    assert d.index == 1 and d.actual == pytest.approx(0.0101)


def test_nan_rules():
    b = Bounds(1e-4, 1e-4)
    ref = np.array([np.nan, 1.0, np.inf, -np.inf], dtype=np.float32)
    assert mismatch(ref, np.array([np.nan, 1.0, np.inf, -np.inf], np.float32), b) is None
    d = mismatch(ref, np.array([0.0, 1.0, np.inf, -np.inf], np.float32), b)
    assert d.index == 0 and np.isnan(d.expected) and d.actual == 0.0
    d = mismatch(ref, np.array([np.nan, np.nan, np.inf, -np.inf], np.float32), b)
    assert d.index == 1 and np.isnan(d.actual)
    d = mismatch(ref, np.array([np.nan, 1.0, -np.inf, -np.inf], np.float32), b)
    assert d.index == 2
    d = mismatch(ref, np.array([np.nan, 1.0, 3e38, -np.inf], np.float32), b)
    assert d.index == 2  # an infinity matches only itself


def test_exact_integer_mismatch_reports_ints():
    ref = np.array([1, 2, 3], dtype=np.int64)
    d = mismatch(ref, np.array([1, 2, 4], dtype=np.int64), Bounds(0, 0, True))
    assert (d.index, d.expected, d.actual) == (2, 3, 4) and isinstance(d.actual, int)


def test_unwritten_only_where_baseline_wrote():
    ref = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    ref[3] = poison_value("float32")  # the baseline leaves element 3 alone
    cand = poison_array("float32", 4)
    cand[0] = 1.0
    d = unwritten(ref, cand)
    assert (d.index, d.expected, d.count, d.total) == (1, 2.0, 2, 4)
    assert np.isnan(d.actual)
    cand[1:3] = [2.0, 3.0]
    assert unwritten(ref, cand) is None


def test_a_computed_nan_is_not_unwritten():
    ref = np.array([1.0, 2.0], dtype=np.float32)
    cand = np.array([np.nan, 2.0], dtype=np.float32)
    assert unwritten(ref, cand) is None
    assert mismatch(ref, cand, bounds_for(ref)).index == 0


def test_changed_is_bitwise():
    a = np.array([0.0, np.nan, 1.0], dtype=np.float32)
    assert changed(a, a.copy()) is None
    b = a.copy()
    b[0] = -0.0
    d = changed(a, b)
    assert (d.index, d.count) == (0, 1)


def test_shape_mismatch_is_an_error():
    with pytest.raises(ValueError, match=r"expected arrays of equal shape and type, found \(2,\) "
                                         r"float32 and \(3,\) float32"):
        changed(np.zeros(2, np.float32), np.zeros(3, np.float32))


# -- constant outputs (issue 11, item 6) ----------------------------------------------------------


def test_is_constant_compares_numbers_with_nan_equal_to_nan():
    from gpu_runner.compare import is_constant
    assert is_constant(np.zeros(5, np.float32))
    assert is_constant(np.array([0.0, -0.0, 0.0], np.float32))  # -0.0 == 0.0
    assert is_constant(np.full(4, np.nan, np.float16))
    assert is_constant(np.array([7.0], np.float64))
    assert not is_constant(np.array([1.0, 1.0, 1.0000001], np.float64))
    assert not is_constant(np.array([np.nan, 1.0], np.float32))
    assert not is_constant(np.array([1.0, np.nan], np.float32))


def test_an_all_zero_output_passes_a_loose_tolerance_but_not_the_constant_check():
    from gpu_runner.compare import constant_where_varying
    ref = np.linspace(1e-3, 2e-3, 1000).astype(np.float32)
    zeros = np.zeros_like(ref)
    assert mismatch(ref, zeros, bounds_for(ref, Tolerance(0.5, 0.5))) is None  # the hole
    d = constant_where_varying(ref, zeros)
    assert (d.index, d.expected, d.actual, d.count, d.total) == (0, float(ref[0]), 0.0, 1000, 1000)
    # a constant within the default tolerance of a reference that varies only in rounding
    noisy = np.full(8, 0.5, np.float32)
    noisy[3] = np.nextafter(np.float32(0.5), np.float32(1))
    assert constant_where_varying(noisy, np.full(8, 0.5, np.float32)) is None
    # a constant reference, an output that varies, integers: not this check's business
    assert constant_where_varying(np.full(8, 2.0, np.float32), np.zeros(8, np.float32)) is None
    assert constant_where_varying(ref, ref.copy()) is None
    assert constant_where_varying(np.arange(8, dtype=np.int32), np.zeros(8, np.int32)) is None
