"""OpenAI Responses: function tools, `function_call` items (whole and streamed), outputs."""

from __future__ import annotations

import json
from typing import Any

from inline_snapshot import snapshot

from handrail import Batch, Runtime, Tool, ToolCall
from handrail.providers import (
    OpenAIResponsesStream,
    openai_chat_tools,
    openai_responses_results,
    openai_responses_tools,
    parse_openai_responses,
)


def test_tools_payload(tools: list[Tool]) -> None:
    payload = openai_responses_tools(tools)
    assert [t["name"] for t in payload] == snapshot(
        [
            "create_ticket",
            "edit_file",
            "grep_search",
            "list_files",
            "read_file",
            "run_shell",
            "shell_output",
            "todo_write",
            "tool_search",
            "web_fetch",
            "write_file",
        ]
    )
    # The same schemas as Chat Completions, flattened into the item (no `function` wrapper).
    chat = openai_chat_tools(tools)
    assert payload == [{"type": "function", **c["function"]} for c in chat]
    assert payload[0] == snapshot(
        {
            "type": "function",
            "name": "create_ticket",
            "description": "Open a ticket in the tracker.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "One-line summary. (minLength: 3)"},
                    "kind": {"const": "bug"},
                    "priority": {
                        "anyOf": [{"enum": ["low", "normal", "high"]}, {"type": "null"}],
                        "description": '(default: "normal")',
                    },
                    "severity": {
                        "anyOf": [{"type": "integer", "enum": [1, 2, 3]}, {"type": "null"}]
                    },
                    "assignee": {
                        "description": "Who works on it.",
                        "anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}],
                    },
                    "labels": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "maxItems": 5,
                        "description": "(uniqueItems: true)",
                    },
                    "estimate": {"type": ["number", "null"], "exclusiveMinimum": 0},
                    "links": {
                        "type": ["array", "null"],
                        "items": {
                            "type": "object",
                            "properties": {
                                "url": {"type": "string", "description": '(format: "uri")'},
                                "rel": {"type": ["string", "null"]},
                            },
                            "required": ["url", "rel"],
                            "additionalProperties": False,
                        },
                    },
                },
                "required": [
                    "title",
                    "kind",
                    "priority",
                    "severity",
                    "assignee",
                    "labels",
                    "estimate",
                    "links",
                ],
                "additionalProperties": False,
                "$defs": {
                    "Person": {
                        "type": "object",
                        "properties": {
                            "login": {"type": "string"},
                            "team": {
                                "anyOf": [
                                    {"type": "string", "enum": ["core", "web"]},
                                    {"type": "null"},
                                ]
                            },
                        },
                        "required": ["login", "team"],
                        "additionalProperties": False,
                    }
                },
            },
            "strict": True,
        }
    )


def test_strict_is_always_written_out(tools: list[Tool]) -> None:
    # The Responses API defaults `strict` to true, so a tool that cannot be strict says false.
    free_form = Tool.from_json_schema(
        "tag",
        "Tag things.",
        {
            "type": "object",
            "properties": {"tags": {"type": "object", "additionalProperties": True}},
        },
        lambda args: "ok",
    )
    assert openai_responses_tools([free_form]) == snapshot(
        [
            {
                "type": "function",
                "name": "tag",
                "description": "Tag things.",
                "parameters": {
                    "type": "object",
                    "properties": {"tags": {"type": "object", "additionalProperties": True}},
                },
                "strict": False,
            }
        ]
    )


def response(*items: dict[str, Any]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": "completed", "output": list(items)}


def fn_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "Let me look."}],
}


def test_parse_reads_function_call_items_by_call_id(tools: list[Tool]) -> None:
    out = response(
        REASONING,
        MESSAGE,
        fn_item("call_1", "read_file", '{"file_path": "a.py", "offset": null, "limit": null}'),
        fn_item("call_2", "list_files", "{}"),
    )
    assert parse_openai_responses(out, tools=tools) == [
        ToolCall(id="call_1", name="read_file", arguments='{"file_path": "a.py"}'),
        ToolCall(id="call_2", name="list_files", arguments="{}"),
    ]
    # The `output` list itself works too (what a host appends to its input items).
    assert len(parse_openai_responses(out["output"])) == 2
    assert parse_openai_responses(response(MESSAGE)) == []


