"""The agent loop end to end: a local chat-completions server replays scripted replies, a fake
runner judges the candidates, and the tests read what was sent back to the model.

Scripted replies: a candidate that does not compile (the real nvcc finds it before the runner),
one that computes wrong results (the runner's first mismatch goes back), ones that cheat (side
effects, a changed signature), malformed tool calls, a truncated reply, a slow reply past the
timeout, a 429 then success, a tuned candidate, and a good one that wins.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from cudalens.agent.config import AgentConfig, ModelPrice
from cudalens.agent.loop import run_agent
from cudalens.cli_agent import agent_record, summary_lines
from agent_fakes import FakeRunner, by_text, compile_failed, mismatched, passed, saxpy_target
from fake_openai import MODEL, FakeOpenAI, Step, reply, tool_call
from nvcc_util import needs_nvcc

SIG = "__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)"
GOOD = SIG + """
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = a * x[i] + y[i];
    }
}"""
WRONG = SIG + """
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i] + 1.0f;
    }
}"""
BROKEN = SIG + """
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * xx[i] + y[i];
    }
}"""
CHEAT = SIG + """
{
    float* scratch;
    cudaMalloc(&scratch, 4);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"""
RESIGNED = GOOD.replace("int n,", "long n,")
TUNED = "#define BLOCK 256 // @tune 128, 256\n" + GOOD

JUDGE = by_text([("+ 1.0f", mismatched),
                 ("gridDim.x * blockDim.x", lambda label: passed(label, 1.8))])


def fenced(*candidates: tuple[str, str, str]) -> str:
    parts = []
    for explanation, code, launch in candidates:
        part = f"{explanation}\n```cuda\n{code}\n```"
        if launch:
            part += f"\n```launch\n{launch}\n```"
        parts.append(part)
    return "\n\n".join(parts)


def config(fake: FakeOpenAI, **kw) -> AgentConfig:
    base = dict(model=MODEL, base_url=fake.url, max_retries=0, request_timeout_s=5.0,
                rounds=2, candidates_per_round=2, steps_per_round=2, tools="off")
    base.update(kw)
    return AgentConfig(**base)


def last_user(body: dict) -> str:
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


def no_precheck(**kw):
    return dict(precheck_fn=None, **kw)


@needs_nvcc
def test_fenced_rounds_feed_back_compile_errors_mismatches_refusals_and_pick_the_winner(tmp_path):
    target = saxpy_target(tmp_path)
    runner = FakeRunner(JUDGE)
    steps = [
        reply(fenced(("Read x once.", BROKEN, ""))),
        reply(fenced(("Fold the update.", WRONG, "block = 512"),
                     ("Scratch buffer.", CHEAT, ""))),
        reply(fenced(("Grid-stride loop over 4 blocks per SM.", GOOD,
                      "block = 256\ngrid = 4 * sm_count"))),
    ]
    progress: list[str] = []
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, runner, config(fake),
                           on_event=lambda e: progress.append(e.text()))
        bodies = fake.chat_bodies()

    assert len(bodies) == 3
    system, task = bodies[0]["messages"][0]["content"], bodies[0]["messages"][1]["content"]
    assert ("the kernel `saxpy` in saxpy.cu, compiles the\n  whole file with nvcc for sm_90"
            in system)
    assert "Propose up to 2 candidates" in system and "{{" not in system + task
    assert "- median 100.00 us (IQR 98.00-102.00 us, 50 launches)" in task
    assert "measured device-to-device copy bandwidth 4,000 GB/s" in task
    assert "peak FP32 rate 66,908 GFLOP/s (132 SMs x 128 FP32 lanes x 2 x 1980 MHz)" in task
    assert "lines 4-10 of the file" in task and "inout y: float[n]" in task

    # step 2 of round 1: the pre-check's compile error, at the model's own line
    retry = last_user(bodies[1])
    assert retry.startswith("No candidate of your last reply can be measured:")
    assert ('r1c1 (code block 1): does not compile (nvcc):\n  - line 5 of your code: error: '
            'identifier "xx" is undefined\n        5 | y[i] = a * xx[i] + y[i];') in retry
    assert retry.endswith("Fix them and submit again (replies left in round 1: 1).\n")

    # round 2 opens with round 1's results: the mismatch from the runner, and the refusal
    feedback = last_user(bodies[2])
    assert feedback.startswith("Results of round 1 of 2 (original kernel: 100.00 us):")
    assert ("r1c2 (code block 1): wrong results: the first mismatching element is y[7] = 2.25, "
            "expected 1.5 (the original kernel's value), case ragged, seed 2; 629,145 of 629,145 "
            "elements of y differ") in feedback
    assert ("r1c3 (code block 2): refused, not measured:\n  - line 4: calls the CUDA runtime "
            "API; only device code is accepted ('cudaMalloc(')") in feedback
    assert "Best verified so far: none yet." in feedback
    assert "r1c1" not in feedback  # already told in the retry
    assert feedback.index("r1c2 (code block 1)") < feedback.index("r1c3 (code block 2)")

    # the runner saw the baseline alone, then only the runnable candidates, then the winner
    # (launched with 4 * sm_count blocks) again, and under the user's launch too
    assert [[v.label for v in batch] for batch in runner.calls] == [
        [], ["r1c2"], ["r2c1"], ["final1", "final1@user"]]
    assert runner.calls[1][0].launches[0].block == (512, 1, 1)
    assert runner.calls[2][0].launches[0].grid == (4 * 132, 1, 1)
    assert runner.calls[3][0].launches[0].grid == (4 * 132, 1, 1)
    user = runner.calls[3][1]
    assert user.source == runner.calls[3][0].source
    assert user.launches[0].block == (256, 1, 1) and user.launches[0].grid != (4 * 132, 1, 1)

    opt = result.optimize
    assert opt.winner is not None and opt.winner.candidate.label == "llm r2c1"
    assert opt.winner.candidate.explanation == "Grid-stride loop over 4 blocks per SM."
    assert opt.winner.candidate.launch.grid == ("4 * sm_count",)
    assert "+    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;" in opt.diff()
    assert "void launch_saxpy" in opt.winner.candidate.source  # the host code is kept
    assert result.counts() == {"precheck_failed": 1, "mismatch": 1, "refused": 1, "passed": 1}
    assert result.stop_reason == "all 2 rounds done" and result.confirmed
    assert result.requests == 3 and result.usage.total_tokens == 3600
    assert "round 1: r1c1 does not compile" in progress
    # the winner is a drop-in: its grid-stride loop is right under the user's launch too
    w = opt.winner
    assert w.launch_change is not None and w.launch_change.launch.grid == ("4 * sm_count",)
    assert w.drop_in is not None and w.drop_in.ok and not w.drop_in.own
    assert w.drop_in.result.verdict.variant == "final1@user"
    assert ("confirming the 1 fastest candidates: timing them again together with the "
            "baseline, and 1 of them under your launch too") in progress


@needs_nvcc
def test_tool_calls_compile_evaluate_refusals_tuning_and_confirmation(tmp_path):
    target = saxpy_target(tmp_path)

    def judge(v):
        if "@tune" in v.source or "tuned by cudalens" in v.source:
            return passed(v.label, 2.2 if v.launches[0].block[0] == 256 else 1.5)
        return JUDGE(v)

    runner = FakeRunner(judge)
    steps = [
        reply("Let me check it compiles.", tool_call("c1", "compile", source=GOOD)),
        reply("", tool_call("e1", "evaluate", source=GOOD, block="512",
                            explanation="grid-stride loop"),
              tool_call("e2", "evaluate", source=RESIGNED, explanation="64-bit n"),
              ("e3", "evaluate", '{"source": "__global__ void saxpy(int n, ')),
        reply("", tool_call("e4", "evaluate", source=TUNED, block="BLOCK",
                            explanation="tune the block")),
    ]
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, runner, config(fake, tools="on", stream="on"))
        bodies = fake.chat_bodies()

    assert all(b["tools"][1]["function"]["name"] == "evaluate" for b in bodies)
    assert all(b["stream"] is True for b in bodies)
    assert "Two tools are offered." in bodies[0]["messages"][0]["content"]
    tools = {m["tool_call_id"]: m["content"] for m in result.messages if m["role"] == "tool"}
    assert tools["c1"].startswith("compiles for sm_90: ")
    assert "registers/thread" in tools["c1"] and "no spills" in tools["c1"]
    assert tools["e2"].startswith("refused, not measured:\n  - line 1: changes the kernel's "
                                  "signature: parameter 1 is 'long n', the original's is 'int n'")
    assert tools["e3"].startswith("refused, not measured:\n  - the arguments are not valid JSON "
                                  "(Unterminated string starting at: line 1 column 12)")
    assert tools["e1"].startswith("verified; median 55.56 us (IQR 54.44-56.67 us); 1.80x the "
                                  "original's speed (95% CI 1.75-1.85: faster beyond noise)")
    assert "% of the measured copy bandwidth" in tools["e1"] and "% of peak FP32" in tools["e1"]
    assert "the fastest verified setting is BLOCK=256; settings tried:\n  - BLOCK=128: 66.67 us, "\
           "1.50x\n  - BLOCK=256: 45.45 us, 2.20x  <- fastest" in tools["e4"]
    # the tool results reached the model before it was asked again
    second_round = bodies[2]["messages"]
    assert [m.get("tool_call_id") for m in second_round if m["role"] == "tool"] == \
        ["c1", "e2", "e3", "e1"]
    assert last_user(bodies[2]).startswith("Results of round 1 of 2")
    assert "each candidate's result is in its tool result above" in last_user(bodies[2])
    assert ("Best verified so far: r1c1, 55.56 us, 1.80x the original's speed"
            in last_user(bodies[2]))

    # the tuned candidate ran as two variants with the macro in their launch and source
    tuned = runner.calls[2]
    assert [(v.label, v.launches[0].block[0]) for v in tuned] == [("r2c1-1", 128), ("r2c1-2", 256)]
    assert "#define BLOCK 128  // tuned by cudalens over 128, 256" in tuned[0].source
    # verified candidates of two batches: the best are timed again side by side, and r1c1
    # (block 512 where the user's program launches 256) under the user's launch too
    assert [v.label for v in runner.calls[3]] == ["final1", "final2", "final2@user"]
    assert runner.calls[3][1].launches[0].block == (512, 1, 1)
    assert runner.calls[3][2].launches[0].block == (256, 1, 1)
    assert runner.calls[3][2].source == runner.calls[3][1].source
    assert result.confirmed
    winner = result.optimize.winner
    assert winner.candidate.label == "llm r2c1 BLOCK=256"
    assert [r.candidate.label for r in result.optimize.rows] == ["llm r2c1 BLOCK=256", "llm r1c1"]
    # the drop-in verdicts, as the built-in search's rows carry them
    assert winner.launch_change is None and winner.drop_in.own and winner.drop_in.ok
    r1c1 = result.optimize.rows[1]
    assert r1c1.launch_change.launch.block == ("512",)
    assert r1c1.drop_in.ok and r1c1.drop_in.result.verdict.variant == "final2@user"
    assert r1c1.drop_in.speedup.value == pytest.approx(1.8)


def test_a_truncated_reply_then_a_429_then_success(tmp_path):
    target = saxpy_target(tmp_path)
    runner = FakeRunner(JUDGE)
    steps = [reply("Tiling it:\n```cuda\n" + GOOD[:80], finish_reason="length"),
             Step(status=429, error="rate limited", headers={"retry-after-ms": "10"}),
             reply(fenced(("Grid-stride.", GOOD, "")))]
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, runner, config(fake, rounds=1, max_retries=2),
                           **no_precheck())
        bodies = fake.chat_bodies()
    assert len(bodies) == 3  # the truncated reply, the 429, its successful retry
    assert bodies[1] == bodies[2]
    retry = last_user(bodies[1])
    assert ("r1c1 (code block 1): refused, not measured:\n  - the code block opened at line 2 of "
            "the reply is never closed (the reply was cut off: the server stopped at its token "
            "limit, finish_reason 'length'") in retry
    assert result.optimize.winner.candidate.label == "llm r1c2"
    assert result.stop_reason == "all 1 rounds done"


def test_a_slow_reply_past_the_timeout_stops_the_loop_with_the_reason(tmp_path):
    target = saxpy_target(tmp_path)
    with FakeOpenAI([Step(content="late", delay_s=5.0)]) as fake:
        started = time.monotonic()
        result = run_agent(target, FakeRunner(), config(fake, request_timeout_s=0.3),
                           **no_precheck())
        assert time.monotonic() - started < 3.0
    assert result.stop_reason == (f"the model server failed: {MODEL} at {fake.url}: no reply "
                                  f"within the request timeout of 0.3 s (1 attempt)")
    assert result.optimize.rows == () and result.optimize.winner is None
    assert result.rounds == () and result.requests == 0


def test_runner_compile_errors_come_back_at_the_models_lines(tmp_path):
    target = saxpy_target(tmp_path)
    code = GOOD.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + q;")

    def judge(v):
        line = v.source.splitlines().index("        y[i] = a * x[i] + q;") + 1
        return compile_failed(v.label, f'/tmp/tmpx/kernel.cu({line}): error: identifier "q" is '
                                       f'undefined\n1 error detected')
    with FakeOpenAI([reply(fenced(("q", code, ""))), reply("no more ideas")]) as fake:
        run_agent(target, FakeRunner(judge), config(fake), **no_precheck())
        feedback = last_user(fake.chat_bodies()[1])
    assert ('r1c1 (code block 1): does not compile (on the runner):\n  - line 4 of your code: '
            'error: identifier "q" is undefined\n        4 | y[i] = a * x[i] + q;') in feedback


def test_the_token_budget_stops_before_the_next_request(tmp_path):
    target = saxpy_target(tmp_path)
    runner = FakeRunner(JUDGE)
    steps = [reply(fenced(("g", GOOD, "")))] * 4
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, runner, config(fake, rounds=4, steps_per_round=1,
                                                  token_budget=1500), **no_precheck())
    assert result.requests == 2
    assert result.stop_reason == "the token budget of 1,500 tokens is spent (2,400 used)"
    assert [r.index for r in result.rounds] == [1, 2]
    # the reply that crossed the budget was paid for: its candidate is still measured
    assert [[v.label for v in batch] for batch in runner.calls] == [[], ["r1c1"], ["r2c1"]]


def test_the_time_budget_stops_the_loop(tmp_path):
    target = saxpy_target(tmp_path)

    class SlowRunner(FakeRunner):
        def evaluate(self, *args, **kw):
            if self.calls:
                time.sleep(1.2)
            return super().evaluate(*args, **kw)

    with FakeOpenAI([reply(fenced(("g", GOOD, "")))] * 3) as fake:
        result = run_agent(target, SlowRunner(JUDGE),
                           config(fake, rounds=3, time_budget_s=1.0), **no_precheck())
    assert result.stop_reason == "the time budget of 1 s is spent"
    assert result.requests == 1 and result.optimize.winner.candidate.label == "llm r1c1"


def test_cancelling_during_a_runner_batch_reports_what_was_done(tmp_path):
    target = saxpy_target(tmp_path)
    cancel = threading.Event()

    class CancellingRunner(FakeRunner):
        def evaluate(self, *args, **kw):
            if self.calls:
                cancel.set()  # the user presses Ctrl-C while the batch runs
            return super().evaluate(*args, **kw)

    with FakeOpenAI([reply(fenced(("g", GOOD, "")))] * 2) as fake:
        result = run_agent(target, CancellingRunner(JUDGE), config(fake), cancel=cancel,
                           **no_precheck())
    assert result.stop_reason == "cancelled"
    [outcome] = result.outcomes
    assert (outcome.status, outcome.feedback) == ("not_run", "not measured: cancelled")
    assert result.optimize.winner is None


def test_a_server_without_tools_gets_fenced_instructions(tmp_path):
    target = saxpy_target(tmp_path)
    steps = [reply(fenced(("g", GOOD, ""))), reply(fenced(("g", GOOD, "block = 128")))]
    with FakeOpenAI(steps, refuse_tools=True) as fake:
        result = run_agent(target, FakeRunner(JUDGE), config(fake, tools="auto"), **no_precheck())
        bodies = fake.chat_bodies()
    assert ["tools" in b for b in bodies] == [True, False, False]
    assert "Two tools are offered." not in bodies[2]["messages"][0]["content"]
    assert "fenced block opened with ```cuda" in bodies[2]["messages"][0]["content"]
    assert "the server refused tool definitions; candidates are taken from fenced code blocks" \
        in result.notes


def test_tokens_cost_and_the_record_keep_the_key_out(tmp_path, monkeypatch):
    secret = "sk-test-0123456789abcdefghijklmnopqrstuv"
    monkeypatch.setenv("CUDALENS_TEST_KEY", secret)
    target = saxpy_target(tmp_path)
    steps = [reply(fenced(("g", GOOD, ""))), reply("done", usage=None)]
    with FakeOpenAI(steps) as fake:
        cfg = config(fake, api_key_env="CUDALENS_TEST_KEY", steps_per_round=1,
                     prices={MODEL: ModelPrice(2.0, 8.0)}, origins={"prices": "cudalens.toml"})
        result = run_agent(target, FakeRunner(JUDGE), cfg, **no_precheck())
        assert {r["auth"] for r in fake.requests} == {f"Bearer {secret}"}
    u = result.usage
    assert (u.prompt_tokens > 1000, u.completion_tokens, u.estimated) == (True, 201, True)
    assert result.cost.usd == pytest.approx((u.prompt_tokens * 2 + u.completion_tokens * 8) / 1e6)
    lines = summary_lines(result)
    assert lines[0] == (f"LLM proposer: {MODEL} at {fake.url}; 2 round(s), 2 proposal(s): 1 "
                        f"passed, 1 refused; stopped: all 2 rounds done.")
    assert lines[1].startswith(f"Tokens: {u.total_tokens:,} ({u.prompt_tokens:,} prompt, 201 "
                               f"completion) in 2 request(s) (partly estimated")
    assert f"; cost ${result.cost.usd:.4f} ($2 / $8 per million prompt / completion tokens, " \
           f"from cudalens.toml, tokens partly estimated)" in lines[1]
    record = json.dumps(agent_record(result))
    assert secret not in record and secret not in json.dumps(result.messages)
    assert json.loads(record)["rounds"][0]["outcomes"][0]["status"] == "passed"


def test_an_unconfigured_agent_refuses_to_start(tmp_path):
    from cudalens.errors import CudalensError

    with pytest.raises(CudalensError, match="the LLM proposer needs a model"):
        run_agent(saxpy_target(tmp_path), FakeRunner(), AgentConfig())


def test_the_compile_tool_does_not_compile_code_that_includes_a_host_file(tmp_path):
    # nvcc would echo the included file's lines into the tool result the model reads
    target = saxpy_target(tmp_path)
    compiled: list[str] = []

    def precheck(spliced, code, path, arch, kernel):
        compiled.append(code)
        raise AssertionError("the pre-check must not run")

    leaky = GOOD.replace("{\n", '{\n#include "/home/user/.aws/credentials"\n', 1)
    steps = [reply("", tool_call("c1", "compile", source=leaky)),
             reply("", tool_call("e1", "evaluate", source=leaky, explanation="x"))]
    with FakeOpenAI(steps) as fake:
        result = run_agent(target, FakeRunner(JUDGE), config(fake, tools="on", rounds=1),
                           precheck_fn=precheck)
    tools = {m["tool_call_id"]: m["content"] for m in result.messages if m["role"] == "tool"}
    assert compiled == []
    assert tools["c1"] == (
        "not compiled: an include could reach a file outside the project\nIt would be refused "
        'by evaluate:\n  - line 3: #include "/home/user/.aws/credentials" is refused: an '
        "absolute path; a compile request may include the toolkit's headers and the files sent "
        "with it only")
    assert tools["e1"].startswith('refused, not measured:\n  - line 3: #include '
                                  '"/home/user/.aws/credentials" is refused: an absolute path')
