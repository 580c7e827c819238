"""Running a CUDA kernel's source on the CPU with real threads per block, for kernels whose
threads cooperate (``__syncthreads``, ``__shared__``, warp shuffles).

``host_sim`` runs threads one after another, which cannot run a kernel with a barrier. Here
every block of the grid runs as one OS thread per CUDA thread (blocks one after another):
``__syncthreads()`` is a ``std::barrier`` over the block's threads, ``__shared__`` variables
are function-local statics (one copy, shared by the block's threads; blocks do not overlap
in time), ``threadIdx`` is thread-local, half and bfloat16 elements are emulated
(``cuda_half_types``), and the warp shuffles exchange values through a
per-warp slot array between two barriers over the warp's threads. That checks the data flow
of a cooperative kernel (which thread reads which shared slot after which barrier, which
lane's value a shuffle returns), not its timing or memory model. A shuffle executed by only
some lanes of a warp deadlocks here, as its ``0xffffffff`` mask makes it undefined on a GPU;
``run`` stops such a program after a timeout.

Buffers are passed with 8 guard elements after their length, filled with the poison value
77 like the outputs; the program prints every element, guards included, so an out-of-bounds
write shows as a difference.

``run(..., checked=True)`` builds the program with AddressSanitizer instead and places every
buffer between two poisoned regions of ``CHECKED_PAD`` elements: any read or write of a
global buffer outside its length (guards included), or of a ``__shared__`` array outside its
extent, stops the program, and ``run`` raises ``OutOfRange`` naming the access and the line
of the kernel's source. That is what a kernel launched with another grid than its own must
never do (``tests/test_variant_corpus.py``, the rewrites under the original's launch).
"""

from __future__ import annotations

import functools
import hashlib
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import pytest

from cudalens.source.parser import parse_source
from cudalens.spec import expr as spec_expr
from cudalens.spec.expr import Dim3
from cudalens.spec.model import BufferDecl, KernelSpec, LaunchDecl, ScalarDecl
from cudalens.spec.resolve import resolve_launch
from cuda_half_types import HALF_TYPES
from cuda_vector_types import VECTOR_TYPES

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found on PATH")

GUARD = 8
CHECKED_PAD = 1 << 16  # poisoned elements before and after each buffer in checked mode
DYNAMIC_SHARED_BYTES = 49152  # what an extern __shared__ array gets

_C_TYPES = {"float": "float", "double": "double", "int": "int", "unsigned": "unsigned int",
            "size_t": "size_t", "int32": "int", "uint32": "unsigned int", "int64": "long long",
            "uint64": "unsigned long long", "long": "long", "float32": "float",
            "float64": "double", "uint8": "unsigned char", "int8": "signed char",
            "half": "__half", "float16": "__half", "bfloat16": "__nv_bfloat16",
            "bf16": "__nv_bfloat16"}
_FORMATS = {"float": "f", "double": "d"}
_FLOATS = ("float", "double", "__half", "__nv_bfloat16")

_HEADERS = """
#include <algorithm>
#include <barrier>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
"""
_HEADER_NAME = "cudalens_block_sim.h"
_FLAGS = ["-std=c++20", "-O0", "-pthread", "-w"]

