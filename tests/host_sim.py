"""Running a 1D CUDA kernel's source on the CPU, one simulated thread after another.

For checking source rewrites without a GPU: the file is compiled as host C++ with
``__global__`` and friends defined away and ``threadIdx``/``blockIdx``/``blockDim``/
``gridDim`` as globals, then every thread of the grid is run in turn. That checks which
elements each thread touches (index arithmetic, loop bounds, tails, alignment branches),
not anything about concurrency. Only for kernels whose threads are independent.

Functions that launch kernels (``<<<...>>>``) and ``#include`` lines are dropped from the file.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_cuda

from cudalens.source.parser import parse_source
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import BufferDecl, KernelSpec, ScalarDecl
from cuda_half_types import HALF_TYPES
from cuda_vector_types import VECTOR_TYPES

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found on PATH")

_PRELUDE = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <cstddef>
struct host_dim3 { unsigned int x = 1, y = 1, z = 1; };
static host_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
""" + VECTOR_TYPES + HALF_TYPES

_C_TYPES = {"float": "float", "double": "double", "int": "int", "unsigned": "unsigned int",
            "size_t": "size_t", "int32": "int", "uint32": "unsigned int", "int64": "long long",
            "uint64": "unsigned long long", "long": "long", "half": "__half",
            "float16": "__half", "bfloat16": "__nv_bfloat16", "bf16": "__nv_bfloat16"}
_FLOATS = ("float", "double", "__half", "__nv_bfloat16")


def _host_text(source: str) -> str:
    """``source`` without ``#include`` lines and without functions that launch kernels."""
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))
    data = source.encode()
    root = parser.parse(data).root_node
    cuts = []
    for node in root.children:
        text = data[node.start_byte:node.end_byte]
        if node.type == "preproc_include" or (node.type == "function_definition" and b"<<<" in text):
            cuts.append((node.start_byte, node.end_byte))
    out, pos = [], 0
    for s, e in cuts:
        out.append(data[pos:s])
        pos = e
    out.append(data[pos:])
    return b"".join(out).decode()


def driver(source: str, kernel: str, spec: KernelSpec, size: str) -> str:
    """A host program running ``kernel`` of ``source``.

    The program reads ``N MISALIGN GRID BLOCK`` from argv: size ``size`` is N, every buffer has
    ``N + 8`` elements and is passed to the kernel at a 64-byte aligned start, or one element
    past it when bit j of ``MISALIGN`` is set for the j-th pointer parameter; every thread of a
    1D ``GRID x BLOCK`` launch runs. Inputs hold a fixed pattern, outputs a
    poison value; the program prints every element of every buffer as hex bits.
    """
    model = parse_source(source, "driver.cu").kernel(kernel)
    tmpl = {}
    for p in model.parameters:
        if p.type in model.template_parameters and p.type not in tmpl:
            tmpl[p.type] = _C_TYPES[spec.param(p.name).type]
    callee = kernel + (f"<{', '.join(tmpl[t] for t in model.template_parameters)}>" if tmpl else "")
    env = {s.name: spec_expr.evaluate(s.expr, {}) for s in spec.sizes}
    lines = ["int main(int argc, char** argv) {",
             "    if (argc != 5) return 2;",
             "    const long long N = atoll(argv[1]); const int MISALIGN = atoi(argv[2]);",
             "    const unsigned GRID = (unsigned)atoi(argv[3]), BLOCK = (unsigned)atoi(argv[4]);"]
    args, dumps = [], []
    for p in model.parameters:
        decl = spec.param(p.name)
        if isinstance(decl, BufferDecl):
            ctype = _C_TYPES[decl.type]
            lines += [
                f"    {ctype}* buf_{p.name} = ({ctype}*)aligned_alloc(64, ((N + 8) * sizeof({ctype}) + 63) / 64 * 64);",
                f"    for (long long k = 0; k < N + 8; ++k) buf_{p.name}[k] = "
                + (f"({ctype})(((k * 37 + {len(args)} * 11) % 101) / 50.0 - 1.0);"
                   if ctype in _FLOATS else f"({ctype})((k * 37 + {len(args)}) % 201);"),
            ]
            if decl.role == "out":
                lines.append(f"    for (long long k = 0; k < N + 8; ++k) buf_{p.name}[k] = ({ctype})77;")
            args.append(f"buf_{p.name} + ((MISALIGN >> {len(dumps)}) & 1)")
            dumps.append((p.name, ctype))
        else:
            assert isinstance(decl, ScalarDecl)
            ctype = _C_TYPES.get(decl.type, decl.type)
            if decl.expr.strip() == size:
                args.append(f"({ctype})N")
            else:
                args.append(f"({ctype})({spec_expr.evaluate(decl.expr, env)!r})")
    lines += ["    gridDim.x = GRID; blockDim.x = BLOCK;",
              "    for (unsigned b = 0; b < GRID; ++b)",
              "        for (unsigned t = 0; t < BLOCK; ++t) {",
              "            blockIdx.x = b; threadIdx.x = t;",
              f"            {callee}({', '.join(args)});",
              "        }"]
    for name, ctype in dumps:
        lines += ["    for (long long k = 0; k < N + 8; ++k) {",
                  f"        unsigned long long bits = 0; memcpy(&bits, &buf_{name}[k], sizeof({ctype}));",
                  f"        printf(\"{name} %lld %llx\\n\", k, bits);",
                  "    }"]
    lines += ["    return 0;", "}"]
    return _PRELUDE + _host_text(source) + "\n" + "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=64)
def build(program: str) -> str:
    """Compiles ``program`` with g++; returns the executable's path (kept for the session).

    UBSan's alignment check is on, so an access through a pointer not aligned for its type
    (a 16-byte vector read from a misaligned address) aborts the program; x86 would
    otherwise load the right values and hide the bug.

    Raises AssertionError with g++'s diagnostics when it does not compile.
    """
    digest = hashlib.sha1(program.encode()).hexdigest()[:16]
    tmp = Path(tempfile.mkdtemp(prefix="cudalens-host-"))
    src, exe = tmp / f"{digest}.cpp", tmp / digest
    src.write_text(program)
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-ffp-contract=off", "-w",
                           "-fsanitize=alignment", "-fno-sanitize-recover=all", "-o", str(exe),
                           str(src)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"g++ failed on {src}:\n{proc.stderr[:3000]}"
    return str(exe)


def run(exe: str, n: int, misalign: int, grid: int, block: int) -> str:
    """The program's output for one launch (see ``driver``).

    Raises AssertionError with the program's stderr (UBSan's report) when it fails.
    """
    proc = subprocess.run([exe, str(n), str(misalign), str(grid), str(block)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"n={n} misalign={misalign:b}: {proc.stderr[:2000]}"
    return proc.stdout
