"""The Pydantic track: typed tools validated by their generated model, strictly.

Strict JSON mode refuses the coercions a model should not rely on ("5" for 5, "true" for True,
null for a non-nullable field) while still reading dates and enums from JSON strings. The one
leniency models need, `1.0` for an integer, is granted on the error path only, so valid calls
pay nothing for it.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from .._contract import ValidationIssue
from ._errors import InvalidArguments
from ._issues import (
    SURROGATE,
    describe,
    issue,
    json_issue,
    missing_issue,
    pointer,
    sort_issues,
    unknown_field_issue,
)
from ._json import dump_arguments, parse_arguments
from ._messages import message
from ._schema import (
    FORMAT_NAMES,
    JsonSchema,
    allows_extra,
    clean,
    describe_types,
    property_names,
    resolve,
    walk,
)

_TYPE_NAMES = {
    "int_type": "integer",
    "int_parsing": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "float_parsing": "number",
    "decimal_type": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "bool_parsing": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "set_type": "array",
    "frozen_set_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "dataclass_type": "object",
    "typed_dict_type": "object",
    "none_required": "null",
    "bytes_type": "string",
}

_FORMATS = {
    "date": FORMAT_NAMES["date"],
    "datetime": FORMAT_NAMES["date-time"],
    "time": FORMAT_NAMES["time"],
    "timedelta": FORMAT_NAMES["duration"],
    "uuid": FORMAT_NAMES["uuid"],
    "url": FORMAT_NAMES["uri"],
}


class PydanticArgs:
    """Validates a call's arguments against a Pydantic model; the model is the one schema source."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self._validator = model.__pydantic_validator__
        self._full_schema: JsonSchema = model.model_json_schema()
        # Unknown fields are refused at every depth (nested models included), unless a model
        # explicitly allows extras; the schema the model sees says the same.
        open_ = allows_extra(self._full_schema)
        self._extra: Literal["forbid"] | None = None if open_ else "forbid"
        self.schema: dict[str, Any] = clean(self._full_schema, close=not open_)
        """The JSON Schema shown to the model."""
        # Error locations map to data paths through the schema; the mapping depends only on
        # the schema, so it is worked out once per location.
        self._walks: dict[tuple[str | int, ...], tuple[list[str | int], str, JsonSchema]] = {}
        self._fields = property_names(self._full_schema, self._full_schema)

    def copy(self) -> PydanticArgs:
        """The same validator with its own copy of `schema` (the costly parts are shared)."""
        twin = object.__new__(PydanticArgs)
        twin.__dict__.update(self.__dict__)
        twin.schema = copy.deepcopy(self.schema)
        return twin

    def _walk(self, loc: tuple[str | int, ...]) -> tuple[list[str | int], str, JsonSchema]:
        found = self._walks.get(loc)
        if found is None:
            parts, node = walk(self._full_schema, loc)
            found = (parts, pointer(parts), node)
            if len(self._walks) < 4096:
                self._walks[loc] = found
        return found

    def validate(self, raw: str | bytes | Mapping[str, Any], locale: str = "en") -> BaseModel:
        """Return the validated model instance or raise `InvalidArguments` with every issue."""
        if isinstance(raw, str | bytes):
            text: str | bytes = raw
        else:
            dumped = dump_arguments(raw, locale)
            if isinstance(dumped, ValidationIssue):
                raise InvalidArguments((dumped,))
            text = dumped
        try:
            return self._validator.validate_json(text, strict=True, extra=self._extra)
        except ValidationError as exc:
            return self._slow_path(text, exc, locale)

    def _slow_path(self, text: str | bytes, exc: ValidationError, locale: str) -> BaseModel:
        errors = exc.errors(include_url=False)
        if not text.strip():
            return self.validate("{}", locale)
        if isinstance(text, str) and SURROGATE.search(text):  # Pydantic cannot even read it
            parsed = parse_arguments(text, locale)
            if isinstance(parsed, ValidationIssue):
                raise InvalidArguments((parsed,))
        json_invalid = integral = False
        for e in errors:
            kind = e["type"]
            if kind == "json_invalid":
                json_invalid = True
            elif kind == "int_type" and isinstance(e["input"], float):
                integral = True
        if json_invalid:
            parsed = parse_arguments(text, locale)
            if isinstance(parsed, ValidationIssue):
                raise InvalidArguments((parsed,))
            # The parser accepts what Pydantic refused (e.g. a depth only jiter limits).
            detail = next(e["msg"] for e in errors if e["type"] == "json_invalid")
            raise InvalidArguments((json_issue(detail, 1, 1, locale, str(text)[:60]),))
        repaired = self._repair_integral_floats(text, errors) if integral else None
        if repaired is not None:
            try:
                return self._validator.validate_json(repaired, strict=True, extra=self._extra)
            except ValidationError as again:
                errors = again.errors(include_url=False)
        raise InvalidArguments(self.to_issues(errors, locale))

    def _repair_integral_floats(
        self, text: str | bytes, errors: Sequence[ErrorDetails]
    ) -> str | None:
        """Turn `1.0` into `1` where an integer was expected; None when nothing to repair."""
        targets = [
            e["loc"]
            for e in errors
            if e["type"] == "int_type"
            and isinstance(e["input"], float)
            and math.isfinite(e["input"])
            and e["input"].is_integer()
        ]
        if not targets:
            return None
        data = json.loads(text)
        changed = False
        for loc in targets:
            changed |= _replace_at(data, loc)
        return json.dumps(data) if changed else None

    def to_issues(self, errors: Sequence[ErrorDetails], locale: str) -> tuple[ValidationIssue, ...]:
        """Map Pydantic errors to issues; union members failing at one place become one issue."""
        root = self._full_schema
        out: list[ValidationIssue] = []
        by_path: dict[str, int] = {}
        for err in errors:
            kind = err["type"]
            loc = tuple(err["loc"])
            value = err.get("input")
            ctx: dict[str, Any] = err.get("ctx") or {}
            if kind == "missing":
                parts, path, node = self._walk(loc[:-1])
                prefix = node.get("prefixItems")
                for branch in node.get("anyOf", ()) if prefix is None else ():
                    prefix = resolve(root, branch).get("prefixItems") or prefix
                if isinstance(loc[-1], int) and isinstance(prefix, list):
                    # A short fixed-length array: say so once, at the array, as the JSON
                    # Schema track does.
                    if not any(i.path == path and i.expected.startswith("at least") for i in out):
                        n = len(cast(list[Any], prefix))
                        out.append(issue(path, "items", f"at least {n} items", value, locale))
                    continue
                out.append(missing_issue(parts, str(loc[-1]), locale))
                continue
            if kind == "extra_forbidden":
                parts, _, node = self._walk(loc[:-1])
                allowed = property_names(root, node)
                out.append(unknown_field_issue(parts, str(loc[-1]), allowed, value, locale))
                continue
            parts, path, node = self._walk(loc)
            if not parts and kind in ("model_type", "dict_type", "model_attributes_type"):
                out.append(issue("", "not_object", "object", value, locale))
                continue
            enum = node.get("enum")
            if kind in ("literal_error", "enum") and isinstance(enum, list):
                options = ", ".join(
                    json.dumps(o, ensure_ascii=False) for o in cast(list[Any], enum)
                )
                new = issue(path, "enum", options, value, locale)
            else:
                new = _issue_for(kind, path, value, ctx, err["msg"], locale)
            if path in by_path and kind in _TYPE_NAMES:
                # Several union members refused the same value: say it once, naming them all.
                expected = describe_types(root, _parent_union(root, loc) or node)
                out[by_path[path]] = issue(path, "no_match", expected, value, locale)
                continue
            by_path[path] = len(out)
            out.append(new)
        return sort_issues(out, self._fields)


