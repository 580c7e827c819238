"""Find a captured kernel's source in the workspace and key captures by it.

The key is the kernel's source identity as the results store sees it
(``cudalens.store.keys``): the file's text without the *other* kernels' definitions
(``kernel_context``), whitespace-normalized (``normalize_space``), with the kernel's qualified
name, hashed with sha256. Editing the kernel (or what it can see in its file) changes the key,
which marks its captures stale; editing another kernel of the file does not.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from cudalens.source.model import Kernel, SourceFile
from cudalens.source.parser import parse_source
from cudalens.store.keys import kernel_context, normalize_space
from cudalens.textfile import TextFileError, read_text_file, to_bytes

CAPTURE_KEY_VERSION = "cudalens-capture-1"
SOURCE_SUFFIXES = (".cu", ".cuh")
MOST_FILES = 5000
_SKIP_DIRS = {".git", ".cudalens", "node_modules", "__pycache__", ".venv", "venv"}


@dataclass(frozen=True)
class KernelSource:
    """A kernel found in ``path`` (its parsed file ``source``, its text ``text``)."""

    path: Path
    text: str
    source: SourceFile
    kernel: Kernel

    @property
    def key(self) -> str:
        return capture_key(self.source, self.kernel)


def capture_key(source: SourceFile, kernel: Kernel) -> str:
    """Hex sha256 of the kernel's source identity (module doc)."""
    context = normalize_space(kernel_context(source, kernel))
    h = hashlib.sha256()
    for part in (CAPTURE_KEY_VERSION, kernel.qualified_name or kernel.name, context):
        data = to_bytes(part)
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def source_files(root: Path) -> Iterator[Path]:
    """``.cu``/``.cuh`` files under ``root`` (hidden and tool folders skipped), sorted, at
    most ``MOST_FILES``."""
    count = 0
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield Path(top) / name
                count += 1
                if count >= MOST_FILES:
                    return


def _bare(name: str) -> str:
    return re.sub(r"<.*$", "", name).split("::")[-1].strip()


def matches(kernel: Kernel, captured_name: str) -> bool:
    """Whether ``kernel`` is the one the program launched as ``captured_name`` (the demangled
    name without parameters: ``ns::k<float>``); compared with and without namespaces and
    template arguments."""
    want = {captured_name, _bare(captured_name), re.sub(r"<.*$", "", captured_name)}
    have = {kernel.name, kernel.qualified_name or kernel.name, _bare(kernel.name)}
    return bool(want & have)


def find_kernels(root: Path, names: Optional[set[str]] = None) -> list[KernelSource]:
    """Kernels defined in the workspace ``root``, those named in ``names`` only (bare names)
    when given; unreadable files are skipped."""
    found: list[KernelSource] = []
    for path in source_files(root):
        try:
            text = read_text_file(path)
        except (TextFileError, OSError):
            continue
        if "__global__" not in text:
            continue
        parsed = parse_source(text, str(path))
        for k in parsed.kernels:
            if names is None or k.name in names or _bare(k.qualified_name or k.name) in names:
                found.append(KernelSource(path, text, parsed, k))
    return found


def kernel_in_file(path: Path, captured_name: str) -> Optional[KernelSource]:
    """The kernel of ``path`` the capture names, or None."""
    text = read_text_file(path)
    parsed = parse_source(text, str(path))
    for k in parsed.kernels:
        if matches(k, captured_name):
            return KernelSource(path, text, parsed, k)
    return None
