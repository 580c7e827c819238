"""``cudalens check``'s exit statuses (README "Commands"): 0 compiles, 1 does not compile,
2 bad input, 3 nvcc cannot be run or ran past --timeout, 130 after Ctrl-C; and no compiler
process outlives the command (a fake nvcc leaves a sleeping grandchild, like cicc)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from child_signals import sigint_as_on_a_terminal
from fake_nvcc import assert_all_ended, fake_nvcc, read_pids, wait_pids

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "__global__ void k(float *x) { x[0] = zz; }\n"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    return env


def _check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudalens", "check", *args], cwd=cwd,
                          env=_env(), text=True, capture_output=True, timeout=120)


def _source(tmp_path: Path) -> Path:
    path = tmp_path / "k.cu"
    path.write_text(KERNEL, encoding="utf-8")
    return path


def test_a_missing_file_is_2(tmp_path):
    done = _check(str(tmp_path / "none.cu"), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {tmp_path / 'none.cu'}: no such file"


def test_no_nvcc_is_3_and_says_what_is_needed(tmp_path):
    done = _check(str(_source(tmp_path)), "--nvcc", str(tmp_path / "no-nvcc"), cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"error: nvcc not found (looked for {tmp_path / 'no-nvcc'}): "
                                  "the compile check needs the CUDA toolkit's nvcc"), done.stderr


def test_a_compile_error_is_1_with_its_line(tmp_path):
    source = _source(tmp_path)
    fake = tmp_path / "erring-nvcc"
    fake.write_text('#!/bin/sh\nfor a; do last="$a"; done\n'
                    'echo "$last(1): error: identifier \\"zz\\" is undefined"\nexit 1\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    done = _check(str(source), "--nvcc", str(fake), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f'{source}:1: error: identifier "zz" is undefined' in done.stdout, done.stdout


def test_past_the_timeout_is_3_and_nvcc_is_stopped_with_its_children(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    start = time.monotonic()
    done = _check(str(_source(tmp_path)), "--nvcc", str(script), "--timeout", "1", cwd=tmp_path)
    assert time.monotonic() - start < 60
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("error: nvcc did not finish within 1 s compiling "), done.stderr
    assert "it was stopped with every process it started" in done.stderr
    assert_all_ended(read_pids(pids))


def test_ctrl_c_is_130_and_nvcc_is_stopped_with_its_children(tmp_path):
    script, pids = fake_nvcc(tmp_path)
    source = _source(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "cudalens", "check", str(source), "--nvcc",
                             str(script)], cwd=tmp_path, env=_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=sigint_as_on_a_terminal)
    found = wait_pids(pids)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == (f"error: interrupted (Ctrl-C): nvcc was stopped; {source} was not "
                           "checked")
    assert "Traceback" not in err and "Aborted!" not in err
    assert_all_ended(found)


MANY = ("namespace ops { __global__ void add(float* a) { a[0] += 1; } }\n"
        "template <typename T> __global__ void scale(T* a) { a[0] *= 2; }\n"
        "template __global__ void scale<float>(float*);\n"
        "template __global__ void scale<double>(double*);\n"
        "__global__ void other(int* b) { b[0] = 1; }\n")


def _kernel_lines(stdout: str) -> list[str]:
    return [line.rsplit(": ", 1)[0].split(": ")[0] if "registers" in line else line
            for line in stdout.splitlines()[:-1]]


def test_kernel_without_gpu_reports_only_that_kernel(tmp_path):
    (tmp_path / "many.cu").write_text(MANY, encoding="utf-8")
    every = _check("many.cu", cwd=tmp_path)
    assert every.returncode == 0, every.stderr
    assert sorted(_kernel_lines(every.stdout)) == ["ops::add", "other", "scale<double>",
                                                   "scale<float>"]
    for name, shown in [("add", ["ops::add"]), ("ops::add", ["ops::add"]),
                        ("scale", ["scale<double>", "scale<float>"]),
                        ("scale<float>", ["scale<float>"])]:
        done = _check("many.cu", "--kernel", name, cwd=tmp_path)
        assert done.returncode == 0, (name, done.stderr)
        assert sorted(_kernel_lines(done.stdout)) == shown, name
        count = len(shown)
        assert done.stdout.splitlines()[-1].startswith(
            f"many.cu: compile ok for sm_90: 0 errors, 0 warnings, {count} "
            f"kernel{'s' if count != 1 else ''} (")
        line = next(x for x in every.stdout.splitlines() if x.startswith(shown[0] + ":"))
        assert line in done.stdout.splitlines()  # the same resources as the whole file's


def test_an_unknown_kernel_is_2_and_lists_the_compiled_kernels(tmp_path):
    (tmp_path / "many.cu").write_text(MANY, encoding="utf-8")
    done = _check("many.cu", "--kernel", "nope", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    found = done.stderr.strip()
    prefix = "error: many.cu: no __global__ kernel named 'nope' among those nvcc compiled (found: "
    assert found.startswith(prefix) and found.endswith(")")
    assert sorted(found[len(prefix):-1].split(", ")) == ["ops::add", "other", "scale<double>",
                                                         "scale<float>"]


TEMPLATES = ("__global__ void plain(float *y, int n) { int i = threadIdx.x; if (i < n) y[i] = 0.f; }\n"
             "template <int T>\n"
             "__global__ void tiled(float *y, int n) { int i = blockIdx.x * T + threadIdx.x; "
             "if (i < n) y[i] = 1.f; }\n")
WHY = ("templates are compiled only where instantiated (add template __global__ void "
       "tiled<ARGS>(...);)")


def test_uninstantiated_templates_are_listed_with_why(tmp_path):
    (tmp_path / "t.cu").write_text(TEMPLATES, encoding="utf-8")
    done = _check("t.cu", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[-2].startswith("t.cu: compile ok for sm_90: 0 errors, 0 warnings, 1 kernel (")
    assert out[-1] == f"t.cu:2: template kernel tiled not compiled: {WHY}"
    only = _check("t.cu", "--kernel", "plain", cwd=tmp_path)  # another kernel: no word on it
    assert only.returncode == 0 and "tiled" not in only.stdout
    (tmp_path / "i.cu").write_text(TEMPLATES + "template __global__ void tiled<32>(float *, int);\n",
                                   encoding="utf-8")
    done = _check("i.cu", cwd=tmp_path)
    assert done.returncode == 0 and "not compiled" not in done.stdout


def test_kernel_naming_an_uninstantiated_template_says_why(tmp_path):
    (tmp_path / "t.cu").write_text(TEMPLATES, encoding="utf-8")
    done = _check("t.cu", "--kernel", "tiled", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert " ".join(done.stderr.split()) == (
        f"error: t.cu:2: template kernel tiled was not compiled: {WHY}; nvcc compiled: plain")
