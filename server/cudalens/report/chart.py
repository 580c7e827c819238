"""The report's chart as an inline SVG, drawn with matplotlib (the optional extra ``report``).

Roofline mode (the spec gives FLOPs): log-log, x the arithmetic intensity (FLOP/byte, the
spec's FLOPs over its bytes), y the achieved rate (GFLOP/s: the spec's FLOPs over the median
time); the memory roof is intensity x the measured copy bandwidth, each compute roof
(``cudalens.gpu_peaks``) a horizontal line from its ridge point on. Every variant of one
kernel has the same intensity (the spec's work does not change with the rewrite), so the
points stand on one vertical line and differ in height.

Bandwidth mode (no FLOPs in the spec): y is the achieved bandwidth (GB/s: the spec's bytes
over the median time) against the measured copy bandwidth as the roof, one column per variant.

Every point and roof is an SVG group with an id (matplotlib's ``gid``: ``point-original``,
``point-c3``, ``roof-memory``, ``roof-fp32``, ...) and ``data-*`` attributes with its numbers,
so tests and scripts can read the chart back. Text and axes are drawn in a placeholder colour
that becomes ``currentColor``, so the chart takes the page's (the editor theme's) text colour.
"""

from __future__ import annotations

import html
import io
import math
import re
from typing import Optional

from cudalens.errors import CudalensError
from cudalens.gpu_peaks import Peak, compute_peaks
from cudalens.report.data import KernelReport, TimedPoint

_INK = "#010203"  # placeholder for currentColor (module doc)
_ROLE_STYLE = {"original": dict(marker="s", markersize=8, color="#6e7781", zorder=3),
               "candidate": dict(marker="o", markersize=7, color="#0969da", zorder=3),
               "winner": dict(marker="*", markersize=15, color="#d4a72c", zorder=4)}
_ROOF_COLOR = {"memory": "#cf222e", "fp32": "#1a7f37", "fp16": "#8250df", "bf16": "#bf3989",
               "fp16_tensor": "#953800", "bf16_tensor": "#0550ae"}


class ChartUnavailable(CudalensError):
    """matplotlib is not installed (it comes with ``pip install 'cudalens[report]'``)."""


def require_matplotlib() -> None:
    """Raises ``ChartUnavailable`` (saying how to install it) when matplotlib is missing."""
    _pyplot_free_figure()


def _pyplot_free_figure():
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ChartUnavailable(f"the kernel report draws its chart with matplotlib, which is "
                               f"not installed ({exc}); install it with: pip install "
                               f"'cudalens[report]'") from None
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, takes the page's font
    matplotlib.rcParams["svg.hashsalt"] = "cudalens-report"  # stable ids, the same SVG each time
    return Figure


def peaks_of(report: KernelReport) -> tuple[Peak, ...]:
    d = report.device
    return compute_peaks(tuple(d.compute_capability), d.sm_count, d.sm_clock_mhz,
                         report.element_types)


def rate(point: TimedPoint, report: KernelReport) -> float:
    """The y of ``point``: GFLOP/s in roofline mode, GB/s in bandwidth mode (module doc)."""
    t = point.timing
    if report.intensity is None:
        if report.bytes_moved > 0:
            return report.bytes_moved / (t.median_us * 1e3)
        return t.achieved_gbps
    if report.flops > 0:
        return report.flops / (t.median_us * 1e3)
    return t.gflops


def _attrs(**values) -> str:
    return "".join(f' data-{k.replace("_", "-")}="{html.escape(str(v), quote=True)}"'
                   for k, v in values.items())


def roofline_svg(report: KernelReport) -> str:
    """The chart of ``report`` as an SVG document (text; no XML declaration).

    Raises:
        ChartUnavailable: matplotlib is not installed.
    """
    Figure = _pyplot_free_figure()
    extra: dict[str, str] = {}
    bw = report.device.copy_bandwidth_gbps
    if report.intensity is not None:
        fig = Figure(figsize=(10.4, 4.4), dpi=100)
        ax, zoom = fig.subplots(1, 2, width_ratios=[3, 2])
        _draw_roofline(ax, report, bw, extra)
        peak = max((p.gflops for p in peaks_of(report)), default=0.0)
        roof = min(report.intensity * bw, peak) if peak and bw > 0 else report.intensity * bw
        _draw_variants(zoom, report, roof, "GFLOP/s", "attainable at this intensity",
                       "zoom-", extra)
        axes = (ax, zoom)
    else:
        fig = Figure(figsize=(7.2, 4.4), dpi=100)
        ax = fig.add_subplot(1, 1, 1)
        _draw_variants(ax, report, bw, "GB/s", "measured copy bandwidth", "point-", extra)
        ax.set_xlabel("variant (the spec gives no FLOPs: bandwidth, not a roofline)")
        axes = (ax,)
    fig.patch.set_alpha(0)
    for a in axes:
        a.set_facecolor("none")
        for spine in a.spines.values():
            spine.set_color(_INK)
        a.tick_params(colors=_INK, which="both")
        a.xaxis.label.set_color(_INK)
        a.yaxis.label.set_color(_INK)
        a.title.set_color(_INK)
    legend = ax.legend(loc="lower right", fontsize=8, frameon=False)
    for text in legend.get_texts():
        text.set_color(_INK)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = svg.replace(_INK, "currentColor")
    for gid, attrs in extra.items():
        svg, n = re.subn(rf'<g id="{re.escape(gid)}">', f'<g id="{gid}"{attrs}>', svg, count=1)
        if n != 1:
            raise AssertionError(f"matplotlib wrote no group {gid!r}")  # a broken invariant
    return svg


