"""Reading harness spec files (``saxpy.cu.spec``) into :class:`KernelSpec` objects.

The format is described in README.md, "Harness spec"; in short, one declaration
per line, ``#`` comments, sections started by ``kernel NAME``::

    kernel saxpy
    size n = 1 << 24
    scalar n: int = n
    in x: float[n]
    inout y: float[n]
    block = 256
    grid = ceil_div(n, block.x)

Beyond those: ``multiple NAME = EXPR`` keeps the ragged value of a size a multiple of a tile,
``reads = EXPR`` / ``writes = EXPR`` give the bytes a launch really moves, and a buffer may say
how its inputs are drawn after its length: ``normal(MEAN, STD)``, ``csr(NNZ)``, ``sorted``,
``permutation``, ``unique`` (with or without ``range(LOW, HIGH)`` as each allows). Expressions
may name the integer constants the caller passes (the file's ``#define``s, ``-D`` values).

Comment-only lines between a ``kernel`` header and the section's first declaration are kept
as the spec's ``notes`` (the writer puts inference notes there).

Every problem raises :class:`SpecError` naming the file and line and saying what was expected
and what was found. Besides syntax, the parser checks names (sizes declared before use,
``block`` only in grid/shared/lengths, ``sm_count`` only in grid) and evaluates the section
once with its nominal and ragged sizes, so values such as a zero length or a 2048-thread
block are reported at the line that declares them.
"""

from __future__ import annotations

import functools
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from cudalens.source.model import Kernel
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import ExprError, evaluate, names_in
from cudalens.spec.model import (BufferDecl, CheckDecl, KernelSpec, LaunchDecl, MultipleDecl,
                                 ScalarDecl, SizeDecl)
from cudalens.spec.resolve import check_values
from cudalens.spec.validate import validate
from cudalens.textfile import TextFileError, escaped_byte, read_text_file

__all__ = ["parse_spec", "load_spec_for", "validate", "spec_path_for"]

IDENT = r"[A-Za-z_]\w*"
_KEYWORD_RE = re.compile(rf"^({IDENT})")
_KERNEL_NAME_RE = re.compile(rf"^(?:{IDENT}::)*{IDENT}(?:\s*<.*>)?$")
_SIZE_RE = re.compile(r"^(?:size|check)\s+(?P<name>\S+?)\s*=\s*(?P<expr>.*)$")
_SCALAR_RE = re.compile(r"^scalar\s+(?P<name>\S+?)\s*:\s*(?P<type>\S+?)\s*=\s*(?P<expr>.*)$")
_BUFFER_RE = re.compile(
    r"^(?P<role>inout|in|out)\s+(?P<name>\S+?)\s*:\s*(?P<type>[^\s\[\]]+)\s*"
    r"\[(?P<length>[^\[\]]*)\]\s*(?P<rest>.*)$")
_MODIFIER_RE = re.compile(r"^(?P<word>[A-Za-z_]\w*)\s*")
FILLS_WITH_ARGS = {"normal": 2, "csr": 1}
FILLS_PLAIN = ("sorted", "permutation", "unique")
_FILL_FORMS = {"normal": "normal(MEAN, STD)", "csr": "csr(NNZ)", "sorted": "sorted",
               "permutation": "permutation", "unique": "unique"}
_MULTIPLE_RE = re.compile(r"^multiple\s+(?P<name>\S+?)\s*=\s*(?P<expr>.*)$")
_ASSIGN_RE = re.compile(r"^(?P<key>[A-Za-z_]\w*)\s*=\s*(?P<expr>.*)$")
_IDENT_RE = re.compile(rf"^{IDENT}$")

KEYWORDS = ("kernel", "size", "check", "multiple", "scalar", "in", "out", "inout", "block",
            "grid", "shared", "flops", "reads", "writes", "tolerance", "atomics")
RESERVED = ("block", "sm_count")  # names expressions give their own meaning
# A spec's tolerance t holds each element to |cand - ref| <= t * (|ref| + max |ref|)
# (resolve.build_problem): from t = 0.5 an all-zero output passes everywhere, and already at
# 0.25 wherever |ref| is under a third of the largest; tolerances from here on are refused.
MAX_TOLERANCE = 0.25

