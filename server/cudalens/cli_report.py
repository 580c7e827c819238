"""``cudalens report RESULTS.json [-o PATH.html]``: the kernel report of a results record, and
``write_report``, which ``cudalens optimize --report`` uses too."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Optional

import click
from rich.console import Console

from cudalens.errors import CudalensError


def write_report(record: dict, out: Path, where: str, kernel: Optional[str] = None) -> None:
    """Writes the report page of ``record`` (a ``--json`` record or a recorded file) to ``out``,
    making its folder.

    Raises:
        ReportInputError: ``record`` is not a results record (``cudalens.report.data``).
        ChartUnavailable: matplotlib is not installed.
        OSError: ``out`` cannot be written.
    """
    from cudalens.report.data import from_record, pick_run
    from cudalens.report.page import report_html

    page = report_html(from_record(pick_run(record, kernel, where), where))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")


def _safe(name: str) -> str:
    """A kernel name (``ns::k<float, 256>``) as a plain file-name part (``ns_k_float_256``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "kernel"


def register(main: click.Group) -> None:
    from cudalens.cli_exit import EXIT_INPUT, _fail

    @main.command()
    @click.argument("results", type=click.Path(path_type=Path, dir_okay=False))
    @click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False),
                  help="Where to write the HTML (default: RESULTS's name with the suffix .html in "
                       "the current folder; with --kernel, the kernel's name is added).")
    @click.option("--kernel", "kernel_name",
                  help="The kernel's run, where RESULTS is a recorded file of several kernels.")
    def report(results: Path, output: Optional[Path], kernel_name: Optional[str]) -> None:
        """Write the kernel report of RESULTS (what 'cudalens optimize --json' writes, or a
        recorded benchmarks/results file) as one self-contained HTML file: a roofline chart for
        the GPU with the original and every verified candidate, the failed candidates with
        their verdicts, the candidates table with confidence intervals, the profile when there
        is one, and the search's history."""
        err = Console(stderr=True)
        # By default in the current folder, never beside a recorded results file in the
        # checkout, and one file per kernel (a second --kernel must not overwrite the first).
        out = output or Path(results.stem + (f"-{_safe(kernel_name)}" if kernel_name else "")
                             + ".html")
        if out.absolute().resolve() == results.absolute().resolve():
            _fail(err, f"-o {out}: it is the results file itself, which the report would "
                       f"replace")
        try:
            text = results.read_text(encoding="utf-8")
        except FileNotFoundError:
            _fail(err, f"{results}: no such file")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(err, f"{results}: cannot read it ({getattr(exc, 'strerror', None) or exc})")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            _fail(err, f"{results}: expected a JSON results record from 'cudalens optimize "
                       f"--json', found text that is not JSON (line {exc.lineno}, column "
                       f"{exc.colno}: {exc.msg})")
        try:
            write_report(data, out, str(results), kernel_name)
        except CudalensError as exc:
            _fail(err, str(exc), EXIT_INPUT)
        except OSError as exc:
            _fail(err, f"-o {out}: the report could not be written ({exc.strerror or exc})")
        click.echo(f"wrote {out}")
