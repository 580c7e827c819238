"""Every corpus kernel through the runner with its checked spec (marker gpu).

For each kernel of tests/data/spec_corpus: the checked spec becomes a Problem (nominal and
ragged cases, three seeds), the kernel file (local headers inlined: the runner compiles one
translation unit) the baseline and a copy of it the one candidate. The candidate must pass:
the baseline ran without a fault on the spec's inputs (bf16/fp8 buffers, CSR row pointers,
permutations, index ranges), wrote its outputs, and repeats bit for bit (within tolerance for
``atomics`` kernels). Skipped, with the reason, without pycuda or a GPU.
"""

from __future__ import annotations

import pytest

import spec_corpus as sc
from cudalens.spec.resolve import build_problem, build_variant

pytestmark = pytest.mark.gpu

SM_COUNT = 132  # H100/H200; the grid of these specs does not use it


@pytest.fixture(scope="module")
def runner():
    from gpu_runner.runner import NoGpuError, Runner

    try:
        r = Runner()
    except NoGpuError as e:
        pytest.skip(str(e))
    yield r
    r.close()


@pytest.mark.parametrize("entry", sc.entries(), ids=lambda e: e.name)
def test_corpus_kernel_runs_with_its_checked_spec(runner, entry):
    spec = entry.checked
    problem = build_problem(spec, entry.kernel)
    source = sc.inlined_source(entry)
    base = build_variant("baseline", source, entry.kernel.qualified_name, spec, spec.launch,
                         SM_COUNT)
    copy = build_variant("copy", source, entry.kernel.qualified_name, spec, spec.launch,
                         SM_COUNT)
    ev = runner.evaluate(problem, base, [copy], repetitions=3, warmup=1, time_budget_s=10.0)
    assert ev.error == "", f"{entry.name}: {ev.error}"
    (result,) = ev.candidates
    assert result.verdict.status == "passed", f"{entry.name}: {result.verdict.reason}"
    assert ev.baseline is not None
