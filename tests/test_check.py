"""Compile check (``cudalens.check``): nvcc diagnostics and ptxas resource usage.

Two kinds of tests:
* parser tests read nvcc output recorded from CUDA 13.0 (``tests/data/check/outputs``,
  see its README for the commands) and need no toolkit;
* compile tests run the real nvcc on the fixtures in ``tests/data/check`` (no GPU needed)
  and skip, saying why, where nvcc is not installed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cudalens.check import (
    CheckResult, DiagnosticNote, NvccNotFound, compile_check, find_nvcc, format_check,
)
from cudalens.check.diagnostics import edg_column, gcc_column, parse_diagnostics
from cudalens.check.nvcc import build_command, check_options
from cudalens.check.ptx_lines import ptx_source_location
from cudalens.check.ptxas_report import parse_ptxas_report

DATA = Path(__file__).parent / "data" / "check"
OUTPUTS = DATA / "outputs"
SOURCES = OUTPUTS / "sources"


def _nvcc_or_none() -> str | None:
    try:
        return find_nvcc()
    except NvccNotFound:
        return None


needs_nvcc = pytest.mark.skipif(_nvcc_or_none() is None,
                                reason="nvcc (CUDA toolkit) not found on PATH or in CUDA_HOME/bin")


def recorded(name: str) -> str:
    return (OUTPUTS / name).read_text()


def source_line_from(root: Path):
    def line(path: str, number: int) -> str | None:
        try:
            return (root / path).read_text().splitlines()[number - 1]
        except (OSError, IndexError):
            return None
    return line


def line_of(path: Path | str, number: int) -> str:
    return Path(path).read_text().splitlines()[number - 1]


def column_of(path: Path | str, number: int, needle: str) -> int:
    text = line_of(path, number)
    assert text.count(needle) == 1, f"fixture line {number} should hold {needle!r} once"
    return text.index(needle) + 1


# ---------------------------------------------------------------------------------------
# ptxas resource report (recorded output)


def test_report_sm80_lists_constant_banks_shared_and_device_function_once():
    report = parse_ptxas_report(recorded("report_sm80.txt"))
    names = [k.name for k in report.kernels]
    assert names == ["ops::add", "usec", "cfun", "scale<double>", "scale<float>", "saxpy"]
    dbl = report.kernels[3]
    assert dbl.mangled == "_Z5scaleIdEvPT_S0_i"
    assert (dbl.registers, dbl.shared_bytes, dbl.constant_bytes, dbl.stack_bytes) == \
        (32, 2048, 372, 256)
    assert (dbl.cumulative_stack_bytes, dbl.barriers, dbl.arch) == (256, 1, "sm_80")
    assert not dbl.spills
    assert report.kernels[0].constant_bytes == 360
    assert report.kernels[5].registers == 10 and report.kernels[5].shared_bytes == 0
    # helper is listed under both scale instances: one entry, both callers, not a kernel.
    assert len(report.device_functions) == 1
    helper = report.device_functions[0]
    assert (helper.name, helper.mangled, helper.stack_bytes) == ("helper", "_Z6helperPfi", 0)
    assert helper.callers == ("scale<double>", "scale<float>")
    assert "helper" not in names


def test_report_rdc_device_functions_before_entries_and_clone_suffix():
    report = parse_ptxas_report(recorded("report_rdc.txt"), default_arch="sm_90")
    assert [(k.name, k.registers, k.stack_bytes) for k in report.kernels] == \
        [("b", 24, 0), ("a", 24, 0)]
    # sm_90 with CUDA 13 prints no cmem and, without callees' frames, no cumulative stack.
    assert report.kernels[0].constant_bytes is None
    assert report.kernels[0].cumulative_stack_bytes is None
    funcs = {f.mangled: f for f in report.device_functions}
    assert set(funcs) == {"_Z4pickPKfi$1", "_Z3fibi", "_Z4pickPKfi"}
    clone = funcs["_Z4pickPKfi$1"]
    assert (clone.name, clone.stack_bytes, clone.callers, clone.arch) == ("pick", 136, (), "sm_90")
    fib = funcs["_Z3fibi"]
    assert (fib.spill_store_bytes, fib.spill_load_bytes, fib.spills) == (16, 16, True)
    assert funcs["_Z4pickPKfi"].callers == ("a",)


def test_report_sums_constant_banks_of_older_toolkits():
    # "Used" line in the shape CUDA 11.x prints (no barriers, one item per cmem bank).
    output = ("ptxas info    : Compiling entry function '_Z1kPf' for 'sm_75'\n"
              "ptxas info    : Function properties for _Z1kPf\n"
              "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
              "ptxas info    : Used 12 registers, 48 bytes smem, 356 bytes cmem[0], "
              "8 bytes cmem[2]\n")
    (k,) = parse_ptxas_report(output).kernels
    assert (k.name, k.registers, k.shared_bytes, k.constant_bytes, k.barriers, k.arch) == \
        ("k", 12, 48, 364, None, "sm_75")
    assert (k.stack_bytes, k.spill_store_bytes, k.spill_load_bytes) == (8, 4, 4)


def test_report_spills_under_maxrregcount():
    report = parse_ptxas_report(recorded("ptxas_maxrregcount.txt"))
    k = {k.name: k for k in report.kernels}
    assert (k["many_live"].stack_bytes, k["many_live"].spill_store_bytes,
            k["many_live"].spill_load_bytes) == (576, 1288, 1336)
    assert (k["histo_local"].registers, k["histo_local"].spill_store_bytes) == (24, 400)


# ---------------------------------------------------------------------------------------
# diagnostics (recorded output)


def test_ptxas_messages_warning_remarks_demangled_and_report_lines_skipped():
    diags = parse_diagnostics(recorded("ptxas_maxrregcount.txt"))
    assert [(d.severity, d.tool) for d in diags] == \
        [("warning", "ptxas"), ("remark", "ptxas"), ("remark", "ptxas")]
    assert diags[0].message == \
        "For profile sm_90 adjusting per thread register count of 16 to lower bound of 24"
    assert "'histo_local(int const*, int*, int)'" in diags[2].message
    assert diags[2].function == "histo_local"
    assert all(d.path is None and d.line is None for d in diags)


def test_ptxas_error_names_the_kernel():
    diags = parse_diagnostics(recorded("ptxas_shared_error.txt"))
    assert len(diags) == 1
    d = diags[0]
    assert (d.severity, d.tool, d.function, d.path) == ("error", "ptxas", "big", None)
    assert d.message == ("Entry function 'big(float*)' uses too much shared data "
                         "(0x27100 bytes, 0xc000 max)")
    assert parse_ptxas_report(recorded("ptxas_shared_error.txt")).kernels[0].shared_bytes == 160000


def test_ptxas_error_in_ptx_without_line_info_keeps_the_ptx_line():
    diags = parse_diagnostics(recorded("ptxas_ptx_error.txt"))
    # "Ptx assembly aborted due to errors" only restates the two errors.
    assert [d.message for d in diags] == [
        "Arguments mismatch for instruction 'mov' (generated PTX line 54)",
        "Unknown symbol '%bogus' (generated PTX line 54)",
    ]
    assert all(d.severity == "error" and d.path is None for d in diags)


def test_ptxas_error_in_ptx_mapped_through_loc_directives():
    ptx = recorded("ptxerr_lineinfo.ptx")
    loc = ptx_source_location(ptx, 61)
    assert (loc.path, loc.line, loc.column) == ("/tmp/ck/kd3/ptxerr.cu", 9, 5)
    assert ptx_source_location(ptx, 10) is None  # above the first .loc

    def where(ptx_path: str, number: int):
        assert ptx_path == "./ptxerr.ptx"
        found = ptx_source_location(ptx, number)
        return ("ptxerr.cu", found.line, found.column)

    diags = parse_diagnostics(recorded("ptxas_ptx_error_lineinfo.txt"), ptx_location=where)
    assert [(d.path, d.line, d.column, d.message) for d in diags] == [
        ("ptxerr.cu", 9, 5, "Arguments mismatch for instruction 'mov'"),
        ("ptxerr.cu", 9, 5, "Unknown symbol '%bogus'"),
    ]
    assert "asm volatile" in line_of(SOURCES / "ptxerr.cu", 9)


def test_edg_continuation_notes_and_macro_expanded_columns():
    diags = parse_diagnostics(recorded("overload_notes.txt"),
                              source_line=source_line_from(SOURCES))
    assert [(d.path, d.line, d.severity) for d in diags] == \
        [("ov.cu", 5, "error"), ("ov.cu", 7, "error"), ("ov.cu", 7, "error")]
    first = diags[0]
    assert first.message == ('no instance of overloaded function "f" matches the argument list\n'
                             "argument types are: (float *)")
    assert first.notes == (
        DiagnosticNote('number of parameters of function "f(double, double)" does not match '
                       "the call", "ov.cu", 2),
        DiagnosticNote('number of parameters of function "f(float, float)" does not match '
                       "the call", "ov.cu", 1),
    )
    # The caret sits under the macro-expanded "f(x)"; the real line holds "CALL(x)".
    assert first.column == column_of(SOURCES / "ov.cu", 5, "CALL(x)")
    # The printed line starts with __attribute__((device)): matched from the end instead.
    assert diags[1].column == column_of(SOURCES / "ov.cu", 7, "undefined_thing")
    assert line_of(SOURCES / "ov.cu", 7)[diags[2].column - 1:] == "; } };"


def test_edg_block_ends_at_an_unindented_line():
    block = "\n".join(recorded("overload_notes.txt").splitlines()[:4])
    diags = parse_diagnostics(block + "\nnvcc fatal   : Host compiler crashed\n")
    assert [(d.tool, d.line, d.message.split("\n")[0]) for d in diags] == [
        ("cudafe++", 5, 'no instance of overloaded function "f" matches the argument list'),
        ("nvcc", None, "Host compiler crashed"),
    ]


def test_edg_columns_without_source_are_unknown():
    diags = parse_diagnostics(recorded("overload_notes.txt"))
    assert [d.column for d in diags] == [None, None, None]


def test_host_compiler_warning_with_include_chain():
    diags = parse_diagnostics(recorded("include_chain_warning.txt"))
    assert len(diags) == 1
    d = diags[0]
    assert (d.path, d.line, d.column, d.severity, d.code, d.tool) == \
        ("inc/old.cuh", 2, 2, "warning", "-Wcpp", "host compiler")
    assert d.message == '#warning "deprecated header"'
    assert d.notes == (DiagnosticNote("included from here", "incwarn.cu", 2),)


def test_nvcc_fatal_has_no_location():
    diags = parse_diagnostics(recorded("nvcc_fatal.txt"))
    assert [(d.path, d.line, d.severity, d.tool, d.message) for d in diags] == \
        [(None, None, "error", "nvcc", "Unknown option '--bogus-flag'")]


def test_edg_column_rules():
    # Tabs are printed as one space; the caret is 2 + index into the line.
    assert edg_column("   x = y;", 7, "\tx = y;") == 6
    # Macro expanded before the caret and after it: no trustworthy column.
    assert edg_column("  f(g(1)) + 2", 4, "F(G(1)) + 2") is None
    assert edg_column("  a = 1;", 4, None) is None


def test_gcc_display_columns_to_characters():
    assert gcc_column(9, "\t#warning x") == 2
    assert gcc_column(2, "#warning x") == 2
    assert gcc_column(5, None) == 5


# ---------------------------------------------------------------------------------------
# nvcc command and errors that need no compile


def test_nvcc_missing_path_says_what_is_needed():
    with pytest.raises(NvccNotFound) as err:
        compile_check(str(DATA / "two_kernels.cu"), nvcc="/nonexistent/nvcc")
    msg = str(err.value)
    assert "/nonexistent/nvcc" in msg
    assert "CUDA toolkit" in msg and "PATH" in msg and "CUDA_HOME" in msg


def test_nvcc_missing_name_lists_places_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NvccNotFound, match="'nvcc-not-installed' on PATH"):
        find_nvcc("nvcc-not-installed")


def test_nvcc_found_through_cuda_home(monkeypatch, tmp_path):
    fake = tmp_path / "cuda" / "bin" / "nvcc"
    fake.parent.mkdir(parents=True)
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    assert find_nvcc() == str(fake)


def test_options_that_choose_the_output_are_refused():
    with pytest.raises(ValueError, match="'-o'"):
        check_options(["-O3", "-o", "x.cubin"])
    check_options(["-maxrregcount=32", "-DN=4", "-I", "include"])


def test_command_is_an_argument_list_and_respects_user_arch():
    cmd = build_command("nvcc", "a b.cu", "out.cubin", "keep", arch="sm_90",
                        options=["-gencode", "arch=compute_80,code=sm_80"])
    assert cmd[-1] == "a b.cu" and "-Xptxas" in cmd and "-v" in cmd
    assert not any(c.startswith("-arch") for c in cmd)
    assert "-arch=sm_90" in build_command("nvcc", "a.cu", "o", "k", arch="sm_90")


def test_format_check_lines():
    report = parse_ptxas_report(recorded("report_sm80.txt"))
    diags = parse_diagnostics(recorded("include_chain_warning.txt"))
    result = CheckResult(ok=True, diagnostics=tuple(diags), kernels=report.kernels,
                         command=["nvcc"], duration=0.5,
                         device_functions=report.device_functions, path="two.cu", arch="sm_80")
    lines = format_check(result).splitlines()
    assert lines[0] == 'inc/old.cuh:2: warning: #warning "deprecated header" [-Wcpp]'
    assert lines[1] == "  incwarn.cu:2: note: included from here"
    assert "saxpy: 10 registers, 0 B shared, 0 B stack, no spills" in lines
    assert "scale<double>: 32 registers, 2048 B shared, 256 B stack, no spills" in lines
    assert "  __device__ helper: 0 B stack, no spills (called from scale<double>, scale<float>)" \
        in lines
    assert lines[-1] == "two.cu: compile ok for sm_80: 0 errors, 1 warning, 6 kernels (0.5 s)"


# ---------------------------------------------------------------------------------------
# real nvcc


@needs_nvcc
def test_clean_file_two_kernels():
    path = str(DATA / "two_kernels.cu")
    result = compile_check(path)
    assert result.ok and result.returncode == 0
    assert result.diagnostics == ()
    assert sorted(k.name for k in result.kernels) == ["ops::relu", "saxpy"]
    saxpy = result.kernel("saxpy")
    assert saxpy.mangled == "_Z5saxpyifPKfPf"
    assert result.kernel("ops::relu").mangled == "_ZN3ops4reluEPfi"
    for k in result.kernels:
        assert isinstance(k.registers, int) and 0 < k.registers <= 255
        assert (k.shared_bytes, k.stack_bytes, k.spills, k.arch) == (0, 0, False, "sm_90")
    assert result.device_functions == ()
    assert result.command[-1] == path and "-arch=sm_90" in result.command
    assert result.duration > 0
    assert f"saxpy: {saxpy.registers} registers, 0 B shared, 0 B stack, no spills" in \
        format_check(result).splitlines()
    with pytest.raises(KeyError, match="ops::relu, saxpy|saxpy, ops::relu"):
        result.kernel("axpy")


@needs_nvcc
def test_templates_reported_by_instantiated_name_and_device_function_kept_apart():
    result = compile_check(str(DATA / "templates.cu"))
    assert result.ok
    assert sorted(k.name for k in result.kernels) == ["fib_kernel", "scale<float>", "scale<int>"]
    # __shared__ T tile[256]: 256 * sizeof(T) bytes, both T of 4 bytes.
    assert result.kernel("scale<float>").shared_bytes == 1024
    assert result.kernel("scale<int>").shared_bytes == 1024
    assert [f.name for f in result.device_functions] == ["fib"]
    fib = result.device_functions[0]
    assert fib.stack_bytes > 0 and fib.callers == ("fib_kernel",)


@needs_nvcc
def test_local_array_uses_stack_and_launch_bounds_force_spills():
    result = compile_check(str(DATA / "spills.cu"))
    assert result.ok
    histo = result.kernel("histo_local")
    assert histo.stack_bytes >= 64 * 4  # int counts[64] indexed at run time
    many = result.kernel("many_live")
    # __launch_bounds__(1024, 2): 65536 registers per SM (sm_90) / 2048 threads = 32.
    assert many.registers <= 32
    assert many.spill_store_bytes > 0 and many.spill_load_bytes > 0
    assert f"{many.spill_store_bytes} B stores / {many.spill_load_bytes} B loads" in \
        format_check(result)


@needs_nvcc
def test_options_reach_nvcc_maxrregcount_spills():
    result = compile_check(str(DATA / "spills.cu"), options=["-maxrregcount=24"])
    assert "-maxrregcount=24" in result.command
    histo = result.kernel("histo_local")
    assert histo.registers <= 24 and histo.spill_store_bytes > 0


@needs_nvcc
def test_compile_errors_on_known_lines():
    path = str(DATA / "compile_error.cu")
    result = compile_check(path)
    assert not result.ok and result.kernels == ()
    assert [(d.path, d.line, d.severity, d.message) for d in result.diagnostics] == [
        # The missing ";" ends line 5; EDG reports it at the "}" that follows.
        (path, 6, "error", 'expected a ";"'),
        (path, 9, "error", 'identifier "undefined_scale" is undefined'),
    ]
    assert result.diagnostics[1].column == column_of(path, 9, "undefined_scale")
    assert f'{path}:9: error: identifier "undefined_scale" is undefined' in \
        format_check(result).splitlines()


@needs_nvcc
def test_a_failed_compile_leaves_nothing_in_tmpdir(monkeypatch, tmp_path):
    # nvcc's front end writes NAME-xxxx..lgenfe.bc into TMPDIR and leaves it there when the
    # compile fails; the language server compiles on every edit, so each would pile up.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    for text in ("__global__ void k(float* y) { y[0] = 1.0f }\n",  # missing ";"
                 "__global__ void k(float* y) { y[0] = 1.0f; }\n"):
        result = compile_check(str(tmp_path / "k.cu"), text)
        assert result.ok is text.endswith("; }\n")
    assert sorted(p.name for p in tmp.iterdir()) == []


@needs_nvcc
def test_warnings_unused_variable_and_hash_warning():
    path = str(DATA / "warning.cu")
    result = compile_check(path)
    assert result.ok
    assert [k.name for k in result.kernels] == ["fill"]
    by_line = {d.line: d for d in result.diagnostics}
    assert sorted(by_line) == [3, 6]
    unused = by_line[3]
    assert (unused.severity, unused.code, unused.tool) == ("warning", "177-D", "cudafe++")
    assert unused.message == 'variable "unused_count" was declared but never referenced'
    assert unused.column == column_of(path, 3, "unused_count")
    hashwarn = by_line[6]
    assert (hashwarn.severity, hashwarn.code, hashwarn.column) == ("warning", "-Wcpp", 2)
    assert hashwarn.message == '#warning "fill is a placeholder"'


@needs_nvcc
def test_undefined_identifier_in_template_instantiation():
    path = str(DATA / "template_error.cu")
    result = compile_check(path)
    assert not result.ok
    assert len(result.diagnostics) == 1
    d = result.diagnostics[0]
    assert (d.path, d.line, d.message) == (path, 4, 'identifier "bias_for" is undefined')
    assert d.column == column_of(path, 4, "bias_for")
    assert d.notes == (DiagnosticNote(
        'instantiation of "void scale(T *, T, int) [with T=float]"', path, 8),)


@needs_nvcc
def test_error_in_included_header_names_the_header():
    result = compile_check(str(DATA / "header_error.cu"))
    assert not result.ok
    header = DATA / "include" / "bad_header.cuh"
    assert len(result.diagnostics) == 1
    d = result.diagnostics[0]
    assert d.path == str(header)
    assert (d.line, d.message) == (5, 'identifier "one_constant" is undefined')
    assert d.column == column_of(header, 5, "one_constant")
    assert result.diagnostics_in(str(DATA / "header_error.cu")) == ()
    assert result.diagnostics_in(str(header)) == (d,)


UNSAVED = """#include "include/helpers.cuh"