_FORMS = {
    "kernel": "kernel NAME",
    "size": "size NAME = EXPR",
    "check": "check NAME = EXPR",
    "multiple": "multiple NAME = EXPR",
    "reads": "reads = EXPR",
    "writes": "writes = EXPR",
    "scalar": "scalar NAME: TYPE = EXPR",
    "buffer": "ROLE NAME: TYPE[LENGTH]",
    "block": "block = EXPR[, EXPR[, EXPR]]",
    "grid": "grid = EXPR[, EXPR[, EXPR]]",
    "shared": "shared = EXPR",
    "flops": "flops = EXPR",
    "tolerance": "tolerance = NUMBER",
    "atomics": "atomics",
}


def spec_path_for(source_path: Union[str, Path]) -> Path:
    """The sidecar spec file of a source file: ``saxpy.cu`` -> ``saxpy.cu.spec``."""
    p = Path(source_path)
    return p.with_name(p.name + ".spec")


def load_spec_for(source_path: Union[str, Path], kernel: Union[str, Kernel],
                  source_text: Optional[str] = None, *,
                  defines: Optional[dict[str, int]] = None,
                  instance: Optional[str] = None,
                  context: Optional[str] = None) -> Optional[KernelSpec]:
    """The spec of ``kernel`` from the sidecar file of ``source_path``, or None.

    ``kernel`` is a name (plain or qualified) or a :class:`Kernel`; with a ``Kernel`` the spec
    is also validated against its signature, and with ``source_text`` too (the text the
    ``Kernel`` was parsed from) its roles against its body (``validate.check_roles``).
    ``instance`` (``reduce<float, 256>``) picks the section of one template instance; without
    it a template kernel's only ``kernel NAME<ARGS>`` section is taken. Expressions may name
    ``source_text``'s integer ``#define``s (``context``'s, when given: the file with the
    headers it includes) and ``defines`` (the build's -D values, which win).
    Returns None when the sidecar file does not exist or has no section for the kernel.

    Raises:
        SpecError: the file is malformed, unreadable, or (with a ``Kernel``) does not fit it;
            also when several template-instance sections fit and none was asked for.
    """
    from cudalens.spec.defines import file_constants

    path = spec_path_for(source_path)
    if not path.exists():
        return None
    try:
        text = read_text_file(path)
    except TextFileError as exc:
        raise SpecError(str(path), exc.line, f"cannot read the spec file: {exc}") from None
    try:
        _check_bytes(text, str(path))
    except SpecError as exc:
        raise SpecError(str(path), exc.line, f"cannot read the spec file: {exc.message}") \
            from None
    constants = file_constants(context if context is not None else source_text or "", defines)
    specs = _parsed_file(text, str(path), tuple(sorted(constants.items())))
    if isinstance(kernel, Kernel):
        names = [kernel.qualified_name, kernel.name]
    else:
        names = [kernel, kernel.split("::")[-1]]
    spec = pick_section(specs, names, instance, str(path))
    if spec is not None and isinstance(kernel, Kernel):
        validate(spec, kernel, source_text)
        if source_text is not None and spec.source != "inferred":  # a draft is inference's
            from cudalens.spec.output_lengths import check_lengths  # noqa: PLC0415 - runs inference

            check_lengths(spec, kernel, source_text)
    return spec


@functools.lru_cache(maxsize=8)
def _parsed_once(text: str, path: str, constants: tuple) -> Union[dict, SpecError]:
    try:
        return parse_spec(text, path, dict(constants))
    except SpecError as exc:
        return exc


def _parsed_file(text: str, path: str, constants: tuple) -> dict[str, KernelSpec]:
    """``parse_spec(text, path, dict(constants))``, parsed once per (text, path, constants):
    loading every kernel of a file reads the same spec file for each (a file of 3,000 kernels
    with a section each parsed it 3,000 times). The dict returned is the caller's own.

    Raises:
        SpecError: as ``parse_spec`` (the same error each time)."""
    found = _parsed_once(text, path, constants)
    if isinstance(found, SpecError):
        raise SpecError(found.path, found.line, found.message)
    return dict(found)


