"""JSON Schema transforms: the shared object root, Anthropic's and Gemini's forms.

OpenAI's strict mode is in `_strict`.

The schema a tool declares stays the one its arguments are validated against; these transforms
only change what a provider is shown, so a constraint a provider cannot express is dropped from
the wire (and noted in the description, so the model still knows it) but still enforced.

Limits, and what happens when a schema passes them:
- Every provider: a schema nested deeper than `MAX_DEPTH` containers, or larger than
  `MAX_NODES` (after Gemini's `$ref` inlining), raises `ConfigurationError`: such a schema is
  hostile or broken, and no provider would take it.
- OpenAI strict mode: see `_strict` (a schema it cannot take is sent with `strict: false`).
- Gemini: a recursive schema raises `ConfigurationError` (its function declarations have no
  `$ref`, so recursion cannot be inlined).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from .. import ConfigurationError

__all__ = [
    "COMBINERS",
    "MAX_DEPTH",
    "MAX_NODES",
    "Schema",
    "allows_null",
    "anthropic_schema",
    "as_any_list",
    "as_schema",
    "gemini_schema",
    "merge",
    "note",
    "openai_loose",
    "resolve",
    "root_object",
    "schemas",
]

MAX_DEPTH = 200
"""Deepest container nesting (objects and arrays) a tool's schema may have."""
MAX_NODES = 100_000
"""Most containers a tool's schema may hold, counted after `$ref` inlining for Gemini."""

Schema = dict[str, Any]

COMBINERS = ("anyOf", "oneOf", "allOf")

# -- shared --------------------------------------------------------------------------------


def checked_copy(schema: Mapping[str, Any], tool: str, provider: str) -> Schema:
    """A deep copy of `schema`, refusing hostile sizes before any recursive transform runs."""
    count = 0

    def visit(value: Any, depth: int) -> Any:
        nonlocal count
        if isinstance(value, Mapping | list | tuple):
            count += 1
            if depth > MAX_DEPTH:
                raise too_big(tool, provider, f"nests deeper than {MAX_DEPTH} levels")
            if count > MAX_NODES:
                raise too_big(tool, provider, f"has more than {MAX_NODES:,} parts")
            if isinstance(value, Mapping):
                return {
                    str(k): visit(v, depth + 1) for k, v in cast(Mapping[str, Any], value).items()
                }
            return [visit(v, depth + 1) for v in cast(list[Any], value)]
        return value

    return cast(Schema, visit(schema, 0))


def too_big(tool: str, provider: str, what: str) -> ConfigurationError:
    return ConfigurationError(
        f"tool {tool!r}: its parameter schema {what}; it cannot be sent to {provider}. Simplify "
        f"the schema, or keep the tool from {provider} with `providers=`."
    )


def note(node: Schema, notes: Mapping[str, Any]) -> None:
    """Append dropped keywords to the node's description, as `(keyword: value; ...)`.

    Keyword names and JSON values read the same in every language, so this needs no catalog.
    """
    if not notes:
        return
    text = "; ".join(
        f"{k}: {json.dumps(v, ensure_ascii=False, separators=(', ', ': '))}"
        for k, v in notes.items()
    )
    desc = node.get("description")
    node["description"] = f"{desc} ({text})" if isinstance(desc, str) and desc else f"({text})"


def as_schema(value: Any) -> Schema | None:
    """`value` as a schema object, or None when it is not one."""
    return cast(Schema, value) if isinstance(value, dict) else None


def schemas(value: Any) -> list[Schema]:
    """The schema objects of a list (`anyOf`, `allOf`, ...); empty when it is not a list."""
    if not isinstance(value, list):
        return []
    return [cast(Schema, v) for v in cast(list[Any], value) if isinstance(v, dict)]


