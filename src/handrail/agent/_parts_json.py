"""Content parts as plain JSON, for transcripts: a resumed session sends what the model saw.

Parts are stored as MCP content blocks (`part_to_json`, the shape `handrail serve` sends).
Loading is lenient: a part it does not know, or cannot read, is left out rather than failing
the whole session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._contract import (
    AudioPart,
    ContentPart,
    ImagePart,
    ResourceLinkPart,
    ResourcePart,
    TextPart,
    part_to_json,
)

__all__ = ["parts_from_json", "parts_to_json"]


def parts_to_json(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    """`parts` as JSON objects, in order."""
    return [part_to_json(p) for p in parts]


def _opt_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) else None


def _part_from_json(data: Mapping[str, Any]) -> ContentPart | None:
    annotations = data.get("annotations")
    meta = data.get("_meta")
    common: dict[str, Any] = {
        "annotations": annotations if isinstance(annotations, Mapping) else None,
        "meta": meta if isinstance(meta, Mapping) else None,
    }
    kind = data.get("type")
    resource = data.get("resource")
    if kind == "resource" and isinstance(resource, Mapping):
        data = cast(Mapping[str, Any], resource)  # the embedded resource's own fields
    text, uri, mime = _opt_str(data, "text"), _opt_str(data, "uri"), _opt_str(data, "mimeType")
    if kind == "text" and text is not None:
        return TextPart(text=text, **common)
    if kind in ("image", "audio"):
        payload = _opt_str(data, "data")
        if payload is None or mime is None:
            return None
        cls = ImagePart if kind == "image" else AudioPart
        return cls(data=payload, mime_type=mime, **common)
    if kind == "resource" and uri is not None:
        return ResourcePart(
            uri=uri, mime_type=mime, text=text, blob=_opt_str(data, "blob"), **common
        )
    if kind == "resource_link" and uri is not None:
        size = data.get("size")
        return ResourceLinkPart(
            uri=uri,
            name=_opt_str(data, "name") or uri,
            title=_opt_str(data, "title"),
            description=_opt_str(data, "description"),
            mime_type=mime,
            size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            **common,
        )
    return None


def parts_from_json(data: object) -> tuple[ContentPart, ...]:
    """The inverse of `parts_to_json`; anything unreadable is left out."""
    if not isinstance(data, list):
        return ()
    found = (
        _part_from_json(cast(Mapping[str, Any], item))
        for item in cast(list[Any], data)
        if isinstance(item, Mapping)
    )
    return tuple(p for p in found if p is not None)