def _draw_roofline(ax, report: KernelReport, bw: float, extra: dict[str, str]) -> None:
    peaks = peaks_of(report)
    intensity = report.intensity
    ridges = [p.gflops / bw for p in peaks] if bw > 0 else []
    lo = min([intensity] + ridges) / 8
    hi = max([intensity] + ridges) * 8
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = max([p.gflops for p in peaks], default=bw * hi)
    if bw > 0:
        xs = [lo, top / bw]
        (line,) = ax.plot(xs, [x * bw for x in xs], color=_ROOF_COLOR["memory"], lw=1.8,
                          label=f"measured copy bandwidth {bw:,.0f} GB/s")
        line.set_gid("roof-memory")
        extra["roof-memory"] = _attrs(gbps=repr(bw))
    for p in peaks:
        start = p.gflops / bw if bw > 0 else lo
        (line,) = ax.plot([start, hi], [p.gflops, p.gflops], color=_ROOF_COLOR[p.key],
                          lw=1.4, ls="--" if "tensor" in p.key else "-",
                          label=f"{p.title} peak {p.gflops / 1000:,.1f} TFLOP/s")
        line.set_gid(f"roof-{p.key}")
        extra[f"roof-{p.key}"] = _attrs(gflops=repr(p.gflops), title=p.title)
    ys = []
    for point in report.points:
        y = rate(point, report)
        ys.append(y)
        _point(ax, point, intensity, y, extra, intensity=repr(intensity), gflops=repr(y))
    ax.set_xlim(lo, hi)
    ymin = min(ys + [lo * bw]) / 4 if ys else lo * bw
    ax.set_ylim(ymin, max([top] + ys) * 3)
    ax.set_xlabel("arithmetic intensity (FLOP/byte: the spec's FLOPs / bytes)")
    ax.set_ylabel("achieved GFLOP/s (the spec's FLOPs / median time)")
    ax.grid(True, which="major", alpha=0.25, color=_INK)


def _draw_variants(ax, report: KernelReport, roof: float, unit: str, roof_words: str,
                   prefix: str, extra: dict[str, str]) -> None:
    """One column per variant, linear y in ``unit``: the point at its rate, a bar over the
    rates its median's 95% confidence interval allows, and the roof as a line. In bandwidth
    mode these are the chart's points (``point-``); beside a roofline, its zoom (``zoom-``)."""
    ys = []
    for i, point in enumerate(report.points):
        y = rate(point, report)
        ys.append(y)
        t = point.timing
        if t.median_ci_low_us > 0 and t.median_ci_high_us > 0:
            lo, hi = y * t.median_us / t.median_ci_high_us, y * t.median_us / t.median_ci_low_us
            ax.vlines([i], [lo], [hi], colors=_INK, lw=1.0)
            ys.append(hi)
        data = {"gbps": repr(y)} if unit == "GB/s" else {"gflops": repr(y)}
        _point(ax, point, i, y, extra, prefix=prefix, column=str(i), **data)
    n = max(len(report.points), 1)
    if roof > 0:
        gid = "roof-memory" if prefix == "point-" else "zoom-roof"
        (line,) = ax.plot([-0.5, n - 0.5], [roof, roof], color=_ROOF_COLOR["memory"], lw=1.8,
                          label=f"{roof_words} {roof:,.0f} {unit}")
        line.set_gid(gid)
        extra[gid] = _attrs(gbps=repr(roof)) if unit == "GB/s" else _attrs(gflops=repr(roof))
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(0, max(ys + [roof]) * 1.15)
    ax.set_xticks(range(len(report.points)), [p.key for p in report.points], fontsize=8)
    ax.set_ylabel(f"achieved {unit} (the spec's {'bytes' if unit == 'GB/s' else 'FLOPs'} / "
                  f"median time)")
    if prefix == "zoom-":
        ax.set_title("each variant, bars: 95% CI of the median", fontsize=9)
        ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.grid(True, axis="y", alpha=0.25, color=_INK)


def _point(ax, point: TimedPoint, x: float, y: float, extra: dict[str, str],
           prefix: str = "point-", **data: Optional[str]) -> None:
    style = _ROLE_STYLE[point.role]
    label = {"original": "original kernel", "winner": "winner",
             "candidate": "verified candidates"}[point.role]
    if label in {line.get_label() for line in ax.get_lines()}:
        label = None  # one legend entry per kind
    (line,) = ax.plot([x], [y], ls="none", markeredgecolor=_INK, markeredgewidth=0.6,
                      label=label, **style)
    line.set_gid(f"{prefix}{point.key}")
    extra[f"{prefix}{point.key}"] = _attrs(key=point.key, role=point.role, label=point.label,
                                         median_us=repr(point.timing.median_us), **data)
    if not math.isfinite(y):
        raise ValueError(f"{point.label}: rate {y} is not finite")
