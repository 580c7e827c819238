"""The runner's compile may include the toolkit's headers and the request's own files only
(issue 11, item 3): nvcc echoes an included file's lines in its log, and the runner returns
that log to whoever sent the source.

Each attack is first shown to be real with this machine's nvcc (compiled the way pycuda
compiles, as ``kernel.cu`` in a fresh folder, its log holds a line of the host file); then the
runner's compile (``gpu_runner.compiler.compile_variant``, which checks before it needs pycuda or
nvcc) refuses it as a compile failure naming the directive and its line, and the log it returns
holds nothing of the file. The same over the live HTTP service (fake GPU workers, which run the
same check), and in the LLM agent's guard. Sources that include only toolkit headers, and every
kernel in the repository, are not refused.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cudalens.agent.guard import check_candidate, host_include_refusals
from cudalens.build.headers import request_files
from cudalens.build.project import build_for
from cudalens.runner_client import RunnerClient
from cudalens.source.parser import parse_source
from gpu_runner.compiler import check_request, compile_variant, cubin_with_files
from gpu_runner.cubin import find_kernel_symbol
from gpu_runner.includes import (
    LEAVES, Include, check_file_names, find_includes, refused_includes, request_target,
)
from gpu_runner.service.validate import compile_problems
from gpu_runner.problem import Launch, Variant
from live_fake_runner import fake_runner_process
from nvcc_util import ARCH, needs_nvcc, nvcc_path
from service_fakes import problem, variant

ROOT = Path(__file__).resolve().parent.parent
PASSWD_LINE = next(line for line in Path("/etc/passwd").read_text().splitlines() if ":" in line)
SECRET = "cudalens_host_secret_7f3a9c"  # what a host file outside the request holds
KERNEL = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"
TOKEN = "includes-test-token-0123456789"


def _variant(source: str, options: tuple[str, ...] = ()) -> Variant:
    return Variant(label="c", source=source, name="k", launches=(Launch((1, 1, 1), (32, 1, 1)),),
                   options=options)


class _NoGpuSession:
    """What ``compile_variant`` touches before nvcc: nothing but ``drv``."""

    drv = None


def _runner_log(source: str, options: tuple[str, ...] = ()) -> str:
    report = compile_variant(_NoGpuSession(), _variant(source, options)).report
    assert not report.ok
    return report.log


def _nvcc_log(folder: Path, source: str, options: tuple[str, ...] = ()) -> str:
    """nvcc's log for ``source`` compiled as pycuda does: ``kernel.cu`` in ``folder``."""
    (folder / "kernel.cu").write_text(source)
    done = subprocess.run([nvcc_path(), "--cubin", f"-arch={ARCH}", *options, "kernel.cu"],
                          cwd=folder, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout + done.stderr


@pytest.fixture()
def secret_file(tmp_path) -> Path:
    """A host file outside any request: ``tmp/outside/secret.h``, holding ``SECRET``."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.h"
    path.write_text(f"{SECRET} = not C++;\n")
    return path


# -- each attack: real with nvcc, refused by the runner ------------------------------------------


def _attacks(secret: Path, tmp: Path) -> list[tuple[str, str, tuple[str, ...], int, str, str]]:
    """(id, source, options, line, spelling, why) of each attack; ``tmp/request`` is where
    the request's ``kernel.cu`` is compiled, ``secret`` lies beside it in ``tmp/outside``."""
    abs_secret = str(secret)
    return [
        ("absolute", f'#include "/etc/passwd"\n{KERNEL}', (), 1, '#include "/etc/passwd"',
         "an absolute path"),
        ("absolute-angle", f"#include <{abs_secret}>\n{KERNEL}", (), 1,
         f"#include <{abs_secret}>", "an absolute path"),
        ("dotdot", f'// a helper\n#include "../outside/secret.h"\n{KERNEL}', (), 2,
         '#include "../outside/secret.h"', "a path that leaves the request's own files"),
        ("splice", f'#inc\\\nlude "{abs_secret}"\n{KERNEL}', (), 1, "#inc\\",
         "an absolute path"),
        ("comment", f'#/* a\n comment */include "{abs_secret}"\n{KERNEL}', (), 1, "#/* a",
         "an absolute path"),
        ("digraph", f'%:include "{abs_secret}"\n{KERNEL}', (), 1, f'%:include "{abs_secret}"',
         "an absolute path"),
        ("computed", f'#define F "{abs_secret}"\n#include F\n{KERNEL}', (), 2, "#include F",
         "a computed include"),
        ("in-kernel", f'__global__ void k(float* y) {{\n#include "{abs_secret}"\n}}\n', (), 2,
         f'#include "{abs_secret}"', "an absolute path"),
        ("has-include", f'#if __has_include("{abs_secret}")\n#include "{abs_secret}"\n#endif\n'
         f"{KERNEL}", (), 1, f'#if __has_include("{abs_secret}")', "an absolute path"),
        ("trigraph-c++14", f'??=include "{abs_secret}"\n{KERNEL}', ("-std=c++14",), 1,
         f'??=include "{abs_secret}"', "an absolute path"),
    ]


@needs_nvcc
def test_each_attack_leaks_with_plain_nvcc_and_is_refused_by_the_runner(tmp_path, secret_file):
    request = tmp_path / "request"
    request.mkdir()
    for name, source, options, line, spelling, why in _attacks(secret_file, tmp_path):
        leaked = _nvcc_log(request, source, options)
        content = PASSWD_LINE if "/etc/passwd" in source else SECRET
        assert content in leaked, f"{name}: plain nvcc did not echo the file:\n{leaked}"
        log = _runner_log(source, options)
        assert f"kernel.cu({line}): error: {spelling}: refused: {why}" in log, (name, log)
        assert log.startswith("variant 'c': include refused"), (name, log)
        assert content not in log and PASSWD_LINE not in log, (name, log)


@needs_nvcc
def test_the_hostname_by_angle_brackets(tmp_path):
    source = f"#include </etc/hostname>\n{KERNEL}"
    hostname = Path("/etc/hostname").read_text().strip()
    assert f"{hostname}" in _nvcc_log(tmp_path, source)  # nvcc: '"vm" is undefined', ...
    log = _runner_log(source)
    assert "kernel.cu(1): error: #include </etc/hostname>: refused: an absolute path" in log
    assert hostname not in log.replace("/etc/hostname", ""), log


@needs_nvcc
def test_include_path_options_are_refused(tmp_path):
    # -I/etc would make #include <passwd> find /etc/passwd
    leaked = _nvcc_log(tmp_path, f"#include <passwd>\n{KERNEL}", ("-I/etc",))
    assert PASSWD_LINE in leaked
    for options in (("-I/etc",), ("-I", "/etc"), ("-isystem/etc",), ("--include-path=/etc",),
                    ("-include", "/etc/passwd"), ("-DF=\"/etc/passwd\"",), ("-Xcompiler=-I/etc",)):
        log = _runner_log(f"#include <passwd>\n{KERNEL}", options)
        assert log.startswith(f"nvcc option '{options[0]}' is not accepted by the runner"), log
        assert PASSWD_LINE not in log


@needs_nvcc
def test_a_symlink_beside_the_callers_file_is_not_in_the_compiles_folder(tmp_path, secret_file):
    # A relative include is allowed: it resolves in the compile's own folder (pycuda's fresh
    # mkdtemp folder, holding kernel.cu only), and a link planted anywhere else is not there.
    # The runner's own compile of this is test_runner_includes_gpu.py's (it needs pycuda).
    beside = tmp_path / "project"
    beside.mkdir()
    (beside / "evil.h").symlink_to(secret_file)
    source = f'#include "evil.h"\n{KERNEL}'
    assert SECRET in _nvcc_log(beside, source)  # compiled in place, the link is followed
    assert check_request(_variant(source)) is None
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    log = _nvcc_log(fresh, source)
    assert "evil.h: No such file or directory" in log and SECRET not in log, log


@needs_nvcc
def test_toolkit_headers_compile_and_are_not_refused(tmp_path):
    source = ("#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n#include <cstdint>\n"
              "#include <cuda/std/limits>\n" + KERNEL)
    assert check_request(_variant(source)) is None
    log = _nvcc_log(tmp_path, source)
    assert (tmp_path / "kernel.cubin").is_file(), log


def test_no_kernel_in_the_repository_is_refused():
    files = sorted([*ROOT.glob("examples/**/*.cu"), *ROOT.glob("tests/data/**/*.cu"),
                    *ROOT.glob("tests/data/**/*.cuh")])
    assert len(files) > 30
    refused = {}
    for f in files:
        # each with the project headers the client sends beside it (a kernel that climbs
        # with '..', tests/data/macro_bench, is sent at its path from the project's root)
        text = f.read_text(errors="replace")
        sent = request_files(f, text, build_for(f))
        refused[str(f.relative_to(ROOT))] = refused_includes(text, sent.files,
                                                             at=sent.source_path)
    assert {k: v for k, v in refused.items() if v} == {}
    assert "../common/bench.h" in (ROOT / "tests/data/macro_bench/scale/scale.cu").read_text()


@pytest.mark.parametrize("source", [
    '// #include "/etc/passwd"\n',
    '/* #include "/etc/passwd" */\n',
    'const char* s = "#include \\"/etc/passwd\\"";\n',
    'const char* s = R"x(\n)x"; int n = 1\'000;\n',
    '#define STR(x) #x\nconst char* s = STR(include);\n',
])
def test_mentions_outside_directives_are_not_includes(source):
    assert [i for i in find_includes(source) if i.name is not None] == []
    assert refused_includes(source) == []


@pytest.mark.parametrize(("source", "line"), [
    # with -std=c++03 there are no raw strings: the include below is a real directive
    ('const char* s = R"x(\n#include "/etc/passwd"\n)x";\n', 2),
    # with -std=c++11 there are no digit separators: 1'000 opens a character literal and the
    # comment never starts
    ('int a = 1\'000; /* \'\n#include "/etc/passwd"\n*/\n', 2),
    # trigraphs (strict -std=c++11/14): ??/ splices the next line into the comment, or not
    ('// what??/\n#include "/etc/passwd"\n', 2),
    # a string that opens no comment for the compiler
    ('const char* s = "/*";\n#include "/etc/passwd"\n// */\n', 2),
])
def test_readings_of_other_dialects_are_checked_too(source, line):
    assert [(r.line, r.why.split(";")[0]) for r in refused_includes(source)] == \
        [(line, "an absolute path")]


def test_request_file_names_for_a_later_files_field():
    assert check_file_names({"util.cuh": "x", "detail/ops.h": "y"}) == []
    bad = check_file_names({"../x.h": "", "/etc/passwd": "", "a//b.h": "", ".hidden": "",
                            "big.h": "x" * (1 << 20 | 1)})
    assert [b.split(":")[0] for b in bad] == ["files['../x.h']", "files['/etc/passwd']",
                                             "files['a//b.h']", "files['.hidden']",
                                             "files['big.h']"]
    assert bad[-1].endswith(f"at most {1 << 20} bytes, found {(1 << 20) + 1}")
    # the files of a request are checked like its source, each under its own name
    found = refused_includes(KERNEL, {"detail/ops.h": '#pragma once\n#include "../../x.h"\n'})
    assert [(r.file, r.line, r.spelling) for r in found] == \
        [("detail/ops.h", 2, '#include "../../x.h"')]


# -- a '..' include of a file sent with the request, from the source's place in its project -----

BENCH_H = "#pragma once\n#define SCALE 2.0f\n"
DEEP = ('// a kernel of a suite whose shared header sits two folders up\n'
        '#include "../../common/bench.h"\n'
        '__global__ void k(float* y) { y[threadIdx.x] = SCALE; }\n')
DEEP_PATH = "suite/scale/scale.cu"


def _deep(label: str = "deep", source: str = DEEP, files=None,
          source_path: str = DEEP_PATH) -> Variant:
    return Variant(label=label, source=source, name="k",
                   launches=(Launch((1, 1, 1), (32, 1, 1)),),
                   files={"common/bench.h": BENCH_H} if files is None else files,
                   source_path=source_path)


def test_request_target_climbs_from_the_including_files_folder_and_no_higher():
    assert request_target("../../common/x.h", "src/a/b/k.cu") == "src/common/x.h"
    assert request_target("./../x.h", "a/k.cu") == "x.h"
    assert request_target("../x.h", "k.cu") is None  # above the root
    assert request_target("../../../x.h", "src/a/b/k.cu") == "x.h"  # the root itself
    assert request_target("../../../../x.h", "src/a/b/k.cu") is None
    assert request_target("../d/../x.h", "a/b/k.cu") is None  # '..' after a folder name
    assert request_target("..", "a/b/k.cu") is None


def test_a_dotdot_include_of_a_sent_file_is_accepted_and_every_other_one_refused():
    files = {"common/bench.h": BENCH_H}
    assert refused_includes(DEEP, files, main=DEEP_PATH) == []
    assert check_request(_deep()) is None
    # the same source at the top of the compile folder would climb out of it
    [top] = refused_includes(DEEP, files)
    assert (top.file, top.line, top.why) == ("kernel.cu", 2, LEAVES)
    kernel = "__global__ void k(float* y) { y[0] = 1.0f; }\n"
    accepted = ['#include "./../../common/bench.h"', '#import "../../common/bench.h"',
                '#if __has_include("../../common/bench.h")\n#endif']
    for line in accepted:
        assert refused_includes(f"{line}\n{kernel}", files, main=DEEP_PATH) == [], line
    not_sent = ("a '..' path to 'common/other.h', a file the request did not send; a compile "
                "request may include the toolkit's headers and the files sent with it only")
    refused = {
        '#include "../../common/other.h"': not_sent,
        '#include "../../../outside/secret.h"': LEAVES,
        '#include "../../common/../common/bench.h"': LEAVES,
        '#include "crt/../../../../../../../../etc/passwd"': LEAVES,
        "#include <../../common/bench.h>": LEAVES,
        '#include_next "../../common/bench.h"': LEAVES,
        '#if __has_include_next("../../common/bench.h")': LEAVES,
        '#include "/abs/common/bench.h"': "an absolute path; a compile request may include "
                                          "the toolkit's headers and the files sent with it only",
        '#include "..\\..\\common\\bench.h"': "a backslash in the file name; write paths "
                                                 "with '/'",
    }
    for line, why in refused.items():
        found = refused_includes(f"{line}\n{kernel}", files, main=DEEP_PATH)
        assert [(r.file, r.line, r.spelling, r.why) for r in found] == \
            [(DEEP_PATH, 1, line, why)], line
    computed = '#define H "../../common/bench.h"\n#include H\n' + kernel
    assert [r.why.split(" (")[0] for r in refused_includes(computed, files, main=DEEP_PATH)] \
        == ["a computed include"]
    # a sent file climbs from its own folder, and no higher than the root
    nested = {"common/bench.h": BENCH_H, "common/detail/ops.h": '#include "../bench.h"\n',
              "common/detail/far.h": '#include "../../../x.h"\n'}
    assert [(r.file, r.why) for r in refused_includes(kernel, nested)] == \
        [("common/detail/far.h", LEAVES)]


def test_the_sources_place_is_checked_like_the_files_names():
    assert check_request(_deep(source_path="../scale.cu")).startswith(
        "variant 'deep': source_path['../scale.cu']: expected a relative path")
    assert check_request(_deep(source_path="suite/scale.cpp")) == (
        "variant 'deep': source_path 'suite/scale.cpp': expected a name ending in '.cu'")
    assert check_request(_deep(source_path="common/bench.h/k.cu")) == (
        "variant 'deep': source_path 'common/bench.h/k.cu': the name is a sent file's or the "
        "runner's own (kernel.cubin)")
    assert compile_problems([_deep(source_path="/etc/k.cu")]) == [
        "variants[0] 'deep': source_path['/etc/k.cu']: expected a relative path of names made "
        "of letters, digits and '_.+-' joined by '/' (no '..', no leading '/' or '.')"]
    assert compile_problems([_deep()]) == []


@needs_nvcc
def test_a_deeper_source_cannot_climb_out_and_compiles_with_the_sent_header(tmp_path,
                                                                             secret_file):
    # tmp/request/r/k.cu: "../../outside/secret.h" is the host file, for plain nvcc
    folder = tmp_path / "request" / "r"
    folder.mkdir(parents=True)
    attack = f'#include "../../outside/secret.h"\n{KERNEL}'
    assert SECRET in _nvcc_log(folder, attack)
    bad = _deep("bad", attack, files={"r/x.h": ""}, source_path="r/k.cu")
    report = compile_variant(_NoGpuSession(), bad).report
    assert not report.ok and SECRET not in report.log
    assert 'r/k.cu(1): error: #include "../../outside/secret.h": refused: a path that leaves ' \
        "the request's own files" in report.log, report.log
    # nvcc takes a '..' after a folder name through its own search path (the toolkit's crt/)
    crt = f'#include "crt/../../../../../../../../etc/passwd"\n{KERNEL}'
    assert PASSWD_LINE in _nvcc_log(folder, crt)
    assert "refused: a path that leaves" in check_request(
        _deep("crt", crt, files={"r/x.h": ""}, source_path="r/k.cu"))
    # the request's own header, two folders up from the source: compiled by the runner's nvcc
    cubin, log = cubin_with_files(_deep(), ARCH, nvcc=nvcc_path())
    assert cubin is not None, log
    assert find_kernel_symbol(cubin, "k") == "_Z1kPf"
    cubin, log = cubin_with_files(_deep(files={"common/bench.h": "#error not this one\n",
                                               "suite/common/bench.h": BENCH_H}), ARCH,
                                  nvcc=nvcc_path())
    # the one the source's folder names, not one a folder sent higher up
    assert cubin is None and "suite/scale/../../common/bench.h" in log, log
    assert "error: #error not this one" in log, log


def test_over_http_a_sent_header_two_folders_up_compiles_and_escapes_do_not(tmp_path):
    good = _deep("good")
    unsent = _deep("unsent", DEEP.replace("common/bench.h", "common/other.h"))
    escape = _deep("escape", DEEP.replace("../../common", "../../../common"))
    at_top = _deep("top", source_path="kernel.cu")
    with fake_runner_process(tmp_path, TOKEN) as url:
        with RunnerClient(url, token=TOKEN, start_timeout_s=60) as client:
            reports = client.compile([good, unsent, escape, at_top])
    assert [r.ok for r in reports] == [True, False, False, False], [r.log for r in reports]
    assert f"{DEEP_PATH}(2): error: #include \"../../common/other.h\": refused: a '..' path to " \
        "'common/other.h', a file the request did not send" in reports[1].log
    assert f"{DEEP_PATH}(2): error: #include \"../../../common/bench.h\": refused: a path that " \
        "leaves the request's own files" in reports[2].log
    assert 'kernel.cu(2): error: #include "../../common/bench.h": refused: a path that leaves' \
        in reports[3].log


# -- the HTTP service and the LLM agent ----------------------------------------------------------


def test_over_http_a_refused_include_is_a_compile_failure_not_a_500(tmp_path):
    source = variant("c").source + '#include "/etc/passwd"\n'
    bad = Variant("c", source, "saxpy", variant("c").launches)
    with fake_runner_process(tmp_path, TOKEN) as url:
        with RunnerClient(url, token=TOKEN, start_timeout_s=60) as client:
            [report] = client.compile([bad])
            ev = client.evaluate(problem(), variant("baseline"), [bad, variant("ok")],
                                 repetitions=5)
    assert not report.ok
    assert 'kernel.cu(3): error: #include "/etc/passwd": refused: an absolute path' in report.log
    assert PASSWD_LINE not in report.log
    refused, ok = ev.candidates
    assert refused.verdict.status == "compile_error" and not refused.compile.ok
    assert refused.verdict.reason.startswith(
        'c did not compile: kernel.cu(3): error: #include "/etc/passwd": refused: an absolute '
        "path"), refused.verdict.reason
    assert ok.verdict.status == "passed"


def test_the_agent_refuses_host_includes_in_the_models_code_with_their_lines():
    kernel = parse_source(KERNEL, "k.cu").kernels[0]
    code = ('__global__ void k(float* y)\n{\n%:include "/home/user/.ssh/id_rsa"\n'
            '    y[threadIdx.x] = 1.0f;\n}\n')
    refusals = check_candidate(code, kernel, ["<cuda_fp16.h>"])
    assert [(r.line, r.reason) for r in refusals] == [
        (3, '%:include "/home/user/.ssh/id_rsa" is refused: an absolute path; a compile request '
            "may include the toolkit's headers and the files sent with it only")]
    assert host_include_refusals('#include "../../../etc/passwd"\n')[0].line == 1
    # an include the file has is accepted again; one it lacks, inside the body, is refused
    nested = '__global__ void k(float* y)\n{\n#include "util.cuh"\n    y[0] = 1.0f;\n}\n'
    assert check_candidate(nested, kernel, ['"util.cuh"']) == []
    assert [r.line for r in check_candidate(nested, kernel, [])] == [3]
    assert "neither one of CUDA's own headers" in str(check_candidate(nested, kernel, [])[0])


# Found by a break test (2026-12-03): directives gcc obeys that the scanner did not see, or
# that open a file without including it; each made nvcc print lines of /etc/passwd in the log.
@pytest.mark.parametrize(("source", "line", "why"), [
    # a lone CR ends a line for gcc: the include is not inside the comment
    ('// c\r#include "/etc/passwd"\n', 2, "an absolute path"),
    # backslash-CR splices lines for gcc
    ('#inc\\\rlude "/etc/passwd"\n', 1, "an absolute path"),
    # NUL is a blank for gcc (with a warning)
    ('#\0include "/etc/passwd"\n', 1, "an absolute path"),
    ('%:\0include "/etc/passwd"\n', 1, "an absolute path"),
    # a universal character name in the directive's name is still an include to gcc
    ('#\\u0069nclude "/etc/passwd"\n', 1, "a universal character name"),
    ('#inc\\U0000006Cude "/etc/passwd"\n', 1, "a universal character name"),
    # #line and line markers: gcc shows lines of the named file under its diagnostics
    ('#line 1 "/etc/passwd"\n#warning a\n', 1, "#line names a file outside the request"),
    ('# 7 "../../etc/passwd"\n', 1, "#line names a file outside the request"),
    ('/**/#/**/line 3 "/etc/shadow"\n', 1, "#line names a file outside the request"),
    ('#define F "/etc/passwd"\n#line 2 F\n', 2, "a #line whose operand is not a number"),
    # files opened by a pragma, or probed by __has_embed
    ('#pragma GCC dependency "/etc/passwd"\n', 1, "'#pragma GCC dependency'"),
    ('_Pragma("GCC dependency \\"/etc/passwd\\"")\n', 1, "'#pragma GCC dependency'"),
    ('#if __has_embed("/etc/passwd")\n#endif\n', 1, "an absolute path"),
])
def test_directives_gcc_reads_otherwise_are_refused(source, line, why):
    got = [(r.line, r.why) for r in refused_includes(source + "__global__ void k() {}\n")]
    assert len(got) == 1 and got[0][0] == line and got[0][1].startswith(why), got


def test_line_directives_naming_request_files_or_no_file_stay():
    # the runner's own sanitize wrapper and generated code use these
    ok = ('#line 1 "cudalens-variant.cu"\n#line 40\n# 12 "kernel.cu" 2\n'
          '#line 3 "detail/ops.h"\n#pragma unroll\n_Pragma("unroll 4")\n'
          '__global__ void k() {}\n')
    assert refused_includes(ok) == []
    assert find_includes('// c\r#include "util.cuh"\r\n') == [
        Include(2, '#include "util.cuh"', "util.cuh")]
