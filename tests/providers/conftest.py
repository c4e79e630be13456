"""Shared tool sets for the provider tests: the built-in coding tools and a raw-schema tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handrail import Batch, Registry, Runtime, Tool, ToolCall, ToolKind
from handrail.builtin import coding_tools

TICKET_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "CreateTicket",
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 3, "description": "One-line summary."},
        "kind": {"const": "bug"},
        "priority": {"enum": ["low", "normal", "high"], "default": "normal"},
        "severity": {"type": "integer", "enum": [1, 2, 3]},
        "assignee": {"$ref": "#/$defs/Person", "description": "Who works on it."},
        "labels": {
            "type": "array",
            "items": {"type": "string"},
            "uniqueItems": True,
            "maxItems": 5,
        },
        "estimate": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "url": {"type": "string", "format": "uri"},
                    "rel": {"type": "string", "title": "Relation"},
                },
                "required": ["url"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "kind"],
    "additionalProperties": False,
    "$defs": {
        "Person": {
            "type": "object",
            "properties": {
                "login": {"type": "string"},
                "team": {"type": "string", "enum": ["core", "web"]},
            },
            "required": ["login"],
            "additionalProperties": False,
        }
    },
}


def ticket_tool(log: list[dict[str, Any]] | None = None) -> Tool:
    """A raw JSON-Schema tool (the MCP case): `$defs`, optional fields, enums, nested objects."""
    seen = log if log is not None else []

    def create(args: dict[str, Any]) -> str:
        seen.append(args)
        return f"created ticket {args['title']!r}"

    return Tool.from_json_schema(
        "create_ticket",
        "Open a ticket in the tracker.",
        TICKET_SCHEMA,
        create,
        kind=ToolKind.EDIT,
        read_only=False,
    )


def visible_tools(project: Path) -> list[Tool]:
    """What a model is shown: the registry's visible coding tools plus create_ticket.

    The skill tool exists only when skills are installed, so it is left out to keep the
    payloads the same on every machine.
    """
    registry = Registry([*coding_tools(project_dir=project), ticket_tool()])
    return [t for t in registry.list() if t.name != "skill"]


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    return visible_tools(tmp_path)


@pytest.fixture
def ticket_log() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def rt(tmp_path: Path, ticket_log: list[dict[str, Any]]) -> Runtime:
    """A runtime over create_ticket and the coding tools, in bypass mode (nothing asks)."""
    tools = [t for t in coding_tools(project_dir=tmp_path) if t.name != "skill"]
    return Runtime(Registry([*tools, ticket_tool(ticket_log)]), root=tmp_path, mode="bypass")


MIXED_CALLS = [
    ToolCall(id="call_1", name="read_file", arguments='{"file_path": "notes.txt"}'),
    ToolCall(id="call_2", name="create_ticket", arguments='{"kind": "bug"}'),
    ToolCall(id="call_3", name="web_fetch", arguments='{"url": "https://example.com"}'),
    ToolCall(
        id="call_4", name="create_ticket", arguments='{"title": "Crash on save", "kind": "bug"}'
    ),
    ToolCall(id="call_5", name="read_file", arguments='{"file_path": "notes.txt"}'),
]
"""One turn with every kind of outcome: ok, invalid arguments, denied by a rule, waiting for
approval, and queued behind that approval."""


@pytest.fixture
async def mixed_batch(tmp_path: Path) -> Batch:
    """The results of `MIXED_CALLS` through a real runtime in default mode (no approver)."""
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    tools = [t for t in coding_tools(project_dir=tmp_path) if t.name != "skill"]
    rt = Runtime(
        Registry([*tools, ticket_tool()]), root=tmp_path, mode="default", deny=["web_fetch"]
    )
    return await rt.call_many(MIXED_CALLS)