__global__ void axpy(int n, float a, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void doubled(float* y) {
    float spare = 0.0f;
    y[threadIdx.x] = twice(y[threadIdx.x]);
}
"""


@needs_nvcc
def test_text_in_memory_compiled_instead_of_disk_with_the_users_path():
    path = str(DATA / "compile_error.cu")  # on disk: two errors; in the editor: fixed
    result = compile_check(path, UNSAVED)
    assert result.ok, format_check(result)
    assert sorted(k.name for k in result.kernels) == ["axpy", "doubled"]
    assert [(d.path, d.line, d.message) for d in result.diagnostics] == [
        (path, 9, 'variable "spare" was declared but never referenced')]
    assert result.diagnostics[0].column == UNSAVED.splitlines()[8].index("spare") + 1
    # The temporary copy is gone and never named.
    assert path not in result.command
    assert not os.path.exists(result.command[-1])


@needs_nvcc
def test_text_in_memory_for_a_file_not_on_disk(monkeypatch):
    monkeypatch.chdir(DATA)
    text = ('#include "include/helpers.cuh"\n__global__ void k(float* y) {\n    y[0] = nope;\n}\n'
            # __FILE__ names the user's path, not the temporary copy (else a 2nd error).
            'static_assert(sizeof(__FILE__) == sizeof("unsaved_buffer.cu"), "__FILE__");\n')
    result = compile_check("unsaved_buffer.cu", text)
    assert not os.path.exists("unsaved_buffer.cu")
    assert [(d.path, d.line, d.column, d.message) for d in result.diagnostics] == [
        ("unsaved_buffer.cu", 3, 12, 'identifier "nope" is undefined')]


@needs_nvcc
def test_inline_asm_error_mapped_to_source_line():
    path = str(DATA / "inline_asm_error.cu")
    result = compile_check(path)
    assert not result.ok
    assert [(d.path, d.line, d.tool, d.message) for d in result.diagnostics] == [
        (path, 4, "ptxas", "Arguments mismatch for instruction 'mov'"),
        (path, 4, "ptxas", "Unknown symbol '%bogus'"),
    ]


@needs_nvcc
def test_missing_file_without_text(tmp_path):
    with pytest.raises(FileNotFoundError, match="no_such.cu"):
        compile_check(str(tmp_path / "no_such.cu"))


def test_nvcc_failure_without_a_recognized_message_is_still_an_error(tmp_path):
    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\necho 'something odd happened'\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    result = compile_check(str(DATA / "two_kernels.cu"), nvcc=str(fake))
    assert not result.ok and result.returncode == 3
    assert len(result.errors) == 1
    assert "status 3" in result.errors[0].message
    assert "something odd happened" in result.errors[0].message


HEADER = ("#pragma once\n"
          "#include \"inner.cuh\"\n"
          "__global__ void k(float* a)\n"
          "{\n"
          "    a[threadIdx.x] = SCALE;\n"
          "}\n")


@needs_nvcc
@pytest.mark.parametrize("from_text", [False, True])
def test_a_header_compiles_without_the_pragma_once_warning(tmp_path, monkeypatch, from_text):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "inner.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")
    (tmp_path / "inc" / "k.cuh").write_text(HEADER)
    result = compile_check("inc/k.cuh", HEADER if from_text else None)
    assert result.ok, result.output
    assert result.diagnostics == ()
    assert [k.name for k in result.kernels] == ["k"]
    assert "pragma once" not in result.output


@needs_nvcc
@pytest.mark.parametrize("from_text", [False, True])
@pytest.mark.parametrize("inner, own, expected", [
    ("#pragma once\n#define SCALE 2.0f\n", "missing_value",
     [("inc/k.cuh", 5, "error", 'identifier "missing_value" is undefined', [])]),
    ("#pragma once\n#define SCALE(\n", "SCALE",
     [("inc/inner.cuh", 2, "error", "expected parameter name before end of line",
       [("inc/k.cuh", 2)])]),
])
def test_errors_of_a_header_point_into_it(tmp_path, monkeypatch, from_text, inner, own,
                                          expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "inner.cuh").write_text(inner)
    broken = HEADER.replace("SCALE;", f"{own};")
    (tmp_path / "inc" / "k.cuh").write_text(broken)
    result = compile_check("inc/k.cuh", broken if from_text else None)
    assert not result.ok
    found = [(d.path, d.line, d.severity, d.message, [(n.path, n.line) for n in d.notes])
             for d in result.diagnostics]
    assert found == expected
