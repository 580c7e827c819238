"""Integer polynomials over named symbols, for reasoning about index expressions.

Inference turns an index such as ``row * cols + col`` into a :class:`Poly`, replaces each bounded
variable by its largest value (``row < rows`` gives ``rows - 1``) and adds one to get a buffer
length: ``(rows - 1) * cols + (cols - 1) + 1 = rows * cols``. Symbols are assumed non-negative.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Optional

Monomial = tuple[str, ...]  # sorted symbol names, repeated for powers; () is the constant


@dataclass(frozen=True)
class Poly:
    """A polynomial ``sum(coef * prod(symbols))`` with integer coefficients (no zero terms)."""

    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def const(value: int) -> "Poly":
        return Poly(terms=(((), value),)) if value else Poly()

    @staticmethod
    def sym(name: str) -> "Poly":
        return Poly(terms=(((name,), 1),))

    @staticmethod
    def _of(terms: Mapping[Monomial, int]) -> "Poly":
        return Poly(tuple(sorted((m, c) for m, c in terms.items() if c)))

    def as_dict(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: "Poly") -> "Poly":
        out = self.as_dict()
        for m, c in other.terms:
            out[m] = out.get(m, 0) + c
        return Poly._of(out)

    def __neg__(self) -> "Poly":
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: "Poly") -> "Poly":
        return self + (-other)

    def __mul__(self, other: "Poly") -> "Poly":
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return Poly._of(out)

    @property
    def symbols(self) -> set[str]:
        return {s for m, _ in self.terms for s in m}

    @property
    def constant(self) -> int:
        return self.as_dict().get((), 0)

    def is_const(self) -> bool:
        return not self.symbols

    def substitute(self, values: Callable[[str], Optional["Poly"]]) -> Optional["Poly"]:
        """Each symbol replaced by ``values(symbol)``; None if any replacement is None."""
        total = Poly()
        for m, c in self.terms:
            term = Poly.const(c)
            for s in m:
                v = values(s)
                if v is None:
                    return None
                term = term * v
            total = total + term
        return total

    def dominates(self, other: "Poly") -> bool:
        """True when ``self >= other`` for every non-negative value of the symbols (every
        coefficient of ``self - other`` is >= 0)."""
        return all(c >= 0 for _, c in (self - other).terms)

    def render(self, order: Sequence[str] = ()) -> str:
        """Spec expression text, e.g. ``rows * cols - cols + 1``; symbols ordered as in
        ``order`` (others alphabetically after them), higher degree first."""
        rank = {s: i for i, s in enumerate(order)}

        def key_sym(s: str) -> tuple[int, str]:
            return (rank.get(s, len(rank)), s)

        def key_term(item: tuple[Monomial, int]) -> tuple:
            m, _ = item
            return (-len(m), [key_sym(s) for s in sorted(m, key=key_sym)])

        if not self.terms:
            return "0"
        out = ""
        for i, (m, c) in enumerate(sorted(self.terms, key=key_term)):
            factors = [s for s in sorted(m, key=key_sym)]
            mag = abs(c)
            if factors and mag != 1:
                factors.insert(0, str(mag))
            text = " * ".join(factors) if factors else str(mag)
            if i == 0:
                out = f"-{text}" if c < 0 else text
            else:
                out += f" - {text}" if c < 0 else f" + {text}"
        return out
