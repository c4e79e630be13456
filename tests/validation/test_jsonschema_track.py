"""The JSON Schema track: raw-schema tools (the MCP case), drafts 2020-12 and 7."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import ConfigurationError, Tool, ValidationIssue
from handrail.validation import InvalidArguments, JsonSchemaArgs

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "mode": {"enum": ["fast", "slow"]},
        "kind": {"const": "file"},
        "n": {"type": "integer", "minimum": 1, "maximum": 10},
        "name": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "flag": {"type": "boolean"},
        "filters": {"anyOf": [{"$ref": "#/$defs/Filters"}, {"type": "null"}]},
        "weights": {"type": "object", "additionalProperties": {"type": "integer"}},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$defs": {
        "Filters": {
            "type": "object",
            "properties": {"since": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["since"],
            "additionalProperties": False,
        }
    },
}

DRAFT7: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"target": {"$ref": "#/definitions/Target"}},
    "required": ["target"],
    "definitions": {
        "Target": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "label": {"type": "string"}},
            "required": ["x"],
            "additionalProperties": False,
        }
    },
}

args_2020 = JsonSchemaArgs(SCHEMA)
args_7 = JsonSchemaArgs(DRAFT7)


def issues_of(validator: JsonSchemaArgs, raw: Any) -> tuple[ValidationIssue, ...]:
    with pytest.raises(InvalidArguments) as info:
        validator.validate(raw)
    return info.value.issues


def one(validator: JsonSchemaArgs, raw: Any) -> ValidationIssue:
    issues = issues_of(validator, raw)
    assert len(issues) == 1, issues
    return issues[0]


def test_schema_is_shown_to_the_model_as_given() -> None:
    assert args_2020.schema == SCHEMA
    assert Tool.from_json_schema("t", "d", SCHEMA, lambda a: a).parameters == SCHEMA


def test_valid_input_passes_and_returns_the_object() -> None:
    raw = '{"path": "a", "mode": "fast", "kind": "file", "n": 3, "day": "2024-02-29"}'
    assert args_2020.validate(raw) == {
        "path": "a",
        "mode": "fast",
        "kind": "file",
        "n": 3,
        "day": "2024-02-29",
    }


def test_integral_float_accepted_fractional_refused() -> None:
    args_2020.validate('{"path": "a", "n": 2.0}')
    issue = one(args_2020, '{"path": "a", "n": 2.5}')
    assert (issue.path, issue.expected) == ("/n", "integer")


@pytest.mark.parametrize(
    ("raw", "path", "expected"),
    [
        ('{"path": "a", "n": "5"}', "/n", "integer"),
        ('{"path": "a", "flag": "true"}', "/flag", "boolean"),
        ('{"path": null}', "/path", "string"),
    ],
)
def test_no_coercion_and_no_null(raw: str, path: str, expected: str) -> None:
    issue = one(args_2020, raw)
    assert (issue.path, issue.expected) == (path, expected)


def test_enum() -> None:
    issue = one(args_2020, '{"path": "a", "mode": "medium"}')
    assert issue.path == "/mode"
    assert issue.message == 'must be one of "fast", "slow", received string "medium"'


def test_const() -> None:
    issue = one(args_2020, '{"path": "a", "kind": "dir"}')
    assert issue.path == "/kind"
    assert issue.message == 'must be "file", received string "dir"'


@pytest.mark.parametrize(("n", "expected"), [(0, ">= 1"), (11, "<= 10")])
def test_minimum_and_maximum(n: int, expected: str) -> None:
    issue = one(args_2020, f'{{"path": "a", "n": {n}}}')
    assert (issue.path, issue.expected) == ("/n", expected)
    assert issue.message == f"must be {expected}, received integer {n}"


def test_min_length() -> None:
    issue = one(args_2020, '{"path": "a", "name": "a"}')
    assert issue.path == "/name"
    assert issue.message == 'length must be >= 2, received string "a"'


def test_pattern() -> None:
    issue = one(args_2020, '{"path": "a", "name": "AB"}')
    assert issue.path == "/name"
    assert issue.message == 'must match the pattern ^[a-z]+$, received string "AB"'


def test_format_date_is_checked() -> None:
    issue = one(args_2020, '{"path": "a", "day": "2024-13-45"}')
    assert issue.path == "/day"
    assert issue.message == 'must be a valid date (YYYY-MM-DD), received string "2024-13-45"'


def test_min_items() -> None:
    issue = one(args_2020, '{"path": "a", "tags": []}')
    assert issue.path == "/tags"
    assert issue.expected == "at least 1 items"


def test_required() -> None:
    issue = one(args_2020, '{"mode": "fast"}')
    assert issue.path == "/path"
    assert issue.message == "required field `path` is missing"


@pytest.mark.parametrize("sent", ["Path", "filePath"])
def test_additional_properties_false_with_did_you_mean(sent: str) -> None:
    issues = issues_of(args_2020, f'{{"{sent}": "a"}}')
    assert sorted(i.path for i in issues) == sorted(["/path", f"/{sent}"])
    unknown = next(i for i in issues if i.path == f"/{sent}")
    assert unknown.message == f"unknown field `{sent}`; did you mean `path`?"


def test_every_issue_is_reported() -> None:
    issues = issues_of(args_2020, '{"Path": "a", "n": "x", "mode": "medium", "tags": []}')
    assert sorted(i.path for i in issues) == ["/Path", "/mode", "/n", "/path", "/tags"]


def test_optional_object_reports_the_inner_objects_errors() -> None:
    issue = one(args_2020, '{"path": "a", "filters": {"since": 3}}')
    assert issue.path == "/filters/since"
    assert issue.message == "expected string, received integer 3"


def test_optional_object_inner_unknown_field_gets_a_hint() -> None:
    issues = issues_of(args_2020, '{"path": "a", "filters": {"Since": "x"}}')
    assert sorted(i.path for i in issues) == ["/filters/Since", "/filters/since"]
    unknown = next(i for i in issues if i.path == "/filters/Since")
    assert unknown.message == "unknown field `Since`; did you mean `since`?"


def test_optional_object_accepts_null_and_refuses_other_types() -> None:
    args_2020.validate('{"path": "a", "filters": null}')
    issue = one(args_2020, '{"path": "a", "filters": 5}')
    assert issue.path == "/filters"


def test_pointer_escaping_of_keys() -> None:
    issues = issues_of(args_2020, '{"path": "a", "weights": {"a/b": "x", "c~d": 1.5, "ok": 1}}')
    assert sorted(i.path for i in issues) == ["/weights/a~1b", "/weights/c~0d"]


def test_received_is_at_most_60_characters() -> None:
    issue = one(args_2020, '{"path": "a", "n": "' + "9" * 1000 + '"}')
    assert len(issue.received) <= 60
    assert issue.received.startswith('string "999')


def test_malformed_json_gives_one_issue_with_line_and_column() -> None:
    issue = one(args_2020, '{\n  "path": "a",\n  "n": 1,,\n}')
    assert issue.path == ""
    assert "line 3" in issue.message
    assert "column 10" in issue.message


@pytest.mark.parametrize("raw", ["[1, 2]", '"x"', "true"])
def test_non_object_is_one_root_issue(raw: str) -> None:
    issue = one(args_2020, raw)
    assert issue.path == ""
    assert issue.expected == "object"


def test_empty_string_means_empty_object() -> None:
    issue = one(args_2020, "")
    assert issue.path == "/path"
    assert (
        JsonSchemaArgs({"type": "object", "properties": {"q": {"type": "string"}}}).validate("")
        == {}
    )


def test_default_draft_is_2020_12() -> None:
    # `prefixItems` only exists from 2020-12 on: a 2019-09 or draft-7 validator ignores it.
    schema = {
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer"}]}},
    }
    issue = one(JsonSchemaArgs(schema), '{"pair": ["x"]}')
    assert issue.path == "/pair/0"


def test_draft_7_with_definitions_ref() -> None:
    assert args_7.validate('{"target": {"x": 1}}') == {"target": {"x": 1}}
    issue = one(args_7, '{"target": {"x": "1"}}')
    assert (issue.path, issue.expected) == ("/target/x", "integer")
    missing = one(args_7, '{"target": {}}')
    assert missing.path == "/target/x"
    unknown = issues_of(args_7, '{"target": {"x": 1, "lable": "a"}}')
    assert [i.message for i in unknown] == ["unknown field `lable`; did you mean `label`?"]


def test_draft_7_semantics_are_used_when_declared() -> None:
    # In draft 7, `items` given as a list is a tuple schema; 2020-12 would reject the schema.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"pair": {"type": "array", "items": [{"type": "integer"}]}},
    }
    issue = one(JsonSchemaArgs(schema), '{"pair": ["x"]}')
    assert issue.path == "/pair/0"


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "objectt"},
        {"type": "object", "properties": {"a": {"minimum": "x"}}},
        {"type": "object", "required": "a"},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
    ],
)
def test_invalid_schema_is_a_configuration_error_at_definition_time(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        JsonSchemaArgs(bad)
    with pytest.raises(ConfigurationError):
        Tool.from_json_schema("broken", "A broken tool.", bad, lambda args: args)


def test_a_remote_ref_is_never_fetched() -> None:
    # A schema from an MCP server must not make handrail send requests: `$ref` to a URL is
    # refused when the tool is built, and the (loopback) server sees nothing.
    import http.server
    import threading

    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = b'{"type": "integer"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/n.json"
        schema = {"type": "object", "properties": {"n": {"$ref": url}}}
        with pytest.raises(ConfigurationError, match="invalid JSON Schema"):
            JsonSchemaArgs(schema)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert hits == []
