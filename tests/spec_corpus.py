"""The spec corpus (tests/data/spec_corpus): kernels written here in the shapes public code
takes, each with a spec checked by hand beside it (``NAME.cu.spec``, the sidecar name, so
``cudalens spec``/``optimize`` read it too); drafting each and comparing the draft with it.

Comparison is by value, not by text: every expression of the draft is evaluated with the
checked spec's nominal sizes and constants (so ``ceil_div(n, block.x)`` and
``ceil_div(n, 256)`` agree under block 256). A draft is *exact* when every field matches:

- the kernel header (template instance), each parameter's kind and, for buffers, role, element
  type (numpy name), length, fill and its arguments, and input range (either side's default
  counts as written); for scalars the type, and the value where the checked spec gives an
  integer (sizes and counts); float scalars are values of the user's problem: the draft must
  take them from a launch site or mark them ``GUESS`` (a note), and that is checked instead;
- block, grid (with 132 SMs) and dynamic shared memory;
- the bytes the timed case moves (``reads``/``writes``, else each buffer once);
- atomics.

``flops`` is not compared: inference never drafts it (it is the user's count of the work), so
the checked specs that give it are measured on everything else.

A draft *faults* (a run of it could read or write outside a buffer) when a buffer is shorter
than the checked length, an index array's range reaches past the checked one or has no
range where the checked spec has one (random integers in [-100, 100) index anywhere), row
pointers are not drafted as ``csr``, or an integer scalar exceeds the checked value. A draft
whose expressions cannot be evaluated with the checked sizes (a size name the checked spec
lacks) is not exact, and faults when a buffer length is among them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from cudalens.source.parser import parse_source
from cudalens.spec import dtypes
from cudalens.spec.defines import file_constants
from cudalens.spec.expr import Dim3, ExprError, evaluate
from cudalens.spec.headers import local_headers
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import BufferDecl, KernelSpec
from cudalens.spec.parser import instance_key, parse_spec
from cudalens.spec.resolve import build_problem, sizes_for

CORPUS = Path(__file__).parent / "data" / "spec_corpus"
SM_COUNT = 132


@dataclass
class Entry:
    """One corpus kernel: its file, text, parsed kernel, headers and checked spec."""

    name: str
    path: Path
    text: str
    kernel: object
    source: object
    headers: tuple[str, ...]
    checked: KernelSpec


@dataclass
class Verdict:
    """``diffs``: (field, draft, checked) that differ; ``faults``: why a run of the draft could
    touch memory outside a buffer."""

    name: str
    draft: KernelSpec
    diffs: list[tuple[str, object, object]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not self.diffs and not self.faults


def entries() -> list[Entry]:
    out = []
    for cu in sorted(CORPUS.glob("*.cu")):
        text = cu.read_text()
        source = parse_source(text, str(cu))
        headers = local_headers(cu, text)
        consts = file_constants("\n".join(headers + (text,)))
        spec_path = cu.with_name(cu.name + ".spec")
        (checked,) = parse_spec(spec_path.read_text(), str(spec_path), consts).values()
        bare = checked.kernel.split("<")[0]
        kernel = next(k for k in source.kernels if bare in (k.name, k.qualified_name))
        out.append(Entry(cu.stem, cu, text, kernel, source, headers, checked))
    return out


def draft_of(e: Entry) -> KernelSpec:
    return infer_spec(e.kernel, e.text, e.source.launch_sites, headers=e.headers)


def _value(expr: Optional[str], env: dict) -> object:
    if expr is None:
        return None
    try:
        v = evaluate(expr, env)
    except ExprError as exc:
        return f"<{exc}>"
    return float(v) if isinstance(v, float) else v


def compare(e: Entry, draft: KernelSpec) -> Verdict:
    checked = e.checked
    v = Verdict(e.name, draft)
    sizes = sizes_for(checked, "nominal")
    block = Dim3(*[int(evaluate(x, sizes)) for x in checked.launch.block])
    env = {**sizes, "block": block, "sm_count": SM_COUNT}
    dblock = Dim3(*[_int(evaluate_safe(x, sizes)) for x in draft.launch.block])
    denv = {**sizes, "block": dblock, "sm_count": SM_COUNT}

    def diff(what: str, a: object, b: object) -> None:
        if a != b:
            v.diffs.append((what, a, b))

    diff("kernel", instance_key(draft.kernel), instance_key(checked.kernel))
    for p in e.kernel.parameters:
        c, d = checked.param(p.name), draft.param(p.name)
        if type(c) is not type(d):
            diff(f"{p.name}: kind", type(d).__name__, type(c).__name__)
            continue
        diff(f"{p.name}: type", dtypes.numpy_dtype(d.type), dtypes.numpy_dtype(c.type))
        if isinstance(c, BufferDecl):
            _buffer(v, p.name, d, c, denv, env, diff)
        elif not dtypes.is_float(c.type):
            dv, cv = _value(d.expr, denv), _value(c.expr, env)
            diff(f"{p.name}: value", dv, cv)
            if isinstance(dv, int) and isinstance(cv, int) and dv > cv:
                v.faults.append(f"scalar {p.name} = {dv} exceeds the checked {cv}")
        elif not any(n.startswith(f"scalar {p.name} = ") and ("GUESS" in n or "from the launch"
                                                               in n) for n in draft.notes):
            v.diffs.append((f"{p.name}: value", d.expr, "a launch-site value or a GUESS note"))
    diff("block", tuple(dblock), tuple(block))
    diff("grid", tuple(_value(x, denv) for x in draft.launch.grid) + (1,) * (3 - len(draft.launch.grid)),
         tuple(_value(x, env) for x in checked.launch.grid) + (1,) * (3 - len(checked.launch.grid)))
    diff("shared", _value(draft.launch.shared, denv), _value(checked.launch.shared, env))
    diff("atomics", draft.atomics, checked.atomics)
    moved = _moved(draft, e, sizes)
    diff("bytes moved", moved, build_problem(checked, e.kernel).cases[0].bytes_moved)
    return v


def evaluate_safe(expr: str, env: dict) -> object:
    try:
        return evaluate(expr, env)
    except ExprError:
        return 0


def _int(x: object) -> int:
    return x if isinstance(x, int) else 0


def _buffer(v: Verdict, name: str, d: BufferDecl, c: BufferDecl, denv: dict, env: dict,
            diff) -> None:
    diff(f"{name}: role", d.role, c.role)
    dl, cl = _value(d.length, denv), _value(c.length, env)
    diff(f"{name}: length", dl, cl)
    if not isinstance(dl, int) or (isinstance(cl, int) and dl < cl):
        v.faults.append(f"{name}: drafted length {d.length} = {dl}, shorter than the checked "
                        f"{c.length} = {cl}")
    diff(f"{name}: fill", (d.fill, tuple(_value(a, denv) for a in d.fill_args)),
         (c.fill, tuple(_value(a, env) for a in c.fill_args)))
    low, high = dtypes.default_range(c.type)
    drange = (_value(d.low, denv) if d.low else low, _value(d.high, denv) if d.high else high)
    crange = (_value(c.low, env) if c.low else low, _value(c.high, env) if c.high else high)
    if c.fill not in ("csr", "permutation"):
        diff(f"{name}: range", drange, crange)
    if c.fill == "csr" and d.fill != "csr":
        v.faults.append(f"{name}: row pointers drafted as {d.fill}, not csr")
    if not dtypes.is_float(c.type) and (c.low or c.high or c.fill == "permutation"):
        if c.fill == "permutation":
            crange = (0, cl)
        if d.fill == "permutation":
            drange = (0, dl)
        if not (isinstance(drange[0], (int, float)) and isinstance(drange[1], (int, float))) \
                or drange[0] < crange[0] or drange[1] > crange[1]:
            v.faults.append(f"{name}: index values drafted in {drange}, outside the checked "
                            f"{crange}")


def _moved(draft: KernelSpec, e: Entry, sizes: dict) -> object:
    """The draft's timed-case bytes, its sizes replaced by the checked spec's values."""
    from dataclasses import replace

    from cudalens.spec.model import SizeDecl

    by_name = {s.name: s for s in e.checked.sizes}
    fixed = tuple(SizeDecl(s.name, str(sizes[s.name]) if s.name in sizes else s.expr)
                  for s in draft.sizes)
    try:
        spec = replace(draft, sizes=fixed, constants=e.checked.constants, checks=())
        return build_problem(spec, e.kernel).cases[0].bytes_moved
    except Exception as exc:  # a draft that does not resolve moves no countable bytes
        del by_name
        return f"<{exc}>"


def measure() -> list[Verdict]:
    return [compare(e, draft_of(e)) for e in entries()]


def report(verdicts: list[Verdict]) -> str:
    lines = []
    for v in verdicts:
        state = "exact" if v.exact else ("FAULT" if v.faults else "differs")
        lines.append(f"{v.name}: {state}")
        lines += [f"    fault: {f}" for f in v.faults]
        lines += [f"    {what}: draft {a!r}, checked {b!r}" for what, a, b in v.diffs]
    exact = sum(v.exact for v in verdicts)
    lines.append(f"exact drafts: {exact} of {len(verdicts)} ({100.0 * exact / len(verdicts):.0f}%)")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(measure()))


def inlined_source(e: Entry) -> str:
    """The kernel file with its local ``#include "..."`` lines replaced by the headers' text
    (the runner compiles one translation unit and takes no -I options)."""
    import re

    def repl(m: "re.Match") -> str:
        path = e.path.parent / m.group(1)
        return path.read_text() if path.is_file() else m.group(0)
    return re.sub(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', repl, e.text, flags=re.M)
