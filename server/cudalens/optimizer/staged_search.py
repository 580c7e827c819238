"""The candidate search: compose the built-in passes and their parameters into an ordered list.

Passes are composed in stages (``STAGES``): qualifiers, one body rewrite, loop unrolling,
fast math, the block size; each stage may also be skipped. ``__launch_bounds__`` is not a
stage: it only matters where registers limit occupancy, which the compile report shows, so
``cudalens.optimizer.batched`` adds it to measured candidates that need it. Every
combination whose passes all apply is built (after a source rewrite the text is re-parsed,
so later passes see the new kernel); results of a pass on the same text, launch and
parameters are computed once.

Candidates are grouped into *families*: the same structure (the label's tags without
parameter settings, ``Candidate.family``), differing only in parameters. The order is
breadth first:

1. one representative per family: its combination without tuning-only passes (``TUNING``)
   that uses the fewest non-default parameters, the longest such one; families with a body
   rewrite first, then those with only exact passes (not ``APPROXIMATE``), then longer
   representatives first, then in the stages' order;
2. then the other members, taking one from each family in turn (same family order), each
   family's members shuffled by ``random.Random(seed)``;

candidates equal to an earlier one or to the baseline (by source, launch and nvcc options)
are dropped and the first ``budget`` kept. The same context, budget and seed always give the
same list. Each candidate's source has ``memory_acc``'s register statements on lines of
their own (``memory_acc.own_lines``: after every pass, whose reasons cite the user's lines).
When the workspace has a ``.clang-format``, each candidate's kernel is formatted
with it (``cudalens.formatting``), so what is timed, shown and applied is the same text.
``cudalens.optimizer.batched`` then measures them in batches, steering towards the
families that measure best.
"""

from __future__ import annotations

import dataclasses

import random
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

from cudalens.optimizer.candidate import Candidate, PassResult, family_of, launch_key, make_label
from cudalens.optimizer import memory_acc
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.passes import (BODY_REWRITES, PASSES, fast_math, launch_config,
                                       restrict_const, unroll)

STAGES: tuple[tuple[ModuleType, ...], ...] = (
    (restrict_const,),
    BODY_REWRITES,
    (unroll,),
    (fast_math,),
    (launch_config,),
)


@dataclass(frozen=True)
class _Plan:
    passes: tuple[str, ...]
    tags: tuple[str, ...]
    explanations: tuple[str, ...]
    options: tuple[str, ...]
    ctx: PassContext
    defaults: bool  # every step used its pass's default parameters
    tuning: bool  # a tuning-only pass was applied
    body: bool  # a body rewrite was applied
    approximate: bool = False  # a pass that changes results within tolerance was applied
    nondefault: int = 0  # steps that used other than their pass's default parameters
    order: int = 0


def preconditions(ctx: PassContext) -> list[tuple[str, Optional[str]]]:
    """For every built-in pass, in ``PASSES`` order: (name, None) when it applies to the
    kernel as it is, else (name, the reason it does not)."""
    return [(p.name, p.check(ctx)) for p in PASSES]


class _Applier:
    """Applies passes, computing each (pass, text, launch, parameters) once."""

    def __init__(self) -> None:
        self._checks: dict[tuple, Optional[str]] = {}
        self._spaces: dict[tuple, tuple[dict, ...]] = {}
        self._results: dict[tuple, PassResult] = {}
        self._contexts: dict[tuple, PassContext] = {}

    @staticmethod
    def _key(p: ModuleType, ctx: PassContext) -> tuple:
        return (p.name, ctx.text, launch_key(ctx.launch))

    def check(self, p: ModuleType, ctx: PassContext) -> Optional[str]:
        key = self._key(p, ctx)
        if key not in self._checks:
            self._checks[key] = p.check(ctx)
        return self._checks[key]

    def space(self, p: ModuleType, ctx: PassContext) -> tuple[dict, ...]:
        key = self._key(p, ctx)
        if key not in self._spaces:
            self._spaces[key] = p.parameter_space(ctx)
        return self._spaces[key]

    def apply(self, p: ModuleType, ctx: PassContext, params: dict) -> tuple[PassResult, PassContext]:
        key = self._key(p, ctx) + (tuple(sorted(params.items())),)
        if key not in self._results:
            self._results[key] = p.apply(ctx, **params)
        result = self._results[key]
        ckey = (ctx.text, result.source, launch_key(result.launch), ctx.applied, p.name)
        if ckey not in self._contexts:
            self._contexts[ckey] = ctx.rewritten(result.source, result.launch, p.name)
        return result, self._contexts[ckey]


