"""One optimize does each piece of work once (issue 12, "one source of truth"): the kernel's
text is parsed by tree-sitter once, by ``load_target`` through the one syntax layer
(``kernel_model/syntax.py``), never by ``make_context``, spec validation, inference or the
passes again; every candidate's variant is built once
(the confirmation relabels it, the winner's profile is the very variant that was sent).
Counted on the deterministic model runner (``tests/data/lsp/model_runner.py``), no GPU."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).absolute().parent / "data" / "lsp"))
sys.path.insert(0, str(Path(__file__).absolute().parent))

from model_runner import ModelRunnerClient  # noqa: E402
from parse_counts import count_parses  # noqa: E402

import cudalens.optimize as optimize_module  # noqa: E402
from cudalens.kernel_model import syntax  # noqa: E402
from cudalens.optimize import optimize  # noqa: E402
from cudalens.store.from_optimize import profile_subject  # noqa: E402
from cudalens.target import load_target  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def parses(monkeypatch):
    """Every tree-sitter parse from here on: (bytes parsed, caller), with the cache emptied."""
    yield count_parses(monkeypatch)
    syntax.clear_parses()


@pytest.mark.parametrize("name", ["saxpy", "layernorm"])
def test_one_optimize_parses_the_kernel_once(parses, name):
    path = EXAMPLES / f"{name}.cu"
    data = path.read_bytes()
    target = load_target(path)
    assert [where.split(":")[0] for d, where in parses if d == data] == ["syntax.py"]
    optimize(target, ModelRunnerClient(), budget=8, seed=0)
    # before the one syntax layer: target.py, then the launch-config pass's own parse
    seen = [where for d, where in parses if d == data]
    assert len(seen) == 1, f"expected 1 parse of {name}.cu, found {seen}"


def test_each_variant_is_built_once_and_the_profile_is_the_variant_sent(monkeypatch):
    builds = collections.Counter()
    real = optimize_module.build_variant

    def counting(label, source, name, spec, launch, *args, **kwargs):
        if not label.endswith("@user"):  # a drop-in check: the source under the user's launch
            builds[(source, launch.block, launch.grid, launch.shared,
                    tuple(kwargs.get("options", ())))] += 1
        return real(label, source, name, spec, launch, *args, **kwargs)

    monkeypatch.setattr(optimize_module, "build_variant", counting)
    result = optimize(load_target(EXAMPLES / "saxpy.cu"), ModelRunnerClient(), budget=14,
                      seed=0, batch=6)
    assert result.confirmed and result.winner is not None  # a confirmation run took place
    # one build per (source, launch, options): before, the winner's three times (a probe, its
    # batch, the confirmation) and a fourth for its profile
    assert len(builds) > 10 and max(builds.values()) == 1, \
        [k[1:] for k, n in builds.items() if n > 1]

    def no_build(*args, **kwargs):
        raise AssertionError("profile_subject built a variant again")

    monkeypatch.setattr("cudalens.spec.resolve.build_variant", no_build)
    ident, label, variant = profile_subject(result)
    sent = [v for b in result.batches for v in b.variants]
    assert label == result.winner.candidate.label
    assert any(v is variant for v in sent)  # the very variant of the confirmation
    assert variant.label == result.winner.result.verdict.variant
