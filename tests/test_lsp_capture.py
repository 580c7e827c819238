"""The editor's capture (``cudalens.lsp.capture_action``) in a real language-server session:
the "Capture a real launch" lens on each kernel, the configured command run with progress and
cancel (the program's whole process group ended), the message when no command is set, the
drafted spec shown, the kernel's captures listed, and Optimize replaying a current capture but
not a stale one (the runner's requests are recorded by ``tests/data/lsp/recording_runner.py``).

The server is ``tests/data/lsp/capture_server.py`` (the real server, with no recorder library
built: the captured program is ``tests/data/lsp/fake_capture_program.py``, which writes what
the recorder would). No GPU, no nvcc."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from lsprotocol import types

HERE = Path(__file__).absolute().parent
sys.path.insert(0, str(HERE / "data" / "lsp"))
sys.path.insert(0, str(HERE))

from harness import TEST_SETTINGS, copy_example, editor  # noqa: E402
from test_lsp_optimize import action, ended  # noqa: E402

pytestmark = pytest.mark.asyncio

PROGRAM = HERE / "data" / "lsp" / "fake_capture_program.py"
COMMAND = [sys.executable, str(HERE / "data" / "lsp" / "capture_server.py"),
           "--runner-factory", "recording_runner:make_client", "--log-level", "info"]
TITLE = "Capture a real launch"

TWO_KERNELS = """// two kernels
__global__ void scale(int n, float s, float* v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= s;
}

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def _settings(*program_args: str, **extra) -> dict:
    out = {**TEST_SETTINGS, "proposer": "builtin", "profile": False, "sanitize": False,
           "budget": {"candidates": 2, "repetitions": 5}, **extra}
    if program_args:
        out["capture"] = {"command": [sys.executable, str(PROGRAM), *program_args]}
    return out


def _server(work: Path, settings: dict, requests: Path):
    return editor(work, settings, env={"CUDALENS_TEST_REQUESTS": str(requests)},
                  command=COMMAND + ["--log-file", str(work.parent / "server.log")])


def _shown(client) -> list[types.ShowDocumentParams]:
    shown: list[types.ShowDocumentParams] = []

    def show(params: types.ShowDocumentParams):
        shown.append(params)
        return types.ShowDocumentResult(success=True)

    client.protocol.fm.features[types.WINDOW_SHOW_DOCUMENT] = show
    return shown


def _lens(lenses, title: str):
    return [lens for lens in lenses if lens.command and lens.command.title == title]


