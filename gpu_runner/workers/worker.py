"""The worker process: owns one backend (one GPU) and runs the tasks the supervisor sends.

``worker_main`` is the ``multiprocessing`` target (start method ``spawn``, so the child has
no CUDA state inherited from anyone). It answers ``Ready``/``Unavailable``/``StartFailed``
once, then for each task streams ``Progress`` lines and ends with ``Done`` or ``TaskFailed``.

A task that leaves the GPU wedged (a kernel fault or a kernel that never finished, see
``gpu_runner.session``) ends the process right after its answer, with ``os._exit`` and without
closing the CUDA context: closing waits for a hung kernel, possibly forever. The supervisor
starts a fresh worker. When the parent goes away (the pipe closes) the worker exits too.
"""

from __future__ import annotations

import os
import traceback

from gpu_runner.workers.backend import WorkerConfig
from gpu_runner.workers.protocol import (CompileTask, Done, EvaluateTask, Progress, Ready,
                                         StartFailed, Stop, TaskFailed, Unavailable)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def worker_main(conn, config: WorkerConfig) -> None:
    """Serve tasks on ``conn`` (a ``multiprocessing.connection.Connection``) until ``Stop`` or
    until the parent closes the pipe."""
    from gpu_runner.session import NoGpuError  # noqa: PLC0415 (no pycuda import)

    try:
        backend = config.make_backend()
        ready = Ready(pid=os.getpid(), device_index=config.device_index,
                      device_count=backend.device_count(), info=backend.device_info())
    except NoGpuError as exc:
        conn.send(Unavailable(str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
        conn.send(StartFailed(f"the GPU worker for device {config.device_index} did not start: "
                              f"{_describe(exc)}"))
        return
    conn.send(ready)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break  # the supervisor is gone
        if isinstance(task, Stop):
            break
        answer = _run(backend, task, conn)
        conn.send(answer)
        if answer.wedged:
            conn.close()
            os._exit(0)  # see the module doc: never close a wedged context
    backend.close()


def _run(backend, task, conn):
    def progress(event) -> None:
        conn.send(Progress(event))

    try:
        if isinstance(task, EvaluateTask):
            value = backend.evaluate(task, progress)
        elif isinstance(task, CompileTask):
            value = backend.compile(list(task.variants))
        else:
            return TaskFailed(f"unknown task {type(task).__name__}; expected EvaluateTask, "
                              f"CompileTask or Stop", "bad_request", backend.wedged())
    except ValueError as exc:
        return TaskFailed(str(exc), "bad_request", backend.wedged())
    except Exception as exc:  # noqa: BLE001 - reported, with where it came from
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return TaskFailed(f"{_describe(exc)} (at {os.path.basename(where.filename)}:"
                          f"{where.lineno})", "error", backend.wedged())
    return Done(value, backend.wedged())
