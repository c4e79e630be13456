"""`read_sse`: event-stream lines in, `(event, data)` pairs out.

Fed lines directly (as httpx yields them, without line endings) for the framing rules, and
fed `httpx.Response.aiter_lines()` from the real `ModelServer` for the providers' own framing
(Gemini ends its lines with CRLF; Anthropic and Responses name their events).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable

import httpx

from handrail.agent._sse import SseEvent, read_sse
from handrail.testing import ModelServer, Reply, ToolUse


async def _lines(lines: Iterable[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def decode(*lines: str) -> list[tuple[str, str]]:
    async with asyncio.timeout(5):
        return [(e.event, e.data) async for e in read_sse(_lines(lines))]


async def test_one_event_per_blank_line_named_message_by_default() -> None:
    assert await decode("data: one", "", "data: two", "") == [
        ("message", "one"),
        ("message", "two"),
    ]


async def test_multi_line_data_is_joined_with_newlines() -> None:
    events = await decode("data: {", 'data:   "a": 1', "data: }", "")
    assert events == [("message", '{\n  "a": 1\n}')]
    assert json.loads(events[0][1]) == {"a": 1}


async def test_only_one_space_after_the_colon_is_dropped() -> None:
    assert await decode("data:tight", "", "data: spaced", "", "data:  two", "") == [
        ("message", "tight"),
        ("message", "spaced"),
        ("message", " two"),
    ]


async def test_event_names_apply_to_their_own_event_only() -> None:
    events = await decode(
        "event: message_start",
        'data: {"type":"message_start"}',
        "",
        'data: {"type":"ping"}',
        "",
        "event:content_block_delta",
        "data: {}",
        "",
    )
    assert events == [
        ("message_start", '{"type":"message_start"}'),
        ("message", '{"type":"ping"}'),
        ("content_block_delta", "{}"),
    ]


async def test_comments_ids_and_retry_fields_are_skipped() -> None:
    events = await decode(
        ": keep-alive",
        ":",
        "id: 7",
        "retry: 1000",
        "data: payload",
        ": a comment inside an event",
        "",
    )
    assert events == [("message", "payload")]


async def test_an_event_without_data_is_not_delivered_and_forgets_its_name() -> None:
    assert await decode("event: ping", "", "data: x", "") == [("message", "x")]


async def test_consecutive_blank_lines_do_not_make_empty_events() -> None:
    assert await decode("", "", "data: x", "", "", "") == [("message", "x")]


async def test_an_empty_data_line_is_an_event_with_empty_data() -> None:
    assert await decode("data:", "") == [("message", "")]
    assert await decode("data", "") == [("message", "")]


async def test_a_final_event_without_the_trailing_blank_line_is_delivered() -> None:
    # Documented in _sse.py: completeness is the decoder's call (each provider has its own
    # final marker), so the reader hands over what it has.
    assert await decode("data: first", "", "event: last", "data: [DONE]") == [
        ("message", "first"),
        ("last", "[DONE]"),
    ]


async def test_values_may_contain_colons() -> None:
    assert await decode('data: {"url": "http://x:1/"}', "") == [
        ("message", '{"url": "http://x:1/"}')
    ]


async def test_crlf_lf_and_cr_line_endings_through_httpx_line_splitting() -> None:
    # The reader takes lines without endings; httpx's splitter turns all three SSE line
    # endings into such lines.
    body = b"event: a\r\ndata: 1\r\n\r\nevent: b\ndata: 2\n\nevent: c\rdata: 3\r\rdata: 4"
    response = httpx.Response(200, content=body)
    async with asyncio.timeout(5):
        events = [(e.event, e.data) async for e in read_sse(response.aiter_lines())]
    assert events == [("a", "1"), ("b", "2"), ("c", "3"), ("message", "4")]


# -- over real HTTP --------------------------------------------------------------------------


async def _stream(server: ModelServer, path: str, body: dict[str, object]) -> list[SseEvent]:
    async with asyncio.timeout(10), httpx.AsyncClient(timeout=5.0) as http:
        async with http.stream("POST", server.url + path, json=body) as resp:
            assert resp.status_code == 200
            return [e async for e in read_sse(resp.aiter_lines())]


async def test_gemini_crlf_framed_stream_through_httpx_lines() -> None:
    reply = Reply(text="Hello, CRLF world!", chunk_size=4)
    with ModelServer([reply, reply]) as server:
        path = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
        body: dict[str, object] = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
        events = await _stream(server, path, body)
        async with asyncio.timeout(10), httpx.AsyncClient(timeout=5.0) as http:
            raw = (await http.post(server.url + path, json=body)).content
    assert raw.count(b"\r\n\r\n") == len(events) and b"\n\n" not in raw
    assert {e.event for e in events} == {"message"}
    chunks = [json.loads(e.data) for e in events]
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == "Hello, CRLF world!"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


async def test_anthropic_named_events_through_httpx_lines() -> None:
    reply = Reply(text="Hi", tool_calls=[ToolUse("ls", {"path": "."}, id="toolu_1")])
    with ModelServer([reply]) as server:
        body: dict[str, object] = {
            "model": "claude-test",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "Hi"}],
        }
        events = await _stream(server, "/v1/messages", body)
    names = [e.event for e in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    assert "content_block_delta" in names
    # Each event's name is the `type` inside its data, as the API sends them.
    assert all(json.loads(e.data)["type"] == e.event for e in events)


async def test_openai_chat_done_marker_is_an_ordinary_last_event() -> None:
    with ModelServer([Reply(text="ok")]) as server:
        body: dict[str, object] = {
            "model": "gpt-test",
            "stream": True,
            "messages": [{"role": "user", "content": "Hi"}],
        }
        events = await _stream(server, "/v1/chat/completions", body)
    assert events[-1] == SseEvent("message", "[DONE]")
    assert all(e.event == "message" for e in events)
