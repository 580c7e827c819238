"""``cudalens runner``: the command that serves this machine's GPUs over HTTP+JSON.

The same click command runs as ``python -m gpu_runner.service`` (how a client starts a local
runner) and is added to the ``cudalens`` group by ``cudalens.cli_runner.register``.
"""

from __future__ import annotations

import sys

import click

from gpu_runner.service.auth import MIN_TOKEN_CHARS
from gpu_runner.service.body_limit import DEFAULT_MAX_BODY_BYTES
from gpu_runner.service.serve import DEFAULT_PORT


def _devices(text):
    if not text:
        return None
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated device indices such as 0,1; found "
                                 f"{text!r}") from None
    if any(v < 0 for v in values):
        raise click.BadParameter(f"device indices must be >= 0; found {text!r}")
    return values


@click.command("runner", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but a loopback address needs --token.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--token", envvar="CUDALENS_RUNNER_TOKEN", show_envvar=True,
              help=f"Require 'Authorization: Bearer TOKEN' on every request; at least "
                   f"{MIN_TOKEN_CHARS} characters (python -c 'import secrets; "
                   f"print(secrets.token_urlsafe(32))' makes one). Prefer the environment "
                   f"variable: command lines are visible to other users.")
@click.option("--devices", callback=lambda _c, _p, v: _devices(v),
              help="Comma-separated CUDA device indices to serve (default: every visible GPU).")
@click.option("--split", is_flag=True,
              help="Split every evaluation that names no devices over all served GPUs (each "
                   "candidate timed against the baseline on its own GPU).")
@click.option("--ray", "ray_address", envvar="CUDALENS_RUNNER_RAY", show_envvar=True,
              help="Schedule evaluations on the GPUs of the Ray cluster at ADDRESS (auto, "
                   "ray://HOST:10001, or local to start one here), one actor per GPU; needs "
                   "pip install 'cudalens[ray]'.", metavar="ADDRESS")
@click.option("--max-body-bytes", default=DEFAULT_MAX_BODY_BYTES, show_default=True,
              type=click.IntRange(1024), help="Largest request body accepted (413 above).")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))
@click.option("--port-file", hidden=True, type=click.Path(dir_okay=False))
@click.option("--exit-with-parent", is_flag=True, hidden=True)
def runner_command(host, port, token, devices, split, ray_address, max_body_bytes, log_level,
                   port_file, exit_with_parent) -> None:
    """Serve this machine's GPUs over HTTP+JSON: device facts, compile, evaluate and jobs,
    one worker process per GPU. The OpenAPI schema is at /openapi.json."""
    from gpu_runner.service.auth import BindRefused  # noqa: PLC0415
    from gpu_runner.service.serve import ServeConfig, serve  # noqa: PLC0415
    from gpu_runner.workers.pool import PoolConfig  # noqa: PLC0415

    config = ServeConfig(host=host, port=port, token=token or None,
                         max_body_bytes=max_body_bytes, pool=PoolConfig(devices=devices, split=split,
                                                    ray_address=ray_address or None),
                         port_file=port_file, exit_with_parent=exit_with_parent,
                         log_level=log_level)
    try:
        serve(config)
    except BindRefused as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        click.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
