"""The CLI side of the LLM proposer: options, configuration from FILE's project, the choice of
proposer and Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cudalens.cli_agent import (agent_options, choose_proposer, config_from_cli, run_llm_proposer,
                                sigint_cancels)
from cudalens.errors import CudalensError
from agent_fakes import FakeRunner, passed, saxpy_target
from fake_openai import MODEL, FakeOpenAI, reply
from test_agent_loop import GOOD, fenced


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@agent_options
def demo(file: Path, proposer: str, agent_config, **options) -> None:
    try:
        config = config_from_cli(file, agent_config=agent_config, **options)
        choice = choose_proposer(proposer, config, probe=lambda c: None)
    except CudalensError as exc:
        raise click.ClickException(str(exc))
    click.echo(f"{choice.kind}|{config.model}|{config.rounds}|{config.time_budget_s}|"
               f"{config.origin('rounds')}")


def test_options_reach_the_configuration_over_the_project_file(tmp_path):
    (tmp_path / "cudalens.toml").write_text('[agent]\nmodel = "from-file"\nrounds = 2\n')
    kernel = tmp_path / "k.cu"
    kernel.write_text("")
    run = CliRunner().invoke(demo, [str(kernel), "--rounds", "5", "--time-budget", "0"])
    assert run.exit_code == 0, run.output
    assert run.output == "llm|from-file|5|None|command line\n"


def test_an_explicit_config_file_and_builtin(tmp_path):
    conf = tmp_path / "other.toml"
    conf.write_text('[agent]\nmodel = "m"\n')
    run = CliRunner().invoke(demo, [str(tmp_path / "k.cu"), "--agent-config", str(conf),
                                    "--proposer", "builtin"])
    assert run.exit_code == 0, run.output
    assert run.output == "builtin|m|4|900.0|default\n"


def test_llm_without_a_model_fails_with_what_to_do(tmp_path):
    run = CliRunner().invoke(demo, [str(tmp_path / "k.cu"), "--proposer", "llm"])
    assert run.exit_code == 1
    assert "Error: --proposer llm needs a model: set model in the [agent] table" in run.output


def test_bad_option_values_name_the_option(tmp_path):
    run = CliRunner().invoke(demo, [str(tmp_path / "k.cu"), "--rounds", "0"])
    assert run.exit_code == 1
    assert "Error: command line: rounds: expected an integer >= 1, found 0" in run.output


def test_the_first_ctrl_c_cancels_and_the_second_interrupts():
    cancel = threading.Event()
    said: list[str] = []
    # SIGINT as on a terminal, also where the test run was started with it ignored (a
    # background job; sigint_cancels then leaves it ignored: tests/test_cli_interrupt.py)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with sigint_cancels(cancel, said.append):
            os.kill(os.getpid(), signal.SIGINT)
            assert cancel.wait(2.0)
            assert said == [
                "cancelling: finishing the current step (Ctrl-C again to stop at once)"]
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), signal.SIGINT)
                threading.Event().wait(2.0)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)


def test_run_llm_proposer_runs_the_loop(tmp_path):
    target = saxpy_target(tmp_path)
    with FakeOpenAI([reply(fenced(("g", GOOD, "")))]) as fake:
        cfg = config_from_cli(target.path, model=MODEL, base_url=fake.url, rounds=1)
        result = run_llm_proposer(target, FakeRunner(lambda v: passed(v.label, 1.5)), cfg)
    assert result.optimize.winner.candidate.label == "llm r1c1"
