"""End to end (pytest-lsp): optimizing a kernel from the editor, with the deterministic model
runner (``tests/data/lsp/model_runner.py``: times from a model of bytes moved and the
candidate's structure, NOT measurements), so no GPU and no recording is needed and any change
to the optimizer's search is accepted.

Expected texts are built from the optimizer's own search run in-process against the same model
(``tests/data/lsp/expected.py``), so a test fails if the server shows a number, label or diff
other than the one the search found.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import difflib
import sqlite3
import sys
from pathlib import Path

import pytest
from lsprotocol import types

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))

from expected import (expected, launch_words, offer_lens, spec_launch_lines,  # noqa: E402
                      speedup_ci, speedup_x, us_words)
from harness import RUNNER_FACTORY, SERVER_COMMAND, TEST_SETTINGS, copy_example, editor  # noqa: E402,E501
from model_runner import MODEL_DEVICE, STEP_ENV  # noqa: E402
from cudalens.lsp.wording import short_device  # noqa: E402

CHECK_TITLE = "Check this kernel for races and memory errors"  # cudalens.lsp.sanitize_action.TITLE


def today() -> str:
    """The UTC date the server stamps on a run made now (results carry the date of the run)."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")

pytestmark = pytest.mark.asyncio

# Every expected number, label and diff below comes from the search run against the model.
SAXPY = expected("saxpy", TEST_SETTINGS["budget"]["candidates"],
                 TEST_SETTINGS["budget"]["repetitions"])
BEST, SECOND = SAXPY.best, SAXPY.second
BASE = SAXPY.baseline
MEASURED = SAXPY.measured_lens()
SHORT = short_device(MODEL_DEVICE)  # the device as lenses and warnings name it
SIGNATURE = "__global__ void saxpy(int n, float a, const float* x, float* y)"
NAME = types.Range(types.Position(3, 16), types.Position(3, 21))
_x, _ci = speedup_x, speedup_ci


def titles(lenses) -> list[tuple[str, str]]:
    return [(lens.command.title, lens.command.command) for lens in lenses]


def ended(client, token: str):
    return [p for p in client.progress_reports.get(token, []) if p.kind == "end"]


async def optimize(client, uri: str, line: int = 3) -> dict:
    """Runs the "Optimize kernel" code action and waits for its progress to end."""
    action = next(a for a in await client.code_actions(uri, line)
                  if a.command and a.command.command == "cudalens.optimize")
    started = await client.run(action.command)
    assert started["ok"], started
    await client.wait_for(lambda: ended(client, started["token"]), what="the optimization")
    return started


def action(actions, command: str) -> types.CodeAction:
    return next(a for a in actions if a.command and a.command.command == command)


