"""Checks of an evaluate or compile request beyond its JSON shape, done before any work is
queued, so a bad request costs a 422 and not a GPU worker. Each problem is one sentence that
names where it is (``candidates[2] 'c3'``), what was expected and what was found.
"""

from __future__ import annotations

import re
from typing import Iterable

from gpu_runner.includes import check_file_names, source_path_problems
from gpu_runner.problem import DTYPES, FILLS, Buffer, Problem, Scalar, Variant

MAX_BUFFER_ELEMENTS = 1 << 34  # 16 Gi elements: beyond any GPU's memory for one buffer


def kernel_base_name(name: str) -> str:
    """The identifier a kernel name ends in: ``ops::scale<float>`` -> ``scale``."""
    return re.sub(r"<.*$", "", name).split("::")[-1].strip()


def _variant_problems(where: str, v: Variant, cases: int) -> Iterable[str]:
    base = kernel_base_name(v.name)
    if not re.fullmatch(r"[A-Za-z_]\w*", base):
        yield f"{where}: kernel name '{v.name}' is not a C++ name"
    elif not re.search(rf"(?<![\w]){re.escape(base)}(?![\w])", v.source):
        yield (f"{where}: unknown kernel '{v.name}': '{base}' does not occur in the variant's "
               f"source")
    for problem in check_file_names(v.files or {}):
        yield f"{where}: {problem}"
    for problem in source_path_problems(v.source_path, v.files or {}):
        yield f"{where}: {problem}"
    if cases >= 0 and len(v.launches) != cases:
        yield f"{where}: expected one launch per case ({cases}), found {len(v.launches)}"
    for i, launch in enumerate(v.launches):
        if min(launch.grid) < 1 or min(launch.block) < 1:
            yield (f"{where}.launches[{i}]: grid and block must be positive, found grid "
                   f"{launch.grid}, block {launch.block}")
        if launch.shared_bytes < 0:
            yield f"{where}.launches[{i}]: shared_bytes must be >= 0, found {launch.shared_bytes}"


def _problem_problems(p: Problem) -> Iterable[str]:
    if not p.cases:
        yield "problem: expected at least one case, found none"
    if not p.seeds:
        yield "problem: expected at least one seed, found none"
    for ci, case in enumerate(p.cases):
        cap = case.captured
        if cap is not None and not re.fullmatch(r"[0-9a-f]{64}", cap.sha256):
            yield (f"problem.cases[{ci}] '{case.label}': captured.sha256 must be 64 lowercase hex "
                   f"digits, found {cap.sha256[:80]!r}")
        if cap is not None and bool(cap.payload) == bool(cap.path):
            yield (f"problem.cases[{ci}] '{case.label}': captured data needs exactly one of "
                   f"payload and path, found {'both' if cap.payload else 'neither'}")
        names = [a.name for a in case.args]
        for name in sorted({n for n in names if names.count(n) > 1}):
            yield f"problem.cases[{ci}] '{case.label}': argument '{name}' appears more than once"
        for ai, arg in enumerate(case.args):
            where = f"problem.cases[{ci}].args[{ai}] '{arg.name}'"
            if arg.dtype not in DTYPES:
                yield f"{where}: unknown dtype '{arg.dtype}'; expected one of {', '.join(DTYPES)}"
            if isinstance(arg, Buffer):
                if not 1 <= arg.length <= MAX_BUFFER_ELEMENTS:
                    yield (f"{where}: length must be between 1 and {MAX_BUFFER_ELEMENTS}, found "
                           f"{arg.length}")
                if not arg.low < arg.high:
                    yield f"{where}: expected low < high, found [{arg.low}, {arg.high})"
                if arg.fill not in FILLS:
                    yield f"{where}: unknown fill '{arg.fill}'; expected one of {', '.join(FILLS)}"
            elif isinstance(arg, Scalar) and isinstance(arg.value, float) and \
                    arg.dtype not in ("float16", "float32", "float64", "bfloat16", "float8_e4m3",
                                      "float8_e5m2"):
                yield f"{where}: {arg.dtype} scalar given a non-integer value {arg.value}"


def evaluate_problems(problem: Problem, baseline: Variant,
                      candidates: list[Variant]) -> list[str]:
    """Everything wrong with an evaluate request, or [] when it may be queued."""
    out = list(_problem_problems(problem))
    cases = len(problem.cases)
    out += _variant_problems(f"baseline '{baseline.label}'", baseline, cases)
    labels = [baseline.label] + [c.label for c in candidates]
    for label in sorted({x for x in labels if labels.count(x) > 1}):
        out.append(f"variant labels must be unique; '{label}' appears {labels.count(label)} times")
    for i, c in enumerate(candidates):
        out += _variant_problems(f"candidates[{i}] '{c.label}'", c, cases)
    return out


def compile_problems(variants: list[Variant]) -> list[str]:
    """Everything wrong with a compile request (launches are not needed), or []."""
    out = []
    for i, v in enumerate(variants):
        out += _variant_problems(f"variants[{i}] '{v.label}'", v, -1)
    return out


def profile_problems(problem: Problem, variant: Variant) -> list[str]:
    """Everything wrong with a profile request (checked as an evaluate request's baseline),
    or []."""
    return list(_problem_problems(problem)) + \
        list(_variant_problems(f"variant '{variant.label}'", variant, len(problem.cases)))
