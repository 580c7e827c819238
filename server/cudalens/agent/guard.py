"""Refusing candidate code that cheats the harness or changes what is being measured.

A candidate is the text that replaces one kernel's definition. It is refused, with the reason
and the line of the candidate's code, when it

- does not define the kernel, defines another ``__global__`` kernel, or changes the kernel's
  signature (parameter count, order, names, element types, pointer-ness, template
  parameters; adding or removing ``const``/``__restrict__`` is allowed);
- has host-side effects or state that outlives a launch, the ways generated kernels are known
  to game a harness (KernelBench and robust-kbench catalogue them): kernel launches
  (``<<<``), CUDA runtime or driver API calls, streams, events, graphs, host threads, processes
  or files, ``printf``, device-heap allocation, variables at file scope other than constants,
  ``static`` local variables, grid-wide synchronization (needs a cooperative launch), inline
  ``asm`` that names a global symbol or declares variables, host functions;
- includes a header that is neither CUDA's own (``ALLOWED_HEADERS``) nor already included by
  the file, or one that could reach a file outside the user's project (an absolute path, a
  ``..``, a computed include: ``host_include_refusals``, the runner's own rule,
  ``gpu_runner.includes``); includes are found as the preprocessor finds them, also inside
  the kernel's body and behind line splices, digraphs or trigraphs.

Line numbers are 1-based lines of the candidate's code. Comments and string literals are
blanked before the text patterns are searched, so a comment mentioning ``cudaMalloc`` is fine.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

import tree_sitter

from cudalens.source.model import Kernel, Parameter
from cudalens.source.parser import parse_source
from cudalens.kernel_model.syntax import new_parser, squeeze, text_of
from cudalens.textfile import to_bytes
from gpu_runner.includes import find_includes

# CUDA toolkit headers a kernel may need, and the C/C++ headers of constants and math.
ALLOWED_HEADERS = (
    "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_runtime.h", "vector_types.h",
    "math_constants.h", "mma.h", "cuda_pipeline.h", "cuda_awbarrier.h",
    "cooperative_groups.h", "cooperative_groups/*", "cub/*", "cuda/std/*", "cuda/pipeline",
    "cuda/barrier", "cuda/annotated_ptr", "cstdint", "stdint.h", "cfloat", "float.h",
    "climits", "limits.h", "cmath", "math.h", "cstddef", "stddef.h", "type_traits",
    "cuComplex.h",
)

_TEXT_RULES: tuple[tuple[str, str], ...] = (
    (r"<<<", "launches a kernel from inside the candidate; the harness launches the kernel "
             "itself with the launch configuration you give"),
    (r"\bcuda(Stream|Event|Graph)\w*", "uses CUDA streams, events or graphs; the harness owns "
                                       "the stream and the timing"),
    (r"\bcuda[A-Z]\w*\s*\(", "calls the CUDA runtime API; only device code is accepted"),
    (r"\bcu(Init|Device|Ctx|Module|Library|Kernel|Mem|Launch|Stream|Event|Graph|Func|Link|Tex|"
     r"Surf|Array|Pointer|Occupancy|GetErrorString|GetProcAddress)\w*\s*\(",
     "calls the CUDA driver API; only device code is accepted"),
    (r"\bstd\s*::\s*(thread|jthread|async)\b|\bpthread_\w+",
     "starts host threads; only device code is accepted"),
    (r"\b(fork|system|popen|exec[lv]p?e?|fopen|freopen)\s*\(",
     "touches processes or files; only device code is accepted"),
    (r"\b(malloc|calloc|realloc|free)\s*\(|\bnew\b|\bdelete\b",
     "allocates memory; device-heap allocations outlive the launch"),
    (r"\bprintf\s*\(", "prints from the kernel; output from every thread distorts the timing"),
    (r"\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(",
     "synchronizes the whole grid, which needs a cooperative launch the harness does not make"),
)
_ASM_START = re.compile(r"\b(asm|__asm__|__asm)\b\s*(volatile|__volatile__)?\s*\(")
_ASM_SYMBOL = re.compile(r"\[\s*([A-Za-z_$][\w$]*)")
_ASM_REGISTERS = re.compile(r"\.reg\s+(?:\.\w+\s+)*([^;]+);")  # asm-local register names
_ASM_DECLARATION = re.compile(
    r"\.(global|shared|const|local|extern|visible|weak|entry|func)\s+(\.align\s+\d+\s+)?"
    r"\.(b|u|s|f)\d+\s+[A-Za-z_$]|\.(extern|visible|weak|entry|func)\b")


@dataclass(frozen=True)
class Refusal:
    """Why a candidate is refused; ``line``: 1-based line of the candidate's code, if any."""

    reason: str
    line: Optional[int] = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line else self.reason