def _parent_union(root: JsonSchema, loc: tuple[str | int, ...]) -> JsonSchema | None:
    for cut in range(len(loc) - 1, -1, -1):
        _, node = walk(root, loc[:cut])
        if "anyOf" in node or "oneOf" in node:
            return node
    return None


def _issue_for(
    kind: str, path: str, value: Any, ctx: dict[str, Any], msg: str, locale: str
) -> ValidationIssue:
    if kind in _TYPE_NAMES:
        return issue(path, "type", _TYPE_NAMES[kind], value, locale)
    if kind in ("literal_error", "enum"):
        return issue(path, "enum", str(ctx.get("expected", "")).replace("'", '"'), value, locale)
    bounds = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}
    bounds["less_than_equal"] = "<="
    if kind in bounds:
        limit = next(iter(ctx.values()), "")
        return issue(path, "bound", f"{bounds[kind]} {limit}", value, locale)
    if kind == "string_too_short":
        return issue(path, "length", f">= {ctx.get('min_length')}", value, locale)
    if kind == "string_too_long":
        return issue(path, "length", f"<= {ctx.get('max_length')}", value, locale)
    if kind == "too_short":
        return issue(path, "items", f"at least {ctx.get('min_length')} items", value, locale)
    if kind == "too_long":
        return issue(path, "items", f"at most {ctx.get('max_length')} items", value, locale)
    if kind == "string_pattern_mismatch":
        return issue(path, "pattern", str(ctx.get("pattern")), value, locale)
    if kind == "multiple_of":
        return issue(path, "multiple_of", str(ctx.get("multiple_of")), value, locale)
    for prefix, name in _FORMATS.items():
        if kind.startswith(prefix + "_"):
            return issue(path, "format", name, value, locale)
    detail = msg[:1].lower() + msg[1:]
    return ValidationIssue(
        path=path,
        expected="a valid value",
        received=describe(value),
        message=message(locale, "other", detail=detail),
    )


def _replace_at(data: Any, loc: tuple[str | int, ...] | list[str | int]) -> bool:
    """Replace the integral float at `loc` (skipping union tags) with an int."""
    parent: Any = None
    key: Any = None
    node: Any = data
    for seg in loc:
        if isinstance(node, dict) and seg in node:
            parent, key = cast(dict[Any, Any], node), seg
            node = parent[key]
        elif isinstance(node, list) and isinstance(seg, int):
            items = cast(list[Any], node)
            if 0 <= seg < len(items):
                parent, key, node = items, seg, items[seg]
    if parent is not None and isinstance(node, float) and node.is_integer():
        parent[key] = int(node)
        return True
    return False
