"""What the four wire formats share: the request value, the decoder base, error text helpers."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..._contract import ToolCall
from ..._tool import Tool
from ...errors import ModelError
from .._conversation import AssistantMessage, Message, Usage
from .._events import ReasoningDelta, TextDelta
from .._sse import SseEvent

__all__ = [
    "CallReady",
    "Codec",
    "Decoder",
    "ModelRequest",
    "StreamItem",
    "ToolsPayload",
    "arguments_object",
    "arguments_text",
    "error_text",
    "load_event",
    "merge_roles",
    "stream_error",
    "usage_int",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """Everything one model request is rendered from, provider-neutral."""

    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[Tool] = ()
    max_output_tokens: int | None = None
    locale: str = "en"
    """Language of the text that answers unanswered calls (see `handrail.providers`)."""
    extra: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Merged into the request body last (provider options the loop does not know)."""


@dataclass(frozen=True, slots=True)
class CallReady:
    """A tool call whose arguments are complete: the loop hands it to the runtime now."""

    call: ToolCall


StreamItem = TextDelta | ReasoningDelta | CallReady
"""What a decoder produces while the response streams."""


def load_event(event: SseEvent) -> dict[str, Any]:
    """An event's data as a JSON object; a bad line raises ModelError(kind="protocol")."""
    try:
        data = json.loads(event.data)
    except ValueError:
        raise ModelError(
            f"the model server sent a stream event that is not JSON: {event.data[:120]!r}",
            kind="protocol",
            retryable=True,
        ) from None
    if not isinstance(data, dict):
        raise ModelError(
            f"the model server sent a stream event that is not a JSON object: {event.data[:120]!r}",
            kind="protocol",
            retryable=True,
        )
    return data  # pyright: ignore[reportUnknownVariableType]


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the JSON text OpenAI formats carry (as the model wrote it)."""
    args = call.arguments
    return args if isinstance(args, str) else json.dumps(dict(args), ensure_ascii=False)


def arguments_object(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as an object (Anthropic `input`, Gemini `args`); `{}` if not JSON."""
    args = call.arguments
    if isinstance(args, Mapping):
        return dict(args)
    try:
        value = json.loads(args)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


class Decoder:
    """Accumulates one response as it streams; subclasses read their provider's events.

    `feed` returns what the loop should see now; `close` returns calls still open at the end
    (none when the stream was cut: a half-written call never runs); `message` is the whole
    response. `complete` is true once the provider's final marker arrived.
    """

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.usage = Usage(requests=1)
        self.stop = ""
        self.complete = False
        self.raw: Any = None

    def feed(self, event: SseEvent) -> list[StreamItem]:
        """Take one event; return the deltas and calls it carries."""
        raise NotImplementedError

    def close(self, *, cut: bool) -> list[CallReady]:
        """The stream ended (`cut`: without its final marker); return calls still open."""
        return []

    def _call(self, call: ToolCall) -> CallReady:
        self.calls.append(call)
        return CallReady(call)

    def message(self) -> AssistantMessage:
        """The response as a conversation message."""
        stop = self.stop
        if not self.complete:
            stop = "cut"
        elif not stop or (stop == "end" and self.calls):
            stop = "tool_calls" if self.calls else "end"
        return AssistantMessage(
            text="".join(self.text),
            calls=tuple(self.calls),
            reasoning="".join(self.reasoning),
            provider=self.provider,
            model=self.model,
            raw=self.raw,
            usage=self.usage,
            stop=stop,
        )


class Codec(Protocol):
    """One provider's wire format: URL, headers, body, and response decoding."""

    provider: str
    default_base_url: str
    key_env: str
    """The environment variable the key is usually in."""

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """The endpoint for a request."""
        ...

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Authentication and version headers (no key: none sent)."""
        ...

    def body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        """The JSON body."""
        ...

    def decoder(self, request: ModelRequest) -> Decoder:
        """A fresh decoder for one streamed response."""
        ...

    def parse(self, data: Mapping[str, Any], request: ModelRequest) -> Decoder:
        """A decoder that has taken a whole (non-streamed) response."""
        ...


class ToolsPayload:
    """The `tools` of a request, rendered once while the tool list stays the same.

    Rendering (strict-mode schemas for OpenAI) costs more than anything else the loop does per
    turn, and the list rarely changes between turns; each call returns a fresh list.
    """

    def __init__(self, render: Callable[[Sequence[Tool]], list[dict[str, Any]]]) -> None:
        self._render = render
        self._tools: tuple[Tool, ...] = ()
        self._payload: list[dict[str, Any]] = []

    def __call__(self, tools: Sequence[Tool]) -> list[dict[str, Any]]:
        if len(tools) != len(self._tools) or any(
            a is not b for a, b in zip(tools, self._tools, strict=False)
        ):
            self._payload = self._render(tools)
            self._tools = tuple(tools)
        return list(self._payload)


def merge_roles(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Join consecutive items of one role (`key` holds their blocks or parts).

    Anthropic and Gemini want user and model turns to alternate; a tool-results turn followed
    by a notice, or a summary followed by a prompt, becomes one turn.
    """
    out: list[dict[str, Any]] = []
    for item in items:
        if out and out[-1]["role"] == item["role"]:
            out[-1] = {"role": item["role"], key: [*out[-1][key], *item[key]]}
        else:
            out.append(item)
    return out


def usage_int(value: object) -> int:
    """A token count from a usage object (absent or malformed: 0)."""
    return value if isinstance(value, int) and value >= 0 else 0


def error_text(data: Mapping[str, Any]) -> str | None:
    """The provider's own error message in an event or body (`{"error": {"message"}}`)."""
    err = data.get("error")
    if isinstance(err, Mapping):
        message = err.get("message")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
        return str(message) if message else json.dumps(err)[:300]  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(err, str):
        return err
    return None


def stream_error(data: Mapping[str, Any]) -> ModelError:
    """A ModelError for an error the server reported inside the stream (worth retrying)."""
    text = error_text(data) or json.dumps(data)[:300]
    return ModelError(
        f"the model server reported an error mid-stream: {text}", kind="server", retryable=True
    )
