"""Pieces of the language server without a client: positions, settings, progress wording,
edits, the roofline and occupancy, rebasing a candidate onto an edited file."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from harness import apply_text_edits  # noqa: E402
from recorded import ROOT, record  # noqa: E402

from cudalens.lsp.bottleneck import fp32_peak_gflops, occupancy, roofline  # noqa: E402
from cudalens.lsp.config import Settings, parse_settings  # noqa: E402
from cudalens.lsp.documents import analyze  # noqa: E402
from cudalens.lsp.edits import (Refused, SpecFile, candidate_text, create_spec_edit,  # noqa: E402
                                plan_apply, spec_launch_edit, text_edits)
from cudalens.engine.events import (BatchStarted, BestSoFar, Compiling, Confirming,  # noqa: E402
                                    Note, Timed, TimingRound, Verified, Verifying)
from cudalens.lsp.progress import BuiltinProgress  # noqa: E402
from cudalens.lsp.positions import LineIndex  # noqa: E402
from cudalens.lsp.results import KernelStatus  # noqa: E402
from cudalens.store.records import LaunchRecord  # noqa: E402
from cudalens.target import load_target  # noqa: E402
from cudalens.textfile import from_bytes  # noqa: E402

# "é" is 2 UTF-8 bytes and 1 UTF-16 unit; "🚀" is 4 UTF-8 bytes and 2 UTF-16 units.
LINE = "a/*é🚀*/ bad_name;"


@pytest.mark.parametrize("encoding, units", [("utf-8", 12), ("utf-16", 9), ("utf-32", 8)])
def test_positions_convert_bytes_and_characters_to_the_negotiated_encoding(encoding, units):
    index = LineIndex("first\n" + LINE + "\n", encoding)
    byte_col = LINE.encode().index(b"bad_name")  # 12 bytes in
    char_col = LINE.index("bad_name")  # 8 characters in
    assert index.from_byte(1, byte_col) == types.Position(1, units)
    assert index.from_char(1, char_col) == types.Position(1, units)
    assert index.to_char(types.Position(1, units)) == (1, char_col)
    assert index.to_byte(types.Position(1, units)) == (1, byte_col)
    assert index.token_range(1, char_col) == types.Range(types.Position(1, units),
                                                         types.Position(1, units + 8))


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_positions_count_a_byte_that_is_not_utf8_as_one_character(encoding):
    # A file read from disk that is not UTF-8 (cudalens.textfile): "\xe9" is one byte and one
    # character of its text, as an editor reading it as Latin-1 has it.
    text = from_bytes(b"first\na/*\xe9*/ bad_name;\n")
    index = LineIndex(text, encoding)
    assert index.from_byte(1, 7) == types.Position(1, 7)  # after the byte
    assert index.from_byte(1, 4) == types.Position(1, 4)
    assert index.to_byte(types.Position(1, 7)) == (1, 7)
    assert index.to_char(types.Position(1, 4)) == (1, 4)


def test_positions_line_range_skips_indentation_and_clamps():
    index = LineIndex("x\n    y = 1;  \n")
    assert index.line_range(1) == types.Range(types.Position(1, 4), types.Position(1, 10))
    assert index.to_char(types.Position(0, 99)) == (0, 1)
    assert index.end() == types.Position(2, 0)
    with pytest.raises(ValueError, match="expected a position encoding utf-8, utf-16 or utf-32, "
                                         "found 'latin-1'"):
        LineIndex("", "latin-1")


def test_settings_parse_nested_values_and_report_bad_ones():
    settings, problems = parse_settings({
        "runner": {"url": "http://gpu-box:8760", "token": 12345},
        "proposer": "llm", "budget": {"candidates": 0, "repetitions": 20, "seed": 7},
        "check": {"arch": "sm_80", "options": ["-DN=4"], "debounceMs": "fast"}})
    assert settings == Settings(runner_url="http://gpu-box:8760", proposer="llm", repetitions=20,
                                seed=7, arch="sm_80", nvcc_options=("-DN=4",))
    assert problems == [
        "cudalens.runner.token: expected a string, found a int; using the default",
        "cudalens.budget.candidates: expected an integer from 1 to 1000, found 0; using the "
        "default",
        "cudalens.check.debounceMs: expected an integer from 0 to 60000, found 'fast'; using the "
        "default"]
    assert "12345" not in repr(settings) and "token" not in repr(Settings(runner_token="s3cret"))
    assert parse_settings(None) == (Settings(), [])
    assert parse_settings(["x"])[1] == ["cudalens: expected an object of settings, found list"]


def _progress(candidates: int, first_batch: int = 0) -> BuiltinProgress:
    """A built-in run's progress after batches that sent ``candidates`` candidates, the last
    one of ``candidates - first_batch`` (labels c1, c2, ...)."""
    p = BuiltinProgress()
    if candidates:
        p.describe(BatchStarted(candidates, tuple(f"c{i}" for i in range(first_batch + 1,
                                                                        candidates + 1)),
                                "NVIDIA H200"))
    return p


@pytest.mark.parametrize("event, candidates, shown, percent", [
    (BatchStarted(12, tuple(f"c{i}" for i in range(1, 13)), "NVIDIA H200"), 0,
     "12 candidates proposed; running on NVIDIA H200", 5),
    (Compiling("baseline"), 12, "compiling the baseline", 5),
    (Compiling("c6"), 12, "compiling candidate 6/12", 12),
    (Verifying("c3", "ragged", 2), 12, "candidate 3/12: verifying against the baseline", 30),
    (Verifying("baseline", "nominal", 1, baseline=True), 12, "verifying the baseline", 20),
    (TimingRound(25, 50), 12, "timing round 25/50, baseline and candidates interleaved", 80),
    (Note("something new"), 12, "something new", None),
])
def test_progress_events_become_editor_words(event, candidates, shown, percent):
    assert _progress(candidates).describe(event) == (shown, percent)


def test_detail_events_show_nothing():
    p = _progress(12)
    assert p.describe(Verified("c1")) is None
    assert p.describe(Timed("c1", 3.5)) is None


def test_a_later_batch_counts_on():
    p = _progress(8)
    p.describe(BatchStarted(16, tuple(f"c{i}" for i in range(9, 17)), "NVIDIA H200"))
    assert p.describe(Compiling("c13")) == ("compiling candidate 13/16", 17)


def test_confirmation_run_counts_its_candidates_from_one():
    # the optimize flow times the 4 fastest of 24 again as c25..c28
    p = _progress(24)
    assert p.describe(Confirming(("c25", "c26", "c27", "c28"))) == \
        ("timing the 4 fastest candidates again, together with the baseline", 5)
    assert p.describe(Compiling("c26")) == ("compiling candidate 2/4", 12)
    assert p.describe(Verifying("c28", "nominal", 1)) == \
        ("candidate 4/4: verifying against the baseline", 60)


def test_the_best_speedup_so_far_follows_candidate_and_timing_messages():
    p = _progress(16)
    assert p.describe(BestSoFar(1.8312, "c11", 16)) == \
        ("best so far: 1.83x (c11, verified), 16 candidates", None)
    assert p.describe(Verifying("c11", "nominal", 1)) == \
        ("candidate 11/16: verifying against the baseline, best so far 1.83x", 47)
    assert p.describe(Compiling("c9")) == ("compiling candidate 9/16, best so far 1.83x", 13)
    assert p.describe(TimingRound(10, 50)) == \
        ("timing round 10/50, baseline and candidates interleaved, best so far 1.83x", 68)
    # not on the baseline's steps, nor on messages it does not know
    assert p.describe(Verifying("baseline", "nominal", 1, baseline=True)) == \
        ("verifying the baseline", 20)
    assert p.describe(Note("probe: the baseline alone")) == ("probe: the baseline alone", None)


def test_text_edits_turn_old_into_new_with_line_edits():
    old = "a\nb\nc\nd"
    new = "a\nB\nB2\nc\nd\ne\n"
    edits = text_edits(old, new, LineIndex(old))
    assert apply_text_edits(old, edits) == new
    assert [(e.range.start.line, e.range.end.line) for e in edits] == [(1, 2), (3, 3)]


def test_occupancy_and_roofline_on_h200_limits():
    occ = occupancy((9, 0), 256, 10, 0)
    assert (occ.blocks, occ.warps, occ.percent, occ.limiter) == (8, 64, 100.0, "block size")
    occ = occupancy((9, 0), 1024, 64, 0)  # 64 regs x 1024 threads = the whole register file
    assert (occ.blocks, occ.warps, occ.percent, occ.limiter) == (1, 32, 50.0, "registers")
    occ = occupancy((9, 0), 128, 32, 48 * 1024)  # (48 KB + 1 KB reserved) x 4 <= 228 KB
    assert (occ.blocks, occ.limiter) == (4, "shared memory")
    assert occupancy((6, 1), 256, 10, 0) is None
    peak = fp32_peak_gflops((9, 0), 132, 1980)
    assert peak == pytest.approx(2 * 128 * 132 * 1.98)  # 66.9 TFLOP/s
    roof = roofline(flops=2 * 2**25, bytes_moved=12 * 2**25, median_us=100.0, copy_gbps=4000.0,
                    peak_gflops=peak)
    assert roof.bound == "memory" and roof.intensity == pytest.approx(1 / 6)
    # 4026.5 GB/s achieved = 100.7% of the 4000 GB/s memory roof at this intensity
    assert roof.percent_of_bound == pytest.approx(100.0 * (12 * 2**25 / 100e3) / 4000.0)


SPEC = """# comment
kernel saxpy
size n = 1 << 25
scalar n: int = n
scalar a: float = 2.5
in x: float[n]
inout y: float[n]
block = 256   # threads
grid = ceil_div(n, block.x)

