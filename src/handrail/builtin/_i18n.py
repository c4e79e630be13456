"""Model-facing text of the built-in tools, in English and Chinese.

Each tool module keeps its own catalog (`{"en": {...}, "zh": {...}}`); `text()` picks the
session's locale and falls back to English. `size_text` spells a size the same way in every
tool's text and display; `count_of` puts an English count and its noun in agreement.
"""

from __future__ import annotations

from collections.abc import Mapping

Catalog = Mapping[str, Mapping[str, str]]


def text(locale: str, catalog: Catalog, key: str, /, **values: object) -> str:
    """Render `key` from `catalog` in `locale` (English when missing)."""
    table = catalog.get(locale) or catalog["en"]
    template = table.get(key) or catalog["en"][key]
    return template.format(**values)


def size_text(n: int) -> str:
    """`812 bytes`, `1 byte`, `3.4 KB`, `1.2 MB`."""
    if n < 1024:
        return f"{n} byte{'' if n == 1 else 's'}"
    value = n / 1024
    for unit in ("KB", "MB", "GB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TB"


def count_of(n: int, noun: str, plural: str | None = None) -> str:
    """`1 file`, `3 files`, `0 files`; `plural` for nouns that do not just take an s."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
