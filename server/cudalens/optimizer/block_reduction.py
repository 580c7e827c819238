"""Recognizing a shared-memory tree reduction over one block.

The shape (M. Harris, "Optimizing Parallel Reduction in CUDA", NVIDIA, 2007, kernels 1-3)::

    __shared__ T s[N];                      // or extern __shared__ T s[];
    ...statements that set s[tid]...       // tid: threadIdx.x or a copy of it
    __syncthreads();
    for (...tree loop...) { ...combine...; __syncthreads(); }
    if (tid == 0) ...statement reading s[0]...;

with the tree loop in one of three forms, ``LIMIT`` being ``blockDim.x`` or a constant equal
to the spec's block size::

    for (st = 1; st < LIMIT; st *= 2)  if (tid % (2 * st) == 0) s[tid] += s[tid + st];  // 1
    for (st = 1; st < LIMIT; st *= 2)  { idx = 2 * st * tid;                             // 2
                                         if (idx < LIMIT) s[idx] += s[idx + st]; }
    for (st = LIMIT / 2; st > 0; st >>= 1)  if (tid < st) s[tid] += s[tid + st];         // 3

(the third form may also start from the constant half of the block size, ``st = 128``)

The array may also be a typed view of dynamic shared memory declared as raw bytes (or any
element type), when the view is declared right after it and is the only use of the array::

    extern __shared__ unsigned char smem[];
    float* s = reinterpret_cast<float*>(smem);   // or (float*)smem, or float* const s

(doubling and halving may be spelled ``*= 2``, ``<<= 1``, ``st = st * 2`` and so on), and the
combine ``a += b``, ``a = a + b``, ``a = f(a, b)`` for ``f`` in ``fmaxf fminf fmax fmin max
min``, or a max/min written as a comparison (``if (b > a) a = b;``, ``a = (b > a) ? b : a;``:
``cudalens.optimizer.minmax``, whose kind ``combine`` then holds). For a block of ``B`` threads (a power of two), all three leave in ``s[0]`` the
combination of the ``B`` values stored in ``s[tid]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Optional

import tree_sitter

from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import Parsed, named_children, unparen, walk
from cudalens.kernel_model.syntax import short_text
from cudalens.optimizer import minmax, structural
from cudalens.optimizer.affine import Scope, builtin_field, poly_of, strip_casts
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.macros import file_macros
from cudalens.optimizer.reasons import LocatedError
from cudalens.spec.poly import Poly

COMBINE_FUNCTIONS = ("fmaxf", "fminf", "fmax", "fmin", "max", "min")


class NotTreeReduction(LocatedError):
    """The kernel is not the recognized tree reduction; the message says why, with the line."""


@dataclass(frozen=True)
class TreeReduction:
    """A matched reduction.

    ``shared``: the array's name; ``element_type``: its C element type; ``decl``: its
    declaration statement; ``view``: the statement declaring ``shared`` as a typed pointer
    into a byte array of dynamic shared memory (module doc), None when ``decl`` declares
    ``shared`` itself; ``load``: the statements before the first barrier (without ``decl``
    and ``view``); ``load_uses``: every ``s[tid]`` in them; ``loop``: the tree loop;
    ``form``: 1, 2 or 3 (module doc); ``combine``: ``"+"``, a function name or a
    conditional kind of ``cudalens.optimizer.minmax``;
    ``final``: the ``if (tid == 0)`` statement and ``final_uses`` its ``s[0]`` nodes.
    """

    parsed: Parsed
    body: tree_sitter.Node
    shared: str
    element_type: str
    decl: tree_sitter.Node
    load: tuple[tree_sitter.Node, ...]
    load_uses: tuple[tree_sitter.Node, ...]
    loop: tree_sitter.Node
    form: int
    combine: str
    final: tree_sitter.Node
    final_uses: tuple[tree_sitter.Node, ...]
    view: Optional[tree_sitter.Node] = None


def _typed_view(stmts: list[tree_sitter.Node], decl: tree_sitter.Node, array: str,
                body: tree_sitter.Node, parsed: Parsed) -> Optional[tuple[tree_sitter.Node, str, str]]:
    """(statement, name, element type) of ``T* name = reinterpret_cast<T*>(array);`` (or
    ``(T*)array``, ``T* const name``) declared right after the ``extern __shared__`` array
    ``array``, when that cast is the array's only use; None when the statement after ``decl``
    is not such a view. Raises when it is, but the array is used elsewhere too."""
    if not any(c.type == "storage_class_specifier" and parsed.text_of(c) == "extern"
               for c in decl.children):
        return None
    at = stmts.index(decl)
    if at + 1 >= len(stmts) or stmts[at + 1].type != "declaration":
        return None
    view = stmts[at + 1]
    ds = view.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    ptr = ds[0].child_by_field_name("declarator")
    if ptr is None or ptr.type != "pointer_declarator":
        return None
    name_node = ptr.child_by_field_name("declarator")
    if name_node is None or name_node.type != "identifier":
        return None
    if any(c.type == "type_qualifier" and parsed.text_of(c) == "volatile"
           for c in view.children):
        return None
    etype = parsed.text_of(view.child_by_field_name("type"))
    want = "".join(f"{etype}*".split())
    value = "".join(parsed.text_of(ds[0].child_by_field_name("value")).split())
    if value not in (f"reinterpret_cast<{want}>({array})", f"({want}){array}",
                     f"({want})({array})", f"reinterpret_cast<{want}>(&{array}[0])",
                     f"({want})&{array}[0]"):
        return None
    uses = [n for n in walk(body) if n.type == "identifier" and parsed.text_of(n) == array
            and not (decl.start_byte <= n.start_byte < decl.end_byte)]
    outside = [n for n in uses if not (view.start_byte <= n.start_byte < view.end_byte)]
    if outside:
        raise _fail(f"the shared byte array {array} is used at line "
                    f"{parsed.line_of(outside[0])} besides its view "
                    f"'{_short(parsed, view)}' (line {parsed.line_of(view)})",
                    line=parsed.line_of(outside[0]))
    name = parsed.text_of(name_node)
    for n in walk(body):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        if target is not None and parsed.text_of(unparen(target)) == name:
            raise _fail(f"the view {name} of the shared byte array is changed at line "
                        f"{parsed.line_of(n)}", line=parsed.line_of(n))
    return view, name, etype


def _fail(msg: str, line: Optional[int] = None) -> NotTreeReduction:
    return NotTreeReduction(msg, line)


_short = partial(short_text, limit=70)  # reasons here quote up to 70 characters


def _is_barrier(stmt: tree_sitter.Node, parsed: Parsed) -> bool:
    if stmt.type != "expression_statement" or not named_children(stmt):
        return False
    call = named_children(stmt)[0]
    return call.type == "call_expression" and \
        parsed.text_of(call.child_by_field_name("function")) == "__syncthreads" and \
        not named_children(call.child_by_field_name("arguments"))


def _shared_declaration(stmts: list[tree_sitter.Node], body: tree_sitter.Node,
                        parsed: Parsed) -> tuple[tree_sitter.Node, str, str]:
    """(declaration, array name, element type) of the body's one ``__shared__`` array."""
    shared_nodes = [n for n in walk(body) if n.type == "__shared__"]
    if not shared_nodes:
        raise _fail("the kernel declares no __shared__ array: not a shared-memory reduction")
    if len(shared_nodes) > 1:
        raise _fail(f"the kernel declares {len(shared_nodes)} __shared__ variables (lines "
                    f"{', '.join(str(parsed.line_of(n)) for n in shared_nodes)}); the pass "
                    f"handles one array")
    decl = shared_nodes[0].parent
    while decl is not None and decl.type != "declaration":
        decl = decl.parent
    if decl is None or decl not in stmts:
        raise _fail(f"the __shared__ declaration at line {parsed.line_of(shared_nodes[0])} is "
                    f"not a statement of the kernel's outer block",
                    line=parsed.line_of(shared_nodes[0]))
    arrays = [d for d in decl.children_by_field_name("declarator")]
    if len(arrays) != 1 or arrays[0].type != "array_declarator":
        raise _fail(f"the __shared__ declaration '{_short(parsed, decl)}' (line "
                    f"{parsed.line_of(decl)}) is not one 1D array", line=parsed.line_of(decl))
    inner = arrays[0].child_by_field_name("declarator")
    if inner is None or inner.type != "identifier":
        raise _fail(f"the __shared__ declaration '{_short(parsed, decl)}' is not a 1D array")
    type_node = decl.child_by_field_name("type")
    quals = [parsed.text_of(c) for c in decl.children if c.type == "type_qualifier"]
    if "volatile" in quals:
        raise _fail(f"the shared array is volatile (line {parsed.line_of(decl)}): a warp-"
                    f"synchronous reduction, not the tree form", line=parsed.line_of(decl))
    return decl, parsed.text_of(inner), parsed.text_of(type_node)


