"""Errors raised for malformed or unusable harness specs."""

from __future__ import annotations


class SpecError(ValueError):
    """A spec line is malformed, inconsistent with its kernel, or evaluates to unusable values.

    ``path`` is the spec file (or ``"inferred"`` for a drafted spec), ``line`` the 1-based line
    of the offending declaration (0 when no line applies), ``message`` says what was expected
    and what was found. ``str(err)`` is ``"path:line: message"``, the form editors and
    compilers use, e.g. ``saxpy.cu.spec:4: expected 'ROLE NAME: TYPE[LENGTH]', found 'in x'``.
    """

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")
        self.path = path
        self.line = line
        self.message = message

    def __reduce__(self):  # keep pickling (e.g. across processes) working with three args
        return (SpecError, (self.path, self.line, self.message))
