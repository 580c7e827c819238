"""The ``#define``s of a file, and expanding them in expressions the passes analyse.

Passes that recognize a pattern by its index arithmetic (``out[IDX(col, row, rows)]``) look
through object-like macros (``#define N 1024``) and function-like macros (``#define
IDX(r, c, ld) ((r) * (ld) + (c))``), the definitions in the branches the preprocessor takes
(``kernel_model.conditionals`` decides ``#if``/``#elif``/``#ifdef``, after the build's ``-D``
values and the headers' macros). Expansion here is only for analysis: the rewritten code
keeps the macro calls as written, so the compiler expands them exactly as before.

Expansion is textual, one macro at a time, with each argument substituted as written
(parenthesized) and the result re-parsed; ``#``, ``##`` and variadic macros are not expanded
(the analysis then sees an unknown call and the pass says so). A macro defined more than once
in the file with no branch decided between them is not expanded either (an ``#if`` cudalens
cannot evaluate: its reason is in ``why_no_value``).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Optional, Sequence

import tree_sitter

from cudalens.kernel_model.conditionals import DIRECTIVE, Branches, Unknown
from cudalens.kernel_model.file_facts import fact, file_nodes
from cudalens.kernel_model.syntax import Parsed, parse, walk

_WORD = re.compile(r"[A-Za-z_]\w*")
_INT = re.compile(r"^\(*\s*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*\)*$")


@dataclass(frozen=True)
class Macro:
    """One ``#define``: ``params`` is None for an object-like macro, else the parameter names;
    ``body`` the replacement text (stripped); ``line`` 1-based."""

    name: str
    params: Optional[tuple[str, ...]]
    body: str
    line: int
    origin: str = ""  # "" for the file's own; a header's name, or "-D" for the build's
    # "" when the definition certainly holds; else why not known: "under '#if F(1)' (line 2),
    # which cudalens cannot evaluate: ..." (``conditionals.Branches.unsure_reason``)
    condition: str = ""

    @property
    def where(self) -> str:
        """``line 12`` (the file's own), ``line 12 of bench.cuh``, or ``the build's -D``."""
        if self.origin == "-D":
            return f"the build's -D{self.name}"
        return f"line {self.line}" + (f" of {self.origin}" if self.origin else "")

    @property
    def expandable(self) -> bool:
        return "#" not in self.body and (self.params is None or "..." not in self.params)


def file_macros(parsed: Parsed) -> dict[str, Macro]:
    """Every macro defined exactly once in the file, by name (worked out once per text,
    ``kernel_model.file_facts``; the dict returned is the caller's own), and, when the text
    is bound to its headers' macros (``bind_header_macros``), those too: the build's ``-D``
    values win over the file's own ``#define``s (the usual ``#ifndef N / #define N 1024``
    default), the file's own over its headers' (a file redefining a header's macro
    ``#undef``s it first). A name defined only in a branch the preprocessor skips
    (``conditionals``: ``#if BLOCK == 256`` with ``BLOCK`` 128) is left out; a name the file
    defines twice has the definition of the branch taken, or none when that depends on a
    condition cudalens cannot evaluate."""
    own, twice = fact(parsed, "macros", _file_macros)
    env = header_macros_of(parsed.text)
    if "#if" in parsed.text or "# if" in parsed.text:  # a branch not taken defines none
        known = file_env(parsed)
        own = {k: v for k, v in own.items() if k in known.macros or not known.unknown.get(
            k, "").startswith(f"{k} is defined only under ")}
    if env is None and not twice:
        return dict(own)
    out = {k: v for k, v in env.macros.items() if k not in twice} if env is not None else {}
    out.update(own)
    if twice:  # ``#ifdef BIG / #define N 4096 / #else / #define N 1024``: the branch taken
        known = file_env(parsed).macros
        out.update({k: known[k] for k in twice if k in known and known[k].origin == ""})
    if env is not None:
        out.update({k: v for k, v in env.macros.items() if v.origin == "-D"})
    return out


def file_env(parsed: Parsed) -> "HeaderMacros":
    """The macros defined at the end of ``parsed``'s text, read after those bound to it
    (``header_macros`` from the bound ``HeaderMacros``; the file's own ``Macro.origin`` is
    ""): which branch of the file's ``#ifdef``s holds, and why a name has no value."""
    env = header_macros_of(parsed.text)

    def compute(p: Parsed) -> HeaderMacros:
        found = header_macros([("", p.text)], start=env)
        return HeaderMacros(found.macros, found.unknown, found.headers[:-1])
    return fact(parsed, f"macros.env.{id(env)}", compute)


def why_no_value(name: str, text: str) -> Optional[str]:
    """Why macro-like ``name`` has no value in ``text`` (a kernel file's, with the macros
    bound to it): defined only in a branch the preprocessor skips (its condition and line,
    in the file or a header), defined differently under conditions cudalens does not
    evaluate, or defined nowhere (``HeaderMacros.why_unknown``); None when it has one or
    does not look like a macro."""
    return file_env(parse(text)).why_unknown(name)


def _file_macros(parsed: Parsed) -> tuple[dict[str, Macro], frozenset[str]]:
    found: dict[str, Macro] = {}
    twice: set[str] = set()
    for n in file_nodes(parsed, "preproc_def", "preproc_function_def"):
        name_node = n.child_by_field_name("name")
        if name_node is None:
            continue
        name = parsed.text_of(name_node)
        value = n.child_by_field_name("value")
        body = parsed.text_of(value).strip() if value is not None else ""
        params: Optional[tuple[str, ...]] = None
        if n.type == "preproc_function_def":
            plist = n.child_by_field_name("parameters")
            params = tuple(parsed.text_of(c) for c in plist.named_children) if plist else ()
        if name in found:
            twice.add(name)
        found[name] = Macro(name, params, body, parsed.line_of(n))
    return {k: v for k, v in found.items() if k not in twice}, frozenset(twice)


_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w*)"
                          r"(?:\((?P<params>[^()]*)\))?(?P<body>.*)$")
_UNDEF_LINE = re.compile(r"^[ \t]*#[ \t]*undef[ \t]+(?P<name>[A-Za-z_]\w*)")
_COMMENTS = re.compile(r"/\*.*?\*/|//.*$")


@dataclass(frozen=True)
class HeaderMacros:
    """The macros a file gets before its own first line: the build's ``-D`` values and the
    ``#define``s of the headers it includes, as the preprocessor leaves them at the end of
    the headers (``macros``, by name; ``Macro.origin`` the header's name or ``-D``), and
    why each name that the headers define but leave without a value has none
    (``unknown``: name -> reason, ``defined only under '#ifdef LARGE' (line 4 of
    bench.cuh), a branch not taken``). ``headers``: the headers' names, for messages."""

    macros: dict = field(default_factory=dict)
    unknown: dict = field(default_factory=dict)
    headers: tuple[str, ...] = ()

    def why_unknown(self, name: str) -> Optional[str]:
        """Why macro-like ``name`` has no value: the reason in ``unknown``, or that neither
        the headers nor the build's ``-D`` options define it (a name of capitals, digits
        and underscores only, as macros are written), or None (a name that looks like a
        variable, or one that is defined)."""
        if name in self.macros:
            return None
        if name in self.unknown:
            return self.unknown[name]
        if re.fullmatch(r"_*[A-Z][A-Z0-9_]*", name):
            where = ", ".join(self.headers) if self.headers else "none found"
            return (f"{name} is not defined in the file, in the headers it includes "
                    f"({where}) or by the build's -D options")
        return None


def header_macros(headers: Sequence[tuple[str, str]],
                  build: Sequence[tuple[str, str]] = (),
                  start: Optional[HeaderMacros] = None) -> HeaderMacros:
    """The ``HeaderMacros`` of ``headers`` ((name, text) in include order) after the build's
    ``-D`` options ``build`` ((name, value); ``-DNAME`` is ``(NAME, "1")``), read on from
    ``start`` when given (its macros defined already: a file's own text after its headers').

    The headers are read as one text after the ``-D`` lines, line by line (a ``\\`` line
    continuation joined): ``#if``/``#elif``/``#ifdef``/``#ifndef``/``#else`` are decided by
    ``conditionals.Branches`` over the macros defined so far; of a condition that cannot be
    evaluated (``conditionals.Unevaluable``) each branch counts as taken, a macro defined
    there has ``Macro.condition`` saying so, and a name such branches define twice with
    different bodies has no known value (``unknown`` says under which condition and why).
    ``#undef`` removes a name. Never raises."""
    macros: dict[str, Macro] = dict(start.macros) if start is not None else {}
    unknown: dict[str, str] = dict(start.unknown) if start is not None else {}
    uncertain: dict[str, str] = {}  # name -> why whether it is defined here is not known
    skipped: set[str] = set()  # names defined in branches not taken
    for name, value in build:
        macros[name] = Macro(name, None, value.strip(), 0, "-D")
    for origin, text in headers:
        branches = Branches()

        def lookup(name: str):
            if name in uncertain:
                return Unknown(uncertain[name])
            if name in unknown and name not in macros and name not in skipped:
                return Unknown(unknown[name])
            m = macros.get(name)
            return None if m is None else (m.params, m.body)

        lines = text.split("\n")
        i = 0
        while i < len(lines):
            first = i
            line = lines[i]
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i]
            i += 1
            line = _COMMENTS.sub(" ", line)
            where = f"line {first + 1}" + (f" of {origin}" if origin else "")
            m = DIRECTIVE.match(line)
            skipping = branches.skipping
            if m:
                branches.directive(m.group("kw"), m.group("rest"), where, lookup)
                continue
            u = _UNDEF_LINE.match(line)
            if u and not skipping:
                macros.pop(u.group("name"), None)
                why = branches.unsure_reason()
                if why:
                    uncertain[u.group("name")] = f"{u.group('name')} is #undef'd {why}"
                continue
            d = _DEFINE_LINE.match(line)
            if d is None:
                continue
            name = d.group("name")
            params = None if d.group("params") is None else \
                tuple(p.strip() for p in d.group("params").split(",") if p.strip())
            body = d.group("body").strip()
            if skipping:
                closed = branches.closed()
                skipped.add(name)
                unknown.setdefault(name, f"{name} is defined only under '{closed.text}' "
                                         f"({closed.where}), a branch not taken, at {where}")
                continue
            why = branches.unsure_reason()
            if why:
                uncertain[name] = f"{name} is defined {why}"
            else:
                uncertain.pop(name, None)
            old = macros.get(name)
            if old is not None and (old.body, old.params) != (body, params) and \
                    old.origin != "-D":  # a -D the text redefines: the text's holds
                macros.pop(name)
                unknown[name] = (f"{name} is defined differently at {old.where} and at "
                                 f"{where}" + (f", {why}" if why else old.condition and
                                               f", {old.condition}" or
                                               " with no #undef between"))
                continue
            if name in unknown and name not in macros and unknown[name].startswith(
                    f"{name} is defined differently"):
                continue
            macros[name] = Macro(name, params, body, first + 1, origin, why)
    for name in macros:
        unknown.pop(name, None)
    names = (start.headers if start is not None else ()) + tuple(o for o, _ in headers)
    return HeaderMacros(macros, unknown, names)


