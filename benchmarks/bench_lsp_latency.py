"""Latency of the language server on a large generated file, measured as an editor sees it.

Usage (no GPU needed; nvcc on PATH for the compile-diagnostics part):
    python benchmarks/bench_lsp_latency.py [--lines 10000] [--requests 30] [--nvcc-edits 5] \\
        [--out benchmarks/results/lsp-latency-DATE-COMMIT.json]

What it does:

1. Writes a generated ``.cu`` file (``lsp_source_gen.generate``: ~10,000 lines, some 350
   kernels of seven shapes with helpers and host launchers, no includes) into a temporary
   workspace, starts ``python -m cudalens.cli_lsp`` (what ``cudalens lsp`` runs) on stdio
   with pygls's ``LanguageClient``, initializes it with the capabilities an editor declares
   (configuration, progress, versioned diagnostics) and opens the file.
2. **open**: time from ``didOpen`` to the first ``textDocument/codeLens`` answer (the cold
   analysis: a full parse and a spec inferred for every kernel).
3. After ``--warmup`` rounds, ``--requests`` timed round trips each of ``codeLens``,
   ``inlayHint`` (a 60-line window and the whole file), ``hover`` (on kernel names, cycling
   through the file) and ``codeAction`` (inside kernel bodies):
   * **steady**: on an unchanged document;
   * **after edit**: ``didChange`` (one incremental change inside a kernel body, as typing
     makes: alternately a line inserted, so every kernel below moves, and a character added
     to a line) and the request right after; the time runs from sending the change to the
     answer, so it includes re-analysis.
   Next to each wall-clock figure: the server process's CPU time per request (mean, from
   ``/proc``), which a busy machine inflates less than wall-clock time.
4. **diagnostics, parse-based part**: from an edit's ``didChange`` to the
   ``publishDiagnostics`` carrying its version (spec and results diagnostics are published
   from the re-analysis at once; the compile check is still pending).
5. **diagnostics, nvcc part** (compile check on, debounce ``--debounce-ms``), from
   ``didChange`` to the first ``publishDiagnostics`` of that version holding:
   * for ``--nvcc-edits`` edits that put a use of an undeclared identifier (named after the
     edit's version) into a kernel body: nvcc's error on that line (nvcc stops in its front
     end);
   * for as many valid edits (a line inserted in a kernel body): ptxas's resource note for
     the kernel below, on that kernel's name at its new line (a whole compile).
   The debounce is part of it and is recorded; nvcc's own time is the rest.
6. **in-process analysis, side by side** (``analysis_side_by_side``): parsing and
   ``documents.analyze`` after an edit with a full parse (``parse_source``) and with the
   document's ``IncrementalParser``, alternating, in this process: the ratio is what
   incremental parsing buys.

``--profile-server PATH`` runs the server under cProfile (``python -m pstats PATH``): that
is how the time after an edit was found to go to re-inferring the edited kernel's spec (a
full tree-sitter parse of the file for it, and regular expression scans of the whole file
per kernel) and to re-normalizing the whole file for the store keys; inference now reads the
document's incremental tree, the scans are made once per text, and normalized pieces are
cached (``tests/test_analysis_fast_paths.py`` checks each against the plain path).

Every answer is checked, not just timed: one lens line per generated kernel at the line its
definition starts, hovers on each kernel's name with that range, the nvcc error on the edited
line. A wrong answer raises ``BenchmarkError``.

The JSON result records the machine (CPU, cores, load average before and after, Python), the
commit (and whether the tree was dirty), the date, the file's size and every sample in
milliseconds with medians and 90th percentiles, and the issue's goal (50 ms per request).
``--compare-gc`` measures the server a second time with CPython's default garbage-collector
thresholds (the server's are ``cudalens.lsp.gc_tuning.THRESHOLDS``) and prints the ratios.

``tests/test_lsp_latency_bench.py`` runs a small version in CI (no time limits there).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT), str(Path(__file__).resolve().parent)]

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

from cudalens.lsp.gc_tuning import ENV as GC_ENV, THRESHOLDS  # noqa: E402
from lsp_source_gen import GeneratedSource, generate  # noqa: E402

CPYTHON_GC = "700,10,10"  # CPython's default garbage-collector thresholds

GOAL_MS = 50.0  # issue 6: "the goal of 50 ms per request on this machine"
WINDOW_LINES = 60  # an editor's visible range for inlay hints
SERVER_COMMAND = [sys.executable, "-m", "cudalens.cli_lsp", "--log-level", "warning"]


class BenchmarkError(RuntimeError):
    """The server answered wrongly or not at all; the message says what was expected."""


@dataclass
class Samples:
    """Latencies of one measured operation, in milliseconds; ``cpu_ms`` sums the server
    process's CPU time over them (None where it cannot be read)."""

    name: str
    ms: list[float] = field(default_factory=list)
    cpu_ms: Optional[float] = 0.0

    def add_cpu(self, before: Optional[float], after: Optional[float]) -> None:
        if before is None or after is None or self.cpu_ms is None:
            self.cpu_ms = None
        else:
            self.cpu_ms += after - before

    def summary(self) -> dict[str, Any]:
        s = sorted(self.ms)
        cpu = None if self.cpu_ms is None or not s else _round(self.cpu_ms / len(s))
        return {"n": len(s), "server_cpu_ms_mean": cpu,
                "median_ms": _round(statistics.median(s)) if s else None,
                "p90_ms": _round(percentile(s, 90)) if s else None,
                "min_ms": _round(s[0]) if s else None, "max_ms": _round(s[-1]) if s else None,
                "samples_ms": [_round(v) for v in self.ms]}


