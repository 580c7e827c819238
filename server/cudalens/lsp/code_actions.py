"""Code actions on a kernel (the kernel whose definition holds the requested range).

* ``Optimize kernel NAME (PROPOSER)`` (``refactor``): queue it for background optimization;
  not offered while the file's last compile check failed (the lens says where) or the kernel
  has no usable spec;
  PROPOSER is ``built-in passes``, ``LLM MODEL at URL``, or ``LLM MODEL at URL if it answers,
  else built-in passes`` (``llm.action_label``; no server is contacted here);
  ``Cancel optimizing NAME`` while queued or running.
* With a candidate on offer: ``Apply candidate (2.31x, verified)`` (``refactor.rewrite``),
  ``Show diff``, ``Reject candidate``. Apply is a command, not a ready-made edit: the server
  checks the version and staleness when it runs and sends the versioned edit itself
  (``edits.plan_apply``), so a stale candidate is refused with a message.
* ``Create harness spec for NAME`` (``source``) when the kernel's spec is inferred: a
  workspace edit that writes the draft to ``FILE.spec``.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

from lsprotocol import types

from cudalens.engine.preflight import refuses
from cudalens.lsp import commands as cmd
from cudalens.lsp.documents import DocumentSnapshot
from cudalens.lsp.edits import Refused, SpecFile, create_spec_edit
from cudalens.lsp.config import Settings
from cudalens.lsp.jobs import Job
from cudalens.lsp.llm import action_label
from cudalens.lsp.positions import overlaps
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import speedup
from cudalens.spec.parser import spec_path_for

KIND_OPTIMIZE = types.CodeActionKind.Refactor + ".cudalens.optimize"
KIND_APPLY = types.CodeActionKind.RefactorRewrite + ".cudalens.apply"
KIND_CANDIDATE = types.CodeActionKind.Refactor + ".cudalens.candidate"
KIND_SPEC = types.CodeActionKind.Source + ".cudalens.spec"
KINDS = [types.CodeActionKind.Refactor, types.CodeActionKind.RefactorRewrite,
         types.CodeActionKind.Source]


def code_actions(snapshot: DocumentSnapshot, statuses: list[KernelStatus], rng: types.Range,
                 jobs: dict[str, Job], proposer: Union[Settings, str],
                 spec_file: Callable[[str], Optional[SpecFile]],
                 check=None) -> list[types.CodeAction]:
    """Actions for the kernels overlapping ``rng``. ``spec_file(uri)`` gives a spec file's
    current text and version, or None when it does not exist. ``proposer``: the session's
    settings (or only ``Settings.proposer``, when the LLM settings are then read from the
    project file alone). ``check``: the document's last compile check
    (``cudalens.check.CheckResult``); while it failed at a line (``engine.preflight.refuses``)
    no kernel is offered Optimize."""
    broken = refuses(check)
    out: list[types.CodeAction] = []
    how: Optional[str] = None
    for st in statuses:
        if not overlaps(snapshot.index.range(st.view.kernel.range), rng):
            continue
        name = st.view.kernel.name
        args = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, version=snapshot.version)
        job = jobs.get(st.name)
        if job is not None:
            out.append(_action(f"Cancel optimizing {name}", KIND_OPTIMIZE,
                               cmd.command("Cancel", cmd.CANCEL, args)))
        elif st.view.spec is not None and not broken:
            if how is None:
                how = action_label(proposer, snapshot.path)
            again = " again" if st.current is not None else ""
            stale = ", results are stale" if st.current is None and st.stale is not None else ""
            out.append(_action(f"Optimize kernel {name}{again} ({how}{stale})", KIND_OPTIMIZE,
                               cmd.command("Optimize", cmd.OPTIMIZE, args)))
        if st.offer is not None and job is None:
            ca = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, candidate=st.offer.id,
                                version=snapshot.version)
            apply = _action(f"Apply candidate ({speedup(st.offer)}, verified)", KIND_APPLY,
                            cmd.command("Apply", cmd.APPLY, ca))
            apply.is_preferred = True
            out.append(apply)
            out.append(_action(f"Show diff of candidate ({st.offer.label})", KIND_CANDIDATE,
                               cmd.command("Show diff", cmd.SHOW_DIFF, ca)))
            out.append(_action(f"Reject candidate ({speedup(st.offer)}, {st.offer.label})",
                               KIND_CANDIDATE, cmd.command("Reject", cmd.REJECT, ca)))
        if st.view.spec is not None and st.view.spec_origin == "inferred":
            path = spec_path_for(snapshot.path)
            try:
                edit = create_spec_edit(snapshot, st.view, path, spec_file(str(path)))
            except Refused:
                continue
            out.append(types.CodeAction(title=f"Create harness spec for {name} in {path.name}",
                                        kind=KIND_SPEC, edit=edit))
    return out


def _action(title: str, kind: str, command: types.Command) -> types.CodeAction:
    return types.CodeAction(title=title, kind=kind, command=command)
