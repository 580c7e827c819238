"""Worker supervision with workers that die, hang or fault (fake backends in real spawned
processes; no GPU needed). See tests/service_fakes.py for the markers."""

from __future__ import annotations

import re
import threading

import pytest

from gpu_runner.problem import Variant
from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.protocol import EvaluateSpec
from gpu_runner.events import Compiling, Note, TimingRound, Verifying, as_text
from gpu_runner.workers.supervisor import (Cancelled, Supervisor, WorkerStartError,
                                           WorkerUnavailable, suspect_from_events)
from service_fakes import BrokenBackend, FakeBackend, NoGpuBackend, problem, variant

# kernel limit: max(0.3 s, 1000 x 100 us) = 0.3 s; a worker is hung after 0.3 + 0.7 = 1 s.
LIMITS = Limits(startup_s=30, stop_s=2, first_kernel_timeout_s=0.5, kernel_timeout_floor_s=0.3,
                kernel_timeout_factor=1000, silence_grace_s=0.7)


@pytest.fixture
def sup():
    s = Supervisor(WorkerConfig(factory=FakeBackend), LIMITS)
    yield s
    s.close()


def spec(*candidates, baseline_marker="") -> EvaluateSpec:
    return EvaluateSpec(problem(), variant("baseline", baseline_marker), tuple(candidates),
                        repetitions=5)


def pid_of(result) -> int:
    m = re.search(r"passed in pid (\d+)", result.verdict.reason)
    assert m, result.verdict.reason
    return int(m.group(1))


def statuses(ev):
    return [(c.verdict.variant, c.verdict.status) for c in ev.candidates]


def pids(sup, kind):
    return [e.pid for e in sup.events if e.kind == kind]


def test_a_crashing_candidate_is_blamed_and_the_next_runs_in_a_fresh_worker(sup):
    lines = []
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@crash"), variant("c3"),
                           variant("c4")), on_event=as_text(lines.append))
    assert statuses(ev) == [("c1", "passed"), ("c2", "launch_error"), ("c3", "passed"),
                            ("c4", "passed")]
    reason = ev.candidates[1].verdict.reason
    assert reason.startswith("evaluated alone, c2 made the GPU worker process die: the worker "
                             "process (pid ")
    assert "ended without answering (exit code 3); the worker was replaced" in reason
    dead = pids(sup, "died")
    # The group died, then c2 alone (named by the last event) died again.
    assert len(dead) == 2 and len(set(dead)) == 2
    fresh = pid_of(ev.candidates[2])
    assert fresh not in dead and fresh == sup.worker_pid
    assert {pid_of(ev.candidates[i]) for i in (0, 2, 3)} == {fresh}
    assert ev.error == "" and ev.baseline is not None
    assert any(line.startswith("checking that the baseline alone") for line in lines)


def test_a_hanging_candidate_times_out_and_the_worker_is_replaced(sup):
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@hang"), variant("c3")))
    assert statuses(ev) == [("c1", "passed"), ("c2", "timeout"), ("c3", "passed")]
    reason = ev.candidates[1].verdict.reason
    assert reason == ("evaluated alone, c2 stopped the GPU worker: the worker sent nothing for "
                      "1 s (kernel time limit 0.3 s); the worker was killed and replaced")
    hung = pids(sup, "hung")
    assert len(hung) == 2
    assert pid_of(ev.candidates[2]) not in hung
    assert ev.candidates[1].compile.ok is False  # no report came back; not a compile success


def test_crash_while_timing_is_found_by_halving(sup):
    # No event names c3 when it crashes (a timing round is the last), so the groups are
    # split in halves.
    ev = sup.evaluate(spec(variant("c1"), variant("c2"), variant("c3", "@crash-timing"),
                           variant("c4")))
    assert statuses(ev) == [("c1", "passed"), ("c2", "passed"), ("c3", "launch_error"),
                            ("c4", "passed")]
    # [c1..c4] died; [c1, c2] passed; [c3, c4] died; [c3] died; baseline alone; [c4] passed.
    assert len(pids(sup, "died")) == 3
    assert pid_of(ev.candidates[3]) not in pids(sup, "died")


def test_an_exception_after_a_fault_counts_as_that_candidates_fault(sup):
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@raise-wedged"), variant("c3")))
    assert statuses(ev) == [("c1", "passed"), ("c2", "launch_error"), ("c3", "passed")]
    assert ("made the GPU worker process die: the worker failed after losing its GPU context "
            "(RuntimeError: cuMemcpyDtoH failed: an illegal memory access was encountered (at "
            "service_fakes.py:") in ev.candidates[1].verdict.reason
    wedged = pids(sup, "wedged")  # the group, then c2 alone
    assert len(wedged) == 2 and pid_of(ev.candidates[2]) not in wedged


def test_two_crashing_candidates(sup):
    ev = sup.evaluate(spec(variant("c1", "@crash"), variant("c2"), variant("c3", "@crash"),
                           variant("c4", "@mismatch")))
    assert statuses(ev) == [("c1", "launch_error"), ("c2", "passed"), ("c3", "launch_error"),
                            ("c4", "mismatch")]


def test_candidates_displaced_by_an_in_process_fault_are_evaluated_again(sup):
    lines = []
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@fault"), variant("c3")),
                      on_event=as_text(lines.append))
    # the progress names the candidate that faulted, not only how many it displaced
    [again] = [l for l in lines if "could not be finished" in l]
    assert again.startswith("c2 faulted (case 'nominal', seed 1: an illegal memory access was "
                            "encountered); 2 candidate(s) could not be finished after ")
    assert statuses(ev) == [("c1", "passed"), ("c2", "launch_error"), ("c3", "passed")]
    assert "illegal memory access" in ev.candidates[1].verdict.reason
    wedged = pids(sup, "wedged")
    assert len(wedged) == 1
    assert pid_of(ev.candidates[0]) == pid_of(ev.candidates[2]) != wedged[0]
    assert ev.candidates[2].timing is not None and ev.candidates[2].speedup is not None
    assert ev.error == ""
    # The wedged group timed nothing; the baseline's timing comes from the group that re-ran.
    assert ev.baseline is not None and ev.baseline.median_us == 100.0


