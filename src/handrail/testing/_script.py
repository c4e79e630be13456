"""The script's values: replies, faults, and the requests the server saw.

`Reply` is what the model says, `Fault` how a request fails, `RecordedRequest` what arrived.
Plain frozen data; the `_render_*` modules render them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from pathlib import Path
from typing import Any, TypeAlias, cast

__all__ = [
    "MAX_SLEEP",
    "Fault",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ToolUse",
    "load_script",
]

MAX_SLEEP = 60.0
"""The longest a scripted delay may be, in seconds: every wait in a test stays bounded."""


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call the model makes.

    Example: `ToolUse("read_file", {"file_path": "a.py"})`, or with a raw argument string
    (sent verbatim, so it may be broken JSON): `ToolUse("read_file", '{"file_path": ')`.
    """

    name: str
    """The tool name the model calls."""
    arguments: Mapping[str, Any] | str = field(default_factory=dict[str, Any])
    """The arguments: a dict (sent as JSON) or a raw string (sent exactly as given)."""
    _: KW_ONLY
    id: str | None = None
    """The call id; None gives a provider-typical one (`call_…`, `toolu_…`; none for Gemini)."""

    def arguments_json(self) -> str:
        """The argument text as it goes on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False, separators=(",", ":"))

    def arguments_object(self) -> Any:
        """The arguments as a JSON value, for formats that carry an object, not text.

        A raw string that parses as JSON gives the parsed value; one that does not is
        returned unchanged (a protocol-breaking reply, on purpose).
        """
        if not isinstance(self.arguments, str):
            return dict(self.arguments)
        try:
            return json.loads(self.arguments)
        except ValueError:
            return self.arguments


def _check_delay(owner: str, name: str, value: object) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value)):
        raise TypeError(f"{owner}.{name} must be a number of seconds, got {value!r}")
    if not 0 <= value <= MAX_SLEEP:
        raise ValueError(f"{owner}.{name} must be between 0 and {MAX_SLEEP:g} s, got {value!r}")


def _check_count(owner: str, name: str, value: object, minimum: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner}.{name} must be an int >= {minimum} or None, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One model response, rendered in whichever format the request used.

    Token counts follow OpenAI's meaning: `input_tokens` is the whole prompt, of which
    `cached_tokens` came from the cache; `output_tokens` includes `reasoning_tokens`. Each
    format gets its own split (Anthropic's `input_tokens` leaves the cached part out;
    Gemini's `candidatesTokenCount` leaves the thoughts out).
    """

    text: str = ""
    """The assistant's text."""
    reasoning: str = ""
    """Reasoning text: `reasoning_content` (chat), a reasoning summary (Responses), a
    `thinking` block (Anthropic), a `thought` part (Gemini)."""
    tool_calls: Sequence[ToolUse] = ()
    """The tool calls, in order (stored as a tuple)."""
    input_tokens: int = 10
    """Prompt tokens, cached ones included."""
    output_tokens: int = 5
    """Completion tokens, reasoning included."""
    cached_tokens: int = 0
    """The part of `input_tokens` read from the prompt cache."""
    reasoning_tokens: int = 0
    """The part of `output_tokens` spent on reasoning."""
    stop: str | None = None
    """None: `tool_use` when there are tool calls, else `end`. `"end"`, `"tool_use"` and
    `"max_tokens"` map to each format's own value (e.g. `max_tokens` is `length`,
    `max_output_tokens`, `max_tokens`, `MAX_TOKENS`); any other string is sent verbatim."""
    chunk_size: int = 16
    """Characters of text or argument JSON per delta event (1 works)."""
    delay: float = 0.0
    """Seconds to wait before each streamed event after the first."""
    first_delay: float = 0.0
    """Seconds to wait before answering at all (time to first byte)."""
    cut_after: int | None = None
    """Close the connection abruptly after this many streamed events, before the final
    marker (a dropped stream). A stream with fewer events is cut before its last one."""
    malformed_after: int | None = None
    """After this many streamed events, send one `data:` line that is not JSON, then go on."""
    hang: float = 0.0
    """Seconds to wait after the response headers, before the first event (streams only)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        for call in self.tool_calls:
            if not isinstance(call, ToolUse):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(f"Reply.tool_calls takes ToolUse values, got {call!r}")
        for name in ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"):
            _check_count("Reply", name, getattr(self, name), 0)
        if self.cached_tokens > self.input_tokens:
            raise ValueError("Reply.cached_tokens cannot exceed Reply.input_tokens")
        if self.reasoning_tokens > self.output_tokens:
            raise ValueError("Reply.reasoning_tokens cannot exceed Reply.output_tokens")
        _check_count("Reply", "chunk_size", self.chunk_size, 1)
        _check_count("Reply", "cut_after", self.cut_after, 0)
        _check_count("Reply", "malformed_after", self.malformed_after, 0)
        for name in ("delay", "first_delay", "hang"):
            _check_delay("Reply", name, getattr(self, name))

    @property
    def stop_kind(self) -> str:
        """`end`, `tool_use`, `max_tokens`, or a verbatim provider value."""
        if self.stop is not None:
            return self.stop
        return "tool_use" if self.tool_calls else "end"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """An error answer to one request, in the provider's own error shape.

    `body` None gives the provider's error object with a message for the status; a str
    is used as that message; a dict is sent as the whole JSON body; bytes are sent raw
    (an HTML page from a proxy, say). `disconnect=True` closes the socket unanswered.
    """

    status: int = 500
    """The HTTP status."""
    body: Mapping[str, Any] | str | bytes | None = None
    """The error body (see above)."""
    retry_after: float | None = None
    """Seconds for a `Retry-After` header, written as given (`0.2`, `3`)."""
    disconnect: bool = False
    """Close the connection without any answer."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """More response headers."""
    first_delay: float = 0.0
    """Seconds to wait before answering (or disconnecting)."""

    def __post_init__(self) -> None:
        if isinstance(self.status, bool) or not 100 <= self.status <= 599:
            raise ValueError(f"Fault.status must be an HTTP status, got {self.status!r}")
        if self.retry_after is not None:
            _check_delay("Fault", "retry_after", self.retry_after)
        _check_delay("Fault", "first_delay", self.first_delay)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request as the server received it."""

    provider: str | None
    """`openai_chat`, `openai_responses`, `anthropic`, `gemini`; None for an unknown path."""
    method: str
    """The HTTP method."""
    path: str
    """The path, without the query."""
    query: Mapping[str, str]
    """The query parameters (the last value of each)."""
    headers: Mapping[str, str]
    """The headers, with lower-case names."""
    body: Any
    """The parsed JSON body; None when it is not JSON."""
    raw: bytes
    """The body as received."""
    stream: bool
    """Whether a stream was asked for (`"stream": true`, or Gemini's streaming path)."""
    model: str | None
    """The model asked for (from the body, or from the path for Gemini)."""


