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
import re
from collections.abc import Mapping, Sequence
from typing import Optional, Union

import numpy as np

from cudalens.source.model import Kernel
from cudalens.spec import dtypes
from cudalens.spec.errors import SpecError
from cudalens.spec.expr import Dim3, ExprError, Number, evaluate, names_in
from cudalens.spec.model import BufferDecl, KernelSpec, LaunchDecl, ScalarDecl
from cudalens.spec.validate import validate
from cudalens.textfile import wire_text
from gpu_runner.problem import Buffer, Case, Launch, Problem, Scalar, Tolerance, Variant

LABELS = ("nominal", "ragged")
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
FLOAT16_MAX = 65504.0  # largest finite IEEE 754 binary16 value
FLOAT32_MAX = 3.4028234663852886e38  # largest finite IEEE 754 binary32 value
FLOAT64_MAX = 1.7976931348623157e308  # largest finite IEEE 754 binary64 value
# bfloat16: (2 - 2**-7) * 2**127; float8: OCP OFP8 specification rev 1.0, table 1
_FLOAT_MAX = {"float16": FLOAT16_MAX, "float32": FLOAT32_MAX, "float64": FLOAT64_MAX,
              "bfloat16": 3.3895313892515355e38, "float8_e4m3": 448.0, "float8_e5m2": 57344.0}
_NARROW_MAX = {k: _FLOAT_MAX[k] for k in ("bfloat16", "float8_e4m3", "float8_e5m2")}
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
    """Where values are evaluated: the spec's file, the size set's label and its values
    (``hidden``: names among them that are the file's constants, left out of messages)."""

    def __init__(self, path: str, label: str, sizes: Mapping[str, int],
                 hidden: frozenset = frozenset()) -> None:
        self.path = path
        self.label = label
        self.sizes = dict(sizes)
        self.hidden = hidden

    def run(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.sizes.items() if k not in self.hidden)
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


def _hidden(spec: KernelSpec) -> frozenset:
    sizes = {s.name for s in spec.sizes}
    return frozenset(n for n, _ in spec.constants if n not in sizes)


