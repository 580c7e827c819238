"""Supervision with the real runner on a GPU (marker gpu): a kernel that faults and one that
hangs each cost their own verdict, and the candidates around them are verified and timed in
fresh workers. Skipped, with the reason, where pycuda or a GPU is missing."""

from __future__ import annotations

import pytest

from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.limits import Limits
from gpu_runner.workers.protocol import EvaluateSpec
from gpu_runner.workers.supervisor import Supervisor, WorkerUnavailable
from gpu_runner.events import as_text  # noqa: E402

pytestmark = pytest.mark.gpu


def test_fault_and_hang_are_contained_and_the_rest_is_measured():
    import test_runner_gpu as t

    # A 0.3 s kernel limit, so the 1.5 s spin kernel is a hang.
    sup = Supervisor(WorkerConfig(), Limits(kernel_timeout_floor_s=0.3, silence_grace_s=60))
    try:
        try:
            sup.start()
        except WorkerUnavailable as exc:
            pytest.skip(str(exc))
        candidates = (t.variant("saxpy_gridstride.cu", block=128, grid=2112, label="before"),
                      t.variant("saxpy_fault.cu"), t.variant("spin.cu"),
                      t.variant("saxpy_half.cu"),
                      t.variant("saxpy_gridstride.cu", block=512, grid=528, label="after"))
        lines = []
        ev = sup.evaluate(EvaluateSpec(t.saxpy_problem(seeds=(1, 2)), t.variant("saxpy.cu"),
                                       candidates, repetitions=20),
                          on_event=as_text(lines.append))
        for c in ev.candidates:
            print(f"\n{c.verdict.variant}: {c.verdict.status}: {c.verdict.reason[:160]}", end="")
        print("\nworker events:", [(e.kind, e.pid) for e in sup.events])
        status = {c.verdict.variant: c.verdict for c in ev.candidates}
        assert status["saxpy_fault"].status == "launch_error"
        assert "illegal memory access" in status["saxpy_fault"].reason
        assert status["spin"].status == "timeout"
        assert "did not finish within 0.3 s" in status["spin"].reason
        assert status["saxpy_half"].status == "unwritten"
        for label in ("before", "after"):
            c = next(c for c in ev.candidates if c.verdict.variant == label)
            assert c.verdict.status == "passed", c.verdict.reason
            assert c.timing is not None and 5 <= c.timing.samples <= 20
            assert 0.3 < c.speedup.value < 3.0
        assert ev.error == "" and ev.baseline is not None
        assert len([e for e in sup.events if e.kind == "wedged"]) >= 2
        assert any(line.startswith("kernel time limit 0.3 s") for line in lines)
    finally:
        sup.close()
