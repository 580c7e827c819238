"""The ``cudalens`` command line: optimize, spec and check, without an editor."""

from __future__ import annotations

import dataclasses
import os
import sys
import threading
from pathlib import Path
from typing import Optional, Sequence

import click
from rich.console import Console
from rich.markup import escape

from cudalens.cli_agent import agent_options
from cudalens.cli_exit import (
    EXIT_FOUND_PROBLEMS, EXIT_INTERRUPTED, EXIT_NO_GPU, EXIT_NO_NVCC, EXIT_ORIGINAL_UNSAFE,
    _fail, _unwritable,
)
from cudalens.errors import CudalensError
from cudalens.textfile import (TextFileError, has_bom, printable, read_text_file,
                               same_line_endings, to_bytes)
from gpu_runner.service.schema import encode

def _finite(param, value):
    """``value`` unless it is NaN (which compares false with every bound)."""
    if value is not None and value != value:
        raise click.BadParameter(f"expected a number of seconds, found {value}", param=param)
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cudalens")
def main() -> None:
    """cudalens: measured, verified CUDA kernel optimization."""


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--kernel", "kernel_name", help="Kernel to optimize (needed when FILE holds several); a template instance as 'NAME<ARGS>'.")
@click.option("--apply", "apply_", is_flag=True, help="Write the winning rewrite into FILE.")
@click.option("--accept-launch-change", is_flag=True,
              help="With --apply: apply a winner that needs a new launch even where its launch "
                   "sites cannot be rewritten (you change them).")
@click.option("--budget", default=24, show_default=True, type=click.IntRange(1, 1000),
              help="Most candidates the built-in search evaluates.")
@click.option("--seed", default=0, show_default=True, help="Seed of the candidate search.")
@click.option("--seconds", type=click.FloatRange(min=0, max=1e7, min_open=True), default=None,
              callback=lambda ctx, param, v: _finite(param, v),
              help="Stop the search after this many seconds (checked between batches).")
@click.option("--repetitions", default=50, show_default=True, type=click.IntRange(1, 100_000),
              help="Timed launches per variant (interleaved).")
@click.option("--json", "json_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the results as JSON to this path.")
@click.option("--no-sanitize", "no_sanitize", is_flag=True,
              help="Skip the compute-sanitizer check of the original (races, invalid accesses) "
                   "made before optimizing; an original with such a finding is refused "
                   "(exit status 4).")
@click.option("--capture", "capture_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Time and verify on a launch recorded by `cudalens capture` (its .json "
                   "manifest); the spec's seeded cases are checked too.")
@click.option("--capture-only", is_flag=True,
              help="With --capture: verify on the captured launch alone (when the spec's "
                   "random inputs cannot drive the kernel, e.g. CSR structure).")
@click.option("--report", "report_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write the kernel report (roofline chart, candidates, search history) "
                   "as one self-contained HTML file to this path.")
@agent_options
def optimize(file: Path, apply_: bool, **options) -> None:
    """Optimize a kernel of FILE: propose rewrites, verify them against the original on the GPU,
    time them, and show the fastest verified one as a diff."""
    written: list[Path] = []
    try:
        _optimize(file, apply_=apply_, written=written, **options)
    except KeyboardInterrupt:  # wherever no closer step said what was stopped
        state = f"{file} was already written" if written else f"{file} is unchanged"
        _fail(Console(stderr=True), f"interrupted (Ctrl-C); {state}", EXIT_INTERRUPTED)


def _preflight(target, err: Console) -> None:
    """The engine's checks before any runner is asked (``cudalens.engine.preflight``): the
    build (``compile_commands.json`` or the project file's ``[build]`` table) and the headers
    it sends can be read, and the file compiles with the local nvcc (where there is one), so
    that a refused table or a syntax error stops the run here at its line
    (``CudalensError``), not after the runner has started (or was found missing)."""
    from cudalens.engine.preflight import preflight

    with err.status(f"compiling {target.path} with nvcc"):
        preflight(target)


