"""The host side of applying a candidate in the editor: how it runs under the user's launch,
and the edits to the kernel's launch sites when it needs another launch.

``drop_in_phrase`` words a stored candidate for lenses, diffs and messages
(``cudalens.dropin``). ``host_changes`` plans the launch-site rewrite over the workspace
(``cudalens.host_launch``), reading open documents from the editor's text (with their versions
in the edit) and other files from disk; ``confirmation`` is what to ask before applying a
candidate that needs the new launch where some launch cannot be rewritten, or none is found.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from lsprotocol import types

from cudalens.dropin import launch_words
from cudalens.host_launch import LaunchPlan, plan_launches
from cudalens.lsp.documents import path_to_uri
from cudalens.lsp.line_edits import text_edits
from cudalens.lsp.positions import LineIndex
from cudalens.source.model import Kernel
from cudalens.spec.model import KernelSpec, LaunchDecl
from cudalens.store.records import CandidateRecord

APPLY_ANYWAY = "Apply anyway"
CANCEL = "Cancel"


@dataclass(frozen=True)
class OpenDocument:
    """A document the editor has open: its URI, text and version."""

    uri: str
    text: str
    version: Optional[int]


def decl_of(cand: CandidateRecord) -> LaunchDecl:
    return LaunchDecl(block=cand.launch.block, grid=cand.launch.grid, shared=cand.launch.shared)


def drop_in_phrase(cand: CandidateRecord) -> str:
    """``""`` for a candidate that keeps the user's launch; else ``1.80x as a drop-in; 14.80x
    with block = 64, grid = ceil_div(rows, 2)``, ``needs a new launch: 14.80x with ...`` or
    ``14.80x with ... (not checked under your launch)``."""
    if not cand.launch_changed:
        return ""
    new = f"{cand.result.speedup.value:.2f}x with {launch_words(decl_of(cand))}"
    if cand.drop_in is None:
        return f"{new} (not checked under your launch)"
    if cand.drop_in_ok:
        return f"{cand.drop_in.speedup.value:.2f}x as a drop-in; {new}"
    return f"needs a new launch: {new}"


@dataclass(frozen=True)
class HostChanges:
    """The launch-site plan and the workspace edits it makes: ``kernel_text`` is the kernel's
    document with its own launch sites rewritten too; ``edits`` one ``TextDocumentEdit`` per
    other file."""

    plan: LaunchPlan
    kernel_text: str
    edits: tuple[types.TextDocumentEdit, ...] = field(default=())


def host_changes(root: Path, kernel_path: Path, new_text: str, kernel: Kernel,
                 spec: KernelSpec, cand: CandidateRecord,
                 open_docs: Mapping[Path, OpenDocument]) -> HostChanges:
    """Every launch of ``kernel`` under ``root`` rewritten to ``cand``'s launch, the kernel's
    own file read as ``new_text`` (the candidate applied), open documents as the editor has
    them."""
    kernel_path = kernel_path.resolve()
    texts = {p.resolve(): d.text for p, d in open_docs.items()}
    texts[kernel_path] = new_text
    plan = plan_launches(root, kernel, spec, decl_of(cand), texts=texts, kernel_path=kernel_path)
    out: list[types.TextDocumentEdit] = []
    kernel_text = new_text
    for path, text in plan.new_texts().items():
        if path == kernel_path:
            kernel_text = text
            continue
        old = plan.texts[path]
        doc = open_docs.get(path)
        out.append(types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(
                uri=doc.uri if doc is not None else path_to_uri(path),
                version=doc.version if doc is not None else None),
            edits=text_edits(old, text, LineIndex(old))))
    return HostChanges(plan, kernel_text, tuple(out))


def confirmation(changes: HostChanges, cand: CandidateRecord, kernel: str) -> str:
    """The question to ask before applying ``cand`` (it needs its launch, and some launch of
    ``kernel`` cannot be rewritten or none was found); ``""`` when there is nothing to ask."""
    plan = changes.plan
    if cand.drop_in_ok or (plan.found and not plan.unmapped):
        return ""
    new = launch_words(decl_of(cand))
    why = ("it is wrong under your launch" if cand.drop_in is not None
           else "it was not checked under your launch")
    if plan.found:
        sites = "; ".join(f"{u.where(plan.root)}: {u.call} ({u.reason})" for u in plan.unmapped)
        where = f"these launches of {kernel} cannot be rewritten: {sites}"
    else:
        where = (f"no launch of {kernel} was found in the workspace: its launches are "
                 f"elsewhere (a PyTorch extension's launcher, another repository)")
    return (f"{cand.label} must be launched with {new}, and {why}; {where}. Apply it and "
            f"launch {kernel} with {new} there yourself?")
