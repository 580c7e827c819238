"""``KernelModel``: one kernel of one text with its syntax nodes, looked up once.

The passes, the optimizer's context and spec inference and validation all need a kernel's
``function_definition``, its parameters and its body; ``kernel_model(text, kernel)`` finds
them once per (text, kernel) and every caller gets the same model. Models live in their text's
``Parsed`` (``syntax.parse``), so a model's nodes are always nodes of ``parse(text)``'s tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Optional, TypeVar

from cudalens.kernel_model.syntax import Node, Parsed, first_error, parse
from cudalens.source.model import Kernel
from cudalens.textfile import from_bytes


@dataclass(frozen=True)
class KernelModel:
    """``kernel`` in ``parsed`` (its whole text). ``definition`` is its ``function_definition``
    in the whole-file tree, None where that tree does not hold the kernel as one definition
    (parse errors around it); ``parameters`` its ``parameter_declaration`` nodes in order;
    ``body`` the definition's body (None without a definition). ``loose_body`` is the
    ``compound_statement`` at the body's offsets in the whole-file tree with or without a
    definition around it (error recovery may keep the body and break the definition).
    ``facts`` holds facts computed from the model once, by the module that computes them
    (``accesses.memory`` under the key "memory", ``kernel_fact`` under its callers' keys), so every reader of the model shares them."""

    parsed: Parsed
    kernel: Kernel
    definition: Optional[Node]
    parameters: tuple[Node, ...]
    body: Optional[Node]
    loose_body: Optional[Node]
    facts: dict = field(default_factory=dict, compare=False, repr=False)  # ``kernel_fact``, accesses

    @property
    def text(self) -> str:
        return self.parsed.text

    def salvaged_body(self) -> tuple[Parsed, Node]:
        """The body's ``compound_statement`` with the ``Parsed`` it belongs to: ``loose_body``
        from the whole-file tree; if error recovery in the whole file hid it, from a parse of
        the definition's own text (what spec inference and validation read).

        Raises:
            LookupError: neither tree has a compound statement at the body's offsets.
        """
        if self.loose_body is not None:
            return self.parsed, self.loose_body
        k = self.kernel
        alone = parse(from_bytes(self.parsed.data[k.start_byte:k.end_byte]))
        node = _compound_at(alone, k.body_start_byte - k.start_byte,
                            k.body_end_byte - k.start_byte)
        if node is None:
            raise LookupError(f"kernel {k.name}: no body found at bytes "
                              f"{k.body_start_byte}..{k.body_end_byte}")
        return alone, node


def kernel_model(text: str, kernel: Kernel) -> KernelModel:
    """The model of ``kernel`` in ``text`` (``kernel``'s offsets are into ``text`` as UTF-8),
    built once per (text, kernel) and kept with ``parse(text)``."""
    return model_of(parse(text), kernel)


T = TypeVar("T")


def kernel_fact(text: str, kernel: Kernel, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()``, worked out once per (``text``, ``kernel``, ``key``) and kept in the
    kernel's model (so it goes when ``text``'s parse does): for what is derived from one kernel
    of one text and asked again on every load of it (the draft ``spec.output_lengths`` checks
    a written spec against). ``key`` must hold whatever else ``compute`` reads (a template
    instance, the kernel's launch sites). Callers must not change what it returns."""
    facts = kernel_model(text, kernel).facts
    if key not in facts:
        facts[key] = compute()
    return facts[key]


def model_of(parsed: Parsed, kernel: Kernel) -> KernelModel:
    """The model of ``kernel`` in ``parsed``, built once and kept in ``parsed.models``."""
    key = (kernel.name, kernel.start_byte, kernel.end_byte, kernel.body_start_byte,
           kernel.body_end_byte)
    hit = parsed.models.get(key)
    if hit is None:
        hit = parsed.models.setdefault(key, _build(parsed, kernel))
    return hit


def _build(parsed: Parsed, kernel: Kernel) -> KernelModel:
    definition = _definition(parsed, kernel)
    body = definition.child_by_field_name("body") if definition is not None else None
    loose = body if body is not None else _compound_at(parsed, kernel.body_start_byte,
                                                       kernel.body_end_byte)
    params = parameter_nodes(definition) if definition is not None else []
    return KernelModel(parsed=parsed, kernel=kernel, definition=definition,
                       parameters=tuple(params), body=body, loose_body=loose)


def _definition(parsed: Parsed, kernel: Kernel) -> Optional[Node]:
    node = parsed.tree.root_node.descendant_for_byte_range(kernel.body_start_byte,
                                                           kernel.body_end_byte)
    while node is not None:
        if node.type == "function_definition":
            b = node.child_by_field_name("body")
            if b is not None and b.start_byte == kernel.body_start_byte \
                    and b.end_byte == kernel.body_end_byte:
                return node
        node = node.parent
    return None


def _compound_at(parsed: Parsed, start: int, end: int) -> Optional[Node]:
    node = parsed.tree.root_node.descendant_for_byte_range(start, end)
    while node is not None and not (node.type == "compound_statement"
                                    and node.start_byte == start and node.end_byte == end):
        node = node.parent
    return node


def kernel_definition(parsed: Parsed, kernel: Kernel) -> Node:
    """The ``function_definition`` node of ``kernel``, found by its body's byte offsets.

    Raises:
        LookupError: no function definition in ``parsed`` has that body (the kernel model and
            the text disagree).
    """
    definition = model_of(parsed, kernel).definition
    if definition is None:
        raise LookupError(f"no function definition of kernel {kernel.name} with its body at "
                          f"bytes {kernel.body_start_byte}..{kernel.body_end_byte}")
    return definition


def find_definition(parsed: Parsed, kernel: Kernel) -> Optional[Node]:
    """``kernel_definition``, or None where the whole-file parse does not hold the kernel as
    one definition (parse errors around it)."""
    return model_of(parsed, kernel).definition


def parameter_nodes(definition: Node) -> list[Node]:
    """The ``parameter_declaration`` nodes of a function definition, in order."""
    declarator = definition.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return []
    plist = declarator.child_by_field_name("parameters")
    return [c for c in plist.named_children if c.type == "parameter_declaration"]


class UnreadableBody(ValueError):
    """The kernel's body cannot be analysed; the message says why, with the line."""


def readable_body(ctx) -> tuple[Parsed, Node]:
    """The parsed file of ``ctx`` (anything with ``text`` and ``kernel``: a ``PassContext``)
    and its kernel's body, for passes that match a pattern in the body.

    Raises:
        UnreadableBody: the definition is not one node of the syntax tree, or its body holds
            a parse error (often a macro the grammar cannot read).
    """
    model = kernel_model(ctx.text, ctx.kernel)
    k, parsed = ctx.kernel, model.parsed
    if model.definition is None:
        raise UnreadableBody(f"the definition of {k.name} is not one piece in the file's syntax "
                             f"tree (parse errors around it)")
    bad = first_error(model.body)
    if bad is not None:
        raise UnreadableBody(f"tree-sitter cannot read the body of {k.name} at line "
                             f"{parsed.line_of(bad)} (often a macro); the pass needs the whole "
                             f"body")
    return parsed, model.body


def readable_body_or(ctx, fail: Callable[[str], Exception]) -> tuple[Parsed, Node]:
    """``readable_body(ctx)``, for a recognizer whose reason for an unreadable body is its own
    exception: ``fail(message)`` is raised, the message ``UnreadableBody``'s (its cause and
    context suppressed, as ``raise ... from None``).

    Raises:
        Exception: what ``fail`` returns, when ``readable_body`` raises ``UnreadableBody``.
    """
    try:
        return readable_body(ctx)
    except UnreadableBody as exc:
        raise fail(str(exc)) from None
