"""Turning a harness spec into the runner's contract (``gpu_runner.problem``): numbers only.

Two size sets exist for every spec: ``nominal`` (the declared sizes; the timed case) and
``ragged`` (sizes chosen not to be multiples of a block size, for verification). The ragged
rule is the spec format's: ``check NAME = EXPR`` when given; else a size whose expression has no
names gets ``max(1, (v * 3 // 5) | 1)`` when ``v > 2`` (odd, so never a multiple of a block
size) and ``v`` itself otherwise; a size defined from other sizes is re-evaluated with their
ragged values.

Launch limits are CUDA's for every compute capability since 5.0 (CUDA C++ Programming Guide,
"Compute Capabilities", table "Technical Specifications per Compute Capability"): at most 1024
threads per block, block dimensions up to (1024, 1024, 64), grid dimensions up to
(2^31 - 1, 65535, 65535).

Also refused, before any device is involved: a ``check`` value above its size's value,
dynamic shared memory above the 227 KiB a compute capability 9.0 block can opt into, a float
input range beyond the element type's finite values, a buffer of more than 2^63 - 1 bytes, and
buffers of one case totalling more than 1 TiB (the runner still refuses what does not fit its
own GPU).

Every failure is a :class:`SpecError` naming the spec file and the line of the declaration
whose value is unusable, with the sizes it was evaluated with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Optional, Union

import numpy as np

from cudalens.source.model import Kernel
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import Dim3, ExprError, Number, evaluate, names_in
from cudalens.spec.model import BufferDecl, KernelSpec, LaunchDecl, ScalarDecl
from cudalens.spec.validate import validate
from gpu_runner.problem import Buffer, Case, Launch, Problem, Scalar, Tolerance, Variant

LABELS = ("nominal", "ragged")
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
FLOAT16_MAX = 65504.0  # largest finite IEEE 754 binary16 value
FLOAT32_MAX = 3.4028234663852886e38  # largest finite IEEE 754 binary32 value
FLOAT64_MAX = 1.7976931348623157e308  # largest finite IEEE 754 binary64 value
_FLOAT_MAX = {"float16": FLOAT16_MAX, "float32": FLOAT32_MAX, "float64": FLOAT64_MAX}
# Dynamic shared memory a block can opt into on compute capability 9.0 (H100, H200): 227 KB
# (CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
# Compute Capability", "Maximum amount of shared memory per thread block" for 9.0). The runner
# checks the device's own limit again before launching.
MAX_SHARED_BYTES = 227 * 1024  # 232448
# Total bytes of one case's buffers above which a spec is taken for a mistake (1 TiB: no GPU
# holds it); the runner refuses, later, whatever does not fit its own GPU's memory.
MAX_TOTAL_BYTES = 1 << 40
INT64_MAX = 2**63 - 1
_GIB = float(1 << 30)


def ragged_value(v: int) -> int:
    """The ragged verification value of a literal size ``v`` (``1 << 24`` -> 10066329)."""
    return max(1, (v * 3 // 5) | 1) if v > 2 else v


class _Context:
    """Where values are evaluated: the spec's file, the size set's label and its values."""

    def __init__(self, path: str, label: str, sizes: Mapping[str, int]) -> None:
        self.path = path
        self.label = label
        self.sizes = dict(sizes)

    def run(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return f" in the {self.label} run" + (f" ({shown})" if shown else "")

    def error(self, line: int, message: str) -> SpecError:
        return SpecError(self.path, line, message)

    def value(self, expr: str, env: Mapping[str, object], line: int, what: str) -> Number:
        try:
            return evaluate(expr, env)
        except ExprError as exc:
            raise self.error(line, f"{what}: {exc}{self.run()}") from None

    def integer(self, expr: str, env: Mapping[str, object], line: int, what: str,
                minimum: int = 1) -> int:
        v = self.value(expr, env, line, what)
        if not isinstance(v, int) or v < minimum:
            hint = " (write integers without an exponent: 1_000_000, not 1e6)" \
                if isinstance(v, float) else ""
            raise self.error(line, f"expected {what} to be an integer >= {minimum}, found "
                                   f"'{expr}' = {v!r}{self.run()}{hint}")
        return v


def _path(spec: KernelSpec) -> str:
    return spec.source or "<spec>"


def sizes_for(spec: KernelSpec, label: str) -> dict[str, int]:
    """The values of ``spec``'s sizes for ``label`` (``"nominal"`` or ``"ragged"``), in order.

    Raises:
        SpecError: a size or check is not an integer >= 1, or a check exceeds its size's
            nominal value (at its line).
        ValueError: ``label`` is neither ``"nominal"`` nor ``"ragged"``.
    """
    if label not in LABELS:
        raise ValueError(f"expected a size set label in {LABELS}, found {label!r}")
    nominal: dict[str, int] = {}
    for s in spec.sizes:
        ctx = _Context(_path(spec), "nominal", nominal)
        nominal[s.name] = ctx.integer(s.expr, nominal, s.line, f"size {s.name}")
    if label == "nominal":
        return nominal
    checks = {c.name: c for c in spec.checks}
    ragged: dict[str, int] = {}
    for s in spec.sizes:
        ctx = _Context(_path(spec), "ragged", ragged)
        check = checks.get(s.name)
        if check is not None:
            ragged[s.name] = ctx.integer(check.expr, ragged, check.line, f"check {s.name}")
            if ragged[s.name] > nominal[s.name]:
                raise ctx.error(check.line, f"expected check {s.name} <= size {s.name} = "
                                            f"{nominal[s.name]} (the ragged verification size "
                                            f"may not exceed the timed size), found "
                                            f"'{check.expr}' = {ragged[s.name]}{ctx.run()}")
        elif not names_in(s.expr):
            ragged[s.name] = ragged_value(nominal[s.name])
        else:
            ragged[s.name] = ctx.integer(s.expr, ragged, s.line, f"size {s.name}")
    return ragged


def _block(ctx: _Context, exprs: Sequence[str], line: int) -> Dim3:
    values = [ctx.integer(e, ctx.sizes, line, f"block.{axis}") for axis, e in zip("xyz", exprs)]
    block = Dim3(*values)
    for axis, v, limit in zip("xyz", block, MAX_BLOCK_DIM):
        if v > limit:
            raise ctx.error(line, f"expected block.{axis} <= {limit} (the CUDA limit), found "
                                  f"{v}{ctx.run()}")
    threads = block.x * block.y * block.z
    if threads > MAX_THREADS_PER_BLOCK:
        raise ctx.error(line, f"expected at most {MAX_THREADS_PER_BLOCK} threads per block, "
                              f"found block {tuple(block)} = {threads} threads{ctx.run()}")
    return block


def _launch(ctx: _Context, launch: LaunchDecl, sm_count: Optional[int],
            lines: tuple[int, int, int]) -> Launch:
    block = _block(ctx, launch.block, lines[0])
    env: dict[str, object] = {**ctx.sizes, "block": block}
    shared = _shared(ctx, launch.shared, env, lines[2])
    if sm_count is not None:
        env["sm_count"] = sm_count
    grid = [ctx.integer(e, env, lines[1], f"grid.{axis}") for axis, e in zip("xyz", launch.grid)]
    grid += [1] * (3 - len(grid))
    for axis, v, limit in zip("xyz", grid, MAX_GRID_DIM):
        if v > limit:
            raise ctx.error(lines[1], f"expected grid.{axis} <= {limit} (the CUDA limit), found "
                                      f"{v}{ctx.run()}")
    return Launch(grid=(grid[0], grid[1], grid[2]), block=(block.x, block.y, block.z),
                  shared_bytes=shared)


def _shared(ctx: _Context, expr: str, env: Mapping[str, object], line: int) -> int:
    shared = ctx.integer(expr, env, line, "shared", minimum=0)
    if shared > MAX_SHARED_BYTES:
        raise ctx.error(line, f"expected shared <= {MAX_SHARED_BYTES} bytes (227 KiB, the most "
                              f"dynamic shared memory a block can opt into on compute capability "
                              f"9.0, H100/H200: CUDA C++ Programming Guide, table 'Technical "
                              f"Specifications per Compute Capability'), found '{expr}' = "
                              f"{shared}{ctx.run()}")
    return shared


def resolve_launch(launch: LaunchDecl, sizes: Mapping[str, int], sm_count: Optional[int], *,
                   path: str = "<spec>", label: str = "nominal") -> Launch:
    """Evaluates a launch configuration: block first, then grid (which may use ``block.x/.y/.z``
    and ``sm_count``) and shared memory (bytes; may use ``block``). Missing axes are 1.

    Raises:
        SpecError: at ``launch.line`` when a value is not an integer >= 1 (shared: >= 0), the
            block exceeds CUDA's limits, or the grid uses ``sm_count`` and it is None.
    """
    ctx = _Context(path, label, sizes)
    return _launch(ctx, launch, sm_count, (launch.line,) * 3)


def _range(ctx: _Context, decl: BufferDecl, dtype: str) -> tuple[Number, Number]:
    low, high = dtypes.default_range(decl.type)
    if decl.low is not None:
        low = ctx.value(decl.low, ctx.sizes, decl.line, f"range low of {decl.name}")
    if decl.high is not None:
        high = ctx.value(decl.high, ctx.sizes, decl.line, f"range high of {decl.name}")
    shown = f"range({low!r}, {high!r})"
    if not low < high:
        raise ctx.error(decl.line, f"expected low < high in the range of {decl.name}, found "
                                   f"{shown}{ctx.run()}")
    if dtype.startswith("float"):
        limit = _FLOAT_MAX.get(dtype, FLOAT64_MAX)
        if not max(abs(low), abs(high)) <= limit:  # also inf
            raise ctx.error(decl.line, f"expected the range of {decl.name} within {decl.type}'s "
                                       f"finite values +-{limit:g} ({dtype}), found "
                                       f"{shown}{ctx.run()}")
        return low, high
    if not (isinstance(low, int) and isinstance(high, int)):
        raise ctx.error(decl.line, f"expected integer bounds for {decl.name} ({dtype}), found "
                                   f"{shown}{ctx.run()}")
    lo, hi = dtypes.int_limits(dtype)
    if low < lo or high - 1 > hi:
        raise ctx.error(decl.line, f"expected the range of {decl.name} within {dtype}'s "
                                   f"[{lo}, {hi + 1}), found {shown}{ctx.run()}")
    return low, high


def _buffer(ctx: _Context, decl: BufferDecl, block: Dim3) -> Buffer:
    dtype = dtypes.numpy_dtype(decl.type)
    length = ctx.integer(decl.length, {**ctx.sizes, "block": block}, decl.line,
                         f"length of {decl.name}")
    low, high = _range(ctx, decl, dtype)
    nbytes = length * dtypes.itemsize(dtype)
    if nbytes > INT64_MAX:
        raise ctx.error(decl.line, f"expected the bytes of {decl.name} to fit in int64 (at most "
                                   f"{INT64_MAX}), found {length} elements x "
                                   f"{dtypes.itemsize(dtype)} bytes = {nbytes / _GIB:.4g} GiB"
                                   f"{ctx.run()}")
    return Buffer(name=decl.name, dtype=dtype, length=length, role=decl.role, low=float(low),
                  high=float(high))


def _on_device(value: Number, dtype: str) -> float:
    """``value`` as the device holds it in ``dtype`` (a numpy float type name): rounded to
    nearest, so past the largest finite value by half a unit in the last place or more it is
    infinite (IEEE 754, "overflow")."""
    try:
        wide = float(value)
    except OverflowError:  # an integer past the largest double
        return math.inf if value > 0 else -math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.array(wide, dtype=np.float64).astype(dtype))


def _scalar(ctx: _Context, decl: ScalarDecl) -> Scalar:
    dtype = dtypes.numpy_dtype(decl.type)
    value = ctx.value(decl.expr, ctx.sizes, decl.line, f"scalar {decl.name}")
    if dtype.startswith("float"):
        held = _on_device(value, dtype)
        if not math.isfinite(held):
            limit = _FLOAT_MAX[dtype]
            raise ctx.error(decl.line, f"expected scalar {decl.name} ({decl.type}) to be a finite "
                                       f"{dtype} value, within +-{limit:g}, found "
                                       f"'{decl.expr}' = {value!r}, which is {held!r} on the "
                                       f"device{ctx.run()}")
        return Scalar(name=decl.name, dtype=dtype, value=float(value))
    lo, hi = (0, 1) if decl.type == "bool" else dtypes.int_limits(dtype)
    if not isinstance(value, int) or not lo <= value <= hi:
        raise ctx.error(decl.line, f"expected scalar {decl.name} ({decl.type}) to be an integer "
                                   f"in [{lo}, {hi}], found '{decl.expr}' = {value!r}{ctx.run()}")
    return Scalar(name=decl.name, dtype=dtype, value=value)


def _argument(ctx: _Context, decl: Union[BufferDecl, ScalarDecl],
              block: Dim3) -> Union[Buffer, Scalar]:
    return _buffer(ctx, decl, block) if isinstance(decl, BufferDecl) else _scalar(ctx, decl)


def _flops(ctx: _Context, spec: KernelSpec, line: int) -> int:
    if spec.flops is None:
        return 0
    v = ctx.value(spec.flops, ctx.sizes, line, "flops")
    if v < 0:
        raise ctx.error(line, f"expected flops >= 0, found '{spec.flops}' = {v!r}{ctx.run()}")
    return int(round(v))


def _check_total_bytes(ctx: _Context, spec: KernelSpec,
                       args: Sequence[Union[Buffer, Scalar]]) -> None:
    """Raises at the kernel header when the buffers of one case hold more than
    ``MAX_TOTAL_BYTES`` together (the size, in GiB, and the largest buffers are named)."""
    buffers = sorted((a for a in args if isinstance(a, Buffer)), key=lambda b: -b.nbytes)
    total = sum(b.nbytes for b in buffers)
    if total > MAX_TOTAL_BYTES:
        largest = ", ".join(f"{b.name} {b.nbytes / _GIB:.4g} GiB" for b in buffers[:3])
        raise ctx.error(spec.line, f"expected the buffers to total at most "
                                   f"{MAX_TOTAL_BYTES / _GIB:.0f} GiB (1 TiB), found "
                                   f"{total / _GIB:.4g} GiB ({largest}){ctx.run()}; the runner "
                                   f"also refuses a case that does not fit its GPU's memory")


def bytes_moved(args: Sequence[Union[Buffer, Scalar]]) -> int:
    """Bytes the computation must move: each ``in`` and ``out`` buffer once, ``inout`` twice
    (read and written)."""
    return sum(a.nbytes * (2 if a.role == "inout" else 1) for a in args if isinstance(a, Buffer))


def resolve_case(spec: KernelSpec, kernel: Kernel, sizes: Mapping[str, int],
                 label: str) -> Case:
    """One problem instance: arguments in the kernel's parameter order, lengths in elements,
    spec types as numpy dtype names, input ranges (spec's or the type's default),
    ``bytes_moved`` (see :func:`bytes_moved`) and ``flops`` (the spec's, else 0).

    Raises:
        SpecError: the spec does not fit the kernel, or a value is unusable (at its line).
    """
    validate(spec, kernel)
    ctx = _Context(_path(spec), label, sizes)
    block = _block(ctx, spec.launch.block, spec.launch.line)
    args = tuple(_argument(ctx, spec.param(p.name), block) for p in kernel.parameters)
    _check_total_bytes(ctx, spec, args)
    return Case(label=label, args=args, bytes_moved=bytes_moved(args),
                flops=_flops(ctx, spec, spec.line))


def build_problem(spec: KernelSpec, kernel: Kernel,
                  seeds: Sequence[int] = (1, 2, 3)) -> Problem:
    """The runner's problem: the nominal case first (the timed one), then the ragged case.

    ``tolerance``: the spec's relative tolerance ``t`` becomes ``Tolerance(rtol=t, atol=t,
    scaled=True)`` (so values near zero are compared against the output's scale); None without
    an override, letting the runner derive it from the element type.

    Raises:
        SpecError: as :func:`resolve_case`.
    """
    cases = tuple(resolve_case(spec, kernel, sizes_for(spec, label), label) for label in LABELS)
    tolerance = None
    if spec.tolerance is not None:
        tolerance = Tolerance(rtol=spec.tolerance, atol=spec.tolerance, scaled=True)
    return Problem(kernel=spec.kernel, cases=cases, seeds=tuple(seeds), tolerance=tolerance,
                   atomics=spec.atomics)


def build_variant(label: str, source: str, kernel_name: str, spec: KernelSpec,
                  launch: LaunchDecl, sm_count: int, options: Sequence[str] = (),
                  files: Optional[Mapping[str, str]] = None) -> Variant:
    """A variant with one :class:`Launch` per case of :func:`build_problem`, each evaluated with
    that case's sizes, so a changed block shape flows into the grid through ``block.x``.
    ``files``: the project headers the source needs (``cudalens.build.request_files``), sent
    with it; ``options`` then carry their relative ``-I`` folders.

    Raises:
        SpecError: a launch value is unusable (at ``launch.line``), or ``launch``'s block would
            change the length of a buffer whose length uses ``block`` (the problem's buffers are
            sized with the spec's own block; a variant cannot resize them).
    """
    path = _path(spec)
    launches = []
    for case_label in LABELS:
        ctx = _Context(path, case_label, sizes_for(spec, case_label))
        resolved = _launch(ctx, launch, sm_count, (launch.line,) * 3)
        _check_lengths_unchanged(ctx, spec, Dim3(*resolved.block))
        launches.append(resolved)
    return Variant(label=label, source=source, name=kernel_name, launches=tuple(launches),
                   options=tuple(options), files=dict(files or {}))


def _check_lengths_unchanged(ctx: _Context, spec: KernelSpec, block: Dim3) -> None:
    own = None
    for decl in spec.params:
        if isinstance(decl, BufferDecl) and "block" in names_in(decl.length):
            own = own or _block(ctx, spec.launch.block, spec.launch.line)
            want = _buffer(ctx, decl, own).length
            got = _buffer(ctx, decl, block).length
            if got != want:
                raise ctx.error(decl.line, f"the length of {decl.name} ('{decl.length}') uses "
                                f"block: block {tuple(block)} makes it {got} elements, but the "
                                f"buffers are sized with the spec's block {tuple(own)} ({want} "
                                f"elements){ctx.run()}; expected a launch that keeps it")


def check_values(spec: KernelSpec, lines: Optional[Mapping[str, int]] = None) -> None:
    """Evaluates everything in ``spec`` with both size sets, without a kernel or a device.

    The parser calls this so unusable values are reported at their own line: ``lines`` maps
    ``block``, ``grid``, ``shared`` and ``flops`` to the lines declaring them (default: the
    launch's line for the first three, the kernel header for flops). A grid that uses
    ``sm_count`` is not evaluated (the device is unknown here).

    Raises:
        SpecError: the first unusable value, at its line.
    """
    known = dict(lines or {})
    launch_lines = tuple(known.get(k, spec.launch.line) for k in ("block", "grid", "shared"))
    uses_sm_count = any("sm_count" in names_in(e) for e in spec.launch.grid)
    for label in LABELS:
        ctx = _Context(_path(spec), label, sizes_for(spec, label))
        if uses_sm_count:
            block = _block(ctx, spec.launch.block, launch_lines[0])
            _shared(ctx, spec.launch.shared, {**ctx.sizes, "block": block}, launch_lines[2])
        else:
            resolved = _launch(ctx, spec.launch, None, launch_lines)  # type: ignore[arg-type]
            block = Dim3(*resolved.block)
        args = tuple(_argument(ctx, decl, block) for decl in spec.params)
        _check_total_bytes(ctx, spec, args)
        _flops(ctx, spec, known.get("flops", spec.line))
