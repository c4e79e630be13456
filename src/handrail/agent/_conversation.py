"""The conversation in a provider-neutral form: what was said, called and answered.

The loop keeps one list of these messages; each model client renders it into its own wire
format on every request. Keeping it neutral is what lets one conversation be compacted,
saved, resumed, replayed, and continued on another provider. Whatever a provider needs echoed
back exactly (Anthropic's signed thinking blocks, Gemini's thought signatures) rides along in
`AssistantMessage.raw`, used only when the same provider renders the message again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from .._contract import Denial, ErrorCode, ToolCall, ToolResult, ValidationIssue
from ._parts_json import parts_from_json, parts_to_json

__all__ = [
    "AssistantMessage",
    "Message",
    "ToolResults",
    "Usage",
    "UserMessage",
    "message_from_json",
    "message_to_json",
    "result_from_json",
    "result_to_json",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Tokens a model request (or a whole run) consumed, as the provider reported them."""

    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Generated tokens, reasoning included."""
    cached_tokens: int = 0
    """Prompt tokens served from the provider's cache (billed lower)."""
    requests: int = 0
    """Model requests counted in this total."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            requests=self.requests + other.requests,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def to_json(self) -> dict[str, int]:
        """A plain dict (the `usage` object of the JSON output)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "requests": self.requests,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        """The inverse of `to_json` (unknown keys ignored, missing ones zero)."""
        return cls(
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            cached_tokens=int(data.get("cached_tokens", 0)),
            requests=int(data.get("requests", 0)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    """Text from the user's side of the conversation."""

    text: str
    kind: Literal["prompt", "notice", "summary", "nudge"] = "prompt"
    """`prompt`: typed by the user; `notice`: from the host (a background job ended);
    `summary`: what compaction left of older turns; `nudge`: the loop asks for an answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    """One model response: its text and the tool calls it made, in order."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    """Reasoning text the provider showed (for display; not sent back unless in `raw`)."""
    provider: str = ""
    """The wire format that produced it (`openai_chat`, `anthropic`, ...)."""
    model: str = ""
    raw: Any = None
    """Provider-specific content to echo back verbatim to the same provider, or None."""
    usage: Usage = Usage()
    stop: str = ""
    """Why the model stopped: `end`, `tool_calls`, `max_tokens`, `cut` (stream dropped), ..."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResults:
    """The results answering the previous assistant message's calls: one each, in order."""

    results: tuple[ToolResult, ...]


Message = UserMessage | AssistantMessage | ToolResults
"""One entry of the conversation."""


# -- JSON (transcripts) ----------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """`value` if it survives JSON, else its text (metadata may hold paths, enums, tuples)."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return str(value)


def result_to_json(result: ToolResult) -> dict[str, Any]:
    """A `ToolResult` as plain JSON (what a transcript stores)."""
    out: dict[str, Any] = {
        "call_id": result.call_id,
        "tool_name": result.tool_name,
        "ok": result.ok,
        "content": result.content,
    }
    if result.error is not None:
        out["error"] = result.error.value
    if result.summary:
        out["summary"] = result.summary
    if result.diff is not None:
        out["diff"] = result.diff
    if result.issues:
        out["issues"] = [
            {"path": i.path, "expected": i.expected, "received": i.received, "message": i.message}
            for i in result.issues
        ]
    if result.denial is not None:
        d = result.denial
        out["denial"] = {"reason": d.reason, "source": d.source, "rule": d.rule}
    if result.duration:
        out["duration"] = round(result.duration, 6)
    if result.metadata:
        out["metadata"] = _json_safe(dict(result.metadata))
    if result.parts:  # kept, so a resumed session sends the model what it saw
        out["parts"] = parts_to_json(result.parts)
    if result.structured is not None:
        out["structured"] = _json_safe(dict(result.structured))
    return out


def result_from_json(data: Mapping[str, Any]) -> ToolResult:
    """The inverse of `result_to_json`."""
    error = data.get("error")
    denial = data.get("denial")
    structured = data.get("structured")
    return ToolResult(
        ok=bool(data.get("ok")),
        content=str(data.get("content", "")),
        error=ErrorCode(error) if isinstance(error, str) and error in ErrorCode else None,
        summary=str(data.get("summary", "")),
        diff=data.get("diff"),
        issues=tuple(ValidationIssue(**cast(dict[str, str], i)) for i in data.get("issues", ())),
        denial=Denial(**cast(dict[str, Any], denial)) if isinstance(denial, Mapping) else None,
        duration=float(data.get("duration", 0.0)),
        metadata=cast(Mapping[str, Any], data.get("metadata") or {}),
        call_id=str(data.get("call_id", "")),
        tool_name=str(data.get("tool_name", "")),
        parts=parts_from_json(data.get("parts")),
        structured=cast(Mapping[str, Any], structured) if isinstance(structured, Mapping) else None,
    )


def _call_to_json(call: ToolCall) -> dict[str, Any]:
    args = call.arguments
    return {
        "id": call.id,
        "name": call.name,
        "arguments": dict(args) if isinstance(args, Mapping) else args,
    }


def message_to_json(message: Message) -> dict[str, Any]:
    """A message as plain JSON, tagged with `role`."""
    if isinstance(message, UserMessage):
        return {"role": "user", "kind": message.kind, "text": message.text}
    if isinstance(message, ToolResults):
        return {"role": "tool", "results": [result_to_json(r) for r in message.results]}
    out: dict[str, Any] = {"role": "assistant", "text": message.text}
    if message.calls:
        out["calls"] = [_call_to_json(c) for c in message.calls]
    if message.reasoning:
        out["reasoning"] = message.reasoning
    out["provider"] = message.provider
    out["model"] = message.model
    if message.raw is not None:
        out["raw"] = _json_safe(message.raw)
    out["usage"] = message.usage.to_json()
    out["stop"] = message.stop
    return out


def message_from_json(data: Mapping[str, Any]) -> Message:
    """The inverse of `message_to_json`; raises ValueError for an unknown role."""
    role = data.get("role")
    if role == "user":
        kind = data.get("kind", "prompt")
        if kind not in ("prompt", "notice", "summary", "nudge"):
            kind = "prompt"
        return UserMessage(text=str(data.get("text", "")), kind=kind)
    if role == "tool":
        return ToolResults(
            results=tuple(result_from_json(r) for r in cast(Sequence[Any], data.get("results", ())))
        )
    if role == "assistant":
        calls = tuple(
            ToolCall(id=str(c["id"]), name=str(c["name"]), arguments=c.get("arguments", "{}"))
            for c in cast(Sequence[Mapping[str, Any]], data.get("calls", ()))
        )
        return AssistantMessage(
            text=str(data.get("text", "")),
            calls=calls,
            reasoning=str(data.get("reasoning", "")),
            provider=str(data.get("provider", "")),
            model=str(data.get("model", "")),
            raw=data.get("raw"),
            usage=Usage.from_json(cast(Mapping[str, Any], data.get("usage") or {})),
            stop=str(data.get("stop", "")),
        )
    raise ValueError(f"unknown message role {role!r}")
