"""The kernel report as one self-contained HTML page: the CLI writes it to a file, the VS Code
extension shows the same text in a webview.

Self-contained: the chart is inline SVG (``cudalens.report.chart``), the styles are inline, and
a content security policy (``default-src 'none'``) lets the page load nothing, so it opens
offline and as a pull-request attachment. Colours come from the VS Code theme's CSS variables
(``--vscode-editor-foreground`` ...) where the page is in a webview, with light defaults
elsewhere. Sections: the chart with the failed candidates beside it, the candidates table
(median, its 95% confidence interval, speedup with its 95% interval, achieved bandwidth and
rate, and whether it is a drop-in under the user's launch or needs a new one, with the launch:
``cudalens.dropin``), the Nsight Compute profile when the run has one, the compute-sanitizer
check of the original (clean, findings with their lines, or not run and why;
``cudalens.sanitizer_status``), and the search's history (every runner evaluation).
"""

from __future__ import annotations

from html import escape
from cudalens.report.chart import peaks_of, rate, roofline_svg
from cudalens.report.data import KernelReport, TimedPoint

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_STYLE = """
:root { --fg: var(--vscode-editor-foreground, #1f2328);
  --bg: var(--vscode-editor-background, #ffffff);
  --muted: var(--vscode-descriptionForeground, #59636e);
  --border: var(--vscode-panel-border, #d1d9e0);
  --bad: var(--vscode-errorForeground, #cf222e);
  --head: var(--vscode-editorWidget-background, #f6f8fa); }
body { color: var(--fg); background: var(--bg); margin: 1.2em 1.6em;
  font-family: var(--vscode-font-family, system-ui, -apple-system, "Segoe UI", sans-serif);
  font-size: var(--vscode-font-size, 14px); line-height: 1.4; }
h1 { font-size: 1.35em; margin: 0 0 .2em; } h2 { font-size: 1.1em; margin: 1.2em 0 .4em; }
.muted { color: var(--muted); }
.top { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.top figure { margin: 0; flex: 0 1 1040px; min-width: 420px; }
.top figure svg { width: 100%; height: auto; color: var(--fg); }
.top aside { flex: 1 1 260px; }
figcaption { font-size: .85em; color: var(--muted); }
table { border-collapse: collapse; font-size: .9em; }
th, td { border-bottom: 1px solid var(--border); padding: .25em .6em; text-align: left;
  vertical-align: top; }
th { background: var(--head); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bad { color: var(--bad); }
ul.failed { padding-left: 1.1em; } ul.failed li { margin-bottom: .4em; }
code { font-family: var(--vscode-editor-font-family, ui-monospace, monospace); }
"""


def _us(v: float) -> str:
    return f"{v:,.1f} us" if v >= 10 else f"{v:,.2f} us"


def _ci(p: TimedPoint) -> str:
    t = p.timing
    if t.median_ci_low_us <= 0 and t.median_ci_high_us <= 0:
        return "-"
    return f"{t.median_ci_low_us:,.2f}-{t.median_ci_high_us:,.2f}"


def _speedup(p: TimedPoint) -> str:
    s = p.speedup
    return "1.00x (reference)" if s is None else f"{s.value:.2f}x [{s.ci_low:.2f}, {s.ci_high:.2f}]"


def _rate_cell(report: KernelReport, p: TimedPoint) -> str:
    if report.intensity is None:
        return "-"
    return f"{rate(p, report):,.0f} GFLOP/s"


