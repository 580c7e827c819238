"""``cudalens optimize --proposer llm`` end to end without a GPU, every part a live process:
the CLI as a subprocess, the scripted model server (``fake_openai``), and a runner process
(``tests/data/runner/fake_gpu_service.py``: the real runner application over HTTP, with
spawned worker processes whose backend fakes only the GPU, and an executable standing in for
Nsight Compute). Real nvcc pre-checks each candidate on this machine.

Five scripted replies, one per round: code that does not compile, a candidate the runner
finds wrong, a good one, one that keeps state in a file-scope device array (refused before
the runner sees it) and a reply without code. The test checks what went back to the model
after each round (the nvcc error with its line, the first mismatching index, the profile of
the winner, the refusals) and what the user is shown.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_openai import MODEL, FakeOpenAI, reply
from gpu_runner.ncu_csv import parse_profile
from live_fake_runner import CSV, fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "live-runner-token-0123456789"
KEY_ENV = "CUDALENS_FAKE_LLM_KEY"

SIG = "__global__ void saxpy(int n, float a, const float* x, float* y)"
GOOD = SIG + """
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaf(a, x[i], y[i]);
}"""
BROKEN = GOOD.replace("fmaf(a, x[i], y[i]);", "fmaf(a, x[i], y[i])")  # no semicolon
WRONG = GOOD.replace("{\n", "{\n    // @mismatch (the fake runner's verdict)\n", 1)
CACHING = "__device__ float cached[1 << 20];\n\n" + GOOD


def fenced(code: str) -> str:
    return f"Here is a rewrite.\n```cuda\n{code}\n```"


@pytest.fixture()
def live_runner(tmp_path):
    with fake_runner_process(tmp_path, TOKEN) as url:
        yield url


def test_llm_rounds_through_a_live_runner_process(tmp_path, live_runner):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH: the pre-check this test expects cannot run")
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\ntools = \"off\"\nmax_retries = 0\nconfirm_top = 0\n",
        encoding="utf-8")
    record = tmp_path / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({KEY_ENV: "sk-fake-0123456789", "CUDALENS_RUNNER_URL": live_runner,
                "CUDALENS_RUNNER_TOKEN": TOKEN})
    steps = [reply(fenced(BROKEN)), reply(fenced(WRONG)), reply(fenced(GOOD)),
             reply(fenced(CACHING)), reply("Nothing faster than r3c1 comes to mind.")]
    with FakeOpenAI(steps) as fake:
        done = subprocess.run(
            [sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "saxpy.cu"),
             "--proposer", "llm", "--model", MODEL, "--base-url", fake.url,
             "--api-key-env", KEY_ENV, "--rounds", "5", "--candidates-per-round", "1",
             "--json", str(record)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
        bodies = fake.chat_bodies()
    assert done.returncode == 0, done.stderr + done.stdout
    told = [[m["content"] for m in b["messages"] if m["role"] == "user"][-1] for b in bodies]
    assert len(told) == 5

    # the user: which proposer ran, where, the winner and what the rounds found
    assert f"proposer: the LLM {MODEL} at {fake.url}\n" in done.stderr, done.stderr
    assert "on Fake H200" in done.stdout, done.stdout
    assert re.search(r"^Winner: llm r3c1: 2\.00x faster \(95% CI 1\.90-2\.10\)", done.stdout,
                     re.M), done.stdout
    assert (f"LLM proposer: {MODEL} at {fake.url}; 5 round(s), 5 proposal(s): 1 mismatch, "
            f"1 passed, 1 precheck failed, 2 refused; stopped: all 5 rounds done.") \
        in done.stdout, done.stdout

    # why each proposal that did not pass failed, on the terminal too
    shown = [line for line in done.stdout.splitlines() if re.match(r"r\dc1: ", line)]
    assert shown == [
        'r1c1: does not compile (nvcc): - line 5 of your code: error: expected a ";"',
        "r2c1: mismatch: case 'nominal', seed 1: output 'z' differs at index 3",
        "r4c1: refused, not measured: - line 1: declares a variable at file scope ('__device__ "
        "float cached[1 << 20];'); state that outlives a launch can carry results between the "
        "harness's runs: keep values in regi...",
        "r5c1: refused, not measured: - no usable code: expected the new kernel `saxpy` in a "
        "```cuda fenced block"], shown

    # the model, after each round
    # nvcc's error at the line of the reply's code that lacks the semicolon (the closing brace
    # of the kernel, line 5 of BROKEN)
    assert BROKEN.splitlines()[3].endswith("y[i])") and BROKEN.splitlines()[4] == "}"
    assert ('r1c1 (code block 1): does not compile (nvcc):\n  - line 5 of your code: error: '
            'expected a ";"') in told[1], told[1]
    # the runner's verdict, word for word (the fake worker's wording of a mismatch)
    assert ("r2c1 (code block 1): mismatch: case 'nominal', seed 1: output 'z' differs at "
            "index 3") in told[2], told[2]
    profile = parse_profile(CSV.read_text())
    assert f"profile of r3c1 (Nsight Compute, one launch): {profile.summary()}" in told[3], \
        told[3]
    assert "r4c1 (code block 1): refused, not measured" in told[4], told[4]
    assert "cached" in told[4] and "file scope" in told[4], told[4]

    data = json.loads(record.read_text())
    outcomes = [(o["label"], o["status"]) for r in data["agent"]["rounds"] for o in r["outcomes"]]
    assert outcomes == [("r1c1", "precheck_failed"), ("r2c1", "mismatch"), ("r3c1", "passed"),
                        ("r4c1", "refused"), ("r5c1", "refused")]
    assert data["winner"]["speedup"]["value"] == 2.0


UNWRITTEN = GOOD.replace("{\n", "{\n    // @nonfinite (the fake runner: unwritten, NaN read back)\n", 1)


def test_a_candidate_that_leaves_outputs_unwritten_is_rejected_and_the_rounds_go_on(
        tmp_path, live_runner):
    # Issue 11, item 1: the runner's mismatch for a NaN-poisoned element (actual NaN, index
    # past 2^53) ended the run with 'the runner failed' when it crossed HTTP as null.
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\ntools = \"off\"\nmax_retries = 0\nconfirm_top = 0\n",
        encoding="utf-8")
    record = tmp_path / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({KEY_ENV: "sk-fake-0123456789", "CUDALENS_RUNNER_URL": live_runner,
                "CUDALENS_RUNNER_TOKEN": TOKEN})
    with FakeOpenAI([reply(fenced(UNWRITTEN)), reply(fenced(GOOD))]) as fake:
        done = subprocess.run(
            [sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "saxpy.cu"),
             "--proposer", "llm", "--model", MODEL, "--base-url", fake.url,
             "--api-key-env", KEY_ENV, "--rounds", "2", "--candidates-per-round", "1",
             "--json", str(record)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
        bodies = fake.chat_bodies()
    assert done.returncode == 0, done.stderr + done.stdout
    reason = ("case 'nominal', seed 1: output 'z' was not written at index 9007199254740993 "
              "(it still holds the poison value; the baseline wrote -inf); "
              "18446744073709551619 of 1180591620717411303425 elements unwritten")
    shown = [line for line in done.stdout.splitlines() if re.match(r"r\dc1: ", line)]
    # the terminal line is cut short; the model is told the whole reason
    assert len(shown) == 1 and shown[0].endswith("...") and len(shown[0]) > 150, done.stdout
    assert f"r1c1: unwritten: {reason}".startswith(shown[0][:-3]), shown
    assert "2 round(s), 2 proposal(s): 1 passed, 1 unwritten; stopped: all 2 rounds done." \
        in done.stdout, done.stdout
    assert re.search(r"^Winner: llm r2c1: 2\.00x faster", done.stdout, re.M), done.stdout
    told = [[m["content"] for m in b["messages"] if m["role"] == "user"][-1] for b in bodies]
    assert len(told) == 2 and f"r1c1 (code block 1): unwritten: {reason}" in told[1], told
    def no_bare_constants(token):  # strict JSON readers refuse NaN and Infinity tokens
        raise AssertionError(f"--json wrote the bare token {token}")
    text = record.read_text()
    data = json.loads(text, parse_constant=no_bare_constants)
    outcomes = [(o["label"], o["status"]) for r in data["agent"]["rounds"] for o in r["outcomes"]]
    assert outcomes == [("r1c1", "unwritten"), ("r2c1", "passed")]
    assert '"-Infinity"' in text, text[:2000]


def test_llm_candidates_are_checked_under_the_users_launch(tmp_path, live_runner):
    """Issue 17 for the LLM proposer: a candidate the model launches otherwise than the spec
    (the user's program) is also run under the user's launch in the final side-by-side timing,
    and its row says drop-in or needs a new launch, as the built-in search's rows do. The fake
    runner's ``@block=64`` leaves outputs unwritten under any block but 64."""
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\ntools = \"off\"\nmax_retries = 0\nconfirm_top = 3\n"
        "precheck = false\n", encoding="utf-8")
    record = tmp_path / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update({KEY_ENV: "sk-fake-0123456789", "CUDALENS_RUNNER_URL": live_runner,
                "CUDALENS_RUNNER_TOKEN": TOKEN})
    env["COLUMNS"] = "200"  # the table on one line per row
    needs64 = GOOD.replace("{\n", "{\n    // @block=64\n", 1)
    anyblock = GOOD.replace("fmaf(a, x[i], y[i])", "a * x[i] + y[i]")
    two = (f"Needs 64-thread blocks.\n```cuda\n{needs64}\n```\n```launch\nblock = 64\n"
           f"grid = ceil_div(n, 64)\n```\n\nAny block.\n```cuda\n{anyblock}\n```\n```launch\n"
           f"block = 128\ngrid = ceil_div(n, 128)\n```")
    with FakeOpenAI([reply(two)]) as fake:
        done = subprocess.run(
            [sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "saxpy.cu"),
             "--proposer", "llm", "--model", MODEL, "--base-url", fake.url,
             "--api-key-env", KEY_ENV, "--rounds", "1", "--candidates-per-round", "2",
             "--json", str(record)],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    data = json.loads(record.read_text())
    rows = {c["label"]: c for c in data["candidates"]}
    assert sorted(rows) == ["llm r1c1", "llm r1c2"]
    c1, c2 = rows["llm r1c1"], rows["llm r1c2"]
    # both timed with their own launch and passed there
    assert c1["verdict"]["status"] == c2["verdict"]["status"] == "passed"
    assert c1["launch_change"]["launch"]["block"] == ["64"]
    assert c1["launch_change"]["original"]["block"] == ["256"]
    assert c1["drop_in"]["ok"] is False and c1["drop_in"]["own"] is False
    assert c1["drop_in"]["verdict"]["status"] == "unwritten"
    assert ("launched with 256 threads per block; this kernel needs 64"
            in c1["drop_in"]["verdict"]["reason"])
    assert c2["launch_change"]["launch"]["grid"] == ["ceil_div(n, 128)"]
    assert c2["drop_in"]["ok"] is True and c2["drop_in"]["speedup"]["value"] == 2.0
    # the runs under the user's launch were part of the final side-by-side evaluation
    assert {c1["drop_in"]["verdict"]["variant"], c2["drop_in"]["verdict"]["variant"]} == {
        "final1@user", "final2@user"}
    assert data["agent"]["confirmed"] is True
    # the table says which is which
    assert "needs new launch (unwritten)" in done.stdout, done.stdout
    assert "2.00x [1.90, 2.10]" in done.stdout
    assert ("Under your launch: needs a new launch: 2.00x with block = 64, grid = "
            "ceil_div(n, 64).") in done.stdout
    assert "Best drop-in (no launch change): llm r1c2: 2.00x (95% CI 1.90-2.10)." in done.stdout
