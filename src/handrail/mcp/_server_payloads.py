"""What `handrail serve` puts on the MCP wire: tool entries, call results, approval texts.

Pure functions over JSON dicts (no SDK import), so every payload can be snapshot-tested and
the SDK is loaded only when a server actually starts; `ProgressNumbers`, a call's progress
values, is the one piece of state. Texts a model or a user reads come in English and
Chinese. The checkpoint tools' entries, the question a restore puts to the user and their
results (`serve(offer_restore=True)`) are here too.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from .. import (
    ApprovalRequest,
    Confirmation,
    ContentPart,
    FetchUrl,
    PermissionRequest,
    ProgressEvent,
    Question,
    ReadPath,
    RunCommand,
    SwitchMode,
    Tool,
    ToolKind,
    ToolResult,
    WritePath,
)
from .._contract import ErrorCode, part_to_json
from .._i18n import render
from ..display import terminal_text
from ..permissions import rules_to_allow
from ..sandbox import Checkpoint, Restored, RestorePlan

__all__ = [
    "CATALOG",
    "CHECKPOINTS_META_KEY",
    "CHECKPOINT_TOOLS",
    "LIST_CHECKPOINTS",
    "RESTORE_CHECKPOINT",
    "RESTORE_META_KEY",
    "RESULT_META_KEY",
    "ProgressNumbers",
    "approval_message",
    "call_result",
    "checkpoint_tool_entries",
    "checkpoints_result",
    "content_block",
    "deferred_note",
    "fallback_reason",
    "progress_text",
    "restore_question",
    "restore_refused",
    "restore_result",
    "say",
    "title",
    "tool_annotations",
    "tool_entry",
]

RESULT_META_KEY = "handrail/result"
"""The `_meta` key of a call result that carries handrail's machine-readable outcome."""

CHECKPOINTS_META_KEY = "handrail/checkpoints"
"""The `_meta` key of a `list_checkpoints` result: the checkpoints as data."""
RESTORE_META_KEY = "handrail/restore"
"""The `_meta` key of a `restore_checkpoint` result: what the restore did, as data."""
LIST_CHECKPOINTS = "list_checkpoints"
RESTORE_CHECKPOINT = "restore_checkpoint"
CHECKPOINT_TOOLS = frozenset({LIST_CHECKPOINTS, RESTORE_CHECKPOINT})
"""The tools `serve(offer_restore=True)` adds: answered by the server, not the registry."""

_OPEN_WORLD_KINDS = frozenset({ToolKind.FETCH, ToolKind.EXECUTE, ToolKind.OTHER})
_NAMES_SHOWN = 10
"""Paths a line, a question or a result names before "and N more"."""
_PROGRESS_CHARS = 200
_ARGS_CHARS = 500

CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "ask_fallback": (
            "`{name}` needs the user's approval ({reason}), and this MCP client cannot ask its "
            "user (it does not support elicitation); the server's operator can allow such calls "
            "with the allow rule {rule} (handrail serve --allow)"
        ),
        "declined": "the user declined `{name}` in the MCP client",
        "dismissed": "the user dismissed the approval request for `{name}` without allowing it",
        "ask_failed": "the approval request for `{name}` could not reach the user ({detail})",
        "question": "handrail: {reason}\nAccept answers yes; decline answers no.",
        "tool_asks": "The tool `{name}` asks, while it runs (this is not a call's approval).",
        "question_fallback": (
            "nobody could be asked ({reason}): this MCP client cannot ask its user (it does "
            "not support elicitation)"
        ),
        "cancelled": "The MCP client cancelled the call.",
        "ask": (
            "handrail: allow `{name}` to {what}?\n"
            "Why it asks: {reason}.\n"
            "Accept runs this call once; decline refuses it."
        ),
        "run": "run `{command}`",
        "write": "write `{path}`",
        "read": "read `{path}`",
        "fetch": "fetch {url}",
        "switch": "switch to {mode} mode",
        "plan": "The plan:\n{plan}",
        "args": "run with the arguments {args}",
        "and": "; ",
        "by_agent": "The sub-agent {agent} asks.",
        "deferred": (
            "More tools exist but are not listed yet. To use one, call tool_search with query "
            '"select:<name>" (or keywords), then call it. Not yet listed: {names}.'
        ),
        "cp_none": (
            "This session has no checkpoints yet: one is taken before each call that changes "
            "files (a file edit, a shell command), once that call has changed something."
        ),
        "cp_head": (
            "Checkpoints of this session, oldest first. Each is the state of the files just "
            "before the call it names; restore_checkpoint with its id puts the files back as "
            "they were then (the user is asked to confirm)."
        ),
        "cp_line": "{id}. {when}, before {label}; changed after it: {paths}",
        "cp_outside": " (changed outside this session: {paths})",
        "when": "{time}, {ago} ago",
        "secs": "{n} s",
        "mins": "{n} min",
        "hours": "{n} h",
        "days": "{n} d",
        "more": "{names} and {count} more",
        "list_sep": ", ",
        "restore_ask": (
            "handrail: restore the files to checkpoint {id} ({when}, before {label})?\n"
            "It puts {count} path(s) back as they were then: {paths}."
        ),
        "restore_ask_scope": "Only under: {paths}.",
        "restore_ask_outside": (
            "Changed outside this session since (by hand or by another program); those changes "
            "would be lost: {paths}."
        ),
        "restore_ask_not_kept": "These cannot be put back and are left as they are: {items}.",
        "restore_ask_end": (
            "The MCP client's model asked for this restore. Accept restores the files (the "
            "restore can be undone); decline changes nothing."
        ),
        "why": "{path} ({why})",
        "restored": (
            "Restored checkpoint {id}: {count} path(s) are back as they were then: {paths}."
        ),
        "restored_overwrote": (
            "The user agreed to overwrite changes made outside this session to: {paths}."
        ),
        "restored_left": "Left as they are: {items}.",
        "restored_undo": (
            "To undo this restore, restore checkpoint {undo}. Read a restored file again "
            "before you edit it."
        ),
        "restore_nothing": "Nothing to restore: the files already match checkpoint {id}.",
        "restore_nothing_under": (
            "Nothing to restore: the files under {paths} already match checkpoint {id}."
        ),
        "restore_not_done": "Nothing was restored: {reason}.",
        "restore_cannot_ask": (
            "restoring needs the user's confirmation, and this MCP client cannot ask its user "
            "(it does not support elicitation)"
        ),
        "restore_unknown": (
            "there is no checkpoint {id} in this session; list_checkpoints shows the ones there are"
        ),
    },
    "zh": {
        "ask_fallback": (
            "`{name}` 需要用户批准({reason}),但这个 MCP 客户端无法询问用户(它不支持 "
            "elicitation);服务器的管理者可以用允许规则放行这类调用,例如 {rule}"
            "(handrail serve --allow)"
        ),
        "declined": "用户在 MCP 客户端中拒绝了 `{name}`",
        "dismissed": "用户关闭了 `{name}` 的批准请求,没有允许它",
        "ask_failed": "`{name}` 的批准请求未能送达用户({detail})",
        "question": "handrail:{reason}\n接受即回答“是”;拒绝即回答“否”。",
        "tool_asks": "工具 `{name}` 在运行中提问(这不是对调用的批准)。",
        "question_fallback": (
            "无法询问任何人({reason}):这个 MCP 客户端无法询问用户(它不支持 elicitation)"
        ),
        "cancelled": "MCP 客户端取消了该调用。",
        "ask": (
            "handrail:允许 `{name}` {what} 吗?\n"
            "需要批准的原因:{reason}。\n"
            "接受则只执行这一次调用;拒绝则不执行。"
        ),
        "run": "运行 `{command}`",
        "write": "写入 `{path}`",
        "read": "读取 `{path}`",
        "fetch": "获取 {url}",
        "switch": "切换到 {mode} 模式",
        "plan": "计划:\n{plan}",
        "args": "以参数 {args} 运行",
        "and": ";",
        "by_agent": "子代理 {agent} 发出请求。",
        "deferred": (
            '还有一些工具尚未列出。要使用其中一个，请先用查询 "select:<名称>"（或关键词）'
            "调用 tool_search，然后再调用它。尚未列出的工具：{names}。"
        ),
        "cp_none": (
            "本会话还没有检查点:每次会修改文件的调用(编辑文件、shell 命令)之前都会记录一个,"
            "前提是该调用确实改动了内容。"
        ),
        "cp_head": (
            "本会话的检查点,从旧到新。每个检查点是其所列调用执行之前的文件状态;"
            "用 restore_checkpoint 加上其编号,可把文件恢复到当时的样子(会先请用户确认)。"
        ),
        "cp_line": "{id}. {when},在 {label} 之前;之后改动了:{paths}",
        "cp_outside": "(在本会话之外改动的:{paths})",
        "when": "{time},{ago}前",
        "secs": "{n} 秒",
        "mins": "{n} 分钟",
        "hours": "{n} 小时",
        "days": "{n} 天",
        "more": "{names} 等另外 {count} 个",
        "list_sep": "、",
        "restore_ask": (
            "handrail:把文件恢复到检查点 {id}({when},在 {label} 之前)吗?\n"
            "将有 {count} 个路径恢复为当时的样子:{paths}。"
        ),
        "restore_ask_scope": "仅限:{paths}。",
        "restore_ask_outside": (
            "以下路径此后在本会话之外被改动过(手动或由其他程序),这些改动将会丢失:{paths}。"
        ),
        "restore_ask_not_kept": "以下路径无法恢复,将保持原样:{items}。",
        "restore_ask_end": (
            "这次恢复是 MCP 客户端的模型请求的。接受则恢复文件(恢复可以撤销);拒绝则不做任何改动。"
        ),
        "why": "{path}({why})",
        "restored": "已恢复到检查点 {id}:{count} 个路径已恢复为当时的样子:{paths}。",
        "restored_overwrote": "用户同意覆盖在本会话之外对以下路径所做的改动:{paths}。",
        "restored_left": "保持原样:{items}。",
        "restored_undo": "要撤销这次恢复,请恢复检查点 {undo}。编辑已恢复的文件之前,请重新读取它。",
        "restore_nothing": "无需恢复:文件已与检查点 {id} 一致。",
        "restore_nothing_under": "无需恢复:{paths} 下的文件已与检查点 {id} 一致。",
        "restore_not_done": "没有恢复任何内容:{reason}。",
        "restore_cannot_ask": (
            "恢复需要用户确认,但这个 MCP 客户端无法询问用户(它不支持 elicitation)"
        ),
        "restore_unknown": "本会话中没有检查点 {id};用 list_checkpoints 查看现有的检查点",
    },
}


