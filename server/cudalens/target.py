"""Finding what to optimize: a kernel in a file, and the harness spec that says how to call it."""

from __future__ import annotations

import re

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from cudalens.errors import CudalensError
from cudalens.source.model import Kernel, SourceFile
from cudalens.source.parser import parse_source
from cudalens.spec import parser as spec_parser
from cudalens.spec.errors import SpecError
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import KernelSpec
from cudalens.textfile import TextFileError, read_text_file


@dataclass(frozen=True)
class Target:
    """One kernel of one file with its spec.

    ``spec_origin`` is the spec file's path, or ``"inferred"`` when the spec was drafted from
    the kernel's signature and body because no spec file names the kernel.
    """

    path: Path
    text: str
    source: SourceFile
    kernel: Kernel
    spec: KernelSpec
    spec_origin: str

    @property
    def spec_inferred(self) -> bool:
        return self.spec_origin == "inferred"


def read_source(path: Path) -> tuple[str, SourceFile]:
    """Reads and parses a ``.cu``/``.cuh`` file.

    Raises:
        CudalensError: the file is missing or unreadable, or holds no ``__global__`` kernel.
    """
    if path.exists() and not path.is_file():
        raise CudalensError(f"{path}: expected a CUDA source file, found a directory or "
                            f"special file")
    try:
        text = read_text_file(path)
    except TextFileError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise CudalensError(f"{where}: {exc}") from None
    source = parse_source(text, str(path))  # the tree shared through ``syntax.parse``
    if not source.kernels:
        hint = ""
        if re.search(r"^[ \t]*#[ \t]*define\b[^\n]*\b__global__\b", text, re.M):
            hint = ("; a #define in the file spells __global__: kernels declared through a "
                    "macro are not seen by cudalens spec and optimize (write the definitions "
                    "out), though cudalens check, which compiles the file, lists them")
        raise CudalensError(f"{path}: expected at least one __global__ kernel, found none{hint}")
    return text, source


def template_instance(name: Optional[str]) -> Optional[str]:
    """``"reduce<float, 256>"`` -> itself; a name without template arguments -> None."""
    return name.strip() if name is not None and "<" in name else None


def select_kernel(source: SourceFile, name: Optional[str]) -> Kernel:
    """The kernel named ``name``, or the file's only kernel when ``name`` is None. A template
    instance (``reduce<float, 256>``) selects its template (``reduce``).

    Raises:
        CudalensError: no kernel has that name, or several kernels exist and none was named.
    """
    names = _names(source)
    if name is None:
        if len(source.kernels) > 1:
            raise CudalensError(
                f"{source.path}: holds {len(source.kernels)} kernels ({names}); "
                f"choose one with --kernel NAME")
        return source.kernels[0]
    if template_instance(name):
        name = name.split("<")[0].strip()
    same = [k for k in source.kernels if name in (k.name, k.qualified_name)]
    if not same:
        hint = ""
        if name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", source.text):
            hint = (f"; {name!r} appears in the file but not as a kernel definition: a kernel "
                    f"declared through a macro is not seen by cudalens spec and optimize (write "
                    f"its definition out), though cudalens check, which compiles the file, "
                    f"lists it")
        raise CudalensError(f"{source.path}: no __global__ kernel named {name!r} (found: "
                            f"{names}){hint}")
    if len({k.qualified_name for k in same}) < len(same):
        lines = ", ".join(str(k.name_range.start.line + 1) for k in same)
        raise CudalensError(f"{source.path}: {len(same)} overloaded kernels are named {name!r} "
                            f"(lines {lines}); cudalens cannot tell them apart yet")
    return same[0]


def _names(source: SourceFile, most: int = 12) -> str:
    """The file's kernel names for a message, the first ``most`` of them."""
    names = [k.qualified_name for k in source.kernels]
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def check_spec_sections(path: Path, source: SourceFile) -> None:
    """Every section of ``path``'s sidecar spec file names a kernel of ``source``.

    Raises:
        CudalensError: a section names no kernel in the file (a misspelling would otherwise
            pass silently and the kernel would be run with an inferred draft).
    """
    spec_file = spec_parser.spec_path_for(path)
    if not spec_file.is_file():
        return
    try:
        specs = spec_parser.parse_spec(read_text_file(spec_file), str(spec_file))
    except (SpecError, TextFileError):
        return  # reported when the kernel's own spec is loaded
    known = {k.name for k in source.kernels} | {k.qualified_name for k in source.kernels}
    for name, spec in specs.items():
        if name.split("<")[0].strip() not in known:
            raise CudalensError(f"{spec_file}:{spec.line}: section 'kernel {name}' names no "
                                f"__global__ kernel of {path} (found: {_names(source)})")


@dataclass(frozen=True)
class FileContext:
    """What loading any kernel's spec reads around its file (``load_spec``), the same for every
    kernel of one text: ``headers`` (the texts of the headers beside the file it includes,
    then the project headers found through the build's folders), ``defines`` (the build's
    integer ``-D`` values) and ``context`` (the headers and the file's text, joined: where
    spec expressions find ``#define``s)."""

    headers: tuple[str, ...]
    defines: dict
    context: str