async def test_optimize_shows_lenses_diagnostics_hints_hover_and_actions(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        lenses = await client.code_lenses(uri)
        assert titles(lenses) == [("Optimize", "cudalens.optimize"), ("Capture a real launch", "cudalens.captureLaunch")]
        assert lenses[0].range.start == types.Position(3, 0)
        assert [a.title for a in await client.code_actions(uri, 5)] == \
            ["Optimize kernel saxpy (built-in passes)", CHECK_TITLE]

        started = await optimize(client, uri)
        reports = client.progress_reports[started["token"]]
        assert (reports[0].kind, reports[0].title, reports[0].cancellable) == \
            ("begin", "Optimize saxpy (built-in passes)", True)
        messages = [p.message for p in reports]
        # each search batch of the run, in order, with cumulative counts
        assert [m for m in messages if "candidates proposed" in m] == SAXPY.proposed_messages()
        search = messages[:messages.index(SAXPY.confirming_message())] if SAXPY.confirmed \
            else messages
        assert [m for m in search if ": verifying against the baseline" in m
                and m.startswith("candidate ")] == SAXPY.verifying_messages()
        assert len(SAXPY.verifying_messages()) == sum(SAXPY.search_batches) > 1
        # from the second batch on, the fastest verified speedup so far is shown
        assert SAXPY.best_so_far()[0] == "" and SAXPY.best_so_far()[1].endswith("x")
        if SAXPY.confirmed:  # the confirmation run counts its own candidates from 1
            confirm = messages[messages.index(SAXPY.confirming_message()):]
            assert [m for m in confirm if ": verifying against the baseline" in m
                    and m.startswith("candidate ")] == SAXPY.confirming_verify_messages()
        assert reports[-1].message == SAXPY.final_message()
        # the label names one row only, so the checks on it below pin that row
        assert [r["label"] for r in SAXPY.run["candidates"]].count(BEST["label"]) == 1

        assert titles(await client.code_lenses(uri)) == [
            (MEASURED, ""), ("Optimize again", "cudalens.optimize"),
            (offer_lens(BEST), "cudalens.showDiff"),
            ("apply", "cudalens.apply"), ("reject", "cudalens.reject"), ("Capture a real launch", "cudalens.captureLaunch")]
        info = await client.wait_for(lambda: [d for d in client.diagnostics_for(uri)
                                              if d.source == "cudalens"], what="results")
        assert [(d.severity, d.range, d.message) for d in info] == [
            (types.DiagnosticSeverity.Information, NAME,
             f"saxpy: verified candidate {_ci(BEST)} faster on {SAXPY.device}: {BEST['label']}")]
        assert BEST["label"] == SAXPY.run["winner"]["label"] != SECOND["label"]

        hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(20, 0))))
        copy_note = (f"copy bandwidth {MODEL_DEVICE.copy_bandwidth_gbps:,.0f} GB/s on "
                     f"{SAXPY.device}: the fastest of a 16-byte copy, vector add and read-only "
                     f"kernel, each timed as kernels are, after an L2 flush")
        assert [(h.position, h.label, h.tooltip) for h in hints] == [
            (types.Position(3, len(SIGNATURE)),
             f"{us_words(BASE['median_us'])}, {BASE['percent_of_copy']:.0f}% of copy bandwidth",
             f"median of {BASE['samples']} timed launches on {SAXPY.device}; {copy_note}")]

        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri), position=types.Position(3, 18)))
        text = hover.contents.value
        assert hover.range == NAME
        assert f"**saxpy** on {SAXPY.device}: **{us_words(BASE['median_us'])}** median" in text
        assert f"{BASE['achieved_gbps']:,.0f} GB/s = {BASE['percent_of_copy']:.0f}% of copy " \
               f"bandwidth ({copy_note})" in text
        bandwidth = next(l for l in text.splitlines() if l.startswith("- bandwidth: "))
        assert "peak" not in bandwidth
        assert "**memory-bound**" in text
        assert "occupancy (theoretical): 100% (64/64 warps, 8 blocks of 256 threads per SM" in text
        assert f"registers: {SAXPY.run['baseline_compile']['registers']} per thread" in text
        assert "stall reasons: not profiled" in text
        assert f"Candidate **{BEST['label']}**: {_ci(BEST)} faster" in text
        assert f"Candidate **{SECOND['label']}**" not in text
        assert SAXPY.provenance in text and "not measured on any GPU" in text

        actions = await client.code_actions(uri, 5)
        assert [a.title for a in actions] == [
            "Optimize kernel saxpy again (built-in passes)",
            f"Apply candidate ({_x(BEST)}, verified)",
            f"Show diff of candidate ({BEST['label']})",
            f"Reject candidate ({_x(BEST)}, {BEST['label']})", CHECK_TITLE]

        shown = await client.run(action(actions, "cudalens.showDiff").command)
        assert shown["diff"].splitlines()[:2] == ["--- a/saxpy.cu", "+++ b/saxpy.cu"]
        assert shown["diff"].splitlines()[2:] == SAXPY.diff.splitlines()[2:]
        diff_file = Path(shown["path"])
        assert diff_file.parent == tmp_path / ".cudalens" / "diffs"
        # the shown file: the header, the kernel's diff, then its launch sites' (``host``)
        assert diff_file.read_text().endswith(shown["diff"] + shown["host"])
        assert [d.uri for d in client.shown_documents] == [diff_file.as_uri()]


