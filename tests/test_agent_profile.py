"""Profile feedback in the agent loop: where the runner can profile (``profile(problem,
variant)``), the best candidate so far is profiled and the next round's feedback says where
its time goes; a failing profile is a note, not an error. The profiles here are the CSV
fixture's (``tests/data/ncu/saxpy_metrics.csv``, ncu's format, values chosen here)."""

from __future__ import annotations

from pathlib import Path

from gpu_runner.ncu_csv import parse_profile
from cudalens.engine.runner import ProfileAnswer
from cudalens.agent.config import AgentConfig
from cudalens.agent.loop import run_agent
from agent_fakes import FakeRunner, by_text, passed, saxpy_target
from fake_openai import MODEL, FakeOpenAI, reply

PROFILE = parse_profile((Path(__file__).resolve().parent / "data" / "ncu" /
                         "saxpy_metrics.csv").read_text())
SIG = "__global__ void saxpy(int n, float a, const float* x, float* y)"
FAST = SIG + "\n{\n    // fast\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n" \
             "    if (i < n) y[i] = a * x[i] + y[i];\n}"
FASTER = FAST.replace("// fast", "// faster")
JUDGE = by_text([("// faster", lambda label: passed(label, 2.0)),
                 ("// fast", lambda label: passed(label, 1.5))])


def fenced(code: str) -> str:
    return f"A rewrite.\n```cuda\n{code}\n```"


class ProfilingRunner(FakeRunner):
    def __init__(self, fail: bool = False):
        super().__init__(JUDGE)
        self.fail = fail
        self.profiled: list[str] = []

    can_profile = True

    def try_profile(self, problem, variant, *, timeout_s=180.0):
        self.profiled.append(next(m for m in ("faster", "fast again", "fast")
                                  if f"// {m}" in variant.source))
        if self.fail:
            raise RuntimeError("ncu failed profiling r1c1 (exit status 1): ==ERROR== "
                               "ERR_NVGPUCTRPERM")
        return ProfileAnswer(PROFILE)


def config(fake: FakeOpenAI) -> AgentConfig:
    return AgentConfig(model=MODEL, base_url=fake.url, max_retries=0, request_timeout_s=5.0,
                       rounds=3, candidates_per_round=1, steps_per_round=1, tools="off",
                       precheck=False, confirm_top=0)


def user_texts(fake: FakeOpenAI) -> list[str]:
    return [[m for m in b["messages"] if m["role"] == "user"][-1]["content"]
            for b in fake.chat_bodies()]


def test_the_best_candidate_is_profiled_and_the_profile_goes_back(tmp_path):
    target = saxpy_target(tmp_path)
    runner = ProfilingRunner()
    steps = [reply(fenced(FAST)), reply(fenced(FAST.replace("// fast", "// fast again"))),
             reply(fenced(FASTER))]
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, runner, config(fake))
        told = user_texts(fake)
    # r1c1 is the first best, r2c1 ties it (not better: not profiled), r3c1 is better
    assert runner.profiled == ["fast", "faster"]
    line = ("profile of r1c1 (Nsight Compute, one launch): achieved occupancy 83.5%, DRAM "
            "throughput 91.2% of peak; top stalls: long scoreboard 1012.40 cycles/instruction")
    assert line in told[1] and line in told[2]
    assert result.optimize.winner.candidate.label == "llm r3c1"


def test_a_failing_profile_is_noted_and_the_loop_goes_on(tmp_path):
    target = saxpy_target(tmp_path)
    runner = ProfilingRunner(fail=True)
    with FakeOpenAI([reply(fenced(FAST)), reply(fenced(FASTER))]) as fake:
        cfg = config(fake)
        result = run_agent(target, runner, AgentConfig(**{**cfg.__dict__, "rounds": 2}))
        told = user_texts(fake)
    assert "profile of" not in told[1]
    assert result.notes.count("the profile of r1c1 failed: ncu failed profiling r1c1 (exit "
                              "status 1): ==ERROR== ERR_NVGPUCTRPERM") == 1
    assert result.optimize.winner.candidate.label == "llm r2c1"
