"""Requests a real provider refuses: each one is a problem, a 400 in its shape, nothing consumed."""

from __future__ import annotations

from typing import Any

import pytest

from handrail.testing import Reply

USER = {"role": "user", "content": "Fix the bug."}

# -- histories, per provider: valid ones, then (broken, what the problem says) ---------------

CHAT_CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
        {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
    ],
}


def chat_result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


RESPONSES_CALLS = [
    {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{}"},
    {"type": "function_call", "call_id": "call_2", "name": "ls", "arguments": "{}"},
]


def responses_result(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


ANTHROPIC_CALL = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}},
        {"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}},
    ],
}


def anthropic_result(*ids: str, text_first: bool = False) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids
    ]
    if text_first:
        blocks.insert(0, {"type": "text", "text": "here"})
    return {"role": "user", "content": blocks}


GEMINI_USER = {"role": "user", "parts": [{"text": "Fix the bug."}]}
GEMINI_CALL = {
    "role": "model",
    "parts": [
        {"functionCall": {"name": "read_file", "args": {}}},
        {"functionCall": {"name": "ls", "args": {}}},
    ],
}


def gemini_result(*names: str) -> dict[str, Any]:
    parts = [{"functionResponse": {"name": n, "response": {"output": "ok"}}} for n in names]
    return {"role": "user", "parts": parts}


BROKEN = [
    (
        "openai_chat",
        {"messages": [USER, CHAT_CALL, chat_result("call_1"), USER]},
        "call_2 have no tool message",
    ),
    ("openai_chat", {"messages": [USER, CHAT_CALL]}, "never answered"),
    (
        "openai_chat",
        {
            "messages": [
                USER,
                CHAT_CALL,
                chat_result("call_1"),
                chat_result("call_2"),
                chat_result("call_2"),
            ]
        },
        "answered twice",
    ),
    ("openai_chat", {"messages": [USER, chat_result("call_9")]}, "unknown call call_9"),
    ("openai_chat", {"model": "", "messages": [USER]}, "no `model`"),
    (
        "openai_responses",
        {"input": [USER, *RESPONSES_CALLS, responses_result("call_1"), USER]},
        "call_2 have no function_call_output",
    ),
    ("openai_responses", {"input": [USER, *RESPONSES_CALLS]}, "never answered"),
    ("openai_responses", {"input": [USER, responses_result("call_9")]}, "unknown call call_9"),
    (
        "openai_responses",
        {
            "input": [
                USER,
                *RESPONSES_CALLS,
                *(responses_result(c) for c in ("call_1", "call_2", "call_1")),
            ]
        },
        "answered twice",
    ),
    (
        "anthropic",
        {"messages": [USER, ANTHROPIC_CALL, anthropic_result("toolu_1")]},
        "toolu_2 have no tool_result",
    ),
    (
        "anthropic",
        {
            "messages": [
                USER,
                ANTHROPIC_CALL,
                anthropic_result("toolu_1", "toolu_2", text_first=True),
            ]
        },
        "must come first",
    ),
    (
        "anthropic",
        {"messages": [USER, ANTHROPIC_CALL, USER, anthropic_result("toolu_1", "toolu_2")]},
        "no tool_result in the message right after",
    ),
    ("anthropic", {"messages": [USER, ANTHROPIC_CALL]}, "never answered"),
    (
        "anthropic",
        {"messages": [USER, anthropic_result("toolu_9")]},
        "not a tool_use of the previous message",
    ),
    (
        "anthropic",
        {"messages": [{"role": "assistant", "content": "Hi"}]},
        "first message must be a user",
    ),
    ("anthropic", {"messages": [USER, USER]}, "two user messages in a row"),
    ("anthropic", {"max_tokens": None}, "no `max_tokens`"),
    ("gemini", {"contents": [GEMINI_USER, GEMINI_CALL, GEMINI_USER]}, "have no functionResponse"),
    (
        "gemini",
        {"contents": [GEMINI_USER, GEMINI_CALL, gemini_result("read_file")]},
        "1 functionResponse parts answer 2",
    ),
    (
        "gemini",
        {"contents": [GEMINI_USER, GEMINI_CALL, gemini_result("read_file", "grep")]},
        "do not match",
    ),
    ("gemini", {"contents": [GEMINI_USER, gemini_result("ls")]}, "without functionCall parts"),
    ("gemini", {"contents": [GEMINI_USER, GEMINI_CALL]}, "never answered"),
]

VALID = [
    ("openai_chat", {"messages": [USER, CHAT_CALL, chat_result("call_2"), chat_result("call_1")]}),
    (
        "openai_responses",
        {"input": [USER, *RESPONSES_CALLS, responses_result("call_1"), responses_result("call_2")]},
    ),
    (
        "openai_responses",  # the calls are stored on the server
        {"input": [responses_result("call_7")], "previous_response_id": "resp_1"},
    ),
    ("openai_responses", {"input": "Just a string."}),
    ("anthropic", {"messages": [USER, ANTHROPIC_CALL, anthropic_result("toolu_2", "toolu_1")]}),
    ("gemini", {"contents": [GEMINI_USER, GEMINI_CALL, gemini_result("ls", "read_file")]}),
]


def _body(provider: str, history: dict[str, Any]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "openai_chat": {"model": "gpt-test"},
        "openai_responses": {"model": "gpt-test"},
        "anthropic": {"model": "claude-test", "max_tokens": 100, "messages": [USER]},
        "gemini": {},
    }[provider]
    body = base | history
    return {k: v for k, v in body.items() if v is not None}


@pytest.mark.parametrize(("provider", "history", "says"), BROKEN)
@pytest.mark.parametrize("stream", [False, True])
def test_broken_history_is_refused(
    serve: Any, provider: str, history: dict[str, Any], says: str, stream: bool
) -> None:
    server, ask = serve(Reply(text="unused"))
    body = _body(provider, history)
    if stream and provider != "gemini":
        body["stream"] = True
    answer = ask(provider, stream=stream, body=body)
    assert answer.status == 400
    if provider == "gemini":
        assert answer.body["error"]["status"] == "INVALID_ARGUMENT"
    else:
        assert answer.body["error"]["type"] == "invalid_request_error"
    problems = server.problems
    assert any(says in p for p in problems), problems
    assert all(p.startswith("request 1 (POST /v1") for p in problems)
    assert len(server.remaining) == 1


@pytest.mark.parametrize(("provider", "history"), VALID)
def test_sound_multi_turn_history_has_no_problem(
    serve: Any, provider: str, history: dict[str, Any]
) -> None:
    server, ask = serve(Reply(text="Done."))
    answer = ask(provider, body=_body(provider, history))
    assert answer.status == 200
    assert server.problems == []


def test_lenient_server_records_but_answers(serve: Any) -> None:
    server, ask = serve(Reply(text="Done."), strict=False)
    answer = ask("openai_chat", body={"model": "m", "messages": [USER, CHAT_CALL]})
    assert answer.status == 200
    assert len(server.problems) == 1 and "never answered" in server.problems[0]
    assert server.remaining == []
