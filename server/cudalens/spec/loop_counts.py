"""How many times a bump (``p += k``, ``idx += k``) has run when a later statement runs, for
bumps inside ``for`` loops: a loop-carried pointer or index advance.

A ``for`` loop whose header reads ``for (T v = A; v < B; v += S)`` (also ``<=``, ``>``, ``>=``,
``++``/``--``, ``-=``; ``B`` on either side of the comparison) and whose body never assigns
``v`` runs ``ceil((B - A) / S)`` times (``<=``: ``B - A + 1``; a falling loop ``v >= B``
from ``A`` by ``S``: ``ceil((A - B + 1) / S)``). In iteration ``t`` (from 0), ``v - A`` (or
``A - v``) is ``t * S``; that distance is a symbol of its own, ``v@LINE`` (the loop's 1-based
line), bounded by ``B - A`` (exclusive), stepping by ``S``: spec inference bounds it like a loop
variable, and ``t * S * q`` is written ``v@LINE * q``.

A bump that sits in the body of loops ``L1 .. Lm`` (only ``for`` loops and blocks between it
and the kernel body, so it runs once per iteration of its innermost loop) has run, when a
statement ``U`` runs, in iteration ``t_i`` of each loop ``C_i`` that also holds ``U``
(outermost first):

    sum_i t_i * (trip of each C_k inside C_i) * P  +  (P if the bump ends before U else 0)

where ``P`` is the product of the trip counts of the loops that hold the bump but not ``U``
(run to the end before ``U``, or after it within the same iteration). Early exits (``break``,
``return``) only make the count smaller, so lengths built from it stay long enough.
Sources: C++ [stmt.for] (the header's order of evaluation); the shapes are FDTD3d's z march
and a shared-memory tiled SGEMM's ``A += TILE`` per tile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from cudalens.kernel_model.syntax import Node, declared_name, operator, strip, walk
from cudalens.spec.poly import Poly

_LOOPS = ("for_statement", "while_statement", "do_statement")


@dataclass(frozen=True)
class LoopCount:
    """One analysable ``for`` loop: ``distance`` is the symbol of ``|v - A|`` (``v@LINE``),
    below ``limit`` (``B - A``, exclusive, a polynomial); it grows by ``step`` per iteration;
    ``trips`` is the number of iterations as a polynomial, None when it is not one (a step
    that does not divide ``B - A``)."""

    var: str
    distance: str
    limit: Poly
    step: Poly
    trips: Optional[Poly]


@dataclass(frozen=True)
class BumpCount:
    """Times a bump has run before a use: ``constant`` full runs plus, for each loop around
    both, ``t_i * per`` (``(loop, per)`` in ``iterations``)."""

    constant: Poly
    iterations: tuple[tuple[LoopCount, Poly], ...]


def loop_count(loop: Node, text: Callable[[Node], str],
               poly: Callable[[Node], Optional[Poly]], parsed) -> Optional[LoopCount]:
    """The :class:`LoopCount` of ``for`` statement ``loop``, or None when its header is not
    of the form in the module doc or its body assigns the variable."""
    init = loop.child_by_field_name("initializer")
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    if init is None or cond is None or update is None:
        return None
    var, start = _init(init, text, parsed)
    if var is None or start is None:
        return None
    a = poly(start)
    step = _step(strip(update), var, text, poly)
    if a is None or step is None:
        return None
    rising, s = step
    cond = strip(cond)
    if cond.type != "binary_expression":
        return None
    op = operator(cond)
    left, right = strip(cond.child_by_field_name("left")), strip(cond.child_by_field_name("right"))
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
    if right.type == "identifier" and text(right) == var and not (
            left.type == "identifier" and text(left) == var):
        left, right, op = right, left, flip.get(op, "")
    if left.type != "identifier" or text(left) != var:
        return None
    b = poly(right)
    if b is None:
        return None
    if rising and op in ("<", "<="):
        limit = b - a + (Poly.const(1) if op == "<=" else Poly())
    elif not rising and op in (">", ">="):
        limit = a - b + (Poly.const(1) if op == ">=" else Poly())
    else:
        return None
    body = loop.child_by_field_name("body")
    if body is not None and _assigns(body, var, text, parsed):
        return None
    if s.is_const() and s.constant == 1:
        trips: Optional[Poly] = limit
    elif limit.is_const() and s.is_const() and s.constant > 0:
        trips = Poly.const(max(0, -(-limit.constant // s.constant)))
    else:
        trips = divide(limit, s)
    line = loop.start_point[0] + 1
    return LoopCount(var=var, distance=f"{var}@{line}", limit=limit, step=s, trips=trips)


def bump_count(bump: Node, use: Node, body: Node,
               count_of: Callable[[Node], Optional[LoopCount]]) -> Optional[BumpCount]:
    """How many times the bump ``bump`` (an assignment or ``++``/``--`` expression) has run
    when ``use`` runs (module doc), or None when it cannot be told: the bump is not a
    statement of blocks and ``for`` bodies up to ``body``, a loop around it is not
    analysable, or a loop that holds the bump but not ``use`` has no polynomial trip count."""
    if bump.start_byte <= use.start_byte < bump.end_byte:
        return None
    stmt = bump.parent
    if stmt is None or stmt.type != "expression_statement":
        return None
    loops: list[Node] = []  # innermost first
    node = stmt
    while node.id != body.id:
        parent = node.parent
        if parent is None:
            return None
        if parent.type == "for_statement":
            if node != parent.child_by_field_name("body"):
                return None
            loops.append(parent)
        elif parent.type != "compound_statement":
            return None  # a branch, a while or do loop, a switch: runs an unknown number of times
        node = parent
    # a while or do loop around both would carry the bump back an unknown number of times
    anc = use.parent
    while anc is not None and anc.id != body.id:
        if anc.type in ("while_statement", "do_statement") and \
                anc.start_byte <= bump.start_byte < anc.end_byte:
            return None
        anc = anc.parent
    common = [lp for lp in loops if lp.start_byte <= use.start_byte < lp.end_byte]
    exclusive = [lp for lp in loops if lp not in common]
    per_run = Poly.const(1)
    for lp in exclusive:
        c = count_of(lp)
        if c is None or c.trips is None:
            return None
        per_run = per_run * c.trips
    counts = []
    for lp in common:  # innermost first
        c = count_of(lp)
        if c is None:
            return None
        counts.append(c)
    iterations = []
    inner = per_run
    for c in counts:  # innermost first: t_i times the runs of one whole iteration of C_i
        iterations.append((c, inner))
        if c.trips is None:
            inner = None
            break
        inner = inner * c.trips
    if inner is None and len(iterations) < len(counts):
        return None
    before = per_run if bump.end_byte <= use.start_byte else Poly()
    return BumpCount(constant=before, iterations=tuple(iterations[::-1]))


def divide(p: Poly, d: Poly) -> Optional[Poly]:
    """``p / d`` when ``d`` is one monomial with a positive coefficient dividing every term of
    ``p`` exactly, else None."""
    if len(d.terms) != 1:
        return None
    (dm, dc), = d.terms
    if dc <= 0:
        return None
    out = Poly()
    for m, c in p.terms:
        rest = list(m)
        for s in dm:
            if s not in rest:
                return None
            rest.remove(s)
        if c % dc:
            return None
        term = Poly.const(c // dc)
        for s in rest:
            term = term * Poly.sym(s)
        out = out + term
    return out


def loops_around(node: Node, body: Node) -> list[Node]:
    """The loops between ``node`` and ``body``, innermost first."""
    out = []
    anc = node.parent
    while anc is not None and anc.id != body.id:
        if anc.type in _LOOPS:
            out.append(anc)
        anc = anc.parent
    return out


def _init(init: Node, text: Callable[[Node], str], parsed) -> tuple[Optional[str], Optional[Node]]:
    if init.type == "declaration":
        ds = init.children_by_field_name("declarator")
        if len(ds) == 1 and ds[0].type == "init_declarator":
            target = ds[0].child_by_field_name("declarator")
            name = declared_name(target, parsed) if target is not None else None
            return name, ds[0].child_by_field_name("value")
        return None, None
    init = strip(init)
    if init.type == "assignment_expression" and operator(init) == "=":
        left = strip(init.child_by_field_name("left"))
        if left.type == "identifier":
            return text(left), init.child_by_field_name("right")
    return None, None


def _step(update: Node, var: str, text: Callable[[Node], str],
          poly: Callable[[Node], Optional[Poly]]) -> Optional[tuple[bool, Poly]]:
    """(rising, step) of a loop's update ``v++``, ``--v``, ``v += S``, ``v -= S``, ``v = v + S``
    with ``S`` a positive constant or a product of names (template or file constants)."""
    if update.type == "update_expression":
        arg = strip(update.child_by_field_name("argument"))
        if arg.type != "identifier" or text(arg) != var:
            return None
        return ("++" in text(update)), Poly.const(1)
    if update.type != "assignment_expression":
        return None
    left = strip(update.child_by_field_name("left"))
    if left.type != "identifier" or text(left) != var:
        return None
    op, right = operator(update), update.child_by_field_name("right")
    if op == "=":
        value = strip(right)
        if value.type != "binary_expression" or operator(value) not in ("+", "-"):
            return None
        vl = strip(value.child_by_field_name("left"))
        if vl.type != "identifier" or text(vl) != var:
            return None
        op, right = operator(value) + "=", value.child_by_field_name("right")
    if op not in ("+=", "-="):
        return None
    s = poly(right)
    if s is None or len(s.terms) != 1 or s.terms[0][1] <= 0:
        return None
    if any(sym.split(".")[0] in ("threadIdx", "blockIdx", "blockDim", "gridDim") or "@" in sym
           for sym in s.symbols):
        return None
    return op == "+=", s


def _assigns(body: Node, var: str, text: Callable[[Node], str], parsed) -> bool:
    for n in walk(body):
        if n.type == "assignment_expression":
            left = strip(n.child_by_field_name("left"))
            if left.type == "identifier" and text(left) == var:
                return True
        elif n.type == "update_expression":
            arg = strip(n.child_by_field_name("argument"))
            if arg.type == "identifier" and text(arg) == var:
                return True
        elif n.type == "declaration" and any(
                declared_name(d.child_by_field_name("declarator"), parsed) == var
                for d in n.children_by_field_name("declarator")
                if d.type == "init_declarator"):
            return True  # shadowed: the body's v is another variable
    return False