def sizes_for(spec: KernelSpec, label: str) -> dict[str, int]:
    """The values of ``spec``'s sizes for ``label`` (``"nominal"`` or ``"ragged"``), in order,
    followed by the spec's constants (its file's ``#define``s) that no size shadows, so that
    every expression of the spec can be evaluated with the result.

    Ragged values: ``check NAME`` when given; a size with ``multiple NAME = M`` gets
    ``M * ragged_value(v / M)`` (an odd number of tiles), and its nominal value and check must
    be multiples of ``M``; a size whose expression names no other size (constants aside) gets
    ``ragged_value(v)``; any other is re-evaluated with the ragged sizes.

    Raises:
        SpecError: a size or check is not an integer >= 1, a check exceeds its size's
            nominal value, or a value is not a multiple its ``multiple`` asks for (at its line).
        ValueError: ``label`` is neither ``"nominal"`` nor ``"ragged"``.
    """
    if label not in LABELS:
        raise ValueError(f"expected a size set label in {LABELS}, found {label!r}")
    consts = dict(spec.constants)
    hidden = _hidden(spec)
    extra = {k: v for k, v in consts.items() if k in hidden}
    nominal: dict[str, int] = {}
    for s in spec.sizes:
        ctx = _Context(_path(spec), "nominal", {**nominal, **extra}, hidden)
        nominal[s.name] = ctx.integer(s.expr, ctx.sizes, s.line, f"size {s.name}")
    multiples = {m.name: m for m in spec.multiples}
    for name, m in multiples.items():
        ctx = _Context(_path(spec), "nominal", {**nominal, **extra}, hidden)
        step = ctx.integer(m.expr, ctx.sizes, m.line, f"multiple {name}")
        if nominal[name] % step:
            raise ctx.error(m.line, f"expected size {name} = {nominal[name]} to be a multiple of "
                                    f"{step} ('multiple {name} = {m.expr}'){ctx.run()}")
    if label == "nominal":
        return {**nominal, **extra}
    checks = {c.name: c for c in spec.checks}
    ragged: dict[str, int] = {}
    for s in spec.sizes:
        ctx = _Context(_path(spec), "ragged", {**ragged, **extra}, hidden)
        check = checks.get(s.name)
        step = None
        if s.name in multiples:
            step = ctx.integer(multiples[s.name].expr, ctx.sizes, multiples[s.name].line,
                               f"multiple {s.name}")
        if check is not None:
            ragged[s.name] = ctx.integer(check.expr, ctx.sizes, check.line, f"check {s.name}")
            if ragged[s.name] > nominal[s.name]:
                raise ctx.error(check.line, f"expected check {s.name} <= size {s.name} = "
                                            f"{nominal[s.name]} (the ragged verification size "
                                            f"may not exceed the timed size), found "
                                            f"'{check.expr}' = {ragged[s.name]}{ctx.run()}")
            if step is not None and ragged[s.name] % step:
                raise ctx.error(check.line, f"expected check {s.name} to be a multiple of {step} "
                                            f"(multiple {s.name}), found '{check.expr}' = "
                                            f"{ragged[s.name]}{ctx.run()}")
        elif step is not None and not names_in(s.expr) - hidden:
            ragged[s.name] = step * ragged_value(nominal[s.name] // step)
        elif not names_in(s.expr) - hidden:
            ragged[s.name] = ragged_value(nominal[s.name])
        else:
            ragged[s.name] = ctx.integer(s.expr, ctx.sizes, s.line, f"size {s.name}")
            if step is not None and ragged[s.name] % step:
                raise ctx.error(multiples[s.name].line,
                                f"expected the ragged size {s.name} = '{s.expr}' = "
                                f"{ragged[s.name]} to be a multiple of {step}: give it a "
                                f"'check {s.name} = EXPR' that is{ctx.run()}")
    return {**ragged, **extra}


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
    if dtypes.is_float_dtype(dtype):
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
    params = _fill_params(ctx, decl, dtype, length, low, high)
    return Buffer(name=decl.name, dtype=dtype, length=length, role=decl.role, low=float(low),
                  high=float(high), fill=decl.fill, params=params)


def _fill_params(ctx: _Context, decl: BufferDecl, dtype: str, length: int, low: Number,
                 high: Number) -> tuple[float, ...]:
    """The numbers of a buffer's fill, checked: ``normal`` (mean, std > 0), ``csr`` (nnz,
    an integer >= 0 fitting the type, length >= 2 unless nnz is 0), ``permutation`` (the
    length fits the type), ``unique`` (the range holds ``length`` integers)."""
    fill = decl.fill
    if fill == "normal":
        mean = ctx.value(decl.fill_args[0], ctx.sizes, decl.line, f"normal mean of {decl.name}")
        std = ctx.value(decl.fill_args[1], ctx.sizes, decl.line, f"normal std of {decl.name}")
        if not std > 0:
            raise ctx.error(decl.line, f"expected normal(MEAN, STD) with STD > 0 for "
                                       f"{decl.name}, found std {std!r}{ctx.run()}")
        return (float(mean), float(std))
    if fill == "csr":
        nnz = ctx.integer(decl.fill_args[0], ctx.sizes, decl.line, f"csr nnz of {decl.name}",
                          minimum=0)
        if nnz > dtypes.int_limits(dtype)[1]:
            raise ctx.error(decl.line, f"expected csr({decl.fill_args[0]}) = {nnz} to fit "
                                       f"{decl.name}'s {dtype}{ctx.run()}")
        if length < 2 and nnz:
            raise ctx.error(decl.line, f"csr row pointers need length rows + 1 >= 2, found "
                                       f"{decl.name} of length {length}{ctx.run()}")
        return (float(nnz),)
    if fill == "permutation" and length - 1 > dtypes.int_limits(dtype)[1]:
        raise ctx.error(decl.line, f"a permutation of {length} elements does not fit "
                                   f"{decl.name}'s {dtype}{ctx.run()}")
    if fill == "unique" and int(high) - int(low) < length:
        raise ctx.error(decl.line, f"'unique' needs {length} distinct integers for {decl.name}, "
                                   f"but range({low}, {high}) holds {int(high) - int(low)}"
                                   f"{ctx.run()}")
    return ()


def _on_device(value: Number, dtype: str) -> float:
    """``value`` as the device holds it in ``dtype`` (a numpy float type name): rounded to
    nearest, so past the largest finite value by half a unit in the last place or more it is
    infinite (IEEE 754, "overflow")."""
    try:
        wide = float(value)
    except OverflowError:  # an integer past the largest double
        return math.inf if value > 0 else -math.inf
    if dtype in _NARROW_MAX:  # bfloat16, float8: no numpy type; refuse what is past the format
        return wide if abs(wide) <= _NARROW_MAX[dtype] else math.copysign(math.inf, wide)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.array(wide, dtype=np.float64).astype(dtype))


