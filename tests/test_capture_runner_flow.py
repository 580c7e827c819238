"""The runner with a captured case (``Case.captured``) on the fake CUDA driver of
``test_runner_flow``: captured inputs used, the re-run checked against the captured results,
candidates judged against both, a capture that does not reproduce refused."""

from __future__ import annotations

import base64
import hashlib
import io
import shutil

import numpy as np
import pytest

from gpu_runner.problem import Buffer, Case, CapturedData, Launch, Problem, Scalar, Variant
from test_runner_flow import DATA, NOMINAL, RAGGED, by_label, fake  # noqa: F401 (fixture)
from gpu_runner.events import as_text  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")

N_CAPTURED = 3000


def npz_data(arrays: dict, inline: bool = True, tmp_path=None) -> CapturedData:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    raw = buf.getvalue()
    digest = hashlib.sha256(raw).hexdigest()
    if inline:
        return CapturedData(sha256=digest, payload=base64.b64encode(raw).decode())
    path = tmp_path / "c.npz"
    path.write_bytes(raw)
    return CapturedData(sha256=digest, path=str(path))


def captured_arrays(a: float = 2.5, z_after=None):
    x = (np.arange(N_CAPTURED, dtype=np.float32) % 97) / 8
    y = np.full(N_CAPTURED, 1.5, dtype=np.float32)
    z_before = np.full(N_CAPTURED, 7.0, dtype=np.float32)
    z = (np.float32(a) * x + y).astype(np.float32) if z_after is None else z_after
    return {"x.before": x, "x.after": x, "y.before": y, "y.after": y,
            "z.before": z_before, "z.after": z}


def problem_with(data: CapturedData) -> Problem:
    def case(label, n, captured=None):
        return Case(label, (Scalar("n", "int32", n), Scalar("a", "float32", 2.5),
                            Buffer("x", "float32", n, "in"), Buffer("y", "float32", n, "in"),
                            Buffer("z", "float32", n, "inout" if captured else "out")),
                    bytes_moved=12 * n, captured=captured)
    return Problem("saxpy", (case("captured", N_CAPTURED, data), case("nominal", NOMINAL),
                             case("ragged", RAGGED)))


def variant(file, label=None) -> Variant:
    launches = tuple(Launch(grid=(-(-n // 256), 1, 1), block=(256, 1, 1))
                     for n in (N_CAPTURED, NOMINAL, RAGGED))
    return Variant(label=label or file.removesuffix(".cu"), source=(DATA / file).read_text(),
                   name="saxpy", launches=launches)


def test_captured_case_is_verified_and_timed(fake):
    from gpu_runner.runner import Runner
    messages = []
    with Runner() as r:
        ev = r.evaluate(problem_with(npz_data(captured_arrays())), variant("saxpy.cu"),
                        [variant("saxpy_gridstride.cu"), variant("saxpy_half.cu")],
                        repetitions=6, warmup=1, on_event=as_text(messages.append))
    assert ev.error == ""
    got = by_label(ev)
    assert got["saxpy_gridstride"].verdict.status == "passed"
    half = got["saxpy_half"].verdict
    assert half.status == "mismatch"
    assert (half.mismatch.case, half.mismatch.seed, half.mismatch.buffer) == ("captured", 1, "z")
    # the half kernel leaves z's second half at its captured "before" value, 7.0
    assert half.mismatch.index == N_CAPTURED // 2 and half.mismatch.actual == 7.0
    # the captured case runs for the first seed only; the random cases for every seed
    assert "verify: baseline on case 'captured', seed 1" in messages
    assert not any("case 'captured', seed 2" in m for m in messages)
    assert "verify: baseline on case 'nominal', seed 3" in messages
    assert ev.baseline.samples >= 1


def test_capture_not_reproduced_is_refused(fake):
    from gpu_runner.runner import Runner
    wrong = captured_arrays()
    wrong["z.after"] = wrong["z.after"].copy()
    wrong["z.after"][5] += 1.0  # as if the program's launch read state outside its parameters
    with Runner() as r:
        ev = r.evaluate(problem_with(npz_data(wrong)), variant("saxpy.cu"),
                        [variant("saxpy_gridstride.cu")], repetitions=4, warmup=1)
    assert ev.baseline is None and ev.candidates == ()
    assert ev.error.startswith("the captured launch is not reproduced: re-running the original "
                               "kernel on the captured inputs gives 'z' index 5")
    assert "this capture is not used" in ev.error


def test_candidate_must_also_match_the_captured_results(fake):
    """Within tolerance of the baseline's re-run is not enough when the captured results say
    otherwise: the captured results are a second reference."""
    from gpu_runner.verdicts import RunResult, judge_run
    arrays = captured_arrays()
    case = problem_with(npz_data(arrays)).cases[0]
    ref = {"z": arrays["z.after"]}
    off = arrays["z.after"].copy()
    off[9] += 100.0
    ins = {"x": arrays["x.before"], "y": arrays["y.before"]}
    v = judge_run("c1", case, 1, ins, RunResult(outputs={"z": off}, inputs_after=ins), ref,
                  reference_name="the captured results")
    assert v.status == "mismatch" and "differs from the captured results at index 9" in v.reason


def test_corrupt_captured_data_is_an_error_before_any_launch(fake, tmp_path):
    from gpu_runner.runner import Runner
    # other values than the other tests: loaded arrays are cached by digest
    data = npz_data(captured_arrays(a=-4.0), inline=False, tmp_path=tmp_path)
    (tmp_path / "c.npz").write_bytes((tmp_path / "c.npz").read_bytes()[:100])  # truncated
    with Runner() as r:
        ev = r.evaluate(problem_with(data), variant("saxpy.cu"), [], repetitions=4, warmup=1)
    assert ev.error.startswith("the captured case cannot be used: case 'captured': captured "
                               "arrays have sha256 ")
    assert "corrupt or replaced" in ev.error
    assert [n for n in fake.launches if n == "saxpy"] == []


@pytest.mark.parametrize("data, message", [
    (CapturedData(sha256="ab" * 32), "captured data needs exactly one of payload and path, "
                                     "found neither"),
    (CapturedData(sha256="ab" * 32, payload="AA==", path="/x"), "found both"),
    (CapturedData(sha256="xyz", payload="AA=="), "captured.sha256 must be 64 lowercase hex"),
])
def test_the_service_refuses_malformed_captured_data(data, message):
    from gpu_runner.service.validate import evaluate_problems
    problems = evaluate_problems(problem_with(data), variant("saxpy.cu"), [])
    assert len(problems) == 1 and problems[0].startswith("problem.cases[0] 'captured': ")
    assert message in problems[0]
