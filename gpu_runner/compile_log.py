"""The second line of defence for compile logs: what nvcc prints is filtered before a client
sees it, so a file the include scanner (``gpu_runner.includes``) failed to refuse cannot be
read back through the log.

What nvcc (13.0, gcc 12 as host compiler) really prints for a source that includes a host
file: the host compiler's preprocessor (``gcc -E``) quotes the file's line under a ``#warning``
or ``#error`` (``    3 | #warning ...`` and a caret line), and the front end (EDG ``cudafe++``)
quotes the line under every error (``  secret text;`` and ``  ^``); the message text itself
may also hold the file's words (``identifier "C" is undefined``, ``#warning WORDS``). So:

- ``runner_options`` turns the source-line echo off in both (``-Xcompiler
  -fno-diagnostics-show-caret`` for gcc, ``-Xcudafe --brief_diagnostics`` for cudafe++: one
  line per diagnostic, its continuation lines kept), and force-includes ``compile_guard.h``,
  which poisons the identifier ``dependency``: a ``#pragma GCC dependency`` built by macros
  (``_Pragma`` of a stringized argument, token pasting, CCCL's ``_CCCL_PRAGMA``) is then a
  compile error, whatever the file's existence or age. Tried with this machine's nvcc: both
  echo options are accepted (``-Xcudafe --no_caret_diagnostics`` is not: "invalid option").
- ``filter_log`` keeps only diagnostics about files of the request (with their message
  text and continuation lines), about the CUDA toolkit's own headers (public text; template
  errors there name the request line that caused them), and nvcc's and ptxas's own summary
  lines (and pycuda's own words around them); every other line is dropped and the number
  dropped is said at the end.
  A file is "of the request" when its path, as nvcc prints it, is relative and stays inside
  the compile's folder once normalised (``suite/a/../../common/x.h``): that folder is fresh
  and holds only what the request sent (``gpu_runner.compile_folder``, pycuda's ``mkdtemp``).
  ``<command-line>`` and ``<built-in>`` (diagnostics about ``-D`` options) stay too.
- A log in which the poison fired is replaced by its poisoned-identifier errors only
  (``guard_log``): the lines after them would say whether the named file exists.
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
import shutil
from functools import lru_cache
from typing import Iterable, Optional, Sequence

GUARD_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_guard.h")
QUIET_ECHO = ("-Xcudafe", "--brief_diagnostics", "-Xcompiler", "-fno-diagnostics-show-caret")
POISONED = 'attempt to use poisoned "dependency"'

_KINDS = r"(?:catastrophic error|fatal error|internal error|error|warning|remark|note)\b"
# EDG: kernel.cu(12): error: ...   /usr/.../cuda_fp16.h(4624): note #3326-D: ...
_EDG = re.compile(r"(?P<file>[^\s(][^()]*?)\((?P<line>\d+)\): " + _KINDS)
# gcc: kernel.cu:3:2: warning: ...   <command-line>: warning: ...
_GCC = re.compile(r"(?:(?P<file>[^\s:][^:]*?):(?P<line>\d+):(?:\d+:)?"
                  r"|(?P<pseudo><command-line>|<built-in>):) " + _KINDS)
_INCLUDED = re.compile(r"(?:In file included from|\s+from) (?P<file>[^\s:][^:]*):\d+(?::\d+)?[:,]")
_SUMMARY = re.compile(
    r"\d+ (?:catastrophic )?errors? detected in the compilation of \"[^\"\n]*\"\."
    r"|[Cc]ompilation terminated\."
    r"|Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\""
    r"|(?:nvcc|ptxas) (?:info|warning|error|fatal)\s*: .*"
    # pycuda's own words around a successful compile's output (its warning's first line)
    r"|The CUDA compiler succeeded, but said the following:"
    r"|nvcc said it demoted types in source code it compiled--this is likely not what you want\.")
_PSEUDO = ("<command-line>", "<built-in>")


def runner_options(options: Sequence[str]) -> list[str]:
    """The nvcc options of every compile of request text: ``QUIET_ECHO``, the forced
    ``-include GUARD_HEADER``, then the request's own ``options`` (already allowed by
    ``gpu_runner.compiler.check_options``, which lets no option undo these)."""
    return [*QUIET_ECHO, "-include", GUARD_HEADER, *options]


@lru_cache(maxsize=8)
def toolkit_include_dirs(nvcc: str = "nvcc") -> tuple[str, ...]:
    """The CUDA toolkit's header folders (real paths): ``include`` and ``targets/*/include``
    under ``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda`` and the folder above the one
    holding ``nvcc`` (found on PATH), those that hold ``cuda_runtime.h``. () when none."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    found = shutil.which(nvcc)
    if found:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(found))))
    out: list[str] = []
    for root in filter(None, roots):
        for d in [os.path.join(root, "include"), *glob.glob(os.path.join(root, "targets", "*",
                                                                           "include"))]:
            real = os.path.realpath(d)
            if os.path.isfile(os.path.join(real, "cuda_runtime.h")) and real not in out:
                out.append(real)
    return tuple(out)


