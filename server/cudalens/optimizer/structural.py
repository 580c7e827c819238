"""What the structural rewrites (tiled transpose, warp reduction, tiled matmul, warp softmax)
share: spec conditions for changing the launch, element sizes, layout of generated code,
and body replacement.

A structural pass replaces the kernel's body (between its braces) and usually its launch
configuration; the parameter list is never touched, so the signature is the original's.
"""

from __future__ import annotations

import re
from typing import Callable, Optional, TypeVar

import tree_sitter

from cudalens.kernel_model.file_facts import file_identifiers
from cudalens.kernel_model.edits import Edit, apply_edits, line_indent
from cudalens.kernel_model.model import kernel_definition
from cudalens.kernel_model.syntax import Parsed, parse, walk
from cudalens.optimizer.aliasing import aliased_arguments
from cudalens.optimizer.context import PassContext
from cudalens.optimizer.macros import Macro, parse_expression
from cudalens.optimizer.reasons import reason_of
from cudalens.spec import dtypes
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl, ScalarDecl

# Calls a structural pass may carry over from the original statements: pure math functions
# of the CUDA math API (CUDA C++ Programming Guide, "Mathematical Functions"), the value
# conversions between float and half / bfloat16 (CUDA Math API, "Half Precision Conversion"
# and "Bfloat16 Precision Conversion") and read-only loads. Anything else may have side
# effects or depend on the thread.
PURE_CALLS = frozenset("""
    __ldg fabsf fabs abs fminf fmaxf fmin fmax min max sqrtf sqrt rsqrtf rsqrt expf exp exp2f
    exp2 exp10f expm1f logf log log2f log2 log10f log10 log1pf powf pow sinf sin cosf cos tanf
    tan tanhf tanh erff erf floorf floor ceilf ceil truncf trunc roundf round rintf rint fmaf fma
    copysignf copysign __expf __logf __sinf __cosf __powf __fdividef __saturatef
    __half2float __float2half __float2half_rn __bfloat162float __float2bfloat16
    __float2bfloat16_rn
""".split())

BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize")
_SYNC = re.compile(r"^(__syncthreads\w*|__syncwarp|__threadfence\w*|__shfl\w*|__ballot\w*|"
                   r"__any\w*|__all\w*|__activemask|atomic\w*)$")


def element_bytes(spec_type: str) -> int:
    """Bytes per element of a spec type (``float`` -> 4)."""
    return {"float16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "float32": 4,
            "int32": 4, "uint32": 4}.get(dtypes.numpy_dtype(spec_type), 8)


def block_dependence(ctx: PassContext) -> Optional[str]:
    """None when no size, buffer length or scalar value of the spec uses the block (so the pass
    may choose its own block and grid); else the reason. The dynamic shared memory size may:
    it is a launch expression, evaluated for whatever block the rewrite's launch has."""
    uses = lambda text: spec_expr.BLOCK in spec_expr.names_in(text)
    try:
        for s in ctx.spec.sizes:
            if uses(s.expr):
                return f"size {s.name} ({s.expr}) depends on the block"
        for p in ctx.spec.params:
            if isinstance(p, BufferDecl) and uses(p.length):
                return f"the length of buffer {p.name} ({p.length}) depends on the block"
            if isinstance(p, ScalarDecl) and uses(p.expr):
                return f"the value of scalar {p.name} ({p.expr}) depends on the block"
        # a dynamic shared memory size of the block (block.x * sizeof(float)) is evaluated
        # again for the rewrite's block (spec.resolve evaluates shared with each launch's block)
    except spec_expr.ExprError as exc:
        return f"cannot read the spec's expressions: {exc}"
    return None


M = TypeVar("M")


def plan(ctx: PassContext, early: Optional[str], match: Callable[[PassContext], M],
         no_match: type[Exception]) -> tuple[Optional[str], Optional[M]]:
    """The precondition steps a structural pass shares, in order: ``early`` (the pass's own
    first reason, or None), the spec's block dependence (``block_dependence``), the pattern
    ``match`` (a ``no_match`` exception's message is the reason) and aliased launch arguments.

    Returns (None, the match) when every step passes, else (the first reason, None).
    """
    if early:
        return early, None
    reason = block_dependence(ctx)
    if reason:
        return reason, None
    try:
        m = match(ctx)
    except no_match as exc:
        return reason_of(exc), None
    alias = aliased_arguments(ctx)
    if alias:
        return alias, None
    return None, m


def thread_tied(node: tree_sitter.Node, parsed: Parsed) -> Optional[str]:
    """The first barrier, warp intrinsic, atomic or ``__shared__`` under ``node``, as
    ``'name' (line N)``, else None."""
    for n in walk(node):
        if n.type == "__shared__":
            return f"__shared__ (line {parsed.line_of(n)})"
        if n.type == "identifier" and _SYNC.match(parsed.text_of(n)):
            return f"'{parsed.text_of(n)}' (line {parsed.line_of(n)})"
    return None


