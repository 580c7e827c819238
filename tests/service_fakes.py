"""Worker backends for testing the runner service and its supervision without a GPU.

They run in real spawned worker processes, like ``RunnerBackend``, and behave the way the
real runner does (same progress lines, same verdict wording for faults), steered by markers in
a variant's source:

- ``@crash``: the process exits (``os._exit(3)``) while verifying this candidate;
  ``@crash-timing``: it exits during the timing loop (no progress line names it);
- ``@raise-wedged``: the runner raises after a fault wedged its context;
- ``@hang``: the process stops answering (sleeps) while verifying this candidate;
- ``@fault``: an in-process kernel fault, reported as ``gpu_runner.verify`` does: this
  candidate ``launch_error``, every other unjudged one ``not verified: ...``, session wedged;
  ``@fault-timing``: the same while timing (others verified but untimed);
- ``@mismatch``: an ordinary failed verification;
- ``@block=N``: ``unwritten`` unless the variant is launched with N threads per block in x (a
  kernel correct under one launch only: a warp-per-row rewrite under the user's launch);
- ``@nonfinite``: ``unwritten`` with ``NONFINITE_MISMATCH`` (NaN read back, an infinite expected
  value, an index and counts past 2^53), as the real runner reports an output left unwritten;
  ``@huge-int``: ``mismatch`` with ``HUGE_INT_MISMATCH`` (uint64 values past 2^53);
  ``@nonfinite-timing``: passes, timed with ``nonfinite_timing`` and ``NONFINITE_SPEEDUP``;
- ``@echo``: passes with the reason ``echo(problem)``: the numbers of the request as the worker
  received them;
- ``@slow``: takes 20 s, with a progress line every 20 ms (for cancelling);
- on the baseline: ``@median=US`` sets its median time; ``@crash`` crashes the probe;
  ``@crash-full`` crashes any run on more than one case (not the probe).

A passing candidate's reason names the worker's pid and the kernel time limit it was given. A
variant whose options or includes ``gpu_runner.compiler.check_request`` refuses does not
compile, as in the real runner (the check runs before nvcc).
"""

from __future__ import annotations

import os
import re
import time

from gpu_runner.compiler import check_request
from gpu_runner.events import Compiling, Note, TimingRound, Verifying
from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation,
                               Mismatch, Speedup, Timing, Verdict)
from gpu_runner.session import GPU_EXTRA, NoGpuError

WEDGED_FAULT = ("a kernel fault left CUDA unusable in this process (an illegal memory access "
                "was encountered); the GPU cannot be used again in this process (restart the "
                "runner)")


# Numbers JSON cannot hold as plain numbers, or that a float64 would round (2^53 + 1).
NONFINITE_MISMATCH = Mismatch(case="nominal", seed=1, buffer="z", index=2**53 + 1,
                              expected=float("-inf"), actual=float("nan"),
                              mismatched=2**64 + 3, total=2**70 + 1)
NONFINITE_REASON = ("case 'nominal', seed 1: output 'z' was not written at index "
                    f"{2**53 + 1} (it still holds the poison value; the baseline wrote -inf); "
                    f"{2**64 + 3} of {2**70 + 1} elements unwritten")
HUGE_INT_MISMATCH = Mismatch(case="ragged", seed=2, buffer="z", index=2**62 + 1,
                             expected=2**64 - 1, actual=2**53 + 1, mismatched=1, total=2**63 + 1)
NONFINITE_SPEEDUP = Speedup(value=float("inf"), ci_low=float("nan"), ci_high=float("inf"))


