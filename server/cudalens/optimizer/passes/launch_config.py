"""Pass ``launch_config``: search the block size; the source is unchanged.

The block size sets how many warps an SM can hold (occupancy), how many blocks share its
registers and shared memory, and how full the last wave is (CUDA C++ Best Practices Guide,
"Execution Configuration Optimizations": multiples of 32 threads, 128 to 256 a good start,
and measure). Only the launch configuration changes, and the spec's grid is re-evaluated
with the new ``block.x``/``block.y``, so the pass applies only where that is all a block
change means:

- the spec's grid depends on the block (``ceil_div(n, block.x)``), so the same elements
  stay covered;
- no buffer length or scalar value depends on the block;
- the dynamic shared memory (``extern __shared__``) the kernel indexes is bounded by the
  block (``cudalens.optimizer.dynamic_shared``: every index affine in ``threadIdx.x`` and
  ``blockDim.x``, e.g. one element per thread, or a tree reduction over ``blockDim.x``), and
  the spec's bytes cover it at the spec's block; the candidates' bytes then scale with the
  block: the spec's expression where it follows the block (``shared = block.x * 4``, from a
  launch ``<<<grid, block, block * sizeof(float)>>>``), else the kernel's footprint written in
  ``block.x`` in place of the spec's fixed bytes (the explanation says so), and a block whose
  bytes would pass ``MAX_SHARED_BYTES`` is not tried; a use the pass cannot bound (an index
  of a loop variable, the array's address, a cast at an offset) is refused at its line;
- the kernel has no fixed-size ``__shared__`` array, no non-type template parameter, no
  file macro equal to the block size in its body, no block index scaled by a constant
  (``blockIdx.x * TILE_DIM``: each block covers a tile of fixed size, whatever the block) and
  no loop over a thread index stepping by a constant (each usually means the block size is
  baked into the code), and no ``__launch_bounds__`` smaller than the new block.

A reason about one statement carries its line (``cudalens.optimizer.reasons.Reason``).

Parameters: ``block``: a 1D block from ``BLOCKS_1D`` when the spec's block is 1D, a 2D block
from ``BLOCKS_2D`` when it is 2D. 3D blocks are not searched.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import tree_sitter

from cudalens.optimizer import block_rows, dynamic_shared
from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.reasons import Reason, reason_of
from cudalens.kernel_model.file_facts import fact, file_nodes
from cudalens.kernel_model.model import find_definition
from cudalens.kernel_model.syntax import Parsed, parse, unparen, walk
from cudalens.spec import expr as spec_expr
from cudalens.spec.expr import Dim3
from cudalens.spec.model import BufferDecl, ScalarDecl
from cudalens.spec.resolve import MAX_SHARED_BYTES
from cudalens.spec.tile_step import tile_step

name = "launch_config"

BLOCKS_1D: tuple[tuple[int, ...], ...] = ((256,), (512,), (128,), (1024,), (64,))
BLOCKS_2D: tuple[tuple[int, ...], ...] = ((32, 8), (16, 16), (32, 4), (32, 16), (32, 32),
                                          (64, 4))
MAX_THREADS = 1024  # threads per block on every GPU since compute capability 2.0


def _uses_block(text: str) -> bool:
    return spec_expr.BLOCK in spec_expr.names_in(text)


def _dims(block: tuple[str, ...]) -> int:
    """1, 2 or 3: the highest dimension whose expression is not the literal 1."""
    dims = 1
    for i, b in enumerate(block):
        if b.strip() != "1":
            dims = i + 1
    return dims


def baseline_block(ctx: PassContext) -> Optional[tuple[int, ...]]:
    """The spec's block evaluated with the nominal sizes, padded to 3 dims; None when it
    cannot be evaluated."""
    env: dict[str, object] = {}
    try:
        for size in ctx.spec.sizes:
            env[size.name] = spec_expr.evaluate(size.expr, env)
        dims = [spec_expr.evaluate(b, env) for b in ctx.launch.block]
    except (spec_expr.ExprError, KeyError):
        return None
    return tuple(int(d) for d in (dims + [1, 1, 1])[:3])


def _template_value_parameters(definition: tree_sitter.Node, parsed: Parsed) -> list[str]:
    holder = definition.parent
    if holder is None or holder.type != "template_declaration":
        return []
    plist = holder.child_by_field_name("parameters")
    return [parsed.text_of(p) for p in plist.named_children
            if p.type in ("parameter_declaration", "optional_parameter_declaration")]


def _fixed_shared_array(body: tree_sitter.Node, parsed: Parsed,
                        allowed=()) -> Optional[tuple[str, int]]:
    """The first ``__shared__`` array declaration with a fixed size, as ('text (line N)', N);
    arrays named in ``allowed`` (the 32 warp partials of a two-level reduction,
    ``block_rows.BlockRows.statics``) aside."""
    for n in walk(body):
        if n.type != "__shared__":
            continue
        decl = n.parent
        while decl is not None and decl.type not in ("declaration", "ERROR", "compound_statement"):
            decl = decl.parent
        if decl is None or decl.type != "declaration":
            return f"an unreadable __shared__ declaration (line {parsed.line_of(n)})", \
                parsed.line_of(n)
        extern = any(c.type == "storage_class_specifier" and parsed.text_of(c) == "extern"
                     for c in decl.children)
        arrays = [d for d in walk(decl) if d.type == "array_declarator"]
        names = {parsed.text_of(a.child_by_field_name("declarator")) for a in arrays}
        if arrays and not extern and not names <= set(allowed):
            return f"'{parsed.text_of(decl)}' (line {parsed.line_of(decl)})", parsed.line_of(decl)
    return None


def _int_literal(text: str) -> Optional[int]:
    try:
        return int(text.strip().strip("()").rstrip("uUlL"), 0)
    except ValueError:
        return None


def _int_constants(parsed: Parsed) -> dict[str, int]:
    """``const``/``constexpr`` integer variables of the file initialized with a literal
    (``const int TILE = 32;``, ``constexpr unsigned kRows = 8;``), by name (worked out once
    per text)."""
    return dict(fact(parsed, "launch_config.int_constants", _find_int_constants))


def _find_int_constants(parsed: Parsed) -> dict[str, int]:
    found: dict[str, int] = {}
    for n in file_nodes(parsed, "declaration"):
        quals = {parsed.text_of(c) for c in n.children if c.type == "type_qualifier"}
        if not quals & {"const", "constexpr"}:
            continue
        for d in n.children_by_field_name("declarator"):
            if d.type != "init_declarator":
                continue
            nm, value = d.child_by_field_name("declarator"), d.child_by_field_name("value")
            if nm is not None and nm.type == "identifier" and value is not None:
                number = _int_literal(parsed.text_of(value))
                if number is not None:
                    found[parsed.text_of(nm)] = number
    return found


def _product_factors(node: tree_sitter.Node) -> tuple[tree_sitter.Node, list[tree_sitter.Node]]:
    """The top of the chain of ``*`` (through parentheses) that ``node`` is a factor of, and
    the chain's factors."""
    top = node
    while True:
        up = top.parent
        while up is not None and up.type == "parenthesized_expression":
            up = up.parent
        if up is None or up.type != "binary_expression" or \
                up.child_by_field_name("operator").type != "*":
            break
        top = up
    factors: list[tree_sitter.Node] = []

    def flatten(n: tree_sitter.Node) -> None:
        n = unparen(n)
        if n.type == "binary_expression" and n.child_by_field_name("operator").type == "*":
            flatten(n.child_by_field_name("left"))
            flatten(n.child_by_field_name("right"))
        else:
            factors.append(n)

    flatten(top)
    return top, factors


