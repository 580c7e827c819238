"""Sweeping ``@tune`` parameters of a candidate's source (``cudalens.optimizer.tunables``, the
LLM agent's marker) into a family of candidates the batched search measures like the passes'
parameters."""

from __future__ import annotations

import pytest

from cudalens.optimizer.batched import Budget, Scored, run
from cudalens.optimizer.candidate import Candidate
from cudalens.optimizer.tunables import TuneError, has_tunables, sweep
from cudalens.spec import expr as spec_expr
from cudalens.spec.model import LaunchDecl

from nvcc_util import compile_source, needs_nvcc
from optimizer_fixtures import context

SOURCE = """\
#define TILE 32 // @tune 16, 32, 64
#define ROWS 8  /* @tune 4, 8 */
#define PAD 1
__global__ void transpose(const float* in, float* out, int w, int h) {
    __shared__ float tile[TILE][TILE + PAD];
    int c = blockIdx.x * TILE + threadIdx.x;
    for (int j = threadIdx.y; j < TILE; j += ROWS) {
        int r = blockIdx.y * TILE + j;
        if (r < h && c < w) tile[j][threadIdx.x] = in[r * w + c];
    }
    __syncthreads();
    int r2 = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        int c2 = blockIdx.y * TILE + threadIdx.x;
        if (r2 + j < w && c2 < h) out[(r2 + j) * h + c2] = tile[threadIdx.x][threadIdx.y + j];
    }
}
"""


def _numbers(launch: LaunchDecl):
    env = {"w": 1024, "h": 768}
    block = tuple(spec_expr.evaluate(b, env) for b in launch.block)
    env["block"] = spec_expr.Dim3(*(block + (1,)))
    return block, tuple(spec_expr.evaluate(g, env) for g in launch.grid)


def _cand(source=SOURCE, family=""):
    launch = LaunchDecl(block=("TILE", "ROWS"), grid=("ceil_div(w, TILE)", "ceil_div(h, TILE)"))
    return Candidate(label="llm-tiled", explanation="an LLM's tiled transpose", source=source,
                     kernel="transpose", launch=launch, passes=("llm",), family=family)


def test_sweep_gives_one_candidate_per_setting_as_written_first():
    spec = context("rejects.cu", "transpose").spec  # sizes w, h
    out = sweep(_cand(), spec)
    assert [c.label for c in out] == [
        "llm-tiled TILE=32 ROWS=8", "llm-tiled TILE=16 ROWS=4", "llm-tiled TILE=16 ROWS=8",
        "llm-tiled TILE=32 ROWS=4", "llm-tiled TILE=64 ROWS=4", "llm-tiled TILE=64 ROWS=8"]
    assert {c.family for c in out} == {"llm-tiled"}
    first, second = out[0], out[1]
    assert _numbers(first.launch) == ((32, 8), (32, 24))  # w = 1024, h = 768
    assert _numbers(second.launch) == ((16, 4), (64, 48))
    assert "#define TILE 16  // tuned by cudalens over 16, 32, 64" in second.source
    assert "#define ROWS 4  // tuned by cudalens over 4, 8" in second.source
    assert "#define PAD 1" in second.source
    assert len({c.key for c in out}) == 6


def test_no_marker_is_the_candidate_itself_and_sizes_are_not_substituted():
    plain = _cand(SOURCE.replace(" // @tune 16, 32, 64", "").replace("  /* @tune 4, 8 */", ""),
                  family="f")
    spec = context("rejects.cu", "transpose").spec
    assert not has_tunables(plain.source)
    assert sweep(plain, spec) == [plain]
    # a #define named like a size must not change the launch's use of the size
    source = "#define w 3 // @tune 3, 5\n" + SOURCE
    got = sweep(_cand(source), spec)
    assert "w" in spec_expr.names_in(got[0].launch.grid[0])
    assert _numbers(got[0].launch)[1] == (32, 24)


def test_malformed_markers_and_limits():
    spec = context("rejects.cu", "transpose").spec
    with pytest.raises(TuneError, match="line 1: @tune values must be integers"):
        sweep(_cand("#define TILE 32 // @tune 16, big\n" + SOURCE.split("\n", 1)[1]), spec)
    with pytest.raises(TuneError, match=r"3 \(TILE\) x 2 \(ROWS\) = 6 variants; at most 4"):
        sweep(_cand(), spec, limit=4)


def test_swept_family_is_tuned_by_the_batched_search():
    spec = context("rejects.cu", "transpose").spec
    family = sweep(_cand(), spec)
    other = Candidate(label="block=32x8", explanation="e", source="// naive", kernel="transpose",
                      launch=LaunchDecl(block=("32", "8"), grid=("1", "1")), passes=("lc",),
                      family="")
    speed = {"TILE=32 ROWS=8": 2.0, "TILE=64 ROWS=8": 2.6}

    def evaluate(cands):
        return [Scored(c, speed.get(c.label.split(" ", 1)[-1], 1.0)) for c in cands]

    result = run(family + [other], evaluate, budget=Budget(candidates=7, batch=2))
    assert [s.candidate.label for s in result.scored[:2]] == ["llm-tiled TILE=32 ROWS=8",
                                                             "block=32x8"]
    assert result.best.candidate.label == "llm-tiled TILE=64 ROWS=8"


@needs_nvcc
def test_every_setting_compiles():
    spec = context("rejects.cu", "transpose").spec
    for cand in sweep(_cand(), spec):
        assert compile_source(cand.source).ok, cand.label
