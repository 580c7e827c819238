"""Binding and running the runner service with uvicorn."""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass, field
from typing import Optional

from gpu_runner.service.auth import check_bind
from gpu_runner.service.body_limit import DEFAULT_MAX_BODY_BYTES
from gpu_runner.workers.pool import PoolConfig

DEFAULT_PORT = 8765


@dataclass(frozen=True)
class ServeConfig:
    """``port`` 0 picks a free one; ``port_file``: where to write the bound port (for a parent
    process that asked for port 0); ``exit_with_parent``: stop when standard input closes (the
    parent that started this runner has gone)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: Optional[str] = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    pool: PoolConfig = field(default_factory=PoolConfig)
    port_file: Optional[str] = None
    exit_with_parent: bool = False
    log_level: str = "info"


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound to ``host``:``port``. Raises ``OSError``."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def _write_port(path: str, port: int) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{port}\n")
    os.replace(tmp, path)


def serve(config: ServeConfig) -> None:
    """Serve until SIGINT/SIGTERM (or, with ``exit_with_parent``, until stdin closes).

    Raises ``auth.BindRefused`` for a non-loopback host without a token and ``OSError`` when
    the address cannot be bound."""
    check_bind(config.host, config.token)
    import uvicorn  # noqa: PLC0415 (only the serving process needs it)

    from gpu_runner.service.app import create_app  # noqa: PLC0415
    from gpu_runner.workers.pool import GpuPool  # noqa: PLC0415

    sock = bind(config.host, config.port)
    port = sock.getsockname()[1]
    pool = GpuPool(config.pool)
    app = create_app(pool, token=config.token, max_body_bytes=config.max_body_bytes)
    server = uvicorn.Server(uvicorn.Config(app, log_level=config.log_level,
                                           access_log=config.log_level == "debug"))
    shown = f"[{config.host}]" if ":" in config.host else config.host  # an IPv6 address
    print(f"cudalens runner listening on http://{shown}:{port}"
          f"{' (token required)' if config.token else ''}", file=sys.stderr, flush=True)
    if config.port_file:
        _write_port(config.port_file, port)
    threading.Thread(target=_say_devices, args=(pool, config.pool.limits.startup_s + 5.0),
                     name="cudalens-device-report", daemon=True).start()
    if config.exit_with_parent:
        def watch() -> None:
            try:
                while sys.stdin.buffer.read(4096):
                    pass
            except (OSError, ValueError):
                pass
            server.should_exit = True

        threading.Thread(target=watch, name="cudalens-parent-watch", daemon=True).start()
    server.run(sockets=[sock])


def _say_devices(pool, wait_s: float) -> None:
    """Once the workers have started (at most ``wait_s``), one line on stderr: the GPUs that
    serve, or a warning that none can, with the reason (the service keeps running: its
    ``/v1/health`` says the same, and requests that need a GPU are answered 503)."""
    status = pool.wait_ready(wait_s)
    if status == "ready":
        names = [f"{i}: {slot.supervisor.info.name}" for i, slot in sorted(pool.slots.items())
                 if slot.supervisor.info is not None]
        print(f"cudalens runner: serving {len(names)} GPU(s) ({'; '.join(names)})",
              file=sys.stderr, flush=True)
    elif status == "starting":
        print(f"cudalens runner: warning: the GPU workers have not started after {wait_s:g} s",
              file=sys.stderr, flush=True)
    else:
        print(f"cudalens runner: warning: no GPU can be used ({status}): {pool.message} "
              f"Requests that need a GPU are answered 503; /v1/health says the same.",
              file=sys.stderr, flush=True)