def _tile_scaled_block_index(body: tree_sitter.Node, parsed: Parsed,
                             constants: dict[str, int]) -> Optional[Reason]:
    """The first ``blockIdx.x * C`` (or ``.y``) of ``body`` whose product has no
    ``blockDim`` of that axis and a constant factor ``C`` (a literal, or a name of
    ``constants``): the kernel tiles its grid by C, not by the block."""
    for n in walk(body):
        if n.type != "field_expression":
            continue
        text = "".join(parsed.text_of(n).split())
        if text not in ("blockIdx.x", "blockIdx.y"):
            continue
        axis = text[-1]
        top, factors = _product_factors(n)
        if top is n:
            continue
        words = ["".join(parsed.text_of(f).split()) for f in factors]
        if f"blockDim.{axis}" in words:
            continue
        for f, word in zip(factors, words):
            value = _int_literal(word) if f.type == "number_literal" else constants.get(word)
            if value is None or value <= 1:
                continue
            shown = word if f.type == "number_literal" else f"{word} (= {value})"
            line = parsed.line_of(top)
            return Reason(f"'{' '.join(parsed.text_of(top).split())}' (line {line}) tiles "
                          f"the grid by {shown}, not by blockDim.{axis}: each block covers a "
                          f"fixed {value}-wide tile along {axis}, so another block would "
                          f"leave elements uncovered or cover them twice", line)
    return None