def _requests(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _capture(client, doc: str, kernel_line: int) -> tuple[dict, list]:
    (lens,) = _lens(await client.code_lenses(doc), TITLE)
    assert lens.range.start.line == kernel_line
    started = await client.run(lens.command)
    assert started["ok"], started
    end = await client.wait_for(lambda: ended(client, started["token"]), timeout=60,
                                what="the capture's end")
    return started, end


async def _optimize(client, doc: str) -> str:
    found = action(await client.code_actions(doc, 4), "cudalens.optimize")
    started = await client.run(found.command)
    await client.wait_for(lambda: ended(client, started["token"]), timeout=90,
                          what="the optimization")
    return started["token"]


async def test_each_kernel_has_the_capture_lens_on_its_first_line(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    path = work / "two.cu"
    path.write_text(TWO_KERNELS)
    async with _server(work, _settings(), tmp_path / "requests.jsonl") as client:
        doc = client.open(path)
        lenses = _lens(await client.code_lenses(doc), TITLE)
    assert [(lens.range.start.line, lens.range.start.character) for lens in lenses] == [
        (1, 0), (7, 0)]
    assert [lens.command.command for lens in lenses] == ["cudalens.captureLaunch"] * 2
    assert [list(lens.command.arguments) for lens in lenses] == [
        [{"uri": doc, "kernel": "scale", "version": 1}],
        [{"uri": doc, "kernel": "saxpy", "version": 1}]]


async def test_without_a_command_the_message_says_what_to_set(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    async with _server(work, _settings(), tmp_path / "requests.jsonl") as client:
        doc = client.open(path)
        (lens,) = _lens(await client.code_lenses(doc), TITLE)
        answer = await client.run(lens.command)
        errors = await client.wait_for(
            lambda: [m.message for m in client.messages if m.type == types.MessageType.Error],
            what="the error message")
    assert answer["ok"] is False
    assert errors == [
        "cudalens: cannot capture saxpy: no capture command is set: set "
        "cudalens.capture.command to the program that launches the kernel (a string such as "
        "\"python train.py\", or a list of arguments; it runs in the workspace folder), or "
        "command = \"...\" under [capture] in cudalens.toml"]
    assert client.progress_reports == {}
    assert not (work / ".cudalens" / "captures").exists()


async def test_an_untrusted_project_file_command_is_not_run(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    (work / "cudalens.toml").write_text(f'[capture]\ncommand = "{sys.executable} {PROGRAM}"\n')
    async with _server(work, _settings(), tmp_path / "requests.jsonl") as client:
        doc = client.open(path)
        (lens,) = _lens(await client.code_lenses(doc), TITLE)
        answer = await client.run(lens.command)
    assert answer["ok"] is False
    assert answer["reason"].endswith(
        f"; {work / 'cudalens.toml'} [capture] names command = '{sys.executable} {PROGRAM}', "
        f"but a project file comes with the checkout and runs only in a trusted workspace "
        f"(trust the workspace, or set cudalens.capture.command yourself)")
    assert not (work / ".cudalens" / "captures").exists()


async def test_a_trusted_project_file_command_captures(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    (work / "cudalens.toml").write_text(f'[capture]\ncommand = "{sys.executable} {PROGRAM} '
                                        f'--n 300"\n')
    async with _server(work, _settings(workspaceTrusted=True),
                       tmp_path / "requests.jsonl") as client:
        _shown(client)
        doc = client.open(path)
        started, end = await _capture(client, doc, 3)
    assert started["origin"] == f"{work / 'cudalens.toml'} [capture]"
    assert end[0].message.startswith("saxpy: captured saxpy-launch1.json")
    (manifest,) = (work / ".cudalens" / "captures").glob("*/saxpy-launch1.json")
    assert json.loads(manifest.read_text())["params"][0]["value"] == 300


async def test_capture_shows_progress_drafts_the_spec_and_optimize_replays_it(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    requests = tmp_path / "requests.jsonl"
    async with _server(work, _settings("--n", "1000"), requests) as client:
        shown = _shown(client)
        doc = client.open(path)
        started, end = await _capture(client, doc, 3)
        reports = client.progress_reports[started["token"]]
        lenses = await client.code_lenses(doc)
        token = await _optimize(client, doc)
        optimize_reports = [p.message for p in client.progress_reports[token]]
    (manifest,) = (work / ".cudalens" / "captures").glob("*/saxpy-launch1.json")
    draft = manifest.with_suffix(".spec")
    assert reports[0].kind == "begin" and reports[0].title == "Capture a launch of saxpy"
    assert reports[0].message == f"running {sys.executable} {PROGRAM} --n 1000"
    assert reports[0].cancellable is True
    assert f"{sys.executable}: loading the model" in [p.message for p in reports]
    assert end[0].message == ("saxpy: captured saxpy-launch1.json; Optimize replays it; "
                              "drafted spec saxpy-launch1.spec")
    # the draft opened without taking focus, its captured values in place of the spec's
    assert [(s.uri, s.take_focus) for s in shown] == [(draft.as_uri(), False)]
    text = draft.read_text()
    assert text.splitlines()[:7] == [
        "kernel saxpy",
        f"# drafted from capture saxpy-launch1.json (launch 1 of saxpy by {sys.executable} "
        f"{PROGRAM} --n 1000) over your spec saxpy.cu.spec; lines marked GUESS are still "
        f"guesses: confirm them",
        "# size n = 1000 (the captured value of scalar n)",
        "# scalar a = 3.0: the captured value",
        "# block 256: the captured launch's",
        "size n = 1000",
        "scalar n: int = n"]
    assert "scalar a: float = 3.0\n" in text and "block = 256\n" in text
    # listed on the kernel's line
    (listed,) = _lens(lenses, "1 capture")
    assert listed.range.start.line == 3
    assert listed.command.command == "cudalens.openSpec"
    assert list(listed.command.arguments) == [{"uri": draft.as_uri()}]
    # Optimize replayed it: the captured case first, at the captured sizes, then the spec's
    # seeded cases with n bound to the captured value
    first = _requests(requests)[0]
    assert [(c["label"], c["captured"]) for c in first["cases"]] == [
        ("captured", True), ("nominal", False), ("ragged", False)]
    captured = first["cases"][0]["args"]
    assert captured == [
        {"name": "n", "value": 1000}, {"name": "a", "value": 3.0},
        {"name": "x", "dtype": "float32", "length": 1000, "role": "in"},
        {"name": "y", "dtype": "float32", "length": 1064, "role": "inout"}]
    assert first["cases"][1]["args"][0] == {"name": "n", "value": 1000}
    assert (first["launches"][0]["grid"], first["launches"][0]["block"]) == ([4, 1, 1],
                                                                           [256, 1, 1])
    assert ("replaying capture saxpy-launch1.json: launch 1, grid (4, 1, 1), block (256, 1, 1); "
            "size n = 1000 (the captured value of scalar n)") in optimize_reports


async def test_a_stale_capture_is_marked_and_not_replayed(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    requests = tmp_path / "requests.jsonl"
    async with _server(work, _settings("--n", "1000"), requests) as client:
        _shown(client)
        doc = client.open(path)
        await _capture(client, doc, 3)
        client.change(doc, client.text(doc).replace("a * x[i] + y[i]", "y[i] + a * x[i]"))
        lenses = await client.code_lenses(doc)
        token = await _optimize(client, doc)
        optimize_reports = [p.message for p in client.progress_reports[token]]
    (stale,) = _lens(lenses, "1 capture (stale)")
    assert stale.range.start.line == 3 and stale.command.command == ""
    (first,) = _requests(requests)[:1]
    assert [c["label"] for c in first["cases"]] == ["nominal", "ragged"]
    assert not any(c["captured"] for c in first["cases"])
    assert first["cases"][0]["args"][0] == {"name": "n", "value": 1 << 25}
    assert ("1 stale capture of saxpy not used (the kernel changed since); the spec's cases "
            "are timed") in optimize_reports


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


async def test_cancel_stops_the_program_and_its_children_and_saves_nothing(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    pids = tmp_path / "pids.txt"
    async with _server(work, _settings("--hang", str(pids)), tmp_path / "r.jsonl") as client:
        doc = client.open(path)
        (lens,) = _lens(await client.code_lenses(doc), TITLE)
        started = await client.run(lens.command)
        token = started["token"]
        await client.wait_for(lambda: any("training step" in (p.message or "")
                                          for p in client.progress_reports.get(token, [])),
                              timeout=30, what="the program's progress")
        program, child = map(int, pids.read_text().split())
        assert _alive(program) and _alive(child)
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        end = await client.wait_for(lambda: ended(client, token), timeout=30,
                                    what="the cancelled capture's end")
        # a second capture may start now
        again = await client.run(lens.command)
        client.window_work_done_progress_cancel(
            types.WorkDoneProgressCancelParams(token=again["token"]))
        await client.wait_for(lambda: ended(client, again["token"]), timeout=30,
                              what="the second capture's end")
    assert end[0].message == ("saxpy: capture cancelled; the program was stopped and nothing "
                              "was saved")
    assert not _alive(program) and not _alive(child)
    assert not list((work / ".cudalens").glob("captures/*/*.json"))


async def test_a_failing_program_is_reported_with_its_status_and_stderr(tmp_path):
    work = tmp_path / "work"
    path = copy_example(work, "saxpy.cu")
    async with _server(work, _settings("--fail", "3"), tmp_path / "r.jsonl") as client:
        doc = client.open(path)
        _, end = await _capture(client, doc, 3)
        errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert end[0].message == "saxpy: not captured (the program failed with exit status 3)"
    assert errors == ["cudalens: saxpy was not captured: the program failed with exit status 3; "
                      "nothing was saved. The end of its stderr:\nloading the model\n"
                      "RuntimeError: CUDA error: out of memory"]
