"""Block reductions written with warp shuffles, read as the combination of the block's values.

Public block-per-row kernels (a block a row, the threads striding over its columns) seldom
combine their partial values in a shared-memory tree; they shuffle within each warp::

    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);

(``__shfl_down_sync``, ``o /= 2``, ``o = o >> 1``, a ``WARP_SIZE`` macro, a maximum
``s = fmaxf(s, __shfl_xor_sync(...))``), inline or in a ``__device__`` helper whose body is
that loop and ``return v;`` (``s = warpReduceSum(s);``, ``float t = warp_sum<float>(s);``).

``reduction`` reads one statement as such a *warp reduction*. The loop's offsets are worked
out by running its header (at most 64 trips): they must be 1, 2, 4, 8 and 16, once each, so
the 32 lanes of a full warp (the mask ``0xffffffff``, width 32) meet. With
``__shfl_xor_sync`` the offsets form a butterfly and every lane ends with the combination
of the 32 values, in any order of the offsets; with ``__shfl_down_sync`` (offsets falling
from 16) lane 0 does (NVIDIA, "Using CUDA Warp-Level Primitives", 2018; CUDA C++
Programming Guide, "Warp Shuffle Functions").

``two_level`` reads the block reduction built of two of them::

    W(a);                                   // a warp reduction of a
    if (lane == 0) sh[warp] = a;            // lane = tid % 32 (& 31), warp = tid / 32 (>> 5)
    __syncthreads();
    b = (lane < blockDim.x / 32) ? sh[lane] : 0;   // or tid < ..., or T b = ...
    W(b);

For a block of ``B`` threads, ``B`` a multiple of 32 and at most 1024 (so ``B / 32 <= 32``
partials fit ``sh``'s 32 or more slots), the second reduction combines the ``B / 32`` warp
results with neutral values (0 for a sum; ``-INFINITY`` or ``-FLT_MAX`` for a maximum,
their negations for a minimum): the block's combination. With ``lane < ...`` every warp
does so (every lane holds it after a xor reduction, lane 0 of each warp after a down one);
with ``tid < ...`` only warp 0 holds it. The number of partials is checked by evaluating the
bound at ``B`` = 32, 64, 96, 256 and 1024: it must be ``B / 32`` at each.

A single warp reduction that is not part of a two-level one combines the block only when
the block is one warp (32 threads, ggml's ``k_sum_rows_f32``): the kernel then fixes its
block, which the caller records.

The summation order of a shuffle is not the sequential one; a rewrite that reads the
reduction as "the combination of the row's values" (``warp_per_row._lift``) computes the
same value up to rounding, the standard the shared-memory trees are held to (their order is
a tree too); verification compares with tolerances.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

import tree_sitter

from cudalens.kernel_model.loops import for_header
from cudalens.kernel_model.macros import file_macros, int_value
from cudalens.kernel_model.syntax import Parsed, int_literal, named_children, unparen, walk
from cudalens.optimizer.affine import builtin_field, strip_casts
from cudalens.optimizer.reasons import LocatedError

SHUFFLES = ("__shfl_xor_sync", "__shfl_down_sync")
WARP_PRIMITIVES = re.compile(r"__shfl\w*|__syncwarp|__ballot\w*|__any_sync|__all_sync|"
                             r"__activemask|__reduce_\w+_sync|__match_\w+_sync")
_MAX_FUNCS = ("fmaxf", "fmax", "max")
_MIN_FUNCS = ("fminf", "fmin", "min")
_FULL = 0xFFFFFFFF


@dataclass(frozen=True)
class WarpReduce:
    """One warp reduction statement ``node``: the value ``acc`` reduced into ``result`` (the
    same name but for ``T r = H(acc);``), by ``combine`` (``"+"``, ``"fmaxf"``, ``"max"``...);
    ``everyone``: every lane holds the result (xor), else lane 0 (down); ``call``: the helper
    call (None for an inline loop); ``declares``: the statement declares ``result``."""

    node: tree_sitter.Node
    acc: str
    result: str
    combine: str
    everyone: bool
    call: Optional[tree_sitter.Node]
    declares: bool

    @property
    def line(self) -> int:
        return self.node.start_point[0] + 1


@dataclass(frozen=True)
class TwoLevel:
    """A two-level block reduction (module doc): ``first`` and ``second`` its warp
    reductions, ``store`` the ``if (lane == 0) sh[warp] = a;``, ``barrier``, ``load`` the
    statement reading ``sh[lane]`` into ``second.acc``, ``array`` the shared array;
    ``everyone``: every thread holds the result, else thread 0 does (at least)."""

    first: WarpReduce
    store: tree_sitter.Node
    barrier: tree_sitter.Node
    load: tree_sitter.Node
    load_declares: bool
    second: WarpReduce
    array: str
    everyone: bool

    @property
    def nodes(self) -> tuple[tree_sitter.Node, ...]:
        return (self.first.node, self.store, self.barrier, self.load, self.second.node)


class NotWarpReduction(LocatedError):
    """A statement that uses warp primitives but is none of the module doc's forms; ``line``
    the statement's."""


