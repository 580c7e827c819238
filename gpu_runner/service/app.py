"""The runner's HTTP API (FastAPI). Paths are under ``/v1``; the OpenAPI schema is at
``/openapi.json`` and browsable at ``/docs``.

=========================  ==================================================================
``GET /v1/health``         status of the GPU workers, at once (``starting``, ``ready``, ...)
``GET /v1/devices``        every served GPU's facts (waits while the workers start)
``GET /v1/devices/{i}``    one GPU's facts; 404 for a device not served
``POST /v1/compile``       compile variants on a GPU: resource usage or the compiler's errors
``POST /v1/evaluate``      queue an evaluation; 202 with the job's id
``POST /v1/profile``       Nsight Compute profile of one variant (waits for it; on the GPU's
                           queue, so never during a timing); 200 ``available: false`` with
                           the reason where no profile can be taken (no GPU, no ncu, no
                           permission for the counters, ...)
``POST /v1/sanitize``      compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on one
                           launch of a variant: its findings at their source lines; on the
                           GPU's queue like a profile; 200 ``available: false`` with the
                           reason where it cannot run (no GPU, no compute-sanitizer, ...)
``GET /v1/jobs/{id}``      the job's state, events (typed and as text) from ``?since=N``, result
``DELETE /v1/jobs/{id}``   cancel (also ``POST /v1/jobs/{id}/cancel``); 404 for unknown ids
=========================  ==================================================================

Bodies are JSON in ``schema``'s wire encoding (NaN and infinities as strings, integers of any
size exact), responses written by ``WireResponse``. Errors are ``ErrorBody`` JSON: 401 (token), 404, 413 (body too large), 422 (malformed or
inconsistent request: the message says where), 503 (no GPU here: the message says what is
missing; or the workers failed to start).
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import Optional

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpu_runner.service.auth import TokenMiddleware
from gpu_runner.service.body_limit import DEFAULT_MAX_BODY_BYTES, BodyLimitMiddleware
from gpu_runner.service.jobs import Job, JobStore
from gpu_runner.profile import KINDS as PROFILE_KINDS, ProfileError
from gpu_runner.sanitize import KINDS as SANITIZE_KINDS, SanitizeError
from gpu_runner.service.schema import (API_PREFIX, CompileRequest, CompileResponse,
                                       DeviceEntry, DevicesResponse, ErrorBody, EvaluateRequest,
                                       Health, JobCreated, JobStatus, ProfileRequest,
                                       ProfileResponse, SanitizeRequest, SanitizeResponse,
                                       encode)
from gpu_runner.service.validate import compile_problems, evaluate_problems, profile_problems
from gpu_runner.workers.pool import DeviceNotFound, GpuPool
from gpu_runner.workers.protocol import EvaluateSpec
from gpu_runner.workers.supervisor import SupervisorError

log = logging.getLogger("cudalens.runner")

TITLE = "cudalens GPU runner"
VERSION = "1"


class ApiError(Exception):
    """An error response: HTTP ``status``, ``ErrorBody.error`` code and message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class WireResponse(JSONResponse):
    """A JSON response in the wire encoding (``schema.encode``), whatever FastAPI hands it:
    a body model or its dump, whose floats may be NaN or infinite (``JSONResponse`` would
    raise for those). The app's default response class, so FastAPI's own fast path, which
    wrote NaN as ``null`` here (tests/test_runner_wire.py), is not taken."""

    def render(self, content) -> bytes:
        return encode(content)


def _error(status: int, code: str, message: str, detail=None) -> JSONResponse:
    body = ErrorBody(error=code, message=message, detail=detail)
    return WireResponse(status_code=status, content=body.model_dump(exclude_none=True))


def _validation_message(errors) -> str:
    parts = []
    for e in errors[:5]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return "malformed request: " + "; ".join(parts) + more


ERRORS = {code: {"model": ErrorBody} for code in (401, 413, 422, 503)}