def same_instance(a: str, b: str) -> bool:
    """Whether two spellings name the same kernel or template instance, ignoring spaces and
    integer suffixes in template arguments (``f<float, 256u>`` is ``f<float,256>``)."""
    return instance_key(a) == instance_key(b)


def instance_key(name: str) -> str:
    """``"reduce< float , 256u >"`` -> ``"reduce<float,256>"``."""
    text = re.sub(r"\s+", "", name)
    return re.sub(r"(?<![\w.])(\d+)[uUlL]+\b", r"\1", text)


def pick_section(specs: dict[str, KernelSpec], names: list[str], instance: Optional[str],
                 path: str) -> Optional[KernelSpec]:
    """The section for a kernel known by ``names`` (qualified first): the one of ``instance``
    when given, else a plain-named section, else the only ``NAME<ARGS>`` section of it.

    Raises:
        SpecError: several template-instance sections fit and no ``instance`` was named.
    """
    if instance is not None:
        return next((s for n, s in specs.items() if same_instance(n, instance)), None)
    plain = next((specs[n] for n in names if n in specs), None)
    if plain is not None:
        return plain
    bare = {n.split("<")[0].strip() for n in names} | \
        {n.split("<")[0].strip().split("::")[-1] for n in names}
    inst = [s for n, s in specs.items() if "<" in n and (
        n.split("<")[0].strip() in bare or n.split("<")[0].strip().split("::")[-1] in bare)]
    if len(inst) > 1:
        listed = ", ".join(f"'kernel {s.kernel}' (line {s.line})" for s in inst)
        raise SpecError(path, inst[1].line, f"several template instances of {names[0]} have a "
                        f"section ({listed}): expected --kernel 'NAME<ARGS>' naming one")
    return inst[0] if inst else None


@dataclass
class _Section:
    """A kernel section while its lines are read."""

    name: str
    line: int
    notes: list[str] = field(default_factory=list)
    declared: bool = False  # a declaration was seen (notes end there)
    sizes: list[SizeDecl] = field(default_factory=list)
    checks: list[CheckDecl] = field(default_factory=list)
    multiples: list[MultipleDecl] = field(default_factory=list)
    params: list[Union[BufferDecl, ScalarDecl]] = field(default_factory=list)
    settings: dict[str, tuple[int, Any]] = field(default_factory=dict)  # key -> (line, value)

    def size_line(self, name: str) -> Optional[int]:
        return next((s.line for s in self.sizes if s.name == name), None)


