"""``cudalens lsp``: the click command, its registration and the runner-factory option."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from cudalens.cli_lsp import load_factory, lsp, register


def test_register_adds_the_lsp_command_to_a_group():
    @click.group()
    def group() -> None:
        pass

    register(group)
    assert group.commands["lsp"] is lsp
    result = CliRunner().invoke(group, ["lsp", "--help"])
    assert result.exit_code == 0
    assert "Start the cudalens language server on stdio" in result.output
    assert "--runner-factory" not in result.output  # for tests and demos only: hidden


def test_load_factory_finds_a_callable_and_says_what_is_wrong():
    assert load_factory("cudalens.lsp.server:default_runner_factory").__name__ == \
        "default_runner_factory"
    with pytest.raises(click.BadParameter, match="expected MODULE:CALLABLE, found 'nocolon'"):
        load_factory("nocolon")
    with pytest.raises(click.BadParameter, match="cannot import 'no_such_module_xyz'"):
        load_factory("no_such_module_xyz:make")
    with pytest.raises(click.BadParameter, match="'cudalens.lsp.server' has no callable 'VERSION'"):
        load_factory("cudalens.lsp.server:VERSION")


def test_bad_runner_factory_exits_with_a_usage_error():
    result = CliRunner().invoke(lsp, ["--runner-factory", "nocolon"])
    assert result.exit_code == 2
    assert "expected MODULE:CALLABLE, found 'nocolon'" in result.output
