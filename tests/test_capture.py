"""``cudalens capture`` and ``optimize --capture`` without a GPU: the recorder builds with the
real nvcc, the recorder's output is read, assembled into the .npz + JSON capture and read back,
roles follow the launch and the body, bad input is refused with its reason, and a capture
replays through the live fake runner (``tests/data/runner/fake_gpu_service.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from capture_fakes import DEMANGLED, SAXPY_CU, saxpy_arrays, write_saxpy_record
from cudalens.capture.assemble import assemble
from cudalens.capture.container import CaptureFileError, read_capture, write_capture
from cudalens.capture.program import ProgramRun
from cudalens.capture.raw import RawCaptureError, read_output
from cudalens.capture.roles import decide_role
from cudalens.capture.session import _collect, name_matches
from cudalens.capture.sources import find_kernels

ROOT = Path(__file__).resolve().parent.parent
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


def _workspace(tmp_path: Path, text: str = SAXPY_CU) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "saxpy.cu").write_text(text)
    return ws


def _capture(tmp_path: Path, n: int = 1000):
    raw = tmp_path / "raw"
    write_saxpy_record(raw, n)
    ws = _workspace(tmp_path)
    out = read_output(raw)
    return assemble(out.launches[0], find_kernels(ws)[0], ["./prog", "--n", str(n)]), ws


# -- the recorder library ------------------------------------------------------------------

@needs_nvcc
def test_recorder_builds_with_nvcc_and_exports_the_injection_entry(tmp_path):
    from cudalens.capture.build import recorder_library
    lib = recorder_library(cache=tmp_path)
    assert lib.parent == tmp_path and lib.name.startswith("recorder-") and lib.suffix == ".so"
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                             text=True, check=True).stdout
    assert " T InitializeInjection" in symbols
    needed = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True,
                            check=True).stdout
    assert "libcupti.so" in needed and "libcudart" not in needed
    mtime = lib.stat().st_mtime_ns
    assert recorder_library(cache=tmp_path) == lib and lib.stat().st_mtime_ns == mtime  # cached


# -- the recorder's output -----------------------------------------------------------------

def test_recorder_output_is_read_into_typed_records(tmp_path):
    write_saxpy_record(tmp_path, 1000)
    out = read_output(tmp_path)
    (r,) = out.launches
    assert (r.base_name, r.grid, r.block, r.shared_bytes) == ("saxpy", (4, 1, 1), (256, 1, 1), 0)
    assert [(p.index, p.offset, len(p.data)) for p in r.params] == [(0, 0, 4), (1, 4, 4),
                                                                    (2, 8, 8), (3, 16, 8)]
    assert [(p.param, p.alloc, p.offset) for p in r.pointers] == [(2, 0, 0), (3, 0, 4000)]
    assert out.launched[1] == ("_Z0", "other_kernel(float*)") and out.ready


def test_a_record_without_its_end_line_is_truncated(tmp_path):
    k = write_saxpy_record(tmp_path, 100, truncated=True)
    with pytest.raises(RawCaptureError, match=r"meta.txt: the record is truncated \(no final "
                                              r"'end' line\)"):
        read_output(tmp_path)
    (k / "meta.txt").rename(k / "meta.txt.part")
    with pytest.raises(RawCaptureError, match="the recorder did not finish this launch"):
        read_output(tmp_path)


# -- assembling, writing and reading a capture ---------------------------------------------

def test_capture_round_trip_types_extents_and_roles(tmp_path):
    cap, ws = _capture(tmp_path, 1000)
    m = cap.manifest
    assert (m.kernel, m.grid, m.block, m.demangled) == ("saxpy", (4, 1, 1), (256, 1, 1), DEMANGLED)
    n, a, x, y = m.params
    assert (n.kind, n.dtype, n.value, a.value) == ("scalar", "int32", 1000, 3.0)
    # x ends where y begins (same allocation); y runs to the allocation's end (+256 bytes)
    assert (x.dtype, x.length, x.role, x.replay_role, x.changed) == ("float32", 1000, "in",
                                                                     "in", False)
    assert (y.length, y.allocation_offset, y.role, y.replay_role, y.changed) == (
        1064, 4000, "inout", "inout", True)
    path = write_capture(cap, tmp_path / "caps", "saxpy-launch1")
    assert path.name == "saxpy-launch1.json" and (path.parent / "saxpy-launch1.npz").is_file()
    # readable without cudalens: plain numpy on the .npz, plain json on the manifest
    with np.load(path.parent / "saxpy-launch1.npz", allow_pickle=False) as npz:
        assert sorted(npz.files) == ["x.after", "x.before", "y.after", "y.before"]
        xs, ys, ys_after = saxpy_arrays(1000)
        np.testing.assert_array_equal(npz["y.after"][:1000], ys_after)
        np.testing.assert_array_equal(npz["x.before"], xs)
    doc = json.loads(path.read_text())
    assert doc["format"] == "cudalens-capture-1" and doc["params"][3]["name"] == "y"
    back = read_capture(path)
    assert back.manifest == json_manifest(path) and back.manifest.source_key == m.source_key
    np.testing.assert_array_equal(back.before["y"], cap.before["y"])


def json_manifest(path):
    from cudalens.capture.container import read_manifest
    return read_manifest(path)


def test_a_truncated_archive_is_refused(tmp_path):
    cap, _ = _capture(tmp_path)
    path = write_capture(cap, tmp_path / "caps", "s")
    npz = path.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:500])
    with pytest.raises(CaptureFileError, match=r"s.npz: sha256 [0-9a-f]{12}\.\.\. differs from "
                                               r"the manifest's .* \(truncated or replaced\)"):
        read_capture(path)


def test_a_foreign_archive_with_a_matching_digest_is_refused(tmp_path):
    cap, _ = _capture(tmp_path)
    path = write_capture(cap, tmp_path / "caps", "s")
    npz = path.with_suffix(".npz")
    np.savez(npz, weights=np.zeros(3))
    doc = json.loads(path.read_text())
    doc["archive_sha256"] = ""  # a manifest without a digest: the arrays are still checked
    path.write_text(json.dumps(doc))
    with pytest.raises(CaptureFileError, match=r"expected array 'x.before', found only weights"):
        read_capture(path)
    npz.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CaptureFileError, match="not a readable .npz archive"):
        read_capture(path)


def test_a_foreign_manifest_is_refused(tmp_path):
    other = tmp_path / "model.json"
    other.write_text(json.dumps({"format": "onnx", "params": []}))
    with pytest.raises(CaptureFileError, match=r"not a cudalens capture manifest \(expected "
                                               r"format 'cudalens-capture-1', found 'onnx'\)"):
        read_capture(other)
    other.write_text("\x00\x01binary")
    with pytest.raises(CaptureFileError, match=r"not a cudalens capture manifest \(not JSON"):
        read_capture(other)
    with pytest.raises(CaptureFileError, match="no such capture manifest"):
        read_capture(tmp_path / "missing.json")


# -- roles -------------------------------------------------------------------------------

@pytest.mark.parametrize("changed, body, role, replay, note", [
    (True, "out", "out", "inout", ""),
    (True, "inout", "inout", "inout", ""),
    (False, "in", "in", "in", ""),
    (True, "in", "inout", "inout", "aliased by another parameter?"),
    (False, "out", "out", "in", "this launch left it unchanged"),
    (True, None, "inout", "inout", "role from the launch alone (changed)"),
    (False, None, "in", "in", "role from the launch alone (unchanged)"),
])
def test_roles_follow_the_launch_and_the_body(changed, body, role, replay, note):
    d = decide_role("y", changed, body)
    assert (d.role, d.replay_role) == (role, replay)
    assert (note in d.note) if note else d.note == ""


def test_body_role_out_is_kept_for_a_write_only_buffer(tmp_path):
    text = SAXPY_CU.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i];")
    raw = tmp_path / "raw"
    write_saxpy_record(raw, 64)
    cap = assemble(read_output(raw).launches[0], find_kernels(_workspace(tmp_path, text))[0],
                   ["p"])
    y = cap.manifest.param("y")
    assert (y.role, y.replay_role) == ("out", "inout")


# -- what a capture run reports ----------------------------------------------------------

def _run(tmp_path, status=0, tail=(), **record):
    raw = tmp_path / "raw"
    write_saxpy_record(raw, 100, **record)
    return ProgramRun(status, tuple(tail), read_output(raw))


def test_a_kernel_never_launched_lists_the_launched_ones(tmp_path):
    run = _run(tmp_path)
    out = _collect(run, ["layernorm"], ["prog"], 1, tmp_path / "caps", _workspace(tmp_path))
    (m,) = out.missing
    assert m.kernel == "layernorm"
    assert m.reason == "it was never launched; the program launched saxpy, other_kernel"
    assert out.written == ()


def test_a_kernel_launched_too_few_times(tmp_path):
    run = _run(tmp_path)
    run = ProgramRun(0, (), run.output.__class__(launches=(), launched=run.output.launched,
                                                 counts=run.output.counts, ready=True))
    out = _collect(run, ["saxpy"], ["prog"], 3, tmp_path / "caps", _workspace(tmp_path))
    assert out.missing[0].reason == "it was launched 1 time(s), fewer than --launch 3"


def test_a_capture_over_max_bytes_is_refused_before_copying(tmp_path):
    run = _run(tmp_path, refused=True)
    assert not (tmp_path / "raw" / "k0" / "a0.before.bin").exists()  # as the recorder does
    out = _collect(run, ["saxpy"], ["prog"], 1, tmp_path / "caps", _workspace(tmp_path))
    # 2 x (100 x 4 bytes of x + 100 x 4 of y + 256 more in the allocation)
    assert out.missing[0].reason == ("the capture would be 2112 bytes, over --max-bytes 100; "
                                     "nothing was copied")
    assert not (tmp_path / "caps").exists()


def test_a_failing_program_saves_nothing(tmp_path):
    run = _run(tmp_path, status=3, tail=("Traceback", "RuntimeError: CUDA out of memory"))
    out = _collect(run, ["saxpy"], ["prog"], 1, tmp_path / "caps", _workspace(tmp_path))
    assert out.program_failed and out.status == 3 and out.written == ()
    assert out.stderr_tail[-1] == "RuntimeError: CUDA out of memory"


def test_a_capture_is_written_under_its_source_key(tmp_path):
    ws = _workspace(tmp_path)
    out = _collect(_run(tmp_path), ["saxpy"], ["prog"], 1, tmp_path / "caps", ws)
    (path,) = out.written
    key = find_kernels(ws)[0].key
    assert path == tmp_path / "caps" / key[:16] / "saxpy-launch1.json"


@pytest.mark.parametrize("wanted, demangled, hit", [
    ("saxpy", "saxpy(int, float, float const*, float*)", True),
    ("reduce", "ops::reduce<float, 256>(float const*, float*)", True),
    ("ops::reduce<float, 256>", "ops::reduce<float, 256>(float const*, float*)", True),
    ("ops::reduce", "ops::reduce<float, 256>(float const*, float*)", True),
    ("reduc", "ops::reduce<float, 256>(float const*, float*)", False),
])
def test_kernel_names_match_with_or_without_namespace_and_template(wanted, demangled, hit):
    assert name_matches(wanted, demangled) is hit


# -- the command line --------------------------------------------------------------------

# The CLI with the driver check passed (TEST-ONLY): these tests run programs that launch no
# kernel, to see what the CLI reports, on machines without a CUDA driver too.
WITHOUT_DRIVER_CHECK = ("import sys, cudalens.capture.session as s; "
                        "s.check_driver = lambda *a: None; sys.argv[0] = 'cudalens'; "
                        "from cudalens.cli import main; main()")


def _cli(args, cwd, env_extra=None, timeout=240, driver_check=True):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "server"), str(ROOT)]
                                        + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(env_extra or {})
    start = ["-m", "cudalens"] if driver_check else ["-c", WITHOUT_DRIVER_CHECK]
    return subprocess.run([sys.executable, *start, *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout, check=False)


@needs_nvcc
def test_cli_a_failing_program_reports_its_status_and_stderr_tail(tmp_path):
    ws = _workspace(tmp_path)
    done = _cli(["capture", "--kernel", "saxpy", "--", sys.executable, "-c",
                 "import sys; sys.stderr.write('loading data\\nValueError: bad shape\\n'); "
                 "sys.exit(7)"], ws, {"CUDALENS_CACHE_DIR": str(tmp_path / "cache")},
               driver_check=False)
    assert done.returncode == 1, done.stderr
    assert ("error: the program failed with exit status 7; nothing was saved. The end of its "
            "stderr:\n  loading data\n  ValueError: bad shape") in done.stderr
    assert not (ws / ".cudalens").exists() and "Traceback" not in done.stderr


@needs_nvcc
def test_cli_a_program_without_cuda_launches_nothing(tmp_path):
    ws = _workspace(tmp_path)
    done = _cli(["capture", "--", sys.executable, "-c", "print('hi')"], ws,
                {"CUDALENS_CACHE_DIR": str(tmp_path / "cache")}, driver_check=False)
    assert done.returncode == 1 and done.stdout.startswith("hi")
    assert "note: the recorder was not loaded" in done.stderr
    assert ("error: kernel saxpy: not captured: it was never launched; the program launched no "
            "kernels at all") in done.stderr


def test_cli_a_command_that_does_not_exist(tmp_path):
    ws = _workspace(tmp_path)
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    done = _cli(["capture", "--kernel", "saxpy", "--", str(tmp_path / "no-such-program")], ws,
                {"CUDALENS_CACHE_DIR": str(tmp_path / "cache")}, driver_check=False)
    assert done.returncode == 2
    assert f"error: cannot run '{tmp_path / 'no-such-program'}': No such file or directory" \
        in " ".join(done.stderr.split())


def test_cli_without_a_cuda_driver_says_so_and_runs_nothing(tmp_path):
    if _has_libcuda():
        pytest.skip("a CUDA driver is installed here")
    ws = _workspace(tmp_path)
    done = _cli(["capture", "--kernel", "saxpy", "--", sys.executable, "-c", "print('hi')"], ws,
                {"CUDALENS_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""  # the program was not run
    err = " ".join(done.stderr.split())
    assert err.startswith("error: no CUDA driver found: libcuda.so.1 cannot be loaded (")
    assert err.endswith("capturing needs a machine with an NVIDIA GPU and its driver, where the "
                        "program runs its kernels")
    assert "recorder" not in err
    assert not (tmp_path / "cache").exists()  # nor the recorder built


# -- replay: optimize --capture ------------------------------------------------------------

def _replay_workspace(tmp_path):
    from live_fake_runner import fake_runner_process  # noqa: F401 (import check)
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(ROOT / "examples" / "saxpy.cu", ws / "saxpy.cu")
    shutil.copy(ROOT / "examples" / "saxpy.cu.spec", ws / "saxpy.cu.spec")
    out = _collect(_run(tmp_path), ["saxpy"], ["./prog"], 1, ws / ".cudalens" / "captures", ws)
    (path,) = out.written
    return ws, path


TOKEN = "capture-replay-token-0123456789abc"


def test_replay_through_the_live_fake_runner(tmp_path):
    from live_fake_runner import fake_runner_process
    ws, capture = _replay_workspace(tmp_path)
    with fake_runner_process(tmp_path, TOKEN) as url:
        env = {"CUDALENS_RUNNER_URL": url, "CUDALENS_RUNNER_TOKEN": TOKEN}
        done = _cli(["optimize", "saxpy.cu", "--capture", str(capture), "--proposer",
                     "builtin", "--budget", "2"], ws, env)
        only = _cli(["optimize", "saxpy.cu", "--capture", str(capture), "--capture-only",
                     "--proposer", "builtin", "--budget", "2"], ws, env)
    assert done.returncode == 0, done.stderr
    err = " ".join(done.stderr.split())
    assert (f"replaying {capture}: launch 1 of saxpy, grid (1, 1, 1), block (256, 1, 1), 0 B "
            f"shared") in err
    assert "note: size n = 100 (the captured value of scalar n)" in err
    assert "sizes captured, nominal, ragged" in " ".join(done.stdout.split())
    assert only.returncode == 0, only.stderr
    assert "; captured case only" in " ".join(only.stderr.split())
    out = " ".join(only.stdout.split())
    assert "sizes captured:" in out and "nominal" not in out.split("sizes captured")[1][:20]


def test_replay_of_an_edited_kernel_is_stale_and_runs_nothing(tmp_path):
    ws, capture = _replay_workspace(tmp_path)
    src = ws / "saxpy.cu"
    src.write_text(src.read_text().replace("a * x[i] + y[i]", "y[i] + a * x[i]"))
    done = _cli(["optimize", "saxpy.cu", "--capture", str(capture), "--proposer", "builtin"], ws,
                {"CUDALENS_RUNNER_URL": "http://127.0.0.1:9", "CUDALENS_RUNNER_TOKEN": TOKEN})
    assert done.returncode == 2
    assert (f"error: capture {capture} is stale: saxpy in saxpy.cu changed since it was "
            f"captured; capture it again with cudalens capture --kernel saxpy -- ./prog") \
        in " ".join(done.stderr.split())
    assert "starting the GPU runner" not in done.stderr


def test_replay_of_a_truncated_capture_runs_nothing(tmp_path):
    ws, capture = _replay_workspace(tmp_path)
    npz = capture.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:64])
    done = _cli(["optimize", "saxpy.cu", "--capture", str(capture), "--proposer", "builtin"], ws,
                {"CUDALENS_RUNNER_URL": "http://127.0.0.1:9", "CUDALENS_RUNNER_TOKEN": TOKEN})
    assert done.returncode == 2
    assert "(truncated or replaced)" in done.stderr and "Traceback" not in done.stderr


# -- replay pieces -------------------------------------------------------------------------

def _target(ws):
    from cudalens.target import load_target
    return load_target(ws / "saxpy.cu", "saxpy")


def test_sizes_passed_as_scalars_take_the_captured_values(tmp_path):
    from cudalens.capture.replay import bind_sizes
    from cudalens.spec.model import CheckDecl
    from cudalens.spec.resolve import sizes_for
    ws, capture = _replay_workspace(tmp_path)
    target = _target(ws)
    spec = replace_checks(target.spec, (CheckDecl("n", "1001"),))
    bound, notes = bind_sizes(spec, read_capture(capture))
    assert [(s.name, s.expr) for s in bound.sizes] == [("n", "100")]
    assert bound.checks == ()  # 1001 would exceed the captured n
    assert sizes_for(bound, "ragged") == {"n": 61}  # (100 * 3 // 5) | 1, the derived value
    assert notes == ("size n = 100 (the captured value of scalar n)",)


def replace_checks(spec, checks):
    from dataclasses import replace
    return replace(spec, checks=checks)


def test_the_captured_case_and_launches(tmp_path):
    from cudalens.capture.replay import load_replay
    from gpu_runner.problem import Buffer, Launch, Problem, Scalar, Variant
    ws, capture = _replay_workspace(tmp_path)
    target = _target(ws)
    r = load_replay(capture, target)
    n, a, x, y = r.case.args
    assert (n, a) == (Scalar("n", "int32", 100), Scalar("a", "float32", 3.0))
    assert (x.length, x.role, y.length, y.role) == (100, "in", 164, "inout")
    assert r.case.captured.payload and not r.case.captured.path
    assert r.launch == Launch((1, 1, 1), (256, 1, 1), 0)
    base = Problem("saxpy", (replace_label(r.case, "nominal"), replace_label(r.case, "ragged")))
    assert [c.label for c in r.problem(base).cases] == ["captured", "nominal", "ragged"]
    v = Variant("c1", "src", "saxpy", (Launch((9, 1, 1), (512, 1, 1)), Launch((5, 1, 1),
                                                                           (512, 1, 1))))
    changed = replace_launch(target.spec.launch, block=("512",))
    assert r.variant(v, changed).launches[0] == Launch((9, 1, 1), (512, 1, 1))  # its own
    assert r.variant(v, target.spec.launch).launches[0] == r.launch  # the captured one
    only = load_replay(capture, target, only=True)
    assert [c.label for c in only.problem(base).cases] == ["captured"]
    assert len(only.variant(v, target.spec.launch).launches) == 1


def replace_label(case, label):
    from dataclasses import replace
    return replace(case, label=label, captured=None)


def replace_launch(launch, **kw):
    from dataclasses import replace
    return replace(launch, **kw)


def test_a_capture_of_another_kernel_is_refused(tmp_path):
    from cudalens.capture.replay import ReplayError, load_replay
    from cudalens.target import load_target
    ws, capture = _replay_workspace(tmp_path)
    # a kernel that writes y (an empty body would be refused first: no output to verify)
    (ws / "scale.cu").write_text("__global__ void scale(int n, float a, const float* x, "
                                 "float* y) { int i = threadIdx.x; if (i < n) y[i] = a * x[i]; "
                                 "}\n")
    with pytest.raises(ReplayError, match=r"is of kernel saxpy, not scale"):
        load_replay(capture, load_target(ws / "scale.cu", "scale"))


def test_a_runtime_launch_that_never_reached_the_driver_is_explained(tmp_path):
    run = _run(tmp_path)
    (tmp_path / "raw" / "runtime_only.tsv").write_text("_Z4gemmPf\tgemm(float*)\n")
    run = ProgramRun(0, (), read_output(tmp_path / "raw"))
    out = _collect(run, ["gemm"], ["prog"], 1, tmp_path / "caps", _workspace(tmp_path))
    assert out.missing[0].reason == ("it was launched through the CUDA runtime, but the launch "
                                     "never reached the driver's launch functions the recorder "
                                     "watches, so it cannot be captured")
    assert out.notes == ("1 kernel(s) were launched through the CUDA runtime without reaching "
                         "the driver's launch functions, and cannot be captured: gemm",)


def _has_libcuda() -> bool:
    import ctypes
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@needs_nvcc
def test_recorder_loads_and_says_why_it_cannot_start_without_a_driver(tmp_path):
    """The built library loads (libcupti found through its rpath); InitializeInjection without
    an output folder does nothing, and without libcuda.so.1 says so in errors.txt."""
    if _has_libcuda():
        pytest.skip("a CUDA driver is installed here; the GPU script covers the recorder")
    from cudalens.capture.build import recorder_library
    lib = recorder_library(cache=tmp_path / "cache")
    probe = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
             "print(lib.InitializeInjection())")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDALENS_CAPTURE")}
    plain = subprocess.run([sys.executable, "-c", probe, str(lib)], capture_output=True,
                           text=True, env=env, check=True)
    assert plain.stdout.strip() == "0"
    out = tmp_path / "out"
    out.mkdir()
    env["CUDALENS_CAPTURE_DIR"] = str(out)
    done = subprocess.run([sys.executable, "-c", probe, str(lib)], capture_output=True,
                          text=True, env=env, check=True)
    assert done.stdout.strip() == "0"
    assert (out / "errors.txt").read_text() == "cannot open libcuda.so.1\n"
    assert not (out / "ready.txt").exists()
    assert read_output(out).errors == ("cannot open libcuda.so.1",)


def test_captures_of_a_kernel_are_current_until_it_is_edited(tmp_path):
    from cudalens.capture.index import captures_of
    from cudalens.source.parser import parse_source
    ws, capture = _replay_workspace(tmp_path)
    text = (ws / "saxpy.cu").read_text()
    source = parse_source(text)
    (entry,) = captures_of(ws, source, source.kernels[0])
    assert (entry.path, entry.stale, entry.manifest.launch_index) == (capture, False, 1)
    # another kernel added to the file: still current
    two = parse_source(text + "\n__global__ void other(float* p) { p[0] = 1.0f; }\n")
    assert [e.stale for e in captures_of(ws, two, two.kernels[0])] == [False]
    assert captures_of(ws, two, two.kernels[1]) == []
    edited = parse_source(text.replace("a * x[i] + y[i]", "a * x[i] - y[i]"))
    assert [e.stale for e in captures_of(ws, edited, edited.kernels[0])] == [True]
