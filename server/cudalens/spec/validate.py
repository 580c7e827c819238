"""Checking a spec against the kernel it describes: every parameter, once, with a fitting role."""

from __future__ import annotations

import functools
import re
from typing import Optional

from cudalens.source.model import Kernel, Parameter
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.model import BufferDecl, KernelSpec


def _bare(name: str) -> str:
    return name.split("<")[0].strip().split("::")[-1]


def validate(spec: KernelSpec, kernel: Kernel, source_text: Optional[str] = None) -> None:
    """Raises :class:`SpecError` unless ``spec`` can call ``kernel``.

    Checked: the section names the kernel; every kernel parameter is declared exactly once and
    no other name is; pointers get a role (``in``/``out``/``inout``) and by-value parameters a
    ``scalar``; ``out``/``inout`` are not used on a pointer to const (``in`` on a non-const
    pointer is fine); and where the kernel's C type is a known arithmetic type (or a CUDA vector
    of one, e.g. ``float4``) the spec's element type has the same numpy dtype; at least one
    buffer is ``out`` or ``inout`` (else nothing is verified). Template and
    struct types are not checked. With ``source_text`` (the whole file ``kernel`` was parsed
    from) the roles are also checked against the body (:func:`check_roles`). Errors name the
    spec line and the parameter.
    """
    path = spec.source or "<spec>"
    if spec.kernel not in (kernel.name, kernel.qualified_name) and \
            _bare(spec.kernel) != _bare(kernel.qualified_name):
        raise SpecError(path, spec.line, f"expected a section for kernel {kernel.qualified_name}, "
                                         f"found 'kernel {spec.kernel}'")
    params = {p.name: p for p in kernel.parameters}
    listed = ", ".join(p.name for p in kernel.parameters) or "none"
    seen: dict[str, int] = {}
    for decl in spec.params:
        where = f"kernel {kernel.name}"
        if decl.name in seen:
            raise SpecError(path, decl.line, f"parameter {decl.name} is declared twice "
                                             f"(lines {seen[decl.name]} and {decl.line})")
        seen[decl.name] = decl.line
        p = params.get(decl.name)
        if p is None:
            raise SpecError(path, decl.line, f"{where} has no parameter named {decl.name} "
                                             f"(its parameters: {listed})")
        if isinstance(decl, BufferDecl):
            if not p.is_pointer:
                raise SpecError(path, decl.line, f"parameter {p.name} of {where} is passed by "
                                f"value ('{p.text}'): expected 'scalar {p.name}: TYPE = EXPR', "
                                f"found role '{decl.role}'")
            if decl.role != "in" and p.is_const:
                raise SpecError(path, decl.line, f"parameter {p.name} of {where} points to const "
                                f"('{p.text}'), so the kernel cannot write it: expected role "
                                f"'in', found '{decl.role}'")
        elif p.is_pointer:
            raise SpecError(path, decl.line, f"parameter {p.name} of {where} is a pointer "
                            f"('{p.text}'): expected 'in', 'out' or 'inout' {p.name}: "
                            f"TYPE[LENGTH], found 'scalar'")
        problem = unsupported_parameter(p, kernel) or _type_mismatch(decl.type, p)
        if problem:
            raise SpecError(path, decl.line, f"parameter {p.name} of {where}: {problem}")
    for p in kernel.parameters:
        if p.name not in seen:
            form = f"'ROLE {p.name}: TYPE[LENGTH]'" if p.is_pointer else \
                f"'scalar {p.name}: TYPE = EXPR'"
            raise SpecError(path, spec.line, f"kernel {kernel.name}: parameter {p.name} "
                                             f"('{p.text}') is not in the spec: expected {form}")
    if source_text is not None:
        _check_fixed_sizes(spec, kernel, source_text)
        check_host_set_globals(spec, kernel, source_text)
    if source_text is not None:  # first: a write it finds says which buffer is an output
        check_roles(spec, kernel, source_text)
    written = [d for d in spec.params if isinstance(d, BufferDecl) and d.role in ("out", "inout")]
    if not written:
        inputs = [d.name for d in spec.params if isinstance(d, BufferDecl)]
        found = (f"only 'in' buffers ({', '.join(inputs)})" if inputs else
                 "no buffer (the kernel has no pointer parameter)")
        raise SpecError(path, spec.line, f"kernel {kernel.name}: expected at least one 'out' or "
                        f"'inout' buffer, found {found}: with no output the runner compares "
                        f"nothing, so the kernel would verify nothing and any candidate would "
                        f"pass; give the role 'out' (written only) or 'inout' (read too) to "
                        f"each buffer the kernel writes")