class _Reader:
    def __init__(self, path: str, constants: Optional[dict[str, int]] = None) -> None:
        self.path = path
        self.constants = dict(constants or {})
        self.specs: dict[str, KernelSpec] = {}
        self.section: Optional[_Section] = None
        self.lineno = 0

    def error(self, message: str, line: Optional[int] = None) -> SpecError:
        return SpecError(self.path, self.lineno if line is None else line, message)

    # -- driving -------------------------------------------------------------------------

    def read(self, text: str) -> dict[str, KernelSpec]:
        for self.lineno, raw in enumerate(text.splitlines(), start=1):
            code, hash_, comment = raw.partition("#")
            code = code.strip()
            if not code:
                if hash_ and self.section is not None and not self.section.declared:
                    self.section.notes.append(comment.strip())
                continue
            self.line(code)
        self.finish()
        return self.specs

    def line(self, code: str) -> None:
        m = _KEYWORD_RE.match(code)
        key = m.group(1) if m else ""
        if key not in KEYWORDS:
            raise self.error(f"expected a declaration ({', '.join(KEYWORDS)}), found '{code}'")
        if key == "kernel":
            self.finish()
            self.kernel(code)
            return
        if self.section is None:
            raise self.error(f"expected 'kernel NAME' before the first declaration, found '{code}'")
        self.section.declared = True
        if key in ("size", "check"):
            self.size(code, key)
        elif key == "multiple":
            self.multiple(code)
        elif key == "scalar":
            self.scalar(code)
        elif key in ("in", "out", "inout"):
            self.buffer(code)
        elif key == "atomics":
            if code != "atomics":
                raise self.expected("atomics", code)
            self.setting("atomics", True)
        else:
            self.assignment(code, key)

    def expected(self, form: str, found: str) -> SpecError:
        return self.error(f"expected '{_FORMS[form]}', found '{found}'")

    # -- declarations ----------------------------------------------------------------------

    def kernel(self, code: str) -> None:
        name = code[len("kernel"):].strip()
        if not name:
            raise self.expected("kernel", code)
        if not _KERNEL_NAME_RE.match(name):
            raise self.error(f"expected a kernel name (a C++ identifier, optionally qualified "
                             f"like ops::saxpy), found '{name}'")
        if name in self.specs:
            raise self.error(f"kernel {name} already has a section, starting on line "
                             f"{self.specs[name].line}")
        self.section = _Section(name=name, line=self.lineno)

    def name(self, name: str, what: str) -> str:
        if not _IDENT_RE.match(name):
            raise self.error(f"expected a C identifier as the {what} name, found '{name}'")
        return name

    def size(self, code: str, key: str) -> None:
        sec = self._section()
        m = _SIZE_RE.match(code)
        if not m or not m.group("expr").strip():
            raise self.expected(key, code)
        name = self.name(m.group("name"), "size" if key == "size" else "checked size")
        expr = m.group("expr").strip()
        if key == "size":
            if name in RESERVED or keyword.iskeyword(name):
                raise self.error(f"'{name}' cannot name a size: it is reserved in expressions "
                                 f"(reserved: {', '.join(RESERVED)} and Python keywords)")
            prev = sec.size_line(name)
            if prev is not None:
                raise self.error(f"size {name} is already declared on line {prev}")
            self.names(expr, f"size {name}", [s.name for s in sec.sizes])
            sec.sizes.append(SizeDecl(name=name, expr=expr, line=self.lineno))
            return
        index = next((i for i, s in enumerate(sec.sizes) if s.name == name), None)
        if index is None:
            declared = ", ".join(s.name for s in sec.sizes) or "none"
            raise self.error(f"expected 'check' of a size declared above, found check {name} "
                             f"(sizes so far: {declared})")
        dup = next((c.line for c in sec.checks if c.name == name), None)
        if dup is not None:
            raise self.error(f"check {name} is already declared on line {dup}")
        self.names(expr, f"check {name}", [s.name for s in sec.sizes[:index]],
                   scope=f"sizes declared before size {name}, on line {sec.sizes[index].line}")
        sec.checks.append(CheckDecl(name=name, expr=expr, line=self.lineno))

    def multiple(self, code: str) -> None:
        sec = self._section()
        m = _MULTIPLE_RE.match(code)
        if not m or not m.group("expr").strip():
            raise self.expected("multiple", code)
        name = m.group("name")
        index = next((i for i, s in enumerate(sec.sizes) if s.name == name), None)
        if index is None:
            declared = ", ".join(s.name for s in sec.sizes) or "none"
            raise self.error(f"expected 'multiple' of a size declared above, found multiple "
                             f"{name} (sizes so far: {declared})")
        dup = next((c.line for c in sec.multiples if c.name == name), None)
        if dup is not None:
            raise self.error(f"multiple {name} is already declared on line {dup}")
        expr = m.group("expr").strip()
        self.names(expr, f"multiple {name}", [s.name for s in sec.sizes[:index]],
                   scope=f"sizes declared before size {name}, on line {sec.sizes[index].line}")
        sec.multiples.append(MultipleDecl(name=name, expr=expr, line=self.lineno))

    def scalar(self, code: str) -> None:
        sec = self._section()
        m = _SCALAR_RE.match(code)
        if not m or not m.group("expr").strip():
            raise self.expected("scalar", code)
        name = self.name(m.group("name"), "parameter")
        self.param_unique(name)
        type_ = self.type(m.group("type"), name)
        expr = m.group("expr").strip()
        self.names(expr, f"scalar {name}", [s.name for s in sec.sizes])
        sec.params.append(ScalarDecl(name=name, type=type_, expr=expr, line=self.lineno))

    def buffer(self, code: str) -> None:
        sec = self._section()
        m = _BUFFER_RE.match(code)
        if not m:
            if "range" in code:
                raise self.error(f"expected 'ROLE NAME: TYPE[LENGTH] range(LOW, HIGH)', "
                                 f"found '{code}'")
            raise self.expected("buffer", code)
        role, name = m.group("role"), self.name(m.group("name"), "parameter")
        self.param_unique(name)
        type_ = self.type(m.group("type"), name)
        sizes = [s.name for s in sec.sizes]
        length = m.group("length").strip()
        self.names(length, f"length of {name}", sizes, block=True)
        mods = self.modifiers(m.group("rest").strip(), name)
        if list(mods) == ["range"] and role == "out":
            raise self.error(f"range(...) sets how inputs are drawn, but {name} is 'out' "
                             f"(outputs are poisoned before each launch): expected role "
                             f"'in' or 'inout', or no range")
        if mods and role == "out":
            raise self.error(f"{' and '.join(mods)} set(s) how inputs are drawn, but {name} is "
                             f"'out' (outputs are poisoned before each launch): expected role "
                             f"'in' or 'inout', or none of them")
        fill = next((k for k in mods if k != "range"), "uniform")
        if fill in ("normal", "csr", "permutation") and "range" in mods:
            raise self.error(f"{_FILL_FORMS[fill]} sets the values of {name} itself: expected "
                             f"no range(LOW, HIGH) with it")
        if fill == "unique" and "range" not in mods:
            raise self.error(f"'unique' draws distinct integers from a range: expected "
                             f"'unique range(LOW, HIGH)' for {name}")
        if fill in ("csr", "permutation", "unique") and dtypes.is_float(type_):
            raise self.error(f"{_FILL_FORMS[fill]} makes integer values: expected an integer "
                             f"element type for {name}, found {type_}")
        low = high = None
        if "range" in mods:
            low, high = mods["range"]
        for what, expr in zip(("range low", "range high"), (low, high)):
            if expr is not None:
                self.names(expr, f"{what} of {name}", sizes)
        args = mods.get(fill, ())
        for expr in args:
            self.names(expr, f"{fill} of {name}", sizes)
        sec.params.append(BufferDecl(role=role, name=name, type=type_, length=length, low=low,
                                     high=high, line=self.lineno, fill=fill,  # type: ignore
                                     fill_args=tuple(args)))

    def modifiers(self, rest: str, name: str) -> dict[str, tuple[str, ...]]:
        """``csr(nnz) range(0, 9)`` -> ``{"csr": ("nnz",), "range": ("0", "9")}``."""
        found: dict[str, tuple[str, ...]] = {}
        forms = "range(LOW, HIGH), " + ", ".join(_FILL_FORMS.values())
        while rest:
            m = _MODIFIER_RE.match(rest)
            word = m.group("word") if m else ""
            if word not in ("range", *FILLS_WITH_ARGS, *FILLS_PLAIN):
                raise self.error(f"expected 'ROLE NAME: TYPE[LENGTH]' followed by any of "
                                 f"{forms}; found '{rest}' after the length of {name}")
            assert m is not None
            rest = rest[m.end():]
            args: tuple[str, ...] = ()
            if word in ("range", *FILLS_WITH_ARGS):
                want = 2 if word == "range" else FILLS_WITH_ARGS[word]
                form = "range(LOW, HIGH)" if word == "range" else _FILL_FORMS[word]
                inner, rest = self.call_args(rest, form)
                parts = split_top_level(inner)
                if len(parts) != want or not all(p.strip() for p in parts):
                    raise self.error(f"expected '{form}', found '{word}({inner})'")
                args = tuple(p.strip() for p in parts)
            if word in found or (word != "range" and any(k != "range" for k in found)):
                other = next(k for k in found if k == word or k != "range")
                raise self.error(f"{name} has two ways of drawing its values ('{other}' and "
                                 f"'{word}'): expected at most one of "
                                 f"{', '.join(_FILL_FORMS.values())}, and one range")
            found[word] = args
            rest = rest.strip()
        return found

    def call_args(self, rest: str, form: str) -> tuple[str, str]:
        """``"(a, f(b)) more"`` -> ``("a, f(b)", " more")``."""
        if not rest.startswith("("):
            raise self.error(f"expected '{form}', found '{rest}'")
        depth = 0
        for i, ch in enumerate(rest):
            depth += (ch == "(") - (ch == ")")
            if depth == 0:
                return rest[1:i], rest[i + 1:]
        raise self.error(f"expected '{form}' with its closing parenthesis, found '{rest}'")

    def assignment(self, code: str, key: str) -> None:
        sec = self._section()
        m = _ASSIGN_RE.match(code)
        if not m or m.group("key") != key or not m.group("expr").strip():
            raise self.expected(key, code)
        expr = m.group("expr").strip()
        sizes = [s.name for s in sec.sizes]
        if key in ("block", "grid"):
            parts = split_top_level(strip_parens(expr))
            if not 1 <= len(parts) <= 3 or not all(p.strip() for p in parts):
                raise self.error(f"expected '{_FORMS[key]}' (1 to 3 expressions, x first), "
                                 f"found '{code}'")
            exprs = tuple(p.strip() for p in parts)
            for axis, e in zip("xyz", exprs):
                self.names(e, f"{key}.{axis}", sizes, block=key == "grid",
                           sm_count=key == "grid")
            self.setting(key, exprs)
        elif key == "shared":
            self.names(expr, "shared", sizes, block=True)
            self.setting(key, expr)
        elif key in ("flops", "reads", "writes"):
            self.names(expr, key, sizes)
            self.setting(key, expr)
        else:  # tolerance
            self.setting(key, self.tolerance(expr))

    def tolerance(self, expr: str) -> float:
        try:
            value = float(evaluate(expr, {}))
        except ExprError as exc:
            raise self.error(f"expected 'tolerance = NUMBER' (a relative tolerance such as "
                             f"1e-4), found '{expr}': {exc}") from None
        if not value > 0:
            raise self.error(f"expected a positive relative tolerance, found {value!r}")
        if not value < MAX_TOLERANCE:
            raise self.error(
                f"expected a relative tolerance below {MAX_TOLERANCE:g}, found {value!r}: an "
                f"element passes within tolerance x (|expected| + max |expected|), so from 0.5 "
                f"on an all-zero output passes everywhere and from {MAX_TOLERANCE:g} on it "
                f"passes wherever |expected| is under a third of the largest; the defaults are "
                f"1e-4 (float), 1e-2 (half), 1e-10 (double)")
        return value

    def setting(self, key: str, value: Any) -> None:
        sec = self._section()
        if key in sec.settings:
            raise self.error(f"{key} is already declared on line {sec.settings[key][0]}")
        sec.settings[key] = (self.lineno, value)

    # -- checks shared by declarations ---------------------------------------------------------

    def _section(self) -> _Section:
        assert self.section is not None
        return self.section

    def param_unique(self, name: str) -> None:
        prev = next((p.line for p in self._section().params if p.name == name), None)
        if prev is not None:
            raise self.error(f"parameter {name} is already declared on line {prev}")

    def type(self, type_: str, name: str) -> str:
        if type_ not in dtypes.SPEC_TYPES:
            raise self.error(f"expected an element type for {name} (one of "
                             f"{', '.join(dtypes.SPEC_TYPES)}), found '{type_}'")
        return type_

    def names(self, expr: str, what: str, sizes: list[str], *, block: bool = False,
              sm_count: bool = False, scope: str = "sizes declared above") -> None:
        """Checks ``expr``'s syntax and that every name it uses is allowed here."""
        try:
            used = names_in(expr)
        except ExprError as exc:
            raise self.error(f"in {what}: {exc}") from None
        for name in sorted(used):
            if name == "block" and not block:
                raise self.error(f"in {what}: block.x/.y/.z cannot be used here (only in grid, "
                                 f"shared and buffer lengths), found '{expr}'")
            if name == "sm_count" and not sm_count:
                raise self.error(f"in {what}: sm_count can be used in grid only, found '{expr}'")
            if name not in sizes and name not in ("block", "sm_count") \
                    and name not in self.constants:
                known = ", ".join(sizes) or "none"
                consts = f" or an integer #define of the kernel's file " \
                    f"({', '.join(self.constants)})" if self.constants else ""
                raise self.error(f"in {what}: undefined name '{name}' in '{expr}': expected one "
                                 f"of the {scope} ({known}){consts}")

    # -- end of a section ----------------------------------------------------------------------

    def finish(self) -> None:
        sec = self.section
        if sec is None:
            return
        self.section = None
        for key in ("block", "grid"):
            if key not in sec.settings:
                raise self.error(f"kernel {sec.name}: expected '{_FORMS[key]}' in the section, "
                                 f"found no {key} declaration", line=sec.line)
        setting = {key: value for key, (_, value) in sec.settings.items()}
        block_line = sec.settings["block"][0]
        order = {s.name: i for i, s in enumerate(sec.sizes)}
        spec = KernelSpec(
            kernel=sec.name,
            sizes=tuple(sec.sizes),
            params=tuple(sec.params),
            launch=LaunchDecl(block=setting["block"], grid=setting["grid"],
                              shared=setting.get("shared", "0"), line=block_line),
            checks=tuple(sorted(sec.checks, key=lambda c: order[c.name])),
            multiples=tuple(sorted(sec.multiples, key=lambda c: order[c.name])),
            reads=setting.get("reads"),
            writes=setting.get("writes"),
            constants=tuple(self.constants.items()),
            flops=setting.get("flops"),
            tolerance=setting.get("tolerance"),
            atomics="atomics" in setting,
            source=self.path,
            line=sec.line,
            notes=tuple(sec.notes),
        )
        lines = {key: line for key, (line, _) in sec.settings.items()}
        check_values(spec, lines)
        self.specs[sec.name] = spec