def _tid_names(load: list[tree_sitter.Node], body: tree_sitter.Node,
               parsed: Parsed, builtin: str = "threadIdx.x") -> set[str]:
    """The locals initialized to ``builtin`` (``threadIdx.x``; ``blockDim.x`` for
    ``int block_size = blockDim.x;``) and never changed."""
    names = set()
    for stmt in load:
        if stmt.type != "declaration":
            continue
        for d in stmt.children_by_field_name("declarator"):
            if d.type == "init_declarator" and \
                    builtin_field(d.child_by_field_name("value"), parsed) == builtin:
                names.add(parsed.text_of(d.child_by_field_name("declarator")))
    for n in walk(body):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        if target is not None and unparen(target).type == "identifier":
            names.discard(parsed.text_of(unparen(target)))
    return names


class _Reader:
    def __init__(self, parsed: Parsed, shared: str, tids: set[str], limit_ok, scope: Scope,
                 block_x: int):
        self.p, self.shared, self.tids, self.limit_ok, self.scope = parsed, shared, tids, \
            limit_ok, scope
        self.block_x = block_x

    def is_tid(self, node: Optional[tree_sitter.Node]) -> bool:
        if node is None:
            return False
        node = strip_casts(node, self.p)
        if node.type == "identifier":
            return self.p.text_of(node) in self.tids
        return builtin_field(node, self.p) == "threadIdx.x"

    def poly(self, node) -> Optional[Poly]:
        tid = Poly.sym("threadIdx.x")
        got = poly_of(node, self.p, self.scope)
        if got is None:
            return None
        return got.substitute(lambda s: tid if s in self.tids else Poly.sym(s))

    def shared_index(self, node: tree_sitter.Node) -> Optional[tree_sitter.Node]:
        """The index of ``s[index]``, or None when ``node`` is not an element of the array."""
        node = unparen(node)
        if node.type != "subscript_expression":
            return None
        base = node.child_by_field_name("argument")
        if base is None or self.p.text_of(base) != self.shared:
            return None
        idx = [c for c in named_children(node.child_by_field_name("indices"))]
        return idx[0] if len(idx) == 1 else None

    def combine(self, stmt: tree_sitter.Node, index: Poly, stride: str) -> str:
        """The combine kind of ``s[index] (op)= s[index + stride]``; raises with the reason."""
        node = stmt
        if node.type == "compound_statement" and len(named_children(node)) == 1:
            node = named_children(node)[0]
        expr = named_children(node)[0] if node.type == "expression_statement" and \
            named_children(node) else None
        bad = _fail(f"expected the combine 's[i] += s[i + stride]' (or a = a + b, a = fmaxf(a, "
                    f"b), if (b > a) a = b...), found '{_short(self.p, stmt)}' at line "
                    f"{self.p.line_of(stmt)}", line=self.p.line_of(stmt))
        cond = minmax.match(node, self.p)
        if cond is not None:  # if (s[i + st] > s[i]) s[i] = s[i + st]; or a ternary
            ti, vi = self.shared_index(cond.target), self.shared_index(cond.value)
            if ti is not None and vi is not None and self.poly(ti) == index and \
                    self.poly(vi) == index + Poly.sym(stride):
                return cond.kind
            raise bad
        if expr is None or expr.type != "assignment_expression":
            raise bad
        op = expr.child_by_field_name("operator").type
        left, right = expr.child_by_field_name("left"), unparen(expr.child_by_field_name("right"))
        li = self.shared_index(left)
        if li is None or self.poly(li) != index:
            raise bad
        partner = index + Poly.sym(stride)

        def is_elem(node, want: Poly) -> bool:
            i = self.shared_index(node)
            return i is not None and self.poly(i) == want

        if op == "+=" and is_elem(right, partner):
            return "+"
        if op != "=":
            raise bad
        if right.type == "binary_expression" and \
                right.child_by_field_name("operator").type == "+":
            a, b = right.child_by_field_name("left"), right.child_by_field_name("right")
            if (is_elem(a, index) and is_elem(b, partner)) or \
                    (is_elem(b, index) and is_elem(a, partner)):
                return "+"
        if right.type == "call_expression":
            fn = self.p.text_of(right.child_by_field_name("function"))
            args = named_children(right.child_by_field_name("arguments"))
            if fn in COMBINE_FUNCTIONS and len(args) == 2 and (
                    (is_elem(args[0], index) and is_elem(args[1], partner)) or
                    (is_elem(args[1], index) and is_elem(args[0], partner))):
                return fn
        raise bad


