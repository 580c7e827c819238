"""The one place the editor side reaches the GPU runner: HTTP+JSON to a runner service.

The runner's URL comes from the ``url`` argument or ``CUDALENS_RUNNER_URL``, its token from
``token`` or ``CUDALENS_RUNNER_TOKEN``. Without a URL the client starts a runner itself, as a
child process on 127.0.0.1 with a free port and a fresh token
(``gpu_runner.service.local.LocalRunner``), and stops it on ``close()`` (also at interpreter
exit, and the child stops by itself when this process goes away). Bodies are the runner's
contract data classes as JSON in the service's wire encoding, both ways (``schema.encode`` and
``schema.decode``: NaN and infinities as strings, integers exact); nothing here imports pycuda.

Errors: ``RunnerUnavailable`` when no runner can be used (no GPU there: the runner's own
message; unreachable; token refused); ``RunnerError`` (a ``CudalensError``) when the runner
refuses a request or fails an evaluation; ``ProfileUnavailable`` (a ``RunnerError``) from
``profile`` when the runner answers that it cannot profile (``try_profile`` returns that
answer instead of raising); ``sanitize`` returns a ``SanitizeAnswer`` either way.
"""

from __future__ import annotations

import os
import time
import weakref
from typing import Any, Callable, Optional, Sequence

import httpx
from pydantic import ValidationError

from cudalens.engine.runner import ProfileAnswer, SanitizeAnswer
from cudalens.errors import CudalensError
from gpu_runner.events import RunnerEvent
from gpu_runner.ncu_csv import Profile
from gpu_runner.problem import Problem, Variant
from gpu_runner.report import CompileReport, DeviceInfo, Evaluation
from gpu_runner.sanitize import SanitizeReport
from gpu_runner.service.local import LocalRunner, LocalRunnerError
from gpu_runner.service.schema import API_PREFIX, decode, encode

ENV_URL = "CUDALENS_RUNNER_URL"
ENV_TOKEN = "CUDALENS_RUNNER_TOKEN"


class RunnerUnavailable(CudalensError):
    """No GPU runner can be used; the message says what is missing and what is needed."""


class RunnerError(CudalensError):
    """The runner refused a request or could not finish an evaluation; the message says why."""


class ProfileUnavailable(RunnerError):
    """The runner cannot profile (no GPU, no Nsight Compute, no permission for the GPU's
    performance counters, ...); ``kind`` is the runner's code (``ProfileResponse.kind``) and
    the message its reason."""

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def _close(http: httpx.Client, local: Optional[LocalRunner]) -> None:
    http.close()
    if local is not None:
        local.close()


