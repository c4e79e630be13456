"""What `handrail serve` puts on the MCP wire: tool entries, call results, approval texts.

Pure functions over JSON dicts (no SDK import), so every payload can be snapshot-tested and
the SDK is loaded only when a server actually starts. Texts a model or a user reads come in
English and Chinese.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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
from .._contract import part_to_json
from .._i18n import render
from ..permissions import rules_to_allow

__all__ = [
    "CATALOG",
    "RESULT_META_KEY",
    "approval_message",
    "call_result",
    "content_block",
    "deferred_note",
    "fallback_reason",
    "progress_text",
    "say",
    "title",
    "tool_annotations",
    "tool_entry",
]

RESULT_META_KEY = "handrail/result"
"""The `_meta` key of a call result that carries handrail's machine-readable outcome."""

_OPEN_WORLD_KINDS = frozenset({ToolKind.FETCH, ToolKind.EXECUTE, ToolKind.OTHER})
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
