"""Code lenses above every ``__global__`` kernel.

On the kernel's first line, left to right:

* the measurement once known: ``412 us, 71% of copy bandwidth, H200``, or ``stale: ...``
  when the stored results are for another version of the kernel;
* while a job runs or waits: ``optimizing: candidate 5/12 ...`` / ``queued`` (click:
  cancel);
* ``Optimize`` (``Optimize again`` after a run); while the last compile check of the file
  failed, ``does not compile (line 4: expected a ";"): fix it to Optimize`` instead, without an
  action; after a failed Optimize (a compile, spec or runner error), before it and without an
  action, ``Optimize failed: REASON (hover for details)`` until the kernel's next job (the
  hover has the whole message);
* after a run with a candidate on offer: ``2.31x faster candidate: show diff``, ``apply``,
  ``reject``; a candidate timed with another launch than the user's says how it runs under
  the user's: ``14.80x faster candidate: show diff (1.80x as a drop-in; 14.80x with block =
  64, grid = ceil_div(rows, 2))`` or ``(needs a new launch: ...)``.

A kernel without a usable spec: ``harness spec has errors: see FILE.cu.spec`` when the spec
file exists (click: open it, ``cudalens.openSpec``, where the client can show documents),
else ``no harness spec: see the diagnostic``. Kernels held from the last good parse while the
text does not parse (``editing``) keep their lenses, marked ``(editing: last parsed version)``
and without actions.

A lens without an action uses an empty command name: clients show its title as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Sequence

from lsprotocol import types

from cudalens.engine.preflight import refuses
from cudalens.lsp import commands as cmd
from cudalens.lsp.documents import DocumentSnapshot, path_to_uri
from cudalens.lsp.editing import EDITING, Held
from cudalens.lsp.jobs import Job
from cudalens.lsp.launch_edits import drop_in_phrase
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import (failure_lens, measurement, no_offer, not_compiling,
                                  short_device, speedup)
from cudalens.spec.parser import spec_path_for


def code_lenses(snapshot: DocumentSnapshot, statuses: list[KernelStatus],
                jobs: dict[str, Job], held: Optional[Held] = None,
                held_statuses: Sequence[KernelStatus] = (), held_jobs: Optional[dict] = None,
                open_spec: bool = False, check=None,
                failures: Optional[dict] = None) -> list[types.CodeLens]:
    """The lenses of ``snapshot``; ``jobs`` maps kernel names to their queued/running job.

    held: kernels of the last good parse that this mid-edit snapshot lost (``editing``), with
        their statuses in ``held.last_good`` (``held_statuses``) and jobs (``held_jobs``):
        shown on their line in the current text, every title marked ``(editing: last parsed
        version)``, and no command but Cancel.
    open_spec: the client can show a document (``window/showDocument``): a kernel whose spec
        file exists but cannot be used gets a lens that opens the spec file.
    check: the document's last compile check (``cudalens.check.CheckResult``); when it failed
        at a line (``engine.preflight.refuses``), no kernel is offered Optimize (the lens says
        where the first error is).
    failures: kernel name -> its last failed optimize job (``lsp.jobs.Failure``), shown on the
        kernel's lens.
    """
    broken = not_compiling(snapshot.path, check) if refuses(check) else ""
    out: list[types.CodeLens] = []
    spec_path = spec_path_for(snapshot.path)
    for st in statuses:
        line = snapshot.index.range(st.view.kernel.range).start.line
        out += _kernel_lenses(snapshot, st, jobs.get(st.name), line, spec_path, open_spec,
                              broken, (failures or {}).get(st.name))
    for st in held_statuses if held is not None else ():
        line = held.lines.get(st.name, 0)
        job = (held_jobs or {}).get(st.name)
        lenses = [lens for lens in _kernel_lenses(held.last_good, st, job, line, spec_path,
                                                  False)
                  if lens.command is None or lens.command.command in ("", cmd.CANCEL)]
        if not lenses:
            lenses = [types.CodeLens(range=_line_range(line), command=types.Command(
                title=st.view.kernel.name, command=""))]
        for lens in lenses:
            lens.command.title = f"{lens.command.title} {EDITING}"
        out += lenses
    return out


def _line_range(line: int) -> types.Range:
    return types.Range(types.Position(line, 0), types.Position(line, 0))


def _kernel_lenses(snapshot: DocumentSnapshot, st: KernelStatus, job: Optional[Job], line: int,
                   spec_path: Path, open_spec: bool, broken: str = "",
                   failure=None) -> list[types.CodeLens]:
    out: list[types.CodeLens] = []
    rng = _line_range(line)
    args = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, version=snapshot.version)

    def lens(title: str, name: str = "", a: Any = args) -> None:
        arguments = None if not name else [a.to_json() if isinstance(a, cmd.KernelArgs) else a]
        out.append(types.CodeLens(range=rng, command=types.Command(
            title=title, command=name, arguments=arguments)))

    run = st.current
    if run is not None and run.baseline is not None:
        suffix = " (applied candidate)" if run.derived_from else ""
        lens(measurement(run.baseline, run.device) + suffix)
    elif st.stale is not None:
        lens(f"stale: results from {st.stale.created[:10]} on {short_device(st.stale.device)}")
    if job is not None:
        lens(f"{'optimizing' if job.state == 'running' else 'queued'}: {job.message} "
             f"(cancel)", cmd.CANCEL)
    elif broken:
        lens(f"does not compile ({broken}): fix it to Optimize")
    elif st.view.spec is not None:
        if failure is not None:
            lens(failure_lens(failure))
        lens("Optimize again" if run is not None else "Optimize", cmd.OPTIMIZE)
    elif spec_path.is_file():
        # the spec file exists but cannot be used for this kernel: point at it
        title = f"harness spec has errors: see {spec_path.name}"
        if open_spec:
            lens(title, cmd.OPEN_SPEC, {"uri": path_to_uri(spec_path)})
        else:
            lens(title)
    else:
        lens("no harness spec: see the diagnostic")
    if run is not None and job is None:
        if st.offer is not None:
            ca = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, candidate=st.offer.id,
                                version=snapshot.version)
            phrase = drop_in_phrase(st.offer)
            lens(f"{speedup(st.offer)} faster candidate: show diff"
                 + (f" ({phrase})" if phrase else ""), cmd.SHOW_DIFF, ca)
            lens("apply", cmd.APPLY, ca)
            lens("reject", cmd.REJECT, ca)
        elif run.candidates:
            lens(no_offer(run, len(st.rejected)))
    return out
