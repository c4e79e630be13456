"""Argument validation: two tracks, one `ValidationIssue` list.

Invariants: a validator's `schema` is exactly what the model is shown, and the same definition
validates the model's arguments. Both tracks refuse the same inputs: no string becomes a number
or a boolean, null is refused where the schema does not allow it, `1.0` is accepted for an
integer and `1.5` is not, unknown fields are errors with a did-you-mean, and every issue is
reported rather than only the first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ._errors import InvalidArguments as InvalidArguments
from ._issues import closest as closest
from ._issues import format_issues as format_issues
from ._jsonschema import JsonSchemaArgs as JsonSchemaArgs
from ._messages import Locale as Locale
from ._output import OutputSchema as OutputSchema
from ._pydantic import PydanticArgs as PydanticArgs

__all__ = [
    "ArgsValidator",
    "InvalidArguments",
    "JsonSchemaArgs",
    "Locale",
    "OutputSchema",
    "PydanticArgs",
    "closest",
    "format_issues",
]


class ArgsValidator(Protocol):
    """What a tool's validator provides: the schema the model sees, and the check of its input."""

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments, as shown to the model."""
        ...

    def validate(self, raw: str | bytes | Mapping[str, Any], locale: str = "en") -> Any:
        """Return validated arguments or raise `InvalidArguments` listing every issue."""
        ...
