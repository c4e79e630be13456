"""Gemini as the API sends it: CRLF-framed `GenerateContentResponse` chunks, whole responses."""

from __future__ import annotations

import json
from typing import Any

import httpx

from handrail import ToolCall
from handrail.providers import parse_response, stream_parser
from handrail.testing import Reply, ToolUse

TWO_CALLS = [
    ToolUse("read_file", {"file_path": "a.py"}),
    ToolUse("grep_search", {"pattern": "def main", "path": "src"}),
]


def _parts(chunks: list[Any]) -> list[dict[str, Any]]:
    return [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]


def test_streamed_text_crlf_framing_and_usage(serve: Any, client: httpx.Client) -> None:
    reply = Reply(
        text="Hello, world!", chunk_size=5, input_tokens=120, output_tokens=30, cached_tokens=100
    )
    server, ask = serve(reply, reply)
    answer = ask("gemini", stream=True)
    assert answer.status == 200
    chunks = answer.data()
    assert len(chunks) == 3
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    assert "".join(p["text"] for p in _parts(chunks)) == "Hello, world!"
    assert [c["candidates"][0].get("finishReason") for c in chunks] == [None, None, "STOP"]
    assert {c["modelVersion"] for c in chunks} == {"gemini-test"}
    usage = chunks[-1]["usageMetadata"]
    assert usage["promptTokenCount"] == 120
    assert usage["candidatesTokenCount"] == 30
    assert usage["totalTokenCount"] == 150
    assert usage["cachedContentTokenCount"] == 100
    # Gemini frames events with CRLF and sends no end marker.
    raw = client.post(
        server.base_url("gemini") + "/models/gemini-test:streamGenerateContent?alt=sse",
        json={"contents": [{"parts": [{"text": "Hi"}]}]},
    ).content
    assert raw.startswith(b'data: {"candidates": [')
    assert raw.endswith(b"}\r\n\r\n")
    assert raw.count(b"\r\n\r\n") == 3
    assert b"[DONE]" not in raw


def test_two_function_calls_arrive_whole(serve: Any) -> None:
    _, ask = serve(Reply(tool_calls=[*TWO_CALLS, ToolUse("ls", {}, id="given")], chunk_size=1))
    chunks = ask("gemini", stream=True).data()
    assert len(chunks) == 1  # a turn's calls come together, each whole
    parts = _parts(chunks)
    assert parts == [
        {"functionCall": {"name": "read_file", "args": {"file_path": "a.py"}}},
        {"functionCall": {"name": "grep_search", "args": {"pattern": "def main", "path": "src"}}},
        {"functionCall": {"name": "ls", "args": {}, "id": "given"}},
    ]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"

    parser = stream_parser("gemini")
    calls: list[ToolCall] = []
    for chunk in chunks:
        calls += parser.feed(chunk)
    assert [(c.name, c.arguments) for c in calls] == [
        ("read_file", {"file_path": "a.py"}),
        ("grep_search", {"pattern": "def main", "path": "src"}),
        ("ls", {}),
    ]
    assert calls[2].id == "given"


def test_thoughts_and_signature(serve: Any) -> None:
    reply = Reply(
        reasoning="Check a.py.",
        tool_calls=TWO_CALLS,
        chunk_size=4,
        output_tokens=20,
        reasoning_tokens=8,
    )
    _, ask = serve(reply, Reply(reasoning="R.", text="Text.", chunk_size=2))
    chunks = ask("gemini", stream=True).data()
    parts = _parts(chunks)
    thoughts = [p for p in parts if p.get("thought")]
    assert "".join(p["text"] for p in thoughts) == "Check a.py."
    calls = [p for p in parts if "functionCall" in p]
    assert calls[0]["thoughtSignature"] and "thoughtSignature" not in calls[1]
    usage = chunks[-1]["usageMetadata"]
    assert usage["thoughtsTokenCount"] == 8
    assert usage["candidatesTokenCount"] == 12
    whole = ask("gemini").body
    parts = whole["candidates"][0]["content"]["parts"]
    assert parts[0] == {"text": "R.", "thought": True}
    assert parts[1]["text"] == "Text." and parts[1]["thoughtSignature"]
    assert len(parts) == 2


def test_whole_response_and_max_tokens(serve: Any) -> None:
    _, ask = serve(
        Reply(
            text="Looking.",
            tool_calls=TWO_CALLS,
            input_tokens=100,
            output_tokens=20,
            cached_tokens=60,
        ),
        Reply(text="cut", stop="max_tokens"),
        Reply(text="cut", stop="max_tokens"),
    )
    body = ask("gemini").body
    candidate = body["candidates"][0]
    assert candidate["content"]["parts"][0] == {"text": "Looking."}
    assert candidate["finishReason"] == "STOP"
    usage = body["usageMetadata"]
    assert (usage["promptTokenCount"], usage["candidatesTokenCount"]) == (100, 20)
    assert (usage["totalTokenCount"], usage["cachedContentTokenCount"]) == (120, 60)
    assert "thoughtsTokenCount" not in usage  # zero counts are left out
    assert body["modelVersion"] == "gemini-test"
    assert [(c.name, c.arguments) for c in parse_response("gemini", body)] == [
        ("read_file", {"file_path": "a.py"}),
        ("grep_search", {"pattern": "def main", "path": "src"}),
    ]
    assert ask("gemini").body["candidates"][0]["finishReason"] == "MAX_TOKENS"
    assert ask("gemini", stream=True).data()[-1]["candidates"][0]["finishReason"] == "MAX_TOKENS"


def test_stream_without_alt_sse_is_a_json_array(serve: Any) -> None:
    _, ask = serve(Reply(text="Hello, world!", chunk_size=5))
    answer = ask("gemini", path="/models/gemini-test:streamGenerateContent")
    assert answer.headers["content-type"].startswith("application/json")
    chunks = json.loads(answer.raw)
    assert isinstance(chunks, list) and len(chunks) == 3
    assert "".join(p["text"] for p in _parts(chunks)) == "Hello, world!"