async def test_apply_sends_a_versioned_edit_and_the_spec_follows(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    spec = tmp_path / "saxpy.cu.spec"
    async with editor(tmp_path) as client:
        uri = client.open(path)
        await optimize(client, uri)
        apply = action(await client.code_actions(uri, 5), "cudalens.apply")
        answer = await client.run(apply.command)
        assert answer["ok"] and answer["applied"] and answer["version"] == 1

        (edit,) = client.applied_edits
        source_edit, spec_edit = edit.edit.document_changes
        assert (source_edit.text_document.uri, source_edit.text_document.version) == (uri, 1)
        assert spec_edit.text_document.uri == spec.as_uri()
        # the editor's text now differs from the original exactly by the winner's diff
        diff = difflib.unified_diff(path.read_text().splitlines(True),
                                    client.text(uri).splitlines(True), "a", "b")
        assert list(diff)[2:] == SAXPY.diff.splitlines(True)[2:]
        assert client.doc_version(uri) == 2
        assert spec_launch_lines(BEST) in spec.read_text()
        assert spec_launch_lines(BEST) != spec_launch_lines(SECOND)  # the launch is told apart
        assert client.messages[-1].message.startswith(
            f"Applied {BEST['label']} to saxpy: {_ci(BEST)} faster, verified against the original "
            f"on {SAXPY.device}. The speedup was measured with {launch_words(BEST)}: the spec now "
            f"says so")

        # the applied kernel shows the time it was measured at, not "stale"
        t = BEST["timing"]
        want = (f"{us_words(t['median_us'])}, {t['percent_of_copy']:.0f}% of copy bandwidth, "
                f"{SHORT}")
        lenses = await client.wait_for(
            lambda: _lens_titles_containing(client, uri, "(applied candidate)"),
            what="applied lens")
        assert lenses[0] == (f"{want} (applied candidate)", "")
        assert [d for d in client.diagnostics_for(uri)
                if d.severity == types.DiagnosticSeverity.Warning] == []
        kernel_line = next(i for i, text in enumerate(client.text(uri).splitlines())
                           if text.startswith("__global__"))
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(kernel_line, 18)))
        assert "the applied candidate, as measured in its run" in hover.contents.value
        threads = BEST["launch"]["block"]
        assert len(threads) == 1, f"saxpy's winner has a 1-D block, found {threads}"
        assert f"blocks of {threads[0]} threads per SM" in hover.contents.value


async def _lens_titles_containing(client, uri, text):
    found = titles(await client.code_lenses(uri))
    return found if any(text in t for t, _ in found) else None


