"""The LLM proposer's configuration: layers, errors, secrets, prices, and choosing a proposer."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cudalens.agent.config import AgentConfig, ConfigError, Layer, ModelPrice, merge
from cudalens.agent.config_file import find_project_file, load_agent_config
from cudalens.agent.ledger import Usage, cost_of
from cudalens.cli_agent import choose_proposer, config_from_cli
from cudalens.errors import CudalensError
from canned_http import Canned
from fake_openai import MODEL, FakeOpenAI


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_unconfigured_with_budgets():
    cfg = AgentConfig()
    assert not cfg.configured
    assert cfg.api_key_env == "OPENAI_API_KEY"
    assert (cfg.rounds, cfg.candidates_per_round, cfg.token_budget) == (4, 2, 200_000)
    assert cfg.endpoint == "(no model) at https://api.openai.com/v1"
    assert cfg.price() is None


def test_project_file_found_from_a_nested_kernel_and_values_parsed(tmp_path):
    conf = write(tmp_path / "cudalens.toml", """
[agent]
base_url = "http://localhost:8000/v1/"
model = "qwen-coder"
api_key_env = "VLLM_KEY"
temperature = 0.3
rounds = 3
token_budget = 0
stream = false
[agent.prices."qwen-coder"]
input_per_mtok = 0.5
output_per_mtok = 1.5
""")
    (tmp_path / ".git").mkdir()  # the repository root: the search may reach it
    kernel = write(tmp_path / "src" / "k" / "saxpy.cu", "")
    assert find_project_file(kernel) == conf
    cfg = load_agent_config(start=kernel, trust_project=True)
    assert cfg.model == "qwen-coder" and cfg.base_url == "http://localhost:8000/v1"
    assert (cfg.api_key_env, cfg.temperature, cfg.rounds) == ("VLLM_KEY", 0.3, 3)
    assert cfg.token_budget is None  # 0 means no limit
    assert cfg.stream == "off"
    assert cfg.price() == ModelPrice(0.5, 1.5)
    assert cfg.origin("model") == f"{conf} [agent]"
    assert cfg.origin("candidates_per_round") == "default"


def test_pyproject_table_is_used_and_a_pyproject_without_it_is_passed_over(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.cudalens.agent]\nmodel = "outer"\n')
    write(tmp_path / "inner" / "pyproject.toml", '[project]\nname = "x"\n')
    (tmp_path / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    kernel = write(tmp_path / "inner" / "a.cu", "")
    cfg = load_agent_config(start=kernel)
    assert cfg.model == "outer"
    assert cfg.origin("model") == f"{tmp_path / 'pyproject.toml'} [tool.cudalens.agent]"


def test_layers_override_in_order_file_settings_cli(tmp_path):
    write(tmp_path / "cudalens.toml", '[agent]\nmodel = "a"\nrounds = 2\ntemperature = 0.1\n')
    cfg = load_agent_config(start=tmp_path, settings={"rounds": 5, "candidatesPerRound": 3},
                            cli={"temperature": 0.9, "model": None})
    assert (cfg.model, cfg.rounds, cfg.candidates_per_round, cfg.temperature) == ("a", 5, 3, 0.9)
    assert cfg.origin("rounds") == "editor settings (cudalens.agent)"
    assert cfg.origin("temperature") == "command line"


def test_a_key_in_a_file_is_refused_without_echoing_it(tmp_path):
    conf = write(tmp_path / "cudalens.toml", '[agent]\nmodel = "m"\napi_key = "sk-live-abc"\n')
    with pytest.raises(ConfigError) as err:
        load_agent_config(start=tmp_path)
    assert str(err.value).startswith(f"{conf} [agent]: api_key: an API key must not be written")
    assert "api_key_env" in str(err.value) and "sk-live-abc" not in str(err.value)


def test_a_key_given_as_api_key_env_is_refused_without_echoing_it():
    secret = "sk-proj-0123456789abcdefghij"
    with pytest.raises(ConfigError) as err:
        merge([Layer("command line", {"api_key_env": secret})])
    assert "looks like a key (not shown)" in str(err.value)
    assert secret not in str(err.value)


@pytest.mark.parametrize("key, value, expected", [
    ("temperature", "hot", "temperature: expected a number between 0 and 2, found 'hot'"),
    ("rounds", 0, "rounds: expected an integer >= 1, found 0"),
    ("base_url", "localhost:8000", "base_url: expected an http:// or https:// URL"),
    ("tools", "maybe", "tools: expected one of auto, on, off, found 'maybe'"),
    ("precheck", "yes", "precheck: expected true or false, found 'yes'"),
    ("prices", {"m": {"input_per_mtok": 1}}, "prices: m: expected exactly input_per_mtok and "
                                             "output_per_mtok, found ['input_per_mtok']"),
])
def test_bad_values_name_the_layer_key_and_what_was_found(key, value, expected):
    with pytest.raises(ConfigError) as err:
        merge([Layer("editor settings", {key: value})])
    assert str(err.value).startswith(f"editor settings: {expected}")


def test_unknown_keys_are_refused_with_the_known_ones_listed():
    with pytest.raises(ConfigError, match=r"unknown setting 'modle'; expected one of model, "
                                          r"base_url, api_key_env"):
        merge([Layer("x", {"modle": "m"})])


def test_bad_toml_names_the_file(tmp_path):
    conf = write(tmp_path / "cudalens.toml", "[agent\nmodel = 1\n")
    with pytest.raises(ConfigError, match=rf"^{conf}: not valid TOML: "):
        load_agent_config(start=tmp_path)


def test_price_tables_add_up_across_layers():
    cfg = merge([Layer("file", {"prices": {"a": {"input_per_mtok": 1, "output_per_mtok": 2}}}),
                 Layer("cli", {"prices": {"b": {"inputPerMtok": 3, "outputPerMtok": 4}}})])
    assert cfg.prices == {"a": ModelPrice(1.0, 2.0), "b": ModelPrice(3.0, 4.0)}


def test_cost_uses_configured_prices_and_is_unknown_without_one():
    usage = Usage(prompt_tokens=120_000, completion_tokens=30_000)
    priced = cost_of(usage, "m", ModelPrice(2.0, 8.0), "cudalens.toml [agent]")
    assert priced.usd == pytest.approx(0.24 + 0.24)
    assert "from cudalens.toml [agent]" in priced.note
    unknown = cost_of(usage, "m", None)
    assert unknown.usd is None
    assert unknown.note.startswith("cost unknown: no price for model 'm'")


def test_config_from_cli_maps_option_names(tmp_path):
    kernel = write(tmp_path / "k.cu", "")
    cfg = config_from_cli(kernel, model="m", time_budget=30.0, token_budget=0, rounds=None)
    assert (cfg.model, cfg.time_budget_s, cfg.token_budget, cfg.rounds) == ("m", 30.0, None, 4)


# -- choosing the proposer ---------------------------------------------------------------------


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_builtin_is_used_when_asked_or_when_nothing_is_configured():
    assert choose_proposer("builtin", AgentConfig(model="m")).kind == "builtin"
    auto = choose_proposer("auto", AgentConfig(), probe=lambda c: pytest.fail("no probe"))
    assert auto.kind == "builtin"
    assert auto.reason.startswith("proposer: the built-in search (no LLM is configured; to use "
                                  "one, set model in the [agent] table of cudalens.toml")
    with pytest.raises(ConfigError, match="--proposer llm needs a model"):
        choose_proposer("llm", AgentConfig())


def test_auto_takes_a_reachable_server_and_says_so():
    with FakeOpenAI() as fake:
        cfg = AgentConfig(model=MODEL, base_url=fake.url, api_key_env="CUDALENS_TEST_NO_KEY")
        choice = choose_proposer("auto", cfg)
        assert choice.kind == "llm"
        assert choice.reason == (f"proposer: the LLM {MODEL} at {fake.url} "
                                 f"(no key in $CUDALENS_TEST_NO_KEY)")
        assert fake.requests[0]["path"] == "/v1/models"


def test_auto_falls_back_when_the_server_is_down_and_llm_fails():
    cfg = AgentConfig(model="m", base_url=closed_port_url(), probe_timeout_s=2)
    choice = choose_proposer("auto", cfg)
    assert choice.kind == "builtin"
    assert "the LLM is configured but cannot be used: m at http://127.0.0.1:" in choice.reason
    assert "cannot connect" in choice.reason
    with pytest.raises(CudalensError, match="--proposer llm: the model cannot be used: .*cannot "
                                            "connect"):
        choose_proposer("llm", cfg)


def test_a_server_that_does_not_serve_the_model_is_not_used():
    with FakeOpenAI(models=("llama-3", "qwen")) as fake:
        choice = choose_proposer("auto", AgentConfig(model="gpt-x", base_url=fake.url))
    assert choice.kind == "builtin"
    assert "does not serve model 'gpt-x' (it serves: llama-3, qwen)" in choice.reason


def test_a_server_without_a_model_list_counts_as_reachable():
    with FakeOpenAI(models_status=404) as fake:
        assert choose_proposer("auto", AgentConfig(model="m", base_url=fake.url)).kind == "llm"


@pytest.mark.parametrize("status,body,content_type,reason", [
    (200, b'{"foo": [1,2,', "application/json", "200 with application/json, not JSON: "),
    (200, b'{"choices": "nope", "data": 5}', "application/json",
     """expected a JSON object with a 'data' list of models, found {"choices": "nope", """
     """"data": 5})"""),
    (200, b"<html><body>hello</body></html>", "text/html",
     "200 with text/html, not JSON: Expecting value: line 1 column 1 (char 0))"),
    (404, b"<html><body>Not Found</body></html>", "text/html",
     "404 with a page that is not JSON: is the base URL right? It usually ends in /v1"),
])
def test_a_server_that_is_not_an_openai_api_is_not_used(status, body, content_type, reason):
    with Canned(status, body, content_type) as server:
        cfg = AgentConfig(model="m", base_url=server.url, probe_timeout_s=5)
        choice = choose_proposer("auto", cfg)
        assert choice.kind == "builtin"
        said = (f"the LLM is configured but cannot be used: m at {server.url}: GET /models did "
                f"not answer as an OpenAI-compatible API would (")
        assert said in choice.reason, choice.reason
        assert choice.reason.split(said, 1)[1].startswith(reason), choice.reason
        with pytest.raises(CudalensError, match=r"--proposer llm: the model cannot be used: "):
            choose_proposer("llm", cfg)
