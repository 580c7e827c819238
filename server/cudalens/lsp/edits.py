"""Workspace edits: applying a candidate, its diff, and drafting a harness spec file.

**Applying a candidate** is refused (``Refused``, with the reason to show) unless all hold:

1. the lens or code action was made for the document's current version (``version``);
2. the kernel's results are current: its store key (kernel source and context, spec, flags,
   device) is the one the candidate was measured under; an edit to the kernel, its spec or
   what it includes makes them stale;
3. the candidate is one of that run's, verified, and not rejected.

The new text is the candidate's source when the document is the very text the run started
from. After edits elsewhere in the file (other kernels), the candidate's kernel definition is
put in place of the current one, and that is accepted only when the result, seen from the
kernel (``kernel_context``), is exactly what the runner compiled; otherwise the candidate is
refused as stale. The edit is a ``TextDocumentEdit`` carrying the document version it was
computed against, so a client whose document moved on rejects it too, with minimal line
edits (``line_edits``). When the candidate was timed with another launch configuration and the
kernel's spec is a file, the spec's ``block``/``grid``/``shared`` lines are changed in the
same workspace edit so the spec keeps describing what was measured; with an inferred spec the
user is told which launch the speedup needs. Every launch of the kernel in the workspace is
rewritten to that launch in the same edit too (``launch_edits.host_changes``: one
``TextDocumentEdit`` per file, with the version of open documents); where one cannot be, or
none is found, and the candidate is not also correct under the user's launch, the plan
carries the question to ask first (``ApplyPlan.confirm``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from lsprotocol import types

from cudalens.diffs import unified_diff as text_diff
from cudalens.lsp.documents import DocumentSnapshot, KernelView, path_to_uri, spec_identity
from cudalens.lsp.line_edits import text_edits
from cudalens.lsp.positions import LineIndex
from cudalens.lsp.results import KernelStatus
from cudalens.source.parser import parse_source
from cudalens.spec.model import KernelSpec, LaunchDecl
from cudalens.spec.writer import format_spec
from cudalens.store.keys import kernel_context, sha256_text, source_materials
from cudalens.textfile import from_bytes, to_bytes, same_line_endings
from cudalens.store.records import CandidateRecord, LaunchRecord, RunRecord
from cudalens.lsp.documents import RUNNER_FLAGS


if TYPE_CHECKING:
    from cudalens.lsp.launch_edits import HostChanges


class Refused(Exception):
    """An edit cannot be made; ``str()`` says why and what to do."""


@dataclass(frozen=True)
class SpecFile:
    """A spec file's text and, when the client has it open, its document version."""

    uri: str
    text: str
    version: Optional[int]


@dataclass(frozen=True)
class ApplyPlan:
    """What applying a candidate sends and what follows from it.

    ``new_text``: the source after the edit. ``material``: ``material_key`` of the kernel in
    ``new_text`` with the spec it will have (None when the spec will not describe the
    candidate's launch: an inferred spec). ``launch_note``: what the user must still change
    (the host code's launch configuration), or "".
    """

    run: RunRecord
    candidate: CandidateRecord
    edit: types.WorkspaceEdit
    new_text: str
    material: Optional[str]
    launch_note: str
    threads_per_block: int = 0  # of the candidate's launch, resolved (0: unknown)
    shared_bytes: int = 0
    host: Optional["HostChanges"] = None  # the launch sites rewritten (launch changed)
    confirm: str = ""  # the question to ask before applying, or ""


def _launch_changed(spec: KernelSpec, launch: LaunchRecord) -> bool:
    return (tuple(spec.launch.block), tuple(spec.launch.grid), spec.launch.shared.strip()) != \
        (tuple(launch.block), tuple(launch.grid), launch.shared.strip())


def launch_words(launch: LaunchRecord) -> str:
    text = f"block = {', '.join(launch.block)}; grid = {', '.join(launch.grid)}"
    return text + (f"; shared = {launch.shared}" if launch.shared.strip() != "0" else "")