async def test_stale_candidate_is_refused_with_a_message_and_can_be_rerun(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        await optimize(client, uri)
        apply_v1 = action(await client.code_actions(uri, 5), "cudalens.apply").command
        original = client.text(uri)
        client.change(uri, original.replace("a * x[i] + y[i]", "a * x[i] + y[i] + 1.0f"))
        warning = await client.wait_for(
            lambda: [d for d in client.diagnostics_for(uri)
                     if d.severity == types.DiagnosticSeverity.Warning], what="stale warning")
        assert [(d.range, d.message) for d in warning] == [
            (NAME, f"saxpy: results from {today()} on {SHORT} are stale: the kernel, its spec or "
                   "the device changed since; run Optimize again")]
        assert titles(await client.code_lenses(uri)) == [
            (f"stale: results from {today()} on {SHORT}", ""), ("Optimize", "cudalens.optimize"),
            ("Capture a real launch", "cudalens.captureLaunch")]
        assert [a.title for a in await client.code_actions(uri, 5)] == [
            "Optimize kernel saxpy (built-in passes, results are stale)", CHECK_TITLE]

        refused = await client.run(apply_v1)
        assert refused == {"ok": False, "reason": (
            "saxpy.cu changed since this candidate was offered (version 1, now 2); ask for the "
            "code actions or lenses again")}
        assert client.messages[-1].message == \
            f"cudalens: candidate not applied: {refused['reason']}"
        fresh = dict(apply_v1.arguments[0], version=2)
        refused = await client.run(types.Command(title="Apply", command="cudalens.apply",
                                                 arguments=[fresh]))
        assert refused["reason"].startswith(f"the candidate for saxpy is stale (measured "
                                            f"{today()}): the kernel, its spec")
        assert client.applied_edits == []

        # back to the measured text: the results are current again and apply works
        client.change(uri, original)
        again = action(await client.code_actions(uri, 5), "cudalens.apply").command
        assert again.arguments[0]["version"] == 3
        assert (await client.run(again))["applied"] is True
        assert client.applied_edits[0].edit.document_changes[0].text_document.version == 3


async def test_reject_offers_the_next_candidate_and_results_survive_restart(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        await optimize(client, uri)
        reject = action(await client.code_actions(uri, 5), "cudalens.reject").command
        assert (await client.run(reject))["ok"] is True
        assert client.messages[-1].message == (f"Rejected {BEST['label']} for saxpy; it will not "
                                               "be offered again for this source.")
        # the next-best verified candidate of the run is offered now
        assert SECOND["label"] != BEST["label"]
        assert titles(await client.code_lenses(uri))[2] == \
            (offer_lens(SECOND), "cudalens.showDiff")
        assert await _offered(client, uri) == [
            "Optimize kernel saxpy again (built-in passes)",
            f"Apply candidate ({_x(SECOND)}, verified)",
            f"Show diff of candidate ({SECOND['label']})",
            f"Reject candidate ({_x(SECOND)}, {SECOND['label']})"]
        # its diff is the one from the original to the source sent for it
        show = action(await client.code_actions(uri, 5), "cudalens.showDiff").command
        shown = await client.run(show)
        want = difflib.unified_diff(client.text(uri).splitlines(True),
                                    SAXPY.source_of(SECOND).splitlines(True))
        assert shown["diff"].splitlines(True)[2:] == list(want)[2:]

    assert (tmp_path / ".cudalens" / "results.db").is_file()
    async with editor(tmp_path) as client:  # a new server process: nothing measured this time
        uri = client.open(path)
        assert titles(await client.code_lenses(uri)) == [
            (MEASURED, ""), ("Optimize again", "cudalens.optimize"),
            (offer_lens(SECOND), "cudalens.showDiff"),
            ("apply", "cudalens.apply"), ("reject", "cudalens.reject"), ("Capture a real launch", "cudalens.captureLaunch")]
        assert (await _offered(client, uri))[2] == f"Show diff of candidate ({SECOND['label']})"
        assert client.progress_reports == {}


async def _offered(client, uri) -> list[str]:
    """The optimize and candidate actions offered (the compute-sanitizer check, offered on
    every kernel with a spec, is left out: test_lsp_sanitize.py is about it)."""
    return [a.title for a in await client.code_actions(uri, 5) if a.title != CHECK_TITLE]


async def test_cancel_a_running_job_and_a_queued_one(tmp_path):
    saxpy = copy_example(tmp_path, "saxpy.cu")
    transpose = copy_example(tmp_path, "transpose.cu")
    async with editor(tmp_path, env={STEP_ENV: "0.05"}) as client:
        s_uri, t_uri = client.open(saxpy), client.open(transpose)
        first = await client.run(action(await client.code_actions(s_uri, 5), "cudalens.optimize")
                                 .command)
        second = await client.run(action(await client.code_actions(t_uri, 5),
                                         "cudalens.optimize").command)
        assert client.progress_reports[second["token"]][0].message == "waiting: 1 kernel ahead"
        await client.wait_for(lambda: any("compiling candidate" in (p.message or "")
                                          for p in client.progress_reports[first["token"]]),
                              what="the first job to run")
        # the editor's cancel button on the running job
        client.window_work_done_progress_cancel(
            types.WorkDoneProgressCancelParams(token=first["token"]))
        end = await client.wait_for(lambda: ended(client, first["token"]), what="cancel")
        assert end[0].message == "saxpy: cancelled; no results kept"
        # the queued job starts; cancel it with the command (for clients without the button)
        await client.wait_for(lambda: any(p.kind == "report" for p in
                                          client.progress_reports[second["token"]]),
                              what="the second job to start")
        lenses = titles(await client.code_lenses(t_uri))
        assert lenses[0][1] == "cudalens.cancel" and lenses[0][0].startswith("optimizing: ")
        cancel = await client.run(types.Command(
            title="cancel", command="cudalens.cancel",
            arguments=[{"uri": t_uri, "kernel": "transpose_naive"}]))
        assert cancel == {"ok": True, "job": second["job"]}
        end = await client.wait_for(lambda: ended(client, second["token"]), what="second cancel")
        assert end[0].message == "transpose_naive: cancelled; no results kept"
        await asyncio.sleep(0.3)  # the worker thread notices at the runner's next message
        assert titles(await client.code_lenses(s_uri)) == [("Optimize", "cudalens.optimize"), ("Capture a real launch", "cudalens.captureLaunch")]
        assert titles(await client.code_lenses(t_uri)) == [("Optimize", "cudalens.optimize"), ("Capture a real launch", "cudalens.captureLaunch")]
    with sqlite3.connect(tmp_path / ".cudalens" / "results.db") as db:
        assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


async def test_configuration_pushed_and_pulled(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    async with editor(tmp_path) as client:
        uri = client.open(path)
        # the LLM proposer asked for without a model: the action says so
        llm = {**TEST_SETTINGS, "proposer": "llm"}
        client.set_configuration(llm, section="cudalens")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"cudalens": llm}))
        await client.wait_for(lambda: _titles_are(client, uri, [
            "Optimize kernel saxpy (LLM: no model is configured)"]),
            what="the LLM-without-a-model title")

        # a budget and a repetition count of our own, which the runner is asked for (its
        # progress says "of at most N")
        budget = 12
        pushed = {"budget": {"candidates": budget, "repetitions": 7}, "proposer": "builtin",
                  "check": {"enabled": False, "arch": "sm_1"}}
        client.set_configuration(pushed, section="cudalens")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"cudalens": pushed}))
        bad = await client.wait_for(lambda: [m for m in client.messages if "sm_1" in m.message],
                                    what="the settings warning")
        assert bad[0].message == ("cudalens settings: cudalens.check.arch: expected an "
                                  "architecture like 'sm_90', found 'sm_1'; using the default")
        assert await _offered(client, uri) == ["Optimize kernel saxpy (built-in passes)"]
        started = await optimize(client, uri)
        messages = [p.message for p in client.progress_reports[started["token"]]]
        assert "timing round 1/7, baseline and candidates interleaved" in messages
        assert not any(m.startswith("timing round") and "/7," not in m for m in messages)
        assert messages[-1] == expected("saxpy", budget, 7).final_message()
        assert f"{budget} candidates proposed; running on {SAXPY.device}" in messages

        # a client that does not push values: the server asks with workspace/configuration.
        # A budget of 2 reaches the search, which stops after 2 candidates.
        client.set_configuration({**TEST_SETTINGS, "budget": {"candidates": 2}},
                                 section="cudalens")
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
        await asyncio.sleep(0.3)
        started = await optimize(client, uri)
        messages = [p.message for p in client.progress_reports[started["token"]]]
        assert f"2 candidates proposed; running on {SAXPY.device}" in messages
        assert not any("candidate 3/" in m for m in messages)
        assert messages[-1] == expected("saxpy", 2, TEST_SETTINGS["budget"]["repetitions"]) \
            .final_message()
        assert not [m for m in client.messages if m.type == types.MessageType.Error]


