"""The JSON Schema track: raw-schema tools (MCP servers produce these) validated by jsonschema-rs.

jsonschema-rs is a Rust validator: drafts 4 to 2020-12, local `$ref` into `$defs`/`definitions`,
and every error with its instance and schema path, which is what issues need.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import jsonschema_rs

from .._contract import ValidationIssue
from ..errors import ConfigurationError
from ._errors import InvalidArguments
from ._issues import describe, issue, missing_issue, pointer, sort_issues, unknown_field_issue
from ._json import dump_arguments, parse_arguments
from ._messages import message
from ._schema import FORMAT_NAMES, JsonSchema, describe_types, property_names, resolve

_DRAFTS: dict[str, Any] = {
    "draft-07": jsonschema_rs.Draft7Validator,
    "draft-06": jsonschema_rs.Draft6Validator,
    "draft-04": jsonschema_rs.Draft4Validator,
    "2019-09": jsonschema_rs.Draft201909Validator,
    "2020-12": jsonschema_rs.Draft202012Validator,
}


class JsonSchemaArgs:
    """Validates a call's arguments against a raw JSON Schema; the schema is shown as given."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema: dict[str, Any] = dict(schema)
        declared = str(schema.get("$schema", ""))
        cls = next((c for k, c in _DRAFTS.items() if k in declared), None)
        try:
            if cls is None:
                cls = jsonschema_rs.Draft202012Validator
            # offline: a `$ref` to a URL is never fetched. The schema can come from an MCP server,
            # and resolving its references must not make handrail send requests anywhere.
            self._validator: Any = cls(self.schema, validate_formats=True, offline=True)
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigurationError(f"invalid JSON Schema for tool parameters: {first}") from exc

    def validate(self, raw: str | bytes | Mapping[str, Any], locale: str = "en") -> Any:
        """Return the parsed arguments or raise `InvalidArguments` with every issue."""
        if isinstance(raw, str | bytes):
            data = parse_arguments(raw, locale)
            if isinstance(data, ValidationIssue):
                raise InvalidArguments((data,))
        else:
            # A mapping from an SDK gets JSON semantics too (tuples become arrays, and so on).
            dumped = dump_arguments(raw, locale)
            if isinstance(dumped, ValidationIssue):
                raise InvalidArguments((dumped,))
            data = json.loads(dumped)
        if not isinstance(data, dict):
            raise InvalidArguments((issue("", "not_object", "object", data, locale),))
        args = cast(dict[str, Any], data)
        try:
            if self._validator.is_valid(args):
                return args
            issues = self.to_issues(data, locale)
        except (ValueError, OverflowError, RecursionError) as exc:
            # The validator cannot take this value at all (a lone surrogate, say).
            detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            issues = (
                ValidationIssue(
                    path="",
                    expected="valid JSON text",
                    received=describe(args),
                    message=message(
                        locale, "other", detail=f"arguments cannot be checked: {detail}"
                    ),
                ),
            )
        raise InvalidArguments(issues)

    def to_issues(self, data: Any, locale: str) -> tuple[ValidationIssue, ...]:
        """Map every jsonschema-rs error to an issue."""
        out: list[ValidationIssue] = []
        for err in self._validator.iter_errors(data):
            out.extend(self._convert(err, locale))
        return sort_issues(out, property_names(self.schema, self.schema))

    def _node(self, schema_path: list[str | int]) -> JsonSchema:
        node: Any = self.schema
        for part in schema_path:
            if isinstance(node, Mapping) and part in node:
                node = cast(Mapping[Any, Any], node)[part]
            elif isinstance(node, list) and isinstance(part, int):
                node = cast(list[Any], node)[part]
            else:
                return {}
        return cast(JsonSchema, node) if isinstance(node, Mapping) else {}

    def _convert(self, err: Any, locale: str) -> list[ValidationIssue]:
        kind = err.kind
        name = type(kind).__name__
        parts: list[str | int] = list(err.instance_path)
        path = pointer(parts)
        value = err.instance
        schema_path: list[str | int] = list(err.schema_path)
        if name == "Required":
            return [missing_issue(parts, str(kind.property), locale)]
        if name in ("AdditionalProperties", "UnevaluatedProperties"):
            parent = resolve(self.schema, self._node(schema_path[:-1]))
            allowed = property_names(self.schema, parent)
            return [
                unknown_field_issue(parts, str(f), allowed, value.get(f), locale)
                for f in kind.unexpected
            ]
        if name == "Type":
            types = [str(t) for t in kind.types]
            if not parts and "object" in types:
                return [issue("", "not_object", "object", value, locale)]
            return [issue(path, "type", " or ".join(types), value, locale)]
        if name == "Enum":
            options = ", ".join(json.dumps(o, ensure_ascii=False) for o in kind.options)
            return [issue(path, "enum", options, value, locale)]
        if name == "Constant":
            expected = json.dumps(kind.expected_value, ensure_ascii=False)
            return [issue(path, "const", expected, value, locale)]
        symbols = {"Minimum": ">=", "Maximum": "<=", "ExclusiveMinimum": ">"}
        symbols["ExclusiveMaximum"] = "<"
        if name in symbols:
            return [issue(path, "bound", f"{symbols[name]} {kind.limit}", value, locale)]
        if name in ("MinLength", "MaxLength"):
            op = ">=" if name == "MinLength" else "<="
            return [issue(path, "length", f"{op} {kind.limit}", value, locale)]
        if name in ("MinItems", "MaxItems"):
            word = "at least" if name == "MinItems" else "at most"
            return [issue(path, "items", f"{word} {kind.limit} items", value, locale)]
        if name == "Pattern":
            return [issue(path, "pattern", str(kind.pattern), value, locale)]
        if name == "Format":
            fmt = str(kind.format)
            return [issue(path, "format", FORMAT_NAMES.get(fmt, fmt), value, locale)]
        if name == "UniqueItems":
            return [issue(path, "unique", "unique items", value, locale)]
        if name == "MultipleOf":
            return [issue(path, "multiple_of", str(kind.multiple_of), value, locale)]
        if name in ("AnyOf", "OneOfNotValid"):
            # When exactly one member has the value's type (Optional[X] sent an object), its
            # errors are the useful ones; otherwise say which shapes were allowed.
            candidates = [
                errs
                for errs in kind.context
                if not any(
                    type(e.kind).__name__ == "Type" and list(e.instance_path) == parts for e in errs
                )
            ]
            if len(candidates) == 1 and candidates[0]:
                return [i for e in candidates[0] for i in self._convert(e, locale)]
            expected = describe_types(self.schema, self._node(schema_path[:-1]))
            return [issue(path, "no_match", expected, value, locale)]
        detail = str(err.message)
        return [
            ValidationIssue(
                path=path,
                expected="a valid value",
                received=describe(value),
                message=message(locale, "other", detail=detail),
            )
        ]
