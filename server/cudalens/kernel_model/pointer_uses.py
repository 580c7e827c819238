"""How a kernel body uses its pointer parameters: reads, writes, and escapes.

A *use* is one occurrence of a pointer parameter's name in the body, classified by the
expression around it:

- ``read``: the pointee is read (``x[i]``, ``*x``, ``*(x + k)``, ``__ldg(&x[i])``), or the
  pointer initializes a local pointer to const (``const float* row = x + k;``).
- ``write``: the pointee is the left side of ``=`` (``y[i] = ...``).
- ``update``: the pointee is read and written (``y[i] += ...``, ``++y[i]``).
- ``escape``: the pointer value itself goes somewhere the pass cannot follow (passed to a
  function, stored in a variable, cast, ``&x[i]`` handed to anything but a read-only load).

An element passed to a function-like macro of the file counts as the macro's replacement
uses it (``F4(c[i]) = r`` with ``#define F4(v) (reinterpret_cast<float4 *>(&(v))[0])`` takes
the element's address: an escape, as the expansion written out is).

Local variables that shadow a parameter are not told apart from it, which errs on the safe
side for every pass (a shadowing local's writes count as writes through the parameter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

import tree_sitter

from cudalens.kernel_model.syntax import Parsed, walk

UseKind = Literal["read", "write", "update", "escape"]

# Read-only load intrinsics that take a pointer (CUDA C++ Programming Guide, "Load Functions
# Using Cache Hints" and "Read-Only Data Cache Load Function").
READ_ONLY_LOADS = frozenset({"__ldg", "__ldca", "__ldcg", "__ldcs", "__ldlu", "__ldcv"})


@dataclass(frozen=True)
class PointerUse:
    """One use of pointer parameter ``name``.

    ``access`` is the ``subscript_expression``/``pointer_expression`` through which the
    pointee is reached (None for an escape of the bare pointer); ``index`` the subscript's
    index expression (None unless ``form`` is ``"subscript"``); ``line`` 1-based;
    ``text`` the source text of the smallest expression that shows the use.
    """

    name: str
    kind: UseKind
    form: Literal["subscript", "deref", "bare"]
    access: Optional[tree_sitter.Node]
    index: Optional[tree_sitter.Node]
    line: int
    text: str


def _field(node: tree_sitter.Node, name: str) -> Optional[tree_sitter.Node]:
    return node.child_by_field_name(name)


def _operator(node: tree_sitter.Node) -> str:
    op = _field(node, "operator")
    if op is not None:
        return op.type
    for c in node.children:
        if not c.is_named:
            return c.type
    return ""


def _call_name(call: tree_sitter.Node, parsed: Parsed) -> str:
    fn = _field(call, "function")
    return parsed.text_of(fn) if fn is not None else ""


def _in_read_only_load(node: tree_sitter.Node, parsed: Parsed) -> bool:
    """``node`` is (up to parentheses) an argument of ``__ldg(...)`` and friends."""
    cur = node
    while cur.parent is not None and cur.parent.type == "parenthesized_expression":
        cur = cur.parent
    args = cur.parent
    if args is None or args.type != "argument_list" or args.parent is None:
        return False
    return args.parent.type == "call_expression" and \
        _call_name(args.parent, parsed) in READ_ONLY_LOADS


def _const_pointer_initializer(node: tree_sitter.Node, parsed: Parsed) -> bool:
    """``node`` initializes a local pointer to const: ``const float* row = x + k;``.

    Nothing can be written through such a pointer without a cast, so the use is a read.
    """
    init = node.parent
    if init is None or init.type != "init_declarator" or _field(init, "value") != node:
        return False
    if (_field(init, "declarator") or init).type != "pointer_declarator":
        return False
    decl = init.parent
    return decl is not None and decl.type == "declaration" and any(
        c.type == "type_qualifier" and parsed.text_of(c) == "const" for c in decl.children)


def _subscript_parts(node: tree_sitter.Node) -> tuple[Optional[tree_sitter.Node],
                                                      Optional[tree_sitter.Node]]:
    """(base, index) of a ``subscript_expression``; index is None unless exactly one."""
    base = _field(node, "argument")
    indices = _field(node, "indices")
    index = None
    if indices is not None:
        inner = [x for x in indices.named_children if x.type != "comment"]
        index = inner[0] if len(inner) == 1 else None
    return base, index


def classify(ident: tree_sitter.Node, parsed: Parsed) -> PointerUse:
    """Classifies one identifier node that names a pointer parameter."""
    name = parsed.text_of(ident)
    line = parsed.line_of(ident)
    # Climb through pointer arithmetic (x + k, k + x, x - k) and parentheses.
    node = ident
    while node.parent is not None:
        p = node.parent
        if p.type == "parenthesized_expression":
            node = p
            continue
        if p.type == "binary_expression" and _operator(p) in ("+", "-"):
            left = _field(p, "left")
            if left == node or _operator(p) == "+":
                node = p
                continue
        break
    parent = node.parent
    access: Optional[tree_sitter.Node] = None
    form: Literal["subscript", "deref", "bare"] = "bare"
    index = None
    if parent is not None and parent.type == "subscript_expression":
        base, idx = _subscript_parts(parent)
        if base == node:
            access, form, index = parent, "subscript", idx
    elif parent is not None and parent.type == "pointer_expression" and _operator(parent) == "*":
        access, form = parent, "deref"
    if access is None:
        read_only = _in_read_only_load(node, parsed) or _const_pointer_initializer(node, parsed)
        kind: UseKind = "read" if read_only else "escape"
        shown = node.parent if node.parent is not None else node
        if shown.type == "argument_list" and shown.parent is not None:
            shown = shown.parent  # the call it is passed to
        else:  # the statement or declaration it is part of
            while shown.parent is not None and shown.type != "declaration" and \
                    not shown.type.endswith("_statement"):
                shown = shown.parent
        return PointerUse(name, kind, "bare", None, None, line, parsed.text_of(shown))
    kind = _element_kind(access, parsed)
    return PointerUse(name, kind, form, access, index, line,
                      parsed.text_of(access) if kind == "read" else _shown(access, parsed))


def _shown(access: tree_sitter.Node, parsed: Parsed) -> str:
    """The text of ``access``, or of the macro call that takes it as an argument."""
    cur = _climb(access)
    through = _macro_argument_kind(cur, parsed) if cur.parent is not None and \
        cur.parent.type == "argument_list" else None
    return parsed.text_of(through[1] if through is not None else access)


def _climb(access: tree_sitter.Node) -> tree_sitter.Node:
    """``access`` with the parentheses and member accesses around it."""
    cur = access
    while cur.parent is not None:
        p = cur.parent
        if p.type == "parenthesized_expression":
            cur = p
        elif p.type == "field_expression" and _field(p, "argument") == cur:
            cur = p
        else:
            break
    return cur


def _element_kind(access: tree_sitter.Node, parsed: Parsed) -> UseKind:
    """What happens to the element ``access`` reaches (a subscript, a dereference, or a macro
    call yielding an element): read, write, update or escape."""
    cur = _climb(access)
    p = cur.parent
    if p is None:
        return "read"
    if p.type == "assignment_expression" and _field(p, "left") == cur:
        return "write" if _operator(p) == "=" else "update"
    if p.type == "update_expression":
        return "update"
    if p.type == "pointer_expression" and _operator(p) == "&":
        return "read" if _in_read_only_load(p, parsed) else "escape"
    if p.type == "argument_list":
        through = _macro_argument_kind(cur, parsed)
        if through is not None:
            return through[0]
        by_ref = reference_argument_kind(cur, parsed)
        if by_ref is not None:
            return by_ref
    return "read"


def reference_argument_kind(arg: tree_sitter.Node, parsed: Parsed) -> Optional[UseKind]:
    """The kind of use an element passed to a function of the file by non-const reference
    gets (``acc(out[i], v)`` with ``__device__ void acc(float& dst, float v) { dst += v; }``):
    ``update`` when the function's body compound-assigns or increments the parameter, or
    both reads and assigns it; ``write`` when it only assigns it with ``=``; ``escape`` when it
    takes the parameter's address or passes it on; ``read`` otherwise. A ``const``
    reference, a by-value parameter, or a function the file does not define (or defines more
    than once with that many parameters) gives None: the caller's own reading of the call
    (a read) stands."""
    args = arg.parent
    call = args.parent if args is not None else None
    if call is None or call.type != "call_expression":
        return None
    name = _call_name(call, parsed).strip()
    position = next((i for i, a in enumerate(args.named_children) if a == arg), None)
    if position is None:
        return None
    count = len(args.named_children)
    from cudalens.kernel_model.file_facts import file_nodes

    found = []
    for fn in file_nodes(parsed, "function_definition"):
        decl = _field(fn, "declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = _field(decl, "declarator")
        if decl is None or parsed.text_of(_field(decl, "declarator") or decl).split("::")[-1] \
                != name.split("::")[-1].split("<")[0]:
            continue
        params = [c for c in (_field(decl, "parameters") or decl).named_children
                  if c.type == "parameter_declaration"]
        if len(params) == count:
            found.append((fn, params[position]))
    if len(found) != 1:
        return None
    fn, param = found[0]
    ref = _field(param, "declarator")
    if ref is None or ref.type != "reference_declarator" or any(
            c.type == "type_qualifier" and parsed.text_of(c) == "const" for c in param.children):
        return None
    ident = next((c for c in ref.named_children if c.type == "identifier"), None)
    body = _field(fn, "body")
    if ident is None or body is None:
        return None
    pname = parsed.text_of(ident)
    kinds = set()
    for n in walk(body):
        if n.type != "identifier" or parsed.text_of(n) != pname:
            continue
        cur, p = n, n.parent
        while p is not None and p.type == "parenthesized_expression":
            cur, p = p, p.parent
        if p is not None and p.type == "assignment_expression" and _field(p, "left") == cur:
            kinds.add("write" if _operator(p) == "=" else "update")
        elif p is not None and p.type == "update_expression":
            kinds.add("update")
        elif p is not None and (p.type == "argument_list" or (
                p.type == "pointer_expression" and _operator(p) == "&")):
            kinds.add("escape")
        else:
            kinds.add("read")
    if "escape" in kinds:
        return "escape"
    if "update" in kinds or {"read", "write"} <= kinds:
        return "update"
    return "write" if "write" in kinds else "read"


def _macros(parsed: Parsed) -> tuple[frozenset, dict]:
    """(every name the file ``#define``s, its macros defined once), kept with the parse."""
    from cudalens.kernel_model.file_facts import file_nodes
    from cudalens.kernel_model.macros import file_macros

    hit = parsed.models.get(_MACROS_KEY)
    if hit is None:
        names = frozenset(parsed.text_of(n.child_by_field_name("name"))
                          for n in file_nodes(parsed, "preproc_def", "preproc_function_def")
                          if n.child_by_field_name("name") is not None)
        hit = parsed.models.setdefault(_MACROS_KEY, (names, file_macros(parsed)))
    return hit


_MACROS_KEY = "pointer_uses.macros"
_RANK = {"read": 0, "write": 1, "update": 2, "escape": 3}


def _macro_argument_kind(arg: tree_sitter.Node, parsed: Parsed
                         ) -> Optional[tuple[UseKind, tree_sitter.Node]]:
    """(kind, the call) when ``arg``, an element, is an argument of a function-like macro of
    the file (``F4(c[i]) = r`` with ``#define F4(v) (reinterpret_cast<float4 *>(&(v))[0])``),
    judged from the replacement as the preprocessor would expand it: the parameter's address
    taken is an ``escape`` (as ``&c[i]`` written out is) unless a read-only load takes it
    (``__ldg(&(v))``); the parameter assigned or incremented in the replacement an ``update``
    or ``write``; otherwise the call's own use counts (``AT(y[i]) = v`` with ``#define AT(v)
    (v)`` writes y). A macro the file defines more than once, or with ``#``/``...``, is an
    ``escape``. None when ``arg`` is not an argument of a macro the file defines."""
    args = arg.parent
    call = args.parent if args is not None else None
    if call is None or call.type != "call_expression":
        return None
    name = _call_name(call, parsed).strip()
    names, macros = _macros(parsed)
    if name not in names:
        return None
    macro = macros.get(name)
    position = next((i for i, a in enumerate(args.named_children) if a == arg), None)
    if macro is None or not macro.expandable or macro.params is None or position is None or \
            position >= len(macro.params):
        return "escape", call
    kind: UseKind = "read"
    loads = "|".join(sorted(READ_ONLY_LOADS))
    for u in re.finditer(rf"(?<![\w.]){re.escape(macro.params[position])}\b", macro.body):
        before, after = macro.body[:u.start()], macro.body[u.end():]
        found: UseKind
        if re.search(r"&\s*[(\s]*$", before):
            found = "read" if re.search(rf"\b(?:{loads})\s*\(\s*&\s*[(\s]*$", before) \
                else "escape"
        elif re.search(r"(?:\+\+|--)\s*[(\s]*$", before) or \
                re.match(r"[)\s]*(?:\+\+|--|[-+*/%&|^]=|<<=|>>=)", after):
            found = "update"
        elif re.match(r"[)\s]*=(?!=)", after):
            found = "write"
        else:
            found = _element_kind(call, parsed)
        kind = max(kind, found, key=_RANK.__getitem__)
    return kind, call


def pointee_kind(access: tree_sitter.Node, parsed: Parsed) -> UseKind:
    """What happens to the element ``access`` (``x[i]``, ``*p``) reaches: ``write`` on the left
    of ``=``, ``update`` on the left of a compound assignment or under ``++``/``--``,
    ``escape`` when its address is taken for anything but a read-only load, the kind its use
    in a function-like macro's replacement gives (``_macro_argument_kind``), else ``read``
    (member access and parentheses around it looked through)."""
    return _element_kind(access, parsed)


def in_read_only_load(node: tree_sitter.Node, parsed: Parsed) -> bool:
    """``node`` is (up to parentheses) an argument of ``__ldg(...)`` or a sibling load."""
    return _in_read_only_load(node, parsed)


def pointer_uses(body: tree_sitter.Node, parsed: Parsed, names: set[str]) -> list[PointerUse]:
    """Every use under ``body`` of the identifiers in ``names``, in source order."""
    return [classify(n, parsed) for n in walk(body)
            if n.type == "identifier" and parsed.text_of(n) in names]
