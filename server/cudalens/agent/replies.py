"""Reading candidates out of the model's replies: fenced code blocks and tool calls.

A fenced reply holds, per candidate, a code block (```` ```cuda ````, ``cu``, ``cpp``, ``c++``,
``c``, or an untagged block holding ``__global__``) optionally followed, before the next code
block, by a ```` ```launch ```` block of ``block = ...`` / ``grid = ...`` / ``shared = ...``
lines. The candidate's explanation is the last paragraph of prose before its code block.
A tool call ``evaluate`` carries the same in JSON: ``source``, ``block``, ``grid``, ``shared``,
``explanation``; a tool call ``compile`` only ``source``.

Everything that cannot become a candidate is an ``Unusable`` with the reason to feed back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional, Union

from cudalens.agent.chat import Reply, ToolCall
from cudalens.spec.expr import ExprError, parse as parse_expr
from cudalens.spec.model import LaunchDecl
from cudalens.spec.parser import split_top_level

CODE_TAGS = ("cuda", "cu", "cuh", "cpp", "c++", "cxx", "c", "")
LAUNCH_TAGS = ("launch", "spec")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+.-]*)[^\n`]*$")
_LAUNCH_LINE = re.compile(r"^\s*(block|grid|shared)\s*=\s*(.+?)\s*;?\s*$")
EXPLANATION_CHARS = 300


@dataclass(frozen=True)
class Proposal:
    """A candidate as the model wrote it, before any check.

    ``code``: the kernel with its helpers; ``launch``: the launch lines (spec syntax, one per
    line) or "" to keep the spec's; ``origin``: where it came from, for messages (``code block
    2``, ``evaluate call call_1``); ``call_id``: the tool call to answer, if any.
    """

    code: str
    launch: str
    explanation: str
    origin: str
    call_id: Optional[str] = None


@dataclass(frozen=True)
class Unusable:
    """Something in a reply that cannot become a candidate, and why (fed back verbatim)."""

    origin: str
    reason: str
    call_id: Optional[str] = None


@dataclass(frozen=True)
class CompileRequest:
    """A ``compile`` tool call."""

    code: str
    call_id: str


Item = Union[Proposal, Unusable, CompileRequest]


@dataclass(frozen=True)
class _Block:
    tag: str
    body: str
    first_line: int  # 1-based line of the opening fence in the reply
    closed: bool
    prose_before: str


def _blocks(text: str) -> list[_Block]:
    lines = text.splitlines()
    blocks: list[_Block] = []
    prose: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        fence, tag = m.group(1), m.group(2).lower()
        body: list[str] = []
        j = i + 1
        closed = False
        while j < len(lines):
            if re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[j]):
                closed = True
                break
            body.append(lines[j])
            j += 1
        blocks.append(_Block(tag, "\n".join(body) + ("\n" if body else ""), i + 1, closed,
                             "\n".join(prose)))
        prose = []
        i = j + 1
    return blocks


def _explanation(prose: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", prose) if p.strip()]
    text = " ".join(paragraphs[-1].split()) if paragraphs else ""
    text = re.sub(r"^(\*\*)?(candidate|idea|option)\s*\d*[:.)]*(\*\*)?\s*", "", text, flags=re.I)
    return text[:EXPLANATION_CHARS]


def _cut_off(finish_reason: Optional[str]) -> str:
    return (" (the reply was cut off: the server stopped at its token limit, finish_reason "
            "'length'; write shorter code or less prose)") if finish_reason == "length" else ""


def from_text(text: str, kernel_name: str, finish_reason: Optional[str] = None,
              limit: Optional[int] = None) -> list[Item]:
    """The proposals (and the unusable parts) of a fenced reply, in reply order.

    ``limit``: the most proposals to take; later code blocks become ``Unusable``.
    """
    items: list[Item] = []
    proposals: list[Proposal] = []
    pending: Optional[tuple[_Block, int]] = None  # the last code block, waiting for its launch

    def finish(launch: str = "") -> None:
        nonlocal pending
        if pending is not None:
            block, number = pending
            proposals.append(Proposal(block.body, launch, _explanation(block.prose_before),
                                      f"code block {number}"))
            items.append(proposals[-1])
            pending = None

    number = 0
    for block in _blocks(text):
        is_code = block.tag in CODE_TAGS and (block.tag != "" or "__global__" in block.body)
        if block.tag in LAUNCH_TAGS:
            if not block.closed:
                items.append(Unusable(f"launch block at line {block.first_line} of the reply",
                                      "the launch block is never closed" + _cut_off(finish_reason)))
                pending = None
            elif pending is not None:
                finish(block.body)
            continue
        if not is_code:
            continue
        finish()
        number += 1
        origin = f"code block {number}"
        if not block.closed:
            items.append(Unusable(origin, f"the code block opened at line {block.first_line} of "
                                          f"the reply is never closed" + _cut_off(finish_reason)))
            continue
        if limit is not None and len(proposals) >= limit:
            items.append(Unusable(origin, f"not measured: at most {limit} candidates per round"))
            continue
        pending = (block, number)
    finish()
    if not proposals and not any(isinstance(i, Unusable) for i in items):
        items.append(Unusable("the reply", f"no usable code: expected the new kernel "
                                           f"`{kernel_name}` in a ```cuda fenced block"
                                           + _cut_off(finish_reason)))
    return items


def _strip_fences(code: str) -> str:
    blocks = [b for b in _blocks(code) if b.closed]
    return blocks[0].body if len(blocks) == 1 and blocks[0].tag in CODE_TAGS else code


def _launch_from_args(args: dict) -> str:
    lines = []
    for key in ("block", "grid", "shared"):
        value = args.get(key)
        if value is None or value == "" or value == []:
            continue
        if isinstance(value, (list, tuple)):
            value = ", ".join(str(v) for v in value)
        lines.append(f"{key} = {value}")
    return "\n".join(lines)


def from_tool_call(call: ToolCall, finish_reason: Optional[str], tools: tuple[str, ...]) -> Item:
    """The proposal, compile request or unusable item of one tool call."""
    origin = f"tool call {call.name or '(unnamed)'} {call.id}"
    if call.name not in tools:
        return Unusable(origin, f"unknown tool {call.name!r}; the tools are "
                                f"{', '.join(tools)}", call.id)
    try:
        args = json.loads(call.arguments or "")
    except json.JSONDecodeError as exc:
        return Unusable(origin, f"the arguments are not valid JSON ({exc.msg}: line {exc.lineno} "
                                f"column {exc.colno}); send one JSON object such as "
                                f'{{"source": "...", "explanation": "..."}}'
                                + _cut_off(finish_reason), call.id)
    if not isinstance(args, dict):
        return Unusable(origin, f"the arguments must be a JSON object, found "
                                f"{type(args).__name__}", call.id)
    source = args.get("source")
    if not isinstance(source, str) or not source.strip():
        return Unusable(origin, "no usable code: the argument 'source' must hold the new kernel "
                                "as a string", call.id)
    source = _strip_fences(source)
    if call.name == "compile":
        return CompileRequest(source, call.id)
    bad = [k for k in ("block", "grid", "shared", "explanation")
           if k in args and not isinstance(args[k], (str, int, list, type(None)))]
    if bad:
        return Unusable(origin, f"argument {bad[0]!r} must be a string", call.id)
    explanation = " ".join(str(args.get("explanation") or "").split())[:EXPLANATION_CHARS]
    return Proposal(source, _launch_from_args(args), explanation, origin, call.id)


def from_reply(reply: Reply, kernel_name: str, tools: tuple[str, ...],
               limit: int) -> list[Item]:
    """Every item of ``reply``: its tool calls in order, or, without tool calls, its fenced
    blocks. ``evaluate`` calls beyond ``limit`` are answered as unusable."""
    if not reply.tool_calls:
        return from_text(reply.content, kernel_name, reply.finish_reason, limit)
    items: list[Item] = []
    taken = 0
    for call in reply.tool_calls:
        item = from_tool_call(call, reply.finish_reason, tools)
        if isinstance(item, Proposal):
            if taken >= limit:
                item = Unusable(item.origin, f"not measured: at most {limit} candidates per round",
                                item.call_id)
            else:
                taken += 1
        items.append(item)
    return items


class LaunchError(ValueError):
    """A launch block line is malformed; the message names the line."""


def parse_launch(text: str, default: LaunchDecl) -> LaunchDecl:
    """The launch configuration of a launch block; lines left out keep ``default``'s.

    Raises:
        LaunchError: a line is not ``block|grid|shared = EXPR[, EXPR...]``, repeats a key, has
            more than three dimensions, or an expression does not parse.
    """
    found: dict[str, tuple[str, ...]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].split("//", 1)[0].strip()
        if not line:
            continue
        m = _LAUNCH_LINE.match(line)
        if not m:
            raise LaunchError(f"launch line {number}: expected 'block = ...', 'grid = ...' or "
                              f"'shared = ...', found {line!r}")
        key, value = m.group(1), m.group(2)
        if key in found:
            raise LaunchError(f"launch line {number}: {key} is given twice")
        parts = tuple(p.strip() for p in split_top_level(value))
        if key == "shared" and len(parts) != 1 or len(parts) > 3 or not all(parts):
            want = ("one expression" if key == "shared" else
                    "one to three expressions separated by commas")
            raise LaunchError(f"launch line {number}: expected {want} for {key}, found {value!r}")
        for part in parts:
            try:
                parse_expr(part)
            except ExprError as exc:
                raise LaunchError(f"launch line {number}: {key}: {exc}") from None
        found[key] = parts
    return LaunchDecl(block=found.get("block", default.block), grid=found.get("grid", default.grid),
                      shared=found["shared"][0] if "shared" in found else default.shared,
                      line=default.line)
