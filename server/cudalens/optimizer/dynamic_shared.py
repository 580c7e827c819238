"""How many bytes of dynamic shared memory a kernel indexes, as a function of its block.

A kernel launched ``<<<grid, block, block * sizeof(float)>>>`` with ``extern __shared__ float
s[];`` usually keeps one element per thread. ``footprint`` proves that from the body: every
use of each ``extern __shared__`` array (in the body or at file scope) must be an element
``s[INDEX]`` (read or written, not its address), or the initializer of a typed view ``T* v =
reinterpret_cast<T*>(s);`` / ``(T*)s`` whose own uses are such elements. Each ``INDEX`` must
be affine in ``threadIdx.x`` and ``blockDim.x`` (through locals initialized once and never
changed: ``int tid = threadIdx.x;``): ``a * threadIdx.x + b * blockDim.x + c``, whose largest
value over the block's threads ``0 .. B-1`` is ``(a + b) * B + c - a`` for ``a >= 0`` (``b *
B + c`` otherwise) and whose smallest must not be negative. Where an index is not affine
(``s[tid + stride]`` inside a tree loop), the kernel may still be one of the shared-memory tree
reductions ``cudalens.optimizer.block_reduction`` recognizes with its limits written with
``blockDim.x`` (no constant block size): for a power-of-two block ``B`` all its accesses lie
in ``s[0 .. B-1]`` (M. Harris, "Optimizing Parallel Reduction in CUDA", 2007).

The result, ``Footprint``, is the bytes needed for a block of ``B`` threads along x, the
largest ``per_thread * B + fixed`` of its accesses; ``NotPerThread`` says which use could not
be bounded, with its line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.kernel_model.syntax import short_text as _short
from cudalens.optimizer.affine import Scope, poly_of
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.reasons import LocatedError

# bytes of the element types a dynamic shared array is declared or viewed as (CUDA C++
# Programming Guide, "Built-in Vector Types"; cuda_fp16.h, cuda_bf16.h)
ELEMENT_BYTES = {
    "char": 1, "signed char": 1, "unsigned char": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2, "__half": 2, "half": 2,
    "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "__half2": 4, "half2": 4, "__nv_bfloat162": 4,
    "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "size_t": 8,
    "double": 8, "float2": 8, "int2": 8,
    "float4": 16, "int4": 16, "double2": 16,
}

_TID, _DIM = "threadIdx.x", "blockDim.x"


class NotPerThread(LocatedError):
    """A use of dynamic shared memory whose extent the block does not bound; says which."""


@dataclass(frozen=True)
class Footprint:
    """The bytes a block of ``B`` threads along x reaches: the largest of ``per_thread * B +
    fixed`` over ``terms`` (one per access, those another one covers for every ``B >= 1``
    left out), each with the line of its access."""

    terms: tuple[tuple[int, int, int], ...]  # (bytes per thread, fixed bytes, line)

    @staticmethod
    def of(bounds: list[tuple[int, int, int]]) -> "Footprint":
        """The footprint of the accesses ``bounds`` (module doc), dominated ones dropped."""
        kept: list[tuple[int, int, int]] = []
        for k, m, line in sorted(bounds, key=lambda t: (-t[0], -t[1], t[2])):
            if not any(k2 >= k and k2 + m2 >= k + m for k2, m2, _ in kept):
                kept.append((k, m, line))
        return Footprint(tuple(kept))

    @property
    def per_thread(self) -> int:
        return max(k for k, _, _ in self.terms)

    @property
    def line(self) -> int:
        """The line of the access reaching furthest in a block of 1024 threads."""
        return max(self.terms, key=lambda t: t[0] * 1024 + t[1])[2]

    def bytes_for(self, block_x: int) -> int:
        return max(k * block_x + m for k, m, _ in self.terms)

    def expression(self) -> str:
        """The bytes as a spec expression of ``block.x`` (``block.x * 4``, ``max(...)``)."""
        def one(k: int, m: int) -> str:
            if k == 0:
                return str(m)
            text = f"block.x * {k}"
            return text + (f" + {m}" if m > 0 else f" - {-m}" if m < 0 else "")
        parts = [one(k, m) for k, m, _ in self.terms]
        return parts[0] if len(parts) == 1 else f"max({', '.join(parts)})"


def _is_extern_shared(decl: tree_sitter.Node, parsed: Parsed) -> bool:
    return any(c.type == "__shared__" for c in walk(decl)) and any(
        c.type == "storage_class_specifier" and parsed.text_of(c) == "extern"
        for c in decl.children)


def _type_bytes(text: str) -> Optional[int]:
    words = [w for w in text.replace("*", " ").split()
             if w not in ("const", "volatile", "__restrict__", "struct")]
    return ELEMENT_BYTES.get(" ".join(words))


def extern_arrays(body: tree_sitter.Node, parsed: Parsed) -> dict[str, tuple[tree_sitter.Node, str]]:
    """The ``extern __shared__`` arrays the kernel can see: those of ``body`` and of the
    file's top level, name -> (declaration, element type)."""
    found: dict[str, tuple[tree_sitter.Node, str]] = {}
    decls = [n for n in walk(body) if n.type == "declaration"] + \
        [n for n in named_children(parsed.tree.root_node) if n.type == "declaration"]
    for decl in decls:
        if not _is_extern_shared(decl, parsed):
            continue
        type_node = decl.child_by_field_name("type")
        for a in walk(decl):
            if a.type == "array_declarator":
                name = a.child_by_field_name("declarator")
                if name is not None and name.type == "identifier":
                    found.setdefault(parsed.text_of(name),
                                     (decl, parsed.text_of(type_node) if type_node else ""))
    return found


