"""Reading Nsight Compute's CSV (``gpu_runner.ncu_csv``) and the profiler's command line
(``gpu_runner.profile``), without a GPU. ``tests/data/ncu/saxpy_metrics.csv`` is written in
the format ncu 2023+ prints with ``--csv --metrics ...`` (the values are chosen here, not
measured): the profiler's own lines first, the 15-column header, one row per metric."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpu_runner.ncu_csv import METRICS, NcuParseError, Stall, parse_profile
from gpu_runner.profile import ProfileError, ncu_command, profile_variant

DATA = Path(__file__).resolve().parent / "data" / "ncu"
OLD_HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time",'
              '"Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"')


def test_the_profile_of_saxpy_is_read_from_ncu_csv():
    p = parse_profile((DATA / "saxpy_metrics.csv").read_text())
    assert (p.kernel, p.achieved_occupancy_pct, p.dram_throughput_pct) == ("saxpy", 83.47, 91.22)
    total = 1012.40 + 3.18 + 2.35 + 1.04 + 0.49 + 0.30 + 0.11 + 0.06 + 0.02 * 2 + 0.01 * 3
    assert [s.reason for s in p.stalls] == ["long scoreboard", "lg throttle", "wait"]
    assert p.stalls[0] == Stall("long scoreboard", 1012.40, pytest.approx(100 * 1012.40 / total))
    assert p.summary() == (
        "achieved occupancy 83.5%, DRAM throughput 91.2% of peak; top stalls: long scoreboard "
        f"1012.40 cycles/instruction ({100 * 1012.40 / total:.0f}%), lg throttle 3.18 "
        f"cycles/instruction (0%), wait 2.35 cycles/instruction (0%)")


def test_the_older_header_and_a_second_launch_are_handled():
    rows = [f'"{i}","1","python3","h","k{i}","t","1","7","Command line profiler metrics",'
            f'"{name}","%","{value}"'
            for i, name, value in [(1, METRICS[0], "50"), (1, METRICS[1], "25.5"),
                                   (2, METRICS[0], "99"), (2, METRICS[1], "99")]]
    p = parse_profile("\n".join([OLD_HEADER, *rows]))
    assert (p.kernel, p.achieved_occupancy_pct, p.dram_throughput_pct, p.stalls) == \
        ("k1", 50.0, 25.5, ())


@pytest.mark.parametrize("text, message", [
    ("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n",
     "found no such line (first line: '==PROF== Connected to process 1')"),
    (OLD_HEADER + "\n", "holds a header but no profiled kernel launch"),
    (OLD_HEADER + '\n"1","1","p","h","k","t","1","7","S","' + METRICS[0] + '","%","61"\n',
     f"expected the metric {METRICS[1]} (DRAM throughput) for launch 1, found only "
     f"{METRICS[0]}"),
    (OLD_HEADER + '\n"1","1","p","h","k","t","1","7","S","' + METRICS[0] + '","%","n/a"\n',
     f"the metric {METRICS[0]} (achieved occupancy) of launch 1 has no numeric value"),
    ('"ID","Name"\n"1","x"\n', "missing Kernel Name, Metric Name, Metric Value"),
])
def test_unusable_output_is_refused_saying_what_is_missing(text, message):
    with pytest.raises(NcuParseError) as err:
        parse_profile(text)
    assert message in str(err.value)


def test_the_command_line_is_fixed_but_for_the_request_file():
    cmd = ncu_command("/opt/ncu", "/tmp/cudalens-profile-x/request.json")
    assert cmd == ["/opt/ncu", "--csv", "--target-processes", "application-only",
                   "--profile-from-start", "off", "--launch-count", "1",
                   "--metrics", ",".join(METRICS), sys.executable, "-m",
                   "gpu_runner.profile_launch", "/tmp/cudalens-profile-x/request.json"]
    assert len(METRICS) == 19 and all("," not in m for m in METRICS)


def test_a_failing_ncu_is_reported_with_its_error_lines(tmp_path):
    from gpu_runner.problem import Buffer, Case, Launch, Problem, Variant

    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho '==PROF== Connected to process 7'\n"
                    "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission'\n"
                    "exit 1\n")
    fake.chmod(0o755)
    problem = Problem(kernel="k", cases=(Case(label="nominal", args=(
        Buffer(name="x", dtype="float32", length=4, role="inout"),)),))
    variant = Variant(label="c1", source="__global__ void k(float* x) {}", name="k",
                      launches=(Launch(grid=(1, 1, 1), block=(4, 1, 1)),))
    with pytest.raises(ProfileError) as err:
        profile_variant(problem, variant, ncu=str(fake))
    assert str(err.value) == ("ncu failed profiling c1 (exit status 1): ==ERROR== "
                              "ERR_NVGPUCTRPERM - The user does not have permission")
