"""Pass ``unroll``: ``#pragma unroll`` on the kernel's counted loops.

A loop whose trip count is known at compile time (``for (int r = -RADIUS; r <= RADIUS;
++r)``) is unrolled completely: its counter, compare and branch disappear, array subscripts
by the counter become constants (a small local array such as a filter's weights can then
live in registers instead of local memory), and the loads of different iterations are
independent instructions the scheduler can keep in flight together. A loop with a run-time
bound and a constant step (``for (int p = 0; p < k; ++p)``) is unrolled by a factor, with
the remainder handled by the compiler (CUDA C++ Programming Guide, "#pragma unroll"). The
pragma never changes what a loop computes, only how its instructions are laid out.

A loop is *counted* here when it is ``for (T v = A; v OP B; STEP)`` with ``OP`` one of ``<
<= > >= !=``, ``STEP`` ``++v``, ``v++``, ``--v``, ``v--``, ``v += C`` or ``v -= C`` with a
constant ``C``, and the body does not change ``v``; its trip count is fixed when ``A`` and
``B`` are integer constants (literals, integer macros, ``const``/``constexpr`` locals with
constant initializers). Loops that already carry a ``#pragma unroll``/``nounroll``, loops
that do not start their line (the pragma needs a line of its own) and loops holding a
``__syncthreads()`` (tile loops, whose trips are the block's phases) are left alone.

Parameters: ``factor``: None unrolls only the fixed-trip loops completely; 2, 4 or 8 also
unrolls the run-time loops by that factor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tree_sitter

from cudalens.optimizer.affine import Scope, poly_of
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.macros import file_macros
from cudalens.kernel_model.edits import Edit, apply_edits, line_indent
from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.model import find_definition
from cudalens.kernel_model.syntax import Parsed, first_error, parse, unparen, walk

name = "unroll"

FACTORS = (4, 8, 2)
MAX_FULL_TRIPS = 64  # fixed loops with more iterations are not fully unrolled (code size)


@dataclass(frozen=True)
class Loop:
    """A counted loop: its node, 1-based line, and trip count (None when set at run time)."""

    node: tree_sitter.Node
    line: int
    trips: Optional[int]


def _pragma_before(node: tree_sitter.Node, parsed: Parsed) -> bool:
    prev = node.prev_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_sibling
    if prev is None or prev.type != "preproc_call":
        return False
    text = " ".join(parsed.text_of(prev).split())
    return text.startswith("#pragma unroll") or text.startswith("#pragma nounroll")


def _starts_line(node: tree_sitter.Node, parsed: Parsed) -> bool:
    start = parsed.data.rfind(b"\n", 0, node.start_byte) + 1
    return not parsed.data[start:node.start_byte].strip()


def _constant_locals(body: tree_sitter.Node, parsed: Parsed) -> dict:
    """``const``/``constexpr`` locals with an initializer, as scope entries."""
    found = {}
    for n in walk(body):
        if n.type != "declaration":
            continue
        quals = {parsed.text_of(c) for c in n.children if c.type == "type_qualifier"}
        if not quals & {"const", "constexpr"}:
            continue
        for d in n.children_by_field_name("declarator"):
            if d.type == "init_declarator" and \
                    d.child_by_field_name("declarator").type == "identifier":
                found[parsed.text_of(d.child_by_field_name("declarator"))] = \
                    (parsed, d.child_by_field_name("value"))
    return found


def _step(update: tree_sitter.Node, parsed: Parsed, var: str, scope: Scope) -> Optional[int]:
    node = unparen(update)
    if node.type == "update_expression":
        arg = unparen(node.child_by_field_name("argument"))
        if arg.type == "identifier" and parsed.text_of(arg) == var:
            return 1 if "++" in parsed.text_of(node) else -1
        return None
    if node.type == "assignment_expression":
        left = unparen(node.child_by_field_name("left"))
        op = node.child_by_field_name("operator").type
        if left.type != "identifier" or parsed.text_of(left) != var or op not in ("+=", "-="):
            return None
        c = poly_of(node.child_by_field_name("right"), parsed, scope)
        if c is None or not c.is_const() or c.constant == 0:
            return None
        return c.constant if op == "+=" else -c.constant
    return None


def _trips(start: int, op: str, bound: int, step: int) -> Optional[int]:
    """Iterations of ``for (v = start; v OP bound; v += step)``; None if it does not end."""
    if op in ("<", "<=") and step > 0:
        end = bound + (1 if op == "<=" else 0)
        return max(0, -(-(end - start) // step))
    if op in (">", ">=") and step < 0:
        end = bound - (1 if op == ">=" else 0)
        return max(0, -(-(start - end) // -step))
    if op == "!=" and step != 0 and (bound - start) % step == 0 and (bound - start) // step >= 0:
        return (bound - start) // step
    return None


def _counted(loop: tree_sitter.Node, parsed: Parsed, scope: Scope) -> Optional[Loop]:
    head = for_header(loop, parsed, assignment=True)
    if head is None or head.body is None:
        return None
    var, start_node, cond, update, body = (head.var, head.start, head.cond, head.update,
                                           head.body)
    if cond.type != "binary_expression":
        return None
    op = cond.child_by_field_name("operator").type
    left, right = unparen(cond.child_by_field_name("left")), cond.child_by_field_name("right")
    if op not in ("<", "<=", ">", ">=", "!=") or left.type != "identifier" or \
            parsed.text_of(left) != var:
        return None
    step = _step(update, parsed, var, scope)
    if step is None:
        return None
    for n in walk(body):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        if target is not None and unparen(target).type == "identifier" and \
                parsed.text_of(unparen(target)) == var:
            return None
    start = poly_of(start_node, parsed, scope)
    bound = poly_of(right, parsed, scope)
    trips = None
    if start is not None and bound is not None and start.is_const() and bound.is_const():
        trips = _trips(start.constant, op, bound.constant, step)
        if trips is None:
            return None
    return Loop(loop, parsed.line_of(loop), trips)


def _loops(ctx: PassContext) -> tuple[Optional[str], list[Loop], Parsed]:
    parsed = parse(ctx.text)
    definition = find_definition(parsed, ctx.kernel)
    if definition is None:
        return (f"the definition of {ctx.kernel.name} is not one piece in the file's syntax "
                f"tree (parse errors around it)"), [], parsed
    body = definition.child_by_field_name("body")
    if first_error(body) is not None:
        return (f"tree-sitter cannot read the body of {ctx.kernel.name} at line "
                f"{parsed.line_of(first_error(body))}"), [], parsed
    fors = [n for n in walk(body) if n.type == "for_statement"]
    if not fors:
        return f"kernel {ctx.kernel.name} has no for loop", [], parsed
    scope = Scope(macros=file_macros(parsed), locals=_constant_locals(body, parsed))
    found, skipped = [], []
    for f in fors:
        line = parsed.line_of(f)
        if _pragma_before(f, parsed):
            skipped.append(f"line {line} already has an unroll pragma")
            continue
        if not _starts_line(f, parsed):
            skipped.append(f"line {line} does not start its line")
            continue
        loop = _counted(f, parsed, scope)
        barrier = any(n.type == "identifier" and parsed.text_of(n).startswith("__syncthreads")
                      for n in walk(f))
        if barrier:
            skipped.append(f"line {line} holds a barrier (its trips are the block's phases)")
        elif loop is None:
            skipped.append(f"line {line} is not a counted loop with a constant step")
        elif loop.trips is not None and loop.trips > MAX_FULL_TRIPS:
            skipped.append(f"line {line} runs {loop.trips} times (more than {MAX_FULL_TRIPS})")
        elif loop.trips == 0:
            skipped.append(f"line {line} never runs")
        else:
            found.append(loop)
    if not found:
        return "no loop to unroll: " + "; ".join(skipped), [], parsed
    return None, found, parsed


def check(ctx: PassContext) -> Optional[str]:
    """None when the kernel has a counted loop without an unroll pragma, else the reason."""
    return _loops(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Fixed-trip loops only (when there are any) first, then each factor for the run-time
    loops (when there are any)."""
    reason, loops, _ = _loops(ctx)
    if reason:
        return ()
    out: list[dict] = []
    if any(l.trips is not None for l in loops):
        out.append({"factor": None})
    if any(l.trips is None for l in loops):
        out.extend({"factor": f} for f in FACTORS)
    return tuple(out)


