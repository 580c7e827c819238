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
