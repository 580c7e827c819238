"""Tunable parameters marked in candidate code, and their expansion into variants.

The marker follows an integer ``#define`` on the same line::

    #define TILE 32 // @tune 16, 32, 64
    #define ROWS 8  /* @tune 4, 8 */

The code as written is valid CUDA (``TILE`` is 32); cudalens builds one variant per combination
of the listed values (the cartesian product, parameters in source order, values in the order
written), measures them in one runner batch and reports the fastest setting. Integer
``#define``s, marked or not, may be used in the launch configuration (``block = TILE, ROWS``);
their values are substituted into its expressions before they are evaluated.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from cudalens.spec.model import LaunchDecl

_DEFINE = re.compile(r"^(?P<lead>[ \t]*#[ \t]*define[ \t]+)(?P<name>[A-Za-z_]\w*)"
                     r"(?P<gap>[ \t]+)(?P<value>\(?-?\d+\)?)(?P<suffix>[uUlL]*)"
                     r"(?P<rest>[ \t]*(?://.*|/\*.*\*/[ \t]*)?)$", re.M)
_MARKER = re.compile(r"@tune\b[ \t]*:?[ \t]*(?P<values>[^*\n]*)")
_INT = re.compile(r"-?\d+")


class TuneError(ValueError):
    """A ``@tune`` marker is malformed or expands into too many variants; names the line."""


@dataclass(frozen=True)
class TuneParam:
    """A marked ``#define``: its name, the values to sweep, and its 1-based line in the code."""

    name: str
    values: tuple[int, ...]
    line: int


@dataclass(frozen=True)
class Setting:
    """One combination of values, by parameter name in source order."""

    values: tuple[tuple[str, int], ...]

    @property
    def label(self) -> str:
        """``TILE=32 ROWS=8`` (empty for the code as written)."""
        return " ".join(f"{k}={v}" for k, v in self.values)


def integer_defines(code: str) -> dict[str, int]:
    """The value of every ``#define NAME INTEGER`` of ``code`` (the last one wins)."""
    return {m.group("name"): int(m.group("value").strip("()")) for m in _DEFINE.finditer(code)}


def find_params(code: str) -> tuple[TuneParam, ...]:
    """The marked parameters of ``code``, in source order.

    Raises:
        TuneError: a ``@tune`` marker not on an integer ``#define`` line, a value that is not
            an integer, no values, a value listed twice, or a parameter marked twice.
    """
    params: list[TuneParam] = []
    for number, line in enumerate(code.splitlines(), 1):
        marker = _MARKER.search(line)
        if marker is None:
            continue
        define = _DEFINE.match(line)
        if define is None or "@tune" not in (define.group("rest") or ""):
            raise TuneError(f"line {number}: a @tune marker must follow an integer #define on "
                            f"its line, e.g. '#define TILE 32 // @tune 16, 32, 64'; found "
                            f"{line.strip()!r}")
        raw = [v.strip() for v in marker.group("values").strip().rstrip("/").split(",")]
        raw = [v for v in raw if v]
        bad = [v for v in raw if not _INT.fullmatch(v)]
        if bad or not raw:
            raise TuneError(f"line {number}: @tune values must be integers separated by commas, "
                            f"found {marker.group('values').strip()!r}")
        values = tuple(int(v) for v in raw)
        if len(set(values)) != len(values):
            raise TuneError(f"line {number}: @tune lists a value twice: {', '.join(raw)}")
        name = define.group("name")
        if any(p.name == name for p in params):
            raise TuneError(f"line {number}: {name} is marked @tune twice")
        params.append(TuneParam(name, values, number))
    return tuple(params)


def settings(params: tuple[TuneParam, ...], limit: int) -> list[Setting]:
    """Every combination of the parameters' values (one empty setting when none is marked).

    Raises:
        TuneError: more than ``limit`` combinations.
    """
    count = 1
    for p in params:
        count *= len(p.values)
    if count > limit:
        sizes = " x ".join(f"{len(p.values)} ({p.name})" for p in params)
        raise TuneError(f"the @tune parameters make {sizes} = {count} variants; at most {limit} "
                        f"per candidate are measured: list fewer values")
    return [Setting(tuple(zip((p.name for p in params), combo)))
            for combo in itertools.product(*(p.values for p in params))]


def apply_setting(code: str, setting: Setting) -> str:
    """``code`` with each marked ``#define`` set to the setting's value, its marker replaced by
    a note of the values that were tried."""
    chosen = dict(setting.values)

    def rewrite(m: re.Match) -> str:
        name = m.group("name")
        rest = m.group("rest") or ""
        if name not in chosen or "@tune" not in rest:
            return m.group(0)
        tried = _MARKER.search(rest).group("values").strip().rstrip("/").strip().rstrip("*").strip()
        return (f"{m.group('lead')}{name}{m.group('gap')}{chosen[name]}{m.group('suffix')}"
                f"  // tuned by cudalens over {tried}")

    return _DEFINE.sub(rewrite, code)


def substitute_launch(launch: LaunchDecl, values: dict[str, int],
                      reserved: frozenset[str] = frozenset()) -> LaunchDecl:
    """``launch`` with each name in ``values`` replaced by its value (names in ``reserved``,
    the spec's sizes, are left alone)."""
    names = [n for n in values if n not in reserved]
    if not names:
        return launch
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")(?!\w)")

    def sub(expr: str) -> str:
        def value(m: re.Match) -> str:
            v = values[m.group(1)]
            return str(v) if v >= 0 else f"({v})"
        return pattern.sub(value, expr)

    return LaunchDecl(block=tuple(sub(e) for e in launch.block),
                      grid=tuple(sub(e) for e in launch.grid), shared=sub(launch.shared),
                      line=launch.line)
