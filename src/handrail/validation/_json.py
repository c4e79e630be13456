"""Parsing a model's argument string into a JSON object, with precise errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._contract import ValidationIssue
from ._issues import json_issue


def parse_arguments(raw: str | bytes, locale: str) -> Any | ValidationIssue:
    """Parse `raw`; empty text means `{}`. Malformed JSON gives one issue with line and column."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return json_issue(exc.msg, exc.lineno, exc.colno, locale, text)


def dump_arguments(args: Mapping[str, Any]) -> str:
    """Serialise an already-parsed arguments object so both tracks see JSON semantics."""
    return json.dumps(args, ensure_ascii=False, default=str)
