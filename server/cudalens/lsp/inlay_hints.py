"""Inlay hints after each kernel's signature: its time and share of the copy bandwidth.

``saxpy(int n, ..., float* y)`` ``  118 us, 56% of copy bandwidth`` when current results exist, and
``  stale`` when only results for an earlier version of the kernel do.
"""

from __future__ import annotations

from lsprotocol import types

from cudalens.lsp.documents import DocumentSnapshot
from cudalens.lsp.positions import contains
from cudalens.lsp.results import KernelStatus
from cudalens.lsp.wording import copy_bandwidth_note, fmt_us, share_of_copy, stale_note


def inlay_hints(snapshot: DocumentSnapshot, statuses: list[KernelStatus],
                visible: types.Range) -> list[types.InlayHint]:
    """Hints for the kernels whose signature ends inside ``visible``."""
    out = []
    for st in statuses:
        first, last = snapshot.signature_lines(st.view)
        if last < visible.start.line or first > visible.end.line:
            continue
        at = snapshot.signature_end(st.view)
        if not contains(visible, at):
            continue
        run = st.current
        if run is not None and run.baseline is not None:
            t = run.baseline
            label = f"{fmt_us(t.median_us)}, {share_of_copy(t)}"
            tooltip = (f"median of {t.samples} timed launches on {run.device.name}; "
                       f"{copy_bandwidth_note(run.device)}")
        elif st.stale is not None:
            label = "stale"
            tooltip = stale_note(st.stale)
        else:
            continue
        out.append(types.InlayHint(position=at, label=label, padding_left=True,
                                   tooltip=tooltip))
    return out