def _round(v: float) -> float:
    return round(v, 3)


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-th percentile of sorted values, linear between closest ranks (numpy's
    default "linear" method)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    at = (len(sorted_values) - 1) * q / 100.0
    lo = int(at)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (at - lo)


# -- the client --------------------------------------------------------------------------------


class BenchClient(LanguageClient):
    """pygls's client with what an editor answers: settings, progress tokens, refreshes; every
    ``publishDiagnostics`` is kept with the time it arrived."""

    def __init__(self, settings: dict[str, Any]):
        super().__init__("cudalens-bench", "1")
        self.settings = settings
        self.published: list[tuple[float, types.PublishDiagnosticsParams]] = []
        self.arrived = asyncio.Event()


def make_client(settings: dict[str, Any]) -> BenchClient:
    client = BenchClient(settings)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _diagnostics(ls: BenchClient, params: types.PublishDiagnosticsParams) -> None:
        ls.published.append((time.perf_counter(), params))
        ls.arrived.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def _configuration(ls: BenchClient, params: types.ConfigurationParams) -> list[Any]:
        return [ls.settings if item.section == "cudalens" else None for item in params.items]

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def _progress(ls: BenchClient, params: types.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _lens_refresh(ls: BenchClient, params: None) -> None:
        return None

    @client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def _hint_refresh(ls: BenchClient, params: None) -> None:
        return None

    @client.feature(types.WINDOW_SHOW_MESSAGE)
    def _message(ls: BenchClient, params: types.ShowMessageParams) -> None:
        print(f"server: {params.message}", file=sys.stderr)

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def _log(ls: BenchClient, params: types.LogMessageParams) -> None:
        return None

    return client


def capabilities() -> types.ClientCapabilities:
    """What an editor like VS Code declares for the features measured here."""
    return types.ClientCapabilities(
        general=types.GeneralClientCapabilities(
            position_encodings=[types.PositionEncodingKind.Utf16]),
        workspace=types.WorkspaceClientCapabilities(
            configuration=True, workspace_folders=True,
            code_lens=types.CodeLensWorkspaceClientCapabilities(refresh_support=True),
            inlay_hint=types.InlayHintWorkspaceClientCapabilities(refresh_support=True),
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),
        window=types.WindowClientCapabilities(work_done_progress=True),
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(),
            code_lens=types.CodeLensClientCapabilities(),
            inlay_hint=types.InlayHintClientCapabilities(),
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.Markdown, types.MarkupKind.PlainText]),
            code_action=types.CodeActionClientCapabilities(
                code_action_literal_support=types.ClientCodeActionLiteralOptions(
                    code_action_kind=types.ClientCodeActionKindOptions(
                        value_set=["", "quickfix", "refactor", "source"]))),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(
                version_support=True)))


