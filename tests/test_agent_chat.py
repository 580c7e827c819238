"""The chat client against a local chat-completions server: whole and streamed replies, tool
calls, retries on 429 and 5xx, timeouts, servers without streaming or tools, cancellation,
usage, and the API key kept out of messages."""

from __future__ import annotations

import json
import threading
import time

import pytest

from cudalens.agent.chat import Cancelled, ChatClient, ChatError
from cudalens.agent.config import AgentConfig
from canned_http import Canned
from fake_openai import MODEL, FakeOpenAI, Step, reply, tool_call

HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [{"type": "function", "function": {"name": "evaluate", "parameters": {
    "type": "object", "properties": {"source": {"type": "string"}}}}}]


def client(fake: FakeOpenAI, **kw) -> ChatClient:
    kw.setdefault("max_retries", 0)
    kw.setdefault("request_timeout_s", 5.0)
    return ChatClient(AgentConfig(model=MODEL, base_url=fake.url, **kw))


@pytest.mark.parametrize("stream", ["on", "off"])
def test_a_reply_with_text_and_usage(stream):
    text = "Use a grid-stride loop.\n```cuda\n__global__ void k() {}\n```\n" * 3
    with FakeOpenAI([reply(text, chunk_chars=7)]) as fake:
        out = client(fake, stream=stream, temperature=0.2, max_reply_tokens=900).complete(HELLO)
        body = fake.chat_bodies()[0]
    assert out.content == text and out.finish_reason == "stop"
    assert (out.usage.prompt_tokens, out.usage.completion_tokens, out.usage.estimated) == \
        (1000, 200, False)
    assert out.streamed is (stream == "on")
    assert body["model"] == MODEL and body["messages"] == HELLO
    assert (body["temperature"], body["max_tokens"]) == (0.2, 900)
    assert body.get("stream", False) is (stream == "on")


@pytest.mark.parametrize("stream", ["on", "off"])
def test_tool_calls_are_assembled(stream):
    calls = (tool_call("call_a", "compile", source="__global__ void k() {}"),
             tool_call("call_b", "evaluate", source="x" * 100, block="256"))
    with FakeOpenAI([reply("", *calls, chunk_chars=9)]) as fake:
        out = client(fake, stream=stream).complete(HELLO, tools=TOOLS)
        assert fake.chat_bodies()[0]["tools"] == TOOLS
    assert [(c.id, c.name, c.arguments) for c in out.tool_calls] == [c for c in calls]
    assert out.finish_reason == "tool_calls"
    assert out.assistant_message() == {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                       for i, n, a in calls]}


@pytest.mark.parametrize("status", [429, 503])
def test_rate_limits_and_server_errors_are_retried(status):
    with FakeOpenAI([Step(status=status, headers={"retry-after-ms": "20"}),
                     reply("second time lucky")]) as fake:
        out = client(fake, max_retries=2, stream="off").complete(HELLO)
        assert len(fake.chat_bodies()) == 2
    assert out.content == "second time lucky"


def test_retries_give_up_with_the_status_and_the_servers_message():
    with FakeOpenAI([Step(status=429, error="slow down", headers={"retry-after-ms": "10"})] * 2) \
            as fake:
        with pytest.raises(ChatError) as err:
            client(fake, max_retries=1, stream="off").complete(HELLO)
    assert err.value.kind == "status" and err.value.status == 429
    assert str(err.value) == (f"{MODEL} at {fake.url}: the server answered HTTP 429 (2 attempts): "
                              f"slow down (rate limited; retried with backoff)")


def test_a_slow_reply_times_out_quickly():
    with FakeOpenAI([Step(content="late", delay_s=5.0)]) as fake:
        started = time.monotonic()
        with pytest.raises(ChatError) as err:
            client(fake, request_timeout_s=0.3, stream="off").complete(HELLO)
        elapsed = time.monotonic() - started
    assert err.value.kind == "timeout"
    assert "no reply within the request timeout of 0.3 s (1 attempt)" in str(err.value)
    assert elapsed < 2.0


def test_a_timed_out_request_is_retried():
    with FakeOpenAI([Step(content="late", delay_s=5.0), reply("on time")]) as fake:
        out = client(fake, request_timeout_s=0.3, max_retries=1).complete(HELLO)
    assert out.content == "on time"