def _scalar(ctx: _Context, decl: ScalarDecl) -> Scalar:
    dtype = dtypes.numpy_dtype(decl.type)
    value = ctx.value(decl.expr, ctx.sizes, decl.line, f"scalar {decl.name}")
    if dtypes.is_float_dtype(dtype):
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


INT32_MAX = 2**31 - 1
_INT32_TYPES = ("int", "int32", "unsigned", "uint32")


def _check_int_lengths(ctx: _Context, spec: KernelSpec,
                       args: Sequence[Union[Buffer, Scalar]]) -> None:
    """A buffer longer than ``INT32_MAX`` elements whose length is made of sizes the kernel
    takes as 32-bit integers is refused at its line: the kernel computes that length (or an
    index up to it) in ``int``, which wraps silently (``B * T * C`` of 4096, 4096 and 1024 is
    2^34, 0 in 32 bits)."""
    as_int = {d.expr.strip(): d.name for d in spec.params
              if isinstance(d, ScalarDecl) and d.type in _INT32_TYPES}
    lengths = {a.name: a.length for a in args if isinstance(a, Buffer)}
    for decl in spec.params:
        if not isinstance(decl, BufferDecl) or lengths.get(decl.name, 0) <= INT32_MAX:
            continue
        try:
            used = names_in(decl.length)
        except ExprError:
            continue
        names = list(dict.fromkeys(n for n in re.findall(r"[A-Za-z_]\w*", decl.length)
                                   if n in used and n in as_int))
        if not names:
            continue
        values = ", ".join(f"{n} = {ctx.sizes[n]}" for n in names if n in ctx.sizes)
        raise ctx.error(decl.line, (
            f"expected {decl.name}: {decl.type}[{decl.length}] to have at most {INT32_MAX} "
            f"elements, found {lengths[decl.name]} ({values}): the kernel takes "
            f"{', '.join(as_int[n] for n in names)} as 32-bit int, so its index arithmetic up "
            f"to {decl.length} overflows int; choose smaller sizes, or make the kernel's sizes "
            f"and indices 64-bit (size_t, long long){ctx.run()}"))


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


def bytes_moved(args: Sequence[Union[Buffer, Scalar]], reads: Optional[int] = None,
                writes: Optional[int] = None) -> int:
    """Bytes the computation must move: ``reads`` (default: each ``in`` and ``inout`` buffer
    once) plus ``writes`` (default: each ``out`` and ``inout`` buffer once)."""
    buffers = [a for a in args if isinstance(a, Buffer)]
    if reads is None:
        reads = sum(b.nbytes for b in buffers if b.role in ("in", "inout"))
    if writes is None:
        writes = sum(b.nbytes for b in buffers if b.role in ("out", "inout"))
    return reads + writes


def _moved(ctx: _Context, spec: KernelSpec, key: str) -> Optional[int]:
    expr = getattr(spec, key)
    if expr is None:
        return None
    return ctx.integer(expr, ctx.sizes, spec.line, key, minimum=0)