class RunnerClient:
    """Evaluates variants of a kernel on a GPU runner's device ``device_index``: the HTTP
    ``cudalens.engine.runner.Runner`` (it can profile and sanitize; the service says when its
    machine cannot, in the answer).

    Use as a context manager or call ``close()``. ``start_timeout_s`` bounds starting a local
    runner and waiting for its GPU workers; ``request_timeout_s`` any other request;
    ``poll_interval_s`` the wait between job status requests.

    Raises:
        RunnerUnavailable: no runner can be used here (see the module doc).
    """

    can_profile = True
    can_sanitize = True
    provenance = ""  # the store's default: "measured by {where} on {device}"

    def __init__(self, url: Optional[str] = None, *, token: Optional[str] = None,
                 device_index: int = 0, start_timeout_s: float = 180.0,
                 request_timeout_s: float = 60.0, poll_interval_s: float = 0.25):
        url = url or os.environ.get(ENV_URL) or None
        token = token if token is not None else (os.environ.get(ENV_TOKEN) or None)
        self.device_index = device_index
        self.poll_interval_s = poll_interval_s
        self.start_timeout_s = start_timeout_s
        self.local: Optional[LocalRunner] = None
        if url is None:
            try:
                self.local = LocalRunner(start_timeout_s=start_timeout_s).start()
            except LocalRunnerError as exc:
                raise RunnerUnavailable(f"could not start a local GPU runner: {exc}") from None
            url, token = self.local.url, self.local.token
        self.url = url.rstrip("/")
        self.where = "the local GPU runner" if self.local else f"the GPU runner at {self.url}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=request_timeout_s)
        self._finalizer = weakref.finalize(self, _close, self._http, self.local)
        try:
            if self.local is not None:
                self._wait_until_listening()
            self._info = self._device_info()
        except BaseException:
            self.close()
            raise

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection and stop the local runner, if this client started one."""
        self._finalizer()

    def __enter__(self) -> "RunnerClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- HTTP --------------------------------------------------------------------------------

    def _request(self, method: str, path: str, *, timeout: Optional[float] = None,
                 body: Any = None, **kw) -> Any:
        """The JSON body of a successful response. ``body``: the request's body (contract data
        classes in dicts and lists), sent in the wire encoding. Raises ``RunnerUnavailable``
        (unreachable, 401, 503) or ``RunnerError`` (any other error status, or a body that is
        not JSON)."""
        extra = {"timeout": timeout} if timeout is not None else {}
        if body is not None:
            extra["content"] = encode(body)
            extra["headers"] = {"Content-Type": "application/json"}
        try:
            resp = self._http.request(method, f"{API_PREFIX}{path}", **kw, **extra)
        except httpx.TransportError as exc:
            raise RunnerUnavailable(f"cannot reach {self.where}: {exc}") from None
        try:
            body = resp.json()
        except ValueError:
            body = None
        if resp.status_code < 400 and body is not None:
            return body
        message = body.get("message", "") if isinstance(body, dict) else resp.text[:500]
        code = body.get("error", "") if isinstance(body, dict) else ""
        if resp.status_code == 401:
            raise RunnerUnavailable(f"{self.where} refused the request: {message} (set "
                                    f"{ENV_TOKEN} to the runner's token)")
        if resp.status_code == 503:
            raise RunnerUnavailable(message or f"{self.where} is unavailable (503)")
        raise RunnerError(f"{self.where} refused {method} {path}: {resp.status_code} "
                          f"{code}: {message}".rstrip(": "))

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            try:
                self._request("GET", "/health")
                return
            except RunnerUnavailable:
                if time.monotonic() > deadline or not self.local.alive():
                    raise RunnerUnavailable(f"{self.where} did not answer: "
                                            f"{self.local.output_tail(5)}") from None
                time.sleep(0.05)

    def _device_info(self) -> DeviceInfo:
        try:
            entry = self._request("GET", f"/devices/{self.device_index}",
                                  timeout=self.start_timeout_s)
        except RunnerError as exc:
            raise RunnerUnavailable(str(exc)) from None
        return self._decode(DeviceInfo, entry.get("info"))

    def _decode(self, kind, data):
        try:
            return decode(kind, data)
        except ValidationError as exc:
            name = getattr(kind, "__name__", str(kind))
            raise RunnerError(f"{self.where} sent a {name} this client cannot read: "
                              f"{exc}") from None

    # -- the API -----------------------------------------------------------------------------

    def device_info(self) -> DeviceInfo:
        """The facts of the runner's device ``device_index`` (measured when its worker started)."""
        return self._info

    def compile(self, variants: Sequence[Variant]) -> list[CompileReport]:
        """Each variant's resource usage (registers, shared and local memory) or compile log."""
        body = self._request("POST", "/compile", timeout=900.0,
                             body={"variants": list(variants), "device": self.device_index})
        return [self._decode(CompileReport, r) for r in body["reports"]]

    def evaluate(self, problem: Problem, baseline: Variant, candidates: Sequence[Variant], *,
                 repetitions: int = 50, warmup: Optional[int] = None,
                 time_budget_s: Optional[float] = None,
                 on_event: Optional[Callable[[object], None]] = None) -> Evaluation:
        """Verify and time ``candidates`` against ``baseline`` on ``problem`` (see
        ``gpu_runner.runner.Runner.evaluate``), calling ``on_event`` with the runner's
        events (``gpu_runner.events``, decoded from the job status), in order. Interrupting
        (Ctrl-C), or an exception raised by ``on_event``, cancels the job on the runner.

        Raises ``RunnerUnavailable`` and ``RunnerError`` (request refused, evaluation failed or
        cancelled on the runner)."""
        body: dict[str, Any] = {"problem": problem, "baseline": baseline,
                                "candidates": list(candidates),
                                "repetitions": repetitions, "device": self.device_index}
        if warmup is not None:
            body["warmup"] = warmup
        if time_budget_s is not None:
            body["time_budget_s"] = time_budget_s
        job = self._request("POST", "/evaluate", body=body)["id"]
        try:
            return self._follow(job, on_event)
        except BaseException as exc:
            if not isinstance(exc, (RunnerError, RunnerUnavailable)):
                try:
                    self._request("DELETE", f"/jobs/{job}", timeout=5.0)
                except (RunnerError, RunnerUnavailable):
                    pass
            raise

    def _follow(self, job: str, on_event) -> Evaluation:
        since = 0
        while True:
            status = self._request("GET", f"/jobs/{job}", params={"since": since})
            for event in self._decode(list[RunnerEvent], status.get("events", [])):
                if on_event is not None:
                    on_event(event)
            since = status["progress_next"]
            state = status["state"]
            if state == "done":
                return self._decode(Evaluation, status["result"])
            if state == "failed":
                raise RunnerError(f"{self.where} could not finish the evaluation: "
                                  f"{status['error']}")
            if state == "cancelled":
                raise RunnerError(f"the evaluation was cancelled on {self.where}")
            time.sleep(self.poll_interval_s)

    def try_profile(self, problem: Problem, variant: Variant, *,
                    timeout_s: float = 180.0) -> ProfileAnswer:
        """An Nsight Compute profile of one launch of ``variant`` (verified before, by an
        evaluation) on ``problem``'s timed case, or None with the runner's reason (no GPU,
        ncu missing, counters not permitted, timeout, ...). ``timeout_s`` bounds the profile on
        the runner; this waits up to 10 more minutes for the GPU's earlier work.

        Raises ``RunnerUnavailable`` (unreachable, busy) and ``RunnerError`` (request refused,
        or an answer this client cannot read)."""
        body = self._request("POST", "/profile", timeout=timeout_s + 660.0,
                             body={"problem": problem, "variant": variant,
                                   "timeout_s": timeout_s, "device": self.device_index})
        if not isinstance(body, dict) or not isinstance(body.get("available"), bool):
            raise RunnerError(f"{self.where} answered POST /profile with no 'available' field: "
                              f"{str(body)[:200]}")
        if not body["available"]:
            return ProfileAnswer(None, str(body.get("kind") or "failed"),
                                 str(body.get("reason") or "no reason given"))
        return ProfileAnswer(self._decode(Profile, body.get("profile")))

    def profile(self, problem: Problem, variant: Variant, *,
                timeout_s: float = 180.0) -> Profile:
        """``try_profile``'s profile. Raises ``ProfileUnavailable`` with the runner's reason
        where there is none (so a caller that only wants profiles can catch one error), and
        what ``try_profile`` raises."""
        answer = self.try_profile(problem, variant, timeout_s=timeout_s)
        if answer.profile is None:
            raise ProfileUnavailable(f"no profile of {variant.label}: {answer.reason}",
                                     answer.kind)
        return answer.profile

    def sanitize(self, problem: Problem, variant: Variant, *,
                 tools: Optional[Sequence[str]] = None,
                 timeout_s: float = 120.0) -> SanitizeAnswer:
        """compute-sanitizer's ``tools`` (None: memcheck, racecheck, initcheck, synccheck) on
        one launch of ``variant`` on ``problem``'s ragged case, or None with the runner's
        reason (no GPU, compute-sanitizer missing, timeout, the variant did not compile or
        launch). ``timeout_s`` bounds each tool's run on the runner; this waits up to 10 more
        minutes for the GPU's earlier work.

        Raises ``RunnerUnavailable`` (unreachable, busy) and ``RunnerError`` (request refused,
        or an answer this client cannot read)."""
        body: dict[str, Any] = {"problem": problem, "variant": variant,
                                "timeout_s": timeout_s, "device": self.device_index}
        if tools is not None:
            body["tools"] = list(tools)
        count = len(tools) if tools is not None else 4
        answer = self._request("POST", "/sanitize", timeout=timeout_s * count + 660.0,
                               body=body)
        if not isinstance(answer, dict) or not isinstance(answer.get("available"), bool):
            raise RunnerError(f"{self.where} answered POST /sanitize with no 'available' "
                              f"field: {str(answer)[:200]}")
        if not answer["available"]:
            return SanitizeAnswer(None, str(answer.get("kind") or "failed"),
                                  str(answer.get("reason") or "no reason given"))
        return SanitizeAnswer(self._decode(SanitizeReport, answer.get("report")))
