"""What the editor's progress says for the built-in search's events.

``BuiltinProgress.describe(event)`` turns one ``cudalens.engine.events`` event into the text
and percentage of a work-done progress report, or None for events the editor does not show
(a candidate's verdict, its time, a batch's end: the results show those). Percentages:
compiling 5-20, verifying 20-60, timing 60-100. Candidates are counted as the search numbers
them (``BatchStarted.labels``: ``c1``, ``c2`` ... across batches); during the confirmation
(``Confirming``) its candidates are counted from 1 again. The fastest verified speedup so far
(``BestSoFar``) is added to the candidate and timing messages: ``candidate 9/16: verifying
against the baseline, best so far 1.83x``.
"""

from __future__ import annotations

from typing import Optional

from cudalens.engine.events import (BatchStarted, BestSoFar, Compiling, Confirming, Event,
                                    Note, RunStarted, TimingRound, Verifying, WarmingUp)

Shown = Optional[tuple[str, Optional[int]]]


class BuiltinProgress:
    """The progress of one built-in run; ``candidates`` (how many the current count runs to)
    and ``best`` (``"1.83x"``) as the events so far set them."""

    def __init__(self) -> None:
        self.candidates = 0
        self.best = ""
        self._number: dict[str, int] = {}  # candidate label -> its number as shown

    def describe(self, event: Event) -> Shown:
        """The text and percentage for ``event`` (see the module doc), None to show nothing."""
        shown = self._describe(event)
        if shown is not None and self.best and isinstance(event, (Compiling, Verifying,
                                                                   TimingRound)):
            text, percent = shown
            if text.startswith(("candidate ", "compiling candidate ", "timing round ")):
                shown = (f"{text}, best so far {self.best}", percent)
        return shown

    def _describe(self, event: Event) -> Shown:
        n = self.candidates
        if isinstance(event, BatchStarted):
            self.candidates = event.candidates
            first = event.candidates - len(event.labels) + 1
            self._number.update({label: first + i for i, label in enumerate(event.labels)})
            return (f"{event.candidates} candidates proposed; running on {event.device}", 5)
        if isinstance(event, Confirming):
            self.candidates = len(event.labels)
            self._number = {label: i for i, label in enumerate(event.labels, 1)}
            return (f"timing the {len(event.labels)} fastest candidates again, together with "
                    f"the baseline"), 5
        if isinstance(event, BestSoFar):
            self.best = f"{event.speedup:.2f}x"
            return event.text(), None
        if isinstance(event, Compiling):
            i = self._number.get(event.label)
            if i is None:
                return "compiling the baseline", 5
            return f"compiling candidate {i}/{n or '?'}", 5 + 15 * i // max(n, 1)
        if isinstance(event, Verifying):
            i = None if event.baseline else self._number.get(event.label)
            if i is None:
                return "verifying the baseline", 20
            return (f"candidate {i}/{n or '?'}: verifying against the baseline",
                    20 + 40 * i // max(n, 1))
        if isinstance(event, WarmingUp):
            return "timing: warm-up", 60
        if isinstance(event, TimingRound):
            return (f"timing round {event.round}/{event.of}, baseline and candidates "
                    f"interleaved", 60 + 40 * event.round // max(event.of, 1))
        if isinstance(event, (Note, RunStarted)):
            return event.text(), None
        return None
