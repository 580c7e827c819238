"""The adversarial suite's verdicts without a GPU, to carry every one of them through the
runner's HTTP service and client (``test_adversarial_http.py``).

For each candidate of ``tests/data/runner/adversarial/index.json``, ``simulated_result`` is what
the runner's own verdict code (``gpu_runner.verdicts``: ``judge_run``, ``judge_repeat``,
``judge_stale``, ``guard_verdict``, ``launch_verdict``, ``timeout_verdict``) says about a host
model of the cheat's symptom on the suite's real problems (``test_adversarial_gpu.make_problem``:
the same sizes and seeded inputs): outputs left holding the NaN poison from the index where the
cheat stops writing, an input changed at index 7, a guard byte past the end hit, half-precision
results, replayed results, a second run or the run after the timing loop that writes nothing,
a lost partial sum, an uninitialized halo; correct rewrites pass, timed. The values are the
real ones (NaN read back, float32 expected values, element counts), so each verdict carries
what the GPU run's does. Deterministic: the test and the fake worker compute the same result.

``SimulatedAdversarialBackend`` is a fake GPU worker backend (``service_fakes.FakeBackend``'s
device and compile) whose evaluations return these results.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from gpu_runner.buffers import GuardDamage
from gpu_runner.events import Verifying
from gpu_runner.inputs import make_inputs
from gpu_runner.patterns import poison_array
from gpu_runner.problem import Case, Problem
from gpu_runner.report import CandidateResult, CompileReport, Evaluation, Speedup, Timing, Verdict
from gpu_runner.verdicts import (RunResult, judge_repeat, judge_run, judge_stale, launch_verdict,
                                 timeout_verdict)
from service_fakes import FakeBackend, fake_info
from test_adversarial_gpu import (NOMINAL, RAGGED, REDUCE_BLOCK, entries, make_problem,
                                  saxpy_half, saxpy_reference)

PASSED_REASON = ("matches the baseline on every case and seed, twice, and again after the "
                 "timing loop")


def _case(problem: Problem, label: str) -> Case:
    return next(c for c in problem.cases if c.label == label)


@functools.lru_cache(maxsize=None)
def reference(name: str, label: str, seed: int) -> np.ndarray:
    """The baseline's output on case ``label``, seed ``seed`` (host models of the three
    baselines, float32 as the device computes them)."""
    if name == "saxpy":
        return saxpy_reference(label, seed)
    x = make_inputs(_case(make_problem(name), label), seed)["x"]
    if name == "block_sum":
        padded = np.zeros(-(-x.size // REDUCE_BLOCK) * REDUCE_BLOCK, np.float32)
        padded[:x.size] = x
        return padded.reshape(-1, REDUCE_BLOCK).sum(axis=1, dtype=np.float32)
    left = np.concatenate(([np.float32(0)], x[:-1]))
    right = np.concatenate((x[1:], [np.float32(0)]))
    return ((left + x) + right).astype(np.float32)


def _output_name(name: str) -> str:
    return "z" if name == "saxpy" else "out"


def _poisoned_from(ref: np.ndarray, start: int) -> np.ndarray:
    out = ref.copy()
    out[start:] = poison_array("float32", ref.size - start)
    return out


def simulated_verdict(entry: dict) -> Verdict:
    """The verdict the runner's verdict code gives the modelled symptom of ``entry`` (an index
    entry); ``passed`` for a correct rewrite."""
    label, name = entry["label"], entry["problem"]
    problem = make_problem(name)
    out = _output_name(name)
    case_label = "ragged" if label in ("writes_past_end", "whole_blocks_only",
                                       "replays_first_result") else "nominal"
    case = _case(problem, case_label)
    inputs = make_inputs(case, 1)
    ref = {out: reference(name, case_label, 1)}
    inputs_after = {k: v for k, v in inputs.items() if k in ("x", "y")}

    def run(values: np.ndarray, **kw) -> RunResult:
        return RunResult(outputs={out: values}, inputs_after=kw.get("after", inputs_after),
                         guard=kw.get("guard"))

    good = ref[out]
    if entry["expect"] == "passed":
        return Verdict(label, "passed", PASSED_REASON)
    if label == "partial_output":
        return judge_run(label, case, 1, inputs, run(_poisoned_from(good, NOMINAL // 2)), ref)
    if label == "writes_nothing":
        return judge_run(label, case, 1, inputs, run(_poisoned_from(good, 0)), ref)
    if label == "whole_blocks_only":
        return judge_run(label, case, 1, inputs,
                         run(_poisoned_from(good, RAGGED // 256 * 256)), ref)
    if label == "changes_input":
        y = inputs["y"].copy()
        y[7] = 0.0
        return judge_run(label, case, 1, inputs, run(good, after={"x": inputs["x"], "y": y}),
                         ref)
    if label == "writes_past_end":
        return judge_run(label, case, 1, inputs,
                         run(good, guard=GuardDamage(out, "after", RAGGED, 4)), ref)
    if label == "hangs":
        return timeout_verdict(label, case, 1, "the kernel did not finish within 2 s")
    if label == "illegal_address":
        return launch_verdict(label, case, 1, "cuCtxSynchronize failed: an illegal memory "
                                              "access was encountered")
    if label == "half_precision":
        return judge_run(label, case, 1, inputs, run(saxpy_half("nominal", 1)), ref)
    if label == "replays_first_result":
        replayed = reference(name, "nominal", 1)[:RAGGED].copy()
        return judge_run(label, case, 1, inputs, run(replayed), ref)
    if label == "works_every_other_call":
        return judge_repeat(label, case, 1, inputs, run(good), run(_poisoned_from(good, 0)), ref)
    if label == "works_every_other_call_after_verification":
        return judge_stale(label, case, 1, inputs, run(_poisoned_from(good, 0)), ref)
    if label == "missing_barrier":
        lost = good.copy()
        lost[5::97] -= np.float32(0.5)  # a block sum that lost a partial sum
        return judge_run(label, case, 1, inputs, run(lost), ref)
    if label == "uninitialized_shared":
        halo = good.copy()
        halo[255::256] = np.float32(3.0e38)  # what the never-loaded halo happened to hold
        return judge_run(label, case, 1, inputs, run(halo), ref)
    raise KeyError(f"no model of adversarial candidate '{label}'; add one to "
                   f"tests/adversarial_sim.py")


def _timing(label: str, median: float) -> Timing:
    info = fake_info(0)
    gbps = 12 * NOMINAL / (median * 1e3)
    return Timing(variant=label, median_us=median, q1_us=median * 0.995,
                  q3_us=median * 1.004, min_us=median * 0.99, samples=20,
                  achieved_gbps=gbps, percent_of_copy=gbps / info.copy_bandwidth_gbps * 100,
                  gflops=2 * NOMINAL / (median * 1e3), median_ci_low_us=median * 0.998,
                  median_ci_high_us=median * 1.003, ci_half_width_pct=0.25,
                  stop_reason="converged", sm_clock_mhz=1980, throttle_reasons=(),
                  clock_source="nvml", roofline_floor_us=median / 3, roofline_note="")


def simulated_result(entry: dict) -> CandidateResult:
    """``entry``'s full result: compile report, verdict and, for a correct rewrite, a timing
    and a speedup."""
    label = entry["label"]
    verdict = simulated_verdict(entry)
    compiled = CompileReport(variant=label, ok=True, registers=16 + len(label) % 17,
                             max_threads_per_block=1024, seconds=0.25)
    if not verdict.ok:
        return CandidateResult(compile=compiled, verdict=verdict)
    median = 10.0 + len(label) / 7
    return CandidateResult(compile=compiled, verdict=verdict, timing=_timing(label, median),
                           speedup=Speedup(value=12.0 / median, ci_low=11.9 / median,
                                           ci_high=12.1 / median))


class SimulatedAdversarialBackend(FakeBackend):
    """Evaluations whose candidates are adversarial index entries (by label): each gets
    ``simulated_result``; the baseline is timed at 12 us."""

    def evaluate(self, task, progress) -> Evaluation:
        spec = task.spec
        by_label = {e["label"]: e for e in entries()}
        results = []
        for c in spec.candidates:
            progress(Verifying(c.label, "simulated", os.getpid()))
            results.append(simulated_result(by_label[c.label]))
        base = spec.baseline.label
        return Evaluation(device=self.info,
                          baseline_compile=CompileReport(variant=base, ok=True, registers=16),
                          baseline=_timing(base, 12.0), candidates=tuple(results))