def say(locale: str, key: str, /, **values: object) -> str:
    """Render `key` from `CATALOG` in `locale` (English when the locale is unknown)."""
    return render(CATALOG, locale, key, **values)


def title(tool: Tool) -> str:
    """A readable title: the tool's own `title` attribute, else its name in words.

    `read_file` becomes "Read file"; `mcp__github__search` becomes "Mcp github search".
    """
    own = getattr(tool, "title", None)
    if isinstance(own, str) and own.strip():
        return own.strip()
    words = [w for w in re.split(r"[_\-\s]+", tool.name) if w]
    text = " ".join(words) or tool.name
    return text[:1].upper() + text[1:]


def tool_annotations(tool: Tool) -> dict[str, Any]:
    """MCP tool annotations from the tool's flags, reporting the safe side.

    A flag that depends on the input counts as its risky value: read-only and idempotent only
    when they hold for every input, destructive unless it is false for every input. Open world
    comes from a tool's `open_world` attribute when it has one, else from its kind (shell,
    fetch and unclassified tools may reach anything).
    """
    own = getattr(tool, "open_world", None)
    open_world = own if isinstance(own, bool) else tool.kind in _OPEN_WORLD_KINDS
    return {
        "title": title(tool),
        "readOnlyHint": tool.read_only is True,
        "destructiveHint": tool.destructive is not False,
        "idempotentHint": tool.idempotent is True,
        "openWorldHint": open_world,
    }


