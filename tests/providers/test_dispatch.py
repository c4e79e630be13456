"""Choosing the provider by name: the entry points the CLI and generic loops use."""

from __future__ import annotations

from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import Batch, ConfigurationError, Tool, ToolCall
from handrail.providers import (
    PROVIDERS,
    anthropic_results,
    anthropic_tools,
    gemini_results,
    gemini_tools,
    openai_chat_results,
    openai_chat_tools,
    openai_responses_results,
    openai_responses_tools,
    parse_response,
    result_messages,
    stream_parser,
    tools_payload,
)


def test_providers() -> None:
    assert PROVIDERS == ("openai_chat", "openai_responses", "anthropic", "gemini")


@pytest.mark.parametrize(
    "call",
    [
        lambda: tools_payload("openai", []),
        lambda: parse_response("claude", {}),
        lambda: stream_parser("gpt"),
        lambda: result_messages("bard", []),
    ],
)
def test_an_unknown_provider_lists_the_known_ones(call: Any) -> None:
    with pytest.raises(ConfigurationError) as info:
        call()
    assert str(info.value).split("; ")[1] == snapshot(
        "choose one of openai_chat, openai_responses, anthropic, gemini"
    )


def test_tools_payload_is_each_providers_tools_field(tools: list[Tool]) -> None:
    assert tools_payload("openai_chat", tools) == openai_chat_tools(tools)
    assert tools_payload("openai_responses", tools) == openai_responses_tools(tools)
    assert tools_payload("anthropic", tools) == anthropic_tools(tools)
    assert tools_payload("gemini", tools) == gemini_tools(tools)
    assert tools_payload("gemini", []) == []


def test_result_messages_is_a_list_for_every_provider(mixed_batch: Batch) -> None:
    assert result_messages("openai_chat", mixed_batch) == openai_chat_results(mixed_batch)
    assert result_messages("openai_responses", mixed_batch) == openai_responses_results(mixed_batch)
    assert result_messages("anthropic", mixed_batch) == [anthropic_results(mixed_batch)]
    assert result_messages("gemini", mixed_batch) == [gemini_results(mixed_batch)]
    assert all(result_messages(p, []) == [] for p in PROVIDERS)


# One response and one stream per provider, each asking for `list_files` with no arguments.
RESPONSES: dict[str, dict[str, Any]] = {
    "openai_chat": {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "list_files", "arguments": "{}"},
                        }
                    ],
                }
            }
        ]
    },
    "openai_responses": {
        "output": [
            {"type": "function_call", "call_id": "c1", "name": "list_files", "arguments": "{}"}
        ]
    },
    "anthropic": {"content": [{"type": "tool_use", "id": "c1", "name": "list_files", "input": {}}]},
    "gemini": {
        "candidates": [
            {"content": {"parts": [{"functionCall": {"id": "c1", "name": "list_files"}}]}}
        ]
    },
}
STREAMS: dict[str, list[dict[str, Any]]] = {
    "openai_chat": [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "list_files"}}]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ],
    "openai_responses": [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "list_files"},
        },
        {"type": "response.function_call_arguments.done", "item_id": "fc1", "arguments": "{}"},
    ],
    "anthropic": [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "c1", "name": "list_files", "input": {}},
        },
        {"type": "content_block_stop", "index": 0},
    ],
    "gemini": [RESPONSES["gemini"]],
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_parse_response_and_stream_parser_agree(provider: str) -> None:
    whole = parse_response(provider, RESPONSES[provider])
    parser = stream_parser(provider)
    streamed = [c for e in STREAMS[provider] for c in parser.feed(e)] + parser.finish()
    assert [(c.id, c.name) for c in whole] == [("c1", "list_files")]
    assert [(c.id, c.name) for c in streamed] == [("c1", "list_files")]
    assert parser.calls == streamed
    assert all(isinstance(c, ToolCall) for c in whole)


def test_the_package_surface_is_complete_and_named_publicly() -> None:
    import handrail.providers as providers

    assert len(set(providers.__all__)) == len(providers.__all__)
    for name in providers.__all__:
        obj = getattr(providers, name)
        if callable(obj):
            assert obj.__module__ == "handrail.providers", name


def test_the_agent_loops_in_the_package_docstring_are_valid_python() -> None:
    import ast
    import re

    import handrail.providers as providers

    blocks = re.findall(r"```python\n(.*?)```", providers.__doc__ or "", re.S)
    assert len(blocks) == len(PROVIDERS)  # one loop per provider
    for block in blocks:
        compile(block, "<docstring>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
