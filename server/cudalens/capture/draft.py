"""A harness spec drafted from a capture: the kernel's spec with what the launch showed.

``draft_from_capture(spec, capture)`` starts from the kernel's spec (the written one, else the
draft of ``cudalens.spec.infer``) and replaces what the capture knows:

* each size a scalar parameter passes as is (``scalar n: int = n``) takes the captured value
  (``replay.bind_sizes``: the same binding ``optimize --capture`` uses);
* every other scalar takes its captured value (a guessed ``0.5`` becomes the program's
  ``3.0``), its earlier guess note dropped;
* the block and the dynamic shared memory are the captured launch's;
* a buffer whose captured role differs from the spec's (the launch changed an ``in``) takes
  the captured role, with the capture's note.

What the capture cannot tell stays as it was, with its note: a length the body's analysis
guessed, a guessed range, the grid expression (its value at the captured sizes is compared
with the captured grid, and a difference is noted). The first note says where the draft
came from and what to do with it; ``spec.writer.format_spec`` marks every line a note still
calls a guess with ``# GUESS``.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np

from cudalens.capture.container import Capture, PointerParam, ScalarParam
from cudalens.capture.replay import bind_sizes
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl

DRAFT_SUFFIX = ".spec"


def _literal(param: ScalarParam, spec_type: str) -> Optional[str]:
    """The captured value as a spec literal (floats as the shortest text that reads back as the
    same value of the parameter's width), or None when it was not decoded."""
    if param.value is None:
        return None
    if isinstance(param.value, float):
        if param.dtype == "float32":
            return np.format_float_positional(np.float32(param.value), unique=True, trim="0")
        if param.dtype == "float16":
            return np.format_float_positional(np.float16(param.value), unique=True, trim="0")
        return repr(float(param.value))
    return str(int(param.value))


def _about(note: str, names: set[str], kind: str) -> bool:
    return any(note.startswith((f"{kind} {n} =", f"{kind} {n}:", f"{kind} {n} ")) for n in names)


def draft_from_capture(spec: KernelSpec, capture: Capture, spec_origin: str = "") -> KernelSpec:
    """``spec`` made to describe ``capture``'s launch (module doc). ``spec_origin`` is the
    spec file it came from, or "" / "inferred" for a draft."""
    m = capture.manifest
    bound, size_notes = bind_sizes(spec, capture)
    bound_sizes = {s.name for s in bound.sizes} - {s.name for s in spec.sizes
                                                   if s in bound.sizes}
    size_names = {s.name for s in bound.sizes}
    params, notes, taken = [], [], set()
    for p in bound.params:
        try:
            c = m.param(p.name)
        except KeyError:
            params.append(p)
            continue
        if isinstance(p, ScalarDecl) and isinstance(c, ScalarParam) \
                and p.expr.strip() not in size_names:
            value = _literal(c, p.type)
            if value is not None:
                params.append(replace(p, expr=value))
                notes.append(f"scalar {p.name} = {value}: the captured value")
                taken.add(p.name)
                continue
        if isinstance(p, BufferDecl) and isinstance(c, PointerParam) and c.role != p.role:
            params.append(replace(p, role=c.role))
            notes.append(f"{p.name}: {c.role} as captured, the spec said {p.role}"
                         + (f" ({c.note})" if c.note else ""))
            continue
        params.append(p)
    dims = max(len(spec.launch.block), max((i + 1 for i, b in enumerate(m.block) if b != 1),
                                           default=1))
    block = tuple(str(b) for b in m.block[:dims])
    launch = replace(bound.launch, block=block)
    notes.append(f"block {', '.join(block)}: the captured launch's")
    if m.shared_bytes or spec.launch.shared.strip() != "0":
        launch = replace(launch, shared=str(m.shared_bytes))
        notes.append(f"shared = {m.shared_bytes}: the captured launch's dynamic shared memory")
    grid_note = _grid_note(replace(bound, params=tuple(params), launch=launch), m.grid)
    if grid_note:
        notes.append(grid_note)
    kept = [n for n in spec.notes
            if not _about(n, taken, "scalar") and not _about(n, bound_sizes, "size")
            and not n.startswith(("block ", "shared", "sizes are defaults"))]
    where = (f"your spec {Path(spec_origin).name}" if spec_origin not in ("", "inferred")
             else "the kernel's inferred draft")
    head = (f"drafted from capture {capture.path.name if capture.path else m.kernel} (launch "
            f"{m.launch_index} of {m.kernel} by {' '.join(m.command)}) over {where}; lines "
            f"marked GUESS are still guesses: confirm them")
    return replace(bound, params=tuple(params), launch=launch,
                   notes=(head,) + tuple(size_notes) + tuple(notes) + tuple(kept))


def _grid_note(spec: KernelSpec, captured: tuple[int, int, int]) -> str:
    """A note when the spec's grid at the captured sizes is not the captured grid ("" when
    it is, or when it cannot be evaluated)."""
    from cudalens.spec.errors import SpecError
    from cudalens.spec.resolve import resolve_launch, sizes_for

    if "sm_count" in " ".join(spec.launch.grid):
        return ""
    try:
        grid = tuple(resolve_launch(spec.launch, sizes_for(spec, "nominal"), None).grid)
    except (SpecError, ValueError, KeyError, ZeroDivisionError):
        return ""
    grid = grid + (1,) * (3 - len(grid))
    if grid == tuple(captured):
        return ""
    return (f"grid = {', '.join(spec.launch.grid)}: {grid} at the captured sizes, the "
            f"captured launch had {tuple(captured)}; check the grid expression")


def draft_path(capture: Capture) -> Path:
    """Where the draft of ``capture`` is written: beside its manifest, ``NAME-launchN.spec``."""
    return capture.path.with_suffix(DRAFT_SUFFIX)
