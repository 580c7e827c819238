"""A user-style host program around a kernel, made from the kernel and its harness spec.

``generate(target)`` writes what a CUDA developer's program around the kernel looks like: a
``main.cu`` that includes the kernel's file, declares the spec's sizes as host variables
(``const int rows = 1001;``), allocates every buffer, fills the inputs, fills the outputs
with the runner's poison (``gpu_runner.patterns``: a NaN no arithmetic makes for floats, 0x7F
bytes for integers, so elements a launch misses show), launches the kernel once
with ``kernel<<<grid, block[, shared]>>>(args)`` where grid, block and shared are the spec's
launch expressions written over the host's size variables (``(rows + 256 - 1) / 256``, as
``cudalens.host_launch`` writes them), copies every ``out``/``inout`` buffer back and writes
it to ``NAME.out`` (raw bytes). A launch site written that way is one cudalens can rewrite.

Sizes are those of the spec's ragged case scaled down as the sanitizer check scales them
(``cudalens.sanitize_check.small_spec``: at most about 2^18 elements, still ragged). Inputs are
the runner's own values for that case and seed (``gpu_runner.inputs.buffer_values``: every
fill the spec can ask for, CSR structures and permutations included), written beside the
program as ``NAME.in`` (raw bytes, the outputs' poison too) and read by it, so the program and
the runner's verification see the same data. Scalars that are sizes or expressions of sizes
are passed as those host expressions; other scalars as literals of their value.

``compare_outputs`` compares two runs' outputs with the tolerance the runner applies to a
candidate (``gpu_runner.compare``: the spec's ``tolerance``, else the element type's default,
scaled by the output's largest value; integers exactly; an element one run left unwritten is a
difference).

Not supported (``Unsupported``, with the reason): template kernels (the program would have to
pick an instance), a parameter the spec does not describe.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from cudalens.host_launch import Unmappable, c_expression
from cudalens.sanitize_check import small_spec
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cudalens.spec.resolve import build_problem, sizes_for
from cudalens.target import Target
from gpu_runner import compare, elements
from gpu_runner.inputs import buffer_values
from gpu_runner.patterns import poison_array
from gpu_runner.problem import Buffer, Problem, Scalar

CASE = "ragged"


class Unsupported(Exception):
    """The kernel cannot get a generated program; ``str()`` says why."""


@dataclass(frozen=True)
class OutputBuffer:
    """An ``out``/``inout`` buffer the program writes to ``NAME.out``: its numpy dtype name
    (``gpu_runner.problem.Buffer.dtype``) and length in elements."""

    name: str
    dtype: str
    length: int


@dataclass(frozen=True)
class HostProgram:
    """A generated program (module doc): ``main`` the text of ``main.cu``, which includes
    ``kernel_file``; ``inputs`` the bytes of each ``NAME.in``; ``sizes`` the host variables'
    values; ``launch`` the ``<<<...>>>`` it launches with; ``problem`` the runner's problem of
    the same spec (its tolerance is the comparison's)."""

    kernel: str
    kernel_file: str
    main: str
    inputs: dict[str, bytes]
    outputs: tuple[OutputBuffer, ...]
    sizes: dict[str, int]
    launch: str
    problem: Problem

    def write(self, folder: Path) -> None:
        """Writes ``main.cu`` and the ``NAME.in`` files into ``folder`` (the kernel's file is
        the caller's: ``main.cu`` includes it by name)."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "main.cu").write_text(self.main, encoding="utf-8")
        for name, data in self.inputs.items():
            (folder / f"{name}.in").write_bytes(data)

    def read_outputs(self, folder: Path) -> dict[str, np.ndarray]:
        """The ``NAME.out`` files a run left in ``folder``, as host arrays (narrow floats as
        their storage integers).

        Raises:
            ValueError: a file is missing or of the wrong size (the message names it)."""
        out = {}
        for b in self.outputs:
            path = folder / f"{b.name}.out"
            want = b.length * elements.itemsize(b.dtype)
            if not path.is_file() or path.stat().st_size != want:
                found = path.stat().st_size if path.is_file() else "no file"
                raise ValueError(f"{path}: expected {want} bytes ({b.length} x {b.dtype}), "
                                 f"found {found}")
            out[b.name] = np.fromfile(path, dtype=elements.storage_dtype(b.dtype))
        return out


def _c_literal(value, dtype: str) -> str:
    """A scalar's value as a C++ literal of its type."""
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        text = repr(float(value)) if math.isfinite(float(value)) else None
        if text is None:
            raise Unsupported(f"a non-finite scalar value {value!r}")
        if "e" not in text and "." not in text:
            text += ".0"
        if dtype == "float32":
            return text + "f"
        if dtype == "float16":
            return f"__float2half({text}f)"
        if dtype == "bfloat16":
            return f"__float2bfloat16({text}f)"
        return text
    v = int(value)
    suffix = {"uint32": "u", "int64": "LL", "uint64": "ULL"}.get(dtype, "")
    return f"{v}{suffix}"


def _size_type(value: int) -> str:
    return "int" if -2**31 <= value < 2**31 else "long long"


def _axes(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"dim3({', '.join(parts)})"


def launch_config(spec: KernelSpec, names: dict[str, str]) -> str:
    """``<<<grid, block[, shared]>>>`` of ``spec``'s launch over the host expressions
    ``names`` (a size's name -> its C++ text)."""
    launch = spec.launch
    block = [c_expression(t, names, ()) for t in launch.block]
    grid = [c_expression(t, names, tuple(block)) for t in launch.grid]
    parts = [_axes(grid), _axes(block)]
    shared = (launch.shared or "0").strip()
    if shared != "0":
        parts.append(c_expression(shared, names, tuple(block)))
    return f"<<<{', '.join(parts)}>>>"


def generate(target: Target, seed: int = 1) -> HostProgram:
    """The program of ``target``'s kernel (module doc), inputs of ``seed``.

    Raises:
        Unsupported: a template kernel, or a kernel parameter the spec does not describe.
        cudalens.spec.errors.SpecError: the spec cannot be resolved at the ragged sizes.
    """
    kernel = target.kernel
    if kernel.template_parameters:
        params = ", ".join(kernel.template_parameters)
        raise Unsupported(f"{kernel.name} is a template (template<{params}>): a program would "
                          f"have to choose an instance")
    spec = small_spec(target.spec)
    problem = build_problem(spec, kernel, seeds=(seed,))
    case = next(c for c in problem.cases if c.label == CASE)
    args = {a.name: a for a in case.args}
    values = sizes_for(spec, CASE)
    size_names = [s.name for s in spec.sizes]
    names = {n: n for n in size_names}
    names.update({n: n for n, _ in spec.constants if n not in names})  # the file's #defines
    launch_names = set().union(*(spec_expr.names_in(t) for t in (
        *spec.launch.block, *spec.launch.grid, spec.launch.shared or "0")))
    uses_sm_count = "sm_count" in launch_names
    if uses_sm_count:
        names["sm_count"] = "sm_count"
    defines = dict(spec.constants)
    lines_sizes = []
    for s in spec.sizes:
        v = values[s.name]
        if s.name in defines:  # the kernel's file #defines it: the macro is the host's name
            continue
        if spec_expr.names_in(s.expr):
            try:
                text = c_expression(s.expr, {k: n for k, n in names.items() if k != s.name}, ())
            except (Unmappable, spec_expr.ExprError):  # not C++ as it is: its value
                text = str(v)
        else:
            text = str(v)
        lines_sizes.append(f"    const {_size_type(v)} {s.name} = {text};")
    by_name = {p.name: p for p in spec.params}
    call_args, allocs, fills, backs, frees = [], [], [], [], []
    inputs: dict[str, bytes] = {}
    outputs: list[OutputBuffer] = []
    for p in kernel.parameters:
        decl = by_name.get(p.name)
        if decl is None:
            raise Unsupported(f"the spec of {kernel.name} does not describe its parameter "
                              f"{p.name}")
        if isinstance(decl, BufferDecl):
            buf = args[p.name]
            assert isinstance(buf, Buffer)
            ctype = p.type
            nbytes = buf.length * elements.itemsize(buf.dtype)
            dev = f"d_{p.name}"
            allocs.append(f"    {ctype}* {dev} = nullptr;\n"
                          f"    CHECK(cudaMalloc(&{dev}, {nbytes}));  "
                          f"// {buf.length} x {buf.dtype}")
            data = (poison_array(buf.dtype, buf.length) if buf.role == "out"
                    else buffer_values(buf, seed, CASE))
            inputs[p.name] = np.ascontiguousarray(data).tobytes()
            note = "  // the poison: what stays of it was not written" if buf.role == "out" else ""
            fills.append(f"    if (!load_input(\"{p.name}.in\", {dev}, {nbytes})) return 1;{note}")
            if buf.role != "in":
                outputs.append(OutputBuffer(p.name, buf.dtype, buf.length))
                backs.append(f"    if (!save_output(\"{p.name}.out\", {dev}, {nbytes})) return 1;")
            frees.append(f"    cudaFree({dev});")
            call_args.append(dev)
        else:
            assert isinstance(decl, ScalarDecl)
            sc = args[p.name]
            assert isinstance(sc, Scalar)
            used = spec_expr.names_in(decl.expr)
            text = None
            if used and used <= set(names):
                try:
                    text = c_expression(decl.expr, names, ())
                except (Unmappable, spec_expr.ExprError):  # its value instead
                    text = None
            call_args.append(text if text is not None else _c_literal(sc.value, sc.dtype))
    config = launch_config(spec, names)
    sm = ("    int sm_count = 0;\n"
          "    CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));\n"
          if uses_sm_count else "")
    file_name = Path(target.path).name
    call = f"    {kernel.name}{config}({', '.join(call_args)});"
    main = _TEMPLATE.format(
        kernel=kernel.name, file=file_name, sizes="\n".join(lines_sizes), sm=sm,
        allocs="\n".join(allocs), fills="\n".join(fills), call=call, backs="\n".join(backs),
        frees="\n".join(frees),
        headers=("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                 if re.search(r"__float2(half|bfloat16)", "".join(call_args)) else ""))
    return HostProgram(kernel.name, file_name, main, inputs, tuple(outputs),
                       {n: values[n] for n in size_names}, config, problem)


_TEMPLATE = """\
// A program around {kernel}, as its user would write it: sizes as host variables, buffers
// allocated and filled from NAME.in (inputs; outputs with a poison), one launch written with
// those variables, and the outputs written to NAME.out. Made by benchmarks/host_program.py
// from {file} and its spec.
//
// Build and run: nvcc -O2 -o prog main.cu && ./prog

#include <cstdio>
#include <cstdlib>
#include <vector>
{headers}
#include "{file}"

#define CHECK(call)                                                                        \\
    do {{                                                                                   \\
        cudaError_t err_ = (call);                                                         \\
        if (err_ != cudaSuccess) {{                                                         \\
            std::fprintf(stderr, "%s:%d: %s\\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \\
            return 1;                                                                      \\
        }}                                                                                  \\
    }} while (0)

// Reads `bytes` bytes of `path` into the device buffer `dst`.
static bool load_input(const char* path, void* dst, size_t bytes)
{{
    std::vector<char> host(bytes);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(host.data(), 1, bytes, f) != bytes) {{
        std::fprintf(stderr, "cannot read %zu bytes from %s\\n", bytes, path);
        if (f) std::fclose(f);
        return false;
    }}
    std::fclose(f);
    return cudaMemcpy(dst, host.data(), bytes, cudaMemcpyHostToDevice) == cudaSuccess;
}}

// Writes the device buffer `src` (`bytes` bytes) to `path`.
static bool save_output(const char* path, const void* src, size_t bytes)
{{
    std::vector<char> host(bytes);
    if (cudaMemcpy(host.data(), src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
    FILE* f = std::fopen(path, "wb");
    bool ok = f && std::fwrite(host.data(), 1, bytes, f) == bytes;
    if (f) std::fclose(f);
    if (!ok) std::fprintf(stderr, "cannot write %s\\n", path);
    return ok;
}}

int main()
{{
{sizes}
{sm}{allocs}
{fills}
{call}
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
{backs}
{frees}
    std::printf("{kernel}: outputs written\\n");
    return 0;
}}
"""


def compare_outputs(program: HostProgram, before: dict[str, np.ndarray],
                    after: dict[str, np.ndarray]) -> str:
    """"" when every output of ``after`` matches ``before`` within the runner's tolerance for
    it (module doc), else the first difference of each output that differs, in words."""
    problems = []
    for b in program.outputs:
        ref, got = before[b.name], after[b.name]
        miss = compare.unwritten(ref, got, b.dtype)
        if miss is not None:
            problems.append(f"{b.name}[{miss.index}] unwritten (expected {miss.expected!r}); "
                            f"{miss.count} of {miss.total} elements unwritten")
            continue
        bounds = compare.bounds_for(ref, program.problem.tolerance, b.dtype)
        diff = compare.mismatch(ref, got, bounds, b.dtype)
        if diff is not None:
            problems.append(f"{b.name}[{diff.index}] is {diff.actual!r}, expected "
                            f"{diff.expected!r} ({bounds.describe()}); {diff.count} of "
                            f"{diff.total} elements differ")
    return "; ".join(problems)


def tolerance_words(program: HostProgram) -> Optional[str]:
    """The spec's tolerance in words, None for the element types' defaults."""
    t = program.problem.tolerance
    return None if t is None else f"rtol {t.rtol:g}, atol {t.atol:g} (scaled: {t.scaled})"