_DOUBLE = {("*=", 2), ("<<=", 1)}
_HALVE = {("/=", 2), (">>=", 1)}


def _step(update: tree_sitter.Node, parsed: Parsed, var: str) -> Optional[str]:
    """"double" or "halve" for the loop's update expression, else None."""
    node = unparen(update)
    if node.type != "assignment_expression":
        return None
    left = unparen(node.child_by_field_name("left"))
    if left.type != "identifier" or parsed.text_of(left) != var:
        return None
    op = node.child_by_field_name("operator").type
    right = unparen(node.child_by_field_name("right"))
    rtext = parsed.text_of(right)
    if (op, _int(rtext)) in _DOUBLE or (op == "+=" and rtext == var):
        return "double"
    if (op, _int(rtext)) in _HALVE:
        return "halve"
    if op == "=" and right.type == "binary_expression":
        bop = right.child_by_field_name("operator").type
        a = parsed.text_of(unparen(right.child_by_field_name("left")))
        b = parsed.text_of(unparen(right.child_by_field_name("right")))
        if bop == "*" and {a, b} == {var, "2"}:
            return "double"
        if bop == "<<" and a == var and _int(b) == 1:
            return "double"
        if (bop, _int(b)) in {("/", 2), (">>", 1)} and a == var:
            return "halve"
    return None