def resolve_case(spec: KernelSpec, kernel: Kernel, sizes: Mapping[str, int],
                 label: str) -> Case:
    """One problem instance: arguments in the kernel's parameter order, lengths in elements,
    spec types as numpy dtype names, input ranges (spec's or the type's default) and fills,
    ``bytes_moved`` (the spec's ``reads`` + ``writes`` bytes, each defaulting as in
    :func:`bytes_moved`) and ``flops`` (the spec's, else 0).

    Raises:
        SpecError: the spec does not fit the kernel, or a value is unusable (at its line).
    """
    validate(spec, kernel)
    ctx = _Context(_path(spec), label, sizes, _hidden(spec))
    block = _block(ctx, spec.launch.block, spec.launch.line)
    args = tuple(_argument(ctx, spec.param(p.name), block) for p in kernel.parameters)
    _check_int_lengths(ctx, spec, args)
    _check_total_bytes(ctx, spec, args)
    moved = bytes_moved(args, _moved(ctx, spec, "reads"), _moved(ctx, spec, "writes"))
    return Case(label=label, args=args, bytes_moved=moved, flops=_flops(ctx, spec, spec.line))


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
                  files: Optional[Mapping[str, str]] = None,
                  source_path: str = "kernel.cu") -> Variant:
    """A variant with one :class:`Launch` per case of :func:`build_problem`, each evaluated with
    that case's sizes, so a changed block shape flows into the grid through ``block.x``.
    ``files``: the project headers the source needs (``cudalens.build.request_files``), sent
    with it; ``options`` then carry their relative ``-I`` folders; ``source_path``: where the
    runner writes the source among them (``RequestFiles.source_path``).

    Raises:
        SpecError: a launch value is unusable (at ``launch.line``), or ``launch``'s block would
            change the length of a buffer whose length uses ``block`` (the problem's buffers are
            sized with the spec's own block; a variant cannot resize them).
    """
    path = _path(spec)
    kernel_name = instance_name(kernel_name, spec)
    launches = []
    for case_label in LABELS:
        ctx = _Context(path, case_label, sizes_for(spec, case_label), _hidden(spec))
        resolved = _launch(ctx, launch, sm_count, (launch.line,) * 3)
        _check_lengths_unchanged(ctx, spec, Dim3(*resolved.block))
        launches.append(resolved)
    # JSON (the runner's requests) cannot hold a byte that is not UTF-8 (``textfile``).
    return Variant(label=label, source=wire_text(source), name=kernel_name,
                   launches=tuple(launches), options=tuple(options),
                   files={name: wire_text(text) for name, text in (files or {}).items()},
                   source_path=source_path)


def instance_name(kernel_name: str, spec: KernelSpec) -> str:
    """The name the runner looks the kernel up by: ``kernel_name`` (``ops::reduce``), with the
    template arguments of the spec's ``kernel NAME<ARGS>`` header when it has them and
    ``kernel_name`` has none (``ops::reduce<float, 256>``), so that one instance of several in
    the compiled file is picked."""
    if "<" in kernel_name or "<" not in spec.kernel:
        return kernel_name
    return kernel_name + spec.kernel[spec.kernel.index("<"):]


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
        ctx = _Context(_path(spec), label, sizes_for(spec, label), _hidden(spec))
        if uses_sm_count:
            block = _block(ctx, spec.launch.block, launch_lines[0])
            _shared(ctx, spec.launch.shared, {**ctx.sizes, "block": block}, launch_lines[2])
        else:
            resolved = _launch(ctx, spec.launch, None, launch_lines)  # type: ignore[arg-type]
            block = Dim3(*resolved.block)
        args = tuple(_argument(ctx, decl, block) for decl in spec.params)
        _check_total_bytes(ctx, spec, args)
        _flops(ctx, spec, known.get("flops", spec.line))
        for key in ("reads", "writes"):
            expr = getattr(spec, key)
            if expr is not None:
                ctx.integer(expr, ctx.sizes, known.get(key, spec.line), key, minimum=0)