def constants(parsed: Parsed) -> dict[str, int]:
    """``warpSize`` (32), the file's integer macros and its top-level integer constants."""
    found = {"warpSize": 32}
    for name, macro in file_macros(parsed).items():
        v = int_value(macro)
        if v is not None:
            found[name] = v
    for n in walk(parsed.tree.root_node):
        if n.type != "declaration" or not {parsed.text_of(c) for c in n.children
                                            if c.type == "type_qualifier"} & {"const",
                                                                             "constexpr"}:
            continue
        if n.parent is None or n.parent.type != "translation_unit":
            continue
        for d in n.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                v = int_literal(parsed.text_of(d.child_by_field_name("value")))
                if v is not None:
                    found[parsed.text_of(d.child_by_field_name("declarator"))] = v
    return found


def value(node: Optional[tree_sitter.Node], parsed: Parsed, env: dict[str, int]) -> Optional[int]:
    """The integer ``node`` evaluates to, its names looked up in ``env`` (``blockDim.x``,
    ``warpSize``, integer macros and constants), else None."""
    if node is None:
        return None
    node = strip_casts(unparen(node), parsed)
    t = node.type
    if t == "number_literal":
        return int_literal(parsed.text_of(node))
    if t == "identifier":
        return env.get(parsed.text_of(node))
    if t == "field_expression":
        return env.get(builtin_field(node, parsed) or "")
    if t == "unary_expression":
        v = value(node.child_by_field_name("argument"), parsed, env)
        op = node.child_by_field_name("operator").type
        if v is None:
            return None
        return -v if op == "-" else ~v if op == "~" else v if op == "+" else None
    if t == "binary_expression":
        a = value(node.child_by_field_name("left"), parsed, env)
        b = value(node.child_by_field_name("right"), parsed, env)
        op = node.child_by_field_name("operator").type
        if a is None or b is None:
            return None
        try:
            return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
                    "/": lambda: a // b, "%": lambda: a % b, ">>": lambda: a >> b,
                    "<<": lambda: a << b, "&": lambda: a & b, "|": lambda: a | b}[op]()
        except (KeyError, ZeroDivisionError, ValueError):
            return None
    return None


def _offsets(loop: tree_sitter.Node, parsed: Parsed, env: dict[str, int]) -> Optional[list[int]]:
    """The values the loop variable takes, running the header (None when it cannot be run or
    takes more than 64 trips)."""
    head = for_header(loop, parsed)
    if head is None or head.cond is None or head.update is None:
        return None
    v = value(head.start, parsed, env)
    got = []
    upd = unparen(head.update)
    while v is not None and len(got) <= 64:
        cond = unparen(head.cond)
        if cond.type != "binary_expression":
            return None
        op = cond.child_by_field_name("operator").type
        a = value(cond.child_by_field_name("left"), parsed, {**env, head.var: v})
        b = value(cond.child_by_field_name("right"), parsed, {**env, head.var: v})
        if a is None or b is None or op not in ("<", "<=", ">", ">=", "!="):
            return None
        ok = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b}[op]
        if not ok:
            return got
        got.append(v)
        if upd.type == "assignment_expression" and \
                parsed.text_of(unparen(upd.child_by_field_name("left"))) == head.var:
            op = upd.child_by_field_name("operator").type
            r = value(upd.child_by_field_name("right"), parsed, {**env, head.var: v})
            if r is None:
                return None
            v = {"=": r, ">>=": v >> r, "/=": v // r if r else None, "<<=": v << r,
                 "*=": v * r}.get(op)
        else:
            return None
    return None


