"""The second line of defence: the runner's compile log holds no line of a file outside the
request even when the include scanner misses a directive (``gpu_runner.compile_log``), and
pragmas built by macros cannot tell whether a host file exists.

A scanner gap is simulated by calling ``compile_in_folder`` directly (it does not run
``check_request``); "plain nvcc" is the same command without the runner's options, to show
each attack is real with this machine's nvcc. The secret is a temp file outside the request's
folder holding a marker unique to the test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
import uuid
from pathlib import Path

import pytest

from gpu_runner.compile_folder import compile_in_folder
from gpu_runner.compile_log import (
    GUARD_HEADER, POISONED, QUIET_ECHO, filter_log, guard_log, runner_options, shown_file,
)
from gpu_runner.compiler import check_request, compile_variant, cubin_with_files
from gpu_runner.problem import Launch, Variant
from nvcc_util import ARCH, needs_nvcc, nvcc_path

MARKER = f"cudalens_secret_{uuid.uuid4().hex[:12]}"
KERNEL = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"


def _variant(source: str, files=None, options=()) -> Variant:
    return Variant(label="c", source=source, name="k", launches=(Launch((1, 1, 1), (32, 1, 1)),),
                   files=files or {}, options=tuple(options))


@pytest.fixture()
def secret(tmp_path) -> Path:
    """``tmp/outside/secret.h``: a #warning, C++ junk and a string, each holding MARKER."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "secret.h"
    path.write_text(f"#warning {MARKER}_w\n{MARKER}_a = not C++;\nint x = \"{MARKER}_c\" + ;\n")
    return path


def _plain(tmp_path: Path, source: str, options=()) -> str:
    """Plain nvcc's log for ``source`` as ``kernel.cu`` in ``tmp/request`` (with ``options``
    only: none of the runner's by default)."""
    folder = tmp_path / "request"
    folder.mkdir(exist_ok=True)
    (folder / "kernel.cu").write_text(source)
    done = subprocess.run([nvcc_path(), "--cubin", f"-arch={ARCH}", *options, "kernel.cu"], cwd=folder,
                          capture_output=True, text=True, timeout=300, check=False)
    return done.stdout + done.stderr


def _runner(source: str, files=None):
    """The runner's folder compile of ``source``, the include check skipped (a scanner gap)."""
    return compile_in_folder(source, files or {}, (), arch=ARCH, nvcc=nvcc_path())


# -- the options: accepted by this nvcc, and they stop the source-line echo ----------------------


@needs_nvcc
def test_the_echo_options_are_accepted_and_diagnostics_keep_file_line_and_message():
    source = ('#warning check the tile size\n'
              '__global__ void k(float* y) {\n'
              '  undefined_thing = 3;\n'
              '}\n')
    done = _runner(source)
    assert done.cubin is None
    assert done.log.splitlines() == [
        "kernel.cu:1:2: warning: #warning check the tile size [-Wcpp]",
        'kernel.cu(3): error: identifier "undefined_thing" is undefined',
        '1 error detected in the compilation of "kernel.cu".',
    ], done.log
    assert runner_options(["-O3"]) == [*QUIET_ECHO, "-include", GUARD_HEADER, "-O3"]
    # a kernel that compiles is not changed by the guard header (no log at all)
    ok = _runner(KERNEL)
    assert ok.cubin and ok.log == "", ok.log


@needs_nvcc
def test_sent_headers_and_toolkit_diagnostics_stay_with_their_continuation_lines():
    ops = ("#pragma once\n"
           "template <typename T> __device__ T twice(T x) { return x.nope * 2; }\n")
    source = ('#include "detail/ops.h"\n#include <cuda_fp16.h>\n'
              '__global__ void k(float* y) {\n  y[0] = twice(1.0f);\n'
              '  __half h = 1; h = "x";\n}\n')
    cubin, log = cubin_with_files(_variant(source, {"detail/ops.h": ops}), ARCH, nvcc=nvcc_path())
    assert cubin is None
    lines = log.splitlines()
    assert lines[0] == "nvcc failed for variant 'c':"
    assert 'kernel.cu(5): error: no operator "=" matches these operands' in lines
    assert lines[lines.index('kernel.cu(5): error: no operator "=" matches these operands')
                 + 1].strip() == "operand types are: __half = const char [2]"
    at = lines.index('detail/ops.h(2): error: expression must have class type but it has type '
                     '"float"')
    assert lines[at + 1].strip() == ('detected during instantiation of "T twice(T) [with '
                                     'T=float]" at line 4 of kernel.cu')
    notes = [ln for ln in lines if "cuda_fp16" in ln]
    assert notes and all("note #3326-D" in ln for ln in notes), notes
    assert not any("lines of compiler output" in ln for ln in lines), log