_PRELUDE = f'#include "{_HEADER_NAME}"\n' + r"""
struct host_dim3 { unsigned int x = 1, y = 1, z = 1; };
static thread_local host_dim3 threadIdx;
static host_dim3 blockIdx, blockDim, gridDim;
static const int warpSize = 32;
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __constant__
""" + VECTOR_TYPES + HALF_TYPES + r"""
namespace sim {
std::barrier<>* block_barrier;
std::vector<std::unique_ptr<std::barrier<>>> warp_barriers;
unsigned long long slots[32][32];
std::mutex atomic_mutex;
inline unsigned linear() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
template <typename T> T exchange(T v, unsigned src) {
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes");
    const unsigned t = linear(), w = t / 32, lane = t % 32;
    std::memcpy(&slots[w][lane], &v, sizeof(T));
    warp_barriers[w]->arrive_and_wait();
    T out;
    std::memcpy(&out, &slots[w][src % 32], sizeof(T));
    warp_barriers[w]->arrive_and_wait();
    return out;
}
}  // namespace sim
inline void __syncthreads() { sim::block_barrier->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xffffffffu) { sim::warp_barriers[sim::linear() / 32]->arrive_and_wait(); }
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    const unsigned lane = sim::linear() % 32;
    return sim::exchange(v, (lane % width) + delta < (unsigned)width ? lane + delta : lane);
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
    const unsigned lane = sim::linear() % 32;
    return sim::exchange(v, (lane % width) >= delta ? lane - delta : lane);
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
    const unsigned lane = sim::linear() % 32, src = lane ^ (unsigned)mask;
    return sim::exchange(v, src / width == lane / width ? src : lane);
}
template <typename T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
    const unsigned lane = sim::linear() % 32;
    return sim::exchange(v, lane / width * width + (unsigned)src % width);
}
template <typename T, typename U> T atomicAdd(T* p, U v) {  // CUDA converts v to *p's type
    std::lock_guard<std::mutex> g(sim::atomic_mutex); T old = *p; *p = old + (T)v; return old;
}
template <typename T> T atomicMax(T* p, T v) {
    std::lock_guard<std::mutex> g(sim::atomic_mutex); T old = *p; *p = std::max(old, v); return old;
}
template <typename T> T atomicMin(T* p, T v) {
    std::lock_guard<std::mutex> g(sim::atomic_mutex); T old = *p; *p = std::min(old, v); return old;
}
template <typename A, typename B> auto min(A a, B b) { return a < b ? a : b; }
template <typename A, typename B> auto max(A a, B b) { return a < b ? b : a; }
template <typename T> T __ldg(const T* p) { return *p; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
"""


# A buffer: ``size`` elements (length plus guards) with ``data()``; the checked form keeps
# CHECKED_PAD poisoned elements on both sides and poisons its guards while the kernel runs
# (``unpoison_all`` before the dump).
_PLAIN_BUFFERS = r"""
namespace sim {
inline void unpoison_all() {}
template <typename T> struct Buffer {
    std::vector<T> v; long long shift;
    Buffer(long long size, long long, long long shift_ = 0) : v(size + shift_), shift(shift_) {}
    T& operator[](long long k) { return v[shift + k]; }
    T* data() { return v.data() + shift; }
    void arm() {}
};
}  // namespace sim
"""
_CHECKED_BUFFERS = r"""
#include <sanitizer/asan_interface.h>
namespace sim {
std::vector<std::pair<void*, size_t>> poisoned;
inline void unpoison_all() {
    for (auto& r : poisoned) ASAN_UNPOISON_MEMORY_REGION(r.first, r.second);
}
template <typename T> struct Buffer {
    std::vector<T> v; long long size, length, shift;
    Buffer(long long size_, long long length_, long long shift_ = 0)
        : v(size_ + shift_ + 2 * """ + str(CHECKED_PAD) + r"""), size(size_), length(length_),
          shift(shift_) {}
    T& operator[](long long k) { return v[""" + str(CHECKED_PAD) + r""" + shift + k]; }
    T* data() {  // called once, for the kernel's argument: poison all but [0, length)
        T* base = v.data(); T* first = base + """ + str(CHECKED_PAD) + r""" + shift;
        poisoned.emplace_back(base, (first - base) * sizeof(T));
        ASAN_POISON_MEMORY_REGION(base, (first - base) * sizeof(T));
        T* end = first + length; T* stop = base + v.size();
        poisoned.emplace_back(end, (stop - end) * sizeof(T));
        ASAN_POISON_MEMORY_REGION(end, (stop - end) * sizeof(T));
        return first;
    }
};
}  // namespace sim
"""

_EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+([A-Za-z_][\w:<>\s]*?)\s+"
                            r"([A-Za-z_]\w*)\s*\[\s*\]")