def _shuffle_call(node: tree_sitter.Node, parsed: Parsed) -> Optional[str]:
    node = unparen(node)
    if node.type != "call_expression":
        return None
    name = parsed.text_of(node.child_by_field_name("function"))
    return name if name in SHUFFLES else None


def _step(stmt: tree_sitter.Node, parsed: Parsed, var: str, env: dict[str, int]
          ) -> Optional[tuple[str, str, str]]:
    """(acc, combine, shuffle) of the loop body ``acc += SHFL(full, acc, var);`` (or ``acc =
    acc + SHFL(...)``, ``acc = fmaxf(acc, SHFL(...))``...), else None."""
    while stmt.type == "compound_statement" and len(named_children(stmt)) == 1:
        stmt = named_children(stmt)[0]
    if stmt.type != "expression_statement" or len(named_children(stmt)) != 1:
        return None
    e = unparen(named_children(stmt)[0])
    if e.type != "assignment_expression":
        return None
    left = unparen(e.child_by_field_name("left"))
    if left.type != "identifier":
        return None
    acc = parsed.text_of(left)
    op = e.child_by_field_name("operator").type
    right = unparen(e.child_by_field_name("right"))
    if op == "+=":
        combine, shuffled = "+", right
    elif op == "=" and right.type == "binary_expression" and \
            right.child_by_field_name("operator").type == "+":
        a = unparen(right.child_by_field_name("left"))
        b = unparen(right.child_by_field_name("right"))
        combine, shuffled = "+", (b if parsed.text_of(a) == acc else
                                  a if parsed.text_of(b) == acc else None)
    elif op == "=" and right.type == "call_expression":
        fn = parsed.text_of(right.child_by_field_name("function"))
        args = named_children(right.child_by_field_name("arguments"))
        if fn not in _MAX_FUNCS + _MIN_FUNCS or len(args) != 2:
            return None
        a, b = unparen(args[0]), unparen(args[1])
        combine, shuffled = fn, (b if parsed.text_of(a) == acc else
                                 a if parsed.text_of(b) == acc else None)
    else:
        return None
    if shuffled is None:
        return None
    kind = _shuffle_call(shuffled, parsed)
    if kind is None:
        return None
    args = named_children(unparen(shuffled).child_by_field_name("arguments"))
    if len(args) not in (3, 4) or parsed.text_of(unparen(args[1])) != acc or \
            parsed.text_of(unparen(args[2])) != var:
        return None
    mask = value(args[0], parsed, env)
    if mask is None or mask & _FULL != _FULL:
        return None
    if len(args) == 4 and value(args[3], parsed, env) != 32:
        return None
    return acc, combine, kind


def shuffle_loop(loop: tree_sitter.Node, parsed: Parsed, env: Optional[dict[str, int]] = None
                 ) -> tuple[str, str, bool]:
    """(acc, combine, everyone) of the warp reduction loop ``loop`` (module doc).

    Raises:
        NotWarpReduction: it is not one (the message says why).
    """
    env = constants(parsed) if env is None else env
    line = loop.start_point[0] + 1
    head = for_header(loop, parsed)
    if head is None or head.body is None:
        raise NotWarpReduction(f"the loop at line {line} is not a counted loop", line)
    step = _step(head.body, parsed, head.var, env)
    if step is None:
        raise NotWarpReduction(
            f"the loop at line {line} is not one shuffle step 'acc += __shfl_xor_sync("
            f"0xffffffff, acc, offset)' (or __shfl_down_sync, fmaxf(acc, ...)) of a full warp",
            line)
    acc, combine, kind = step
    offsets = _offsets(loop, parsed, env)
    if offsets is None or sorted(offsets) != [1, 2, 4, 8, 16]:
        shown = "cannot be worked out" if offsets is None else \
            f"are {', '.join(map(str, offsets[:8]))}"
        raise NotWarpReduction(f"the shuffle offsets of the loop at line {line} {shown}, not "
                               f"16, 8, 4, 2, 1: the loop does not combine the 32 lanes of a "
                               f"warp", line)
    if kind == "__shfl_down_sync" and offsets != [16, 8, 4, 2, 1]:
        raise NotWarpReduction(f"the __shfl_down_sync offsets of the loop at line {line} do "
                               f"not fall from 16 to 1", line)
    return acc, combine, kind == "__shfl_xor_sync"