def candidate_text(snapshot: DocumentSnapshot, view: KernelView, run: RunRecord,
                   cand: CandidateRecord) -> str:
    """The document's text with ``cand`` applied (see the module doc).

    Raises:
        Refused: the file changed outside the kernel in a way the candidate depends on.
    """
    if snapshot.sha == run.base_sha:
        return cand.source
    cand_source = parse_source(cand.source, str(snapshot.path))
    try:
        cand_kernel = cand_source.kernel(view.name)
    except KeyError:
        raise Refused(f"the candidate {cand.label!r} no longer holds kernel {view.name}") from None
    data = to_bytes(snapshot.text)
    new_def = to_bytes(cand.source)[cand_kernel.start_byte:cand_kernel.end_byte]
    merged = from_bytes(data[:view.kernel.start_byte] + new_def + data[view.kernel.end_byte:])
    merged_source = parse_source(merged, str(snapshot.path))
    try:
        merged_kernel = merged_source.kernel(view.name)
    except KeyError:
        merged_kernel = None
    if merged_kernel is None or kernel_context(merged_source, merged_kernel) != \
            kernel_context(cand_source, cand_kernel):
        raise Refused(f"{snapshot.path.name} changed since the run of {view.kernel.name} and the "
                      f"candidate {cand.label!r} also changes code outside the kernel; run "
                      f"Optimize again")
    return merged


def plan_apply(snapshot: DocumentSnapshot, status: KernelStatus, candidate_id: str,
               version: Optional[int], spec_file: Optional[SpecFile],
               root: Optional[Path] = None,
               open_docs: Optional[dict] = None) -> ApplyPlan:
    """The workspace edit that applies ``candidate_id`` to ``status``'s kernel.

    ``version``: the document version the request was made for (None: not checked).
    ``spec_file``: the kernel's spec file when it has one. ``root``: the folder whose
    launch sites of the kernel are rewritten when the candidate changes the launch (None: not
    searched); ``open_docs``: path -> ``launch_edits.OpenDocument`` for the open documents.

    Raises:
        Refused: see the module doc; the message says why and what to do.
    """
    name = status.view.kernel.name
    if version is not None and snapshot.version is not None and version != snapshot.version:
        raise Refused(f"{snapshot.path.name} changed since this candidate was offered (version "
                      f"{version}, now {snapshot.version}); ask for the code actions or lenses "
                      f"again")
    run = status.current
    if run is None:
        when = f" (measured {status.stale.created[:10]})" if status.stale is not None else ""
        raise Refused(f"the candidate for {name} is stale{when}: the kernel, its spec, its "
                      f"includes' context or the device changed since it was measured; run "
                      f"Optimize again")
    try:
        cand = run.candidate(candidate_id)
    except KeyError:
        raise Refused(f"candidate {candidate_id} is not among the current results of {name}; "
                      f"run Optimize again") from None
    if candidate_id in status.rejected:
        raise Refused(f"candidate {cand.label!r} of {name} was rejected for this source")
    if not cand.verified:
        raise Refused(f"candidate {cand.label!r} of {name} did not pass verification "
                      f"({cand.result.verdict.status}): it is never applied")
    new_text = same_line_endings(candidate_text(snapshot, status.view, run, cand), snapshot.text)
    spec = status.view.spec
    assert spec is not None  # a current run implies a spec
    host = None
    confirm = ""
    if root is not None and _launch_changed(spec, cand.launch):
        from cudalens.lsp.launch_edits import confirmation, host_changes

        host = host_changes(root, snapshot.path, new_text, status.view.kernel, spec, cand,
                            open_docs or {})
        new_text = host.kernel_text
        confirm = confirmation(host, cand, name)
    changes: list = [types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=snapshot.uri,
                                                                    version=snapshot.version),
        edits=text_edits(snapshot.text, new_text, snapshot.index))]
    if host is not None:
        changes.extend(host.edits)
    new_spec = spec
    note = ""
    material: Optional[str] = None
    if _launch_changed(spec, cand.launch):
        if spec_file is not None:
            changes.append(spec_launch_edit(spec_file, spec, cand.launch))
            new_spec = replace(spec, launch=LaunchDecl(block=cand.launch.block,
                                                       grid=cand.launch.grid,
                                                       shared=cand.launch.shared))
            note = (f"The speedup was measured with {launch_words(cand.launch)}: the spec now says "
                    f"so; " + _host_note(host, name))
        else:
            new_spec = None
            note = (f"The speedup was measured with {launch_words(cand.launch)}, and {name} has no "
                    f"spec file to record it; " + _host_note(host, name))
    if new_spec is not None:
        merged = parse_source(new_text, str(snapshot.path))
        try:
            kernel = merged.kernel(status.view.name)
        except KeyError:
            kernel = None
        if kernel is not None:
            span = (kernel.start_byte, kernel.end_byte)
            material = source_materials(merged, {span: spec_identity(new_spec)},
                                        RUNNER_FLAGS).get(span)
    edit = types.WorkspaceEdit(document_changes=changes)
    threads, shared = _resolved(spec, cand.launch, run.device.sm_count)
    return ApplyPlan(run=run, candidate=cand, edit=edit, new_text=new_text, material=material,
                     launch_note=note, threads_per_block=threads, shared_bytes=shared,
                     host=host, confirm=confirm)