def _host_text(source: str, checked: bool = False) -> str:
    """``source`` without ``#include`` lines (the prelude has what kernels use), and with
    each ``extern __shared__ T name[];`` made a static array of ``DYNAMIC_SHARED_BYTES``
    (``checked``: a pointer to ``sim::dyn_shared``, a heap block of the launch's dynamic
    shared bytes, so an access past them is out of range)."""
    text = "\n".join("" if line.lstrip().startswith("#include") else line
                     for line in source.split("\n"))
    if checked:
        return _EXTERN_SHARED.sub(lambda m: f"static {m.group(1)}* const {m.group(2)} = "
                                            f"({m.group(1)}*)sim::dyn_shared", text)
    return _EXTERN_SHARED.sub(lambda m: f"static {m.group(1)} {m.group(2)}"
                                        f"[{DYNAMIC_SHARED_BYTES} / sizeof({m.group(1)})]", text)


class OutOfRange(AssertionError):
    """A checked run (``run(..., checked=True)``) read or wrote memory out of range: the
    message has AddressSanitizer's first lines and the kernel source line (``kernel.cu:N``)."""


def program(source: str, kernel: str, spec: KernelSpec, checked: bool = False,
            shared_bytes: int = DYNAMIC_SHARED_BYTES,
            shift: Optional[Mapping[str, int]] = None) -> str:
    """A host program running ``kernel`` of ``source`` (``checked``: buffers between
    poisoned pads for AddressSanitizer, and ``shared_bytes`` of dynamic shared memory;
    ``shift``: buffer name -> elements its base pointer is moved past the allocation's
    start, as a pointer offset into an allocation is, so a 16-byte aligned start is not
    assumed).

    argv: ``GX GY GZ BX BY BZ`` then, per kernel parameter in order, a buffer's ``LENGTH LOW
    HIGH`` or a scalar's value. Inputs hold a fixed pattern (integers drawn from [LOW, HIGH)),
    outputs and guards the poison 77; every element of every buffer is printed as
    ``name index bits`` after the launch.
    """
    model = parse_source(source, "sim.cu").kernel(kernel)
    tmpl = {}
    for p in model.parameters:
        if p.type in model.template_parameters and p.type not in tmpl:
            tmpl[p.type] = _C_TYPES[spec.param(p.name).type]
    callee = kernel + (f"<{', '.join(tmpl[t] for t in model.template_parameters)}>"
                       if tmpl else "")
    lines = ["int main(int argc, char** argv) {", "    int a = 1;",
             "    gridDim.x = atoi(argv[a++]); gridDim.y = atoi(argv[a++]); "
             "gridDim.z = atoi(argv[a++]);",
             "    blockDim.x = atoi(argv[a++]); blockDim.y = atoi(argv[a++]); "
             "blockDim.z = atoi(argv[a++]);"]
    args, dumps = [], []
    for j, p in enumerate(model.parameters):
        decl = spec.param(p.name)
        if isinstance(decl, BufferDecl):
            ctype = _C_TYPES[decl.type]
            n = f"len_{p.name}"
            lines += [
                f"    const long long {n} = atoll(argv[a++]); const long long lo_{p.name} = "
                f"atoll(argv[a++]); const long long hi_{p.name} = atoll(argv[a++]);",
                f"    sim::Buffer<{ctype}> buf_{p.name}({n} + {GUARD}, {n}, "
                f"{int((shift or {}).get(p.name, 0))});",
                f"    for (long long k = 0; k < {n} + {GUARD}; ++k) buf_{p.name}[k] = "
                + (f"({ctype})(((k * 37 + {j} * 11) % 101) / 50.0 - 1.0);"
                   if ctype in _FLOATS else
                   f"({ctype})(lo_{p.name} + (k * 37 + {j}) % (hi_{p.name} - lo_{p.name}));"),
                f"    for (long long k = {n}; k < {n} + {GUARD}; ++k) buf_{p.name}[k] = ({ctype})77;",
            ]
            if decl.role == "out":
                lines.append(f"    for (long long k = 0; k < {n}; ++k) buf_{p.name}[k] = ({ctype})77;")
            args.append(f"ptr_{p.name}")
            dumps.append((p.name, ctype))
        else:
            assert isinstance(decl, ScalarDecl)
            ctype = _C_TYPES.get(decl.type, decl.type)
            conv = "atof" if ctype in _FLOATS else "atoll"
            lines.append(f"    const {ctype} arg_{p.name} = ({ctype}){conv}(argv[a++]);")
            args.append(f"arg_{p.name}")
    lines += [f"    auto* const ptr_{name} = buf_{name}.data();" for name, _ in dumps]
    lines += [
        "    const unsigned nthreads = blockDim.x * blockDim.y * blockDim.z;",
        "    for (unsigned bz = 0; bz < gridDim.z; ++bz)",
        "    for (unsigned by = 0; by < gridDim.y; ++by)",
        "    for (unsigned bx = 0; bx < gridDim.x; ++bx) {",
        "        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;",
        "        std::barrier<> bar(nthreads);",
        "        sim::block_barrier = &bar;",
        "        sim::warp_barriers.clear();",
        "        for (unsigned w = 0; w * 32 < nthreads; ++w)",
        "            sim::warp_barriers.emplace_back(new std::barrier<>(std::min(32u, nthreads - w * 32)));",
        "        std::vector<std::thread> threads;",
        "        for (unsigned t = 0; t < nthreads; ++t)",
        "            threads.emplace_back([&, t] {",
        "                threadIdx.x = t % blockDim.x; threadIdx.y = t / blockDim.x % blockDim.y;",
        "                threadIdx.z = t / (blockDim.x * blockDim.y);",
        f"                {callee}({', '.join(args)});",
        "            });",
        "        for (auto& th : threads) th.join();",
        "    }",
    ]
    lines.append("    sim::unpoison_all();")
    for name, ctype in dumps:
        lines += [f"    for (long long k = 0; k < len_{name} + {GUARD}; ++k) {{",
                  f"        unsigned long long bits = 0; memcpy(&bits, &buf_{name}[k], sizeof({ctype}));",
                  f"        printf(\"{name} %lld %llx\\n\", k, bits);",
                  "    }"]
    lines += ["    return 0;", "}"]
    buffers = _CHECKED_BUFFERS if checked else _PLAIN_BUFFERS
    if checked:
        buffers += ("namespace sim { unsigned char* const dyn_shared = (unsigned char*)"
                    f"malloc({int(shared_bytes)}); }}\n")
    return (_PRELUDE + buffers + '#line 1 "kernel.cu"\n' + _host_text(source, checked) + "\n"
            + '#line 1 "sim_main.cpp"\n' + "\n".join(lines) + "\n")