def tool_entry(tool: Tool) -> dict[str, Any]:
    """One `tools/list` entry: the tool's raw JSON Schema as `inputSchema`, with annotations."""
    schema = tool.parameters
    if "type" not in schema:
        # MCP requires an object schema at the top; a raw schema may leave the type implicit.
        schema = {"type": "object", **schema}
    entry: dict[str, Any] = {
        "name": tool.name,
        "title": title(tool),
        "description": tool.description,
        "inputSchema": schema,
        "annotations": tool_annotations(tool),
    }
    if tool.output_schema is not None:
        entry["outputSchema"] = dict(tool.output_schema)
    return entry


def deferred_note(names: list[str], locale: str) -> str:
    """The sentence of the server's instructions that names the deferred tools."""
    return say(locale, "deferred", names=", ".join(names))


def content_block(part: ContentPart) -> dict[str, Any]:
    """One MCP content block for a part, with its annotations and `_meta` as they came."""
    return part_to_json(part)


def call_result(result: ToolResult) -> dict[str, Any]:
    """A `tools/call` result: the content, `isError`, and handrail's outcome in `_meta`.

    The content is the result's parts when it has some (images, audio, resources, as the tool
    or the upstream MCP server produced them), else its text. `structuredContent` is sent only
    when the result has structured content (a tool with an output schema, or an upstream tool
    that sent it): handrail's own tools return text written for the model, and some clients
    hand structured content to the model instead. Programs read the error code, issues and
    denial from `_meta["handrail/result"]`.
    """
    outcome: dict[str, Any] = {
        "ok": result.ok,
        "error": result.error.value if result.error is not None else None,
        "summary": result.summary,
        "durationMs": round(result.duration * 1000, 3),
    }
    if result.diff:
        outcome["diff"] = result.diff
    if result.issues:
        outcome["issues"] = [
            {"path": i.path, "expected": i.expected, "received": i.received, "message": i.message}
            for i in result.issues
        ]
    if result.denial is not None:
        outcome["denial"] = {
            "reason": result.denial.reason,
            "source": result.denial.source,
            "rule": result.denial.rule,
        }
    content = (
        [content_block(p) for p in result.parts]
        if result.parts
        else [{"type": "text", "text": result.content}]
    )
    payload: dict[str, Any] = {
        "content": content,
        "isError": not result.ok,
        "_meta": {RESULT_META_KEY: outcome},
    }
    if result.structured is not None:
        payload["structuredContent"] = dict(result.structured)
    return payload


def _describe(locale: str, q: PermissionRequest) -> str | None:
    if isinstance(q, RunCommand):
        return say(locale, "run", command=q.command)
    if isinstance(q, WritePath):
        return say(locale, "write", path=q.path)
    if isinstance(q, ReadPath):
        return say(locale, "read", path=q.path)
    if isinstance(q, FetchUrl):
        return say(locale, "fetch", url=q.url)
    if isinstance(q, SwitchMode):
        return say(locale, "switch", mode=q.mode)
    return None


def _arguments(arguments: str | Mapping[str, Any]) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= _ARGS_CHARS else text[: _ARGS_CHARS - 1] + "…"


