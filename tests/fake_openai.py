"""A local HTTP server speaking the chat-completions protocol, replaying scripted replies.

``FakeOpenAI(steps)`` serves ``GET /v1/models`` and ``POST /v1/chat/completions`` on
127.0.0.1 (a free port) from a background thread. Each chat request takes the next ``Step``:
a reply (text and/or tool calls, whole or streamed as server-sent events with the usage in a
last chunk when ``stream_options.include_usage`` is asked), an error status with a JSON error
body and headers (``retry-after-ms`` for a 429), or a delay before answering (a slow reply).
``refuse_tools``/``refuse_stream`` make it answer 400 to requests that offer tools or ask for
a stream, without taking a step (a server without those features). Every request's JSON body
and Authorization header are recorded in ``requests``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

MODEL = "fake-coder"


@dataclass
class Step:
    """One scripted answer to a chat request.

    ``tool_calls``: ``(id, name, arguments_text)`` triples; ``finish_reason`` defaults to
    ``tool_calls`` or ``stop``; ``usage`` None sends no usage; ``status`` other than 200 sends
    ``error`` as the error message with ``headers``; ``delay_s`` waits before answering;
    ``chunk_chars``: size of the streamed content pieces.
    """

    content: str = ""
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    finish_reason: Optional[str] = None
    usage: Optional[dict[str, int]] = field(
        default_factory=lambda: {"prompt_tokens": 1000, "completion_tokens": 200})
    status: int = 200
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunk_chars: int = 40


def reply(content: str = "", *calls: tuple[str, str, str], **kw: Any) -> Step:
    return Step(content=content, tool_calls=tuple(calls), **kw)


def tool_call(call_id: str, name: str, **arguments: Any) -> tuple[str, str, str]:
    return (call_id, name, json.dumps(arguments))


class FakeOpenAI:
    """See the module doc. Use as a context manager; ``url`` is the base URL (``.../v1``)."""

    def __init__(self, steps: list[Step] = (), *, models: tuple[str, ...] = (MODEL,),
                 refuse_tools: bool = False, refuse_stream: bool = False,
                 models_status: int = 200) -> None:
        self.steps = list(steps)
        self.models = models
        self.refuse_tools = refuse_tools
        self.refuse_stream = refuse_stream
        self.models_status = models_status
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def add(self, *steps: Step) -> None:
        with self.lock:
            self.steps.extend(steps)

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def __enter__(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()


def _handler(fake: FakeOpenAI):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _json(self, status: int, body: Any, headers: Optional[dict[str, str]] = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: int, message: str, headers=None) -> None:
            self._json(status, {"error": {"message": message, "type": "invalid_request_error",
                                          "code": None}}, headers)

        def do_GET(self) -> None:
            with fake.lock:
                fake.requests.append({"path": self.path, "body": None,
                                      "auth": self.headers.get("Authorization")})
            if self.path.rstrip("/").endswith("/models"):
                if fake.models_status != 200:
                    self._error(fake.models_status, "models are not listed here")
                    return
                self._json(200, {"object": "list", "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "test"}
                    for m in fake.models]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append({"path": self.path, "body": body,
                                      "auth": self.headers.get("Authorization")})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            if fake.refuse_tools and body.get("tools"):
                self._error(400, "tools are not supported by this server")
                return
            if fake.refuse_stream and body.get("stream"):
                self._error(400, "streaming is not supported by this server")
                return
            with fake.lock:
                step = fake.steps.pop(0) if fake.steps else None
            if step is None:
                self._error(500, "the fake server has no scripted reply left")
                return
            if step.delay_s and fake.stopping.wait(step.delay_s):
                return
            try:
                if step.status != 200:
                    self._error(step.status, step.error or f"scripted status {step.status}",
                                step.headers)
                elif body.get("stream"):
                    self._stream(step, body)
                else:
                    self._json(200, _completion(step, body))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def _stream(self, step: Step, body: dict[str, Any]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in _chunks(step, body):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler


def _finish(step: Step) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def _completion(step: Step, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.content or None}
    if step.tool_calls:
        message["tool_calls"] = [{"id": i, "type": "function",
                                  "function": {"name": n, "arguments": a}}
                                 for i, n, a in step.tool_calls]
    out: dict[str, Any] = {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                           "model": body.get("model", MODEL),
                           "choices": [{"index": 0, "message": message,
                                        "finish_reason": _finish(step)}]}
    if step.usage is not None:
        out["usage"] = {**step.usage, "total_tokens": sum(step.usage.values())}
    return out


def _chunks(step: Step, body: dict[str, Any]) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: Optional[str] = None) -> dict[str, Any]:
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": body.get("model", MODEL),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    text = step.content
    for i in range(0, len(text), step.chunk_chars):
        out.append(chunk({"content": text[i:i + step.chunk_chars]}))
    for index, (call_id, name, args) in enumerate(step.tool_calls):
        out.append(chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                          "function": {"name": name, "arguments": ""}}]}))
        for i in range(0, len(args), step.chunk_chars):
            out.append(chunk({"tool_calls": [{"index": index, "function": {
                "arguments": args[i:i + step.chunk_chars]}}]}))
    out.append(chunk({}, _finish(step)))
    if step.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
        out.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                    "model": body.get("model", MODEL), "choices": [],
                    "usage": {**step.usage, "total_tokens": sum(step.usage.values())}})
    return out