_BOUND: "OrderedDict[str, HeaderMacros]" = OrderedDict()
_BOUND_LOCK = threading.Lock()
MAX_BOUND_TEXTS = 256


def bind_header_macros(text: str, env: Optional[HeaderMacros]) -> None:
    """Makes ``file_macros`` of ``text`` include ``env``'s macros (the last
    ``MAX_BOUND_TEXTS`` texts bound are kept): ``optimizer.context.make_context`` binds a
    kernel file's text to its ``target.FileContext``'s, and each rewritten text to the
    same. ``env`` None unbinds."""
    with _BOUND_LOCK:
        if env is None:
            _BOUND.pop(text, None)
            return
        _BOUND[text] = env
        _BOUND.move_to_end(text)
        while len(_BOUND) > MAX_BOUND_TEXTS:
            _BOUND.popitem(last=False)


def header_macros_of(text: str) -> Optional[HeaderMacros]:
    """The ``HeaderMacros`` bound to ``text`` (``bind_header_macros``), or None."""
    with _BOUND_LOCK:
        return _BOUND.get(text)


_TYPE_BODY = re.compile(r"[A-Za-z_][\w \t:<>,*&]*")


def expand_type(ctype: str, macros: dict[str, Macro], depth: int = 8) -> str:
    """``ctype`` with each word that names an object-like macro whose body reads as a type
    (``#define ELEM_T float``, ``#define REAL unsigned int``) replaced by that body, again
    for the result (at most ``depth`` rounds); for checking a parameter's element type, not
    for rewriting it. ``const ELEM_T *`` -> ``const float *``."""
    for _ in range(depth):
        hit = next((w for w in _WORD.findall(ctype) if w in macros
                    and macros[w].params is None and _TYPE_BODY.fullmatch(macros[w].body)
                    and macros[w].body != w), None)
        if hit is None:
            break
        ctype = re.sub(rf"\b{re.escape(hit)}\b", macros[hit].body, ctype)
    return ctype


