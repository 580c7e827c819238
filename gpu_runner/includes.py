"""Which files a compile request's source may include (no nvcc needed).

nvcc prints lines of an included file in its error log, and the runner returns that log: a
source with ``#include "/etc/passwd"`` would hand the file to whoever sent it (and, through the
LLM agent's feedback, to the model). So a request may include the toolkit's and the compiler's
own headers (found on nvcc's search path: CUDA's include folder, pycuda's, the host compiler's
system folders) and the files sent with it, and nothing else. Refused, each with its line and
the directive as written:

- an absolute header name (``"/etc/passwd"``, ``</etc/hostname>``);
- a name with a ``..`` component (``"../../x.h"``), a backslash or nothing at all: it would leave
  (or cannot name) the request's own files. One exception: a quoted ``#include``/``#import``/
  ``#embed``/``__has_include`` whose ``..`` components all come first (``"../../common/x.h"``),
  in a request file (the source at its ``Variant.source_path`` or a sent file) from whose folder
  the name stays inside the request's root and names a file the request sent
  (``request_target``). nvcc looks in the including file's own folder first, and finds the sent
  file there; the folders it climbs through exist (they hold the including file), so no other
  search path is tried;
- a computed include (``#include NAME`` with NAME a macro): its file is known only after
  preprocessing.

Relative names without ``..`` resolve in the compile's own folder, fresh and private (pycuda
writes the source into a new ``mkdtemp`` folder and runs nvcc there), which holds only what the
request sent, or on the toolkit's search path; ``-I``, ``-isystem``, ``-include`` and every other
path option are refused by ``gpu_runner.compiler.check_options``. Nothing the requester did not
send can be reached through a symbolic link: the folder holds no links (a later ``files`` field
of a request is written there as regular files, named as ``check_file_names`` allows).

Also refused: other directives that make the compiler open a file by name (gcc prints lines of
the file a ``#line`` or line marker names under its diagnostics; ``#pragma GCC dependency``
opens its file): a ``#line`` naming an absolute or ``..`` path or whose operand is a macro, any
``GCC dependency`` pragma, the identifier ``dependency`` anywhere in code (CCCL's
``_CCCL_PRAGMA(GCC dependency "f")`` stringizes it into a ``_Pragma``), a ``_Pragma`` whose
operand is not one plain string literal (``_Pragma(#x)``, ``_Pragma(x)``, ``#define P _Pragma``:
the pragma is known only after expansion), and a universal character name in a directive's
name (``file_directive_problems``). Pragmas built by token pasting can still escape a text
scan (``XCAT(_P, ragma)(...)``, ``XCAT(depend, ency)``): the compile poisons ``dependency``
for those (``gpu_runner.compile_log``).

Directives are found as the preprocessor finds them: lines ended by LF, CR LF or a lone CR and
NUL read as a blank (``gcc_lines``, as gcc's lexer reads them), after line splicing (a backslash at a line's
end, also with blanks after it, as gcc accepts), with comments as blanks (a comment may span
lines inside a directive), outside string, character and raw string literals and numbers (digit
separators), spelled ``#`` or the digraph ``%:``, for ``include``, ``include_next``, ``import``
and ``embed``; the operand of ``__has_include``, ``__has_include_next`` and ``__has_embed``
follows the same rules (it tells whether a host file exists). The dialects a request may pick (``-std=c++NN``)
lex differently, so the text is scanned as written and with trigraphs replaced (``??=`` is
``#``, ``??/`` a backslash; gcc honours them under a strict ``-std=c++11``/``c++14``), each with
and without raw strings (C++11) and digit separators (C++14), and a directive found in any of
these readings is checked. Where the scan could
err, it errs towards finding a directive that is not one (in ``#if 0``, a macro body): that
include is checked too.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Container, Iterator, Mapping, Optional

from gpu_runner.compile_folder import OUTPUT

DIRECTIVES = ("include", "include_next", "import", "embed")
HAS_INCLUDE = ("__has_include", "__has_include_next", "__has_embed")

MAX_FILES = 64  # files a request may carry besides its source
MAX_FILE_BYTES = 1 << 20
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")

_TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}",
              "-": "~"}
_SPLICE = re.compile(r"\\[ \t\f\v]*\r?\n")
_RAW = re.compile(r'(?:u8|u|U|L)?R"([^ ()\\\t\v\f\n"]{0,16})\(')
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_PP_NUMBER = re.compile(r"\.?[0-9](?:[eEpP][+-]|'[0-9A-Za-z_]|[0-9A-Za-z_.])*")
_PP_NUMBER_PLAIN = re.compile(r"\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*")
# A directive or __has_include can only be where one of these words is, once lines are spliced.
_WORDS = re.compile(r"include|import|embed|line|ragma|dependency|\\[uU]|(?:#|%:)(?:[ \t\f\v]|/\*.*?\*/)*[0-9]",
                    re.S)
_BLANKS = " \t\f\v\r"
_DIGITS = re.compile(r"[0-9]+")
_DEPENDENCY = re.compile(r"\s*GCC\s+dependency\b")


@dataclass(frozen=True)
class Include:
    """One include found in a text: ``line`` (1-based, physical), ``spelling`` (the directive
    or ``__has_include`` as the source line has it), ``name`` (the header name between its
    delimiters; None for a computed include) and ``angle`` (``<...>`` rather than ``"..."``)."""

    line: int
    spelling: str
    name: Optional[str]
    angle: bool = False
    next: bool = False  # include_next or __has_include_next (they skip the file's own folder)

    def refusal(self) -> Optional[str]:
        """Why this include is refused (see the module doc), or None when it may stay; a
        ``..`` name is refused here, wherever it leads (``refusal_in`` knows the request)."""
        if self.name is None:
            return ("a computed include (a macro): name the file itself, in quotes or angle "
                    "brackets")
        return name_problem(self.name)

    def refusal_in(self, including: str, sent: Container[str]) -> Optional[str]:
        """Why this include of request file ``including`` (its path in the request, ``/``
        separated) is refused, given the paths of the files ``sent`` with the request; None
        when it may stay: ``refusal()``, except a ``..`` name that ``request_target`` resolves
        to a sent file."""
        why = self.refusal()
        if why != LEAVES or self.angle or self.next:
            return why
        target = request_target(self.name or "", including)
        if target is None:
            return why
        if target not in sent:
            return (f"a '..' path to '{target}', a file the request did not send; a compile "
                    f"request may include the toolkit's headers and the files sent with it only")
        return None


@dataclass(frozen=True)
class IncludeRefusal:
    """A refused include of request file ``file`` at ``line``: ``spelling`` and ``why``; as
    text in nvcc's form (``kernel.cu(3): error: ...``), so logs are read the same way."""

    file: str
    line: int
    spelling: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}({self.line}): error: {self.spelling}: refused: {self.why}"