def helpers(parsed: Parsed) -> dict[str, tuple[str, bool]]:
    """The file's ``__device__`` functions of one parameter whose body is a warp reduction
    loop over it and ``return`` of it: name -> (combine, everyone)."""
    env = constants(parsed)
    found: dict[str, tuple[str, bool]] = {}
    for n in walk(parsed.tree.root_node):
        if n.type != "function_definition" or "__device__" not in \
                parsed.text_of(n)[:n.child_by_field_name("body").start_byte - n.start_byte]:
            continue
        decl = n.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        if decl is None:
            continue
        params = [q for q in named_children(decl.child_by_field_name("parameters"))
                  if q.type == "parameter_declaration"]
        if len(params) != 1:
            continue
        pname = params[0].child_by_field_name("declarator")
        if pname is None or pname.type != "identifier":
            continue
        stmts = [s for s in named_children(n.child_by_field_name("body"))
                 if s.type not in ("comment", "preproc_call")]
        if len(stmts) != 2 or stmts[0].type != "for_statement" or \
                stmts[1].type != "return_statement" or \
                "".join(parsed.text_of(stmts[1]).split()) != f"return{parsed.text_of(pname)};":
            continue
        try:
            acc, combine, everyone = shuffle_loop(stmts[0], parsed, env)
        except NotWarpReduction:
            continue
        if acc == parsed.text_of(pname):
            found[parsed.text_of(decl.child_by_field_name("declarator"))] = (combine, everyone)
    return found


def _helper_call(node: Optional[tree_sitter.Node], parsed: Parsed, known) -> Optional[
        tuple[tree_sitter.Node, str, str, bool]]:
    """(call, argument, combine, everyone) of ``H(acc)`` / ``H<T>(acc)`` for a helper."""
    if node is None:
        return None
    node = unparen(node)
    if node.type != "call_expression":
        return None
    fn = node.child_by_field_name("function")
    if fn.type == "template_function":
        fn = fn.child_by_field_name("name")
    name = parsed.text_of(fn)
    args = named_children(node.child_by_field_name("arguments"))
    if name not in known or len(args) != 1 or unparen(args[0]).type != "identifier":
        return None
    return (node, parsed.text_of(unparen(args[0])), *known[name])


def reduction(stmt: tree_sitter.Node, parsed: Parsed, known) -> Optional[WarpReduce]:
    """``stmt`` read as a warp reduction (an inline loop, ``acc = H(acc);`` or ``T r =
    H(acc);`` with ``H`` in ``known``, ``helpers``' result), else None.

    Raises:
        NotWarpReduction: a loop with a shuffle that is not a warp reduction.
    """
    if stmt.type == "for_statement":
        if not any(_shuffle_call(n, parsed) for n in walk(stmt)):
            return None
        acc, combine, everyone = shuffle_loop(stmt, parsed)
        return WarpReduce(stmt, acc, acc, combine, everyone, None, False)
    if stmt.type == "expression_statement" and len(named_children(stmt)) == 1:
        e = unparen(named_children(stmt)[0])
        if e.type == "assignment_expression" and e.child_by_field_name("operator").type == "=" \
                and unparen(e.child_by_field_name("left")).type == "identifier":
            got = _helper_call(e.child_by_field_name("right"), parsed, known)
            if got is not None:
                return WarpReduce(stmt, got[1], parsed.text_of(unparen(e.child_by_field_name(
                    "left"))), got[2], got[3], got[0], False)
    if stmt.type == "declaration":
        ds = stmt.children_by_field_name("declarator")
        if len(ds) == 1 and ds[0].type == "init_declarator":
            got = _helper_call(ds[0].child_by_field_name("value"), parsed, known)
            if got is not None:
                return WarpReduce(stmt, got[1], parsed.text_of(ds[0].child_by_field_name(
                    "declarator")), got[2], got[3], got[0], True)
    return None


