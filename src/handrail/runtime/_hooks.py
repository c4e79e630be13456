"""Running hooks for the pipeline: Python callables inline, shell commands as processes.

`hook_event` builds the event a hook sees from a prepared call; `run_pre_hooks` and
`run_post_hooks` run the hooks that apply (stages 5 and 8) and combine their answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from .._context import Session
from .._contract import ToolResult
from ..permissions import Hook, HookEvent, HookResponse
from ..sandbox import run_command
from ._calls import Prepared
from ._threads import POOL

logger = logging.getLogger("handrail")


@dataclass(kw_only=True)
class PreHookOutcome:
    """The combined answer of the pre-tool hooks."""

    decision: str | None = None
    reason: str = ""
    blocked: bool = False
    updated_input: Mapping[str, Any] | None = None
    context: list[str] = field(default_factory=list[str])


@dataclass(frozen=True, slots=True, kw_only=True)
class _Answer:
    response: HookResponse | None
    blocked: str | None = None
    """Set when the hook blocks (exit 2) or failed: the message for the model."""
    failed: bool = False


def hook_event(
    name: str, p: Prepared, session: Session, cwd: str, result: ToolResult | None = None
) -> HookEvent:
    """The event hooks see for this call (`result` for the post-tool events)."""
    # Hooks always see the validated arguments (defaults filled in), as JSON.
    args = p.args
    tool_input: Mapping[str, Any] = (
        args.model_dump(mode="json", by_alias=True) if isinstance(args, BaseModel) else dict(args)
    )
    return HookEvent(
        event=name,  # pyright: ignore[reportArgumentType]
        session_id=session.id,
        cwd=cwd,
        mode=session.mode.value,
        tool_name=p.tool.name,
        tool_input=tool_input,
        call_id=p.call.id,
        result=result,
    )


async def _run_one(hook: Hook, event: HookEvent, cwd: str) -> _Answer:
    if hook.func is not None:
        try:
            if inspect.iscoroutinefunction(hook.func):
                value = await asyncio.wait_for(hook.func(event), hook.timeout)
            else:
                # A sync hook runs on a worker thread so it can neither block the loop nor
                # outlast its timeout (the thread is abandoned; the call is blocked).
                value = await asyncio.wait_for(POOL.submit(hook.func, event), hook.timeout)
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(value, hook.timeout)
        except TimeoutError:
            return _Answer(
                response=None,
                blocked=f"hook {hook.name!r} timed out after {hook.timeout:g} s",
                failed=True,
            )
        except Exception as exc:
            logger.exception("hook %r failed", hook.name)
            return _Answer(response=None, blocked=f"hook {hook.name!r} failed: {exc}", failed=True)
        if value is not None and not isinstance(value, HookResponse):
            return _Answer(
                response=None,
                blocked=f"hook {hook.name!r} returned {type(value).__name__}, not HookResponse",
                failed=True,
            )
        return _Answer(response=value)
    assert hook.command is not None
    doc = json.dumps(event.to_json(), ensure_ascii=False, default=str).encode()
    try:
        done = await run_command(hook.command, stdin=doc, cwd=cwd, timeout=hook.timeout)
    except OSError as exc:
        return _Answer(
            response=None, blocked=f"hook {hook.name!r} could not start: {exc}", failed=True
        )
    stderr = done.stderr.decode("utf-8", "replace").strip()
    if done.timed_out:
        return _Answer(
            response=None,
            blocked=f"hook {hook.name!r} timed out after {hook.timeout:g} s and was stopped",
            failed=True,
        )
    if done.exit_code == 2:
        return _Answer(response=None, blocked=stderr or f"blocked by hook {hook.name!r}")
    if done.exit_code != 0:
        detail = f": {stderr}" if stderr else ""
        return _Answer(
            response=None,
            blocked=f"hook {hook.name!r} exited with status {done.exit_code}{detail}",
            failed=True,
        )
    out = done.stdout.decode("utf-8", "replace").strip()
    if not out:
        return _Answer(response=None)
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        return _Answer(response=HookResponse(additional_context=out))
    if not isinstance(data, dict):
        return _Answer(
            response=None,
            blocked=f"hook {hook.name!r} printed JSON that is not an object",
            failed=True,
        )
    doc_out = cast(dict[str, Any], data)
    decision = doc_out.get("decision")
    if decision not in (None, "allow", "deny", "ask"):
        return _Answer(
            response=None,
            blocked=f"hook {hook.name!r} returned unknown decision {decision!r}",
            failed=True,
        )
    updated = doc_out.get("updated_input")
    return _Answer(
        response=HookResponse(
            decision=decision,
            reason=str(doc_out.get("reason") or ""),
            updated_input=cast(Mapping[str, Any], updated) if isinstance(updated, dict) else None,
            additional_context=str(doc_out.get("additional_context") or ""),
        )
    )


async def run_pre_hooks(hooks: Sequence[Hook], event: HookEvent, cwd: str) -> PreHookOutcome:
    """Run the pre-tool hooks in order; each sees the input as the previous one left it."""
    outcome = PreHookOutcome()
    current = event
    for hook in hooks:
        answer = await _run_one(hook, current, cwd)
        if answer.blocked is not None:
            if answer.failed and hook.on_error == "ignore":
                logger.warning("ignoring failed hook: %s", answer.blocked)
                continue
            outcome.blocked = True
            outcome.decision = "deny"
            outcome.reason = answer.blocked
            return outcome
        resp = answer.response
        if resp is None:
            continue
        if resp.additional_context:
            outcome.context.append(resp.additional_context)
        if resp.updated_input is not None:
            outcome.updated_input = resp.updated_input
            current = dataclasses.replace(current, tool_input=resp.updated_input)
        if resp.decision == "deny":
            outcome.decision, outcome.reason = (
                "deny",
                resp.reason or f"denied by hook {hook.name!r}",
            )
            return outcome
        if resp.decision == "ask" or (resp.decision == "allow" and outcome.decision != "ask"):
            outcome.decision, outcome.reason = resp.decision, resp.reason
    return outcome


async def run_post_hooks(hooks: Sequence[Hook], event: HookEvent, cwd: str) -> list[str]:
    """Run post hooks; returns text to add to the result for the model."""
    notes: list[str] = []
    for hook in hooks:
        answer = await _run_one(hook, event, cwd)
        if answer.blocked is not None:
            if answer.failed:
                logger.warning("post hook failed: %s", answer.blocked)
                if hook.on_error == "ignore":
                    continue
            notes.append(answer.blocked)
        elif answer.response is not None and answer.response.additional_context:
            notes.append(answer.response.additional_context)
    return notes