# -- the document as the client keeps it ------------------------------------------------------


class Document:
    """The open file's text and version on the client side, with incremental changes."""

    def __init__(self, client: BenchClient, uri: str, text: str):
        self.client, self.uri, self.text, self.version = client, uri, text, 1
        self.lines = text.split("\n")

    def open(self) -> None:
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri, language_id="cuda",
                                                 version=self.version, text=self.text)))

    def replace_line(self, line: int, new: str) -> int:
        """Replaces line ``line`` (without its newline); returns the new version."""
        return self.replace_lines([(line, new)])

    def replace_lines(self, changes: list[tuple[int, str]]) -> int:
        """One ``didChange`` replacing each ``(line, text)`` in turn; returns the version."""
        sent = []
        for line, new in changes:
            old = self.lines[line]
            self.lines[line] = new
            sent.append(types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, 0), types.Position(line, len(old))),
                text=new))
        return self._send_all(sent)

    def insert_line(self, line: int, new: str) -> int:
        self.lines.insert(line, new)
        at = types.Position(line, 0)
        return self._send(types.Range(at, at), new + "\n")

    def edit(self, restore: Optional[tuple[int, str]], insert_at: int, new_line: str) -> int:
        """One ``didChange``: line ``restore[0]`` set back to ``restore[1]`` (when given),
        then ``new_line`` inserted before line ``insert_at``; returns the version."""
        changes = []
        if restore is not None:
            line, text = restore
            changes.append(types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, 0),
                                  types.Position(line, len(self.lines[line]))), text=text))
            self.lines[line] = text
        self.lines.insert(insert_at, new_line)
        at = types.Position(insert_at, 0)
        changes.append(types.TextDocumentContentChangePartial(range=types.Range(at, at),
                                                              text=new_line + "\n"))
        return self._send_all(changes)

    def _send(self, rng: types.Range, text: str) -> int:
        return self._send_all([types.TextDocumentContentChangePartial(range=rng, text=text)])

    def _send_all(self, changes: list[types.TextDocumentContentChangePartial]) -> int:
        self.version += 1
        self.text = "\n".join(self.lines)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri,
                                                                version=self.version),
            content_changes=changes))
        return self.version


# -- checks -----------------------------------------------------------------------------------


def kernel_lines(gen: GeneratedSource, inserted: list[int]) -> list[int]:
    """Each generated kernel's first line after lines were inserted at ``inserted`` (in the
    order they were inserted, each index in the text as it was then)."""
    lines = [k.start_line for k in gen.kernels]
    for at in inserted:
        lines = [line + 1 if line >= at else line for line in lines]
    return lines


def check_lenses(lenses: Optional[list[types.CodeLens]], want_lines: list[int]) -> None:
    got = sorted({lens.range.start.line for lens in lenses or []})
    if got != want_lines:
        missing = sorted(set(want_lines) - set(got))[:5]
        extra = sorted(set(got) - set(want_lines))[:5]
        raise BenchmarkError(f"expected a code lens on each of {len(want_lines)} kernel lines, "
                             f"found lenses on {len(got)} lines (missing {missing}, "
                             f"unexpected {extra})")


def check_hover(hover: Optional[types.Hover], name: str, line: int, column: int) -> None:
    want = types.Range(types.Position(line, column), types.Position(line, column + len(name)))
    if hover is None or hover.range != want:
        raise BenchmarkError(f"expected a hover for {name} over {want}, found "
                             f"{None if hover is None else hover.range}")
    text = getattr(hover.contents, "value", "")
    if f"**{name}**" not in text:
        raise BenchmarkError(f"expected the hover to name **{name}**, found {text[:80]!r}")