_CHECKED_FLAGS = ["-g", "-fsanitize=address", "-fno-omit-frame-pointer"]


@functools.lru_cache(maxsize=1)
def _session_dir() -> Path:
    """One folder for this process's programs, removed when the process exits (before, each
    build made its own folder under /tmp and none was removed)."""
    holder = tempfile.TemporaryDirectory(prefix="cudalens-blocksim-")
    _KEEP.append(holder)
    return Path(holder.name)


_KEEP: list = []  # the TemporaryDirectory objects: their finalizers remove the folders at exit


@functools.lru_cache(maxsize=2)
def _header_dir(checked: bool = False) -> Path:
    """A directory holding the standard headers the programs use, precompiled once per test
    session for the plain or the checked flags (g++ then skips parsing them: about 1 s less
    per program). Where precompiling fails the plain header is used."""
    tmp = Path(tempfile.mkdtemp(prefix="pch-", dir=_session_dir()))
    header = tmp / _HEADER_NAME
    header.write_text(_HEADERS)
    extra = _CHECKED_FLAGS if checked else []
    subprocess.run(["g++", *_FLAGS, *extra, "-x", "c++-header", str(header), "-o",
                    str(header) + ".gch"], capture_output=True, text=True, timeout=120)
    return tmp


_ALIGN_FLAGS = ["-fsanitize=alignment", "-fno-sanitize-recover=alignment"]


