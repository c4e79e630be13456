"""OpenAI strict mode against its documented rules: the rewrite, the limits, the fallback, and
undoing the rewrite in the model's arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import Registry, Runtime, Tool, tool
from handrail.builtin import GrepSearch, ListFiles, ReadFile
from handrail.providers import (
    openai_chat_tools,
    openai_strict_schema,
    parse_openai_chat,
    undo_strict_nulls,
)


def raw_tool(schema: dict[str, Any], name: str = "probe") -> Tool:
    return Tool.from_json_schema(name, "A probe.", schema, lambda args: json.dumps(args))


def rendered(schema: dict[str, Any]) -> dict[str, Any]:
    """The `function` object Chat Completions is sent for a tool with this schema."""
    return openai_chat_tools([raw_tool(schema)])[0]["function"]


def strict_params(schema: dict[str, Any]) -> dict[str, Any]:
    fn = rendered(schema)
    assert fn["strict"] is True
    return fn["parameters"]


def test_every_property_required_optional_ones_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer", "default": 3, "description": "How many."},
            "tag": {"enum": ["a", "b"]},
            "owner": {"$ref": "#/$defs/User"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "kind": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["name"],
        "$defs": {
            "User": {
                "type": "object",
                "properties": {"login": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["login"],
            }
        },
    }
    assert strict_params(schema) == snapshot(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "count": {"type": ["integer", "null"], "description": "How many. (default: 3)"},
                "tag": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
                "owner": {"anyOf": [{"$ref": "#/$defs/User"}, {"type": "null"}]},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "kind": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
            },
            "required": ["name", "count", "tag", "owner", "note", "kind"],
            "additionalProperties": False,
            "$defs": {
                "User": {
                    "type": "object",
                    "properties": {
                        "login": {"type": "string"},
                        "age": {"type": ["integer", "null"]},
                    },
                    "required": ["login", "age"],
                    "additionalProperties": False,
                }
            },
        }
    )


def test_unsupported_keywords_leave_the_wire_and_are_noted() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "code": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[A-Z]+$"},
            "word": {"type": "string", "pattern": "^(?!tmp)[a-z]+$"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
            "sub": {"allOf": [{"$ref": "#/$defs/Sub"}], "examples": [{"x": 1}]},
        },
        "required": ["code", "word", "site", "day", "ids", "ratio", "sub"],
        "$defs": {"Sub": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert strict_params(schema) == snapshot(
        {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "pattern": "^[A-Z]+$",
                    "description": "(minLength: 2; maxLength: 8)",
                },
                "word": {"type": "string", "description": '(pattern: "^(?!tmp)[a-z]+$")'},
                "site": {"type": "string", "description": '(format: "uri")'},
                "day": {"type": "string", "format": "date"},
                "ids": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "description": "(uniqueItems: true)",
                },
                "ratio": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5},
                "sub": {"$ref": "#/$defs/Sub"},
            },
            "required": ["code", "word", "site", "day", "ids", "ratio", "sub"],
            "additionalProperties": False,
            "$defs": {
                "Sub": {
                    "type": "object",
                    "properties": {"x": {"type": ["integer", "null"]}},
                    "required": ["x"],
                    "additionalProperties": False,
                }
            },
        }
    )


def test_definitions_move_to_defs() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "required": ["a"],
        "definitions": {"A": {"type": "string"}},
    }
    assert strict_params(schema) == snapshot(
        {
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "required": ["a"],
            "additionalProperties": False,
            "$defs": {"A": {"type": "string"}},
        }
    )


def test_recursion_stays_strict() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "required": ["root"],
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["children"],
            }
        },
    }
    assert strict_params(schema)["$defs"]["Node"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "object", "additionalProperties": {"type": "string"}},  # a free-form map
        {"type": "object", "additionalProperties": True},
        {"type": "string", "not": {"const": "x"}},
        {"description": "anything at all"},  # untyped
        {"type": "array"},  # an array without `items`
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"allOf": [{"type": "string"}, {"minLength": 1}]},
        {"type": "object", "properties": {}, "patternProperties": {"^x": {"type": "string"}}},
        {"type": "string", "if": {"minLength": 3}, "then": {"pattern": "^a"}},
    ],
)
def test_what_strict_mode_cannot_express_is_sent_non_strict(prop: dict[str, Any]) -> None:
    schema = {"type": "object", "properties": {"p": prop}}
    fn = rendered(schema)
    assert fn["strict"] is False
    assert fn["parameters"] == {"type": "object", "properties": {"p": prop}}


# -- documented limits -------------------------------------------------------------------------


def objects_nested(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 1):
        node = {"type": "object", "properties": {"n": node}, "required": ["n"]}
    return {"type": "object", "properties": {"n": node}, "required": ["n"]}


def test_ten_levels_of_nesting_are_strict_eleven_are_not() -> None:
    assert rendered(objects_nested(10))["strict"] is True
    assert rendered(objects_nested(11))["strict"] is False


def test_at_most_5000_properties() -> None:
    def props(n: int) -> dict[str, Any]:
        return {f"p{i}": {"type": "string"} for i in range(n)}

    assert rendered({"type": "object", "properties": props(5000)})["strict"] is True
    assert rendered({"type": "object", "properties": props(5001)})["strict"] is False


def test_at_most_1000_enum_values() -> None:
    def enums(*sizes: int) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                f"e{i}": {"type": "integer", "enum": list(range(n))} for i, n in enumerate(sizes)
            },
        }

    assert rendered(enums(500, 500))["strict"] is True
    assert rendered(enums(500, 501))["strict"] is False


def test_a_big_string_enum_is_limited_to_15000_characters() -> None:
    # Over 250 values: their total length must stay within 15,000 characters.
    def enum(count: int, width: int) -> dict[str, Any]:
        values = [f"{i:0{width}d}" for i in range(count)]
        return {"type": "object", "properties": {"e": {"type": "string", "enum": values}}}

    assert rendered(enum(251, 59))["strict"] is True  # 14,809 characters
    assert rendered(enum(251, 60))["strict"] is False  # 15,060
    assert rendered(enum(250, 100))["strict"] is True  # 250 values: no such limit


def test_names_and_values_total_at_most_120000_characters() -> None:
    names = {f"{i:04d}" + "x" * 96: {"type": "string"} for i in range(1201)}  # 120,100
    assert rendered({"type": "object", "properties": names})["strict"] is False
    names = {f"{i:04d}" + "x" * 96: {"type": "string"} for i in range(1200)}  # 120,000
    assert rendered({"type": "object", "properties": names})["strict"] is True


# -- the model's nulls mean "not given" --------------------------------------------------------


def strict_call(tool: Tool, args: dict[str, Any]) -> Any:
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": tool.name, "arguments": json.dumps(args)},
            }
        ],
    }
    return parse_openai_chat(message, tools=[tool])[0]


async def test_the_null_for_every_optional_field_validates_as_not_given(tmp_path: Path) -> None:
    # What a strict-mode model sends when it wants the defaults: every optional field null.
    (tmp_path / "a.txt").write_text("hello\n")
    tools: list[Tool] = [ReadFile(), ListFiles(), GrepSearch()]
    rt = Runtime(Registry(tools), root=tmp_path)
    for t in tools:
        params = openai_chat_tools([t])[0]["function"]["parameters"]
        args: dict[str, Any] = {name: None for name in params["properties"]}
        args |= {"file_path": "a.txt"} if t.name == "read_file" else {}
        args |= {"pattern": "hello"} if t.name == "grep_search" else {}
        result = await rt.call_many([strict_call(t, args)])
        assert result[0].ok, (t.name, result[0].content)


def test_nulls_are_dropped_only_where_the_tool_refuses_null() -> None:
    schema = {
        "type": "object",
        "properties": {
            "keep": {"type": ["string", "null"]},
            "drop": {"type": "string"},
            "items": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {
                            "type": "object",
                            "properties": {"a": {"type": "string"}, "b": {"$ref": "#/$defs/B"}},
                            "required": ["a"],
                        },
                        {"type": "string"},
                    ]
                },
            },
        },
        "required": [],
        "$defs": {"B": {"type": "object", "properties": {"c": {"type": "integer"}}}},
    }
    t = raw_tool(schema)
    call = strict_call(
        t,
        {
            "keep": None,
            "drop": None,
            "items": [{"a": None, "b": {"c": None}}, "text", {"a": "x", "b": None}],
        },
    )
    # `a` is required, so its null stays (and validation will refuse it, as it should).
    assert json.loads(call.arguments) == {
        "keep": None,
        "items": [{"a": None, "b": {}}, "text", {"a": "x"}],
    }


# -- the public pair: openai_strict_schema / undo_strict_nulls -----------------------------


async def test_the_public_pair_round_trips_a_models_nulls_to_the_tools_defaults() -> None:
    @tool(read_only=True)
    def search(query: str, limit: int = 10, since: str | None = None) -> str:
        """Search."""
        return f"{query}/{limit}/{since}"

    schema = openai_strict_schema(search)
    assert schema is not None
    assert schema["required"] == ["query", "limit", "since"]
    assert schema["properties"]["limit"]["type"] == ["integer", "null"]
    # What openai_chat_tools sends is this very schema.
    assert openai_chat_tools([search])[0]["function"]["parameters"] == schema

    # The model answers null for "not given": the tool's default applies again. `since` allows
    # null in the tool's own schema, so its null stays.
    text = undo_strict_nulls(search, '{"query": "q", "limit": null, "since": null}')
    assert text == '{"query": "q", "since": null}'
    mapping = undo_strict_nulls(search, {"query": "q", "limit": None})
    assert mapping == {"query": "q"}
    assert undo_strict_nulls(search, '{"query": ') == '{"query": '  # malformed: left as it is
    r = await Runtime(Registry([search])).call("search", text)
    assert r.content == "q/10/None"


def test_a_schema_strict_mode_cannot_take_gives_none() -> None:
    loose = Tool.from_json_schema(
        "loose",
        "Takes anything under a pattern.",
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        lambda args: "ok",
    )
    assert openai_strict_schema(loose) is None
    assert undo_strict_nulls(loose, '{"xa": null}') == '{"xa": null}'
