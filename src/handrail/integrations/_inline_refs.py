"""A tool's JSON Schema with its `$ref`s replaced by what they name, for a schema nested in another.

A `$ref` such as `#/$defs/EditItem` means something only at the root of the schema that holds
`$defs`. The LangChain integration puts a tool's schema inside the JSON Schema of an
approval's answer (the `args` of an edit), and LangGraph hands that schema to pydantic, which
reads every `$ref` it meets as one of its own definitions: `edit_file`'s schema crashed the
interrupt with `KeyError: '#/$defs/EditItem'`. Inlined, the schema means the same wherever it
is put and holds no reference at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["inline_refs"]

_MAX_NODES = 10_000
"""Objects a schema may grow to as references are inlined (a definition used in many places,
each using others, grows exponentially); references past it become `{}`."""


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with no `$ref` left, and without the root's `$defs` and `definitions`.

    A local reference (`#/$defs/X`, `#/definitions/X`, any `#/...` pointer) becomes a copy of
    what it names, under the keywords written beside it (a `description` beside a `$ref`
    wins). A reference that names nothing here (another document, a missing definition), one
    met again inside its own expansion (a recursive schema), and any past the size budget
    become `{}` (any value) under their neighbours. The result is what a person is shown: the
    arguments are still checked against the tool's own schema. A schema without references
    comes back equal to itself (a copy).
    """
    out = _Inliner(schema).copy(schema)
    for key in ("$defs", "definitions"):
        out.pop(key, None)
    return out


class _Inliner:
    """Copies a schema, expanding references; `stack` holds the ones being expanded."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.stack: list[str] = []
        self.nodes = 0

    def copy(self, value: Mapping[str, Any]) -> dict[str, Any]:
        self.nodes += 1
        ref = value.get("$ref")
        out = {
            k: self._value(v)
            for k, v in value.items()
            if not (k == "$ref" and isinstance(ref, str))
        }
        if not isinstance(ref, str):  # not a reference (or a property that is called `$ref`)
            return out
        return {**self._expand(ref), **out}

    def _value(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return self.copy(cast(Mapping[str, Any], value))
        if isinstance(value, list):
            return [self._value(v) for v in cast(list[Any], value)]
        return value

    def _expand(self, ref: str) -> dict[str, Any]:
        target = self._target(ref)
        if target is None or ref in self.stack or self.nodes > _MAX_NODES:
            return {}
        self.stack.append(ref)
        try:
            return self.copy(target)
        finally:
            self.stack.pop()

    def _target(self, ref: str) -> Mapping[str, Any] | None:
        """What a local JSON pointer names in the root schema; None for anything else.

        `#` itself (the whole schema, so always recursion here) is None too.
        """
        if not ref.startswith("#/"):
            return None
        node: Any = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping):
                node = cast(Mapping[str, Any], node).get(part)
            elif (
                isinstance(node, list) and part.isdigit() and int(part) < len(cast(list[Any], node))
            ):
                node = cast(list[Any], node)[int(part)]
            else:
                return None
        return cast(Mapping[str, Any], node) if isinstance(node, Mapping) else None
