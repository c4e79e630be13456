"""Chat Completions as the API sends it: `chat.completion.chunk` deltas, `[DONE]`, whole bodies."""

from __future__ import annotations

from typing import Any

from handrail import ToolCall
from handrail.providers import parse_response, stream_parser
from handrail.testing import Reply, ToolUse

TWO_CALLS = [
    ToolUse("read_file", {"file_path": "a.py"}),
    ToolUse("grep_search", {"pattern": "def main", "path": "src"}),
]


def _choices(chunks: list[Any]) -> list[dict[str, Any]]:
    return [c["choices"][0] for c in chunks if c["choices"]]


def test_streamed_text_usage_and_done(serve: Any) -> None:
    reply = Reply(
        text="Hello, world!", chunk_size=4, input_tokens=120, output_tokens=30, cached_tokens=100
    )
    server, ask = serve(reply)
    answer = ask("openai_chat", stream=True)
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.events[-1] == (None, "[DONE]")
    chunks = answer.data()
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    choices = _choices(chunks)
    assert choices[0]["delta"]["role"] == "assistant"
    assert "".join(c["delta"].get("content") or "" for c in choices) == "Hello, world!"
    assert [c["delta"]["content"] for c in choices[1:-1]] == ["Hell", "o, w", "orld", "!"]
    assert choices[-1] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}
    assert all(c["usage"] is None for c in chunks[:-1])  # include_usage: null until the last
    assert chunks[-1]["choices"] == []
    usage = chunks[-1]["usage"]
    assert usage["prompt_tokens"] == 120
    assert usage["completion_tokens"] == 30
    assert usage["total_tokens"] == 150
    assert usage["prompt_tokens_details"]["cached_tokens"] == 100
    assert server.problems == []


def test_no_usage_chunk_without_include_usage(serve: Any) -> None:
    _, ask = serve(Reply(text="Hi"))
    answer = ask("openai_chat", stream=True, stream_options={"include_usage": False})
    chunks = answer.data()
    assert all("usage" not in c and c["choices"] for c in chunks)
    assert answer.events[-1] == (None, "[DONE]")


def test_two_streamed_tool_calls_one_character_at_a_time(serve: Any) -> None:
    _, ask = serve(Reply(tool_calls=TWO_CALLS, chunk_size=1))
    chunks = ask("openai_chat", stream=True).data()
    deltas = [c["delta"] for c in _choices(chunks)]
    starts = [d for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert [s["tool_calls"][0]["function"] for s in starts] == [
        {"name": "read_file", "arguments": ""},
        {"name": "grep_search", "arguments": ""},
    ]
    assert all(s["tool_calls"][0]["type"] == "function" for s in starts)
    assert starts[0]["role"] == "assistant"  # a tool-only reply opens with its first call
    assert all(s["tool_calls"][0]["id"].startswith("call_") for s in starts)
    fragments = [d["tool_calls"][0] for d in deltas if "tool_calls" in d and d not in starts]
    assert all(
        set(f) == {"index", "function"} and set(f["function"]) == {"arguments"} for f in fragments
    )
    assert all(len(f["function"]["arguments"]) == 1 for f in fragments)
    assert _choices(chunks)[-1]["finish_reason"] == "tool_calls"

    parser = stream_parser("openai_chat")
    calls: list[ToolCall] = []
    for chunk in chunks:
        calls += parser.feed(chunk)
    calls += parser.finish()
    ids = [s["tool_calls"][0]["id"] for s in starts]
    assert calls == [
        ToolCall(id=ids[0], name="read_file", arguments='{"file_path":"a.py"}'),
        ToolCall(id=ids[1], name="grep_search", arguments='{"pattern":"def main","path":"src"}'),
    ]


def test_reasoning_goes_out_as_reasoning_content(serve: Any) -> None:
    _, ask = serve(
        Reply(reasoning="Think first.", text="Answer.", chunk_size=5),
        Reply(reasoning="Hmm.", text="Ok."),
    )
    deltas = [c["delta"] for c in _choices(ask("openai_chat", stream=True).data())]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "Think first."
    assert "".join(d.get("content") or "" for d in deltas) == "Answer."
    message = ask("openai_chat").body["choices"][0]["message"]
    assert message["reasoning_content"] == "Hmm."
    assert message["content"] == "Ok."


def test_whole_response(serve: Any) -> None:
    reply = Reply(
        text="Done.", input_tokens=50, output_tokens=7, cached_tokens=20, reasoning_tokens=3
    )
    _, ask = serve(reply)
    answer = ask("openai_chat")
    assert answer.status == 200
    body = answer.body
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-test"
    assert body["choices"][0]["message"]["role"] == "assistant"
    assert body["choices"][0]["message"]["content"] == "Done."
    assert "tool_calls" not in body["choices"][0]["message"]
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 50
    assert body["usage"]["completion_tokens"] == 7
    assert body["usage"]["total_tokens"] == 57
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 20
    assert body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3


def test_whole_tool_calls_parse(serve: Any) -> None:
    calls = [
        ToolUse("read_file", {"file_path": "a.py"}, id="call_given"),
        ToolUse("ls", '{"path": '),
    ]
    _, ask = serve(Reply(tool_calls=calls))
    body = ask("openai_chat").body
    message = body["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"][1]["function"]["arguments"] == '{"path": '  # raw, verbatim
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    parsed = parse_response("openai_chat", body)
    assert (parsed[0].id, parsed[0].arguments) == ("call_given", '{"file_path":"a.py"}')


def test_stop_reasons(serve: Any) -> None:
    _, ask = serve(
        Reply(text="cut", stop="max_tokens"),
        Reply(text="cut", stop="max_tokens"),
        Reply(text="x", stop="content_filter"),
    )
    assert _choices(ask("openai_chat", stream=True).data())[-1]["finish_reason"] == "length"
    assert ask("openai_chat").body["choices"][0]["finish_reason"] == "length"
    assert ask("openai_chat").body["choices"][0]["finish_reason"] == "content_filter"
