"""Building a call's `ToolResult`: the refusals any stage can end a call with, and `shape`.

`fail`, `invalid` and `denied` are the results of a stage that refuses, `waiting` that of a
call stopped until the host approves it; `shape` turns what a tool returned into its result
(readable text, head + tail truncation with the full text saved, the duration). Pure functions
of their arguments: the model-facing text comes in `locale`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .._context import Session
from .._contract import (
    EMPTY,
    ApprovalRequest,
    Denial,
    ErrorCode,
    Interrupted,
    ToolCall,
    ToolResult,
    make_result,
)
from .._tool import Tool
from ..validation import InvalidArguments, format_issues
from ._calls import Prepared
from ._messages import say
from ._shaping import to_text, truncate


def fail(
    call: ToolCall,
    tool_name: str,
    t0: float,
    code: ErrorCode,
    content: str,
    metadata: Mapping[str, Any] | None = None,
) -> ToolResult:
    """A failed call: `code`, the text for the model, and a one-line summary."""
    return make_result(
        False,
        content,
        call.id,
        tool_name,
        time.perf_counter() - t0,
        error=code,
        summary=f"{tool_name}: {code.value}",
        metadata=metadata or EMPTY,
    )


def invalid(
    locale: str,
    call: ToolCall,
    tool_name: str,
    t0: float,
    exc: InvalidArguments,
    note: str = "",
) -> ToolResult:
    """INVALID_ARGS with every issue listed (`note` goes first, e.g. who changed the input)."""
    content = format_issues(tool_name, exc.issues, locale)
    if note:
        content = note + "\n" + content
    n = len(exc.issues)
    return make_result(
        False,
        content,
        call.id,
        tool_name,
        time.perf_counter() - t0,
        error=ErrorCode.INVALID_ARGS,
        summary=f"{tool_name}: invalid arguments ({n} issue{'s' if n != 1 else ''})",
        issues=exc.issues,
    )


def denied(
    locale: str, p: Prepared, denial: Denial, code: ErrorCode, *, hidden: bool = False
) -> ToolResult:
    """A refused call that carries its `Denial` (a rule, the mode, a hook or the user).

    `hidden`: a secret location, whose reason says all (it may lie inside a root).
    """
    reason = denial.reason.rstrip(".")
    key = "denied" if code is ErrorCode.PERMISSION_DENIED else "refused"
    key = "hidden" if hidden else key
    text = say(locale, key, reason=reason)
    return ToolResult(
        ok=False,
        content=text,
        error=code,
        summary=f"{p.tool.name}: denied",
        denial=denial,
        duration=time.perf_counter() - p.t0,
        call_id=p.call.id,
        tool_name=p.tool.name,
    )


def waiting(locale: str, p: Prepared, request: ApprovalRequest) -> Interrupted:
    """The `Interrupted` of a call stopped at stage 6 until the host answers `request`."""
    return Interrupted(
        ok=False,
        content=say(locale, "needs_approval", name=p.tool.name, reason=request.reason),
        error=ErrorCode.INTERRUPTED,
        summary=f"{p.tool.name}: waiting for approval",
        approval=request,
        duration=time.perf_counter() - p.t0,
        call_id=p.call.id,
        tool_name=p.tool.name,
    )


def shape(
    locale: str, value: Any, tool: Tool, call: ToolCall, session: Session, t0: float
) -> ToolResult:
    """Stage 8: the result of a tool that returned `value` (a `ToolResult` or anything else)."""
    if isinstance(value, ToolResult):
        content = value.content
        base = value
    else:
        if type(value) is str:
            content = value
        elif type(value) is int:
            content = str(value)
        else:
            content = to_text(value)
        base = None
    meta: Mapping[str, Any] = base.metadata if base is not None else EMPTY
    ok = base.ok if base is not None else True
    if not content and ok:
        content = say(locale, "no_output", name=tool.name)
    elif len(content) > tool.max_result_chars:
        content, extra = truncate(
            content,
            tool.max_result_chars,
            tool=tool.name,
            call_id=call.id,
            results_dir=session.results_path(),
        )
        meta = {**meta, **extra}
    if base is None:
        return make_result(
            True, content, call.id, tool.name, time.perf_counter() - t0, metadata=meta
        )
    return replace(
        base,
        content=content,
        metadata=meta,
        error=base.error if base.ok else (base.error or ErrorCode.EXECUTION_ERROR),
        duration=time.perf_counter() - t0,
        call_id=call.id,
        tool_name=tool.name,
    )


async def ready(result: ToolResult) -> ToolResult:
    """A result that is already known, as the awaitable a non-async stage must return."""
    return result


def exc_text(exc: BaseException) -> str:
    """`Type: message` (or just `Type`) for an exception the model is told about."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