# -- a scanner gap: the host file's lines never reach the log -------------------------------------


@needs_nvcc
@pytest.mark.parametrize("directive", ["include", "line"])
def test_a_host_file_the_scanner_missed_leaves_no_line_in_the_log(tmp_path, secret, directive):
    if directive == "include":
        source = f'#include "{secret}"\n{KERNEL}'
    else:  # gcc shows lines of the file a #line names under its diagnostics
        source = f'#line 1 "{secret}"\n#warning here\nint x = "a" + ;\n{KERNEL}'
    leaked = _plain(tmp_path, source)
    assert MARKER in leaked, leaked
    done = _runner(source)
    assert done.cubin is None and MARKER not in done.log, done.log
    removed = [ln for ln in done.log.splitlines() if ln.startswith("[")]
    assert len(removed) == 1 and removed[0].endswith(
        "lines of compiler output about files outside the request removed]"), done.log
    assert int(removed[0][1:].split()[0]) >= 2  # the warning and the error, at least
    assert check_request(_variant(source)) is not None  # the first line of defence


def test_which_files_diagnostics_may_be_about():
    toolkit = ("/opt/cuda/include",)
    assert shown_file("kernel.cu") and shown_file("suite/a/../../common/x.h")
    assert shown_file("./detail/ops.h") and shown_file("<command-line>")
    assert not shown_file("../outside/secret.h") and not shown_file("a/../../x.h")
    assert not shown_file("/etc/passwd", toolkit)
    assert not shown_file("/opt/cuda/include/../../../etc/passwd", toolkit)
    assert shown_file("/opt/cuda/include/cuda_fp16.h", toolkit)
    assert not shown_file("/opt/cuda/include/cuda_fp16.h")
    log = ("cc1plus: fatal error: /etc/shadow: Permission denied\n"
           "kernel.cu(3): error: expected a \";\"\n"
           "  secret echo\n"
           "/etc/passwd(1): error: this declaration has no storage class or type specifier\n"
           "          root:x:0:0\n"
           "ptxas info    : Used 8 registers, used 0 barriers\n")
    assert filter_log(log, toolkit).splitlines() == [
        'kernel.cu(3): error: expected a ";"', "  secret echo",
        "ptxas info    : Used 8 registers, used 0 barriers",
        "[3 lines of compiler output about files outside the request removed]"]


# -- GCC dependency made by macros: refused by the scanner, poisoned in the compile --------------

DEP_ATTACKS = {
    # (source with F for the file's path, line the scanner refuses it at or None, why)
    "stringize": ('#define P(x) _Pragma(#x)\nP(GCC dependency "F")\n', 1, "a _Pragma whose"),
    "pasted-dependency": ('#define P(x) _Pragma(#x)\n#define Q(a, b) P(GCC a ## b "F")\n'
                          "Q(depend, ency)\n", 1, "a _Pragma whose"),
    "object-macro": ('#define P _Pragma\nP("GCC dependency \\"F\\"")\n', 1, "a _Pragma whose"),
    "cccl-macro": ('#include <cuda/std/cstddef>\n_CCCL_PRAGMA(GCC dependency "F")\n', 2,
                   "'#pragma GCC dependency'"),
    # no '_Pragma' and no 'dependency' token in the text: the poison stops it
    "pasted-pragma-cccl": ('#include <cuda/std/cstddef>\n#define CAT(a, b) a##b\n'
                           "#define XCAT(a, b) CAT(a, b)\n"
                           '_CCCL_PRAGMA(GCC XCAT(depend, ency) "F")\n', None, ""),
    "pasted-pragma": ('#define CAT(a, b) a##b\n#define XCAT(a, b) CAT(a, b)\n#define U _P\n'
                      'XCAT(U, ragma)("GCC dependency \\"F\\"")\n', None, ""),
}


