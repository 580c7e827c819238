"""The runner's control flow on a fake CUDA driver (no GPU needed; nvcc needed).

``FakeDriver`` stands in for ``pycuda.driver``: device memory is host ``bytearray``s at fake
addresses (so guard regions, poisoning, restoring and read-back run for real), kernels are
numpy emulations chosen by the source they were compiled from (the sources are the GPU test
kernels in ``tests/data/runner``, compiled by the real nvcc so symbol lookup is real), a kernel
that touches an address outside every allocation leaves a sticky error that, as on a GPU, makes
every later CUDA call in the process fail (new contexts included), and CUDA events read a
simulated clock that each kernel advances by its own duration.
What this checks is the runner's orchestration: verdicts, fault recovery, interleaved timing,
the post-timing check and the assembly of the ``Evaluation``. The same scenarios run on a real
GPU in ``test_runner_gpu.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from gpu_runner.problem import Buffer, Case, Launch, Problem, Scalar, Variant
from gpu_runner.events import as_text  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

DATA = Path(__file__).parent / "data" / "runner"


# ---------------------------------------------------------------------------------------------
# The fake driver


class FakeError(Exception):
    pass


class FakeLaunchError(FakeError):
    pass


class FakeCompileError(FakeError):
    def __init__(self, msg, command_line, stdout=None, stderr=None):
        super().__init__(msg)
        self.msg, self.command_line, self.stdout, self.stderr = msg, command_line, stdout, stderr


class IllegalAddress(Exception):
    pass


class _Attrs:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeDriver:
    """The subset of ``pycuda.driver`` the runner uses."""

    Error = FakeError
    LaunchError = FakeLaunchError
    CompileError = FakeCompileError
    device_attribute = _Attrs(MULTIPROCESSOR_COUNT="sm", L2_CACHE_SIZE="l2",
                              MAX_THREADS_PER_BLOCK="mtpb", MAX_SHARED_MEMORY_PER_BLOCK="smem",
                              MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="smem_optin",
                              CLOCK_RATE="clock", MEMORY_CLOCK_RATE="memclock")
    function_attribute = _Attrs(NUM_REGS="regs", SHARED_SIZE_BYTES="sshared",
                                LOCAL_SIZE_BYTES="local", MAX_THREADS_PER_BLOCK="fmtpb",
                                MAX_DYNAMIC_SHARED_SIZE_BYTES="dyn")
    COPY_GBPS = 4000.0
    DEVICE_ATTRS = {"sm": 132, "l2": 1 << 20, "mtpb": 1024, "smem": 48 << 10,
                    "smem_optin": 227 << 10, "clock": 1_980_000, "memclock": 3_201_000}

    def __init__(self, sources: dict[str, object]):
        self.emulations = sources  # source text -> emulation
        self.cubins: dict[bytes, str] = {}  # cubin -> source
        self.mem: dict[int, bytearray] = {}
        self.next_addr = 1 << 32
        self.clock_ms = 0.0
        self.stack: list[FakeContext] = []
        self.sticky = ""  # a fault's error: every later call in the process fails
        self.contexts_made = 0
        self.launches: list[str] = []  # emulation names in launch order
        self.flushes = 0
        drv = self

        class Device:
            @staticmethod
            def count():
                return 1

            def __init__(self, i):
                self.i = i

            def name(self):
                return "Fake H200"

            def compute_capability(self):
                return (9, 0)

            def pci_bus_id(self):
                return "0000:00:05.0"

            def get_attribute(self, a):
                return drv.DEVICE_ATTRS[a]

            def make_context(self):
                if drv.sticky:
                    raise FakeError(f"cuCtxCreate failed: {drv.sticky}")
                drv.contexts_made += 1
                ctx = FakeContext(drv)
                drv.stack.append(ctx)
                return ctx

        class Context:
            @staticmethod
            def pop():
                drv.stack.pop()

            @staticmethod
            def synchronize():
                drv.check()

        class Stream:
            def synchronize(self):
                drv.check()

        class Event:
            def __init__(self):
                self.t = None
                self.hung = False

            def record(self, stream=None):
                self.t = drv.clock_ms
                self.hung = drv.current().hung

            def query(self):
                drv.check()
                return not self.hung

            def synchronize(self):
                drv.check()

            def time_since(self, start):
                return self.t - start.t

        self.Device, self.Context, self.Stream, self.Event = Device, Context, Stream, Event

    # -- context state --
    def current(self) -> "FakeContext":
        return self.stack[-1]

    def check(self):
        if self.sticky:
            raise FakeLaunchError(self.sticky)

    # -- memory --
    def init(self):
        pass

    def get_driver_version(self):
        return 13000

    def mem_get_info(self):
        return (64 << 20, 80 << 30)

    def mem_alloc(self, n):
        self.check()
        base = self.next_addr
        self.next_addr += (n + (1 << 24)) // 4096 * 4096 + 4096
        self.mem[base] = bytearray(n)
        return FakeAllocation(self, base)

    def view(self, ptr, nbytes) -> memoryview:
        for base, buf in self.mem.items():
            if base <= ptr and ptr + nbytes <= base + len(buf):
                return memoryview(buf)[ptr - base:ptr - base + nbytes]
        raise IllegalAddress(hex(ptr))

    def array(self, ptr, dtype, count) -> np.ndarray:
        return np.frombuffer(self.view(int(ptr), np.dtype(dtype).itemsize * count), dtype=dtype)

    def _fill(self, ptr, word, count, fmt):
        self.check()
        self.array(int(ptr), fmt, count)[:] = word

    def memset_d8(self, ptr, v, n, stream=None):
        self._fill(ptr, v, n, "<u1")

    memset_d8_async = memset_d8

    def memset_d16_async(self, ptr, v, n, stream=None):
        self._fill(ptr, v, n, "<u2")

    def memset_d32_async(self, ptr, v, n, stream=None):
        self._fill(ptr, v, n, "<u4")

    memset_d32 = memset_d32_async

    def memcpy_htod(self, dst, src):
        self.check()
        self.view(int(dst), src.nbytes)[:] = np.ascontiguousarray(src).view(np.uint8)

    def memcpy_dtoh(self, dst, src):
        self.check()
        dst.view(np.uint8)[:] = np.frombuffer(self.view(int(src), dst.nbytes), np.uint8)

    def memcpy_dtoh_async(self, dst, src, stream=None):
        self.memcpy_dtoh(dst, src)

    def memcpy_dtod_async(self, dst, src, n, stream=None):
        self.check()
        self.view(int(dst), n)[:] = bytes(self.view(int(src), n))
        self.clock_ms += 2 * n / self.COPY_GBPS / 1e6  # bytes read + written at COPY_GBPS

    # -- modules --
    def module_from_buffer(self, cubin):
        source = self.cubins[bytes(cubin)]
        if "cudalens_l2_flush" in source:
            return FakeModule(self, ("l2_flush", l2_flush))
        if "cudalens_copy16" in source:
            return FakeModule(self, None, by_symbol={"cudalens_copy16": copy16,
                                                     "cudalens_mix_add": mix_add,
                                                     "cudalens_mix_read": mix_read})
        if "cudalens_screen_bits" in source:
            return FakeModule(self, None, by_symbol=SCREEN)
        return FakeModule(self, self.emulations[source])


class FakeContext:
    def __init__(self, drv):
        self.drv, self.hung, self.dead = drv, False, False

    def push(self):
        self.drv.stack.append(self)

    def detach(self):
        self.dead = True
        if self in self.drv.stack:
            self.drv.stack.remove(self)


class FakeAllocation:
    def __init__(self, drv, base):
        self.drv, self.base = drv, base

    def __int__(self):
        return self.base

    def free(self):
        self.drv.mem.pop(self.base, None)


class FakeModule:
    def __init__(self, drv, emulation, by_symbol=None):
        self.drv, self.emulation, self.launches = drv, emulation, 0
        self.by_symbol = by_symbol  # symbol -> emulation, for a module of several kernels

    def get_function(self, symbol):
        if self.by_symbol is not None:
            return FakeFunction(FakeModule(self.drv, (symbol, self.by_symbol[symbol])))
        return FakeFunction(self)


class FakeFunction:
    def __init__(self, module):
        self.module = module
        self.attrs = {"regs": 16, "sshared": 0, "local": 0, "fmtpb": 1024}

    def get_attribute(self, a):
        return self.attrs[a]

    def set_attribute(self, a, v):
        self.attrs[a] = v

    def __call__(self, *args, grid, block, shared, stream):
        drv = self.module.drv
        drv.check()
        name, fn = self.module.emulation
        drv.launches.append(name)
        if name == "l2_flush":
            drv.flushes += 1
        threads = grid[0] * block[0]
        try:
            us = fn(drv, self.module, threads, *args)
        except IllegalAddress as e:
            drv.sticky = f"an illegal memory access was encountered ({e})"
            us = 1.0
        if us is None:  # hangs
            drv.current().hung = True
            us = 0.0
        self.module.launches += 1
        drv.clock_ms += us / 1000.0


def fake_compile(drv: FakeDriver):
    def compile(source, no_extern_c=False, arch=None, options=None, cache_dir=None):
        assert no_extern_c and arch == "sm_90"
        with tempfile.TemporaryDirectory() as d:
            Path(d, "kernel.cu").write_text(source)
            cmd = ["nvcc", "--cubin", *(options or []), "-arch", arch, "kernel.cu"]
            r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
            if r.returncode:
                raise FakeCompileError("nvcc compilation of kernel.cu failed", cmd, r.stdout,
                                       r.stderr)
            cubin = Path(d, "kernel.cubin").read_bytes()
        drv.cubins[cubin] = source
        return cubin
    return compile


# ---------------------------------------------------------------------------------------------
# Emulated kernels: (name, fn(drv, module, threads, *args) -> microseconds or None for a hang)

def _saxpy_args(drv, args, extra=0):
    n, a = int(args[0]), np.float32(args[1])
    x = drv.array(args[2], np.float32, n + extra)
    y = drv.array(args[3], np.float32, n + extra)
    z = drv.array(args[4], np.float32, n + extra)
    return n, a, x, y, z


def saxpy(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    m = min(n, threads)
    z[:m] = a * x[:m] + y[:m]
    return 20.0 + (mod.launches % 3)


def gridstride(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    z[:] = a * x + y
    return 10.0 + (mod.launches % 2) * 0.5


def half(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    z[:n // 2] = a * x[:n // 2] + y[:n // 2]
    return 10.0


def zeros(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    z[:] = 0.0
    return 10.0


def modifies_input(drv, mod, threads, *args):
    saxpy(drv, mod, threads, *args)
    n, a, x, y, z = _saxpy_args(drv, args)
    y[7::1000] = 0.0
    return 10.0


def oob(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args, extra=1)
    m = min(n + 1, threads)  # `if (i <= n)`: one past the end when the grid has that thread
    z[:m] = a * x[:m] + y[:m]
    return 10.0


def full_blocks(drv, mod, threads, *args, block=256):
    n, a, x, y, z = _saxpy_args(drv, args)
    m = n // block * block
    z[:m] = a * x[:m] + y[:m]
    return 10.0


def fault(drv, mod, threads, *args):
    drv.array(int(args[4]) + (4 << 40), np.float32, 1)[0] = 1.0
    return 10.0


def noisy(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    z[:] = a * x + y + np.float32(1e-6) * (mod.launches % 7 + np.arange(n) % 3)
    return 10.0


def stale(drv, mod, threads, *args):
    n, a, x, y, z = _saxpy_args(drv, args)
    z[:] = 0.0 if mod.launches >= 20 else a * x + y
    return 10.0


def hang(drv, mod, threads, *args):
    return None


def l2_flush(drv, mod, threads, data, count, sink):
    drv.array(data, np.int32, 4 * int(count)).sum()  # reads the whole flush buffer
    return 30.0  # outside the timed region: must not show in any timing


def copy16(drv, mod, threads, src, dst, count):
    """gpu_runner.device's 16-byte copy kernel: copies ``count`` int4 and takes the time of
    moving the bytes read plus written at ``FakeDriver.COPY_GBPS``."""
    n = 16 * int(count)
    drv.view(int(dst), n)[:] = bytes(drv.view(int(src), n))
    return 2 * n / drv.COPY_GBPS / 1e3  # microseconds


def mix_add(drv, mod, threads, a, b, c, count):
    """The 2:1 mix kernel: ``count`` float4 read from two buffers, one written; the time of its
    bytes at ``FakeDriver.COPY_GBPS``."""
    n = 16 * int(count)
    drv.view(int(c), n)[:] = bytes(drv.view(int(a), n))  # values do not matter here
    return 3 * n / drv.COPY_GBPS / 1e3


def mix_read(drv, mod, threads, a, out, count):
    """The read-only mix kernel: reads ``count`` float4, writes nothing."""
    return 16 * int(count) / drv.COPY_GBPS / 1e3


# The verification screen's kernels (gpu_runner/screen.py), emulated with numpy.
def _count(drv, out, n):
    drv.array(out, np.uint64, 1)[0] += np.uint64(n)
    return 1.0


def screen_bits(drv, mod, threads, a, b, nbytes, out):
    n = int(nbytes)
    return _count(drv, out, np.count_nonzero(drv.array(a, np.uint8, n) != drv.array(b, np.uint8, n)))


def _screen_float(dtype, poison):
    def emulate(drv, mod, threads, ref, cand, n, atol, rtol, out):
        bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]
        rb, cb = drv.array(ref, bits, int(n)), drv.array(cand, bits, int(n))
        r = drv.array(ref, dtype, int(n)).astype(np.float64)
        c = drv.array(cand, dtype, int(n)).astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (r == c) | ((np.abs(c - r) <= float(atol) + float(rtol) * np.abs(r))
                             & np.isfinite(r) & np.isfinite(c))
        ok |= np.isnan(r) & np.isnan(c)
        return _count(drv, out, np.count_nonzero(((cb == poison) & (rb != poison)) | ~ok))
    return emulate


def _abs_max(dtype):
    def emulate(drv, mod, threads, x, n, out):
        v = drv.array(x, dtype, int(n)).astype(np.float64)
        v = np.abs(v[np.isfinite(v)])
        best = np.float64(v.max() if v.size else 0.0)
        word = drv.array(out, np.uint64, 1)
        word[0] = max(int(word[0]), int(np.array([best]).view(np.uint64)[0]))
        return 1.0
    return emulate


def _unlike_first(dtype):
    def emulate(drv, mod, threads, x, n, out):
        v = drv.array(x, dtype, int(n)).astype(np.float64)
        return _count(drv, out, np.count_nonzero(~((v == v[0]) | (np.isnan(v) & np.isnan(v[0])))))
    return emulate


SCREEN = {"cudalens_screen_bits": screen_bits,
          "cudalens_screen_f16": _screen_float(np.float16, 0x7FFC),
          "cudalens_screen_f32": _screen_float(np.float32, 0x7FFC7FFC),
          "cudalens_screen_f64": _screen_float(np.float64, 0x7FFC7FFC7FFC7FFC),
          "cudalens_absmax_f16": _abs_max(np.float16), "cudalens_absmax_f32": _abs_max(np.float32),
          "cudalens_absmax_f64": _abs_max(np.float64),
          **{f"cudalens_unlike_first_{k}": _unlike_first(t)
             for k, t in (("f16", np.float16), ("f32", np.float32), ("f64", np.float64))}}


EMULATIONS = {
    "saxpy.cu": saxpy, "saxpy_gridstride.cu": gridstride, "saxpy_half.cu": half,
    "saxpy_modifies_input.cu": modifies_input, "saxpy_oob.cu": oob,
    "saxpy_full_blocks.cu": full_blocks, "saxpy_fault.cu": fault, "saxpy_noisy.cu": noisy,
    "saxpy_stale.cu": stale, "spin.cu": hang, "saxpy_syntax_error.cu": saxpy,
    "saxpy_zeros.cu": zeros,
}


@pytest.fixture()
def fake(monkeypatch):
    sources = {(DATA / f).read_text(): (f, fn) for f, fn in EMULATIONS.items()}
    drv = FakeDriver(sources)
    pkg = types.ModuleType("pycuda")
    comp = types.ModuleType("pycuda.compiler")
    comp.compile = fake_compile(drv)
    pkg.driver, pkg.compiler = drv, comp
    monkeypatch.setitem(sys.modules, "pycuda", pkg)
    monkeypatch.setitem(sys.modules, "pycuda.driver", drv)
    monkeypatch.setitem(sys.modules, "pycuda.compiler", comp)
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # NVML absent: fall back to attributes
    return drv


# ---------------------------------------------------------------------------------------------
# Problems

NOMINAL, RAGGED = 4096, 1001


def saxpy_problem(**kw) -> Problem:
    def case(label, n):
        return Case(label, (Scalar("n", "int32", n), Scalar("a", "float32", 2.5),
                            Buffer("x", "float32", n, "in"), Buffer("y", "float32", n, "in"),
                            Buffer("z", "float32", n, "out")), bytes_moved=12 * n, flops=2 * n)
    return Problem("saxpy", (case("nominal", NOMINAL), case("ragged", RAGGED)), **kw)


def variant(file, block=256, grid=None, name="saxpy", label=None) -> Variant:
    launches = tuple(Launch(grid=(grid or -(-n // block), 1, 1), block=(block, 1, 1))
                     for n in (NOMINAL, RAGGED))
    return Variant(label=label or file.removesuffix(".cu"), source=(DATA / file).read_text(),
                   name=name, launches=launches)


def by_label(ev):
    return {c.verdict.variant: c for c in ev.candidates}


# ---------------------------------------------------------------------------------------------
# Tests


def test_device_info_falls_back_to_attributes(fake):
    from gpu_runner.runner import Runner
    with Runner() as r:
        info = r.device_info()
    assert (info.name, info.compute_capability, info.sm_count) == ("Fake H200", (9, 0), 132)
    assert info.l2_bytes == 1 << 20 and info.max_shared_bytes_per_block == 227 << 10
    assert (info.sm_clock_mhz, info.memory_clock_mhz) == (1980, 3201)
    assert (info.driver_version, info.cuda_driver_api) == ("13.0", 13000)
    assert info.copy_bandwidth_gbps == pytest.approx(FakeDriver.COPY_GBPS)


def test_full_evaluation(fake):
    from gpu_runner.runner import Runner
    messages = []
    cands = [variant("saxpy_gridstride.cu", block=128, grid=20), variant("saxpy_half.cu"),
             variant("saxpy_modifies_input.cu"), variant("saxpy_oob.cu"), variant("saxpy_full_blocks.cu"), variant("saxpy_noisy.cu"),
             variant("saxpy_stale.cu"), variant("saxpy_syntax_error.cu"),
             variant("saxpy.cu", name="saxpy2")]
    cands[-1] = Variant("wrong_name", cands[-1].source, "saxpy2", cands[-1].launches)
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(), variant("saxpy.cu"), cands, repetitions=12, warmup=2,
                        on_event=as_text(messages.append))
    assert ev.error == ""
    got = by_label(ev)
    assert [c.verdict.variant for c in ev.candidates] == [c.label for c in cands]
    status = {k: v.verdict.status for k, v in got.items()}
    assert status == {
        "saxpy_gridstride": "passed", "saxpy_half": "unwritten",
        "saxpy_modifies_input": "input_modified", "saxpy_oob": "out_of_bounds", "saxpy_full_blocks": "unwritten",
        "saxpy_noisy": "nondeterministic", "saxpy_stale": "stale_after_timing",
        "saxpy_syntax_error": "compile_error", "wrong_name": "compile_error"}

    m = got["saxpy_half"].verdict.mismatch
    assert (m.case, m.seed, m.buffer, m.index, m.mismatched) == ("nominal", 1, "z", 2048, 2048)
    m = got["saxpy_modifies_input"].verdict.mismatch
    assert (m.buffer, m.index, m.actual) == ("y", 7, 0.0)
    assert got["saxpy_oob"].verdict.reason.startswith("case 'ragged', seed 1: the kernel wrote "
                                                      "outside buffer 'z'")
    assert got["saxpy_oob"].verdict.reason.endswith("the nearest at element index 1001")
    m = got["saxpy_full_blocks"].verdict.mismatch
    assert (m.case, m.index, m.mismatched) == ("ragged", 768, RAGGED - 768)
    assert "(after the timing loop)" in got["saxpy_stale"].verdict.reason
    assert "expected a \";\"" in got["saxpy_syntax_error"].compile.log
    assert got["saxpy_syntax_error"].verdict.reason.startswith("saxpy_syntax_error did not compile")
    assert "kernel 'saxpy2' not found in the compiled cubin; kernels found: saxpy" in \
        got["wrong_name"].verdict.reason + got["wrong_name"].compile.log

    # Only passing candidates carry timings.
    assert all((c.timing is None) == (not c.verdict.ok) for c in ev.candidates)

    good = got["saxpy_gridstride"]
    assert good.compile.registers == 16 and good.compile.max_threads_per_block == 1024
    t, b = good.timing, ev.baseline
    assert t.samples == b.samples == 12
    assert 10.0 <= t.median_us <= 10.5 and 20.0 <= b.median_us <= 22.0
    assert t.q1_us <= t.median_us <= t.q3_us and t.min_us == pytest.approx(10.0)
    assert t.achieved_gbps == pytest.approx(12 * NOMINAL / t.median_us / 1e3)
    assert t.gflops == pytest.approx(2 * NOMINAL / t.median_us / 1e3)
    s = good.speedup
    assert s.value == pytest.approx(b.median_us / t.median_us)
    assert s.ci_low <= s.value <= s.ci_high and 1.8 < s.ci_low and s.ci_high < 2.25
    assert any(msg.startswith("timing: round 10") for msg in messages)
    assert "compile: saxpy_gridstride" in messages


def test_a_constant_output_fails_under_a_loose_tolerance(fake):
    # issue 11, item 6: tolerance 0.9 lets an all-zero z within every bound; the screen's
    # constant check flags the launch and the host's verdict names it
    from gpu_runner.problem import Tolerance
    from gpu_runner.runner import Runner
    cands = [variant("saxpy_zeros.cu"), variant("saxpy_gridstride.cu", block=128, grid=20)]
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(tolerance=Tolerance(0.9, 0.9)), variant("saxpy.cu"), cands,
                        repetitions=6, warmup=1)
    assert ev.error == ""
    got = by_label(ev)
    v = got["saxpy_zeros"].verdict
    assert v.status == "constant_output", v.reason
    m = v.mismatch
    assert (m.case, m.seed, m.buffer, m.index, m.actual, m.total) == \
        ("nominal", 1, "z", 0, 0.0, NOMINAL)
    assert v.reason.startswith(f"case 'nominal', seed 1: output 'z' holds one value, 0, in all "
                               f"{NOMINAL} elements where the baseline's varies (index 0: ")
    assert got["saxpy_zeros"].timing is None
    assert got["saxpy_gridstride"].verdict.status == "passed"


def test_fault_stops_verification_and_timing(fake):
    from gpu_runner.runner import Runner
    r = Runner()
    r.device_info()
    ev = r.evaluate(saxpy_problem(), variant("saxpy.cu"),
                    [variant("saxpy_gridstride.cu"), variant("saxpy_fault.cu"),
                     variant("saxpy_half.cu")])
    first, fault, last = (c.verdict for c in ev.candidates)
    assert fault.status == "launch_error"
    assert fault.reason.startswith("case 'nominal', seed 1: cuEventQuery") or \
        "illegal memory access" in fault.reason
    for v in (first, last):
        assert v.status == "launch_error"
        assert v.reason.startswith("not verified: a kernel fault left CUDA unusable in this "
                                   "process (")
    assert ev.baseline is None and ev.error.startswith("timing skipped: a kernel fault")
    with pytest.raises(RuntimeError, match="cannot be used again in this process"):
        r.evaluate(saxpy_problem(), variant("saxpy.cu"), [])


def test_rejected_launch_leaves_the_runner_usable(fake):
    from gpu_runner.runner import Runner
    big = variant("saxpy_gridstride.cu", block=2048, label="too_big")
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(seeds=(1,)), variant("saxpy.cu"),
                        [big, variant("saxpy_gridstride.cu")], repetitions=3, warmup=1)
    too_big, good = (c.verdict for c in ev.candidates)
    assert too_big.status == "launch_error"
    assert too_big.reason == ("case 'nominal', seed 1: block (2048, 1, 1) has 2048 threads, but "
                              "this kernel can run at most 1024 per block (its registers or "
                              "__launch_bounds__ limit it)")
    assert good.status == "passed" and ev.candidates[1].speedup is not None


def test_interleaving_rotates_the_order(fake):
    from gpu_runner.runner import Runner
    with Runner() as r:
        r.device_info()  # measures the copy bandwidth: its copies and flushes are not counted
        fake.launches.clear()
        fake.flushes = 0
        r.evaluate(saxpy_problem(seeds=(1,)), variant("saxpy.cu"),
                   [variant("saxpy_gridstride.cu")], repetitions=4, warmup=1)
    # The verification screen's kernels (gpu_runner/screen.py) are not part of this order.
    fake.launches[:] = [x for x in fake.launches if not x.startswith("cudalens_")]
    # Every timed or warm-up launch comes right after an L2 flush.
    assert fake.launches[8:] == [x for pair in zip(["l2_flush"] * 10, fake.launches[9::2])
                                 for x in pair]
    assert fake.flushes == 10
    fake.launches[:] = [x for x in fake.launches if x != "l2_flush"]
    timed = fake.launches[-8:]
    assert timed == ["saxpy.cu", "saxpy_gridstride.cu", "saxpy_gridstride.cu", "saxpy.cu",
                     "saxpy.cu", "saxpy_gridstride.cu", "saxpy_gridstride.cu", "saxpy.cu"]
    # Verification: per case, baseline twice then the candidate twice; then warm-up.
    assert fake.launches[:10] == ["saxpy.cu"] * 2 + ["saxpy_gridstride.cu"] * 2 + \
        ["saxpy.cu"] * 2 + ["saxpy_gridstride.cu"] * 2 + ["saxpy.cu", "saxpy_gridstride.cu"]


def test_baseline_that_writes_out_of_bounds_is_an_error(fake):
    from gpu_runner.runner import Runner
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(), variant("saxpy_oob.cu"), [variant("saxpy.cu")])
    assert ev.candidates == () and ev.baseline is None
    assert ev.error.startswith("the baseline wrote outside buffer 'z' (case 'ragged', seed 1, "
                               "nearest element index 1001)")


def test_baseline_compile_error(fake):
    from gpu_runner.runner import Runner
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(), variant("saxpy_syntax_error.cu"), [variant("saxpy.cu")])
    assert not ev.baseline_compile.ok and ev.error.startswith("the baseline did not compile")


def test_timeout_skips_the_rest(fake):
    from gpu_runner.runner import Runner
    r = Runner(launch_timeout_s=0.05)
    r.device_info()
    ev = r.evaluate(saxpy_problem(), variant("saxpy.cu"),
                    [variant("spin.cu"), variant("saxpy_gridstride.cu")])
    got = by_label(ev)
    assert got["spin"].verdict.status == "timeout"
    assert "did not finish within 0.05 s" in got["spin"].verdict.reason
    assert got["saxpy_gridstride"].verdict.status == "launch_error"
    assert got["saxpy_gridstride"].verdict.reason.startswith("not verified: a kernel did not "
                                                             "finish")
    assert ev.error.startswith("timing skipped:")
    with pytest.raises(RuntimeError, match="cannot be used again in this process"):
        r.evaluate(saxpy_problem(), variant("saxpy.cu"), [])


def test_malformed_requests(fake):
    from gpu_runner.runner import Runner
    with Runner() as r:
        with pytest.raises(ValueError, match="repeated: saxpy"):
            r.evaluate(saxpy_problem(), variant("saxpy.cu"), [variant("saxpy.cu")])
        short = Variant("short", "", "saxpy", (Launch((1, 1, 1), (1, 1, 1)),))
        with pytest.raises(ValueError, match=r"variant 'short' has 1 launch\(es\), expected one "
                                             r"per case \(2\)"):
            r.evaluate(saxpy_problem(), variant("saxpy.cu"), [short])


def test_disallowed_option_is_a_compile_error(fake):
    from gpu_runner.runner import Runner
    bad = Variant("bad", variant("saxpy.cu").source, "saxpy", variant("saxpy.cu").launches,
                  options=("-o/etc/passwd",))
    with Runner() as r:
        ev = r.evaluate(saxpy_problem(seeds=(1,)), variant("saxpy.cu"), [bad], repetitions=2)
    v = ev.candidates[0].verdict
    assert v.status == "compile_error" and "'-o/etc/passwd' is not accepted" in v.reason
