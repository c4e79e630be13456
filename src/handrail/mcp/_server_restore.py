"""The checkpoint tools `serve(offer_restore=True)` adds: list a session's checkpoints, restore one.

The server answers them itself; they are not registry tools, so no rule, mode, hook or earlier
"allow always" can let a restore through. Every restore that would change something is put to
the calling client's user (an elicitation, the road a call's approval takes) with what it would
put back, overwrite and leave; a client that cannot ask gets a refusal, never the server's
`ask_fallback`. Only a yes restores, and only the paths of the session that asks.

Imported with the server (it uses anyio, which comes with the MCP SDK).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio

from .. import Approval, Confirmation, ErrorCode, Question, Runtime, Session, ToolResult
from .._contract import ValidationIssue
from ..sandbox import Restored
from ..validation import InvalidArguments, JsonSchemaArgs, format_issues
from ._server_payloads import (
    LIST_CHECKPOINTS,
    RESTORE_CHECKPOINT,
    RESTORE_SCHEMA,
    approval_message,
    call_result,
    checkpoint_tool_entries,
    checkpoints_result,
    restore_question,
    restore_refused,
    restore_result,
    say,
)

__all__ = ["Ask", "CheckpointTools"]

Ask = Callable[[Question, str], Awaitable[Approval]]
"""Puts a question to the calling client's user with the message shown; returns the answer."""

_NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


class CheckpointTools:
    """`list_checkpoints` and `restore_checkpoint` over a runtime that keeps checkpoints."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self._list_args = JsonSchemaArgs(_NO_ARGS)
        self._restore_args = JsonSchemaArgs(RESTORE_SCHEMA)

    @staticmethod
    def entries() -> list[dict[str, Any]]:
        """Their `tools/list` entries."""
        return checkpoint_tool_entries()

    async def call(
        self, name: str, arguments: Mapping[str, Any], session: Session, ask: Ask | None
    ) -> dict[str, Any]:
        """One call of either tool, as a `tools/call` result; `ask` is None when nobody can be."""
        if name == LIST_CHECKPOINTS:
            return await self.list(arguments, session)
        return await self.restore(arguments, session, ask)

    async def list(self, arguments: Mapping[str, Any], session: Session) -> dict[str, Any]:
        """The session's checkpoints, oldest first."""
        loc = self.rt.locale
        try:
            self._list_args.validate(arguments, loc)
        except InvalidArguments as exc:
            return _invalid(LIST_CHECKPOINTS, exc.issues, loc)
        # On the loop: the runtime makes a session's record there on first use.
        return checkpoints_result(self.rt.checkpoints(session), loc)

    async def restore(
        self, arguments: Mapping[str, Any], session: Session, ask: Ask | None
    ) -> dict[str, Any]:
        """Ask the user, then restore; nothing changes without their yes."""
        loc = self.rt.locale
        try:
            args = self._restore_args.validate(arguments, loc)
        except InvalidArguments as exc:
            return _invalid(RESTORE_CHECKPOINT, exc.issues, loc)
        number = int(args["checkpoint"])
        scope: list[str] | None = list(args.get("paths") or ()) or None
        known = {c.id: c for c in self.rt.checkpoints(session)}
        checkpoint = known.get(number)
        if checkpoint is None:
            issue = ValidationIssue(
                path="/checkpoint",
                expected="a checkpoint of this session",
                received=str(number),
                message=say(loc, "restore_unknown", id=number),
            )
            return _invalid(RESTORE_CHECKPOINT, (issue,), loc)
        plan = await self.rt.restore_plan(number, scope, session=session)
        if not plan.paths:  # nothing would change: no question, no restore
            return restore_result(Restored(checkpoint=number, undo=None), loc, scope=scope)
        if ask is None:
            return restore_refused(number, say(loc, "restore_cannot_ask"), loc)
        message = restore_question(plan, checkpoint, loc, scope=scope)
        question = Confirmation(
            reason=message,
            topic="restore",
            subject=", ".join(plan.paths),
            tool_name=RESTORE_CHECKPOINT,
        )
        answer = await ask(question, message)
        if answer.kind not in ("allow_once", "allow_always"):
            return restore_refused(
                number, answer.reason or say(loc, "declined", name=RESTORE_CHECKPOINT), loc
            )
        agreed = ", ".join(plan.outside)
        asking = False

        async def overwrite(q: Question) -> Approval:
            # The runtime asks again only when files were changed outside the session: the
            # user just agreed to overwrite these ones; any others are a new question.
            nonlocal asking
            if isinstance(q, Confirmation) and q.topic == "restore" and q.subject == agreed:
                return Approval.allow_once()
            asking = True
            try:
                return await ask(q, approval_message(q, loc))
            finally:
                asking = False

        restored = await _to_the_end(
            self.rt.restore(number, scope, session=session, approver=overwrite),
            stoppable=lambda: asking,
        )
        return restore_result(restored, loc, scope=scope)


async def _to_the_end(work: Awaitable[Restored], stoppable: Callable[[], bool]) -> Restored:
    """Await a restore; if the request is cancelled, let the restore finish first.

    A restore stopped half-way would leave the files in neither state; it is short, and it is
    recorded, so a cancelled request's restore can still be undone. While it still waits for
    the user (`stoppable()`: nothing is changed before their answer) it is cancelled with the
    request.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except BaseException:
        if stoppable():
            task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({task})
        raise


def _invalid(tool: str, issues: Sequence[ValidationIssue], locale: str) -> dict[str, Any]:
    result = ToolResult.failure(ErrorCode.INVALID_ARGS, format_issues(tool, issues, locale))
    return call_result(replace(result, issues=tuple(issues), summary="invalid arguments"))
