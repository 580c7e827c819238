"""A source that is not UTF-8 (issue 13: Latin-1 comments, a Windows-1252 smart quote) goes
through ``spec``, ``plan`` and ``optimize --apply`` as a UTF-8 one does: its bytes are kept
(``cudalens.textfile``), the positions are the file's, what is printed shows such a byte as
``\\xHH``, and an applied rewrite leaves every byte outside the kernel (and the spec's
comments) as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudalens.cli import main

from live_fake_runner import fake_runner_process

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "cli-non-utf8-token-0123456789abcdef"

# A file as an editor set to Windows-1252 saves it: umlauts (Latin-1), smart quotes (0x93,
# 0x94) and an en dash (0x96), in comments before, inside and after the kernel, one of them
# on the launch's own line before the launch.
SOURCE = """// Größenangaben in Elementen; für große n siehe unten.
// “saxpy” aus der alten Bibliothek übernommen.

__global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // globaler Index
    if (i < n) {  // Rand prüfen
        y[i] = a * x[i] + y[i];
    }
}

// Startet den Kernel – ein Thread je Element.
void launch_saxpy(int n, float a, const float* x, float* y)
{
    /* Blockgröße 256 */ saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y);
}
"""
DATA = SOURCE.encode("cp1252")
SPEC = ("# Größe: 2^25 Elemente (128 MiB je Vektor) – mehr als der L2.\n"
        + (ROOT / "examples" / "saxpy.cu.spec").read_text()).encode("cp1252")
KERNEL_START = DATA.index(b"__global__")
KERNEL_END = DATA.index(b"}\n\n// Startet") + 1
LAUNCH_LINE = 1 + SOURCE.splitlines().index("    /* Blockgröße 256 */ saxpy<<<(n + 255) / 256, "
                                             "256>>>(n, a, x, y);")


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    """The file as Windows-1252 bytes and the same text as UTF-8, each ``saxpy.cu`` in a
    folder of its own."""
    (tmp_path / "cp1252").mkdir()
    (tmp_path / "utf8").mkdir()
    latin, utf8 = tmp_path / "cp1252" / "saxpy.cu", tmp_path / "utf8" / "saxpy.cu"
    latin.write_bytes(DATA)
    utf8.write_bytes(SOURCE.encode("utf-8"))
    assert b"\xf6" in DATA and b"\x93" in DATA and b"\x96" in DATA  # not UTF-8
    return latin, utf8


def test_spec_drafts_the_same_spec_as_for_the_utf8_file(tmp_path, monkeypatch):
    latin, utf8 = _pair(tmp_path)
    outputs = []
    for path in (latin, utf8):
        monkeypatch.chdir(path.parent)
        res = CliRunner().invoke(main, ["spec", "saxpy.cu"])
        assert res.exit_code == 0, res.output
        outputs.append(res.output)
    assert outputs[0] == outputs[1]
    assert f"# block 256: the launch at line {LAUNCH_LINE}\n" in outputs[0]
    assert "kernel saxpy\n" in outputs[0] and "inout y: float[n]\n" in outputs[0]
    assert latin.read_bytes() == DATA


def test_spec_reads_a_spec_file_with_latin1_comments_and_refuses_such_a_byte_elsewhere(
        tmp_path, monkeypatch):
    latin, _ = _pair(tmp_path)
    spec = latin.parent / "saxpy.cu.spec"
    spec.write_bytes(SPEC)
    monkeypatch.chdir(latin.parent)
    res = CliRunner().invoke(main, ["spec", "saxpy.cu"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("# written spec, from saxpy.cu.spec\nkernel saxpy\n"), \
        res.output
    spec.write_bytes(SPEC.replace(b"scalar a: float = 2.5", b"scalar a: float = 2.5\xb0"))
    res = CliRunner().invoke(main, ["spec", "saxpy.cu"])
    assert res.exit_code == 2, res.output
    line = 1 + SPEC.split(b"\n").index(b"scalar a: float = 2.5")
    assert (f"saxpy.cu.spec:{line}: cannot read the spec file: expected UTF-8 text, found "
            f"byte 0xb0 at column 22 (outside a comment); save the file as UTF-8") in " ".join(
                res.output.split())


def test_plan_json_is_the_plan_of_the_utf8_file(tmp_path, monkeypatch):
    latin, utf8 = _pair(tmp_path)
    records = []
    for path in (latin, utf8):
        monkeypatch.chdir(path.parent)
        res = CliRunner().invoke(main, ["plan", "saxpy.cu", "--json", "-"])
        assert res.exit_code == 0, res.output
        records.append(json.loads(res.output))
    assert records[0] == records[1]
    assert records[0]["kernel"] == "saxpy" and len(records[0]["candidates"]) > 10
    monkeypatch.chdir(latin.parent)
    res = CliRunner().invoke(main, ["plan", "saxpy.cu"])  # the table, printed
    assert res.exit_code == 0, res.output
    assert res.output.startswith("plan for saxpy in saxpy.cu (no GPU used): ")


def _optimize(path: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    # Strict UTF-8 output (a terminal's): a byte that is not UTF-8 cannot be printed raw.
    env.update({"CUDALENS_RUNNER_URL": url, "CUDALENS_RUNNER_TOKEN": TOKEN,
                "PYTHONIOENCODING": "utf-8:strict"})
    return subprocess.run([sys.executable, "-m", "cudalens", "optimize", str(path), *args],
                          capture_output=True, env=env, cwd=path.parent, timeout=240,
                          check=False)


def test_optimize_apply_keeps_every_byte_outside_the_kernel(tmp_path):
    latin, _ = _pair(tmp_path)
    spec = latin.parent / "saxpy.cu.spec"
    spec.write_bytes(SPEC)
    with fake_runner_process(tmp_path, TOKEN) as url:
        done = _optimize(latin, url, "--proposer", "builtin", "--budget", "4", "--apply",
                         "--json", str(tmp_path / "result.json"))
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0, err + out
    assert "Traceback" not in err
    new = latin.read_bytes()
    assert new != DATA  # the winner was written ...
    assert new[:KERNEL_START] == DATA[:KERNEL_START]  # ... and nothing before the kernel
    assert new.endswith(DATA[KERNEL_END:])  # nor after it (its launch kept: "Not rewritten")
    kernel = new[KERNEL_START:len(new) - len(DATA) + KERNEL_END]
    assert kernel.startswith(b"__global__ void saxpy(") and kernel.endswith(b"\n}")
    assert b"// Rand pr\xfcfen" in kernel  # the kernel's own comment, its byte kept
    # The diff shows the bytes as \xHH: the removed kernel line and a context line.
    assert "-    if (i < n) {  // Rand pr\\xfcfen\n" in out, out
    assert " // \\x93saxpy\\x94 aus der alten Bibliothek \\xfcbernommen.\n" in out, out
    # The launch site is at its line of the rewritten file, its column counting one per byte.
    line = LAUNCH_LINE + new[:KERNEL_START + len(kernel)].count(b"\n") \
        - DATA[:KERNEL_END].count(b"\n")
    assert (f"Not rewritten: saxpy.cu:{line}:26: saxpy<<<(n + 255) / 256, 256>>>(n, a, x, y) "
            in out), out
    # The spec now launches what was measured, its comment's bytes as they were.
    new_spec = spec.read_bytes()
    assert new_spec != SPEC and new_spec.split(b"\n")[0] == SPEC.split(b"\n")[0]
    assert json.loads((tmp_path / "result.json").read_text())["kernel"] == "saxpy"


def test_the_capture_key_reads_the_file_and_keys_its_bytes(tmp_path):
    from cudalens.capture.sources import find_kernels, kernel_in_file

    latin, utf8 = _pair(tmp_path)
    found = kernel_in_file(latin, "saxpy")
    assert found is not None and found.kernel.name == "saxpy"
    assert [k.path for k in find_kernels(latin.parent)] == [latin]  # not skipped as unreadable
    key = found.key
    assert key == kernel_in_file(latin, "saxpy").key  # the same bytes, the same key
    assert key != kernel_in_file(utf8, "saxpy").key  # other bytes (UTF-8's two for "ö")
    latin.write_bytes(DATA.replace(b"Rand pr\xfcfen", b"Rand pr\xf6fen"))  # inside the kernel
    assert kernel_in_file(latin, "saxpy").key != key


def test_the_runner_gets_the_same_bytes_of_the_source_and_its_header_as_json(tmp_path):
    from cudalens.build import build_for, request_files
    from cudalens.spec.resolve import build_variant
    from cudalens.target import load_target
    from gpu_runner.service.schema import encode

    (tmp_path / "util.cuh").write_bytes(b'#pragma once\n// Gr\xf6\xdfe\n#define MSG "caf\xe9"\n')
    path = tmp_path / "saxpy.cu"
    path.write_bytes(b'#include "util.cuh"\n' + DATA)
    target = load_target(path)
    build = request_files(path, target.text, build_for(path))
    variant = build_variant("original", target.text, "saxpy", target.spec, target.spec.launch,
                            132, options=build.options, files=build.files)
    # C octal escapes: the same bytes in a string literal, comment text in a comment.
    assert variant.files == {"util.cuh": '#pragma once\n// Gr\\366\\337e\n'
                                         '#define MSG "caf\\351"\n'}
    assert variant.source.splitlines()[1] == ("// Gr\\366\\337enangaben in Elementen; f\\374r "
                                              "gro\\337e n siehe unten.")
    assert variant.source.count("\n") == target.text.count("\n")  # nvcc's lines unchanged
    assert json.loads(encode(variant))["files"] == variant.files  # JSON carries it


@pytest.mark.parametrize("example", ["stencil1d", "transpose", "reduce_sum"])
def test_every_candidate_of_a_cp1252_file_is_the_utf8_files_candidate_in_its_bytes(
        tmp_path, example):
    import re

    from cudalens.optimizer.context import make_context
    from cudalens.optimizer.staged_search import ordered
    from cudalens.target import load_target
    from cudalens.textfile import to_bytes

    text = (ROOT / "examples" / f"{example}.cu").read_text()
    # Every // comment, inside the kernels too, ends in umlauts and a smart quote.
    marked = re.sub(r"(//[^\n]*)", lambda m: m.group(1) + " Größe “", text)
    pools = []
    for encoding in ("cp1252", "utf-8"):
        folder = tmp_path / encoding
        folder.mkdir()
        (folder / f"{example}.cu").write_bytes(marked.encode(encoding))
        (folder / f"{example}.cu.spec").write_bytes(
            (ROOT / "examples" / f"{example}.cu.spec").read_bytes())
        t = load_target(folder / f"{example}.cu")
        ctx = make_context(t.text, str(t.path), t.kernel.qualified_name, t.spec, source=t.source)
        pools.append([(c.label, to_bytes(c.source)) for c in ordered(ctx, 0)])
    cp1252, utf8 = pools
    assert len(cp1252) == len(utf8) > 5
    for (label, data), (label8, data8) in zip(cp1252, utf8):
        assert label == label8 and data.decode("cp1252") == data8.decode("utf-8"), label
