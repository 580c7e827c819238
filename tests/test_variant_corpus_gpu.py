"""The variant corpus on a real GPU (marker gpu): every corpus kernel whose pass fires is
verified against the original and timed by the runner, with two candidates each: the pass's
default rewrite alone, and the first candidate of the search's first batch that uses the
pass. The specs' sizes are small (a few MB) so the whole file runs in about two minutes; the
speedups are printed (``-s``), only verification is asserted (at these sizes launch overhead
is a large part of every time).

Skipped, with the reason, where pycuda or a GPU is missing.
"""

from __future__ import annotations

import pytest

from cudalens.optimizer.passes import get
from cudalens.optimizer.plan import make_plan
from cudalens.optimizer.staged_search import ordered
from cudalens.spec.resolve import build_problem, build_variant

from test_variant_corpus import HITS, IDS
from variant_corpus import context

pytestmark = pytest.mark.gpu

RESULTS: list[str] = []


@pytest.fixture(scope="module")
def runner():
    try:
        from gpu_runner.runner import NoGpuError, Runner
    except ImportError as exc:  # pycuda missing
        pytest.skip(f"the GPU runner cannot load: {exc}")
    try:
        r = Runner()
    except NoGpuError as exc:
        pytest.skip(str(exc))
    yield r
    r.close()
    print("\n== variant corpus on the GPU: speedup of each rewrite over its original ==")
    for line in RESULTS:
        print(line)


@pytest.mark.parametrize("v", HITS, ids=IDS(HITS))
def test_rewrites_verify_and_are_timed(runner, v):
    ctx = context(v)
    sm = runner.device_info().sm_count
    kernel = ctx.kernel.qualified_name
    default = get(v.pass_name).apply(ctx)
    first = next(c for c in make_plan(ctx).first_batch if v.pass_name in c.passes)
    pool = {c.label: c for c in ordered(ctx, 0)}
    chosen = pool[first.label]
    problem = build_problem(ctx.spec, ctx.kernel)
    baseline = build_variant("baseline", ctx.text, kernel, ctx.spec, ctx.spec.launch, sm)
    variants = [build_variant(v.pass_name, default.source, kernel, ctx.spec, default.launch, sm,
                              options=default.options),
                build_variant(chosen.label.replace(" ", "_"), chosen.source, kernel, ctx.spec,
                              chosen.launch, sm, options=chosen.options)]
    ev = runner.evaluate(problem, baseline, variants, repetitions=15, warmup=2,
                         time_budget_s=4.0)
    assert not ev.error, ev.error
    for label, r in zip((v.pass_name, chosen.label), ev.candidates):
        assert r.verdict.ok, f"{v.id} {label}: {r.verdict.status}: {r.verdict.reason}"
        assert r.timing is not None and r.speedup is not None, f"{v.id} {label}: not timed"
        RESULTS.append(f"{v.id:45s} {label:45s} {r.speedup.value:6.2f}x "
                       f"[{r.speedup.ci_low:.2f}, {r.speedup.ci_high:.2f}]")
