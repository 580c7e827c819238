"""compute-sanitizer's text report parsed into ``Finding``s (gpu_runner/sanitizer_text.py), on
reports in the documented format (tests/data/sanitizer/): both spellings of a device location,
records merged by line with their counts, the host backtrace ignored, and the kinds that make a
kernel unusable as a reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_runner.sanitize import ERROR_EXITCODE, SanitizeError, _tool_run
from gpu_runner.sanitizer_text import (API_ERROR, BARRIER, OOB_READ, OOB_WRITE, RACE,
                                       UNINITIALIZED, error_summary, parse_findings)

DATA = Path(__file__).resolve().parent / "data" / "sanitizer"


def report(name: str) -> str:
    return (DATA / f"{name}.txt").read_text()


def test_a_race_is_one_finding_at_its_line_with_every_hazard_counted():
    [race] = parse_findings("racecheck", report("racecheck"))
    assert (race.tool, race.kind, race.line, race.count) == ("racecheck", RACE, 21, 1984 + 16)
    assert race.file == "/tmp/cudalens-x/cudalens-variant.cu"
    assert race.function == "reduce(const float *, float *, int)"
    assert race.message.startswith("Race reported between Write access at reduce(")
    assert race.blocking
    assert race.summary == "race: Race reported between Write access and Read access; " \
                           "2000 hazards"


def test_an_out_of_bounds_read_keeps_thread_block_and_address_but_not_the_backtrace():
    oob, api = parse_findings("memcheck", report("memcheck"))
    assert (oob.kind, oob.line, oob.count) == (OOB_READ, 6, 2)
    assert (oob.thread, oob.block) == ((24, 0, 0), (3, 0, 0))
    assert oob.detail == ("Address 0x7f3a1c000fa0 is out of bounds",
                          "and is 1 bytes after the nearest allocation at 0x7f3a1c000000 of "
                          "size 4000 bytes")
    assert oob.summary == ("out-of-bounds read: Invalid __global__ read of size 4 bytes "
                           "(thread (24,0,0), block (3,0,0)); 2 times")
    assert (api.kind, api.line, api.file) == (API_ERROR, 0, "")
    assert "cuStreamSynchronize" in api.message and not api.blocking
    assert error_summary(report("memcheck")) == 3


def test_the_older_location_spelling_file_line_function():
    [uninit] = parse_findings("initcheck", report("initcheck_old_format"))
    assert (uninit.kind, uninit.file, uninit.line) == (UNINITIALIZED, "/work/k/sum.cu", 30)
    assert uninit.function == "sum_gpu(const int *, int *, unsigned int)"
    assert (uninit.thread, uninit.block) == ((98, 0, 0), (194, 0, 0))
    assert uninit.detail == ("Address 0x7fbbca800000",)  # the host frame's file:line is not it


def test_barrier_errors_merge_by_line():
    [barrier] = parse_findings("synccheck", report("synccheck"))
    assert (barrier.kind, barrier.line, barrier.count, barrier.thread) == (BARRIER, 9, 2,
                                                                          (0, 0, 0))


def test_without_lineinfo_a_finding_has_its_function_and_no_line():
    [write] = parse_findings("memcheck", report("no_lineinfo"))
    assert (write.kind, write.file, write.line, write.function) == (OOB_WRITE, "", 0,
                                                                    "stage(float *)")


def test_a_clean_report_has_no_findings():
    assert parse_findings("memcheck", report("clean")) == []
    assert error_summary(report("clean")) == 0
    assert error_summary("no summary here") is None


def test_lines_without_the_prefix_are_not_read():
    text = "sanitize_launch: something\nInvalid __global__ read\n" + report("clean")
    assert parse_findings("memcheck", text) == []


def test_an_unknown_tool_is_refused():
    with pytest.raises(ValueError, match="unknown compute-sanitizer tool 'leakcheck'"):
        parse_findings("leakcheck", "")


def test_a_run_that_found_something_is_a_report_even_when_the_launch_failed():
    text = report("memcheck") + "\nsanitize_launch: baseline on case 'ragged': launch failed\n"
    run = _tool_run("memcheck", 4, text, 1.25, "baseline")
    assert [f.kind for f in run.findings] == [OOB_READ, API_ERROR]
    assert run.note == "sanitize_launch: baseline on case 'ragged': launch failed"
    assert run.errors == 3 and run.findings[0].own  # cudalens-variant.cu is the variant's


def test_a_run_that_failed_without_findings_says_why():
    with pytest.raises(SanitizeError, match="did not compile or launch under memcheck: "
                                            "sanitize_launch: nvcc failed") as exc:
        _tool_run("memcheck", 3, "========= COMPUTE-SANITIZER\nsanitize_launch: nvcc failed\n",
                  1.0, "baseline")
    assert exc.value.kind == "variant_failed"
    with pytest.raises(SanitizeError, match=r"exit status 1\) without a report: boom") as exc:
        _tool_run("racecheck", 1, "boom", 1.0, "baseline")
    assert exc.value.kind == "failed"
    clean = _tool_run("racecheck", 0, report("clean"), 1.0, "baseline")
    assert clean.findings == () and clean.note == ""
    assert _tool_run("racecheck", ERROR_EXITCODE, report("racecheck"), 1, "b").findings[0].own


def test_a_kernel_that_faults_under_a_tool_without_findings_is_a_run_with_a_note():
    text = ("========= COMPUTE-SANITIZER\nsanitize_launch: original on case 'ragged': "
            "cuStreamSynchronize failed: an illegal memory access was encountered\n"
            "========= ERROR SUMMARY: 0 errors\n")
    run = _tool_run("racecheck", 4, text, 2.0, "original")
    assert run.findings == () and run.errors == 0
    assert run.note == ("sanitize_launch: original on case 'ragged': cuStreamSynchronize "
                        "failed: an illegal memory access was encountered")