def merge(into: Schema, other: Mapping[str, Any]) -> None:
    """Fold an `allOf` member into a node: properties and required lists are united."""
    for key, value in other.items():
        if key == "properties" and isinstance(value, dict) and isinstance(into.get(key), dict):
            into[key] = {**cast(Schema, into[key]), **cast(Schema, value)}
        elif key == "required" and isinstance(value, list):
            have = [str(x) for x in cast(list[Any], into.get("required") or [])]
            into[key] = have + [str(x) for x in cast(list[Any], value) if str(x) not in have]
        elif key not in into:
            into[key] = value


def root_object(schema: Mapping[str, Any], tool: str, provider: str) -> Schema:
    """A checked copy whose root is a plain object (no top-level anyOf/oneOf/allOf).

    Anthropic rejects combiners at the top of `input_schema` ("input_schema does not support
    oneOf, allOf, or anyOf at the top level"), OpenAI strict mode rejects a root `anyOf`, and
    Gemini's parameters are one OBJECT. `allOf` members are merged; an `anyOf`/`oneOf` of
    alternatives is dropped from the wire (noted in the description) after its members'
    properties are offered as optional fields. The arguments are still validated against the
    tool's own schema, so the alternatives keep being enforced.
    """
    out = checked_copy(schema, tool, provider)
    if isinstance(out.get("$ref"), str):
        # A root that is a reference (`{"$ref": "#/$defs/Args", "$defs": ...}`): inline it.
        target = resolve(out, out)
        if target is not out:
            del out["$ref"]
            merge(out, dict(target))
    for member in schemas(out.pop("allOf", None)):
        merge(out, dict(resolve(out, member)))
    for key in ("anyOf", "oneOf"):
        branches = out.pop(key, None)
        if branches is None:
            continue
        note(out, {key: branches})
        props = out.setdefault("properties", {})
        for member in schemas(branches):
            member_props = as_schema(resolve(out, member).get("properties")) or {}
            for name, sub in member_props.items():
                if isinstance(props, dict):
                    cast(Schema, props).setdefault(name, sub)
    kind = out.get("type")
    if kind is None:
        out["type"] = "object"
    elif kind != "object":
        raise ConfigurationError(
            f"tool {tool!r}: its parameter schema has type {kind!r}; tool arguments must be a "
            f"JSON object for {provider}"
        )
    out.setdefault("properties", {})
    return out


def definitions(root: Mapping[str, Any]) -> dict[str, Schema]:
    """The root's `$defs` and `definitions`, by the `$ref` that names each."""
    found: dict[str, Schema] = {}
    for key in ("definitions", "$defs"):
        for name, value in (as_schema(root.get(key)) or {}).items():
            if isinstance(value, dict):
                found[f"#/{key}/{name}"] = cast(Schema, value)
    return found


