"""Small JSON Schema helpers shared by both tracks: `$ref` resolution and walking by location."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

JsonSchema = Mapping[str, Any]

# Pydantic names union members in error locations by their Python type; map to JSON types.
_TAG_TYPES = {
    "int": "integer",
    "float": "number",
    "str": "string",
    "bool": "boolean",
    "none": "null",
    "list": "array",
    "dict": "object",
    "tuple": "array",
    "set": "array",
}


_NOTHING: JsonSchema = {}


def resolve(root: JsonSchema, node: JsonSchema) -> JsonSchema:
    """Follow local `$ref`s (`#/$defs/X`, `#/definitions/X`) until a concrete node."""
    seen = 0
    while "$ref" in node and seen < 32:
        ref = node["$ref"]
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return node
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return node
            target = cast(Mapping[str, Any], target)[part]
        node = cast(JsonSchema, target)
        seen += 1
    return node


def _branches(node: JsonSchema) -> list[JsonSchema]:
    out: list[JsonSchema] = []
    for key in ("anyOf", "oneOf"):
        value = node.get(key)
        if isinstance(value, list):
            out.extend(
                cast(JsonSchema, b) for b in cast(list[Any], value) if isinstance(b, Mapping)
            )
    return out


def _json_type(node: JsonSchema) -> str | None:
    t = node.get("type")
    if isinstance(t, str):
        return t
    if "properties" in node:
        return "object"
    return None


def walk(root: JsonSchema, loc: Sequence[str | int]) -> tuple[list[str | int], JsonSchema]:
    """Walk a Pydantic error location through the schema.

    Returns the data path (union member tags dropped) and the schema node at the end of it.
    """
    node: JsonSchema = resolve(root, root)
    parts: list[str | int] = []
    for seg in loc:
        node = resolve(root, node)
        props = node.get("properties")
        if isinstance(seg, str) and isinstance(props, Mapping) and seg in props:
            parts.append(seg)
            node = cast(JsonSchema, cast(Mapping[str, Any], props)[seg])
            continue
        if isinstance(seg, int) and isinstance(node.get("items"), Mapping):
            parts.append(seg)
            node = cast(JsonSchema, node["items"])
            continue
        branches = [resolve(root, b) for b in _branches(node)]
        if branches:
            how, chosen = _choose_branch(branches, seg)
            if how == "field" and chosen is not None:
                parts.append(seg)
                node = cast(JsonSchema, cast(Mapping[str, Any], chosen["properties"])[seg])
                continue
            if how == "key" and chosen is not None:
                parts.append(seg)
                node = cast(JsonSchema, chosen["additionalProperties"])
                continue
            if chosen is not None:
                node = chosen
                if isinstance(seg, int):
                    parts.append(seg)
                    items = node.get("items")
                    node = cast(JsonSchema, items) if isinstance(items, Mapping) else _NOTHING
                continue
        addl = node.get("additionalProperties")
        if isinstance(seg, str) and isinstance(addl, Mapping):
            parts.append(seg)
            node = cast(JsonSchema, addl)
            continue
        if isinstance(seg, int):
            parts.append(seg)
            node = _NOTHING
            continue
        # A string that is not a property here is a validator tag (`function-after[...]`).
        if props is None and not branches and not node:
            parts.append(seg)
    return parts, resolve(root, node)


def _choose_branch(branches: list[JsonSchema], seg: str | int) -> tuple[str, JsonSchema | None]:
    """Is `seg` a union member tag (`int`, `Filters`) or a field of an object member?"""
    if isinstance(seg, int):
        return "tag", next((b for b in branches if _json_type(b) == "array"), None)
    for b in branches:
        props = b.get("properties")
        if isinstance(props, Mapping) and seg in props:
            return "field", b
    base = seg.split("[", 1)[0]
    wanted = _TAG_TYPES.get(base.lower())
    for b in branches:
        if b.get("title") in (seg, base):
            return "tag", b
        if wanted is not None and _json_type(b) == wanted:
            return "tag", b
    # Not a tag: a key of a mapping member (`dict[str, int] | None`).
    for b in branches:
        if isinstance(b.get("additionalProperties"), Mapping):
            return "key", b
    return "tag", None


def property_names(root: JsonSchema, node: JsonSchema) -> list[str]:
    """The property names an object node declares (looking into union members too)."""
    for candidate in [resolve(root, node), *(resolve(root, b) for b in _branches(node))]:
        props = candidate.get("properties")
        if isinstance(props, Mapping):
            return [str(k) for k in cast(Mapping[str, Any], props)]
    return []


FORMAT_NAMES = {
    "date": "date (YYYY-MM-DD)",
    "date-time": "date-time (ISO 8601)",
    "time": "time (HH:MM[:SS])",
    "duration": "duration",
    "uuid": "UUID",
    "uri": "URL",
    "email": "email address",
}


def describe_types(root: JsonSchema, node: JsonSchema) -> str:
    """A short `integer or string` style summary of what a (union) node accepts."""
    node = resolve(root, node)
    names: list[str] = []
    for b in _branches(node) or [node]:
        b = resolve(root, b)
        t = b.get("type")
        if isinstance(t, list):
            names.extend(str(x) for x in cast(list[Any], t))
        elif isinstance(t, str):
            names.append(t)
        elif "enum" in b or "const" in b:
            names.append("a listed value")
        elif "properties" in b:
            names.append("object")
    seen: list[str] = []
    for n in names:
        if n not in seen:
            seen.append(n)
    return " or ".join(seen) if seen else "a valid value"


def allows_extra(schema: Any) -> bool:
    """True if some object in the schema explicitly accepts unknown fields."""
    if isinstance(schema, Mapping):
        node = cast(Mapping[str, Any], schema)
        if node.get("additionalProperties") is True:
            return True
        return any(allows_extra(v) for v in node.values())
    if isinstance(schema, list):
        return any(allows_extra(v) for v in cast(list[Any], schema))
    return False


def clean(schema: Any, *, close: bool) -> Any:
    """The model-facing form of a generated schema.

    Drops Pydantic's generated `title`s (tokens the model gains nothing from) and `uniqueItems`
    (a `set` parameter removes duplicates rather than refusing them); with `close`, marks every
    object `additionalProperties: false`, matching validation that refuses unknown fields.
    """
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, value in cast(Mapping[str, Any], schema).items():
            if key in ("title", "uniqueItems") and isinstance(value, str | bool):
                continue
            if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
                out[key] = {
                    k: clean(v, close=close) for k, v in cast(Mapping[str, Any], value).items()
                }
            else:
                out[key] = clean(value, close=close)
        if close and "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [clean(v, close=close) for v in cast(list[Any], schema)]
    return schema
