"""Loading the optimizer's fixture kernels (``tests/data/optimizer``) into pass contexts."""

from __future__ import annotations

from pathlib import Path

from cudalens.optimizer.context import PassContext, make_context
from cudalens.spec.parser import parse_spec

DATA = Path(__file__).parent / "data" / "optimizer"


def context(file: str, kernel: str, text: str | None = None) -> PassContext:
    """The context of ``kernel`` in ``DATA/file`` (or in ``text``, with that file's spec)."""
    path = DATA / file
    source = path.read_text(encoding="utf-8") if text is None else text
    specs = parse_spec((DATA / (file + ".spec")).read_text(encoding="utf-8"), str(path) + ".spec")
    return make_context(source, str(path), kernel, specs[kernel])


def context_with_spec(text: str, kernel: str, spec_text: str, name: str = "snippet.cu") -> PassContext:
    """The context of ``kernel`` in source ``text`` with the spec ``spec_text``."""
    spec = parse_spec(spec_text, name + ".spec")[kernel]
    return make_context(text, name, kernel, spec)
