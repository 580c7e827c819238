"""Kernel parameters and template parameters from tree-sitter-cuda declarations.

A C declarator is read from the name outwards: in ``float * const * __restrict__ a`` the
``*`` next to ``a`` (restrict) makes the parameter a pointer, whose pointee is a ``const``
pointer to ``float``. tree-sitter nests the declarator nodes the other way round (the
outermost ``pointer_declarator`` holds the ``*`` nearest the base type), so the chain is
collected from the top and reversed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tree_sitter

from .model import Parameter
from cudalens.kernel_model.syntax import range_of, squeeze, text_of
from cudalens.textfile import from_bytes, to_bytes

RESTRICT_SPELLINGS = frozenset({"restrict", "__restrict", "__restrict__"})

_POINTER = "pointer"
_ARRAY = "array"
_REFERENCE = "reference"
_FUNCTION = "function"
_PACK = "pack"

_DERIVATION_KIND = {
    "pointer_declarator": _POINTER,
    "abstract_pointer_declarator": _POINTER,
    "array_declarator": _ARRAY,
    "abstract_array_declarator": _ARRAY,
    "reference_declarator": _REFERENCE,
    "abstract_reference_declarator": _REFERENCE,
    "function_declarator": _FUNCTION,
    "abstract_function_declarator": _FUNCTION,
    "variadic_declarator": _PACK,
}
_TRANSPARENT = frozenset({"parenthesized_declarator", "abstract_parenthesized_declarator"})
_NAME_TYPES = frozenset({"identifier", "field_identifier", "type_identifier"})
_PARAMETER_TYPES = frozenset(
    {"parameter_declaration", "optional_parameter_declaration", "variadic_parameter_declaration"}
)


@dataclass
class _Derivation:
    """One type constructor of a declarator: ``*``, ``[n]``, ``&``, ``(...)`` or a pack."""

    kind: str
    qualifiers: set[str] = field(default_factory=set)
    suffix: str = ""  # the ``[n]`` text of an array derivation


def _qualifier_words(src: bytes, node: tree_sitter.Node) -> set[str]:
    """Qualifier keywords written directly on ``node`` (const, volatile, restrict, ...)."""
    words: set[str] = set()
    for child in node.children:
        if child.type in ("type_qualifier", "ms_pointer_modifier"):
            word = text_of(src, child).strip()
            words.add("restrict" if word in RESTRICT_SPELLINGS else word)
    return words


def _declarator_chain(
    src: bytes, declarator: tree_sitter.Node | None
) -> tuple[list[_Derivation], tree_sitter.Node | None]:
    """The derivations of ``declarator`` from the name outwards, and the name node (or None)."""
    chain: list[_Derivation] = []
    node = declarator
    name: tree_sitter.Node | None = None
    while node is not None:
        if node.type in _NAME_TYPES:
            name = node
            break
        if node.type in _TRANSPARENT:
            inner = [c for c in node.named_children if c.type != "comment"]
            node = inner[0] if inner else None
            continue
        kind = _DERIVATION_KIND.get(node.type)
        if kind is None:  # something the grammar produced that we do not model
            break
        derivation = _Derivation(kind, _qualifier_words(src, node))
        if kind == _ARRAY:
            inner = node.child_by_field_name("declarator")
            start = inner.end_byte if inner is not None else node.start_byte
            derivation.suffix = squeeze(from_bytes(src[start : node.end_byte]))
        chain.append(derivation)
        inner = node.child_by_field_name("declarator")
        if inner is None and kind in (_PACK, _REFERENCE):  # these hold their declarator unnamed
            inner = next((c for c in node.named_children if c.type != "comment"), None)
        node = inner
    chain.reverse()
    return chain, name


def parameter_from_node(src: bytes, node: tree_sitter.Node) -> Parameter:
    """The ``Parameter`` declared by a ``parameter_declaration`` node (or its optional/variadic forms).

    ``type`` is the pointee type for pointers and arrays (one level removed: ``float`` for
    ``const float* __restrict__ x``, ``float*`` for ``float** x``) and the value type
    otherwise, with qualifiers removed and whitespace runs collapsed. ``is_const`` is the
    constness of the pointee for pointers and arrays, of the value otherwise; ``is_restrict``
    is true when the parameter's own pointer is restrict-qualified (``__restrict__``,
    ``__restrict`` or ``restrict``). References are looked through. An unnamed parameter has
    ``name == ""``; a function-pointer parameter has ``is_pointer`` true and its declaration
    text, name removed, as ``type``.
    """
    base = node.child_by_field_name("type")
    base_text = squeeze(text_of(src, base)) if base is not None else ""
    base_qualifiers = _qualifier_words(src, node)
    chain, name_node = _declarator_chain(src, node.child_by_field_name("declarator"))
    name = text_of(src, name_node) if name_node is not None else ""
    chain = [d for d in chain if d.kind not in (_REFERENCE, _PACK)]

    if any(d.kind == _FUNCTION for d in chain):
        whole = text_of(src, node)
        if name_node is not None:
            cut_start = name_node.start_byte - node.start_byte
            cut_end = name_node.end_byte - node.start_byte
            encoded = to_bytes(whole)
            whole = from_bytes(encoded[:cut_start] + encoded[cut_end:])
        return Parameter(
            name=name,
            type=squeeze(whole),
            is_pointer=True,
            is_const=False,
            is_restrict=False,
            range=range_of(node),
            text=text_of(src, node),
        )

    is_pointer = bool(chain) and chain[0].kind in (_POINTER, _ARRAY)
    if is_pointer:
        own, pointee = chain[0], chain[1:]
        is_const = "const" in (pointee[0].qualifiers if pointee else base_qualifiers)
        is_restrict = "restrict" in own.qualifiers
    else:
        pointee = chain
        is_const = "const" in base_qualifiers
        is_restrict = False
    # rebuild the pointee type from the base outwards, qualifiers dropped
    type_text = base_text
    for derivation in reversed(pointee):
        type_text += "*" if derivation.kind == _POINTER else derivation.suffix
    return Parameter(
        name=name,
        type=type_text,
        is_pointer=is_pointer,
        is_const=is_const,
        is_restrict=is_restrict,
        range=range_of(node),
        text=text_of(src, node),
    )


def parameters_from_list(src: bytes, parameter_list: tree_sitter.Node | None) -> tuple[Parameter, ...]:
    """The parameters of a ``parameter_list`` node; ``(void)`` and ``()`` give ``()``."""
    if parameter_list is None:
        return ()
    declarations = [c for c in parameter_list.named_children if c.type in _PARAMETER_TYPES]
    if len(declarations) == 1:
        only = declarations[0]
        base = only.child_by_field_name("type")
        if (
            only.child_by_field_name("declarator") is None
            and base is not None
            and text_of(src, base) == "void"
        ):
            return ()
    return tuple(parameter_from_node(src, c) for c in declarations)


def _template_parameter_name(src: bytes, node: tree_sitter.Node) -> str:
    if node.type in ("type_parameter_declaration", "variadic_type_parameter_declaration"):
        names = [c for c in node.named_children if c.type == "type_identifier"]
        return text_of(src, names[-1]) if names else ""
    if node.type == "optional_type_parameter_declaration":
        name = node.child_by_field_name("name")
        return text_of(src, name) if name is not None else ""
    if node.type in _PARAMETER_TYPES:
        _, name_node = _declarator_chain(src, node.child_by_field_name("declarator"))
        return text_of(src, name_node) if name_node is not None else ""
    if node.type == "template_template_parameter_declaration":
        inner = [
            c
            for c in node.named_children
            if c.type.endswith("type_parameter_declaration")
            and c != node.child_by_field_name("parameters")
        ]
        return _template_parameter_name(src, inner[-1]) if inner else ""
    return ""


def template_parameter_names(src: bytes, parameter_list: tree_sitter.Node | None) -> tuple[str, ...]:
    """Names declared by a ``template_parameter_list`` node, in order; unnamed ones are skipped.

    ``<typename T, int N = 4, class... Ts, template <typename> class TT>`` gives
    ``("T", "N", "Ts", "TT")``.
    """
    if parameter_list is None:
        return ()
    names = (_template_parameter_name(src, c) for c in parameter_list.named_children)
    return tuple(n for n in names if n)