def process_cpu_ms(pid: int) -> Optional[float]:
    """User plus system CPU time of process ``pid`` in milliseconds, from
    ``/proc/PID/stat`` (fields 14 and 15, in clock ticks: proc(5)); None where that cannot be
    read. Its resolution is one tick (10 ms at the usual 100 Hz), so it is summed over many
    requests, not read per request."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = int(fields[11]) + int(fields[12])  # utime, stime: fields 14, 15 counted from 1
    return ticks * 1000.0 / os.sysconf("SC_CLK_TCK")


# -- measuring --------------------------------------------------------------------------------


async def timed(call: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await call()
    return (time.perf_counter() - start) * 1000.0, result


@dataclass
class Run:
    """A benchmark run's settings."""

    lines: int = 10_000
    requests: int = 30
    warmup: int = 5
    nvcc_edits: int = 5
    debounce_ms: int = 50
    seed: int = 0
    timeout_s: float = 300.0
    profile: Optional[str] = None  # run the server under cProfile, writing stats here
    gc: Optional[str] = None  # the server's CUDALENS_LSP_GC (None: cudalens.lsp.gc_tuning's)


async def measure(run: Run, workdir: Path) -> dict[str, Any]:
    """Runs the benchmark in ``workdir`` (which it fills); returns the results (see the
    module doc). Raises ``BenchmarkError`` on a wrong or missing answer."""
    gen = generate(run.lines, run.seed)
    path = workdir / "bench.cu"
    path.write_text(gen.text, encoding="utf-8")
    settings = {"check": {"enabled": False, "debounceMs": run.debounce_ms},
                "proposer": "builtin"}
    client = make_client(settings)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT),
                                         env.get("PYTHONPATH", "")])
    env.pop(GC_ENV, None)
    if run.gc:
        env[GC_ENV] = run.gc
    command = list(SERVER_COMMAND)
    if run.profile:
        command[1:1] = ["-m", "cProfile", "-o", run.profile]
    await client.start_io(*command, env=env, cwd=str(workdir))
    root_uri = from_fs_path(str(workdir))
    await client.initialize_async(types.InitializeParams(
        capabilities=capabilities(), root_uri=root_uri, process_id=os.getpid(),
        workspace_folders=[types.WorkspaceFolder(uri=root_uri, name=workdir.name)]))
    client.initialized(types.InitializedParams())
    uri = from_fs_path(str(path))
    doc = Document(client, uri, gen.text)
    results: dict[str, Any] = {}
    try:
        results = await asyncio.wait_for(_measure(run, gen, client, doc),
                                         timeout=run.timeout_s)
    finally:
        # the text as the client holds it at the end, for checking the lens lines against
        (workdir / "bench.final.cu").write_text(doc.text, encoding="utf-8")
        try:
            await asyncio.wait_for(client.shutdown_async(None), 10)
            client.exit(None)
        finally:
            await client.stop()
    return results


