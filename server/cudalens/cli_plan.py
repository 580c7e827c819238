"""``cudalens plan FILE [--kernel NAME] [--json PATH]``: what the built-in search would time for
a kernel, without a GPU (``cudalens.engine.plan``): the candidates in search order, the
first batch marked (each with the passes' explanation), and every pass that does not apply
with its reason and line.

Exit statuses as the other commands: 0 with a plan (even one with no candidates), 2 when
FILE, the kernel, its spec or the --json path cannot be used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import click

from cudalens.errors import CudalensError
from cudalens.engine.plan import Plan


def _launch_text(c) -> str:
    shared = "" if c.launch.shared in ("", "0") else f", shared {c.launch.shared}"
    return (f"block ({', '.join(c.launch.block)}), grid ({', '.join(c.launch.grid)})"
            f"{shared}")


def describe(plan: Plan, file: Path) -> list[str]:
    """The lines ``cudalens plan`` prints for ``plan`` of the kernel in ``file``."""
    lines = [f"plan for {plan.kernel} in {file} (no GPU used): {len(plan.candidates)} "
             f"candidate(s), {plan.batch} per runner call"]
    if plan.candidates:
        width = max(len(c.label) for c in plan.candidates)
        for i, c in enumerate(plan.candidates, 1):
            mark = "*" if c.first_batch else " "
            lines.append(f" {mark}{i:3d}. {c.label:<{width}}  passes: {', '.join(c.passes)};  "
                         f"{_launch_text(c)}")
            if c.first_batch and c.explanation:
                lines.append(f"        why: {c.explanation}")
        lines.append(f"  * = the first batch ({len(plan.first_batch)} candidates), sent before "
                     f"anything is measured; later batches depend on the measurements")
    else:
        lines.append("  no pass applies: the search would time nothing")
    if plan.not_applied:
        lines.append("passes that do not apply:")
        width = max(len(n.pass_name) for n in plan.not_applied)
        for n in plan.not_applied:
            where = f"{file}:{n.line}" + (" (the kernel)" if n.at_kernel else "")
            lines.append(f"  {n.pass_name:<{width}}  {where}: {n.reason}")
    for note in plan.notes[1:]:
        lines.append(f"note: {note}")
    return lines


@click.command("plan")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--kernel", "kernel_name", help="Kernel to plan for (needed when FILE holds several).")
@click.option("--seed", default=0, show_default=True, help="Seed of the candidate search.")
@click.option("--batch", default=8, show_default=True, type=click.IntRange(1, 1000),
              help="Candidates per runner call (as optimize sends them).")
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the plan as JSON to this path (-: print only the JSON, on "
                   "standard output).")
def _plan_command(file: Path, kernel_name: Optional[str], seed: int, batch: int,
                  json_path: Optional[Path]) -> None:
    """List, without a GPU, the candidates the built-in search would time for a kernel of FILE
    (label, passes, parameters, launch; the first batch marked) and, for every pass that does
    not apply, why and at which line."""
    from rich.console import Console
    from rich.markup import escape

    from cudalens.cli_exit import _fail, _unwritable
    from cudalens.engine.plan import plan_for_target
    from cudalens.spec.parser import spec_path_for
    from cudalens.target import first_parse_error, load_target, read_source, select_kernel
    from cudalens.textfile import printable

    err = Console(stderr=True)
    to_stdout = json_path is not None and str(json_path) == "-"
    if json_path is not None and not to_stdout:
        problem = _unwritable(json_path)
        ours = {file.absolute().resolve(), spec_path_for(file).absolute().resolve()}
        if json_path.absolute().resolve() in ours:
            problem = "it is the kernel's source or spec file, which the JSON would replace"
        if problem:
            _fail(err, f"--json {json_path}: cannot write there ({problem})")
    try:
        text, source = read_source(file, "plan", kernel_name)  # a parse error first: the
        kernel = select_kernel(source, kernel_name, "plan")  # spec is drafted from the tree
        inside = first_parse_error(source, kernel)
        anywhere = inside or first_parse_error(source)
        if anywhere is not None:
            where = f"{file}:{anywhere.start.line + 1}:{anywhere.start.column + 1}"
            check = f"cudalens check {file} shows the compiler's errors"
            if inside is not None:
                _fail(err, f"{where}: the file does not parse as C++ from here, inside kernel "
                           f"{kernel.qualified_name} (lines {kernel.range.start.line + 1}-"
                           f"{kernel.range.end.line + 1}): a plan from a guessed syntax tree "
                           f"would rewrite guessed code; fix the syntax first ({check})")
            err.print(escape(f"warning: {where}: the file does not parse as C++ from here "
                             f"(outside kernel {kernel.qualified_name}); the plan may be wrong "
                             f"({check})"), highlight=False, soft_wrap=True)
        target = load_target(file, kernel_name, read=(text, source), command="plan")  # read once
    except CudalensError as exc:
        _fail(err, str(exc))
    plan = plan_for_target(target, seed=seed, batch=batch)
    if to_stdout:  # --json -: the JSON alone on standard output, for a pipe
        click.echo(json.dumps(plan.record(), indent=2))
        return
    for line in describe(plan, file):  # a quoted byte that is not UTF-8 as \xHH (textfile)
        click.echo(printable(line))
    if json_path is not None:
        try:
            json_path.absolute().parent.mkdir(parents=True, exist_ok=True)
            json_path.write_text(json.dumps(plan.record(), indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            _fail(err, f"--json {json_path}: the plan could not be written ({exc})")


def register(main_group: click.Group) -> None:
    """Adds ``plan`` to the ``cudalens`` command group."""
    main_group.add_command(_plan_command)