def nonfinite_timing(label: str) -> Timing:
    """A timing whose every float field is NaN or infinite and whose counts pass 2^53."""
    return Timing(variant=label, median_us=float("inf"), q1_us=float("-inf"),
                  q3_us=float("nan"), min_us=5e-324, samples=2**53 + 1,
                  achieved_gbps=float("nan"), percent_of_copy=float("nan"),
                  gflops=1.7976931348623157e308, median_ci_low_us=float("nan"),
                  median_ci_high_us=float("inf"), ci_half_width_pct=float("nan"),
                  stop_reason="converged", sm_clock_mhz=2**63 + 5,
                  throttle_reasons=("sw_power_cap",), roofline_floor_us=float("-inf"))


def echo(problem) -> str:
    """The numbers of ``problem`` as Python reprs (types visible: ``1.0`` vs ``1``)."""
    return "; ".join(f"{c.label}: bytes_moved={c.bytes_moved!r} flops={c.flops!r} " +
                     " ".join(f"{a.name}={a.value if a.kind == 'scalar' else (a.low, a.high)!r}"
                              for a in c.args) for c in problem.cases)


def fake_info(pid: int) -> DeviceInfo:
    return DeviceInfo(name="Fake H200", compute_capability=(9, 0), sm_count=132,
                      l2_bytes=60 * 1024 * 1024, max_threads_per_block=1024,
                      max_shared_bytes_per_block=232448, sm_clock_mhz=1980,
                      memory_clock_mhz=3201, driver_version="580.0", cuda_driver_api=13000,
                      copy_bandwidth_gbps=4000.0 + pid % 97)


def _timing(label: str, median: float, info: DeviceInfo) -> Timing:
    gbps = 1e3 / median
    return Timing(variant=label, median_us=median, q1_us=median * 0.99, q3_us=median * 1.01,
                  min_us=median * 0.98, samples=5, achieved_gbps=gbps,
                  percent_of_copy=gbps / info.copy_bandwidth_gbps * 100)


def _compiled(label: str) -> CompileReport:
    return CompileReport(variant=label, ok=True, registers=16, max_threads_per_block=1024)