async def _measure(run: Run, gen: GeneratedSource, client: BenchClient,
                   doc: Document) -> dict[str, Any]:
    tid = types.TextDocumentIdentifier(uri=doc.uri)
    pid = client._server.pid if getattr(client, "_server", None) is not None else -1

    def cpu() -> Optional[float]:
        return process_cpu_ms(pid)

    inserted: list[int] = []
    kernels = gen.kernels
    n = len(kernels)

    async def lenses() -> list[types.CodeLens]:
        got = await client.text_document_code_lens_async(types.CodeLensParams(text_document=tid))
        check_lenses(got, kernel_lines(gen, inserted))
        return got

    def shift(line: int) -> int:
        for at in inserted:
            line = line + 1 if line >= at else line
        return line

    async def hints_window(i: int) -> Any:
        k = kernels[(i * 7) % n]
        first = max(shift(k.start_line) - 5, 0)
        return await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=tid, range=types.Range(types.Position(first, 0),
                                                 types.Position(first + WINDOW_LINES, 0))))

    async def hints_file(i: int) -> Any:
        return await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=tid, range=types.Range(types.Position(0, 0),
                                                 types.Position(len(doc.lines), 0))))

    async def hover(i: int) -> Any:
        k = kernels[(i * 11) % n]
        line = shift(k.name_line)
        got = await client.text_document_hover_async(types.HoverParams(
            text_document=tid, position=types.Position(line, k.name_column + 1)))
        check_hover(got, k.name, line, k.name_column)
        return got

    async def actions(i: int) -> Any:
        k = kernels[(i * 13) % n]
        at = types.Position(shift(k.body_line), 4)
        got = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=tid, range=types.Range(at, at),
            context=types.CodeActionContext(diagnostics=[])))
        if not any(k.name in a.title for a in got or []):
            raise BenchmarkError(f"expected a code action naming {k.name} inside its body at "
                                 f"{at}, found {[a.title for a in got or []]}")
        return got

    requests: dict[str, Callable[[int], Any]] = {
        "codeLens": lambda i: lenses(), "inlayHint (60 lines)": hints_window,
        "inlayHint (whole file)": hints_file, "hover": hover, "codeAction": actions}

    # open: the first lens answer after didOpen
    start = time.perf_counter()
    doc.open()
    first = await lenses()
    open_ms = (time.perf_counter() - start) * 1000.0

    for _ in range(run.warmup):
        for i, call in enumerate(requests.values()):
            await call(i)

    steady = {name: Samples(name) for name in requests}
    for i in range(run.requests):
        for name, call in requests.items():
            before = cpu()
            ms, _ = await timed(lambda: call(i))
            steady[name].ms.append(ms)
            steady[name].add_cpu(before, cpu())

    # after an edit: didChange, then the request; alternately a literal changed in a kernel
    # body (same lines) and a line inserted there (every kernel below moves)
    after = {name: Samples(name) for name in requests}
    parse_diag = Samples("publishDiagnostics (parse-based)")
    edit = 0
    for i in range(run.requests):
        for name, call in requests.items():
            k = kernels[(edit * 17) % n]
            line = shift(k.body_line) + 1
            before = cpu()
            start = time.perf_counter()
            if edit % 2 == 0:
                version = doc.insert_line(line, f"    // edit {edit}")
                inserted.append(line)
            else:
                text = doc.lines[line]
                version = doc.replace_line(line, text + " ")
            edit += 1
            await call(i)
            after[name].ms.append((time.perf_counter() - start) * 1000.0)
            after[name].add_cpu(before, cpu())
            arrived = await _published(client, doc.uri, version, start, lambda d: True)
            parse_diag.ms.append(arrived)

    nvcc = await _nvcc_part(run, gen, client, doc, inserted, shift) if run.nvcc_edits else None
    final = await client.text_document_code_lens_async(types.CodeLensParams(text_document=tid))

    return {
        "kernels": n, "lens_count_on_open": len(first),
        "open_ms": _round(open_ms),
        "steady": {name: s.summary() for name, s in steady.items()},
        "after_edit": {name: s.summary() for name, s in after.items()},
        "diagnostics_parse": parse_diag.summary(),
        "diagnostics_nvcc": nvcc,
        "lens_lines": sorted({lens.range.start.line for lens in final or []}),
    }