def blank_comments_and_strings(code: str) -> str:
    """``code`` with comments and the insides of string and character literals replaced by
    spaces (newlines kept, so offsets and line numbers are unchanged)."""
    out = list(code)
    n = len(code)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif code[i] in "\"'":
            quote, j = code[i], i + 1
            while j < n and code[j] not in (quote, "\n"):
                j += 2 if code[j] == "\\" else 1
            j = min(j, n)
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _line(code: str, offset: int) -> int:
    return code.count("\n", 0, offset) + 1


def _params_differ(old: Parameter, new: Parameter) -> bool:
    return (old.name != new.name or squeeze(old.type) != squeeze(new.type)
            or old.is_pointer != new.is_pointer)


def _signature(kernel: Kernel, code: str) -> list[Refusal]:
    source = parse_source(code, "<candidate>")
    mine = [k for k in source.kernels if k.name == kernel.name]
    others = [k for k in source.kernels if k.name != kernel.name]
    found: list[Refusal] = []
    for k in others:
        found.append(Refusal(f"defines another __global__ kernel, {k.name}; only {kernel.name} may "
                             f"be defined (write helpers as __device__ functions)",
                             k.range.start.line + 1))
    if not mine:
        names = ", ".join(k.name for k in source.kernels) or "none"
        found.append(Refusal(f"no usable code: expected the __global__ kernel {kernel.name}, found "
                             f"__global__ kernels: {names}"))
        return found
    new = mine[0]
    line = new.range.start.line + 1
    if len(mine) > 1:
        found.append(Refusal(f"defines {kernel.name} {len(mine)} times; define it once",
                             mine[1].range.start.line + 1))
    want = ", ".join(p.text for p in kernel.parameters)
    if len(new.parameters) != len(kernel.parameters):
        found.append(Refusal(f"changes the kernel's signature: {len(new.parameters)} parameters, "
                             f"the original has {len(kernel.parameters)} ({want}); keep every "
                             f"parameter's name, type and order", line))
    else:
        for i, (old, cur) in enumerate(zip(kernel.parameters, new.parameters), 1):
            if _params_differ(old, cur):
                found.append(Refusal(
                    f"changes the kernel's signature: parameter {i} is '{cur.text}', the "
                    f"original's is '{old.text}'; keep every parameter's name, type and order "
                    f"(adding const or __restrict__ is fine)", cur.range.start.line + 1))
                break
    if new.template_parameters != kernel.template_parameters:
        found.append(Refusal(f"changes the kernel's template parameters from "
                             f"<{', '.join(kernel.template_parameters)}> to "
                             f"<{', '.join(new.template_parameters)}>", line))
    return found


def _children(node: tree_sitter.Node, kinds: Iterable[str]) -> list[tree_sitter.Node]:
    wanted = set(kinds)
    return [c for c in node.children if c.type in wanted]


def _tokens(src: bytes, node: tree_sitter.Node) -> set[str]:
    """Qualifier and storage words directly on a declaration or definition."""
    words = set()
    for c in node.children:
        if c.type in ("type_qualifier", "storage_class_specifier") or c.type.startswith("__"):
            words.add(text_of(src, c).strip())
    return words