def int_value(macro: Macro) -> Optional[int]:
    """The value of an object-like macro whose body is an integer literal (``256``, ``(32)``,
    ``0x100u``), else None."""
    if macro.params is not None:
        return None
    m = _INT.match(macro.body)
    if not m:
        return None
    return int(m.group(1), 0)


def substitute(macro: Macro, args: list[str]) -> str:
    """The replacement text of a function-like macro call with ``args`` (source texts), each
    argument parenthesized as the preprocessor's result would group it.

    Raises:
        ValueError: the number of arguments does not match the macro's parameters.
    """
    params = macro.params or ()
    if len(params) != len(args):
        raise ValueError(f"macro {macro.name} takes {len(params)} arguments, found {len(args)}")
    table = dict(zip(params, args))
    return _WORD.sub(lambda m: f"({table[m.group(0)]})" if m.group(0) in table else m.group(0),
                     macro.body)


def parse_expression(text: str) -> tuple[Parsed, tree_sitter.Node]:
    """Parses ``text`` as one C++ expression; returns the parse and the expression node.

    Raises:
        ValueError: ``text`` is not a single well-formed expression.
    """
    parsed = parse(f"void cudalens_expr__() {{ (void)({text}); }}\n")
    root = parsed.tree.root_node
    if root.has_error:
        raise ValueError(f"cannot parse '{text}' as an expression")
    for n in walk(root):
        if n.type == "cast_expression":
            value = n.child_by_field_name("value")
            if value is not None and value.type == "parenthesized_expression":
                inner = [c for c in value.named_children if c.type != "comment"]
                if len(inner) == 1:
                    return parsed, inner[0]
    raise ValueError(f"cannot parse '{text}' as an expression")