def _body_text(kernel: Kernel, source_text: str) -> str:
    """The lines of ``kernel``'s body (its compound statement) in ``source_text``."""
    lines = source_text.split("\n")
    return "\n".join(lines[kernel.body_range.start.line:kernel.body_range.end.line + 1])


def _check_fixed_sizes(spec: KernelSpec, kernel: Kernel, source_text: str) -> None:
    """Raises SpecError when a ``size`` is named like one of the file's integer ``#define``s
    (or the build's ``-D`` values: ``spec.constants``) that the kernel's body reads: the
    kernel is compiled with the macro's value, so the ragged case (and any other size) would
    give the buffers lengths the kernel does not compute with; a size wins over a constant of
    its name in the spec's expressions, so nothing else would notice."""
    consts = dict(spec.constants)
    body = _body_text(kernel, source_text)
    for size in spec.sizes:
        if size.name in consts and re.search(rf"\b{re.escape(size.name)}\b", body):
            raise SpecError(spec.source or "<spec>", size.line, (
                f"size {size.name} is the file's #define {size.name} = {consts[size.name]}, "
                f"which kernel {kernel.name} reads: the kernel is compiled with "
                f"{consts[size.name]} whatever the spec's sizes are, so the ragged case would "
                f"size the buffers for other values; drop 'size {size.name}' and use the "
                f"macro's name as a constant (in: float[{size.name}]), or pass it as a "
                f"parameter"))


# a file-scope __constant__ or __device__ variable declared without an initializer (the
# host fills it with cudaMemcpyToSymbol); a function has a '(' before its ';' or '{'
_HOST_SET = re.compile(r"^[ \t]*(?:static[ \t]+)?(__constant__|__device__)\b([^;{}()=]*?)"
                       r"\b([A-Za-z_]\w*)[ \t]*((?:\[[^\]]*\][ \t]*)*);", re.M)


def host_set_globals(source_text: str) -> list[tuple[str, str, int]]:
    """(qualifier, name, 1-based line) of each file-scope ``__constant__`` / ``__device__``
    variable ``source_text`` declares without an initializer: memory the host program sets
    (``cudaMemcpyToSymbol``) and a spec cannot, so a launch from the runner sees zeros there
    (static storage is zero-initialized, C++ [basic.start.static])."""
    out = []
    for m in _HOST_SET.finditer(source_text):
        if "extern" in m.group(2).split() or "__shared__" in m.group(2):
            continue
        out.append((m.group(1), m.group(3), source_text.count("\n", 0, m.start(3)) + 1))
    return out


