"""Commands refuse what is not a CUDA source file alike, and `plan --json -` prints the JSON
(break-test findings of 2026-12-01: `check` compiled a binary file and printed its bytes,
`config` described any path, `plan --json -` wrote a file named '-')."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from cudalens.cli import main

from nvcc_util import needs_nvcc

ROOT = Path(__file__).resolve().parents[1]


def test_check_refuses_a_binary_file_as_spec_does(tmp_path):
    binary = tmp_path / "bin.cu"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)) * 4)
    for command in ("check", "spec"):
        res = CliRunner().invoke(main, [command, str(binary)])
        assert res.exit_code == 2, (command, res.output)
        assert f"{binary}:1: expected UTF-8 text, found byte 0x" in res.output, (command, res.output)
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


@needs_nvcc
def test_check_compiles_a_text_file_with_a_latin1_byte_as_spec_reads_it(tmp_path):
    src = tmp_path / "latin1.cu"
    src.write_bytes(b"// ok\n// caf\xe9\n__global__ void k(float* a) { a[0] = 1; }\n")
    res = CliRunner().invoke(main, ["check", str(src)])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "warning:" not in out and "UTF-8" not in out, out
    assert f"{src}: compile ok for sm_90: 0 errors, 0 warnings, 1 kernel (" in out
    assert src.read_bytes().count(b"\xe9") == 1  # the file is untouched
