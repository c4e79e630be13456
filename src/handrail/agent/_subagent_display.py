"""How an `agent` call looks: its task, its child's latest activity, what it cost.

`explore: find the login code`; while it runs, the child's latest activity (`Read auth.py`);
once done, its cost (`4 tool calls, 2 turns, 12.3k tokens`).

While the child runs, each of its events reaches the parent as progress of the call, with the
child's event (as JSON, its own `display` included) in `data["event"]`: the latest one becomes
the progress message. Plain data like every display; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from ..display import (
    CallProgress,
    CallStatus,
    CallView,
    Display,
    DisplayGroup,
    default_display,
    one_line,
    status_of,
)

__all__ = ["agent_display"]

_STATES = {
    "text_delta": "writing its answer",
    "reasoning_delta": "thinking",
    "model_retry": "retrying a model request",
    "compacted": "compacting its context",
}
_ENDINGS = {
    "error_max_turns": "turn limit reached",
    "error_budget": "budget spent",
    "error_model": "model error",
    "error_context": "context full",
    "interrupted": "interrupted",
}


def _mapping(value: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def _text(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    return one_line(value) if isinstance(value, str) else ""


def activity(data: Mapping[str, Any]) -> str:
    """The child's latest event in a few words (`Read auth.py`, `writing its answer`)."""
    event = _mapping(data.get("event"))
    kind = event.get("type")
    shown = _mapping(event.get("display"))
    title = _text(shown, "title") or _text(_mapping(event.get("call")), "name")
    if kind in ("tool_call_started", "tool_call_progress"):
        return title
    if kind == "tool_call_finished":
        subtitle = _text(shown, "subtitle")
        title = title or _text(_mapping(event.get("result")), "tool_name")
        return f"{title}: {subtitle}" if title and subtitle else title
    if kind == "approval_asked":
        return f"waiting for approval: {title}" if title else "waiting for approval"
    if kind == "turn_started":
        turn = event.get("turn")
        return f"turn {turn}" if isinstance(turn, int) else ""
    return _STATES.get(kind, "") if isinstance(kind, str) else ""


def _tokens(n: int) -> str:
    if n < 1000:
        return f"{n} tokens"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k tokens"
    return f"{n / 1_000_000:.1f}M tokens"


def _number(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cost_line(metadata: Mapping[str, Any]) -> str:
    """`4 tool calls, 2 turns, 12.3k tokens` (and how it ended, when not with an answer)."""
    parts: list[str] = []
    calls, turns = _number(metadata, "tool_calls"), _number(metadata, "turns")
    if calls is not None:
        parts.append(f"{calls} tool call{'' if calls == 1 else 's'}")
    if turns is not None:
        parts.append(f"{turns} turn{'' if turns == 1 else 's'}")
    usage = _mapping(metadata.get("usage"))
    tokens = [n for n in (_number(usage, "input_tokens"), _number(usage, "output_tokens")) if n]
    if tokens:
        parts.append(_tokens(sum(tokens)))
    cost = metadata.get("cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        parts.append(f"${cost:.2f}" if cost >= 0.01 else "<$0.01")
    ending = metadata.get("subtype")
    if isinstance(ending, str) and ending in _ENDINGS:
        parts.append(_ENDINGS[ending])
    return ", ".join(parts)


def agent_display(view: CallView, *, name: str = "agent") -> Display:
    """`explore: find the login code`; running: the child's latest activity; done: its cost."""
    kind = view.text("agent_type") or "general"
    description = view.text("description") or "?"
    shown = default_display(view, name=name)
    shown = replace(shown, title=one_line(f"{kind}: {description}"), group=DisplayGroup.AGENT)
    result = view.result
    if result is None:
        message = activity(view.data)
        if not message:
            return shown
        return replace(shown, progress=replace(view.progress or CallProgress(), message=message))
    status = status_of(result)
    if status is CallStatus.DONE:
        return replace(shown, subtitle=one_line(cost_line(result.metadata)))
    if status is CallStatus.FAILED and "turns" in result.metadata:
        # It ran but gave no answer: say so in a few words (the result's text says the rest).
        costs = cost_line(result.metadata)
        return replace(shown, subtitle=one_line(f"no answer, {costs}" if costs else "no answer"))
    return shown