def _int_macros(parsed: Parsed) -> dict[str, int]:
    """Object-like macros of the file whose body is an integer literal, by name (worked out
    once per text)."""
    return dict(fact(parsed, "launch_config.int_macros", _find_int_macros))


def _find_int_macros(parsed: Parsed) -> dict[str, int]:
    found: dict[str, int] = {}
    for n in file_nodes(parsed, "preproc_def"):
        nm, value = n.child_by_field_name("name"), n.child_by_field_name("value")
        if nm is None or value is None:
            continue
        try:
            found[parsed.text_of(nm)] = int(parsed.text_of(value).strip().strip("()")
                                            .rstrip("uUlL"), 0)
        except ValueError:
            pass
    return found


def _max_threads(ctx: PassContext, parsed: Parsed) -> tuple[Optional[int], Optional[str]]:
    """(max threads allowed by __launch_bounds__ or None, reason it cannot be read)."""
    if not ctx.kernel.launch_bounds:
        return None, None
    text = ctx.kernel.launch_bounds[0].strip()
    macros = _int_macros(parsed)
    try:
        return int(text.rstrip("uUlL"), 0), None
    except ValueError:
        if text in macros:
            return macros[text], None
    return None, (f"__launch_bounds__({text}) is not a number the pass can read, so it cannot "
                  f"tell which block sizes the kernel allows")


def _sizes_env(ctx: PassContext, block: tuple[int, ...]) -> dict:
    env: dict[str, object] = {}
    for size in ctx.spec.sizes:
        env[size.name] = spec_expr.evaluate(size.expr, env)
    env["block"] = Dim3(*(tuple(block) + (1, 1, 1))[:3])
    return env


