"""Pass ``restrict_const``: ``__restrict__`` on every pointer parameter, ``const`` on inputs.

With ``__restrict__`` the compiler may assume the buffers do not overlap, so it can keep
loaded values in registers across stores and reorder memory operations; ``const
__restrict__`` inputs may be loaded through the read-only (non-coherent) data cache (CUDA C++
Best Practices Guide, "Restricted pointers"; CUDA C++ Programming Guide, ``__ldg``). The
edit touches only the parameter lists: the kernel's definition and any other declaration of
it in the file (prototypes, explicit template instantiations), so they keep matching.

Applies when: the kernel has pointer parameters, at least one lacks a qualifier the pass
adds, no launch site in the file passes the same argument to two pointer parameters, and the
body never writes through (nor hands out) a pointer the spec declares ``in``.
"""

from __future__ import annotations

from typing import Optional

import tree_sitter

from cudalens.optimizer.aliasing import aliased_arguments
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.kernel_model.accesses import memory
from cudalens.kernel_model.file_facts import file_nodes
from cudalens.kernel_model.edits import Edit, apply_edits
from cudalens.kernel_model.syntax import Parsed, first_error, parse
from cudalens.spec.model import BufferDecl

name = "restrict_const"

_DECLARATORS = ("pointer_declarator", "abstract_pointer_declarator", "array_declarator")


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """The pass has no parameters: one application."""
    return ({},)


def _declarator(param: tree_sitter.Node) -> Optional[tree_sitter.Node]:
    for c in param.named_children:
        if c.type in _DECLARATORS:
            return c
    return None


def _pointer_depth(decl: tree_sitter.Node) -> int:
    depth, cur = 0, decl
    while cur is not None and cur.type in _DECLARATORS:
        depth += 1
        cur = next((c for c in cur.named_children if c.type in _DECLARATORS), None)
    return depth


def _has_pointee_const(param: tree_sitter.Node, parsed: Parsed) -> bool:
    """``const`` written before the first ``*`` (``const float*``, ``float const*``)."""
    return any(c.type == "type_qualifier" and parsed.text_of(c) == "const"
               for c in param.named_children)


def _role(ctx: PassContext, pname: str) -> Optional[str]:
    try:
        decl = ctx.spec.param(pname)
    except KeyError:
        return None
    return decl.role if isinstance(decl, BufferDecl) else None


def _plan(ctx: PassContext) -> tuple[Optional[str], list[Edit], list[str], list[str]]:
    """(reason, edits, names made __restrict__, names made const)."""
    k = ctx.kernel
    pointers = [p for p in k.parameters if p.is_pointer]
    if not pointers:
        return f"kernel {k.name} has no pointer parameters", [], [], []
    model = ctx.model
    parsed, definition = model.parsed, model.definition
    if definition is None:
        return (f"the definition of {k.name} is not one piece in the file's syntax tree "
                f"(parse errors around it)"), [], [], []
    nodes = model.parameters
    if len(nodes) != len(k.parameters):
        return (f"kernel {k.name}: found {len(nodes)} parameter declarations where the kernel "
                f"model has {len(k.parameters)}"), [], [], []
    roles: dict[str, str] = {}
    for p, node in zip(k.parameters, nodes):
        if not p.is_pointer:
            continue
        decl = _declarator(node)
        if decl is None:
            return f"cannot find the declarator of pointer parameter {p.name} ('{p.text}')", [], [], []
        if _pointer_depth(decl) > 1:
            return (f"parameter {p.name} is a pointer to pointer ('{p.text}'); the pass only "
                    f"qualifies pointers to data"), [], [], []
        if "volatile" in p.text.split():
            return f"parameter {p.name} is volatile ('{p.text}')", [], [], []
        role = _role(ctx, p.name)
        if role is None:
            return (f"the spec has no in/out/inout line for pointer parameter {p.name}"), [], [], []
        roles[p.name] = role
    restrict = [p.name for p in pointers if not p.is_restrict]
    const = [p.name for p in pointers if roles[p.name] == "in" and not p.is_const]
    if not restrict and not const:
        return ("every pointer parameter is already __restrict__ and every in pointer "
                "already const"), [], [], []
    alias = aliased_arguments(ctx)
    if alias:
        return alias, [], [], []
    inputs = {n for n, r in roles.items() if r == "in"}
    body = definition.child_by_field_name("body")
    bad = first_error(body)
    if inputs and bad is not None:
        return (f"the body of {k.name} has a syntax tree-sitter cannot read at line "
                f"{parsed.line_of(bad)} (often a macro); cannot prove the in pointers are "
                f"read-only"), [], [], []
    refusal = _written_input(model, inputs)
    if refusal is not None:
        return refusal, [], [], []
    edits: list[Edit] = []
    for p, node in zip(k.parameters, nodes):
        if not p.is_pointer:
            continue
        if p.name in const:
            edits.append(Edit(node.start_byte, node.start_byte, "const "))
        if p.name in restrict:
            edits.append(_restrict_edit(_declarator(node), parsed, p.name))
    edits += _other_declaration_edits(ctx, parsed, definition,
                                      [i for i, p in enumerate(k.parameters) if p.name in const])
    return None, edits, restrict, const