ScriptItem: TypeAlias = Reply | Fault | Callable[[RecordedRequest], Reply | Fault]
"""One entry of a script: a reply, a fault, or a function of the request giving one."""


_REPLY_FIELDS = frozenset(f.name for f in fields(Reply))
_FAULT_FIELDS = frozenset(f.name for f in fields(Fault))


def _tool_use(raw: object, where: str) -> ToolUse:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a tool call must be an object, got {raw!r}")
    entry: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    unknown = set(entry) - {"name", "arguments", "id"}
    if unknown:
        raise ValueError(f"{where}: unknown tool call keys {sorted(unknown)}")
    name = entry.get("name")
    if not isinstance(name, str):
        raise ValueError(f"{where}: a tool call needs a string `name`")
    arguments = entry.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ValueError(f"{where}: `arguments` must be an object or a string")
    call_id = entry.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise ValueError(f"{where}: `id` must be a string")
    return ToolUse(name, arguments, id=call_id)  # pyright: ignore[reportUnknownArgumentType]


def _item(raw: object, where: str) -> Reply | Fault:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: each script item must be an object, got {raw!r}")
    entry: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    if "fault" in entry:
        if len(entry) != 1 or not isinstance(entry["fault"], dict):
            raise ValueError(f'{where}: a fault is written {{"fault": {{...}}}} and nothing else')
        spec = cast(dict[str, Any], entry["fault"])
        unknown = set(spec) - _FAULT_FIELDS
        if unknown:
            raise ValueError(f"{where}: unknown fault keys {sorted(unknown)}")
        try:
            return Fault(**spec)
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None
    unknown = set(entry) - _REPLY_FIELDS
    if unknown:
        raise ValueError(f"{where}: unknown reply keys {sorted(unknown)}")
    values = dict(entry)
    calls = values.pop("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError(f"{where}: `tool_calls` must be a list")
    tool_calls = [_tool_use(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(calls)]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    try:
        return Reply(tool_calls=tool_calls, **values)
    except TypeError as exc:
        raise ValueError(f"{where}: {exc}") from None


def load_script(path: str | Path) -> list[Reply | Fault]:
    """Read a script from a JSON file: a list of replies and faults.

    A reply is an object with `Reply`'s fields (`{"text": "Hi", "tool_calls": [{"name":
    "read_file", "arguments": {"file_path": "a.py"}}]}`); a fault is `{"fault": {"status":
    429, "retry_after": 1}}`.

    Raises:
        ValueError: the file is not such a list (the message names the bad entry).
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: a script is a JSON list of replies and faults")
    items: list[Any] = data  # pyright: ignore[reportUnknownVariableType]
    return [_item(raw, f"{path}[{i}]") for i, raw in enumerate(items)]
