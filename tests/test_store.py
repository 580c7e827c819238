"""The results store: keys, records and the SQLite file (no server, no GPU).

Records carry numbers recorded on a real H200 (``tests/data/lsp/recorded.py``); one test
builds a record from a whole optimize run answered by the model runner (modelled times, NOT
measurements: ``tests/data/lsp/model_runner.py``).
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from recorded import ROOT, record, recorded_run  # noqa: E402
from model_runner import ModelRunnerClient, model_time_us  # noqa: E402

from cudalens.optimize import optimize  # noqa: E402
from cudalens.source.parser import parse_source  # noqa: E402
from cudalens.store import (ResultsStore, StoreError, device_id, from_dict, kernel_context,  # noqa: E402
                            material_key, result_key, sha256_text, source_materials, to_dict)
from cudalens.store.from_optimize import run_record  # noqa: E402
from cudalens.target import load_target  # noqa: E402

TWO_KERNELS = """\
#define SCALE 2.0f
__global__ void first(float* a) { a[threadIdx.x] *= SCALE; }
__device__ float helper(float x) { return x + 1.0f; }
__global__ void second(float* b) { b[threadIdx.x] = helper(b[threadIdx.x]); }
"""


SAXPY = (ROOT / "examples" / "saxpy.cu").read_text()


@pytest.fixture(scope="module")
def saxpy_record():
    """Every recorded saxpy candidate, each with a distinct stand-in source."""
    key = result_key(material_key("ctx", "saxpy", "spec", ()), "NVIDIA H200/sm_90/132")
    sources = {c["label"]: SAXPY + f"// candidate {c['label']}\n"
               for c in recorded_run("saxpy")["candidates"]}
    return record("saxpy", key, "/w/saxpy.cu", SAXPY, sources)


def test_kernel_context_drops_only_the_other_kernels():
    src = parse_source(TWO_KERNELS, "two.cu")
    first, second = src.kernels
    assert kernel_context(src, second) == (
        "#define SCALE 2.0f\n"
        "__device__ float helper(float x) { return x + 1.0f; }\n"
        "__global__ void second(float* b) { b[threadIdx.x] = helper(b[threadIdx.x]); }\n")
    edited = TWO_KERNELS.replace("*= SCALE", "*= SCALE * SCALE")
    src2 = parse_source(edited, "two.cu")
    # editing `first` leaves `second`'s context alone, and changes its own
    assert kernel_context(src2, src2.kernels[1]) == kernel_context(src, second)
    assert kernel_context(src2, src2.kernels[0]) != kernel_context(src, first)
    # blank lines around another kernel do not count; the kernel's own do
    spaced = TWO_KERNELS.replace("__device__", "\n\n__device__")
    src3 = parse_source(spaced, "two.cu")
    assert kernel_context(src3, src3.kernels[1]) == kernel_context(src, second)


def test_material_key_depends_on_each_part():
    base = material_key("ctx", "k", "spec", ("-O3",))
    assert len(base) == 64
    assert base == material_key("ctx", "k", "spec", ("-O3",))
    variants = {material_key("ctx2", "k", "spec", ("-O3",)),
                material_key("ctx", "k2", "spec", ("-O3",)),
                material_key("ctx", "k", "spec2", ("-O3",)), material_key("ctx", "k", "spec", ()),
                # part boundaries are length-prefixed: moving text between parts changes the key
                material_key("ct", "xk", "spec", ("-O3",))}
    assert base not in variants and len(variants) == 5
    assert result_key(base, "NVIDIA H200/sm_90/132") != result_key(base, "NVIDIA H100/sm_90/132")


def test_device_id_names_gpu_architecture_and_sms(saxpy_record):
    assert device_id(saxpy_record.device) == "NVIDIA H200/sm_90/132"


def test_run_record_from_an_optimize_run_holds_its_numbers():
    from cudalens.spec.resolve import build_variant

    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    result = optimize(target, ModelRunnerClient(), budget=24)
    rec = run_record(result, key="k" * 64, provenance="model", created="2026-11-29T23:00:00",
                     budget=24, seed=0)
    baseline = build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                             target.spec.launch, result.device.sm_count)
    assert rec.baseline.median_us == model_time_us(result.problem, baseline)
    assert rec.bytes_moved == 3 * 4 * (1 << 25)  # x read, y read and written: floats
    assert rec.flops == 2 * (1 << 25)
    assert rec.threads_per_block == 256
    assert rec.path == str(target.path.resolve()) and rec.kernel == "saxpy"
    assert [c.label for c in rec.candidates] == [r.candidate.label for r in result.rows]
    best = rec.offers()[0]
    assert best.label == result.winner.candidate.label
    assert best.result.speedup.value == result.winner.result.speedup.value
    assert best.source == result.winner.candidate.source and len(best.id) == 16
    # every other significant row is offered after it, with its own numbers
    others = {r.candidate.label: r.result.speedup.value for r in result.rows
              if r.candidate.label != best.label and r.result.speedup
              and r.result.speedup.ci_low > 1.0}
    assert others, "the model gives saxpy more than one significant candidate"
    assert {c.label: c.result.speedup.value for c in rec.offers()[1:]} == others


def test_offers_follow_the_recorded_verdicts(saxpy_record):
    run = recorded_run("saxpy")
    best = saxpy_record.offers()[0]
    assert best.label == run["winner"]["label"] == "vec4+gridstride block=128 grid=full"
    assert best.result.speedup.value == run["winner"]["speedup"]["value"]
    assert saxpy_record.best_verified().label == best.label


def test_offers_are_significant_fastest_first_and_skip_rejected(saxpy_record):
    offers = saxpy_record.offers()
    assert all(c.result.speedup.ci_low > 1.0 and c.result.verdict.ok for c in offers)
    speeds = [c.result.speedup.value for c in offers]
    assert speeds == sorted(speeds, reverse=True)
    assert offers[0].id not in [c.id for c in saxpy_record.offers(frozenset({offers[0].id}))]
    assert saxpy_record.offers(frozenset({offers[0].id}))[0].id == offers[1].id


def test_record_round_trips_through_json(saxpy_record):
    again = from_dict(json.loads(json.dumps(to_dict(saxpy_record))))
    assert again == saxpy_record
    with pytest.raises(ValueError, match="expected a stored run record"):
        from_dict({"key": "x"})


def test_store_keeps_runs_rejections_and_facts_across_reopen(tmp_path, saxpy_record):
    db = tmp_path / ".cudalens" / "results.db"
    store = ResultsStore(db)
    older = dataclasses.replace(saxpy_record, created="2026-11-28T00:00:00+00:00")
    store.put_run(older)
    store.put_run(saxpy_record)
    other = dataclasses.replace(saxpy_record, key="f" * 64, path="/elsewhere/saxpy.cu")
    store.put_run(other)
    store.reject(saxpy_record.key, saxpy_record.candidates[0].id, "2026-11-29T23:01:00+00:00")
    store.set_fact("device:", "NVIDIA H200/sm_90/132")
    store.close()

    store = ResultsStore(db)
    assert store.run_count() == 3
    assert store.run_for_key(saxpy_record.key) == saxpy_record  # the newest of that key
    assert store.run_for_key("0" * 64) is None
    assert store.latest_run(saxpy_record.path, "saxpy") == saxpy_record
    assert store.latest_run("/elsewhere/saxpy.cu", "saxpy").key == "f" * 64
    assert store.latest_run(saxpy_record.path, "other_kernel") is None
    assert store.rejected(saxpy_record.key) == frozenset({saxpy_record.candidates[0].id})
    assert store.rejected(other.key) == frozenset()
    assert store.get_fact("device:") == "NVIDIA H200/sm_90/132"
    assert store.get_fact("missing") is None


def test_store_refuses_a_file_that_is_not_a_results_store(tmp_path):
    bad = tmp_path / "results.db"
    bad.write_text("this is not sqlite, it is text " * 100)
    with pytest.raises(StoreError, match=r"results\.db: expected a cudalens results store"):
        ResultsStore(bad)


def test_store_refuses_another_schema_version(tmp_path):
    db = tmp_path / "results.db"
    ResultsStore(db).close()
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value = '99' WHERE name = 'schema'")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match="expected results store schema 1, found 99"):
        ResultsStore(db)


def test_sha256_text_hashes_utf8_bytes():
    import hashlib

    assert sha256_text("π") == hashlib.sha256(b"\xcf\x80").hexdigest()


def _materials(text: str) -> dict[str, str]:
    src = parse_source(text, "two.cu")
    specs = {(k.start_byte, k.end_byte): f"spec of {k.name}" for k in src.kernels}
    found = source_materials(src, specs, ())
    return {k.name: found[(k.start_byte, k.end_byte)] for k in src.kernels}


def test_source_materials_change_only_with_the_kernel_or_what_it_sees():
    base = _materials(TWO_KERNELS)
    assert len(set(base.values())) == 2
    # another kernel edited, added or removed: `second` keeps its key
    edited = _materials(TWO_KERNELS.replace("*= SCALE", "*= SCALE * SCALE"))
    assert edited["second"] == base["second"] and edited["first"] != base["first"]
    added = _materials(TWO_KERNELS.replace("__device__", "__global__ void third(int* p) {}\n"
                                                         "__device__"))
    assert added["second"] == base["second"] and added["first"] == base["first"]
    removed = _materials(TWO_KERNELS.replace(
        "__global__ void first(float* a) { a[threadIdx.x] *= SCALE; }\n", ""))
    assert removed["second"] == base["second"]
    # re-indenting and blank lines do not count (line breaks do: they end preprocessor lines)
    spaced = _materials(TWO_KERNELS.replace("{ b[", "{\t  b[").replace("\n__device__",
                                                                      "\n\n\n__device__"))
    assert spaced == base
    # what the kernel sees does: a macro, a helper, its own body, its name
    assert _materials(TWO_KERNELS.replace("2.0f", "3.0f"))["second"] != base["second"]
    assert _materials(TWO_KERNELS.replace("x + 1.0f", "x + 2.0f"))["second"] != base["second"]
    assert _materials(TWO_KERNELS.replace("helper(b[", "2.0f * helper(b["))["second"] != \
        base["second"]
    # and where it sits relative to the rest: moved above the helper it calls
    lines = TWO_KERNELS.splitlines(keepends=True)
    moved = "".join([lines[0], lines[1], lines[3], lines[2]])
    assert _materials(moved)["first"] == base["first"]
    assert _materials(moved)["second"] != base["second"]