def _int(text: str) -> Optional[int]:
    try:
        return int(text.rstrip("uUlL"), 0)
    except ValueError:
        return None


def match(ctx: PassContext, block_x: int, constant_limits: bool = True) -> TreeReduction:
    """Matches ``ctx``'s kernel, launched with ``block_x`` threads per block. With
    ``constant_limits`` False the tree's limits must be written with ``blockDim.x`` (a
    constant equal to ``block_x`` is refused): a tree then correct for every power-of-two
    block.

    Raises:
        NotTreeReduction: the kernel does not fit; the message says why, with the line.
    """
    parsed, body = readable_body_or(ctx, _fail)
    stmts = named_children(body)
    decl, shared, etype = _shared_declaration(stmts, body, parsed)
    view = _typed_view(stmts, decl, shared, body, parsed)
    if view is not None:
        view, shared, etype = view
    barrier = next((i for i, s in enumerate(stmts) if _is_barrier(s, parsed)), None)
    if barrier is None:
        raise _fail("no __syncthreads(); statement in the kernel's outer block")
    load = [s for s in stmts[:barrier] if s != decl and s != view]
    if stmts.index(decl) > barrier:
        raise _fail(f"the shared array is declared after the first barrier (line "
                    f"{parsed.line_of(decl)})", line=parsed.line_of(decl))
    tids = _tid_names(load, body, parsed)
    macros = file_macros(parsed)
    scope = Scope(macros=macros)

    dims = _tid_names(load, body, parsed, "blockDim.x")

    def limit_ok(node: tree_sitter.Node) -> bool:
        if builtin_field(node, parsed) == "blockDim.x" or \
                (unparen(node).type == "identifier" and parsed.text_of(unparen(node)) in dims):
            return True
        p = poly_of(node, parsed, scope)
        return constant_limits and p is not None and p.is_const() and p.constant == block_x

    r = _Reader(parsed, shared, tids | {"threadIdx.x"}, limit_ok, scope,
                block_x if constant_limits else -1)
    load_uses = []
    for stmt in load:
        if stmt.type in ("return_statement",) or any(n.type == "return_statement"
                                                     for n in walk(stmt)):
            raise _fail(f"a thread may return before the reduction (line {parsed.line_of(stmt)})",
                        line=parsed.line_of(stmt))
        tied = structural.thread_tied(stmt, parsed)
        if tied:
            raise _fail(f"the statements before the first barrier use {tied}")
        for n in walk(stmt):
            if n.type == "identifier" and parsed.text_of(n) == shared:
                sub = n.parent
                idx = r.shared_index(sub) if sub is not None else None
                if idx is None or not r.is_tid(idx):
                    raise _fail(f"before the first barrier the shared array is used as "
                                f"'{_short(parsed, sub or n)}' (line {parsed.line_of(n)}); "
                                f"expected only {shared}[tid]", line=parsed.line_of(n))
                load_uses.append(sub)
    if not load_uses:
        raise _fail(f"nothing stores {shared}[tid] before the first barrier (line "
                    f"{parsed.line_of(stmts[barrier])})", line=parsed.line_of(stmts[barrier]))
    rest = stmts[barrier + 1:]
    if len(rest) != 2 or rest[0].type != "for_statement" or rest[1].type != "if_statement":
        shown = "; ".join(_short(parsed, s) for s in rest[:3]) or "nothing"
        raise _fail(f"expected the tree loop and then 'if (tid == 0) ...' after the first "
                    f"barrier (line {parsed.line_of(stmts[barrier])}), found: {shown}",
                    line=parsed.line_of(stmts[barrier]))
    loop, final = rest
    form, combine = _loop(loop, r, parsed)
    final_uses = _final(final, r, parsed)
    return TreeReduction(parsed, body, shared, etype, decl, tuple(load), tuple(load_uses),
                         loop, form, combine, final, tuple(final_uses), view)


