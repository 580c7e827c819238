"""``cudalens lsp``: the language server on stdio, for any LSP client.

``register(main_group)`` adds the command to the ``cudalens`` click group (cli.py calls it).
Run as ``python -m cudalens.cli_lsp`` it starts the server without the rest of the CLI.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any, Callable, Optional

import click


def load_factory(spec: str) -> Callable[..., Any]:
    """The callable named by ``MODULE:ATTRIBUTE``.

    Raises:
        click.BadParameter: the text is not of that form, or the module or attribute cannot
            be loaded or is not callable.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:CALLABLE, found {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(f"cannot import {module_name!r}: {exc}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise click.BadParameter(f"{module_name!r} has no callable {attr!r}")
    return factory


@click.command("lsp")
@click.option("--stdio", is_flag=True, default=True, hidden=True,
              help="Talk LSP over stdin/stdout (the only transport; accepted for clients that "
                   "pass it).")
@click.option("--log-file", type=click.Path(dir_okay=False),
              help="Also write the server's log to this file.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="warning", show_default=True)
@click.option("--runner-factory", "runner_factory", metavar="MODULE:CALLABLE", hidden=True,
              help="For tests and demos: a callable taking the settings and returning the "
                   "runner client (device_info(), evaluate(...)).")
def lsp(stdio: bool, log_file: Optional[str], log_level: str,
        runner_factory: Optional[str]) -> None:
    """Start the cudalens language server on stdio (code lenses, code actions, diagnostics,
    inlay hints and hover for CUDA kernels)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(level=log_level.upper(), handlers=handlers,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level != "debug":  # pygls logs every message it sends at INFO
        logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLogger().level))
    from cudalens.lsp.server import build_server

    from cudalens.lsp import gc_tuning

    factory = load_factory(runner_factory) if runner_factory else None
    try:
        chosen = gc_tuning.apply()
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    logging.getLogger(__name__).info("garbage-collector thresholds %s", chosen)
    server = build_server(factory)
    server.start_io()
    # LSP: exit status 0 when ``shutdown`` came before ``exit`` (or before the input ended),
    # else 1; pygls's start_io swallows the SystemExit that carries it
    sys.exit(0 if server.protocol._shutdown else 1)


def register(main_group: click.Group) -> None:
    """Adds ``lsp`` to the ``cudalens`` command group."""
    main_group.add_command(lsp)


if __name__ == "__main__":
    lsp()
