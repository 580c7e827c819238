"""The model, reached through the ``openai`` package's chat-completions API.

Works with OpenAI and with any server speaking the same protocol (vLLM, Ollama, llama.cpp's
server, LM Studio): ``base_url`` chooses the server. Retries with exponential backoff on
timeouts, connection errors, 408, 409, 429 and 5xx are the openai client's own
(``max_retries``; it honours ``Retry-After``). Each attempt is bounded by the request timeout.

Capabilities are found out on the first request: with ``stream``/``tools`` set to ``auto``, a
server that answers the first request with a 400 or 422 is asked again without streaming, then
without tools, and the first combination it accepts is kept for the session (``notes`` says what
was given up). Requests run on a worker thread so that a cancel event stops the wait at once
(streamed replies are also closed between chunks); an abandoned request ends at its timeout.

The API key is read from the environment when the client is made and never stored elsewhere;
messages of errors raised here name the server and the model, never the key.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import openai

from cudalens.agent.config import OPENAI_BASE_URL, AgentConfig
from cudalens.agent.ledger import Usage, estimate_tokens
from cudalens.errors import CudalensError

PLACEHOLDER_KEY = "cudalens-no-key"  # local servers ignore the key; the openai client needs one
_POLL_S = 0.05


class ChatError(CudalensError):
    """A request failed after its retries: ``kind`` is ``timeout``, ``connection``, ``status``
    (``status`` holds the HTTP status) or ``reply`` (the server's answer was unusable)."""

    def __init__(self, message: str, kind: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class _EmptyStream(Exception):
    """A streamed request got no event at all: the server answered with something that is not
    a server-sent event stream (a whole JSON reply that ignores ``stream``, a page)."""


class Cancelled(CudalensError):
    """The cancel event was set while waiting for the model."""


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model sent it: ``arguments`` is the raw JSON text (maybe malformed)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    """One answer of the model. ``finish_reason`` is the server's (``stop``, ``length``,
    ``tool_calls``, or None when it sent none); ``seconds`` the request's wall-clock time."""

    content: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: Optional[str]
    usage: Usage
    streamed: bool
    seconds: float

    def assistant_message(self) -> dict[str, Any]:
        """The reply as a chat message to send back in later requests."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls]
        elif message["content"] is None:
            message["content"] = ""
        return message


def _run_cancellable(work: Callable[[], Any], cancel: Optional[threading.Event]) -> Any:
    """Runs ``work`` on a daemon thread; raises ``Cancelled`` as soon as ``cancel`` is set."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name="cudalens-chat", daemon=True).start()
    while not done.wait(_POLL_S):
        if cancel is not None and cancel.is_set():
            raise Cancelled("cancelled while waiting for the model")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _describe(exc: Exception, endpoint: str, timeout_s: float, retries: int) -> ChatError:
    tries = f"{retries + 1} attempt{'s' if retries else ''}"
    if isinstance(exc, openai.APITimeoutError):
        return ChatError(f"{endpoint}: no reply within the request timeout of {timeout_s:g} s "
                         f"({tries})", "timeout")
    if isinstance(exc, openai.APIConnectionError):
        return ChatError(f"{endpoint}: cannot connect ({tries}): {exc}", "connection")
    if isinstance(exc, openai.APIStatusError):
        detail = ""
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            err = body.get("error", body)
            detail = str(err.get("message", err) if isinstance(err, dict) else err)
        detail = detail or getattr(exc, "message", "") or str(exc)
        hint = {401: "; check the key in the environment variable named by api_key_env",
                403: "; the key in the environment variable named by api_key_env is not "
                     "allowed to use this model",
                404: "; check base_url and model",
                429: " (rate limited; retried with backoff)"}.get(exc.status_code, "")
        return ChatError(f"{endpoint}: the server answered HTTP {exc.status_code} ({tries}): "
                         f"{detail[:500]}{hint}", "status", exc.status_code)
    return ChatError(f"{endpoint}: the request failed: {exc}", "reply")


class ChatClient:
    """Sends chat-completions requests for one ``AgentConfig``.

    ``openai_client`` replaces the client made from the configuration (tests). ``notes`` holds
    one line per capability given up (streaming, tools).
    """

    def __init__(self, config: AgentConfig, *, openai_client: Any = None) -> None:
        self.config = config
        self._client = openai_client or openai.OpenAI(
            # explicit, so that OPENAI_BASE_URL in the environment cannot redirect the requests
            base_url=config.base_url or OPENAI_BASE_URL,
            api_key=config.api_key() or PLACEHOLDER_KEY,
            timeout=config.request_timeout_s, max_retries=config.max_retries)
        self.stream = config.stream != "off"
        self.tools = config.tools != "off"
        # streaming and tools are settled by the first request that succeeds with each
        self._stream_settled = config.stream != "auto"
        self._tools_settled = config.tools != "auto"
        self.notes: list[str] = []

    def close(self) -> None:
        self._client.close()

    # -- reachability --------------------------------------------------------------------

    def probe(self) -> Optional[str]:
        """None when the server answers and serves the model, else the reason it cannot be used.

        Lists the server's models (one attempt, ``probe_timeout_s``). A server without a model
        list (404 with a JSON error body) counts as reachable; a 404 with a page that is not
        JSON (a plain web server at that address), an answer that is not a model list, and a
        list that lacks the model do not.
        """
        cfg = self.config
        not_api = (f"{cfg.endpoint}: GET /models did not answer as an OpenAI-compatible API "
                   f"would")
        try:
            raw = self._client.with_options(max_retries=0, timeout=cfg.probe_timeout_s) \
                .models.with_raw_response.list()
        except openai.NotFoundError as exc:
            if isinstance(exc.body, (dict, list)):
                return None
            return (f"{not_api} (404 with a page that is not JSON: is the base URL right? It "
                    f"usually ends in /v1)")
        except (openai.APIError, OSError) as exc:
            return str(_describe(exc, cfg.endpoint, cfg.probe_timeout_s, 0))
        try:
            page = json.loads(raw.http_response.text)
        except ValueError as exc:
            kind = raw.headers.get("content-type", "no content type")
            return f"{not_api} ({raw.status_code} with {kind}, not JSON: {_short(str(exc))})"
        data = page.get("data") if isinstance(page, dict) else None
        if not isinstance(data, list):
            return (f"{not_api} (expected a JSON object with a 'data' list of models, found "
                    f"{_short(json.dumps(page))})")
        served = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
        if served and cfg.model not in served:
            shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            return (f"{cfg.endpoint}: the server does not serve model {cfg.model!r} "
                    f"(it serves: {shown})")
        return None

    # -- requests ------------------------------------------------------------------------

    def complete(self, messages: Sequence[dict[str, Any]], *,
                 tools: Optional[Sequence[dict[str, Any]]] = None,
                 cancel: Optional[threading.Event] = None,
                 timeout_s: Optional[float] = None) -> Reply:
        """One reply to ``messages``; ``tools`` are offered when tools are enabled.

        timeout_s: this request's timeout per attempt (default ``request_timeout_s``).

        Raises:
            Cancelled: ``cancel`` was set.
            ChatError: the request failed after its retries, or the reply had no choices.
        """
        timeout = timeout_s or self.config.request_timeout_s
        offer = bool(tools) and self.tools
        plans = [(self.stream, offer)]
        if offer and not self._tools_settled and self.config.tools == "auto":
            plans.append((self.stream, False))
        if self.stream and not self._stream_settled and self.config.stream == "auto":
            plans += [(False, offer), (False, False)]
        plans = list(dict.fromkeys(plans))
        first: Optional[Exception] = None
        for stream, use_tools in plans:
            try:
                reply = _run_cancellable(
                    lambda: self._request(messages, list(tools) if use_tools else None, stream,
                                          timeout, cancel), cancel)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                first = first or exc
                continue
            except _EmptyStream:
                if any(not later_stream for later_stream, _ in
                       plans[plans.index((stream, use_tools)) + 1:]):
                    continue  # whole replies are planned next
                raise ChatError(f"{self.config.endpoint}: the streamed reply held no events "
                                f"(the server does not stream? set stream = \"off\")",
                                "reply") from None
            except openai.APIError as exc:
                raise _describe(first or exc, self.config.endpoint, timeout,
                                self.config.max_retries) from None
            except (Cancelled, ChatError):
                raise
            except Exception as exc:  # noqa: BLE001 - a reply the client cannot read
                raise ChatError(f"{self.config.endpoint}: the server's reply is not a chat "
                                f"completion ({type(exc).__name__}: {_short(str(exc))})",
                                "reply") from None
            self._settle(stream, offer, use_tools)
            return reply
        assert first is not None
        raise _describe(first, self.config.endpoint, timeout, self.config.max_retries) from None

    def _settle(self, stream: bool, offered: bool, used_tools: bool) -> None:
        """Remembers what the server accepted, after the first success with each feature."""
        if not self._stream_settled:
            if self.stream and not stream:
                self.notes.append("the server refused streamed replies; using whole replies")
            self.stream, self._stream_settled = stream, True
        if offered and not self._tools_settled:
            if not used_tools:
                self.notes.append("the server refused tool definitions; candidates are taken "
                                  "from fenced code blocks")
            self.tools, self._tools_settled = used_tools, True

    def _request(self, messages, tools, stream: bool, timeout: float,
                 cancel: Optional[threading.Event]) -> Reply:
        cfg = self.config
        kwargs: dict[str, Any] = {"model": cfg.model, "messages": list(messages),
                                  "timeout": timeout}
        if cfg.temperature is not None:
            kwargs["temperature"] = cfg.temperature
        if cfg.max_reply_tokens is not None:
            kwargs["max_tokens"] = cfg.max_reply_tokens
        if tools:
            kwargs["tools"] = tools
        started = time.monotonic()
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
            content, calls, finish, usage = self._read_stream(
                self._client.chat.completions.create(**kwargs), cancel)
        else:
            content, calls, finish, usage = self._read_whole(
                self._client.chat.completions.create(**kwargs))
        if usage is None:
            prompt = estimate_tokens(json.dumps(m.get("content") or "") for m in messages)
            completion = estimate_tokens([content] + [c.arguments for c in calls])
            usage = Usage(prompt, completion, estimated=True)
        return Reply(content=content, tool_calls=tuple(calls), finish_reason=finish, usage=usage,
                     streamed=stream, seconds=time.monotonic() - started)

    def _read_whole(self, response: Any):
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ChatError(f"{self.config.endpoint}: the server's reply holds no choices",
                            "reply")
        choice = choices[0]
        message = choice.message
        calls = []
        for i, call in enumerate(getattr(message, "tool_calls", None) or []):
            fn = getattr(call, "function", None)
            calls.append(ToolCall(id=getattr(call, "id", None) or f"call_{i}",
                                  name=getattr(fn, "name", None) or "",
                                  arguments=getattr(fn, "arguments", None) or ""))
        return (message.content or "", calls, choice.finish_reason,
                _usage(getattr(response, "usage", None)))

    def _read_stream(self, stream: Any, cancel: Optional[threading.Event]):
        parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        finish: Optional[str] = None
        usage: Optional[Usage] = None
        events = 0
        try:
            for chunk in stream:
                events += 1
                if cancel is not None and cancel.is_set():
                    raise Cancelled("cancelled while the model was answering")
                usage = _usage(getattr(chunk, "usage", None)) or usage
                for choice in getattr(chunk, "choices", None) or []:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        parts.append(delta.content)
                    for call in delta.tool_calls or []:
                        index = call.index if call.index is not None else len(calls)
                        slot = calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
                        slot["id"] = slot["id"] or call.id
                        if call.function is not None:
                            slot["name"] = slot["name"] or call.function.name or ""
                            slot["arguments"] += call.function.arguments or ""
        finally:
            stream.close()
        if not events:
            raise _EmptyStream()
        tool_calls = [ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"])
                      for i, s in sorted(calls.items())]
        return "".join(parts), tool_calls, finish, usage


def _usage(raw: Any) -> Optional[Usage]:
    if raw is None or getattr(raw, "prompt_tokens", None) is None:
        return None
    return Usage(int(raw.prompt_tokens or 0), int(getattr(raw, "completion_tokens", 0) or 0))


def _short(text: str, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    one = " ".join(text.split())
    return one if len(one) <= limit else one[:limit - 3] + "..."