async def _titles_are(client, uri, want: list[str]) -> bool:
    return await _offered(client, uri) == want


async def test_spec_changed_on_disk_marks_results_stale_and_back(tmp_path):
    path = copy_example(tmp_path, "saxpy.cu")
    spec = tmp_path / "saxpy.cu.spec"
    async with editor(tmp_path) as client:
        uri = client.open(path)
        await optimize(client, uri)
        original = spec.read_text()
        spec.write_text(original.replace("size n = 1 << 25", "size n = 1 << 24"))  # git checkout
        await client.wait_for(lambda: _lens_titles_containing(client, uri, "stale:"),
                              what="stale lens after the spec changed on disk")
        warnings = [d.message for d in client.diagnostics_for(uri)
                    if d.severity == types.DiagnosticSeverity.Warning]
        assert warnings == [f"saxpy: results from {today()} on {SHORT} are stale: the kernel, its "
                            "spec or the device changed since; run Optimize again"]
        spec.write_text(original)
        lenses = await client.wait_for(lambda: _lens_titles_containing(client, uri, "us, "),
                                       what="current results again")
        assert lenses[0] == (MEASURED, "")


async def test_create_harness_spec_writes_the_draft(tmp_path):
    path = copy_example(tmp_path, "transpose.cu", with_spec=False)
    async with editor(tmp_path) as client:
        uri = client.open(path)
        actions = await client.code_actions(uri, 5)
        create = next(a for a in actions if a.title.startswith("Create harness spec"))
        assert create.title == "Create harness spec for transpose_naive in transpose.cu.spec"
        assert create.kind == "source.cudalens.spec"
        client.apply_workspace_edit(types.ApplyWorkspaceEditParams(edit=create.edit))
        text = (tmp_path / "transpose.cu.spec").read_text()
        assert text.startswith("# Harness spec drafted by cudalens")
        assert "kernel transpose_naive\n" in text and "block = 32, 8  # GUESS: see the notes\n" in text
        # the watcher sees the new file: the spec is now written, the action is gone
        await client.wait_for(
            lambda: _no_create(client, uri), what="the action to disappear")


