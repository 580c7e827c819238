"""A toy proposer for tests (docs/architecture.md, "How to add things: a proposer"): it
proposes the original kernel with ``__launch_bounds__(B)`` for a few block sizes ``B`` of the
spec's launch, in batches of one, then times the best two again together (the confirmation
step) and stops.

Test-only: it proposes no real rewrite; it shows the whole contract in one file.
"""

from __future__ import annotations

import threading

from cudalens.engine.bench import Bench
from cudalens.engine.events import OnEvent, Stopped
from cudalens.engine.proposer import Budget, Proposal, RunCancelled
from cudalens.optimizer.candidate import Candidate


class ToyProposer:
    """Proposes ``__launch_bounds__(bound)`` for each of ``bounds`` (module doc)."""

    label = "toy launch bounds"

    def __init__(self, bounds: tuple[int, ...] = (256, 1024)):
        self.bounds = bounds

    def propose(self, target, runner, budget: Budget, on_event: OnEvent,
                cancel: threading.Event) -> Proposal:
        bench = Bench.make(target, runner, on_event, repetitions=budget.repetitions)
        head = f"__global__ void {target.kernel.name}("
        evaluation = None
        for bound in self.bounds[:budget.candidates]:
            if cancel.is_set():
                raise RunCancelled("cancelled")
            source = target.text.replace(
                head, f"__global__ void __launch_bounds__({bound}) {target.kernel.name}(", 1)
            evaluation, _rows = bench.measure([Candidate(
                label=f"launch_bounds({bound})", explanation=f"at most {bound} threads a block",
                source=source, kernel=target.kernel.qualified_name, launch=target.spec.launch,
                passes=("toy_launch_bounds",))])
        best = bench.best(top=2)
        if len(best) > 1:
            evaluation, rows = bench.confirm(best)
            result = bench.result(evaluation, rows, stop="every bound was tried",
                                  confirmed=True)
        else:
            result = bench.result(evaluation, [r for rows in bench.batches for r in rows],
                                  stop="every bound was tried")
        stop = Stopped("every bound was tried", "done")
        on_event(stop)
        return Proposal(result, stop)
