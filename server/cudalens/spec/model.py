"""Data classes of a harness spec: how to call one kernel.

A spec holds expressions as source text (evaluated later by ``cudalens.spec.expr`` against
the sizes, the block shape and device facts) so that a rewritten launch configuration can
recompute the grid. ``line`` fields are 1-based line numbers in the spec file, for errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

Role = Literal["in", "out", "inout"]


@dataclass(frozen=True)
class SizeDecl:
    """``size NAME = EXPR``: a problem size used by the timed (nominal) run."""

    name: str
    expr: str
    line: int = 0


@dataclass(frozen=True)
class CheckDecl:
    """``check NAME = EXPR``: the value of a size in the ragged verification run."""

    name: str
    expr: str
    line: int = 0


@dataclass(frozen=True)
class MultipleDecl:
    """``multiple NAME = EXPR``: the ragged value of size NAME stays a multiple of EXPR."""

    name: str
    expr: str
    line: int = 0


# How an input buffer is filled (see ``gpu_runner.problem.FILLS``); ``uniform`` is the default
# (``range(LOW, HIGH)``, or the type's default range).
Fill = Literal["uniform", "normal", "csr", "sorted", "permutation", "unique"]


@dataclass(frozen=True)
class BufferDecl:
    """``ROLE NAME: TYPE[LENGTH] [FILL] [range(LOW, HIGH)]``: a pointer parameter.

    ``fill`` is ``uniform`` (default), ``normal`` (``fill_args`` = mean, std), ``csr``
    (``fill_args`` = the non-zero count), ``sorted``, ``permutation`` or ``unique``; the
    arguments are expressions of the sizes."""

    role: Role
    name: str
    type: str  # spec type name, e.g. float, int32, half
    length: str  # expression, elements
    low: Optional[str] = None  # expression; inputs are drawn from [low, high)
    high: Optional[str] = None
    line: int = 0
    fill: Fill = "uniform"
    fill_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScalarDecl:
    """``scalar NAME: TYPE = EXPR``: a by-value parameter."""

    name: str
    type: str
    expr: str
    line: int = 0


@dataclass(frozen=True)
class LaunchDecl:
    """``block = ...``, ``grid = ...``, ``shared = ...``: expressions of the sizes.

    ``block`` and ``grid`` hold one to three expressions (x, y, z). ``grid`` may use
    ``block.x``/``block.y``/``block.z`` and ``sm_count``.
    """

    block: tuple[str, ...]
    grid: tuple[str, ...]
    shared: str = "0"
    line: int = 0


@dataclass(frozen=True)
class KernelSpec:
    """The spec of one kernel. ``params`` is in declaration order of the spec file."""

    kernel: str
    sizes: tuple[SizeDecl, ...]
    params: tuple[BufferDecl | ScalarDecl, ...]
    launch: LaunchDecl
    checks: tuple[CheckDecl, ...] = ()
    flops: Optional[str] = None  # ``flops = EXPR``: floating-point operations per launch
    tolerance: Optional[float] = None  # ``tolerance = X``: relative tolerance override
    atomics: bool = False  # ``atomics``: outputs may vary between runs within tolerance
    source: str = ""  # where the spec came from: a file path, or "inferred"
    line: int = 0  # line of the ``kernel`` header
    notes: tuple[str, ...] = field(default=())  # inference notes, printed as comments
    # ``reads = EXPR`` / ``writes = EXPR``: bytes the kernel really reads / writes per launch
    # (a gather reads far less than its whole table); None: each input once / each output once
    reads: Optional[str] = None
    writes: Optional[str] = None
    multiples: tuple[MultipleDecl, ...] = ()
    # Integer constants expressions may name: the file's ``#define``s and the build's -D
    # values, (name, value) in the order found; sizes of the same name take precedence.
    constants: tuple[tuple[str, int], ...] = ()

    def param(self, name: str) -> BufferDecl | ScalarDecl:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)
