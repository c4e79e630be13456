"""Parsing a model's argument string into a JSON object, with precise errors.

Strict JSON: `NaN`, `Infinity` and numbers too large for a float are refused (they are not
JSON, and validators would see a non-number), invalid UTF-8 is refused, and nesting deeper than
Python can parse is one clear issue instead of a RecursionError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .._contract import ValidationIssue
from ._issues import json_issue


class _NotJson(ValueError):
    pass


def _constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {text[:20]} is too large")
    return value


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_float)


def parse_arguments(raw: str | bytes, locale: str) -> Any | ValidationIssue:
    """Parse `raw`; empty text means `{}`. Malformed JSON gives one issue with line and column."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            prefix = raw[: exc.start].decode("utf-8", "replace")
            line = prefix.count("\n") + 1
            column = len(prefix) - (prefix.rfind("\n") + 1) + 1
            shown = raw.decode("utf-8", "replace")
            return json_issue("invalid UTF-8", line, column, locale, shown)
    else:
        text = raw
    if not text.strip():
        return {}
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return json_issue(exc.msg, exc.lineno, exc.colno, locale, text)
    except _NotJson as exc:
        return json_issue(str(exc), 1, 1, locale, text)
    except RecursionError:
        return json_issue("nested too deeply", 1, 1, locale, text)


def dump_arguments(args: Mapping[str, Any], locale: str = "en") -> str | ValidationIssue:
    """Serialise an already-parsed arguments object so both tracks see JSON semantics."""
    try:
        return json.dumps(args, ensure_ascii=False, default=str, allow_nan=False)
    except RecursionError:
        return json_issue("nested too deeply", 1, 1, locale, "(object)")
    except ValueError as exc:  # NaN or Infinity in a mapping
        return json_issue(str(exc), 1, 1, locale, "(object)")
