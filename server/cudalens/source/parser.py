"""Parse a CUDA source file into the kernel model (``SourceFile``) with tree-sitter-cuda.

A kernel is a ``__global__`` function *definition*; prototypes, ``__device__`` and
``__host__`` functions, and ``__global__`` members of classes are not kernels. Kernels
whose bodies use macros are found as long as the grammar still sees their declaration;
macro-induced parse errors inside a definition set ``Kernel.has_errors``. In a file with
errors, kernels that the whole-file parse mangled are parsed again one by one (see
``recovery``), so one broken kernel does not hide the kernels after it.
"""

from __future__ import annotations

from dataclasses import replace

import tree_sitter

from .kernels import GLOBAL, Scope, definition_extent, enclosing_scope, global_token, kernel_from_definition
from .launches import LaunchIndex, find_launch_sites
from .model import Kernel, Range, SourceFile
from .recovery import Recovery
from cudalens.kernel_model.syntax import ancestors, captures_outside_tables, parse, range_of

_GLOBAL_QUERY = f'"{GLOBAL}" @keyword'


def parse_source(text: str, path: str = "<memory>") -> SourceFile:
    """Parse CUDA source ``text`` (named ``path`` in messages) into a ``SourceFile``.

    Kernels and launch sites are in source order. All ranges are zero-based with byte
    columns, and ``Kernel.start_byte`` etc. are offsets into ``text.encode("utf-8")``.
    ``SourceFile.error_ranges`` holds the outermost ERROR regions and the zero-width spots
    where the parser assumed a MISSING token, in source order: those of the whole-file parse,
    plus, for each kernel parsed again alone, the errors inside its re-parsed definition (or,
    when the re-parse found no definition, the first error of its window). tree-sitter often
    reports a missing ``}`` only at the end of the file, or one ERROR over the whole file;
    the re-parses place errors at the broken kernel.

    The tree is ``kernel_model.syntax.parse(text)``'s: parsed once per text, shared with spec
    inference, validation and the passes.

    Raises ``TypeError`` when ``text`` is not a ``str``. Never raises for malformed C++.
    """
    if not isinstance(text, str):
        raise TypeError(f"{path}: parse_source expects the source text as str, found {type(text).__name__}")
    parsed = parse(text)
    return parse_tree(parsed.data, text, parsed.tree.root_node, path)


def parse_tree(src: bytes, text: str, root: tree_sitter.Node, path: str) -> SourceFile:
    """``parse_source`` from a tree already parsed: ``root`` is the root of ``src``'s tree
    (``src`` is ``text`` encoded as UTF-8)."""
    keywords = captures_outside_tables(_GLOBAL_QUERY, root, "keyword", src)
    recovery = Recovery(src, [k.start_byte for k in keywords]) if root.has_error else None

    found: dict[tuple[int, int], Kernel] = {}
    errors = list(error_nodes(root))
    for index, keyword in enumerate(keywords):
        kernel, window_errors = _kernel_for_keyword(src, keyword, index, recovery)
        if kernel is not None:
            found.setdefault((kernel.start_byte, kernel.end_byte), kernel)
        errors.extend(window_errors)
    launch_sites = find_launch_sites(src, root)
    index = LaunchIndex(launch_sites)
    kernels = tuple(
        replace(k, launch_sites=index.of(k))
        for k in sorted(found.values(), key=lambda k: (k.start_byte, k.end_byte))
    )
    return SourceFile(
        path=path,
        text=text,
        kernels=kernels,
        launch_sites=launch_sites,
        error_ranges=_unique_ranges(errors),
    )


def _kernel_for_keyword(
    src: bytes, keyword: tree_sitter.Node, index: int, recovery: Recovery | None
) -> tuple[Kernel | None, list[tree_sitter.Node]]:
    """The kernel whose ``__global__`` is ``keyword`` (the ``index``-th in the file), if it defines one.

    Also returns the error nodes found by re-parsing it alone (empty when it was not re-parsed).
    """
    parent = keyword.parent
    definition = parent if parent is not None and parent.type == "function_definition" else None
    if definition is not None and global_token(definition) != keyword:
        definition = None
    scope = enclosing_scope(src, keyword)
    if scope.in_class:
        return None, []

    if recovery is None:  # the whole file parsed cleanly: the tree is right
        if definition is None:
            return None, []
        return kernel_from_definition(src, definition, scope, has_errors=False), []

    original: Kernel | None = None
    if definition is not None:
        original = kernel_from_definition(src, definition, scope, has_errors=False)
        if original is not None and not recovery.is_suspect(definition, index):
            return original, []
    elif parent is not None and not parent.has_error and not any(a.type == "ERROR" for a in ancestors(keyword)):
        return None, []  # a well-formed declaration (a prototype), not a definition

    reparsed, window = recovery.reparse(index)
    if reparsed is not None:
        local = enclosing_scope(src, reparsed)
        merged = Scope(scope.namespaces, local.extern_c if local.extern_c is not None else scope.extern_c)
        kernel = kernel_from_definition(src, reparsed, merged, has_errors=recovery.is_suspect(reparsed, index))
        if kernel is not None:
            return kernel, error_nodes(definition_extent(reparsed))
    # the first error of the window is the likeliest culprit; later ones may be artefacts of
    # cutting the window (braces that close an enclosing namespace or extern "C" block)
    first_error = sorted(error_nodes(window), key=lambda n: n.start_byte)[:1]
    return (replace(original, has_errors=True) if original is not None else None), first_error


def error_nodes(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The outermost ERROR nodes and the MISSING tokens in the subtree of ``node``."""
    if node.is_error or node.is_missing:
        return [node]
    found: list[tree_sitter.Node] = []
    pending = [node] if node.has_error else []
    while pending:
        current = pending.pop()
        for child in current.children:
            if child.is_error or child.is_missing:
                found.append(child)
            elif child.has_error:
                pending.append(child)
    return found


def _unique_ranges(nodes: list[tree_sitter.Node]) -> tuple[Range, ...]:
    spans = sorted({(n.start_byte, n.end_byte): n for n in nodes}.items())
    return tuple(range_of(n) for _, n in spans)
