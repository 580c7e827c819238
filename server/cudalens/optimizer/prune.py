"""Pruning candidates with the compile report before any of them is timed.

Every candidate is compiled with nvcc (``cudalens.check.compile_check``, no GPU needed) and
its kernel's ptxas report (registers, static shared memory, spills) is compared with the
baseline's. A candidate is dropped, with the reason kept, when:

1. it does not compile (the first error, with its line);
2. ptxas reports no entry for the kernel;
3. it spills registers to local memory where the baseline spills none (local memory is
   device memory: every spill is extra memory traffic);
4. it cannot launch: its registers or shared memory for one block exceed an SM;
5. its theoretical occupancy (``cudalens.occupancy``) is below ``min_occupancy``
   (default 25%: 16 of an H100/H200 SM's 64 warp slots, too few to hide memory latency in
   the CUDA C++ Best Practices Guide's terms) and below the baseline's.

Nothing is dropped for being merely different: fewer warps per SM with more work per warp
(a tiled kernel) is often faster, which only timing shows.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from cudalens.check.report import KernelResources
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.context import PassContext
from cudalens.occupancy import LIMITS, Occupancy, SmLimits, occupancy
from cudalens.spec.errors import SpecError
from cudalens.spec.model import LaunchDecl
from cudalens.spec.resolve import resolve_launch, sizes_for

MIN_OCCUPANCY = 0.25


class BaselineDoesNotCompile(ValueError):
    """The original kernel itself does not compile here, so there is nothing to compare
    candidates with; the message gives nvcc's first error."""

# (source, nvcc options) -> (the kernel's resources, None) or (None, the error)
CompileFn = Callable[[str, tuple[str, ...]], tuple[Optional[KernelResources], Optional[str]]]


@dataclass(frozen=True)
class Resources:
    """A compiled candidate's use of an SM: registers per thread, spilled bytes per thread
    (stores + loads), shared memory per block (static + dynamic, bytes), threads per block,
    and the resulting occupancy."""

    registers: int
    spill_bytes: int
    spill_stores: int
    spill_loads: int
    shared_bytes: int
    threads: int
    occupancy: Occupancy


@dataclass(frozen=True)
class Assessment:
    """What pruning found for one candidate: its resources (None when it did not compile)
    and the reason it is dropped (None when it is kept)."""

    candidate: Candidate
    resources: Optional[Resources]
    reason: Optional[str]


def _pick_kernel(kernels: Sequence[KernelResources], name: str) -> Optional[KernelResources]:
    exact = [k for k in kernels if k.name == name or k.name.rsplit("::", 1)[-1] == name]
    templated = [k for k in kernels if k.name.split("<", 1)[0] in (name, name.rsplit("::", 1)[-1])
                 and "<" in k.name]
    found = exact or templated
    return max(found, key=lambda k: k.registers) if found else None


def nvcc_compiler(ctx: PassContext, arch: str = "sm_90") -> CompileFn:
    """A ``CompileFn`` compiling with ``compile_check`` as if the text were ``ctx.path``, with
    the project's build flags (``cudalens.build.local_nvcc_options``) before the candidate's.

    Raises CompdbError/ConfigError (``cudalens.build``) for a build that cannot be read;
    (when called): ``NvccNotFound`` when nvcc is not installed.
    """
    from pathlib import Path

    from cudalens.build import local_nvcc_options
    from cudalens.check.compile import compile_check

    build = local_nvcc_options(Path(ctx.path))

    def compile_(source: str, options: tuple[str, ...]):
        result = compile_check(ctx.path, source, arch=arch, options=(*build, *options))
        if not result.ok:
            first = result.errors[0] if result.errors else None
            where = f" (line {first.line})" if first is not None and first.line else ""
            text = first.message.splitlines()[0] if first is not None else "nvcc failed"
            return None, f"{text}{where}"
        found = _pick_kernel(result.kernels, ctx.kernel.qualified_name)
        if found is None:
            known = ", ".join(k.name for k in result.kernels) or "none"
            return None, (f"ptxas reported no kernel named {ctx.kernel.qualified_name} "
                          f"(reported: {known})")
        return found, None

    return compile_


