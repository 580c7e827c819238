"""``POST /v1/sanitize`` and ``RunnerClient.sanitize`` through a real runner process over HTTP
(tests/data/runner/fake_gpu_service.py) without a GPU: the GPU workers are fakes and
compute-sanitizer is tests/data/runner/fake_compute_sanitizer.py, which prints records in
compute-sanitizer's format at the lines of the variant's source that hold a tool's marker.
Everything between the request and that executable is the real code: validation, the GPU's
queue, the request file, one subprocess per tool, the parsing and the "not available" answers."""

from __future__ import annotations

import httpx
import pytest

from cudalens.runner_client import RunnerClient
from gpu_runner.problem import to_dict
from live_fake_runner import fake_runner_process
from service_fakes import SAXPY, problem, variant

TOKEN = "sanitize-test-token-0123456789"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    with fake_runner_process(tmp_path_factory.mktemp("runner"), TOKEN) as found:
        yield found


def racy(marker_line_text: str):
    """saxpy with ``marker_line_text`` appended as its own line; (variant, that line)."""
    v = variant("baseline")
    source = v.source + marker_line_text + "\n"
    return type(v)(label=v.label, source=source, name=v.name, launches=v.launches), \
        source.count("\n")


def post(url, body, **kw):
    return httpx.post(f"{url}/v1/sanitize", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {TOKEN}"}, **kw)


def test_every_tool_runs_and_each_finding_comes_back_at_its_line(url):
    v, line = racy("// @race @oob")
    r = post(url, {"problem": to_dict(problem()), "variant": to_dict(v)})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["available"] is True and got["device"] == 0
    report = got["report"]
    assert report["variant"] == "baseline" and report["case"] == "ragged"
    assert [run["tool"] for run in report["runs"]] == ["memcheck", "racecheck", "initcheck",
                                                       "synccheck"]
    found = {(f["tool"], f["kind"], f["line"], f["own"], f["file"])
             for run in report["runs"] for f in run["findings"]}
    assert found == {("memcheck", "out-of-bounds read", line, True, "cudalens-variant.cu"),
                     ("racecheck", "race", line, True, "cudalens-variant.cu")}
    race = report["runs"][1]["findings"][0]
    assert race["count"] == 96 and race["thread"] is None
    oob = report["runs"][0]["findings"][0]
    assert oob["thread"] == [7, 0, 0] and oob["block"] == [2, 0, 0]


def test_the_client_reads_the_report_and_a_clean_kernel_has_no_findings(url):
    with RunnerClient(url, token=TOKEN) as client:
        v, line = racy("// @uninit")
        answer = client.sanitize(problem(), v, tools=["initcheck", "memcheck"])
        assert answer.kind == "" and answer.report is not None
        assert [run.tool for run in answer.report.runs] == ["initcheck", "memcheck"]
        [finding] = answer.report.findings
        assert (finding.kind, finding.line, finding.blocking) == ("uninitialized read", line,
                                                                  True)
        clean = client.sanitize(problem(), variant("baseline"))
        assert clean.report is not None and clean.report.findings == ()
        assert all(run.errors == 0 for run in clean.report.runs if run.tool != "racecheck")


def test_a_variant_that_does_not_compile_is_not_available_with_the_reason(url):
    with RunnerClient(url, token=TOKEN) as client:
        answer = client.sanitize(problem(), variant("baseline", "@nocompile"), tools=["memcheck"])
    assert answer.report is None and answer.kind == "variant_failed"
    assert "identifier \"q\" is undefined" in answer.reason
    assert answer.reason.startswith("baseline did not compile or launch under memcheck")


def test_requests_are_validated(url):
    body = {"problem": to_dict(problem()), "variant": to_dict(variant("b"))}
    r = post(url, {**body, "tools": ["leakcheck"]})
    assert r.status_code == 422 and "tools.0" in r.json()["message"]
    r = post(url, {**body, "timeout_s": 601})
    assert r.status_code == 422 and "timeout_s" in r.json()["message"]
    short = to_dict(variant("b", cases=1))
    r = post(url, {**body, "variant": short})
    assert r.status_code == 422 and "variant 'b'" in r.json()["message"]
    assert httpx.post(f"{url}/v1/sanitize", json=body).status_code == 401
    assert SAXPY in body["variant"]["source"]


def test_the_openapi_schema_describes_the_endpoint(url):
    schema = httpx.get(f"{url}/openapi.json", timeout=30,
                       headers={"Authorization": f"Bearer {TOKEN}"}).json()
    post = schema["paths"]["/v1/sanitize"]["post"]
    assert {"200", "401", "413", "422", "503"} <= set(post["responses"])
    defs = schema["components"]["schemas"]
    req = defs["SanitizeRequest"]
    assert set(req["required"]) == {"problem", "variant"}
    assert req["properties"]["timeout_s"]["maximum"] == 600
    assert req["properties"]["tools"]["items"]["enum"] == ["memcheck", "racecheck", "initcheck",
                                                          "synccheck"]
    kinds = next(k["enum"] for k in defs["SanitizeResponse"]["properties"]["kind"]["anyOf"]
                 if "enum" in k)
    assert set(kinds) == {"no_gpu", "sanitizer_missing", "timeout", "variant_failed", "failed"}
    assert {"tool", "kind", "message", "file", "line", "thread", "block", "count",
            "own"} <= set(defs["Finding"]["properties"])
