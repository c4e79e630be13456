"""`inline_refs`: a tool's schema that means the same nested anywhere, with no `$ref` left.

The schema goes into LangGraph's interrupt `response_schema`, which pydantic copies: each case
ends with pydantic accepting it where the raw schema made it fail.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from inline_snapshot import snapshot
from pydantic import TypeAdapter, WithJsonSchema

from handrail.builtin import EditFile
from handrail.integrations._inline_refs import inline_refs


def nested_in_pydantic(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as the `args` of a schema pydantic generates (what LangGraph does)."""
    shown = {"type": "object", "properties": {"args": schema}}
    return TypeAdapter(Annotated[dict[str, Any], WithJsonSchema(shown)]).json_schema()


def test_edit_files_schema_has_its_item_model_in_place() -> None:
    params = dict(EditFile().parameters)
    with pytest.raises(KeyError, match="EditItem"):
        nested_in_pydantic(params)
    inlined = inline_refs(params)
    assert "$ref" not in json.dumps(inlined) and "$defs" not in inlined
    assert inlined["properties"]["edits"]["items"] == params["$defs"]["EditItem"]
    assert nested_in_pydantic(inlined)["properties"]["args"] == inlined


def test_a_schema_without_references_is_unchanged() -> None:
    schema = {
        "type": "object",
        "properties": {"$ref": {"type": "string"}, "definitions": {"type": "array"}},
        "required": ["$ref"],
    }
    assert inline_refs(schema) == schema


def test_recursion_missing_and_remote_references_become_any_value() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/definitions/Node"},
            "gone": {"$ref": "#/$defs/Missing", "description": "kept"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "whole": {"$ref": "#"},
        },
        "definitions": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/definitions/Node"}},
                },
            }
        },
    }
    inlined = inline_refs(schema)
    assert inlined == snapshot(
        {
            "type": "object",
            "properties": {
                "tree": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {}},
                    },
                },
                "gone": {"description": "kept"},
                "remote": {},
                "whole": {},
            },
        }
    )
    nested_in_pydantic(inlined)


def test_a_definition_used_everywhere_stops_growing_at_the_budget() -> None:
    # Each level uses the one below twice: 2**30 copies if nothing stopped it.
    defs = {
        f"L{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"}, "b": {"$ref": f"#/$defs/L{i + 1}"}},
        }
        for i in range(30)
    }
    defs["L30"] = {"type": "string"}
    inlined = inline_refs({"$ref": "#/$defs/L0", "$defs": defs})
    text = json.dumps(inlined)
    assert "$ref" not in text and len(text) < 5_000_000