class CompilePruner:
    """Drops candidates by their compile report (module doc).

    ``compile`` defaults to nvcc through ``compile_check`` for ``arch``; ``workers`` nvcc
    processes run at once; ``limits`` default to ``arch``'s row of the occupancy table. Results are cached by (source, options), so a candidate that
    differs from another only in its launch configuration compiles once.

    Raises (from ``baseline`` and calls): ``BaselineDoesNotCompile`` (a ``ValueError``) when
    the baseline itself does not compile; ``ValueError`` when ``arch`` has no occupancy table.
    """

    def __init__(self, ctx: PassContext, *, arch: str = "sm_90",
                 compile: Optional[CompileFn] = None, min_occupancy: float = MIN_OCCUPANCY,
                 workers: int = 2, limits: Optional[SmLimits] = None):
        if limits is None and arch not in LIMITS:
            raise ValueError(f"no occupancy limits for {arch} (known: {', '.join(LIMITS)}); "
                             f"pass limits=")
        self.ctx = ctx
        self.limits: SmLimits = limits or LIMITS[arch]
        self.compile = compile or nvcc_compiler(ctx, arch)
        self.min_occupancy = min_occupancy
        self.workers = max(1, workers)
        self._cache: dict[tuple[str, tuple[str, ...]], tuple] = {}
        self._baseline: Optional[Resources] = None

    def _compiled(self, source: str, options: tuple[str, ...]):
        key = (source, tuple(options))
        if key not in self._cache:
            self._cache[key] = self.compile(source, tuple(options))
        return self._cache[key]

    def _launch_numbers(self, launch: LaunchDecl) -> tuple[int, int]:
        resolved = resolve_launch(launch, sizes_for(self.ctx.spec, "nominal"), 132,
                                  path=self.ctx.spec.source or "<spec>")
        b = resolved.block
        return b[0] * b[1] * b[2], resolved.shared_bytes

    def _resources(self, k: KernelResources, launch: LaunchDecl) -> Resources:
        threads, dynamic = self._launch_numbers(launch)
        shared = k.shared_bytes + dynamic
        occ = occupancy(threads, k.registers, shared, self.limits)
        return Resources(k.registers, k.spill_store_bytes + k.spill_load_bytes,
                         k.spill_store_bytes, k.spill_load_bytes, shared, threads, occ)

    def baseline(self) -> Resources:
        """The baseline kernel's resources (compiled once)."""
        if self._baseline is None:
            k, error = self._compiled(self.ctx.text, ())
            if k is None:
                raise BaselineDoesNotCompile(
                    f"{self.ctx.path}: the original kernel {self.ctx.kernel.name} does not "
                    f"compile here: {error} (see: cudalens check {self.ctx.path})")
            self._baseline = self._resources(k, self.ctx.launch)
        return self._baseline

    def assess(self, cand: Candidate) -> Assessment:
        """Compiles ``cand`` (or reuses the cached report) and judges it."""
        base = self.baseline()
        k, error = self._compiled(cand.source, tuple(cand.options))
        if k is None:
            if error and error.startswith("ptxas reported no kernel"):
                return Assessment(cand, None, error)
            return Assessment(cand, None, f"does not compile: {error}")
        try:
            res = self._resources(k, cand.launch)
        except SpecError as exc:
            return Assessment(cand, None, f"its launch configuration cannot be evaluated: {exc}")
        if res.spill_bytes and not base.spill_bytes:
            return Assessment(cand, res, (
                f"spills registers to local memory ({res.spill_stores} bytes stored, "
                f"{res.spill_loads} bytes loaded per thread at {res.registers} registers) where "
                f"the baseline spills none"))
        occ = res.occupancy
        if occ.blocks == 0:
            why = (f"{res.registers} registers x {res.threads} threads" if occ.limiter ==
                   "registers" else f"{res.shared_bytes} bytes of shared memory per block")
            return Assessment(cand, res, f"cannot launch: {why} exceed what one SM holds")
        if occ.fraction < self.min_occupancy and occ.fraction < base.occupancy.fraction:
            return Assessment(cand, res, (
                f"theoretical occupancy {occ.fraction:.0%} ({occ.blocks} "
                f"block{'s' if occ.blocks != 1 else ''} of "
                f"{occ.warps_per_block} warps per SM, limited by {occ.limiter}) is below "
                f"{self.min_occupancy:.0%} and below the baseline's "
                f"{base.occupancy.fraction:.0%}"))
        return Assessment(cand, res, None)

    def __call__(self, cands: Sequence[Candidate]) -> list[Assessment]:
        """Assessments of ``cands``, in order; distinct sources compile ``workers`` at a
        time."""
        self.baseline()
        todo = []
        for c in cands:
            key = (c.source, tuple(c.options))
            if key not in self._cache and key not in todo:
                todo.append(key)
        if len(todo) > 1 and self.workers > 1:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                results = list(pool.map(lambda key: self.compile(*key), todo))
            self._cache.update(zip(todo, results))
        return [self.assess(c) for c in cands]

    def resources(self, cand: Candidate) -> Optional[Resources]:
        """The resources of an already assessed candidate (None when it did not compile)."""
        return self.assess(cand).resources
