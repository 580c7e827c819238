"""Moved to ``cudalens.kernel_model.pointer_uses`` (how a body uses its pointer parameters);
the names are re-exported here for the passes that import them from the optimizer."""

from cudalens.kernel_model.pointer_uses import (READ_ONLY_LOADS, PointerUse, UseKind, classify,
                                                pointer_uses)

__all__ = ["READ_ONLY_LOADS", "PointerUse", "UseKind", "classify", "pointer_uses"]
