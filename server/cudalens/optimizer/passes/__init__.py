"""The built-in passes.

A pass is a module with ``name`` (str), ``check(ctx) -> str | None`` (None when it applies,
else the reason it does not, in a CUDA developer's words), ``parameter_space(ctx) ->
tuple[dict, ...]`` (keyword arguments for ``apply``, the default first) and
``apply(ctx, **params) -> PassResult`` (raises ``PassNotApplicable`` when ``check`` fails).
A pass keeps the kernel's parameter names, types and order (it may add qualifiers).

``PASSES`` is in the order the search composes them: qualifiers, then the body rewrite
(``gridstride`` and ``vectorize_gridstride`` exclude each other: after one, the other's
pattern no longer matches), then the block size.
"""

from __future__ import annotations

from types import ModuleType

from cudalens.optimizer.passes import (gridstride, launch_config, restrict_const,
                                       vectorize_gridstride)

PASSES: tuple[ModuleType, ...] = (restrict_const, vectorize_gridstride, gridstride,
                                  launch_config)

BY_NAME: dict[str, ModuleType] = {p.name: p for p in PASSES}


def get(name: str) -> ModuleType:
    """The pass called ``name``. Raises KeyError listing the known passes."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no pass named {name!r} (known: {', '.join(BY_NAME)})") from None
