"""When to compact an agent's conversation, and doing it (the rules are in `_compaction.py`).

The loop calls `Compactor.maybe` before each model request: while the conversation fills more
than the threshold of the window, old tool outputs are pruned or the older part is summarised
by the model. Compactions that fail or free too little count as failures; after
`max_failures` in a row automatic compaction stops trying, and a conversation that no longer
fits at all ends the run (`ContextFull`).
"""

from __future__ import annotations

from typing import Protocol

from ..errors import ModelError
from ._compaction import (
    SUMMARY_SYSTEM,
    CompactionSettings,
    prune_results,
    render_for_summary,
    split_point,
)
from ._conversation import Message, UserMessage
from ._events import Compacted, Event, Notice
from ._text import say

__all__ = ["CompactionHost", "Compactor", "ContextFull"]


class ContextFull(Exception):
    """The conversation no longer fits the window and compaction cannot help."""


class CompactionHost(Protocol):
    """What compaction needs of the agent whose conversation it compacts."""

    @property
    def messages(self) -> list[Message]: ...

    @property
    def locale(self) -> str: ...

    @property
    def window(self) -> int:
        """The model's context window, in tokens."""
        ...

    def context_tokens(self) -> int: ...

    async def summarize(self, system: str, text: str) -> str:
        """The model's answer to `text` under `system`, with no tools (raises ModelError)."""
        ...

    def replace_messages(self, messages: list[Message]) -> None:
        """Carry on with `messages` in place of the conversation (and record them)."""
        ...

    def emit(self, event: Event, *, record: bool = False) -> None:
        """Hand `event` to the run's listener; `record`: write it to the transcript too."""
        ...


class Compactor:
    """Compacts one agent's conversation; remembers how many compactions failed in a row."""

    def __init__(self, settings: CompactionSettings) -> None:
        self.settings = settings
        self.failures = 0

    async def maybe(self, host: CompactionHost) -> None:
        """Compact while the window is fuller than the threshold, up to `max_failures` tries."""
        settings = self.settings
        window = host.window
        while settings.enabled and host.context_tokens() >= settings.threshold * window:
            if self.failures >= settings.max_failures:
                if host.context_tokens() >= window:
                    raise ContextFull(
                        "the conversation no longer fits the model's context window and "
                        f"compaction failed {self.failures} times; start a new session "
                        "or compact it with a focus"
                    )
                return
            if await self.compact(host, manual=False) is not None:
                return

    async def compact(
        self, host: CompactionHost, *, manual: bool, focus: str | None = None
    ) -> Compacted | None:
        """Prune or summarise once; the event, or None when nothing could be compacted."""
        settings = self.settings
        window = host.window
        messages = host.messages
        before = host.context_tokens()
        protect = min(settings.protect_tokens, window // 4)
        pruned, n_pruned, freed = prune_results(messages, protect=protect, locale=host.locale)
        enough = min(settings.min_prune_tokens, window // 10)
        if (
            not manual
            and n_pruned
            and freed >= enough
            and before - freed < settings.threshold * window
        ):
            return self._replace(host, pruned, before, n_pruned, 0, manual)
        source = pruned if n_pruned else messages
        cut = split_point(source, 0 if manual else min(settings.keep_tokens, window // 5))
        if cut == 0:
            if n_pruned:
                return self._replace(host, pruned, before, n_pruned, 0, manual)
            self.failures += 1
            host.emit(Notice(text="nothing to compact yet", level="warning"))
            return None
        summary = ""
        try:
            for chunk in render_for_summary(source[:cut], limit_chars=max(4000, window * 2)):
                text = (
                    (f"Summary so far:\n{summary}\n\n" if summary else "")
                    + (f"Pay special attention to: {focus}\n\n" if focus else "")
                    + "Conversation to summarise:\n\n"
                    + chunk
                )
                summary = await host.summarize(SUMMARY_SYSTEM, text)
        except ModelError as exc:
            self.failures += 1
            host.emit(Notice(text=f"compaction failed: {exc.message}", level="warning"))
            return None
        if not summary.strip():
            self.failures += 1
            host.emit(Notice(text="compaction failed: the summary was empty", level="warning"))
            return None
        head = UserMessage(
            text=say(host.locale, "summary", summary=summary.strip()), kind="summary"
        )
        return self._replace(host, [head, *source[cut:]], before, n_pruned, cut, manual)

    def _replace(
        self,
        host: CompactionHost,
        messages: list[Message],
        before: int,
        pruned: int,
        summarized: int,
        manual: bool,
    ) -> Compacted:
        host.replace_messages(messages)
        after = host.context_tokens()
        if not manual and after >= self.settings.threshold * host.window:
            self.failures += 1  # it did not free enough to matter
        else:
            self.failures = 0
        event = Compacted(
            tokens_before=before,
            tokens_after=after,
            pruned_results=pruned,
            summarized_messages=summarized,
            manual=manual,
        )
        host.emit(event, record=True)
        return event