def _is_function_declaration(node: tree_sitter.Node) -> bool:
    pending = [c for c in node.children if c.type not in ("type_qualifier",
                                                        "storage_class_specifier")]
    while pending:
        cur = pending.pop()
        if cur.type == "function_declarator":
            return True
        if cur.type in ("init_declarator", "pointer_declarator", "reference_declarator",
                        "parenthesized_declarator", "attributed_declarator"):
            pending.extend(cur.children)
    return False


def _top_level(src: bytes, node: tree_sitter.Node, includes_ok: set[str]) -> Iterator[Refusal]:
    """Refusals for the file-scope items under ``node``."""
    for item in node.named_children:
        kind = item.type
        line = item.start_point[0] + 1
        if kind == "template_declaration":
            inner = [c for c in item.named_children
                     if c.type not in ("template_parameter_list", "comment")]
            yield from _top_level_item(src, inner[-1] if inner else item, line, includes_ok)
        else:
            yield from _top_level_item(src, item, line, includes_ok)


def _top_level_item(src: bytes, item: tree_sitter.Node, line: int,
                    includes_ok: set[str]) -> Iterator[Refusal]:
    kind = item.type
    text = squeeze(text_of(src, item))
    if kind == "preproc_include":
        header = squeeze(text_of(src, item.child_by_field_name("path") or item))
        if not _allowed_header(header, includes_ok):
            yield Refusal(f"includes {header}, which is neither one of CUDA's own headers nor "
                          f"included by the file already", line)
    elif kind in ("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                  "linkage_specification", "declaration_list", "namespace_definition"):
        yield from _top_level(src, item, includes_ok)
    elif kind == "function_definition":
        words = _tokens(src, item)
        if not words & {"__device__", "__global__"}:
            yield Refusal(f"defines a host function ('{text[:60]}...'); only device code is "
                          f"accepted: the kernel, __device__ functions and constants", line)
    elif kind == "declaration":
        words = _tokens(src, item)
        if item.child_by_field_name("declarator") is None or _is_function_declaration(item):
            return  # a type (struct S {...};) or a function prototype
        if "__managed__" in words:
            yield Refusal(f"declares a __managed__ variable ('{text[:60]}'); state that outlives "
                          f"a launch can carry results between the harness's runs", line)
        elif words & {"const", "constexpr", "__constant__"} and \
                _children(item, ("init_declarator",)):
            return  # an initialized constant (a lookup table, a coefficient) cannot carry state
        else:
            yield Refusal(f"declares a variable at file scope ('{text[:60]}'); state that outlives "
                          f"a launch can carry results between the harness's runs: keep values "
                          f"in registers or __shared__ memory", line)


def _statics(src: bytes, root: tree_sitter.Node) -> Iterator[Refusal]:
    pending = [root]
    while pending:
        node = pending.pop()
        if node.type == "compound_statement":
            for decl in (d for d in _walk(node) if d.type == "declaration"):
                words = _tokens(src, decl)
                if "static" in words and not words & {"__shared__", "const", "constexpr"}:
                    yield Refusal(f"declares a static local variable "
                                  f"('{squeeze(text_of(src, decl))[:60]}'); it outlives the launch",
                                  decl.start_point[0] + 1)
            continue
        pending.extend(node.children)


def _walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children))


def _asm_texts(code: str, blanked: str) -> Iterator[tuple[int, str]]:
    """(offset, text of the string literals) of each inline asm statement."""
    for m in _ASM_START.finditer(blanked):
        depth, j = 1, m.end()
        while j < len(blanked) and depth:
            depth += {"(": 1, ")": -1}.get(blanked[j], 0)
            j += 1
        inside = code[m.end():j]
        strings = re.findall(r'"((?:[^"\\\n]|\\.)*)"', inside)
        yield m.start(), "\n".join(strings)