@functools.lru_cache(maxsize=64)
def build(text: str, checked: bool = False, align: bool = False) -> str:
    """Compiles a ``program`` with g++ (C++20, threads; ``checked``: with AddressSanitizer;
    ``align``: with UndefinedBehaviorSanitizer's alignment check, so a vector access at an
    address its type's alignment does not divide stops the program); returns the
    executable's path.

    Raises AssertionError with g++'s diagnostics when it does not compile.
    """
    digest = hashlib.sha1(text.encode()).hexdigest()[:16]
    tmp = Path(tempfile.mkdtemp(dir=_session_dir()))
    src, exe = tmp / f"{digest}.cpp", tmp / digest
    src.write_text(text)
    flags = [*_FLAGS, *(_CHECKED_FLAGS if checked else []), *(_ALIGN_FLAGS if align else []),
             "-I", str(_header_dir(checked))]
    proc = subprocess.run(["g++", *flags, "-o", str(exe), str(src)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"g++ failed on {src}:\n{proc.stderr[:3000]}"
    return str(exe)


@dataclass(frozen=True)
class Result:
    """Every buffer after the launch: name -> values (guards included), as numbers."""

    buffers: dict[str, list]


def _decode(bits: int, ctype: str):
    if ctype == "float":
        return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]
    if ctype == "double":
        return struct.unpack("<d", struct.pack("<Q", bits))[0]
    if ctype == "__half":
        return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    if ctype == "__nv_bfloat16":
        return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]
    return bits


def run(source: str, kernel: str, spec: KernelSpec, sizes: Mapping[str, int],
        launch: Optional[LaunchDecl] = None, timeout: float = 60,
        checked: bool = False, shift: Optional[Mapping[str, int]] = None) -> Result:
    """Runs ``kernel`` with the spec's buffers and scalars evaluated at ``sizes`` and the
    launch ``launch`` (default: the spec's), resolved as the runner resolves it (``sm_count``
    132); ``shift``: buffer name -> elements its pointer starts past the allocation's
    (16-byte aligned) start (``program``), the program then built with the alignment check
    (``build``). Raises AssertionError when the program fails or
    hangs; with ``checked``, ``OutOfRange`` when it accesses memory out of range (module
    doc)."""
    # the spec's constants (its file's #defines) no size shadows, as sizes_for gives them
    sizes = {**{n: v for n, v in spec.constants if n not in {s.name for s in spec.sizes}},
             **sizes}
    env: dict[str, object] = dict(sizes)
    resolved = resolve_launch(launch or spec.launch, sizes, 132)
    argv = [str(v) for v in resolved.grid + resolved.block]
    own = resolve_launch(spec.launch, sizes, 132).block  # buffers are sized with the spec's block
    model = parse_source(source, "sim.cu").kernel(kernel)
    ctypes = {}
    for p in model.parameters:
        decl = spec.param(p.name)
        if isinstance(decl, BufferDecl):
            length = spec_expr.evaluate(decl.length, {**env, "block": Dim3(*own)})
            lo = spec_expr.evaluate(decl.low, env) if decl.low else 0
            hi = spec_expr.evaluate(decl.high, env) if decl.high else 100
            argv += [str(int(length)), str(int(lo)), str(int(hi))]
            ctypes[p.name] = _C_TYPES[decl.type]
        else:
            argv.append(repr(spec_expr.evaluate(decl.expr, env)))
    exe = build(program(source, kernel, spec, checked, resolved.shared_bytes, shift), checked,
                bool(shift))
    env_vars = None
    if checked:
        import os
        env_vars = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0:"
                    "exitcode=86:symbolize=1:print_summary=1"}
    try:
        proc = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=timeout,
                              env=env_vars)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{kernel} did not finish in {timeout} s (a barrier or shuffle "
                             f"that not every thread reaches?)") from None
    if checked and proc.returncode != 0 and "AddressSanitizer" in proc.stderr:
        raise OutOfRange(f"{kernel} {argv}: {_asan_summary(proc.stderr)}")
    assert proc.returncode == 0, f"{kernel} {argv}: exit {proc.returncode}: {proc.stderr[:2000]}"
    out: dict[str, list] = {name: [] for name in ctypes}
    for line in proc.stdout.splitlines():
        name, _, bits = line.split()
        out[name].append(_decode(int(bits, 16), ctypes[name]))
    return Result(out)


def _asan_summary(stderr: str) -> str:
    """AddressSanitizer's error line, the access (READ/WRITE of size N) and the first frame
    in the kernel's source (``kernel.cu:LINE``)."""
    lines = stderr.splitlines()
    error = next((l for l in lines if "ERROR: AddressSanitizer" in l), "")
    access = next((l for l in lines if l.startswith(("READ of", "WRITE of"))), "")
    frame = next((l.strip() for l in lines if "kernel.cu:" in l), "")
    return " | ".join(x for x in (error.split("ERROR: ")[-1], access, frame) if x)
