"""Compile like the real build (issue 13, item 1): flags from ``compile_commands.json`` or the
``[build]`` table of ``cudalens.toml`` in ``cudalens check``, the editor's diagnostics, spec
inference's macro values and the runner's compile; the project headers travel with the request.

The project is ``tests/data/build_project`` (``src/kernel.cu`` includes ``include/common.h``,
which needs ``-I include`` and ``-DTILE=32``), copied into a temporary folder; each test writes
the build description it needs there, with absolute paths into the copy.
"""

from __future__ import annotations

import json
import shutil
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudalens.agent.config import ConfigError
from cudalens.build import (
    CompdbError, HeaderError, build_defines, build_for, entry_for, find_compdb, load_compdb,
    parse_arguments, request_files,
)
from cudalens.cli import main
from cudalens.runner_client import RunnerClient
from cudalens.errors import CudalensError
from cudalens.spec.resolve import build_problem, build_variant
from cudalens.target import load_target
from gpu_runner.compile_folder import compile_in_folder, nvcc_command
from gpu_runner.compiler import check_options, check_request, cubin_with_files
from gpu_runner.cubin import find_kernel_symbol
from gpu_runner.includes import MAX_FILE_BYTES
from gpu_runner.problem import variant_from_dict, to_dict
from gpu_runner.service.validate import compile_problems
from live_fake_runner import fake_runner_process
from nvcc_util import ARCH, needs_nvcc, nvcc_path

DATA = Path(__file__).resolve().parent / "data" / "build_project"
TOKEN = "build-test-token-0123456789"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(DATA, root)
    (root / ".git").mkdir()  # a repository: the build is looked for up to its root
    return root


def _write_compdb(root: Path, command: str, where: str = "compile_commands.json",
                  file: str = "src/kernel.cu") -> Path:
    path = root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"directory": str(root), "file": file, "command": command}]))
    return path


def _standard(root: Path, where: str = "compile_commands.json") -> Path:
    return _write_compdb(root, "/usr/local/cuda/bin/nvcc -I include -DTILE=32 -arch=sm_80 "
                               "-o build/kernel.o -c src/kernel.cu", where)


# -- reading the build -------------------------------------------------------------------------


def test_a_command_is_split_like_a_shell_and_read_through_the_allow_list(tmp_path):
    args = ["nvcc", "-I", "include", "-Ithird/cub", "--include-path=gen", "-isystem", "/opt/x",
            "-DTILE=32", "-D", "NAME=\"a b\"", "-DFLAG", "-UOLD", "-std=c++17",
            "--expt-relaxed-constexpr", "--extended-lambda", "-gencode",
            "arch=compute_80,code=sm_80", "-arch=sm_70", "-Xcompiler", "-fPIC", "-o", "k.o", "-c",
            "-MD", "src/k.cu"]
    flags = parse_arguments(args, str(tmp_path), "db")
    assert flags.include_dirs == (str(tmp_path / "include"), str(tmp_path / "third/cub"),
                                  str(tmp_path / "gen"))
    assert flags.system_include_dirs == ("/opt/x",)
    assert flags.defines == (("TILE", "32"), ("NAME", '"a b"'), ("FLAG", None))
    assert flags.undefines == ("OLD",)
    assert flags.std == "c++17"
    assert flags.extra == ("--expt-relaxed-constexpr", "--extended-lambda")
    assert flags.ignored == ("-Xcompiler", "-o", "-c", "-MD")
    assert flags.define_values() == {"TILE": "32", "NAME": '"a b"', "FLAG": "1"}
    assert flags.nvcc_options() == [
        f"-I{tmp_path}/include", f"-I{tmp_path}/third/cub", f"-I{tmp_path}/gen", "-isystem",
        "/opt/x", "-DTILE=32", '-DNAME="a b"', "-DFLAG", "-UOLD", "-std=c++17",
        "--expt-relaxed-constexpr", "--extended-lambda"]


def test_the_command_string_is_split_with_shell_quoting(project):
    db = _write_compdb(project, "nvcc -I 'my include' \"-DMSG=a b\" -c src/kernel.cu")
    [entry] = load_compdb(db)
    assert entry.arguments == ("nvcc", "-I", "my include", "-DMSG=a b", "-c", "src/kernel.cu")
    assert entry.file == str(project / "src" / "kernel.cu")
    flags = build_for(project / "src" / "kernel.cu").flags
    assert flags.include_dirs == (str(project / "my include"),)
    assert flags.define_values() == {"MSG": "a b"}


