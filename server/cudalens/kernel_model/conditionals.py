"""``#if``/``#elif``/``#ifdef``/``#ifndef``/``#else``/``#endif`` decided as the C preprocessor
decides them (C11 6.10.1), for the integer expressions over the macros known at that point.

One evaluator for both readers of a file's ``#define``s: ``spec.defines.active_text`` (the
integer constants of spec expressions and drafts) and ``kernel_model.macros.header_macros``
(the macros the passes expand). ``evaluate`` computes a condition: ``defined NAME`` and
``defined(NAME)``, ``! ~ - +`` (unary), ``* / % + - << >> < <= > >= == != & ^ | && ||``, ``?:``,
parentheses, integer literals (decimal, octal, hex, binary; suffixes ``u``/``l``/``ll``),
character literals; object-like and function-like macros are expanded; an identifier
written in the condition that is no macro is 0, as in C (``true`` is 1 and ``false`` 0, as in
C++). Values are 64-bit, unsigned when an operand is (``-1 < 0u`` is 0). ``&&``, ``||`` and
``?:`` evaluate only the operand they need.

A condition cannot be evaluated (``Unevaluable``, whose message says why) when it calls a
function-like macro that cannot be expanded (``#``/``##`` or ``...`` in it) or a name that is
no macro, when a macro's replacement is no integer (``#define MODE fast``, ``1.5``), when it
divides by zero, or when it names a macro whose value cudalens does not know:
``__CUDA_ARCH__`` (defined only in nvcc's device passes, with the architecture compiled for,
and not in the host pass that also reads the file: which value holds depends on the code
that reads it, so neither branch is chosen), the compiler's version macros (``PREDEFINED``),
or a name defined only under a condition that could not be evaluated. ``Branches`` then keeps
each branch as if taken, which is what cudalens did for every ``#if`` before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional, Union

MASK = (1 << 64) - 1


@dataclass(frozen=True)
class Unknown:
    """A macro whose value cudalens does not know: ``reason`` says why; ``defined`` whether
    it is defined (None: not known either)."""

    reason: str
    defined: Optional[bool] = None


# (parameters or None, replacement text) of a macro, as a lookup returns it
Definition = tuple[Optional[tuple[str, ...]], str]
Lookup = Callable[[str], Union[None, Definition, Unknown]]

_VERSION = "the compiler's version, which cudalens does not know"
# macros nvcc defines before a .cu file's first line (nvcc -E -dM): known ones, and ones
# whose value cudalens cannot know
PREDEFINED: dict[str, Union[Definition, Unknown]] = {
    "__CUDACC__": (None, "1"),
    "__NVCC__": (None, "1"),
    "__CUDA_ARCH__": Unknown("__CUDA_ARCH__ is defined only when nvcc compiles device code, "
                             "as the architecture compiled for, and not in the host pass"),
    "__cplusplus": Unknown("__cplusplus is the C++ standard of the build's -std, which "
                           "cudalens does not know", True),
    "__CUDACC_VER_MAJOR__": Unknown(f"__CUDACC_VER_MAJOR__ is {_VERSION}", True),
    "__CUDACC_VER_MINOR__": Unknown(f"__CUDACC_VER_MINOR__ is {_VERSION}", True),
    "__CUDACC_VER_BUILD__": Unknown(f"__CUDACC_VER_BUILD__ is {_VERSION}", True),
    "CUDART_VERSION": Unknown(f"CUDART_VERSION is {_VERSION}", True),
    "CUDA_VERSION": Unknown(f"CUDA_VERSION is {_VERSION} (and cuda.h defines it)"),
    "__GNUC__": Unknown("__GNUC__ is the host compiler's version, which cudalens does not "
                        "know", True),
}
_SPECIAL = ("__has_include", "__has_include_next", "__has_builtin", "__has_attribute",
            "__has_cpp_attribute", "__has_feature", "__has_extension")


class Unevaluable(ValueError):
    """A condition cudalens cannot evaluate; the message says why."""


_TOKEN = re.compile(r"\s*(?:(?P<num>\.?\d(?:[\w.']|[eEpP][+-])*)|(?P<id>[A-Za-z_]\w*)"
                    r"|(?P<chr>L?'(?:\\.|[^'\\])+')|(?P<str>\"(?:\\.|[^\"\\])*\")"
                    r"|(?P<op>&&|\|\||<<|>>|<=|>=|==|!=|##|[-+*/%<>&|^!~?:(),#]))")
_INT = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)([uU]?(?:ll|LL|l|L)?|"
                  r"(?:ll|LL|l|L)[uU])")
_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "\\": 92, "'": 39, '"': 34, "a": 7, "b": 8,
            "f": 12, "v": 11}


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of each token; kind is num, id, chr, str or op."""
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise Unevaluable(f"cannot read '{text[pos:].strip()[:20]}'")
        out.append((m.lastgroup or "", m.group(m.lastgroup or 0)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


# a value: (integer, unsigned) or Unknown
_Value = Union[tuple[int, bool], Unknown]


def _literal(kind: str, text: str) -> tuple[int, bool]:
    if kind == "chr":
        body = text.lstrip("L")[1:-1]
        if body.startswith("\\"):
            esc = body[1:]
            if esc in _ESCAPES:
                return _ESCAPES[esc], False
            if esc.startswith("x"):
                return int(esc[1:], 16), False
            if esc.isdigit():
                return int(esc, 8), False
            raise Unevaluable(f"cannot read the character {text}")
        if len(body) != 1:
            raise Unevaluable(f"cannot read the character {text}")
        return ord(body), False
    m = _INT.fullmatch(text.replace("'", ""))
    if m is None:
        raise Unevaluable(f"'{text}' is not an integer")
    digits = m.group(1)
    base = 16 if digits[:2] in ("0x", "0X") else 2 if digits[:2] in ("0b", "0B") else \
        8 if digits.startswith("0") and len(digits) > 1 else 10
    value = int(digits[2:] if base in (16, 2) else digits, base)
    unsigned = "u" in m.group(2).lower() or value > MASK >> 1
    return value & MASK, unsigned


def _expand(tokens: list[tuple[str, str]], lookup: Lookup, hidden: frozenset[str],
            depth: int = 0) -> list[tuple[str, str]]:
    """``tokens`` with ``defined`` decided (as ``("num", "0"|"1")`` or ``("unk", reason)``)
    and macros replaced; a name that came out of a replacement and is no macro is marked
    ``("bad", name)``."""
    if depth > 64:
        raise Unevaluable("macros expand more than 64 levels deep")
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        i += 1
        if kind != "id":
            out.append((kind, text))
            continue
        if text == "defined":
            j = i + 1 if i < len(tokens) and tokens[i][1] == "(" else i
            if j >= len(tokens) or tokens[j][0] != "id" or \
                    (j > i and (j + 1 >= len(tokens) or tokens[j + 1][1] != ")")):
                raise Unevaluable("'defined' without a macro name")
            name = tokens[j][1]
            i = j + 2 if j > i else j + 1
            found = _find(name, lookup)
            if isinstance(found, Unknown):
                out.append(("unk", found.reason) if found.defined is None
                           else ("num", "1" if found.defined else "0"))
            else:
                out.append(("num", "0" if found is None else "1"))
            continue
        if text in _SPECIAL:
            raise Unevaluable(f"{text}(...) asks the compiler, which cudalens cannot do")
        found = None if text in hidden else _find(text, lookup)
        if isinstance(found, Unknown):
            out.append(("unk", found.reason))
            continue
        if found is None:
            if i < len(tokens) and tokens[i][1] == "(" and not depth:
                raise Unevaluable(f"'{text}(' calls no macro cudalens knows of")
            out.append(("bad" if depth and text not in ("true", "false") else "id", text))
            continue
        params, body = found
        if params is None:
            out += _expand(_tokens(body) if body.strip() else [], lookup, hidden | {text},
                           depth + 1)
            continue
        if i >= len(tokens) or tokens[i][1] != "(":
            out.append(("bad" if depth else "id", text))  # a function-like name alone
            continue
        args: list[list[tuple[str, str]]] = [[]]
        level, j = 0, i + 1
        while j < len(tokens):
            t = tokens[j]
            if t[1] == "(":
                level += 1
            elif t[1] == ")":
                if level == 0:
                    break
                level -= 1
            elif t[1] == "," and level == 0:
                args.append([])
                j += 1
                continue
            args[-1].append(t)
            j += 1
        if j >= len(tokens):
            raise Unevaluable(f"the call of macro {text} is not closed")
        i = j + 1
        if "#" in body or "..." in params:
            raise Unevaluable(f"{text} is a function-like macro cudalens cannot expand "
                              f"(it uses #, ## or ...)")
        if args == [[]] and not params:
            args = []
        if len(args) != len(params):
            raise Unevaluable(f"macro {text} takes {len(params)} arguments, found {len(args)}")
        table = {p: _expand(a, lookup, hidden, depth) for p, a in zip(params, args)}
        replaced: list[tuple[str, str]] = []
        for t in (_tokens(body) if body.strip() else []):
            if t[0] == "id" and t[1] in table:
                replaced += [("op", "(")] + table[t[1]] + [("op", ")")]
            else:
                replaced.append(t)
        out += _expand(replaced, lookup, hidden | {text}, depth + 1)
    return out


def _find(name: str, lookup: Lookup) -> Union[None, Definition, Unknown]:
    found = lookup(name)
    if found is None and name in PREDEFINED:
        return PREDEFINED[name]
    return found


_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%")]


class _Parser:
    """Precedence climbing over expanded tokens into a tree of tuples, evaluated lazily."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else ""

    def take(self) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise Unevaluable("the condition ends early")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def conditional(self):
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take()
        yes = self.conditional()
        if self.take()[1] != ":":
            raise Unevaluable("'?' without ':'")
        return ("?:", cond, yes, self.conditional())

    def binary(self, level: int):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level] and self.tokens[self.pos][0] == "op":
            op = self.take()[1]
            left = (op, left, self.binary(level + 1))
        return left

    def unary(self):
        kind, text = self.take()
        if kind == "op" and text in ("!", "~", "-", "+"):
            return ("u" + text, self.unary())
        if kind == "op" and text == "(":
            inner = self.conditional()
            if self.take()[1] != ")":
                raise Unevaluable("unbalanced parentheses")
            return inner
        if kind in ("num", "chr"):
            return ("lit", _literal(kind, text))
        if kind == "id":
            return ("lit", (1 if text == "true" else 0, False))
        if kind == "unk":
            return ("lit", Unknown(text))
        if kind == "bad":
            return ("lit", Unknown(f"a macro's replacement '{text}' is not an integer"))
        raise Unevaluable(f"'{text}' is not allowed in a condition")


def _signed(v: int) -> int:
    return v - (1 << 64) if v >> 63 else v


def _run(node) -> _Value:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "?:":
        cond = _run(node[1])
        if isinstance(cond, Unknown):
            return cond
        return _run(node[2] if cond[0] else node[3])
    if op in ("&&", "||"):
        left = _run(node[1])
        if not isinstance(left, Unknown) and bool(left[0]) == (op == "||"):
            return (int(op == "||"), False)
        right = _run(node[2])
        if not isinstance(right, Unknown) and bool(right[0]) == (op == "||"):
            return (int(op == "||"), False)
        if isinstance(left, Unknown):
            return left
        if isinstance(right, Unknown):
            return right
        return (int(op == "||"), False) if op == "||" and (left[0] or right[0]) else \
            (int(bool(left[0]) and bool(right[0])), False)
    if op.startswith("u"):
        v = _run(node[1])
        if isinstance(v, Unknown):
            return v
        value, unsigned = v
        if op == "u!":
            return (int(value == 0), False)
        if op == "u~":
            return ((~value) & MASK, unsigned)
        return ((-value) & MASK if op == "u-" else value, unsigned)
    a, b = _run(node[1]), _run(node[2])
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    unsigned = a[1] or b[1]
    x, y = (a[0], b[0]) if unsigned else (_signed(a[0]), _signed(b[0]))
    if op in ("<<", ">>"):
        count = _signed(b[0]) if not b[1] else b[0]
        if count < 0 or count > 63:
            raise Unevaluable(f"a shift by {count}")
        base = a[0] if a[1] else _signed(a[0])
        return ((base << count if op == "<<" else base >> count) & MASK, a[1])
    if op in ("/", "%"):
        if y == 0:
            raise Unevaluable("a division by zero")
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return ((q if op == "/" else x - q * y) & MASK, unsigned)
    compare = {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}
    if op in compare:
        return (int(compare[op]), False)
    result = {"+": x + y, "-": x - y, "*": x * y, "&": x & y, "|": x | y, "^": x ^ y}[op]
    return (result & MASK, unsigned)


def evaluate(condition: str, lookup: Lookup) -> int:
    """The value of ``condition`` (an ``#if``'s text, comments removed) as the preprocessor
    computes it, with macros looked up by ``lookup`` (name -> (parameters or None,
    replacement text), None when not defined, or ``Unknown``); ``PREDEFINED`` answers for the
    names ``lookup`` does not define. The result is the 64-bit value, as a Python int (an
    unsigned result is not negative).

    Raises:
        Unevaluable: the condition cannot be evaluated (see the module doc); its message
            says why.
    """
    special = next((w for w in re.findall(r"[A-Za-z_]\w*", condition) if w in _SPECIAL), None)
    if special is not None:
        raise Unevaluable(f"{special}(...) asks the compiler, which cudalens cannot do")
    tokens = _expand(_tokens(condition), lookup, frozenset())
    if not tokens:
        raise Unevaluable("the condition is empty")
    parser = _Parser(tokens)
    tree = parser.conditional()
    if parser.pos != len(tokens):
        raise Unevaluable(f"cannot read the condition after '{parser.tokens[parser.pos - 1][1]}'")
    value = _run(tree)
    if isinstance(value, Unknown):
        raise Unevaluable(value.reason)
    return value[0] if value[1] else _signed(value[0])


DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?P<kw>ifdef|ifndef|if|elif|else|endif)\b(?P<rest>.*)$")


@dataclass
class Level:
    """One open conditional: ``taken`` whether the current branch is taken (None: not known),
    ``done`` a branch before certainly taken, ``unsure`` a branch before not known,
    ``text`` the directive (``#elif B (the branch after #if A)``), ``where`` its place and
    ``why`` why it is not known ("" when it is)."""

    taken: Optional[bool]
    done: bool
    unsure: bool
    text: str
    where: str
    why: str = ""


class Branches:
    """The open conditionals of a text read line by line: ``directive`` on each conditional
    line, ``skipping`` while a branch certainly not taken is open, ``unsure_level`` the
    outermost open branch whose condition is not known."""

    def __init__(self) -> None:
        self.stack: list[Level] = []

    @property
    def skipping(self) -> bool:
        return any(level.taken is False for level in self.stack)

    def closed(self) -> Optional[Level]:
        """The innermost open branch certainly not taken, or None."""
        return next((lv for lv in reversed(self.stack) if lv.taken is False), None)

    def unsure_level(self) -> Optional[Level]:
        """The outermost open branch not known to be taken (while none is skipped), or None."""
        return next((lv for lv in self.stack if lv.taken is None), None)

    def _decide(self, kw: str, rest: str, lookup: Lookup) -> tuple[Optional[bool], str]:
        if kw in ("ifdef", "ifndef"):
            word = rest.split()[0] if rest.split() else ""
            if not re.fullmatch(r"[A-Za-z_]\w*", word):
                return None, f"'#{kw}' names no macro"
            rest = f"defined({word})" if kw == "ifdef" else f"!defined({word})"
        try:
            return bool(evaluate(rest, lookup)), ""
        except Unevaluable as exc:
            return None, str(exc)

    def directive(self, kw: str, rest: str, where: str, lookup: Lookup) -> None:
        """Reads one conditional directive ``#kw rest`` (comments removed) at ``where``
        (``line 4 of bench.h``), deciding its condition with ``lookup`` (``evaluate``)."""
        rest = rest.strip()
        if kw in ("if", "ifdef", "ifndef"):
            text = f"#{kw} {rest.split()[0] if kw != 'if' and rest.split() else rest}"
            if self.skipping:
                self.stack.append(Level(False, False, False, text, where))
                return
            taken, why = self._decide(kw, rest, lookup)
            self.stack.append(Level(taken, taken is True, taken is None, text, where, why))
        elif kw in ("elif", "else") and self.stack:
            level = self.stack[-1]
            outer = any(lv.taken is False for lv in self.stack[:-1])
            done = level.done or level.taken is True
            unsure = level.unsure or level.taken is None
            why = level.why
            if outer or done:
                taken: Optional[bool] = False
            elif kw == "else":
                taken = None if unsure else True
            else:
                own, own_why = self._decide("if", rest, lookup)
                taken = False if own is False else None if (unsure or own is None) else True
                why = own_why or why
            opened = level.text.split(" (the branch after ")[0]
            self.stack[-1] = Level(taken, done, unsure or taken is None,
                                   f"#{kw}" + (f" {rest}" if rest else "")
                                   + f" (the branch after {opened})", where, why)
        elif kw == "endif" and self.stack:
            self.stack.pop()

    def unsure_reason(self) -> str:
        """``under '#if F(1)' (line 2), which cudalens cannot evaluate: WHY`` for the outermost
        branch not known to be taken, or ""."""
        level = self.unsure_level()
        if level is None:
            return ""
        return (f"under '{level.text}' ({level.where}), which cudalens cannot evaluate"
                + (f": {level.why}" if level.why else ""))
