"""Source generation for the grid-stride rewrites of a matched elementwise kernel.

Both rewrites replace the kernel's body (between its braces) and keep its signature. The
original guarded statements are pasted unchanged into the new loops, with ``i`` declared per
element with its original type, so the per-element computation is the original's.

Scalar grid-stride loop (``gridstride``)::

    for (long long e = first; e < count; e += stride) { const int i = (int)e; BODY }

Vectorized (``vectorize_gridstride``): when every accessed pointer is aligned to its vector
size, thread ``t`` handles vectors ``t, t + stride, ...`` of ``kWidth`` elements: one vector
load per read pointer, BODY once per lane on registers, one vector store per written pointer;
the scalar loop above then covers ``[count / kWidth * kWidth, count)``, or everything when a
pointer is not aligned. Indices are 64-bit so that ``v * kWidth`` cannot overflow.
"""

from __future__ import annotations

import re

from cudalens.optimizer.context import PassContext
from cudalens.optimizer.elementwise import Elementwise
from cudalens.optimizer.syntax import (Edit, apply_edits, fresh_name, identifiers,
                                       kernel_definition, line_indent, parse)

VECTOR_BYTES = 16  # widest global load/store per thread: 128 bits (ld.global.v4.f32)
VECTOR_TYPE = "cudalens_vec"

VECTOR_PREAMBLE = f"""\
// cudalens: N elements of T as one aligned vector, so that copying it is a single
// {VECTOR_BYTES}-byte (or narrower) load or store instruction (ld.global.v4 / st.global.v4).
template <typename T, int N>
struct alignas(sizeof(T) * N) {VECTOR_TYPE} {{
    T v[N];
}};

"""

_PREAMBLE_DEFINED = re.compile(rf"\bstruct\b[^;{{}}]*\b{VECTOR_TYPE}\s*\{{")


def vector_width(em: Elementwise) -> int:
    """Elements per vector for the spec's element types: 16 bytes of the widest element."""
    return VECTOR_BYTES // em.widest_bytes


def _reindent(text: str, indent: str) -> list[str]:
    """``text``'s lines with their common leading whitespace replaced by ``indent``; blank
    lines at either end dropped. A first line that starts mid-line in the original (after
    ``{`` or ``return;`` on the same line) does not count towards the common indentation."""
    mid_line = "\n" not in text[:len(text) - len(text.lstrip())]
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return []
    measured = lines[1:] if mid_line else lines
    widths = [len(l) - len(l.lstrip()) for l in measured if l.strip()]
    common = min(widths) if widths else 0
    out = [indent + (lines[0].strip() if mid_line else lines[0][common:].rstrip())]
    for line in lines[1:]:
        out.append(indent + line[common:].rstrip() if line.strip() else "")
    return out


def _body_text(ctx: PassContext, em: Elementwise, replacements: dict[str, str]) -> str:
    """The guarded statements, with each ``p[i]`` replaced by ``replacements[p]``."""
    data = parse(ctx.text).data
    edits = [Edit(a.start - em.body_start, a.end - em.body_start, replacements[a.name])
             for a in em.accesses if a.name in replacements]
    return apply_edits(data[em.body_start:em.body_end], edits)


class _Writer:
    def __init__(self, base: str, unit: str):
        self.base, self.unit, self.lines = base, unit, []

    def __call__(self, depth: int, line: str) -> None:
        self.lines.append(f"{self.base}{self.unit * depth}{line}" if line else "")

    def block(self, depth: int, lines: list[str]) -> None:
        self.lines.extend(self.base + self.unit * depth + l if l else "" for l in lines)


def _layout(ctx: PassContext):
    parsed = parse(ctx.text)
    definition = kernel_definition(parsed, ctx.kernel)
    body = definition.child_by_field_name("body")
    base = line_indent(parsed.data, definition.start_byte)
    inner = [c for c in body.named_children]
    unit = "    "
    if inner and inner[0].start_point[0] != body.start_point[0]:
        first = line_indent(parsed.data, inner[0].start_byte)
        if first.startswith(base) and len(first) > len(base):
            unit = first[len(base):]
    taken = identifiers(parsed.tree.root_node, parsed) | {ctx.kernel.name}
    return parsed, body, base, unit, taken


def _index_line(em: Elementwise, value: str) -> str:
    return f"const {em.index_type} {em.index} = ({em.index_type})({value});"


def _scalar_loop(w: _Writer, depth: int, em: Elementwise, body: str, names: dict[str, str],
                 begin: str) -> None:
    e, count, stride = names["e"], names["count"], names["stride"]
    w(depth, f"for (long long {e} = {begin}; {e} < {count}; {e} += {stride}) {{")
    w(depth + 1, _index_line(em, e))
    w.block(depth + 1, _reindent(body, ""))
    w(depth, "}")


