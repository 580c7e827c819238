"""The project headers a kernel needs, to send with a runner request (``Variant.files``).

From the kernel's text, every include is followed transitively: ``"x.h"`` in the including
file's folder first, then (like ``<x.h>``) in the build's ``-I`` and ``-isystem`` folders, in
order. A header found under the project's root is sent, named by its path relative to the root;
one found nowhere is the toolkit's or the system's and stays on the runner; one found outside
the project through a ``-I`` folder is refused (the runner has no copy; ``-isystem`` folders
outside the project and the toolkit's include folders stay on the runner), as is a set over the
runner's bounds (``gpu_runner.includes``: ``MAX_FILES`` files, ``MAX_FILE_BYTES`` each) or one
whose includes the runner would refuse. The build's folders inside the project become relative
``-I`` options, the kernel's own folder first (on the runner the source is ``kernel.cu`` at the
top of the compile folder, so its quoted includes are found through that option). A kernel whose
own includes climb with ``..`` (``#include "../../common/polybench.h"``) is sent at its path
from the project's root instead (``RequestFiles.source_path``, ``CUDA/GEMM/gemm.cu``), beside
its headers named from that root, so the name resolves from its folder to a sent file, as
the runner allows (``gpu_runner.includes.request_target``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from gpu_runner.compile_folder import MAIN
from gpu_runner.includes import (
    MAX_FILE_BYTES, MAX_FILES, check_file_names, find_includes, refused_includes,
    source_path_problems,
)

from cudalens.build.flags import BuildFlags
from cudalens.build.project import ProjectBuild, build_for
from cudalens.errors import CudalensError
from cudalens.textfile import ERRORS


class HeaderError(CudalensError):
    """The kernel's project headers cannot be sent to the runner (message names the header)."""


@dataclass(frozen=True)
class RequestFiles:
    """What a runner request carries for the build: ``files`` (relative path -> text),
    ``options`` (relative ``-I`` options, then the build's macro options the runner accepts)
    and ``source_path`` (where the runner writes the kernel's file: ``Variant.source_path``)."""

    files: dict
    options: tuple[str, ...]
    source_path: str = MAIN


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def _find(name: str, angle: bool, including: str, dirs: list[str]) -> Optional[str]:
    for folder in ([] if angle else [os.path.dirname(including)]) + dirs:
        candidate = os.path.normpath(os.path.join(folder, name))
        if os.path.isfile(candidate):
            return candidate
    return None


