"""Counting tree-sitter parses: ``count_parses(monkeypatch)`` makes every ``tree_sitter.Parser``
created from then on record each parse as (the bytes parsed, ``file:line`` of its caller) and
empties the one parse cache (``kernel_model.syntax``), so a test sees every parse it causes."""

from __future__ import annotations

import traceback
from pathlib import Path

import tree_sitter

from cudalens.kernel_model import syntax


class _CountingParser:
    """A tree-sitter parser that records each parse's bytes and caller in ``seen``."""

    def __init__(self, real, seen: list[tuple[bytes, str]]):
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_seen", seen)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __setattr__(self, name, value):
        setattr(self._real, name, value)

    def parse(self, data, *args, **kwargs):
        caller = next(f for f in reversed(traceback.extract_stack()[:-1])
                      if "tree_sitter" not in f.filename)
        self._seen.append((bytes(data), f"{Path(caller.filename).name}:{caller.lineno}"))
        return self._real.parse(data, *args, **kwargs)


def count_parses(monkeypatch) -> list[tuple[bytes, str]]:
    """The list every parse from now on is appended to (see the module doc); ``monkeypatch``
    undoes the patch, call ``syntax.clear_parses()`` after to drop the parses made."""
    seen: list[tuple[bytes, str]] = []
    real = tree_sitter.Parser
    monkeypatch.setattr(tree_sitter, "Parser", lambda *a, **k: _CountingParser(real(*a, **k), seen))
    monkeypatch.setattr(syntax, "_local", type(syntax._local)())  # ``parse``'s parser: a new one
    syntax.clear_parses()
    return seen
