"""Context accounting and compaction: keep the conversation inside the model's window.

Counting: the provider's own count of the last request (its input tokens plus the response)
is the base; messages added since are estimated (UTF-8 bytes / 4). Compaction, when the
conversation passes `threshold` of the window: first old tool outputs are replaced by a short
stub (the newest `protect_tokens` of the conversation keep theirs), if that frees enough; else
the older part is summarised by the model and only the recent part is kept verbatim. A tool
call and its result are never split, and summaries of a part too big for one request are
built chunk by chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .._contract import TextPart, ToolResult
from ._conversation import AssistantMessage, Message, ToolResults, Usage, UserMessage
from ._text import say

__all__ = [
    "CompactionSettings",
    "ContextMeter",
    "estimate_tokens",
    "message_tokens",
    "prune_results",
    "render_for_summary",
    "split_point",
]

SUMMARY_SYSTEM = (
    "You write the working memory of a coding agent whose older messages are about to be "
    "removed. Summarise the conversation you are given so the agent can carry on without it. "
    "Keep: the user's requests and constraints, decisions and their reasons, files read and "
    "changed (paths), commands run and what they showed, errors and how they were resolved, "
    "and what remains to do. Be concise and concrete; use short bullet points. Reply with the "
    "summary only."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings:
    """When and how the loop compacts the conversation."""

    threshold: float = 0.85
    """Share of the context window at which compaction starts."""
    protect_tokens: int = 40_000
    """The newest tokens whose tool outputs are never pruned (capped at a quarter window)."""
    min_prune_tokens: int = 20_000
    """Pruning is only worth it if it frees this much (capped at a tenth of the window)."""
    keep_tokens: int = 20_000
    """Roughly how much of the newest conversation a summary keeps verbatim."""
    max_failures: int = 3
    """Failed or useless compactions in a row before automatic compaction gives up."""
    enabled: bool = True

    def __post_init__(self) -> None:
        if not 0.1 <= self.threshold <= 1.0:
            raise ValueError("threshold must be between 0.1 and 1.0")


class ContextMeter:
    """How full the context window is.

    The provider's count of the last request plus an estimate of the messages added since;
    before any count, an estimate of everything.
    """

    def __init__(self) -> None:
        self._base = 0
        self._index = 0

    def measured(self, usage: Usage, upto: int) -> None:
        """The provider counted `usage` for the conversation's first `upto` messages."""
        if usage.input_tokens:
            self._base = usage.input_tokens + usage.output_tokens
            self._index = upto

    def forget(self) -> None:
        """The conversation (or the model) changed: estimate everything again."""
        self._base, self._index = 0, 0

    def tokens(self, messages: Sequence[Message], fixed: Callable[[], int]) -> int:
        """Tokens the conversation fills; `fixed` estimates the system prompt and tools."""
        if self._base:
            return self._base + sum(message_tokens(m) for m in messages[self._index :])
        return fixed() + sum(message_tokens(m) for m in messages)


def estimate_tokens(text: str) -> int:
    """A rough token count: about four bytes of UTF-8 per token."""
    return (len(text.encode("utf-8", "replace")) + 3) // 4


ATTACHMENT_TOKENS = 1_600
"""Estimated tokens of one attachment (an image, a PDF, a clip): Anthropic bills an image
about width x height / 750 tokens and scales one down past ~1,600; OpenAI's high detail costs
about as much. Its base64 is not text the model reads, so its length says nothing."""


def _attachments(result: ToolResult) -> int:
    # Text parts are in `content` already (it is the parts' text view).
    return sum(1 for p in result.parts if not isinstance(p, TextPart))


def _result_tokens(result: ToolResult) -> int:
    return estimate_tokens(result.content) + 8 + ATTACHMENT_TOKENS * _attachments(result)


def message_tokens(message: Message) -> int:
    """Estimated tokens of one message as sent (text, calls, results, a little overhead)."""
    if isinstance(message, UserMessage):
        return estimate_tokens(message.text) + 4
    if isinstance(message, ToolResults):
        return sum(_result_tokens(r) for r in message.results)
    total = estimate_tokens(message.text) + 4
    for call in message.calls:
        args = call.arguments
        total += estimate_tokens(args if isinstance(args, str) else json.dumps(dict(args))) + 8
    return total


def prune_results(
    messages: Sequence[Message], *, protect: int, locale: str
) -> tuple[list[Message], int, int]:
    """Stub out tool outputs older than the newest `protect` tokens.

    A stubbed result keeps only the stub: its parts (images, resources) and structured content
    go too, or the conversation would keep carrying megabytes of attachments. Returns the new
    messages, how many results were stubbed, and the tokens freed.
    """
    out = list(messages)
    seen = 0
    start = len(out)
    for i in range(len(out) - 1, -1, -1):
        seen += message_tokens(out[i])
        if seen > protect:
            start = i
            break
    pruned = freed = 0
    for i in range(start):
        m = out[i]
        if not isinstance(m, ToolResults):
            continue
        new: list[ToolResult] = []
        for r in m.results:
            stub = say(locale, "pruned", chars=len(r.content), name=r.tool_name or "tool")
            long = len(r.content) > len(stub) + 200 and not r.content.startswith("[Output removed")
            if long or _attachments(r):
                freed += _result_tokens(r) - _result_tokens(ToolResult(ok=r.ok, content=stub))
                pruned += 1
                r = replace(r, content=stub, parts=(), structured=None)
            new.append(r)
        out[i] = ToolResults(results=tuple(new))
    return out, pruned, freed


def split_point(messages: Sequence[Message], keep: int) -> int:
    """Where to cut: messages before the index are summarised, the rest kept verbatim.

    The cut lands on a user or assistant message (never on results, which must follow their
    calls) and keeps about `keep` tokens, and at least the last exchange. 0 means nothing can
    be summarised.
    """
    kept = 0
    best = 0
    for i in range(len(messages) - 1, -1, -1):
        kept += message_tokens(messages[i])
        if kept > keep and best:
            break  # keeping this one too would pass the budget: cut after it
        if not isinstance(messages[i], ToolResults):
            best = i
    return best


def render_for_summary(messages: Sequence[Message], limit_chars: int) -> list[str]:
    """The messages as plain text, in chunks of at most `limit_chars` characters each.

    Plain text works with every provider and carries no call/result pairing to break.
    """
    lines: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            lines.append(f"[{'user' if m.kind == 'prompt' else m.kind}]\n{m.text}")
        elif isinstance(m, AssistantMessage):
            body = m.text
            for c in m.calls:
                args = (
                    c.arguments if isinstance(c.arguments, str) else json.dumps(dict(c.arguments))
                )
                body += f"\n-> {c.name}({args[:2000]})"
            lines.append(f"[assistant]\n{body.strip()}")
        else:
            for r in m.results:
                status = "ok" if r.ok else (r.error.value if r.error else "failed")
                text = (
                    r.content
                    if len(r.content) <= 4000
                    else r.content[:2000] + "\n…\n" + r.content[-1500:]
                )
                lines.append(f"[result of {r.tool_name} ({status})]\n{text}")
    chunks: list[str] = []
    current = ""
    for line in lines:
        if len(line) > limit_chars:
            line = line[: limit_chars - 20] + "\n…(cut)"
        if current and len(current) + len(line) + 2 > limit_chars:
            chunks.append(current)
            current = ""
        current = f"{current}\n\n{line}" if current else line
    if current:
        chunks.append(current)
    return chunks