def test_a_server_without_tools_is_asked_again_without_them_and_remembers():
    with FakeOpenAI([reply("one"), reply("two")], refuse_tools=True) as fake:
        chat = client(fake)
        assert chat.complete(HELLO, tools=TOOLS).content == "one"
        assert chat.complete(HELLO, tools=TOOLS).content == "two"
        bodies = fake.chat_bodies()
    assert ["tools" in b for b in bodies] == [True, False, False]
    assert chat.tools is False
    assert chat.notes == ["the server refused tool definitions; candidates are taken from fenced "
                          "code blocks"]


def test_a_server_without_streaming_is_asked_for_whole_replies():
    with FakeOpenAI([reply("whole")], refuse_stream=True) as fake:
        chat = client(fake)
        assert chat.complete(HELLO).content == "whole"
        assert [b.get("stream", False) for b in fake.chat_bodies()] == [True, False]
    assert chat.notes == ["the server refused streamed replies; using whole replies"]


def test_tools_on_means_a_refusal_is_an_error():
    with FakeOpenAI([reply("never")], refuse_tools=True) as fake:
        with pytest.raises(ChatError, match=r"HTTP 400 .*tools are not supported"):
            client(fake, tools="on", stream="off").complete(HELLO, tools=TOOLS)


def test_cancelling_stops_the_wait_at_once():
    cancel = threading.Event()
    with FakeOpenAI([Step(content="late", delay_s=10.0)]) as fake:
        threading.Timer(0.2, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(Cancelled):
            client(fake, request_timeout_s=30).complete(HELLO, cancel=cancel)
        assert time.monotonic() - started < 1.5


def test_usage_is_estimated_when_the_server_reports_none():
    with FakeOpenAI([reply("x" * 400, usage=None)]) as fake:
        out = client(fake).complete([{"role": "user", "content": "y" * 798}])
    assert out.usage.estimated
    assert out.usage.completion_tokens == 100
    assert out.usage.prompt_tokens == 200  # 800 characters with the JSON quotes, 4 per token


def test_the_key_comes_from_the_named_variable_and_stays_out_of_errors(monkeypatch):
    secret = "sk-test-abcdefghijklmnop0123456789"
    monkeypatch.setenv("CUDALENS_TEST_KEY", secret)
    with FakeOpenAI([Step(status=401, error="invalid api key")]) as fake:
        with pytest.raises(ChatError) as err:
            client(fake, api_key_env="CUDALENS_TEST_KEY", stream="off").complete(HELLO)
        assert fake.requests[0]["auth"] == f"Bearer {secret}"
    assert secret not in str(err.value)
    assert str(err.value).endswith("invalid api key; check the key in the environment variable "
                                   "named by api_key_env")


@pytest.mark.parametrize("body,found", [
    (b'{"foo": [1,2,', "JSONDecodeError: Expecting value: line 1 column 14 (char 13)"),
    (b'{"choices": "nope"}', "AttributeError: 'str' object has no attribute 'message'"),
    (b"<html>x</html>", "JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
])
def test_a_reply_that_is_not_a_chat_completion_is_a_chat_error(body, found):
    with Canned(200, body, "application/json") as server:
        client = ChatClient(AgentConfig(model="m", base_url=server.url, max_retries=0,
                                        stream="off"))
        with pytest.raises(ChatError) as e:
            client.complete([{"role": "user", "content": "hi"}])
        client.close()
    assert e.value.kind == "reply"
    assert str(e.value) == (f"m at {server.url}: the server's reply is not a chat completion "
                            f"({found})")


def test_a_server_that_ignores_stream_gets_whole_requests_instead():
    # answers a streamed request with one whole JSON reply (no server-sent events)
    whole = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                        "choices": [{"index": 0, "finish_reason": "stop", "message": {
                            "role": "assistant", "content": "```cuda\nkernel\n```"}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                  "total_tokens": 15}}).encode()
    with Canned(200, whole, "application/json") as server:
        client = ChatClient(AgentConfig(model="m", base_url=server.url, max_retries=0))
        reply = client.complete([{"role": "user", "content": "hi"}])
        again = client.complete([{"role": "user", "content": "hi"}])
        client.close()
    assert (reply.content, reply.streamed, again.streamed) == ("```cuda\nkernel\n```", False,
                                                              False)
    assert client.notes == ["the server refused streamed replies; using whole replies"]


def test_an_empty_stream_with_streaming_forced_is_a_chat_error():
    with Canned(200, b'{"choices": []}', "application/json") as server:
        client = ChatClient(AgentConfig(model="m", base_url=server.url, max_retries=0,
                                        stream="on"))
        with pytest.raises(ChatError, match=r"the streamed reply held no events \(the server "
                                            r"does not stream\? set stream = \"off\"\)"):
            client.complete([{"role": "user", "content": "hi"}])
        client.close()
