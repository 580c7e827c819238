"""The candidate search: compose the built-in passes and their parameters.

This is the search ``cudalens optimize`` and the language server use by default: the passes it
composes are those whose candidates were measured on an H200 (``benchmarks/results/``), which
the language server's CI replays. ``cudalens.optimizer.staged_search`` composes every pass
(tiled transpose and matmul, warp reductions, warp per row, unrolling, fast math) with the
batched, compile-pruned search of ``cudalens.optimizer.batched``; it becomes the default once
its candidates are measured on the GPU and recorded.

Passes are composed in stages (``STAGES``): qualifiers, then one body rewrite, then the
block size; each stage may also be skipped. Every combination whose passes all apply is
built (after a source rewrite the text is re-parsed, so later passes see the new kernel).
The candidates are ordered:

1. combinations that use every pass's default parameters, longest first;
2. all others, shuffled by ``random.Random(seed)``;

then candidates equal to an earlier one or to the baseline, by (source, launch), are
dropped and the first ``budget`` kept. The same context, budget and seed always give the
same list.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

from cudalens.optimizer.candidate import Candidate, launch_key, make_label
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.passes import (gridstride, launch_config, restrict_const,
                                       vectorize_gridstride)

STAGES: tuple[tuple[ModuleType, ...], ...] = (
    (restrict_const,),
    (vectorize_gridstride, gridstride),
    (launch_config,),
)


@dataclass(frozen=True)
class _Plan:
    passes: tuple[str, ...]
    tags: tuple[str, ...]
    explanations: tuple[str, ...]
    ctx: PassContext
    defaults: bool  # every step used its pass's default parameters


def preconditions(ctx: PassContext) -> list[tuple[str, Optional[str]]]:
    """For every pass this search composes, in stage order: (name, None) when it applies to
    the kernel as it is, else (name, the reason it does not)."""
    return [(p.name, p.check(ctx)) for stage in STAGES for p in stage]


def _plans(ctx: PassContext) -> list[_Plan]:
    found: list[_Plan] = []

    def visit(stage: int, cur: PassContext, plan: _Plan) -> None:
        if stage == len(STAGES):
            if plan.passes:
                found.append(plan)
            return
        visit(stage + 1, cur, plan)
        for p in STAGES[stage]:
            if p.check(cur) is not None:
                continue
            for i, params in enumerate(p.parameter_space(cur)):
                result = p.apply(cur, **params)
                nxt = cur.rewritten(result.source, result.launch, p.name)
                visit(stage + 1, nxt, _Plan(plan.passes + (p.name,), plan.tags + result.tags,
                                            plan.explanations + (result.explanation,), nxt,
                                            plan.defaults and i == 0))

    visit(0, ctx, _Plan((), (), (), ctx, True))
    return found


def propose(ctx: PassContext, *, budget: int, seed: int) -> list[Candidate]:
    """At most ``budget`` distinct candidates for ``ctx``'s kernel (see the module doc).

    Raises:
        ValueError: ``budget`` is negative.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, found {budget}")
    plans = _plans(ctx)
    first = sorted((p for p in plans if p.defaults), key=lambda p: -len(p.passes))
    rest = [p for p in plans if not p.defaults]
    random.Random(seed).shuffle(rest)
    seen = {(ctx.text, launch_key(ctx.launch))}
    out: list[Candidate] = []
    for plan in first + rest:
        if len(out) >= budget:
            break
        cand = Candidate(label=make_label(plan.tags), explanation="; ".join(plan.explanations),
                         source=plan.ctx.text, kernel=ctx.kernel.qualified_name,
                         launch=plan.ctx.launch, passes=plan.passes)
        if cand.key in seen:
            continue
        seen.add(cand.key)
        out.append(cand)
    return out