LEAVES = ("a path that leaves the request's own files ('..'); a compile request may include the "
          "toolkit's headers and the files sent with it only")


def name_problem(name: str) -> Optional[str]:
    """Why header name ``name`` may not be included, or None."""
    if not name.strip():
        return "an empty file name"
    if name.startswith("/") or name.startswith("~"):
        return ("an absolute path; a compile request may include the toolkit's headers and the "
                "files sent with it only")
    if "\\" in name:
        return "a backslash in the file name; write paths with '/'"
    if ".." in name.split("/"):
        return LEAVES
    return None


def request_target(name: str, including: str) -> Optional[str]:
    """The request path (``/`` separated, from the request's root) that quoted header name
    ``name`` names from request file ``including``, when every ``..`` of ``name`` comes before
    its other components (``.`` and empty ones aside) and it climbs no higher than the root;
    else None. ``request_target("../../common/x.h", "src/a/b/k.cu") == "src/common/x.h"``."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    rest = parts[ups:]
    if not rest or ".." in rest:
        return None
    folder = [p for p in including.split("/")[:-1] if p not in ("", ".")]
    if ".." in folder or ups > len(folder):
        return None
    return "/".join(folder[:len(folder) - ups] + rest)


# -- scanning ----------------------------------------------------------------------------------


class _Text:
    """A text after line splicing, mapping offsets back to physical lines."""

    def __init__(self, raw: str):
        parts, splices, pos = [], [], 0
        for m in _SPLICE.finditer(raw):
            parts.append(raw[pos:m.start()])
            splices.append(sum(len(p) for p in parts))
            pos = m.end()
        parts.append(raw[pos:])
        self.text = "".join(parts)
        self._splices = splices
        self._newlines = [m.start() for m in re.finditer("\n", self.text)]

    def line(self, offset: int) -> int:
        return (1 + bisect.bisect_left(self._newlines, offset)
                + bisect.bisect_right(self._splices, offset))


def _skip_blanks(t: str, i: int) -> int:
    """Past blanks and comments (not newlines outside a comment)."""
    n = len(t)
    while i < n:
        if t[i] in _BLANKS:
            i += 1
        elif t.startswith("/*", i):
            j = t.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif t.startswith("//", i):
            j = t.find("\n", i)
            return n if j < 0 else j
        else:
            return i
    return i


def _operand(t: str, i: int) -> tuple[Optional[str], bool, int]:
    """The header name at ``t[i:]`` (``"..."`` or ``<...>`` on this line): (name, angle, end);
    name None where the operand is anything else."""
    if i < len(t) and t[i] in "\"<":
        close = '"' if t[i] == '"' else ">"
        j = i + 1
        while j < len(t) and t[j] not in (close, "\n"):
            j += 1
        if j < len(t) and t[j] == close:
            return t[i + 1:j], close == ">", j + 1
    return None, False, i


def _skip_literal(t: str, i: int) -> int:
    """Past the string or character literal opening at ``t[i]`` (to its end or the line's)."""
    quote, j, n = t[i], i + 1, len(t)
    while j < n and t[j] not in (quote, "\n"):
        j += 2 if t[j] == "\\" else 1
    return min(j + 1, n) if j < n and t[j] == quote else j


def _scan(t: str, raw_strings: bool, digit_separators: bool
          ) -> Iterator[tuple[int, str, Optional[str], bool, bool]]:
    """(offset, kind, name, angle, next) of each directive in the spliced text ``t`` that opens
    or names a file, lexed with or without C++11 raw strings and C++14 digit separators
    (``-std=c++03`` has neither). ``kind``: ``"include"`` (the DIRECTIVES and HAS_INCLUDE),
    ``"line"`` (``#line N "name"`` or a line marker ``# N "name"``: gcc opens that file to show
    its lines in diagnostics; name None when the operand is not a number and a string literal,
    as with a macro), ``"dependency"`` (``#pragma GCC dependency``, also through ``_Pragma``
    or the bare identifier: gcc opens the file), ``"pragma-operand"`` (a ``_Pragma`` not of one
    string literal) and ``"ucn"`` (a universal character name in a directive's name:
    ``#\u0069nclude`` is an include to gcc)."""
    n, i = len(t), 0
    while i < n:
        c = t[i]
        if t.startswith("//", i):
            j = t.find("\n", i)
            i = n if j < 0 else j
        elif t.startswith("/*", i):
            j = t.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "#" or t.startswith("%:", i):
            start = i
            i = _skip_blanks(t, i + (1 if c == "#" else 2))
            m = _IDENT.match(t, i)
            after = m.end() if m else i
            if t.startswith(("\\u", "\\U"), after):
                yield start, "ucn", None, False, False
                i = after + 2
            elif m and m.group() in DIRECTIVES:
                name, angle, i = _operand(t, _skip_blanks(t, m.end()))
                yield start, "include", name, angle, m.group() == "include_next"
            elif (m and m.group() == "line") or (not m and i < n and t[i].isdigit()):
                j = _skip_blanks(t, after)
                num = _DIGITS.match(t, j)
                k = _skip_blanks(t, num.end()) if num else j
                if num and (k >= n or t[k] == "\n"):
                    i = k  # a line number alone names no file
                elif num and t[k] == '"':
                    name, _, i = _operand(t, k)
                    yield start, "line", name, False, False
                else:
                    yield start, "line", None, False, False
                    i = k
            elif m and m.group() == "pragma":
                end = t.find("\n", m.end())
                if _DEPENDENCY.match(t[m.end():n if end < 0 else end]):
                    yield start, "dependency", None, False, False
                i = m.end()
            elif m:
                i = m.end()
        elif c == '"' or c == "'":
            i = _skip_literal(t, i)
        elif c.isdigit() or (c == "." and i + 1 < n and t[i + 1].isdigit()):
            m = (_PP_NUMBER if digit_separators else _PP_NUMBER_PLAIN).match(t, i)
            i = m.end() if m else i + 1
        elif c.isalpha() or c in "_$":
            raw = _RAW.match(t, i) if raw_strings else None
            if raw:
                end = t.find(")" + raw.group(1) + '"', raw.end())
                i = n if end < 0 else end + len(raw.group(1)) + 2
                continue
            m = _IDENT.match(t, i)
            i = m.end()
            if m.group() in HAS_INCLUDE:
                j = _skip_blanks(t, i)
                if j < n and t[j] == "(":
                    name, angle, i = _operand(t, _skip_blanks(t, j + 1))
                else:
                    name, angle = None, False
                yield m.start(), "include", name, angle, m.group().endswith("_next")
            elif m.group() == "_Pragma":
                # the operand must be a plain string literal the scan can read
                # (``_Pragma("GCC dependency \"f\"")``); made by a macro (stringizing, a
                # parameter, an object-like macro) its pragma is known only after expansion
                j = _skip_blanks(t, i)
                k = _skip_blanks(t, j + 1) if j < n and t[j] == "(" else -1
                end = _skip_literal(t, k) if 0 <= k < n and t[k] == '"' else -1
                if end < 0 or t[end - 1] != '"' or t[_skip_blanks(t, end):][:1] != ")":
                    yield m.start(), "pragma-operand", None, False, False
                elif _DEPENDENCY.match(t[k + 1:end - 1].replace('\\"', '"')):
                    yield m.start(), "dependency", None, False, False
            elif m.group() == "dependency":
                # the pragma's word outside a '#pragma' line: a macro may build the pragma
                # from it (CCCL's _CCCL_PRAGMA(GCC dependency "f") stringizes its argument)
                yield m.start(), "dependency", None, False, False
        else:
            i += 1


def gcc_lines(source: str) -> str:
    """``source`` with its lines as gcc's lexer reads them: CR LF and a lone CR end a line (so
    ``// c\r#include ...`` is a directive, not a comment) and NUL is a blank (gcc ignores it
    with a warning: ``#\0include`` is ``#include``)."""
    return source.replace("\r\n", "\n").replace("\r", "\n").replace("\0", " ")


def _directives(source: str) -> Iterator[tuple[int, str, str, Optional[str], bool, bool]]:
    """(line, spelling, kind, name, angle, next) of each directive of ``_scan`` in ``source``,
    in every reading (trigraphs replaced or not; raw strings and digit separators or not)."""
    source = gcc_lines(source)
    lines = source.split("\n")  # the compiler's lines: str.splitlines also splits at \f, \v
    variants = [source]
    replaced = re.sub(r"\?\?([=/'()!<>-])", lambda m: _TRIGRAPHS[m.group(1)], source)
    if replaced != source:
        variants.append(replaced)
    for text in variants:
        spliced = _Text(text)
        if not _WORDS.search(spliced.text):
            continue
        for raw_strings, separators in ((True, True), (False, True), (True, False),
                                        (False, False)):
            for offset, kind, name, angle, nxt in _scan(spliced.text, raw_strings, separators):
                line = spliced.line(offset)
                spelling = lines[line - 1].strip() if line <= len(lines) else ""
                yield line, spelling[:200], kind, name, angle, nxt


def find_includes(source: str) -> list[Include]:
    """Every include of ``source`` (see the module doc for what counts), by line."""
    found: dict[tuple[int, Optional[str], bool, bool], Include] = {}
    for line, spelling, kind, name, angle, nxt in _directives(source):
        if kind == "include":
            found.setdefault((line, name, angle, nxt), Include(line, spelling, name, angle, nxt))
    return sorted(found.values(), key=lambda inc: (inc.line, inc.name or ""))


_OTHER = {
    "ucn": "a universal character name (\\u, \\U) in a directive's name: the compiler may "
           "read it as an include; spell the directive in plain letters",
    "dependency": "'#pragma GCC dependency' (or through _Pragma) opens a file by name; a "
                  "compile request may not",
    "pragma-operand": "a _Pragma whose operand is not a plain string literal (made by a macro: "
                      "its pragma is known only after expansion); write _Pragma(\"...\") or a "
                      "#pragma line",
}


def file_directive_problems(source: str) -> list[tuple[int, str, str]]:
    """(line, spelling, why) of each directive of ``source`` other than an include that would
    make the compiler open a file the request did not send (gcc shows lines of the file a
    ``#line`` names in its diagnostics, and the runner returns them): a ``#line`` or line
    marker naming an absolute path or a ``..`` path (``name_problem``) or whose operand is not
    a number and a string literal (a macro), ``#pragma GCC dependency`` or the identifier
    ``dependency``, a ``_Pragma`` whose operand is not one string literal, a universal
    character name in a directive's name. A relative name without ``..`` resolves in the compile's own
    folder. By line."""
    out: dict[tuple[int, str], str] = {}
    for line, spelling, kind, name, _, _ in _directives(source):
        if kind == "line":
            why = ("a #line whose operand is not a number and a file name in quotes (a macro?)"
                   if name is None else name_problem(name))
            if why is not None:
                out.setdefault((line, spelling), f"#line names a file outside the request: {why}"
                               if name is not None else why)
        elif kind in _OTHER:
            out.setdefault((line, spelling), _OTHER[kind])
    return sorted(((ln, sp, why) for (ln, sp), why in out.items()))


def refused_includes(source: str, files: Mapping[str, str] | None = None,
                     main: str = "kernel.cu", at: Optional[str] = None) -> list[IncludeRefusal]:
    """The refused includes of a request's ``source`` (named ``main`` in the messages, at
    request path ``at``, default ``main``: ``Variant.source_path``) and of each of its
    ``files`` (request path -> text), in file and line order. A ``..`` include is refused
    unless it names one of ``files`` from the including file's folder (``Include.refusal_in``)."""
    sent = set(files or {})
    out = []
    for file, place, text in ((main, at or main, source),
                              *((p, p, t) for p, t in sorted((files or {}).items()))):
        refused = []
        for inc in find_includes(text):
            why = inc.refusal_in(place, sent)
            if why:
                refused.append(IncludeRefusal(file, inc.line, inc.spelling, why))
        refused += [IncludeRefusal(file, line, spelling, why)
                    for line, spelling, why in file_directive_problems(text)]
        out += sorted(refused, key=lambda r: r.line)
    return out


def check_includes(source: str, files: Mapping[str, str] | None = None,
                   main: str = "kernel.cu") -> Optional[str]:
    """None when every include of the request may stay, else a message naming each refused
    include with its file and line (the first five). ``main``: the source's request path."""
    bad = refused_includes(source, files, main)
    if not bad:
        return None
    more = f"; and {len(bad) - 5} more" if len(bad) > 5 else ""
    return ("include refused (the runner compiles the request's own files and the toolkit's "
            "headers only):\n" + "\n".join(str(r) for r in bad[:5]) + more)


def check_file_names(files: Mapping[str, str]) -> list[str]:
    """What is wrong with the names and sizes of a request's ``files`` (relative path ->
    text): at most ``MAX_FILES`` files of at most ``MAX_FILE_BYTES`` UTF-8 bytes, each path
    relative, of ``/``-separated names of letters, digits and ``_.+-`` (not starting with
    ``.``, so neither ``..`` nor a hidden file). [] when every one may be written into the
    compile's folder."""
    out = []
    if len(files) > MAX_FILES:
        out.append(f"files: at most {MAX_FILES} files may be sent, found {len(files)}")
    for path, text in files.items():
        parts = path.split("/")
        if not path or not all(_FILE_NAME.fullmatch(p) for p in parts):
            out.append(f"files['{path[:100]}']: expected a relative path of names made of "
                       f"letters, digits and '_.+-' joined by '/' (no '..', no leading '/' or "
                       f"'.')")
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MAX_FILE_BYTES:
            out.append(f"files['{path[:100]}']: at most {MAX_FILE_BYTES} bytes, found {size}")
    return out


def source_path_problems(source_path: str, files) -> list[str]:
    """What is wrong with a variant's ``source_path`` (where its source is written in the
    compile's folder) beside its ``files``: it must be a relative path named as
    ``check_file_names`` allows, ending in ``.cu``, neither a sent file nor the cubin's name,
    nor inside or holding a sent file's name as a folder. [] when it may be used."""
    out = [p.replace("files[", "source_path[", 1)
           for p in check_file_names({source_path: ""})]
    if not source_path.endswith(".cu"):
        out.append(f"source_path '{source_path[:100]}': expected a name ending in '.cu'")
    if source_path == OUTPUT or source_path in files or any(
            f.startswith(source_path + "/") or source_path.startswith(f + "/") for f in files):
        out.append(f"source_path '{source_path[:100]}': the name is a sent file's or the "
                   f"runner's own ({OUTPUT})")
    return out
