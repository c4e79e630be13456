"""Model-facing text of the built-in tools, in English and Chinese.

Each tool module keeps its own catalog (`{"en": {...}, "zh": {...}}`); `text()` picks the
session's locale and falls back to English.
"""

from __future__ import annotations

from collections.abc import Mapping

Catalog = Mapping[str, Mapping[str, str]]


def text(locale: str, catalog: Catalog, key: str, /, **values: object) -> str:
    """Render `key` from `catalog` in `locale` (English when missing)."""
    table = catalog.get(locale) or catalog["en"]
    template = table.get(key) or catalog["en"][key]
    return template.format(**values)