def pure_macro(macro: Macro) -> bool:
    """A function-like macro whose body is an expression without calls or assignments (an
    index macro such as ``IDX(r, c, ld) ((r) * (ld) + (c))``)."""
    if macro.params is None or not macro.expandable:
        return False
    try:
        parsed, expr = parse_expression(macro.body)
    except ValueError:
        return False
    return not any(n.type in ("call_expression", "assignment_expression", "update_expression",
                              "comma_expression") for n in walk(expr))


def impure_call(node: tree_sitter.Node, parsed: Parsed,
                macros: Optional[dict] = None) -> Optional[str]:
    """The first call under ``node`` to anything but ``PURE_CALLS`` (and, given the file's
    ``macros``, pure index macros), as text, else None."""
    for n in walk(node):
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            name = parsed.text_of(fn) if fn is not None else ""
            if name.replace("std::", "") in PURE_CALLS or \
                    (fn is not None and fn.type == "template_function" and
                     name.replace(" ", "").startswith("static_cast<")):
                continue
            if macros and name in macros and pure_macro(macros[name]):
                continue
            return f"'{parsed.text_of(n)}' (line {parsed.line_of(n)})"
    return None


def builtin_uses(node: tree_sitter.Node, parsed: Parsed) -> Optional[str]:
    """The first thread-index builtin under ``node``, as ``'blockIdx' (line N)``, else None."""
    for n in walk(node):
        if n.type == "identifier" and parsed.text_of(n) in BUILTINS:
            return f"'{parsed.text_of(n)}' (line {parsed.line_of(n)})"
    return None


class Layout:
    """Indentation and free names for generating a new body for ``ctx``'s kernel."""

    def __init__(self, ctx: PassContext):
        self.parsed = parse(ctx.text)
        self.definition = kernel_definition(self.parsed, ctx.kernel)
        self.body = self.definition.child_by_field_name("body")
        self.base = line_indent(self.parsed.data, self.definition.start_byte)
        inner = list(self.body.named_children)
        self.unit = "    "
        if inner and inner[0].start_point[0] != self.body.start_point[0]:
            first = line_indent(self.parsed.data, inner[0].start_byte)
            if first.startswith(self.base) and len(first) > len(self.base):
                self.unit = first[len(self.base):]
        self.taken = set(file_identifiers(self.parsed)) | {ctx.kernel.name}
        self.lines: list[str] = ["{"]

    def fresh(self, base: str) -> str:
        from cudalens.kernel_model.edits import fresh_name
        return fresh_name(base, self.taken)

    def __call__(self, depth: int, line: str = "") -> None:
        self.lines.append(f"{self.base}{self.unit * depth}{line}" if line else "")

    def block(self, depth: int, lines: list[str]) -> None:
        """``lines`` (already re-indented, blank ones empty) at ``depth``."""
        self.lines.extend(self.base + self.unit * depth + l if l else "" for l in lines)

    def text_block(self, depth: int, text: str) -> None:
        """``text`` (one or more lines, as written in the original) re-indented at ``depth``."""
        lines = text.split("\n")
        first = lines[0].strip()
        rest = lines[1:]
        widths = [len(l) - len(l.lstrip()) for l in rest if l.strip()]
        common = min(widths) if widths else 0
        self(depth, first)
        for l in rest:
            self(depth, l[common:].rstrip() if l.strip() else "")

    def source(self) -> str:
        """The whole file with the kernel's body replaced by the generated lines."""
        self.lines.append(self.base + "}")
        edit = Edit(self.body.start_byte, self.body.end_byte, "\n".join(self.lines))
        return apply_edits(self.parsed.data, [edit])


def text_with(parsed: Parsed, node: tree_sitter.Node,
              replace: list[tuple[tree_sitter.Node, str]]) -> str:
    """The source text of ``node`` with each node in ``replace`` (inside it) replaced."""
    base = node.start_byte
    edits = [Edit(n.start_byte - base, n.end_byte - base, text) for n, text in replace]
    return apply_edits(parsed.data[node.start_byte:node.end_byte], edits)


def block_guard(x: int, y: Optional[int] = None) -> str:
    """``if (blockDim.x != X || blockDim.y != Y) return;``: the first statement of a rewrite
    whose threads cooperate over a block of exactly this shape (shared tiles and thread
    mappings sized by it). Under another launch, such as the user's in the drop-in check
    (docs/architecture.md, "Drop-in"), every block returns before touching memory: the
    results are wrong there, and nothing is read or written out of range. The test is the
    same for every thread of a block, so no barrier is left half-reached."""
    cond = f"blockDim.x != {x}" + ("" if y is None else f" || blockDim.y != {y}")
    return f"if ({cond}) return;"