def test_exact_entry_else_the_nearest_one_for_a_header(project):
    db = project / "compile_commands.json"
    db.write_text(json.dumps([
        {"directory": str(project), "file": "other/a.cu", "arguments": ["nvcc", "-DWHICH=1"]},
        {"directory": str(project / "src"), "file": "kernel.cu",
         "arguments": ["nvcc", "-I../include", "-DWHICH=2"]},
    ]))
    entries = load_compdb(db)
    assert entry_for(entries, project / "src" / "kernel.cu").file == str(project / "src/kernel.cu")
    assert entry_for(entries, project / "src" / "detail" / "h.cuh").file == \
        str(project / "src/kernel.cu")
    assert entry_for(entries, project / "other" / "b.cu").file == str(project / "other/a.cu")
    header = build_for(project / "src" / "helpers.cuh").flags
    assert header.include_dirs == (str(project / "include"),)
    assert header.define_values() == {"WHICH": "2"}
    assert "nearest entry" in header.origin


def test_the_database_is_found_at_the_root_or_in_build(project, tmp_path):
    assert find_compdb(project / "src" / "kernel.cu") is None
    db = _standard(project, "build/compile_commands.json")
    assert find_compdb(project / "src" / "kernel.cu") == db
    assert build_for(project / "src" / "kernel.cu").root == project.resolve()
    _standard(tmp_path)  # above the repository: not the project's
    db.unlink()
    assert find_compdb(project / "src" / "kernel.cu") is None


def test_a_broken_database_names_itself_and_the_entry(project):
    db = project / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(project), "file": "src/kernel.cu"}]))
    with pytest.raises(CompdbError, match=r"compile_commands.json: entry 0: expected "
                                          r"'arguments' \(a list of strings\) or 'command'"):
        build_for(project / "src" / "kernel.cu")
    db.write_text("[{")
    with pytest.raises(CompdbError, match="cannot read the compilation database"):
        build_for(project / "src" / "kernel.cu")


def test_the_builds_integer_defines_for_spec_expressions(project):
    assert build_defines(project / "src" / "kernel.cu") == {}
    _write_compdb(project, "nvcc -Iinclude -DTILE=32 -DMASK=0x1f -DNAME=abc -DROWS=4u -DFLAG "
                           "-DGONE=3 -UGONE -DOCT=010 -DBAD=08 -DNEG=-2 -c src/kernel.cu")
    assert build_defines(project / "src" / "kernel.cu") == {"TILE": 32, "MASK": 31, "ROWS": 4,
                                                            "FLAG": 1, "OCT": 8, "NEG": -2}


