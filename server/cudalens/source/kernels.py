"""``Kernel`` records from tree-sitter-cuda ``function_definition`` nodes.

tree-sitter-cuda gives ``__global__`` as an anonymous token that is a direct child of the
``function_definition`` (wherever it is written among the declaration specifiers),
``__launch_bounds__(...)`` as a ``launch_bounds`` child of the same node, templates as a
``template_declaration`` parent, and ``extern "C"`` as a ``linkage_specification``
ancestor (its direct parent for ``extern "C" __global__ ...``, through a
``declaration_list`` for ``extern "C" { ... }``).
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from .model import Kernel
from .parameters import parameters_from_list, template_parameter_names
from cudalens.kernel_model.syntax import ancestors, named_children, range_of, text_of

GLOBAL = "__global__"

_DECLARATOR_WRAPPERS = frozenset(
    {"parenthesized_declarator", "attributed_declarator", "pointer_declarator", "reference_declarator"}
)


@dataclass(frozen=True)
class Scope:
    """What encloses a definition: namespaces (outermost first) and C linkage.

    ``extern_c`` is None when no linkage specification encloses it.
    ``in_class`` is true inside a class, struct or union body, where kernels cannot be defined.
    """

    namespaces: tuple[str, ...] = ()
    extern_c: bool | None = None
    in_class: bool = False


def _scopes_opened_in_error(src: bytes, error: tree_sitter.Node, upto: tree_sitter.Node) -> list[tuple[str, str]]:
    """Scopes left open by the tokens an ERROR node holds before its child ``upto``.

    Error recovery often flattens ``namespace ops {`` or ``extern "C" {`` into loose tokens
    of an ERROR node; this replays them. Returns (kind, value) pairs, outermost first, kind
    being "namespace", "linkage" (value: the linkage string) or "block".
    """
    stack: list[tuple[str, str]] = []
    pending: tuple[str, str] | None = None
    for child in error.children:
        if child == upto or child.start_byte > upto.start_byte:
            break
        kind = child.type
        if kind == "comment":
            continue
        if kind == "namespace":
            pending = ("namespace", "")
        elif pending is not None and pending[0] == "namespace" and kind in (
            "identifier",
            "namespace_identifier",
            "nested_namespace_specifier",
        ):
            pending = ("namespace", text_of(src, child))
        elif kind == "extern":
            pending = ("linkage", "")
        elif pending is not None and pending[0] == "linkage" and kind == "string_literal":
            pending = ("linkage", text_of(src, child))
        elif kind == "{":
            stack.append(pending or ("block", ""))
            pending = None
        elif kind == "}":
            if stack:
                stack.pop()
            pending = None
        else:
            pending = None
    return stack


def enclosing_scope(src: bytes, node: tree_sitter.Node) -> Scope:
    """The namespaces and linkage around ``node``, read from its ancestors in the tree."""
    namespaces: list[str] = []  # innermost first while climbing
    extern_c: bool | None = None
    in_class = False
    child = node
    for parent in ancestors(node):
        if parent.type == "namespace_definition":
            name = parent.child_by_field_name("name")
            if name is not None:
                namespaces.append(text_of(src, name))
        elif parent.type == "linkage_specification":
            if extern_c is None:
                value = parent.child_by_field_name("value")
                extern_c = value is not None and text_of(src, value) == '"C"'
        elif parent.type == "field_declaration_list":
            in_class = True
        elif parent.type == "ERROR":
            for kind, value in reversed(_scopes_opened_in_error(src, parent, child)):
                if kind == "namespace" and value:
                    namespaces.append(value)
                elif kind == "linkage" and extern_c is None:
                    extern_c = value == '"C"'
        child = parent
    return Scope(tuple(reversed(namespaces)), extern_c, in_class)


def global_token(definition: tree_sitter.Node) -> tree_sitter.Node | None:
    """The ``__global__`` token among the direct children of a function definition, if any."""
    for child in definition.children:
        if child.type == GLOBAL:
            return child
    return None


def _function_declarator(definition: tree_sitter.Node) -> tree_sitter.Node | None:
    node = definition.child_by_field_name("declarator")
    while node is not None and node.type != "function_declarator":
        if node.type not in _DECLARATOR_WRAPPERS:
            return None
        inner = node.child_by_field_name("declarator")
        node = inner if inner is not None else next(iter(named_children(node)), None)
    return node


def _name_and_scope(src: bytes, node: tree_sitter.Node | None) -> tuple[tree_sitter.Node | None, list[str]]:
    """The identifier naming a function declarator's target and any ``a::b::`` written before it."""
    scope: list[str] = []
    while node is not None:
        if node.type == "identifier":
            return node, scope
        if node.type == "template_function":
            node = node.child_by_field_name("name")
        elif node.type == "qualified_identifier":
            qualifier = node.child_by_field_name("scope")
            if qualifier is not None:
                scope.append(text_of(src, qualifier))
            node = node.child_by_field_name("name")
        else:
            return None, scope
    return None, scope


def definition_extent(definition: tree_sitter.Node) -> tree_sitter.Node:
    """The node spanning the whole definition: template headers and ``extern "C"`` included.

    ``extern "C"`` counts when it is written on this definition alone, not for a
    ``extern "C" { ... }`` block.
    """
    extent = definition
    while extent.parent is not None and extent.parent.type == "template_declaration":
        extent = extent.parent
    parent = extent.parent
    if parent is not None and parent.type == "linkage_specification" and parent.child_by_field_name("body") == extent:
        extent = parent
    return extent


def kernel_from_definition(
    src: bytes, definition: tree_sitter.Node, scope: Scope, has_errors: bool
) -> Kernel | None:
    """A ``Kernel`` for a ``function_definition`` node holding ``__global__``.

    Returns None when the node lacks what a kernel definition needs (a function declarator
    with a plain or qualified identifier, and a ``{ ... }`` body), as happens when a macro
    confuses the grammar. Launch sites are attached later by the caller.
    """
    declarator = _function_declarator(definition)
    body = definition.child_by_field_name("body")
    if declarator is None or body is None or body.type != "compound_statement":
        return None
    name_node, written_scope = _name_and_scope(src, declarator.child_by_field_name("declarator"))
    if name_node is None:
        return None
    name = text_of(src, name_node)
    qualified = "::".join([*scope.namespaces, *written_scope, name])

    extent = definition_extent(definition)
    template = definition.parent if definition.parent is not None and definition.parent.type == "template_declaration" else None
    template_parameters = (
        template_parameter_names(src, template.child_by_field_name("parameters")) if template is not None else ()
    )
    launch_bounds: tuple[str, ...] = ()
    for child in definition.children:
        if child.type == "launch_bounds":
            launch_bounds = tuple(text_of(src, a) for a in named_children(child))
            break
    extern_c = bool(scope.extern_c)
    if extent.type == "linkage_specification":
        value = extent.child_by_field_name("value")
        extern_c = value is not None and text_of(src, value) == '"C"'

    return Kernel(
        name=name,
        qualified_name=qualified,
        parameters=parameters_from_list(src, declarator.child_by_field_name("parameters")),
        range=range_of(extent),
        name_range=range_of(name_node),
        body_range=range_of(body),
        start_byte=extent.start_byte,
        end_byte=extent.end_byte,
        body_start_byte=body.start_byte,
        body_end_byte=body.end_byte,
        template_parameters=template_parameters,
        launch_bounds=launch_bounds,
        extern_c=extern_c,
        has_errors=has_errors or extent.has_error,
    )
