"""What the model is told about each proposal: refusals, compile errors with lines of its code,
the first mismatching element, time, speedup, share of the copy bandwidth and of the FP32
peak, and the best tuned setting."""

from __future__ import annotations

from typing import Optional, Sequence

from gpu_runner.problem import Problem
from gpu_runner.report import CandidateResult, DeviceInfo, Mismatch
from cudalens.agent.facts import rate_text, resources_text
from cudalens.agent.guard import Refusal
from cudalens.agent.precheck import CompileProblem


def _indent(lines: Sequence[str]) -> str:
    return "\n".join("  - " + line.replace("\n", "\n    ") for line in lines)


def refused_text(reasons: Sequence[object]) -> str:
    """``refused:`` then one line per reason (``Refusal``, ``CompileProblem`` or text)."""
    return "refused, not measured:\n" + _indent([str(r) for r in reasons])


def compile_text(problems: Sequence[CompileProblem], where: str = "nvcc") -> str:
    return f"does not compile ({where}):\n" + _indent([str(p) for p in problems])


def mismatch_text(m: Mismatch) -> str:
    return (f"wrong results: the first mismatching element is {m.buffer}[{m.index}] = "
            f"{m.actual!r}, "
            f"expected {m.expected!r} (the original kernel's value), case {m.case}, seed {m.seed}; "
            f"{m.mismatched:,} of {m.total:,} elements of {m.buffer} differ")


def speedup_text(result: CandidateResult) -> str:
    s = result.speedup
    if s is None:
        return "speedup not measured"
    verdict = ("faster beyond noise" if s.ci_low > 1.0 else
               "slower beyond noise" if s.ci_high < 1.0 else "within noise of the original")
    return f"{s.value:.2f}x the original's speed (95% CI {s.ci_low:.2f}-{s.ci_high:.2f}: {verdict})"


def result_text(result: CandidateResult, problem: Problem, device: DeviceInfo,
                compile_problems: Optional[Sequence[CompileProblem]] = None) -> str:
    """One measured variant in a few lines. ``compile_problems``: its compile log already mapped
    to the candidate's lines (used when the runner's compiler failed)."""
    v = result.verdict
    if v.status == "compile_error":
        return compile_text(compile_problems or [CompileProblem(v.reason)], "on the runner")
    if v.status == "mismatch" and v.mismatch is not None:
        return mismatch_text(v.mismatch)
    if not v.ok:
        return f"{v.status.replace('_', ' ')}: {v.reason}"
    t = result.timing
    if t is None:
        return f"verified (matches the original), but not timed: {v.reason}"
    return (f"verified; median {t.median_us:,.2f} us (IQR {t.q1_us:,.2f}-{t.q3_us:,.2f} us); "
            f"{speedup_text(result)}; {rate_text(t, problem.timed_case, device)}; "
            f"{resources_text(result.compile)}")


def tuned_text(tried: Sequence[tuple[str, CandidateResult]], best: Optional[str]) -> str:
    """One line per setting, the fastest verified one marked."""
    lines = []
    for label, r in tried:
        if r.verdict.ok and r.timing is not None:
            speed = f", {r.speedup.value:.2f}x" if r.speedup else ""
            lines.append(f"{label}: {r.timing.median_us:,.2f} us{speed}"
                         + ("  <- fastest" if label == best else ""))
        else:
            lines.append(f"{label}: {r.verdict.status.replace('_', ' ')}")
    head = (f"the fastest verified setting is {best}" if best else
            "no setting was verified")
    return f"{head}; settings tried:\n" + _indent(lines)


def best_text(label: str, result: CandidateResult) -> str:
    t = result.timing
    return (f"{label}, {t.median_us:,.2f} us, {speedup_text(result)}" if t is not None and
            result.speedup is not None else "none yet")


def profile_text(label: str, profile) -> str:
    """One line on where a candidate's time goes (a ``gpu_runner.ncu_csv.Profile``): ``profile
    of r2c1 (Nsight Compute, one launch): achieved occupancy 61.2%, DRAM throughput 83.4% of
    peak; top stalls: long scoreboard 9.81 cycles/instruction (72%), ...``."""
    return f"profile of {label} ({profile.tool}, one launch): {profile.summary()}"


def refusal_lines(refusals: Sequence[Refusal]) -> list[str]:
    return [str(r) for r in refusals]
