"""What is known about each kernel of a snapshot: its current results, stale results, the
candidate on offer. Code lens, inlay hints, hover, diagnostics and code actions all read this.

* **current**: the newest run stored under the kernel's key for the device in use: the same
  kernel source and context, spec, flags and device as measured.
* **stale**: no current run, but an earlier run of the same kernel in the same file exists
  (the kernel, its spec or flags changed since, or it was measured on another device).
* **offer**: the fastest candidate of the current run that is verified and faster beyond noise
  (95% CI above 1.0) and that the user has not rejected for this key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cudalens.lsp.documents import DocumentSnapshot, KernelView
from cudalens.store.keys import result_key
from cudalens.store.records import CandidateRecord, RunRecord
from cudalens.store.sqlite import ResultsStore


@dataclass(frozen=True)
class KernelStatus:
    view: KernelView
    key: str  # "" when the kernel has no spec or no device is known yet
    current: Optional[RunRecord]
    stale: Optional[RunRecord]
    offer: Optional[CandidateRecord]
    rejected: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.view.name


def kernel_statuses(snapshot: DocumentSnapshot, store: ResultsStore,
                    device: Optional[str]) -> list[KernelStatus]:
    """One status per kernel of ``snapshot``, in source order.

    ``device`` is the ``device_id`` of the runner in use (or the last one seen); without one,
    no run can be current, and any stored run of the kernel is reported as stale.
    """
    out = []
    for view in snapshot.kernels:
        key = result_key(view.material, device) if view.material and device else ""
        current = store.run_for_key(key) if key else None
        stale = None
        if current is None:
            stale = store.latest_run(str(snapshot.path), view.name)
        rejected = store.rejected(key) if current is not None else frozenset()
        offers = current.offers(rejected) if current is not None else []
        out.append(KernelStatus(view=view, key=key, current=current, stale=stale,
                                offer=offers[0] if offers else None, rejected=rejected))
    return out