@needs_nvcc
@pytest.mark.parametrize("name", sorted(DEP_ATTACKS))
def test_a_macro_made_dependency_pragma_tells_nothing_about_the_file(tmp_path, name):
    template, line, why = DEP_ATTACKS[name]
    target = tmp_path / "outside" / "probe.h"
    target.parent.mkdir()
    target.write_text("")
    os.utime(target, (4102444800, 4102444800))  # 2100: newer than the source
    source = template.replace("F", str(target)) + KERNEL
    # real: plain nvcc says the file exists and is newer; when it does not, the compile fails
    assert f"current file is older than {target}" in _plain(tmp_path, source)
    refused = check_request(_variant(source))
    if line is None:
        assert refused is None
    else:
        assert f"kernel.cu({line}): error: " in refused and f"refused: {why}" in refused, refused
    present = _runner(source)
    target.unlink()
    missing = _runner(source)
    assert present.cubin is None and missing.cubin is None
    assert present.log == missing.log, (present.log, missing.log)
    assert str(target) not in present.log and "older" not in present.log
    assert POISONED in present.log and present.log.endswith("(rest of the log removed)")


def test_pragma_operands_the_scanner_cannot_read_are_refused_and_literals_stay():
    from gpu_runner.includes import refused_includes

    ok = '_Pragma("unroll 4")\n#define UNROLL _Pragma("unroll")\n#pragma GCC diagnostic push\n'
    assert refused_includes(ok + KERNEL) == []
    for source, line in [('#define P(x) _Pragma(#x)\n', 1), ("#define P(x) _Pragma(x)\n", 1),
                         ('#define A ("unroll")\n_Pragma A\n', 2),
                         ('_Pragma("unroll" "4")\n', 1), ('_Pragma(L"unroll")\n', 1),
                         ("int dependency = 1;\n", 1)]:
        got = [(r.line, r.why.split(" (")[0].split(";")[0]) for r in refused_includes(source)]
        assert len(got) == 1 and got[0][0] == line, (source, got)


# -- include forms with macros, include_next, __has_include, #embed: refused ---------------------


@needs_nvcc
@pytest.mark.parametrize(("name", "template", "line", "why", "leaks"), [
    ("include-macro", '#define H "S"\n#include H\n', 2, "a computed include", True),
    ("include-macro-angle", "#define H <S>\n#include H\n", 2, "a computed include", True),
    ("include-next", '#include_next "S"\n', 1, "an absolute path", True),
    ("include-next-up", '#include_next "../outside/secret.h"\n', 1,
     "a path that leaves the request's own files", True),
    # __has_include: the compile's success tells whether the file exists
    ("has-include-macro", '#define H "S"\n#if !__has_include(H)\n#error no\n#endif\n', 2,
     "a computed include", False),
    ("has-include-alias", '#define HI __has_include\n#if !HI("S")\n#error no\n#endif\n', 1,
     "a computed include", False),
    # gcc 12 has no #embed ('invalid preprocessing directive'); refused all the same
    ("embed", 'const unsigned char d[] = {\n#embed "S"\n};\n', 2, "an absolute path", False),
    ("embed-macro", '#define H "S"\nconst unsigned char d[] = {\n#embed H\n};\n', 3,
     "a computed include", False),
])
def test_macro_and_next_include_forms_are_refused(tmp_path, secret, name, template, line, why,
                                                  leaks):
    source = template.replace("S", str(secret)) + KERNEL
    plain = _plain(tmp_path, source)
    assert (MARKER in plain) == leaks, plain
    if name.startswith("has-include"):
        assert "error: #error no" not in plain  # plain nvcc: it exists, the compile goes on
    refused = check_request(_variant(source))
    assert refused is not None and f"kernel.cu({line}): error: " in refused, refused
    assert f"refused: {why}" in refused and MARKER not in refused, refused
    done = _runner(source)  # and were the scanner to miss it
    assert MARKER not in done.log, done.log


# -- the pycuda path of compile_variant: same options, same filter -------------------------------


