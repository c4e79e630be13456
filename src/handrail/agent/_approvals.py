"""The agent's side of the approval road: it observes the questions of its calls, never owns them.

An `Agent` hands each stream of calls an approver of its own making (`observed`): it names the
agent that asks, records the question and its answer as events (and so in the transcript),
and passes the question on to whoever answers (the agent's `approver`, else the runtime's).
With nobody to answer, the question gets a denial that tells the model which rule would allow
the call. A sub-agent only labels its questions: its runtime's approver is the parent call's
(`ToolContext.approver`), the parent's observer, which records them once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal

from .._contract import Approval, ApprovalRequest, Approver, Confirmation, Elicitation, Question
from ..display import CallStatus
from ..permissions import rules_to_allow
from ..runtime import Runtime
from ._events import ApprovalAnswered, ApprovalAsked, Event
from ._text import say

__all__ = ["labelled", "observed"]

logger = logging.getLogger("handrail")


def observed(
    *,
    name: str,
    answerer: Approver | None,
    runtime: Runtime,
    emit: Callable[[Event], None],
    record: Callable[[dict[str, Any]], None],
) -> Approver:
    """An approver that names `name` as the asker, records what is asked, then asks `answerer`.

    Without an answerer, every question is denied on the policy's behalf: a call's denial
    names the allow rules that would let it run; another question's says nobody could answer.
    """

    async def approve(question: Question) -> Approval:
        agent = question.agent or name
        asked = ApprovalAsked(
            request=question,
            agent=agent,
            display=runtime.display(question.call, status=CallStatus.WAITING)
            if isinstance(question, ApprovalRequest)
            else None,
        )
        emit(asked)
        record({"type": "event", "event": asked.to_json()})
        by: Literal["user", "policy"] = "user"
        if answerer is None:
            answer, by = _nobody(runtime.locale, question), "policy"
        else:
            try:
                answer = await answerer(replace(question, agent=agent))
            except Exception as exc:  # recorded as the "no" the runtime would make of it
                logger.exception("approver raised")
                detail = str(exc) or type(exc).__name__
                answer = Approval.deny(f"The approval could not be obtained ({detail}).")
        answered = ApprovalAnswered(
            call_id=_call_id(question), approval=answer, by=by, agent=agent, about=_about(question)
        )
        record({"type": "event", "event": answered.to_json()})
        emit(answered)
        return answer

    return approve


def labelled(name: str, upstream: Approver) -> Approver:
    """`upstream`, told that `name` asks (a sub-agent's questions, recorded by its parent)."""

    async def approve(question: Question) -> Approval:
        return await upstream(replace(question, agent=question.agent or name))

    return approve


def _nobody(locale: str, question: Question) -> Approval:
    if isinstance(question, ApprovalRequest):
        rules = " + ".join(f"`{r}`" for r in rules_to_allow(question))
        text = say(locale, "headless_denied", reason=question.reason, rule=rules)
        return Approval.deny(text, source=question.source)
    return Approval.deny(say(locale, "headless_question", reason=question.reason), source="mode")


def _about(question: Question) -> Literal["call", "confirmation", "question"]:
    if isinstance(question, ApprovalRequest):
        return "call"
    return "confirmation" if isinstance(question, Confirmation) else "question"


def _call_id(question: Question) -> str:
    if isinstance(question, ApprovalRequest):
        return question.call.id
    if isinstance(question, Confirmation | Elicitation):
        return question.call_id
    return ""
