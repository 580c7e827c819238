"""The confirmation step, one for every proposer: the best candidates of a run timed again
together with the baseline in one evaluation, each one launched otherwise than the user's
program does also run under the user's launch, so that every speedup offered comes from
launches interleaved in one run and every candidate says whether it is a drop-in
(``cudalens.dropin``).

``confirm(top, user, labels, variant, send, on_event)`` builds the variants (``top``'s
candidates under their own launches, labelled ``labels``; then those of ``moved(top, user)``
under ``user``, the spec's launch, labelled ``LABEL@user``), says ``Confirming``, sends them
with ``send`` (with the launch each was built under) and returns the ``Confirmed`` evaluation and rows, each with its launch change
and drop-in verdict (``with_drop_in``). The built-in search (``cudalens.optimize``), the LLM
agent (``cudalens.agent.loop``) and ``cudalens.engine.bench.Bench`` (a new proposer's) call
it; each decides itself which rows are worth confirming and what a failed send means.

Rows are ``cudalens.optimize.Row`` (not imported here: ``cudalens.optimize`` imports this
module); new rows are made with ``dataclasses.replace`` of the given ones, and a row that
carries the variant it was measured as (``Row.variant``) carries the one it was confirmed as.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from gpu_runner.problem import Variant
from gpu_runner.report import CandidateResult, Evaluation
from cudalens.dropin import DropIn, launch_change_of
from cudalens.engine.events import Confirming, OnEvent
from cudalens.spec.model import LaunchDecl

__all__ = ["Confirmed", "confirm", "moved", "with_drop_in", "USER_SUFFIX"]

# The label of a candidate run under the user's launch: its confirmation label and this.
USER_SUFFIX = "@user"

# variant(label, row, launch): the row's candidate as a runner variant under ``launch``.
BuildVariant = Callable[[str, Any, LaunchDecl], Variant]


@dataclass(frozen=True)
class Confirmed:
    """The confirmation's ``evaluation`` (its ``candidates``: those of ``variants``, in order)
    and ``rows``: the confirmed rows with that evaluation's results, launch changes and
    drop-in verdicts, in ``top``'s order (fewer when the evaluation came back short)."""

    evaluation: Evaluation
    rows: tuple
    variants: tuple[Variant, ...]


def moved(rows: Sequence, user: LaunchDecl) -> list:
    """The rows whose candidate is launched otherwise than ``user`` (the spec's launch)."""
    return [row for row in rows if launch_change_of(row.candidate.launch, user) is not None]


def with_drop_in(row, user: LaunchDecl, at_user: Optional[CandidateResult]):
    """``row`` with its launch change (against ``user``, the spec's launch) and drop-in
    result: its own result when it keeps the user's launch and passed, ``at_user`` (the same
    source under the user's launch) when given, else None (not checked)."""
    change = launch_change_of(row.candidate.launch, user)
    drop_in = None
    if change is None and row.result.verdict.ok:
        drop_in = DropIn(row.result, own=True)
    elif change is not None and at_user is not None:
        drop_in = DropIn(at_user)
    return dataclasses.replace(row, launch_change=change, drop_in=drop_in)


def confirm(top: Sequence, user: LaunchDecl, labels: Sequence[str], variant: BuildVariant,
            send: Callable[[list[Variant], list[LaunchDecl]], Evaluation],
            on_event: OnEvent) -> Confirmed:
    """Times ``top`` (rows, best first) again together with the baseline (module doc).

    ``labels``: one per row of ``top``; ``variant(label, row, launch)`` builds a row's
    candidate under a launch; ``send(variants, launches)`` runs one evaluation against the
    baseline (``launches[i]``: what ``variants[i]`` was built under).

    Raises:
        ValueError: ``labels`` and ``top`` differ in length.
        whatever ``variant`` or ``send`` raise (the caller decides what a failure means).
    """
    if len(labels) != len(top):
        raise ValueError(f"expected one label per confirmed row ({len(top)}), "
                         f"found {len(labels)}")
    away = moved(top, user)
    label_of = {id(row): label for row, label in zip(top, labels)}
    launches = [row.candidate.launch for row in top] + [user] * len(away)
    variants = [variant(label, row, row.candidate.launch) for row, label in zip(top, labels)]
    variants += [variant(f"{label_of[id(row)]}{USER_SUFFIX}", row, user) for row in away]
    on_event(Confirming(tuple(labels), len(away)))
    evaluation = send(variants, launches)
    own = evaluation.candidates[:len(top)]
    at_user = dict(zip((id(row) for row in away), evaluation.candidates[len(top):]))

    def again(row, result, built: Variant):
        kept = {"variant": built} if getattr(row, "variant", None) is not None else {}
        return dataclasses.replace(row, result=result, **kept)

    rows = tuple(with_drop_in(again(row, result, built), user, at_user.get(id(row)))
                 for row, result, built in zip(top, own, variants))
    return Confirmed(evaluation, rows, tuple(variants))
