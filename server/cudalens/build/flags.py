"""The build flags cudalens takes from a project's build: include folders, macros, dialect.

``parse_arguments`` reads a compile command's arguments (``compile_commands.json``) through an
allow-list of flag kinds: ``-I``/``-isystem`` folders, ``-D``/``-U`` macros, ``-std``, and a few
options that change what device code means (``--expt-relaxed-constexpr``,
``--extended-lambda``, fast-math switches). ``-arch``/``-gencode``/``-code`` are dropped (the
check's or the runner's target replaces them), and so is everything else (``-o``, ``-c``,
``-Xcompiler ...``, dependency files): their kinds are listed in ``BuildFlags.ignored``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Optional, Sequence

_MACRO = re.compile(r"[A-Za-z_]\w*")
_STD = re.compile(r"c\+\+\d\d")
# Options passed on as they are (full match).
EXTRA_OPTIONS = (r"--?expt-relaxed-constexpr", r"--?(expt-)?extended-lambda",
                 r"--?use_fast_math", r"--?(ftz|prec-div|prec-sqrt|fmad)=(true|false)",
                 r"--?restrict", r"--?extra-device-vectorization")
_TARGET = ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code")
# Options of a compile command that take their value as the next argument.
_WITH_VALUE = {"-I": "include", "--include-path": "include", "-isystem": "system",
               "--system-include": "system", "-D": "define", "--define-macro": "define",
               "-U": "undefine", "--undefine-macro": "undefine", "-std": "std", "--std": "std",
               **{t: "target" for t in _TARGET},
               "-o": "other", "--output-file": "other", "-x": "other", "-Xcompiler": "other",
               "--compiler-options": "other", "-Xptxas": "other", "-ccbin": "other",
               "--compiler-bindir": "other", "-MF": "other", "-MT": "other", "-MQ": "other",
               "-include": "other", "--pre-include": "other", "-Xlinker": "other",
               "-Xnvlink": "other", "-Xcudafe": "other", "-Xarchive": "other", "-L": "other",
               "-l": "other", "-odir": "other", "--keep-dir": "other"}
_JOINED = (("-isystem", "system"), ("-I", "include"), ("-D", "define"), ("-U", "undefine"))


class BuildFlagError(ValueError):
    """A flag a project's configuration gives is not one cudalens may pass (message names it)."""


@dataclass(frozen=True)
class BuildFlags:
    """One file's build flags.

    include_dirs, system_include_dirs: absolute folders, in command order.
    defines: (name, value) in order; value None for ``-DNAME`` (which nvcc defines as 1).
    undefines: names of ``-U``; std: ``c++17`` or None; extra: options of ``EXTRA_OPTIONS``.
    origin: where they come from (``/p/compile_commands.json (entry for /p/src/k.cu)``).
    ignored: the options of the command that were not taken, as written (``-o``, ...).
    """

    include_dirs: tuple[str, ...] = ()
    system_include_dirs: tuple[str, ...] = ()
    defines: tuple[tuple[str, Optional[str]], ...] = ()
    undefines: tuple[str, ...] = ()
    std: Optional[str] = None
    extra: tuple[str, ...] = ()
    origin: str = ""
    ignored: tuple[str, ...] = field(default=(), compare=False)

    @property
    def empty(self) -> bool:
        return not (self.include_dirs or self.system_include_dirs or self.defines
                    or self.undefines or self.std or self.extra)

    def macro_options(self) -> list[str]:
        """``-DNAME[=VALUE]``, ``-UNAME``, ``-std=...`` and the extra options."""
        out = [f"-D{n}" if v is None else f"-D{n}={v}" for n, v in self.defines]
        out += [f"-U{n}" for n in self.undefines]
        if self.std:
            out.append(f"-std={self.std}")
        return out + list(self.extra)

    def nvcc_options(self) -> list[str]:
        """Options for a local nvcc (the compile check, the editor's diagnostics): the folders
        as absolute ``-I``/``-isystem`` options, then ``macro_options``."""
        out = [f"-I{d}" for d in self.include_dirs]
        for d in self.system_include_dirs:
            out += ["-isystem", d]
        return out + self.macro_options()

    def define_values(self) -> dict[str, str]:
        """name -> value of the build's macros after its ``-U``s, as nvcc sees them on the
        command line (``-DNAME`` is ``1``; a later ``-D`` of a name wins)."""
        out: dict[str, str] = {}
        for n, v in self.defines:
            out[n] = "1" if v is None else v
        for n in self.undefines:
            out.pop(n, None)
        return out


