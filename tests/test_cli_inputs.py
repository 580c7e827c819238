"""Commands refuse what is not a CUDA source file alike, and `plan --json -` prints the JSON
(break-test findings of 2026-12-01: `check` compiled a binary file and printed its bytes,
`config` described any path, `plan --json -` wrote a file named '-')."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from cudalens.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_check_refuses_a_binary_file_as_spec_does(tmp_path):
    binary = tmp_path / "bin.cu"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 4)
    for command in ("check", "spec"):
        res = CliRunner().invoke(main, [command, str(binary)])
        assert res.exit_code == 2, (command, res.output)
        assert "expected UTF-8 text, found byte 0x" in res.output, (command, res.output)
        assert "compile failed" not in res.output


def test_config_refuses_a_missing_file_and_a_folder(tmp_path):
    res = CliRunner().invoke(main, ["config", str(tmp_path / "missing.cu")])
    assert res.exit_code == 2 and "missing.cu: no such file" in res.output, res.output
    res = CliRunner().invoke(main, ["config", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert "expected a CUDA source file, found a directory" in " ".join(res.output.split())


def test_plan_json_dash_prints_only_the_json(tmp_path, monkeypatch):
    shutil.copy(ROOT / "examples" / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["plan", "saxpy.cu", "--json", "-"])
    assert res.exit_code == 0, res.output
    record = json.loads(res.output)
    assert record["kernel"] == "saxpy" and record["candidates"], record.keys()
    assert not (tmp_path / "-").exists()
