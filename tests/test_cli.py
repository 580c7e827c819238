"""The cudalens command line, run as a user runs it: a subprocess, real files, real nvcc."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_probe import gpu_present

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def cudalens(*args: str, cwd: Path = ROOT, env=None) -> subprocess.CompletedProcess:
    import os  # noqa: PLC0415

    return subprocess.run([sys.executable, "-m", "cudalens", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=300,
                          env=None if env is None else {**os.environ, **env})


@pytest.mark.skipif(gpu_present(), reason="this machine has a GPU: optimize would run")
def test_optimize_without_gpu_says_what_it_needs_and_exits_3():
    proc = cudalens("optimize", "examples/saxpy.cu")
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "cannot optimize without a GPU" in proc.stderr
    assert f"pip install -e '{ROOT}[gpu]'" in proc.stderr
    assert proc.stdout == ""


def test_optimize_missing_file_is_an_input_error():
    proc = cudalens("optimize", "examples/no_such_kernel.cu")
    assert proc.returncode == 2
    assert "examples/no_such_kernel.cu: no such file" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_optimize_needs_kernel_name_when_file_has_several(tmp_path):
    src = tmp_path / "two.cu"
    src.write_text("__global__ void first(float* a) { a[0] = 1; }\n"
                   "__global__ void second(float* b) { b[0] = 2; }\n")
    proc = cudalens("optimize", str(src))
    assert proc.returncode == 2
    assert "holds 2 kernels (first, second); choose one with --kernel NAME" in proc.stderr


def test_optimize_unknown_kernel_lists_the_kernels(tmp_path):
    proc = cudalens("optimize", "examples/saxpy.cu", "--kernel", "daxpy")
    assert proc.returncode == 2
    assert "no __global__ kernel named 'daxpy' (found: saxpy)" in proc.stderr


def test_spec_prints_the_written_spec():
    proc = cudalens("spec", "examples/transpose.cu")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "# written spec, from examples/transpose.cu.spec"
    assert lines[1] == "kernel transpose_naive"
    assert "in in: float[rows * cols]" in lines
    assert "out out: float[rows * cols]" in lines
    assert "grid = ceil_div(cols, block.x), ceil_div(rows, block.y)" in lines


def test_spec_drafts_one_from_the_kernel_when_none_is_written(tmp_path):
    src = tmp_path / "scale.cu"
    src.write_text("__global__ void scale(const float* x, float* y, float s, int n)\n{\n"
                   "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "    if (i < n) y[i] = s * x[i];\n}\n")
    proc = cudalens("spec", str(src))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0].startswith("# draft inferred from")
    assert "in x: float[n]" in out
    assert "out y: float[n]" in out
    assert "scalar n: int = n" in out
    assert "grid = ceil_div(n, block.x)" in out


def test_spec_warns_where_the_file_stops_parsing(tmp_path):
    src = tmp_path / "syn.cu"
    src.write_text("__global__ void k(float* y, int n)\n{\n    int i = threadIdx.x\n"
                   "    if (i < n) y[i] = 1.0f;\n}\n")
    proc = cudalens("spec", str(src))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# draft inferred from")
    # the missing ";" after "threadIdx.x" (line 3, column 24)
    assert proc.stderr.strip() == (
        f"warning: {src}:3:24: the file does not parse as C++ from here; a draft inferred "
        f"from it may be wrong (cudalens check {src} shows the compiler's errors)")


def test_a_kernel_made_by_a_macro_is_named_as_such(tmp_path):
    src = tmp_path / "mac.cu"
    src.write_text("#define MAKE_NEG(name) __global__ void name(float* y, int n) "
                   "{ int i = threadIdx.x; if (i < n) y[i] = -y[i]; }\nMAKE_NEG(neg_k)\n"
                   "__global__ void plain(float* y, int n) { y[0] = 0.0f; }\n")
    proc = cudalens("spec", str(src), "--kernel", "neg_k")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: {src}: no __global__ kernel named 'neg_k' (found: plain); 'neg_k' appears in "
        f"the file but not as a kernel definition: a kernel declared through a macro is not "
        f"seen by cudalens spec and optimize (write its definition out), though cudalens "
        f"check, which compiles the file, lists it")
    empty = cudalens("spec", str(src), "--kernel", "")
    assert (empty.returncode, empty.stderr.strip()) == \
        (2, f"error: {src}: no __global__ kernel named '' (found: plain)")


def test_bad_spec_names_file_and_line(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    (tmp_path / "saxpy.cu.spec").write_text("kernel saxpy\nsize n = 1024\nin x float[n]\n")
    proc = cudalens("spec", str(tmp_path / "saxpy.cu"))
    assert proc.returncode == 2
    assert f"{tmp_path}/saxpy.cu.spec:3: expected 'ROLE NAME: TYPE[LENGTH]', found 'in x float[n]'" \
        in proc.stderr


def test_spec_that_misses_a_parameter_is_refused(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    spec = (EXAMPLES / "saxpy.cu.spec").read_text().replace("scalar a: float = 2.5\n", "")
    (tmp_path / "saxpy.cu.spec").write_text(spec)
    proc = cudalens("optimize", str(tmp_path / "saxpy.cu"))
    assert proc.returncode == 2
    assert ("saxpy.cu.spec:2: kernel saxpy: parameter a ('float a') is not in the spec: "
            "expected 'scalar a: TYPE = EXPR'") in proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_check_reports_resources_per_kernel():
    proc = cudalens("check", "examples/matmul.cu")
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("matmul_naive: ") and " registers, 0 B shared, 0 B stack, no spills" in first


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_check_maps_compile_error_to_its_line(tmp_path):
    src = tmp_path / "broken.cu"
    src.write_text("__global__ void ok(float* a) { a[0] = 1.0f; }\n"
                   "\n"
                   "__global__ void bad(float* a, int n)\n"
                   "{\n"
                   "    a[0] = undefined_name * 2.0f;\n"
                   "}\n")
    proc = cudalens("check", str(src))
    assert proc.returncode == 1
    assert f'{src}:5: error: identifier "undefined_name" is undefined' in proc.stdout


def test_optimize_proposer_llm_without_a_model_is_refused(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(EXAMPLES / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    proc = cudalens("optimize", str(tmp_path / "saxpy.cu"), "--proposer", "llm")
    assert proc.returncode == 2
    assert "error: --proposer llm needs a model: set model in the [agent] table of cudalens.toml" \
        in proc.stderr


@pytest.mark.skipif(gpu_present(), reason="this machine has a GPU: optimize would run")
def test_optimize_auto_says_it_uses_the_builtin_search_when_no_llm_is_configured(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(EXAMPLES / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    proc = cudalens("optimize", str(tmp_path / "saxpy.cu"))
    assert proc.stderr.splitlines()[0].startswith(
        "proposer: the built-in search (no LLM is configured")
    assert proc.returncode == 3


def test_check_on_a_directory_is_an_input_error(tmp_path):
    proc = cudalens("check", str(tmp_path))
    assert proc.returncode == 2
    assert f"{tmp_path}: expected a CUDA source file, found a directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_optimize_refuses_a_negative_budget_before_doing_anything():
    proc = cudalens("optimize", "examples/saxpy.cu", "--budget", "-1")
    assert proc.returncode == 2
    assert "Invalid value for '--budget': -1 is not in the range 1<=x<=1000" in proc.stderr


def test_optimize_checks_the_json_path_before_running(tmp_path):
    proc = cudalens("optimize", "examples/saxpy.cu", "--json", "/proc/no/such/dir/r.json")
    assert proc.returncode == 2
    assert "--json /proc/no/such/dir/r.json: cannot write there (cannot create folders in " \
        "/proc (" in proc.stderr
    assert "Traceback" not in proc.stderr
    # a file where a folder should be
    (tmp_path / "file").write_text("x")
    proc = cudalens("optimize", "examples/saxpy.cu", "--json", str(tmp_path / "file" / "r.json"))
    assert proc.returncode == 2
    assert f"cannot write there ({tmp_path / 'file'} is not a directory)" in proc.stderr


def test_json_never_replaces_the_source_or_its_spec(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(EXAMPLES / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    for name in ("saxpy.cu", "saxpy.cu.spec"):
        proc = cudalens("optimize", "saxpy.cu", "--json", name, "--apply", cwd=tmp_path)
        assert proc.returncode == 2
        assert (f"--json {name}: cannot write there (it is the kernel's source or spec file, "
                f"which the JSON would replace)") in proc.stderr
    assert (tmp_path / "saxpy.cu").read_text() == (EXAMPLES / "saxpy.cu").read_text()


def test_a_file_whose_kernels_all_come_from_a_macro_says_so(tmp_path):
    src = tmp_path / "mac.cu"
    src.write_text("#define KERNEL __global__ void\nKERNEL k(float* y) { y[0] = 1.0f; }\n")
    proc = cudalens("spec", str(src))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"error: {src}: expected at least one __global__ kernel, found none; a #define in the "
        f"file spells __global__: kernels declared through a macro are not seen by cudalens "
        f"spec and optimize (write the definitions out), though cudalens check, which compiles "
        f"the file, lists them")


def test_a_json_path_is_not_created_when_the_run_fails(tmp_path):
    out = tmp_path / "new" / "r.json"
    proc = cudalens("optimize", "examples/saxpy.cu", "--json", str(out),
                    "--kernel", "no_such_kernel")
    assert proc.returncode == 2
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # the writability probe left nothing behind


@pytest.mark.parametrize("value, why", [("nan", "expected a number of seconds, found nan"),
                                        ("inf", "inf is not in the range 0<x<=10000000.0")])
def test_optimize_refuses_seconds_that_are_not_a_finite_positive_number(value, why):
    proc = cudalens("optimize", "examples/saxpy.cu", "--seconds", value)
    assert proc.returncode == 2
    assert f"Invalid value for '--seconds': {why}" in proc.stderr


def test_an_unreachable_configured_runner_is_not_called_a_missing_gpu():
    proc = subprocess.run([sys.executable, "-m", "cudalens", "optimize", "examples/saxpy.cu"],
                          cwd=ROOT, text=True, capture_output=True, timeout=120,
                          env={**__import__("os").environ,
                               "CUDALENS_RUNNER_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 3
    assert ("cannot optimize with the configured runner (CUDALENS_RUNNER_URL): cannot reach the "
            "GPU runner at http://127.0.0.1:9") in proc.stderr
    assert "without a GPU" not in proc.stderr


def test_an_out_buffer_the_kernel_reads_is_refused_before_any_gpu_work(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    spec = (EXAMPLES / "saxpy.cu.spec").read_text()
    assert "inout y: float[n]" in spec
    (tmp_path / "saxpy.cu.spec").write_text(spec.replace("inout y: float[n]", "out y: float[n]"))
    line = 1 + spec.splitlines().index(next(x for x in spec.splitlines() if "y: float[n]" in x))
    proc = cudalens("optimize", str(tmp_path / "saxpy.cu"))
    assert proc.returncode == 2, proc.stderr
    assert f"saxpy.cu.spec:{line}:" in proc.stderr and "inout y" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_spec_section_naming_no_kernel_is_refused(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    spec = (EXAMPLES / "saxpy.cu.spec").read_text().replace("kernel saxpy", "kernel saxpi")
    (tmp_path / "saxpy.cu.spec").write_text(spec)
    for command in ("spec", "optimize"):
        proc = cudalens(command, str(tmp_path / "saxpy.cu"))
        assert proc.returncode == 2
        assert (f"{tmp_path}/saxpy.cu.spec:2: section 'kernel saxpi' names no __global__ kernel "
                f"of {tmp_path}/saxpy.cu (found: saxpy)") in proc.stderr


def test_a_binary_file_is_reported_at_its_first_byte_that_is_not_utf8(tmp_path):
    # A file that is not UTF-8 is read (tests/test_cli_non_utf8.py), one with a NUL is not.
    src = tmp_path / "latin1.cu"
    src.write_bytes(b"// ok\n// caf\xe9\x00\n__global__ void k(float* a) { a[0] = 1; }\n")
    proc = cudalens("spec", str(src))
    assert proc.returncode == 2
    assert f"{src}:2: expected UTF-8 text, found byte 0xe9 at column 7" in proc.stderr


def test_overloaded_kernels_are_reported_as_ambiguous(tmp_path):
    src = tmp_path / "over.cu"
    src.write_text("__global__ void k(float* a) { a[0] = 1; }\n"
                   "__global__ void k(double* a) { a[0] = 1; }\n")
    proc = cudalens("spec", str(src), "--kernel", "k")
    assert proc.returncode == 2
    assert "2 overloaded kernels are named 'k' (lines 1, 2)" in proc.stderr


@pytest.mark.parametrize("kernel, line, why", [
    ("s", 2, "'P p' is of type 'P', a struct, class or union, which cudalens cannot fill or "
             "pass (it passes numbers and pointers to numbers)"),
    ("r", 3, "'const int& n' is a reference; cudalens passes only pointers and plain numbers"),
    ("arr", 4, "'float (*m)[16]' is a pointer to an array or to pointers; cudalens passes only "
               "pointers to numbers and plain numbers"),
])
def test_parameters_the_runner_cannot_pass_are_refused_not_guessed(tmp_path, kernel, line, why):
    src = tmp_path / "odd.cu"
    src.write_text(
        "struct P { float a; int b; };\n"
        "__global__ void s(P p, float* out, int n) { int i = threadIdx.x; if (i < n) out[i] = p.a; }\n"
        "__global__ void r(const int& n, float* out) { out[0] = n; }\n"
        "__global__ void arr(float (*m)[16], int rows) { int i = threadIdx.x; if (i < rows) m[i][0] = 1; }\n")
    proc = cudalens("spec", str(src), "--kernel", kernel)
    assert proc.returncode == 2
    name = {"s": "p", "r": "n", "arr": "m"}[kernel]
    assert f"{src}:{line}: cannot draft a spec for parameter {name} of {kernel}: {why}" \
        in proc.stderr


def test_a_written_spec_cannot_describe_a_reference_parameter(tmp_path):
    src = tmp_path / "odd.cu"
    src.write_text("__global__ void r(const int& n, float* out) { out[0] = n; }\n")
    (tmp_path / "odd.cu.spec").write_text(
        "kernel r\nsize m = 1024\nscalar n: int = m\nout out: float[m]\n"
        "block = 256\ngrid = 1\n")
    proc = cudalens("spec", str(src))
    assert proc.returncode == 2
    assert (f"{tmp_path}/odd.cu.spec:3: parameter n of kernel r: 'const int& n' is a reference; "
            "cudalens passes only pointers and plain numbers") in proc.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(),
                    reason="nvcc (CUDA toolkit) not found")
def test_optimize_reports_a_compile_error_at_its_line_before_looking_for_a_gpu(tmp_path):
    src = tmp_path / "saxpy.cu"
    src.write_text((EXAMPLES / "saxpy.cu").read_text()
                   .replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i]"))
    proc = cudalens("optimize", str(src), env={"CUDALENS_RUNNER_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f'error: {src}:9: expected a ";" ({src} does not compile with nvcc for sm_90: 1 error; '
        f'cudalens check {src} shows them all)')
    assert "runner" not in proc.stderr and "GPU" not in proc.stderr
    assert proc.stdout == ""


def test_optimize_refuses_a_bad_build_table_before_looking_for_a_gpu(tmp_path):
    shutil.copy(EXAMPLES / "saxpy.cu", tmp_path / "saxpy.cu")
    shutil.copy(EXAMPLES / "saxpy.cu.spec", tmp_path / "saxpy.cu.spec")
    (tmp_path / "cudalens.toml").write_text('[build]\nstd = "gnu++17"\n')
    proc = cudalens("optimize", str(tmp_path / "saxpy.cu"),
                    env={"CUDALENS_RUNNER_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {tmp_path / 'cudalens.toml'} [build]: std: expected 'c++NN' (c++17, c++20), "
        f"found 'gnu++17'")
    assert "runner" not in proc.stderr
