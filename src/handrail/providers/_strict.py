"""OpenAI strict mode: the schema rewrite, its documented limits, and undoing it in arguments.

A schema strict mode cannot express, or one over OpenAI's documented strict limits, is sent
with `strict: false` instead: the tool still works, without constrained decoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, cast

from ._schema import (
    COMBINERS,
    MAX_DEPTH,
    Schema,
    allows_null,
    as_any_list,
    as_schema,
    merge,
    note,
    resolve,
    root_object,
    schemas,
)

__all__ = ["denull", "openai_strict"]


class _NotStrict(Exception):
    """Strict mode cannot express this schema; it is sent with `strict: false`."""


# OpenAI strict mode (Structured Outputs, "Supported schemas"): types string, number, boolean,
# integer, object, array, enum and anyOf; string `pattern` and `format` (the formats below);
# number `multipleOf`, `maximum`, `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; array
# `minItems`, `maxItems`; definitions in `$defs` and recursion through `$ref`. Objects need
# `additionalProperties: false` and every property in `required` ("emulate an optional
# parameter with a union type with null"). Not supported: allOf, not, dependentRequired,
# dependentSchemas, if, then, else.
_STRICT_KEEP = frozenset(
    (
        "type description properties required additionalProperties items enum const anyOf "
        "$ref $defs pattern format multipleOf maximum exclusiveMaximum minimum "
        "exclusiveMinimum minItems maxItems"
    ).split()
)
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Value constraints strict mode does not take: dropped from the wire, noted in the description.
_STRICT_NOTE = frozenset(
    (
        "default minLength maxLength uniqueItems minProperties maxProperties contains "
        "minContains maxContains dependentRequired"
    ).split()
)
# Structure strict mode cannot express: the tool is sent with `strict: false`.
_STRICT_FATAL = frozenset(
    (
        "not if then else dependentSchemas patternProperties propertyNames "
        "unevaluatedProperties unevaluatedItems prefixItems additionalItems"
    ).split()
)
_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")

# OpenAI's documented strict-mode limits: "A schema may have up to 5000 object properties
# total, with up to 10 levels of nesting"; "the total string length of all property names,
# definition names, enum values, and const values cannot exceed 120,000 characters"; "up to
# 1000 enum values across all enum properties"; "for a single enum property with string
# values, the total string length of all enum values cannot exceed 15,000 characters when there
# are more than 250 enum values".
OPENAI_MAX_PROPERTIES = 5000
OPENAI_MAX_NESTING = 10
OPENAI_MAX_CHARS = 120_000
OPENAI_MAX_ENUM_VALUES = 1000
OPENAI_BIG_ENUM = 250
OPENAI_BIG_ENUM_CHARS = 15_000


def openai_strict(
    schema: Mapping[str, Any], tool: str, provider: str = "openai_chat"
) -> Schema | None:
    """The strict-mode form of a schema, or None when strict mode cannot take it.

    Optional properties become required and nullable; `denull` turns the model's `null` back
    into "not given" when its call is parsed.
    """
    root = root_object(schema, tool, provider)
    for key in ("$schema", "$id", "title"):
        root.pop(key, None)
    defs = as_schema(root.pop("definitions", None))
    if defs is not None:
        if "$defs" in root:
            return None  # two definition tables: not worth untangling
        root["$defs"] = defs
    try:
        out = _strict_node(root)
        if "$defs" in root:
            out["$defs"] = {
                name: _strict_node(node) for name, node in _require_schemas(root["$defs"]).items()
            }
    except _NotStrict:
        return None
    if not _within_openai_limits(out):
        return None
    return out


def _require_schemas(value: Any) -> dict[str, Schema]:
    if not isinstance(value, dict):
        raise _NotStrict
    out: dict[str, Schema] = {}
    for k, v in cast(Schema, value).items():
        if not isinstance(v, dict):
            raise _NotStrict
        out[k] = cast(Schema, v)
    return out


def _strict_node(node: Any) -> Schema:
    if not isinstance(node, dict):
        raise _NotStrict  # `true` / `false` schemas
    src = dict(cast(Schema, node))
    members = src.pop("allOf", None)
    if members is not None:
        ms = schemas(members)
        if len(ms) != 1 or len(as_any_list(members)) != 1:
            raise _NotStrict
        merge(src, ms[0])
    if "oneOf" in src:
        if "anyOf" in src:
            raise _NotStrict
        # Strict mode has no oneOf; anyOf offers the same alternatives (exclusivity is still
        # enforced by validation).
        src["anyOf"] = src.pop("oneOf")
    if not any(k in src for k in ("type", "$ref", "anyOf", "enum", "const")):
        if "properties" in src:
            src["type"] = "object"
        else:
            raise _NotStrict  # strict mode needs every value typed
    out: Schema = {}
    notes: dict[str, Any] = {}
    for key, value in src.items():
        if key in _STRICT_FATAL:
            raise _NotStrict
        if key in _STRICT_NOTE:
            if not (key == "default" and value is None):
                notes[key] = value
        elif key == "format" and value not in _STRICT_FORMATS:
            notes[key] = value
        elif key == "pattern" and (
            not isinstance(value, str) or any(t in value for t in _LOOKAROUND)
        ):
            notes[key] = value
        elif key in _STRICT_KEEP and key != "$defs":
            out[key] = value
    ref = out.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise _NotStrict  # remote references
        out["$ref"] = ref.replace("#/definitions/", "#/$defs/", 1)
    types = out.get("type")
    type_list = [types] if isinstance(types, str) else as_any_list(types)
    if "object" in type_list:
        addl = out.get("additionalProperties")
        if addl is not None and addl is not False:
            raise _NotStrict  # a free-form map cannot be strict
        props = out.get("properties", {})
        if not isinstance(props, dict):
            raise _NotStrict
        required = {str(r) for r in as_any_list(out.get("required"))}
        new_props: Schema = {}
        for name, sub in cast(Schema, props).items():
            converted = _strict_node(sub)
            new_props[name] = converted if name in required else _nullable(converted)
        out["properties"] = new_props
        out["required"] = list(new_props)
        out["additionalProperties"] = False
    if "array" in type_list:
        items = out.get("items")
        if not isinstance(items, dict):
            raise _NotStrict  # an array needs a typed `items`
        out["items"] = _strict_node(items)
    if "anyOf" in out:
        out["anyOf"] = [_strict_node(b) for b in as_any_list(out["anyOf"])]
        if not out["anyOf"]:
            raise _NotStrict
    if "$ref" in out and len(out) > 1:
        # Strict mode takes no siblings next to `$ref`; it does next to `anyOf`.
        out["anyOf"] = [{"$ref": out.pop("$ref")}]
    note(out, notes)
    return out


def _nullable(node: Schema) -> Schema:
    """Let an optional property be `null` (strict mode's stand-in for "not given")."""
    if _strict_allows_null(node):
        return node
    t = node.get("type")
    if isinstance(t, str) and not any(k in node for k in ("enum", "const", "anyOf", "$ref")):
        return {**node, "type": [t, "null"]}
    if list(node) in (["anyOf"], ["anyOf", "description"], ["description", "anyOf"]):
        return {**node, "anyOf": [*as_any_list(node["anyOf"]), {"type": "null"}]}
    inner = {k: v for k, v in node.items() if k != "description"}
    out: Schema = {"anyOf": [inner, {"type": "null"}]}
    if "description" in node:
        out["description"] = node["description"]
    return out


def _strict_allows_null(node: Schema) -> bool:
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if None in as_any_list(node.get("enum")) or ("const" in node and node["const"] is None):
        return True
    return any(_strict_allows_null(b) for b in schemas(node.get("anyOf")))


def _nodes(node: Any) -> Iterator[Schema]:
    """Every schema node below (and including) `node`, `$defs` included."""
    stack: list[Any] = [node]
    while stack:
        n = stack.pop()
        if not isinstance(n, dict):
            continue
        s = cast(Schema, n)
        yield s
        for key in ("properties", "$defs"):
            stack.extend((as_schema(s.get(key)) or {}).values())
        stack.append(s.get("items"))
        stack.extend(as_any_list(s.get("anyOf")))


def _within_openai_limits(schema: Schema) -> bool:
    properties = enum_values = chars = 0
    for node in _nodes(schema):
        props = as_schema(node.get("properties"))
        if props is not None:
            properties += len(props)
            chars += sum(len(k) for k in props)
        chars += sum(len(k) for k in as_schema(node.get("$defs")) or {})
        values = as_any_list(node.get("enum"))
        enum_values += len(values)
        sizes = [len(v) if isinstance(v, str) else len(json.dumps(v)) for v in values]
        chars += sum(sizes)
        if len(values) > OPENAI_BIG_ENUM and all(isinstance(v, str) for v in values):
            if sum(sizes) > OPENAI_BIG_ENUM_CHARS:
                return False
        if "const" in node:
            c = node["const"]
            chars += len(c) if isinstance(c, str) else len(json.dumps(c))
    if properties > OPENAI_MAX_PROPERTIES or enum_values > OPENAI_MAX_ENUM_VALUES:
        return False
    if chars > OPENAI_MAX_CHARS:
        return False
    return _nesting(schema, schema, {}, set(), 0) <= OPENAI_MAX_NESTING


def _nesting(node: Any, root: Schema, memo: dict[str, int], active: set[str], depth: int) -> int:
    """Levels of nested objects at and below `node` (a recursive `$ref` counts once)."""
    if not isinstance(node, dict):
        return 0
    if depth > MAX_DEPTH:
        return OPENAI_MAX_NESTING + 1  # a chain of references this long is not strict material
    s = cast(Schema, node)
    ref = s.get("$ref")
    if isinstance(ref, str):
        if ref in memo:
            return memo[ref]
        if ref in active:
            return 0
        target = resolve(root, {"$ref": ref})
        if target is s or "$ref" in target:
            return 0
        active.add(ref)
        memo[ref] = _nesting(dict(target), root, memo, active, depth + 1)
        active.discard(ref)
        return memo[ref]
    below = [
        _nesting(child, root, memo, active, depth + 1)
        for child in [
            *(as_schema(s.get("properties")) or {}).values(),
            s.get("items"),
            *as_any_list(s.get("anyOf")),
        ]
    ]
    deepest = max(below, default=0)
    t = s.get("type")
    is_object = t == "object" or (isinstance(t, list) and "object" in t)
    return deepest + (1 if is_object else 0)


def denull(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """Drop `null`s the strict rewrite invited: optional properties whose own schema has no null.

    Walks the arguments alongside the tool's original schema (through `$ref`, arrays and
    union members), so nested optional fields are handled too.
    """
    return cast(dict[str, Any], _denull(dict(args), schema, schema, 0))


def _object_branch(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    n = resolve(root, node)
    if isinstance(n.get("properties"), Mapping):
        return n
    for key in COMBINERS:
        for b in schemas(n.get(key)):
            found = resolve(root, b)
            if isinstance(found.get("properties"), Mapping):
                return found
    return None


def _items(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any] | None:
    n = resolve(root, node)
    items = n.get("items")
    if isinstance(items, Mapping):
        return cast(Mapping[str, Any], items)
    for key in COMBINERS:
        for b in schemas(n.get(key)):
            found = resolve(root, b).get("items")
            if isinstance(found, Mapping):
                return cast(Mapping[str, Any], found)
    return None


def _denull(value: Any, node: Any, root: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(node, Mapping) or depth > MAX_DEPTH:
        return value
    schema = cast(Mapping[str, Any], node)
    if isinstance(value, dict):
        obj = _object_branch(root, schema)
        if obj is None:
            return cast(dict[str, Any], value)
        props = cast(Mapping[str, Any], obj["properties"])
        required = {r for r in as_any_list(obj.get("required")) if isinstance(r, str)}
        out: dict[str, Any] = {}
        for key, sub_value in cast(dict[str, Any], value).items():
            sub = props.get(key)
            if sub_value is None and sub is not None and key not in required:
                if not allows_null(sub, root):
                    continue
            out[key] = _denull(sub_value, sub, root, depth + 1)
        return out
    if isinstance(value, list):
        items = _items(root, schema)
        if items is None:
            return cast(list[Any], value)
        return [_denull(v, items, root, depth + 1) for v in cast(list[Any], value)]
    return value