def _reached_text(kernel: Kernel, source_text: str) -> str:
    """The kernel's body and the bodies of the file's functions it calls, transitively (by
    name: every overload of a called name counts)."""
    from cudalens.kernel_model.syntax import parse, walk  # noqa: PLC0415 - tree-sitter

    parsed = parse(source_text)
    bodies: dict[str, list] = {}
    for n in walk(parsed.tree.root_node):
        if n.type == "function_definition":
            d = n.child_by_field_name("declarator")
            while d is not None and d.type not in ("identifier", "field_identifier",
                                                   "qualified_identifier"):
                d = d.child_by_field_name("declarator")
            body = n.child_by_field_name("body")
            if d is not None and body is not None:
                bodies.setdefault(parsed.text_of(d).split("::")[-1], []).append(body)
    texts = [_body_text(kernel, source_text)]
    todo, seen = [texts[0]], {kernel.name}
    while todo:
        text = todo.pop()
        for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;]*>)?\s*\(", text)):
            if name in bodies and name not in seen:
                seen.add(name)
                for b in bodies[name]:
                    texts.append(parsed.text_of(b))
                    todo.append(texts[-1])
    return "\n".join(texts)


def check_host_set_globals(spec: KernelSpec, kernel: Kernel, source_text: str) -> None:
    """Raises SpecError when the kernel's body reads a ``host_set_globals`` variable: the
    original and every candidate would compute with its zeros (a filter's taps, a lookup
    table), and outputs that agree then prove nothing about the real program."""
    globals_ = host_set_globals(source_text)
    if not globals_:
        return
    body = _reached_text(kernel, source_text)
    for qualifier, name, line in globals_:
        if re.search(rf"\b{re.escape(name)}\b", body):
            raise SpecError(spec.source or "<spec>", spec.line, (
                f"kernel {kernel.name} reads {qualifier} {name} (declared at line {line} of "
                f"the kernel's file without an initializer): the program's host code fills "
                f"it (cudaMemcpyToSymbol) and the runner cannot, so the original and every "
                f"candidate would compute with zeros there and verification would prove "
                f"nothing; give {name} an initializer or pass the data as a pointer "
                f"parameter to optimize this kernel"))


def check_roles(spec: KernelSpec, kernel: Kernel, source_text: str) -> None:
    """Raises :class:`SpecError` when a buffer's role contradicts what the body does with it.

    Uses the body analysis of spec inference (``body.analyze_body``):

    - ``out`` on a pointer whose first access in source order reads it (``p[i]`` as a value,
      ``p[i] += v``, ``atomicAdd(&p[i], v)``; in ``p[i] = p[i] + v`` the right side comes
      first): the runner fills ``out`` buffers with NaN poison before every launch, so the
      reference would compute from poison. Expected ``inout``. A write earlier in the text is
      taken to cover later reads (flow-insensitive, so loops and branches are not followed).
    - ``in`` on a pointer the body writes (``=``, compound assignment, ``++``, an atomic, also
      through a local alias or ``const_cast``). Expected ``out`` or ``inout``.

    A pointer that escapes the analysis (passed to a function, cast to another type, stored
    where it cannot be followed) is not checked: the runner catches an ``in`` buffer that
    changes at run time. A body that cannot be found is not checked either.
    """
    from cudalens.spec.body import analyze_body
    from cudalens.kernel_model.model import kernel_model

    buffers = [d for d in spec.params if isinstance(d, BufferDecl)]
    if not buffers:
        return
    try:
        parsed, body = kernel_model(source_text, kernel).salvaged_body()
        facts = analyze_body(parsed, body, kernel)
    except (LookupError, ValueError):
        return
    path = spec.source or "<spec>"
    where = f"kernel {kernel.name}"
    for decl in buffers:
        accesses = sorted((a for a in facts.accesses if a.param == decl.name),
                          key=lambda a: a.order)
        if not accesses or any(a.kind == "escape" for a in accesses):
            continue
        if decl.role == "out":
            first = accesses[0]
            if first.kind in ("read", "update"):
                how = f"{first.atomic} accumulates into" if first.atomic else "reads"
                raise SpecError(path, decl.line, f"{where} {how} {decl.name} before writing it "
                                f"('{first.text}', line {first.line}), but role 'out' gives it "
                                f"NaN poison before every launch: expected 'inout {decl.name}', "
                                f"found 'out {decl.name}'")
        elif decl.role == "in":
            written = next((a for a in accesses if a.kind in ("write", "update")), None)
            if written is not None:
                how = f"{written.atomic} on" if written.atomic else "writing"
                raise SpecError(path, decl.line, f"{where} writes {decl.name} ({how} "
                                f"'{written.text}', line {written.line}), but role 'in' requires "
                                f"it unchanged: expected 'out {decl.name}' (written only) or "
                                f"'inout {decl.name}' (read too), found 'in {decl.name}'")


def unsupported_parameter(p: Parameter, kernel: Kernel, records: frozenset = frozenset()
                          ) -> Optional[str]:
    """Why the runner cannot pass ``p`` to ``kernel``, or None when it may.

    The runner passes device buffers for pointers and numbers for scalars; a reference, a
    pointer to an array or to pointers, or a struct/class/union by value (``records``: the
    names the source declares as such) would get an argument of the wrong size or meaning.
    Other unknown type names (template parameters, typedefs) are left to the spec's type.
    """
    text = p.text
    if "&" in text:
        return f"'{text}' is a reference; cudalens passes only pointers and plain numbers"
    if "(" in text or text.count("*") > 1 or (p.is_pointer and "[" in text):
        return (f"'{text}' is a pointer to an array or to pointers; cudalens passes only "
                f"pointers to numbers and plain numbers")
    base = dtypes.normalize_c_type(p.type)
    if not p.is_pointer and base in records and base not in kernel.template_parameters:
        return (f"'{text}' is of type '{base}', a struct, class or union, which cudalens cannot "
                f"fill or pass (it passes numbers and pointers to numbers)")
    pointee = dtypes.normalize_c_type(p.type.replace("*", " ").replace("const", " "))
    if p.is_pointer and pointee in records and pointee not in kernel.template_parameters:
        return (f"'{text}' points to '{pointee}', a struct, class or union; a spec's buffer "
                f"holds numbers of one type, so a drafted buffer would fill its fields with "
                f"meaningless values (a count or an index read from them can send the kernel "
                f"out of bounds); write the spec yourself, giving {p.name} as a buffer of its "
                f"fields' number type (its length counted in fields) with a range that keeps "
                f"what the kernel reads from it inside its buffers")
    return None


# ``\b(?:struct|class|union)\s+NAME``, written so that the regular expression engine can
# look for the keywords' first letters instead of trying every position (about 6x faster on
# a 300 kB file): ``\b`` before a word character is "no word character before it", checked
# after the keyword by one lookbehind per keyword (each can fail only after its own keyword).
_RECORD = re.compile(r"(?:struct|class|union)(?<!\wstruct)(?<!\wclass)(?<!\wunion)"
                     r"\s+([A-Za-z_]\w*)")
_TYPEDEF_RECORD = re.compile(r"typedef\s+(?:struct|class|union)\b(?:[^;{]*\{[^{}]*\}|[^;]*?\})"
                             r"\s*([A-Za-z_]\w*)\s*;", flags=re.S)


def record_types(source_text: str) -> frozenset:
    """Names the source declares as a struct, class or union (``struct P {``, ``} P;`` of a
    typedef), for ``unsupported_parameter``. A textual scan: enough to refuse a guess.

    Cached by text (the last few texts): inferring the specs of every kernel of one file
    scans it once."""
    return _record_types(source_text)


@functools.lru_cache(maxsize=8)
def _record_types(source_text: str) -> frozenset:
    names = set(_RECORD.findall(source_text))
    names |= set(_TYPEDEF_RECORD.findall(source_text))
    return frozenset(names)


def _type_mismatch(spec_type: str, p: Parameter) -> Optional[str]:
    want = dtypes.numpy_dtype(spec_type)
    known = dtypes.spec_type_for_c(p.type)
    if known is not None:
        have = dtypes.numpy_dtype(known)
        if have != want:
            return (f"the kernel declares '{p.text}' ({have}), the spec says {spec_type} "
                    f"({want}): expected an element type with dtype {have}")
        return None
    vector = dtypes.vector_type_for_c(p.type)
    if vector is not None:
        if not p.is_pointer:
            return (f"'{p.text}' is a vector passed by value, which a spec scalar cannot hold")
        have = dtypes.numpy_dtype(vector[0])
        if have != want:
            return (f"the kernel declares '{p.text}' ({vector[1]} x {have} per element), the "
                    f"spec says {spec_type} ({want}): expected {vector[0]} with the length "
                    f"counted in {vector[0]} lanes")
    return None
