"""Hover on a kernel's signature: its last measurement and where the time goes.

Markdown, a few lines: the measured time with its spread and where it came from; achieved
bandwidth and FLOP rate against the roofline (``bottleneck.roofline``); theoretical
occupancy from the block size, registers and shared memory (``bottleneck.occupancy``);
registers, stack and spills (the runner's compile report, else the last nvcc check); the
Nsight Compute profile stored with the run (achieved occupancy, DRAM throughput, main stall
reasons: ``bottleneck.profile_summary``), naming what was profiled (the baseline or the
candidate on offer), or "not profiled" with the reason (never a guess); the candidate on
offer. Without results, the compile-check facts and a pointer to Optimize (or, while the last
compile check failed, where its first error is). The kernel's last failed Optimize, with its
message and time, until the next one is queued.
"""

from __future__ import annotations

from typing import Optional

from lsprotocol import types

from cudalens.check.report import CheckResult, KernelResources
from cudalens.engine.preflight import refuses
from cudalens.lsp.bottleneck import fp32_peak_gflops, occupancy, profile_summary, roofline
from cudalens.lsp.documents import DocumentSnapshot
from cudalens.lsp.positions import contains
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import (copy_bandwidth_note, failure_note, fmt_us, no_offer,
                                  not_compiling, share_of_copy, speedup_ci, stale_note)
from cudalens.store.records import BASELINE


def hover(snapshot: DocumentSnapshot, statuses: list[KernelStatus], position: types.Position,
          check: Optional[CheckResult], failures: Optional[dict] = None) -> Optional[types.Hover]:
    """The hover for ``position`` when it lies on a kernel's signature (name to ``{``).
    ``failures``: kernel name -> its last failed optimize job (``lsp.jobs.Failure``)."""
    for st in statuses:
        first, last = snapshot.signature_lines(st.view)
        if not first <= position.line <= last:
            continue
        kernel = st.view.kernel
        start = snapshot.index.range(kernel.range).start
        sig = types.Range(start, snapshot.signature_end(st.view))
        if contains(sig, position):
            sections = _sections(st, _resources(check, kernel.name), check, snapshot.path)
            failure = (failures or {}).get(st.name)
            if failure is not None:
                sections.insert(1, failure_note(failure))
            text = "\n\n".join(sections)
            return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, text),
                               range=snapshot.name_range(st.view))
    return None


def _resources(check: Optional[CheckResult], name: str) -> Optional[KernelResources]:
    if check is None:
        return None
    for k in check.kernels:
        if k.name.split("<", 1)[0] == name:
            return k
    return None


def _sections(st: KernelStatus, res: Optional[KernelResources],
              check: Optional[CheckResult] = None, path=None) -> list[str]:
    name = st.view.kernel.name
    run = st.current
    out = []
    if run is None or run.baseline is None:
        head = f"**{name}**: not measured yet"
        if st.stale is not None:
            head = f"**{name}**: {stale_note(st.stale)}"
        out.append(head)
        if res is not None:
            spills = (f"spills {res.spill_store_bytes} B stores / {res.spill_load_bytes} B loads"
                      if res.spills else "no spills")
            out.append(f"nvcc ({res.arch}): {res.registers} registers, {res.shared_bytes} B static "
                       f"shared, {res.stack_bytes} B stack, {spills}")
        if st.view.spec is None:
            out.append(f"No harness spec: {st.view.spec_error}")
        elif refuses(check):
            out.append(f"The file does not compile ({not_compiling(path, check)}): fix it to "
                       f"**Optimize**.")
        else:
            out.append("Run **Optimize** to measure it on the GPU runner.")
        return out

    t = run.baseline
    dev = run.device
    what = "the applied candidate, as measured in its run" if run.derived_from else "baseline"
    out.append(f"**{name}** on {dev.name}: **{fmt_us(t.median_us)}** median ({what}; IQR "
               f"{t.q1_us:,.1f}-{t.q3_us:,.1f} us, {t.samples} launches), {run.created[:10]}  \n"
               f"_{run.provenance}_")
    peak = fp32_peak_gflops(dev.compute_capability, dev.sm_count, dev.sm_clock_mhz)
    lines = [f"bandwidth: {t.achieved_gbps:,.0f} GB/s = {share_of_copy(t)} "
             f"({copy_bandwidth_note(dev)})"]
    if run.flops > 0:
        share = f" = {100 * t.gflops / peak:.1f}% of the FP32 peak ({peak / 1000:,.1f} TFLOP/s)" \
            if peak else ""
        lines.append(f"FLOP rate: {t.gflops:,.0f} GFLOP/s{share}")
        roof = roofline(run.flops, run.bytes_moved, t.median_us, dev.copy_bandwidth_gbps, peak)
        if roof is not None:
            lines.append(f"roofline: {roof.intensity:.2f} FLOP/byte, ridge at {roof.ridge:.1f}: "
                         f"**{roof.bound}-bound**, at {roof.percent_of_bound:.0f}% of that bound")
    else:
        lines.append("FLOP rate: unknown (add `flops = ...` to the spec for the roofline)")
    regs = run.baseline_compile.registers
    occ = occupancy(dev.compute_capability, run.threads_per_block, regs,
                    run.baseline_compile.static_shared_bytes + run.shared_bytes)
    if occ is not None:
        lines.append(f"occupancy (theoretical): {occ.percent:.0f}% ({occ.warps}/{occ.max_warps} "
                     f"warps, {occ.blocks} blocks of {run.threads_per_block} threads per SM; "
                     f"limited by {occ.limiter})")
    lines.append(f"registers: {regs} per thread; local memory (stack and spills): "
                 f"{run.baseline_compile.local_bytes} B per thread")
    lines.append(_profile_line(run))
    out.append("\n".join(f"- {line}" for line in lines))
    if st.offer is not None:
        c = st.offer
        out.append(f"Candidate **{c.label}**: {speedup_ci(c)} faster, verified against the "
                   f"baseline. {c.explanation}")
    elif run.candidates:
        out.append(no_offer(run, len(st.rejected)).capitalize() + ".")
    return out


def _profile_line(run) -> str:
    """The hover's profile line of ``run`` (a ``RunRecord``)."""
    prof = run.profile
    if prof is None:
        return "stall reasons: not profiled (no Nsight Compute profile was taken for this run)"
    if prof.profile is None:
        return f"stall reasons: not profiled ({prof.reason or 'the runner gave no reason'})"
    what = "the baseline" if prof.subject == BASELINE else f"candidate {prof.label}"
    return (f"profile ({prof.profile.tool}, one launch of {what}): "
            f"{profile_summary(prof.profile)}")