def resolve(root: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    """Follow local `$ref`s (a bounded number of hops) to a concrete node."""
    for _ in range(32):
        ref = node.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return node
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            target = (
                cast(Mapping[str, Any], target).get(part) if isinstance(target, Mapping) else None
            )
        if not isinstance(target, Mapping):
            return node
        node = cast(Mapping[str, Any], target)
    return node


def allows_null(node: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether the schema `node` accepts `null` (looking through `$ref` and `anyOf`)."""
    if not isinstance(node, Mapping) or depth > 16:
        return not isinstance(node, Mapping)  # `true`/absent schemas allow anything
    n = resolve(root, cast(Mapping[str, Any], node))
    t = n.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if "enum" in n and None in as_any_list(n["enum"]):
        return True
    if "const" in n and n["const"] is None:
        return True
    if not any(k in n for k in ("type", "enum", "const", "$ref", *COMBINERS)):
        return True  # an unconstrained node (`{}`, only a description) allows null
    return any(allows_null(b, root, depth + 1) for b in schemas(n.get("anyOf")))


def as_any_list(value: Any) -> list[Any]:
    """`value` as a list (empty when it is not one)."""
    return cast(list[Any], value) if isinstance(value, list) else []


# -- Anthropic -----------------------------------------------------------------------------


def anthropic_schema(schema: Mapping[str, Any], tool: str) -> Schema:
    """Anthropic `input_schema`: standard JSON Schema with an object root (no root combiner).

    `$schema` and `$id` are left out: metadata the model does not need.
    """
    out = root_object(schema, tool, "anthropic")
    out.pop("$schema", None)
    out.pop("$id", None)
    return out


# -- OpenAI ----------------------------------------------------------------------------------


def openai_loose(schema: Mapping[str, Any], tool: str, provider: str) -> Schema:
    """The non-strict OpenAI `parameters`: the tool's schema with an object root."""
    out = root_object(schema, tool, provider)
    out.pop("$schema", None)
    return out


# -- Gemini ----------------------------------------------------------------------------------

# Gemini `FunctionDeclaration.parameters` is a `Schema`, "a select subset of an OpenAPI 3.0
# schema object": type, format, title, description, nullable, enum, maxItems, minItems,
# properties, required, minProperties, maxProperties, minLength, maxLength, pattern, example,
# anyOf, propertyOrdering, default, items, minimum, maximum. Anything else (`$schema`,
# `additionalProperties`, `$ref`/`$defs`, `const`, `oneOf`, `exclusiveMinimum`, ...) is
# rejected with "Unknown name". `title` is dropped too (tokens the model gains nothing from).
_GEMINI_KEEP = frozenset(
    (
        "type format description nullable enum maxItems minItems properties required "
        "minProperties maxProperties minLength maxLength pattern example anyOf "
        "propertyOrdering default items minimum maximum"
    ).split()
)
# Value constraints Gemini does not take: noted in the description instead.
_GEMINI_NOTE = frozenset(
    {"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "uniqueItems", "dependentRequired"}
)
# Set after the node's own keywords are copied (they need converting first).
_GEMINI_LATER = frozenset({"nullable", "properties", "required", "items", "anyOf"})
# The Gemini Developer API accepts only these `format`s (others fail the request).
_GEMINI_FORMATS = frozenset({"enum", "date-time"})


class _Inliner:
    """Inlines `$ref`s for Gemini, refusing recursion and runaway expansion."""

    def __init__(self, root: Schema, tool: str) -> None:
        self.root = root
        self.defs = definitions(root)
        self.tool = tool
        self.count = 0
        self.stack: list[str] = []

    def node(self, value: Any, depth: int) -> Schema:
        self.count += 1
        if self.count > MAX_NODES:
            raise too_big(self.tool, "gemini", f"expands to more than {MAX_NODES:,} parts")
        if depth > MAX_DEPTH // 2:
            # Counted in schema levels (each is two containers deep in the JSON).
            raise too_big(
                self.tool,
                "gemini",
                f"nests deeper than {MAX_DEPTH // 2} levels once its references are inlined",
            )
        if not isinstance(value, dict):
            return {}  # `true` / absent: any value
        src = dict(cast(Schema, value))
        ref = src.pop("$ref", None)
        if isinstance(ref, str):
            src = self._deref(ref, src, depth)
        return self._convert(src, depth)

    def _deref(self, ref: str, siblings: Schema, depth: int) -> Schema:
        if ref in self.stack or ref == "#":
            cycle = " -> ".join([*self.stack[self.stack.index(ref) :], ref]) if ref != "#" else "#"
            raise ConfigurationError(
                f"tool {self.tool!r}: its parameter schema is recursive ({cycle}); Gemini "
                "function declarations cannot express recursion. Give the tool a non-recursive "
                "schema, or keep it from Gemini with `providers=`."
            )
        target = self.defs.get(ref)
        if target is None:
            raise ConfigurationError(
                f"tool {self.tool!r}: its parameter schema refers to {ref!r}, which it does not "
                "define; only local references into $defs/definitions can be sent to gemini"
            )
        self.stack.append(ref)
        try:
            resolved = self.node(target, depth + 1)
        finally:
            self.stack.pop()
        # Keywords beside a `$ref` (usually a description) win over the definition's.
        return {**resolved, **siblings}

    def _convert(self, src: Schema, depth: int) -> Schema:
        for member in schemas(src.pop("allOf", None)):
            merge(src, self.node(member, depth + 1))
        if "oneOf" in src:
            src["anyOf"] = [*as_any_list(src.get("anyOf")), *as_any_list(src.pop("oneOf"))]
        if "const" in src:
            src["enum"] = [src.pop("const")]  # Gemini has no const: a one-value enum
        out: Schema = {}
        notes: dict[str, Any] = {}
        nullable = bool(src.get("nullable"))
        t = src.get("type")
        if isinstance(t, list):
            kinds = [str(k) for k in cast(list[Any], t)]
            nullable = nullable or "null" in kinds
            kinds = [k for k in kinds if k != "null"]
            if len(kinds) == 1:
                src["type"] = kinds[0]
            else:
                src.pop("type")
                if kinds:
                    src["anyOf"] = [{"type": k} for k in kinds]
        elif t == "null":
            src.pop("type")
            nullable = True
        for key, value in src.items():
            if key in _GEMINI_NOTE:
                notes[key] = value
            elif key == "format" and value not in _GEMINI_FORMATS:
                notes[key] = value
            elif key == "default" and value is None:
                continue
            elif key in _GEMINI_KEEP and key not in _GEMINI_LATER:
                out[key] = value
        if "enum" in out:
            values = as_any_list(out["enum"])
            nullable = nullable or None in values
            values = [v for v in values if v is not None]
            if values and all(isinstance(v, str) for v in values):
                out["enum"] = values
                out.setdefault("type", "string")
            else:
                # Gemini enums hold strings only; other values are listed for the model instead.
                out.pop("enum")
                if values:
                    notes["enum"] = values
        props = as_schema(src.get("properties"))
        if "type" not in out and props is not None:
            out["type"] = "object"
        # "properties: only allowed for OBJECT type": a non-object keeps none.
        if out.get("type") == "object":
            converted = {k: self.node(v, depth + 1) for k, v in (props or {}).items()}
            if converted:
                out["properties"] = converted
                # Gemini rejects required names that are not properties of the same node.
                required = [r for r in as_any_list(src.get("required")) if r in converted]
                if required:
                    out["required"] = required
            # else: no `properties` at all ("properties: should be non-empty for OBJECT type")
        if "items" in src:
            out["items"] = self.node(src["items"], depth + 1)
        if "anyOf" in src:
            branches: list[Schema] = []
            for b in as_any_list(src["anyOf"]):
                converted_b = self.node(b, depth + 1)
                if converted_b == {"nullable": True}:
                    nullable = True
                elif converted_b:
                    branches.append(converted_b)
            if len(branches) == 1:
                for key, value in branches[0].items():
                    if key == "nullable":
                        nullable = nullable or bool(value)
                    elif key == "description" and "description" in out:
                        continue
                    else:
                        out.setdefault(key, value)
            elif branches:
                out["anyOf"] = branches
        if nullable:
            out["nullable"] = True
        note(out, notes)
        return out


def gemini_schema(schema: Mapping[str, Any], tool: str) -> Schema | None:
    """Gemini `parameters`, or None for a tool without parameters.

    `$ref`s are inlined (a recursive schema raises `ConfigurationError`), `const` becomes a
    one-value enum, `type: [x, "null"]` and `anyOf [..., null]` become `nullable`, and keywords
    outside Gemini's subset are dropped. The documentation says "for function with no
    parameters, this can be left unset", and an OBJECT with no properties is refused, so such
    tools get no `parameters` at all.
    """
    root = root_object(schema, tool, "gemini")
    out = _Inliner(root, tool).node(root, 0)
    if not out.get("properties"):
        return None
    return out