def _written_input(model, inputs: set[str]) -> Optional[str]:
    """Why the ``in`` pointers ``inputs`` may not be made const, from the kernel model's
    accesses (``kernel_model.accesses``), the first in source order: a write through one
    (directly or through a local pointer declared from it), a local pointer to non-const
    declared from one (``float* row = x + k;`` would not compile once ``x`` is const), or its
    value going where nothing proves it is only read (a pointer to const is only read
    without a cast). None when there is none."""
    found = memory(model)
    events: list[tuple[int, str]] = []
    for a in found.accesses:
        if a.param in inputs and a.mode != "read":
            events.append((a.node.start_byte,
                           f"the body writes through {a.param} at line {a.line} ('{a.text}'), "
                           f"but the spec declares {a.param} as in"))
    for al in found.aliases:
        if al.param in inputs and not al.const:
            events.append((al.node.start_byte,
                           f"{al.param} initializes {al.name}, a pointer to non-const, at line "
                           f"{al.line} ('{al.text}'): {al.param} cannot be made const"))
    for e in found.escapes:
        if e.param in inputs and not e.const:
            events.append((e.node.start_byte,
                           f"{e.via or e.param} escapes at line {e.line} ('{e.text}'): the "
                           f"pass cannot prove that nothing writes through it"))
    return min(events)[1] if events else None


def _restrict_edit(decl: tree_sitter.Node, parsed: Parsed, pname: str) -> Edit:
    if decl.type == "array_declarator":  # float x[] -> float *__restrict__ x
        return Edit(decl.start_byte, decl.end_byte, f"*__restrict__ {pname}")
    star = decl.children[0]
    after = parsed.data[star.end_byte:star.end_byte + 1]
    text = " __restrict__" if after in (b" ", b"\t") else "__restrict__ "
    return Edit(star.end_byte, star.end_byte, text)


def _function_name(fdecl: tree_sitter.Node, parsed: Parsed) -> str:
    inner = fdecl.child_by_field_name("declarator")
    if inner is None:
        return ""
    if inner.type == "template_function":
        inner = inner.child_by_field_name("name") or inner.named_children[0]
    return parsed.text_of(inner).rsplit("::", 1)[-1]


def _other_declaration_edits(ctx: PassContext, parsed: Parsed, definition: tree_sitter.Node,
                             const_indices: list[int]) -> list[Edit]:
    """``const`` edits for prototypes and explicit instantiations of the kernel in the file."""
    if not const_indices:
        return []
    own = definition.child_by_field_name("declarator")
    edits: list[Edit] = []
    for node in file_nodes(parsed, "function_declarator"):
        if node == own:
            continue
        if node.start_byte >= definition.start_byte and node.end_byte <= definition.end_byte:
            continue
        if _function_name(node, parsed) != ctx.kernel.name:
            continue
        holder = node.parent
        if holder is None or holder.type not in ("declaration", "template_instantiation",
                                                 "field_declaration"):
            continue  # a call or another definition, not a declaration
        plist = node.child_by_field_name("parameters")
        params = [c for c in plist.named_children if c.type == "parameter_declaration"]
        if len(params) != len(ctx.kernel.parameters):
            continue  # a different overload
        for i in const_indices:
            if not _has_pointee_const(params[i], parsed):
                edits.append(Edit(params[i].start_byte, params[i].start_byte, "const "))
    return edits


def check(ctx: PassContext) -> Optional[str]:
    """None when the pass applies to ``ctx``'s kernel, else the reason it does not."""
    return _plan(ctx)[0]


def apply(ctx: PassContext) -> PassResult:
    """Adds the qualifiers; the launch configuration is unchanged.

    Raises:
        PassNotApplicable: ``check(ctx)`` returns a reason.
    """
    reason, edits, restrict, const = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    text = apply_edits(parse(ctx.text).data, edits)
    parts = []
    if restrict:
        parts.append(f"__restrict__ on {', '.join(restrict)}")
    if const:
        parts.append(f"const on the inputs {', '.join(const)}")
    explanation = (" and ".join(parts) + ": the compiler may assume the buffers do not overlap, "
                   "keep loaded values in registers across stores, and load inputs through "
                   "the read-only data cache")
    return PassResult(source=text, launch=ctx.launch, tags=("restrict",),
                      explanation=explanation)
