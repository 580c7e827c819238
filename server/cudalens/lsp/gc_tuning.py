"""The language server's garbage-collector thresholds.

An analysis of a large file allocates hundreds of thousands of short-lived objects (syntax
nodes, positions, per-kernel records) while the open documents' models stay alive. With
CPython's default thresholds (700, 10, 10) that triggers many collections per edit, and every
tenth-of-a-tenth one walks every live object: in ``benchmarks/bench_lsp_latency.py`` on a
10,000-line file those full collections are the slow tail of requests made right after an
edit (p90 60-115 ms against medians of 30-46 ms). With ``THRESHOLDS`` the young generation
holds 50,000 allocations before a collection and full collections are rarer, and the p90 of
the same requests fell to 35-45 ms in the same session on the same machine
(``benchmarks/results/lsp-latency-*``: the run records the thresholds it used). Cyclic garbage
is still collected; only less often.

``CUDALENS_LSP_GC="G0,G1,G2"`` overrides the thresholds (``700,10,10`` restores CPython's).
"""

from __future__ import annotations

import gc
import os

THRESHOLDS = (50_000, 50, 100)
ENV = "CUDALENS_LSP_GC"


def thresholds_from_env(text: str | None) -> tuple[int, int, int]:
    """``THRESHOLDS``, or the three integers of ``text`` (``"700,10,10"``).

    Raises:
        ValueError: ``text`` is not three comma-separated non-negative integers.
    """
    if not text:
        return THRESHOLDS
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{ENV} must be three comma-separated non-negative integers such as "
                         f"700,10,10; found {text!r}")
    g0, g1, g2 = (int(p) for p in parts)
    return g0, g1, g2


def apply() -> tuple[int, int, int]:
    """Sets the thresholds (``$CUDALENS_LSP_GC`` or ``THRESHOLDS``) and returns them.

    Raises:
        ValueError: from ``thresholds_from_env``.
    """
    chosen = thresholds_from_env(os.environ.get(ENV))
    gc.set_threshold(*chosen)
    return chosen
