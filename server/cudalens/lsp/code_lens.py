"""Code lenses above every ``__global__`` kernel.

On the kernel's first line, left to right:

* the measurement once known: ``412 us, 71% of peak bandwidth, H200``, or ``stale: ...``
  when the stored results are for another version of the kernel;
* while a job runs or waits: ``optimizing: candidate 5/12 ...`` / ``queued`` (click:
  cancel);
* ``Optimize`` (``Optimize again`` after a run);
* after a run with a candidate on offer: ``2.31x faster candidate: show diff``, ``apply``,
  ``reject``.

A lens without an action uses an empty command name: clients show its title as text.
"""

from __future__ import annotations

from lsprotocol import types

from cudalens.lsp import commands as cmd
from cudalens.lsp.documents import DocumentSnapshot
from cudalens.lsp.jobs import Job
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import measurement, no_offer, short_device, speedup


def code_lenses(snapshot: DocumentSnapshot, statuses: list[KernelStatus],
                jobs: dict[str, Job]) -> list[types.CodeLens]:
    """The lenses of ``snapshot``; ``jobs`` maps kernel names to their queued/running job."""
    out: list[types.CodeLens] = []
    for st in statuses:
        start = snapshot.index.range(st.view.kernel.range).start
        rng = types.Range(types.Position(start.line, 0), types.Position(start.line, 0))
        args = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, version=snapshot.version)

        def lens(title: str, name: str = "", a: cmd.KernelArgs = args) -> None:
            out.append(types.CodeLens(range=rng, command=types.Command(
                title=title, command=name, arguments=[a.to_json()] if name else None)))

        run = st.current
        if run is not None and run.baseline is not None:
            suffix = " (applied candidate)" if run.derived_from else ""
            lens(measurement(run.baseline, run.device) + suffix)
        elif st.stale is not None:
            lens(f"stale: results from {st.stale.created[:10]} on {short_device(st.stale.device)}")
        job = jobs.get(st.name)
        if job is not None:
            lens(f"{'optimizing' if job.state == 'running' else 'queued'}: {job.message} "
                 f"(cancel)", cmd.CANCEL)
        elif st.view.spec is not None:
            lens("Optimize again" if run is not None else "Optimize", cmd.OPTIMIZE)
        else:
            lens("no harness spec: see the diagnostic")
        if run is not None and job is None:
            if st.offer is not None:
                ca = cmd.KernelArgs(uri=snapshot.uri, kernel=st.name, candidate=st.offer.id,
                                    version=snapshot.version)
                lens(f"{speedup(st.offer)} faster candidate: show diff", cmd.SHOW_DIFF, ca)
                lens("apply", cmd.APPLY, ca)
                lens("reject", cmd.REJECT, ca)
            elif run.candidates:
                lens(no_offer(run, len(st.rejected)))
    return out
