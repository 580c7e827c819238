"""Kernel launch sites: ``name<<<grid, block[, shared[, stream]]>>>(args)`` expressions.

tree-sitter-cuda parses a launch as a ``call_expression`` whose children are the callee
(``function`` field), a ``kernel_call_syntax`` node holding ``<<<`` the configuration ``>>>``
and the ``argument_list``. With template arguments the callee is a ``template_function``.
"""

from __future__ import annotations

from typing import Iterable

import tree_sitter

from .model import Kernel, LaunchSite
from cudalens.kernel_model.syntax import captures_outside_tables, named_children, range_of, squeeze, text_of

_LAUNCH_QUERY = "(call_expression (kernel_call_syntax)) @launch"


def _callee_name(src: bytes, node: tree_sitter.Node | None) -> str:
    """The launched kernel's name as written, template arguments dropped (``ops::k``)."""
    if node is None:
        return ""
    if node.type == "template_function":
        return _callee_name(src, node.child_by_field_name("name"))
    if node.type == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        name = _callee_name(src, node.child_by_field_name("name"))
        if scope is None:
            return name
        scope_name = _callee_name(src, scope) if scope.type == "template_type" else text_of(src, scope)
        return f"{scope_name}::{name}"
    if node.type == "template_type":
        return _callee_name(src, node.child_by_field_name("name"))
    if node.type == "parenthesized_expression":
        inner = named_children(node)
        return _callee_name(src, inner[0]) if len(inner) == 1 else squeeze(text_of(src, node))
    return squeeze(text_of(src, node))


def launch_site_from_call(src: bytes, call: tree_sitter.Node) -> LaunchSite:
    """The ``LaunchSite`` of a ``call_expression`` that has a ``kernel_call_syntax`` child."""
    config_node = next(c for c in call.children if c.type == "kernel_call_syntax")
    arguments = call.child_by_field_name("arguments")
    return LaunchSite(
        kernel=_callee_name(src, call.child_by_field_name("function")),
        config=tuple(text_of(src, c) for c in named_children(config_node)),
        arguments=tuple(text_of(src, a) for a in named_children(arguments)) if arguments is not None else (),
        range=range_of(call),
    )


def find_launch_sites(src: bytes, root: tree_sitter.Node) -> tuple[LaunchSite, ...]:
    """Every kernel launch in the subtree of ``root``, in source order (tables of constants,
    which hold none, are not read: ``syntax.tables``)."""
    return tuple(launch_site_from_call(src, call)
                 for call in captures_outside_tables(_LAUNCH_QUERY, root, "launch", src))


def launches_kernel(site: LaunchSite, kernel: Kernel) -> bool:
    """Whether ``site`` names ``kernel``.

    An unqualified launch (``k<<<...>>>``) matches every kernel named ``k`` whatever its
    namespace; a qualified one (``ops::k``) matches kernels whose qualified name is, or ends
    with, ``::ops::k``. A leading ``::`` is ignored.
    """
    name = site.kernel[2:] if site.kernel.startswith("::") else site.kernel
    if "::" not in name:
        return name == kernel.name
    return kernel.qualified_name == name or kernel.qualified_name.endswith("::" + name)


def launches_of(kernel: Kernel, sites: Iterable[LaunchSite]) -> tuple[LaunchSite, ...]:
    """The launch sites in ``sites`` that launch ``kernel``, in their given order."""
    return tuple(s for s in sites if launches_kernel(s, kernel))


def _last_name(site: LaunchSite) -> str:
    return site.kernel.rsplit("::", 1)[-1]


class LaunchIndex:
    """``launches_of`` for many kernels at once: the sites grouped by the last part of the
    name they launch, so finding a kernel's sites costs its namesakes, not every site (a file
    with K kernels and L launches costs O(K + L) instead of O(K * L))."""

    def __init__(self, sites: Iterable[LaunchSite]):
        self._by_name: dict[str, list[LaunchSite]] = {}
        for site in sites:
            self._by_name.setdefault(_last_name(site), []).append(site)

    def of(self, kernel: Kernel) -> tuple[LaunchSite, ...]:
        """The sites launching ``kernel``, in their given order (as ``launches_of``)."""
        return launches_of(kernel, self._by_name.get(kernel.name, ()))
