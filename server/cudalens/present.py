"""Rendering optimize results for a terminal (rich) and as JSON records."""

from __future__ import annotations

import dataclasses
from typing import Optional

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpu_runner.report import Timing
from cudalens.dropin import describe
from cudalens.optimize import Batch, OptimizeResult, Row


def fmt_us(t: Optional[Timing]) -> str:
    return "-" if t is None else f"{t.median_us:,.1f} us"


def fmt_spread(t: Timing) -> str:
    return f"IQR {t.q1_us:,.1f}-{t.q3_us:,.1f} us"


def fmt_speedup(row: Row) -> str:
    s = row.result.speedup
    return "-" if s is None else f"{s.value:.2f}x [{s.ci_low:.2f}, {s.ci_high:.2f}]"


def fmt_bw(t: Optional[Timing]) -> str:
    return "-" if t is None else f"{t.achieved_gbps:,.0f} GB/s ({t.percent_of_copy:.0f}%)"


def fmt_user_launch(row: Row) -> str:
    """The table's "your launch" cell: ``same`` (the candidate keeps the user's launch),
    ``1.80x`` (correct under the user's launch too, that fast), ``wrong: STATUS`` (needs the
    new launch) or ``-`` (not checked)."""
    if row.launch_change is None:
        return "same" if row.result.verdict.ok else "-"
    d = row.drop_in
    if d is None:
        return "-"
    if d.ok:
        return f"{d.speedup.value:.2f}x [{d.speedup.ci_low:.2f}, {d.speedup.ci_high:.2f}]"
    return f"[red]needs new launch[/red] ({escape(d.result.verdict.status)})"


def candidates_table(result: OptimizeResult) -> Table:
    ev = result.evaluation
    table = Table(title=f"{result.target.kernel.name} on {result.device.name}", expand=False)
    for col in ("#", "candidate", "time", "speedup [95% CI]", "achieved", "verdict",
                "under your launch"):
        table.add_column(col, overflow="fold")
    table.add_row("-", "baseline (original kernel)", fmt_us(ev.baseline), "1.00x", fmt_bw(ev.baseline),
                  "reference", "same")
    for i, row in enumerate(result.rows, 1):
        v = row.result.verdict
        mark = "*" if row is result.winner else ""
        verdict = "verified" if v.ok else f"[red]{v.status}[/red]: {escape(v.reason)}"
        t = row.result.timing
        if v.ok and t is not None and t.above_roofline:
            verdict += f"; [yellow]not offered[/yellow]: {escape(t.roofline_note)}"
        table.add_row(f"{i}{mark}", escape(row.candidate.label),
                      fmt_us(row.result.timing), fmt_speedup(row), fmt_bw(row.result.timing), verdict,
                      fmt_user_launch(row))
    return table


def summary_lines(result: OptimizeResult) -> list[str]:
    ev = result.evaluation
    w = result.winner
    lines = []
    if w is None:
        best = result.best_verified
        if best is None:
            lines.append("No candidate passed verification; the original kernel stays as it is.")
        else:
            lines.append(f"No verified candidate is faster than the baseline beyond noise (best: "
                         f"{fmt_speedup(best)}); the original kernel stays as it is.")
        return lines
    t = w.result.timing
    s = w.result.speedup
    lines.append(f"Winner: {w.candidate.label}: {s.value:.2f}x faster "
                 f"(95% CI {s.ci_low:.2f}-{s.ci_high:.2f}), {ev.baseline.median_us:,.1f} us -> "
                 f"{t.median_us:,.1f} us ({fmt_spread(t)}), achieved "
                 f"{ev.baseline.achieved_gbps:,.0f} -> {t.achieved_gbps:,.0f} GB/s = "
                 f"{ev.baseline.percent_of_copy:.0f}% -> {t.percent_of_copy:.0f}% of the measured "
                 f"copy bandwidth ({result.device.copy_bandwidth_gbps:,.0f} GB/s).")
    seeds = ", ".join(map(str, result.problem.seeds))
    cases = ", ".join(c.label for c in result.problem.cases)
    lines.append(f"What changed: {w.candidate.explanation}")
    lines.append(f"Verified against the original kernel on seeds {seeds}, sizes {cases}: "
                 "inputs unchanged, every output written and equal within tolerance, "
                 "and again after timing.")
    launch = w.candidate.launch
    if w.launch_change is not None:
        lines.append(f"Under your launch: {describe(s, w.drop_in, w.launch_change)}.")
        lines.append(f"Launch it with block = {', '.join(launch.block)}; grid = "
                     f"{', '.join(launch.grid)}" + (f"; shared = {launch.shared}" if launch.shared
                                                     not in ("0", "") else "")
                     + (f" with sm_count = {result.device.sm_count} on this GPU"
                        if "sm_count" in " ".join(launch.grid) else "")
                     + " (the timing used this launch configuration).")
        drop = result.best_drop_in
        if drop is not None and drop is not w and (w.drop_in is None or not w.drop_in.ok):
            ds = drop.drop_in.speedup
            lines.append(f"Best drop-in (no launch change): {drop.candidate.label}: "
                         f"{ds.value:.2f}x (95% CI {ds.ci_low:.2f}-{ds.ci_high:.2f}).")
    return lines


