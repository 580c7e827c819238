"""Writing :class:`KernelSpec` objects back as spec text (the inverse of ``parser``).

``parse_spec(format_spec(s))`` gives back ``s`` up to line numbers and ``source``; the layout
is fixed: the ``kernel`` header, the notes as ``# ...`` lines, then sizes (each followed by its
``check`` and ``multiple``), parameters in spec order (a buffer's fill before its range), block,
grid, shared (when not 0), flops, reads, writes, tolerance and the atomics flag. The spec's
constants come from the kernel's file, so they are not written. A declaration that a note
calls a guess or an assumption gets a trailing ``# GUESS`` / ``# assumed`` comment pointing to
it (the parser ignores trailing comments), so each drafted line says what was guessed.
"""

from __future__ import annotations

from collections.abc import Iterable

from cudalens.spec.dtypes import default_range
from cudalens.spec.model import BufferDecl, KernelSpec


def _mark(spec: KernelSpec, prefixes: tuple[str, ...]) -> str:
    """``"  # GUESS: see the notes"`` when a note starting with one of ``prefixes`` guesses,
    ``"  # assumed: see the notes"`` when it assumes, else ""."""
    notes = [n for n in spec.notes if n.startswith(prefixes)]
    if any("GUESS" in n for n in notes):
        return "  # GUESS: see the notes"
    if any("assumed" in n for n in notes):
        return "  # assumed: see the notes"
    return ""


def format_spec(spec: KernelSpec) -> str:
    """The text of one kernel section, ending with a newline."""
    lines = [f"kernel {spec.kernel}"]
    lines += [f"# {note}".rstrip() for n in spec.notes for note in n.splitlines() or [""]]
    for size in spec.sizes:
        lines.append(f"size {size.name} = {size.expr}"
                     + _mark(spec, (f"size {size.name} = ",)))
        lines += [f"check {c.name} = {c.expr}" for c in spec.checks if c.name == size.name]
        lines += [f"multiple {m.name} = {m.expr}" for m in spec.multiples
                  if m.name == size.name]
    for p in spec.params:
        if isinstance(p, BufferDecl):
            text = f"{p.role} {p.name}: {p.type}[{p.length}]"
            if p.fill != "uniform":
                text += f" {p.fill}" + (f"({', '.join(p.fill_args)})" if p.fill_args else "")
            if p.low is not None or p.high is not None:
                low, high = default_range(p.type)
                text += f" range({p.low or low}, {p.high or high})"
            lines.append(text + _mark(spec, (f"length of {p.name} ", f"{p.name}: ")))
        else:
            lines.append(f"scalar {p.name}: {p.type} = {p.expr}"
                         + _mark(spec, (f"scalar {p.name} = ", f"scalar {p.name}: ")))
    lines.append(f"block = {', '.join(spec.launch.block)}" + _mark(spec, ("block ",)))
    lines.append(f"grid = {', '.join(spec.launch.grid)}" + _mark(spec, ("grid",)))
    if spec.launch.shared.strip() != "0":
        lines.append(f"shared = {spec.launch.shared}" + _mark(spec, ("shared",)))
    if spec.flops is not None:
        lines.append(f"flops = {spec.flops}")
    if spec.reads is not None:
        lines.append(f"reads = {spec.reads}")
    if spec.writes is not None:
        lines.append(f"writes = {spec.writes}")
    if spec.tolerance is not None:
        lines.append(f"tolerance = {spec.tolerance!r}")
    if spec.atomics:
        lines.append("atomics")
    return "\n".join(lines) + "\n"


def format_specs(specs: Iterable[KernelSpec]) -> str:
    """Several sections, separated by blank lines (a whole ``.spec`` file)."""
    return "\n".join(format_spec(s) for s in specs)