def integer_defines(flags: BuildFlags) -> dict[str, int]:
    """The build's macros whose value is an integer literal (``-DTILE=32``, ``-DN=0x100``,
    ``-DM=4u``): name -> value, for spec expressions; others are left out."""
    out = {}
    for name, value in flags.define_values().items():
        m = re.fullmatch(r"\(?\s*([+-]?(?:0[xX][0-9a-fA-F]+|\d+))[uUlL]*\s*\)?", value.strip())
        if m:
            digits = m.group(1)
            octal = re.fullmatch(r"[+-]?0\d+", digits) is not None  # C's 010 is 8
            try:
                out[name] = int(digits, 8 if octal else 0)
            except ValueError:  # 08: not a C integer either
                continue
    return out


def _define(value: str, where: str) -> tuple[str, Optional[str]]:
    name, eq, val = value.partition("=")
    if not _MACRO.fullmatch(name) or "\n" in val:
        raise BuildFlagError(f"{where}: expected -DNAME or -DNAME=VALUE with NAME a C name and a "
                             f"one-line VALUE, found '-D{value}'")
    return name, (val if eq else None)


def parse_arguments(arguments: Sequence[str], directory: str, origin: str = "") -> BuildFlags:
    """The build flags of one compile command's ``arguments`` (the compiler first, as in
    ``compile_commands.json``); relative folders are resolved against ``directory``.
    Flags outside the allow-list are not taken (``ignored``); a malformed ``-D`` raises
    BuildFlagError naming it and ``origin``."""
    inc, sysinc, defs, undefs, extra, ignored = [], [], [], [], [], []
    std: Optional[str] = None
    args = list(arguments[1:])
    i = 0

    def take(kind: str, value: str) -> None:
        nonlocal std
        if kind == "include":
            inc.append(os.path.normpath(os.path.join(directory, value)))
        elif kind == "system":
            sysinc.append(os.path.normpath(os.path.join(directory, value)))
        elif kind == "define":
            defs.append(_define(value, origin or "compile command"))
        elif kind == "undefine":
            if _MACRO.fullmatch(value):
                undefs.append(value)
        elif kind == "std":
            if _STD.fullmatch(value):
                std = value

    while i < len(args):
        a = args[i]
        i += 1
        head, eq, tail = a.partition("=")
        if a in _WITH_VALUE:
            value = args[i] if i < len(args) else ""
            i += 1
            kind = _WITH_VALUE[a]
            if kind == "other":
                ignored.append(a)
            elif kind != "target":
                take(kind, value)
        elif eq and head in _WITH_VALUE:
            kind = _WITH_VALUE[head]
            if kind == "other":
                ignored.append(head)
            elif kind != "target":
                take(kind, tail)
        elif any(re.fullmatch(p, a) for p in EXTRA_OPTIONS):
            extra.append(a)
        elif a.startswith("-") and any(a.startswith(p) and len(a) > len(p) for p, _ in _JOINED):
            prefix, kind = next((p, k) for p, k in _JOINED if a.startswith(p))
            take(kind, a[len(prefix):])
        elif a.startswith("-"):
            ignored.append(a)
    return BuildFlags(tuple(inc), tuple(sysinc), tuple(defs), tuple(undefs), std, tuple(extra),
                      origin, tuple(ignored))
