"""The capture file and its manifest.

A capture is two files side by side, ``NAME.npz`` and ``NAME.json``:

* ``NAME.npz`` is a NumPy ``.npz`` archive (a ZIP of ``.npy`` arrays, NumPy's documented
  format: ``numpy.lib.format``; read with ``numpy.load(path, allow_pickle=False)``, no cudalens
  code needed). For each pointer parameter ``P`` it holds ``P.before`` and ``P.after``: 1-D
  arrays of the parameter's element type (``uint8`` when unknown) covering the bytes from the
  pointer to the end of its allocation (or to the next parameter's pointer into the same
  allocation), before and after the launch.
* ``NAME.json`` is the manifest (``Manifest``): format ``cudalens-capture-1``, the kernel, the
  source file and key, the command, the launch configuration, every parameter (bytes in hex,
  scalars decoded, pointers with their element type, length in elements, roles and whether the
  launch changed them) and the ``.npz`` file's sha256.

``read_capture`` refuses, with ``CaptureFileError``, a manifest that is not JSON or not this
format, an archive that is missing, truncated, not a ZIP, of another sha256 than the
manifest says, or whose arrays do not match the manifest's names, types and lengths.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np

from cudalens.errors import CudalensError

FORMAT = "cudalens-capture-1"


class CaptureFileError(CudalensError):
    """A capture file or manifest that cannot be used (module doc)."""


@dataclass(frozen=True)
class ScalarParam:
    index: int
    name: str
    ctype: str
    offset: int
    size: int
    hex: str
    dtype: Optional[str]  # numpy name when the C type is a known scalar type
    value: Union[int, float, None]
    kind: str = "scalar"


@dataclass(frozen=True)
class PointerParam:
    index: int
    name: str
    ctype: str
    offset: int
    size: int
    hex: str
    address: int
    dtype: str  # numpy element type; uint8 when unknown
    length: int  # elements captured from the pointer on
    allocation: int
    allocation_offset: int  # bytes from the allocation's start
    role: str
    replay_role: str
    changed: bool
    note: str = ""
    kind: str = "pointer"


@dataclass(frozen=True)
class Manifest:
    kernel: str
    mangled: str
    demangled: str
    source_file: str
    source_key: str
    command: tuple[str, ...]
    launch_index: int
    api: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    params: tuple[Union[ScalarParam, PointerParam], ...]
    archive: str  # the .npz file name, next to the manifest
    archive_sha256: str = ""
    notes: tuple[str, ...] = ()
    format: str = FORMAT

    @property
    def pointers(self) -> list[PointerParam]:
        return [p for p in self.params if isinstance(p, PointerParam)]

    def param(self, name: str) -> Union[ScalarParam, PointerParam]:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


@dataclass(frozen=True)
class Capture:
    """A manifest and its arrays: ``before[name]``/``after[name]`` per pointer parameter."""

    manifest: Manifest
    before: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    path: Optional[Path] = None  # the manifest's path, once written or read

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.before.values()) + \
            sum(a.nbytes for a in self.after.values())


def manifest_to_dict(m: Manifest) -> dict:
    return asdict(m)


def _param_from_dict(d: dict, where: str) -> Union[ScalarParam, PointerParam]:
    kind = d.get("kind")
    cls = {"scalar": ScalarParam, "pointer": PointerParam}.get(kind)
    if cls is None:
        raise CaptureFileError(f"{where}: expected kind 'scalar' or 'pointer', found {kind!r}")
    try:
        return cls(**d)
    except TypeError as exc:
        raise CaptureFileError(f"{where}: {exc}") from None


def manifest_from_dict(d: dict, where: str) -> Manifest:
    """A ``Manifest`` from its JSON form; ``CaptureFileError`` naming ``where`` otherwise."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        found = d.get("format") if isinstance(d, dict) else type(d).__name__
        raise CaptureFileError(f"{where}: not a cudalens capture manifest (expected format "
                               f"{FORMAT!r}, found {found!r})")
    try:
        params = tuple(_param_from_dict(p, f"{where}: params[{i}]")
                       for i, p in enumerate(d["params"]))
        return Manifest(**{**d, "params": params, "command": tuple(d["command"]),
                           "grid": tuple(d["grid"]), "block": tuple(d["block"]),
                           "notes": tuple(d.get("notes", ()))})
    except (KeyError, TypeError) as exc:
        raise CaptureFileError(f"{where}: malformed manifest ({exc})") from None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_capture(capture: Capture, directory: Path, stem: str) -> Path:
    """Write ``stem.npz`` and ``stem.json`` into ``directory`` (made if missing); returns the
    manifest's path. The archive is written first, the manifest (with the archive's sha256)
    last, so a manifest always describes a complete archive."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = directory / f"{stem}.npz"
    arrays = {}
    for p in capture.manifest.pointers:
        arrays[f"{p.name}.before"] = capture.before[p.name]
        arrays[f"{p.name}.after"] = capture.after[p.name]
    tmp = directory / f".{stem}.npz.tmp"
    with tmp.open("wb") as f:
        np.savez(f, **arrays)
    tmp.replace(archive)
    from dataclasses import replace
    manifest = replace(capture.manifest, archive=archive.name, archive_sha256=_sha256(archive))
    path = directory / f"{stem}.json"
    path.write_text(json.dumps(manifest_to_dict(manifest), indent=2) + "\n", encoding="utf-8")
    return path


def read_manifest(path: Path) -> Manifest:
    """The manifest at ``path`` (a ``.json``; given the ``.npz``, the ``.json`` beside it)."""
    path = Path(path)
    if path.suffix == ".npz":
        path = path.with_suffix(".json")
    if not path.is_file():
        raise CaptureFileError(f"{path}: no such capture manifest")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaptureFileError(f"{path}: not a cudalens capture manifest (not JSON: "
                               f"{exc})") from None
    return manifest_from_dict(data, str(path))


def read_capture(path: Path) -> Capture:
    """The capture whose manifest (or archive) is ``path``, arrays loaded and checked against
    the manifest (module doc). Raises ``CaptureFileError``."""
    path = Path(path)
    manifest = read_manifest(path)
    mpath = path.with_suffix(".json")
    archive = mpath.parent / manifest.archive
    if not archive.is_file():
        raise CaptureFileError(f"{mpath}: its archive {archive} is missing")
    digest = _sha256(archive)
    if manifest.archive_sha256 and digest != manifest.archive_sha256:
        raise CaptureFileError(f"{archive}: sha256 {digest[:12]}... differs from the manifest's "
                               f"{manifest.archive_sha256[:12]}... (truncated or replaced)")
    try:
        with np.load(archive, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise CaptureFileError(f"{archive}: not a readable .npz archive ({exc})") from None
    before, after = {}, {}
    for p in manifest.pointers:
        for side, into in (("before", before), ("after", after)):
            key = f"{p.name}.{side}"
            a = arrays.get(key)
            if a is None:
                raise CaptureFileError(f"{archive}: expected array {key!r}, found only "
                                       f"{', '.join(sorted(arrays)) or 'none'}")
            if a.dtype != np.dtype(p.dtype) or a.shape != (p.length,):
                raise CaptureFileError(f"{archive}: array {key!r} should be {p.length} {p.dtype}, "
                                       f"found shape {a.shape} {a.dtype}")
            into[p.name] = a
    return Capture(manifest, before, after, mpath)


def archive_bytes(capture: Capture) -> bytes:
    """The runner's copy of a capture's arrays: an ``.npz`` in memory with ``P.before`` and
    ``P.after`` for every pointer (same layout as the file)."""
    buf = io.BytesIO()
    arrays = {}
    for p in capture.manifest.pointers:
        arrays[f"{p.name}.before"] = capture.before[p.name]
        arrays[f"{p.name}.after"] = capture.after[p.name]
    np.savez(buf, **arrays)
    return buf.getvalue()
