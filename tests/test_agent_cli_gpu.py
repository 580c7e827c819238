"""``cudalens optimize --proposer llm`` on a real GPU (marker gpu), as a user runs it: a
subprocess, talking to a scripted model (``fake_openai``) that replays, one per round, a tiled
transpose that does not compile, one that reads the tile untransposed (wrong results) and a
correct one (the replies of ``test_agent_gpu.py``), then a fourth reply with no code. The CLI
must name the correct one the winner with its measured speedup, after the runner's compile
error and the mismatch went back to the model; the fourth request must carry the Nsight
Compute profile of that winner (taken through the runner's ``POST /v1/profile``) where ncu is
installed, else the note saying why there is none.

The pre-check with the local nvcc is off (``cudalens.toml``), so the compile error is the
runner's own; one reply per round keeps the script in step with the rounds.

Output: stdout, stderr, the ``--json`` record and what the model was told are written to
``$CUDALENS_GPU_LOG_DIR/agent-cli-transpose.log`` when that variable is set (the log to
commit). Skipped, with the reason, where no GPU or pycuda is present.
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
from test_agent_gpu import BROKEN, TILED, WRONG, block

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "CUDALENS_FAKE_LLM_KEY"
KEY = "sk-fake-for-the-gpu-test-0123456789"
TIMEOUT_S = 600


def _gpu_or_skip() -> None:
    from gpu_runner.session import NoGpuError, import_driver

    try:
        import_driver()
    except NoGpuError as exc:
        pytest.skip(f"no GPU: {exc}")


def test_cli_llm_proposer_finds_the_tiled_transpose_after_feedback(tmp_path):
    _gpu_or_skip()
    for name in ("transpose.cu", "transpose.cu.spec"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    (tmp_path / "cudalens.toml").write_text(
        "[agent]\nsteps_per_round = 1\nprecheck = false\ntools = \"off\"\nmax_retries = 0\n"
        "confirm_top = 0\n", encoding="utf-8")
    record = tmp_path / "result.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env[KEY_ENV] = KEY
    env.pop("CUDALENS_RUNNER_URL", None)  # a local runner on this machine's GPU
    steps = [reply(block(BROKEN)), reply(block(WRONG)), reply(block(TILED)),
             reply("I have nothing faster than r3c1.")]
    with FakeOpenAI(steps) as fake:
        command = [sys.executable, "-m", "cudalens", "optimize", str(tmp_path / "transpose.cu"),
                   "--proposer", "llm", "--model", MODEL, "--base-url", fake.url,
                   "--api-key-env", KEY_ENV, "--rounds", "4", "--candidates-per-round", "1",
                   "--repetitions", "30", "--json", str(record)]
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=TIMEOUT_S, check=False)
        bodies = fake.chat_bodies()
        auths = {r["auth"] for r in fake.requests}
    told = [[m["content"] for m in b["messages"] if m["role"] == "user"][-1] for b in bodies]
    data = json.loads(record.read_text()) if record.exists() else {}
    log_dir = os.environ.get("CUDALENS_GPU_LOG_DIR")
    if log_dir:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        shown = " ".join(command).replace(fake.url, "http://127.0.0.1:PORT/v1")
        (Path(log_dir) / "agent-cli-transpose.log").write_text(
            f"$ {shown}\n(exit status {done.returncode})\n\n--- stdout ---\n{done.stdout}\n"
            f"--- stderr ---\n{done.stderr}\n--- what the model was told after each round ---\n"
            + "\n\n".join(f"[request {i + 1}]\n{t}" for i, t in enumerate(told))
            + f"\n\n--- {record.name} ---\n{json.dumps(data, indent=2)}\n", encoding="utf-8")
    if done.returncode == 3:
        pytest.skip(f"the CLI found no usable GPU: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr + done.stdout

    assert f"proposer: the LLM {MODEL} at {fake.url}\n" in done.stderr, done.stderr
    winner = re.search(r"^Winner: llm r3c1: (\d+\.\d\d)x faster \(95% CI (\d+\.\d\d)-(\d+\.\d\d)\)",
                       done.stdout, re.M)
    assert winner is not None, done.stdout
    value, low, high = map(float, winner.groups())
    assert 1.0 < low <= value <= high, winner.group(0)
    assert re.search(r"LLM proposer: fake-coder at \S+; 4 round\(s\), 4 proposal\(s\): "
                     r"1 compile error, 1 mismatch, 1 passed, 1 refused; stopped: all 4 rounds "
                     r"done\.", done.stdout), done.stdout

    # what went back to the model: the runner's compile error, then the first mismatch
    assert len(told) == 4
    assert 'identifier "tile_count" is undefined' in told[1]
    assert "r1c1 (code block 1): does not compile (on the runner)" in told[1]
    assert "wrong results: the first mismatching element is out[" in told[2]
    outcomes = [o for r in data["agent"]["rounds"] for o in r["outcomes"]]
    assert [(o["label"], o["status"]) for o in outcomes] == \
        [("r1c1", "compile_error"), ("r2c1", "mismatch"), ("r3c1", "passed"), ("r4c1", "refused")]
    # ... and after the winner, where its time goes (or why that is not known)
    from gpu_runner.profile import find_ncu

    if find_ncu() is not None:
        profiled = re.search(r"profile of r3c1 \S* ?\(Nsight Compute, one launch\): achieved "
                             r"occupancy [\d.]+%, DRAM throughput [\d.]+% of peak", told[3])
        assert profiled is not None, told[3]
    else:
        assert "Note: the profile of r3c1" in done.stdout, done.stdout
    assert data["winner"]["speedup"]["value"] == pytest.approx(value, abs=0.005)

    # the key went to the server from the named variable, and nowhere else
    assert f"Bearer {KEY}" in auths
    assert KEY not in done.stdout + done.stderr + record.read_text()
    print(winner.group(0))
