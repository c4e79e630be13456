"""Result shaping: return values to readable text, and oversized content cut to head + tail.

The full text of a cut result is saved in the session's results directory and the cut content
names that file, so the model can read the middle if it needs it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def to_text(value: Any) -> str:
    """Readable text for any return value: never a repr, never a raw JSON dump."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _scalar(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return f"({_count(len(value), 'byte')} of binary data)"
    return "\n".join(_render(_plain(value), 0))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in cast(Mapping[Any, Any], value).items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in cast(list[Any], value)]
    return value


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(value) if math.isfinite(value) else json.dumps(value)
    text = str(value)
    return text


def _render(value: Any, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        mapping = cast(dict[str, Any], value)
        if not mapping:
            return [pad + "(empty)"]
        lines: list[str] = []
        for key, item in mapping.items():
            if isinstance(item, dict | list) and item:
                lines.append(f"{pad}{key}:")
                lines.extend(_render(item, indent + 2))
            else:
                lines.append(f"{pad}{key}: {_inline(item)}")
        return lines
    if isinstance(value, list):
        items = cast(list[Any], value)
        if not items:
            return [pad + "(empty)"]
        lines = []
        for item in items:
            if isinstance(item, dict | list) and item:
                sub = _render(item, indent + 2)
                lines.append(f"{pad}- {sub[0].lstrip()}")
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_inline(item)}")
        return lines
    return [pad + _inline(value)]


def _inline(value: Any) -> str:
    if isinstance(value, dict | list):
        return "(empty)"
    text = _scalar(value)
    return text.replace("\n", "\\n") if "\n" in text and len(text) < 80 else text


def truncate(
    content: str, limit: int, *, tool: str, call_id: str, results_dir: Path
) -> tuple[str, dict[str, Any]]:
    """Cut `content` to at most `limit` chars (head + tail) and save the full text to a file."""
    path = results_dir / f"{_SAFE_NAME.sub('_', tool)}-{_SAFE_NAME.sub('_', call_id) or 'call'}.txt"
    n = 1
    while path.exists():
        n += 1
        path = path.with_name(f"{path.stem.rsplit('~', 1)[0]}~{n}.txt")
    path.write_text(content, encoding="utf-8")
    total = len(content)
    # The marker's length depends on the counts it prints; size it with the worst case (the
    # most digits, and the plural).
    worst = _marker(total, max(content.count("\n"), 2), path)
    budget = max(limit - len(worst), 0)
    head_len = budget // 2
    tail_len = budget - head_len
    head_end = head_len
    cut = content.rfind("\n", 0, head_len)
    if cut >= head_len * 0.8:
        head_end = cut + 1
    tail_start = total - tail_len
    nl = content.find("\n", tail_start)
    if nl != -1 and nl < tail_start + tail_len * 0.2:
        tail_start = nl + 1
    middle = content[head_end:tail_start]
    omitted_lines = middle.count("\n")
    marker = _marker(len(middle), omitted_lines, path)
    shaped = content[:head_end] + marker + content[tail_start:]
    meta = {
        "truncated": True,
        "full_output_path": str(path),
        "total_chars": total,
        "omitted_chars": len(middle),
        "omitted_lines": omitted_lines,
    }
    return shaped, meta


def _marker(chars: int, lines: int, path: Path) -> str:
    return (
        f"\n\n[... {_count(chars, 'character')} ({_count(lines, 'line')}) omitted. The full "
        f"output is saved in {path}; read that file to see the omitted part ...]\n\n"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun if n == 1 else noun + 's'}"
