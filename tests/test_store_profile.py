"""Profiles in the results store: a file written before profiles existed (no ``runs.profile``
column) is migrated on open and its runs read back without a profile; a profile stored with a
run (or set on it later) reads back equal; the record's JSON never holds it, so an older
cudalens still reads the file. Real SQLite files; the profile is parsed from ncu's real CSV
format (tests/data/ncu/saxpy_metrics.csv); run numbers are those recorded on an H200."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from recorded import ROOT, record, recorded_run  # noqa: E402

from cudalens.store import ResultsStore, StoreError, from_dict, material_key, result_key, to_dict  # noqa: E402,E501
from cudalens.store.records import BASELINE, RunProfile  # noqa: E402
from gpu_runner.ncu_csv import parse_profile  # noqa: E402

PROFILE = parse_profile((ROOT / "tests" / "data" / "ncu" / "saxpy_metrics.csv").read_text())
SAXPY = (ROOT / "examples" / "saxpy.cu").read_text()

# The store's tables as the first version of ResultsStore wrote them (schema 1, no profile).
OLD_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, path TEXT NOT NULL,
    kernel TEXT NOT NULL, device TEXT NOT NULL, base_sha TEXT NOT NULL, created TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX runs_by_key ON runs (key, id);
CREATE INDEX runs_by_kernel ON runs (path, kernel, id);
CREATE TABLE rejections (key TEXT NOT NULL, candidate TEXT NOT NULL, created TEXT NOT NULL,
    PRIMARY KEY (key, candidate));
INSERT INTO meta VALUES ('schema', '1');
"""


@pytest.fixture(scope="module")
def run():
    key = result_key(material_key("ctx", "saxpy", "spec", ()), "NVIDIA H200/sm_90/132")
    sources = {c["label"]: SAXPY + f"// candidate {c['label']}\n"
               for c in recorded_run("saxpy")["candidates"][:2]}
    return record("saxpy", key, "/w/saxpy.cu", SAXPY, sources)


def old_file(path: Path, run) -> None:
    con = sqlite3.connect(path)
    con.executescript(OLD_SCHEMA)
    data = to_dict(run)
    data.pop("profile")
    con.execute("INSERT INTO runs (key, path, kernel, device, base_sha, created, record) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (run.key, run.path, run.kernel,
                                                  "NVIDIA H200/sm_90/132", run.base_sha,
                                                  run.created, json.dumps(data)))
    con.commit()
    con.close()


def columns(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [r[1] for r in con.execute("PRAGMA table_info(runs)")]
    finally:
        con.close()


def test_an_old_file_is_migrated_and_keeps_its_runs(tmp_path, run):
    db = tmp_path / "results.db"
    old_file(db, run)
    assert "profile" not in columns(db)
    store = ResultsStore(db)
    assert columns(db)[-1] == "profile"
    got = store.run_for_key(run.key)
    assert got == run and got.profile is None
    assert store.latest_run(run.path, "saxpy") == run
    assert store.get_fact("schema") == "1"
    # a profile set on the old run afterwards
    prof = RunProfile(subject=run.candidates[0].id, label=run.candidates[0].label,
                      created="2026-11-30T01:00:00+00:00", profile=PROFILE)
    assert store.set_profile(run.key, prof) is True
    assert store.set_profile("0" * 64, prof) is False
    store.close()
    again = ResultsStore(db)  # opening a migrated file again changes nothing
    assert columns(db).count("profile") == 1
    assert again.run_for_key(run.key).profile == prof
    again.close()


def test_a_profile_round_trips_outside_the_record_json(tmp_path, run):
    db = tmp_path / "results.db"
    store = ResultsStore(db)
    prof = RunProfile(subject=BASELINE, label=BASELINE, created="2026-11-30T01:00:00+00:00",
                      profile=PROFILE)
    missing = RunProfile(subject=BASELINE, label=BASELINE, created="2026-11-30T01:00:00+00:00",
                         reason="Nsight Compute (ncu) was not found on PATH")
    with_prof = dataclasses.replace(run, profile=prof)
    store.put_run(with_prof)
    got = store.run_for_key(run.key)
    assert got == with_prof
    p = got.profile.profile
    assert (p.kernel, p.achieved_occupancy_pct, p.dram_throughput_pct) == ("saxpy", 83.47, 91.22)
    assert [s.reason for s in p.stalls] == ["long scoreboard", "lg throttle", "wait"]
    store.put_run(dataclasses.replace(run, key="f" * 64, profile=missing))
    assert store.run_for_key("f" * 64).profile == missing
    store.close()
    # what an older cudalens reads: the record column alone, which holds no profile
    con = sqlite3.connect(db)
    rows = con.execute("SELECT record, profile FROM runs ORDER BY id").fetchall()
    con.close()
    assert all("profile" not in json.loads(r[0]) for r in rows)
    assert from_dict(json.loads(rows[0][0])) == run
    assert json.loads(rows[0][1])["profile"]["achieved_occupancy_pct"] == 83.47
    assert json.loads(rows[1][1])["profile"] is None


def test_an_unreadable_profile_is_a_store_error(tmp_path, run):
    db = tmp_path / "results.db"
    store = ResultsStore(db)
    store.put_run(run)
    store.close()
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET profile = ?", (json.dumps({"subject": "baseline"}),))
    con.commit()
    con.close()
    store = ResultsStore(db)
    with pytest.raises(StoreError) as e:
        store.run_for_key(run.key)
    assert str(e.value).startswith(f"{db}: the profile of a stored run of saxpy cannot be "
                                   f"read back (expected a stored run profile, found invalid "
                                   f"data: ")
    assert "label" in str(e.value)
    store.close()
