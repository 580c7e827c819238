"""Pointer aliasing at the kernel's launch sites in the file.

``__restrict__`` and vector loads that read every input before writing any output are only
correct when the kernel's pointer arguments do not overlap. The harness always passes
separate buffers, so verification on the GPU cannot catch a caller that aliases them; the
launch sites in the user's own file are the evidence we have.
"""

from __future__ import annotations

import re
from typing import Optional

from cudalens.optimizer.context import PassContext

_SPACE = re.compile(r"\s+")


def _normalize(arg: str) -> str:
    text = _SPACE.sub("", arg)
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def aliased_arguments(ctx: PassContext) -> Optional[str]:
    """None when no launch site of the kernel passes the same argument text to two pointer
    parameters; else a sentence naming the site's line, the argument and both parameters.

    Arguments are compared as written, ignoring whitespace and enclosing parentheses: ``x``
    and ``x + 1`` are not recognized as overlapping (a known limit).
    """
    params = ctx.kernel.parameters
    pointers = [i for i, p in enumerate(params) if p.is_pointer]
    for site in ctx.kernel_launch_sites():
        if len(site.arguments) != len(params):
            continue  # another overload, or a call the parser could not split
        seen: dict[str, str] = {}
        for i in pointers:
            arg = _normalize(site.arguments[i])
            if arg in seen:
                return (f"the launch at line {site.range.start.line + 1} passes '{arg}' as both "
                        f"{seen[arg]} and {params[i].name}: the pointers alias")
            seen[arg] = params[i].name
    return None
