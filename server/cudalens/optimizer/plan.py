"""What the built-in search would do for a kernel, without a GPU: the candidates it would time,
in order, the first batch it would send, and every pass that does not apply, why and where.

The pool is ``cudalens.optimizer.staged_search.ordered`` (the same context and seed give the
same list ``cudalens optimize`` builds). The first batch is what ``cudalens.optimizer.batched.run``
picks before anything is measured: every family's representative in pool order, up to
``batch`` candidates; it is computed here by running that same code with an evaluator that
measures nothing, so it cannot drift from the search. Later batches are steered by the
measured speedups and cannot be known in advance; ``optimize`` also drops candidates that
nvcc's compile report rules out (``cudalens.optimizer.prune``), which this plan does not run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from cudalens.optimizer.batched import Budget, Scored, run
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.passes import PASSES, launch_bounds
from cudalens.optimizer.reasons import line_of
from cudalens.optimizer.staged_search import ordered
from cudalens.spec.model import LaunchDecl


@dataclass(frozen=True)
class PlannedCandidate:
    """One candidate the search may time: ``label`` as ``optimize`` shows it, ``passes`` in
    the order applied, ``parameters`` the label's ``name=value`` settings (``{"block": "512"}``),
    ``launch`` its block, grid and dynamic shared memory (spec expressions), ``batch_position``
    its place (0-based) in the search's first runner call, None when it is not in it,
    ``explanation`` the passes' sentences on what changed and why (``Candidate.explanation``)."""

    label: str
    passes: tuple[str, ...]
    parameters: dict[str, str]
    launch: LaunchDecl
    batch_position: Optional[int]
    explanation: str = ""

    @property
    def first_batch(self) -> bool:
        return self.batch_position is not None

    def record(self) -> dict[str, Any]:
        return {"label": self.label, "passes": list(self.passes),
                "parameters": dict(self.parameters),
                "launch": {"block": list(self.launch.block), "grid": list(self.launch.grid),
                           "shared": self.launch.shared},
                "first_batch": self.first_batch, "first_batch_position": self.batch_position,
                "explanation": self.explanation}


@dataclass(frozen=True)
class NotApplied:
    """A pass that does not apply to the kernel as written: ``reason`` in the pass's words,
    ``line`` the 1-based line of the file the failing condition is about, or the kernel's
    first line when the reason concerns the kernel as a whole (``at_kernel`` True)."""

    pass_name: str
    reason: str
    line: int
    at_kernel: bool

    def record(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "reason": self.reason, "line": self.line,
                "at": "kernel" if self.at_kernel else "condition"}


@dataclass(frozen=True)
class Plan:
    """The plan for one kernel (module doc). ``batch`` is the number of candidates per runner
    call the first batch was computed for; ``notes`` say what the plan cannot know."""

    kernel: str
    candidates: tuple[PlannedCandidate, ...]
    not_applied: tuple[NotApplied, ...]
    batch: int
    notes: tuple[str, ...]

    @property
    def first_batch(self) -> tuple[PlannedCandidate, ...]:
        """The first batch in the order the search sends it."""
        return tuple(sorted((c for c in self.candidates if c.first_batch),
                            key=lambda c: c.batch_position))

    def record(self) -> dict[str, Any]:
        """The JSON form: ``{"kernel", "candidates": [...], "not_applied": [...], "batch",
        "notes"}``."""
        return {"kernel": self.kernel, "candidates": [c.record() for c in self.candidates],
                "not_applied": [n.record() for n in self.not_applied], "batch": self.batch,
                "notes": list(self.notes)}


def parameters_of(label: str) -> dict[str, str]:
    """The ``name=value`` settings of a label (``cudalens.optimizer.candidate.make_label``
    joins pass tags with spaces; tags with ``=`` are parameter settings)."""
    out: dict[str, str] = {}
    for tag in label.split():
        name, sep, value = tag.partition("=")
        if sep:
            out[name] = value
    return out


def first_batch(pool: list[Candidate], batch: int) -> list[Candidate]:
    """The candidates ``batched.run`` sends in its first runner call for ``pool`` (no
    pruning), found by running it for one batch with an evaluator that measures nothing."""
    sent: list[Candidate] = []

    def evaluate(cands):
        sent.extend(cands)
        return [Scored(c, None) for c in cands]

    run(pool, evaluate, budget=Budget(candidates=batch, batch=batch))
    return sent


def make_plan(ctx: PassContext, *, seed: int = 0, batch: int = 8) -> Plan:
    """The plan for ``ctx``'s kernel with the search's ``seed`` and ``batch`` size.

    Raises:
        ValueError: ``batch`` below 1.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, found {batch}")
    pool = ordered(ctx, seed)
    first = {c.key: i for i, c in enumerate(first_batch(pool, batch))}
    candidates = tuple(PlannedCandidate(c.label, c.passes, parameters_of(c.label), c.launch,
                                        first.get(c.key), c.explanation) for c in pool)
    used = {name for c in pool for name in c.passes}
    kernel_line = ctx.kernel.name_range.start.line + 1
    missing: list[NotApplied] = []
    for p in PASSES:
        reason = p.check(ctx)
        if reason is None or p.name in used:
            continue
        line = line_of(reason)
        missing.append(NotApplied(p.name, str(reason), line or kernel_line, line is None))
    notes = [f"the first batch ({len(first)} of {len(pool)} candidates, {batch} per runner "
             f"call) is fixed before anything is measured; later batches follow the measured "
             f"speedups", "optimize also drops candidates that nvcc's compile report rules out "
             "(spills, collapsed occupancy), which this plan does not compile"]
    if launch_bounds.name not in used and launch_bounds.check(ctx) is None:
        notes.append("__launch_bounds__ is added after measurement, to verified candidates "
                     "whose registers limit occupancy")
    # a template instance is named with its arguments (MatrixMulCUDA<16>), as its spec is
    name = ctx.spec.kernel if ctx.spec is not None and "<" in ctx.spec.kernel else \
        ctx.kernel.qualified_name
    return Plan(name, candidates, tuple(missing), batch, tuple(notes))
