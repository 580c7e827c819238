"""The agent loop on a real GPU (marker gpu): a scripted model replays a kernel that does not
compile, a tiled transpose with a wrong index, then a correct tiled transpose; the runner
verifies and times them, and the correct one must win with a speedup whose 95% interval lies
above 1.0, after the compile error and the mismatch went back to the model.

Skipped, with the reason, where no GPU runner can be started.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cudalens.agent.config import AgentConfig
from cudalens.agent.loop import run_agent
from cudalens.target import load_target
from fake_openai import MODEL, FakeOpenAI, reply

pytestmark = pytest.mark.gpu

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SIG = ("__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, "
       "int rows, int cols)")
TILED = """#define TILE 32
#define ROWS 8
""" + SIG + """
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS) {
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}"""
WRONG = TILED.replace("= tile[threadIdx.x][threadIdx.y + j]",
                      "= tile[threadIdx.y + j][threadIdx.x]")  # reads the tile untransposed
BROKEN = TILED.replace("__syncthreads();", "__syncthreads();\n    int k = tile_count;")
LAUNCH = "block = TILE, ROWS\ngrid = ceil_div(cols, TILE), ceil_div(rows, TILE)"


def block(code: str) -> str:
    return (f"Tile through shared memory so both reads and writes coalesce.\n"
            f"```cuda\n{code}\n```\n```launch\n{LAUNCH}\n```")


@pytest.fixture(scope="module")
def runner():
    from cudalens.runner_client import RunnerClient, RunnerUnavailable

    try:
        client = RunnerClient()
    except RunnerUnavailable as exc:
        pytest.skip(f"no GPU runner: {exc}")
    yield client
    close = getattr(client, "close", None)
    if close is not None:
        close()


def test_the_loop_finds_the_tiled_transpose_after_feedback(runner, tmp_path):
    for name in ("transpose.cu", "transpose.cu.spec"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    target = load_target(tmp_path / "transpose.cu")
    steps = [reply(block(BROKEN)), reply(block(WRONG)), reply(block(TILED))]
    with FakeOpenAI(steps) as fake:
        cfg = AgentConfig(model=MODEL, base_url=fake.url, rounds=2, candidates_per_round=1,
                          steps_per_round=2, tools="off", max_retries=0)
        result = run_agent(target, runner, cfg, repetitions=30)
        bodies = fake.chat_bodies()
    told = "\n".join(m["content"] for b in bodies for m in b["messages"] if m["role"] == "user")
    assert 'identifier "tile_count" is undefined' in told
    assert "wrong results: the first mismatching element is out[" in told
    counts = result.counts()
    assert counts.get("mismatch") == 1 and counts.get("passed") == 1, result.counts()
    winner = result.optimize.winner
    assert winner is not None, json.dumps([o.feedback for o in result.outcomes], indent=1)
    assert winner.candidate.label == "llm r2c1"
    assert winner.result.speedup.ci_low > 1.0
    print(f"tiled transpose: {winner.result.speedup.value:.2f}x "
          f"[{winner.result.speedup.ci_low:.2f}, {winner.result.speedup.ci_high:.2f}] on "
          f"{result.optimize.device.name}")
