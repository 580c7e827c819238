"""The LLM proposer's configuration: which server and model, and how much it may spend.

Values come in layers, later ones overriding earlier ones: the defaults below, the project
file (``config_file``), the language server's settings, the command line. Every value keeps
the name of the layer it came from (``AgentConfig.origins``) so messages can say where a
setting was made.

The API key itself is never part of the configuration: ``api_key_env`` names the environment
variable that holds it, and the key is read from the environment only when a client is made
(``AgentConfig.api_key``). A layer that holds a key (``api_key = ...``) is refused, and a
value of ``api_key_env`` that looks like a key rather than a variable name is refused without
being echoed.

Where the key goes (``base_url``) and which variable is the key (``api_key_env``) are
``TRUST_KEYS``: a layer marked untrusted (``Layer.trusted`` False: a project file the user has
not trusted, see ``cudalens.agent.trust``) may not set them. ``merge`` drops them from such a
layer, with the layer's ``model`` when it also set ``base_url`` (that model was named for the
dropped server), and lists each dropped value in ``AgentConfig.ignored``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from cudalens.errors import CudalensError

OPENAI_BASE_URL = "https://api.openai.com/v1"  # what the openai client uses when none is given
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODES = ("auto", "on", "off")
_SECRET_KEYS = ("api_key", "apikey", "key", "token", "secret", "password")
TRUST_KEYS = ("base_url", "api_key_env")  # only trusted layers may set these


class ConfigError(CudalensError):
    """A configuration value is unusable; the message names the layer, the key, what was
    expected and what was found (secrets are never shown)."""


@dataclass(frozen=True)
class ModelPrice:
    """What one model costs, in US dollars per million tokens (prompt and completion)."""

    input_per_mtok: float
    output_per_mtok: float


@dataclass(frozen=True)
class IgnoredSetting:
    """A value an untrusted layer set and ``merge`` dropped: ``layer`` is the layer's name
    (``/repo/cudalens.toml [agent]``), ``key`` the field, ``value`` the parsed value."""

    layer: str
    key: str
    value: Any


@dataclass(frozen=True)
class AgentConfig:
    """Settings of the LLM proposer (see the module doc for where they come from).

    model: the model name sent to the server; None means no LLM is configured.
    base_url: the chat-completions server (``http://localhost:8000/v1`` for vLLM, ...); None
        means OpenAI's (``OPENAI_BASE_URL``).
    api_key_env: the name of the environment variable holding the API key.
    temperature: sampling temperature sent with every request; None sends none (the server's
        default).
    candidates_per_round: the most candidates the model may submit per round.
    rounds: rounds of propose -> measure -> feedback.
    time_budget_s: wall-clock seconds for the whole loop; None: no limit (``0`` in a layer).
    token_budget: prompt plus completion tokens for the whole loop; None: no limit (``0``).
    request_timeout_s: seconds one request may take (each attempt).
    max_retries: retries of a request after a timeout, a connection error, 408, 409, 429 or
        5xx, with exponential backoff (the openai client's own: 0.5 s doubling to 8 s, or the
        server's Retry-After).
    stream: ``auto`` (stream, and stop streaming if the server refuses it), ``on``, ``off``.
    tools: ``auto`` (offer the compile/evaluate tools, and stop if the server refuses them),
        ``on``, ``off`` (fenced code blocks only).
    max_reply_tokens: ``max_tokens`` sent with every request; None sends none.
    steps_per_round: requests per round while no candidate of the round can be measured
        (compile errors found before the GPU, refusals, tool calls that only compile).
    max_variants_per_candidate: the most settings of ``@tune`` parameters one candidate may
        expand into.
    confirm_top: the best verified candidates of different rounds (at most this many, at least
        two) are timed again side by side at the end; 0 or 1 turns it off.
    precheck: compile every candidate with the local nvcc before it reaches the runner, so
        compile errors come back with line numbers without spending GPU time.
    probe_timeout_s: seconds the reachability check (``--proposer auto``) may take.
    prices: per-model prices for the cost estimate; a model without a price has an unknown
        cost (no price is built in).
    origins: for each field set by a layer, that layer's name.
    ignored: the values untrusted layers set and that were dropped (see the module doc).
    """

    model: Optional[str] = None
    base_url: Optional[str] = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: Optional[float] = None
    candidates_per_round: int = 2
    rounds: int = 4
    time_budget_s: Optional[float] = 900.0
    token_budget: Optional[int] = 200_000
    request_timeout_s: float = 120.0
    max_retries: int = 3
    stream: str = "auto"
    tools: str = "auto"
    max_reply_tokens: Optional[int] = None
    steps_per_round: int = 3
    max_variants_per_candidate: int = 8
    confirm_top: int = 3
    precheck: bool = True
    probe_timeout_s: float = 5.0
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[IgnoredSetting, ...] = ()

    @property
    def configured(self) -> bool:
        """True when a model is named (the LLM proposer can be tried)."""
        return bool(self.model)

    @property
    def endpoint(self) -> str:
        """``model at URL``, for messages (never holds the key)."""
        return f"{self.model or '(no model)'} at {self.base_url or OPENAI_BASE_URL}"

    def api_key(self, environ: Mapping[str, str] = os.environ) -> Optional[str]:
        """The key from the environment variable ``api_key_env``, or None when it is unset."""
        return environ.get(self.api_key_env) or None

    def price(self) -> Optional[ModelPrice]:
        return self.prices.get(self.model or "")

    def origin(self, name: str) -> str:
        return self.origins.get(name, "default")


# -- parsing one value ---------------------------------------------------------------------------


def _expect(what: str) -> Callable[[Any], None]:
    def fail(value: Any) -> None:
        raise ValueError(f"expected {what}, found {value!r}")
    return fail


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        _expect("a non-empty string")(value)
    return value.strip()


def _url(value: Any) -> str:
    text = _text(value)
    if not re.match(r"https?://[^\s/]+", text):
        _expect("an http:// or https:// URL such as http://localhost:8000/v1")(value)
    return text.rstrip("/")


def _env_name(value: Any) -> str:
    if isinstance(value, str) and _ENV_NAME.fullmatch(value.strip()):
        return value.strip()
    if isinstance(value, str) and len(value) >= 16:
        # Long values that are not variable names are likely the key itself: never echo them.
        raise ValueError("expected the NAME of an environment variable (letters, digits, _), "
                         "found a value that looks like a key (not shown); put the key in an "
                         "environment variable and give its name here")
    _expect("the name of an environment variable (letters, digits and _, e.g. OPENAI_API_KEY)")(
        value)
    return ""


def _number(low: float, high: float = math.inf) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or not low <= value <= high:
            bound = f"between {low:g} and {high:g}" if math.isfinite(high) else f">= {low:g}"
            _expect(f"a number {bound}")(value)
        return float(value)
    return parse


def _integer(low: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            _expect(f"an integer >= {low}")(value)
        return int(value)
    return parse


def _limit(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A budget: 0 means no limit (None)."""
    def parse_limit(value: Any) -> Any:
        if value == 0 and not isinstance(value, bool):
            return None
        return parse(value)
    return parse_limit


def _mode(value: Any) -> str:
    if value is True:
        return "on"
    if value is False:
        return "off"
    if isinstance(value, str) and value.strip().lower() in _MODES:
        return value.strip().lower()
    _expect("one of auto, on, off")(value)
    return ""


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    _expect("true or false")(value)
    return False


def _prices(value: Any) -> dict[str, ModelPrice]:
    if not isinstance(value, Mapping):
        _expect('a table of models, e.g. [agent.prices."gpt-4.1"] with input_per_mtok and '
                'output_per_mtok')(value)
    out = {}
    for model, entry in value.items():
        if not isinstance(entry, Mapping):
            raise ValueError(f"{model}: expected a table with input_per_mtok and output_per_mtok "
                             f"(US dollars per million tokens), found {entry!r}")
        entry = {_snake(k): v for k, v in entry.items()}
        unknown = sorted(set(entry) - {"input_per_mtok", "output_per_mtok"})
        missing = sorted({"input_per_mtok", "output_per_mtok"} - set(entry))
        if unknown or missing:
            raise ValueError(f"{model}: expected exactly input_per_mtok and output_per_mtok, "
                             f"found {sorted(entry)}")
        try:
            out[str(model)] = ModelPrice(_number(0)(entry["input_per_mtok"]),
                                         _number(0)(entry["output_per_mtok"]))
        except ValueError as exc:
            raise ValueError(f"{model}: {exc}") from None
    return out


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "model": _text,
    "base_url": _url,
    "api_key_env": _env_name,
    "temperature": _number(0.0, 2.0),
    "candidates_per_round": _integer(1),
    "rounds": _integer(1),
    "time_budget_s": _limit(_number(1.0)),
    "token_budget": _limit(_integer(1)),
    "request_timeout_s": _number(0.01),
    "max_retries": _integer(0),
    "stream": _mode,
    "tools": _mode,
    "max_reply_tokens": _limit(_integer(1)),
    "steps_per_round": _integer(1),
    "max_variants_per_candidate": _integer(1),
    "confirm_top": _integer(0),
    "precheck": _flag,
    "probe_timeout_s": _number(0.01),
    "prices": _prices,
}
KEYS = tuple(_PARSERS)


def _snake(key: str) -> str:
    """``candidatesPerRound`` -> ``candidates_per_round`` (editor settings are camelCase)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(key)).lower().replace("-", "_")


@dataclass(frozen=True)
class Layer:
    """One source of settings: ``name`` (e.g. ``cudalens.toml [agent]``, ``--model``,
    ``editor settings``) and its values by key (snake_case or camelCase); ``trusted`` False
    for a layer that may not set ``TRUST_KEYS`` (see the module doc)."""

    name: str
    values: Mapping[str, Any]
    trusted: bool = True


def parse_layer(layer: Layer) -> dict[str, Any]:
    """The layer's values, parsed and checked, by field name; None values are skipped.

    Raises:
        ConfigError: an unknown key, a key that holds a secret, or an unusable value.
    """
    out: dict[str, Any] = {}
    for raw_key, value in layer.values.items():
        key = _snake(raw_key)
        if key in _SECRET_KEYS:
            raise ConfigError(f"{layer.name}: {raw_key}: an API key must not be written in "
                              f"settings (it would end up in files and logs); put it in an "
                              f"environment variable and set api_key_env to that variable's name")
        if key not in _PARSERS:
            raise ConfigError(f"{layer.name}: unknown setting {raw_key!r}; expected one of "
                              f"{', '.join(KEYS)}")
        if value is None:
            continue
        try:
            out[key] = _PARSERS[key](value)
        except ValueError as exc:
            raise ConfigError(f"{layer.name}: {raw_key}: {exc}") from None
    return out


def merge(layers: list[Layer], base: Optional[AgentConfig] = None) -> AgentConfig:
    """``base`` (default: the defaults) with each layer applied in order.

    Raises:
        ConfigError: see ``parse_layer``.
    """
    config = base or AgentConfig()
    origins = dict(config.origins)
    values: dict[str, Any] = {}
    ignored = list(config.ignored)
    prices = dict(config.prices)  # price tables add up across layers, model by model
    for layer in layers:
        parsed = parse_layer(layer)
        if not layer.trusted:
            dropped = [k for k in TRUST_KEYS if k in parsed]
            if "base_url" in parsed and "model" in parsed:
                dropped.append("model")  # named for the server that is not used
            ignored.extend(IgnoredSetting(layer.name, k, parsed.pop(k)) for k in dropped)
        prices.update(parsed.pop("prices", {}))
        values.update(parsed)
        origins.update({k: layer.name for k in parsed})
        if "prices" in layer.values:
            origins["prices"] = layer.name
    return dataclasses.replace(config, **values, prices=prices, origins=origins,
                               ignored=tuple(ignored))
