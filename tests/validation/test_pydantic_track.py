"""The Pydantic track: arguments of `@tool` functions, validated strictly, with readable issues."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from handrail import ValidationIssue, tool
from handrail.validation import InvalidArguments


class Filters(BaseModel):
    since: str
    limit: int = 10


class Item(BaseModel):
    name: str


received: dict[str, Any] = {}


@tool
def search(
    path: str,
    count: int,
    flag: bool = False,
    opt: int | None = None,
    filters: Filters | None = None,
    items: list[Item] | None = None,
    weights: dict[str, int] | None = None,
) -> str:
    """Search things."""
    received.update(path=path, count=count, filters=filters, items=items, weights=weights)
    return "ok"


@tool
def write(file_path: str, content: str = "") -> str:
    """Write a file."""
    return file_path + content


@tool
def scores(weights: dict[str, int]) -> str:
    """Scores by key."""
    return str(weights)


@tool
def optional_only(limit: int = 5, verbose: bool = False) -> str:
    """Everything has a default."""
    return f"{limit} {verbose}"


def issues_of(t: Any, raw: Any) -> tuple[ValidationIssue, ...]:
    with pytest.raises(InvalidArguments) as info:
        t.validator.validate(raw)
    return info.value.issues


def paths(issues: tuple[ValidationIssue, ...]) -> list[str]:
    return [i.path for i in issues]


def test_valid_input_passes_and_the_function_gets_the_values() -> None:
    args = search.validator.validate('{"path": "src", "count": 3, "flag": true}')
    assert (args.path, args.count, args.flag) == ("src", 3, True)


def test_integral_float_accepted_for_int_and_the_tool_receives_an_int() -> None:
    args = search.validator.validate('{"path": "a", "count": 1.0}')
    assert args.count == 1
    assert type(args.count) is int
    search.run(args, None)  # pyright: ignore[reportArgumentType]
    assert type(received["count"]) is int


def test_integral_float_accepted_inside_nested_model() -> None:
    args = search.validator.validate(
        '{"path": "a", "count": 1, "filters": {"since": "x", "limit": 2.0}}'
    )
    assert args.filters.limit == 2
    assert type(args.filters.limit) is int


def test_fractional_float_refused_for_int() -> None:
    (only,) = issues_of(search, '{"path": "a", "count": 1.5}')
    assert only.path == "/count"
    assert only.expected == "integer"
    assert only.received == "number 1.5"


@pytest.mark.parametrize(
    ("raw", "path", "expected"),
    [
        ('{"path": "a", "count": "5"}', "/count", "integer"),
        ('{"path": "a", "count": 1, "flag": "true"}', "/flag", "boolean"),
        ('{"path": "a", "count": true}', "/count", "integer"),
        ('{"path": 5, "count": 1}', "/path", "string"),
    ],
)
def test_no_coercion_between_strings_numbers_and_booleans(
    raw: str, path: str, expected: str
) -> None:
    (only,) = issues_of(search, raw)
    assert (only.path, only.expected) == (path, expected)


def test_null_refused_for_non_nullable_field() -> None:
    (only,) = issues_of(search, '{"path": null, "count": 1}')
    assert only.path == "/path"
    assert only.received == "null"


def test_null_accepted_for_optional_field() -> None:
    args = search.validator.validate('{"path": "a", "count": 1, "opt": null, "filters": null}')
    assert args.opt is None
    assert args.filters is None


@pytest.mark.parametrize("sent", ["Path", "filePath", "PATH", "pathh"])
def test_unknown_field_suggests_the_closest_allowed_one(sent: str) -> None:
    issues = issues_of(search, f'{{"{sent}": "a", "count": 1}}')
    unknown = next(i for i in issues if i.path == f"/{sent}")
    assert unknown.message == f"unknown field `{sent}`; did you mean `path`?"
    assert unknown.expected == "absent"


@pytest.mark.parametrize("sent", ["filePath", "path", "FilePath"])
def test_unknown_field_suggests_file_path(sent: str) -> None:
    issues = issues_of(write, f'{{"{sent}": "a.txt"}}')
    assert sorted(paths(issues)) == sorted(["/file_path", f"/{sent}"])
    unknown = next(i for i in issues if i.path == f"/{sent}")
    assert unknown.message == f"unknown field `{sent}`; did you mean `file_path`?"


def test_unknown_field_with_no_close_name_lists_the_allowed_fields() -> None:
    issues = issues_of(write, '{"file_path": "a", "zzzzzz": 1}')
    assert [i.message for i in issues] == [
        "unknown field `zzzzzz`; allowed fields: `file_path`, `content`"
    ]


def test_all_issues_are_reported_together() -> None:
    issues = issues_of(search, '{"count": "x", "Path": "a", "flag": 3}')
    assert sorted(paths(issues)) == ["/Path", "/count", "/flag", "/path"]
    by_path = {i.path: i for i in issues}
    assert by_path["/path"].message == "required field `path` is missing"
    assert by_path["/path"].expected == "present"
    assert by_path["/count"].message == 'expected integer, received string "x"'
    assert by_path["/Path"].message == "unknown field `Path`; did you mean `path`?"
    assert by_path["/flag"].message == "expected boolean, received integer 3"


def test_nested_model_error_points_into_the_object() -> None:
    (only,) = issues_of(search, '{"path": "a", "count": 1, "filters": {"since": 5}}')
    assert only.path == "/filters/since"
    assert only.expected == "string"


def test_nested_missing_field_points_into_the_object() -> None:
    (only,) = issues_of(search, '{"path": "a", "count": 1, "filters": {}}')
    assert only.path == "/filters/since"
    assert only.expected == "present"


def test_list_index_is_part_of_the_pointer() -> None:
    raw = '{"path": "a", "count": 1, "items": [{"name": "x"}, {"name": 3}, {}]}'
    issues = issues_of(search, raw)
    assert paths(issues) == ["/items/1/name", "/items/2/name"]


def test_nested_unknown_field_is_refused_with_a_hint() -> None:
    # A misspelled nested field must not be dropped silently (the tool would use the default).
    raw = '{"path": "a", "count": 1, "filters": {"since": "x", "limt": 3}}'
    (only,) = issues_of(search, raw)
    assert only.path == "/filters/limt"
    assert only.message == "unknown field `limt`; did you mean `limit`?"


def test_pointer_escapes_tilde_and_slash_in_keys() -> None:
    raw = '{"weights": {"a/b": "x", "c~d": "y", "ok": 1}}'
    issues = issues_of(scores, raw)
    assert sorted(paths(issues)) == ["/weights/a~1b", "/weights/c~0d"]
    assert all(i.expected == "integer" for i in issues)


def test_optional_dict_value_errors_point_at_each_key() -> None:
    raw = '{"path": "a", "count": 1, "weights": {"a/b": "x", "c~d": "y", "ok": 1}}'
    issues = issues_of(search, raw)
    assert sorted(paths(issues)) == ["/weights/a~1b", "/weights/c~0d"]
    by_path = {i.path: i for i in issues}
    assert by_path["/weights/a~1b"].message == 'expected integer, received string "x"'


def test_received_is_at_most_60_characters() -> None:
    huge = "y" * 5000
    (only,) = issues_of(search, f'{{"path": "a", "count": "{huge}"}}')
    assert len(only.received) <= 60
    assert only.received.startswith('string "yyy')
    (big_int,) = issues_of(search, f'{{"path": {"9" * 300}, "count": 1}}')
    assert len(big_int.received) <= 60
    assert big_int.received.startswith("integer 999")


def test_received_of_long_unknown_key_value_stays_short() -> None:
    issues = issues_of(write, '{"file_path": "a", "junk": {"' + "k" * 200 + '": 1}}')
    assert all(len(i.received) <= 60 for i in issues)


def test_malformed_json_gives_one_issue_with_line_and_column() -> None:
    issues = issues_of(search, '{"path": "a",\n "count": }')
    assert len(issues) == 1
    (only,) = issues
    assert only.path == ""
    assert only.expected == "valid JSON"
    assert "line 2" in only.message
    assert "column 11" in only.message
    assert len(only.received) <= 60


def test_malformed_huge_json_received_is_short() -> None:
    (only,) = issues_of(search, '{"path": "' + "x" * 5000 + '",,}')
    assert len(only.received) <= 60
    assert "line 1" in only.message


@pytest.mark.parametrize("raw", ["", "   ", "\n"])
def test_empty_arguments_mean_an_empty_object(raw: str) -> None:
    args = optional_only.validator.validate(raw)
    assert (args.limit, args.verbose) == (5, False)
    issues = issues_of(search, raw)
    assert sorted(paths(issues)) == ["/count", "/path"]


@pytest.mark.parametrize(
    ("raw", "received_text"),
    [("[1, 2]", "array of 2 items"), ('"x"', 'string "x"'), ("3", "integer 3"), ("null", "null")],
)
def test_non_object_json_is_one_root_issue(raw: str, received_text: str) -> None:
    issues = issues_of(search, raw)
    assert len(issues) == 1
    (only,) = issues
    assert only.path == ""
    assert only.expected == "object"
    assert only.received == received_text
    assert only.message == f"arguments must be a JSON object, received {received_text}"


def test_already_parsed_mapping_is_validated_the_same_way() -> None:
    args = search.validator.validate({"path": "a", "count": 2.0})
    assert args.count == 2
    issues = issues_of(search, {"path": "a", "count": "2", "Path": "b"})
    assert sorted(paths(issues)) == ["/Path", "/count"]
