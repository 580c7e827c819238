"""Recognizing the one-thread-per-element kernel that grid-stride and vector rewrites need.

The pattern, in either form (operands of ``*``, ``+``, ``<`` in any order, parentheses and
casts allowed, any integer index type, ``const`` or not)::

    int i = blockIdx.x * blockDim.x + threadIdx.x;      int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {                                        if (i >= n) return;
        ...body...                                      ...body...
    }

where ``n`` is an integer expression of scalar parameters, the body touches every pointer
parameter only as ``p[i]`` (or reads, of a pointer it never writes, at ``p[i % c]`` /
``p[i / c]`` or at a data-dependent index such as ``p[idx[i]]``), never changes ``i`` or ``n``, and has no thread-index builtins,
barriers, warp intrinsics, atomics, shared memory, ``return`` or ``goto``. Each element
``i`` is then independent of the others, so any assignment of elements to threads computes
the same thing. Functions defined in the file that the body calls are checked for the same
builtins; functions and macros from headers are not seen (a known limit).

``check_vectorizable`` adds what vector loads and stores need on top of that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.kernel_model.accesses import first_load, loaded_names
from cudalens.kernel_model.file_facts import fact, file_nodes
from cudalens.kernel_model.macros import expand_use, file_macros, why_no_value
from cudalens.kernel_model.model import readable_body_or
from cudalens.kernel_model.syntax import Parsed, assigned_names, named_children, unparen, walk
from cudalens.optimizer.aliasing import aliased_arguments
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.pointer_uses import pointer_uses
from cudalens.optimizer.reasons import LocatedError, reason_of
from cudalens.spec import dtypes
from cudalens.spec.model import BufferDecl, ScalarDecl

_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")
_BARRIERS = re.compile(r"^(__syncthreads\w*|__syncwarp|__threadfence\w*|__barrier\w*)$")
_WARP = re.compile(r"^(__shfl\w*|__ballot\w*|__any\w*|__all\w*|__activemask|__match\w*|"
                   r"__reduce\w*)$")
_ATOMIC = re.compile(r"^atomic\w*$")
_COOPERATIVE = ("this_thread_block", "this_grid", "tiled_partition", "coalesced_threads")
_THREAD_TIED = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|__syncthreads\w*|__syncwarp|"
                          r"__shfl\w*|__ballot\w*|atomic\w*)\b")
_INT_LITERAL = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")
_BOUND_OPERATORS = ("+", "-", "*", "/", "%", "<<", ">>")
_IDENT = re.compile(r"[A-Za-z_]\w*")


class NotElementwise(LocatedError):
    """The kernel does not match the pattern; the message says why, with the line."""


@dataclass(frozen=True)
class Access:
    """One ``p[i]`` in the guarded body: bytes ``start:end`` of the file."""

    name: str
    start: int
    end: int


@dataclass(frozen=True)
class Operand:
    """A pointer parameter accessed as ``p[i]``.

    ``c_type`` is its element type as written (qualifiers removed: ``float``, ``T``),
    ``element_bytes`` the element size from the spec type, ``read`` whether any lane reads
    the element (so it must be loaded), ``written`` whether any lane writes it,
    ``partial_write`` where it is written other than by a top-level ``p[i] = ...;``
    statement (so maybe not for every element), or None.
    """

    name: str
    c_type: str
    spec_type: str
    element_bytes: int
    read: bool
    written: bool
    partial_write: Optional[str] = None


@dataclass(frozen=True)
class Elementwise:
    """A matched elementwise kernel.

    ``index``/``index_type``: the index variable and its C type (``int``, ``size_t``);
    ``bound``: the guard's bound as C text (``n``) and ``bound_spec`` as a spec expression
    of the sizes (the scalar's value expression substituted); ``body_start``/``body_end``:
    the bytes of the guarded statements' text (between the braces, or after the early
    return); ``accesses``: every ``p[i]`` in it; ``operands``: the accessed pointers in
    parameter order; ``index_used``: ``i`` appears outside ``p[i]``; ``template_types``: the
    element types that name a template parameter (``("T",)``), empty when all are concrete;
    ``single_expression``: the guarded body is one expression statement (``y[i] = ...;``);
    ``gathers``: the pointers read at a data-dependent index (``src[idx[i]]``: computed from a
    value loaded from memory, ``cudalens.kernel_model.accesses``), in parameter order; they
    are never written by the kernel and stay per-lane scalar reads in the rewrites.
    """

    index: str
    index_type: str
    bound: str
    bound_spec: str
    body_start: int
    body_end: int
    accesses: tuple[Access, ...]
    operands: tuple[Operand, ...]
    index_used: bool
    template_types: tuple[str, ...] = ()
    single_expression: bool = False
    gathers: tuple[str, ...] = ()

    @property
    def widest_bytes(self) -> int:
        return max(o.element_bytes for o in self.operands)


def _fail(msg: str, line: Optional[int] = None) -> NotElementwise:
    return NotElementwise(msg, line)


def _field_name(node: tree_sitter.Node, parsed: Parsed) -> Optional[tuple[str, str]]:
    """``blockIdx.x`` -> ("blockIdx", "x") for field expressions on a builtin."""
    node = _strip_casts(node, parsed)
    if node.type != "field_expression":
        return None
    base = node.child_by_field_name("argument")
    fld = node.child_by_field_name("field")
    if base is None or fld is None or base.type != "identifier":
        return None
    return parsed.text_of(base), parsed.text_of(fld)


def _strip_casts(node: tree_sitter.Node, parsed: Parsed) -> tree_sitter.Node:
    """Removes parentheses, C casts and ``static_cast<T>(...)`` around an expression."""
    while True:
        node = unparen(node)
        if node.type == "cast_expression":
            node = node.child_by_field_name("value")
            continue
        if node.type == "call_expression":
            fn = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if fn is not None and fn.type == "template_function" and \
                    parsed.text_of(fn).startswith("static_cast") and args is not None and \
                    len(named_children(args)) == 1:
                node = named_children(args)[0]
                continue
        return node


def _binary(node: tree_sitter.Node, parsed: Parsed, op: str) \
        -> Optional[tuple[tree_sitter.Node, tree_sitter.Node]]:
    node = _strip_casts(node, parsed)
    if node.type != "binary_expression":
        return None
    operator = node.child_by_field_name("operator")
    if operator is None or operator.type != op:
        return None
    return node.child_by_field_name("left"), node.child_by_field_name("right")


def _is_global_index(expr: tree_sitter.Node, parsed: Parsed) -> bool:
    """``blockIdx.x * blockDim.x + threadIdx.x``, operands in any order, casts allowed."""
    plus = _binary(expr, parsed, "+")
    if plus is None:
        return False
    for prod, tid in (plus, plus[::-1]):
        if _field_name(tid, parsed) != ("threadIdx", "x"):
            continue
        mul = _binary(prod, parsed, "*")
        if mul is None:
            continue
        names = {_field_name(mul[0], parsed), _field_name(mul[1], parsed)}
        if names == {("blockIdx", "x"), ("blockDim", "x")}:
            return True
    return False


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= 60 else line[:57] + "..."


def _index_declaration(stmt: tree_sitter.Node, parsed: Parsed) -> tuple[str, str, tree_sitter.Node]:
    """(name, C type, initializer) of ``int i = <global index>;``."""
    expected = "expected the body to start with 'int i = blockIdx.x * blockDim.x + threadIdx.x;'"
    where_line = parsed.line_of(stmt)
    where = f"line {where_line}"
    if stmt.type != "declaration":
        raise _fail(f"{expected}, found '{_first_line(parsed.text_of(stmt))}' at {where}",
                    line=where_line)
    declarators = [c for c in stmt.children_by_field_name("declarator")]
    if len(declarators) != 1 or declarators[0].type != "init_declarator":
        raise _fail(f"{expected}, found '{_first_line(parsed.text_of(stmt))}' at {where}",
                    line=where_line)
    init = declarators[0]
    name_node = init.child_by_field_name("declarator")
    value = init.child_by_field_name("value")
    if name_node is None or name_node.type != "identifier" or value is None:
        raise _fail(f"{expected}, found '{_first_line(parsed.text_of(stmt))}' at {where}",
                    line=where_line)
    if not _is_global_index(value, parsed):
        raise _fail(f"{expected}, found '{_first_line(parsed.text_of(stmt))}' at {where}",
                    line=where_line)
    type_node = stmt.child_by_field_name("type")
    ctype = parsed.text_of(type_node) if type_node is not None else ""
    if ctype == "auto":
        if unparen(value).type != "binary_expression" or \
                any(n.type in ("cast_expression", "call_expression") for n in walk(value)):
            raise _fail(f"'auto {parsed.text_of(name_node)}' at {where}: cannot tell the index "
                        f"type; write it out", line=where_line)
        ctype = "unsigned int"  # the type of blockIdx.x * blockDim.x + threadIdx.x
    if not dtypes.is_int_c_type(ctype):
        raise _fail(f"the index {parsed.text_of(name_node)} at {where} has type '{ctype}', "
                    f"expected an integer type", line=where_line)
    return parsed.text_of(name_node), " ".join(ctype.split()), value


def _later_guard(stmt: tree_sitter.Node, parsed: Parsed,
                 index: str) -> Optional[tree_sitter.Node]:
    """The ``if`` testing ``index`` that follows ``stmt`` in its block when only declarations
    (``int i;``, ``float c11 = 0.2f;``) that the ``if`` does not read come between, else
    None: the guard a message should name when ``stmt`` stands where the guard is
    expected."""
    cur, declared = stmt, set()
    while cur is not None and cur.type == "declaration":
        for d in cur.children_by_field_name("declarator"):
            name = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            declared.add(parsed.text_of(name) if name is not None else "")
        cur = cur.next_named_sibling
    if cur is None or cur.type != "if_statement":
        return None
    cond = cur.child_by_field_name("condition")
    names = {parsed.text_of(n) for n in walk(cond) if n.type == "identifier"} \
        if cond is not None else set()
    # a declaration the guard reads (int N = B * T; if (i < N)) cannot move below it
    return cur if index in names and not names & declared else None


def _guard(stmt: tree_sitter.Node, parsed: Parsed, index: str) -> tuple[str, tree_sitter.Node]:
    """(form, bound node): form ``"if"`` for ``if (i < n) S``, ``"return"`` for
    ``if (i >= n) return;``."""
    where_line = parsed.line_of(stmt)
    where = f"line {where_line}"
    expected = f"expected the bounds guard 'if ({index} < n)' or 'if ({index} >= n) return;'"
    if stmt.type != "if_statement":
        found = _first_line(parsed.text_of(stmt))
        later = _later_guard(stmt, parsed, index)
        tail = f"; the guard at line {parsed.line_of(later)} must come first (move '{found}' " \
            f"below it)" if later is not None else ""
        raise _fail(f"{expected} after the index, found '{found}' at {where}{tail}",
                    line=where_line)
    cond = unparen(stmt.child_by_field_name("condition"))
    if cond.type != "binary_expression":
        raise _fail(f"{expected}, found 'if {parsed.text_of(stmt.child_by_field_name('condition'))}'"
                    f" at {where}", line=where_line)
    op = cond.child_by_field_name("operator").type
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    is_index = lambda n: unparen(n).type == "identifier" and parsed.text_of(unparen(n)) == index
    if is_index(left) and op in ("<", ">="):
        form, bound = ("if" if op == "<" else "return"), right
    elif is_index(right) and op in (">", "<="):
        form, bound = ("if" if op == ">" else "return"), left
    else:
        raise _fail(f"{expected}, found 'if ({parsed.text_of(cond)})' at {where}", line=where_line)
    alternative = stmt.child_by_field_name("alternative")
    if alternative is not None:
        raise _fail(f"the bounds guard at {where} has an else branch", line=where_line)
    consequence = stmt.child_by_field_name("consequence")
    if form == "return":
        inner = consequence
        if inner.type == "compound_statement":
            kids = named_children(inner)
            inner = kids[0] if len(kids) == 1 else inner
        if inner.type != "return_statement" or named_children(inner):
            raise _fail(f"{expected}, found 'if ({parsed.text_of(cond)}) "
                        f"{_first_line(parsed.text_of(consequence))}' at {where}", line=where_line)
    return form, bound


def _bound_spec(node: tree_sitter.Node, parsed: Parsed, ctx: PassContext,
                depth: int = 0, macros: Optional[dict] = None,
                use: Optional[tuple[str, int]] = None) -> str:
    """The guard bound as a spec expression: scalar parameters replaced by their values
    (integer casts looked through, the file's and its headers' macros that are no integer
    expanded: ``BOUND`` with ``#define BOUND PICK(N, n)``, at most 8 deep); ``use``: (text,
    line) of the macro use in the file that ``node`` is the expansion of, for messages."""
    node = _strip_casts(node, parsed)
    text = parsed.text_of(node)
    macros = file_macros(parsed) if macros is None else macros
    expanded = expand_use(node, parsed, macros) if depth < 8 else None
    if expanded is not None:
        use = use or (text, parsed.line_of(node))
        return _bound_spec(expanded[1], expanded[0], ctx, depth + 1, macros, use)
    line = use[1] if use is not None else parsed.line_of(node)
    if node.type == "identifier":
        try:
            decl = ctx.spec.param(text)
        except KeyError:
            decl = None
        if not isinstance(decl, ScalarDecl):
            shown = f"'{text}' (line {line})" if use is None else \
                f"'{use[0]}' (line {line}) expands to '{text}', which"
            why = why_no_value(text, ctx.text) if text not in macros else None
            raise _fail(f"the guard's bound {shown} is not a scalar parameter of the kernel"
                        + (f": {why}" if why else ""), line=line)
        spec_type = dtypes.spec_type_for_c(decl.type) or decl.type
        if spec_type not in dtypes.SPEC_TYPES or dtypes.is_float(spec_type):
            raise _fail(f"the guard's bound '{text}' has type {decl.type}, expected an integer")
        expr = decl.expr.strip()
        return expr if _IDENT.fullmatch(expr) or expr.isdigit() else f"({expr})"
    if node.type == "number_literal" and _INT_LITERAL.match(text):
        return str(int(text.rstrip("uUlL"), 0))
    if node.type == "binary_expression":
        op = node.child_by_field_name("operator").type
        if op in _BOUND_OPERATORS:
            left = _bound_spec(node.child_by_field_name("left"), parsed, ctx, depth, macros, use)
            right = _bound_spec(node.child_by_field_name("right"), parsed, ctx, depth, macros,
                                use)
            return f"({left} {op} {right})"
    shown = f"'{text}' (line {line})" if use is None else \
        f"'{use[0]}' (line {line}) expands to '{text}', which"
    raise _fail(f"the guard's bound {shown} is not an integer expression of scalar parameters",
                line=line)


def guarded(stmts: list[tree_sitter.Node], form: str,
            parsed: Parsed) -> list[tree_sitter.Node]:
    """The statements run per element under the bounds guard ``stmts[1]`` of ``form``
    (``_guard``): the ``if``'s consequence, its statements when braced, which must end the
    body; after ``if (i >= n) return;`` the statements that follow it. Used by the matchers
    that build on this one's guard (``hist_match``, ``column_reduce``).

    Raises:
        NotElementwise: statements follow an ``if`` guard (at their line)."""
    if form != "if":
        return stmts[2:]
    if len(stmts) > 2:
        raise _fail(f"statements follow the bounds guard at line {parsed.line_of(stmts[2])}",
                    line=parsed.line_of(stmts[2]))
    cons = stmts[1].child_by_field_name("consequence")
    return named_children(cons) if cons.type == "compound_statement" else [cons]


def _file_macros(parsed: Parsed) -> dict[str, str]:
    """Macro name -> replacement text, for ``#define``s anywhere in the file (worked out once
    per text)."""
    return dict(fact(parsed, "elementwise.macros", _find_macros))


def _find_macros(parsed: Parsed) -> dict[str, str]:
    macros: dict[str, str] = {}
    for n in file_nodes(parsed, "preproc_def", "preproc_function_def"):
        name = n.child_by_field_name("name")
        value = n.child_by_field_name("value")
        if name is not None:
            macros[parsed.text_of(name)] = parsed.text_of(value) if value is not None else ""
    return macros


def _file_functions(parsed: Parsed) -> dict[str, str]:
    """Function name -> body text, for the functions defined in the file (worked out once
    per text)."""
    return dict(fact(parsed, "elementwise.functions", _find_functions))


def _find_functions(parsed: Parsed) -> dict[str, str]:
    found: dict[str, str] = {}
    for n in file_nodes(parsed, "function_definition"):
        decl = n.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        name = decl.child_by_field_name("declarator") if decl is not None else None
        body = n.child_by_field_name("body")
        if name is not None and body is not None:
            found[parsed.text_of(name).rsplit("::", 1)[-1]] = parsed.text_of(body)
    return found


def _check_statements(stmts: list[tree_sitter.Node], parsed: Parsed, pointers: set[str]) -> None:
    """Rejects anything in the guarded statements that ties elements or threads together."""
    macros = _file_macros(parsed)
    functions = _file_functions(parsed)
    watched = pointers | set(_BUILTINS)
    for stmt in stmts:
        for n in walk(stmt):
            line = parsed.line_of(n)
            if n.type == "identifier":
                word = parsed.text_of(n)
                if word in _BUILTINS:
                    raise _fail(f"the body uses {word} at line {line}: it depends on which "
                                f"thread runs it, which the rewrite changes", line=line)
                if word in macros:
                    hidden = sorted(set(_IDENT.findall(macros[word])) & watched)
                    if hidden:
                        raise _fail(f"macro {word} (used at line {line}) refers to "
                                    f"{', '.join(hidden)}; its accesses are hidden from the pass",
                                    line=line)
                if word in functions:
                    tied = _THREAD_TIED.search(functions[word])
                    if tied:
                        raise _fail(f"the body calls {word} (line {line}), which uses "
                                    f"{tied.group(0)}: it depends on which thread runs it",
                                    line=line)
                if _ATOMIC.match(word):
                    raise _fail(f"the body calls {word} at line {line}: a reduction or atomic "
                                f"update, not an elementwise map", line=line)
                if _BARRIERS.match(word) or _WARP.match(word) or word in _COOPERATIVE:
                    raise _fail(f"the body calls {word} at line {line}: threads cooperate, "
                                f"so elements cannot be moved between threads", line=line)
            elif n.type == "__shared__":
                raise _fail(f"the body declares __shared__ memory at line {line}", line=line)
            elif n.type in ("return_statement", "goto_statement", "co_return_statement"):
                raise _fail(f"the body has '{_first_line(parsed.text_of(n))}' at line {line}; "
                            f"a grid-stride loop cannot leave early per element", line=line)
            elif n.type in ("break_statement", "continue_statement"):
                if not any(a.type in ("for_statement", "while_statement", "do_statement",
                                      "switch_statement", "for_range_loop")
                           for a in _ancestors_until(n, stmts)):
                    raise _fail(f"the body has '{parsed.text_of(n)}' outside a loop at line {line}",
                                line=line)


def _ancestors_until(node: tree_sitter.Node, roots: list[tree_sitter.Node]):
    ids = {(r.start_byte, r.end_byte, r.type) for r in roots}
    cur = node.parent
    while cur is not None:
        yield cur
        if (cur.start_byte, cur.end_byte, cur.type) in ids:
            return
        cur = cur.parent


def _element_bytes(spec_type: str) -> int:
    return {"float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1,
            "float8_e4m3": 1, "float8_e5m2": 1, "float32": 4,
            "int32": 4, "uint32": 4}.get(dtypes.numpy_dtype(spec_type), 8)


_PAIRED = ("float16", "bfloat16")  # 2-byte floats with toolkit pair types (half2, __nv_bfloat162)


def match(ctx: PassContext) -> Elementwise:
    """Matches ``ctx``'s kernel against the elementwise pattern.

    Raises:
        NotElementwise: the kernel, its spec or its launch sites do not fit; the message is
            the reason in a CUDA developer's words, with the line where it applies.
    """
    k = ctx.kernel
    parsed, body = readable_body_or(ctx, _fail)
    text = parsed.text_of(body)
    for dim in ("y", "z"):
        if re.search(rf"\b(threadIdx|blockIdx|blockDim|gridDim)\s*\.\s*{dim}\b", text):
            raise _fail(f"{'2D' if dim == 'y' else '3D'} kernel: it indexes with .{dim} "
                        f"(the pass rewrites 1D elementwise kernels)")
    if ctx.spec.atomics:
        raise _fail("the spec marks the kernel as using atomics (a reduction)")
    stmts = [c for c in named_children(body)]
    if not stmts:
        raise _fail(f"the body of {k.name} is empty")
    if stmts[0].type in ("for_statement", "while_statement") and "gridDim" in parsed.text_of(stmts[0]):
        raise _fail(f"already a grid-stride loop (line {parsed.line_of(stmts[0])})",
                    line=parsed.line_of(stmts[0]))
    index, index_type, _ = _index_declaration(stmts[0], parsed)
    if len(stmts) < 2:
        raise _fail(f"expected the bounds guard 'if ({index} < n)' after line "
                    f"{parsed.line_of(stmts[0])}, found nothing", line=parsed.line_of(stmts[0]))
    form, bound_node = _guard(stmts[1], parsed, index)
    if form == "if":
        if len(stmts) > 2:
            raise _fail(f"statements follow the bounds guard at line {parsed.line_of(stmts[2])}; "
                        f"expected the guard to end the kernel", line=parsed.line_of(stmts[2]))
        consequence = stmts[1].child_by_field_name("consequence")
        if consequence.type == "compound_statement":
            guarded = named_children(consequence)
            start, end = consequence.children[0].end_byte, consequence.children[-1].start_byte
        else:
            guarded = [consequence]
            start, end = consequence.start_byte, consequence.end_byte
    else:
        guarded = stmts[2:]
        start, end = stmts[1].end_byte, body.children[-1].start_byte
    if not guarded:
        raise _fail("the guarded body is empty")
    pointer_params = [p for p in k.parameters if p.is_pointer]
    pointers = {p.name for p in pointer_params}
    _check_statements(guarded, parsed, pointers)
    assigned = {}
    for stmt in guarded:
        assigned.update({n: l for n, l in assigned_names(stmt, parsed).items()
                         if n not in assigned})
    if index in assigned:
        raise _fail(f"the body changes {index} at line {assigned[index]}")
    bound = parsed.text_of(unparen(bound_node))
    for name in {parsed.text_of(n) for n in walk(bound_node) if n.type == "identifier"}:
        if name in assigned:
            raise _fail(f"the body changes {name}, part of the bound, at line {assigned[name]}")
    bound_spec = _bound_spec(bound_node, parsed, ctx)

    accesses: list[Access] = []
    reads: set[str] = set()
    writes: dict[str, list[tree_sitter.Node]] = {}
    guarded_keys = {(g.start_byte, g.end_byte) for g in guarded}
    written: dict[str, int] = {}
    for stmt in guarded:
        for u in pointer_uses(stmt, parsed, pointers):
            if u.kind in ("write", "update"):
                written.setdefault(u.name, u.line)
    loaded = loaded_names(body, parsed)
    gathered: set[str] = set()
    for stmt in guarded:
        for use in pointer_uses(stmt, parsed, pointers):
            shown = f"'{use.text}' at line {use.line}"
            if use.kind == "escape":
                raise _fail(f"{use.name} is used as a pointer value ({shown}); the pass needs "
                            f"every access to be {use.name}[{index}]", line=use.line)
            idx = unparen(use.index) if use.index is not None else None
            if use.kind == "read" and use.form == "subscript" and idx is not None and \
                    _data_dependent(idx, parsed, loaded):
                if use.name in written:
                    raise _fail(f"gathers {shown} from {use.name}, which the kernel also writes "
                                f"(line {written[use.name]}): a lane could read an element "
                                f"another lane stores", line=use.line)
                gathered.add(use.name)
                continue  # src[idx[i]]: a per-lane scalar read of a buffer nobody writes
            if use.kind == "read" and use.form == "subscript" and idx is not None and \
                    use.name not in written and _broadcast(idx, parsed, index):
                continue  # bias[i % cols], scale[i / cols]: read in place, per element
            if use.form != "subscript" or idx is None or idx.type != "identifier" or \
                    parsed.text_of(idx) != index:
                if use.kind in ("write", "update"):
                    raise _fail(f"reduction or scatter: writes {shown}, not {use.name}[{index}]",
                                line=use.line)
                raise _fail(f"reads {shown}, not {use.name}[{index}] (neighbours or gathers: "
                            f"not an elementwise kernel)", line=use.line)
            accesses.append(Access(use.name, use.access.start_byte, use.access.end_byte))
            if use.kind in ("read", "update"):
                reads.add(use.name)
            if use.kind in ("write", "update"):
                writes.setdefault(use.name, []).append(use.access)
    if not accesses:
        raise _fail(f"the body accesses no pointer parameter as p[{index}]")
    partial: dict[str, str] = {}
    for name, nodes in writes.items():
        for access in nodes:
            assign = access.parent
            stmt = assign.parent if assign is not None else None
            if assign is None or assign.type != "assignment_expression" or stmt is None or \
                    stmt.type != "expression_statement" or \
                    (stmt.start_byte, stmt.end_byte) not in guarded_keys:
                partial.setdefault(name, f"'{parsed.text_of(access)}' at line "
                                         f"{parsed.line_of(access)}")

    operands: list[Operand] = []
    used = {a.name for a in accesses}
    for p in pointer_params:
        if p.name not in used:
            continue
        decl = None
        try:
            decl = ctx.spec.param(p.name)
        except KeyError:
            pass
        if not isinstance(decl, BufferDecl):
            raise _fail(f"the spec has no in/out/inout line for pointer parameter {p.name}")
        if "volatile" in p.text.split():
            raise _fail(f"{p.name} is volatile ('{p.text}')")
        if dtypes.vector_type_for_c(p.type) is not None:
            raise _fail(f"{p.name} already has a vector element type ({p.type})")
        nbytes = _element_bytes(decl.type)
        c_spec = dtypes.spec_type_for_c(ctx.c_type(p.type))
        if c_spec is not None and _element_bytes(c_spec) != nbytes:
            raise _fail(f"the spec says {p.name} holds {decl.type} but the kernel declares "
                        f"{p.type}")
        operands.append(Operand(p.name, p.type, decl.type, nbytes, p.name in reads,
                                p.name in writes, partial.get(p.name)))
    generic = tuple(sorted({o.c_type for o in operands
                            if set(_IDENT.findall(o.c_type)) & set(k.template_parameters)}))

    launch = ctx.launch
    if any(b.strip() != "1" for b in launch.block[1:]):
        raise _fail(f"the spec's block ({', '.join(launch.block)}) is not 1D")
    if any(g.strip() != "1" for g in launch.grid[1:]):
        raise _fail(f"the spec's grid ({', '.join(launch.grid)}) is not 1D")
    index_used = False
    access_spans = [(a.start, a.end) for a in accesses]
    macros = _file_macros(parsed)
    for stmt in guarded:
        for n in walk(stmt):
            if n.type != "identifier":
                continue
            word = parsed.text_of(n)
            if word == index and \
                    not any(s <= n.start_byte and n.end_byte <= e for s, e in access_spans):
                index_used = True
            elif word in macros and index in _IDENT.findall(macros[word]):
                index_used = True  # the macro spells the index in its expansion
    return Elementwise(index=index, index_type=index_type, bound=bound, bound_spec=bound_spec,
                       body_start=start, body_end=end, accesses=tuple(accesses),
                       operands=tuple(operands), index_used=index_used,
                       template_types=generic,
                       single_expression=len(guarded) == 1 and
                       guarded[0].type == "expression_statement",
                       gathers=tuple(p.name for p in pointer_params if p.name in gathered))


def _data_dependent(idx: tree_sitter.Node, parsed: Parsed, loaded: dict[str, str]) -> bool:
    """``idx`` reads memory (``idx[i]``, ``ids[i / D] * D + i % D``) or uses a local whose
    value comes from memory (``loaded``: ``accesses.loaded_names``), and has no call,
    assignment or increment (evaluating it per lane changes nothing)."""
    if any(n.type in ("call_expression", "assignment_expression", "update_expression",
                      "comma_expression") for n in walk(idx)):
        return False
    return first_load(idx, parsed) is not None or any(
        n.type == "identifier" and parsed.text_of(n) in loaded for n in walk(idx))


def _broadcast(idx: tree_sitter.Node, parsed: Parsed, index: str) -> bool:
    """``idx`` uses ``index`` only as the left operand of ``%`` or ``/`` by an expression
    without it (``i % cols``, ``i / cols``: a per-column or per-row operand of a flattened
    matrix), and has no call or assignment."""
    if any(n.type in ("call_expression", "assignment_expression", "update_expression",
                      "comma_expression") for n in walk(idx)):
        return False
    inside: list[tuple[int, int]] = []
    for n in walk(idx):
        if n.type == "binary_expression" and n.child_by_field_name("operator").type in ("%", "/"):
            right = n.child_by_field_name("right")
            if not any(m.type == "identifier" and parsed.text_of(m) == index for m in walk(right)):
                left = n.child_by_field_name("left")
                inside.append((left.start_byte, left.end_byte))
    uses = [n for n in walk(idx) if n.type == "identifier" and parsed.text_of(n) == index]
    return bool(uses) and all(any(s <= n.start_byte < e for s, e in inside) for n in uses)


def check_vectorizable(ctx: PassContext, em: Elementwise) -> None:
    """The extra conditions for vector loads and stores of a matched kernel.

    Raises:
        NotElementwise: an element is not 4 or 8 bytes or a 2-byte float (``half``,
            ``__nv_bfloat16``: moved as pairs, all operands of the one type), templated
            element types may differ in size, a write-only output is written only for some
            elements (a vector store would also write the others), or a launch site aliases two pointers (loading all inputs
            before storing any output would change what the kernel reads).
    """
    paired = {dtypes.numpy_dtype(o.spec_type) for o in em.operands if o.element_bytes == 2
              and dtypes.numpy_dtype(o.spec_type) in _PAIRED}
    if paired:
        others = [o for o in em.operands if dtypes.numpy_dtype(o.spec_type) not in paired]
        if len(paired) > 1 or others:
            shown = ", ".join(f"{o.name} ({o.spec_type})" for o in em.operands)
            raise _fail(f"half-precision pairs need one 2-byte float type for every operand, "
                        f"found {shown}")
        if em.template_types:
            raise _fail(f"the element type {em.template_types[0]} is a template parameter; "
                        f"half-precision pairs need the concrete type")
    for o in em.operands:
        if o.element_bytes not in (4, 8) and not paired:
            raise _fail(f"{o.name} holds {o.element_bytes}-byte elements ({o.spec_type}); the "
                        f"pass vectorizes 4- and 8-byte elements and half/bfloat16 pairs")
    if em.template_types and len({o.c_type for o in em.operands}) > 1:
        types = sorted({o.c_type for o in em.operands})
        raise _fail(f"element types {' and '.join(types)} may differ in size between template "
                    f"instantiations")
    for o in em.operands:
        if o.written and not o.read and o.partial_write:
            raise _fail(f"{o.name} is written under a condition or inside another statement "
                        f"({o.partial_write}): a vector store would also write the elements "
                        f"the original leaves untouched")
    alias = aliased_arguments(ctx)
    if alias:
        raise _fail(alias)


def match_vectorizable(ctx: PassContext) -> Elementwise:
    """``match`` followed by ``check_vectorizable``; raises ``NotElementwise``."""
    em = match(ctx)
    check_vectorizable(ctx, em)
    return em


def check(ctx: PassContext, *, vector: bool) -> Optional[str]:
    """None when ``ctx``'s kernel matches the pattern (and, with ``vector``, can take vector
    loads and stores), else the reason it does not."""
    try:
        match_vectorizable(ctx) if vector else match(ctx)
    except NotElementwise as exc:
        return reason_of(exc)
    return None
