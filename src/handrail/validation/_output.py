"""The check of a tool's structured content against its declared output schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema_rs

from ..errors import ConfigurationError

__all__ = ["OutputSchema"]


class OutputSchema:
    """A compiled output schema: `problems(value)` lists where a value breaks it."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.schema: dict[str, Any] = dict(schema)
        if self.schema.get("type", "object") != "object":
            raise ConfigurationError("an output schema must describe an object (type: object)")
        try:
            # offline: the schema may come from an MCP server; a `$ref` never makes a request.
            self._validator: Any = jsonschema_rs.validator_for(
                self.schema, validate_formats=True, offline=True
            )
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ConfigurationError(f"invalid output schema: {first}") from exc

    def problems(self, value: Any, limit: int = 3) -> list[str]:
        """At most `limit` problems, each `at /pointer: message` (empty when `value` matches)."""
        try:
            if self._validator.is_valid(value):
                return []
            out: list[str] = []
            for err in self._validator.iter_errors(value):
                where = "/" + "/".join(str(p) for p in err.instance_path)
                out.append(f"at {where}: {err.message}")
                if len(out) >= limit:
                    break
            return out
        except (ValueError, OverflowError, RecursionError) as exc:
            return [str(exc).splitlines()[0] if str(exc) else type(exc).__name__]
