"""Anthropic Messages as the API sends it: named events from `message_start` to `message_stop`."""

from __future__ import annotations

from typing import Any

from handrail import ToolCall
from handrail.providers import parse_response, stream_parser
from handrail.testing import Reply, ToolUse

TWO_CALLS = [
    ToolUse("read_file", {"file_path": "a.py"}),
    ToolUse("grep_search", {"pattern": "def main", "path": "src"}),
]


def test_streamed_text_and_usage(serve: Any) -> None:
    reply = Reply(
        text="Hello, world!", chunk_size=5, input_tokens=120, output_tokens=30, cached_tokens=100
    )
    _, ask = serve(reply)
    answer = ask("anthropic", stream=True)
    assert answer.status == 200
    events = answer.data()
    assert [name for name, _ in answer.events] == [e["type"] for e in events]
    assert [e["type"] for e in events] == [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    message = events[0]["message"]
    assert message["content"] == [] and message["stop_reason"] is None
    assert message["model"] == "claude-test"
    assert message["usage"]["input_tokens"] == 20  # Anthropic counts cache reads apart
    assert message["usage"]["cache_read_input_tokens"] == 100
    assert events[2]["content_block"] == {"type": "text", "text": ""}
    assert "".join(e["delta"]["text"] for e in events[3:6]) == "Hello, world!"
    assert {e["delta"]["type"] for e in events[3:6]} == {"text_delta"}
    assert events[-2]["delta"] == {"stop_reason": "end_turn", "stop_sequence": None}
    assert events[-2]["usage"]["output_tokens"] == 30


def test_two_streamed_tool_calls_one_character_at_a_time(serve: Any) -> None:
    _, ask = serve(Reply(text="Let me look.", tool_calls=TWO_CALLS, chunk_size=1))
    events = ask("anthropic", stream=True).data()
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2]
    uses = [s["content_block"] for s in starts[1:]]
    assert [(u["type"], u["name"], u["input"]) for u in uses] == [
        ("tool_use", "read_file", {}),
        ("tool_use", "grep_search", {}),
    ]
    assert all(u["id"].startswith("toolu_") for u in uses)
    json_deltas = [
        e["delta"] for e in events if e.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert json_deltas[0] == {"type": "input_json_delta", "partial_json": ""}
    assert all(len(d["partial_json"]) <= 1 for d in json_deltas)
    assert events[-2]["delta"]["stop_reason"] == "tool_use"

    parser = stream_parser("anthropic")
    calls: list[ToolCall] = []
    for event in events:
        calls += parser.feed(event)
    calls += parser.finish()
    assert calls == [
        ToolCall(id=uses[0]["id"], name="read_file", arguments='{"file_path":"a.py"}'),
        ToolCall(
            id=uses[1]["id"], name="grep_search", arguments='{"pattern":"def main","path":"src"}'
        ),
    ]


def test_thinking_block_with_signature(serve: Any) -> None:
    _, ask = serve(
        Reply(reasoning="Check a.py first.", text="Ok.", chunk_size=6),
        Reply(reasoning="R.", text="T."),
    )
    events = ask("anthropic", stream=True).data()
    block = [e for e in events if e.get("index") == 0]
    assert block[0]["content_block"] == {"type": "thinking", "thinking": "", "signature": ""}
    deltas = [e["delta"] for e in block[1:-1]]
    assert [d["type"] for d in deltas] == ["thinking_delta"] * 3 + ["signature_delta"]
    assert "".join(d.get("thinking", "") for d in deltas) == "Check a.py first."
    assert deltas[-1]["signature"]
    assert block[-1]["type"] == "content_block_stop"
    content = ask("anthropic").body["content"]
    assert (
        content[0]["type"] == "thinking"
        and content[0]["thinking"] == "R."
        and content[0]["signature"]
    )
    assert content[1] == {"type": "text", "text": "T."}


def test_whole_message(serve: Any) -> None:
    calls = [ToolUse("read_file", {"file_path": "a.py"}, id="toolu_given"), TWO_CALLS[1]]
    _, ask = serve(
        Reply(text="Looking.", tool_calls=calls, input_tokens=40, output_tokens=9, cached_tokens=30)
    )
    answer = ask("anthropic")
    body = answer.body
    assert answer.headers["request-id"].startswith("req_")
    assert body["type"] == "message" and body["role"] == "assistant"
    assert body["stop_reason"] == "tool_use"
    assert body["content"][1] == {
        "type": "tool_use",
        "id": "toolu_given",
        "name": "read_file",
        "input": {"file_path": "a.py"},
    }
    assert body["usage"]["input_tokens"] == 10
    assert body["usage"]["cache_read_input_tokens"] == 30
    assert body["usage"]["output_tokens"] == 9
    second = body["content"][2]
    assert second["id"].startswith("toolu_") and second["input"] == {
        "pattern": "def main",
        "path": "src",
    }
    assert parse_response("anthropic", body) == [
        ToolCall(id="toolu_given", name="read_file", arguments={"file_path": "a.py"}),
        ToolCall(
            id=second["id"], name="grep_search", arguments={"pattern": "def main", "path": "src"}
        ),
    ]


def test_stop_reasons(serve: Any) -> None:
    _, ask = serve(
        Reply(text="cut", stop="max_tokens"), Reply(text="cut", stop="max_tokens"), Reply(text="x")
    )
    assert ask("anthropic", stream=True).data()[-2]["delta"]["stop_reason"] == "max_tokens"
    assert ask("anthropic").body["stop_reason"] == "max_tokens"
    assert ask("anthropic").body["stop_reason"] == "end_turn"
