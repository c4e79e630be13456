"""Whatever a model sends, the runtime answers with a ToolResult: it never raises."""

from __future__ import annotations

import random
from typing import Any

import pytest

from handrail import ErrorCode, Registry, Runtime, Tool, ToolResult, tool


@tool(read_only=True)
def typed(
    x: int, label: str = "", items: list[dict[str, int]] | None = None, ratio: float = 0.0
) -> str:
    """A typed tool (Pydantic track)."""
    return f"{x}"


raw = Tool.from_json_schema(
    "raw",
    "The same arguments as a raw JSON Schema (JSON Schema track).",
    typed.parameters,
    lambda args: str(args["x"]),
    read_only=True,
)

HOSTILE: list[Any] = [
    "[" * 100_000 + "]" * 100_000,
    '{"x": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"x": 1, "items": [' + "{" * 3000 + "}" * 3000 + "]}",
    '{"x": 1e999}',
    '{"x": 1, "ratio": 1e999}',
    '{"x": NaN}',
    '{"x": 1, "ratio": Infinity}',
    '{"x": 123456789012345678901234567890}',
    b'{"x": 1, "label": "\xff\xfe"}',
    '{"x": 1, "label": "\\ud800"}',
    "\x00",
    "null",
    "[]",
    '"just a string"',
    '{"x": 1}{"x": 2}',
    "{'x': 1}",
    '{"x": 1,}',
    '{"x": true}',
    '{"x": "1"}',
    '{"x": 1.0}',
    '{"x": 1.5}',
    '{"x": null}',
    '{"x": 1, "items": [{"a": "b"}]}',
    '{"x": 1, "extra": {"deep": [1, 2, 3]}}',
    "   ",
    b"",
    {"x": 1},
    {"x": float("nan")},
]


def _deep_mapping(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["x"] = {}
        node = node["x"]
    return root


def _random_inputs(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    alphabet = '{}[]":,0123456789.-+eExnulltrfas \\\n\t\u00e9\u4e2d'
    out = []
    for _ in range(n):
        length = rng.randint(0, 40)
        out.append("".join(rng.choice(alphabet) for _ in range(length)))
    return out


@pytest.fixture(scope="module")
def rt() -> Runtime:
    return Runtime(Registry([typed, raw]))


@pytest.mark.parametrize("arguments", [*HOSTILE, _deep_mapping(5000)], ids=range(len(HOSTILE) + 1))
@pytest.mark.parametrize("name", ["typed", "raw"])
async def test_hostile_arguments_give_a_result(rt: Runtime, name: str, arguments: Any) -> None:
    r = await rt.call(name, arguments)
    assert isinstance(r, ToolResult)
    assert r.ok or r.error is ErrorCode.INVALID_ARGS
    if not r.ok:
        assert r.issues or "could not be checked" in r.content
        assert r.content.endswith("corrected arguments.") or "could not be checked" in r.content


async def test_random_garbage_never_raises_and_tracks_agree(rt: Runtime) -> None:
    disagreements = []
    for text in _random_inputs(400):
        a = await rt.call("typed", text)
        b = await rt.call("raw", text)
        assert isinstance(a, ToolResult) and isinstance(b, ToolResult)
        if a.ok != b.ok:
            disagreements.append(text)
    assert disagreements == []


@pytest.mark.parametrize(
    "arguments", ['{"x": NaN}', '{"x": 1, "ratio": 1e999}', '{"x": 1, "ratio": Infinity}']
)
async def test_non_json_numbers_are_refused_by_both_tracks(rt: Runtime, arguments: str) -> None:
    a = await rt.call("typed", arguments)
    b = await rt.call("raw", arguments)
    assert (a.ok, b.ok) == (False, False)
