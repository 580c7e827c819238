"""Pass ``launch_bounds``: ``__launch_bounds__`` matched to the candidate's block size.

``__launch_bounds__(T)`` tells ptxas that the kernel is never launched with more than ``T``
threads per block; it then budgets registers for that block size (at most ``min(255, 65536 /
T)`` per thread, so every launch of that size fits). A second argument ``M`` asks for at least
``M`` resident blocks of ``T`` threads per SM, which caps the registers at ``65536 / (M * T)``
per thread: more warps per SM (occupancy) to hide memory latency, or spills when the kernel
needs more (CUDA C++ Programming Guide, "Launch Bounds"; CUDA C++ Best Practices Guide,
"Occupancy"). The search's compile-report pruning drops the candidates that spill where the
baseline does not.

The bound is the block of the launch configuration in the context, so in the search the
pass runs after ``launch_config``. Applies when the kernel has no ``__launch_bounds__`` yet,
the block evaluates to a number, and every launch of the kernel in the file uses a block the
pass can read that is not larger (a larger one would fail to launch).

Parameters: ``min_blocks``: None (threads only), or the blocks per SM that fill an SM of
2048 threads (compute capability 8.0 and 9.0; "Technical Specifications per Compute
Capability").
"""

from __future__ import annotations

import re
from typing import Optional

from cudalens.optimizer.candidate import PassResult
from cudalens.optimizer.context import PassContext, PassNotApplicable
from cudalens.optimizer.macros import file_macros, int_value
from cudalens.optimizer.passes.launch_config import baseline_block
from cudalens.kernel_model.edits import Edit, apply_edits
from cudalens.kernel_model.model import find_definition
from cudalens.kernel_model.syntax import parse

name = "launch_bounds"
TUNING = True  # tunes the block the other passes chose; never a structure of its own

THREADS_PER_SM = 2048
_DIM3 = re.compile(r"^dim3\s*\((.*)\)$", re.S)


def _site_threads(text: str, macros: dict) -> Optional[int]:
    """Threads per block of a launch site's block argument: a literal, an integer macro, or
    ``dim3(a, b, c)`` of those; None when it cannot be read."""
    text = text.strip()
    m = _DIM3.match(text)
    parts = [p.strip() for p in m.group(1).split(",")] if m else [text]
    total = 1
    for part in parts:
        try:
            value = int(part.rstrip("uUlL"), 0)
        except ValueError:
            macro = macros.get(part)
            value = int_value(macro) if macro is not None else None
        if value is None:
            return None
        total *= value
    return total


def _plan(ctx: PassContext) -> tuple[Optional[str], int]:
    if ctx.kernel.launch_bounds:
        return (f"the kernel already has __launch_bounds__({', '.join(ctx.kernel.launch_bounds)})"
                ), 0
    block = baseline_block(ctx)
    if block is None:
        return "the block of the launch configuration cannot be evaluated", 0
    threads = block[0] * block[1] * block[2]
    if threads > 1024:
        return f"the block has {threads} threads, more than the 1024 CUDA allows", 0
    parsed = parse(ctx.text)
    definition = find_definition(parsed, ctx.kernel)
    if definition is None:
        return (f"the definition of {ctx.kernel.name} is not one piece in the file's syntax "
                f"tree (parse errors around it)"), 0
    macros = file_macros(parsed)
    for site in ctx.kernel_launch_sites():
        line = site.range.start.line + 1
        if len(site.config) < 2:
            return f"cannot read the block of the launch at line {line}", 0
        got = _site_threads(site.config[1], macros)
        if got is None:
            return (f"the launch at line {line} uses block '{site.config[1].strip()}', which "
                    f"the pass cannot check against __launch_bounds__({threads})"), 0
        if got > threads:
            return (f"the launch at line {line} uses {got} threads per block, more than the "
                    f"candidate's {threads}: __launch_bounds__({threads}) would make it fail"), 0
    return None, threads


def check(ctx: PassContext) -> Optional[str]:
    """None when ``__launch_bounds__`` can be added for the context's block, else the reason."""
    return _plan(ctx)[0]


def parameter_space(ctx: PassContext) -> tuple[dict, ...]:
    """Threads only first, then the blocks per SM that fill an SM (when at least 2)."""
    reason, threads = _plan(ctx)
    if reason:
        return ()
    out = [{"min_blocks": None}]
    fill = THREADS_PER_SM // threads
    if fill >= 2:
        out.append({"min_blocks": fill})
    return tuple(out)


def apply(ctx: PassContext, min_blocks: Optional[int] = None) -> PassResult:
    """Adds ``__launch_bounds__(threads[, min_blocks])`` before the kernel's name.

    Raises:
        PassNotApplicable: the precondition fails.
        ValueError: ``min_blocks`` is not None or a positive number of blocks that fits.
    """
    reason, threads = _plan(ctx)
    if reason:
        raise PassNotApplicable(f"{name} on {ctx.kernel.name}: {reason}")
    if min_blocks is not None and not 1 <= min_blocks <= THREADS_PER_SM // threads:
        raise ValueError(f"min_blocks must be None or 1..{THREADS_PER_SM // threads} for "
                         f"{threads} threads, found {min_blocks!r}")
    parsed = parse(ctx.text)
    definition = find_definition(parsed, ctx.kernel)
    declarator = definition.child_by_field_name("declarator")
    args = f"{threads}" if min_blocks is None else f"{threads}, {min_blocks}"
    source = apply_edits(parsed.data, [Edit(declarator.start_byte, declarator.start_byte,
                                            f"__launch_bounds__({args}) ")])
    if min_blocks is None:
        explanation = (f"__launch_bounds__({threads}): ptxas budgets registers for blocks of "
                       f"at most {threads} threads (up to {min(255, 65536 // threads)} per "
                       f"thread) instead of for any block size")
        tag = f"bounds={threads}"
    else:
        regs = 65536 // (min_blocks * threads)
        explanation = (f"__launch_bounds__({threads}, {min_blocks}): at most {regs} registers "
                       f"per thread so that {min_blocks} blocks ({min_blocks * threads // 32} "
                       f"warps) fit on each SM, for more occupancy to hide memory latency")
        tag = f"bounds={threads}x{min_blocks}"
    return PassResult(source=source, launch=ctx.launch, tags=(tag,), explanation=explanation)