def _toolkit_dirs() -> list[str]:
    """The CUDA toolkit's include folders on this machine (nvcc's own search path)."""
    import shutil  # noqa: PLC0415

    out = []
    nvcc = shutil.which("nvcc")
    roots = [os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))] if nvcc else []
    roots += [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    for r in roots + ["/usr/local/cuda"]:
        folder = os.path.realpath(os.path.join(r, "include"))
        if os.path.isdir(folder) and folder not in out:
            out.append(folder)
    return out


def _runner_option(opt: str) -> bool:
    from gpu_runner.compiler import check_options  # noqa: PLC0415

    return check_options((opt,)) is None


def _project_headers(path: Path, text: str, build: ProjectBuild,
                     reading: bool = False) -> dict[str, str]:
    """The project headers ``text`` (the contents of ``path``) includes, transitively: path
    relative to the project's root -> text. ``reading`` (for inference, which only reads
    them): a header outside the project's root that a quoted include finds from the
    including file's folder (``"../common/bench.h"`` of a file with no build, whose root is
    its own folder) is read too, named by its path from the root (``../common/bench.h``).

    Raises HeaderError naming the header (and the file and line including it) for a header
    outside the project (unless ``reading``), too large or too many."""
    root = os.path.realpath(build.root)
    flags: BuildFlags = build.flags
    dirs = [os.path.realpath(d) for d in (*flags.include_dirs, *flags.system_include_dirs)]
    system = [os.path.realpath(d) for d in flags.system_include_dirs
              if not _inside(os.path.realpath(d), root)] + _toolkit_dirs()
    main = os.path.realpath(path)
    files: dict[str, str] = {}
    todo = [(main, text)]
    seen = {main}
    while todo:
        including, body = todo.pop()
        for inc in find_includes(body):
            if inc.name is None:
                continue
            found = _find(inc.name, inc.angle, including, dirs)
            if found is None:
                continue  # the toolkit's or the system's: on the runner's search path
            found = os.path.realpath(found)
            if found in seen:
                continue
            seen.add(found)
            where = f"{including}:{inc.line}: {inc.spelling}"
            if not _inside(found, root):
                if any(_inside(found, d) for d in system):
                    continue  # the toolkit's or a system folder the build names
                if not (reading and not inc.angle):
                    raise HeaderError(f"{where}: header {found} is outside the project "
                                      f"({root}); only the project's headers are sent to the "
                                      f"runner")
            size = os.path.getsize(found)
            if size > MAX_FILE_BYTES:
                raise HeaderError(f"{where}: header {found} has {size} bytes; the runner takes "
                                  f"at most {MAX_FILE_BYTES} bytes a file")
            # Bytes that are not UTF-8 kept (``textfile``; build_variant escapes them for JSON).
            with open(found, encoding="utf-8", errors=ERRORS, newline="") as f:
                content = f.read()
            files[os.path.relpath(found, root).replace(os.sep, "/")] = content
            if len(files) > MAX_FILES:
                raise HeaderError(f"{where}: header {found} is one too many: the runner takes "
                                  f"at most {MAX_FILES} headers with a kernel")
            todo.append((found, content))
    return files


def request_files(path: Path, text: str, build: ProjectBuild) -> RequestFiles:
    """The headers ``text`` (the contents of ``path``) needs, and the options naming them.

    Raises HeaderError naming the header (and the file and line including it) for a header
    outside the project, too large or too many, or whose includes the runner refuses."""
    files = _project_headers(path, text, build)
    root = os.path.realpath(build.root)
    flags: BuildFlags = build.flags
    dirs = [os.path.realpath(d) for d in (*flags.include_dirs, *flags.system_include_dirs)]
    main = os.path.realpath(path)
    problems = check_file_names(files)
    if problems:
        raise HeaderError(f"{path}: the project headers cannot be sent to the runner: "
                          + "; ".join(problems))
    source_path = _source_path(main, text, root, files)
    bad = refused_includes(text, files, main=str(path), at=source_path)
    if bad:
        raise HeaderError("the runner would refuse these includes: "
                          + "; ".join(str(b) for b in bad[:5]))
    options = []
    if files:
        for folder in (os.path.dirname(main), *dirs):
            if _inside(folder, root):
                rel = os.path.relpath(folder, root).replace(os.sep, "/")
                opt = f"-I{rel}"
                if opt not in options:
                    options.append(opt)
    options += [o for o in flags.macro_options() if _runner_option(o)]
    return RequestFiles(files, tuple(options), source_path)


def _source_path(main: str, text: str, root: str, files: dict) -> str:
    """Where the runner writes the kernel's file: its path from the project's ``root`` when
    one of its quoted includes climbs with ``..`` and that path is one the runner takes
    (``gpu_runner.includes.source_path_problems``); else ``kernel.cu``."""
    if not files or not any(inc.name and not inc.angle and ".." in inc.name.split("/")
                            for inc in find_includes(text)):
        return MAIN
    rel = os.path.relpath(main, root).replace(os.sep, "/")
    if not _inside(main, root) or source_path_problems(rel, files):
        return MAIN
    return rel


def project_header_texts(path: Path, text: str) -> tuple[str, ...]:
    """The texts of ``project_header_files``, in the same order."""
    return tuple(body for _, body in project_header_files(path, text))


def project_header_files(path: Path, text: str) -> tuple[tuple[str, str], ...]:
    """(path relative to ``path``'s folder, as a quoted include names it: ``../common/x.h``,
    text) of the project headers ``text`` (the contents of ``path``) includes,
    transitively, through the build's folders (``_project_headers``), for spec inference;
    () when the build cannot be read or a header is outside the project, too large or too
    many. Headers the runner would refuse to receive (an include through ``..``, PolyBench's
    ``"../../common/polybench.h"``) are read all the same: inference only reads them."""
    try:
        build = build_for(path)
        here = os.path.dirname(os.path.realpath(path))
        return tuple((os.path.relpath(os.path.join(os.path.realpath(build.root), name),
                                      here).replace(os.sep, "/"), body)
                     for name, body in _project_headers(path, text, build,
                                                        reading=True).items())
    except (CudalensError, OSError):
        return ()
