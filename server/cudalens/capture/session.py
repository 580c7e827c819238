"""One ``cudalens capture`` run: the recorder built, the program run, captures written.

``capture_program`` returns a ``CaptureOutcome``: the files written, one ``Missing`` per named
kernel without a capture (never launched, launched fewer times than ``--launch``, over
``--max-bytes``, in a graph capture, or the recorder failed), the kernels the program
launched, and the program's exit status and stderr tail. Nothing is written when the program
fails: its results are not trusted.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from cudalens.capture.assemble import assemble
from cudalens.capture.build import recorder_library
from cudalens.capture.container import write_capture
from cudalens.capture.program import ProgramRun, recorder_env, run_program
from cudalens.capture.raw import RawLaunch
from cudalens.capture.sources import find_kernels, matches
from cudalens.errors import CudalensError

DEFAULT_DIR = Path(".cudalens") / "captures"


@dataclass(frozen=True)
class Missing:
    kernel: str
    reason: str


@dataclass(frozen=True)
class CaptureOutcome:
    written: tuple[Path, ...]
    missing: tuple[Missing, ...]
    launched: tuple[str, ...]  # demangled names without parameters, first-launch order
    status: int
    stderr_tail: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def program_failed(self) -> bool:
        return self.status != 0


def _bare(name: str) -> str:
    return re.sub(r"<.*$", "", name).split("::")[-1].strip()


def _without_params(demangled: str) -> str:
    depth = 0
    for i, c in enumerate(demangled):
        depth += (c == "<") - (c == ">")
        if c == "(" and depth == 0:
            return demangled[:i]
    return demangled


def name_matches(wanted: str, demangled: str) -> bool:
    """Whether ``--kernel wanted`` names the launched kernel ``demangled`` (as the recorder
    matches: with or without namespaces and template arguments)."""
    full = _without_params(demangled)
    plain = re.sub(r"<[^()]*>", "", full)
    return wanted in {full, plain, full.split("::")[-1], plain.split("::")[-1]}


def stem_for(raw: RawLaunch) -> str:
    """File name stem of a capture: ``NAME-launchN`` (NAME's unusual characters as ``_``)."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", _without_params(raw.demangled)).strip("_")
    return f"{name or 'kernel'}-launch{raw.launch_index}"


def _why_missing(name: str, run: ProgramRun, launch: int) -> str:
    out = run.output
    count = sum(c for m, c in out.counts.items()
                if name_matches(name, dict(out.launched).get(m, m)))
    seen = [d for _, d in out.launched if name_matches(name, d)]
    if any(name in s for s in out.skipped):
        return "its launch was inside a CUDA graph capture, which cannot be recorded"
    if not seen and any(name_matches(name, d) for _, d in out.runtime_only):
        return ("it was launched through the CUDA runtime, but the launch never reached the "
                "driver's launch functions the recorder watches, so it cannot be captured")
    if not seen:
        names = [_without_params(d) for _, d in out.launched]
        listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30
                                            else "")
        return ("it was never launched; the program launched "
                + (listed if names else "no kernels at all"))
    if out.counts:
        return f"it was launched {count} time(s), fewer than --launch {launch}"
    return f"launch {launch} was not reached (the program did not exit normally)"


class NoCudaDriver(CudalensError):
    """No CUDA driver on this machine: nothing can be captured here."""


DRIVER_LIBRARY = "libcuda.so.1"


def check_driver(library: str = DRIVER_LIBRARY) -> None:
    """Raises ``NoCudaDriver`` when the CUDA driver library cannot be loaded (no NVIDIA GPU
    driver installed): the recorder reads launches through it, and the program could not
    launch a kernel anyway."""
    import ctypes

    try:
        ctypes.CDLL(library)
    except OSError as exc:
        raise NoCudaDriver(f"no CUDA driver found: {library} cannot be loaded ({exc}); "
                           f"capturing needs a machine with an NVIDIA GPU and its driver, where "
                           f"the program runs its kernels") from None


def prepare_recorder(nvcc: str = "nvcc") -> Path:
    """The recorder library to inject, after checking that a driver is there
    (``check_driver``); built on first use (``build.recorder_library``)."""
    check_driver()
    return recorder_library(nvcc)