def _optimize(file: Path, kernel_name: Optional[str], apply_: bool, accept_launch_change: bool,
              budget: int, seed: int,
              seconds: Optional[float], repetitions: int, json_path: Optional[Path],
              report_path: Optional[Path], proposer: str, agent_config: Optional[Path],
              written: list[Path], capture_path: Optional[Path] = None,
              capture_only: bool = False, no_sanitize: bool = False, **agent) -> None:
    """The ``optimize`` command's work; ``written`` gets FILE once --apply wrote it."""
    from cudalens.cli_agent import (ProposerChoice, agent_record, choose_proposer,
                                    config_from_cli, config_warnings, offline_choice,
                                    sigint_cancels, summary_lines)
    from cudalens.engine.events import Note, status_text
    from cudalens.engine.proposer import Budget, BuiltinProposer, LlmProposer
    from cudalens.engine.run import run
    from cudalens.present import print_result, result_record
    from cudalens.runner_client import RunnerClient
    from cudalens.spec.parser import spec_path_for
    from cudalens.target import load_target

    console = Console(stderr=False)
    err = Console(stderr=True)
    if json_path is not None:
        # Checked before the run, so that a long measurement is not lost to a bad path; nothing
        # is created until there is something to write.
        problem = _unwritable(json_path)
        ours = {file.absolute().resolve(), spec_path_for(file).absolute().resolve()}
        if json_path.absolute().resolve() in ours:
            problem = "it is the kernel's source or spec file, which the JSON would replace"
        if problem:
            _fail(err, f"--json {json_path}: cannot write there ({problem})")
    if report_path is not None:
        problem = _unwritable(report_path)
        if report_path.absolute().resolve() in {file.absolute().resolve(),
                                                spec_path_for(file).absolute().resolve()}:
            problem = "it is the kernel's source or spec file, which the report would replace"
        if problem:
            _fail(err, f"--report {report_path}: cannot write there ({problem})")
        from cudalens.report.chart import ChartUnavailable, require_matplotlib
        try:
            require_matplotlib()
        except ChartUnavailable as exc:
            _fail(err, f"--report {report_path}: {exc}")
    try:
        target = load_target(file, kernel_name, command="optimize")
        _preflight(target, err)
        config = config_from_cli(file, agent_config=agent_config, **agent)
        choice = offline_choice(proposer, config)  # the model's server is asked after the GPU
    except CudalensError as exc:
        _fail(err, str(exc))
    for warning in config_warnings(config):
        err.print(escape(f"warning: {warning}"), highlight=False, soft_wrap=True)
    replay = None
    if capture_only and capture_path is None:
        _fail(err, "--capture-only needs --capture PATH")
    if capture_path is not None:
        from cudalens.cli_capture import load_replay_or_fail

        if choice is None and proposer == "auto":  # a replay runs the built-in search only
            choice = ProposerChoice("builtin", "proposer: the built-in search (--capture "
                                               "replays a captured launch with it)")
        target, replay = load_replay_or_fail(err, capture_path, target, capture_only,
                                             choice.kind if choice is not None else proposer)
    if choice is not None:
        err.print(escape(choice.reason), highlight=False, soft_wrap=True)
    if target.spec_inferred:
        err.print(escape(f"note: no spec for {target.kernel.name} in {file}.spec; using a draft "
                         f"inferred from the kernel (see it with: cudalens spec {file} --kernel "
                         f"{target.kernel.name})"),
                  highlight=False, soft_wrap=True)
    try:
        with err.status("starting the GPU runner"):
            client = RunnerClient()
    except CudalensError as exc:  # RunnerUnavailable, or RunnerError: answers it cannot read
        where = ("without a GPU" if not os.environ.get("CUDALENS_RUNNER_URL")
                 else "with the configured runner (CUDALENS_RUNNER_URL)")
        _fail(err, f"cannot optimize {where}: {exc}", EXIT_NO_GPU)
    except KeyboardInterrupt:
        _fail(err, f"interrupted (Ctrl-C) while starting the GPU runner; nothing was measured "
                   f"and {file} is unchanged", EXIT_INTERRUPTED)
    if choice is None:
        try:
            choice = choose_proposer(proposer, config)
        except CudalensError as exc:
            client.close()
            _fail(err, str(exc))
        except BaseException:
            client.close()
            raise
        err.print(escape(choice.reason), highlight=False, soft_wrap=True)
    agent_result = None
    try:
        with client, err.status("starting") as status:
            def progress(msg: str) -> None:
                status.update(escape(msg))

            def on_event(event) -> None:
                text = status_text(event)
                if text is not None:
                    progress(text)

            # --capture-only: the spec's random inputs cannot drive the kernel (CSR indices...),
            # so a sanitizer run on them would report accesses the real inputs never make
            if no_sanitize or capture_only:
                from cudalens.sanitizer_status import not_run
                sanitizer = not_run("--no-sanitize was given" if no_sanitize else
                                    "--capture-only: the spec's random inputs cannot drive "
                                    "this kernel")
            else:
                sanitizer = _check_original(target, client, err, progress)

            spend = Budget(candidates=budget, seconds=seconds, repetitions=repetitions, seed=seed)
            if choice.kind == "llm":  # the first Ctrl-C stops the rounds, keeping the results
                cancel = threading.Event()
                with sigint_cancels(cancel, lambda text: on_event(Note(text))):
                    proposal = run(target, client, LlmProposer(config), spend, on_event, cancel)
            else:
                proposal = run(target, client, BuiltinProposer(replay=replay), spend, on_event)
            agent_result, result = proposal.agent, proposal.result
        result = dataclasses.replace(result, sanitizer=sanitizer)
    except CudalensError as exc:
        _fail(err, str(exc))
    except KeyboardInterrupt:
        _fail(err, f"interrupted (Ctrl-C): the measurement was stopped and its results "
                   f"dropped; {file} is unchanged", EXIT_INTERRUPTED)
    # An LLM session stopped by Ctrl-C or by a failing server still has real measurements to
    # show, but the user did not get the run asked for: nothing is applied, the exit status
    # says so.
    stopped = proposal.stop.reason
    interrupted = proposal.cancelled
    failed = proposal.failed
    applied = False
    refused = ""
    host_lines: tuple[str, ...] = ()
    if apply_ and not (interrupted or failed) and result.winner is not None and \
            result.winner.candidate.source != target.text:
        from cudalens.accept import plan_accept

        try:
            now = read_text_file(file)  # line endings kept, as target.text has them
        except TextFileError:
            now = None
        if now != target.text:
            _fail(err, f"{file} changed while cudalens was measuring; not applied, run again")
        acceptance = plan_accept(result, accept_launch_change)
        refused = acceptance.refused
        for path, text in acceptance.writes.items():
            if path == file.resolve():
                bom = b"\xef\xbb\xbf" if has_bom(file) else b""
                file.write_bytes(bom + to_bytes(same_line_endings(text, target.text)))
                written.append(file)
                applied = True
            else:
                path.write_bytes(to_bytes(text))
        host_lines = acceptance.lines
    print_result(console, result, applied, suggest_apply=not apply_)
    for line in host_lines:  # launch sites quoted from the files
        console.print(printable(line), markup=False, highlight=False, soft_wrap=True)
    if agent_result is not None:
        for line in summary_lines(agent_result):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    record = result_record(result)
    if agent_result is not None:
        record["agent"] = agent_record(agent_result)
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            # Strict JSON, as the runner writes it: NaN and infinities as strings.
            json_path.write_bytes(encode(record, indent=2) + b"\n")
        except OSError as exc:
            _fail(err, f"--json {json_path}: the results could not be written "
                       f"({exc.strerror or exc})" + (f"; {file} was written" if applied else ""))
    if report_path is not None:
        from cudalens.cli_report import write_report
        try:
            write_report(record, report_path, "the optimize results")
        except (CudalensError, OSError) as exc:
            _fail(err, f"--report {report_path}: the report could not be written "
                       f"({getattr(exc, 'strerror', None) or exc})"
                  + (f"; {file} was written" if applied else ""))
    unchanged = f"{file} is unchanged" if apply_ else "nothing was applied"
    if interrupted:
        _fail(err, f"interrupted (Ctrl-C): the LLM rounds were stopped; the table shows what "
                   f"was measured before; {unchanged}", EXIT_INTERRUPTED)
    if failed:
        _fail(err, f"the LLM proposer stopped early: {stopped}; {unchanged}")
    if refused:
        _fail(err, f"{refused}; {file} is unchanged")


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--kernel", "kernel_name", help="Only this kernel (default: every kernel in FILE).")
def spec(file: Path, kernel_name: Optional[str]) -> None:
    """Print the harness spec of FILE's kernels: the written one, or a draft inferred from the
    signature and body.

    A kernel whose spec can be neither read nor drafted (e.g. a struct passed by value) does
    not stop the others: it gets a ``# kernel NAME: no spec: ...`` comment in the output and an
    ``error:`` line on stderr. Exits with 2 only when no kernel got a spec."""
    from cudalens.spec.writer import format_spec
    from cudalens.target import (DraftRefused, check_spec_sections, draft_header, load_spec,
                                 read_source, select_kernel, template_instance)

    err = Console(stderr=True)
    try:
        _, source = read_source(file, "spec", kernel_name)
        kernels = [select_kernel(source, kernel_name)] if kernel_name is not None \
            else list(source.kernels)
        check_spec_sections(file, source)
    except CudalensError as exc:
        _fail(err, str(exc))
    if source.error_ranges:
        first = source.error_ranges[0].start
        err.print(escape(f"warning: {file}:{first.line + 1}:{first.column + 1}: the file does "
                         f"not parse as C++ from here; a draft inferred from it may be wrong "
                         f"(cudalens check {file} shows the compiler's errors)"),
                  highlight=False, soft_wrap=True)
    texts: list[str] = []
    failures: list[str] = []
    refused: list[str] = []  # drafts the spec checks refuse: shown, so they can be fixed
    for kernel in kernels:
        try:
            kspec, origin = load_spec(file, source, kernel, template_instance(kernel_name))
        except DraftRefused as exc:
            failures.append(str(exc))
            refused.append(draft_header(file) + "\n" + format_spec(exc.spec))
            texts.append(refused[-1])
            continue
        except CudalensError as exc:
            failures.append(str(exc))
            texts.append(f"# kernel {kernel.qualified_name or kernel.name}: no spec: "
                         + " ".join(str(exc).split()) + "\n")
            continue
        header = (f"# written spec, from {origin}" if origin != "inferred" else
                  draft_header(file))
        texts.append(header + "\n" + format_spec(kspec))
    # printable: a file that is not UTF-8 shows its bytes as \xHH (``textfile``).
    if kernels and len(failures) == len(kernels):
        click.echo(printable("\n".join(refused)), nl=False)
        for message in failures[:-1]:
            err.print(f"[bold red]error:[/bold red] {escape(printable(message))}",
                      highlight=False, soft_wrap=True)
        _fail(err, failures[-1])
    for message in failures:
        err.print(f"[bold red]error:[/bold red] {escape(printable(message))}", highlight=False,
                  soft_wrap=True)
    click.echo(printable("\n".join(texts)), nl=False)