def _loop(loop: tree_sitter.Node, r: _Reader, parsed: Parsed) -> tuple[int, str]:
    where_line = parsed.line_of(loop)
    where = f"line {where_line}"
    unknown = _fail(f"the loop at {where} ('{_short(parsed, loop)}') is not one of the "
                    f"recognized tree-reduction forms (interleaved with %, interleaved with a "
                    f"strided index, sequential addressing)", line=where_line)
    head = for_header(loop, parsed)
    if head is None or head.body is None or head.body.type != "compound_statement":
        raise unknown
    var, cond, body = head.var, head.cond, head.body
    start = unparen(head.start)
    step = _step(head.update, parsed, var)
    inner = named_children(body)
    if inner and _is_barrier(inner[-1], parsed):
        inner = inner[:-1]
    elif len(inner) > 1 and _is_barrier(inner[0], parsed):
        # a barrier at the start of each round (llm.c's matmul_backward_bias): the loop comes
        # right after the first barrier (``match``), so every round still reads what the one
        # before wrote; after the last round thread 0 reads s[0], which only it writes
        inner = inner[1:]
    else:
        raise _fail(f"the loop at {where} does not end with __syncthreads();", line=where_line)
    for n in walk(body):
        if n.type in ("assignment_expression", "update_expression"):
            t = n.child_by_field_name("left") or n.child_by_field_name("argument")
            if t is not None and parsed.text_of(unparen(t)) == var:
                raise _fail(f"the loop body changes {var} (line {parsed.line_of(n)})",
                            line=parsed.line_of(n))
    tid = Poly.sym("threadIdx.x")
    st = Poly.sym(var)
    cond = unparen(cond)
    if step == "double" and _int(parsed.text_of(start)) == 1:
        if not (cond.type == "binary_expression" and
                cond.child_by_field_name("operator").type == "<" and
                parsed.text_of(unparen(cond.child_by_field_name("left"))) == var):
            raise unknown
        if not r.limit_ok(cond.child_by_field_name("right")):
            raise _fail(f"the loop at {where} runs to "
                        f"'{parsed.text_of(cond.child_by_field_name('right'))}', which is not "
                        f"blockDim.x or the spec's block size", line=where_line)
        if len(inner) == 1 and inner[0].type == "if_statement":
            test = unparen(inner[0].child_by_field_name("condition"))
            if _interleaved_test(test, r, parsed, st) and \
                    inner[0].child_by_field_name("alternative") is None:
                return 1, r.combine(inner[0].child_by_field_name("consequence"), tid, var)
        if len(inner) == 2 and inner[0].type == "declaration" and inner[1].type == "if_statement":
            d = inner[0].children_by_field_name("declarator")
            if len(d) == 1 and d[0].type == "init_declarator":
                idx_name = parsed.text_of(d[0].child_by_field_name("declarator"))
                if r.poly(d[0].child_by_field_name("value")) == Poly.const(2) * st * tid:
                    test = unparen(inner[1].child_by_field_name("condition"))
                    if test.type == "binary_expression" and \
                            test.child_by_field_name("operator").type == "<" and \
                            parsed.text_of(unparen(test.child_by_field_name("left"))) == idx_name \
                            and r.limit_ok(test.child_by_field_name("right")) and \
                            inner[1].child_by_field_name("alternative") is None:
                        return 2, r.combine(inner[1].child_by_field_name("consequence"),
                                            Poly.sym(idx_name), var)
        raise unknown
    if step == "halve":
        halved = start.type == "binary_expression" and \
            (start.child_by_field_name("operator").type,
             _int(parsed.text_of(start.child_by_field_name("right")))) in {("/", 2), (">>", 1)} \
            and r.limit_ok(start.child_by_field_name("left"))
        constant = poly_of(start, parsed, r.scope)
        if not halved and not (constant is not None and constant.is_const() and
                               constant.constant * 2 == r.block_x):
            raise _fail(f"the loop at {where} starts from "
                        f"'{parsed.text_of(start)}', which is not half of blockDim.x or of the "
                        f"spec's block size", line=where_line)
        if not _positive_test(cond, parsed, var):
            raise unknown
        if len(inner) == 1 and inner[0].type == "if_statement" and \
                inner[0].child_by_field_name("alternative") is None:
            test = unparen(inner[0].child_by_field_name("condition"))
            if test.type == "binary_expression" and \
                    test.child_by_field_name("operator").type == "<" and \
                    r.is_tid(test.child_by_field_name("left")) and \
                    parsed.text_of(unparen(test.child_by_field_name("right"))) == var:
                return 3, r.combine(inner[0].child_by_field_name("consequence"), tid, var)
    raise unknown


