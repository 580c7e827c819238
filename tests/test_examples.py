"""The examples: every spec fits its kernel, resolves to runner problems, and every candidate the
built-in optimizer proposes for it compiles with the real nvcc and keeps the harness valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from cudalens.optimizer.context import make_context
from cudalens.optimizer.staged_search import propose
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import load_target
from nvcc_util import compile_source, needs_nvcc

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.cu"))
SM_COUNT = 132  # an H200's multiprocessor count; any positive value resolves the grids


def test_there_are_at_least_six_examples_each_with_a_written_spec():
    assert len(EXAMPLES) >= 6
    for path in EXAMPLES:
        target = load_target(path)
        assert target.spec_origin == str(path) + ".spec", path


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_resolves_to_a_nominal_and_a_ragged_case(path):
    target = load_target(path)
    problem = build_problem(target.spec, target.kernel)
    assert [c.label for c in problem.cases] == ["nominal", "ragged"]
    assert problem.seeds == (1, 2, 3)
    nominal, ragged = problem.cases
    # Every buffer of the ragged case is smaller and holds a length that is not a multiple of
    # the block's x extent, so kernels that assume full blocks are caught.
    baseline = build_variant("baseline", target.text, target.kernel.name, target.spec,
                             target.spec.launch, SM_COUNT)
    block_x = baseline.launches[1].block[0]
    sizes_differ = False
    for a_nom, a_rag in zip(nominal.args, ragged.args):
        assert a_nom.name == a_rag.name
        if a_nom.kind == "buffer":
            assert a_rag.length <= a_nom.length
            sizes_differ |= a_rag.length < a_nom.length
    assert sizes_differ
    assert any(a.kind == "scalar" and isinstance(a.value, int) and a.value % block_x != 0
               for a in ragged.args) or block_x == 1
    assert nominal.bytes_moved > ragged.bytes_moved > 0


@needs_nvcc
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_proposed_candidate_compiles_and_resolves(path):
    target = load_target(path)
    ctx = make_context(target.text, str(path), target.kernel.name, target.spec)
    candidates = propose(ctx, budget=24, seed=0)
    assert len(candidates) <= 24
    for cand in candidates:
        compiled = compile_source(cand.source)
        assert compiled.ok, f"{cand.label}: {compiled.stderr}"
        variant = build_variant(cand.label, cand.source, target.kernel.name, target.spec,
                                cand.launch, SM_COUNT, options=cand.options)
        assert len(variant.launches) == 2
        assert all(t <= 1024 for t in (v.threads_per_block for v in variant.launches))
        assert cand.explanation and "\n" not in cand.explanation
