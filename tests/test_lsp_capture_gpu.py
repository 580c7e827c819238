"""The editor's capture on a real GPU (marker gpu): pytest-lsp drives ``cudalens lsp`` with the
default runner (a local runner on this machine's GPU) and the real recorder (built with nvcc
on first use): the "Capture a real launch" lens runs ``tests/data/capture/saxpy_main.cu``
built with a statically linked runtime, the drafted spec carries the captured values, and
Optimize replays the capture on the GPU.

Skipped, with the reason, where pycuda, a GPU or nvcc is missing. The server log and the
draft are kept in ``$CUDALENS_GPU_LOG_DIR`` when it is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).absolute().parent
sys.path.insert(0, str(HERE / "data" / "lsp"))
sys.path.insert(0, str(HERE))

from harness import RUNNER_FACTORY, SERVER_COMMAND, TEST_SETTINGS, editor  # noqa: E402
from test_lsp_optimize import action, ended  # noqa: E402

pytestmark = [pytest.mark.gpu, pytest.mark.asyncio]

LIVE_COMMAND = [c for c in SERVER_COMMAND if c not in ("--runner-factory", RUNNER_FACTORY)]
N = 3000017  # saxpy_main.cu's n


def _need_gpu() -> None:
    from gpu_runner.session import NoGpuError, import_driver

    try:
        import_driver()
    except NoGpuError as exc:
        pytest.skip(str(exc))
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH (the recorder and the program are built with it)")


async def test_capture_lens_records_the_program_and_optimize_replays_it(tmp_path):
    _need_gpu()
    work = tmp_path / "work"
    work.mkdir()
    for name in ("saxpy_kernel.cu", "saxpy_kernel.cu.spec", "saxpy_main.cu"):
        shutil.copy(HERE / "data" / "capture" / name, work / name)
    subprocess.run(["nvcc", "-O2", "-cudart", "static", "-o", "saxpy_app", "saxpy_main.cu"],
                   cwd=work, check=True, capture_output=True, timeout=300)
    log = Path(os.environ.get("CUDALENS_GPU_LOG_DIR") or tmp_path)
    log.mkdir(parents=True, exist_ok=True)
    settings = {**TEST_SETTINGS, "proposer": "builtin", "profile": False, "sanitize": False,
                "budget": {"candidates": 2, "repetitions": 10},
                "capture": {"command": "./saxpy_app"}}
    async with editor(work, settings, env={"CUDALENS_CACHE_DIR": str(tmp_path / "cache")},
                      command=LIVE_COMMAND + ["--log-file", str(log / "lsp-capture.log")]) \
            as client:
        doc = client.open(work / "saxpy_kernel.cu")
        lens = next(lens for lens in await client.code_lenses(doc)
                    if lens.command and lens.command.command == "cudalens.captureLaunch")
        started = await client.run(lens.command)
        assert started["ok"], started
        end = await client.wait_for(lambda: ended(client, started["token"]), timeout=600,
                                    what="the capture on the GPU")
        found = action(await client.code_actions(doc, lens.range.start.line + 2),
                       "cudalens.optimize")
        opt = await client.run(found.command)
        done = await client.wait_for(lambda: ended(client, opt["token"]), timeout=900,
                                     what="the replayed optimization on the GPU")
        reports = [p.message for p in client.progress_reports[opt["token"]]]
    assert end[0].message == ("saxpy: captured saxpy-launch1.json; Optimize replays it; "
                              "drafted spec saxpy-launch1.spec"), end[0].message
    (draft,) = (work / ".cudalens" / "captures").glob("*/saxpy-launch1.spec")
    shutil.copy(draft, log / "lsp-capture-draft.spec")
    text = draft.read_text()
    assert f"size n = {N}\n" in text and "scalar a: float = 0.5\n" in text
    assert any(m and m.startswith(f"replaying capture saxpy-launch1.json: launch 1, grid "
                                  f"({(N + 255) // 256}, 1, 1), block (256, 1, 1)")
               for m in reports), reports
    assert not done[0].message.endswith("failed"), done[0].message
