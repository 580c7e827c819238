"""The captures of a kernel in a workspace, each marked current or stale.

Captures live under ``<root>/.cudalens/captures/<KEY16>/NAME-launchN.json`` (``session``).
A capture is *current* when its manifest's ``source_key`` is the kernel's key now
(``sources.capture_key``) and *stale* otherwise: editing the kernel (or what it sees in its
file) makes its captures stale, editing another kernel of the file does not. For the editor's
Optimize and for listing; ``replay.load_replay`` refuses stale ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cudalens.capture.container import CaptureFileError, Manifest, read_manifest
from cudalens.capture.session import DEFAULT_DIR
from cudalens.capture.sources import capture_key, matches
from cudalens.source.model import Kernel, SourceFile


@dataclass(frozen=True)
class CaptureEntry:
    path: Path  # the manifest
    manifest: Manifest
    stale: bool


def captures_of(root: Path, source: SourceFile, kernel: Kernel,
                folder: Path = DEFAULT_DIR) -> list[CaptureEntry]:
    """The captures of ``kernel`` under ``root / folder``, current ones first, then by path.
    Manifests that cannot be read are left out."""
    key = capture_key(source, kernel)
    out: list[CaptureEntry] = []
    base = root / folder
    if not base.is_dir():
        return out
    for path in sorted(base.glob("*/*.json")):
        try:
            m = read_manifest(path)
        except CaptureFileError:
            continue
        if matches(kernel, m.kernel):
            out.append(CaptureEntry(path, m, m.source_key != key))
    return sorted(out, key=lambda e: (e.stale, str(e.path)))
