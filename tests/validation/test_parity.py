"""Both tracks give the same verdict and the same issue paths on the same input.

The JSON Schema track is given the typed tool's own `parameters`: what the model is shown must
refuse exactly what the Pydantic track refuses.
"""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from handrail import tool
from handrail.validation import InvalidArguments, JsonSchemaArgs


class Range(BaseModel):
    since: str
    limit: int = 10


class Entry(BaseModel):
    name: str
    size: int | None = None


@tool
def query(
    path: str,
    count: int,
    recursive: bool = False,
    ratio: float = 1.0,
    order: Literal["asc", "desc"] = "asc",
    depth: int | None = None,
    window: Range | None = None,
    entries: list[Entry] | None = None,
    weights: dict[str, int] | None = None,
    pair: tuple[int, str] | None = None,
    tags: set[str] | None = None,
) -> str:
    """Query things."""
    return path


pydantic_track = query.validator
schema_track = JsonSchemaArgs(query.parameters)

CASES: dict[str, str] = {
    "valid": '{"path": "a", "count": 3}',
    "valid_full": (
        '{"path": "a", "count": 3, "recursive": true, "ratio": 2, "order": "desc", "depth": null,'
        ' "window": {"since": "2024-01-01", "limit": 5}, "entries": [{"name": "x", "size": null}],'
        ' "weights": {"k": 1}}'
    ),
    "integral_float": '{"path": "a", "count": 3.0}',
    "integral_float_nested": '{"path": "a", "count": 3, "window": {"since": "x", "limit": 4.0}}',
    "integral_float_optional": '{"path": "a", "count": 3, "depth": 2.0}',
    "fractional_float": '{"path": "a", "count": 3.5}',
    "fractional_float_optional": '{"path": "a", "count": 3, "depth": 2.5}',
    "string_number": '{"path": "a", "count": "3"}',
    "string_bool": '{"path": "a", "count": 3, "recursive": "true"}',
    "bool_for_int": '{"path": "a", "count": true}',
    "int_for_float": '{"path": "a", "count": 1, "ratio": 2}',
    "null_non_nullable": '{"path": null, "count": 3}',
    "null_nullable": '{"path": "a", "count": 3, "depth": null, "window": null}',
    "unknown_field": '{"Path": "a", "count": 3}',
    "missing": '{"count": 3}',
    "missing_all": "{}",
    "empty_string": "",
    "enum_wrong": '{"path": "a", "count": 3, "order": "up"}',
    "nested_wrong": '{"path": "a", "count": 3, "window": {"since": 5}}',
    "nested_missing": '{"path": "a", "count": 3, "window": {}}',
    "nested_extra_field": '{"path": "a", "count": 3, "window": {"since": "x", "until": "y"}}',
    "nested_not_object": '{"path": "a", "count": 3, "window": 5}',
    "list_item_wrong": '{"path": "a", "count": 3, "entries": [{"name": "x"}, {"name": 1}]}',
    "list_item_missing": '{"path": "a", "count": 3, "entries": [{}]}',
    "list_not_list": '{"path": "a", "count": 3, "entries": {"name": "x"}}',
    "dict_value_wrong": '{"path": "a", "count": 3, "weights": {"a/b": "1", "c~d": 2}}',
    "tuple_ok": '{"path": "a", "count": 3, "pair": [1, "x"]}',
    "tuple_wrong_item": '{"path": "a", "count": 3, "pair": [1, 2]}',
    "tuple_too_short": '{"path": "a", "count": 3, "pair": [1]}',
    "set_ok": '{"path": "a", "count": 3, "tags": ["a", "b"]}',
    "set_duplicates": '{"path": "a", "count": 3, "tags": ["a", "a"]}',
    "many_issues": '{"Path": "a", "count": "3", "recursive": 1, "order": "up"}',
    "malformed_json": '{"path": "a", "count": }',
    "non_object_array": "[1, 2]",
    "non_object_string": '"x"',
    "non_object_null": "null",
}


def verdict(validator: Any, raw: str) -> tuple[bool, list[str]]:
    try:
        validator.validate(raw)
    except InvalidArguments as exc:
        return False, sorted(i.path for i in exc.issues)
    return True, []


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 12
    valid = sum(verdict(pydantic_track, raw)[0] for raw in CASES.values())
    assert 0 < valid < len(CASES)


