"""Responses as the API sends it: typed events with `sequence_number`, the final `response`."""

from __future__ import annotations

from typing import Any

from handrail import ToolCall
from handrail.providers import parse_response, stream_parser
from handrail.testing import Reply, ToolUse

TWO_CALLS = [
    ToolUse("read_file", {"file_path": "a.py"}),
    ToolUse("grep_search", {"pattern": "def main", "path": "src"}),
]


def _types(answer: Any) -> list[str]:
    return [e["type"] for e in answer.data()]


def test_streamed_text_events_in_order(serve: Any) -> None:
    _, ask = serve(Reply(text="Hello, world!", chunk_size=5))
    answer = ask("openai_responses", stream=True)
    assert answer.status == 200
    events = answer.data()
    assert [name for name, _ in answer.events] == [e["type"] for e in events]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert _types(answer) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    created = events[0]["response"]
    assert (
        created["status"] == "in_progress" and created["output"] == [] and created["usage"] is None
    )
    added = events[2]["item"]
    assert added["type"] == "message" and added["id"].startswith("msg_") and added["content"] == []
    deltas = [e for e in events if e["type"] == "response.output_text.delta"]
    assert "".join(d["delta"] for d in deltas) == "Hello, world!"
    assert {d["item_id"] for d in deltas} == {added["id"]}
    assert all(d["output_index"] == 0 and d["content_index"] == 0 for d in deltas)
    assert events[7]["text"] == "Hello, world!"
    done = events[-1]["response"]
    assert done["status"] == "completed"
    assert done["output"][0]["content"][0] == {
        "type": "output_text",
        "annotations": [],
        "logprobs": [],
        "text": "Hello, world!",
    }


def test_usage_on_the_completed_response(serve: Any) -> None:
    reply = Reply(
        text="x", input_tokens=120, output_tokens=30, cached_tokens=100, reasoning_tokens=12
    )
    _, ask = serve(reply, reply)
    usage = ask("openai_responses", stream=True).data()[-1]["response"]["usage"]
    expected = {
        "input_tokens": 120,
        "input_tokens_details": {"cached_tokens": 100},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 12},
        "total_tokens": 150,
    }
    assert usage == expected
    assert ask("openai_responses").body["usage"] == expected


def test_two_streamed_tool_calls_one_character_at_a_time(serve: Any) -> None:
    _, ask = serve(Reply(tool_calls=TWO_CALLS, chunk_size=1))
    events = ask("openai_responses", stream=True).data()
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert [(i["type"], i["name"], i["arguments"], i["status"]) for i in added] == [
        ("function_call", "read_file", "", "in_progress"),
        ("function_call", "grep_search", "", "in_progress"),
    ]
    assert all(i["id"].startswith("fc_") and i["call_id"].startswith("call_") for i in added)
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert all(len(d["delta"]) == 1 for d in deltas)
    dones = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [(d["item_id"], d["name"], d["arguments"]) for d in dones] == [
        (added[0]["id"], "read_file", '{"file_path":"a.py"}'),
        (added[1]["id"], "grep_search", '{"pattern":"def main","path":"src"}'),
    ]
    final = events[-1]["response"]
    assert [o["call_id"] for o in final["output"]] == [i["call_id"] for i in added]

    parser = stream_parser("openai_responses")
    calls: list[ToolCall] = []
    for event in events:
        calls += parser.feed(event)
    calls += parser.finish()
    assert calls == [
        ToolCall(id=added[0]["call_id"], name="read_file", arguments='{"file_path":"a.py"}'),
        ToolCall(
            id=added[1]["call_id"],
            name="grep_search",
            arguments='{"pattern":"def main","path":"src"}',
        ),
    ]


def test_reasoning_summary_item(serve: Any) -> None:
    _, ask = serve(
        Reply(reasoning="Look at a.py.", text="Ok.", chunk_size=4), Reply(reasoning="R.", text="T.")
    )
    answer = ask("openai_responses", stream=True)
    events = answer.data()
    assert _types(answer)[2:9] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
    ]
    assert events[2]["item"]["type"] == "reasoning"
    deltas = [e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta"]
    assert "".join(deltas) == "Look at a.py."
    output = events[-1]["response"]["output"]
    assert output[0]["summary"] == [{"type": "summary_text", "text": "Look at a.py."}]
    assert [o["type"] for o in output] == ["reasoning", "message"]
    whole = ask("openai_responses").body
    assert [o["type"] for o in whole["output"]] == ["reasoning", "message"]


def test_incomplete_at_max_output_tokens(serve: Any) -> None:
    _, ask = serve(Reply(text="cut", stop="max_tokens"), Reply(text="cut", stop="max_tokens"))
    last = ask("openai_responses", stream=True).data()[-1]
    assert last["type"] == "response.incomplete"
    assert last["response"]["status"] == "incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    body = ask("openai_responses").body
    assert body["status"] == "incomplete"
    assert body["incomplete_details"] == {"reason": "max_output_tokens"}


def test_whole_response_parses(serve: Any) -> None:
    calls = [ToolUse("read_file", {"file_path": "a.py"}, id="call_x"), TWO_CALLS[1]]
    _, ask = serve(Reply(text="Let me look.", tool_calls=calls))
    body = ask("openai_responses").body
    assert body["object"] == "response"
    assert body["status"] == "completed"
    assert [o["type"] for o in body["output"]] == ["message", "function_call", "function_call"]
    second = body["output"][2]
    assert second["id"].startswith("fc_") and second["call_id"].startswith("call_")
    assert parse_response("openai_responses", body) == [
        ToolCall(id="call_x", name="read_file", arguments='{"file_path":"a.py"}'),
        ToolCall(
            id=second["call_id"],
            name="grep_search",
            arguments='{"pattern":"def main","path":"src"}',
        ),
    ]