async def _published(client: BenchClient, uri: str, version: int, since: float,
                     accept: Callable[[list[types.Diagnostic]], bool],
                     timeout_s: float = 120.0) -> float:
    """Milliseconds from ``since`` to the first ``publishDiagnostics`` of ``uri`` at
    ``version`` whose diagnostics ``accept`` takes (already arrived or arriving)."""
    deadline = time.perf_counter() + timeout_s
    while True:
        for at, params in client.published:
            if params.uri == uri and params.version == version and at >= since \
                    and accept(list(params.diagnostics)):
                return (at - since) * 1000.0
        left = deadline - time.perf_counter()
        if left <= 0:
            raise BenchmarkError(f"expected publishDiagnostics for version {version} within "
                                 f"{timeout_s:.0f} s; none came that matched")
        client.arrived.clear()
        try:
            await asyncio.wait_for(client.arrived.wait(), timeout=left)
        except asyncio.TimeoutError:
            pass


async def _nvcc_part(run: Run, gen: GeneratedSource, client: BenchClient, doc: Document,
                     inserted: list[int], shift: Callable[[int], int]) -> dict[str, Any]:
    """Compile check on: each edit plants an undeclared identifier in a kernel body and
    waits for nvcc's error on its line (the previous plant is removed by the same edit)."""
    client.settings = {"check": {"enabled": True, "debounceMs": run.debounce_ms},
                       "proposer": "builtin"}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"cudalens": client.settings}))
    await asyncio.sleep(0.5)
    samples = Samples("publishDiagnostics (nvcc)")
    planted: Optional[tuple[int, str]] = None  # (line, its text before the plant)
    for e in range(run.nvcc_edits):
        k = gen.kernels[(e * 29 + 3) % len(gen.kernels)]
        line = shift(k.body_line)
        name = f"cudalens_bench_undeclared_{doc.version + 1}"
        changes: list[tuple[int, str]] = []
        if planted is not None:  # the same change set removes the previous plant
            changes.append(planted)
        planted = (line, doc.lines[line])
        changes.append((line, doc.lines[line] + f" {name} = 0;"))
        start = time.perf_counter()
        version = doc.replace_lines(changes)

        def has_error(diags: list[types.Diagnostic], line: int = line, name: str = name) -> bool:
            return any(d.source == "nvcc" and name in d.message and d.range.start.line == line
                       for d in diags)

        samples.ms.append(await _published(client, doc.uri, version, start, has_error))

    # valid edits: nvcc compiles the whole file and ptxas reports every kernel's resources;
    # the note of the kernel below the inserted line must arrive on that kernel's new line
    full = Samples("publishDiagnostics (nvcc, full compile)")
    for e in range(run.nvcc_edits):
        j = (e * 31 + 5) % (len(gen.kernels) - 1)
        below = gen.kernels[j + 1]
        at = shift(gen.kernels[j].body_line) + 1
        start = time.perf_counter()
        version = doc.edit(restore=planted, insert_at=at, new_line=f"    // nvcc edit {e}")
        planted = None
        inserted.append(at)
        line, column = shift(below.name_line), below.name_column

        def has_note(diags: list[types.Diagnostic], line: int = line, column: int = column,
                     name: str = below.qualified_name) -> bool:
            return any(d.source == "ptxas" and d.message.startswith(name)
                       and (d.range.start.line, d.range.start.character) == (line, column)
                       for d in diags)

        full.ms.append(await _published(client, doc.uri, version, start, has_note))
    out = {"debounce_ms": run.debounce_ms, "error_edit": samples.summary(),
           "valid_edit": full.summary()}
    for part in ("error_edit", "valid_edit"):
        del out[part]["server_cpu_ms_mean"]
    return out


# -- in-process analysis, side by side --------------------------------------------------------


