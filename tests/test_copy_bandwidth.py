"""The copy-bandwidth arithmetic (gpu_runner/copy_bandwidth.py) without a GPU: bytes counted
read + written, the written-back time as (copy + flush) - flush, the buffer size rule, and the
errors for impossible times. The measurement itself runs in benchmarks/bench_copy_bandwidth.py
on the GPU."""

from __future__ import annotations

import pytest

from gpu_runner.copy_bandwidth import copy_size, gbps, measure_copy, mix_gbps_of, written_back_ms

MiB = 1024 * 1024


def test_bandwidth_counts_bytes_read_and_written():
    assert gbps(1_000_000_000, 0.5) == pytest.approx(4000.0)  # 2 GB in 0.5 ms
    with pytest.raises(ValueError, match="timed at 0.0 ms; expected a positive duration"):
        gbps(MiB, 0.0)


def test_written_back_time_is_copy_plus_flush_minus_flush():
    assert written_back_ms(0.095, 0.030) == pytest.approx(0.065)
    with pytest.raises(ValueError, match="copy \\+ flush took 0.03 ms and the flush alone "
                                         "0.03 ms; expected the copy to add time"):
        written_back_ms(0.03, 0.03)


def test_buffers_are_twice_the_l2_at_least_64_mib_within_a_quarter_of_free_memory():
    assert copy_size(60 * 10**6, 100 * 2**30) == 120_000_000 // 4096 * 4096
    assert copy_size(4 * MiB, 100 * 2**30) == 64 * MiB
    assert copy_size(60 * 10**6, 200 * MiB) == 50 * MiB
    assert copy_size(0, 100 * 2**30, nbytes=256 * MiB) == 256 * MiB
    with pytest.raises(RuntimeError, match="expected at least 16 MiB of free device memory"):
        copy_size(60 * 10**6, 40 * MiB)


def test_an_unknown_method_is_refused_before_touching_a_device():
    with pytest.raises(ValueError, match="unknown method\\(s\\) \\['cold'\\]"):
        measure_copy(object(), methods=("flushed", "cold"))


def test_a_mix_counts_every_buffer_it_reads_and_writes():
    # vector add: two 64 MiB reads and one write in 50 us -> 3 x 64 MiB / 50 us
    assert mix_gbps_of(64 * MiB, 2, 1, 0.05) == pytest.approx(3 * 64 * MiB / 50e-6 / 1e9)
    assert mix_gbps_of(64 * MiB, 1, 0, 0.05) == pytest.approx(64 * MiB / 50e-6 / 1e9)
    assert mix_gbps_of(64 * MiB, 1, 1, 0.05) == pytest.approx(gbps(64 * MiB, 0.05))
    with pytest.raises(ValueError, match="a 2:1 kernel over 1024 bytes was timed at 0 ms"):
        mix_gbps_of(1024, 2, 1, 0)