def _shared_bytes(ctx: PassContext, expr: str, block: tuple[int, ...]) -> Optional[int]:
    """``expr`` (a spec expression of the sizes and ``block``) in bytes at ``block``."""
    try:
        return int(spec_expr.evaluate(expr, _sizes_env(ctx, block)))
    except (spec_expr.ExprError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _block_sized_tree(ctx: PassContext, base: Optional[tuple[int, ...]]) -> bool:
    """The kernel is a shared-memory tree reduction whose limits are ``blockDim.x``
    (``cudalens.optimizer.block_reduction``): within ``s[0 .. B-1]`` for a power-of-two B."""
    from cudalens.optimizer import block_reduction

    if base is None or base[0] & (base[0] - 1):
        return False
    try:
        block_reduction.match(ctx, base[0], constant_limits=False)
    except block_reduction.NotTreeReduction:
        # several trees (a block per row: a max, then a sum), each over blockDim.x
        parsed = parse(ctx.text)
        definition = find_definition(parsed, ctx.kernel)
        return definition is not None and \
            block_rows.tree_ok(parsed, definition.child_by_field_name("body"))
    return True


def _scaled_shared(ctx: PassContext, foot: dynamic_shared.Footprint,
                   base: Optional[tuple[int, ...]]) -> tuple[str, Optional[Reason]]:
    """(the candidates' dynamic shared memory expression, the reason the pass cannot give
    one): the spec's when it follows the block, else the kernel's footprint in ``block.x``
    (``block.x * 4``) so the bytes scale with the block; a reason when the spec's bytes do
    not cover the footprint at the spec's own block."""
    launch = ctx.launch
    at_base = _shared_bytes(ctx, launch.shared, base) if base is not None else None
    need = foot.bytes_for(base[0]) if base is not None else None
    if at_base is None or need is None:
        return launch.shared, Reason(
            f"cannot evaluate the spec's dynamic shared memory ({launch.shared}) at its block "
            f"to compare it with what the kernel indexes (line {foot.line})", foot.line)
    if at_base < need:
        return launch.shared, Reason(
            f"the spec's dynamic shared memory ({launch.shared.strip()} = {at_base} bytes) is "
            f"less than the {need} bytes the kernel indexes at its block of {base[0]} threads "
            f"(line {foot.line}): fix the spec's shared first", foot.line)
    if _uses_block(launch.shared) or foot.per_thread == 0:
        return launch.shared, None
    return foot.expression(), None


def _shared_fits(ctx: PassContext, shared: str, foot: dynamic_shared.Footprint,
                 block: tuple[int, ...]) -> bool:
    """At ``block``, ``shared`` covers the footprint and stays within what a block may opt
    into (``MAX_SHARED_BYTES``)."""
    got = _shared_bytes(ctx, shared, block)
    return got is not None and foot.bytes_for(block[0]) <= got <= MAX_SHARED_BYTES


def _plan(ctx: PassContext) -> tuple[Optional[str], tuple[tuple[int, ...], ...], str]:
    """(reason the pass does not apply, blocks to try, the candidates' dynamic shared memory
    as a spec expression)."""
    spec, launch, k = ctx.spec, ctx.launch, ctx.kernel
    try:
        per_block = not any(_uses_block(g) for g in launch.grid)
        for p in spec.params:
            if isinstance(p, BufferDecl) and _uses_block(p.length):
                return f"the length of buffer {p.name} ({p.length}) depends on the block", (), ""
            if isinstance(p, ScalarDecl) and _uses_block(p.expr):
                return f"the value of scalar {p.name} ({p.expr}) depends on the block", (), ""
        for s in spec.sizes:
            if _uses_block(s.expr):
                return f"size {s.name} ({s.expr}) depends on the block", (), ""
    except spec_expr.ExprError as exc:
        return f"cannot read the spec's launch expressions: {exc}", (), ""
    dims = _dims(launch.block)
    if dims == 3:
        return f"the spec's block ({', '.join(launch.block)}) is 3D; only 1D and 2D are searched", (), ""
    parsed = parse(ctx.text)
    definition = find_definition(parsed, k)
    if definition is None:
        return (f"the definition of {k.name} is not one piece in the file's syntax tree "
                f"(parse errors around it)"), (), ""
    value_params = _template_value_parameters(definition, parsed)
    if value_params:
        return (f"non-type template parameter '{value_params[0]}' may fix the block size at "
                f"compile time"), (), ""
    body = definition.child_by_field_name("body")
    rows = None
    if per_block:
        try:
            rows = block_rows.match(parsed, body)
        except block_rows.NotBlockRows as exc:
            rows = exc
    # the partials of a two-level warp reduction: 32 slots serve any block of BLOCKS_1D
    shared = _fixed_shared_array(body, parsed,
                                 rows.statics if isinstance(rows, block_rows.BlockRows) else ())
    if shared and not isinstance(rows, block_rows.NotWarpRows):  # else the shuffles' reason
        return Reason(f"the kernel declares the fixed-size shared array {shared[0]}, which "
                      f"usually assumes the block size", shared[1]), (), ""
    if isinstance(rows, block_rows.NotBlockRows):
        return Reason(f"the spec's grid ({', '.join(launch.grid)}) does not depend on "
                      f"block.x, so a new block would change how many elements are "
                      f"covered (the body does not work alike with any block: {rows})",
                      rows.line), (), ""
    if rows is not None and rows.one_warp is not None:
        line, what = rows.one_warp
        return Reason(f"the kernel {what} (line {line}): it combines a row only in a block "
                      f"of 32 threads, so the block cannot change", line), (), ""
    base = baseline_block(ctx)
    try:
        foot = dynamic_shared.footprint(parsed, body, lambda: _block_sized_tree(ctx, base))
    except dynamic_shared.NotPerThread as exc:
        return reason_of(exc), (), ""
    constants = {**_int_constants(parsed), **_int_macros(parsed)}
    tiled = _tile_scaled_block_index(body, parsed, constants)
    if tiled is not None:
        return tiled, (), ""
    step = tile_step(parsed.text_of(body), constants, parsed.line_of(body))
    if step is not None:  # the body fixes the block (cudalens.spec.tile_step)
        return Reason(f"the loop at line {step.line} steps {step.var} by {step.step} (= "
                      f"{step.value}) from threadIdx.x, not by blockDim.x: the kernel covers "
                      f"its elements with exactly {step.value} threads, so the block cannot "
                      f"change", step.line), (), ""
    if base is not None:
        macros = _int_macros(parsed)
        dims_now = {d for d in base[:dims] if d > 1}
        for n in walk(body):
            if n.type == "identifier" and macros.get(parsed.text_of(n)) in dims_now:
                word = parsed.text_of(n)
                return Reason(f"the body uses {word} (= {macros[word]}, the spec's block size) "
                              f"at line {parsed.line_of(n)}; the kernel may assume that block "
                              f"size", parsed.line_of(n)), (), ""
    limit, reason = _max_threads(ctx, parsed)
    if reason:
        return reason, (), ""
    candidates = BLOCKS_1D if dims == 1 else BLOCKS_2D
    blocks = tuple(b for b in candidates
                   if (limit is None or _threads(b) <= limit) and _threads(b) <= MAX_THREADS
                   and (base is None or tuple(b) + (1,) * (3 - len(b)) != base))
    shared = launch.shared
    if foot is not None:
        shared, reason = _scaled_shared(ctx, foot, base)
        if reason is not None:
            return reason, (), ""
        blocks = tuple(b for b in blocks if _shared_fits(ctx, shared, foot, b))
    if not blocks:
        bounds = f" within __launch_bounds__({limit})" if limit is not None else ""
        room = " and the dynamic shared memory limit" if foot is not None else ""
        return f"no block size other than the spec's fits{bounds}{room}", (), ""
    return None, blocks, shared


def _threads(block: tuple[int, ...]) -> int:
    t = 1
    for d in block:
        t *= d
    return t


def check(ctx: PassContext) -> Optional[str]:
    """None when a block-size search applies to ``ctx``, else the reason it does not."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """One application per block size that fits, the most common sizes first; empty when the
    pass does not apply."""
    return tuple({"block": b} for b in _plan(ctx)[1])


def _used_dynamic(ctx: PassContext) -> bool:
    """The kernel indexes dynamic shared memory (``dynamic_shared.footprint``)."""
    parsed = parse(ctx.text)
    definition = find_definition(parsed, ctx.kernel)
    if definition is None:
        return False
    try:
        return dynamic_shared.footprint(parsed, definition.child_by_field_name("body"),
                                        lambda: True) is not None
    except dynamic_shared.NotPerThread:
        return False


def _block_text(block: tuple[int, ...]) -> str:
    return "x".join(str(d) for d in block)


def apply(ctx: PassContext, block: tuple[int, ...] = (256,)) -> PassResult:
    """The same source with ``block``; the spec's grid expressions are kept, so they are
    re-evaluated with the new block.

    Raises:
        PassNotApplicable: the precondition fails, or ``block`` is not one of the allowed
            blocks for this kernel (the message lists them).
    """
    reason, blocks, shared = _plan(ctx)
    if reason is not None:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    block = tuple(int(b) for b in block)
    if block not in blocks:
        allowed = ", ".join(_block_text(b) for b in blocks)
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: block {_block_text(block)} is not "
                                f"one of the blocks to try here ({allowed})")
    old = ctx.launch.block
    new_block = tuple(str(d) for d in block) + tuple(old[len(block):])
    launch = dataclasses.replace(ctx.launch, block=new_block, shared=shared)
    warps = _threads(block) // 32
    shape = f"{_block_text(block)} block" if len(block) > 1 else f"block of {block[0]} threads"
    explanation = (f"{shape} ({warps} warps) instead of {' x '.join(old)}: changes how many "
                   f"warps each SM holds (occupancy) and how full the last wave is")
    if shared.strip() != ctx.launch.shared.strip():
        explanation += (f"; the dynamic shared memory scales with the block: {shared} = "
                        f"{_shared_bytes(ctx, shared, block)} bytes instead of the spec's "
                        f"fixed {ctx.launch.shared.strip()}, the elements the kernel indexes "
                        f"per thread (set the launch's shared bytes the same way)")
    elif _uses_block(shared) and _used_dynamic(ctx):
        explanation += (f"; the dynamic shared memory follows the block: {shared.strip()} = "
                        f"{_shared_bytes(ctx, shared, block)} bytes")
    return PassResult(source=ctx.text, launch=launch, tags=(f"block={_block_text(block)}",),
                      explanation=explanation)