def analysis_side_by_side(lines: int, edits: int, seed: int = 0) -> dict[str, Any]:
    """Re-analysis after an edit (a line inserted in a kernel body, as in the server part),
    in this process, alternating edit by edit between the two ways, each with its own spec
    cache warmed on the original text:

    * ``parse``: ``parse_source`` vs the document's ``IncrementalParser``;
    * ``analyze``: ``documents.analyze`` (parse, the edited kernel's spec inferred again, store
      keys) with a full parse vs with the incremental parser;
    * ``analyze_unchanged_kernels``: the same with the edit between two kernels (blank line
      between declarations), where no spec is inferred again.
    """
    from cudalens.lsp.documents import SpecCache, analyze
    from cudalens.source.incremental import IncrementalParser
    from cudalens.source.parser import parse_source
    from cudalens.spec.infer import clear_text_caches

    def analyze_cold(*args: Any) -> None:
        # spec inference keeps per text a parse and its whole-file scans (records, named
        # constants): the way measured second would find the first one's; each starts
        # without them (the incremental way gives inference its own tree)
        clear_text_caches()
        analyze(*args)

    gen = generate(lines, seed)
    base = gen.text.split("\n")
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.cu"
        path.write_text(gen.text, encoding="utf-8")

        def texts(inside: bool):
            for e in range(edits):
                k = gen.kernels[(e * 17) % len(gen.kernels)]
                at = k.body_line + 1 if inside else k.start_line
                yield "\n".join(base[:at] + [f"    // edit {e}" if inside else ""] + base[at:])

        full, incremental = Samples("parse_source"), Samples("IncrementalParser")
        parser = IncrementalParser()
        parser.parse(gen.text)
        for new in texts(True):
            for samples, parse in ((full, parse_source), (incremental, parser.parse)):
                start = time.perf_counter()
                parse(new)
                samples.ms.append((time.perf_counter() - start) * 1000.0)
        out["parse"] = _pair(full, incremental)
        for name, inside in (("analyze", True), ("analyze_unchanged_kernels", False)):
            full, incremental = Samples("full parse"), Samples("incremental")
            caches = {"full": SpecCache(), "incremental": SpecCache()}
            parser = IncrementalParser()
            analyze("file:///bench.cu", path, 1, gen.text, "utf-16", caches["full"])
            analyze("file:///bench.cu", path, 1, gen.text, "utf-16", caches["incremental"],
                    parser)
            for v, new in enumerate(texts(inside), start=2):
                for samples, key, p in ((full, "full", None),
                                        (incremental, "incremental", parser)):
                    start = time.perf_counter()
                    analyze_cold("file:///bench.cu", path, v, new, "utf-16", caches[key], p)
                    samples.ms.append((time.perf_counter() - start) * 1000.0)
            out[name] = _pair(full, incremental)
    return out


def _pair(full: Samples, incremental: Samples) -> dict[str, Any]:
    f, i = statistics.median(full.ms), statistics.median(incremental.ms)
    a, b = full.summary(), incremental.summary()
    for x in (a, b):
        del x["server_cpu_ms_mean"]
    return {"full_parse": a, "incremental": b, "speedup_median": _round(f / i)}


# -- the record -------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "load_average": list(os.getloadavg())}


def commit() -> tuple[str, bool]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()
    return git("rev-parse", "HEAD") or "unknown", bool(git("status", "--porcelain", "--",
                                                           "server"))


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--nvcc-edits", type=int, default=5)
    ap.add_argument("--debounce-ms", type=int, default=50)
    ap.add_argument("--analysis-edits", type=int, default=20)
    ap.add_argument("--profile-server", metavar="PATH",
                    help="run the server under cProfile and write its stats to PATH "
                         "(read them with python -m pstats PATH)")
    ap.add_argument("--compare-gc", action="store_true",
                    help="after the run, measure the server again with CPython's default "
                         "garbage-collector thresholds (700,10,10) and print the ratios")
    ap.add_argument("--out", type=Path, help="JSON file to write (default: "
                    "benchmarks/results/lsp-latency-DATE-COMMIT.json)")
    args = ap.parse_args(argv)
    run = Run(lines=args.lines, requests=args.requests, warmup=args.warmup,
              nvcc_edits=args.nvcc_edits, debounce_ms=args.debounce_ms,
              profile=args.profile_server)
    sha, dirty = commit()
    when = dt.datetime.now(dt.timezone.utc)
    record: dict[str, Any] = {"benchmark": "lsp-latency",
                              "date": when.isoformat(timespec="seconds"), "commit": sha,
                              "server_tree_dirty": dirty, "machine": machine(),
                              "goal_ms": GOAL_MS, "run": run.__dict__}
    with tempfile.TemporaryDirectory(prefix="cudalens-bench-") as tmp:
        record["server"] = asyncio.run(measure(run, Path(tmp)))
    record["server"]["gc_thresholds"] = list(THRESHOLDS)
    if args.compare_gc:
        default = dataclasses.replace(run, gc=CPYTHON_GC, profile=None)
        with tempfile.TemporaryDirectory(prefix="cudalens-bench-") as tmp:
            record["server_cpython_gc"] = asyncio.run(measure(default, Path(tmp)))
        record["server_cpython_gc"]["gc_thresholds"] = [int(x) for x in CPYTHON_GC.split(",")]
    record["analysis_in_process"] = analysis_side_by_side(args.lines, args.analysis_edits)
    record["machine"]["load_average_after"] = list(os.getloadavg())
    record["lines"] = generate(args.lines).line_count
    out = args.out or ROOT / "benchmarks" / "results" / \
        f"lsp-latency-{when:%Y-%m-%d}-{sha[:7]}{'-dirty' if dirty else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(report(record))
    print(f"\nwritten: {out}")
    return 0


