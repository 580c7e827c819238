"""Verdicts from what a launch left in memory (numpy, no GPU needed).

The GPU side reads every buffer back after a launch into a ``RunResult``; the functions here
decide, in a fixed order, whether the run passes, and if not write the one sentence the user
sees. Order of checks for one run: guard regions (``out_of_bounds``: it explains any other
symptom), input buffers unchanged (``input_modified``), outputs written where the baseline
wrote (``unwritten``), outputs within tolerance of the baseline's (``mismatch``), no float
output constant where the baseline's varies, unless it is within the element type's default
tolerance (``constant_output``: a loose spec tolerance cannot let an all-zero output pass,
``compare.constant_where_varying``); buffers in parameter order, the lowest offending index
first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Union

import numpy as np

from gpu_runner.buffers import GuardDamage
from gpu_runner.compare import (Bounds, Difference, bounds_for, changed, constant_where_varying,
                                identical, mismatch, unwritten)
from gpu_runner.problem import Buffer, Case, Tolerance
from gpu_runner.report import Mismatch, Verdict, VerdictStatus


@dataclass
class RunResult:
    """Host copies of one launch's effects: ``outputs`` (``out`` and ``inout`` buffers),
    ``inputs_after`` (``in`` buffers) and the first damaged guard, if any."""

    outputs: dict[str, np.ndarray] = field(default_factory=dict)
    inputs_after: dict[str, np.ndarray] = field(default_factory=dict)
    guard: Optional[GuardDamage] = None


def fmt(value: Union[int, float]) -> str:
    """A value as the user reads it: ints as is, floats to 9 significant digits, NaN as nan."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return f"{float(value):.9g}"


def _where(case: Case, seed: int) -> str:
    return f"case '{case.label}', seed {seed}"


def _verdict(variant: str, status: VerdictStatus, reason: str, case: Case, seed: int,
             buffer: str = "", diff: Optional[Difference] = None) -> Verdict:
    m = None
    if diff is not None:
        m = Mismatch(case=case.label, seed=seed, buffer=buffer, index=diff.index,
                     expected=diff.expected, actual=diff.actual, mismatched=diff.count,
                     total=diff.total)
    return Verdict(variant=variant, status=status, reason=reason, mismatch=m)


def _buffers(case: Case, roles: tuple[str, ...]) -> list[Buffer]:
    return [a for a in case.args if isinstance(a, Buffer) and a.role in roles]


def guard_verdict(variant: str, case: Case, seed: int, damage: GuardDamage,
                  when: str = "") -> Verdict:
    """``out_of_bounds`` for a damaged guard region."""
    place = ("past the end" if damage.side == "after" else "before the start")
    return _verdict(
        variant, "out_of_bounds",
        f"{_where(case, seed)}{when}: the kernel wrote outside buffer '{damage.buffer}': "
        f"{damage.nbytes} guard byte(s) {place} were overwritten, the nearest at element "
        f"index {damage.index}", case, seed, damage.buffer)


def _input_check(variant: str, case: Case, seed: int, inputs: Mapping[str, np.ndarray],
                 run: RunResult, when: str = "") -> Optional[Verdict]:
    for buf in _buffers(case, ("in",)):
        d = changed(inputs[buf.name], run.inputs_after[buf.name], buf.dtype)
        if d:
            return _verdict(
                variant, "input_modified",
                f"{_where(case, seed)}{when}: input '{buf.name}' was modified at index {d.index}: "
                f"was {fmt(d.expected)}, now {fmt(d.actual)} ({d.count} of {d.total} elements "
                f"changed); an 'in' buffer must come back unchanged", case, seed, buf.name, d)
    return None