def test_a_spec_names_the_builds_define(project):
    spec = project / "src" / "kernel.cu.spec"
    spec.write_text(spec.read_text().replace("block = 32", "block = TILE")
                    .replace("grid = ceil_div(n, block.x)", "grid = ceil_div(n, TILE)"))
    with pytest.raises(CudalensError) as exc:
        load_target(project / "src" / "kernel.cu")
    assert "kernel.cu.spec:6: in block.x: undefined name 'TILE'" in str(exc.value)
    _standard(project)
    target = load_target(project / "src" / "kernel.cu")
    problem = build_problem(target.spec, target.kernel)
    v = build_variant("b", target.text, "scale_tiles", target.spec, target.spec.launch, 132)
    assert v.launches[0].block == (32, 1, 1)
    assert v.launches[0].grid == ((1 << 20) // 32, 1, 1)
    assert problem.cases[0].args[1].length == 1 << 20


def test_the_draft_sees_the_builds_define_through_the_header(project):
    (project / "src" / "kernel.cu.spec").unlink()
    assert load_target(project / "src" / "kernel.cu").spec.launch.grid == ("ceil_div(n, block.x)",)
    _standard(project)
    draft = load_target(project / "src" / "kernel.cu").spec
    assert draft.launch.grid == ("ceil_div(n, 32)",)  # blockIdx.x * TILE with TILE = 32


# -- cudalens.toml [build] ---------------------------------------------------------------------


def test_a_build_table_gives_the_flags_without_a_database(project):
    (project / "cudalens.toml").write_text(
        '[build]\ninclude_dirs = ["include"]\ndefines = { TILE = 32, FAST = true }\n'
        'std = "c++17"\noptions = ["--expt-relaxed-constexpr"]\n')
    build = build_for(project / "src" / "kernel.cu")
    assert build.root == project.resolve()
    assert build.flags.nvcc_options() == [f"-I{project.resolve()}/include", "-DTILE=32",
                                          "-DFAST=1", "-std=c++17", "--expt-relaxed-constexpr"]
    assert build_defines(project / "src" / "kernel.cu") == {"TILE": 32, "FAST": 1}


@pytest.mark.parametrize("table, message", [
    ('options = ["-Xcompiler", "-fPIC"]', "options: '-Xcompiler' is not an option cudalens "
                                          "passes from a project file"),
    ('options = ["-o", "/tmp/x"]', "options: '-o' is not an option cudalens passes"),
    ('options = ["-I/etc"]', "options: '-I/etc' is not an option cudalens passes"),
    ('defines = { "A;B" = 1 }', "defines: expected a C macro name, found 'A;B'"),
    ('defines = { X = "a\\nb" }', "defines.X: expected an integer, a boolean or a one-line"),
    ('std = "gnu++17"', "std: expected 'c++NN'"),
    ('linker = "x"', "unknown key(s) linker"),
])
def test_a_build_table_refuses_flags_outside_the_allow_list(project, table, message):
    (project / "cudalens.toml").write_text(f"[build]\n{table}\n")
    with pytest.raises(ConfigError) as exc:
        build_for(project / "src" / "kernel.cu")
    assert message in str(exc.value)
    assert "cudalens.toml [build]" in str(exc.value)


def test_the_database_wins_over_the_build_table(project):
    (project / "cudalens.toml").write_text('[build]\ndefines = { TILE = 8 }\n')
    _standard(project)
    assert build_defines(project / "src" / "kernel.cu") == {"TILE": 32}


# -- cudalens check and the editor's diagnostics -------------------------------------------------


@needs_nvcc
def test_check_compiles_with_the_database_and_fails_without_it(project, monkeypatch):
    monkeypatch.chdir(project)
    plain = CliRunner().invoke(main, ["check", "src/kernel.cu"])
    assert plain.exit_code == 1, plain.output
    assert "src/kernel.cu:1: error: common.h: No such file or directory" in plain.output
    _standard(project)
    built = CliRunner().invoke(main, ["check", "src/kernel.cu"])
    assert built.exit_code == 0, built.output
    assert "scale_tiles: " in built.output
    assert "compile ok for sm_90: 0 errors, 0 warnings, 1 kernel" in built.output


@needs_nvcc
def test_check_takes_a_database_named_on_the_command_line(project, monkeypatch, tmp_path):
    monkeypatch.chdir(project)
    db = _standard(tmp_path / "elsewhere")
    db.write_text(json.dumps([{"directory": str(project), "file": "src/kernel.cu",
                               "command": "nvcc -Iinclude -DTILE=32 -c src/kernel.cu"}]))
    done = CliRunner().invoke(main, ["check", "src/kernel.cu", "--compile-commands", str(db)])
    assert done.exit_code == 0, done.output
    missing = CliRunner().invoke(main, ["check", "src/kernel.cu", "--compile-commands",
                                        str(tmp_path / "none.json")])
    assert missing.exit_code == 2  # as for a FILE that does not exist
    assert "none.json: no such compilation database (--compile-commands)" in missing.output


@needs_nvcc
def test_check_with_the_build_table_and_no_database(project, monkeypatch):
    monkeypatch.chdir(project)
    (project / "cudalens.toml").write_text('[build]\ninclude_dirs = ["include"]\n')
    no_tile = CliRunner().invoke(main, ["check", "src/kernel.cu"])
    assert no_tile.exit_code == 1
    assert 'TILE comes from the build: compile with -DTILE=32' in no_tile.output
    (project / "cudalens.toml").write_text(
        '[build]\ninclude_dirs = ["include"]\ndefines = { TILE = 32 }\n')
    done = CliRunner().invoke(main, ["check", "src/kernel.cu"])
    assert done.exit_code == 0, done.output


@needs_nvcc
def test_the_editors_check_uses_the_build(project):
    from cudalens.lsp.diagnostics import _run_check

    path = project / "src" / "kernel.cu"
    edited = path.read_text().replace("twice(x[i])", "twice(x[i]) + TILE")
    snapshot = types.SimpleNamespace(uri=path.as_uri(), path=path, text=edited)
    without = _run_check(snapshot, "sm_90", (), "nvcc")
    assert not without.ok
    assert "common.h: No such file or directory" in without.diagnostics[0].message
    _standard(project)
    built = _run_check(snapshot, "sm_90", (), "nvcc")
    assert built.ok, built.output
    assert [k.name for k in built.kernels] == ["scale_tiles"]


# -- the headers that travel to the runner -------------------------------------------------------


def _request(project: Path):
    path = project / "src" / "kernel.cu"
    return request_files(path, path.read_text(), build_for(path))


def test_the_kernels_project_headers_and_relative_include_options(project):
    _standard(project)
    req = _request(project)
    assert req.files == {"include/common.h": (project / "include" / "common.h").read_text()}
    assert req.options == ("-Isrc", "-Iinclude", "-DTILE=32")


def test_headers_are_followed_transitively_and_toolkit_headers_stay(project):
    _standard(project)
    (project / "include" / "detail").mkdir()
    (project / "include" / "detail" / "math.cuh").write_text(
        "#pragma once\n#include <cuda_fp16.h>\n__device__ inline float sq(float v) "
        "{ return v * v; }\n")
    common = project / "include" / "common.h"
    common.write_text('#include "detail/math.cuh"\n#include <cstdint>\n' + common.read_text())
    req = _request(project)
    assert sorted(req.files) == ["include/common.h", "include/detail/math.cuh"]


def test_a_header_outside_the_project_is_refused_naming_it(project, tmp_path):
    outside = tmp_path / "vendor"
    outside.mkdir()
    (outside / "vendor.h").write_text("#define V 1\n")
    _write_compdb(project, f"nvcc -Iinclude -I{outside} -DTILE=32 -c src/kernel.cu")
    common = project / "include" / "common.h"
    common.write_text(common.read_text() + '#include "vendor.h"\n')
    with pytest.raises(HeaderError) as exc:
        _request(project)
    line = len(common.read_text().splitlines())
    assert str(exc.value) == (
        f'{common.resolve()}:{line}: #include "vendor.h": header {outside.resolve()}/vendor.h '
        f"is outside the project ({project.resolve()}); only the project's headers are sent to "
        f"the runner")


def test_a_header_over_the_size_limit_is_refused_naming_it(project):
    _standard(project)
    big = project / "include" / "table.h"
    big.write_text("// " + "x" * MAX_FILE_BYTES + "\n")
    (project / "include" / "common.h").write_text('#include "table.h"\n')
    with pytest.raises(HeaderError) as exc:
        _request(project)
    assert f"header {big.resolve()} has {MAX_FILE_BYTES + 4} bytes; the runner takes at most " \
           f"{MAX_FILE_BYTES} bytes a file" in str(exc.value)


def test_a_sent_header_whose_include_leaves_the_project_is_refused(project):
    _standard(project)
    common = project / "include" / "common.h"
    common.write_text('#include "../../secret.h"\n' + common.read_text())
    with pytest.raises(HeaderError) as exc:
        _request(project)
    assert 'include/common.h(1): error: #include "../../secret.h": refused: a path that leaves ' \
           "the request's own files" in str(exc.value)


def test_the_variant_carries_the_headers_over_its_dict_form(project):
    _standard(project)
    req = _request(project)
    target = load_target(project / "src" / "kernel.cu")
    v = build_variant("baseline", target.text, target.kernel.qualified_name, target.spec,
                      target.spec.launch, 132, options=req.options, files=req.files)
    assert v.files == req.files and v.options == ("-Isrc", "-Iinclude", "-DTILE=32")
    assert variant_from_dict(to_dict(v)) == v
    assert check_request(v) is None


def test_runner_include_options_are_relative_folders_only():
    assert check_options(("-Iinclude", "-I.", "-Ia/b-c", "-DTILE=32", "-UX",
                          "--expt-relaxed-constexpr", "--extended-lambda")) is None
    assert check_options(("-I../x",)).startswith(
        "nvcc option '-I../x' is not accepted by the runner: a path that leaves")
    assert check_options(("-I/usr/include",)).startswith(
        "nvcc option '-I/usr/include' is not accepted by the runner: an absolute path")


def test_the_service_checks_the_files_before_queuing(project):
    _standard(project)
    target = load_target(project / "src" / "kernel.cu")
    base = build_variant("v", target.text, "scale_tiles", target.spec, target.spec.launch, 132)
    many = {f"h{i}.h": "" for i in range(65)}
    big = {"include/big.h": "x" * (MAX_FILE_BYTES + 1)}
    from dataclasses import replace
    assert compile_problems([replace(base, files=many)]) == [
        "variants[0] 'v': files: at most 64 files may be sent, found 65"]
    assert compile_problems([replace(base, files=big)]) == [
        f"variants[0] 'v': files['include/big.h']: at most {MAX_FILE_BYTES} bytes, found "
        f"{MAX_FILE_BYTES + 1}"]
    assert check_request(replace(base, files={"kernel.cu": ""})) == (
        "variant 'v': files['kernel.cu']: the name is the runner's own (kernel.cu, kernel.cubin)")


def test_the_fake_runner_compiles_the_variant_with_its_headers(project, tmp_path):
    _standard(project)
    req = _request(project)
    target = load_target(project / "src" / "kernel.cu")
    good = build_variant("good", target.text, "scale_tiles", target.spec, target.spec.launch,
                         132, options=req.options, files=req.files)
    leaking = dict(req.files)
    leaking["include/common.h"] = '#include "/etc/hostname"\n' + leaking["include/common.h"]
    from dataclasses import replace
    bad = replace(good, label="bad", files=leaking)
    with fake_runner_process(tmp_path, TOKEN) as url:
        with RunnerClient(url, token=TOKEN, start_timeout_s=60) as client:
            ok, refused = client.compile([good, bad])
    assert ok.ok, ok.log
    assert not refused.ok
    assert 'include/common.h(1): error: #include "/etc/hostname": refused: an absolute path' \
        in refused.log


# -- the runner's compile with real nvcc (no pycuda, no GPU) -------------------------------------


@needs_nvcc
def test_the_runners_compile_writes_the_headers_and_finds_the_kernel(project):
    _standard(project)
    req = _request(project)
    target = load_target(project / "src" / "kernel.cu")
    v = build_variant("baseline", target.text, "scale_tiles", target.spec, target.spec.launch,
                      132, options=req.options, files=req.files)
    cubin, log = cubin_with_files(v, ARCH, nvcc=nvcc_path())
    assert cubin is not None, log
    assert find_kernel_symbol(cubin, "scale_tiles") == "_Z11scale_tilesPKfPfi"
    from dataclasses import replace
    no_define = replace(v, options=("-Isrc", "-Iinclude"))
    cubin, log = cubin_with_files(no_define, ARCH, nvcc=nvcc_path())
    assert cubin is None
    assert log.startswith("nvcc failed for variant 'baseline':")
    assert 'TILE comes from the build: compile with -DTILE=32' in log


@needs_nvcc
def test_the_compile_folder_holds_the_source_and_the_files_only():
    source = '#include "a/b.h"\n__global__ void k(float* y) { y[0] = B; }\n'
    done = compile_in_folder(source, {"a/b.h": "#define B 2.0f\n"}, ("-I.",), arch=ARCH,
                             nvcc=nvcc_path())
    assert done.returncode == 0 and done.cubin, done.log
    assert nvcc_command("nvcc", "sm_90", ("-I.",)) == [
        "nvcc", "--cubin", "-arch=sm_90", "-I.", "-o", "kernel.cubin", "kernel.cu"]


# -- a kernel that reaches its suite's header with '..' (PolyBench: "../../common/x.h") --------

SUITE_H = """#pragma once
#define SUITE_BOUND(N, n) n
#define LEN 4096
"""
SUITE_KERNEL = """#include <cstdio>
#include "../../common/suite.h"

__global__ void halve(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < SUITE_BOUND(LEN, n)) y[i] = 0.5f * x[i];
}

void run(const float* x, float* y)
{
    int n = LEN;
    halve<<<(LEN + 255) / 256, 256>>>(x, y, n);
}
"""


@pytest.fixture
def suite(tmp_path) -> Path:
    """A repository ``suite/``: ``cudalens.toml`` with a ``[build]`` table, ``common/suite.h``
    and the kernel ``kernels/halve/halve.cu`` that includes it as ``"../../common/suite.h"``."""
    root = tmp_path / "suite"
    (root / "common").mkdir(parents=True)
    (root / "kernels" / "halve").mkdir(parents=True)
    (root / ".git").mkdir()  # a repository: its cudalens.toml is looked for up to its root
    (root / "cudalens.toml").write_text("[build]\ninclude_dirs = []\n")
    (root / "common" / "suite.h").write_text(SUITE_H)
    (root / "kernels" / "halve" / "halve.cu").write_text(SUITE_KERNEL)
    return root


def test_a_suite_header_reached_with_dotdot_travels_beside_the_kernel_at_its_path(suite):
    path = suite / "kernels" / "halve" / "halve.cu"
    req = request_files(path, path.read_text(), build_for(path))
    assert req.files == {"common/suite.h": SUITE_H}
    assert req.source_path == "kernels/halve/halve.cu"
    assert req.options == ("-Ikernels/halve",)
    target = load_target(path)
    v = build_variant("baseline", target.text, "halve", target.spec, target.spec.launch, 132,
                      options=req.options, files=req.files, source_path=req.source_path)
    assert v.source_path == "kernels/halve/halve.cu"
    assert variant_from_dict(to_dict(v)) == v
    assert check_request(v) is None
    # a kernel without a '..' include is still sent as kernel.cu
    path.write_text(SUITE_KERNEL.replace("../../common/suite.h", "suite.h"))
    (suite / "kernels" / "halve" / "suite.h").write_text(SUITE_H)
    plain = request_files(path, path.read_text(), build_for(path))
    assert (list(plain.files), plain.source_path) == (["kernels/halve/suite.h"], "kernel.cu")


def test_a_dotdot_include_outside_the_project_is_still_refused(suite):
    path = suite / "kernels" / "halve" / "halve.cu"
    (suite.parent / "secret.h").write_text("#define S 1\n")
    path.write_text('#include "../../../secret.h"\n' + SUITE_KERNEL)
    with pytest.raises(HeaderError) as exc:
        request_files(path, path.read_text(), build_for(path))
    assert str(exc.value) == (
        f'{path.resolve()}:1: #include "../../../secret.h": header '
        f"{(suite.parent / 'secret.h').resolve()} is outside the project ({suite.resolve()}); "
        f"only the project's headers are sent to the runner")


@needs_nvcc
def test_the_runners_compile_finds_the_suite_header_two_folders_up(suite):
    path = suite / "kernels" / "halve" / "halve.cu"
    req = request_files(path, path.read_text(), build_for(path))
    target = load_target(path)
    v = build_variant("baseline", target.text, "halve", target.spec, target.spec.launch, 132,
                      options=req.options, files=req.files, source_path=req.source_path)
    cubin, log = cubin_with_files(v, ARCH, nvcc=nvcc_path())
    assert cubin is not None, log
    assert find_kernel_symbol(cubin, "halve") == "_Z5halvePKfPfi"


def test_optimize_sends_the_suite_header_and_the_kernels_place(suite, tmp_path):
    from cudalens.optimize import optimize

    path = suite / "kernels" / "halve" / "halve.cu"
    with fake_runner_process(tmp_path, TOKEN) as url:
        with RunnerClient(url, token=TOKEN, start_timeout_s=60) as client:
            result = optimize(load_target(path), client, budget=2, batch=2, confirm=0)
    assert result.evaluation.baseline is not None
    sent = [v for b in result.batches for v in b.variants]
    assert sent and all(v.files == {"common/suite.h": SUITE_H} and
                        v.source_path == "kernels/halve/halve.cu" for v in sent)
    assert result.rows and all(r.result.compile.ok for r in result.rows), \
        [(r.candidate.label, r.result.compile.log) for r in result.rows]
