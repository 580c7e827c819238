"""Moved to ``cudalens.kernel_model.affine`` (the syntax layer's index polynomials); the
names are re-exported here for the passes that import them from the optimizer."""

from cudalens.kernel_model.affine import (Scope, builtin_field, is_global_index, poly_of,
                                          split_linear, strip_casts)

__all__ = ["Scope", "builtin_field", "is_global_index", "poly_of", "split_linear",
           "strip_casts"]