def _fixed_locals(body: tree_sitter.Node, parsed: Parsed) -> dict[str, tuple[Parsed, tree_sitter.Node]]:
    """Locals declared once with an initializer and never assigned: name -> initializer."""
    inits: dict[str, list[tree_sitter.Node]] = {}
    changed: set[str] = set()
    for n in walk(body):
        if n.type == "init_declarator":
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                inits.setdefault(parsed.text_of(d), []).append(n.child_by_field_name("value"))
        elif n.type in ("assignment_expression", "update_expression"):
            t = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if t is not None and unparen(t).type == "identifier":
                changed.add(parsed.text_of(unparen(t)))
    return {k: (parsed, v[0]) for k, v in inits.items()
            if len(v) == 1 and v[0] is not None and k not in changed}


def _inside(node: tree_sitter.Node, outer: tree_sitter.Node) -> bool:
    return outer.start_byte <= node.start_byte < outer.end_byte


def _view(use: tree_sitter.Node, name: str, parsed: Parsed) -> Optional[tuple[str, str]]:
    """(view name, element type) when ``use`` is the whole initializer of a pointer
    declaration ``T* v = reinterpret_cast<T*>(s);`` (or ``(T*)s``, ``(T*)(s)``), else None."""
    init = use.parent
    while init is not None and init.type not in ("init_declarator", "declaration",
                                                 "expression_statement", "compound_statement"):
        init = init.parent
    if init is None or init.type != "init_declarator" or init.parent is None:
        return None
    ptr = init.child_by_field_name("declarator")
    view = ptr.child_by_field_name("declarator") if ptr is not None and \
        ptr.type == "pointer_declarator" else None
    type_node = init.parent.child_by_field_name("type")
    if view is None or view.type != "identifier" or type_node is None:
        return None
    etype = parsed.text_of(type_node)
    want = "".join(f"{etype}*".split())
    value = "".join(parsed.text_of(init.child_by_field_name("value")).split())
    if value not in (f"reinterpret_cast<{want}>({name})", f"({want}){name}",
                     f"({want})({name})"):
        return None
    return parsed.text_of(view), etype