def _interleaved_test(test: tree_sitter.Node, r: _Reader, parsed: Parsed, st: Poly) -> bool:
    """``tid % (2 * st) == 0`` or ``(tid & (2 * st - 1)) == 0``."""
    if test.type != "binary_expression" or test.child_by_field_name("operator").type != "==":
        return False
    a, b = unparen(test.child_by_field_name("left")), unparen(test.child_by_field_name("right"))
    if parsed.text_of(a) == "0":
        a, b = b, a
    if parsed.text_of(b) != "0" or a.type != "binary_expression":
        return False
    op = a.child_by_field_name("operator").type
    if not r.is_tid(a.child_by_field_name("left")):
        return False
    m = r.poly(a.child_by_field_name("right"))
    if op == "%":
        return m == Poly.const(2) * st
    if op == "&":
        return m == Poly.const(2) * st - Poly.const(1)
    return False


def _positive_test(cond: tree_sitter.Node, parsed: Parsed, var: str) -> bool:
    """``st > 0``, ``st >= 1``, ``st != 0``, ``0 < st`` or ``st``."""
    if cond.type == "identifier":
        return parsed.text_of(cond) == var
    if cond.type != "binary_expression":
        return False
    op = cond.child_by_field_name("operator").type
    a = parsed.text_of(unparen(cond.child_by_field_name("left")))
    b = parsed.text_of(unparen(cond.child_by_field_name("right")))
    return (a == var and (op, _int(b)) in {(">", 0), (">=", 1), ("!=", 0)}) or \
        (b == var and (op, _int(a)) in {("<", 0), ("<=", 1), ("!=", 0)})