def _allowed_header(header: str, includes_ok: set[str]) -> bool:
    name = header.strip("<>\"")
    return header in includes_ok or (header.startswith("<") and any(
        fnmatch.fnmatchcase(name, pat) for pat in ALLOWED_HEADERS))


def host_include_refusals(code: str) -> list[Refusal]:
    """The includes of ``code`` that could reach a file outside the user's project (absolute,
    ``..``, computed; ``gpu_runner.includes``), with their lines. Such code is not compiled,
    here or on the runner: nvcc echoes an included file's lines into the errors the model
    reads."""
    out = []
    for inc in find_includes(code):
        why = inc.refusal()
        if why:
            out.append(Refusal(f"{inc.spelling} is refused: {why}", inc.line))
    return out


def _lexical_includes(code: str, includes_ok: set[str]) -> Iterator[Refusal]:
    """Host-reaching includes, and includes outside the allowed ones that the syntax tree's
    file-scope walk does not see (in a function body, behind a splice or a digraph)."""
    yield from host_include_refusals(code)
    for inc in find_includes(code):
        if inc.name is None or inc.refusal():
            continue
        header = f"<{inc.name}>" if inc.angle else f'"{inc.name}"'
        if not _allowed_header(header, includes_ok):
            yield Refusal(f"includes {header}, which is neither one of CUDA's own headers nor "
                          f"included by the file already", inc.line)


def check_candidate(code: str, kernel: Kernel, file_includes: Iterable[str] = ()) -> list[Refusal]:
    """Every reason to refuse ``code`` as the new definition of ``kernel`` (empty: accepted),
    at most one per rule, in line order.

    ``file_includes``: the ``#include`` targets of the file (``<cuda_fp16.h>``,
    ``"util.cuh"``), which the candidate may include again.
    """
    if not code.strip():
        return [Refusal(f"no usable code: expected the __global__ kernel {kernel.name}")]
    found = _signature(kernel, code)
    blanked = blank_comments_and_strings(code)
    for pattern, reason in _TEXT_RULES:
        m = re.search(pattern, blanked)
        if m:
            found.append(Refusal(f"{reason} ('{m.group(0).strip()}')", _line(code, m.start())))
    for offset, asm in _asm_texts(code, blanked):
        registers = {re.sub(r"<\d+>$", "", name.strip())
                     for names in _ASM_REGISTERS.findall(asm) for name in names.split(",")}
        sym = next((s for s in _ASM_SYMBOL.findall(asm) if s not in registers), None)
        if sym is not None:
            found.append(Refusal(f"inline asm names the global symbol '{sym}'; asm may use only "
                                 f"its operands (%0, %1, ...)", _line(code, offset)))
            break
        if _ASM_DECLARATION.search(asm):
            found.append(Refusal("inline asm declares a variable or function; asm may use only "
                                 "its operands (%0, %1, ...)", _line(code, offset)))
            break
    src = to_bytes(code)
    root = new_parser().parse(src).root_node
    includes_ok = {squeeze(i) for i in file_includes}
    seen: set[str] = set()
    lexical = list(_lexical_includes(code, includes_ok))
    include_lines = {r.line for r in lexical}
    for refusal in lexical + list(_top_level(src, root, includes_ok)) + list(_statics(src, root)):
        if refusal not in lexical and refusal.line in include_lines and \
                refusal.reason.startswith("includes "):
            continue  # the same include, already refused
        rule = refusal.reason.split("(")[0]
        if rule not in seen:
            seen.add(rule)
            found.append(refusal)
    return sorted(found, key=lambda r: r.line or 0)


_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*([<\"][^>\"]+[>\"])", re.M)


def includes_of(text: str) -> list[str]:
    """The ``#include`` targets of ``text`` in order, as written (``<cuda_fp16.h>``)."""
    return _INCLUDE.findall(blank_comments_and_strings_keep_includes(text))


def blank_comments_and_strings_keep_includes(text: str) -> str:
    """``text`` with comments blanked but string literals kept (so ``#include "x"`` stays)."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text,
                  flags=re.S)
