"""``cudalens capture``: record a real launch of a kernel from the user's own program."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import click
from rich.console import Console
from rich.markup import escape

from cudalens.cli_exit import EXIT_FOUND_PROBLEMS, EXIT_INPUT, EXIT_INTERRUPTED, EXIT_NO_GPU


@click.command(context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False})
@click.option("--kernel", "kernels", multiple=True, metavar="NAME",
              help="Kernel to capture (repeatable; default: every kernel defined in the "
                   "workspace's .cu/.cuh files).")
@click.option("--launch", default=1, show_default=True, type=click.IntRange(1),
              help="Which launch of each kernel to record (1: the first).")
@click.option("--max-bytes", type=click.IntRange(1), default=None,
              help="Refuse a capture over this many bytes (before and after copies together), "
                   "before copying anything.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Folder for the captures (default: .cudalens/captures).")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def capture(kernels: tuple[str, ...], launch: int, max_bytes: Optional[int],
            out_dir: Optional[Path], command: tuple[str, ...]) -> None:
    """Run COMMAND (after --) and record a real launch of each named kernel: launch
    configuration, every parameter, and the device memory each pointer points into, before and
    after the launch. Each capture is a NumPy .npz file with a JSON manifest, for
    `cudalens optimize FILE --capture MANIFEST`."""
    from cudalens.capture.session import DEFAULT_DIR, NoCudaDriver, capture_program
    from cudalens.errors import CudalensError

    err = Console(stderr=True)
    console = Console()
    try:
        outcome = capture_program(list(command), list(kernels), launch=launch,
                                  max_bytes=max_bytes, out_dir=out_dir or DEFAULT_DIR)
    except NoCudaDriver as exc:  # nothing was run
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False,
                  soft_wrap=True)
        sys.exit(EXIT_NO_GPU)
    except CudalensError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False,
                  soft_wrap=True)
        sys.exit(EXIT_INPUT)
    except KeyboardInterrupt:  # the program got the same Ctrl-C
        err.print("[bold red]error:[/bold red] interrupted (Ctrl-C); nothing was saved",
                  highlight=False)
        sys.exit(EXIT_INTERRUPTED)
    for note in outcome.notes:
        err.print(escape(f"note: {note}"), highlight=False, soft_wrap=True)
    if outcome.program_failed:
        tail = "\n".join(f"  {line}" for line in outcome.stderr_tail) or "  (nothing)"
        err.print(escape(f"error: the program failed with exit status {outcome.status}; "
                         f"nothing was saved. The end of its stderr:\n{tail}"),
                  highlight=False, soft_wrap=True)
        sys.exit(EXIT_FOUND_PROBLEMS)
    for path in outcome.written:
        console.print(escape(f"captured: {path}"), highlight=False, soft_wrap=True)
    for m in outcome.missing:
        err.print(escape(f"error: kernel {m.kernel}: not captured: {m.reason}"),
                  highlight=False, soft_wrap=True)
    if outcome.missing or not outcome.written:
        sys.exit(EXIT_FOUND_PROBLEMS)


def load_replay_or_fail(err: Console, path: Path, target, only: bool, proposer: str):
    """``(target with the capture-bound spec, Replay)`` for ``optimize --capture``; prints the
    replay's notes; exits with status 2 on an unusable capture (nothing is run)."""
    from dataclasses import replace

    from cudalens.capture.replay import load_replay
    from cudalens.errors import CudalensError

    if proposer == "llm":
        err.print("[bold red]error:[/bold red] --capture works with the built-in search; "
                  "run without the LLM proposer (--proposer builtin)", highlight=False)
        sys.exit(EXIT_INPUT)
    try:
        replay = load_replay(path, target, only=only)
    except CudalensError as exc:
        err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", highlight=False,
                  soft_wrap=True)
        sys.exit(EXIT_INPUT)
    m = replay.capture.manifest
    err.print(escape(f"replaying {path}: launch {m.launch_index} of {m.kernel}, grid "
                     f"{tuple(m.grid)}, block {tuple(m.block)}, {m.shared_bytes} B shared"
                     + ("; captured case only" if only else "")), highlight=False,
              soft_wrap=True)
    for note in replay.notes:
        err.print(escape(f"note: {note}"), highlight=False, soft_wrap=True)
    return replace(target, spec=replay.spec), replay


def register(main_group: click.Group) -> None:
    """Add the ``capture`` command to the ``cudalens`` group."""
    main_group.add_command(capture, name="capture")