def expand_use(node: tree_sitter.Node, parsed: Parsed, macros: dict[str, Macro]
               ) -> Optional[tuple[Parsed, tree_sitter.Node]]:
    """The expression a macro use ``node`` (of ``parsed``) stands for, re-parsed, as (its
    parse, its node): an object-like macro whose body is no integer literal (``_PB_NX`` with
    ``#define _PB_NX POLYBENCH_LOOP_BOUND(NX, nx)``) or a function-like macro's call with its
    arguments substituted (``substitute``). None for anything else, a macro that is not
    ``expandable``, a wrong argument count, or a replacement that is no expression."""
    text: Optional[str] = None
    if node.type == "identifier":
        macro = macros.get(parsed.text_of(node))
        if macro is not None and macro.params is None and macro.expandable and \
                int_value(macro) is None and macro.body:
            text = macro.body
    elif node.type == "call_expression":
        fn, args = node.child_by_field_name("function"), node.child_by_field_name("arguments")
        macro = macros.get(parsed.text_of(fn)) if fn is not None and \
            fn.type == "identifier" else None
        if macro is not None and macro.params is not None and macro.expandable and \
                args is not None:
            try:
                text = substitute(macro, [parsed.text_of(a) for a in args.named_children
                                          if a.type != "comment"])
            except ValueError:
                text = None
    if text is None:
        return None
    try:
        return parse_expression(text)
    except ValueError:
        return None