def _candidates_table(report: KernelReport) -> str:
    rows = []
    for p in report.points:
        mark = " &#9733; winner" if p.role == "winner" else ""
        note = (f'<div class="bad">not offered: {escape(p.timing.roofline_note)}</div>'
                if p.timing.above_roofline else "")
        rows.append(
            f'<tr id="row-{p.key}"><td>{escape(p.key)}</td><td>{escape(p.label)}{mark}{note}</td>'
            f'<td class="num">{_us(p.timing.median_us)}</td><td class="num">{_ci(p)}</td>'
            f'<td class="num">{_speedup(p)}</td>'
            f'<td class="num">{p.timing.achieved_gbps:,.0f} GB/s '
            f'({p.timing.percent_of_copy:.0f}%)</td>'
            f'<td class="num">{_rate_cell(report, p)}</td><td class="num">{p.timing.samples}</td>'
            f'{_user_launch_cell(p)}</tr>')
    for f in report.failed:
        rows.append(f'<tr class="failed"><td>-</td><td>{escape(f.label)}</td>'
                    f'<td colspan="7" class="bad">{escape(f.status)}: {escape(f.reason)}</td></tr>')
    return ('<table id="candidates"><thead><tr><th>#</th><th>variant</th><th>median</th>'
            '<th>95% CI of the median (us)</th><th>speedup [95% CI]</th>'
            '<th>achieved (% of copy)</th><th>rate</th><th>samples</th>'
            '<th>under your launch</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _user_launch_cell(p: TimedPoint) -> str:
    """``drop-in`` (with the speedup under the user's launch) or ``needs a new launch`` (with
    the exact launch), as ``cudalens.dropin.describe`` words it; the original: ``yours``."""
    u = p.user_launch
    if p.role == "original":
        return '<td class="launch">your launch</td>'
    if u is None:
        return '<td class="launch muted">not recorded</td>'
    tag = {"same": "drop-in", "drop_in": "drop-in", "new_launch": "needs a new launch",
           "not_checked": "not checked under your launch"}[u.kind]
    why = (f'<div class="muted">under your launch: {escape(u.reason)}</div>'
           if u.kind == "new_launch" and u.reason else "")
    cls = "launch" if u.is_drop_in else "launch bad"
    return (f'<td class="{cls}" data-kind="{u.kind}"><b>{tag}</b>: {escape(u.words)}{why}'
            f'</td>')


def _failed_list(report: KernelReport) -> str:
    if not report.failed:
        return '<p class="muted" id="failed-none">No candidate failed verification.</p>'
    items = "".join(f'<li><b>{escape(f.label)}</b>: <span class="bad">{escape(f.status)}</span>'
                    f' &mdash; {escape(f.reason)}</li>' for f in report.failed)
    return f'<ul class="failed" id="failed">{items}</ul>'


def _profile(report: KernelReport) -> str:
    p = report.profile
    if p is None:
        return ""
    if p.achieved_occupancy_pct is None:
        return (f'<h2>Nsight Compute</h2><p class="muted" id="profile">No profile of '
                f'{escape(p.subject)}: {escape(p.reason)}</p>')
    stalls = "".join(f'<tr><td>{escape(r)}</td><td class="num">{c:.2f}</td>'
                     f'<td class="num">{s:.0f}%</td></tr>' for r, c, s in p.stalls)
    return (f'<h2>Nsight Compute: {escape(p.subject)}</h2><table id="profile"><tbody>'
            f'<tr><th>achieved occupancy</th>'
            f'<td class="num">{p.achieved_occupancy_pct:.1f}%</td></tr>'
            f'<tr><th>DRAM throughput</th>'
            f'<td class="num">{p.dram_throughput_pct:.1f}% of peak</td></tr>'
            f'</tbody></table>'
            + (f'<table id="stalls"><thead><tr><th>main warp stalls</th><th>cycles per issued '
               f'instruction</th><th>share of stall cycles</th></tr></thead><tbody>{stalls}'
               f'</tbody></table>' if stalls else ""))


def _sanitizer(report: KernelReport) -> str:
    """The compute-sanitizer check of the original before the run: clean (on what), its
    findings with their lines, or not run and why; "not recorded" for an older record."""
    st = report.sanitizer
    head = '<section id="sanitizer"><h2>compute-sanitizer (the original, before the run)</h2>'
    if st is None:
        return (head + '<p class="muted" data-state="unknown">Not recorded: this record was '
                'written before runs kept the check\'s outcome.</p></section>')
    if st.state == "not_run":
        return (head + f'<p class="bad" data-state="not_run">Not run: {escape(st.reason)}. '
                f'The original was not checked for races and memory errors.</p></section>')
    if st.state == "clean":
        return (head + f'<p data-state="clean">Clean: no race, invalid or out-of-bounds '
                f'access, uninitialized read or barrier error'
                + (f" on {escape(st.reason)}" if st.reason else "") + ".</p></section>")
    rows = "".join(
        f'<tr><td>{escape(f.where)}</td><td>{escape(f.tool)}</td><td>{escape(f.kind)}</td>'
        f'<td class="{"bad" if f.blocking else ""}">{"blocking" if f.blocking else "warning"}'
        f'</td><td>{escape(f.summary)}</td></tr>' for f in st.findings)
    return (head + f'<p data-state="findings">{len(st.findings)} finding(s)'
            + (f" on {escape(st.reason)}" if st.reason else "") + ':</p>'
            '<table class="sanitizer"><thead><tr><th>where</th><th>tool</th><th>kind</th>'
            f'<th>level</th><th>finding</th></tr></thead><tbody>{rows}</tbody></table>'
            '</section>')


def _history(report: KernelReport) -> str:
    if not report.history:
        return ""
    rows = "".join(
        f'<tr><td class="num">{h.evaluation}</td><td>{escape(h.label)}</td>'
        f'<td class="{"" if h.status == "passed" else "bad"}">{escape(h.status)}</td>'
        f'<td class="num">{"-" if h.median_us is None else _us(h.median_us)}</td>'
        f'<td class="num">{"-" if h.speedup is None else f"{h.speedup:.2f}x"}</td></tr>'
        for h in report.history)
    evaluations = len({h.evaluation for h in report.history})
    stop = f"; stopped: {escape(report.stop)}" if report.stop else ""
    notes = "".join(f"<li>{escape(n)}</li>" for n in report.notes)
    return (f'<details id="history"><summary><h2 style="display:inline">Search history</h2> '
            f'<span class="muted">{evaluations} runner evaluation(s), {len(report.history)} '
            f'variant timing(s){stop}; each evaluation timed against its own baseline</span>'
            f'</summary>' + (f"<ul>{notes}</ul>" if notes else "")
            + '<table><thead><tr><th>evaluation</th><th>variant</th><th>verdict</th>'
              f'<th>median</th><th>speedup</th></tr></thead><tbody>{rows}</tbody></table>'
              '</details>')


def _caption(report: KernelReport) -> str:
    d = report.device
    peaks = ", ".join(f"{p.title} {p.gflops / 1000:,.1f} TFLOP/s ({p.flop_per_clock_per_sm} "
                      f"FLOP/clock/SM)" for p in peaks_of(report))
    roofs = (f"Roofs on {escape(d.name)}: measured copy bandwidth {d.copy_bandwidth_gbps:,.0f} "
             f"GB/s; {escape(peaks) or 'no compute peak known for this architecture'}, from "
             f"{d.sm_count} SMs at {d.sm_clock_mhz} MHz.")
    if report.intensity is None:
        return (roofs + " The spec gives no FLOPs, so the chart shows each variant's achieved "
                "bandwidth (the spec's bytes over its median time) under the copy bandwidth.")
    return (roofs + f" Arithmetic intensity {report.intensity:.3g} FLOP/byte (the spec's FLOPs "
            "over its bytes, the same for every variant); height: the spec's FLOPs over the "
            "median time.")


def _winner_launch(report: KernelReport, win: TimedPoint) -> str:
    """`` Under your launch: 1.80x as a drop-in; 14.80x with block = ...`` and, when the winner
    is no drop-in, the fastest drop-in."""
    u = win.user_launch
    if u is None:
        return ""
    text = f' <span id="winner-launch">Under your launch: {escape(u.words)}.</span>'
    drop = report.best_drop_in
    if not u.is_drop_in and drop is not None and drop is not win:
        s = drop.speedup if drop.user_launch.kind == "same" else drop.user_launch.drop_in_speedup
        text += (f' <span id="best-drop-in">Best drop-in (no launch change): '
                 f'<b>{escape(drop.label)}</b>, {s.value:.2f}x [{s.ci_low:.2f}, '
                 f'{s.ci_high:.2f}].</span>')
    return text


def report_html(report: KernelReport) -> str:
    """The report page of ``report`` (module doc).

    Raises:
        ChartUnavailable: matplotlib is not installed.
    """
    d = report.device
    win = report.winner
    if win is not None:
        verdict = (f"Winner: <b>{escape(win.label)}</b>, {_speedup(win)} faster, "
                   f"{_us(report.points[0].timing.median_us)} &rarr; {_us(win.timing.median_us)}.")
        verdict += _winner_launch(report, win)
    else:
        verdict = "No verified candidate is faster than the original beyond noise."
    svg = roofline_svg(report)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>cudalens report: {escape(report.kernel)}</title><style>{_STYLE}</style></head>'
        f'<body><header><h1>{escape(report.kernel)}</h1><div class="muted">'
        f'{escape(report.file)} &middot; {escape(d.name)} (sm_{d.compute_capability[0]}'
        f'{d.compute_capability[1]}, driver {escape(d.driver_version)}) &middot; '
        f'{escape(report.provenance)}</div><p id="verdict">{verdict}</p></header>'
        f'<div class="top"><figure id="chart">{svg}<figcaption>{_caption(report)}</figcaption>'
        f'</figure><aside><h2>Failed verification</h2>{_failed_list(report)}</aside></div>'
        f'<h2>Candidates</h2>{_candidates_table(report)}'
        f'{_profile(report)}{_sanitizer(report)}{_history(report)}'
        '</body></html>\n')
