"""Rewriting the host code's launches of a kernel to a candidate's launch configuration.

A candidate timed with another launch (``cudalens.dropin.LaunchChange``) is only correct where
the program launches it that way. This module finds every ``kernel<<<grid, block[, shared[,
stream]]>>>(args)`` of the kernel in a workspace's ``.cu``/``.cuh``/``.cpp`` files (tree-sitter,
``cudalens.source.launches``) and writes the new configuration there, with the spec's sizes
mapped to the expressions at the site: a size ``rows`` is the argument the site passes in the
position of the kernel parameter whose spec value is ``rows`` (``scalar rows: int = rows``), a
derived size (``size n = rows * cols``) is its expression mapped in turn, ``block.x`` is the
new block's x. ``ceil_div(a, b)`` becomes ``((a) + (b) - 1) / (b)``, ``min``/``max`` a
conditional expression; one axis is written as a number expression, more as ``dim3(x, y)``.
The stream argument is kept; the shared-memory argument is kept when the candidate's ``shared``
is the spec's own and does not depend on the block, else written.

A site cannot be mapped (``UnmappedSite``, with the reason) when the new launch uses
``sm_count`` (the host must query the device), when a size it uses is not passed to the kernel
(no scalar parameter carries it), when the site passes another number of arguments than the
kernel has parameters (a parameter pack, a macro), or when an argument the launch needs has a
side effect (``++``, ``--``, an assignment): evaluating it twice would change the program.
A launch written inside a ``#define`` is never rewritten (``macro_launches``): each use of the
macro may pass another configuration, so the site names the macro and its line.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Optional

from cudalens.kernel_model.syntax import captures, new_parser
from cudalens.source.launches import launch_site_from_call, launches_kernel
from cudalens.source.model import Kernel
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import KernelSpec, LaunchDecl, ScalarDecl
from cudalens.textfile import from_bytes, to_bytes

HOST_SUFFIXES = (".cu", ".cuh", ".cpp")
# Folders never searched for launch sites: version control, build outputs, cudalens' own state.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".cudalens", "build", "node_modules",
                          "__pycache__", ".venv", "venv"})
MAX_FILE_BYTES = 4 << 20  # larger files are generated code: not searched
_SIDE_EFFECT = re.compile(r"\+\+|--|(?<![=!<>])=(?!=)")
_CALL_QUERY = "(call_expression (kernel_call_syntax)) @launch"


class Unmappable(Exception):
    """A launch cannot be written at one site; ``str()`` says why."""


@dataclass(frozen=True)
class SiteEdit:
    """One launch site rewritten: ``config`` (``<<<...>>>``, bytes ``start``-``end`` of the file's
    UTF-8 text, 0-based ``line``/``column`` of its start) becomes ``new``."""

    path: Path
    line: int
    column: int
    start: int
    end: int
    config: str
    new: str

    def where(self, root: Optional[Path] = None) -> str:
        return f"{_shown(self.path, root)}:{self.line + 1}:{self.column + 1}"


@dataclass(frozen=True)
class UnmappedSite:
    """A launch site the new launch cannot be written at, and why."""

    path: Path
    line: int
    column: int
    call: str  # the launch as written, on one line
    reason: str

    def where(self, root: Optional[Path] = None) -> str:
        return f"{_shown(self.path, root)}:{self.line + 1}:{self.column + 1}"


@dataclass(frozen=True)
class LaunchPlan:
    """The launch sites of ``kernel`` in ``root`` for a candidate launched with ``launch``:
    the ones rewritten (``edits``) and the ones that cannot be (``unmapped``), in file order.
    ``texts`` holds the text each edited file was planned against."""

    kernel: str
    launch: LaunchDecl
    root: Path
    edits: tuple[SiteEdit, ...]
    unmapped: tuple[UnmappedSite, ...]
    texts: Mapping[Path, str]

    @property
    def found(self) -> bool:
        """Whether any launch of the kernel was found."""
        return bool(self.edits or self.unmapped)

    def new_texts(self) -> dict[Path, str]:
        """Each edited file's text with its sites rewritten."""
        out: dict[Path, str] = {}
        for path in dict.fromkeys(e.path for e in self.edits):
            data = to_bytes(self.texts[path])
            for e in sorted((e for e in self.edits if e.path == path), key=lambda e: -e.start):
                data = data[:e.start] + to_bytes(e.new) + data[e.end:]
            out[path] = from_bytes(data)
        return out


def _shown(path: Path, root: Optional[Path]) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return str(path)


