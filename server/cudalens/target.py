"""Finding what to optimize: a kernel in a file, and the harness spec that says how to call it."""

from __future__ import annotations

import functools
import re
import shlex

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
    the kernel's signature and body because no spec file names the kernel. ``around``: what
    was read around the file (``FileContext``: its headers, the build's ``-D``), whose
    macros the passes expand (``optimizer.context.make_context``); None when not read.
    """

    path: Path
    text: str
    source: SourceFile
    kernel: Kernel
    spec: KernelSpec
    spec_origin: str
    around: Optional["FileContext"] = None

    @property
    def header_macros(self):
        """``around.macros`` (``kernel_model.macros.HeaderMacros``), or None."""
        return self.around.macros if self.around is not None else None

    @property
    def spec_inferred(self) -> bool:
        return self.spec_origin == "inferred"


MAX_INCLUDED_BYTES = 1 << 20  # an included file larger than this is not read for kernels


@dataclass(frozen=True)
class IncludedKernels:
    """A file ``path`` (the including file's folder joined with the name, as a user would type
    it) that a file includes with quotes at ``line`` (1-based; ``spelling``, the directive as
    written) and that defines the ``__global__`` kernels ``kernels`` (qualified names)."""

    path: Path
    line: int
    spelling: str
    kernels: tuple[str, ...]


def included_kernels(path: Path, text: str) -> list[IncludedKernels]:
    """The files ``text`` (the contents of ``path``) includes with quotes that exist beside it
    (relative to its folder) and define ``__global__`` kernels, in include order; Rodinia's
    ``bfs.cu`` holds the host code and ``#include "kernel.cu"``, where the kernels are. Files
    over ``MAX_INCLUDED_BYTES`` or unreadable are skipped; one level deep."""
    from gpu_runner.includes import find_includes

    out: list[IncludedKernels] = []
    seen: set[Path] = set()
    for inc in find_includes(text):
        if inc.name is None or inc.angle or inc.next or inc.name.startswith("/"):
            continue
        file = path.parent / inc.name
        try:
            if file.resolve() in seen or not file.is_file() \
                    or file.stat().st_size > MAX_INCLUDED_BYTES:
                continue
            seen.add(file.resolve())
            included = parse_source(read_text_file(file), str(file))
        except (OSError, TextFileError):
            continue
        if included.kernels:
            out.append(IncludedKernels(file, inc.line, inc.spelling,
                                       tuple(k.qualified_name for k in included.kernels)))
    return out


def _run_on(found: IncludedKernels, command: str, kernel: Optional[str]) -> str:
    """``cudalens COMMAND FILE --kernel NAME`` for a kernel of an included file."""
    name = kernel if kernel is not None else found.kernels[0]
    return f"cudalens {command} {shlex.quote(str(found.path))} --kernel {shlex.quote(name)}"


def _included_hint(path: Path, text: str, command: str,
                   kernel_name: Optional[str] = None) -> str:
    """The ``; ...`` sentence naming the included files that hold kernels (for a file with
    none, or none of that name) and the command to run on one; "" when there is none."""
    found = included_kernels(path, text)
    if kernel_name is not None:
        base = kernel_name.split("<")[0].strip()
        found = [f for f in found if any(base in (k, k.split("::")[-1]) for k in f.kernels)]
    if not found:
        return ""
    where = "; ".join(f"{f.path} (line {f.line}: {f.spelling}) defines {', '.join(f.kernels)}"
                      for f in found[:3])
    which = "that file" if len(found) == 1 else "one of them"
    return (f"; the kernels are in the file{'s' if len(found) > 1 else ''} it includes: "
            f"{where}; run cudalens on {which}: {_run_on(found[0], command, kernel_name)}")


def read_source(path: Path, command: str = "spec",
                kernel_name: Optional[str] = None) -> tuple[str, SourceFile]:
    """Reads and parses a ``.cu``/``.cuh`` file. ``command`` (``spec``, ``plan``,
    ``optimize``) and ``kernel_name`` word the next command a message suggests.

    Raises:
        CudalensError: the file is missing or unreadable, or holds no ``__global__`` kernel
            (naming the files it includes that hold kernels, with the command to run on one).
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
        hint += _included_hint(path, text, command, kernel_name)
        raise CudalensError(f"{path}: expected at least one __global__ kernel, found none{hint}")
    return text, source


def template_instance(name: Optional[str]) -> Optional[str]:
    """``"reduce<float, 256>"`` -> itself; a name without template arguments -> None."""
    return name.strip() if name is not None and "<" in name else None


def select_kernel(source: SourceFile, name: Optional[str], command: str = "spec") -> Kernel:
    """The kernel named ``name``, or the file's only kernel when ``name`` is None. A template
    instance (``reduce<float, 256>``) selects its template (``reduce``).

    Raises:
        CudalensError: no kernel has that name (naming an included file that defines it, with
            ``cudalens COMMAND`` to run on it), or several kernels exist and none was named.
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
        hint = _included_hint(Path(source.path), source.text, command, name) if name else ""
        if not hint and name and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", source.text):
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
    then the project headers found through the build's folders; first, when the build has
    ``-D`` options, one text of a ``#define`` line per option, as the preprocessor sees
    them before the file, then ``early``, the file's own ``#define``s before its first
    include, ``early_defines``), ``defines`` (the build's integer ``-D`` values) and ``context``
    (the headers and the file's text, joined: where spec expressions find ``#define``s).
    ``header_names``: the name of each header read (as included, or relative to the
    project's root), in the order of ``headers`` after the ``-D`` text; ``build_macros``:
    every ``-D`` (name, value), ``-DNAME`` as ``(NAME, "1")``. ``macros``: the macros the
    passes expand in the file's text (``kernel_model.macros.HeaderMacros``)."""

    headers: tuple[str, ...]
    defines: dict
    context: str
    hosts: tuple["HostFile", ...] = ()
    header_names: tuple[str, ...] = ()
    build_macros: tuple[tuple[str, str], ...] = ()
    early: str = ""

    @functools.cached_property
    def macros(self):
        from cudalens.kernel_model.macros import header_macros

        texts = self.headers[len(self.headers) - len(self.header_names):] \
            if self.header_names else ()
        named = tuple(zip(self.header_names, texts))
        return header_macros(((("", self.early),) if self.early else ()) + named,
                             self.build_macros)


_EARLY_STOP = re.compile(r"^[ \t]*#[ \t]*(include|if|ifdef|ifndef|elif|else|endif)\b")
_EARLY_KEEP = re.compile(r"^[ \t]*#[ \t]*(define|undef)\b")


def early_defines(text: str) -> str:
    """The lines of ``text`` before its first ``#include`` (or first conditional) with only
    its ``#define``/``#undef`` lines kept, the others blank (lines keep their numbers); ""
    when there are none. A ``#define DATA_TYPE double`` there comes before the headers'
    ``#ifndef DATA_TYPE`` default, as the preprocessor reads them."""
    out = []
    for line in text.split("\n"):
        if _EARLY_STOP.match(line):
            break
        out.append(line if _EARLY_KEEP.match(line) and not line.rstrip().endswith("\\")
                   else "")
    return "\n".join(out) if any(out) and len(out) < len(text.split("\n")) else ""


def build_prelude(build_macros) -> str:
    """``#define NAME VALUE`` lines for the build's -D (name, value) pairs, in order."""
    return "".join(f"#define {n} {v}\n" for n, v in build_macros)


@dataclass(frozen=True)
class HostFile:
    """A file ``path`` (text ``text``) in a kernel file's folder that includes the kernel
    file with quotes at ``line`` (1-based): where its launches are when the kernel file has
    none (Rodinia's ``bfs.cu`` including ``kernel.cu``)."""

    path: Path
    text: str
    line: int


MAX_HOST_FILES = 256  # files of the folder looked at for a kernel file's includer
_HOST_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


def host_files(path: Path, text: str) -> tuple[HostFile, ...]:
    """The files beside ``path`` (the first ``MAX_HOST_FILES`` by name, each at most
    ``MAX_INCLUDED_BYTES``, ending in ``_HOST_SUFFIXES``) that ``#include "NAME"`` it, NAME
    naming ``path`` from their folder; () when ``text`` launches a kernel itself (``<<<``) or
    the folder cannot be read."""
    if "<<<" in text:
        return ()
    from gpu_runner.includes import find_includes

    try:
        me = path.resolve()
        names = sorted(p for p in path.parent.iterdir() if p.suffix in _HOST_SUFFIXES)
    except OSError:
        return ()
    out = []
    for other in names[:MAX_HOST_FILES]:
        try:
            if other.resolve() == me or not other.is_file() \
                    or other.stat().st_size > MAX_INCLUDED_BYTES:
                continue
            body = read_text_file(other)
        except (OSError, TextFileError):
            continue
        if path.name not in body or "<<<" not in body:
            continue
        for inc in find_includes(body):
            if inc.name and not inc.angle and (other.parent / inc.name).resolve() == me:
                out.append(HostFile(other, body, inc.line))
                break
    return tuple(out)


def include_order(text: str, named: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``named`` ((header name, text) pairs) in the order the preprocessor reads them from
    ``text``: depth first through each header's own quoted includes, in their order; a
    header is matched to an include by the include's path without its leading ``../``
    segments ending the header's name. Headers no include matches come last, as given."""
    from gpu_runner.includes import find_includes

    out: list[tuple[str, str]] = []
    left = list(named)

    def visit(body: str, depth: int) -> None:
        if depth > 16:
            return
        for inc in find_includes(body):
            if inc.name is None or inc.angle:
                continue
            parts = [p for p in inc.name.replace("\\", "/").split("/") if p not in ("", ".")]
            while parts and parts[0] == "..":
                parts.pop(0)
            tail = "/".join(parts)
            hit = next((h for h in left if tail and (h[0] == tail or h[0].endswith("/" + tail))),
                       None)
            if hit is not None:
                left.remove(hit)
                out.append(hit)
                visit(hit[1], depth + 1)

    visit(text, 0)
    return tuple(out + left)


def file_context(path: Path, text: str) -> FileContext:
    """The ``FileContext`` of ``path`` holding ``text``: the headers read from disk and the
    build looked up now (a caller loading every kernel of a file makes it once and passes it
    to each ``load_spec``: reading them per kernel made a file of 3,000 kernels take minutes),
    and the files of its folder that include it (``host_files``)."""
    from cudalens.build import build_defines, build_macro_values, project_header_files
    from cudalens.spec.headers import local_header_files

    own = local_header_files(path, text)
    texts = {body for _, body in own}
    named = include_order(text, own + tuple((n, t) for n, t in project_header_files(path, text)
                                            if t not in texts))
    build = tuple(build_macro_values(path).items())
    headers = tuple(t for _, t in named)
    early = early_defines(text) if named else ""
    headers = ((build_prelude(build),) if build else ()) + ((early,) if early else ()) + headers
    return FileContext(headers=headers, defines=build_defines(path),
                       context="\n".join(headers + (text,)), hosts=host_files(path, text),
                       header_names=tuple(n for n, _ in named), build_macros=build,
                       early=early)


def _line_mapper(own_lines: int, host: HostFile):
    """A note's ``line N`` in the joined text (the kernel file's ``own_lines`` lines, then the
    host file's) as the file it is in: ``line N`` of the kernel file, ``line M of HOST``."""
    def fix(m: "re.Match") -> str:
        n = int(m.group(2))
        if n <= own_lines:
            return m.group(0)
        return f"{m.group(1)}{n - own_lines} of {host.path.name}"
    return lambda note: re.sub(r"\b(lines? )(\d+)\b(?!-)", fix, note)


def _draft_with_host(kernel: Kernel, text: str, host: HostFile, instance: Optional[str],
                     headers: tuple[str, ...], defines: dict,
                     macros=None) -> Optional[KernelSpec]:
    """``kernel``'s draft read with the launch sites of ``host``, a file that includes
    ``text``: drafted from the kernel file's text followed by the host's (its include of the
    kernel file blanked), as the compiler sees one translation unit; the notes' lines are the
    files' own. None when the host does not launch the kernel."""
    from dataclasses import replace

    from cudalens.source.launches import launches_of

    own = text if text.endswith("\n") else text + "\n"
    lines = host.text.split("\n")
    lines[host.line - 1] = ""
    joined = parse_source(own + "\n".join(lines), str(host.path))
    same = [k for k in joined.kernels
            if k.qualified_name == kernel.qualified_name and k.start_byte == kernel.start_byte]
    if not same or not launches_of(same[0], joined.launch_sites):
        return None
    spec = infer_spec(same[0], joined.text, joined.launch_sites, instance=instance,
                      headers=headers, defines=defines, macros=macros)
    fix = _line_mapper(own.count("\n"), host)
    note = (f"launch sites from {host.path.name}, which includes this file at its line "
            f"{host.line}")
    return replace(spec, notes=(note,) + tuple(fix(n) for n in spec.notes))


def load_spec(path: Path, source: SourceFile, kernel: Kernel,
              instance: Optional[str] = None,
              around: Optional[FileContext] = None) -> tuple[KernelSpec, str]:
    """The written spec for ``kernel`` if its sidecar file names it, else an inferred draft.
    ``instance`` (``reduce<float, 256>``) asks for one template instance's section or draft.
    The build's integer ``-D`` values and the project headers found through its ``-I`` folders
    (``cudalens.build``) count as the file's, as its own headers and ``#define``s do: from
    ``around`` when given (``file_context(path, source.text)``), else read now. A file that
    launches no kernel is drafted with the launch sites of a file of its folder that includes
    it (``around.hosts``), when one launches the kernel.

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
        spec = None
        if not source.launch_sites:  # the host code is elsewhere: a file including this one?
            for host in around.hosts:
                spec = _draft_with_host(kernel, source.text, host, instance, headers, defines,
                                        around.macros)
                if spec is not None:
                    break
        if spec is None:
            spec = infer_spec(kernel, source.text, source.launch_sites, instance=instance,
                              headers=headers, defines=defines, macros=around.macros)
    except SpecError as exc:
        raise CudalensError(f"{path}:{exc.line}: {exc.message}") from None
    check_draft(path, kernel, spec, around.context, defines)
    from cudalens.spec.validate import check_host_set_globals

    try:
        check_host_set_globals(spec, kernel, source.text)
    except SpecError as exc:
        raise DraftRefused(f"{path}: {exc.message}", spec) from None
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
                read: Optional[tuple[str, SourceFile]] = None,
                command: str = "spec") -> Target:
    """The kernel ``kernel_name`` of ``path`` (``select_kernel``) with its spec (``load_spec``);
    ``read``: the file's (text, source) when read already; ``command``: the cudalens command
    a message suggests running on an included file. Raises CudalensError as those do."""
    text, source = read if read is not None else read_source(path, command, kernel_name)
    kernel = select_kernel(source, kernel_name, command)
    check_spec_sections(path, source)
    around = file_context(path, text)
    spec, origin = load_spec(path, source, kernel, template_instance(kernel_name), around)
    return Target(path=path, text=text, source=source, kernel=kernel, spec=spec,
                  spec_origin=origin, around=around)
