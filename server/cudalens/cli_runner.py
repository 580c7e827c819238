"""``cudalens runner``: serve this machine's GPUs to cudalens clients over HTTP+JSON.

The command itself lives with the runner (``gpu_runner.service.command``) so that
``python -m gpu_runner.service`` is the same command; ``register`` adds it to the CLI group.
"""

from __future__ import annotations

import click


def register(main_group: click.Group) -> None:
    """Add the ``runner`` command to ``main_group`` (the ``cudalens`` click group)."""
    from gpu_runner.service.command import runner_command  # noqa: PLC0415

    main_group.add_command(runner_command, name="runner")
