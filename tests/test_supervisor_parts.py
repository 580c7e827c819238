"""The pieces of supervision that need no process: displaced results, assembling an
evaluation from several workers, and the CPU compile pool."""

from __future__ import annotations

import os
import threading
import time

import pytest

from gpu_runner.report import CandidateResult, CompileReport, Evaluation, Timing, Verdict
from gpu_runner.workers.handle import describe_exit
from gpu_runner.workers.precompile import Precompiler
from gpu_runner.workers.results import assemble, displaced, rebase_timing
from service_fakes import fake_info, variant


def result(label, status, reason="r", timed=True, not_judged=False):
    t = Timing(label, 10.0, 9.0, 11.0, 8.0, 5, achieved_gbps=1000.0, percent_of_copy=1.0)
    return CandidateResult(CompileReport(label, True),
                           Verdict(label, status, reason, not_judged=not_judged),
                           timing=t if timed else None)


def test_displaced_only_when_wedged():
    not_verified = result("c1", "launch_error", "not verified: a kernel fault left CUDA ...",
                          timed=False, not_judged=True)
    # the reason's words do not decide it: the typed field does
    assert not displaced(result("c6", "launch_error", "not verified: x", timed=False), True)
    untimed = result("c2", "passed", timed=False)
    own_fault = result("c3", "launch_error", "case 'nominal', seed 1: illegal address", False)
    assert displaced(not_verified, True) and displaced(untimed, True)
    assert not displaced(own_fault, True)
    assert not displaced(result("c4", "timeout", timed=False), True)
    assert not displaced(result("c5", "passed"), True)
    assert not displaced(not_verified, False) and not displaced(untimed, False)


def test_assemble_keeps_request_order_rebases_and_joins_errors():
    info = fake_info(0)  # copy bandwidth 4000 GB/s
    order = [variant("c1"), variant("c2")]
    results = {"c2": result("c2", "mismatch", timed=False), "c1": result("c1", "passed")}
    ev = assemble(info, CompileReport("baseline", True), None, order, results,
                  ["e1", "", "e1", "e2"])
    assert isinstance(ev, Evaluation)
    assert [c.verdict.variant for c in ev.candidates] == ["c1", "c2"]
    assert ev.candidates[0].timing.percent_of_copy == pytest.approx(25.0)  # 1000 / 4000
    assert ev.error == "e1; e2"
    with pytest.raises(KeyError, match="no result for candidate"):
        assemble(info, CompileReport("baseline", True), None, order, {"c1": results["c1"]})
    assert rebase_timing(None, info) is None


def test_describe_exit():
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(-11) == "killed by signal SIGSEGV"
    assert describe_exit(None) == "still running"


class Recorder:
    def __init__(self, delay=0.2):
        self.delay, self.calls, self.active, self.peak = delay, [], 0, 0
        self.lock = threading.Lock()

    def __call__(self, v, arch, cache_dir):
        with self.lock:
            self.calls.append((v.label, arch))
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        if "@syntax" in v.source:
            raise RuntimeError("nvcc failed")
        with open(os.path.join(cache_dir, f"{v.label}.cubin"), "wb") as f:
            f.write(b"\x7fELF" + v.label.encode())


def test_precompiler_compiles_in_parallel_into_the_cache(tmp_path):
    rec = Recorder()
    pre = Precompiler(4, compile_fn=rec)
    variants = [variant(f"c{i}") for i in range(4)] + [variant("bad", "@syntax")]
    done = [f.result(timeout=10) for f in pre.submit(variants, "sm_90", str(tmp_path))]
    pre.close()
    assert done == [True, True, True, True, False]
    assert rec.peak >= 3  # several nvcc runs at once, not one after another
    assert sorted(os.listdir(tmp_path)) == ["c0.cubin", "c1.cubin", "c2.cubin", "c3.cubin"]
    assert (tmp_path / "c2.cubin").read_bytes() == b"\x7fELFc2"
    assert {arch for _, arch in rec.calls} == {"sm_90"}


def test_precompiler_refuses_options_the_runner_refuses(tmp_path):
    rec = Recorder(0)
    pre = Precompiler(1, compile_fn=rec)
    v = variant("c1")
    bad = type(v)(v.label, v.source, v.name, v.launches, options=("-o/etc/passwd",))
    ok = type(v)(v.label, v.source, v.name, v.launches, options=("-use_fast_math",))
    assert [f.result(5) for f in pre.submit([bad, ok], "sm_90", str(tmp_path))] == [False, True]
    assert rec.calls == [("c1", "sm_90")]
    pre.close()


def test_precompiler_without_pycuda_turns_itself_off(tmp_path):
    def no_pycuda(v, arch, cache_dir):
        raise ImportError("No module named 'pycuda'")

    pre = Precompiler(1, compile_fn=no_pycuda)
    assert [f.result(5) for f in pre.submit([variant("a"), variant("b")], "sm_90",
                                            str(tmp_path))] == [False, False]
    assert pre.disabled == "pycuda does not import: No module named 'pycuda'"
    assert os.listdir(tmp_path) == []
    pre.close()


def test_precompiler_leaves_variants_with_files_to_the_worker(tmp_path):
    rec = Recorder(0)
    pre = Precompiler(1, compile_fn=rec)
    v = variant("c1")
    with_files = type(v)("c2", '#include "h.h"\n' + v.source, v.name, v.launches,
                         options=("-I.",), files={"h.h": "#define H 1\n"})
    assert [f.result(5) for f in pre.submit([with_files, v], "sm_90", str(tmp_path))] == \
        [False, True]
    assert rec.calls == [("c1", "sm_90")]
    pre.close()
