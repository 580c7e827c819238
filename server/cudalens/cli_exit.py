"""The command line's exit statuses and its two ways out shared by every command module
(``cli``, ``cli_capture``, ``cli_plan``, ``cli_report``): an error message with a status
(``_fail``) and why a path cannot be written (``_unwritable``). Apart from ``cli`` so that
the command modules it registers do not import it back (docs/architecture.md, "No cycles").
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from cudalens.textfile import printable

# Exit codes: 0 success, 1 the command ran and found problems (compile errors; with check
# --gpu, compute-sanitizer's findings), 2 usage or input errors, 3 no GPU runner available
# (check --gpu: or no compute-sanitizer report could be made), 4 optimize refused the original
# (compute-sanitizer found a race or an invalid access in it; --no-sanitize skips the check).
EXIT_FOUND_PROBLEMS = 1
EXIT_INPUT = 2
EXIT_NO_GPU = 3
EXIT_ORIGINAL_UNSAFE = 4
EXIT_NO_NVCC = 3  # check: nvcc cannot be run or ran past its timeout (as optimize without a GPU)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C


def _unwritable(path: Path) -> str:
    """Why ``path`` cannot be written, or "" when it can. Nothing is left behind: where its
    folder exists, a temporary file is made in it and removed again; where it does not, a
    temporary folder is made and removed in the nearest existing folder above (the missing
    folders are made only when the results are written)."""
    if path.is_dir():
        return "it is a directory"
    if path.exists() and not os.access(path, os.W_OK):
        return "permission denied"
    folder = path.absolute().parent
    if folder.is_dir():
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".cudalens-probe-"):
                pass
        except OSError as exc:
            return exc.strerror or str(exc)
        return ""
    above = folder
    while not above.exists():
        above = above.parent
    if not above.is_dir():
        return f"{above} is not a directory"
    try:  # a folder made and removed again: whether the missing folders can be made there
        os.rmdir(tempfile.mkdtemp(dir=above, prefix=".cudalens-probe-"))
    except OSError as exc:
        return f"cannot create folders in {above} ({exc.strerror or exc})"
    return ""


def _fail(console: Console, message: str, code: int = EXIT_INPUT) -> None:
    # A message quoting a file that is not UTF-8 shows its bytes as \xHH (``textfile``).
    console.print(f"[bold red]error:[/bold red] {escape(printable(message))}", highlight=False,
                  soft_wrap=True)
    sys.exit(code)