def _replace_body(ctx: PassContext, body_node, new_body: list[str], preamble: str) -> str:
    parsed = parse(ctx.text)
    edits = [Edit(body_node.start_byte, body_node.end_byte, "\n".join(new_body))]
    if preamble:
        top = kernel_definition(parsed, ctx.kernel)
        while top.parent is not None and top.parent.type != "translation_unit":
            top = top.parent
        start = parsed.data.rfind(b"\n", 0, top.start_byte) + 1
        edits.append(Edit(start, start, preamble))
    return apply_edits(parsed.data, edits)


def rewrite_scalar(ctx: PassContext, em: Elementwise) -> str:
    """The file with the kernel's body turned into a scalar grid-stride loop."""
    parsed, body_node, base, unit, taken = _layout(ctx)
    names = {k: fresh_name(k, taken) for k in ("count", "stride", "e")}
    w = _Writer(base, unit)
    w.lines.append("{")
    w(1, "// cudalens gridstride: each thread handles elements first, first + stride, ...")
    w(1, f"const long long {names['count']} = (long long)({em.bound});")
    w(1, f"const long long {names['stride']} = (long long)gridDim.x * blockDim.x;")
    _scalar_loop(w, 1, em, _body_text(ctx, em, {}), names,
                 "(long long)blockIdx.x * blockDim.x + threadIdx.x")
    w.lines.append(base + "}")
    return _replace_body(ctx, body_node, w.lines, "")


def rewrite_vector(ctx: PassContext, em: Elementwise) -> str:
    """The file with the kernel's body turned into the vectorized grid-stride loop with an
    alignment check and a scalar tail, and the ``cudalens_vec`` template defined before the
    kernel (unless the file already defines it there)."""
    parsed, body_node, base, unit, taken = _layout(ctx)
    names = {k: fresh_name(k, taken) for k in
             ("count", "first", "stride", "kWidth", "scalar_begin", "n_vectors", "vec", "lane", "e")}
    regs = {o.name: fresh_name(f"{o.name}_v", taken) for o in em.operands}
    width, lane, v = names["kWidth"], names["lane"], names["vec"]
    vec = {o.name: f"{VECTOR_TYPE}<{o.c_type}, {width}>" for o in em.operands}
    if em.template_types:
        width_value = f"{VECTOR_BYTES} / sizeof({em.template_types[0]})"
    else:
        width_value = str(vector_width(em))
    w = _Writer(base, unit)
    w.lines.append("{")
    lanes = width if em.template_types else width_value
    w(1, f"// cudalens vectorize_gridstride: {lanes}-element vectors (one {VECTOR_BYTES}-byte "
         f"load/store per buffer)")
    w(1, f"// in a grid-stride loop, then the last {names['count']} % {width} elements one "
         f"by one.")
    w(1, f"const long long {names['count']} = (long long)({em.bound});")
    w(1, f"const long long {names['first']} = (long long)blockIdx.x * blockDim.x + threadIdx.x;")
    w(1, f"const long long {names['stride']} = (long long)gridDim.x * blockDim.x;")
    w(1, f"constexpr int {width} = {width_value};  // elements per vector")
    w(1, f"long long {names['scalar_begin']} = 0;  // elements before it were done as vectors")
    checks = [f"reinterpret_cast<unsigned long long>({o.name}) % alignof({vec[o.name]}) == 0"
              for o in em.operands]
    w(1, "if (" + (" &&\n" + base + unit + "    ").join(checks) + ") {")
    w(2, f"const long long {names['n_vectors']} = {names['count']} / {width};")
    w(2, f"for (long long {v} = {names['first']}; {v} < {names['n_vectors']}; "
         f"{v} += {names['stride']}) {{")
    for o in em.operands:
        if o.read:
            const = "" if o.written else "const "
            w(3, f"{const}{vec[o.name]} {regs[o.name]} = "
                 f"reinterpret_cast<const {vec[o.name]}*>({o.name})[{v}];")
        else:
            w(3, f"{vec[o.name]} {regs[o.name]};  // every lane is written below")
    w(3, "#pragma unroll")
    w(3, f"for (int {lane} = 0; {lane} < {width}; ++{lane}) {{")
    if em.index_used:
        w(4, _index_line(em, f"{v} * {width} + {lane}"))
    lane_body = _body_text(ctx, em, {o.name: f"{regs[o.name]}.v[{lane}]" for o in em.operands})
    w.block(4, _reindent(lane_body, ""))
    w(3, "}")
    for o in em.operands:
        if o.written:
            w(3, f"reinterpret_cast<{vec[o.name]}*>({o.name})[{v}] = {regs[o.name]};")
    w(2, "}")
    w(2, f"{names['scalar_begin']} = {names['n_vectors']} * {width};")
    w(1, "}")
    w(1, "// The tail, or every element when a pointer is not aligned:")
    _scalar_loop(w, 1, em, _body_text(ctx, em, {}), names,
                 f"{names['scalar_begin']} + {names['first']}")
    w.lines.append(base + "}")
    start = kernel_definition(parsed, ctx.kernel).start_byte
    defined = _PREAMBLE_DEFINED.search(parsed.data[:start].decode("utf-8"))
    return _replace_body(ctx, body_node, w.lines, "" if defined else VECTOR_PREAMBLE)
