"""A real runner service (``python -m gpu_runner.service``, pycuda's nvcc) refuses includes that
reach host files, and compiles in a fresh folder (issue 11, item 3), marker gpu.

Through the HTTP client: each refused include is a failed ``CompileReport`` naming the directive
and its line, with nothing of the file in its log; a link to a host file planted in the
service's working folder is not found by ``#include "evil.h"`` (pycuda compiles in a new
folder of its own); toolkit headers compile; an evaluation goes on past a refused candidate.
Skipped, with the reason, where no GPU runner can start. ``test_runner_includes.py`` is the
same without a GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_runner.problem import Launch, Variant
from service_fakes import SAXPY, problem, variant

pytestmark = pytest.mark.gpu

PASSWD_LINE = next(line for line in Path("/etc/passwd").read_text().splitlines() if ":" in line)
SECRET = "cudalens_host_secret_5e1b07"
KERNEL = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"


def _variant(label: str, source: str, options=()) -> Variant:
    return Variant(label=label, source=source, name="k",
                   launches=(Launch((1, 1, 1), (32, 1, 1)),), options=tuple(options))


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    """The service's working folder, holding ``evil.h``, a link to a host file with SECRET."""
    folder = tmp_path_factory.mktemp("runner-cwd")
    secret = folder.parent / "secret.h"
    secret.write_text(f"{SECRET} = not C++;\n")
    (folder / "evil.h").symlink_to(secret)
    return folder


@pytest.fixture(scope="module")
def client(planted):
    from cudalens.runner_client import RunnerClient, RunnerUnavailable
    from gpu_runner.service.local import LocalRunner, LocalRunnerError

    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(planted)  # the service process starts in the folder with the link
        try:
            local = LocalRunner(start_timeout_s=180).start()
        except LocalRunnerError as exc:
            pytest.skip(f"the runner service did not start: {exc}")
    try:
        try:
            c = RunnerClient(local.url, token=local.token, start_timeout_s=180)
        except RunnerUnavailable as exc:
            pytest.skip(str(exc))
        with c:
            yield c
    finally:
        local.close()


def test_refused_includes_are_compile_failures_naming_the_line(client):
    attacks = {
        "passwd": (f'#include "/etc/passwd"\n{KERNEL}', 1, '#include "/etc/passwd"'),
        "hostname": (f"// x\n#include </etc/hostname>\n{KERNEL}", 2, "#include </etc/hostname>"),
        "dotdot": (f'#include "../../../../../../etc/passwd"\n{KERNEL}', 1,
                   '#include "../../../../../../etc/passwd"'),
    }
    reports = client.compile([_variant(k, src) for k, (src, _, _) in attacks.items()])
    for report, (label, (_src, line, spelling)) in zip(reports, attacks.items()):
        assert report.variant == label and not report.ok
        assert f"kernel.cu({line}): error: {spelling}: refused: " in report.log, report.log
        assert PASSWD_LINE not in report.log


def test_include_path_options_are_refused(client):
    [report] = client.compile([_variant("opt", f"#include <passwd>\n{KERNEL}", ["-I/etc"])])
    assert not report.ok
    assert report.log.startswith("nvcc option '-I/etc' is not accepted by the runner")
    assert PASSWD_LINE not in report.log


def test_a_planted_link_is_not_found_and_toolkit_headers_are(client, planted):
    assert (planted / "evil.h").read_text().startswith(SECRET)
    evil, fp16 = client.compile([
        _variant("evil", f'#include "evil.h"\n{KERNEL}'),
        _variant("fp16", f"#include <cuda_fp16.h>\n{KERNEL}")])
    assert not evil.ok and "evil.h" in evil.log and SECRET not in evil.log, evil.log
    assert fp16.ok, fp16.log


def test_an_evaluation_goes_on_past_a_refused_candidate(client):
    base = variant("baseline")  # service_fakes.SAXPY, in place: y = a * x + y
    bad = Variant("bad", '#include "/etc/passwd"\n' + SAXPY, "saxpy", base.launches)
    ev = client.evaluate(problem(), base, [bad, variant("good")], repetitions=5)
    refused, ok = ev.candidates
    assert refused.verdict.status == "compile_error"
    assert refused.verdict.reason.startswith(
        'bad did not compile: kernel.cu(1): error: #include "/etc/passwd": refused: an absolute '
        "path"), refused.verdict.reason
    assert PASSWD_LINE not in refused.compile.log
    assert ok.verdict.status == "passed", ok.verdict.reason