def approval_message(request: Question, locale: str) -> str:
    """The question shown to the client's user (elicitation): a call's approval, or another."""
    if not isinstance(request, ApprovalRequest):
        name = request.tool_name if isinstance(request, Confirmation) else ""
        text = say(locale, "question", reason=request.reason.rstrip())
        if name:
            text = say(locale, "tool_asks", name=name) + "\n" + text
        if request.agent:
            text = say(locale, "by_agent", agent=request.agent) + "\n" + text
        return text
    parts = [d for d in (_describe(locale, q) for q in request.requests) if d]
    what = (
        say(locale, "and").join(parts)
        if parts
        else say(locale, "args", args=_arguments(request.call.arguments))
    )
    text = say(locale, "ask", name=request.tool_name, what=what, reason=request.reason.rstrip("."))
    plans = [q.plan for q in request.requests if isinstance(q, SwitchMode) and q.plan]
    if request.agent:
        text = say(locale, "by_agent", agent=request.agent) + "\n" + text
    return "\n\n".join([text, *(say(locale, "plan", plan=p) for p in plans)])


def fallback_reason(request: Question, locale: str) -> str:
    """Why a call that asks (or a question) is denied when the client cannot ask its user."""
    if not isinstance(request, ApprovalRequest):
        return say(locale, "question_fallback", reason=request.reason.rstrip("."))
    return say(
        locale,
        "ask_fallback",
        name=request.tool_name,
        reason=request.reason.rstrip("."),
        rule=" + ".join(f"`{r}`" for r in rules_to_allow(request)),
    )


def progress_text(event: ProgressEvent) -> str:
    """One line for a progress notification: the latest output line when the tool sent lines."""
    lines = event.data.get("lines")
    text = event.message
    if isinstance(lines, list) and lines:
        last: object = lines[-1]  # pyright: ignore[reportUnknownVariableType]
        if isinstance(last, str) and last.strip():
            text = last.strip()
    return text if len(text) <= _PROGRESS_CHARS else text[: _PROGRESS_CHARS - 1] + "…"


