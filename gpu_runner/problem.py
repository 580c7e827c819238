"""The runner's input contract: fully resolved kernels and problem instances.

The server turns a harness spec into these (every expression evaluated to numbers); the
runner only allocates, fills, launches, compares and times. All of it converts to and from
plain JSON-compatible dicts with ``to_dict``/``from_dict`` so the same objects can later cross
the HTTP boundary.

Units: lengths in elements, shared memory in bytes, times in microseconds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, Optional, Union

Role = Literal["in", "out", "inout"]

# Element types the runner can allocate, named as numpy names them.
DTYPES = ("float16", "float32", "float64", "int8", "uint8", "int16", "uint16",
          "int32", "uint32", "int64", "uint64", "bfloat16", "float8_e4m3", "float8_e5m2")
# How an input buffer's values are drawn (``gpu_runner.inputs``): ``uniform`` in [low, high);
# ``normal`` with mean ``params[0]`` and standard deviation ``params[1]``; ``csr``: row pointers
# rising from 0 to ``params[0]`` (the non-zero count); ``sorted``: uniform values in
# [low, high) in ascending order; ``permutation``: each of 0..length-1 once; ``unique``:
# distinct integers in [low, high).
FILLS = ("uniform", "normal", "csr", "sorted", "permutation", "unique")


@dataclass(frozen=True)
class Buffer:
    """A pointer argument: a device buffer of ``length`` elements of ``dtype``.

    Inputs are filled with uniform random values in ``[low, high)`` (integers: ``low`` to
    ``high - 1``). ``role`` says whether the kernel reads it (``in``), writes it (``out``) or
    both (``inout``).
    """

    name: str
    dtype: str
    length: int
    role: Role
    low: float = -1.0
    high: float = 1.0
    kind: Literal["buffer"] = "buffer"
    fill: str = "uniform"  # one of FILLS
    params: tuple[float, ...] = ()  # the fill's parameters (normal: mean, std; csr: nnz)

    @property
    def itemsize(self) -> int:
        return {"float16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1,
                "bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1,
                "float32": 4, "int32": 4, "uint32": 4}.get(self.dtype, 8)

    @property
    def nbytes(self) -> int:
        return self.length * self.itemsize


@dataclass(frozen=True)
class Scalar:
    """A by-value argument of ``dtype`` with a fixed ``value``."""

    name: str
    dtype: str
    value: Union[int, float]
    kind: Literal["scalar"] = "scalar"


Argument = Union[Buffer, Scalar]


@dataclass(frozen=True)
class Launch:
    """A launch configuration: grid and block in (x, y, z), dynamic shared memory in bytes."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int = 0

    @property
    def threads_per_block(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass(frozen=True)
class CapturedData:
    """Explicit values for a case, from a real launch (see ``gpu_runner.captured``): an
    ``.npz`` of ``NAME.before``/``NAME.after`` arrays, inline as base64 (``payload``) or as a
    file on the runner's machine (``path``), with the sha256 of its bytes."""

    sha256: str
    payload: str = ""
    path: str = ""


@dataclass(frozen=True)
class Case:
    """One problem instance: the kernel's arguments in parameter order.

    ``label`` names the size set (``"nominal"`` for the timed sizes, ``"ragged"`` for the
    sizes chosen not to be multiples of the block size). ``bytes_moved`` is the fewest bytes
    the computation must move through device memory (the spec's ``reads``/``writes`` when
    given, else each input read once and each output written once); ``flops`` the
    floating-point operations it must do, if known.
    ``captured``: the case's inputs and expected results come from a real launch instead of
    random values (``gpu_runner.captured``); it is run for the first seed only.
    """

    label: str
    args: tuple[Argument, ...]
    bytes_moved: int = 0
    flops: int = 0
    captured: Optional[CapturedData] = None


@dataclass(frozen=True)
class Variant:
    """A kernel to run: its full translation unit, the kernel's name and one launch per case.

    ``name`` is the kernel's C++ name (``saxpy``, ``ops::saxpy``, ``scale<float>``); the
    runner finds its mangled symbol in the compiled cubin. ``launches[i]`` goes with
    ``Problem.cases[i]``.

    ``files``: the project headers the source needs (relative path -> text), written next to
    the source in the compile's private folder; ``options`` name their folders as relative
    ``-I`` options (``-Iinclude``). Bounded by ``gpu_runner.includes.check_file_names``.

    ``source_path``: where the source is written in that folder (``kernel.cu``, or the kernel
    file's own path in its project, ``CUDA/GEMM/gemm.cu``, beside ``files`` named from the same
    root, so its ``#include "../../common/x.h"`` names a sent file: ``gpu_runner.includes``).
    """

    label: str
    source: str
    name: str
    launches: tuple[Launch, ...]
    options: tuple[str, ...] = ()  # extra nvcc options, e.g. ("-use_fast_math",)
    files: dict[str, str] = field(default_factory=dict, hash=False)
    source_path: str = "kernel.cu"


@dataclass(frozen=True)
class Tolerance:
    """Outputs match when ``|cand - ref| <= atol + rtol * |ref|`` elementwise.

    ``atol`` is scaled by the output's scale (max |ref| over the buffer) when ``scaled``.
    """

    rtol: float
    atol: float
    scaled: bool = True


@dataclass(frozen=True)
class Problem:
    """Everything needed to check and time variants of one kernel.

    ``cases[0]`` is the timed (nominal) case. ``seeds`` are the random seeds used for
    verification; each seed draws fresh inputs for every case.
    """

    kernel: str
    cases: tuple[Case, ...]
    seeds: tuple[int, ...] = (1, 2, 3)
    tolerance: Tolerance | None = None  # None: derived from each output's element type
    atomics: bool = False  # outputs may differ between runs within tolerance

    @property
    def timed_case(self) -> Case:
        return self.cases[0]


def _tuple3(v) -> tuple[int, int, int]:
    v = tuple(int(x) for x in v)
    return (v + (1, 1, 1))[:3]  # type: ignore[return-value]


def argument_from_dict(d: dict) -> Argument:
    if d.get("kind") == "scalar":
        return Scalar(name=d["name"], dtype=d["dtype"], value=d["value"])
    return Buffer(name=d["name"], dtype=d["dtype"], length=int(d["length"]), role=d["role"],
                  low=float(d.get("low", -1.0)), high=float(d.get("high", 1.0)),
                  fill=str(d.get("fill", "uniform")),
                  params=tuple(float(x) for x in d.get("params", ())))


def launch_from_dict(d: dict) -> Launch:
    return Launch(grid=_tuple3(d["grid"]), block=_tuple3(d["block"]),
                  shared_bytes=int(d.get("shared_bytes", 0)))


def case_from_dict(d: dict) -> Case:
    cap = d.get("captured")
    return Case(label=d["label"], args=tuple(argument_from_dict(a) for a in d["args"]),
                bytes_moved=int(d.get("bytes_moved", 0)), flops=int(d.get("flops", 0)),
                captured=CapturedData(**cap) if cap else None)


def variant_from_dict(d: dict) -> Variant:
    return Variant(label=d["label"], source=d["source"], name=d["name"],
                   launches=tuple(launch_from_dict(x) for x in d["launches"]),
                   options=tuple(d.get("options", ())), files=dict(d.get("files") or {}),
                   source_path=str(d.get("source_path") or "kernel.cu"))


def problem_from_dict(d: dict) -> Problem:
    tol = d.get("tolerance")
    return Problem(kernel=d["kernel"], cases=tuple(case_from_dict(c) for c in d["cases"]),
                   seeds=tuple(d.get("seeds", (1, 2, 3))),
                   tolerance=Tolerance(**tol) if tol else None,
                   atomics=bool(d.get("atomics", False)))


def to_dict(obj) -> dict:
    """Any of the data classes above as a JSON-compatible dict."""
    return asdict(obj)