def capture_program(command: Sequence[str], kernels: Sequence[str], *, launch: int = 1,
                    max_bytes: Optional[int] = None, out_dir: Path = DEFAULT_DIR,
                    workspace: Path = Path("."), nvcc: str = "nvcc",
                    echo=None, cwd: Optional[Path] = None,
                    cancel=None) -> CaptureOutcome:
    """Capture launch ``launch`` of each kernel in ``kernels`` (default: every kernel defined
    in the workspace's ``.cu``/``.cuh`` files) while running ``command`` (in ``cwd``; with
    ``cancel``, a ``threading.Event``, in its own process group, ended when it is set:
    ``program.run_program``). Raises ``CudalensError`` subclasses: no CUDA driver
    (``NoCudaDriver``, before the program runs), recorder build failures, a command that
    cannot start, no kernel to capture, ``ProgramCancelled``."""
    from cudalens.errors import CudalensError

    names = list(kernels)
    if not names:
        names = sorted({k.kernel.name for k in find_kernels(workspace)})
        if not names:
            raise CudalensError(f"no __global__ kernel found in the .cu/.cuh files under "
                                f"{workspace.resolve()}; name the kernel with --kernel NAME")
    library = prepare_recorder(nvcc)
    with tempfile.TemporaryDirectory(prefix="cudalens-capture-") as tmp:
        env = recorder_env(library, Path(tmp), names, launch, max_bytes)
        run = run_program(command, env, Path(tmp), echo=echo, cwd=cwd, cancel=cancel)
        return _collect(run, names, command, launch, out_dir, workspace)


def _collect(run: ProgramRun, names: list[str], command: Sequence[str], launch: int,
             out_dir: Path, workspace: Path) -> CaptureOutcome:
    from cudalens.errors import CudalensError

    out = run.output
    launched = tuple(_without_params(d) for _, d in out.launched)
    notes = list(out.errors)
    if any(DRIVER_LIBRARY in e for e in out.errors):
        notes.append("no CUDA driver found: the recorder could not load " + DRIVER_LIBRARY
                     + "; capturing needs a machine with an NVIDIA GPU and its driver")
    elif not out.ready:
        notes.append("the recorder was not loaded: the program never initialized CUDA, or "
                     "CUDA_INJECTION64_PATH was overridden")
    if out.runtime_only:
        notes.append(f"{len(out.runtime_only)} kernel(s) were launched through the CUDA runtime "
                     f"without reaching the driver's launch functions, and cannot be captured: "
                     + ", ".join(_without_params(d) for _, d in out.runtime_only[:10]))
    if run.status != 0:
        return CaptureOutcome((), tuple(Missing(n, "the program failed") for n in names),
                              launched, run.status, run.stderr_tail, tuple(notes))
    written: list[Path] = []
    missing: list[Missing] = []
    sources = find_kernels(workspace, {_bare(n) for n in names})
    for name in names:
        records = [r for r in out.launches if name_matches(name, r.demangled)]
        if not records:
            missing.append(Missing(name, _why_missing(name, run, launch)))
            continue
        if len(records) > 1:  # several processes of the program launched it
            notes.append(f"{name}: {len(records)} processes recorded launch {launch}; the "
                         f"first is kept")
        for raw in records[:1]:
            if raw.refused is not None:
                total, limit = raw.refused
                missing.append(Missing(name, f"the capture would be {total} bytes, over "
                                             f"--max-bytes {limit}; nothing was copied"))
                continue
            if raw.error:
                missing.append(Missing(name, f"the recorder failed: {raw.error}"))
                continue
            found = [s for s in sources if matches(s.kernel, _without_params(raw.demangled))]
            if not found:
                notes.append(f"{name}: no source for {raw.demangled} under {workspace}; the "
                             f"capture has no source key and untyped buffers")
            try:
                capture = assemble(raw, found[0] if found else None, command)
            except CudalensError as exc:
                missing.append(Missing(name, str(exc)))
                continue
            key = capture.manifest.source_key[:16] or "no-source"
            written.append(write_capture(capture, out_dir / key, stem_for(raw)))
    return CaptureOutcome(tuple(written), tuple(missing), launched, run.status, run.stderr_tail,
                          tuple(notes))