def _plans(ctx: PassContext,
           stages: tuple[tuple[ModuleType, ...], ...] = STAGES) -> list[_Plan]:
    found: list[_Plan] = []
    applier = _Applier()

    def visit(stage: int, cur: PassContext, plan: _Plan) -> None:
        if stage == len(stages):
            if plan.passes:
                found.append(plan)
            return
        visit(stage + 1, cur, plan)
        for p in stages[stage]:
            if applier.check(p, cur) is not None:
                continue
            for i, params in enumerate(applier.space(p, cur)):
                result, nxt = applier.apply(p, cur, params)
                visit(stage + 1, nxt, _Plan(
                    plan.passes + (p.name,), plan.tags + result.tags,
                    plan.explanations + (result.explanation,), plan.options + result.options,
                    nxt, plan.defaults and i == 0, plan.tuning or getattr(p, "TUNING", False),
                    plan.body or p in BODY_REWRITES,
                    plan.approximate or getattr(p, "APPROXIMATE", False),
                    plan.nondefault + (i > 0)))

    visit(0, ctx, _Plan((), (), (), (), ctx, True, False, False))
    return [_Plan(**{**p.__dict__, "order": i}) for i, p in enumerate(found)]


def _candidate(ctx: PassContext, plan: _Plan) -> Candidate:
    # the passes ran on line-kept text (their reasons cite the user's lines); the layout of
    # memory_acc's register statements is settled once, here (memory_acc, Layout)
    return Candidate(label=make_label(plan.tags), explanation="; ".join(plan.explanations),
                     source=memory_acc.own_lines(plan.ctx, ctx.text), kernel=ctx.kernel.qualified_name,
                     launch=plan.ctx.launch, passes=plan.passes, options=plan.options,
                     family=family_of(plan.tags))


class KernelStyler:
    """Formats each candidate's kernel with the workspace's ``.clang-format``
    (``cudalens.formatting``), once per distinct text; a candidate is left as generated
    when clang-format fails on it (the code is the same, only its layout differs)."""

    def __init__(self, ctx: PassContext) -> None:
        from cudalens import formatting

        self._ctx = ctx
        self._on = formatting.find_style_file(ctx.path) is not None and \
            formatting.find_clang_format() is not None
        self._done: dict[str, str] = {ctx.text: ctx.text}

    def __call__(self, cand: Candidate) -> Candidate:
        if not self._on:
            return cand
        from cudalens import formatting

        if cand.source not in self._done:
            try:
                self._done[cand.source] = formatting.format_kernel(
                    cand.source, self._ctx.path, self._ctx.kernel.qualified_name)
            except (formatting.FormatError, KeyError):
                self._done[cand.source] = cand.source
        return dataclasses.replace(cand, source=self._done[cand.source])


def ordered(ctx: PassContext, seed: int,
            stages: tuple[tuple[ModuleType, ...], ...] = STAGES) -> list[Candidate]:
    """Every distinct candidate for ``ctx``'s kernel, in the search order (module doc);
    ``stages``: the passes composed, stage by stage (a pass module as ``passes/__init__.py``
    describes; another caller's stages add its own passes)."""
    plans = _plans(ctx, stages)
    families: dict[str, list[_Plan]] = {}
    for plan in plans:
        families.setdefault(family_of(plan.tags), []).append(plan)

    def representative(members: list[_Plan]) -> _Plan:
        return min(members, key=lambda p: (p.tuning, p.nondefault, -len(p.passes), p.order))

    reps = {name: representative(members) for name, members in families.items()}
    names = sorted(families, key=lambda n: (not reps[n].body, reps[n].approximate,
                                            -len(reps[n].passes), reps[n].order))
    rng = random.Random(seed)
    queues: list[list[_Plan]] = []
    for n in names:
        rest = [p for p in families[n] if p is not reps[n]]
        rng.shuffle(rest)
        queues.append(rest)
    sequence = [reps[n] for n in names]
    depth = max((len(q) for q in queues), default=0)
    for i in range(depth):
        sequence.extend(q[i] for q in queues if i < len(q))
    seen = {(ctx.text, launch_key(ctx.launch), ())}
    out: list[Candidate] = []
    styled = KernelStyler(ctx)
    for plan in sequence:
        cand = styled(_candidate(ctx, plan))
        if cand.key in seen:
            continue
        seen.add(cand.key)
        out.append(cand)
    return out


def propose(ctx: PassContext, *, budget: int, seed: int) -> list[Candidate]:
    """At most ``budget`` distinct candidates for ``ctx``'s kernel (see the module doc).

    Raises:
        ValueError: ``budget`` is negative.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, found {budget}")
    return ordered(ctx, seed)[:budget]
