"""Model-facing sentences in several languages: one lookup for every layer's catalog.

A catalog maps a locale (`en`, `zh`) to `{key: template}`; English is the fallback for an
unknown locale and for a key a translation lacks. (The built-in tools keep their own copy in
`builtin/_i18n.py`: they use only the public API, as a third-party tool would.)
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["Catalog", "render"]

Catalog = Mapping[str, Mapping[str, str]]


def render(catalog: Catalog, locale: str, key: str, /, **values: object) -> str:
    """`key` from `catalog` in `locale`, formatted with `values` (English when missing)."""
    table = catalog.get(locale) or catalog["en"]
    template = table.get(key) or catalog["en"][key]
    return template.format(**values)
