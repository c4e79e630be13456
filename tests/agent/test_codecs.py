"""The four wire formats as the client speaks them to `ModelServer` over real HTTP.

Requests: the JSON body, path and headers actually sent (snapshots), pairing problems the
server found, and provider state echoed back verbatim (Anthropic thinking signatures, Gemini
thought signatures). Responses: text, reasoning, calls, usage and stop reasons decoded from
each format, streamed and whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ToolCall, ToolResult
from handrail.agent import AssistantMessage, ModelClient, ToolResults, Usage, UserMessage
from handrail.testing import ModelServer, RecordedRequest, Reply, ToolUse

from .conftest import PROVIDERS, SYSTEM, ask, respond

Serve = Callable[..., ModelServer]
Connect = Callable[..., ModelClient]

KEY = "test-key-0001"

# One small conversation, built by hand so every id is fixed: a prompt, an assistant turn
# with text and two calls (one with argument text, one with an argument object), their results.
CONVERSATION = (
    UserMessage(text="Why does test_greet fail?"),
    AssistantMessage(
        text="Let me look.",
        calls=(
            ToolCall(id="call_1", name="read_file", arguments='{"path": "greet.py"}'),
            ToolCall(id="call_2", name="run_shell", arguments={"command": "pytest -q"}),
        ),
        provider="elsewhere",
    ),
    ToolResults(
        results=(
            ToolResult(
                ok=True, content="def greet(): ...", call_id="call_1", tool_name="read_file"
            ),
            ToolResult(ok=True, content="1 failed", call_id="call_2", tool_name="run_shell"),
        )
    ),
)

# Headers every httpx request carries; what is left is what the wire format chose to send.
_GENERIC_HEADERS = {
    "host",
    "accept",
    "accept-encoding",
    "connection",
    "user-agent",
    "content-length",
}


def cache_marks(value: Any, path: str = "") -> list[str]:
    """Where `cache_control` sits in a body, as `tools[1]`-style paths."""
    if isinstance(value, dict):
        here = [path] if "cache_control" in value else []
        return here + [m for k, v in value.items() for m in cache_marks(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [m for n, v in enumerate(value) for m in cache_marks(v, f"{path}[{n}]")]
    return []


def sent(request: RecordedRequest) -> dict[str, Any]:
    """The parts of a recorded request that the wire format decides."""
    return {
        "path": request.path,
        "query": dict(request.query),
        "headers": {k: v for k, v in sorted(request.headers.items()) if k not in _GENERIC_HEADERS},
        "body": request.body,
    }


async def _send_conversation(serve: Serve, connect: Connect, provider: str) -> ModelServer:
    server = serve(Reply(text="The greeting lacks a comma."))
    client = connect(provider, server, api_key=KEY)
    seen = await respond(client, ask(*CONVERSATION))
    assert seen.message.text == "The greeting lacks a comma."
    assert server.problems == []
    return server


# -- requests as sent ------------------------------------------------------------------------


async def test_openai_chat_request(serve: Serve, connect: Connect) -> None:
    server = await _send_conversation(serve, connect, "openai_chat")
    assert sent(server.requests[-1]) == snapshot(
        {
            "path": "/v1/chat/completions",
            "query": {},
            "headers": {
                "authorization": "Bearer test-key-0001",
                "content-type": "application/json",
            },
            "body": {
                "model": "test-model",
                "messages": [
                    {"role": "system", "content": "You are a terse coding agent."},
                    {"role": "user", "content": "Why does test_greet fail?"},
                    {
                        "role": "assistant",
                        "content": "Let me look.",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "read_file",
                                    "arguments": '{"path": "greet.py"}',
                                },
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {
                                    "name": "run_shell",
                                    "arguments": '{"command": "pytest -q"}',
                                },
                            },
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call_1", "content": "def greet(): ..."},
                    {"role": "tool", "tool_call_id": "call_2", "content": "1 failed"},
                ],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "description": "Read a text file.",
                            "parameters": {
                                "additionalProperties": False,
                                "properties": {"path": {"type": "string"}},
                                "required": ["path"],
                                "type": "object",
                            },
                            "strict": True,
                        },
                    },
                    {
                        "type": "function",
                        "function": {
                            "name": "run_shell",
                            "description": "Run a shell command.",
                            "parameters": {
                                "additionalProperties": False,
                                "properties": {"command": {"type": "string"}},
                                "required": ["command"],
                                "type": "object",
                            },
                            "strict": True,
                        },
                    },
                ],
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        }
    )
    body = server.requests[-1].body
    assert body["stream_options"] == {"include_usage": True}  # usage arrives in the stream
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}


async def test_openai_responses_request(serve: Serve, connect: Connect) -> None:
    server = await _send_conversation(serve, connect, "openai_responses")
    assert sent(server.requests[-1]) == snapshot(
        {
            "path": "/v1/responses",
            "query": {},
            "headers": {
                "authorization": "Bearer test-key-0001",
                "content-type": "application/json",
            },
            "body": {
                "model": "test-model",
                "input": [
                    {"role": "user", "content": "Why does test_greet fail?"},
                    {"role": "assistant", "content": "Let me look."},
                    {
                        "type": "function_call",
                        "call_id": "call_1",
                        "name": "read_file",
                        "arguments": '{"path": "greet.py"}',
                    },
                    {
                        "type": "function_call",
                        "call_id": "call_2",
                        "name": "run_shell",
                        "arguments": '{"command": "pytest -q"}',
                    },
                    {
                        "type": "function_call_output",
                        "call_id": "call_1",
                        "output": "def greet(): ...",
                    },
                    {"type": "function_call_output", "call_id": "call_2", "output": "1 failed"},
                ],
                "store": False,
                "instructions": "You are a terse coding agent.",
                "tools": [
                    {
                        "type": "function",
                        "name": "read_file",
                        "description": "Read a text file.",
                        "parameters": {
                            "additionalProperties": False,
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                            "type": "object",
                        },
                        "strict": True,
                    },
                    {
                        "type": "function",
                        "name": "run_shell",
                        "description": "Run a shell command.",
                        "parameters": {
                            "additionalProperties": False,
                            "properties": {"command": {"type": "string"}},
                            "required": ["command"],
                            "type": "object",
                        },
                        "strict": True,
                    },
                ],
                "stream": True,
            },
        }
    )
    body = server.requests[-1].body
    assert body["store"] is False and body["instructions"] == SYSTEM  # stateless


async def test_anthropic_request(serve: Serve, connect: Connect) -> None:
    server = await _send_conversation(serve, connect, "anthropic")
    assert sent(server.requests[-1]) == snapshot(
        {
            "path": "/v1/messages",
            "query": {},
            "headers": {
                "anthropic-version": "2023-06-01",
                "content-type": "application/json",
                "x-api-key": "test-key-0001",
            },
            "body": {
                "model": "test-model",
                "max_tokens": 16000,
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": "Why does test_greet fail?"}],
                    },
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Let me look."},
                            {
                                "type": "tool_use",
                                "id": "call_1",
                                "name": "read_file",
                                "input": {"path": "greet.py"},
                            },
                            {
                                "type": "tool_use",
                                "id": "call_2",
                                "name": "run_shell",
                                "input": {"command": "pytest -q"},
                            },
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "call_1",
                                "content": "def greet(): ...",
                                "is_error": False,
                            },
                            {
                                "type": "tool_result",
                                "tool_use_id": "call_2",
                                "content": "1 failed",
                                "is_error": False,
                                "cache_control": {"type": "ephemeral"},
                            },
                        ],
                    },
                ],
                "system": [
                    {
                        "type": "text",
                        "text": "You are a terse coding agent.",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
                "tools": [
                    {
                        "name": "read_file",
                        "description": "Read a text file.",
                        "input_schema": {
                            "additionalProperties": False,
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                            "type": "object",
                        },
                    },
                    {
                        "name": "run_shell",
                        "description": "Run a shell command.",
                        "input_schema": {
                            "additionalProperties": False,
                            "properties": {"command": {"type": "string"}},
                            "required": ["command"],
                            "type": "object",
                        },
                        "cache_control": {"type": "ephemeral"},
                    },
                ],
                "stream": True,
            },
        }
    )
    request = server.requests[-1]
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["x-api-key"] == KEY
    assert request.body["max_tokens"] == 16_000
    # Three cache breakpoints: the system prompt, the last tool, the newest block.
    assert cache_marks(request.body) == [
        ".messages[2].content[1]",
        ".system[0]",
        ".tools[1]",
    ]


async def test_gemini_request(serve: Serve, connect: Connect) -> None:
    server = await _send_conversation(serve, connect, "gemini")
    assert sent(server.requests[-1]) == snapshot(
        {
            "path": "/v1beta/models/test-model:streamGenerateContent",
            "query": {"alt": "sse"},
            "headers": {"content-type": "application/json", "x-goog-api-key": "test-key-0001"},
            "body": {
                "contents": [
                    {"role": "user", "parts": [{"text": "Why does test_greet fail?"}]},
                    {
                        "role": "model",
                        "parts": [
                            {"text": "Let me look."},
                            {
                                "functionCall": {
                                    "name": "read_file",
                                    "args": {"path": "greet.py"},
                                    "id": "call_1",
                                }
                            },
                            {
                                "functionCall": {
                                    "name": "run_shell",
                                    "args": {"command": "pytest -q"},
                                    "id": "call_2",
                                }
                            },
                        ],
                    },
                    {
                        "role": "user",
                        "parts": [
                            {
                                "functionResponse": {
                                    "name": "read_file",
                                    "id": "call_1",
                                    "response": {"output": "def greet(): ..."},
                                }
                            },
                            {
                                "functionResponse": {
                                    "name": "run_shell",
                                    "id": "call_2",
                                    "response": {"output": "1 failed"},
                                }
                            },
                        ],
                    },
                ],
                "systemInstruction": {"parts": [{"text": "You are a terse coding agent."}]},
                "tools": [
                    {
                        "functionDeclarations": [
                            {
                                "name": "read_file",
                                "description": "Read a text file.",
                                "parameters": {
                                    "type": "object",
                                    "properties": {"path": {"type": "string"}},
                                    "required": ["path"],
                                },
                            },
                            {
                                "name": "run_shell",
                                "description": "Run a shell command.",
                                "parameters": {
                                    "type": "object",
                                    "properties": {"command": {"type": "string"}},
                                    "required": ["command"],
                                },
                            },
                        ]
                    }
                ],
            },
        }
    )
    request = server.requests[-1]
    assert request.path == "/v1beta/models/test-model:streamGenerateContent"
    assert request.query == {"alt": "sse"}
    assert request.headers["x-goog-api-key"] == KEY
    assert request.body["systemInstruction"] == {"parts": [{"text": SYSTEM}]}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_whole_responses_are_asked_for_without_stream_flags(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Reply(text="ok"))
    client = connect(provider, server, stream=False)
    await respond(client, ask(*CONVERSATION))
    request = server.requests[-1]
    assert request.stream is False
    assert "stream" not in request.body and "stream_options" not in request.body
    if provider == "gemini":
        assert request.path.endswith(":generateContent") and request.query == {}
    assert server.problems == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_key_is_sent_only_where_the_provider_reads_it(
    serve: Serve, connect: Connect, provider: str
) -> None:
    server = serve(Reply(text="ok"), require_key=KEY)
    await respond(connect(provider, server, api_key=KEY))
    request = server.requests[-1]
    carriers = {k for k, v in request.headers.items() if KEY in v}
    assert (
        carriers
        == {
            "openai_chat": {"authorization"},
            "openai_responses": {"authorization"},
            "anthropic": {"x-api-key"},
            "gemini": {"x-goog-api-key"},
        }[provider]
    )
    assert KEY not in json.dumps(request.query) and KEY.encode() not in request.raw


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_no_key_no_auth_header(serve: Serve, connect: Connect, provider: str) -> None:
    server = serve(Reply(text="ok"))
    await respond(connect(provider, server))
    headers = server.requests[-1].headers
    assert not {"authorization", "x-api-key", "x-goog-api-key"} & set(headers)


def test_openai_chat_uses_max_completion_tokens_only_on_openai_itself() -> None:
    request = ask(max_output_tokens=500)
    official = ModelClient("openai_chat", "gpt-x", api_key=KEY)
    local = ModelClient("openai_chat", "qwen3", base_url="http://127.0.0.1:9/v1")
    assert official.codec.body(request, stream=True)["max_completion_tokens"] == 500
    assert local.codec.body(request, stream=True)["max_tokens"] == 500


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_conversation_that_came_from_another_provider_is_valid_everywhere(
    serve: Serve, connect: Connect, provider: str
) -> None:
    # An Anthropic answer (with a signed thinking block) continued on each provider: only
    # Anthropic gets the thinking block back; every history is one the provider accepts.
    server = serve(
        Reply(reasoning="Check greet.py.", tool_calls=[ToolUse("read_file", {"path": "a.py"})]),
        Reply(text="done"),
    )
    first = await respond(connect("anthropic", server))
    signature = first.message.raw[0]["signature"]
    results = ToolResults(
        results=(ToolResult(ok=True, content="x", call_id=first.message.calls[0].id),)
    )
    await respond(connect(provider, server), ask(UserMessage(text="Go."), first.message, results))
    body = server.requests[-1].raw.decode()
    assert (signature in body) == (provider == "anthropic")
    assert server.problems == []


# -- provider state echoed back --------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_anthropic_thinking_blocks_go_back_verbatim(
    serve: Serve, connect: Connect, stream: bool
) -> None:
    server = serve(
        Reply(
            reasoning="The test expects a comma.",
            tool_calls=[ToolUse("read_file", {"path": "greet.py"}, id="toolu_01")],
            chunk_size=4,
        ),
        Reply(text="Fixed."),
    )
    client = connect("anthropic", server, stream=stream)
    first = (await respond(client)).message
    assert first.reasoning == "The test expects a comma."
    [thinking] = first.raw
    assert thinking["type"] == "thinking"
    assert thinking["thinking"] == "The test expects a comma."
    assert len(thinking["signature"]) > 40

    results = ToolResults(
        results=(ToolResult(ok=True, content="...", call_id="toolu_01", tool_name="read_file"),)
    )
    await respond(client, ask(UserMessage(text="Fix it."), first, results))
    assistant = server.requests[-1].body["messages"][1]
    assert assistant["role"] == "assistant"
    # The signed block first, unchanged, then the call (thinking must precede tool_use).
    assert assistant["content"][0] == thinking
    assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use"]
    assert server.problems == []


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_gemini_thought_signatures_go_back_verbatim(
    serve: Serve, connect: Connect, stream: bool
) -> None:
    server = serve(
        Reply(
            reasoning="Look at greet.py first.",
            text="Reading.",
            tool_calls=[
                ToolUse("read_file", {"path": "greet.py"}, id="fc_1"),
                ToolUse("run_shell", {"command": "pytest"}, id="fc_2"),
            ],
            chunk_size=5,
        ),
        Reply(text="Fixed."),
    )
    client = connect("gemini", server, stream=stream)
    first = (await respond(client)).message
    signed = [p for p in first.raw if "thoughtSignature" in p]
    assert len(signed) == 1 and "functionCall" in signed[0]  # on the first call, as sent

    results = ToolResults(
        results=(
            ToolResult(ok=True, content="...", call_id="fc_1", tool_name="read_file"),
            ToolResult(ok=True, content="1 failed", call_id="fc_2", tool_name="run_shell"),
        )
    )
    await respond(client, ask(UserMessage(text="Fix it."), first, results))
    model_turn = server.requests[-1].body["contents"][1]
    assert model_turn["role"] == "model"
    assert signed[0] in model_turn["parts"]
    assert [p["functionCall"]["id"] for p in model_turn["parts"] if "functionCall" in p] == [
        "fc_1",
        "fc_2",
    ]
    assert server.problems == []


# -- responses decoded -----------------------------------------------------------------------

TWO_CALLS = [
    # Argument text with unusual spacing and a non-ASCII character: formats that carry text
    # must hand it over exactly as written.
    ToolUse("read_file", '{"path":  "naïve.py"}', id="call_A1"),
    ToolUse("run_shell", '{"command": "pytest -x tests/"}', id="call_B2"),
]


def _as_sent(provider: str, stream: bool, call: ToolCall, use: ToolUse) -> None:
    assert (call.id, call.name) == (use.id, use.name)
    if isinstance(call.arguments, str):
        assert call.arguments == use.arguments  # the very text the model wrote
    else:
        # Gemini (always) and Anthropic's whole responses carry an object, not text.
        assert (provider, stream) in {("gemini", True), ("gemini", False), ("anthropic", False)}
        assert dict(call.arguments) == use.arguments_object()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_text_and_two_calls_with_ids_and_arguments_as_sent(
    serve: Serve, connect: Connect, provider: str, stream: bool
) -> None:
    server = serve(
        Reply(
            text="I will read the file and run the tests.",
            reasoning="The failure is in greet.",
            tool_calls=TWO_CALLS,
            chunk_size=1,
        )
    )
    seen = await respond(connect(provider, server, stream=stream))
    message = seen.message
    assert message.text == seen.text() == "I will read the file and run the tests."
    assert message.calls == tuple(seen.calls())
    assert len(message.calls) == 2
    for call, use in zip(message.calls, TWO_CALLS, strict=True):
        _as_sent(provider, stream, call, use)
    assert (message.provider, message.model) == (provider, "test-model")
    assert server.problems == []


@pytest.mark.parametrize(
    ("provider", "stream"),
    [
        pytest.param(
            p,
            s,
            id=f"{p}-{'streamed' if s else 'whole'}",
        )
        for p in PROVIDERS
        for s in (True, False)
    ],
)
async def test_reasoning_streamed_or_whole(
    serve: Serve, connect: Connect, provider: str, stream: bool
) -> None:
    server = serve(Reply(reasoning="The failure is in greet.", text="Answer.", chunk_size=3))
    seen = await respond(connect(provider, server, stream=stream))
    assert seen.message.reasoning == "The failure is in greet."
    assert seen.reasoning() == "The failure is in greet."
    assert seen.kinds() == ["ReasoningDelta", "TextDelta", "AssistantMessage"]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_usage_maps_to_usage(
    serve: Serve, connect: Connect, provider: str, stream: bool
) -> None:
    # OpenAI meaning: 1200 prompt tokens of which 1000 cached; 300 out of which 80 reasoning.
    # Each format splits them its own way (Anthropic leaves the cached part out of
    # input_tokens; Gemini counts thoughts apart); the client puts them back together.
    server = serve(
        Reply(
            text="ok",
            reasoning="hm",
            input_tokens=1200,
            cached_tokens=1000,
            output_tokens=300,
            reasoning_tokens=80,
        )
    )
    seen = await respond(connect(provider, server, stream=stream))
    assert seen.message.usage == Usage(
        input_tokens=1200, output_tokens=300, cached_tokens=1000, requests=1
    )


_CALL = [ToolUse("read_file", {"path": "a.py"}, id="call_1")]


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize(
    ("provider", "reply", "stop"),
    [
        *[pytest.param(p, Reply(text="Done."), "end", id=f"{p}-end") for p in PROVIDERS],
        *[
            pytest.param(p, Reply(text="Cut", stop="max_tokens"), "max_tokens", id=f"{p}-max")
            for p in PROVIDERS
        ],
        *[
            pytest.param(
                p,
                Reply(text="Reading.", tool_calls=_CALL),
                "tool_calls",
                id=f"{p}-calls",
            )
            for p in PROVIDERS
        ],
    ],
)
async def test_stop_reasons(
    serve: Serve, connect: Connect, provider: str, reply: Reply, stop: str, stream: bool
) -> None:
    server = serve(reply)
    seen = await respond(connect(provider, server, stream=stream))
    assert seen.message.stop == stop
