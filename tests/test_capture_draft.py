"""The spec drafted from a capture (``cudalens.capture.draft``) and the editor's capture
command setting (``cudalens.capture.command``), without a GPU: captured sizes, scalars and
block replace the spec's, a buffer the launch changed against the spec's role takes the
captured role with the reason, a grid expression that disagrees with the captured grid is
noted, and the setting is split as a shell would or refused with what was expected."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from capture_fakes import SAXPY_CU, write_saxpy_record
from cudalens.capture.assemble import assemble
from cudalens.capture.container import read_capture, write_capture
from cudalens.capture.draft import draft_from_capture, draft_path
from cudalens.capture.raw import read_output
from cudalens.capture.sources import find_kernels
from cudalens.lsp.config import parse_settings
from cudalens.spec.infer import infer_spec
from cudalens.spec.model import LaunchDecl
from cudalens.spec.writer import format_spec


def _capture(tmp_path: Path, n: int = 1000):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "saxpy.cu").write_text(SAXPY_CU)
    write_saxpy_record(tmp_path / "raw", n)
    found = find_kernels(ws)[0]
    raw = read_output(tmp_path / "raw").launches[0]
    path = write_capture(assemble(raw, found, ["./app", "--n", str(n)]), tmp_path / "caps",
                         "saxpy-launch1")
    return read_capture(path), infer_spec(found.kernel, found.text)


def test_the_draft_takes_the_captured_sizes_scalars_and_block(tmp_path):
    capture, spec = _capture(tmp_path)
    draft = draft_from_capture(spec, capture)
    assert draft_path(capture) == tmp_path / "caps" / "saxpy-launch1.spec"
    text = format_spec(draft)
    assert text == (
        "kernel saxpy\n"
        "# drafted from capture saxpy-launch1.json (launch 1 of saxpy by ./app --n 1000) over "
        "the kernel's inferred draft; lines marked GUESS are still guesses: confirm them\n"
        "# size n = 1000 (the captured value of scalar n)\n"
        "# scalar a = 3.0: the captured value\n"
        "# block 256: the captured launch's\n"
        "size n = 1000\n"
        "scalar n: int = n\n"
        "scalar a: float = 3.0\n"
        "in x: float[n]\n"
        "inout y: float[n]\n"
        "block = 256\n"
        "grid = ceil_div(n, block.x)\n")
    assert "GUESS" not in text.split("confirm them")[1]  # the guessed a = 0.5 is gone


def test_a_role_the_launch_contradicts_and_a_grid_that_disagrees_are_noted(tmp_path):
    capture, spec = _capture(tmp_path)
    x = capture.manifest.param("x")
    manifest = replace(capture.manifest, params=tuple(
        replace(p, role="inout", changed=True, note="x: the launch changed it although the body "
                                                    "only reads it (aliased by another "
                                                    "parameter?); taken as inout")
        if p is x else p for p in capture.manifest.params))
    spec = replace(spec, launch=LaunchDecl(block=("256",), grid=("ceil_div(n, 512)",)))
    draft = draft_from_capture(spec, replace(capture, manifest=manifest), "/w/saxpy.cu.spec")
    assert draft.notes[0].endswith("over your spec saxpy.cu.spec; lines marked GUESS are still "
                                   "guesses: confirm them")
    assert ("x: inout as captured, the spec said in (x: the launch changed it although the body "
            "only reads it (aliased by another parameter?); taken as inout)") in draft.notes
    assert ("grid = ceil_div(n, 512): (2, 1, 1) at the captured sizes, the captured launch had "
            "(4, 1, 1); check the grid expression") in draft.notes
    assert draft.param("x").role == "inout"


def test_the_capture_command_setting_is_split_as_a_shell_would():
    settings, problems = parse_settings({"capture": {"command": 'python "my train.py" --n 3'}})
    assert settings.capture_command == ("python", "my train.py", "--n", "3") and problems == []
    listed, _ = parse_settings({"capture": {"command": ["./app", "a b"]}})
    assert listed.capture_command == ("./app", "a b")
    assert parse_settings({})[0].capture_command == ()
    _, problems = parse_settings({"capture": {"command": 'python "unclosed'}})
    assert problems == ["cudalens.capture.command: expected a command line (a string such as "
                        "\"python train.py\", or a list of arguments) with balanced quotes, "
                        "found 'python \"unclosed'; using the default"]
