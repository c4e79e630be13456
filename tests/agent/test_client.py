"""`ModelClient` against `ModelServer` over real loopback HTTP.

What a caller of `respond()` sees: items in order and on time, retries with the server's
delays, errors that say what to fix, dropped and broken streams, presets, and keys that never
leak. Nothing here mocks httpx or the client; the autouse guard in conftest refuses every
connection off the loopback interface.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from handrail.agent import PRESETS, AssistantMessage, ModelClient, ModelError, TextDelta
from handrail.agent._codecs import CallReady
from handrail.errors import ConfigurationError
from handrail.testing import Fault, ModelServer, Reply, ToolUse

from .conftest import PROVIDERS, Seen, ask, respond

Serve = Callable[..., ModelServer]
Connect = Callable[..., ModelClient]

CANARY = "sk-CANARY-7f3a9c2e51b84d06"
KEY_ENV = {
    "openai_chat": "OPENAI_API_KEY",
    "openai_responses": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}


async def fails(client: ModelClient, seen: Seen | None = None, limit: float = 10.0) -> ModelError:
    """The `ModelError` that ends `client.respond(ask())` (items before it go to `seen`)."""
    with pytest.raises(ModelError) as info:
        await respond(client, seen=seen, limit=limit)
    return info.value


# -- what comes out, and when ----------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streamed_items_arrive_piece_by_piece_message_last(
    serve: Serve, connect: Connect, provider: str
) -> None:
    text = "Reading both files now."
    server = serve(
        Reply(
            reasoning="Two files.",
            text=text,
            tool_calls=[
                ToolUse("read_file", {"path": "a.py"}, id="call_1"),
                ToolUse("read_file", {"path": "b.py"}, id="call_2"),
            ],
            chunk_size=1,
        )
    )
    seen = await respond(connect(provider, server))
    assert seen.kinds() == ["ReasoningDelta", "TextDelta", "CallReady", "AssistantMessage"]
    # chunk_size=1: one delta per character, each yielded as it arrives.
    assert len([i for i in seen.items if isinstance(i, TextDelta)]) == len(text)
    assert [c.id for c in seen.calls()] == ["call_1", "call_2"]
    assert seen.message.calls == tuple(seen.calls())


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_whole_responses_give_the_same_items_once_each(
    serve: Serve, connect: Connect, provider: str
) -> None:
    # (Reasoning in whole answers: test_codecs.test_reasoning_streamed_or_whole.)
    calls = [
        ToolUse("read_file", {"path": "a.py"}, id="call_1"),
        ToolUse("read_file", {"path": "b.py"}, id="call_2"),
    ]
    server = serve(Reply(text="Reading.", tool_calls=calls))
    seen = await respond(connect(provider, server, stream=False))
    assert [type(i).__name__ for i in seen.items] == [
        "TextDelta",
        "CallReady",
        "CallReady",
        "AssistantMessage",
    ]
    assert seen.text() == seen.message.text == "Reading."
    assert [c.id for c in seen.calls()] == ["call_1", "call_2"]
    assert seen.message.calls == tuple(seen.calls())


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_text_is_yielded_as_it_streams_not_at_the_end(
    serve: Serve, connect: Connect, provider: str
) -> None:
    delay, pieces = 0.02, 20
    server = serve(Reply(text="x" * pieces, chunk_size=1, delay=delay))
    seen = await respond(connect(provider, server))
    first_text = seen.time_of(lambda i: isinstance(i, TextDelta))
    done = seen.time_of(lambda i: isinstance(i, AssistantMessage))
    # The scripted pauses between the first and the last piece (0.38 s) lie in between; a
    # client that buffered the answer would show ~0 s. A quarter leaves room for a busy CI.
    assert done - first_text >= (pieces - 1) * delay * 0.25


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic"])
async def test_a_finished_call_is_yielded_while_the_next_one_is_still_streaming(
    serve: Serve, connect: Connect, provider: str
) -> None:
    # Gemini sends calls whole in its last chunk; the other three stream their arguments,
    # and a call must go to the runtime as soon as its own arguments are complete.
    delay, long_args = 0.01, {"command": "x" * 30}
    first = ToolUse("read_file", {"path": "a.py"}, id="call_1")
    second = ToolUse("run_shell", long_args, id="call_2")
    server = serve(Reply(tool_calls=[first, second], chunk_size=1, delay=delay))
    seen = await respond(connect(provider, server))
    assert [c.id for c in seen.calls()] == ["call_1", "call_2"]
    ready_1 = seen.time_of(lambda i: isinstance(i, CallReady) and i.call.id == "call_1")
    ready_2 = seen.time_of(lambda i: isinstance(i, CallReady) and i.call.id == "call_2")
    done = seen.time_of(lambda i: isinstance(i, AssistantMessage))
    # The second call's 44 argument pieces stream after the first call is complete; a client
    # that held calls back to the end would show ~0 s here. A quarter leaves room for a busy CI.
    streaming_second = len(second.arguments_json()) * delay
    assert ready_2 - ready_1 >= streaming_second * 0.25
    assert done - ready_1 >= streaming_second * 0.25


async def test_gemini_calls_are_yielded_before_the_message(serve: Serve, connect: Connect) -> None:
    server = serve(
        Reply(
            text="Both.",
            tool_calls=[
                ToolUse("read_file", {"path": "a.py"}, id="g1"),
                ToolUse("read_file", {"path": "b.py"}, id="g2"),
            ],
        )
    )
    seen = await respond(connect("gemini", server))
    assert seen.kinds() == ["TextDelta", "CallReady", "AssistantMessage"]
    assert [c.id for c in seen.calls()] == ["g1", "g2"]


# -- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_429_with_retry_after_then_the_answer(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Fault(status=429, retry_after=0.05), Reply(text="Done."))
    seen = await respond(connect(provider, server))
    [retry] = seen.retries()
    assert seen.items[0] is retry
    assert (retry.attempt, retry.delay) == (1, 0.05)
    assert "429" in retry.reason
    assert seen.message.text == "Done." and seen.message.stop == "end"
    assert len(server.requests) == 2


async def test_retry_after_ms_wins_over_retry_after(serve: Serve, connect: Connect) -> None:
    server = serve(
        Fault(status=429, retry_after=30, headers={"retry-after-ms": "40"}), Reply(text="ok")
    )
    seen = await respond(connect("openai_chat", server))
    assert [r.delay for r in seen.retries()] == [0.04]


async def test_retry_after_as_an_http_date(serve: Serve, connect: Connect) -> None:
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    server = serve(Fault(status=503, headers={"Retry-After": past}), Reply(text="ok"))
    seen = await respond(connect("anthropic", server))
    assert [r.delay for r in seen.retries()] == [0.0]
    assert seen.message.text == "ok"


@pytest.mark.parametrize(
    ("provider", "status"),
    [(p, 503) for p in PROVIDERS]
    + [(p, 500) for p in PROVIDERS]
    + [("openai_chat", 408), ("openai_responses", 409), ("anthropic", 529), ("gemini", 504)],
)
async def test_server_failures_are_retried_with_backoff(
    serve: Serve, connect: Connect, provider: str, status: int
) -> None:
    server = serve(Fault(status=status), Reply(text="ok"))
    seen = await respond(connect(provider, server, retry_delay=0.02))
    [retry] = seen.retries()
    assert str(status) in retry.reason
    assert 0.015 <= retry.delay <= 0.02  # retry_delay, with up to 25% jitter off
    assert seen.message.text == "ok"
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_connection_dropped_before_any_byte_is_retried(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Fault(disconnect=True), Reply(text="ok"))
    seen = await respond(connect(provider, server))
    [retry] = seen.retries()
    assert "cannot reach the model server" in retry.reason
    assert seen.message.text == "ok" and seen.message.stop == "end"


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic"])
async def test_a_stream_dropped_before_any_content_is_retried(
    serve: Serve, connect: Connect, provider: str
) -> None:
    # One event (a role chunk, `response.created`, `message_start`) and then nothing.
    server = serve(Reply(text="lost", cut_after=1), Reply(text="ok"))
    seen = await respond(connect(provider, server))
    assert len(seen.retries()) == 1
    assert seen.text() == seen.message.text == "ok"


@pytest.mark.parametrize(
    ("status", "kind"), [(503, "server"), (500, "server"), (429, "rate_limit")]
)
async def test_retries_run_out(serve: Serve, connect: Connect, status: int, kind: str) -> None:
    server = serve(*[Fault(status=status)] * 3)
    seen = Seen()
    error = await fails(connect("openai_chat", server, max_retries=2), seen)
    assert [r.attempt for r in seen.retries()] == [1, 2]
    assert len(server.requests) == 3
    assert (error.kind, error.status, error.retryable) == (kind, status, True)
    assert f"HTTP {status}" in str(error)
    assert "3 attempts" in str(error) and "try again later" in str(error)


async def test_a_retry_after_longer_than_max_retry_wait_fails_at_once(
    serve: Serve, connect: Connect
) -> None:
    server = serve(Fault(status=429, retry_after=30), Reply(text="never"))
    seen = Seen()
    started = time.monotonic()
    error = await fails(connect("anthropic", server, max_retry_wait=1.0), seen, limit=5)
    assert time.monotonic() - started < 5
    assert seen.items == [] and len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("rate_limit", 429, True)
    assert "wait 30 s" in str(error) and "longer than 1 s" in str(error)
    assert "try again later" in str(error)


async def test_max_retry_wait_caps_only_what_the_server_asks(
    serve: Serve, connect: Connect
) -> None:
    # No Retry-After: the wait is the client's backoff (~0.2 s), not the server's ask.
    server = serve(Fault(status=500), Reply(text="ok"))
    client = connect("openai_chat", server, retry_delay=0.2, max_retry_wait=0.05)
    seen = await respond(client)
    assert seen.message.text == "ok"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_400_is_not_retried_and_shows_the_servers_reason(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Fault(status=400, body="messages.0.content: field required"), Reply())
    error = await fails(connect(provider, server))
    assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("bad_request", 400, False)
    assert "HTTP 400" in str(error) and "messages.0.content: field required" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_401_names_the_key_variable(
    serve: Serve, connect: Connect, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_KEY", CANARY)
    server = serve(Fault(status=401), Reply())
    error = await fails(connect(provider, server, api_key_env="HANDRAIL_TEST_KEY"))
    assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("auth", 401, False)
    assert "$HANDRAIL_TEST_KEY" in str(error) and "--api-key-env" in str(error)
    assert CANARY not in str(error)


async def test_401_without_a_key_says_the_variable_is_not_set(
    serve: Serve, connect: Connect
) -> None:
    server = serve(Fault(status=401), Fault(status=401), Reply())
    error = await fails(connect("openai_chat", server, api_key_env="MY_GATEWAY_KEY"))
    assert "no key was sent ($MY_GATEWAY_KEY is not set)" in str(error)
    # Another base URL than the provider's never gets the provider's own key variable.
    error = await fails(connect("openai_chat", server))
    assert "no key was sent (name the variable that holds it)" in str(error)


async def test_the_providers_own_key_never_goes_to_another_base_url(
    serve: Serve, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-openai")
    server = serve(Reply(text="hi"), Reply(text="hi"))
    await respond(connect("openai_chat", server))
    assert "authorization" not in server.requests[0].headers
    preset = ModelClient.from_spec("openai_chat:m", base_url=server.base_url("openai_chat"))
    try:
        await respond(preset)
    finally:
        await preset.aclose()
    assert "authorization" not in server.requests[1].headers


@pytest.mark.parametrize(
    "provider",
    [
        "openai_chat",
        "openai_responses",
        "anthropic",
        pytest.param(
            "gemini",
        ),
    ],
)
async def test_a_wrong_key_is_an_auth_error_naming_the_variable(
    serve: Serve, connect: Connect, provider: str
) -> None:
    # The server checks the credential the way each provider does (Gemini: 400 API_KEY_INVALID).
    server = serve(Reply(text="never"), require_key="the-right-key")
    error = await fails(connect(provider, server, api_key=CANARY, api_key_env=KEY_ENV[provider]))
    assert len(server.requests) == 1
    assert (error.kind, error.retryable) == ("auth", False)
    assert f"${KEY_ENV[provider]}" in str(error)
    assert CANARY not in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_403_points_at_the_keys_permissions_and_the_model(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Fault(status=403, body="not allowed"), Reply())
    error = await fails(connect(provider, server))
    assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("auth", 403, False)
    assert "permissions" in str(error) and "'test-model'" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_404_names_the_model_and_the_base_url(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Fault(status=404), Reply())
    client = connect(provider, server)
    error = await fails(client)
    assert len(server.requests) == 1
    assert (error.kind, error.status, error.retryable) == ("not_found", 404, False)
    assert "'test-model'" in str(error) and repr(client.base_url) in str(error)


# -- broken streams --------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_stream_cut_after_some_text_is_a_cut_message(
    serve: Serve, connect: Connect, provider: str
) -> None:
    full = "The fix is to add a comma after Hello."
    server = serve(Reply(text=full, chunk_size=2, cut_after=6))
    seen = await respond(connect(provider, server))
    message = seen.message
    assert message.stop == "cut"
    assert message.text and full.startswith(message.text) and message.text != full
    assert seen.text() == message.text
    assert message.calls == () and seen.retries() == []
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", ["openai_chat", "openai_responses", "anthropic"])
async def test_a_half_written_call_is_never_yielded(
    serve: Serve, connect: Connect, provider: str
) -> None:
    first = ToolUse("read_file", {"path": "a.py"}, id="call_1")
    second = ToolUse("run_shell", {"command": "pytest " + "x" * 60}, id="call_2")
    # Some 25 events into the second call's arguments, in each of the three layouts.
    cut = len(first.arguments_json()) + 32
    server = serve(Reply(tool_calls=[first, second], chunk_size=1, cut_after=cut))
    seen = await respond(connect(provider, server))
    assert [c.id for c in seen.calls()] == ["call_1"]
    assert [c.id for c in seen.message.calls] == ["call_1"]
    assert seen.message.stop == "cut"


async def test_gemini_calls_in_a_cut_stream_never_arrive(serve: Serve, connect: Connect) -> None:
    calls = [ToolUse("read_file", {"path": "a.py"}, id="g1")]
    server = serve(Reply(text="Reading the file.", tool_calls=calls, chunk_size=4, cut_after=3))
    seen = await respond(connect("gemini", server))
    assert seen.calls() == [] and seen.message.calls == ()
    assert seen.message.stop == "cut" and seen.message.text == "Reading the "


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_malformed_event_after_content_ends_the_message_as_cut(
    serve: Serve, connect: Connect, provider: str
) -> None:
    full = "Everything after the bad line is lost."
    server = serve(Reply(text=full, chunk_size=3, malformed_after=6), Reply(text="unused"))
    seen = await respond(connect(provider, server))
    assert seen.message.stop == "cut"
    assert seen.message.text and full.startswith(seen.message.text)
    assert seen.retries() == [] and len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_malformed_event_before_any_content_is_retried(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Reply(text="bad", malformed_after=0), Reply(text="good"))
    seen = await respond(connect(provider, server))
    [retry] = seen.retries()
    assert "not JSON" in retry.reason
    assert seen.text() == seen.message.text == "good"
    assert seen.message.stop == "end"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_hung_server_is_retried_then_fails_as_a_timeout(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Reply(text="late", hang=2.0), Reply(text="late", hang=2.0))
    seen = Seen()
    error = await fails(connect(provider, server, timeout=0.2, max_retries=1), seen, limit=5)
    assert len(seen.retries()) == 1 and len(server.requests) == 2
    assert (error.kind, error.retryable) == ("timeout", True)
    assert "did not answer within 0.2 s" in str(error)


async def test_a_slow_whole_response_is_a_timeout_too(serve: Serve, connect: Connect) -> None:
    server = serve(Reply(text="late", first_delay=2.0))
    client = connect("openai_chat", server, timeout=0.2, max_retries=0, stream=False)
    error = await fails(client, limit=5)
    assert error.kind == "timeout"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_10_mb_answer_streams_through(
    serve: Serve, connect: Connect, provider: str
) -> None:
    text = "0123456789abcdef" * 625_000  # 10,000,000 characters
    server = serve(Reply(text=text, chunk_size=256 * 1024))
    seen = await respond(connect(provider, server), limit=20)
    assert len(seen.message.text) == 10_000_000
    assert seen.message.text == text and seen.message.stop == "end"


# -- options ---------------------------------------------------------------------------------


async def test_max_output_tokens_and_extra_body_reach_the_request(
    serve: Serve, connect: Connect
) -> None:
    server = serve(Reply(text="ok"))
    client = connect("anthropic", server, max_output_tokens=1234, extra_body={"temperature": 0})
    await respond(client)
    body = server.requests[-1].body
    assert body["max_tokens"] == 1234
    assert body["temperature"] == 0


# -- presets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "provider", "base_url", "key_env"),
    [
        ("deepseek:deepseek-chat", "openai_chat", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
        ("openrouter:a/b", "openai_chat", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("anthropic:claude-x", "anthropic", "https://api.anthropic.com/v1", "ANTHROPIC_API_KEY"),
        ("openai:gpt-x", "openai_responses", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        ("openai_chat:gpt-x", "openai_chat", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        (
            "google:gemini-x",
            "gemini",
            "https://generativelanguage.googleapis.com/v1beta",
            "GEMINI_API_KEY",
        ),
        ("ollama:qwen3", "openai_chat", "http://127.0.0.1:11434/v1", None),
        ("vllm:qwen3", "openai_chat", "http://127.0.0.1:8000/v1", None),
        ("llamacpp:qwen3", "openai_chat", "http://127.0.0.1:8080/v1", None),
    ],
)
def test_presets_pick_wire_format_endpoint_and_key(
    spec: str, provider: str, base_url: str, key_env: str | None
) -> None:
    client = ModelClient.from_spec(spec)
    model = spec.partition(":")[2]
    assert (client.provider, client.base_url, client.model) == (provider, base_url, model)
    assert client.spec == spec  # as the user named it, so a resumed session finds the preset
    if key_env is None:
        assert client.key_required is False  # a local server: no key needed
    else:
        assert client.api_key_env == key_env


def test_deepseek_requests_go_to_its_own_chat_completions() -> None:
    client = ModelClient.from_spec("deepseek:deepseek-chat")
    assert client.codec.url(client.base_url, client.model, stream=True) == (
        "https://api.deepseek.com/chat/completions"
    )
    assert "max_tokens" in client.codec.body(ask(max_output_tokens=10), stream=True)


def test_options_win_over_the_preset() -> None:
    client = ModelClient.from_spec(
        "deepseek:deepseek-chat", base_url="http://127.0.0.1:9/v1", api_key_env="MY_KEY"
    )
    assert (client.base_url, client.api_key_env) == ("http://127.0.0.1:9/v1", "MY_KEY")


@pytest.mark.parametrize("spec", ["nope:model", "anthropic", "anthropic:", ":model", ""])
def test_a_bad_spec_names_the_allowed_providers(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ModelClient.from_spec(spec)
    message = str(info.value)
    assert "PROVIDER:MODEL" in message and repr(spec) in message
    for name in PRESETS:
        assert name in message


def test_an_unknown_wire_format_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="openai_chat, openai_responses, anthropic"):
        ModelClient("openai", "gpt-x")


async def test_a_local_preset_needs_no_key(serve: Serve) -> None:
    server = serve(Reply(text="hi from ollama"))
    client = ModelClient.from_spec("ollama:qwen3", base_url=server.base_url("openai_chat"))
    try:
        seen = await respond(client)
    finally:
        await client.aclose()
    assert seen.message.text == "hi from ollama"
    assert "authorization" not in server.requests[-1].headers


async def test_a_local_preset_never_sends_the_openai_key(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    server = serve(Reply(text="hi"))
    client = ModelClient.from_spec("vllm:qwen3", base_url=server.base_url("openai_chat"))
    try:
        await respond(client)
    finally:
        await client.aclose()
    assert CANARY not in str(server.requests[-1].headers)


@pytest.mark.parametrize(
    "name",
    [pytest.param(name) for name, preset in PRESETS.items() if preset.key_env is not None],
)
async def test_a_missing_key_for_an_official_endpoint_fails_before_the_network(
    name: str, network_attempts: list[str]
) -> None:
    key_env = PRESETS[name].key_env
    client = ModelClient.from_spec(f"{name}:some-model", max_retries=0, retry_delay=0.01)
    try:
        items = client.respond(ask())
        async with asyncio.timeout(5):
            with pytest.raises(ModelError) as info:
                await items.__anext__()  # the very first step raises; nothing was sent
        await items.aclose()
    finally:
        await client.aclose()
    assert network_attempts == []
    assert (info.value.kind, info.value.retryable) == ("auth", False)
    assert f"set {key_env}" in str(info.value)


async def test_the_key_variable_is_read_at_each_request(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(Reply(text="one"), Reply(text="two"), require_key="k2")
    client = ModelClient(
        "anthropic",
        "claude-x",
        base_url=server.base_url("anthropic"),
        api_key_env="ANTHROPIC_API_KEY",
    )
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k1")
        assert (await fails(client)).kind == "auth"
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k2")
        assert (await respond(client)).message.text == "one"
    finally:
        await client.aclose()


# -- the key never leaks ---------------------------------------------------------------------


def test_the_key_is_not_in_the_clients_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    for client in (
        ModelClient.from_spec("anthropic:claude-x"),
        ModelClient("openai_chat", "gpt-x", api_key=CANARY),
    ):
        assert client.api_key == CANARY
        assert CANARY not in repr(client) and CANARY not in str(client)


_FAILURES: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "400": ([Fault(status=400)], {}),
    "401": ([Fault(status=401)], {}),
    "403": ([Fault(status=403)], {}),
    "404": ([Fault(status=404)], {}),
    "429-wait": ([Fault(status=429, retry_after=30)], {"max_retry_wait": 1.0}),
    "503-exhausted": ([Fault(status=503)] * 2, {"max_retries": 1}),
    "disconnect-exhausted": ([Fault(disconnect=True)] * 2, {"max_retries": 1}),
    "hang": ([Reply(hang=2.0)], {"timeout": 0.2, "max_retries": 0}),
}


@pytest.mark.parametrize(
    ("provider", "failure"),
    # Each failure once, the providers taking turns; 401 (the likeliest to quote a key) on all.
    [(PROVIDERS[n % 4], f) for n, f in enumerate(_FAILURES)]
    + [(p, "401") for p in PROVIDERS if p != PROVIDERS[1]],
)
async def test_the_key_is_in_no_error_message(
    serve: Serve, connect: Connect, provider: str, failure: str
) -> None:
    script, options = _FAILURES[failure]
    server = serve(*script)
    seen = Seen()
    error = await fails(connect(provider, server, api_key=CANARY, **options), seen, limit=5)
    assert CANARY in str(server.requests[-1].headers)  # it was sent, where it belongs
    assert CANARY not in str(error)
    assert all(CANARY not in r.reason for r in seen.retries())


async def test_a_server_that_echoes_the_key_does_not_leak_it(
    serve: Serve, connect: Connect
) -> None:
    # Some OpenAI-compatible proxies quote the credential they refused.
    server = serve(Fault(status=400, body=f"invalid api key {CANARY}"))
    error = await fails(connect("openai_chat", server, api_key=CANARY))
    assert "invalid api key" in str(error)
    assert CANARY not in str(error)
