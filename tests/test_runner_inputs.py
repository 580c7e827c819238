"""Random inputs for a case: ranges, types, reproducibility (no GPU needed)."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from gpu_runner.inputs import InputRangeError, buffer_values, make_inputs
from gpu_runner.problem import Buffer, Case, Scalar


def _case(*args, label="nominal"):
    return Case(label=label, args=tuple(args))


def test_out_buffers_and_scalars_get_no_input():
    case = _case(Scalar("n", "int32", 1000), Buffer("x", "float32", 1000, "in"),
                 Buffer("y", "float32", 1000, "inout"), Buffer("z", "float32", 1000, "out"))
    got = make_inputs(case, 1)
    assert sorted(got) == ["x", "y"]
    assert got["x"].shape == (1000,) and got["x"].dtype == np.float32
    with pytest.raises(ValueError, match="case 'nominal', buffer 'z': output buffers get no input"):
        buffer_values(case.args[3], 1, "nominal")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_floats_lie_in_half_open_range(dtype):
    buf = Buffer("x", dtype, 200_000, "in", low=-1.0, high=1.0)
    v = buffer_values(buf, 7, "nominal")
    assert v.dtype == np.dtype(dtype)
    assert v.min() >= -1.0 and v.max() < 1.0
    # Spread over the range, not constant, not zeros.
    assert v.min() < -0.99 and v.max() > 0.99
    assert np.count_nonzero(v == 0) < 200


def test_float16_never_rounds_up_to_high():
    # Many float64 draws in [0.9995, 1) round to 1.0 in float16; they must be kept below 1.
    buf = Buffer("x", "float16", 100_000, "in", low=0.999, high=1.0)
    v = buffer_values(buf, 3, "c")
    assert v.max() < 1.0
    assert v.max() == np.nextafter(np.float16(1.0), np.float16(0))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint16"])
def test_integers_in_low_to_high_minus_one(dtype):
    buf = Buffer("i", dtype, 50_000, "in", low=3, high=10)
    v = buffer_values(buf, 1, "c")
    assert v.dtype == np.dtype(dtype)
    assert set(np.unique(v).tolist()) == set(range(3, 10))


def test_integer_range_with_fractional_bounds():
    buf = Buffer("i", "int32", 10_000, "in", low=-1.5, high=1.5)
    assert set(np.unique(buffer_values(buf, 1, "c")).tolist()) == {-1, 0, 1}


def test_same_seed_same_values_other_seed_other_values():
    case = _case(Buffer("x", "float32", 1000, "in"), Buffer("y", "int32", 1000, "in", 0, 100))
    a, b, c = make_inputs(case, 5), make_inputs(case, 5), make_inputs(case, 6)
    assert np.array_equal(a["x"], b["x"]) and np.array_equal(a["y"], b["y"])
    assert not np.array_equal(a["x"], c["x"])
    assert not np.array_equal(a["x"], a["y"].astype(np.float32))


def test_known_values_are_stable_across_versions_of_this_code():
    # The stream is keyed by (seed, crc32(case label), crc32(buffer name)); the first values
    # must not change when unrelated buffers are added.
    one = make_inputs(_case(Buffer("x", "float64", 4, "in")), 1)["x"]
    two = make_inputs(_case(Buffer("w", "float64", 4, "in"), Buffer("x", "float64", 4, "in")), 1)
    assert np.array_equal(one, two["x"])
    rng = np.random.default_rng(np.random.SeedSequence([1, zlib.crc32(b"nominal"),
                                                        zlib.crc32(b"x")]))
    assert np.array_equal(one, rng.uniform(-1.0, 1.0, size=4))


def test_case_label_changes_values():
    buf = Buffer("x", "float32", 100, "in")
    assert not np.array_equal(buffer_values(buf, 1, "nominal"), buffer_values(buf, 1, "ragged"))


def test_empty_integer_range():
    buf = Buffer("i", "int32", 10, "in", low=2.2, high=2.9)
    with pytest.raises(InputRangeError, match=r"case 'c', buffer 'i': range \[2.2, 2.9\) holds no integer"):
        buffer_values(buf, 1, "c")


def test_integer_range_outside_type():
    buf = Buffer("i", "uint8", 10, "in", low=-5, high=10)
    with pytest.raises(InputRangeError, match=r"does not fit uint8 \(\[0, 255\]\)"):
        buffer_values(buf, 1, "c")
