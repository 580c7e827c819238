"""Source generation for the grid-stride rewrites of a matched elementwise kernel.

Both rewrites replace the kernel's body (between its braces) and keep its signature, the
user's index declaration and the guarded statements, pasted unchanged into the new loops, so
the per-element computation is the original's.

Scalar grid-stride loop (``gridstride``)::

    // <one line: what changed and why>
    const int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) { BODY }

Vectorized (``vectorize_gridstride``), for saxpy::

    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    if (reinterpret_cast<size_t>(x) % 16 == 0 && reinterpret_cast<size_t>(y) % 16 == 0) {
        for (int v = i; v < n / 4; v += stride) {
            float4 x4 = reinterpret_cast<const float4*>(x)[v];
            float4 y4 = reinterpret_cast<float4*>(y)[v];
            y4.x = a * x4.x + y4.x;   ... one line per component
            reinterpret_cast<float4*>(y)[v] = y4;
        }
        i += n / 4 * 4;
    }
    for (; i < n; i += stride) { BODY }

The per-component form is used when the body is one expression statement that does not use
the index as a value and every element type has a CUDA vector type (``float4``, ``double2``,
``int4``, ...). Otherwise each buffer's vector is moved through an aligned register array
(``alignas(16) float x_v[4]``) and BODY runs once per lane in an unrolled loop. Template
element types ``T`` move as ``int4`` (16 bytes whatever ``sizeof(T)`` is).

Reads at a data-dependent index (``src[idx[i]]``, ``Elementwise.gathers``) are left as
written in each lane's copy of the statement: scalar loads, one per lane, so a thread has
``W`` independent gathers in flight while ``idx`` and ``out`` move as vectors.

Elements of 2 bytes (``half``, ``__nv_bfloat16``) move as the toolkit's pairs (``half2``,
``__nv_bfloat162``, 4-byte accesses), and a single expression of paired operations is computed
by one paired intrinsic per pair (``cudalens.optimizer.half_pairs``), for half saxpy::

    if (reinterpret_cast<size_t>(x) % 4 == 0 && reinterpret_cast<size_t>(y) % 4 == 0) {
        const half2 a2 = __half2half2(a);
        for (int v = i; v < n / 2; v += stride) {
            half2 x2 = reinterpret_cast<const half2*>(x)[v];
            half2 y2 = reinterpret_cast<half2*>(y)[v];
            reinterpret_cast<half2*>(y)[v] = __hfma2(a2, x2, y2);
        }
        i += n / 2 * 2;
    }

(for bfloat16 inside ``#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800``, where its pair
arithmetic is native); other bodies run per element of the pair (``x2.x``, ``x2.y``).

Indices keep the user's type when it is 64-bit, or when it is 32-bit and the spec's sizes
prove the loop cannot overflow it (``cudalens.optimizer.index_width``); otherwise the loop
counts in ``long long`` and declares the user's ``i`` from it per element.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cudalens.kernel_model.edits import Edit, apply_edits, fresh_name
from cudalens.kernel_model.model import readable_body
from cudalens.kernel_model.syntax import named_children, parse, walk
from cudalens.optimizer import half_pairs
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.elementwise import Elementwise
from cudalens.optimizer.index_width import int_fits
from cudalens.optimizer.structural import Layout
from cudalens.spec import dtypes

VECTOR_BYTES = 16  # widest global load/store per thread: 128 bits (ld.global.v4.f32)

# CUDA's built-in vector types by element type (CUDA C++ Programming Guide, "Built-in Vector
# Types"): float4, double2, int4, uint4, longlong2, ulonglong2.
_VECTOR_BASE = {"float": "float", "double": "double", "int": "int", "unsigned int": "uint",
                "unsigned": "uint", "long long": "longlong", "long long int": "longlong",
                "unsigned long long": "ulonglong", "unsigned long long int": "ulonglong"}
_COMPONENTS = "xyzw"
_CONST = re.compile(r"\bconst\s+")


def vector_width(em: Elementwise) -> int:
    """Elements per vector for the spec's element types: 16 bytes of the widest element, or
    2 for half-precision pairs (``pair_of``)."""
    if pair_of(em) is not None:
        return 2
    return VECTOR_BYTES // em.widest_bytes


def pair_of(em: Elementwise) -> "half_pairs.PairType | None":
    """The pair type when every operand holds the same 2-byte float type (``half2``,
    ``__nv_bfloat162``), else None."""
    kinds = {half_pairs.pair_type(o.spec_type) for o in em.operands}
    if len(kinds) == 1 and None not in kinds and not em.template_types:
        return kinds.pop()
    return None


def pair_name(c_type: str, pair: "half_pairs.PairType") -> str:
    """``__half`` -> ``__half2`` (the user's spelling), ``half`` -> ``half2``, bfloat16 ->
    ``__nv_bfloat162``."""
    return "__half2" if pair is half_pairs.HALF and c_type.strip() == "__half" else pair.pair


@dataclass(frozen=True)
class _PairedStore:
    """The paired form of a single-expression body: ``target`` the written operand, ``value``
    the translation (``half_pairs.Paired``)."""

    target: str
    value: "half_pairs.Paired"


def paired_store(ctx: PassContext, em: Elementwise, registers: dict[str, str],
                 splat_names: dict[str, str]) -> "_PairedStore | None":
    """The body ``y[i] = EXPR;`` (or ``y[i] op= EXPR;``) as one paired store, when ``EXPR``
    translates (``half_pairs.translate``) with each read operand's access as
    ``registers[name]`` and each scalar of ``splat_names`` as its pair; else None."""
    pair = pair_of(em)
    if pair is None or not em.single_expression or em.index_used:
        return None
    parsed = parse(ctx.text)
    around = parsed.tree.root_node.descendant_for_byte_range(em.body_start, em.body_end)
    stmt = next((n for n in walk(around) if n.type == "expression_statement"
                 and n.start_byte >= em.body_start and n.end_byte <= em.body_end), None)
    kids = named_children(stmt) if stmt is not None else []
    if len(kids) != 1 or kids[0].type != "assignment_expression":
        return None
    assign = kids[0]
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    op = assign.child_by_field_name("operator").type
    target = next((a for a in em.accesses
                   if (a.start, a.end) == (left.start_byte, left.end_byte)), None)
    if target is None:
        return None
    spans = {(a.start, a.end): registers[a.name] for a in em.accesses
             if a.name in registers and (a.start, a.end) != (left.start_byte, left.end_byte)}
    value = half_pairs.translate(right, parsed, spans, splat_names)
    if value is None:
        return None
    if op != "=":
        fn = {"+=": "__hadd2", "-=": "__hsub2", "*=": "__hmul2"}.get(op)
        if fn is None or target.name not in registers:
            return None
        value = half_pairs.Paired(f"{fn}({registers[target.name]}, {value.text})", value.splats,
                                  tuple(dict.fromkeys((fn,) + value.ops)))
    return _PairedStore(target.name, value)


def _splat_candidates(ctx: PassContext, em: Elementwise, taken: set[str]) -> dict[str, str]:
    """Scalar parameters of the operands' 2-byte type -> a fresh name for their pair."""
    pair = pair_of(em)
    out = {}
    for p in ctx.kernel.parameters:
        spec = dtypes.spec_type_for_c(p.type) if not p.is_pointer else None
        if spec is not None and half_pairs.pair_type(spec) is pair:
            out[p.name] = fresh_name(f"{p.name}2", taken)
    return out


def paired_ops(ctx: PassContext, em: Elementwise) -> tuple[str, ...]:
    """The paired intrinsics the vector rewrite computes the body with (``("__hfma2",)``), or
    () when it moves pairs but runs the body per element (or has no pairs)."""
    if pair_of(em) is None:
        return ()
    taken = Layout(ctx).taken
    regs = {o.name: f"{o.name}2" for o in em.operands if o.read}
    store = paired_store(ctx, em, regs, _splat_candidates(ctx, em, set(taken)))
    return store.value.ops if store is not None else ()


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


@dataclass(frozen=True)
class _Index:
    """How the loops count: ``decl`` the first statement (the user's, ``const`` dropped, or a
    64-bit counter), ``name`` the counter, ``type`` its C type, ``per_element`` the line that
    declares the user's index from the counter in each iteration (64-bit fallback), or ''."""

    decl: str
    name: str
    type: str
    per_element: str


def _is_64bit(ctype: str) -> bool:
    spec = dtypes.spec_type_for_c(ctype)
    return spec is not None and dtypes.numpy_dtype(spec).endswith("64")


def _index(ctx: PassContext, em: Elementwise, taken: set[str]) -> _Index:
    """The counter of the loops (see ``_Index``), from the user's index declaration."""
    parsed, body = readable_body(ctx)
    user_decl = parsed.text_of(named_children(body)[0]).strip()
    ctype = _CONST.sub("", em.index_type)
    if _is_64bit(ctype) or int_fits(ctx, em.bound_spec):
        return _Index(_CONST.sub("", user_decl, count=1), em.index, ctype, "")
    e = fresh_name("e", taken)
    return _Index(f"long long {e} = (long long)blockIdx.x * blockDim.x + threadIdx.x;", e,
                  "long long", f"const {em.index_type} {em.index} = ({em.index_type}){e};")


def _stride(idx: _Index, name: str) -> str:
    cast = f"({idx.type})" if _is_64bit(idx.type) else ""
    return f"const {idx.type} {name} = {cast}gridDim.x * blockDim.x;"


def _paren(bound: str) -> str:
    return bound if re.fullmatch(r"[A-Za-z_]\w*", bound) else f"({bound})"


def _scalar_loop(w: Layout, depth: int, em: Elementwise, body: str, idx: _Index,
                 stride: str, begin: str) -> None:
    w(depth, f"for ({begin}; {idx.name} < {em.bound}; {idx.name} += {stride}) {{")
    if idx.per_element:
        w(depth + 1, idx.per_element)
    w.block(depth + 1, _reindent(body, ""))
    w(depth, "}")


def rewrite_scalar(ctx: PassContext, em: Elementwise) -> str:
    """The file with the kernel's body turned into a scalar grid-stride loop."""
    w = Layout(ctx)
    taken = w.taken
    idx = _index(ctx, em, taken)
    stride = fresh_name("stride", taken)
    w(1, "// Grid-stride loop: a grid of a few blocks per SM, each thread handles several "
         "elements.")
    w(1, _stride(idx, stride))
    _scalar_loop(w, 1, em, _body_text(ctx, em, {}), idx, stride, idx.decl.rstrip(";"))
    return w.source()


def _vector_type(c_type: str, width: int, element_bytes: int, generic: bool,
                 pair: "half_pairs.PairType | None" = None) -> str:
    """The CUDA vector type moving ``width`` elements of ``c_type`` in one access."""
    if pair is not None:
        return pair_name(c_type, pair)
    if not generic and " ".join(c_type.split()) in _VECTOR_BASE:
        return f"{_VECTOR_BASE[' '.join(c_type.split())]}{width}"
    return {16: "int4", 8: "int2", 4: "int"}[width * element_bytes]


def rewrite_vector(ctx: PassContext, em: Elementwise) -> str:
    """The file with the kernel's body turned into the vectorized grid-stride loop with an
    alignment check and a scalar tail (module docstring)."""
    w = Layout(ctx)
    taken = w.taken
    idx = _index(ctx, em, taken)
    stride, v = fresh_name("stride", taken), fresh_name("v", taken)
    generic = bool(em.template_types)
    if generic:
        width = fresh_name("kWidth", taken)
        width_decl = f"constexpr int {width} = {VECTOR_BYTES} / sizeof({em.template_types[0]});"
    else:
        width, width_decl = str(vector_width(em)), ""
    w_int = vector_width(em)
    pair = pair_of(em)
    vec = {o.name: _vector_type(o.c_type, w_int, o.element_bytes, generic, pair)
           for o in em.operands}
    per_component = (em.single_expression and not em.index_used and not generic and
                     (pair is not None or
                      all(" ".join(o.c_type.split()) in _VECTOR_BASE for o in em.operands)))
    shown = "16-byte vector" if generic else "/".join(sorted(set(vec.values())))
    splats = _splat_candidates(ctx, em, taken) if pair is not None else {}
    pair_regs = {o.name: fresh_name(f"{o.name}{w_int}", set(taken) | set(splats.values()))
                 for o in em.operands if o.read} if pair is not None else {}
    store = paired_store(ctx, em, pair_regs, splats) if pair is not None else None
    if store is not None:
        w(1, f"// {shown} loads/stores, paired math ({', '.join(store.value.ops)}), in a "
             f"grid-stride loop;")
    elif em.gathers:
        w(1, f"// {shown} loads/stores in a grid-stride loop; gathers stay scalar, {w_int} in "
             f"flight per thread;")
    else:
        w(1, f"// {shown} loads/stores (fewer, wider memory instructions) in a grid-stride loop;")
    if pair is not None and pair.arch_guard:
        w(1, "// the tail, unaligned pointers and GPUs before sm_80 go one element at a time.")
    else:
        w(1, "// the tail, and every element when a pointer is unaligned, go one by one.")
    w(1, idx.decl)
    w(1, _stride(idx, stride))
    if width_decl:
        w(1, width_decl)
    checks = [f"reinterpret_cast<size_t>({o.name}) % {min(VECTOR_BYTES, w_int * o.element_bytes)}"
              f" == 0" for o in em.operands]
    one_line = f"{w.base}{w.unit}if ({' && '.join(checks)}) {{"
    sep = " && " if len(one_line) <= 100 else " &&\n" + w.base + w.unit + "    "
    if pair is not None and pair.arch_guard:
        w.lines.append(pair.arch_guard)
    w(1, "if (" + sep.join(checks) + ") {")
    count = f"{_paren(em.bound)} / {width}"
    if store is not None:
        for name, reg in store.value.splats.items():
            w(2, f"const {vec[store.target]} {reg} = {pair.splat}({name});")
    w(2, f"for ({idx.type} {v} = {idx.name}; {v} < {count}; {v} += {stride}) {{")
    if store is not None:
        for o in em.operands:
            if o.read:
                const = "" if o.written else "const "
                w(3, f"{vec[o.name]} {pair_regs[o.name]} = "
                     f"reinterpret_cast<{const}{vec[o.name]}*>({o.name})[{v}];")
        w(3, f"reinterpret_cast<{vec[store.target]}*>({store.target})[{v}] = "
             f"{store.value.text};")
    elif per_component:
        regs = {o.name: fresh_name(f"{o.name}{w_int}", taken) for o in em.operands}
        for o in em.operands:
            t = vec[o.name]
            if o.read:
                const = "" if o.written else "const "
                w(3, f"{t} {regs[o.name]} = reinterpret_cast<{const}{t}*>({o.name})[{v}];")
            else:
                w(3, f"{t} {regs[o.name]};")
        for c in _COMPONENTS[:w_int]:
            lane_body = _body_text(ctx, em, {o.name: f"{regs[o.name]}.{c}" for o in em.operands})
            w.block(3, _reindent(lane_body, ""))
        for o in em.operands:
            if o.written:
                w(3, f"reinterpret_cast<{vec[o.name]}*>({o.name})[{v}] = {regs[o.name]};")
    else:
        regs = {o.name: fresh_name(f"{o.name}_v", taken) for o in em.operands}
        lane = fresh_name("k", taken)
        for o in em.operands:
            t = vec[o.name]
            align = min(VECTOR_BYTES, w_int * o.element_bytes)
            w(3, f"alignas({align}) {o.c_type} {regs[o.name]}[{width}];")
            if o.read:
                const = "" if o.written else "const "
                w(3, f"*reinterpret_cast<{t}*>({regs[o.name]}) = "
                     f"reinterpret_cast<{const}{t}*>({o.name})[{v}];")
        w(3, "#pragma unroll")
        w(3, f"for (int {lane} = 0; {lane} < {width}; ++{lane}) {{")
        if em.index_used:
            value = f"{v} * {width} + {lane}"
            if idx.per_element:
                value = f"({em.index_type})({value})"
            w(4, f"const {em.index_type} {em.index} = {value};")
        lane_body = _body_text(ctx, em, {o.name: f"{regs[o.name]}[{lane}]" for o in em.operands})
        w.block(4, _reindent(lane_body, ""))
        w(3, "}")
        for o in em.operands:
            if o.written:
                w(3, f"reinterpret_cast<{vec[o.name]}*>({o.name})[{v}] = "
                     f"*reinterpret_cast<{vec[o.name]}*>({regs[o.name]});")
    w(2, "}")
    w(2, f"{idx.name} += {count} * {width};")
    w(1, "}")
    if pair is not None and pair.arch_guard:
        w.lines.append("#endif")
    _scalar_loop(w, 1, em, _body_text(ctx, em, {}), idx, stride, "")
    return w.source()