@pytest.mark.parametrize("raw", list(CASES.values()), ids=list(CASES))
def test_same_verdict_and_paths(raw: str) -> None:
    assert verdict(pydantic_track, raw) == verdict(schema_track, raw)


@pytest.mark.parametrize(
    "name",
    [
        "valid",
        "valid_full",
        "integral_float",
        "integral_float_nested",
        "integral_float_optional",
        "int_for_float",
        "null_nullable",
    ],
)
def test_expected_valid_inputs_are_valid_on_both(name: str) -> None:
    assert verdict(pydantic_track, CASES[name]) == (True, [])
    assert verdict(schema_track, CASES[name]) == (True, [])


@pytest.mark.parametrize(
    ("name", "paths"),
    [
        ("fractional_float", ["/count"]),
        ("string_number", ["/count"]),
        ("string_bool", ["/recursive"]),
        ("null_non_nullable", ["/path"]),
        ("unknown_field", ["/Path", "/path"]),
        ("missing", ["/path"]),
        ("empty_string", ["/count", "/path"]),
        ("nested_wrong", ["/window/since"]),
        ("nested_extra_field", ["/window/until"]),
        ("list_item_wrong", ["/entries/1/name"]),
        ("dict_value_wrong", ["/weights/a~1b"]),
        ("malformed_json", [""]),
        ("non_object_array", [""]),
    ],
)
def test_expected_invalid_inputs_have_the_expected_paths(name: str, paths: list[str]) -> None:
    assert verdict(pydantic_track, CASES[name]) == (False, paths)
    assert verdict(schema_track, CASES[name]) == (False, paths)


@pytest.mark.parametrize(
    "raw",
    [
        '{"Path": "a", "count": "3"}',
        '{"path": "a", "count": 3, "recursive": 1}',
        '{"path": "a", "count": 3, "order": "up"}',
        '{"path": "a", "count": 3, "window": {"since": 5}}',
        '{"path": "a", "count": 3, "entries": [{}]}',
    ],
)
def test_same_expected_and_message_for_plain_fields(raw: str) -> None:
    with pytest.raises(InvalidArguments) as p:
        pydantic_track.validate(raw)
    with pytest.raises(InvalidArguments) as j:
        schema_track.validate(raw)
    p_issues = sorted((i.path, i.expected, i.received, i.message) for i in p.value.issues)
    j_issues = sorted((i.path, i.expected, i.received, i.message) for i in j.value.issues)
    assert p_issues == j_issues


@pytest.mark.parametrize(
    "raw",
    [
        '{"path": "a\\ud800", "count": 3}',
        '{"path": "a", "count": 3, "entries": [{"name": "\\udfff"}]}',
        '{"path": "a", "count": 3, "weights": {"k\\ud83d": 1}}',
        '{"path": "a\ud800", "count": 3}',  # the character itself, as a Python caller can send
        {"path": "\udc80", "count": 3},
    ],
    ids=["escape", "nested", "key", "character", "mapping"],
)
def test_a_lone_surrogate_is_one_clear_issue_on_both_tracks(raw: str | dict[str, Any]) -> None:
    # Found by tests/reliability/test_fuzz_tools.py: the JSON Schema track let `"\ud800"`
    # through to the tool, while the Pydantic track said "Invalid JSON: unexpected end of hex
    # escape ... (line 1, column 1)". UTF-8 cannot carry a lone surrogate, so both refuse it,
    # and the text says why, in characters that can be sent.
    for track in (pydantic_track, schema_track):
        with pytest.raises(InvalidArguments) as exc:
            track.validate(raw)
        (only,) = exc.value.issues
        assert only.expected == "text without lone surrogates"
        assert "half of a UTF-16 surrogate pair" in only.message
        for text in (only.path, only.received, only.message):
            text.encode("utf-8")
    with pytest.raises(InvalidArguments) as p:
        pydantic_track.validate(raw)
    with pytest.raises(InvalidArguments) as j:
        schema_track.validate(raw)
    assert p.value.issues == j.value.issues


def test_a_surrogate_pair_is_one_character_and_valid() -> None:
    raw = '{"path": "\\ud83d\\ude00", "count": 3}'
    assert verdict(pydantic_track, raw) == verdict(schema_track, raw) == (True, [])