def test_fault_while_timing_retimes_the_others_and_reports_no_error(sup):
    lines = []
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@fault-timing"), variant("c3")),
                      on_event=as_text(lines.append))
    [again] = [l for l in lines if "could not be finished" in l]
    assert again.startswith("c2 faulted (case 'nominal', seed 1 (while timing): c: an illegal "
                            "memory access was encountered); 2 candidate(s) could not be ")
    assert statuses(ev) == [("c1", "passed"), ("c2", "launch_error"), ("c3", "passed")]
    assert ev.candidates[1].verdict.reason.startswith("case 'nominal', seed 1 (while timing)")
    for i in (0, 2):
        assert ev.candidates[i].timing is not None
        assert pid_of(ev.candidates[i]) != pids(sup, "wedged")[0]
    assert ev.error == ""  # "timing stopped" was about c2, and c1/c3 were timed again


def test_kernel_time_limit_comes_from_the_baseline_median(sup):
    ev = sup.evaluate(spec(variant("c1"), baseline_marker="@median=5000"))
    # 1000 x 5000 us = 5 s, above the 0.3 s floor
    assert ev.candidates[0].verdict.reason.endswith("(kernel limit 5 s)")
    ev = sup.evaluate(spec(variant("c1"), baseline_marker="@median=20"))
    assert ev.candidates[0].verdict.reason.endswith("(kernel limit 0.3 s)")  # the floor


def test_limits_formula():
    lim = Limits(kernel_timeout_floor_s=2.0, kernel_timeout_factor=1000, silence_grace_s=120)
    assert lim.kernel_timeout_s(100.0) == 2.0
    assert lim.kernel_timeout_s(10_000.0) == pytest.approx(10.0)
    assert lim.silence_s(10.0) == 130.0


def test_a_baseline_that_crashes_the_probe_ends_the_evaluation(sup):
    ev = sup.evaluate(spec(variant("c1"), baseline_marker="@crash"))
    assert ev.candidates == () and ev.baseline is None
    assert ev.error.startswith("the baseline made the GPU worker die: the worker process")
    assert ev.error.endswith("(exit code 3)")


def test_a_baseline_that_crashes_on_the_full_problem_is_blamed_not_the_candidates(sup):
    ev = sup.evaluate(spec(variant("c1"), variant("c2"), baseline_marker="@crash-full"))
    assert ev.candidates == ()
    assert ev.error.startswith("the baseline made the GPU worker die")


def test_no_candidates_gives_the_baseline_timing(sup):
    ev = sup.evaluate(spec())
    assert ev.candidates == () and ev.error == "" and ev.baseline.median_us == 100.0


def test_percent_of_copy_uses_one_bandwidth_across_workers(sup):
    ev = sup.evaluate(spec(variant("c1"), variant("c2", "@crash"), variant("c3")))
    for c in (ev.candidates[0], ev.candidates[2]):
        t = c.timing
        assert t.percent_of_copy == pytest.approx(t.achieved_gbps / ev.device.copy_bandwidth_gbps
                                                  * 100)


def test_cancel_kills_the_worker_and_the_next_call_gets_a_fresh_one(sup):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(Cancelled):
        sup.evaluate(spec(variant("c1", "@slow")), cancel=cancel)
    cancelled = pids(sup, "cancelled")
    assert len(cancelled) == 1
    ev = sup.evaluate(spec(variant("c1")))
    assert pid_of(ev.candidates[0]) != cancelled[0]


def test_compile_reports_come_from_the_worker(sup):
    reports = sup.compile([variant("a"), variant("b", "@syntax")])
    assert [r.ok for r in reports] == [True, False]
    assert reports[1].log.endswith('expected a ";"')


def test_no_gpu_is_reported_with_the_workers_message():
    s = Supervisor(WorkerConfig(factory=NoGpuBackend), LIMITS)
    with pytest.raises(WorkerUnavailable, match=r"^the CUDA driver found no usable GPU: fake\."):
        s.start()


def test_a_worker_that_fails_to_start_says_why():
    s = Supervisor(WorkerConfig(device_index=3, factory=BrokenBackend), LIMITS)
    with pytest.raises(WorkerStartError) as e:
        s.start()
    assert str(e.value) == ("the GPU worker for device 3 did not start: RuntimeError: libcuda "
                            "exploded (fake)")


def _v(label):
    return Variant(label=label, source="", name="k", launches=())


def test_suspect_is_the_candidate_the_last_event_is_about():
    group = [_v("c1"), _v("c10"), _v("c2")]
    assert suspect_from_events([Verifying("c1", "nominal", 1)], group).label == "c1"
    assert suspect_from_events([Verifying("c2", "nominal", 1), Compiling("c10")],
                               group).label == "c10"
    assert suspect_from_events([Verifying("c1", "nominal", 1), TimingRound(3, 50)],
                               group) is None
    assert suspect_from_events([Note("c1 and c2")], group) is None
    assert suspect_from_events([Verifying("c3", "nominal", 1)], group) is None  # not in it
    assert suspect_from_events([Verifying("c1", "nominal", 1, baseline=True)], group) is None
    assert suspect_from_events([], group) is None
