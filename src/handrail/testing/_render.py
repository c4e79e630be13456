"""What the four renderers share: stream events, the render context, ids, JSON access.

Each `_render_*` module turns a `Reply` into that provider's stream events and whole response,
and an error into its error body; `_server` does the HTTP around them.
"""

from __future__ import annotations

import base64
import json
import random
import string
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from ._script import Reply

__all__ = [
    "Context",
    "Event",
    "Ids",
    "Renderer",
    "arr",
    "dumps",
    "obj",
    "pieces",
    "text",
]


def obj(value: object) -> dict[str, Any] | None:
    """`value` as a JSON object, or None."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def arr(value: object) -> list[Any]:
    """`value` as a JSON array ([] when it is not one)."""
    return cast(list[Any], value) if isinstance(value, list) else []


def text(value: object) -> str:
    """`value` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def dumps(value: object, *, spaced: bool = False) -> str:
    """Compact JSON (`spaced` puts a space after each colon, as Gemini's streams do)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ": " if spaced else ":"))


def pieces(value: str, size: int) -> Iterator[str]:
    """`value` in slices of `size` characters (nothing for an empty string)."""
    for start in range(0, len(value), size):
        yield value[start : start + size]


class Ids:
    """Provider-typical ids from a seeded generator, so a run's ids repeat run after run."""

    _ALPHABET = string.ascii_letters + string.digits

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def make(self, prefix: str, length: int = 24) -> str:
        """`prefix` and `length` random letters and digits (`call_`, `toolu_01`, `msg_`)."""
        with self._lock:
            return prefix + "".join(self._rng.choices(self._ALPHABET, k=length))

    def signature(self) -> str:
        """An opaque base64 signature, like a thinking block's or a thought's."""
        with self._lock:
            raw = self._rng.randbytes(48)
        return base64.b64encode(raw).decode("ascii")


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event: its JSON text (or a marker) and its `event:` name, if any."""

    data: str
    name: str | None = None
    final: bool = False
    """The event that says the stream is complete (`[DONE]`, `message_stop`, ...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What a rendering needs besides the reply: the request and the id source."""

    model: str
    request: Mapping[str, Any]
    ids: Ids
    created: int

    @classmethod
    def of(cls, model: str | None, request: object, ids: Ids) -> Context:
        """The context for a request body (any JSON value) and its model."""
        return cls(
            model=model or "unknown-model",
            request=obj(request) or {},
            ids=ids,
            created=int(time.time()),
        )


class Renderer(Protocol):
    """One provider's formats: streamed events, whole responses, errors and credentials."""

    provider: str
    line_end: str
    """The line ending of its event stream (`\\r\\n` for Gemini)."""
    stream_content_type: str

    def events(self, reply: Reply, ctx: Context) -> list[Event]:
        """The stream for `reply`, final marker included."""
        ...

    def body(self, reply: Reply, ctx: Context) -> dict[str, Any]:
        """The whole (non-streamed) response for `reply`."""
        ...

    def error(self, status: int, message: str) -> dict[str, Any]:
        """The provider's error body for `status`."""
        ...

    def auth_failure(
        self, headers: Mapping[str, str], query: Mapping[str, str], key: str
    ) -> tuple[int, dict[str, Any]] | None:
        """The status and body for a request without the right credential, else None."""
        ...

    def request_id_header(self) -> str:
        """The name of the response header carrying a request id (`""`: none)."""
        ...
