"""Narrow float types on the host: exact codecs, input fills, poison and comparison."""

import numpy as np
import pytest

from gpu_runner import elements
from gpu_runner.compare import DEFAULT_RTOL, bounds_for, mismatch, unwritten
from gpu_runner.inputs import InputRangeError, buffer_values
from gpu_runner.patterns import poison_array, poison_mask
from gpu_runner.problem import Buffer, argument_from_dict, to_dict


@pytest.mark.parametrize("dtype, top", [("bfloat16", 3.3895313892515355e38),
                                        ("float8_e4m3", 448.0), ("float8_e5m2", 57344.0)])
def test_every_finite_code_round_trips_and_max_is_the_formats(dtype, top):
    table = elements.decode_table(dtype)
    finite = np.isfinite(table)
    back = elements.encode(table[finite], dtype)
    assert np.array_equal(elements.decode(back, dtype), table[finite])
    assert elements.max_finite(dtype) == top


def test_known_codes():
    assert elements.decode(np.array([0x3F80, 0xC000], dtype=np.uint16), "bfloat16").tolist() \
        == [1.0, -2.0]
    # e4m3: 0x38 = 1.0, 0x7E = 448, 0x01 = 2**-9 (smallest subnormal); 0x7F is NaN
    v = elements.decode(np.array([0x38, 0x7E, 0x01, 0x7F], dtype=np.uint8), "float8_e4m3")
    assert v[:3].tolist() == [1.0, 448.0, 2.0 ** -9] and np.isnan(v[3])
    # e5m2: 0x3C = 1.0, 0x7C = inf
    assert elements.decode(np.array([0x3C, 0x7C], dtype=np.uint8), "float8_e5m2").tolist() \
        == [1.0, np.inf]


def test_encoding_rounds_to_nearest_even_and_saturates():
    # e4m3 around 1: codes 56 (1.0), 57 (1.125), 58 (1.25); halfway cases go to the even code
    got = elements.encode(np.array([1.0625, 1.1875, 1.1, 1000.0, -1000.0]), "float8_e4m3")
    assert got.tolist() == [56, 58, 57, 0x7E, 0xFE]
    # bfloat16: 1 + 2**-8 is halfway between 0x3F80 and 0x3F81: even 0x3F80; 1 + 3 * 2**-8: 0x3F82
    got = elements.encode(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8]), "bfloat16")
    assert got.tolist() == [0x3F80, 0x3F82]


def test_bfloat16_inputs_stay_in_range_as_bits():
    buf = Buffer("x", "bfloat16", 4096, "in", low=-0.5, high=0.5)
    raw = buffer_values(buf, 1, "nominal")
    assert raw.dtype == np.uint16
    v = elements.decode(raw, "bfloat16")
    assert v.min() >= -0.5 and v.max() < 0.5 and len(np.unique(v)) > 100


def test_fp8_poison_is_nan_and_is_recognised():
    for dtype in ("float8_e4m3", "float8_e5m2", "bfloat16"):
        p = poison_array(dtype, 3)
        assert np.isnan(elements.decode(p, dtype)).all()
        assert poison_mask(p, dtype).all()
    assert poison_array("float8_e4m3", 1).tolist() == [0x7F]
    assert poison_array("bfloat16", 1).tolist() == [0x7FFC]


def test_comparison_decodes_and_uses_type_tolerance():
    assert DEFAULT_RTOL["bfloat16"] == 2 ** -6
    assert DEFAULT_RTOL["float8_e4m3"] == 0.25
    ref = elements.encode(np.array([1.0, 2.0, 4.0]), "bfloat16")
    close = elements.encode(np.array([1.0078125, 2.0, 4.0]), "bfloat16")  # one ulp up
    far = elements.encode(np.array([1.0, 2.5, 4.0]), "bfloat16")
    b = bounds_for(ref, None, "bfloat16")
    assert b.rtol == 2 ** -6 and b.atol == pytest.approx(4.0 * 2 ** -6)
    assert mismatch(ref, close, b, "bfloat16") is None
    d = mismatch(ref, far, b, "bfloat16")
    assert (d.index, d.expected, d.actual, d.count) == (1, 2.0, 2.5, 1)
    cand = ref.copy()
    cand[2] = poison_array("bfloat16", 1)[0]
    u = unwritten(ref, cand, "bfloat16")
    assert u.index == 2 and u.expected == 4.0 and np.isnan(u.actual)


def test_fills():
    r = buffer_values(Buffer("rp", "int32", 101, "in", fill="csr", params=(5000,)), 3, "nominal")
    assert r[0] == 0 and r[-1] == 5000 and (np.diff(r) >= 0).all()
    p = buffer_values(Buffer("p", "int32", 1000, "in", fill="permutation"), 3, "nominal")
    assert sorted(p.tolist()) == list(range(1000))
    u = buffer_values(Buffer("u", "int64", 50, "in", low=10, high=60, fill="unique"), 3, "n")
    assert sorted(u.tolist()) == list(range(10, 60))
    s = buffer_values(Buffer("s", "float32", 500, "in", low=0, high=9, fill="sorted"), 3, "n")
    assert (np.diff(s) >= 0).all() and s.min() >= 0 and s.max() < 9
    n = buffer_values(Buffer("n", "float32", 100000, "in", fill="normal", params=(3.0, 0.5)), 3, "n")
    assert abs(float(n.mean()) - 3.0) < 0.01 and abs(float(n.std()) - 0.5) < 0.01
    with pytest.raises(InputRangeError, match="unique needs at least 20 distinct integers, range "
                                              r"\[0, 10\) holds 10"):
        buffer_values(Buffer("u", "int32", 20, "in", low=0, high=10, fill="unique"), 1, "n")
    with pytest.raises(InputRangeError, match="csr makes integer values, found element type float32"):
        buffer_values(Buffer("c", "float32", 20, "in", fill="csr", params=(3,)), 1, "n")


def test_fill_survives_the_dict_round_trip():
    b = Buffer("rp", "int32", 11, "in", fill="csr", params=(77.0,))
    assert argument_from_dict(to_dict(b)) == b
    assert Buffer("x", "bfloat16", 10, "in").nbytes == 20
    assert Buffer("x", "float8_e5m2", 10, "in").nbytes == 10