class FakeBackend:
    """A ``gpu_runner.workers.backend.Backend`` that runs nothing on a GPU."""

    def __init__(self, config, devices: int = 1):
        self.config = config
        self.devices = devices
        self.info = fake_info(os.getpid())
        self._wedged = ""

    def device_info(self) -> DeviceInfo:
        return self.info

    def device_count(self) -> int:
        return self.devices

    def wedged(self) -> str:
        return self._wedged

    def close(self) -> None:
        pass

    def compile(self, variants):
        out = []
        for v in variants:
            refused = check_request(v)  # what the real compile_variant checks before nvcc
            if refused:
                out.append(CompileReport(variant=v.label, ok=False, log=refused))
            elif "@syntax" in v.source:
                out.append(CompileReport(variant=v.label, ok=False,
                                         log=f"nvcc failed for variant '{v.label}':\nerror: "
                                             f"expected a \";\""))
            else:
                out.append(CompileReport(variant=v.label, ok=True, registers=len(v.source) % 64,
                                         max_threads_per_block=1024))
        return out

    def evaluate(self, task, progress) -> Evaluation:  # progress: gets gpu_runner.events
        spec = task.spec
        base = spec.baseline
        for case in spec.problem.cases:  # captured data must arrive whole, as the runner needs
            if case.captured is not None:
                from gpu_runner.captured import CapturedDataError, captured_arrays
                try:
                    captured_arrays(case)
                except CapturedDataError as exc:
                    return Evaluation(device=self.info, baseline_compile=_compiled(base.label),
                                      baseline=None, error=f"the captured case cannot be used: "
                                                           f"{exc}")
        full = len(spec.problem.cases) > 1
        for v in (base, *spec.candidates):
            progress(Compiling(v.label))
        progress(Verifying(base.label, spec.problem.cases[0].label, 1, baseline=True))
        if "@crash" in base.source and ("@crash-full" not in base.source or full):
            os._exit(3)
        found = re.search(r"@median=(\d+)", base.source)
        median = float(found.group(1)) if found else 100.0
        verdicts: dict[str, Verdict] = {}
        compiles = {c.label: _compiled(c.label) for c in spec.candidates}
        for c in spec.candidates:
            refused = check_request(c)
            if refused:
                compiles[c.label] = CompileReport(variant=c.label, ok=False, log=refused)  # as the real runner words a candidate that did not compile
                verdicts[c.label] = Verdict(c.label, "compile_error",
                                            f"{c.label} did not compile: "
                                            f"{(refused.splitlines()[1:2] or [refused])[0]}")
                continue
            progress(Verifying(c.label, "nominal", 1))
            src = c.source
            if "@crash" in src and "@crash-timing" not in src:
                os._exit(3)
            if "@raise-wedged" in src:
                self._wedged = WEDGED_FAULT
                raise RuntimeError("cuMemcpyDtoH failed: an illegal memory access was encountered")
            if "@hang" in src:
                time.sleep(3600)
            if "@slow" in src:
                for _ in range(1000):
                    progress(Verifying(c.label, "nominal", 1))
                    time.sleep(0.02)
            if "@mismatch" in src:
                verdicts[c.label] = Verdict(c.label, "mismatch",
                                            "case 'nominal', seed 1: output 'z' differs at index 3")
            needs = re.search(r"@block=(\d+)", src)
            if needs and c.launches and c.launches[0].block[0] != int(needs.group(1)):
                verdicts[c.label] = Verdict(
                    c.label, "unwritten", f"case 'nominal', seed 1: output 'y' was not written "
                    f"at index 32 (launched with {c.launches[0].block[0]} threads per block; "
                    f"this kernel needs {needs.group(1)})")
            if "@nonfinite" in src and "@nonfinite-timing" not in src:
                verdicts[c.label] = Verdict(c.label, "unwritten", NONFINITE_REASON,
                                            NONFINITE_MISMATCH)
            if "@echo" in src:
                verdicts[c.label] = Verdict(c.label, "passed", echo(spec.problem))
            if "@huge-int" in src:
                verdicts[c.label] = Verdict(c.label, "mismatch",
                                            "case 'ragged', seed 2: output 'z' differs at index "
                                            f"{2**62 + 1}", HUGE_INT_MISMATCH)
            if "@fault" in src and "@fault-timing" not in src:
                verdicts[c.label] = Verdict(c.label, "launch_error",
                                            "case 'nominal', seed 1: an illegal memory access "
                                            "was encountered")
                self._wedged = WEDGED_FAULT
                for other in spec.candidates:
                    verdicts.setdefault(other.label, Verdict(other.label, "launch_error",
                                                             f"not verified: {WEDGED_FAULT}",
                                                             not_judged=True))
                break
        error = "timing skipped: " + self._wedged if self._wedged else ""
        timed = [c for c in spec.candidates if c.label not in verdicts]
        timings = {}
        if not self._wedged:  # as in the real runner: a wedged worker times nothing
            timings[base.label] = _timing(base.label, median, self.info)
            progress(TimingRound(1, spec.repetitions))
            for c in timed:
                if "@crash-timing" in c.source:
                    os._exit(3)
                if "@fault-timing" in c.source:
                    verdicts[c.label] = Verdict(c.label, "launch_error",
                                                "case 'nominal', seed 1 (while timing): c: an "
                                                "illegal memory access was encountered")
                    self._wedged = WEDGED_FAULT
                    error = "timing stopped: " + WEDGED_FAULT
            if not self._wedged:
                for c in timed:
                    timings[c.label] = (nonfinite_timing(c.label) if "@nonfinite-timing"
                                        in c.source else _timing(c.label, median / 2, self.info))
        results = []
        for c in spec.candidates:
            v = verdicts.get(c.label) or Verdict(
                c.label, "passed", f"passed in pid {os.getpid()} (kernel limit "
                                   f"{task.kernel_timeout_s:g} s)")
            t = timings.get(c.label) if v.ok else None
            speedup = None
            if t is not None:
                speedup = (NONFINITE_SPEEDUP if "@nonfinite-timing" in c.source
                           else Speedup(2.0, 1.9, 2.1))
            results.append(CandidateResult(compile=compiles[c.label], verdict=v, timing=t,
                                           speedup=speedup))
        return Evaluation(device=self.info, baseline_compile=_compiled(base.label),
                          baseline=timings.get(base.label), candidates=tuple(results),
                          error=error)