def apply(ctx: PassContext, factor: Optional[int] = None) -> PassResult:
    """Inserts the pragmas; the launch configuration is unchanged.

    Raises:
        PassNotApplicable: no loop qualifies, or ``factor`` is None and every counted loop
            has a run-time trip count.
        ValueError: ``factor`` is not None or one of ``FACTORS``.
    """
    if factor is not None and factor not in FACTORS:
        raise ValueError(f"factor must be None or one of {FACTORS}, found {factor!r}")
    reason, loops, parsed = _loops(ctx)
    if reason:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    chosen = [l for l in loops if l.trips is not None or factor is not None]
    if not chosen:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: every counted loop has a "
                                f"run-time trip count (lines {', '.join(str(l.line) for l in loops)}); "
                                f"give a factor")
    edits = []
    full, partial = [], []
    for l in chosen:
        indent = line_indent(parsed.data, l.node.start_byte)
        pragma = "#pragma unroll" if l.trips is not None else f"#pragma unroll {factor}"
        edits.append(Edit(l.node.start_byte, l.node.start_byte, f"{pragma}\n{indent}"))
        (full if l.trips is not None else partial).append(l)
    parts = []
    if full:
        where = ", ".join(f"line {l.line} ({l.trips} iterations)" for l in full)
        parts.append(f"fixed-trip loop{'s' if len(full) > 1 else ''} at {where} fully unrolled: "
                     f"no counter, compare or branch, constant subscripts (small local arrays "
                     f"stay in registers), and the iterations' loads in flight together")
    if partial:
        where = ", ".join(f"line {l.line}" for l in partial)
        parts.append(f"run-time loop{'s' if len(partial) > 1 else ''} at {where} unrolled "
                     f"{factor}x: {factor} iterations' independent loads issued back to back "
                     f"per trip and 1/{factor} of the loop's compares and branches")
    tag = "unroll" if factor is None else f"unroll={factor}"
    return PassResult(source=apply_edits(parsed.data, edits), launch=ctx.launch, tags=(tag,),
                      explanation="; ".join(parts))
