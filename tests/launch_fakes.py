"""An in-process runner double for the drop-in flow: verdicts follow what each variant's
source does under the launch it is sent with, as far as the warp-per-row rewrite goes.

A warp-per-row source (the pass's ``// One warp per`` comment) sent under the user's
launch (a ``LABEL@user`` variant) covers only the rows of the first 1/32 of the warps it
needs, so it fails verification with the runner's wording, unless it is the grid-stride form
(its comment says ``the warps looping over the``), which loops over the rows. Speedups: warp-per-row
under its own launch ``FAST`` (``FAST_GRIDSTRIDE`` for the grid-stride form), the grid-stride
form under the user's launch ``DROP_IN``, any
other candidate 1.02x with a CI reaching below 1 (never a winner).
"""

from __future__ import annotations

import dataclasses

from cudalens.engine.runner import WithoutTools
from gpu_runner.events import Verifying

from gpu_runner.report import (CandidateResult, CompileReport, DeviceInfo, Evaluation, Speedup,
                               Timing, Verdict)

FAST = 14.8
FAST_GRIDSTRIDE = 14.5  # the loop over the rows costs a little
DROP_IN = 1.8
WARP = "// One warp per "  # warp_per_row.comment
GRIDSTRIDE = "the warps looping over the "


class LaunchAwareClient(WithoutTools):
    """``RunnerClient``'s interface (context manager, ``device_info``, ``evaluate``); ``calls``
    keeps every evaluation's variants."""

    def __init__(self):
        self.calls = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def device_info(self) -> DeviceInfo:
        return DeviceInfo("test GPU", (9, 0), 132, 50 << 20, 1024, 49152, 1980, 3201, "test",
                          13000, 4000.0)

    def _result(self, v, base: Timing) -> CandidateResult:
        user = v.label.endswith("@user")
        if WARP in v.source and user and GRIDSTRIDE not in v.source:
            return CandidateResult(CompileReport(v.label, True), Verdict(
                v.label, "mismatch", "case 'nominal', seed 1: output 'y' differs at index "
                                     "1024 (expected 0.4, found nan)"), None, None)
        if WARP in v.source:
            s = DROP_IN if user else FAST if GRIDSTRIDE not in v.source else FAST_GRIDSTRIDE
            speedup = Speedup(s, s * 0.97, s * 1.03)
        else:
            speedup = Speedup(1.02, 0.98, 1.06)
        t = dataclasses.replace(base, variant=v.label, median_us=base.median_us / speedup.value)
        return CandidateResult(CompileReport(v.label, True), Verdict(v.label, "passed", "ok"), t,
                               speedup)

    def evaluate(self, problem, baseline, variants, repetitions=50, on_event=None):
        self.calls.append(list(variants))
        base = Timing("baseline", 100.0, 99.0, 101.0, 98.0, repetitions, 1000.0, 25.0)
        return Evaluation(self.device_info(), CompileReport("baseline", True), base,
                          tuple(self._result(v, base) for v in variants))


def make_client(settings=None) -> LaunchAwareClient:
    """The ``--runner-factory`` of ``cudalens lsp`` for tests (``launch_fakes:make_client``).
    It also turns the search's compile pruning off in the server process (nvcc is not looked
    up), as the CLI tests do, so that a search takes seconds."""
    import cudalens.check.nvcc as nvcc

    def no_nvcc(*_args, **_kwargs):
        raise nvcc.NvccNotFound("compile pruning is off with the launch-aware test runner")

    nvcc.find_nvcc = no_nvcc
    return LaunchAwareClient()


class LaunchAwareBackend:
    """``LaunchAwareClient``'s verdicts as a runner worker's backend (``gpu_runner.workers.
    backend.Backend``) on one of two fake GPUs, "Fake GPU N" (N the worker's device index), so
    the drop-in flow can run through the real service and its split over GPUs; compiles as
    ``service_fakes.FakeBackend``."""

    def __init__(self, config):
        from service_fakes import FakeBackend

        self._fake = FakeBackend(config, devices=2)
        self.info = dataclasses.replace(LaunchAwareClient().device_info(),
                                        name=f"Fake GPU {config.device_index}")

    def device_info(self) -> DeviceInfo:
        return self.info

    def device_count(self) -> int:
        return 2

    def wedged(self) -> str:
        return ""

    def close(self) -> None:
        pass

    def compile(self, variants):
        return self._fake.compile(variants)

    def evaluate(self, task, progress) -> Evaluation:
        spec = task.spec
        for v in spec.candidates:
            progress(Verifying(v.label, "nominal", 1))
        ev = LaunchAwareClient().evaluate(spec.problem, spec.baseline, spec.candidates,
                                          spec.repetitions)
        return dataclasses.replace(ev, device=self.info)
