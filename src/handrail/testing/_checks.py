"""What a real provider refuses with a 400: unpaired tool calls and results, missing fields.

Malformed tool-result content (a block type or media type the provider does not take, base64
that does not decode) is checked in `_content_checks`.

Each check takes a parsed request body and returns the problems found, as sentences
(empty when the request is sound). They are stricter than no provider: every rule here
is one the provider documents or enforces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ._content_checks import CONTENT_CHECKS
from ._render import arr, obj, text

__all__ = ["CHECKS", "check"]


def _ids(ids: list[str]) -> str:
    return ", ".join(ids)


def _model(body: dict[str, Any]) -> list[str]:
    return [] if text(body.get("model")) else ["no `model` in the request"]


def _messages(body: dict[str, Any], key: str) -> list[Any] | None:
    return arr(body.get(key)) or None


def check_openai_chat(body: dict[str, Any]) -> list[str]:
    """Every assistant `tool_calls[].id` gets one `role: tool` message before anything else."""
    problems = _model(body)
    messages = _messages(body, "messages")
    if messages is None:
        return [*problems, "`messages` must be a non-empty list"]
    pending: dict[str, None] = {}
    answered: set[str] = set()
    seen: set[str] = set()
    for i, raw in enumerate(messages):
        message = obj(raw)
        if message is None:
            problems.append(f"messages[{i}] is not an object")
            continue
        role = text(message.get("role"))
        if role == "tool":
            call_id = text(message.get("tool_call_id"))
            if not call_id:
                problems.append(f"messages[{i}]: a tool message without `tool_call_id`")
            elif call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"messages[{i}]: tool call {call_id} is answered twice")
            else:
                problems.append(f"messages[{i}]: a tool result for unknown call {call_id}")
            continue
        if pending:
            problems.append(
                f"messages[{i}] ({role or 'no role'}): tool calls {_ids(list(pending))} "
                "have no tool message before it"
            )
            pending.clear()
        if role == "assistant":
            for raw_call in arr(message.get("tool_calls")):
                call_id = text((obj(raw_call) or {}).get("id"))
                if not call_id:
                    problems.append(f"messages[{i}]: a tool call without `id`")
                elif call_id in seen:
                    problems.append(f"messages[{i}]: tool call id {call_id} is used twice")
                else:
                    seen.add(call_id)
                    pending[call_id] = None
    if pending:
        problems.append(f"tool calls {_ids(list(pending))} are never answered")
    return problems


def check_openai_responses(body: dict[str, Any]) -> list[str]:
    """Every `function_call.call_id` gets one `function_call_output` before the next message.

    With `previous_response_id` (or `conversation`) the calls live on the server, so an
    output for a call not in `input` is not a problem.
    """
    problems = _model(body)
    if isinstance(body.get("input"), str):
        return problems
    items = _messages(body, "input")
    if items is None:
        return [*problems, "`input` must be a string or a non-empty list"]
    stored = bool(body.get("previous_response_id") or body.get("conversation"))
    pending: dict[str, None] = {}
    answered: set[str] = set()
    seen: set[str] = set()
    for i, raw in enumerate(items):
        item = obj(raw)
        if item is None:
            problems.append(f"input[{i}] is not an object")
            continue
        kind = text(item.get("type")) or ("message" if "role" in item else "")
        call_id = text(item.get("call_id"))
        if kind == "function_call":
            if not call_id:
                problems.append(f"input[{i}]: a function_call without `call_id`")
            elif call_id in seen:
                problems.append(f"input[{i}]: call_id {call_id} is used twice")
            else:
                seen.add(call_id)
                pending[call_id] = None
        elif kind == "function_call_output":
            if not call_id:
                problems.append(f"input[{i}]: a function_call_output without `call_id`")
            elif call_id in pending:
                del pending[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(f"input[{i}]: call {call_id} is answered twice")
            elif not stored:
                problems.append(f"input[{i}]: an output for unknown call {call_id}")
        elif kind == "message" and pending:
            problems.append(
                f"input[{i}] (message): calls {_ids(list(pending))} have no "
                "function_call_output before it"
            )
            pending.clear()
    if pending:
        problems.append(f"calls {_ids(list(pending))} are never answered")
    return problems


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in (obj(x) for x in arr(content)) if b is not None]


def check_anthropic(body: dict[str, Any]) -> list[str]:
    """Roles alternate from `user`; each `tool_use` is answered in the very next message.

    That next message is a user message whose `tool_result` blocks come first, one per
    `tool_use` of the previous message and none for any other id.
    """
    problems = _model(body)
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        problems.append("no `max_tokens` in the request (Anthropic requires it)")
    messages = _messages(body, "messages")
    if messages is None:
        return [*problems, "`messages` must be a non-empty list"]
    expected: list[str] = []
    seen: set[str] = set()
    previous_role = ""
    for i, raw in enumerate(messages):
        message = obj(raw)
        if message is None:
            problems.append(f"messages[{i}] is not an object")
            continue
        role = text(message.get("role"))
        if role not in ("user", "assistant"):
            problems.append(f"messages[{i}]: role must be user or assistant, not {role!r}")
        elif i == 0 and role != "user":
            problems.append("messages[0]: the first message must be a user message")
        elif role == previous_role:
            problems.append(f"messages[{i}]: two {role} messages in a row")
        blocks = _blocks(message)
        results = [text(b.get("tool_use_id")) for b in blocks if b.get("type") == "tool_result"]
        if expected:
            missing = [x for x in expected if x not in results] if role == "user" else expected
            if missing:
                problems.append(
                    f"messages[{i}]: tool_use ids {_ids(missing)} have no tool_result in the "
                    "message right after them"
                )
        if results:
            if role != "user":
                problems.append(f"messages[{i}]: tool_result blocks in an {role} message")
            first = [b.get("type") == "tool_result" for b in blocks[: len(results)]]
            if not all(first):
                problems.append(f"messages[{i}]: tool_result blocks must come first")
            for call_id, n in Counter(results).items():
                if call_id not in expected:
                    problems.append(
                        f"messages[{i}]: a tool_result for {call_id or 'no id'}, which is not a "
                        "tool_use of the previous message"
                    )
                elif n > 1:
                    problems.append(f"messages[{i}]: tool_use {call_id} is answered twice")
        expected = []
        if role == "assistant":
            for b in blocks:
                if b.get("type") != "tool_use":
                    continue
                call_id = text(b.get("id"))
                if call_id in seen:
                    problems.append(f"messages[{i}]: tool_use id {call_id} is used twice")
                seen.add(call_id)
                expected.append(call_id)
        previous_role = role
    if expected:
        problems.append(f"tool_use ids {_ids(expected)} are never answered")
    return problems


def _names(parts: list[dict[str, Any]], key: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p in parts:
        value = obj(p.get(key))
        if value is not None:
            out.append((text(value.get("name")), text(value.get("id"))))
    return out


def check_gemini(body: dict[str, Any]) -> list[str]:
    """A model content's `functionCall` parts are answered by the next content.

    Its `functionResponse` parts: as many, with the same names (and ids, where given).
    """
    problems: list[str] = []
    contents = _messages(body, "contents")
    if contents is None:
        return ["`contents` must be a non-empty list"]
    pending: list[tuple[str, str]] = []
    for i, raw in enumerate(contents):
        content = obj(raw)
        if content is None:
            problems.append(f"contents[{i}] is not an object")
            continue
        role = text(content.get("role")) or "user"
        parts = [p for p in (obj(x) for x in arr(content.get("parts"))) if p is not None]
        calls = _names(parts, "functionCall")
        answers = _names(parts, "functionResponse")
        if pending:
            if not answers:
                names = _ids([n for n, _ in pending])
                problems.append(
                    f"contents[{i}]: functionCall parts ({names}) have no functionResponse in "
                    "the next content"
                )
            elif len(answers) != len(pending):
                problems.append(
                    f"contents[{i}]: {len(answers)} functionResponse parts answer "
                    f"{len(pending)} functionCall parts"
                )
            elif Counter(n for n, _ in answers) != Counter(n for n, _ in pending):
                problems.append(
                    f"contents[{i}]: functionResponse names {sorted(n for n, _ in answers)} do "
                    f"not match the calls {sorted(n for n, _ in pending)}"
                )
            else:
                call_ids = {x for _, x in pending if x}
                unknown = [x for _, x in answers if x and x not in call_ids]
                if unknown:
                    problems.append(
                        f"contents[{i}]: functionResponse ids {_ids(unknown)} are unknown"
                    )
        elif answers:
            problems.append(
                f"contents[{i}]: functionResponse parts without functionCall parts in the "
                "previous content"
            )
        if answers and role == "model":
            problems.append(f"contents[{i}]: functionResponse parts in a model content")
        if calls and role != "model":
            problems.append(f"contents[{i}]: functionCall parts in a {role} content")
        pending = calls if role == "model" else []
    if pending:
        problems.append(f"functionCall parts ({_ids([n for n, _ in pending])}) are never answered")
    return problems


CHECKS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "openai_chat": check_openai_chat,
    "openai_responses": check_openai_responses,
    "anthropic": check_anthropic,
    "gemini": check_gemini,
}


def check(provider: str, body: object) -> list[str]:
    """The problems a `provider` would refuse `body` for (a body that is not an object too)."""
    request = obj(body)
    if request is None:
        return ["the request body is not a JSON object"]
    return CHECKS[provider](request) + CONTENT_CHECKS[provider](request)
