"""``run``: one optimization, the same for the CLI and the language server.

``run(target, runner, proposer, budget, on_event, cancel)`` says ``RunStarted``, lets the
proposer propose and measure (``cudalens.engine.proposer``), and returns its ``Proposal``;
every event goes to ``on_event`` on the way (``cudalens.engine.events``). The front ends
render the events and the proposal; they never call the optimizer or the agent themselves.
See docs/architecture.md, "The engine".
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Optional

from cudalens.engine.events import OnEvent, RunStarted, ignore
from cudalens.engine.proposer import Budget, Proposal, Proposer, RunCancelled

if TYPE_CHECKING:
    from cudalens.engine.runner import Runner
    from cudalens.target import Target

__all__ = ["run", "RunCancelled"]


def run(target: "Target", runner: "Runner", proposer: Proposer, budget: Budget = Budget(),
        on_event: Optional[OnEvent] = None,
        cancel: Optional[threading.Event] = None) -> Proposal:
    """Optimizes ``target``'s kernel with ``proposer`` on ``runner`` within ``budget``.

    ``on_event`` gets every event of the run, in order (an exception it raises stops the run
    and propagates); ``cancel``, when set, stops the run at its next step (see each
    proposer for what is kept).

    Raises:
        RunCancelled: cancelled where the proposer keeps nothing.
        cudalens.errors.CudalensError: the spec cannot be resolved, or the baseline does not
            compile or cannot be measured; the runner's errors (``RunnerUnavailable``, ...).
    """
    say = on_event or ignore
    cancel = cancel or threading.Event()
    say(RunStarted(target.kernel.name, runner.device_info().name, proposer.label))
    return proposer.propose(target, runner, budget, say, cancel)
