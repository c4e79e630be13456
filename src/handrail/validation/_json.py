"""Parsing a model's argument string into a JSON object, with precise errors.

Strict JSON: `NaN`, `Infinity` and numbers too large for a float are refused (they are not
JSON, and validators would see a non-number), invalid UTF-8 is refused, and nesting deeper than
Python can parse is one clear issue instead of a RecursionError.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, cast

from .._contract import ValidationIssue
from ._issues import SURROGATE, json_issue, pointer, surrogate_issue


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
_MAYBE_SURROGATE = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")
r"""A `\ud800` escape or the character itself: only then are the parsed strings walked."""


def lone_surrogate(value: Any, locale: str) -> ValidationIssue | None:
    r"""The issue for the first string (or key) in `value` holding a lone surrogate, or None.

    Python's JSON parser takes `"\ud800"`, and a str may hold the character itself, but no
    UTF-8 can carry it: a tool would fail to write it, and a result that echoes it could not
    be sent. Refused here, so both validation tracks agree.
    """
    todo: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while todo:  # iterative: the parser bounded the depth already, and this must not recurse
        item, at = todo.pop()
        if isinstance(item, str):
            if SURROGATE.search(item):
                return surrogate_issue(pointer(at), item, locale)
        elif isinstance(item, dict):
            for key, child in cast(dict[Any, Any], item).items():
                if isinstance(key, str) and SURROGATE.search(key):
                    return surrogate_issue(pointer((*at, key)), key, locale)
                todo.append((child, (*at, str(key))))
        elif isinstance(item, list | tuple):
            todo.extend((child, (*at, i)) for i, child in enumerate(cast(list[Any], item)))
    return None


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
        data = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        return json_issue(exc.msg, exc.lineno, exc.colno, locale, text)
    except _NotJson as exc:
        return json_issue(str(exc), 1, 1, locale, text)
    except RecursionError:
        return json_issue("nested too deeply", 1, 1, locale, text)
    if _MAYBE_SURROGATE.search(text):
        return lone_surrogate(data, locale) or data
    return data


def dump_arguments(args: Mapping[str, Any], locale: str = "en") -> str | ValidationIssue:
    """Serialise an already-parsed arguments object so both tracks see JSON semantics."""
    try:
        text = json.dumps(args, ensure_ascii=False, default=str, allow_nan=False)
    except RecursionError:
        return json_issue("nested too deeply", 1, 1, locale, "(object)")
    except ValueError as exc:  # NaN or Infinity in a mapping
        return json_issue(str(exc), 1, 1, locale, "(object)")
    if SURROGATE.search(text):
        return lone_surrogate(args, locale) or text
    return text
