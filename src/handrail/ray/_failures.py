"""What a call gets when the backend fails: `SESSION_LOST` and `BACKEND_UNAVAILABLE` results.

The text is for the model and says what to do next; `metadata` is for the program:
`executed` ("no" or "unknown": may the call have run?), `retryable` (would the same call,
made again later, stand a chance?), `reason` (a word: `host_died`, `expired`, `closed`,
`full`, `no_host`, `timeout`, `unreachable`) and `detail` (what Ray or the socket said).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from .._contract import ErrorCode, ToolResult
from .._i18n import Catalog, render

__all__ = ["lost", "restamp", "unavailable"]

Executed = Literal["no", "unknown"]

CATALOG: Catalog = {
    "en": {
        "host_died": (
            "The environment of this session is gone: its host process or node stopped. "
            "Nothing more can run in this session and its files are lost. Stop calling tools "
            "and report that the environment was lost."
        ),
        "expired": (
            "This session expired ({which} time limit) and its workspace was removed. "
            "Stop calling tools: a new session is needed."
        ),
        "closed": (
            "This session was closed and its workspace was removed. Stop calling tools: a new "
            "session is needed."
        ),
        "full": (
            "No session host can take this session now: every host is at its limit of "
            "sessions. Nothing ran. Try again later."
        ),
        "timeout": (
            "The session host did not answer within {seconds:g} seconds. {ran} Check the state "
            "of the workspace before you repeat it."
        ),
        "unreachable": (
            "The connection to the session host broke. {ran} Check the state of the workspace "
            "before you repeat it."
        ),
        "no_host": (
            "No running session host can take this session (the pool's hosts stopped, or "
            "none runs on a node with the labels asked for). Nothing ran. Try again later."
        ),
        "ran_unknown": "The call may or may not have run.",
        "ran_no": "The call did not run.",
        "idle": "idle",
        "absolute": "total",
    },
    "zh": {
        "host_died": (
            "此会话的环境已不存在：它的宿主进程或节点已停止。此会话不能再运行任何调用，"
            "其中的文件已丢失。请停止调用工具，并报告环境已丢失。"
        ),
        "expired": "此会话已过期（{which}时限），其工作区已删除。请停止调用工具：需要新的会话。",
        "closed": "此会话已关闭，其工作区已删除。请停止调用工具：需要新的会话。",
        "full": (
            "现在没有会话宿主能接收此会话：每个宿主的会话数都已达上限。调用未运行。请稍后再试。"
        ),
        "timeout": "会话宿主在 {seconds:g} 秒内没有回应。{ran}重复之前请先检查工作区的状态。",
        "unreachable": "与会话宿主的连接已断开。{ran}重复之前请先检查工作区的状态。",
        "no_host": (
            "没有正在运行的会话宿主能接收此会话（池中的宿主已停止，或没有宿主运行在带有所要求"
            "标签的节点上）。调用未运行。请稍后再试。"
        ),
        "ran_unknown": "调用可能已运行，也可能没有。",
        "ran_no": "调用没有运行。",
        "idle": "空闲",
        "absolute": "总",
    },
}


def _metadata(
    reason: str, executed: Executed, retryable: bool, detail: str, extra: dict[str, Any]
) -> dict[str, Any]:
    return {
        "reason": reason,
        "executed": executed,
        "retryable": retryable,
        "detail": detail,
        **extra,
    }


def lost(
    reason: Literal["host_died", "expired", "closed"],
    *,
    call_id: str = "",
    tool_name: str = "",
    executed: Executed = "no",
    detail: str = "",
    which: Literal["idle", "absolute"] = "idle",
    locale: str = "en",
    **extra: Any,
) -> ToolResult:
    """`SESSION_LOST`: the session is gone; every later call of it gets the same answer."""
    text = render(CATALOG, locale, reason, which=render(CATALOG, locale, which))
    result = ToolResult.failure(
        ErrorCode.SESSION_LOST,
        text,
        summary=f"session lost ({reason})",
        metadata=_metadata(reason, executed, False, detail, extra),
    )
    return _named(result, call_id, tool_name)


def unavailable(
    reason: Literal["full", "no_host", "timeout", "unreachable"],
    *,
    call_id: str = "",
    tool_name: str = "",
    executed: Executed = "no",
    detail: str = "",
    seconds: float = 0.0,
    locale: str = "en",
    **extra: Any,
) -> ToolResult:
    """`BACKEND_UNAVAILABLE`: the backend could not take or finish the call this time."""
    ran = render(CATALOG, locale, "ran_unknown" if executed == "unknown" else "ran_no")
    text = render(CATALOG, locale, reason, seconds=seconds, ran=ran)
    if reason == "timeout":
        extra = {**extra, "seconds": seconds}
    result = ToolResult.failure(
        ErrorCode.BACKEND_UNAVAILABLE,
        text,
        summary=f"backend unavailable ({reason})",
        metadata=_metadata(reason, executed, True, detail, extra),
    )
    return _named(result, call_id, tool_name)


_OWN = frozenset({"reason", "executed", "retryable", "detail", "seconds"})


def restamp(
    result: ToolResult, call_id: str, tool_name: str, executed: Executed, locale: str = "en"
) -> ToolResult:
    """One failure judged for a host, told to one call.

    Its id and name, whether it may have run (the text says the same as
    `metadata["executed"]`), in the session's language.
    """
    meta = result.metadata
    reason = meta.get("reason")
    extra = {k: v for k, v in meta.items() if k not in _OWN}
    detail = str(meta.get("detail", ""))
    if result.error is ErrorCode.SESSION_LOST and reason in ("host_died", "closed"):
        return lost(
            reason,
            call_id=call_id,
            tool_name=tool_name,
            executed=executed,
            detail=detail,
            locale=locale,
            **extra,
        )
    if result.error is ErrorCode.BACKEND_UNAVAILABLE and reason in (
        "full",
        "no_host",
        "timeout",
        "unreachable",
    ):
        return unavailable(
            reason,
            call_id=call_id,
            tool_name=tool_name,
            executed=executed,
            detail=detail,
            seconds=float(meta.get("seconds", 0.0)),
            locale=locale,
            **extra,
        )
    return replace(
        result, call_id=call_id, tool_name=tool_name, metadata={**meta, "executed": executed}
    )


def _named(result: ToolResult, call_id: str, tool_name: str) -> ToolResult:
    if not call_id and not tool_name:
        return result
    return replace(result, call_id=call_id, tool_name=tool_name)