def lane_warp(stmt: tree_sitter.Node, parsed: Parsed, tids, env: dict[str, int]
              ) -> Optional[tuple[str, str]]:
    """(name, "lane" or "warp") of ``int lane = tid % 32;`` (``& 31``) or ``int warp = tid /
    32;`` (``>> 5``), ``tid`` ``threadIdx.x`` or a name in ``tids``; else None."""
    if stmt.type != "declaration":
        return None
    ds = stmt.children_by_field_name("declarator")
    if len(ds) != 1 or ds[0].type != "init_declarator":
        return None
    what = lane_or_warp(ds[0].child_by_field_name("value"), parsed, tids, env)
    return (parsed.text_of(ds[0].child_by_field_name("declarator")), what) if what else None


def lane_or_warp(node: Optional[tree_sitter.Node], parsed: Parsed, tids, env) -> Optional[str]:
    """"lane" for ``tid % 32`` / ``tid & 31``, "warp" for ``tid / 32`` / ``tid >> 5``."""
    if node is None:
        return None
    e = strip_casts(unparen(node), parsed)
    if e.type != "binary_expression":
        return None
    left = strip_casts(unparen(e.child_by_field_name("left")), parsed)
    if not (left.type == "identifier" and parsed.text_of(left) in tids or
            builtin_field(left, parsed) == "threadIdx.x"):
        return None
    op, r = e.child_by_field_name("operator").type, value(e.child_by_field_name("right"),
                                                           parsed, env)
    if (op, r) in (("%", 32), ("&", 31)):
        return "lane"
    if (op, r) in (("/", 32), (">>", 5)):
        return "warp"
    return None


_NEUTRAL = {"+": {"0", "0.0", "0.0f", "0.f", "0.0F", "0f"},
            "max": {"-INFINITY", "-FLT_MAX", "-HUGE_VALF", "-CUDART_INF_F"},
            "min": {"INFINITY", "FLT_MAX", "HUGE_VALF", "CUDART_INF_F"}}


def _family(combine: str) -> str:
    return "+" if combine == "+" else "max" if combine in _MAX_FUNCS else "min"


