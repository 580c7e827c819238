"""Whether a candidate is a drop-in: correct, and how fast, under the launch the user's program
uses.

A candidate is timed under its own launch configuration (``Candidate.launch``), which a pass
may have changed (a warp per row needs 32x the threads, a tiled transpose 32x4 blocks). The
user's program keeps launching the kernel as it did: the spec's original launch (the *user's
launch*). The optimize flow's confirmation also runs every launch-changing candidate's source
under the user's launch (``cudalens.optimize``), and each row then says:

* ``launch_change`` None: the candidate keeps the user's launch; it is a drop-in by
  construction, its own result is its drop-in result;
* ``launch_change`` set and ``drop_in.ok``: correct under both launches; ``drop_in`` has its
  speedup under the user's launch, the row's result its speedup under the new one;
* ``launch_change`` set and not ``drop_in.ok``: it needs the new launch (``drop_in.result``'s
  verdict says what went wrong under the user's launch).

``drop_in`` None means the candidate was not checked under the user's launch (it failed
verification under its own launch, or it was not among the candidates confirmed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpu_runner.report import CandidateResult, Speedup
from cudalens.spec.model import LaunchDecl


def launch_words(launch: LaunchDecl) -> str:
    """``block = 64, grid = ceil_div(rows, 2)`` (``, shared = S`` when not 0): the spec's
    expressions, as the spec file writes them."""
    text = f"block = {', '.join(launch.block)}, grid = {', '.join(launch.grid)}"
    return text + (f", shared = {launch.shared}" if launch.shared.strip() not in ("", "0") else "")


def same_launch(a: LaunchDecl, b: LaunchDecl) -> bool:
    """Whether two launch declarations hold the same expressions (spec lines ignored)."""
    norm = (lambda d: (tuple(x.strip() for x in d.block), tuple(x.strip() for x in d.grid),
                       (d.shared or "0").strip()))
    return norm(a) == norm(b)


@dataclass(frozen=True)
class LaunchChange:
    """The candidate must be launched with ``launch`` (its timing used it) where the user's
    program launches with ``original``."""

    original: LaunchDecl
    launch: LaunchDecl

    @property
    def words(self) -> str:
        return launch_words(self.launch)


@dataclass(frozen=True)
class DropIn:
    """The runner's result for the candidate's source under the user's launch. ``own``: the
    candidate's launch is the user's, so this is the candidate's own result."""

    result: CandidateResult
    own: bool = False

    @property
    def ok(self) -> bool:
        """Verified under the user's launch, with a timing."""
        return self.result.verdict.ok and self.result.speedup is not None

    @property
    def speedup(self) -> Optional[Speedup]:
        return self.result.speedup if self.ok else None


def launch_change_of(candidate_launch: LaunchDecl, user: LaunchDecl) -> Optional[LaunchChange]:
    """The change from ``user`` to ``candidate_launch``; None when they are the same."""
    return None if same_launch(candidate_launch, user) else LaunchChange(user, candidate_launch)


def phrase(own: Optional[float], change_words: Optional[str], checked: bool,
           drop_in: Optional[float]) -> str:
    """The words of ``describe`` from plain values (a report read from JSON has no
    ``DropIn``): ``own`` the candidate's speedup under its own launch, ``change_words`` its
    new launch (``launch_words``; None: it keeps the user's launch), ``checked`` whether it
    ran under the user's launch, ``drop_in`` its speedup there (None: wrong there)."""
    own_text = "-" if own is None else f"{own:.2f}x"
    if change_words is None:
        return f"{own_text} as a drop-in"
    new = f"{own_text} with {change_words}"
    if not checked:
        return f"{new} (not checked under your launch)"
    if drop_in is not None:
        return f"{drop_in:.2f}x as a drop-in; {new}"
    return f"needs a new launch: {new}"


def describe(speedup: Optional[Speedup], drop_in: Optional[DropIn],
             change: Optional[LaunchChange]) -> str:
    """One phrase for a verified candidate: ``2.31x as a drop-in`` (launch unchanged),
    ``1.80x as a drop-in; 14.8x with block = 64, grid = ceil_div(rows, 2)``, ``needs a new
    launch: 14.8x with block = ...`` or ``14.8x with block = ... (not checked under your
    launch)``. ``speedup`` is the candidate's own."""
    return phrase(None if speedup is None else speedup.value,
                  None if change is None else change.words, drop_in is not None,
                  None if drop_in is None or not drop_in.ok else drop_in.speedup.value)