def _host_note(host, name: str) -> str:
    """What happened to the host code's launches of ``name`` (``host``: the launch-site
    changes, None when the workspace was not searched)."""
    if host is None:
        return f"launch {name} that way in your host code too."
    plan = host.plan
    parts = []
    if plan.edits:
        parts.append("rewrote the launch at " + ", ".join(e.where(plan.root) for e in plan.edits))
    if plan.unmapped:
        parts.append("change the launch at " + ", ".join(u.where(plan.root)
                                                          for u in plan.unmapped)
                     + " yourself")
    if not plan.found:
        parts.append(f"no launch of {name} was found in the workspace: launch it that way "
                     f"where your program does")
    return "; ".join(parts) + "." if parts else f"the launches of {name} already use it."


def _resolved(spec: KernelSpec, launch: LaunchRecord, sm_count: int) -> tuple[int, int]:
    """(threads per block, dynamic shared bytes) of ``launch`` at ``spec``'s timed sizes;
    (0, 0) when it cannot be evaluated."""
    from cudalens.spec.errors import SpecError
    from cudalens.spec.resolve import resolve_launch, sizes_for

    decl = LaunchDecl(block=launch.block, grid=launch.grid, shared=launch.shared)
    try:
        resolved = resolve_launch(decl, sizes_for(spec, "nominal"), sm_count)
    except (SpecError, ValueError, KeyError):
        return 0, 0
    return resolved.threads_per_block, resolved.shared_bytes


_SETTING = re.compile(r"^(?P<lead>\s*)(?P<key>block|grid|shared)(?P<eq>\s*=\s*)(?P<expr>.*?)"
                      r"(?P<comment>\s*#.*)?$")
_KERNEL = re.compile(r"^\s*kernel\s")


def spec_launch_edit(spec_file: SpecFile, spec: KernelSpec,
                     launch: LaunchRecord) -> types.TextDocumentEdit:
    """Edits the ``block``/``grid``/``shared`` lines of ``spec``'s section to ``launch``
    (adding a ``shared`` line after ``grid`` when needed; comments kept)."""
    lines = spec_file.text.split("\n")
    start = max(spec.line - 1, 0)
    end = next((i for i in range(start + 1, len(lines)) if _KERNEL.match(lines[i])), len(lines))
    want = {"block": ", ".join(launch.block), "grid": ", ".join(launch.grid),
            "shared": launch.shared}
    index = LineIndex(spec_file.text)
    edits = []
    seen: dict[str, int] = {}
    for i in range(start, end):
        m = _SETTING.match(lines[i].rstrip("\r"))
        if m is None:
            continue
        key = m.group("key")
        seen[key] = i
        if m.group("expr").strip() != want[key].strip():
            new_line = (m.group("lead") + key + m.group("eq") + want[key]
                        + (m.group("comment") or ""))
            end = index.from_char(i, len(lines[i].rstrip("\r")))
            edits.append(types.TextEdit(range=types.Range(index.from_char(i, 0), end),
                                        new_text=new_line))
    if "shared" not in seen and launch.shared.strip() != "0" and "grid" in seen:
        at = types.Position(seen["grid"] + 1, 0)
        edits.append(types.TextEdit(range=types.Range(at, at),
                                    new_text=f"shared = {launch.shared}\n"))
    return types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=spec_file.uri,
                                                                    version=spec_file.version),
        edits=edits)


