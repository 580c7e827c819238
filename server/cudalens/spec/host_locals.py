"""Integer locals of the host function that launches a kernel, read from the file's text:
``int grid_size = N;`` or ``unsigned int block_size = 512;`` above ``<<<grid_size,
block_size>>>`` stand for their initializers in the launch's grid and block expressions.
Shared by spec inference (``spec.infer``) and the block-shape reader (``spec.block_shape``)."""

from __future__ import annotations

import functools
import re


def offset_of(text: str, line: int, column: int) -> int:
    """The character offset of 0-based ``line`` and ``column`` in ``text`` (near enough for
    ordering declarations before a launch)."""
    starts = line_starts(text)
    return len(text) if line >= len(starts) else starts[line] + column


@functools.lru_cache(maxsize=8)
def line_starts(text: str) -> tuple[int, ...]:
    return (0,) + tuple(m.end() for m in re.finditer("\n", text))


LOCAL_INT = (r"(?:(?:static|const|constexpr)\s+)*(?:unsigned\s+|signed\s+)?(?:long\s+)?"
             r"(?:int|long|short|size_t|auto|unsigned|uint)\s+(?:const\s+)?")


_DECLARATION = re.compile(rf"\b{LOCAL_INT}([^;{{}}]+);")


def declarations(text: str) -> list[tuple[str, str, int]]:
    """``(name, initializer, end offset of its declaration)`` of each declarator with an
    initializer of the integer declarations in ``text``, in order; every declarator of a
    declaration counts (``int nx = 1 << 10, ny = 1 << 13;`` gives nx and ny), commas inside
    parentheses or brackets are not separators (``int a = min(x, y), b = 2;``)."""
    out = []
    for m in _DECLARATION.finditer(text):
        for part in _split_commas(m.group(1)):
            d = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*=\s*(.+?)\s*", part, flags=re.S)
            if d is not None:
                out.append((d.group(1), d.group(2), m.end()))
    return out


def _split_commas(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses, brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def locals_in(expr: str, source: str, before: int, keep: set[str]) -> str:
    """``expr`` with each name that is not in ``keep`` replaced by the initializer of its last
    integer declaration before offset ``before`` in the launching function (``int grid_size =
    N;``; the function taken to start after the last ``}`` that opens a line above the
    launch; a few rounds), when that name is not assigned again between them; a name an
    ``if (NAME == K) {`` around ``before`` fixes is ``K`` (``if_bindings``)."""
    start = source.rfind("\n}", 0, before) + 1
    fixed = if_bindings(source, before)
    for _ in range(3):
        changed = False

        def one(m: "re.Match") -> str:
            nonlocal changed
            name = m.group(0)
            if name in keep:
                return name
            if name in fixed:  # the launch sits inside 'if (name == K) {'
                changed = True
                return f"({fixed[name]})"
            found = [(init, end) for declared, init, end in declarations(source[start:before])
                     if declared == name]
            if not found:
                return name
            init, end = found[-1]
            later = source[start + end:before]
            if re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%]?=)(?!=)", later):
                return name
            changed = True
            return f"({init})"
        expr = re.sub(r"(?<![\w.])[A-Za-z_]\w*(?!\s*\()", one, expr)
        if not changed:
            break
    return expr