def workspace_root(path: Path) -> Path:
    """The folder searched for launch sites of a kernel in ``path``: the nearest folder above
    it holding ``.git``, else the file's own folder."""
    start = path.resolve().parent
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def host_files(root: Path) -> Iterator[Path]:
    """The ``.cu``/``.cuh``/``.cpp`` files under ``root`` (sorted; ``SKIPPED_DIRS`` and files
    over ``MAX_FILE_BYTES`` left out)."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(files):
            p = Path(folder) / name
            if p.suffix in HOST_SUFFIXES:
                try:
                    if p.stat().st_size <= MAX_FILE_BYTES:
                        yield p
                except OSError:
                    continue


def c_expression(text: str, names: Mapping[str, str], block: tuple[str, ...]) -> str:
    """The spec expression ``text`` as C++: each name through ``names`` (already C++ text),
    ``block.x/.y/.z`` as ``block``'s C++ axes.

    Raises:
        Unmappable: a name that ``names`` lacks (the message names it).
        cudalens.spec.expr.ExprError: ``text`` is not a spec expression.
    """
    def emit(node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return repr(node.value) if isinstance(node.value, int) else f"{node.value!r}"
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise Unmappable(f"the launch uses '{node.id}', which is not passed to the "
                                 f"kernel here")
            return names[node.id]
        if isinstance(node, ast.Attribute):
            axis = "xyz".index(node.attr)
            return block[axis] if axis < len(block) else "1"
        if isinstance(node, ast.UnaryOp):
            return f"(-{emit(node.operand)})"
        if isinstance(node, ast.BinOp):
            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Mod: "%",
                  ast.LShift: "<<", ast.RShift: ">>"}[type(node.op)]
            return f"({emit(node.left)} {op} {emit(node.right)})"
        if isinstance(node, ast.Call):
            args = [emit(a) for a in node.args]
            if node.func.id == "ceil_div":
                return f"(({args[0]} + {args[1]} - 1) / {args[1]})"
            out = args[0]
            for a in args[1:]:
                cmp = "<" if node.func.id == "min" else ">"
                out = f"({out} {cmp} {a} ? {out} : {a})"
            return out
        raise Unmappable(f"cannot write '{ast.unparse(node)}' as C++")  # parse() rejects it

    out = emit(spec_expr.parse(text))
    return out[1:-1] if out.startswith("(") and _balanced(out[1:-1]) else out


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def _axes(parts: tuple[str, ...]) -> str:
    return parts[0] if len(parts) == 1 else f"dim3({', '.join(parts)})"


def _size_names(spec: KernelSpec, kernel: Kernel, arguments: tuple[str, ...]) -> dict[str, str]:
    """Each size the site's arguments carry, as C++ text: sizes passed as a scalar parameter,
    then sizes defined from those."""
    position = {p.name: i for i, p in enumerate(kernel.parameters)}
    names: dict[str, str] = {}
    for param in spec.params:
        if isinstance(param, ScalarDecl) and param.name in position:
            value = param.expr.strip()
            if value.isidentifier() and value not in names:
                arg = arguments[position[param.name]].strip()
                names[value] = arg if re.fullmatch(r"[A-Za-z_]\w*|\d+", arg) else f"({arg})"
    sizes = {s.name: s.expr for s in spec.sizes}
    for _ in range(len(sizes)):  # sizes defined from mapped ones, to a fixed point
        for name, text in sizes.items():
            if name in names:
                continue
            try:
                names[name] = f"({c_expression(text, names, ())})"
            except (Unmappable, spec_expr.ExprError):
                continue
    return names


def site_config(spec: KernelSpec, kernel: Kernel, launch: LaunchDecl, config: tuple[str, ...],
                arguments: tuple[str, ...]) -> str:
    """The ``<<<...>>>`` text launching ``kernel`` with ``launch`` at a site whose configuration
    and arguments are ``config`` and ``arguments`` (module doc).

    Raises:
        Unmappable: the launch cannot be written at this site (the message says why).
    """
    if len(arguments) != len(kernel.parameters):
        raise Unmappable(f"the launch passes {len(arguments)} argument(s) where "
                         f"{kernel.name} has {len(kernel.parameters)} parameter(s) (a parameter "
                         f"pack or a macro): the sizes cannot be read from it")
    used = set().union(*(spec_expr.names_in(t) for t in (*launch.block, *launch.grid,
                                                         launch.shared or "0")))
    if "sm_count" in used:
        raise Unmappable("the launch uses sm_count, the GPU's number of SMs, which the host "
                         "code must query (cudaDeviceGetAttribute(&n, "
                         "cudaDevAttrMultiProcessorCount, device))")
    names = _size_names(spec, kernel, arguments)
    position = {p.name: i for i, p in enumerate(kernel.parameters)}
    for param in spec.params:
        if isinstance(param, ScalarDecl) and param.expr.strip() in used & set(names) \
                and param.name in position:
            arg = arguments[position[param.name]]
            if _SIDE_EFFECT.search(arg):
                raise Unmappable(f"the argument '{arg.strip()}' (parameter {param.name}) has a "
                                 f"side effect; the launch would evaluate it again")
    block = tuple(c_expression(t, names, ()) for t in launch.block)
    grid = tuple(c_expression(t, names, block) for t in launch.grid)
    parts = [_axes(grid), _axes(block)]
    same_shared = (launch.shared or "0").strip() == (spec.launch.shared or "0").strip() and \
        "block" not in spec_expr.names_in(launch.shared or "0")
    shared = config[2].strip() if len(config) > 2 and same_shared else \
        c_expression(launch.shared or "0", names, block)
    if len(config) > 3 or shared != "0" or len(config) == 3:
        parts.append(shared)
    if len(config) > 3:
        parts.append(config[3].strip())
    return f"<<<{', '.join(parts)}>>>"


_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def _includes(path: Path, text: str) -> set[Path]:
    """The files ``text`` (of ``path``) includes with ``#include "..."``, resolved against its
    folder."""
    return {(path.parent / name).resolve() for name in _INCLUDE.findall(text)}


def _defines(text: str, name: str) -> bool:
    """Whether ``text`` holds a ``__global__`` *definition* named ``name`` (a body follows the
    parameter list; a prototype does not count)."""
    return re.search(rf"__global__[^;{{}}]*\b{re.escape(name)}\s*\([^;{{}}]*\)[^;{{}}]*\{{",
                     text) is not None


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w*)(?P<body>(?:[^\n]*\\\r?\n)*"
                     r"[^\n]*)", re.MULTILINE)


def macro_launches(path: Path, text: str, kernel: str) -> list[UnmappedSite]:
    """The launches of ``kernel`` written in a ``#define``'s body in ``text`` (of ``path``), as
    sites left alone: 0-based line and column of the ``kernel<<<`` in the file."""
    out = []
    launch = re.compile(rf"(?<![\w:.>]){re.escape(kernel)}\s*<<<")
    for m in _DEFINE.finditer(text):
        hit = launch.search(m.group("body"))
        if hit is None:
            continue
        offset = m.start("body") + hit.start()
        line = text.count("\n", 0, offset)
        column = offset - (text.rfind("\n", 0, offset) + 1)
        call = " ".join(m.group(0).replace("\\\n", " ").split())
        out.append(UnmappedSite(path, line, column, call,
                                f"the launch is in the definition of the macro "
                                f"{m.group('name')}: its uses may pass other configurations, "
                                f"so it is not rewritten"))
    return out


def plan_launches(root: Path, kernel: Kernel, spec: KernelSpec, launch: LaunchDecl,
                  texts: Mapping[Path, str] = {}, kernel_path: Optional[Path] = None
                  ) -> LaunchPlan:
    """Every launch of ``kernel`` in ``root``'s host files (``host_files``), each rewritten to
    ``launch`` or named with the reason it cannot be. ``texts`` overrides files' contents (the
    kernel's file with the candidate applied, documents open in an editor); paths resolved.

    ``kernel_path``: the file defining ``kernel``. A launch is matched by the kernel's name;
    when other files define a kernel of that name too, a launch in one of them, or in a file
    that includes one of them and not ``kernel_path``, launches that other kernel and is left
    out."""
    texts = {Path(p).resolve(): t for p, t in texts.items()}
    own = kernel_path.resolve() if kernel_path is not None else None
    paths = list(dict.fromkeys([*(p.resolve() for p in host_files(root)), *texts]))
    edits: list[SiteEdit] = []
    unmapped: list[UnmappedSite] = []
    used: dict[Path, str] = {}
    parser = new_parser()
    for path in paths:
        if path in texts:
            text = texts[path]
        else:
            try:
                text = from_bytes(path.read_bytes())  # line endings kept
            except (OSError, UnicodeDecodeError):
                continue
        if "<<<" not in text:
            continue
        if own is not None and path != own:
            others = {p for p in _includes(path, text) if p != own and p.is_file()
                      and _defines(texts.get(p) or p.read_text(encoding="utf-8",
                                                               errors="replace"), kernel.name)}
            if (_defines(text, kernel.name) or others) and own not in _includes(path, text):
                continue  # it launches a namesake defined elsewhere
        unmapped.extend(macro_launches(path, text, kernel.name))
        src = to_bytes(text)
        for call in captures(_CALL_QUERY, parser.parse(src).root_node, "launch"):
            site = launch_site_from_call(src, call)
            if not launches_kernel(site, kernel):
                continue
            node = next(c for c in call.children if c.type == "kernel_call_syntax")
            line, column = node.start_point
            config_text = from_bytes(src[node.start_byte:node.end_byte])
            try:
                new = site_config(spec, kernel, launch, site.config, site.arguments)
            except Unmappable as exc:
                call_text = " ".join(from_bytes(src[call.start_byte:call.end_byte]).split())
                unmapped.append(UnmappedSite(path, *call.start_point, call_text, str(exc)))
                continue
            used[path] = text
            if new != config_text:
                edits.append(SiteEdit(path, line, column, node.start_byte, node.end_byte,
                                      config_text, new))
    order = {p: i for i, p in enumerate(paths)}
    unmapped.sort(key=lambda u: (order[u.path], u.line, u.column))  # macros found first
    return LaunchPlan(kernel.name, launch, root, tuple(edits), tuple(unmapped), used)
