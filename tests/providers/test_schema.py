"""Schema transforms against each provider's documented rules: the object root, Anthropic, Gemini,
and hostile schemas no provider could take."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ConfigurationError, ErrorCode, Registry, Runtime, Tool
from handrail.providers import PROVIDERS, anthropic_tools, gemini_tools, tools_payload
from handrail.providers._schema import gemini_schema


def raw_tool(schema: dict[str, Any], name: str = "probe") -> Tool:
    return Tool.from_json_schema(name, "A probe.", schema, lambda args: f"ran with {args}")


def anthropic_schema(schema: dict[str, Any]) -> dict[str, Any]:
    return anthropic_tools([raw_tool(schema)])[0]["input_schema"]


def gemini_params(schema: dict[str, Any]) -> dict[str, Any] | None:
    return gemini_tools([raw_tool(schema)])[0]["functionDeclarations"][0].get("parameters")


# -- the object root (every provider) -----------------------------------------------------------

ONE_OF_TWO = {
    "type": "object",
    "properties": {"route": {"type": "string"}, "file": {"type": "string"}},
    "anyOf": [{"required": ["route"]}, {"required": ["file"]}],
}


def test_a_root_combiner_is_left_off_the_wire_but_still_enforced() -> None:
    # Anthropic: "input_schema does not support oneOf, allOf, or anyOf at the top level".
    assert anthropic_schema(ONE_OF_TWO) == snapshot(
        {
            "type": "object",
            "properties": {"route": {"type": "string"}, "file": {"type": "string"}},
            "description": '(anyOf: [{"required": ["route"]}, {"required": ["file"]}])',
        }
    )


async def test_the_dropped_root_combiner_is_still_validated(tmp_path: Path) -> None:
    rt = Runtime(Registry([raw_tool(ONE_OF_TWO)]), root=tmp_path, mode="bypass")
    refused = await rt.call("probe", {})
    assert refused.error == ErrorCode.INVALID_ARGS
    assert (await rt.call("probe", {"file": "a.py"})).ok


def test_root_alternatives_are_offered_as_optional_fields() -> None:
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
            {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]},
        ]
    }
    assert anthropic_schema(schema) == snapshot(
        {
            "description": '(oneOf: [{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}, {"type": "object", "properties": {"slug": {"type": "string"}}, "required": ["slug"]}])',
            "properties": {"id": {"type": "integer"}, "slug": {"type": "string"}},
            "type": "object",
        }
    )


def test_root_all_of_is_merged() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]},
        ]
    }
    assert anthropic_schema(schema) == snapshot(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        }
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_root_reference_is_inlined_for_every_provider(provider: str) -> None:
    args = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    payload = tools_payload(provider, [raw_tool({"$ref": "#/$defs/Args", "$defs": {"Args": args}})])
    text = str(payload)
    assert "'properties': {'a': {'type': 'string'}}" in text
    assert "'required': ['a']" in text


def test_an_empty_schema_becomes_an_empty_object() -> None:
    assert anthropic_schema({}) == {"type": "object", "properties": {}}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_non_object_root_is_refused_for_every_provider(provider: str) -> None:
    with pytest.raises(ConfigurationError, match="arguments must be a JSON object"):
        tools_payload(provider, [raw_tool({"type": "array", "items": {"type": "string"}})])


# -- Gemini ------------------------------------------------------------------------------------


def test_gemini_inlines_refs_and_drops_what_it_rejects() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Args",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "owner": {"$ref": "#/definitions/User", "description": "Who owns it."},
            "reviewers": {"type": "array", "items": {"$ref": "#/definitions/User"}},
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "mode": {"const": "fast"},
            "level": {"type": "integer", "enum": [1, 2, 3]},
            "color": {"enum": ["red", "green", None]},
            "when": {"type": "string", "format": "date-time", "examples": ["2024-01-01T00:00:00Z"]},
            "url": {"type": "string", "format": "uri"},
            "ratio": {"type": ["number", "null"], "exclusiveMaximum": 1},
            "either": {"type": ["string", "integer"]},
            "choice": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
            "maybe": {"anyOf": [{"$ref": "#/definitions/User"}, {"type": "null"}]},
            "both": {"allOf": [{"type": "string"}, {"minLength": 2}]},
            "wrong": {"type": "string", "properties": {"x": {"type": "string"}}},
        },
        "required": ["owner", "ghost"],
        "definitions": {
            "User": {
                "title": "User",
                "type": "object",
                "properties": {"login": {"type": "string"}},
                "required": ["login"],
                "additionalProperties": False,
                "patternProperties": {"^x-": {"type": "string"}},
            }
        },
    }
    assert gemini_params(schema) == snapshot(
        {
            "type": "object",
            "properties": {
                "owner": {
                    "type": "object",
                    "description": "Who owns it.",
                    "properties": {"login": {"type": "string"}},
                    "required": ["login"],
                },
                "reviewers": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"login": {"type": "string"}},
                        "required": ["login"],
                    },
                },
                "meta": {"type": "object"},
                "mode": {"enum": ["fast"], "type": "string"},
                "level": {"type": "integer", "description": "(enum: [1, 2, 3])"},
                "color": {"enum": ["red", "green"], "type": "string", "nullable": True},
                "when": {"type": "string", "format": "date-time"},
                "url": {"type": "string", "description": '(format: "uri")'},
                "ratio": {
                    "type": "number",
                    "nullable": True,
                    "description": "(exclusiveMaximum: 1)",
                },
                "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "choice": {"anyOf": [{"type": "string"}, {"type": "boolean"}]},
                "maybe": {
                    "type": "object",
                    "properties": {"login": {"type": "string"}},
                    "required": ["login"],
                    "nullable": True,
                },
                "both": {"type": "string", "minLength": 2},
                "wrong": {"type": "string"},
            },
            "required": ["owner"],
        }
    )


def test_gemini_gets_no_parameters_for_a_tool_without_any() -> None:
    # "For function with no parameters, this can be left unset"; an empty OBJECT is refused.
    assert gemini_params({"type": "object", "properties": {}}) is None
    assert gemini_params({}) is None


def test_gemini_refuses_a_recursive_schema_clearly() -> None:
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
            }
        },
    }
    with pytest.raises(ConfigurationError) as info:
        gemini_tools([raw_tool(schema, "tree")])
    assert str(info.value) == snapshot(
        "tool 'tree': its parameter schema is recursive (#/$defs/Node -> #/$defs/Node); Gemini function declarations cannot express recursion. Give the tool a non-recursive schema, or keep it from Gemini with `providers=`."
    )
    # The other providers take it as it is (OpenAI strict mode allows recursion).
    assert tools_payload("openai_chat", [raw_tool(schema, "tree")])[0]["function"]["strict"]


def test_gemini_refuses_a_reference_it_cannot_resolve() -> None:
    # Called directly: building a tool with a remote `$ref` would make its validator fetch it.
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    with pytest.raises(
        ConfigurationError, match=re.escape("refers to 'https://example.com/a.json'")
    ):
        gemini_schema(schema, "probe")


def test_gemini_stops_a_reference_fan_out() -> None:
    # Ten definitions, each using the next one ten times: 10**10 nodes once inlined.
    defs: dict[str, Any] = {"D9": {"type": "string"}}
    for i in range(9):
        defs[f"D{i}"] = {
            "type": "object",
            "properties": {f"p{j}": {"$ref": f"#/$defs/D{i + 1}"} for j in range(10)},
        }
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    with pytest.raises(ConfigurationError, match="expands to more than 100,000 parts"):
        gemini_tools([raw_tool(schema)])
    # Without inlining (OpenAI, Anthropic) the same schema is small and goes out unchanged.
    assert anthropic_tools([raw_tool(schema)])[0]["input_schema"]["$defs"] == defs


# -- hostile schemas (every provider) ----------------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"n": node}}
    return node


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_schema_nested_too_deep_is_refused_for_every_provider(provider: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        tools_payload(provider, [raw_tool(nested(110))])
    assert "nests deeper than 200 levels" in str(info.value)
    assert provider in str(info.value)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_huge_schema_is_refused_for_every_provider(provider: str) -> None:
    props = {f"p{i}": {"type": "object", "properties": {}} for i in range(60_000)}
    with pytest.raises(ConfigurationError, match="has more than 100,000 parts"):
        tools_payload(provider, [raw_tool({"type": "object", "properties": props})])


def test_a_long_chain_of_references_is_refused_for_gemini() -> None:
    defs: dict[str, Any] = {
        f"D{i}": {"type": "object", "properties": {"n": {"$ref": f"#/$defs/D{i + 1}"}}}
        for i in range(150)
    }
    defs["D150"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs}
    with pytest.raises(ConfigurationError, match="deeper than 100 levels once its references"):
        gemini_tools([raw_tool(schema)])
    # OpenAI keeps the references: the schema is fine, only too deep for strict mode.
    assert tools_payload("openai_chat", [raw_tool(schema)])[0]["function"]["strict"] is False