def _output_checks(variant: str, case: Case, seed: int, run: RunResult,
                   reference: Mapping[str, np.ndarray], tolerance: Optional[Tolerance],
                   status: VerdictStatus, when: str = "",
                   reference_name: str = "the baseline") -> Optional[Verdict]:
    same = {b.name for b in _buffers(case, ("out", "inout"))
            if identical(reference[b.name], run.outputs[b.name])}  # nothing to judge there
    for buf in _buffers(case, ("out",)):
        if buf.name in same:
            continue
        d = unwritten(reference[buf.name], run.outputs[buf.name], buf.dtype)
        if d:
            return _verdict(
                variant, "unwritten" if status == "mismatch" else status,
                f"{_where(case, seed)}{when}: output '{buf.name}' was not written at index "
                f"{d.index} (it still holds the poison value; {reference_name} wrote "
                f"{fmt(d.expected)}); {d.count} of {d.total} elements unwritten",
                case, seed, buf.name, d)
    for buf in _buffers(case, ("out", "inout")):
        if buf.name in same:
            continue
        ref = reference[buf.name]
        bounds = bounds_for(ref, tolerance, buf.dtype)
        d = mismatch(ref, run.outputs[buf.name], bounds, buf.dtype)
        if d:
            rule = ("integers must match exactly" if bounds.exact
                    else f"allowed: {bounds.describe()}")
            return _verdict(
                variant, status,
                f"{_where(case, seed)}{when}: output '{buf.name}' differs from "
                f"{reference_name} at "
                f"index {d.index}: expected {fmt(d.expected)}, got {fmt(d.actual)} ({d.count} of "
                f"{d.total} elements differ; {rule})", case, seed, buf.name, d)
    for buf in _buffers(case, ("out", "inout")):
        if buf.name in same:
            continue
        ref = reference[buf.name]
        d = constant_where_varying(ref, run.outputs[buf.name])
        if d:
            return _verdict(
                variant, "constant_output" if status == "mismatch" else status,
                f"{_where(case, seed)}{when}: output '{buf.name}' holds one value, "
                f"{fmt(d.actual)}, in all {d.total} elements where the baseline's varies "
                f"(index {d.index}: expected {fmt(d.expected)}); a constant output must match "
                f"within the default tolerance ({bounds_for(ref).describe()}) whatever the "
                f"spec's, and {d.count} of {d.total} elements do not", case, seed, buf.name, d)
    return None


def judge_run(variant: str, case: Case, seed: int, inputs: Mapping[str, np.ndarray],
              run: RunResult, reference: Mapping[str, np.ndarray],
              tolerance: Optional[Tolerance] = None, *,
              reference_name: str = "the baseline") -> Optional[Verdict]:
    """The failing verdict of a candidate's run against the baseline's outputs
    ``reference`` on the same ``inputs``, or None when it passes every check.
    ``reference_name`` names the reference in the reasons (``the captured results``)."""
    if run.guard is not None:
        return guard_verdict(variant, case, seed, run.guard)
    return (_input_check(variant, case, seed, inputs, run)
            or _output_checks(variant, case, seed, run, reference, tolerance, "mismatch",
                              reference_name=reference_name))


def judge_repeat(variant: str, case: Case, seed: int, inputs: Mapping[str, np.ndarray],
                 first: RunResult, second: RunResult, reference: Mapping[str, np.ndarray],
                 tolerance: Optional[Tolerance] = None, atomics: bool = False) -> Optional[Verdict]:
    """The failing verdict of a second run on the same inputs, or None. Outputs must equal
    the first run's bit for bit; with ``atomics`` they must be within the tolerance (taken
    from the baseline's outputs) of the first run's."""
    when = " (second run)"
    if second.guard is not None:
        return guard_verdict(variant, case, seed, second.guard, when)
    bad = _input_check(variant, case, seed, inputs, second, when)
    if bad:
        return bad
    for buf in _buffers(case, ("out", "inout")):
        a, b = first.outputs[buf.name], second.outputs[buf.name]
        if atomics:
            bounds: Bounds = bounds_for(reference[buf.name], tolerance, buf.dtype)
            d = mismatch(a, b, bounds, buf.dtype)
            rule = bounds.describe()
        else:
            d = changed(a, b, buf.dtype)
            rule = "bit-identical results"
        if d:
            return _verdict(
                variant, "nondeterministic",
                f"{_where(case, seed)}: a second run on the same inputs gave different values "
                f"for '{buf.name}' at index {d.index}: first {fmt(d.expected)}, then "
                f"{fmt(d.actual)} ({d.count} of {d.total} elements differ; required: {rule})",
                case, seed, buf.name, d)
    return None


def judge_stale(variant: str, case: Case, seed: int, inputs: Mapping[str, np.ndarray],
                run: RunResult, reference: Mapping[str, np.ndarray],
                tolerance: Optional[Tolerance] = None) -> Optional[Verdict]:
    """The verdict on the last timed launch of a candidate against the baseline's last timed
    launch: guards and inputs as usual, any output difference ``stale_after_timing``."""
    when = " (after the timing loop)"
    if run.guard is not None:
        return guard_verdict(variant, case, seed, run.guard, when)
    return (_input_check(variant, case, seed, inputs, run, when)
            or _output_checks(variant, case, seed, run, reference, tolerance,
                              "stale_after_timing", when))


def launch_verdict(variant: str, case: Case, seed: int, error: str, when: str = "") -> Verdict:
    """``launch_error`` for a launch the driver rejected or a kernel that faulted."""
    return _verdict(variant, "launch_error", f"{_where(case, seed)}{when}: {error}", case, seed)


def timeout_verdict(variant: str, case: Case, seed: int, error: str, when: str = "") -> Verdict:
    """``timeout`` for a kernel that did not finish in time."""
    return _verdict(variant, "timeout", f"{_where(case, seed)}{when}: {error}", case, seed)
