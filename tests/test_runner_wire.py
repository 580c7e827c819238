"""Numbers JSON cannot hold as plain numbers (NaN, +inf, -inf, integers past 2^53) across the
real HTTP path: the runner application served by a live process
(``tests/data/runner/fake_gpu_service.py``, fake GPU workers steered by markers) and the editor
side's ``RunnerClient``. What the fake worker reported must come back exactly: the same floats
(NaN for NaN), the same ints, of the same type, and the JSON on the wire must be the encoding
``gpu_runner.service.schema`` documents."""

from __future__ import annotations

import dataclasses
import json
import math

import httpx
import pytest
from pydantic import TypeAdapter

from cudalens.runner_client import RunnerClient, RunnerError
from gpu_runner.problem import Case, Problem, Scalar
from gpu_runner.report import Evaluation, Mismatch, Verdict
from gpu_runner.service.schema import JobStatus, decode, encode
from exact_values import assert_exact as exact
from live_fake_runner import fake_runner_process
from service_fakes import (HUGE_INT_MISMATCH, NONFINITE_MISMATCH, NONFINITE_REASON,
                           NONFINITE_SPEEDUP, nonfinite_timing, problem, variant)

TOKEN = "wire-test-token-0123456789"


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with fake_runner_process(tmp_path_factory.mktemp("wire"), TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def client(runner):
    with RunnerClient(runner, token=TOKEN, start_timeout_s=60) as c:
        yield c


CANDIDATES = (variant("unwritten_nan", "@nonfinite"), variant("uint64", "@huge-int"),
              variant("odd_timing", "@nonfinite-timing"), variant("plain"))


@pytest.fixture(scope="module")
def evaluation(client) -> Evaluation:
    return client.evaluate(problem(), variant("baseline"), CANDIDATES, repetitions=5)


def test_an_unwritten_element_comes_back_as_nan_with_its_exact_index(evaluation):
    c = evaluation.candidates[0]
    exact(c.verdict, Verdict("unwritten_nan", "unwritten", NONFINITE_REASON, NONFINITE_MISMATCH))
    m = c.verdict.mismatch
    assert math.isnan(m.actual) and m.expected == float("-inf")
    assert m.index == 9007199254740993 and m.total == 1180591620717411303425
    assert c.timing is None and c.speedup is None


def test_integer_values_past_2_53_stay_integers(evaluation):
    m = evaluation.candidates[1].verdict.mismatch
    exact(m, HUGE_INT_MISMATCH)
    assert m.expected == 18446744073709551615 and m.actual == 9007199254740993
    assert isinstance(m.expected, int) and float(m.actual) != m.actual  # not a rounded float


def test_a_timing_of_non_finite_values_and_huge_counts_comes_back_exactly(evaluation):
    c = evaluation.candidates[2]
    assert c.verdict.status == "passed"
    exact(c.timing, nonfinite_timing("odd_timing"))
    exact(c.speedup, NONFINITE_SPEEDUP)


def test_the_other_candidates_are_judged_as_usual(evaluation):
    assert [c.verdict.status for c in evaluation.candidates] == [
        "unwritten", "mismatch", "passed", "passed"]
    assert evaluation.candidates[3].speedup.value == 2.0
    assert evaluation.error == ""


def test_the_job_status_on_the_wire_uses_the_documented_encoding(runner):
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    body = {"problem": problem(), "baseline": variant("baseline"),
            "candidates": [variant("unwritten_nan", "@nonfinite")], "repetitions": 5}
    with httpx.Client(base_url=runner, headers=headers, timeout=60) as http:
        job = http.post("/v1/evaluate", content=encode(body)).json()["id"]
        for _ in range(600):
            resp = http.get(f"/v1/jobs/{job}")
            if resp.json()["state"] != "queued" and resp.json()["state"] != "running":
                break
    text = resp.text
    assert resp.json()["state"] == "done", text
    # NaN and infinities as JSON strings, big integers digit for digit: standard JSON
    assert ('"index":9007199254740993,"expected":"-Infinity","actual":"NaN",'
            '"mismatched":18446744073709551619,"total":1180591620717411303425') in text, text
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c} in {text}"))
    status = JobStatus.model_validate_json(text)
    exact(status.result.candidates[0].verdict.mismatch, NONFINITE_MISMATCH)


def test_requests_carry_huge_integers_exactly_and_nan_gets_a_422_not_a_client_crash(client):
    cases = tuple(dataclasses.replace(c, bytes_moved=2**60 + 1, flops=2**53 + 1,
                                      args=c.args + (Scalar("k", "int64", 2**63 - 1),
                                                     Scalar("b", "float64", 0.1)))
                  for c in problem(cases=1).cases)
    big = Problem("saxpy", cases)
    ev = client.evaluate(big, variant("baseline", cases=1), [variant("echo", "@echo", cases=1)],
                         repetitions=5)
    assert ev.candidates[0].verdict.reason == (
        "nominal: bytes_moved=1152921504606846977 flops=9007199254740993 n=1048576 a=2.5 "
        "x=(-1.0, 1.0) y=(-1.0, 1.0) k=9223372036854775807 b=0.1")
    # NaN reaches the service as NaN (it fails the range check), where httpx's own JSON
    # refused to write it
    with pytest.raises(RunnerError) as err:
        client.evaluate(problem(), variant("baseline"), [variant("plain")], repetitions=5,
                        time_budget_s=float("nan"))
    assert str(err.value).endswith("refused POST /evaluate: 422 invalid_request: malformed "
                                   "request: time_budget_s: Input should be less than or "
                                   "equal to 3600"), str(err.value)


def test_encode_and_decode_are_inverse_for_every_special_number():
    values = (float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 0.1,
              1.7976931348623157e308, 2**53 + 1, -(2**63), 2**64 - 1, 2**100 + 7)
    for v in values:
        m = Mismatch("nominal", 1, "z", 2**53 + 1, v, v, 1, 2)
        text = encode(m)
        back = decode(Mismatch, json.loads(text))
        exact(back, m, f"{v!r} as {text!r}")
        exact(TypeAdapter(Mismatch).validate_json(text), m, f"{v!r} (validate_json)")
    assert encode([float("nan"), float("inf"), float("-inf")]) == \
        b'["NaN","Infinity","-Infinity"]'
    # a scalar argument's value keeps its kind: an int stays an int, a float a float
    case = Case("nominal", (Scalar("k", "int64", 2**62 + 1), Scalar("a", "float64", 3.0)))
    back = decode(Case, json.loads(encode(case)))
    exact(back, case)


def test_a_bare_nan_from_another_client_is_a_422_whose_body_is_json(runner):
    # json.dumps writes NaN as a bare token (not JSON); the service reads it, refuses the value
    # and echoes it in the error's detail in the wire encoding (its JSONResponse would raise)
    body = ('{"problem": ' + encode(problem()).decode() + ', "baseline": '
            + encode(variant("baseline")).decode() + ', "time_budget_s": NaN}')
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    resp = httpx.post(f"{runner}/v1/evaluate", content=body, headers=headers, timeout=30)
    assert resp.status_code == 422, resp.text
    error = json.loads(resp.text, parse_constant=lambda c: pytest.fail(f"{c} in {resp.text}"))
    assert error["message"] == ("malformed request: time_budget_s: Input should be less than "
                                "or equal to 3600")
    assert error["detail"][0]["input"] == "NaN"
