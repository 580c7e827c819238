"""A model's ``@tune`` sweep is pruned by the built-in search's compile-report rules before
any setting is timed (``cudalens.agent.setting_prune``), with real nvcc: a setting that
spills registers where the original spills none is not sent to the runner, and the model is
told why. Where every setting would be dropped, all are measured and a note says so."""

from __future__ import annotations

import re
import shutil

import pytest

from agent_fakes import FakeRunner, saxpy_target
from cudalens.agent.config import AgentConfig
from cudalens.agent.loop import run_agent
from fake_openai import MODEL, FakeOpenAI, reply

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None,
                                reason="needs nvcc: the settings are judged by ptxas's report")

# 64 / 96 values live at once, but __launch_bounds__(1024, 2) leaves 32 registers per thread:
# VALS=96 spills, VALS=4 does not.
SWEPT = """#define VALS 4 // @tune 4, 96
__global__ void __launch_bounds__(1024, 2) saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v[VALS];
#pragma unroll
    for (int k = 0; k < VALS; ++k) v[k] = x[(i + k * 977) % n];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < VALS; ++k) s += v[k] * v[VALS - 1 - k] + v[(k * 7) % VALS];
    y[i] = a * x[i] + y[i] + 0.0f * s;
}"""


def config(fake: FakeOpenAI) -> AgentConfig:
    return AgentConfig(model=MODEL, base_url=fake.url, max_retries=0, request_timeout_s=5.0,
                       rounds=2, candidates_per_round=1, steps_per_round=1, tools="off",
                       confirm_top=0)


def fenced(code: str) -> str:
    return f"Sweep the values per thread.\n```cuda\n{code}\n```"


def test_a_setting_that_spills_is_not_timed_and_the_model_is_told(tmp_path):
    runner = FakeRunner()
    with FakeOpenAI([reply(fenced(SWEPT)), reply("nothing more")]) as fake:
        result = run_agent(saxpy_target(tmp_path), runner, config(fake))
        told = [[m for m in b["messages"] if m["role"] == "user"][-1]["content"]
                for b in fake.chat_bodies()]
    # the original alone, then one batch holding only VALS=4
    assert [len(c) for c in runner.calls] == [0, 1]
    assert [re.search(r"#define VALS (\d+)", v.source).group(1) for v in runner.calls[1]] == \
        ["4"]
    found = re.search(r"settings not measured:\n  - VALS=96: not timed: spills registers to "
                      r"local memory \((\d+) bytes stored, (\d+) bytes loaded per thread at 32 "
                      r"registers\) where the baseline spills none", told[1])
    assert found is not None, told[1]
    assert int(found.group(1)) > 0 and int(found.group(2)) > 0
    assert not any("were not pruned" in n for n in result.notes), result.notes


def test_when_every_setting_would_be_dropped_all_are_measured(tmp_path):
    both_spill = SWEPT.replace("@tune 4, 96", "@tune 96, 128").replace("VALS 4 ", "VALS 96 ")
    runner = FakeRunner()
    with FakeOpenAI([reply(fenced(both_spill)), reply("nothing more")]) as fake:
        result = run_agent(saxpy_target(tmp_path), runner, config(fake))
    assert [re.search(r"#define VALS (\d+)", v.source).group(1) for v in runner.calls[1]] == \
        ["96", "128"]
    assert ("r1c1: every setting would be dropped by the built-in search's compile-report "
            "rules; all were measured") in result.notes