async def test_parsed_calls_run_through_the_runtime(rt: Runtime, tools: list[Tool]) -> None:
    args = {"title": "Slow start", "kind": "bug", "priority": "high", "severity": None}
    args |= {"assignee": {"login": "li", "team": "web"}, "labels": None, "estimate": 1.5}
    args |= {"links": None}
    calls = parse_openai_responses(
        response(fn_item("call_9", "create_ticket", json.dumps(args))), tools=tools
    )
    batch = await rt.call_many(calls)
    assert openai_responses_results(batch) == snapshot(
        [
            {
                "type": "function_call_output",
                "call_id": "call_9",
                "output": "created ticket 'Slow start'",
            }
        ]
    )


def test_stream_hands_over_at_arguments_done() -> None:
    parser = OpenAIResponsesStream()
    item = {**fn_item("call_1", "grep_search", ""), "status": "in_progress"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": MESSAGE},
        {"type": "response.output_item.added", "output_index": 1, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_call_1",
            "output_index": 1,
            "delta": '{"pattern":',
        },
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_call_1",
            "output_index": 1,
            "delta": ' "TODO"}',
        },
    ]
    assert [parser.feed(e) for e in events] == [[], [], [], [], []]
    done = {
        "type": "response.function_call_arguments.done",
        "item_id": "fc_call_1",
        "output_index": 1,
        "arguments": '{"pattern": "TODO"}',
    }
    expected = ToolCall(id="call_1", name="grep_search", arguments='{"pattern": "TODO"}')
    assert parser.feed(done) == [expected]
    # The item's own `done` and the final `response.completed` do not hand it over twice.
    final_item = {**fn_item("call_1", "grep_search", '{"pattern": "TODO"}')}
    assert parser.feed({"type": "response.output_item.done", "item": final_item}) == []
    completed = {"type": "response.completed", "response": response(MESSAGE, final_item)}
    assert parser.feed(completed) == []
    assert parser.calls == [expected]


def test_stream_without_arguments_done_uses_the_item_done() -> None:
    parser = OpenAIResponsesStream()
    parser.feed(
        {"type": "response.output_item.added", "output_index": 0, "item": fn_item("c", "f", "")}
    )
    parser.feed({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"})
    assert parser.feed(
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": fn_item("c", "f", '{"a": 1}'),
        }
    ) == [ToolCall(id="c", name="f", arguments='{"a": 1}')]


def test_stream_cut_off_hands_over_what_arrived() -> None:
    parser = OpenAIResponsesStream()
    parser.feed(
        {"type": "response.output_item.added", "output_index": 0, "item": fn_item("c", "f", "")}
    )
    parser.feed(
        {"type": "response.function_call_arguments.delta", "item_id": "fc_c", "delta": '{"a"'}
    )
    # Malformed on purpose: the runtime reports it as INVALID_ARGS with the parse position.
    assert parser.finish() == [ToolCall(id="c", name="f", arguments='{"a"')]


def test_results_answer_every_call_in_order(mixed_batch: Batch) -> None:
    assert openai_responses_results(mixed_batch) == snapshot(
        [
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": """\
1	alpha
2	beta\
""",
            },
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": """\
Error (INVALID_ARGS): Invalid arguments for `create_ticket`:
- /title: required field `title` is missing
Call `create_ticket` again with corrected arguments.\
""",
            },
            {
                "type": "function_call_output",
                "call_id": "call_3",
                "output": "Error (PERMISSION_DENIED): Permission denied: the rule `web_fetch` denies this call. Do not retry this call as is; choose another approach or ask the user.",
            },
            {
                "type": "function_call_output",
                "call_id": "call_4",
                "output": "Not run: `create_ticket` is waiting for the user's approval (`create_ticket` can change things), which has not been given. The call had no effect; do not assume it ran. Continue without it, or ask the user.",
            },
            {
                "type": "function_call_output",
                "call_id": "call_5",
                "output": "Not run: this call was queued behind another call that is waiting for the user's approval, which has not been given. The call had no effect; call it again if it is still needed.",
            },
        ]
    )
