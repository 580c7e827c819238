"""Moved to ``cudalens.kernel_model.macros`` (a file's ``#define``s, expanded for analysis);
the names are re-exported here for the passes that import them from the optimizer."""

from cudalens.kernel_model.macros import (Macro, file_macros, int_value, parse_expression,
                                          substitute)

__all__ = ["Macro", "file_macros", "int_value", "parse_expression", "substitute"]