def two_level(stmts: list[tree_sitter.Node], i: int, first: WarpReduce, parsed: Parsed,
              names: Callable[[tree_sitter.Node, str], bool], known, tids, dims,
              arrays: dict[str, int]) -> TwoLevel:
    """The two-level reduction (module doc) that starts with ``first`` at ``stmts[i]``;
    ``names(node, what)`` says whether ``node`` is the lane ("lane"), the warp ("warp") or
    the thread index ("tid"); ``arrays`` the static shared arrays by their slot count.

    Raises:
        NotWarpReduction: the statements after ``first`` are not the rest of one (the
            message says why, with the line).
    """
    line = first.line
    env = constants(parsed)
    rest = stmts[i + 1:i + 5]
    if len(rest) < 4:
        raise NotWarpReduction(f"the warp reduction at line {line} is not followed by the "
                               f"store, barrier, load and warp reduction of a two-level one", line)
    store, barrier, load, second = rest
    # if (lane == 0) sh[warp] = a;
    cond = unparen(store.child_by_field_name("condition")) if store.type == "if_statement" \
        else None
    cons = store.child_by_field_name("consequence") if cond is not None else None
    while cons is not None and cons.type == "compound_statement" and \
            len(named_children(cons)) == 1:
        cons = named_children(cons)[0]
    ok = cond is not None and store.child_by_field_name("alternative") is None and \
        cond.type == "binary_expression" and cond.child_by_field_name("operator").type == "==" \
        and names(cond.child_by_field_name("left"), "lane") and \
        parsed.text_of(unparen(cond.child_by_field_name("right"))) == "0" and \
        cons is not None and cons.type == "expression_statement"
    array = None
    if ok:
        e = unparen(named_children(cons)[0])
        left = unparen(e.child_by_field_name("left")) if e.type == "assignment_expression" \
            else None
        ok = left is not None and e.child_by_field_name("operator").type == "=" and \
            left.type == "subscript_expression" and \
            parsed.text_of(unparen(e.child_by_field_name("right"))) == first.result
        if ok:
            array = parsed.text_of(left.child_by_field_name("argument"))
            idx = named_children(left.child_by_field_name("indices"))
            ok = array in arrays and len(idx) == 1 and names(idx[0], "warp")
    if not ok:
        raise NotWarpReduction(
            f"'{' '.join(parsed.text_of(store).split())[:60]}' (line {store.start_point[0] + 1})"
            f" after the warp reduction at line {line} is not 'if (lane == 0) "
            f"shared[warp] = {first.result};' into a __shared__ array of 32 or more slots",
            store.start_point[0] + 1)
    if arrays[array] < 32:
        raise NotWarpReduction(f"the shared array {array} holds {arrays[array]} warp results "
                               f"(line {store.start_point[0] + 1}); a block may have 32 warps",
                               store.start_point[0] + 1)
    if "".join(parsed.text_of(barrier).split()) != "__syncthreads();":
        raise NotWarpReduction(f"no __syncthreads(); at line {barrier.start_point[0] + 1} "
                               f"between the store of the warp results and their load",
                               barrier.start_point[0] + 1)
    # b = (lane < blockDim.x / 32) ? sh[lane] : 0;
    target, init, declares = None, None, False
    if load.type == "expression_statement" and len(named_children(load)) == 1:
        e = unparen(named_children(load)[0])
        if e.type == "assignment_expression" and e.child_by_field_name("operator").type == "=" \
                and unparen(e.child_by_field_name("left")).type == "identifier":
            target, init = parsed.text_of(unparen(e.child_by_field_name("left"))), \
                e.child_by_field_name("right")
    elif load.type == "declaration":
        ds = load.children_by_field_name("declarator")
        if len(ds) == 1 and ds[0].type == "init_declarator":
            target, init, declares = parsed.text_of(ds[0].child_by_field_name("declarator")), \
                ds[0].child_by_field_name("value"), True
    everyone = None
    init = unparen(init) if init is not None else None
    if init is not None and init.type == "conditional_expression":
        c = unparen(init.child_by_field_name("condition"))
        yes, no = unparen(init.child_by_field_name("consequence")), \
            unparen(init.child_by_field_name("alternative"))
        if c.type == "binary_expression" and c.child_by_field_name("operator").type == "<" and \
                yes.type == "subscript_expression" and \
                parsed.text_of(yes.child_by_field_name("argument")) == array and \
                len(named_children(yes.child_by_field_name("indices"))) == 1 and \
                names(named_children(yes.child_by_field_name("indices"))[0], "lane") and \
                " ".join(parsed.text_of(no).split()) in _NEUTRAL[_family(first.combine)]:
            bound = c.child_by_field_name("right")
            counts = [value(bound, parsed, {**env, "blockDim.x": b, **{d: b for d in dims}})
                      for b in (32, 64, 96, 256, 1024)]
            if counts == [1, 2, 3, 8, 32]:
                who = c.child_by_field_name("left")
                everyone = True if names(who, "lane") else False if names(who, "tid") else None
    if target is None or everyone is None:
        raise NotWarpReduction(
            f"'{' '.join(parsed.text_of(load).split())[:60]}' (line {load.start_point[0] + 1}) "
            f"is not 'v = (lane < blockDim.x / 32) ? {array}[lane] : neutral;' (tid < ... "
            f"too), loading the warp results (one per 32 threads of the block) with the "
            f"combination's neutral value", load.start_point[0] + 1)
    w2 = reduction(second, parsed, known)
    if w2 is None or w2.acc != target or _family(w2.combine) != _family(first.combine):
        raise NotWarpReduction(f"the statement at line {second.start_point[0] + 1} is not a "
                               f"warp reduction of {target} combining as the one at line "
                               f"{line}", second.start_point[0] + 1)
    return TwoLevel(first, store, barrier, load, declares, w2, array,
                    everyone and w2.everyone)