@main.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--arch", default="sm_90", show_default=True, help="GPU architecture to compile for.")
@click.option("--nvcc", default="nvcc", show_default=True,
              help="The nvcc to run: a path, or a name looked up on PATH (then also "
                   "$CUDA_HOME/bin and /usr/local/cuda/bin).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=120,
              show_default=True, metavar="SECONDS",
              help="Stop nvcc (and every process it started) after this long.")
@click.option("--gpu", is_flag=True,
              help="Instead: run the kernel once on the GPU under compute-sanitizer (memcheck, "
                   "racecheck, initcheck, synccheck) with its spec's inputs and print each "
                   "finding at FILE:LINE:COL. Exit status 0 clean, 1 findings, 2 input errors, "
                   "3 no GPU runner or no report.")
@click.option("--kernel", "kernel_name",
              help="Only this kernel's resources (every template instance of a template's "
                   "name); with --gpu: the kernel to check (needed when FILE holds several).")
@click.option("--compile-commands", "compdb", type=click.Path(path_type=Path, dir_okay=False),
              default=None, help="compile_commands.json giving FILE's -I, -D and -std (default: "
                                 "found walking up from FILE, also in build/; else the [build] "
                                 "table of cudalens.toml).")
def check(file: Path, arch: str, nvcc: str, timeout_s: float, gpu: bool,
          kernel_name: Optional[str], compdb: Optional[Path]) -> None:
    """Compile every kernel of FILE with nvcc (no GPU needed) and report registers, shared memory,
    spills and compile errors with their lines; with --gpu, check one kernel for races and
    memory errors with compute-sanitizer.

    Exit status: 0 when FILE compiles (warnings allowed), 1 when it does not (the errors are
    shown at their lines), 2 for bad input (no such file, no kernel compiled, a --kernel that
    names none of the compiled kernels), 3 when nvcc
    cannot be run or did not finish within --timeout, 130 after Ctrl-C (nvcc is stopped
    either way)."""
    from cudalens.build import local_nvcc_options
    from cudalens.check import CheckError, compile_check, format_check

    err = Console(stderr=True)
    if not file.exists():
        _fail(err, f"{file}: no such file")
    if not file.is_file():
        _fail(err, f"{file}: expected a CUDA source file, found a directory or special file")
    if compdb is not None and not compdb.is_file():
        _fail(err, f"{compdb}: no such compilation database (--compile-commands)")
    try:  # a file that is not UTF-8 is read all the same (textfile); a binary one is refused
        read_text_file(file)
    except TextFileError as exc:
        _fail(err, f"{file}:{exc.line}: {exc}" if exc.line else f"{file}: {exc}")
    if gpu:
        _check_gpu(file, kernel_name, err)
        return
    try:
        options = local_nvcc_options(file, compdb=compdb)
    except CudalensError as exc:
        _fail(err, str(exc))
    try:
        result = compile_check(str(file), arch=arch, options=options, nvcc=nvcc,
                               timeout=timeout_s)
    except CheckError as exc:
        _fail(err, str(exc), EXIT_NO_NVCC)
    except KeyboardInterrupt:
        _fail(err, f"interrupted (Ctrl-C): nvcc was stopped; {file} was not checked",
              EXIT_INTERRUPTED)
    if result.ok and not result.kernels:  # as spec, plan and optimize refuse such a file
        _fail(err, f"{file}: expected at least one __global__ kernel, found none"
                   + _no_kernel_hint(file))
    skipped = _uncompiled_templates(file, result) if result.ok else []
    if kernel_name is not None and result.kernels:
        result = _only_kernel(result, kernel_name, file, err, skipped)
        skipped = [t for t in skipped if kernel_name.replace(" ", "").split("<", 1)[0]
                   in (t.name, t.qualified_name)]
    click.echo(format_check(result))
    for t in skipped:  # a template nvcc never saw instantiated is not in the report
        click.echo(f"{file}:{t.range.start.line + 1}: template kernel {t.qualified_name} not "
                   f"compiled: {_template_why(t.name)}")
    if not result.ok:
        sys.exit(EXIT_FOUND_PROBLEMS)


