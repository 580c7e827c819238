"""The verification screen (``gpu_runner.screen``) on a real GPU agrees with the host checks.

The screen may only clear what the host would clear; it is built to flag exactly the
elements the host's ``compare.unwritten`` and ``compare.mismatch`` flag. Here both count the
offending elements of arrays made to sit on every edge: values just inside and just outside
the tolerance, NaN and infinities on either side, the poison pattern, -0.0, and every float
width; and ``abs_max`` must equal ``compare.output_scale`` bit for bit.

Skipped, with the reason, where no GPU or pycuda is present.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_runner.compare import bounds_for, mismatch, output_scale, unwritten
from gpu_runner.patterns import poison_array

pytestmark = pytest.mark.gpu

N = 100_003  # not a multiple of any block or word size


@pytest.fixture(scope="module")
def gpu():
    from gpu_runner.session import GpuSession, NoGpuError
    from gpu_runner.screen import DeviceScreen
    try:
        session = GpuSession(0)
    except NoGpuError as e:
        pytest.skip(str(e))
    with session.active():
        screen = DeviceScreen(session)
        yield session, screen
        screen.free()
    session.close()


def _upload(session, host: np.ndarray):
    alloc = session.drv.mem_alloc(max(host.nbytes, 1))
    session.drv.memcpy_htod(alloc, np.ascontiguousarray(host))
    return alloc


def _host_flags(ref: np.ndarray, cand: np.ndarray, bounds) -> int:
    flagged = np.zeros(ref.size, dtype=bool)
    d = unwritten(ref, cand)
    if d is not None:
        from gpu_runner.patterns import poison_mask
        flagged |= poison_mask(cand) & ~poison_mask(ref)
    d = mismatch(ref, cand, bounds)
    if d is not None:
        r, c = ref.astype(np.float64), cand.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (r == c) | ((np.abs(c - r) <= bounds.atol + bounds.rtol * np.abs(r))
                             & np.isfinite(r) & np.isfinite(c))
        ok |= np.isnan(r) & np.isnan(c)
        flagged |= ~ok
    return int(np.count_nonzero(flagged))


def _edge_arrays(dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    ref = (rng.standard_normal(N) * 10.0).astype(dtype)
    bounds = bounds_for(ref)
    cand = ref.copy()
    r64 = ref.astype(np.float64)
    allowed = bounds.atol + bounds.rtol * np.abs(r64)
    idx = rng.permutation(N)
    k = N // 12
    parts = [idx[i * k:(i + 1) * k] for i in range(12)]
    # 0: just inside, 1: just outside the tolerance (in the candidate's own precision)
    cand[parts[0]] = (r64[parts[0]] + 0.5 * allowed[parts[0]]).astype(dtype)
    cand[parts[1]] = (r64[parts[1]] + 3.0 * allowed[parts[1]]).astype(dtype)
    # 2: poison in the candidate (unwritten); 3: poison in both
    poison = poison_array(dtype, 1)[0]
    cand[parts[2]] = poison
    ref[parts[3]] = poison
    cand[parts[3]] = poison
    # 4: NaN vs number; 5: number vs NaN; 6: inf vs inf; 7: inf vs -inf; 8: -0.0 vs 0.0
    cand[parts[4]] = np.nan
    ref[parts[5]] = np.nan
    ref[parts[6]] = np.inf
    cand[parts[6]] = np.inf
    ref[parts[7]] = np.inf
    cand[parts[7]] = -np.inf
    ref[parts[8]] = 0.0
    cand[parts[8]] = -0.0
    # 9: a huge difference; 10, 11: untouched
    cand[parts[9]] = (r64[parts[9]] * 1000.0 + 1.0).astype(dtype)
    return ref, cand


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("seed", [1, 2])
def test_screen_flags_exactly_what_the_host_flags(gpu, dtype, seed):
    session, screen = gpu
    ref, cand = _edge_arrays(dtype, seed)
    bounds = bounds_for(ref)
    expected = _host_flags(ref, cand, bounds)
    assert expected > N // 4  # the edges above are really there
    a, b = _upload(session, ref), _upload(session, cand)
    try:
        assert screen.flagged(int(a), int(b), dtype, N, bounds) == expected
        assert screen.flagged(int(a), int(a), dtype, N, bounds) == 0
        assert screen.abs_max(int(a), dtype, N) == output_scale(ref)
    finally:
        a.free()
        b.free()


@pytest.mark.parametrize("nbytes", [1, 3, 4, 4097, 400_002])
def test_bitwise_screen_counts_differing_words_and_tail_bytes(gpu, nbytes):
    session, screen = gpu
    rng = np.random.default_rng(nbytes)
    x = rng.integers(0, 256, nbytes, dtype=np.uint8)
    y = x.copy()
    y[-1] ^= 1  # the last byte (a tail byte unless nbytes % 4 == 0)
    a, b = _upload(session, x), _upload(session, y)
    try:
        assert screen.differing_bytes(int(a), int(a), nbytes) == 0
        assert screen.differing_bytes(int(a), int(b), nbytes) == 1
    finally:
        a.free()
        b.free()


def test_integer_outputs_are_screened_bit_for_bit(gpu):
    session, screen = gpu
    ref = np.arange(N, dtype=np.int32)
    cand = ref.copy()
    cand[[5, 77, N - 1]] += 1
    bounds = bounds_for(ref)
    a, b = _upload(session, ref), _upload(session, cand)
    try:
        assert screen.flagged(int(a), int(b), "int32", N, bounds) == 3
    finally:
        a.free()
        b.free()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_unlike_first_agrees_with_is_constant(gpu, dtype):
    from gpu_runner.compare import is_constant
    session, screen = gpu
    arrays = [np.zeros(N, dtype), np.full(N, np.nan, dtype), np.linspace(0, 1, N).astype(dtype)]
    signed = np.zeros(N, dtype)
    signed[::2] = -0.0
    one_off = np.full(N, 3.0, dtype)
    one_off[N - 1] = 4.0
    first_nan = np.ones(N, dtype)
    first_nan[0] = np.nan
    for host in arrays + [signed, one_off, first_nan]:
        alloc = _upload(session, host)
        try:
            count = screen.unlike_first(int(alloc), dtype, N)
        finally:
            alloc.free()
        v = host.astype(np.float64)
        expected = int(np.count_nonzero(~((v == v[0]) | (np.isnan(v) & np.isnan(v[0])))))
        assert count == expected
        assert (count == 0) == is_constant(host)