def parse_spec(text: str, path: str = "<spec>",
               constants: Optional[dict[str, int]] = None) -> dict[str, KernelSpec]:
    """All kernel sections of a spec file, by kernel name (as written after ``kernel``).
    ``constants`` are integer names expressions may use besides the sizes (the kernel file's
    ``#define``s: ``cudalens.spec.defines.file_constants``); sizes of the same name win.

    Raises:
        SpecError: at the first malformed line, undefined name, duplicate declaration, missing
            ``block``/``grid``, or value that cannot be used (see the module docstring);
            also at a byte that is not UTF-8 outside a comment (``textfile``: a file read so
            keeps its bytes, which a comment may hold).
    """
    _check_bytes(text, path)
    return _Reader(path, constants).read(text)


def _check_bytes(text: str, path: str) -> None:
    """Raises ``SpecError`` at the first byte of ``text`` that is not UTF-8 outside a ``#``
    comment."""
    bad = escaped_byte(text, comment="#")
    if bad is not None:
        line, column, byte = bad
        raise SpecError(path, line, f"expected UTF-8 text, found byte 0x{byte:02x} at column "
                                    f"{column} (outside a comment); save the file as UTF-8")


def split_top_level(text: str) -> list[str]:
    """Splits at commas outside parentheses: ``"min(n, 4), m"`` -> ``["min(n, 4)", " m"]``."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def strip_parens(text: str) -> str:
    """``"(32, 8)"`` -> ``"32, 8"``: removes parentheses that enclose the whole text."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += (ch == "(") - (ch == ")")
            if depth == 0 and i < len(text) - 1:
                return text  # the first parenthesis closes early: "(a) + (b)"
        text = text[1:-1].strip()
    return text