def _number(value: object) -> float | None:
    """A finite JSON number as a float; None for anything else (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class ProgressNumbers:
    """The `progress` and `total` of one call's progress notifications, in order.

    A tool's report with a number (`ctx.progress(..., progress=3, total=10)`, or an upstream
    MCP server's notification) goes out as reported, with its `total` when it has one. MCP
    requires every notification's `progress` to be above the last one, so:

    - reports with no number, before any with one, are counted: 1, 2, 3, with no total;
    - a report that would not rise (no number after numbered ones, or a number that goes
      back or repeats) rises by the least a float can above the last value sent, with the
      total it reports (a report without a number: the last total sent), so the client's bar
      stays where it was and the report's message still arrives.

    Invariant: the values returned rise strictly, and a rising number is never changed.
    """

    def __init__(self) -> None:
        self._last: float | None = None
        self._total: float | None = None
        self._counting = True  # only reports without numbers so far: the values are a count

    def next(self, event: ProgressEvent) -> tuple[float, float | None]:
        """The `progress` and `total` to send for `event`, the next report of the call."""
        own = _number(event.data.get("progress"))
        if own is not None:
            self._counting = False
            self._total = _number(event.data.get("total"))
            if self._last is None or own > self._last:
                self._last = own
                return own, self._total
        elif self._counting:
            self._last = (self._last or 0.0) + 1.0
            return self._last, None
        assert self._last is not None  # a report with a number has been sent
        self._last = math.nextafter(self._last, math.inf)
        return self._last, self._total


# -- checkpoints (serve(offer_restore=True)) ------------------------------------------------

_LIST_DESCRIPTION = (
    "List this session's checkpoints, oldest first. A checkpoint is the state of the "
    "workspace's files just before a call of this session changed them (a file edit, a shell "
    "command); each shows its id, the call that came next, when, and the files changed after "
    "it. Read-only. To put files back, call restore_checkpoint with an id: the user is asked "
    "to confirm every restore."
)
_RESTORE_DESCRIPTION = (
    "Put the workspace's files back as they were at one of this session's checkpoints (see "
    "list_checkpoints): changed files get their earlier content, deleted ones come back, files "
    "made since are removed. With `paths`, only those files or folders. The user is asked to "
    "confirm in their MCP client every time, and nothing changes unless they accept; use it "
    "when the user wants earlier files back, not to clean up your own mistakes unasked. The "
    "result says what changed, what was left as it is, and the checkpoint that undoes the "
    "restore."
)
RESTORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "checkpoint": {
            "type": "integer",
            "minimum": 1,
            "description": "The checkpoint's id, from list_checkpoints.",
        },
        "paths": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": (
                "Restore only these files or folders (relative to the workspace root). "
                "Default: every file that differs."
            ),
        },
    },
    "required": ["checkpoint"],
    "additionalProperties": False,
}
"""The arguments of `restore_checkpoint`."""


def checkpoint_tool_entries() -> list[dict[str, Any]]:
    """The `tools/list` entries of `list_checkpoints` and `restore_checkpoint`."""
    return [
        {
            "name": LIST_CHECKPOINTS,
            "title": "List checkpoints",
            "description": _LIST_DESCRIPTION,
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "annotations": {
                "title": "List checkpoints",
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        {
            "name": RESTORE_CHECKPOINT,
            "title": "Restore checkpoint",
            "description": _RESTORE_DESCRIPTION,
            "inputSchema": RESTORE_SCHEMA,
            "annotations": {
                "title": "Restore checkpoint",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": False,
                "openWorldHint": False,
            },
        },
    ]


def _code(text: str) -> str:
    """A path or label in backticks, on one line, nothing in it acting on the reader.

    Names and labels come from the workspace and the model: a name with new lines must not
    write lines of its own into a question a person answers.
    """
    return "`" + terminal_text(text, multiline=False).replace("`", "'") + "`"


def _names(locale: str, paths: Sequence[str]) -> str:
    sep = say(locale, "list_sep")
    paths = sorted(paths)
    shown = sep.join(_code(p) for p in paths[:_NAMES_SHOWN])
    if len(paths) <= _NAMES_SHOWN:
        return shown
    return say(locale, "more", names=shown, count=len(paths) - _NAMES_SHOWN)


def _reasons(locale: str, items: Sequence[tuple[str, str]]) -> str:
    sep = say(locale, "list_sep")
    shown = sep.join(say(locale, "why", path=_code(p), why=w) for p, w in items[:_NAMES_SHOWN])
    if len(items) <= _NAMES_SHOWN:
        return shown
    return say(locale, "more", names=shown, count=len(items) - _NAMES_SHOWN)


def _ago(locale: str, seconds: float) -> str:
    n = max(0, int(seconds))
    if n < 60:
        return say(locale, "secs", n=n)
    if n < 3600:
        return say(locale, "mins", n=n // 60)
    if n < 86400:
        return say(locale, "hours", n=n // 3600)
    return say(locale, "days", n=n // 86400)


def _when(locale: str, at: float, now: float, tz: tzinfo | None) -> str:
    moment = datetime.fromtimestamp(at, tz) if tz is not None else datetime.fromtimestamp(at)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    return say(locale, "when", time=text, ago=_ago(locale, now - at))


def _checkpoint_data(cp: Checkpoint) -> dict[str, Any]:
    return {
        "id": cp.id,
        "at": cp.at,
        "label": cp.label,
        "tool": cp.tool,
        "callId": cp.call_id,
        "changed": list(cp.changed),
        "outside": list(cp.outside),
    }


def _text_result(text: str, *, key: str, data: Any, summary: str) -> dict[str, Any]:
    payload = call_result(ToolResult.success(text, summary=summary))
    payload["_meta"][key] = data
    return payload


def checkpoints_result(
    checkpoints: Sequence[Checkpoint],
    locale: str,
    *,
    now: float | None = None,
    tz: tzinfo | None = None,
) -> dict[str, Any]:
    """The `list_checkpoints` result: one line per checkpoint, and the data in `_meta`.

    Times are local (`tz` to choose another zone) with how long ago (`now`: default, now).
    """
    clock = time.time() if now is None else now
    if not checkpoints:
        text = say(locale, "cp_none")
    else:
        lines = [say(locale, "cp_head")]
        for cp in checkpoints:
            line = say(
                locale,
                "cp_line",
                id=cp.id,
                when=_when(locale, cp.at, clock, tz),
                label=_code(cp.label),
                paths=_names(locale, cp.changed),
            )
            if cp.outside:
                line += say(locale, "cp_outside", paths=_names(locale, cp.outside))
            lines.append(line)
        text = "\n".join(lines)
    data = [_checkpoint_data(cp) for cp in checkpoints]
    return _text_result(
        text, key=CHECKPOINTS_META_KEY, data=data, summary=f"{len(checkpoints)} checkpoint(s)"
    )


def restore_question(
    plan: RestorePlan,
    checkpoint: Checkpoint,
    locale: str,
    *,
    scope: Sequence[str] | None = None,
    now: float | None = None,
    tz: tzinfo | None = None,
) -> str:
    """What the user is asked before a restore: what it puts back, overwrites and leaves."""
    clock = time.time() if now is None else now
    lines = [
        say(
            locale,
            "restore_ask",
            id=checkpoint.id,
            when=_when(locale, checkpoint.at, clock, tz),
            label=_code(checkpoint.label),
            count=len(plan.paths),
            paths=_names(locale, plan.paths),
        )
    ]
    if scope:
        lines.append(say(locale, "restore_ask_scope", paths=_names(locale, scope)))
    if plan.outside:
        lines.append(say(locale, "restore_ask_outside", paths=_names(locale, plan.outside)))
    if plan.not_kept:
        lines.append(say(locale, "restore_ask_not_kept", items=_reasons(locale, plan.not_kept)))
    lines.append(say(locale, "restore_ask_end"))
    return "\n".join(lines)


def _restore_data(restored: Restored) -> dict[str, Any]:
    return {
        "checkpoint": restored.checkpoint,
        "changed": sorted(restored.changed),
        "overwritten": sorted(restored.overwritten),
        "left": [{"path": p, "why": w} for p, w in restored.left],
        "undo": restored.undo,
        "refused": restored.refused,
    }


def restore_result(
    restored: Restored, locale: str, *, scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """The `restore_checkpoint` result once the user agreed: what changed, was left, the undo."""
    if restored.refused is not None:
        return restore_refused(restored.checkpoint, restored.refused, locale, restored=restored)
    if not restored.changed and not restored.left:
        key = "restore_nothing_under" if scope else "restore_nothing"
        text = say(locale, key, id=restored.checkpoint, paths=_names(locale, scope or ()))
        return _text_result(
            text, key=RESTORE_META_KEY, data=_restore_data(restored), summary="nothing to restore"
        )
    lines = [
        say(
            locale,
            "restored",
            id=restored.checkpoint,
            count=len(restored.changed),
            paths=_names(locale, restored.changed),
        )
    ]
    if restored.overwritten:
        lines.append(say(locale, "restored_overwrote", paths=_names(locale, restored.overwritten)))
    if restored.left:
        lines.append(say(locale, "restored_left", items=_reasons(locale, restored.left)))
    if restored.undo is not None:
        lines.append(say(locale, "restored_undo", undo=restored.undo))
    return _text_result(
        "\n".join(lines),
        key=RESTORE_META_KEY,
        data=_restore_data(restored),
        summary=f"restored checkpoint {restored.checkpoint}",
    )


def restore_refused(
    checkpoint: int, reason: str, locale: str, *, restored: Restored | None = None
) -> dict[str, Any]:
    """A restore that changed nothing (declined, nobody to ask, outside changes not agreed)."""
    result = ToolResult.failure(
        ErrorCode.PERMISSION_DENIED,
        say(locale, "restore_not_done", reason=reason.rstrip(".")),
        summary="not restored",
    )
    payload = call_result(result)
    payload["_meta"][RESTORE_META_KEY] = _restore_data(
        restored or Restored(checkpoint=checkpoint, undo=None, refused=reason)
    )
    return payload
