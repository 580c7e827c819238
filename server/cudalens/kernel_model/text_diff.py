"""The single edit between two versions of a text, as tree-sitter's ``Tree.edit`` takes it:
what incremental parsing needs to reuse the old tree (a document's successive versions,
``source.incremental``; an optimizer candidate's rewrite of the original, ``syntax.parse_near``).
"""

from __future__ import annotations


def edit_between(old: bytes, new: bytes) -> dict[str, object]:
    """The single edit turning ``old`` into ``new``, as ``tree_sitter.Tree.edit`` keywords:
    the longest common prefix and, after it, the longest common suffix are kept; the bytes in
    between are replaced. Points are (row, byte column), as tree-sitter counts them."""
    prefix = _common_prefix(old, new)
    limit = min(len(old), len(new)) - prefix
    suffix = _common_suffix(old, new, limit)
    old_end, new_end = len(old) - suffix, len(new) - suffix
    return {"start_byte": prefix, "old_end_byte": old_end, "new_end_byte": new_end,
            "start_point": _point(old, prefix), "old_end_point": _point(old, old_end),
            "new_end_point": _point(new, new_end)}


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix (binary search over slice comparisons: each is a
    ``memcmp``, so this costs O(n log n) bytes compared at C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix, at most ``limit``."""
    lo, hi = 0, limit
    la, lb = len(a), len(b)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)
