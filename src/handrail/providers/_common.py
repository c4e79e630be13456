"""What every provider adapter shares: names, JSON access, call ids and result alignment.

Nothing here knows a wire format; the provider modules build on it.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast
from weakref import WeakKeyDictionary

from .. import ConfigurationError, ErrorCode, Interrupted, Tool, ToolCall, ToolResult
from .._i18n import render
from ._strict import denull, openai_strict

__all__ = [
    "PROVIDERS",
    "STRICTNESS",
    "Entry",
    "NoResult",
    "StreamParser",
    "align",
    "as_list",
    "as_map",
    "as_str",
    "check_tools",
    "new_id",
    "openai_arguments",
    "result_text",
    "say",
]

PROVIDERS: tuple[str, ...] = ("openai_chat", "openai_responses", "anthropic", "gemini")
"""The wire formats handrail speaks, by the names `tools_payload` and friends take."""

# Tool-name rules, as each provider documents them:
# - OpenAI (chat and Responses, `FunctionDefinition.name`): "Must be a-z, A-Z, 0-9, or contain
#   underscores and dashes, with a maximum length of 64."
# - Anthropic (`Tool.name`): "Must match the regex ^[a-zA-Z0-9_-]{1,64}$."
# - Gemini (`FunctionDeclaration.name`): "Must start with a letter or an underscore. Must be
#   a-z, A-Z, 0-9, or contain underscores, colons, dots, and dashes, with a maximum length of 64."
_NAME_RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "openai_chat": (
        re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
        "1-64 characters from a-z, A-Z, 0-9, '_' and '-'",
    ),
    "openai_responses": (
        re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
        "1-64 characters from a-z, A-Z, 0-9, '_' and '-'",
    ),
    "anthropic": (
        re.compile(r"^[a-zA-Z0-9_-]{1,64}$"),
        "1-64 characters from a-z, A-Z, 0-9, '_' and '-'",
    ),
    "gemini": (
        re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$"),
        "at most 64 characters from a-z, A-Z, 0-9, '_', '.', ':' and '-', starting with a "
        "letter or '_'",
    ),
}

_CATALOG: dict[str, dict[str, str]] = {
    "en": {
        "waiting": (
            "Not run: `{name}` is waiting for the user's approval ({reason}), which has not "
            "been given. The call had no effect; do not assume it ran. Continue without it, or "
            "ask the user."
        ),
        "behind": (
            "Not run: this call was queued behind another call that is waiting for the user's "
            "approval, which has not been given. The call had no effect; call it again if it "
            "is still needed."
        ),
        "missing": (
            "Not run: no result was recorded for this call. It had no effect; call it again if "
            "it is still needed."
        ),
        "error": "Error ({code}): {content}",
        "empty": "(no output)",
        "too_big": (
            "{note} (not attached: larger than the {limit} this model takes for one attachment)"
        ),
        "over_budget": (
            "{note} (not attached: this turn's attachments already reach the {limit} this model "
            "takes in one request)"
        ),
        "over_count": (
            "{note} (not attached: this turn already has the {limit} attachments this model "
            "takes in one request)"
        ),
        "attached": "From the result of `{name}`:",
        "attached_call": "From the result of `{name}` (call {id}):",
        "chat_images": (
            "The images below come from the results of the tool calls above, not from the user."
        ),
    },
    "zh": {
        "waiting": (
            "未执行:`{name}` 正在等待用户批准({reason}),用户尚未批准。该调用没有产生任何效果,"
            "不要假设它已执行。请在没有它的情况下继续,或询问用户。"
        ),
        "behind": (
            "未执行:该调用排在另一个等待用户批准的调用之后,而用户尚未批准。"
            "该调用没有产生任何效果;如仍需要,请重新调用。"
        ),
        "missing": "未执行:没有记录到该调用的结果。它没有产生任何效果;如仍需要,请重新调用。",
        "error": "错误({code}):{content}",
        "empty": "(无输出)",
        "too_big": "{note}(未附上:超过该模型单个附件 {limit} 的上限)",
        "over_budget": "{note}(未附上:本轮的附件已达到该模型单次请求 {limit} 的上限)",
        "over_count": "{note}(未附上:本轮已有该模型单次请求上限的 {limit} 个附件)",
        "attached": "来自 `{name}` 的结果:",
        "attached_call": "来自 `{name}` 的结果(调用 {id}):",
        "chat_images": "以下图片来自上方工具调用的结果,而不是来自用户。",
    },
}


def say(locale: str, key: str, /, **values: object) -> str:
    """Render one sentence of this layer in `locale` (English when the locale is unknown)."""
    return render(_CATALOG, locale, key, **values)


# -- JSON access -----------------------------------------------------------------------------


def as_map(value: object) -> Mapping[str, Any] | None:
    """`value` as a JSON object, or None when it is not one."""
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def as_list(value: object) -> list[Any]:
    """`value` as a JSON array (empty when it is not one)."""
    return cast(list[Any], value) if isinstance(value, list | tuple) else []


def as_str(value: object) -> str:
    """`value` when it is a string, else `""`."""
    return value if isinstance(value, str) else ""


_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """A call id for a provider that sent none, unique in this process.

    Gemini may omit `functionCall.id`; some OpenAI-compatible servers omit `tool_calls[].id`.
    """
    return f"{prefix}{next(_ids)}"


# -- tools -----------------------------------------------------------------------------------


def check_tools(provider: str, tools: Sequence[Tool]) -> None:
    """Refuse a tool list the provider would reject: a bad name, or two tools with one name."""
    pattern, rule = _NAME_RULES[provider]
    seen: set[str] = set()
    for t in tools:
        if not pattern.match(t.name):
            raise ConfigurationError(
                f"tool name {t.name!r} is not valid for {provider}: use {rule}. "
                f"Rename the tool, or keep it from {provider} with `providers=`."
            )
        if t.name in seen:
            raise ConfigurationError(
                f"two tools are named {t.name!r}; {provider} needs every tool name to be unique"
            )
        seen.add(t.name)


class _Strictness:
    """Per tool, whether its OpenAI schema could be made strict (cached on the schema object)."""

    def __init__(self) -> None:
        self._cache: WeakKeyDictionary[Tool, tuple[object, bool]] = WeakKeyDictionary()

    def strict(self, tool: Tool) -> bool:
        schema = tool.parameters
        hit = self._cache.get(tool)
        if hit is not None and hit[0] is schema:
            return hit[1]
        try:
            ok = openai_strict(schema, tool.name) is not None
        except ConfigurationError:
            ok = False
        self._cache[tool] = (schema, ok)
        return ok


STRICTNESS = _Strictness()


def openai_arguments(
    call_name: str, arguments: str | Mapping[str, Any], tools: Sequence[Tool] | None
) -> str | Mapping[str, Any]:
    """Undo the strict-mode rewrite of a call's arguments.

    OpenAI's strict mode needs every property required, so optional properties are sent as
    nullable and the model answers `null` for "not given". Here such a `null` is dropped again
    (only where the tool's own schema does not allow null), so the tool's default applies and
    validation sees what the tool declared. Malformed JSON is left as it is: the runtime reports
    it with its position.
    """
    if not tools:
        return arguments
    tool = next((t for t in tools if call_name == t.name or call_name in t.aliases), None)
    if tool is None or not STRICTNESS.strict(tool):
        return arguments
    data: Any = arguments
    if isinstance(arguments, str):
        if "null" not in arguments:
            return arguments  # nothing to undo (most calls): no parse
        try:
            data = json.loads(arguments)
        except ValueError:
            return arguments
    if not isinstance(data, dict):
        return arguments
    cleaned = denull(cast(dict[str, Any], data), tool.parameters)
    if cleaned == data:
        return arguments
    return json.dumps(cleaned, ensure_ascii=False) if isinstance(arguments, str) else cleaned


def openai_strict_schema(tool: Tool) -> dict[str, Any] | None:
    """The tool's parameters as OpenAI strict mode takes them, or None when it cannot.

    Optional properties become required and nullable (strict mode needs every property
    required), so a model answers `null` for "not given"; pass its arguments through
    `undo_strict_nulls` before running the call. For a host that builds OpenAI tool
    definitions itself (openai-agents' `FunctionTool(strict_json_schema=True)`, say): the SDKs'
    own strict transforms make optional properties required without making them nullable, so
    the model has to invent a value. None: send `tool.parameters` with strict mode off.
    """
    return openai_strict(tool.parameters, tool.name)


def undo_strict_nulls(tool: Tool, arguments: str | Mapping[str, Any]) -> str | Mapping[str, Any]:
    """Undo `openai_strict_schema` on a model's arguments for `tool`: a `null` becomes "not given".

    Only where the tool's own schema has no null, at any depth, so its defaults apply. Text
    comes back as text, a mapping as a mapping; malformed JSON, or arguments with nothing to
    undo, come back unchanged (the runtime reports malformed JSON with its position).
    """
    return openai_arguments(tool.name, arguments, (tool,))


# -- stream parsers --------------------------------------------------------------------------


class StreamParser(Protocol):
    """Turns a provider's stream events into `ToolCall`s, each as soon as it is complete.

    `feed` returns the calls an event completed (usually none, sometimes one, in request
    order); hand each to `StreamingExecutor.submit` at once. `finish` returns the calls still
    open when the stream ended. `calls` lists every call handed over so far.
    """

    @property
    def calls(self) -> list[ToolCall]:
        """Every call handed over so far, in request order."""
        ...

    def feed(self, event: Mapping[str, Any]) -> list[ToolCall]:
        """Take one decoded stream event; return the calls it completed."""
        ...

    def finish(self) -> list[ToolCall]:
        """The stream ended: return the calls still open (their arguments as received)."""
        ...


# -- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NoResult(ToolResult):
    """Stands in for the result of a call the host has none for (it did not run)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One call of the turn and the result that answers it."""

    call_id: str
    name: str
    """The tool name as the model wrote it (Gemini matches responses by it)."""
    result: ToolResult


def align(
    results: Sequence[ToolResult], calls: Sequence[ToolCall] | None, locale: str
) -> list[Entry]:
    """Pair every call of a turn with exactly one result, in request order.

    `results` may be a `Batch` (its calls are used when `calls` is not given). With calls, a
    call that has no result gets a CANCELLED "not run" result, so no provider rejects the
    transcript for an unanswered call; a result for a call that is not in `calls`, or two
    results for one call, are programming errors.
    """
    if calls is None:
        batch_calls = getattr(results, "calls", None)
        if isinstance(batch_calls, tuple):
            calls = cast(tuple[ToolCall, ...], batch_calls)
    if calls is None:
        entries: list[Entry] = []
        seen: set[str] = set()
        for r in results:
            if not r.call_id:
                raise ConfigurationError(
                    f"a result of {r.tool_name or 'a tool'!r} has no call_id; pass `calls=` "
                    "so results can be matched to the model's calls"
                )
            if r.call_id in seen:
                raise ConfigurationError(f"two results answer call {r.call_id!r}")
            seen.add(r.call_id)
            entries.append(Entry(r.call_id, r.tool_name, r))
        return entries
    by_id: dict[str, ToolResult] = {}
    for r in results:
        if r.call_id in by_id:
            raise ConfigurationError(f"two results answer call {r.call_id!r}")
        by_id[r.call_id] = r
    ids = [c.id for c in calls]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigurationError(f"two calls share the id {dup!r}; call ids must be unique")
    stray = [i for i in by_id if i not in set(ids)]
    if stray:
        raise ConfigurationError(
            f"result for call {stray[0]!r}, which is not one of this turn's calls"
        )
    entries = []
    for c in calls:
        r = by_id.get(c.id)
        if r is None:
            r = NoResult(
                ok=False,
                content=say(locale, "missing"),
                error=ErrorCode.CANCELLED,
                call_id=c.id,
                tool_name=c.name,
            )
        entries.append(Entry(c.id, c.name, r))
    return entries


def result_text(result: ToolResult, locale: str, *, mark_errors: bool = False) -> str:
    """What the model reads for a result.

    An `Interrupted` result is sent when the host moves on without the user's answer, so it
    says the call did not run and approval has not been given (rather than "wait"). With
    `mark_errors` (providers with no error flag: OpenAI), a failure starts with its code.
    """
    if isinstance(result, Interrupted):
        if result.approval is not None:
            return say(
                locale, "waiting", name=result.approval.tool_name, reason=result.approval.reason
            )
        return say(locale, "behind")
    content = result.content or say(locale, "empty")
    if mark_errors and not result.ok and not isinstance(result, NoResult):
        return say(locale, "error", code=result.error or ErrorCode.EXECUTION_ERROR, content=content)
    return content