def search_lines(result: OptimizeResult) -> list[str]:
    """What the search did: runner evaluations, candidates pruned before timing, why it
    stopped, and whether the reported numbers come from a confirmation run."""
    if not result.batches:
        return []
    timed = sum(len(b.variants) for b in result.batches)
    lines = [f"Search: {len(result.batches)} runner evaluation(s), {timed} candidate timing(s), "
             f"{len(result.pruned)} pruned before timing by the compile report; stopped: "
             f"{result.stop or 'done'}."]
    for label, reason in result.pruned[:5]:
        lines.append(f"  pruned {label}: {reason}")
    if len(result.pruned) > 5:
        lines.append(f"  ... and {len(result.pruned) - 5} more pruned")
    if result.confirmed:
        lines.append("The table's times come from the last evaluation: the fastest candidates "
                     "of the batches timed again together with the baseline.")
    return lines


def print_result(console: Console, result: OptimizeResult, applied: bool,
                 suggest_apply: bool = True) -> None:
    """The table, the search's lines and the winner's diff. ``suggest_apply``: end with how
    to write the change (off when --apply was given but nothing was applied)."""
    console.print(candidates_table(result))
    if result.evaluation.error:
        console.print(f"note from the runner: {result.evaluation.error}", markup=False,
                      highlight=False, soft_wrap=True)
    for label, reason in result.skipped:
        console.print(f"skipped {label}: its launch configuration does not fit this problem "
                      f"({reason})", markup=False, highlight=False, soft_wrap=True)
    for line in search_lines(result) + summary_lines(result):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    diff = result.diff()
    if result.winner is not None:
        if diff:
            console.print(diff, markup=False, highlight=False, soft_wrap=True, end="")
        else:
            console.print("The kernel's source is unchanged: the speedup comes from the launch "
                          "configuration alone.")
        if applied:
            console.print(f"Applied to {result.target.path}.")
        elif diff and suggest_apply:
            console.print("Run again with --apply to write this change.")


def _plain(obj):
    if dataclasses.is_dataclass(obj):
        return {k: _plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(x) for x in obj]
    return obj


def result_record(result: OptimizeResult) -> dict:
    """A JSON-compatible record of one optimize run (without the sources)."""
    ev = result.evaluation
    w = result.winner
    return {
        "file": str(result.target.path),
        "kernel": result.target.kernel.name,
        "spec": result.target.spec_origin,
        "device": _plain(result.device),
        "baseline": _plain(ev.baseline),
        "baseline_compile": _plain(ev.baseline_compile),
        # The timed case's work, as the spec gives it (bytes read + written, FLOPs; per
        # launch) and its element types: the roofline report places the kernel with them.
        "problem": _problem_record(result),
        "winner": None if w is None else {
            "label": w.candidate.label,
            "explanation": w.candidate.explanation,
            "passes": list(w.candidate.passes),
            "launch": _plain(w.candidate.launch),
            "timing": _plain(w.result.timing),
            "speedup": _plain(w.result.speedup),
            **_user_launch_record(w),
        },
        "skipped": [{"label": label, "reason": reason} for label, reason in result.skipped],
        "candidates": [
            {"label": r.candidate.label, "explanation": r.candidate.explanation,
             "passes": list(r.candidate.passes), "launch": _plain(r.candidate.launch),
             "compile": {k: v for k, v in _plain(r.result.compile).items() if k != "log"},
             "verdict": _plain(r.result.verdict), "timing": _plain(r.result.timing),
             "speedup": _plain(r.result.speedup), **_user_launch_record(r)}
            for r in result.rows
        ],
        "diff": result.diff(),
        "pruned": [{"label": label, "reason": reason} for label, reason in result.pruned],
        "stop": result.stop,
        # The compute-sanitizer check of the original: clean, findings, or not run and why.
        "sanitizer": None if result.sanitizer is None else result.sanitizer.to_dict(),
        # Every runner evaluation with each variant's source, so a run can be replayed exactly
        # (tests/data/lsp/replay_runner.py) and its numbers tied to the code they measured.
        "evaluations": [_batch_record(b) for b in result.batches],
    }


def _user_launch_record(row: Row) -> dict:
    """``launch_change`` (None, or the user's and the new launch) and ``drop_in`` (None when not
    checked, else ``ok``, ``own`` and the runner's verdict, timing and speedup under the user's
    launch) of a row."""
    d = row.drop_in
    return {
        "launch_change": None if row.launch_change is None else {
            "original": _plain(row.launch_change.original),
            "launch": _plain(row.launch_change.launch)},
        "drop_in": None if d is None else {
            "ok": d.ok, "own": d.own, "verdict": _plain(d.result.verdict),
            "timing": _plain(d.result.timing), "speedup": _plain(d.result.speedup)},
    }


def _problem_record(result: OptimizeResult) -> dict:
    case = result.problem.timed_case
    types = sorted({a.dtype for a in case.args})
    return {"case": case.label, "bytes_moved": case.bytes_moved, "flops": case.flops,
            "element_types": types}


def _batch_record(batch: Batch) -> dict:
    ev = batch.evaluation
    return {
        "baseline": _plain(ev.baseline),
        "error": ev.error,
        "variants": [{"label": v.label, "source": v.source, "options": list(v.options),
                      "launches": _plain(v.launches),
                      "compile": {k: val for k, val in _plain(r.compile).items() if k != "log"},
                      "verdict": _plain(r.verdict), "timing": _plain(r.timing),
                      "speedup": _plain(r.speedup)}
                     for v, r in zip(batch.variants, ev.candidates)],
    }