def create_app(pool: GpuPool, *, token: Optional[str] = None,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, jobs: Optional[JobStore] = None,
               ready_timeout_s: float = 150.0, compile_timeout_s: float = 900.0,
               profile_queue_s: float = 600.0) -> FastAPI:
    """The application serving ``pool``. The pool is started and closed with the app's
    lifespan. ``token``: required bearer token (None: none required; the bind policy is
    ``auth.check_bind``'s job). ``ready_timeout_s``: how long device requests wait for the
    workers to start; ``profile_queue_s``: how long a profile request waits for the GPU's
    earlier work, on top of its own ``timeout_s``."""
    jobs = jobs or JobStore()

    @asynccontextmanager
    async def lifespan(_app):
        pool.start()
        try:
            yield
        finally:
            for job in jobs.all():
                job.request_cancel()
            await run_in_threadpool(pool.close)

    app = FastAPI(title=TITLE, version=VERSION, lifespan=lifespan,
                  default_response_class=WireResponse,
                  description="Compiles, verifies and times CUDA kernels on this machine's GPUs. "
                              "See gpu_runner/service/app.py.")
    app.add_middleware(BodyLimitMiddleware, max_bytes=max_body_bytes)
    if token:
        app.add_middleware(TokenMiddleware, token=token)  # outermost: before the body is read
    app.state.pool, app.state.jobs = pool, jobs

    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError):
        return _error(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError):
        errors = jsonable_encoder(exc.errors())
        return _error(422, "invalid_request", _validation_message(errors), errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _error(exc.status_code, code, str(exc.detail))

    def need_gpu() -> None:
        status = pool.wait_ready(ready_timeout_s)
        if status == "ready":
            return
        if status == "unavailable":
            raise ApiError(503, "no_gpu", pool.message)
        if status == "starting":
            raise ApiError(503, "starting", f"the GPU workers did not finish starting within "
                                            f"{ready_timeout_s:g} s; try again")
        raise ApiError(503, "worker_failed", pool.message)

    def job_or_404(job_id: str) -> Job:
        job = jobs.get(job_id)
        if job is None:
            raise ApiError(404, "unknown_job", f"no job with id '{job_id}' (finished jobs are "
                                               f"kept for the last {jobs.keep_finished})")
        return job

    def entry(index: int) -> DeviceEntry:
        return DeviceEntry(index=index, info=pool.slots[index].supervisor.info)

    @app.get(f"{API_PREFIX}/health", response_model=Health, responses=ERRORS)
    def health() -> Health:
        return Health(status=pool.status, message=pool.message, devices=sorted(pool.slots))

    @app.get(f"{API_PREFIX}/devices", response_model=DevicesResponse, responses=ERRORS)
    def devices() -> DevicesResponse:
        need_gpu()
        return DevicesResponse(devices=[entry(i) for i in sorted(pool.slots)])

    @app.get(f"{API_PREFIX}/devices/{{index}}", response_model=DeviceEntry,
             responses={404: {"model": ErrorBody}, **ERRORS})
    def device(index: int) -> DeviceEntry:
        need_gpu()
        if index not in pool.slots:
            raise ApiError(404, "unknown_device", f"device {index} is not served by this runner "
                                                  f"(devices: {sorted(pool.slots)})")
        return entry(index)

    @app.post(f"{API_PREFIX}/compile", response_model=CompileResponse, responses=ERRORS)
    def compile_(req: CompileRequest) -> CompileResponse:
        bad = compile_problems(req.variants)
        if bad:
            raise ApiError(422, "invalid_request", "; ".join(bad))
        need_gpu()
        try:
            slot = pool.slot(req.device)
            reports = pool.compile(req.variants, slot.index, compile_timeout_s)
        except DeviceNotFound as exc:
            raise ApiError(422, "unknown_device", str(exc)) from None
        except TimeoutError as exc:
            raise ApiError(503, "busy", str(exc)) from None
        except SupervisorError as exc:
            raise ApiError(422 if exc.kind == "bad_request" else 500, exc.kind, str(exc)) from None
        return CompileResponse(device=slot.index, reports=reports)

    @app.post(f"{API_PREFIX}/profile", response_model=ProfileResponse, responses=ERRORS)
    def profile(req: ProfileRequest) -> ProfileResponse:
        bad = profile_problems(req.problem, req.variant)
        if bad:
            raise ApiError(422, "invalid_request", "; ".join(bad))
        if pool.wait_ready(ready_timeout_s) == "unavailable":
            return ProfileResponse(available=False, kind="no_gpu",
                                   reason=f"no GPU on this runner: {pool.message}")
        need_gpu()
        try:
            device = pool.slot(req.device).index
            device, found = pool.profile(req.problem, req.variant, device, req.timeout_s,
                                         profile_queue_s + req.timeout_s)
        except DeviceNotFound as exc:
            raise ApiError(422, "unknown_device", str(exc)) from None
        except TimeoutError as exc:
            raise ApiError(503, "busy", str(exc)) from None
        except ProfileError as exc:
            log.info("no profile of %s: %s", req.variant.label, exc)
            return ProfileResponse(available=False, device=device,
                                   kind=exc.kind if exc.kind in PROFILE_KINDS else "failed",
                                   reason=str(exc))
        return ProfileResponse(available=True, device=device, profile=found)

    @app.post(f"{API_PREFIX}/sanitize", response_model=SanitizeResponse, responses=ERRORS)
    def sanitize(req: SanitizeRequest) -> SanitizeResponse:
        bad = profile_problems(req.problem, req.variant)
        if bad:
            raise ApiError(422, "invalid_request", "; ".join(bad))
        if pool.wait_ready(ready_timeout_s) == "unavailable":
            return SanitizeResponse(available=False, kind="no_gpu",
                                    reason=f"no GPU on this runner: {pool.message}")
        need_gpu()
        tools = list(dict.fromkeys(req.tools))
        try:
            device = pool.slot(req.device).index
            device, report = pool.sanitize(req.problem, req.variant, device, req.timeout_s,
                                           profile_queue_s + req.timeout_s * len(tools), tools)
        except DeviceNotFound as exc:
            raise ApiError(422, "unknown_device", str(exc)) from None
        except TimeoutError as exc:
            raise ApiError(503, "busy", str(exc)) from None
        except SanitizeError as exc:
            log.info("no sanitizer report of %s: %s", req.variant.label, exc)
            return SanitizeResponse(available=False, device=device,
                                    kind=exc.kind if exc.kind in SANITIZE_KINDS else "failed",
                                    reason=str(exc))
        return SanitizeResponse(available=True, device=device, report=report)

    @app.post(f"{API_PREFIX}/evaluate", response_model=JobCreated, status_code=202,
              responses=ERRORS)
    def evaluate(req: EvaluateRequest) -> JobCreated:
        bad = evaluate_problems(req.problem, req.baseline, req.candidates)
        if bad:
            raise ApiError(422, "invalid_request", "; ".join(bad))
        need_gpu()
        spec = EvaluateSpec(problem=req.problem, baseline=req.baseline,
                            candidates=tuple(req.candidates), repetitions=req.repetitions,
                            warmup=req.warmup, time_budget_s=req.time_budget_s)
        devices = None
        if req.devices:
            devices = tuple(dict.fromkeys(([req.device] if req.device is not None else [])
                                          + req.devices))
        job = Job(spec, req.device, devices=devices)
        try:
            pool.slot(req.device)
            for d in devices or ():
                pool.slot(d)
            jobs.add(job)
            device_index = pool.submit(job)
        except DeviceNotFound as exc:
            raise ApiError(422, "unknown_device", str(exc)) from None
        return JobCreated(id=job.id, state=job.state, device=device_index,
                          url=f"{API_PREFIX}/jobs/{job.id}")

    @app.get(f"{API_PREFIX}/jobs/{{job_id}}", response_model=JobStatus,
             responses={404: {"model": ErrorBody}, **ERRORS})
    def job_status(job_id: str, since: int = Query(0, ge=0)) -> JobStatus:
        return job_or_404(job_id).status(since)

    def cancel(job_id: str) -> JobStatus:
        job = job_or_404(job_id)
        job.request_cancel()
        return job.status()

    for method in ("DELETE", "POST"):
        path = f"{API_PREFIX}/jobs/{{job_id}}" + ("/cancel" if method == "POST" else "")
        app.add_api_route(path, cancel, methods=[method], response_model=JobStatus,
                          responses={404: {"model": ErrorBody}, **ERRORS},
                          name=f"cancel_job_{method.lower()}", summary="Cancel a job")

    def openapi():
        if app.openapi_schema is None:
            schema = get_openapi(title=TITLE, version=VERSION, description=app.description,
                                 routes=app.routes)
            if token:
                schema.setdefault("components", {})["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer"}}
                schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi
    return app
