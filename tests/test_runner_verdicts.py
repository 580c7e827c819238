"""Verdicts and their sentences from host copies of a run (no GPU needed)."""

from __future__ import annotations

import numpy as np

from gpu_runner.buffers import GuardDamage
from gpu_runner.patterns import poison_array
from gpu_runner.problem import Buffer, Case, Scalar, Tolerance
from gpu_runner.verdicts import RunResult, judge_repeat, judge_run, judge_stale

N = 10
CASE = Case("ragged", (Scalar("n", "int32", N), Buffer("x", "float32", N, "in"),
                       Buffer("y", "float32", N, "inout"), Buffer("z", "float32", N, "out")))
X = np.linspace(-1, 1, N, dtype=np.float32)
Y0 = np.linspace(2, 3, N, dtype=np.float32)
INPUTS = {"x": X, "y": Y0}
REF = {"y": Y0 + X, "z": 2 * X}


def _run(**changes) -> RunResult:
    out = {"y": REF["y"].copy(), "z": REF["z"].copy()}
    ins = {"x": X.copy()}
    for key, fn in changes.items():
        fn(out if key != "x" else ins)
    return RunResult(outputs=out, inputs_after=ins)


def test_a_matching_run_passes():
    assert judge_run("c", CASE, 3, INPUTS, _run(), REF) is None


def test_guard_damage_comes_first():
    run = _run(z=lambda o: o.__setitem__("z", poison_array("float32", N)))
    run.guard = GuardDamage("z", "after", N, 4)
    v = judge_run("cand", CASE, 2, INPUTS, run, REF)
    assert v.status == "out_of_bounds" and v.mismatch is None
    assert v.reason == ("case 'ragged', seed 2: the kernel wrote outside buffer 'z': 4 guard "
                        "byte(s) past the end were overwritten, the nearest at element index 10")


def test_modified_input():
    def hit(ins):
        ins["x"][7] = 5.0
    v = judge_run("cand", CASE, 1, INPUTS, _run(x=hit), REF)
    assert v.status == "input_modified"
    assert (v.mismatch.buffer, v.mismatch.index, v.mismatch.actual) == ("x", 7, 5.0)
    assert v.reason.startswith("case 'ragged', seed 1: input 'x' was modified at index 7: was ")


def test_unwritten_output():
    def half(o):
        o["z"][5:] = poison_array("float32", 5)
    v = judge_run("cand", CASE, 1, INPUTS, _run(z=half), REF)
    assert v.status == "unwritten"
    m = v.mismatch
    assert (m.case, m.seed, m.buffer, m.index, m.mismatched, m.total) == ("ragged", 1, "z", 5, 5, 10)
    assert m.expected == float(REF["z"][5])
    assert "output 'z' was not written at index 5" in v.reason and "5 of 10" in v.reason


def test_mismatch_names_values_and_bounds():
    def off(o):
        o["y"][4] += 1.0
    v = judge_run("cand", CASE, 3, INPUTS, _run(y=off), REF)
    assert v.status == "mismatch" and v.mismatch.index == 4
    assert v.reason == (f"case 'ragged', seed 3: output 'y' differs from the baseline at index 4: "
                        f"expected {float(REF['y'][4]):.9g}, got {float(REF['y'][4]) + 1:.9g} "
                        f"(1 of 10 elements differ; allowed: rtol 0.0001, atol 0.0004)")


def test_spec_tolerance_lets_small_differences_pass():
    def off(o):
        o["z"][0] += 0.01
    assert judge_run("c", CASE, 1, INPUTS, _run(z=off), REF).status == "mismatch"
    assert judge_run("c", CASE, 1, INPUTS, _run(z=off), REF, Tolerance(1e-2, 1e-2)) is None


def test_second_run_must_be_bit_identical_unless_atomics():
    first = _run()

    def ulp(o):
        o["z"][2] = np.nextafter(o["z"][2], np.float32(10))
    second = _run(z=ulp)
    v = judge_repeat("c", CASE, 1, INPUTS, first, second, REF)
    assert v.status == "nondeterministic" and v.mismatch.index == 2
    assert "a second run on the same inputs gave different values for 'z' at index 2" in v.reason
    assert judge_repeat("c", CASE, 1, INPUTS, first, second, REF, atomics=True) is None


def test_stale_after_timing():
    def zero(o):
        o["z"][:] = 0.0
    v = judge_stale("c", CASE, 1, INPUTS, _run(z=zero), REF)
    assert v.status == "stale_after_timing" and v.mismatch.index == 0
    assert v.reason.startswith("case 'ragged', seed 1 (after the timing loop): output 'z' differs")


def test_integer_mismatch_wording():
    case = Case("nominal", (Buffer("x", "int32", 4, "in"), Buffer("o", "int32", 4, "out")))
    ins = {"x": np.arange(4, dtype=np.int32)}
    ref = {"o": np.array([1, 4, 7, 10], dtype=np.int32)}
    run = RunResult(outputs={"o": np.array([1, 4, 8, 10], dtype=np.int32)},
                    inputs_after={"x": ins["x"].copy()})
    v = judge_run("c", case, 1, ins, run, ref)
    assert v.reason == ("case 'nominal', seed 1: output 'o' differs from the baseline at index 2: "
                        "expected 7, got 8 (1 of 4 elements differ; integers must match exactly)")
    assert (v.mismatch.expected, v.mismatch.actual) == (7, 8)


def test_a_constant_output_fails_whatever_the_tolerance():
    ref = {"y": (Y0 + X) * 1e-3, "z": np.linspace(1e-3, 2e-3, N).astype(np.float32)}
    run = RunResult(outputs={"y": ref["y"].copy(), "z": np.zeros(N, np.float32)},
                    inputs_after={"x": X.copy()})
    loose = Tolerance(0.9, 0.9)
    v = judge_run("cand", CASE, 2, INPUTS, run, ref, loose)
    assert v.status == "constant_output"
    m = v.mismatch
    assert (m.buffer, m.index, m.expected, m.actual, m.mismatched, m.total) == \
        ("z", 0, float(ref["z"][0]), 0.0, N, N)
    assert v.reason == (
        f"case 'ragged', seed 2: output 'z' holds one value, 0, in all {N} elements where the "
        f"baseline's varies (index 0: expected {float(ref['z'][0]):.9g}); a constant output "
        f"must match within the default tolerance (rtol 0.0001, atol 2e-07) whatever the "
        f"spec's, and {N} of {N} elements do not")
    # the same output after the timing loop is stale, not a new status
    assert judge_stale("cand", CASE, 2, INPUTS, run, ref, loose).status == "stale_after_timing"
    # the loose tolerance alone would have passed it: only the constant check catches it
    run.outputs["z"] = ref["z"] * 0.2
    assert judge_run("cand", CASE, 2, INPUTS, run, ref, loose) is None
