"""cudalens/sanitizer_status.py: the sanitizer check's outcome as a run's record keeps it (clean,
findings with their lines, not run and why), its JSON form, and the stored run carrying it."""

from __future__ import annotations

import dataclasses

import pytest

from cudalens.sanitize_check import locate
from cudalens.sanitizer_status import SanitizerStatus, from_dict, from_located, not_run
from cudalens.store import records
from gpu_runner.sanitizer_text import Finding


def _located():
    own = Finding("initcheck", "uninitialized read", "Uninitialized __global__ memory read",
                  own=True, line=2, file="cudalens-variant.cu")
    header = Finding("racecheck", "race", "Race reported", file="/inc/util.cuh", line=9)
    text = "a\n    b = c;\n"
    return (locate(text, own), locate(text, header))


def test_a_finished_check_keeps_each_finding_at_its_line():
    status = from_located("k.cu", _located(), "the ragged case at n=1001 (memcheck 0.1 s)")
    assert status.state == "findings"
    assert status.reason == "the ragged case at n=1001 (memcheck 0.1 s)"
    own, header = status.findings
    assert (own.tool, own.kind, own.line, own.column, own.where) == (
        "initcheck", "uninitialized read", 2, 5, "k.cu:2:5")
    assert own.blocking is True and own.summary.startswith("uninitialized read")
    assert (header.line, header.column, header.where) == (None, None, "/inc/util.cuh:9")
    assert status.words == "2 finding(s) (the ragged case at n=1001 (memcheck 0.1 s))"
    clean = from_located("k.cu", (), "the ragged case at n=1001")
    assert (clean.state, clean.findings, clean.words) == (
        "clean", (), "clean (the ragged case at n=1001)")
    assert not_run("--no-sanitize was given").words == "not run: --no-sanitize was given"


def test_the_json_form_round_trips_and_bad_data_is_named():
    status = from_located("k.cu", _located(), "the ragged case")
    data = status.to_dict()
    assert data["state"] == "findings" and data["findings"][0] == {
        "tool": "initcheck", "kind": "uninitialized read",
        "summary": status.findings[0].summary, "blocking": True, "line": 2, "column": 5,
        "where": "k.cu:2:5"}
    assert from_dict(data) == status
    with pytest.raises(ValueError, match=r"sanitizer: expected an object with 'state' one of "
                                         r"clean, findings, not_run, found \{'state': 'ok'\}"):
        from_dict({"state": "ok"})
    with pytest.raises(ValueError, match=r"finding 1: expected tool, kind, summary"):
        from_dict({"state": "findings", "findings": [{"tool": "memcheck"}]})


def test_a_stored_run_keeps_the_status_and_older_records_load_without_it():
    import json

    from cudalens.store.records import from_dict as run_from_dict, to_dict
    from gpu_runner.report import CompileReport, DeviceInfo

    device = DeviceInfo(name="H200", compute_capability=(9, 0), sm_count=132, l2_bytes=1 << 26,
                        max_threads_per_block=1024, max_shared_bytes_per_block=49152,
                        sm_clock_mhz=1980, memory_clock_mhz=3201, driver_version="580",
                        cuda_driver_api=13000, copy_bandwidth_gbps=4388.0)
    run = records.RunRecord(
        key="k", path="/w/saxpy.cu", kernel="saxpy", base_sha="s", device=device, baseline=None,
        baseline_compile=CompileReport("baseline", True), bytes_moved=12, flops=2,
        threads_per_block=256, shared_bytes=0, spec_origin="saxpy.cu.spec", provenance="t",
        created="2026-12-02T07:00:00+00:00",
        sanitizer=from_located("/w/saxpy.cu", _located(), "the ragged case"))
    data = json.loads(json.dumps(to_dict(run)))
    assert data["sanitizer"]["state"] == "findings"
    assert run_from_dict(data) == run
    del data["sanitizer"]  # stored before runs kept it
    assert run_from_dict(data) == dataclasses.replace(run, sanitizer=None)
    assert isinstance(run.sanitizer, SanitizerStatus)
