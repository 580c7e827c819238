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


ROW_FORMS = [v for v in HITS if v.pass_name in ("block_per_row", "warp_per_row")]


@pytest.mark.parametrize("v", ROW_FORMS, ids=IDS(ROW_FORMS))
def test_row_forms_verify_online_and_under_the_users_launch(runner, v):
    """Every online-softmax form the row passes offer, under its own launch, and every
    grid-stride form also under the user's (spec's) launch, where it claims to be a drop-in."""
    ctx = context(v)
    sm = runner.device_info().sm_count
    kernel = ctx.kernel.qualified_name
    p = get(v.pass_name)
    forms = [d for d in p.parameter_space(ctx) if d.get("online") or d.get("gridstride")]
    if not forms:
        pytest.skip(f"{v.id}: no online or grid-stride form")
    problem = build_problem(ctx.spec, ctx.kernel)
    baseline = build_variant("baseline", ctx.text, kernel, ctx.spec, ctx.spec.launch, sm)
    variants, labels = [], []
    for i, params in enumerate(forms[:6]):
        r = p.apply(ctx, **params)
        variants.append(build_variant(f"own{i}", r.source, kernel, ctx.spec, r.launch, sm))
        labels.append(f"{params} own launch")
        if params.get("gridstride"):
            variants.append(build_variant(f"user{i}", r.source, kernel, ctx.spec,
                                          ctx.spec.launch, sm))
            labels.append(f"{params} user's launch")
    ev = runner.evaluate(problem, baseline, variants, repetitions=10, warmup=2,
                         time_budget_s=4.0)
    assert not ev.error, ev.error
    for label, r in zip(labels, ev.candidates):
        assert r.verdict.ok, f"{v.id} {label}: {r.verdict.status}: {r.verdict.reason}"
        shown = f"{r.speedup.value:6.2f}x" if r.speedup is not None else "not timed"
        RESULTS.append(f"{v.id:45s} {label:45s} {shown}")