def as_changes(edit: types.WorkspaceEdit) -> types.WorkspaceEdit:
    """``edit`` for a client without ``workspaceEdit.documentChanges``: the text edits keyed by
    URI, without versions (the server has checked the version itself before sending).

    Raises:
        Refused: ``edit`` creates, renames or deletes files, which needs ``documentChanges``.
    """
    changes: dict[str, list[types.TextEdit]] = {}
    for change in edit.document_changes or []:
        if not isinstance(change, types.TextDocumentEdit):
            raise Refused("this edit creates a file, which the editor does not support "
                          "(workspaceEdit.documentChanges)")
        changes.setdefault(change.text_document.uri, []).extend(change.edits)
    return types.WorkspaceEdit(changes=changes)


def derived_run(plan: ApplyPlan, key: str, created: str) -> RunRecord:
    """The record for the applied candidate's source: its own timing from the run it was
    measured in, under the key of the text and spec it now has."""
    cand = plan.candidate
    return replace(plan.run, key=key, base_sha=sha256_text(plan.new_text),
                   baseline=cand.result.timing, baseline_compile=cand.result.compile,
                   threads_per_block=plan.threads_per_block, shared_bytes=plan.shared_bytes,
                   candidates=(), created=created,
                   derived_from=f"{plan.run.key}:{cand.id}")


def unified_diff(snapshot: DocumentSnapshot, new_text: str, shown_path: str) -> str:
    """The unified diff from the document to ``new_text`` (``a/PATH``, ``b/PATH``)."""
    return text_diff(snapshot.text, new_text, f"a/{shown_path}", f"b/{shown_path}")


SPEC_HEADER = ("# Harness spec drafted by cudalens from the kernel's signature and body.\n"
               "# Review the sizes, roles and launch configuration; see the README's "
               "\"Harness spec\".\n")


def create_spec_edit(snapshot: DocumentSnapshot, view: KernelView, spec_path: Path,
                     existing: Optional[SpecFile]) -> types.WorkspaceEdit:
    """A workspace edit writing ``view``'s inferred spec to ``spec_path``: creating the file
    (``CreateFile``, then an insert) or appending a section to the existing one.

    Raises:
        Refused: the kernel has no inferred spec to write (a written one exists, or none
            can be drafted).
    """
    if view.spec is None or view.spec_origin != "inferred":
        why = f"{view.name} already has a spec in {view.spec_origin}" if view.spec is not None \
            else f"no spec can be drafted for {view.name}: {view.spec_error}"
        raise Refused(why)
    section = format_spec(view.spec)
    uri = path_to_uri(spec_path)
    if existing is None:
        return types.WorkspaceEdit(document_changes=[
            types.CreateFile(uri=uri, options=types.CreateFileOptions(ignore_if_exists=True)),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=[types.TextEdit(range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                                      new_text=SPEC_HEADER + section)])])
    index = LineIndex(existing.text)
    sep = "" if existing.text.endswith("\n\n") or not existing.text else (
        "\n" if existing.text.endswith("\n") else "\n\n")
    end = index.end()
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri,
                                                                    version=existing.version),
        edits=[types.TextEdit(range=types.Range(end, end), new_text=sep + section)])])