async def _no_create(client, uri):
    return all(not a.title.startswith("Create harness spec")
               for a in await client.code_actions(uri, 5))


async def test_two_kernels_get_a_lens_each(tmp_path):
    src = tmp_path / "two.cu"
    src.write_text("__global__ void a(float* p) { p[threadIdx.x] = 1.0f; }\n\n"
                   "// second\n__global__ void b(float* q, int n)\n{\n"
                   "    int i = threadIdx.x; if (i < n) q[i] = 0.0f;\n}\n")
    async with editor(tmp_path) as client:
        uri = client.open(src)
        lenses = await client.code_lenses(uri)
        lenses = sorted(lenses, key=lambda lens: lens.range.start.line)  # stable: per line
        assert [(lens.range.start.line, lens.command.title, lens.command.arguments[0]["kernel"])
                for lens in lenses] == [(0, "Optimize", "a"), (0, "Capture a real launch", "a"),
                                        (3, "Optimize", "b"), (3, "Capture a real launch", "b")]


async def test_unreachable_runner_is_reported(tmp_path):
    """The default runner factory (the HTTP client) with a runner URL nothing listens on."""
    path = copy_example(tmp_path, "saxpy.cu")
    command = [c for c in SERVER_COMMAND if c not in ("--runner-factory", RUNNER_FACTORY)]
    settings = {**TEST_SETTINGS, "runner": {"url": "http://127.0.0.1:9", "token": "t0k3n"}}
    async with editor(tmp_path, settings=settings, command=command) as client:
        uri = client.open(path)
        await optimize(client, uri)
        error = await client.wait_for(
            lambda: [m for m in client.messages if m.type == types.MessageType.Error],
            what="the error message")
        assert error[0].message.startswith("cudalens: optimizing saxpy failed: no GPU runner can "
                                           "be used: cannot reach the GPU runner at "
                                           "http://127.0.0.1:9")
        assert "t0k3n" not in error[0].message
        reason = error[0].message[len("cudalens: optimizing saxpy failed: "):].split("\n")[0]
        assert len(reason) > 60  # the lens shows its first 59 characters, then an ellipsis
        assert titles(await client.code_lenses(uri)) == [
            (f"Optimize failed: {reason[:59].rstrip()}\u2026 (hover for details)", ""),
            ("Optimize", "cudalens.optimize"), ("Capture a real launch", "cudalens.captureLaunch")]
