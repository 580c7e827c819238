"""Sweeping tunable parameters written into a candidate's source.

The marker is the LLM agent's (``cudalens.agent.tuning``): an integer ``#define`` followed on
its line by ``// @tune`` and the values to try::

    #define TILE 32 // @tune 16, 32, 64

The code as written is valid CUDA. ``sweep`` turns one such candidate into one candidate per
combination of values (the value as written first, then the others in the order listed,
parameters in source order), each with the ``#define``s set and the integer ``#define``s
substituted into its launch expressions (``block = TILE, 8``). The swept candidates form one
family (``Candidate.family``), so the batched search (``cudalens.optimizer.batched``) prunes,
times and refines them like the built-in passes' parameters. The parsing and substitution are
the agent's functions, so both sides read the marker the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from cudalens.agent.tuning import (TuneError, apply_setting, find_params, integer_defines,
                                   settings, substitute_launch)
from cudalens.optimizer.candidate import Candidate
from cudalens.spec.model import KernelSpec

MAX_SETTINGS = 64

__all__ = ["TuneError", "sweep", "has_tunables"]


def has_tunables(source: str) -> bool:
    """Whether ``source`` marks any ``@tune`` parameter (raises ``TuneError`` when a marker
    is malformed)."""
    return bool(find_params(source))


def sweep(cand: Candidate, spec: KernelSpec, *, limit: int = MAX_SETTINGS) -> list[Candidate]:
    """One candidate per setting of ``cand``'s ``@tune`` parameters (``[cand]`` when it has
    none), the setting as written first.

    Labels get the setting (``"llm-tiled TILE=16"``), ``family`` is ``cand.family`` or, when
    empty, ``cand.label``; sizes of ``spec`` are never substituted in launch expressions.

    Raises:
        TuneError: a malformed marker, or more than ``limit`` settings.
    """
    params = find_params(cand.source)
    if not params:
        return [cand]
    written = integer_defines(cand.source)
    combos = settings(params, limit)
    as_written = [s for s in combos if all(written.get(k) == v for k, v in s.values)]
    ordered: Sequence = as_written + [s for s in combos if s not in as_written]
    reserved = frozenset(s.name for s in spec.sizes)
    family = cand.family or cand.label
    out = []
    for setting in ordered:
        code = apply_setting(cand.source, setting)
        launch = substitute_launch(cand.launch, integer_defines(code), reserved)
        out.append(dataclasses.replace(cand, label=f"{cand.label} {setting.label}".strip(),
                                       source=code, launch=launch, family=family))
    return out