def file_context(path: Path, text: str) -> FileContext:
    """The ``FileContext`` of ``path`` holding ``text``: the headers read from disk and the
    build looked up now (a caller loading every kernel of a file makes it once and passes it
    to each ``load_spec``: reading them per kernel made a file of 3,000 kernels take minutes)."""
    from cudalens.build import build_defines, project_header_texts
    from cudalens.spec.headers import local_headers

    own = local_headers(path, text)
    headers = own + tuple(t for t in project_header_texts(path, text) if t not in own)
    return FileContext(headers=headers, defines=build_defines(path),
                       context="\n".join(headers + (text,)))


def load_spec(path: Path, source: SourceFile, kernel: Kernel,
              instance: Optional[str] = None,
              around: Optional[FileContext] = None) -> tuple[KernelSpec, str]:
    """The written spec for ``kernel`` if its sidecar file names it, else an inferred draft.
    ``instance`` (``reduce<float, 256>``) asks for one template instance's section or draft.
    The build's integer ``-D`` values and the project headers found through its ``-I`` folders
    (``cudalens.build``) count as the file's, as its own headers and ``#define``s do: from
    ``around`` when given (``file_context(path, source.text)``), else read now.

    Raises:
        CudalensError: the spec file exists but is malformed or does not fit the kernel; the
            message names the spec file's line.
    """
    if around is None:
        around = file_context(path, source.text)
    headers, defines = around.headers, around.defines
    try:
        spec = spec_parser.load_spec_for(path, kernel, source_text=source.text,
                                         instance=instance, context=around.context,
                                         defines=defines)
    except SpecError as exc:
        raise CudalensError(str(exc)) from None
    if spec is not None:
        return spec, str(spec_parser.spec_path_for(path))
    try:
        spec = infer_spec(kernel, source.text, source.launch_sites, instance=instance,
                          headers=headers, defines=defines)
    except SpecError as exc:
        raise CudalensError(f"{path}:{exc.line}: {exc.message}") from None
    check_draft(path, kernel, spec, around.context, defines)
    return spec, "inferred"


class DraftRefused(CudalensError):
    """An inferred draft that the spec checks refuse; ``spec`` is the draft, for showing."""

    def __init__(self, message: str, spec: KernelSpec) -> None:
        super().__init__(message)
        self.spec = spec


def draft_header(path: Path) -> str:
    """The comment line ``cudalens spec`` prints above a draft (its line 1 once saved)."""
    return f"# draft inferred from {path}; review it, then save it as {path}.spec"


def check_draft(path: Path, kernel: Kernel, spec: KernelSpec, context: str,
                defines: Optional[dict[str, int]] = None) -> None:
    """Runs on a draft the checks a written spec gets when loaded: its text as ``cudalens
    spec`` prints it (``draft_header`` first) through the spec parser (values, CUDA launch
    limits in the nominal and ragged runs) and ``validate`` against the kernel.

    Raises:
        DraftRefused: a check fails; the message names the draft's line as it would be saved
            in the sidecar file and the check's own words.
    """
    from cudalens.spec.defines import file_constants
    from cudalens.spec.parser import validate
    from cudalens.spec.writer import format_spec

    spec_file = spec_parser.spec_path_for(path)
    text = draft_header(path) + "\n" + format_spec(spec)
    try:
        for drafted in spec_parser.parse_spec(text, str(spec_file),
                                              file_constants(context, defines)).values():
            validate(drafted, kernel)
    except SpecError as exc:
        raise DraftRefused(f"{path}: the draft spec inferred for {kernel.qualified_name} fails "
                           f"the checks a saved spec gets, at its line {exc.line} (as saved in "
                           f"{spec_file}): {exc.message}; print it with 'cudalens spec "
                           f"{path}', fix that line and save it as {spec_file}", spec) from None


def first_parse_error(source: SourceFile, kernel: Optional[Kernel] = None):
    """The first region of ``source`` tree-sitter could not parse (a ``Range``, 0-based
    lines and columns), only among those that start inside ``kernel``'s definition when a
    kernel is given; None when there is none."""
    for r in source.error_ranges:
        start = (r.start.line, r.start.column)
        if kernel is None or (kernel.range.start.line, kernel.range.start.column) <= start \
                <= (kernel.range.end.line, kernel.range.end.column):
            return r
    return None


def load_target(path: Path, kernel_name: Optional[str] = None,
                read: Optional[tuple[str, SourceFile]] = None) -> Target:
    text, source = read if read is not None else read_source(path)
    kernel = select_kernel(source, kernel_name)
    check_spec_sections(path, source)
    spec, origin = load_spec(path, source, kernel, template_instance(kernel_name))
    return Target(path=path, text=text, source=source, kernel=kernel, spec=spec,
                  spec_origin=origin)
