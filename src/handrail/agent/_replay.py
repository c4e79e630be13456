"""Replaying a saved session without a model: the same responses, the tools run anew.

`ReplayModel` answers each request with the next assistant message of a transcript (text and
calls, streamed as a live model would), so a user's session becomes a test: the tools run
again on today's code and workspace, and `compare` lists every call whose result now differs
(status, error code or content). Approvals are answered as they were answered then.
Sub-agents are not replayed (their model turns live in their own transcripts).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from typing import Any

from .._contract import Approval, ApprovalRequest, Approver, Question, ToolResult
from ..errors import ModelError
from ._catalog import ModelInfo, model_info
from ._codecs import CallReady, ModelRequest, StreamItem
from ._conversation import AssistantMessage, Message, ToolResults, UserMessage
from ._events import ModelRetry, TextDelta
from ._sessions import SavedSession

__all__ = ["Difference", "ReplayModel", "compare", "prompts", "recorded_approver"]


class ReplayModel:
    """A model that plays back the assistant messages of a transcript, in order."""

    max_retries = 0

    def __init__(self, saved: SavedSession) -> None:
        self._responses = [m for m in saved.messages if isinstance(m, AssistantMessage)]
        first = self._responses[0] if self._responses else None
        self.provider = first.provider if first is not None and first.provider else "openai_chat"
        self.model = first.model if first is not None and first.model else "replay"
        self.info: ModelInfo = model_info(self.model)
        self.played = 0

    @property
    def spec(self) -> str:
        """`replay:<model>`."""
        return f"replay:{self.model}"

    async def respond(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamItem | ModelRetry | AssistantMessage, None]:
        """The next recorded response (a replay has none left: ModelError)."""
        if self.played >= len(self._responses):
            raise ModelError(
                "the replayed transcript has no more model responses", kind="bad_request"
            )
        message = self._responses[self.played]
        self.played += 1
        if message.text:
            yield TextDelta(text=message.text)
        for call in message.calls:
            yield CallReady(call)
        yield message if message.stop not in ("cut", "interrupted") else _whole(message)

    async def aclose(self) -> None:
        """Nothing to close."""


def _whole(message: AssistantMessage) -> AssistantMessage:
    from dataclasses import replace

    return replace(message, stop="tool_calls" if message.calls else "end")


def prompts(saved: SavedSession) -> list[str]:
    """The user's prompts of the session, in order (one replayed run each)."""
    return [m.text for m in saved.messages if isinstance(m, UserMessage) and m.kind == "prompt"]


def recorded_approver(saved: SavedSession) -> Approver:
    """An approver that answers each call as it was answered in the recorded session."""
    answers = saved.approvals

    async def approve(question: Question) -> Approval:
        if not isinstance(question, ApprovalRequest):
            return Approval.deny("This question was not answered in the recorded session.")
        found = answers.get(question.call.id)
        if found is None:
            return Approval.deny("This approval was not given in the recorded session.")
        decision = found.get("decision")
        if decision in ("allow_once", "allow_always", "edit"):
            return Approval.allow_once()
        return Approval.deny(str(found.get("reason") or "Denied in the recorded session."))

    return approve


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """A call whose result differs between the recording and the replay."""

    call_id: str
    tool_name: str
    before: ToolResult | None
    after: ToolResult | None

    def describe(self) -> str:
        """One readable paragraph: what the result was, what it is now."""

        def state(r: ToolResult | None) -> str:
            if r is None:
                return "no result"
            return "ok" if r.ok else (r.error.value if r.error else "failed")

        was, now = state(self.before), state(self.after)
        head = f"{self.tool_name} (call {self.call_id}): was {was}, now {now}"
        if self.before is not None and self.after is not None:
            if state(self.before) == state(self.after):
                head += ", with different content"
            head += "\n" + _content_diff(self.before.content, self.after.content)
        return head

    def to_json(self) -> dict[str, Any]:
        """For the JSON outputs."""

        def one(r: ToolResult | None) -> dict[str, Any] | None:
            if r is None:
                return None
            return {"ok": r.ok, "error": r.error.value if r.error else None, "content": r.content}

        return {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "before": one(self.before),
            "after": one(self.after),
        }


def _results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    out: dict[str, ToolResult] = {}
    for m in messages:
        if isinstance(m, ToolResults):
            for r in m.results:
                out[r.call_id] = r
    return out


def compare(before: Sequence[Message], after: Sequence[Message]) -> list[Difference]:
    """Every call whose status, error code or content changed, in the recording's order."""
    old, new = _results(before), _results(after)
    order = list(old) + [k for k in new if k not in old]
    diffs: list[Difference] = []
    for call_id in order:
        a, b = old.get(call_id), new.get(call_id)
        if (
            a is not None
            and b is not None
            and (a.ok, a.error, a.content) == (b.ok, b.error, b.content)
        ):
            continue
        name = (a or b).tool_name if (a or b) is not None else "?"  # pyright: ignore[reportOptionalMemberAccess]
        diffs.append(Difference(call_id=call_id, tool_name=name, before=a, after=b))
    return diffs


def _content_diff(before: str, after: str, limit: int = 40) -> str:
    import difflib

    lines = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), "recorded", "replayed", lineterm="", n=1
        )
    )
    if len(lines) > limit:
        lines = [*lines[:limit], f"... ({len(lines) - limit} more diff lines)"]
    return "\n".join("    " + line for line in lines)
