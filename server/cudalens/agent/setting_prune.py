"""Pruning the settings of a model's ``@tune`` sweep the way the built-in search prunes.

A proposal that marks tunable parameters (``cudalens.agent.tuning``) becomes one variant per
setting. Before any of them is timed, the built-in search's rules
(``cudalens.optimizer.prune.CompilePruner``) judge each setting by its ptxas report: a setting
that spills registers where the original spills none, that cannot launch (registers or
shared memory of one block exceed an SM), or whose theoretical occupancy collapses below 25%
and below the original's, is dropped with that reason, which goes back to the model. The
reports are the agent's pre-check's (``cudalens.agent.precheck``): nothing is compiled twice
except the original kernel, once per session.

Nothing is dropped when a setting has no report (the pre-check is off or nvcc is missing),
or when every setting would be: then the model's structure is still measured and the
reasons are kept as notes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from cudalens.check.report import KernelResources
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.context import make_context
from cudalens.optimizer.prune import CompilePruner, nvcc_compiler
from cudalens.target import Target


@dataclass(frozen=True)
class Pruned:
    """The outcome for one proposal's settings: the indices kept, in order, and
    ``(index, reason)`` for each setting dropped. ``note``: why nothing was dropped although
    rules matched (every setting would have been), else empty."""

    kept: tuple[int, ...]
    dropped: tuple[tuple[int, str], ...]
    note: str = ""


class SettingPruner:
    """``CompilePruner`` over the pre-check's reports, for one session's target on ``arch``.

    Raises (from ``__call__``): ``ValueError`` when the original kernel does not compile here
    (the caller then skips pruning)."""

    def __init__(self, target: Target, arch: str):
        ctx = make_context(target.text, str(target.path), target.kernel.name, target.spec,
                           header_macros=target.header_macros)
        self._reports: dict[str, KernelResources] = {}
        compile_original = nvcc_compiler(ctx, arch)

        def compile_(source: str, options: tuple[str, ...]):
            if source in self._reports:
                return self._reports[source], None
            return compile_original(source, options)

        self._pruner = CompilePruner(ctx, arch=arch, compile=compile_, workers=1)

    def __call__(self, candidates: Sequence[Candidate],
                 reports: Sequence[Optional[KernelResources]]) -> Pruned:
        """Judges ``candidates`` (one proposal's settings, whole-file sources) with their
        pre-check ``reports`` (None: none)."""
        every = tuple(range(len(candidates)))
        if len(candidates) < 2 or any(r is None for r in reports):
            return Pruned(every, ())
        for c, r in zip(candidates, reports):
            self._reports[c.source] = r
        found = self._pruner(candidates)
        dropped = tuple((i, a.reason) for i, a in enumerate(found) if a.reason is not None)
        if len(dropped) == len(candidates):
            return Pruned(every, (), "every setting would be dropped by the built-in search's "
                                     "compile-report rules; all were measured")
        gone = {i for i, _ in dropped}
        return Pruned(tuple(i for i in every if i not in gone), dropped)
