"""Building `ValidationIssue`s: pointers, value descriptions, did-you-mean, and the final text."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rapidfuzz import fuzz, process

from .._contract import ValidationIssue
from ._messages import message

RECEIVED_MAX = 60


def pointer(parts: Iterable[str | int]) -> str:
    """An RFC 6901 JSON pointer for a sequence of keys and indices (`""` for the root)."""
    out: list[str] = []
    for part in parts:
        out.append("/" + str(part).replace("~", "~0").replace("/", "~1"))
    return "".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_PLAIN = re.compile(r'^[^"\\\x00-\x1f\x7f\ud800-\udfff]*$')
SURROGATE = re.compile("[\ud800-\udfff]")
r"""A lone surrogate: a str can hold one (a Python caller, a `\ud800` escape), UTF-8 cannot."""


def escape_surrogates(text: str) -> str:
    r"""`text` with each lone surrogate written as its `\uXXXX` escape, so it encodes."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _quote(text: str) -> str:
    """JSON-style quoting (what the model sent), fast for the common plain string."""
    if _PLAIN.match(text):
        return '"' + text + '"'
    return escape_surrogates(json.dumps(text, ensure_ascii=False))


def describe(value: Any) -> str:
    """Describe a received JSON value in at most 60 characters, type first."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean true" if value else "boolean false"
    if isinstance(value, int):
        return _clip(f"integer {value}", RECEIVED_MAX)
    if isinstance(value, float):
        return _clip(f"number {json.dumps(value)}", RECEIVED_MAX)
    if isinstance(value, str):
        return "string " + _clip(_quote(value[:RECEIVED_MAX]), RECEIVED_MAX - 7)
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        return _clip(f"object {{{keys}}}", RECEIVED_MAX)
    if isinstance(value, list | tuple):
        n = len(value)  # pyright: ignore[reportUnknownArgumentType]
        return f"array of {n} item" + ("" if n == 1 else "s")
    return _clip(type(value).__name__, RECEIVED_MAX)


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


_SQUASHED: dict[tuple[str, ...], list[str]] = {}


def closest(name: str, candidates: Sequence[str], n: int = 3) -> list[str]:
    """The candidates most like `name`, best first.

    Same letters ignoring case and `_`/`-` first, then edit similarity, then names containing
    it (`path` for `file_path`).
    """
    squashed = _squash(name)
    key = tuple(candidates)
    squashed_candidates = _SQUASHED.get(key)
    if squashed_candidates is None:
        squashed_candidates = [_squash(c) for c in candidates]
        if len(_SQUASHED) < 1024:
            _SQUASHED[key] = squashed_candidates
    exact = [c for c, sc in zip(candidates, squashed_candidates, strict=True) if sc == squashed]
    if exact:
        return exact[:n]
    found = [
        candidates[i]
        for _, _, i in process.extract(
            squashed, squashed_candidates, scorer=fuzz.ratio, score_cutoff=60, limit=n
        )
    ]
    if len(squashed) >= 3:
        for c, sc in zip(candidates, squashed_candidates, strict=True):
            if c not in found and (squashed in sc or sc in squashed):
                found.append(c)
    return found[:n]


def unknown_field_issue(
    parent: Sequence[str | int], field: str, allowed: Sequence[str], value: Any, locale: str
) -> ValidationIssue:
    """The issue for a field the schema does not allow, suggesting the closest allowed one."""
    guesses = closest(field, allowed, n=1)
    if guesses:
        text = message(locale, "unknown_field_hint", field=field, suggestion=guesses[0])
    elif allowed:
        allowed_text = ", ".join(f"`{a}`" for a in allowed)
        text = message(locale, "unknown_field_allowed", field=field, allowed=allowed_text)
    else:
        text = message(locale, "unknown_field", field=field)
    return ValidationIssue(
        path=pointer([*parent, field]), expected="absent", received=describe(value), message=text
    )


def missing_issue(parent: Sequence[str | int], field: str, locale: str) -> ValidationIssue:
    """The issue for a required field that was not sent."""
    return ValidationIssue(
        path=pointer([*parent, field]),
        expected="present",
        received=message(locale, "nothing"),
        message=message(locale, "missing", field=field),
    )


def issue(path: str, key: str, expected: str, value: Any, locale: str) -> ValidationIssue:
    """A generic issue rendered from the catalog entry `key`."""
    received = describe(value)
    return ValidationIssue(
        path=path,
        expected=expected,
        received=received,
        message=message(locale, key, expected=expected, received=received),
    )


def json_issue(detail: str, line: int, column: int, locale: str, raw: str) -> ValidationIssue:
    """The single issue for arguments that are not valid JSON."""
    return ValidationIssue(
        path="",
        expected="valid JSON",
        received="string " + _clip(_quote(raw[: RECEIVED_MAX * 2]), RECEIVED_MAX - 7),
        message=message(locale, "invalid_json", detail=detail, line=line, column=column),
    )


def surrogate_issue(path: str, value: str, locale: str) -> ValidationIssue:
    """The issue for a string holding a lone surrogate (half of a UTF-16 pair)."""
    found = SURROGATE.search(value)
    escape = f"\\u{ord(found.group()):04x}" if found else "\\ud800"
    return ValidationIssue(
        path=escape_surrogates(path),
        expected="text without lone surrogates",
        received=f"string with {escape}",
        message=message(locale, "surrogate", escape=escape),
    )


def sort_issues(
    issues: Sequence[ValidationIssue], fields: Sequence[str]
) -> tuple[ValidationIssue, ...]:
    """Issues in a canonical order, the same for both tracks and any validator version.

    Fields in the schema's order first (each field's issues by path), then unknown fields, with
    root-level issues leading.
    """
    if len(issues) < 2:
        return tuple(issues)
    rank = {name: i for i, name in enumerate(fields)}

    def key(i: ValidationIssue) -> tuple[int, str]:
        if not i.path:
            return (-1, "")
        top = i.path[1:].split("/", 1)[0].replace("~1", "/").replace("~0", "~")
        return (rank.get(top, len(rank)), i.path)

    return tuple(sorted(issues, key=key))


_FRAMES: dict[tuple[str, str], tuple[str, str, str]] = {}


def format_issues(tool: str, issues: Sequence[ValidationIssue], locale: str = "en") -> str:
    """The INVALID_ARGS content: a header, `- <path>: <message>` per issue, a call-again line."""
    frame = _FRAMES.get((tool, locale))
    if frame is None:
        frame = (
            message(locale, "header", tool=tool),
            message(locale, "root"),
            message(locale, "footer", tool=tool),
        )
        if len(_FRAMES) < 4096:
            _FRAMES[(tool, locale)] = frame
    header, root, footer = frame
    body = "\n".join([f"- {i.path or root}: {i.message}" for i in issues])
    return f"{header}\n{body}\n{footer}"