def _final(final: tree_sitter.Node, r: _Reader, parsed: Parsed) -> list[tree_sitter.Node]:
    """The ``s[0]`` nodes of ``if (tid == 0) ...``; raises when it is not that."""
    cond = unparen(final.child_by_field_name("condition"))
    ok = False
    if cond.type == "binary_expression" and cond.child_by_field_name("operator").type == "==":
        a, b = cond.child_by_field_name("left"), cond.child_by_field_name("right")
        ok = (r.is_tid(a) and parsed.text_of(unparen(b)) == "0") or \
            (r.is_tid(b) and parsed.text_of(unparen(a)) == "0")
    elif cond.type == "unary_expression" and cond.child_by_field_name("operator").type == "!":
        ok = r.is_tid(cond.child_by_field_name("argument"))
    if not ok or final.child_by_field_name("alternative") is not None:
        raise _fail(f"expected 'if (tid == 0) ...' after the loop, found "
                    f"'{_short(parsed, final)}' at line {parsed.line_of(final)}",
                    line=parsed.line_of(final))
    uses = []
    for n in walk(final.child_by_field_name("consequence")):
        if n.type == "identifier" and parsed.text_of(n) == r.shared:
            sub = n.parent
            idx = r.shared_index(sub) if sub is not None else None
            if idx is None or r.poly(idx) != Poly():
                raise _fail(f"the final statement reads '{_short(parsed, sub or n)}' (line "
                            f"{parsed.line_of(n)}); expected only {r.shared}[0]",
                            line=parsed.line_of(n))
            uses.append(sub)
    tied = structural.thread_tied(final, parsed)
    if tied and "atomic" not in tied:
        raise _fail(f"the final statement uses {tied}")
    return uses


def fixed_names(stmts: list[tree_sitter.Node], body: tree_sitter.Node, parsed: Parsed,
                builtin: str = "threadIdx.x") -> set[str]:
    """The locals declared among ``stmts`` (the kernel's outer statements) initialized to
    ``builtin`` (``threadIdx.x``, ``blockDim.x``) and never changed in ``body``."""
    return _tid_names(stmts, body, parsed, builtin)


def tree_loop(loop: tree_sitter.Node, parsed: Parsed, shared: str, tids: set[str],
              dims: set[str]) -> tuple[int, str]:
    """(form, combine) of ``loop`` read as one of the tree loops of the module doc over the
    shared array ``shared``, its limits written with ``blockDim.x`` (or a local in ``dims``
    equal to it), ``tids`` the locals equal to ``threadIdx.x``: for a power-of-two block of
    ``B`` threads it reads and writes only ``shared[0 .. B-1]`` and leaves in ``shared[0]``
    the combination of the ``B`` values it starts from.

    Raises:
        NotTreeReduction: ``loop`` is not such a loop (the message says why, with the line).
    """
    def limit_ok(node: tree_sitter.Node) -> bool:
        return builtin_field(node, parsed) == "blockDim.x" or \
            (unparen(node).type == "identifier" and parsed.text_of(unparen(node)) in dims)

    r = _Reader(parsed, shared, set(tids) | {"threadIdx.x"}, limit_ok,
                Scope(macros=file_macros(parsed)), -1)
    return _loop(loop, r, parsed)