def shown_file(path: str, toolkit: Iterable[str] = ()) -> bool:
    """Whether diagnostics about ``path`` (as nvcc prints it) may be shown: a relative path
    that stays inside the compile's folder, ``<command-line>``/``<built-in>``, or a file
    under one of the ``toolkit`` folders (real paths) once normalised."""
    if path in _PSEUDO:
        return True
    if "\\" in path or path.startswith("~"):
        return False
    norm = posixpath.normpath(path)
    if not posixpath.isabs(norm):
        return norm != ".." and not norm.startswith("../")
    real = os.path.realpath(norm)
    return any(real.startswith(d.rstrip("/") + "/") for d in toolkit)


def pycuda_source_names(log: str, tmp: Optional[str] = None) -> str:
    """``log`` with the names pycuda gives the request's source written as ``kernel.cu``:
    pycuda preprocesses a copy made by ``tempfile.mkstemp(suffix=".cu")``
    (``pycuda.compiler.preprocess_source``), so a failure there names an absolute path
    (``/tmp/tmpab12cd34.cu:1:10: fatal error: evil.h: No such file or directory``) that
    ``filter_log`` would drop as outside the request. ``tmp``: the temporary folder (None:
    ``tempfile.gettempdir()``). Seen on the H200 (2026-12-03): without this, a refused or
    missing header's name was filtered out of the log."""
    import tempfile

    folder = (tmp or tempfile.gettempdir()).rstrip("/")
    return re.sub(re.escape(folder) + r"/tmp[A-Za-z0-9_]{6,}\.cu\b", "kernel.cu", log)


def filter_log(log: str, toolkit: Iterable[str] = ()) -> str:
    """``log`` (nvcc's stdout and stderr) with only the lines that may be shown (module doc):
    diagnostics whose file ``shown_file`` accepts, their indented continuation lines, the
    include chain lines naming such files and nvcc's/ptxas's summary lines; blank lines go
    and every other line is counted in a last line ``[N lines of compiler output about files
    outside the request removed]``."""
    toolkit = tuple(toolkit)
    kept: list[str] = []
    removed = 0
    keeping = False  # whether the last diagnostic was kept (for its continuation lines)
    for line in log.splitlines():
        if not line.strip():
            continue
        inc = _INCLUDED.fullmatch(line)
        diag = None if inc else (_EDG.match(line) or _GCC.match(line))
        if inc or diag:
            m = inc or diag
            keeping = shown_file(m.group("file") or m.groupdict().get("pseudo") or "", toolkit)
            ok = keeping
        elif _SUMMARY.fullmatch(line):
            ok, keeping = True, False
        elif line[0] in " \t":
            ok = keeping
        else:
            ok = keeping = False
        if ok:
            kept.append(line)
        else:
            removed += 1
    if removed:
        kept.append(f"[{removed} line{'s' if removed > 1 else ''} of compiler output about files "
                    f"outside the request removed]")
    return "\n".join(kept)


def guard_log(log: str, toolkit: Optional[Iterable[str]] = None) -> str:
    """The log a client may see for nvcc's ``log``: ``filter_log``; when the poison of
    ``compile_guard.h`` fired (a macro-made ``#pragma GCC dependency``), only those errors and
    a line saying why (what follows them would tell whether the named file exists).
    ``toolkit``: the toolkit's header folders (None: ``toolkit_include_dirs()``)."""
    dirs = toolkit_include_dirs() if toolkit is None else tuple(toolkit)
    shown = filter_log(log, dirs)
    if POISONED not in log:
        return shown
    poisoned = [ln for ln in shown.splitlines() if POISONED in ln]
    return "\n".join([*poisoned, "refused: 'dependency' is poisoned by the runner: "
                      "'#pragma GCC dependency' (also made by macros or _Pragma) opens a file "
                      "by name; a compile request may not use it (rest of the log removed)"])
