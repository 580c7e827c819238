"""Errors the CLI and the language server report to the user without a traceback."""

from __future__ import annotations


class CudalensError(Exception):
    """A problem with the user's input or environment; ``str()`` is the message to show."""