def _template_why(name: str) -> str:
    """Why nvcc compiled no code for template kernel ``name``, and the fix."""
    return (f"templates are compiled only where instantiated (add template __global__ void "
            f"{name}<ARGS>(...);)")


def _uncompiled_templates(file: Path, result) -> list:
    """The template kernels of ``file`` (``source.model.Kernel``) of which nvcc compiled no
    instance in ``result``, in file order."""
    from cudalens.source.parser import parse_source

    try:
        text = read_text_file(file)
    except TextFileError:
        return []  # not UTF-8: warned about already
    compiled = set()
    for k in result.kernels:
        base = k.name.replace(" ", "").split("<", 1)[0]
        compiled |= {base, base.split("::")[-1]}
    return [k for k in parse_source(text, str(file)).kernels
            if k.template_parameters and k.name not in compiled and
            k.qualified_name not in compiled]


def _only_kernel(result, name: str, file: Path, err: Console, skipped: Sequence = ()):
    """``result`` with only the resources of kernel ``name`` (its plain or qualified name, a
    template's name for all its instances, or one instance ``scale<float>``) and of the
    ``__device__`` functions it calls; exits with status 2 listing the compiled kernels when
    none is named so, or saying why when ``name`` is one of the ``skipped`` template kernels
    (``_uncompiled_templates``). Diagnostics are kept whole (they are the file's)."""
    wanted = name.replace(" ", "")

    def named(k) -> bool:
        full = k.name.replace(" ", "")
        base = full.split("<", 1)[0]
        return wanted in (full, base, k.mangled) or base.split("::")[-1] == wanted

    kernels = tuple(k for k in result.kernels if named(k))
    if not kernels:
        found = ", ".join(dict.fromkeys(k.name for k in result.kernels))
        template = next((t for t in skipped if wanted.split("<", 1)[0]
                         in (t.name, t.qualified_name)), None)
        if template is not None:
            _fail(err, f"{file}:{template.range.start.line + 1}: template kernel "
                       f"{template.qualified_name} was not compiled: "
                       f"{_template_why(template.name)}; nvcc compiled: {found}")
        _fail(err, f"{file}: no __global__ kernel named {name!r} among those nvcc compiled "
                   f"(found: {found})")
    bases = {k.name.split("<", 1)[0] for k in kernels}
    functions = tuple(f for f in result.device_functions if bases & set(f.callers))
    return dataclasses.replace(result, kernels=kernels, device_functions=functions)


