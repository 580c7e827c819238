"""Replay a capture in the runner: the captured launch as the timed case.

``load_replay(path, target)`` reads the capture (``container.read_capture``), checks that it
is of ``target``'s kernel and not stale (its source key is the kernel's current one,
``sources.capture_key``), and returns a ``Replay``:

* ``case``: the captured case (``gpu_runner.problem.Case`` with ``captured`` data: the
  capture's ``.npz``, inline when it is at most ``INLINE_LIMIT`` bytes, else as a file path,
  which only a runner on this machine can read); pointers in their ``replay_role``, scalars
  with their captured values.
* ``spec``: the kernel's spec (written or drafted) with every size that a scalar parameter
  passes as is (``scalar n: int = n``) set to the captured value, so the spec's seeded random
  cases (nominal and ragged, every seed) run at the captured sizes; a ``check`` of such a size
  is dropped (the ragged value is derived from the captured one).
* ``problem``/``variant``: the problem with the captured case first (the timed one), then the
  spec's cases (none with ``only``); a variant's launches with the captured launch first (for
  a candidate that changes the launch configuration, its own launch at the captured sizes).
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional

from gpu_runner.problem import Buffer, Case, CapturedData, Launch, Problem, Scalar, Variant
from cudalens.capture.container import Capture, PointerParam, ScalarParam, read_capture
from cudalens.capture.sources import capture_key, matches
from cudalens.errors import CudalensError
from cudalens.spec.model import KernelSpec, LaunchDecl, ScalarDecl, SizeDecl
from cudalens.target import Target

INLINE_LIMIT = 10 * 1024 * 1024  # base64 makes it 4/3 larger; the runner takes 16 MiB bodies
CAPTURED_LABEL = "captured"


class ReplayError(CudalensError):
    """A capture that cannot be replayed for this kernel (other kernel, stale, untyped)."""


@dataclass(frozen=True)
class Replay:
    capture: Capture
    case: Case
    launch: Launch
    spec: KernelSpec
    spec_launch: LaunchDecl  # the spec's own launch (a candidate keeping it gets ``launch``)
    only: bool = False
    notes: tuple[str, ...] = ()

    def problem(self, base: Problem) -> Problem:
        """``base`` (the spec's problem) with the captured case first; timed on it."""
        first = self.case
        if base.cases and not first.bytes_moved:
            nominal = base.cases[0]
            first = replace(first, bytes_moved=nominal.bytes_moved, flops=nominal.flops)
        return replace(base, cases=(first,) + (() if self.only else base.cases))

    def variant(self, v: Variant, launch: LaunchDecl) -> Variant:
        """``v`` (built for the spec's cases) with a launch for the captured case first."""
        first = self.launch if launch == self.spec_launch else v.launches[0]
        return replace(v, launches=(first,) + (() if self.only else v.launches))


def _single_name(expr: str) -> Optional[str]:
    e = expr.strip()
    return e if re.fullmatch(r"[A-Za-z_]\w*", e) else None


def bind_sizes(spec: KernelSpec, capture: Capture) -> tuple[KernelSpec, tuple[str, ...]]:
    """``spec`` with its sizes set from the captured scalars (module doc), and notes saying
    which."""
    sizes = {s.name for s in spec.sizes}
    bound: dict[str, int] = {}
    for p in spec.params:
        if not isinstance(p, ScalarDecl):
            continue
        name = _single_name(p.expr)
        try:
            captured = capture.manifest.param(p.name)
        except KeyError:
            continue
        if name in sizes and isinstance(captured, ScalarParam) and \
                isinstance(captured.value, int) and captured.value >= 1:
            bound.setdefault(name, captured.value)
    if not bound:
        return spec, ("no size of the spec is passed as a scalar; the seeded cases keep the "
                      "spec's sizes",)
    new_sizes = tuple(SizeDecl(s.name, str(bound[s.name]), s.line) if s.name in bound else s
                      for s in spec.sizes)
    checks = tuple(c for c in spec.checks if c.name not in bound)
    notes = tuple(f"size {n} = {v} (the captured value of scalar {n})"
                  for n, v in bound.items())
    return replace(spec, sizes=new_sizes, checks=checks), notes


def captured_data(capture: Capture) -> CapturedData:
    """The capture's ``.npz`` for the runner (module doc)."""
    archive = capture.path.parent / capture.manifest.archive
    sha = capture.manifest.archive_sha256
    if archive.stat().st_size <= INLINE_LIMIT:
        return CapturedData(sha256=sha, payload=base64.b64encode(archive.read_bytes()).decode())
    return CapturedData(sha256=sha, path=str(archive.resolve()))


def captured_case(capture: Capture, target: Target) -> Case:
    """The captured case, arguments in ``target``'s parameter order. Raises ``ReplayError``
    for a parameter that cannot be replayed."""
    where = f"capture {capture.path}"
    args = []
    for param in target.kernel.parameters:
        try:
            c = capture.manifest.param(param.name)
        except KeyError:
            raise ReplayError(f"{where}: no captured value for parameter {param.name} of "
                              f"{target.kernel.name}; the kernel's signature changed since "
                              f"the capture") from None
        if param.is_pointer and not isinstance(c, PointerParam):
            raise ReplayError(f"{where}: parameter {param.name} did not point into device "
                              f"memory in the captured launch; it cannot be replayed")
        if isinstance(c, PointerParam):
            if c.length < 1:
                raise ReplayError(f"{where}: parameter {param.name} points at the end of its "
                                  f"allocation (no bytes captured)")
            args.append(Buffer(name=c.name, dtype=c.dtype, length=c.length, role=c.replay_role))
        else:
            if c.dtype is None or c.value is None:
                raise ReplayError(f"{where}: parameter {param.name} has type {c.ctype!r}, which "
                                  f"the runner cannot pass by value")
            args.append(Scalar(name=c.name, dtype=c.dtype, value=c.value))
    return Case(label=CAPTURED_LABEL, args=tuple(args), captured=captured_data(capture))


def load_replay(path: Path, target: Target, *, only: bool = False) -> Replay:
    """The replay of the capture at ``path`` for ``target`` (module doc). Raises
    ``CaptureFileError`` (unreadable capture) and ``ReplayError`` (another kernel's capture,
    a stale one, or a parameter that cannot be replayed)."""
    capture = read_capture(path)
    m = capture.manifest
    if not matches(target.kernel, m.kernel):
        raise ReplayError(f"capture {capture.path} is of kernel {m.kernel}, not "
                          f"{target.kernel.qualified_name or target.kernel.name}")
    key = capture_key(target.source, target.kernel)
    if m.source_key != key:
        why = ("it was made without the kernel's source" if not m.source_key else
               f"{target.kernel.name} in {target.path} changed since it was captured")
        raise ReplayError(f"capture {capture.path} is stale: {why}; capture it again with "
                          f"cudalens capture --kernel {target.kernel.name} -- "
                          f"{' '.join(m.command)}")
    if len(target.kernel.parameters) != len(m.params):
        raise ReplayError(f"capture {capture.path} has {len(m.params)} parameters, "
                          f"{target.kernel.name} has {len(target.kernel.parameters)}")
    spec, notes = bind_sizes(target.spec, capture)
    launch = Launch(grid=tuple(m.grid), block=tuple(m.block), shared_bytes=m.shared_bytes)
    case = captured_case(capture, target)
    return Replay(capture=capture, case=case, launch=launch, spec=spec,
                  spec_launch=target.spec.launch, only=only, notes=notes + m.notes)
