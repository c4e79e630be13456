"""The one event stream of an agent run: every front end (terminal, JSON output, tests) reads it.

The loop renders nothing; it emits these values in order. Each has a stable `type` string and
`to_json()`, which is exactly a line of `handrail run --output-format stream-json`. Events of a
sub-agent reach the parent as `ToolCallProgress` of the `agent` call, with the child's event in
`data["event"]`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Literal

from .._contract import (
    Approval,
    ApprovalRequest,
    Confirmation,
    Elicitation,
    Question,
    ToolCall,
    ToolResult,
)
from ..display import Display
from ._conversation import AssistantMessage, Usage, result_to_json

__all__ = [
    "ApprovalAnswered",
    "ApprovalAsked",
    "Compacted",
    "Event",
    "ModelRetry",
    "Notice",
    "ReasoningDelta",
    "RunFinished",
    "RunResult",
    "RunStarted",
    "RunSubtype",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "TurnEnded",
    "TurnStarted",
]

RunSubtype = Literal[
    "success", "error_max_turns", "error_budget", "error_model", "error_context", "interrupted"
]
"""How a run ended (`RunResult.subtype`)."""


def _call_json(call: ToolCall) -> dict[str, Any]:
    args = call.arguments
    return {
        "id": call.id,
        "name": call.name,
        "arguments": args if isinstance(args, str) else dict(args),
    }


def _with_display(out: dict[str, Any], display: Display | None) -> dict[str, Any]:
    if display is not None:
        out["display"] = display.to_json()
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of every event; `type` names it in JSON."""

    type: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        """The event as one JSON object, `type` first."""
        return {"type": self.type, **self._fields()}

    def _fields(self) -> dict[str, Any]:
        # Plain fields as they are; events holding richer values override this.
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted(Event):
    """A run began: the user's prompt went to the model."""

    type: ClassVar[str] = "run_started"
    session_id: str
    model: str
    provider: str
    agent: str = "main"
    prompt: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted(Event):
    """A model request is about to go out (turn numbers count from 1 within the run)."""

    type: ClassVar[str] = "turn_started"
    turn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta(Event):
    """A piece of the model's answer text, as it streams."""

    type: ClassVar[str] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta(Event):
    """A piece of the model's visible reasoning, as it streams."""

    type: ClassVar[str] = "reasoning_delta"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRetry(Event):
    """A model request failed in a way worth retrying; the loop waits `delay` s and tries again.

    `discard` is true when text already streamed in this turn is void (the stream was cut and
    the turn starts over).
    """

    type: ClassVar[str] = "model_retry"
    attempt: int
    delay: float
    reason: str
    discard: bool = False

    def _fields(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "delay": round(self.delay, 3),
            "reason": self.reason,
            "discard": self.discard,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted(Event):
    """The model finished writing a call; it went to the runtime (it may still be queued)."""

    type: ClassVar[str] = "tool_call_started"
    call: ToolCall
    display: Display | None = None
    """How the call looks (`Tool.display`), for any front end."""

    def _fields(self) -> dict[str, Any]:
        return _with_display({"call": _call_json(self.call)}, self.display)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallProgress(Event):
    """Progress a running tool reported (output lines, a sub-agent's own events)."""

    type: ClassVar[str] = "tool_call_progress"
    call_id: str
    tool_name: str
    message: str
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    display: Display | None = None
    """How the running call looks now, progress included."""

    def _fields(self) -> dict[str, Any]:
        out = {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "message": self.message,
            "data": self.data,
        }
        return _with_display(out, self.display)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished(Event):
    """A call has its one result (success, failure, denial, cancellation alike)."""

    type: ClassVar[str] = "tool_call_finished"
    result: ToolResult
    display: Display | None = None
    """How the finished call looks: status, summary, diff or output head and tail."""

    def _fields(self) -> dict[str, Any]:
        return _with_display({"result": result_to_json(self.result)}, self.display)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalAsked(Event):
    """A person is asked something: a call's approval, or a tool's `Confirmation`.

    The run's approver is asked (headless: denied). `agent` names who asks: `main`, or a
    sub-agent such as `explore#1`.
    """

    type: ClassVar[str] = "approval_asked"
    request: Question
    """An `ApprovalRequest` for a call; another `Question` for what a tool asks as it runs."""
    agent: str = "main"
    display: Display | None = None
    """The call as it would run (the proposed diff of an edit, the command of a shell call)."""

    def _fields(self) -> dict[str, Any]:
        r = self.request
        if isinstance(r, ApprovalRequest):
            out: dict[str, Any] = {
                "agent": self.agent,
                "call": _call_json(r.call),
                "tool_name": r.tool_name,
                "reason": r.reason,
                "suggested_rules": list(r.suggested_rules),
            }
        else:
            out = {"agent": self.agent, "reason": r.reason}
            if isinstance(r, Confirmation):
                out["call_id"] = r.call_id
                out["tool_name"] = r.tool_name
                out["question"] = {"topic": r.topic, "subject": r.subject, "always": r.always}
            elif isinstance(r, Elicitation):  # what is asked, never what is answered
                out["call_id"] = r.call_id
                out["tool_name"] = r.tool_name
                out["question"] = {
                    "server": r.server,
                    "mode": "url" if r.url is not None else "form",
                    "url": r.url,
                    "fields": sorted((r.schema or {}).get("properties") or {}),
                }
        return _with_display(out, self.display)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalAnswered(Event):
    """The answer an approval got (and from whom: `user`, or `policy` when nobody could ask)."""

    type: ClassVar[str] = "approval_answered"
    call_id: str
    approval: Approval
    by: Literal["user", "policy"] = "user"
    agent: str = "main"
    about: Literal["call", "confirmation", "question"] = "call"
    """What was answered: the call's approval, or a question its tool asked (`call_id` is then
    the call whose tool asked; the answer says nothing about whether the call may run)."""

    def _fields(self) -> dict[str, Any]:
        a = self.approval
        out: dict[str, Any] = {
            "agent": self.agent,
            "call_id": self.call_id,
            "decision": a.kind,
            "reason": a.reason,
            "rule": a.rule,
            "by": self.by,
        }
        if self.about != "call":
            out["about"] = self.about
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnded(Event):
    """A model response is complete (its calls have their results)."""

    type: ClassVar[str] = "turn_ended"
    turn: int
    message: AssistantMessage
    usage: Usage
    context_tokens: int
    """How much of the context window the conversation now fills (provider count + estimate)."""

    def _fields(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "stop": self.message.stop,
            "text": self.message.text,
            "calls": [_call_json(c) for c in self.message.calls],
            "usage": self.usage.to_json(),
            "context_tokens": self.context_tokens,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Compacted(Event):
    """The conversation was shortened: old tool outputs pruned, older turns summarised."""

    type: ClassVar[str] = "compaction"
    tokens_before: int
    tokens_after: int
    pruned_results: int
    summarized_messages: int
    manual: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice(Event):
    """Something the user should know that is not an error (a truncated AGENTS.md, ...)."""

    type: ClassVar[str] = "notice"
    text: str
    level: Literal["info", "warning"] = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """How a run ended; also the last line of `stream-json` and the whole `json` output."""

    subtype: RunSubtype
    result: str
    """The final answer text (empty when the run ended without one)."""
    session_id: str
    num_turns: int
    usage: Usage
    duration_ms: int
    cost_usd: float | None = None
    """Known only when the model's prices are."""
    error: str = ""
    """For an error subtype: what happened and what to do."""

    @property
    def is_error(self) -> bool:
        """True for every subtype but `success`."""
        return self.subtype != "success"

    def to_json(self) -> dict[str, Any]:
        """The `result` object of the JSON outputs."""
        out: dict[str, Any] = {
            "type": "result",
            "subtype": self.subtype,
            "is_error": self.is_error,
            "result": self.result,
            "num_turns": self.num_turns,
            "session_id": self.session_id,
            "usage": self.usage.to_json(),
            "duration_ms": self.duration_ms,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
        }
        if self.error:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished(Event):
    """The run is over; `result` says how (its JSON is the `result` object itself)."""

    type: ClassVar[str] = "result"
    result: RunResult

    def to_json(self) -> dict[str, Any]:
        return self.result.to_json()
