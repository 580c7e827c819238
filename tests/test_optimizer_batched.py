"""The batched search (``cudalens.optimizer.batched``) with a fake runner: order (every
family's representative first, then the best families' parameters), budgets of candidates
and of seconds, pruning that costs no budget, refinement, determinism; the runner adapter
with a fake client; and ``__launch_bounds__`` refinement from a real compile report."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from cudalens.optimizer.batched import Budget, Scored, bounds_refiner, run, runner_evaluate
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.prune import CompilePruner
from cudalens.optimizer.staged_search import ordered
from cudalens.spec.model import LaunchDecl

from nvcc_util import needs_nvcc
from optimizer_fixtures import context, context_with_spec

LAUNCH = LaunchDecl(block=("256",), grid=("ceil_div(n, block.x)",))


def _c(family: str, i: int) -> Candidate:
    return Candidate(label=f"{family} p={i}", explanation="e", source=f"// {family} {i}",
                     kernel="k", launch=LAUNCH, passes=("x",), family=family)


# families a, b, c with 4 members each, in pool order
POOL = [_c(f, i) for f in "abc" for i in range(4)]
SCORES = {"a": [1.1, 1.0, 1.3, 0.9], "b": [2.0, 2.5, 1.9, 2.2], "c": [None, 0.5, 0.5, 0.5]}


class FakeRunner:
    def __init__(self, clock=None, step=0.0):
        self.batches: list[list[str]] = []
        self.clock, self.step = clock, step

    def __call__(self, cands):
        self.batches.append([c.label for c in cands])
        if self.clock is not None:
            self.clock.now += self.step
        return [Scored(c, SCORES[c.family][int(c.label.split("=")[1])], {"label": c.label})
                for c in cands]


def test_representatives_first_then_the_best_families():
    runner = FakeRunner()
    result = run(POOL, runner, budget=Budget(candidates=7, batch=3))
    assert runner.batches == [
        ["a p=0", "b p=0", "c p=0"],      # one per family, in pool order
        ["b p=1", "b p=2", "b p=3"],      # the better half of the measured families: b
        ["a p=1"],                        # b is done; the rest, best first
    ]
    assert [s.candidate.label for s in result.scored][:3] == ["a p=0", "b p=0", "c p=0"]
    assert result.best.candidate.label == "b p=1" and result.best.score == 2.5
    assert result.best.result == {"label": "b p=1"}
    assert result.batches == 3
    assert result.stop == "the budget of 7 timed candidates is used"


def test_two_good_families_take_turns():
    scores = {"a": [2.0, 1.0, 1.0, 1.0], "b": [2.1, 1.0, 1.0, 1.0], "c": [1.5, 1.0, 1.0, 1.0],
              "d": [0.9, 1.0, 1.0, 1.0]}
    pool = [_c(f, i) for f in "abcd" for i in range(4)]
    seen = []

    def evaluate(cands):
        seen.append([c.label for c in cands])
        return [Scored(c, scores[c.family][int(c.label.split("=")[1])]) for c in cands]

    run(pool, evaluate, budget=Budget(candidates=8, batch=4))
    assert seen[1] == ["b p=1", "a p=1", "b p=2", "a p=2"]  # top half of 4 families: b, a


@pytest.mark.parametrize("budget", [0, 1, 5, 12, 100])
def test_candidate_budget_is_respected(budget):
    runner = FakeRunner()
    result = run(POOL, runner, budget=Budget(candidates=budget, batch=4))
    assert len(result.scored) == min(budget, len(POOL))
    assert sum(len(b) for b in runner.batches) == len(result.scored)
    if budget > len(POOL):
        assert result.stop == "every candidate was tried or pruned"


def test_time_budget_stops_between_batches():
    clock = SimpleNamespace(now=100.0)
    runner = FakeRunner(clock, step=4.0)
    result = run(POOL, runner, budget=Budget(candidates=100, seconds=10.0, batch=2),
                 clock=lambda: clock.now)
    # batches start at t = 0, 4, 8 s; the one that would start at 12 s does not
    assert result.batches == 3 and len(result.scored) == 6
    assert result.stop == "the time budget of 10 s is used"


def test_pruned_candidates_cost_no_budget_and_keep_their_reason():
    runner = FakeRunner()

    def prune(cands):
        return [SimpleNamespace(reason="spills 8 bytes" if c.label.endswith("=1") else None)
                for c in cands]

    result = run(POOL, runner, budget=Budget(candidates=6, batch=3), prune=prune)
    assert len(result.scored) == 6
    assert not any(s.candidate.label.endswith("=1") for s in result.scored)
    assert [(d.candidate.label, d.reason) for d in result.dropped] == [
        ("b p=1", "spills 8 bytes"), ("a p=1", "spills 8 bytes")]
    # b's turn (the best family), then the rest best first: a before c (c failed)
    assert runner.batches[1] == ["b p=2", "b p=3", "a p=2"]


def test_refine_adds_to_the_family_and_duplicates_are_ignored():
    runner = FakeRunner()
    extra = dataclasses.replace(_c("b", 3), label="b p=0", source="// b refined")

    def refine(s):
        return [extra, POOL[0]] if s.candidate.label == "b p=0" else []

    result = run(POOL[4:8] + POOL[:1], runner, budget=Budget(candidates=10, batch=2),
                 refine=refine)
    labels = [s.candidate.label for s in result.scored]
    assert labels.count("a p=0") == 1  # already in the pool: not added twice
    assert labels.count("b p=0") == 2  # the refined one ran too


def test_same_pool_same_measurements_same_choices():
    a = run(POOL, FakeRunner(), budget=Budget(candidates=9, batch=4))
    b = run(POOL, FakeRunner(), budget=Budget(candidates=9, batch=4))
    assert [s.candidate.key for s in a.scored] == [s.candidate.key for s in b.scored]


def test_evaluator_must_answer_every_candidate():
    with pytest.raises(ValueError, match="evaluate returned 1 results for 3 candidates"):
        run(POOL, lambda cands: [Scored(cands[0], 1.0)], budget=Budget(candidates=3, batch=3))


@pytest.mark.parametrize("kwargs,message", [
    ({"candidates": -1}, "budget.candidates must be >= 0, found -1"),
    ({"candidates": 1, "batch": 0}, "budget.batch must be >= 1, found 0"),
    ({"candidates": 1, "seconds": 0}, "budget.seconds must be > 0 when given, found 0"),
])
def test_bad_budgets(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Budget(**kwargs)


def test_builtin_pool_runs_through_the_search():
    ctx = context("elementwise.cu", "saxpy")
    pool = ordered(ctx, seed=5)

    def evaluate(cands):
        return [Scored(c, 2.0 if "vec4" in c.label else 1.0) for c in cands]

    result = run(pool, evaluate, budget=Budget(candidates=12, batch=6))
    families = [s.candidate.family for s in result.scored]
    assert families[:6] == ["restrict vec4+gridstride", "restrict gridstride", "vec4+gridstride",
                            "gridstride", "restrict", ""]
    # the second batch tunes the better half of the 6 families: the two vectorized ones and
    # the first of those tied at 1.0
    assert set(families[6:]) == {"restrict vec4+gridstride", "vec4+gridstride",
                                 "restrict gridstride"}


def test_runner_adapter_labels_variants_and_scores_only_verified_results():
    ctx = context("elementwise.cu", "saxpy")
    calls = []

    def result(ok, value):
        return SimpleNamespace(verdict=SimpleNamespace(ok=ok),
                               speedup=SimpleNamespace(value=value) if value else None)

    class Client:
        def evaluate(self, problem, baseline, variants, repetitions, on_event):
            calls.append(([v.label for v in variants], repetitions))
            return SimpleNamespace(error="", candidates=(result(True, 1.5), result(False, 3.0)))

    evaluate = runner_evaluate(Client(), "problem", "baseline", ctx.spec, "saxpy", 132,
                               repetitions=7)
    pool = ordered(ctx, seed=0)[:4]
    first = evaluate(pool[:2])
    second = evaluate(pool[2:4])
    assert [s.score for s in first] == [1.5, None]  # a failed verification has no score
    assert calls == [(["c1", "c2"], 7), (["c3", "c4"], 7)]
    assert second[0].candidate is pool[2]

    class Broken:
        def evaluate(self, *a, **k):
            return SimpleNamespace(error="compile failed", candidates=())

    with pytest.raises(RuntimeError, match="the baseline kernel saxpy could not be measured: "
                                           "compile failed"):
        runner_evaluate(Broken(), "p", "b", ctx.spec, "saxpy", 132)(pool[:1])


HEAVY_SPEC = """
kernel heavy
size n = 4096
scalar n: int = n
in x: float[n]
out y: float[n]
block = 256
grid = ceil_div(n, block.x)
"""


@needs_nvcc
def test_bounds_refinement_from_the_compile_report():
    from test_optimizer_prune import HEAVY
    ctx = context_with_spec(HEAVY, "heavy", HEAVY_SPEC)
    pruner = CompilePruner(ctx)
    cand = Candidate(label="restrict", explanation="e", source=ctx.text, kernel="heavy",
                     launch=ctx.launch, passes=("restrict_const",), family="restrict")
    pruner([cand])
    refine = bounds_refiner(ctx, pruner)
    assert refine(Scored(cand, None)) == []  # failed candidates are not refined
    (extra,) = refine(Scored(cand, 1.0))
    assert "__launch_bounds__(256, 8) heavy(" in extra.source
    assert extra.label == "restrict bounds=256x8" and extra.family == "restrict"
    assert extra.passes == ("restrict_const", "launch_bounds")
    assert extra.explanation.endswith("at most 32 registers per thread so that 8 blocks (64 "
                                      "warps) fit on each SM, for more occupancy to hide memory "
                                      "latency")
    assert refine(Scored(extra, 1.0)) == []  # already bounded
    # and the pruner then drops it: ptxas spills to fit 32 registers
    assert pruner([extra])[0].reason.startswith("spills registers to local memory")


@needs_nvcc
def test_whole_search_prunes_refines_and_sweeps_extra_candidates():
    from test_optimizer_prune import HEAVY
    from cudalens.optimizer.batched import search

    ctx = context_with_spec(HEAVY, "heavy", HEAVY_SPEC)
    llm = Candidate(label="llm", explanation="e", kernel="heavy", passes=("llm",),
                    source="#define UNROLL 2 // @tune 2, 4\n" + ctx.text, launch=ctx.launch)
    seen = []

    def evaluate(cands):
        seen.extend(c.label for c in cands)
        return [Scored(c, 1.0 + 0.01 * len(seen)) for c in cands]

    result = search(ctx, evaluate, budget=Budget(candidates=40, batch=4), seed=0, extra=[llm])
    # the passes' candidates and the swept LLM candidate were measured
    first_batch = seen[:4]
    assert "llm UNROLL=2" in first_batch and "block=128" in first_batch
    assert "llm UNROLL=4" in seen
    reasons = {d.candidate.label: d.reason for d in result.dropped}
    # 156 registers: blocks of 512 or more threads cannot launch at all
    assert reasons["block=512"] == ("cannot launch: 156 registers x 512 threads exceed what one "
                                    "SM holds")
    # bounds that force spills were proposed by the refiner and dropped by the pruner
    assert reasons["bounds=128x16 block=128"].startswith("spills registers to local memory")
    assert result.stop == "every candidate was tried or pruned"


def test_a_pruned_representative_is_replaced_by_the_next_of_its_family():
    runner = FakeRunner()

    def prune(cands):
        return [SimpleNamespace(reason="cannot launch" if c.label == "a p=0" else None)
                for c in cands]

    run(POOL, runner, budget=Budget(candidates=3, batch=3), prune=prune)
    assert runner.batches == [["b p=0", "c p=0", "a p=1"]]


SCALE_H = """#pragma once
__device__ __forceinline__ float scale_by(float v, float s) { return v * s; }
"""
SCALED_CU = """#include "common/scale.h"