def _assigned(name: str, text: str) -> bool:
    """Whether ``text`` assigns ``name`` (``=``, a compound assignment, ``++`` or ``--``)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\s*(?:[-+*/%]?=(?!=)|\+\+|--)",
                     text) is not None


_IF_EQUAL = re.compile(r"\bif\s*\(\s*(?:([A-Za-z_]\w*)\s*==\s*([\w.]+)|([\w.]+)\s*==\s*"
                       r"([A-Za-z_]\w*))\s*\)\s*\{")


def if_bindings(source: str, at: int) -> dict[str, str]:
    """Name -> value fixed at offset ``at`` by the ``if (NAME == K) {`` (or ``K == NAME``)
    blocks around it, ``K`` a literal or a name: matrixMul's ``if (block_size == 16) {
    MatrixMulCUDA<16><<<grid, threads>>>(...); }`` runs with ``block_size == 16`` whatever
    ``block_size``'s initializer, and so does ``dim3 threads(block_size, block_size)``
    declared above the ``if``. Only when the launch is inside the braces of the ``if``'s own
    branch and ``NAME`` is not assigned between the ``if`` and ``at``."""
    out: dict[str, str] = {}
    for m in _IF_EQUAL.finditer(source, 0, at):
        close = _matching_brace(source, m.end() - 1)
        if close is None or close < at:
            continue
        name, value = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        if re.fullmatch(r"[A-Za-z_]\w*", value) and not re.fullmatch(r"[A-Z_][A-Z0-9_]*", value):
            continue  # a == b between two variables fixes neither's value here
        if _assigned(name, source[m.end():at]):
            continue
        out[name] = value
    return out


_SWITCH = re.compile(r"\bswitch\s*\(\s*([A-Za-z_]\w*)\s*\)\s*\{")
_LABEL = re.compile(r"\b(?:case\s+([^:;{}]+?)\s*:(?!:)|default\s*:(?!:))")


def case_bindings(source: str, at: int) -> dict[str, str]:
    """Name -> case label text fixed at offset ``at`` by the ``switch (NAME) { ... case K:
    ... }`` statements around it: the launch in ``switch (ncols) { case 32: k<32><<<g, b,
    smem>>>(..., ncols); break; ... }`` runs with ``ncols == 32``. Only when the label is the
    one nearest above ``at`` at the switch's own depth and is reached from no other label (the
    statements before it end with ``break;``, ``return ...;`` or ``continue;``, or it is the
    first), so ``case 32: case 64:`` and fall-through give nothing; ``default:`` gives
    nothing. The name must not be assigned between the label and ``at``."""
    out: dict[str, str] = {}
    for m in _SWITCH.finditer(source, 0, at):
        open_at = m.end() - 1
        close = _matching_brace(source, open_at)
        if close is None or close < at:
            continue
        labels = []  # (start, end, label) at the switch's own depth
        depth = 0
        for i in range(open_at + 1, at):
            ch = source[i]
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif depth == 0 and ch in "cd":
                lm = _LABEL.match(source, i)
                if lm is not None and (i == 0 or not (source[i - 1].isalnum()
                                                      or source[i - 1] == "_")):
                    labels.append((lm.start(), lm.end(), lm.group(1)))
        if not labels or labels[-1][2] is None:
            continue
        start, end, label = labels[-1]
        if len(labels) > 1:
            before = source[labels[-2][1]:start].strip()
            if not re.search(r"(?:\bbreak|\bcontinue|\breturn\b[^;]*)\s*;\s*(?:\}\s*)?$", before):
                continue
        name = m.group(1)
        if _assigned(name, source[end:at]):
            continue
        out[name] = label.strip()
    return out


def _matching_brace(text: str, at: int) -> "int | None":
    """The offset of the ``}`` closing the ``{`` at ``at`` (no care for strings or
    comments: host code around a launch), or None."""
    depth = 0
    for i in range(at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


_INT_TYPE_WORDS = {"int", "long", "short", "unsigned", "signed", "size_t", "int64_t",
                   "int32_t", "uint32_t", "uint64_t", "uint", "const"}


def function_int_params(source: str, at: int) -> list[str]:
    """The integer by-value parameters of the function that contains offset ``at`` (a
    launch): ``static void launch(const float *x, const int ncols, const int nrows, cudaStream_t
    st) {`` gives ``["ncols", "nrows"]``. The function is taken to start after the last ``}``
    that opens a line above ``at`` (as ``locals_in`` takes it); [] when its header does not
    read as ``NAME(PARAMS) {``."""
    start = source.rfind("\n}", 0, at) + 1
    m = None
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*(?:const\s*)?\{", source[start:at]):
        if m.group(1) not in ("if", "for", "while", "switch", "catch"):
            break
    else:
        return []
    out = []
    for part in m.group(2).split(","):
        words = re.findall(r"[A-Za-z_]\w*", part.split("=")[0])
        if len(words) >= 2 and "*" not in part and "&" not in part and \
                all(w in _INT_TYPE_WORDS for w in words[:-1]):
            out.append(words[-1])
    return out


def caller_arguments(source: str, at: int, name: str) -> list[tuple[str, int]]:
    """``(argument text, offset of the call)`` for parameter ``name`` of the function that
    contains offset ``at``, at each call of that function in ``source`` (``host(n, 0, 16)`` in
    ``main`` for ``void host(int n, float *y, int blocks)`` and ``blocks``: ``("16", ...)``),
    in file order; the definition itself and calls with fewer arguments are skipped."""
    start = source.rfind("\n}", 0, at) + 1
    header = None
    for header in re.finditer(r"\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*(?:const\s*)?\{",
                              source[start:at]):
        if header.group(1) not in ("if", "for", "while", "switch", "catch"):
            break
    else:
        return []
    params = [re.findall(r"[A-Za-z_]\w*", p.split("=")[0]) for p in header.group(2).split(",")]
    index = next((i for i, words in enumerate(params) if words and words[-1] == name), None)
    if index is None:
        return []
    defined_at = start + header.start(1)
    out = []
    for m in re.finditer(rf"(?<![\w.>:]){re.escape(header.group(1))}\s*\(", source):
        if m.start() == defined_at:
            continue
        close = _matching_paren(source, m.end() - 1)
        if close is None or re.match(r"\s*(?:const\s*)?\{", source[close + 1:]):
            continue
        args = _split_commas(source[m.end():close])
        if index < len(args):
            out.append((args[index].strip(), m.start()))
    return out


def _matching_paren(text: str, at: int) -> "int | None":
    depth = 0
    for i in range(at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return None
