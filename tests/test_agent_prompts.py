"""The prompt files: they exist in the package, render with every placeholder filled, refuse
missing or unused values, and the tool definitions are well-formed."""

from __future__ import annotations

import re

import pytest

from cudalens.agent import prompts
from cudalens.agent.prompts import PROMPTS, PromptError, placeholders, render, tool_definitions

EXPECTED = {
    "system": {"kernel_name", "file_name", "arch", "allowed_headers", "size_names",
               "max_variants", "output_format"},
    "format_fenced": {"candidates_per_round"},
    "format_tools": {"candidates_per_round"},
    "task": {"kernel_name", "file_name", "file_text", "kernel_text", "kernel_first_line",
             "kernel_last_line", "spec_text", "device_facts", "baseline_facts", "rounds",
             "candidates_per_round"},
    "retry": {"problems", "steps_left", "round"},
    "feedback": {"round", "rounds", "baseline_time", "results", "best", "next_step"},
}


def test_every_prompt_file_has_the_expected_placeholders():
    assert set(PROMPTS) == set(EXPECTED)
    for name in PROMPTS:
        assert placeholders(name) == EXPECTED[name], name


@pytest.mark.parametrize("name", PROMPTS)
def test_every_prompt_renders_with_no_braces_left_and_every_value_in_place(name):
    values = {key: f"<value of {key}>" for key in EXPECTED[name]}
    text = render(name, **values)
    assert "{{" not in text and "}}" not in text
    assert not re.search(r"\{\s*[a-z_]+\s*\}", text), "a single-brace placeholder was left"
    for key, value in values.items():
        assert value in text, f"{name}: {key} not rendered"


def test_a_missing_or_unused_value_is_refused_by_name():
    values = {key: "x" for key in EXPECTED["retry"] if key != "round"}
    with pytest.raises(PromptError, match=r"prompt retry\.md: no value for round$"):
        render("retry", **values)
    with pytest.raises(PromptError, match=r"no placeholder for colour"):
        render("retry", **values, round=1, colour="red")


def test_values_are_inserted_verbatim_never_expanded():
    text = render("retry", problems="a kernel with {{round}} and {braces}", steps_left=2, round=1)
    assert "a kernel with {{round}} and {braces}" in text
    assert "(replies left in round 1: 2)" in text


def test_an_unknown_prompt_names_the_ones_there_are():
    with pytest.raises(PromptError, match=r"no prompt file prompts/nope\.md .*system"):
        prompts.template("nope")


def test_the_tool_definitions_offer_compile_and_evaluate():
    tools = tool_definitions()
    assert [t["function"]["name"] for t in tools] == ["compile", "evaluate"]
    compile_, evaluate = (t["function"]["parameters"] for t in tools)
    assert compile_["required"] == ["source"]
    assert evaluate["required"] == ["source", "explanation"]
    assert set(evaluate["properties"]) == {"source", "block", "grid", "shared", "explanation"}
    assert all(t["type"] == "function" for t in tools)
    tools[0]["function"]["name"] = "changed"  # a copy: the next call is unaffected
    assert tool_definitions()[0]["function"]["name"] == "compile"