class NoGpuBackend:
    """A backend whose construction fails as ``Runner`` does on a machine without a GPU."""

    def __init__(self, config):
        raise NoGpuError("the CUDA driver found no usable GPU: fake. cudalens runs kernels on an "
                         "NVIDIA GPU: it needs the GPU, its driver (libcuda), and pycuda "
                         f"({GPU_EXTRA}).")


class BrokenBackend:
    """A backend whose construction fails for a reason other than a missing GPU."""

    def __init__(self, config):
        raise RuntimeError("libcuda exploded (fake)")


def two_devices(config) -> FakeBackend:
    return FakeBackend(config, devices=2)


# -- requests --------------------------------------------------------------------------------

SAXPY = ("__global__ void saxpy(int n, float a, const float* x, float* y)\n"
         "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n")


def problem(cases: int = 2):
    from gpu_runner.problem import Buffer, Case, Problem, Scalar

    def case(label, n):
        return Case(label, (Scalar("n", "int32", n), Scalar("a", "float32", 2.5),
                            Buffer("x", "float32", n, "in"), Buffer("y", "float32", n, "inout")),
                    bytes_moved=12 * n, flops=2 * n)
    return Problem("saxpy", (case("nominal", 1 << 20), case("ragged", 100_003))[:cases])


def variant(label: str, marker: str = "", cases: int = 2, name: str = "saxpy"):
    from gpu_runner.problem import Launch, Variant

    launches = tuple(Launch(grid=(-(-n // 256), 1, 1), block=(256, 1, 1))
                     for n in (1 << 20, 100_003)[:cases])
    source = SAXPY + (f"// {marker}\n" if marker else "")
    return Variant(label=label, source=source, name=name, launches=launches)


# -- two fake GPUs of different speeds (split evaluations, Ray lanes) ------------------------

# fake GPU -> (baseline median, a passing candidate's median), microseconds: the speedups
# differ (2.0 vs 1.5), so a row timed on one GPU and judged against the other's baseline shows.
GPU_SPEED = {0: (100.0, 50.0), 1: (60.0, 40.0)}


def fake_gpu_index(config) -> int:
    """The fake GPU a worker plays: the one Ray gave its actor (``CUDA_VISIBLE_DEVICES``, the
    device is 0 inside an actor), else the worker's device index."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if config.device_index == 0 and visible.isdigit():
        return int(visible)
    return config.device_index


class SpeedFakeBackend(FakeBackend):
    """``FakeBackend`` on fake GPU ``fake_gpu_index`` timed at ``GPU_SPEED``: the baseline and
    each passing candidate get that GPU's medians and the speedup between them. ``@lose-gpuK``
    in a candidate on fake GPU K: the process exits and GPU K's workers never start again (a
    GPU lost mid-evaluation), recorded as a file in ``flag_dir``. ``@hold``: the worker sends
    "verify: LABEL holding" every 20 ms until the file ``release`` exists in ``flag_dir``."""

    def __init__(self, config, flag_dir: str = ""):
        self.gpu = fake_gpu_index(config)
        self.flag_dir = flag_dir
        if flag_dir and os.path.exists(os.path.join(flag_dir, f"gpu{self.gpu}-lost")):
            raise RuntimeError(f"fake GPU {self.gpu} fell off the bus")
        super().__init__(config, devices=2)
        from dataclasses import replace
        self.info = replace(self.info, name=f"Fake GPU {self.gpu}", sm_count=132 - 18 * self.gpu)

    def evaluate(self, task, progress) -> Evaluation:
        from dataclasses import replace
        for case in task.spec.problem.cases:
            if case.captured is not None:  # how the captured arrays reached this worker
                how = "inline" if case.captured.payload else f"as the path {case.captured.path}"
                progress(Note(f"captured case '{case.label}' arrived {how}"))
        for c in task.spec.candidates:
            if f"@lose-gpu{self.gpu}" in c.source:
                progress(Verifying(c.label, "nominal", 1))
                open(os.path.join(self.flag_dir, f"gpu{self.gpu}-lost"), "w").close()
                os._exit(3)
            if "@hold" in c.source:
                while not os.path.exists(os.path.join(self.flag_dir, "release")):
                    progress(Note(f"verify: {c.label} holding"))
                    time.sleep(0.02)
        ev = super().evaluate(task, progress)
        base, cand = GPU_SPEED[self.gpu]
        rows = []
        for r in ev.candidates:
            if r.timing is not None:
                r = replace(r, timing=_timing(r.verdict.variant, cand, self.info),
                            speedup=Speedup(base / cand, base / cand * 0.98, base / cand * 1.02))
            rows.append(r)
        baseline = _timing(ev.baseline.variant, base, self.info) if ev.baseline else None
        return replace(ev, baseline=baseline, candidates=tuple(rows))


class TwoFakeGpus:
    """A picklable backend factory: ``SpeedFakeBackend`` with ``flag_dir``."""

    def __init__(self, flag_dir: str = ""):
        self.flag_dir = flag_dir

    def __call__(self, config) -> SpeedFakeBackend:
        return SpeedFakeBackend(config, self.flag_dir)


def captured_problem(directory: str):
    """``problem()`` whose ragged case (100_003 floats) replays captured arrays from an ``.npz``
    written to ``directory`` and named by its path (``CapturedData.path``, as the client sends
    a large capture): x before, y before and after (y = 2.5 x + y)."""
    import hashlib
    import io
    from dataclasses import replace

    import numpy as np

    from gpu_runner.problem import CapturedData

    prob = problem()
    n = prob.cases[1].args[0].value
    x = (np.arange(n, dtype=np.float32) % 31) / 4
    y = np.ones(n, dtype=np.float32)
    buf = io.BytesIO()
    np.savez(buf, **{"x.before": x, "y.before": y, "y.after": (2.5 * x + y).astype(np.float32)})
    path = os.path.join(directory, "captured.npz")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    data = CapturedData(sha256=hashlib.sha256(buf.getvalue()).hexdigest(), path=path)
    return replace(prob, cases=(prob.cases[0], replace(prob.cases[1], captured=data)))


def actor_sanitize(problem_, variant_, *, device_index, timeout_s, tools):
    """A ``PoolConfig.sanitize_fn`` that says where it ran: one clean ``ToolRun`` per tool whose
    note names the process, ``CUDA_VISIBLE_DEVICES`` and ``device_index``; ``@nosanitizer`` in
    the variant: the ``SanitizeError`` of a node without compute-sanitizer; whether the
    captured case's arrays arrived inline is in the report's ``case``."""
    from gpu_runner.sanitize import SANITIZER_MISSING, SanitizeError, SanitizeReport, ToolRun

    if "@nosanitizer" in variant_.source:
        raise SanitizeError(f"compute-sanitizer was not found on the node of pid {os.getpid()}",
                            SANITIZER_MISSING)
    note = (f"pid {os.getpid()}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}, "
            f"device_index={device_index}, timeout_s={timeout_s:g}")
    inline = [c.label for c in problem_.cases if c.captured is not None and c.captured.payload]
    return SanitizeReport(variant=variant_.label, case="inline: " + ",".join(inline),
                          runs=tuple(ToolRun(t, (), 0, 0.0, note) for t in tools))
