"""A live runner process without a GPU, for end-to-end tests of the editor side.

``python tests/data/runner/fake_gpu_service.py --port-file F --token T --ncu NCU`` serves the
real runner application (``gpu_runner.service.app.create_app``: the same routes, auth, job
store and OpenAPI schema as ``cudalens runner``) over HTTP on 127.0.0.1, on a free port that
it writes to ``F`` once it listens. Its GPU pool supervises real spawned worker processes
whose backend is ``service_fakes.FakeBackend`` (verdicts steered by markers in a variant's
source: ``@syntax``, ``@mismatch``, ...; a passing candidate is timed at half the baseline's
median), or another backend named by ``--backend``: ``model`` (the deterministic model
runner's ``ModelBackend``, ``tests/data/lsp/model_runner.py``: modelled times, NOT
measurements), or ``MODULE:NAME`` of a module in tests/ (``adversarial_sim:
SimulatedAdversarialBackend``: the adversarial suite's verdicts). ``POST /v1/profile`` runs
``gpu_runner.profile.profile_variant`` with the executable ``NCU`` standing in for Nsight
Compute, and ``POST /v1/sanitize`` runs ``gpu_runner.sanitize.sanitize_variant`` with
``--sanitizer`` (default: tests/data/runner/fake_compute_sanitizer.py) standing in for
compute-sanitizer. It stops on SIGTERM or when its stdin closes.
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(TESTS.parent), str(TESTS.parent / "server"), str(TESTS),
                str(TESTS / "data" / "lsp")]


# Short names for the backends most tests use.
ALIASES = {"fake": "service_fakes:FakeBackend", "model": "model_runner:ModelBackend"}


def main() -> None:
    import uvicorn

    from gpu_runner import profile as gp
    from gpu_runner import sanitize as gs
    from gpu_runner.service.app import create_app
    from gpu_runner.service.serve import bind
    from gpu_runner.workers.limits import Limits
    from gpu_runner.workers.pool import GpuPool, PoolConfig
    import importlib

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True, type=Path)
    parser.add_argument("--token", required=True)
    parser.add_argument("--ncu", required=True, help="executable standing in for ncu")
    parser.add_argument("--sanitizer", default=str(Path(__file__).with_name(
        "fake_compute_sanitizer.py")), help="executable standing in for compute-sanitizer")
    parser.add_argument("--backend", default="fake",
                        help="fake (service_fakes.FakeBackend: markers), model "
                             "(model_runner.ModelBackend), or MODULE:NAME of a module in tests/")
    parser.add_argument("--split", action="store_true",
                        help="split every evaluation over the backend's GPUs (cudalens runner "
                             "--split)")
    args = parser.parse_args()
    module, _, name = ALIASES.get(args.backend, args.backend).partition(":")
    backend = getattr(importlib.import_module(module), name)

    limits = Limits(startup_s=30, stop_s=2, first_kernel_timeout_s=2.0,
                    kernel_timeout_floor_s=2.0, silence_grace_s=5.0)
    pool = GpuPool(PoolConfig(factory=backend, limits=limits, precompile_threads=0,
                              split=args.split,
                              profile_fn=functools.partial(gp.profile_variant, ncu=args.ncu),
                              sanitize_fn=functools.partial(gs.sanitize_variant,
                                                            sanitizer=args.sanitizer)))
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(pool, token=args.token),
                                           log_level="warning"))

    def stop_when_stdin_closes() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
    args.port_file.write_text(str(sock.getsockname()[1]), encoding="utf-8")
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
