"""Comparing contract values exactly: NaN equals NaN, an int never equals a float."""

from __future__ import annotations

import dataclasses
import math


def assert_exact(a, b, where: str = "") -> None:
    """Assert ``a`` and ``b`` (data classes, tuples, lists, numbers, strings) are equal field by
    field, with NaN equal to NaN and values of different types (``1`` and ``1.0``) unequal;
    the message names the first field that differs (``where`` prefixes it)."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
        for f in dataclasses.fields(a):
            assert_exact(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{where}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_exact(x, y, f"{where}[{i}]")
    else:
        assert type(a) is type(b), f"{where}: {a!r} ({type(a).__name__}) != {b!r}"
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), \
            f"{where}: {a!r} != {b!r}"