def _no_kernel_hint(file: Path) -> str:
    """Why nvcc compiled no kernel of a file that defines template kernels ("" otherwise)."""
    from cudalens.source.parser import parse_source

    try:
        text = read_text_file(file)
    except TextFileError:
        return ""
    templates = [k.name for k in parse_source(text, str(file)).kernels
                 if k.template_parameters]
    if not templates:
        return ""
    return (f" compiled: the template kernel(s) {', '.join(templates)} are compiled only where "
            f"instantiated (add template __global__ void {templates[0]}<ARGS>(...);)")


def _check_gpu(file: Path, kernel_name: Optional[str], err: Console) -> None:
    """``check --gpu``: compute-sanitizer's findings on FILE's kernel, one line each."""
    from cudalens.runner_client import RunnerClient
    from cudalens.sanitize_check import CheckUnavailable, finding_line, sanitize_target
    from cudalens.target import load_target

    try:
        target = load_target(file, kernel_name)
    except CudalensError as exc:
        _fail(err, str(exc))
    try:
        with err.status("starting the GPU runner"):
            client = RunnerClient()
    except CudalensError as exc:
        _fail(err, f"cannot check on the GPU: {exc}", EXIT_NO_GPU)
    except KeyboardInterrupt:
        _fail(err, "interrupted (Ctrl-C) while starting the GPU runner", EXIT_INTERRUPTED)
    try:
        with client, err.status(f"checking {target.kernel.name} with compute-sanitizer"):
            run = sanitize_target(target, client)
    except CheckUnavailable as exc:
        _fail(err, str(exc), EXIT_NO_GPU)
    except CudalensError as exc:  # the spec, or the runner refused the request
        _fail(err, str(exc))
    except KeyboardInterrupt:
        _fail(err, "interrupted (Ctrl-C): the check was stopped", EXIT_INTERRUPTED)
    for loc in run.found:
        click.echo(finding_line(str(file), loc))
    for tool_run in run.report.runs:
        if tool_run.note:
            err.print(escape(f"note: {tool_run.tool}: {tool_run.note}"), highlight=False,
                      soft_wrap=True)
    count = len(run.found)
    click.echo(f"{target.kernel.name}: {count} finding{'s' if count != 1 else ''} "
               f"(compute-sanitizer on {run.where()})")
    if run.found:
        sys.exit(EXIT_FOUND_PROBLEMS)


def _check_original(target, client, err: Console, progress):
    """The compute-sanitizer check before optimizing (``cudalens.sanitize_check``): its
    ``SanitizerStatus``; exits with ``EXIT_ORIGINAL_UNSAFE`` after printing each blocking
    finding at its line."""
    from cudalens.sanitize_check import OriginalUnsafe, check_original_status, finding_line

    def note(msg: str) -> None:
        err.print(escape(msg), highlight=False, soft_wrap=True)

    try:
        return check_original_status(target, client, progress, note)[0]
    except OriginalUnsafe as exc:
        for located in exc.findings:
            err.print(escape(finding_line(str(target.path), located)), highlight=False,
                      soft_wrap=True)
        _fail(err, str(exc), EXIT_ORIGINAL_UNSAFE)


def _register_commands() -> None:
    from cudalens import cli_capture, cli_config, cli_lsp, cli_plan, cli_report, cli_runner

    cli_runner.register(main)
    cli_capture.register(main)
    cli_lsp.register(main)
    cli_config.register(main)
    cli_report.register(main)
    cli_plan.register(main)


_register_commands()