@needs_nvcc
def test_the_pycuda_compile_gets_the_runner_options_and_its_log_is_filtered(tmp_path, secret,
                                                                           monkeypatch):
    source = f'#include "{secret}"\n{KERNEL}'
    raw = _plain(tmp_path, source)
    assert MARKER in raw
    calls = []

    class CompileError(Exception):
        def __init__(self, stdout, stderr):
            super().__init__("nvcc compilation failed")
            self.stdout, self.stderr = stdout, stderr

    def fake_compile(src, **kw):
        calls.append(kw)
        raise CompileError(b"", raw.encode())

    compiler = types.ModuleType("pycuda.compiler")
    compiler.compile = fake_compile
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)

    class Session:
        drv = types.SimpleNamespace(CompileError=CompileError)
        device = types.SimpleNamespace(compute_capability=lambda: (9, 0))

    v = _variant(f'#include "secret.h"\n{KERNEL}', options=("-O3",))  # passes the scanner
    report = compile_variant(Session(), v).report
    assert calls[0]["options"] == runner_options(["-O3"])
    assert not report.ok and MARKER not in report.log, report.log
    assert report.log.startswith("nvcc failed for variant 'c':\nIn file included from kernel.cu:1:")
    assert guard_log(raw) in report.log


@needs_nvcc
def test_a_successful_pycuda_compile_says_its_warnings_without_the_host_files(tmp_path,
                                                                               monkeypatch):
    quiet = tmp_path / "outside" / "quiet.h"
    quiet.parent.mkdir()
    quiet.write_text(f"#warning {MARKER}_w\n")
    source = f'#include "{quiet}"\n__global__ void k(float* y) {{ int unused; y[0] = 1.0f; }}\n'
    raw = _plain(tmp_path, source, runner_options(()))  # what pycuda's nvcc run prints
    assert MARKER in raw and "kernel.cubin" in os.listdir(tmp_path / "request"), raw
    cubin = (tmp_path / "request" / "kernel.cubin").read_bytes()
    import warnings

    def fake_compile(src, **kw):
        warnings.warn("The CUDA compiler succeeded, but said the following:\n" + raw)
        return cubin

    compiler = types.ModuleType("pycuda.compiler")
    compiler.compile = fake_compile
    monkeypatch.setitem(sys.modules, "pycuda", types.ModuleType("pycuda"))
    monkeypatch.setitem(sys.modules, "pycuda.compiler", compiler)
    attrs = types.SimpleNamespace(NUM_REGS=1, SHARED_SIZE_BYTES=2, LOCAL_SIZE_BYTES=3,
                                  MAX_THREADS_PER_BLOCK=4)

    class Session:
        drv = types.SimpleNamespace(CompileError=RuntimeError, Error=RuntimeError,
                                    function_attribute=attrs)
        device = types.SimpleNamespace(compute_capability=lambda: (9, 0))

        @staticmethod
        def load(cubin, symbol):
            return types.SimpleNamespace(get_attribute=lambda a: a * 10)

    report = compile_variant(Session(), _variant(KERNEL)).report
    assert report.ok and report.registers == 10 and MARKER not in report.log, report.log
    assert report.log.splitlines() == [
        "The CUDA compiler succeeded, but said the following:",
        "In file included from kernel.cu:1:",
        'kernel.cu(2): warning #177-D: variable "unused" was declared but never referenced',
        'Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"',
        "[1 line of compiler output about files outside the request removed]"], report.log


@needs_nvcc
def test_pycuda_s_preprocessing_copy_is_named_as_the_request_s_source(tmp_path):
    """pycuda preprocesses a mkstemp copy of the source (``/tmp/tmpXXXXXXXX.cu``); its
    diagnostics are about the request's file and keep the missing header's name (seen on the
    H200: the filter dropped them, and a refused header's name vanished from the log)."""
    import tempfile

    from gpu_runner.compile_log import pycuda_source_names

    handle, path = tempfile.mkstemp(suffix=".cu", dir=tmp_path)
    os.close(handle)
    Path(path).write_text('#include "missing_header.h"\n__global__ void k() {}\n')
    proc = subprocess.run([nvcc_path(), "--preprocess", *runner_options(()), path],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert path in proc.stderr  # nvcc names the absolute copy
    raw = guard_log(proc.stderr, ())
    assert "missing_header.h" not in raw  # outside the request: dropped
    named = guard_log(pycuda_source_names(proc.stderr, str(tmp_path)), ())
    assert named.splitlines()[0] == ("kernel.cu:1:10: fatal error: missing_header.h: No such "
                                     "file or directory")
    # a name that only looks like one elsewhere stays outside
    other = pycuda_source_names(f"{tmp_path}/sub/tmpab12cd34.cu:1:1: error: x",
                                str(tmp_path))
    assert other.startswith(f"{tmp_path}/sub/")
