"""Explicit inputs and expected results of a case, from a real launch (``cudalens capture``).

A ``Case`` whose ``captured`` is set is not filled with random values: its ``in`` and ``inout``
buffers start from the captured values, and the baseline's re-run must reproduce the captured
results before anything is judged against it (``verify``). The arrays travel as a NumPy
``.npz`` (``NAME.before``: a buffer's values before the launch, ``NAME.after``: after it; 1-D,
the buffer's dtype and length), either inline (``CapturedData.payload``, base64, bounded by
the runner's request body limit) or as a file on the runner's machine (``CapturedData.path``).
``sha256`` is the digest of the ``.npz`` bytes, checked on load.

Loaded arrays are cached by digest (``CACHE_ENTRIES`` most recent), so verifying several seeds
and timing read the archive once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import zipfile
from collections import OrderedDict
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpu_runner.problem import Buffer, Case, CapturedData, Problem

CACHE_ENTRIES = 4
_cache: "OrderedDict[str, tuple[dict, dict]]" = OrderedDict()


class CapturedDataError(ValueError):
    """Captured arrays that are missing, corrupt or do not fit the case's buffers."""


def _archive_bytes(data: CapturedData, where: str) -> bytes:
    if data.payload:
        try:
            return base64.b64decode(data.payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CapturedDataError(f"{where}: the captured payload is not base64 ({exc})") from None
    if data.path:
        try:
            return Path(data.path).read_bytes()
        except OSError as exc:
            raise CapturedDataError(f"{where}: cannot read the captured arrays at {data.path} on "
                                    f"the runner's machine ({exc.strerror or exc}); a remote "
                                    f"runner needs them inline") from None
    raise CapturedDataError(f"{where}: captured data has neither a payload nor a path")


def captured_arrays(case: Case) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(before, after)`` host arrays of ``case``'s captured data, keyed by buffer name,
    checked against the case's buffers (every ``in``/``inout`` buffer has ``before``, every
    ``out``/``inout`` buffer ``after``, each of the buffer's dtype and length). Raises
    ``CapturedDataError``; ``ValueError`` when ``case`` has no captured data."""
    data = case.captured
    where = f"case '{case.label}'"
    if data is None:
        raise ValueError(f"{where}: not a captured case")
    hit = _cache.get(data.sha256)
    if hit is None:
        raw = _archive_bytes(data, where)
        digest = hashlib.sha256(raw).hexdigest()
        if digest != data.sha256:
            raise CapturedDataError(f"{where}: captured arrays have sha256 {digest[:12]}..., "
                                    f"expected {data.sha256[:12]}... (corrupt or replaced)")
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
                arrays = {k: npz[k] for k in npz.files}
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
            raise CapturedDataError(f"{where}: captured arrays are not a readable .npz "
                                    f"({exc})") from None
        before = {k[:-7]: v for k, v in arrays.items() if k.endswith(".before")}
        after = {k[:-6]: v for k, v in arrays.items() if k.endswith(".after")}
        hit = (before, after)
        _cache[data.sha256] = hit
        if len(_cache) > CACHE_ENTRIES:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(data.sha256)
    before, after = hit
    for buf in (a for a in case.args if isinstance(a, Buffer)):
        for side, table, roles in (("before", before, ("in", "inout")),
                                   ("after", after, ("out", "inout"))):
            if buf.role not in roles:
                continue
            a = table.get(buf.name)
            if a is None:
                raise CapturedDataError(f"{where}, buffer '{buf.name}': no captured "
                                        f"'{buf.name}.{side}' array")
            if a.shape != (buf.length,) or a.dtype != np.dtype(buf.dtype):
                raise CapturedDataError(f"{where}, buffer '{buf.name}': expected {buf.length} "
                                        f"{buf.dtype} captured values, found {a.shape} {a.dtype}")
    return before, after


def captured_inputs(case: Case) -> dict[str, np.ndarray]:
    """The captured values of every ``in``/``inout`` buffer of ``case`` (copies)."""
    before, _ = captured_arrays(case)
    return {a.name: before[a.name].copy() for a in case.args
            if isinstance(a, Buffer) and a.role != "out"}


def captured_results(case: Case) -> dict[str, np.ndarray]:
    """The captured results of every ``out``/``inout`` buffer of ``case``."""
    _, after = captured_arrays(case)
    return {a.name: after[a.name] for a in case.args
            if isinstance(a, Buffer) and a.role != "in"}


def inline_paths(problem: Problem) -> Problem:
    """``problem`` with every case's captured ``path`` replaced by the file's bytes inline
    (``payload``), for a worker on another machine (a Ray actor, ``workers.ray_lane``): the file
    is on the runner's machine. A file that cannot be read here is left as a path, so the worker
    reports it as a local run would (``captured_arrays``); the digest is checked there."""
    cases = []
    for case in problem.cases:
        data = case.captured
        if data is not None and data.path and not data.payload:
            try:
                raw = Path(data.path).read_bytes()
            except OSError:
                pass
            else:
                case = replace(case, captured=replace(
                    data, path="", payload=base64.b64encode(raw).decode()))
        cases.append(case)
    return replace(problem, cases=tuple(cases))