def _extent(index: tree_sitter.Node, parsed: Parsed, scope: Scope) -> Optional[tuple[int, int, int]]:
    """(a, b, c) of an index ``a * threadIdx.x + b * blockDim.x + c``, else None."""
    poly = poly_of(index, parsed, scope)
    if poly is None or not poly.symbols <= {_TID, _DIM}:
        return None
    a = b = c = 0
    for mono, coef in poly.terms:
        if mono == ():
            c = coef
        elif mono == (_TID,):
            a = coef
        elif mono == (_DIM,):
            b = coef
        else:
            return None
    return a, b, c


def footprint(parsed: Parsed, body: tree_sitter.Node, tree_ok=None) -> Optional[Footprint]:
    """The bytes of dynamic shared memory ``body`` indexes for a block of ``B`` threads along
    x (module doc), None when it uses none. ``tree_ok``: a callable saying whether the kernel
    is a recognized tree reduction with block-sized limits (``block_reduction``), asked only
    when some index is not affine.

    Raises:
        NotPerThread: a use whose extent the block does not bound (the message names it and
            its line).
    """
    arrays = extern_arrays(body, parsed)
    if not arrays:
        return None
    scope = Scope(macros=file_macros(parsed), locals=_fixed_locals(body, parsed))
    pending = [(name, etype, decl) for name, (decl, etype) in arrays.items()]
    bounds: list[tuple[int, int, int]] = []  # (bytes per thread, fixed bytes, line)
    unbounded: Optional[tuple[tree_sitter.Node, int, int]] = None  # (access, line, bytes)
    probes = (1, 32, 1024)
    while pending:
        name, etype, decl = pending.pop()
        size = _type_bytes(etype)
        for use in walk(body):
            if use.type != "identifier" or parsed.text_of(use) != name or _inside(use, decl):
                continue
            parent = use.parent
            where = parsed.line_of(use)
            if parent is not None and parent.type == "subscript_expression" and \
                    parent.child_by_field_name("argument") == use:
                up = parent.parent
                while up is not None and up.type == "parenthesized_expression":
                    up = up.parent
                if up is not None and up.type == "pointer_expression" and \
                        up.child_by_field_name("operator").type == "&":
                    raise NotPerThread(
                        f"the kernel takes the address '{_short(parsed, up)}' of its dynamic "
                        f"shared memory at line {where}: the pass cannot bound what is "
                        f"reached through it", where)
                if size is None:
                    raise NotPerThread(
                        f"the dynamic shared array {name} has elements of type '{etype}', "
                        f"whose size the pass does not know (line {where})", where)
                idx = named_children(parent.child_by_field_name("indices"))
                abc = _extent(idx[0], parsed, scope) if len(idx) == 1 else None
                if abc is None:
                    unbounded = unbounded or (parent, where, size)
                    continue
                a, b, c = abc
                if min((b * B + c) if a >= 0 else ((a + b) * B + c - a) for B in probes) < 0:
                    raise NotPerThread(
                        f"'{_short(parsed, parent)}' at line {where} indexes below the start "
                        f"of the dynamic shared memory for some threads", where)
                k, m = ((a + b), c - a) if a >= 0 else (b, c)  # largest index: k * B + m
                bounds.append((k * size, (m + 1) * size, where))
                continue
            view = _view(use, name, parsed)
            if view is not None:
                vdecl = use.parent
                while vdecl is not None and vdecl.type != "declaration":
                    vdecl = vdecl.parent
                pending.append((view[0], view[1], vdecl or use))
                continue
            shown = parent if parent is not None else use
            raise NotPerThread(
                f"the kernel uses its dynamic shared memory as '{_short(parsed, shown)}' at "
                f"line {where}, not as {name}[index]: the pass cannot bound what a block of "
                f"another size reaches", where)
    if unbounded is not None:
        node, where, size = unbounded
        if tree_ok is None or not tree_ok():
            raise NotPerThread(
                f"the index of '{_short(parsed, node)}' (line {where}) is not a function of "
                f"threadIdx.x and blockDim.x, and the kernel is not a tree reduction the pass "
                f"recognizes: it cannot tell how many bytes of dynamic shared memory a block "
                f"of another size reads", where)
        bounds.append((size, 0, where))  # the tree stays within s[0 .. B-1]
    if not bounds:
        return None
    return Footprint.of(bounds)