def report(record: dict[str, Any]) -> str:
    s = record["server"]
    rows = [f"{record['lines']} lines, {s['kernels']} kernels; {record['machine']['cpu']}, "
            f"{record['machine']['cores']} cores, load {record['machine']['load_average'][0]:.1f}"
            f"; goal {record['goal_ms']:.0f} ms",
            f"open (didOpen to first codeLens): {s['open_ms']:.0f} ms",
            "wall-clock milliseconds, median/p90 [server CPU ms per request, mean]",
            f"{'request':24} {'steady':>22} {'after an edit':>24}"]

    def cell(x: dict[str, Any]) -> str:
        cpu = "-" if x["server_cpu_ms_mean"] is None else f"{x['server_cpu_ms_mean']:.0f}"
        return f"{x['median_ms']:.1f}/{x['p90_ms']:.1f} [{cpu}]"

    for name in s["steady"]:
        rows.append(f"{name:24} {cell(s['steady'][name]):>22} "
                    f"{cell(s['after_edit'][name]):>24}")
    d = s["diagnostics_parse"]
    rows.append(f"publishDiagnostics, parse-based: {d['median_ms']:.1f}/{d['p90_ms']:.1f} ms")
    if s["diagnostics_nvcc"]:
        n = s["diagnostics_nvcc"]
        for part, what in (("error_edit", "an edit with an error"),
                           ("valid_edit", "a valid edit, ptxas notes")):
            rows.append(f"publishDiagnostics, nvcc, {what}: {n[part]['median_ms']:.0f}/"
                        f"{n[part]['p90_ms']:.0f} ms (debounce {n['debounce_ms']} ms included)")
    if "server_cpython_gc" in record:
        c = record["server_cpython_gc"]
        rows.append(f"after an edit, garbage-collector thresholds {tuple(s['gc_thresholds'])} "
                    f"vs CPython's {tuple(c['gc_thresholds'])} (median/p90 ms; p90 ratio)")
        for name in s["after_edit"]:
            a, b = s["after_edit"][name], c["after_edit"][name]
            rows.append(f"  {name:24} {a['median_ms']:6.1f}/{a['p90_ms']:6.1f} vs "
                        f"{b['median_ms']:6.1f}/{b['p90_ms']:6.1f}: "
                        f"{b['p90_ms'] / a['p90_ms']:.2f}x")
    rows.append("in process, after an edit (median ms): full parse vs incremental")
    for name, a in record["analysis_in_process"].items():
        rows.append(f"  {name:26} {a['full_parse']['median_ms']:7.1f} vs "
                    f"{a['incremental']['median_ms']:6.1f}: {a['speedup_median']:.1f}x")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