__global__ void scaled(float *out, const float *in, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = scale_by(in[i], s);
}
"""
SCALED_SPEC = """kernel scaled
size n = 4096
out out: float[n]
in in: float[n]
scalar s: float = 2.0
scalar n: int = n
block = 256
grid = ceil_div(n, block.x)
"""


@needs_nvcc
def test_runner_adapter_sends_the_project_headers_and_the_variants_compile(tmp_path):
    # src/scaled.cu includes src/common/scale.h: the runner compiles only what the request
    # carries, so each variant must carry that header (and the source's path beside it).
    from gpu_runner.compiler import cubin_with_files
    from cudalens.build import build_for, request_files
    from nvcc_util import ARCH, nvcc_path

    (tmp_path / ".git").mkdir()
    (tmp_path / "src" / "common").mkdir(parents=True)
    (tmp_path / "src" / "common" / "scale.h").write_text(SCALE_H)
    path = tmp_path / "src" / "scaled.cu"
    path.write_text(SCALED_CU)
    build = request_files(path, SCALED_CU, build_for(path))
    # named from the repository's root (its .git), found through -Isrc
    assert build.files == {"src/common/scale.h": SCALE_H} and build.source_path == "kernel.cu"
    assert build.options == ("-Isrc",)
    ctx = context_with_spec(SCALED_CU, "scaled", SCALED_SPEC, name=str(path))
    sent = []

    class Client:
        def evaluate(self, problem, baseline, variants, repetitions, on_event):
            sent.extend(variants)
            return SimpleNamespace(error="", candidates=tuple(
                SimpleNamespace(verdict=SimpleNamespace(ok=False), speedup=None)
                for _ in variants))

    pool = ordered(ctx, seed=0)[:2]
    runner_evaluate(Client(), "p", "b", ctx.spec, "scaled", 132, build=build)(pool)
    assert [v.label for v in sent] == ["c1", "c2"]
    for v, c in zip(sent, pool):
        assert v.files == {"src/common/scale.h": SCALE_H}
        assert v.source_path == build.source_path
        assert v.options == (*build.options, *c.options)
        cubin, log = cubin_with_files(v, ARCH, nvcc=nvcc_path())
        assert cubin is not None, log
    # without the build the header is not sent and the runner's compile cannot find it
    sent.clear()
    runner_evaluate(Client(), "p", "b", ctx.spec, "scaled", 132)(pool[:1])
    assert sent[0].files == {} and sent[0].source_path == "kernel.cu"
    cubin, log = cubin_with_files(sent[0], ARCH, nvcc=nvcc_path())
    assert cubin is None and "common/scale.h" in log, log