kernel other
block = 64
grid = 1
"""


def test_spec_launch_edit_changes_only_the_kernels_section():
    from cudalens.spec.parser import parse_spec

    spec = parse_spec(SPEC.split("\nkernel other")[0] + "\n", "s.cu.spec")["saxpy"]
    edit = spec_launch_edit(SpecFile("file:///s.cu.spec", SPEC, 4), spec,
                            LaunchRecord(block=("128",), grid=("ceil_div(n, block.x * 4)",),
                                         shared="512"))
    assert edit.text_document.version == 4
    new = apply_text_edits(SPEC, list(edit.edits))
    assert new == SPEC.replace("block = 256   # threads", "block = 128   # threads").replace(
        "grid = ceil_div(n, block.x)\n", "grid = ceil_div(n, block.x * 4)\nshared = 512\n")


BEST = "vec4+gridstride block=128 grid=full"


@pytest.fixture(scope="module")
def saxpy_run():
    """saxpy's recorded results, with stand-in sources: "restrict" changes only the kernel's
    signature; the best candidate also adds a struct above the kernel, as vec4 does."""
    from cudalens.store.keys import result_key

    target = load_target(ROOT / "examples" / "saxpy.cu", "saxpy")
    text = target.text
    snap = analyze("file:///w/saxpy.cu", target.path, 1, text, "utf-16")
    restrict = text.replace("const float* x, float* y)",
                            "const float* __restrict__ x, float* __restrict__ y)", 1)
    vec4 = text.replace("__global__", "struct alignas(16) f4 { float v[4]; };\n\n__global__", 1) \
        .replace("y[i] = a * x[i] + y[i];", "y[i] = fmaf(a, x[i], y[i]);")
    assert restrict != text and vec4.count("fmaf") == 1
    key = result_key(snap.kernels[0].material, "NVIDIA H200/sm_90/132")
    return snap, record("saxpy", key, str(target.path), text, {BEST: vec4, "restrict": restrict})


def _status(snap, run, rejected=frozenset()):
    offers = run.offers(rejected)
    return KernelStatus(view=snap.kernels[0], key=run.key, current=run, stale=None,
                        offer=offers[0] if offers else None, rejected=rejected)


def test_apply_plan_is_versioned_and_refuses_stale_or_rejected(saxpy_run):
    snap, run = saxpy_run
    best = run.offers()[0]
    plan = plan_apply(snap, _status(snap, run), best.id, 1, None)
    change = plan.edit.document_changes[0]
    assert change.text_document.version == 1
    assert apply_text_edits(snap.text, list(change.edits)) == best.source
    assert plan.material is None  # launch changed and no spec file given to record it
    assert (plan.threads_per_block, plan.shared_bytes) == (128, 0)  # the candidate's block
    assert "block = 128; grid = ceil_div(n, block.x * 4)" in plan.launch_note
    with pytest.raises(Refused, match=r"changed since this candidate was offered \(version 0, "
                                      r"now 1\)"):
        plan_apply(snap, _status(snap, run), best.id, 0, None)
    stale = dataclasses.replace(_status(snap, run), current=None, stale=run, offer=None)
    with pytest.raises(Refused, match=r"the candidate for saxpy is stale \(measured 2026-11-29\)"):
        plan_apply(snap, stale, best.id, 1, None)
    with pytest.raises(Refused, match="was rejected for this source"):
        plan_apply(snap, _status(snap, run, frozenset({best.id})), best.id, 1, None)
    with pytest.raises(Refused, match="candidate nope is not among the current results"):
        plan_apply(snap, _status(snap, run), "nope", 1, None)


def test_candidate_rebases_onto_edits_outside_the_kernel_only_when_exact(saxpy_run):
    snap, run = saxpy_run
    # another kernel added below: the kernel's context (everything but other kernels) is equal
    extra = snap.text + "\n__global__ void unrelated(float* p) { p[0] = 1.0f; }\n"
    snap2 = analyze(snap.uri, snap.path, 2, extra, "utf-16")
    restrict = next(c for c in run.candidates if c.label == "restrict")
    rebased = candidate_text(snap2, snap2.kernels[0], run, restrict)
    assert rebased == restrict.source + "\n__global__ void unrelated(float* p) { p[0] = 1.0f; }\n"
    # the vec4 candidate also adds a helper struct above the kernel: not rebased, refused
    vec4 = run.offers()[0]
    assert vec4.label == BEST
    with pytest.raises(Refused, match="also changes code outside the kernel; run Optimize again"):
        candidate_text(snap2, snap2.kernels[0], run, vec4)


def test_create_spec_edit_creates_or_appends(tmp_path):
    text = (ROOT / "examples" / "transpose.cu").read_text()
    snap = analyze("file:///w/t.cu", tmp_path / "t.cu", 3, text, "utf-16")
    view = snap.kernels[0]
    assert view.spec_origin == "inferred"
    edit = create_spec_edit(snap, view, tmp_path / "t.cu.spec", None)
    create, insert = edit.document_changes
    assert isinstance(create, types.CreateFile) and create.uri.endswith("/t.cu.spec")
    body = insert.edits[0].new_text
    assert body.splitlines()[2:4] == ["kernel transpose_naive",
                                      "# block 32, 8: GUESS, the default for a body that uses "
                                      "threadIdx.y (no launch site with a literal block)"]
    existing = SpecFile("file:///w/t.cu.spec", "kernel other\nblock = 1\ngrid = 1\n", 7)
    edit = create_spec_edit(snap, view, tmp_path / "t.cu.spec", existing)
    (only,) = edit.document_changes
    assert only.text_document.version == 7
    assert only.edits[0].range.start == types.Position(3, 0)
    assert only.edits[0].new_text.startswith("\nkernel transpose_naive\n")


def test_as_changes_drops_versions_for_clients_without_document_changes(saxpy_run):
    from cudalens.lsp.edits import as_changes

    snap, run = saxpy_run
    plan = plan_apply(snap, _status(snap, run), run.offers()[0].id, 1, None)
    plain = as_changes(plan.edit)
    assert plain.document_changes is None
    assert apply_text_edits(snap.text, plain.changes[snap.uri]) == run.offers()[0].source
    creating = types.WorkspaceEdit(document_changes=[types.CreateFile(uri="file:///w/x.spec")])
    with pytest.raises(Refused, match="creates a file"):
        as_changes(creating)
