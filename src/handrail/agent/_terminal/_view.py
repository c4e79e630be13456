"""One turn on the screen: finished blocks go to scrollback once, the rest lives in one region.

The live region (rich `Live`, inline, never the alternate screen) holds only what can still
change: the calls still running, the text still streaming (its last lines), and a working
line. Everything finished is printed above it once, in order, and stays in the terminal's own
scrollback. The region is kept shorter than the terminal, so a repaint never has to scroll
(the flicker every anchor's users complain about).

Calls are shown grouped: consecutive reads, searches and listings collapse into one line
(`Read 3 files, searched 2 patterns`), `/expand` prints them call by call; an edit shows its
diff, a shell command its output's head and tail; calls that run side by side share a group.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from ..._contract import ApprovalRequest
from ...display import CallProgress, Display
from .._events import (
    ApprovalAsked,
    Compacted,
    Event,
    ModelRetry,
    Notice,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
)
from ._elicitation import Eliciting
from ._glyphs import clean
from ._question import Asking
from ._render import Glyphs, call_block, group_block, group_line

_FENCE = re.compile(r"^\s*(```|~~~)", re.M)


@dataclass
class CallGroup:
    """Calls shown together: a run of reads, or calls that ran side by side, or one call."""

    collapsible: bool
    displays: dict[str, Display] = field(default_factory=dict[str, Display])
    closed: bool = False

    @property
    def finished(self) -> bool:
        """Every call has its result."""
        return all(d.status.finished for d in self.displays.values())

    @property
    def ready(self) -> bool:
        """Nothing more will join and nothing will change: it can go to scrollback."""
        return self.finished and (self.closed or not self.collapsible)


@dataclass
class TextBlock:
    """Answer text, streamed; printed paragraph by paragraph once nothing is before it."""

    text: str = ""
    closed: bool = False

    @property
    def ready(self) -> bool:
        """A call or the end of the turn came after it: it is complete."""
        return self.closed


Block = CallGroup | TextBlock


class TurnView:
    """Turns the events of a run into scrollback blocks and a live region."""

    def __init__(
        self,
        console: Console,
        glyphs: Glyphs,
        *,
        markdown: bool = True,
        history: list[CallGroup] | None = None,
    ) -> None:
        self.console = console
        self.glyphs = glyphs
        self.markdown = markdown
        self.pending: list[Block] = []
        """What is not in scrollback yet, in the order the model sent it."""
        self.history: list[CallGroup] = history if history is not None else []
        """Groups printed in this session, newest last (for /expand)."""
        self.started = time.monotonic()
        self.status = "Thinking"
        self.footer: Text | None = None
        """Replaces the working line."""
        self.question: Asking | Eliciting | None = None
        """The question waiting for its answer: the bottom of the region, fitted to its
        height, in place of its call's block and of the working line."""
        self.running = False
        self.starts: dict[str, float] = {}
        """When each call started, for the elapsed time of the running ones."""

    # -- events ------------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Take one event of the run."""
        if isinstance(event, TextDelta):
            self._text(event.text)
            self.status = "Writing"
        elif isinstance(event, ToolCallStarted):
            self._start(event)
        elif isinstance(event, ToolCallProgress):
            self._update(event.call_id, event.display)
        elif isinstance(event, ToolCallFinished):
            self._update(event.result.call_id, event.display)
        elif isinstance(event, ApprovalAsked):
            request = event.request
            if isinstance(request, ApprovalRequest):
                self._update(request.call.id, event.display)
        elif isinstance(event, TurnEnded):
            for block in self.pending:
                block.closed = True
            self.status = "Thinking"
        elif isinstance(event, Notice):
            self.note(event.text, warning=event.level == "warning")
        elif isinstance(event, ModelRetry):
            if event.discard and self.pending and isinstance(self.pending[-1], TextBlock):
                self.pending.pop()  # the cut stream starts over
            self.note(
                f"the model's server failed ({event.reason}); retrying in {event.delay:.1f} s"
            )
        elif isinstance(event, Compacted):
            self.note(
                f"compacted the conversation: {event.tokens_before:,} -> "
                f"{event.tokens_after:,} tokens"
            )
        self.flush()

    def _text(self, text: str) -> None:
        last = self.pending[-1] if self.pending else None
        if isinstance(last, TextBlock) and not last.closed:
            last.text += text
            return
        if not text.strip():
            return  # whitespace between calls is no block of its own
        if last is not None:
            last.closed = True
        self.pending.append(TextBlock(text=text))

    def _start(self, event: ToolCallStarted) -> None:
        display = event.display
        if display is None:
            return
        self.status = "Working"
        tail = self.pending[-1] if self.pending else None
        if isinstance(tail, TextBlock):
            tail.closed = True
        last = tail if isinstance(tail, CallGroup) else None
        joins = (
            last is not None
            and not last.closed
            and (
                (display.group.collapsible and last.collapsible)
                # Calls of one kind started while the last ones still run: one parallel group.
                or (
                    not display.group.collapsible
                    and not last.collapsible
                    and not last.finished
                    and all(d.group == display.group for d in last.displays.values())
                )
            )
        )
        if last is not None and not joins:
            last.closed = True
        if not joins:
            last = CallGroup(collapsible=display.group.collapsible)
            self.pending.append(last)
        assert last is not None
        last.displays[display.call_id] = display
        self.starts[display.call_id] = time.monotonic()

    def _update(self, call_id: str, display: Display | None) -> None:
        if display is None:
            return
        for block in self.pending:
            if isinstance(block, CallGroup) and call_id in block.displays:
                block.displays[call_id] = display
                return

    def note(self, text: str, *, warning: bool = False) -> None:
        """A line for the user between blocks (a notice, a retry)."""
        style = "yellow" if warning else "dim"
        self.flush()
        text = clean(text, ascii=self.glyphs.ascii)  # a notice may quote a file or a server
        self.console.print(Text(f"{self.glyphs.bullet} {text}", style=style))

    # -- output ------------------------------------------------------------------------------

    def flush(self, *, final: bool = False) -> None:
        """Print whatever is finished, in order; `final` prints everything left."""
        if final:
            for block in self.pending:
                block.closed = True
        while self.pending:
            head = self.pending[0]
            if isinstance(head, TextBlock):
                if not head.ready:
                    # An open paragraph stays live; the complete ones before it can go.
                    done, rest = split_paragraphs(head.text)
                    if done:
                        self._print_text(done)
                        head.text = rest
                    return
                self._print_text(head.text)
            elif not head.ready:
                return
            else:
                self._print_group(head)
            self.pending.pop(0)

    def _print_text(self, text: str) -> None:
        if not text.strip():
            return
        text = clean(text, ascii=self.glyphs.ascii)  # the model's text is not trusted
        if self.markdown:
            self.console.print(_Trimmed(markdown(text.strip("\n"))))
        else:
            self.console.print(Text(text.strip("\n")))
        self.console.print()

    def _print_group(self, group: CallGroup) -> None:
        displays = list(group.displays.values())
        self.history.append(group)
        del self.history[:-50]
        if group.collapsible and len(displays) > 1:
            self.console.print(group_block(displays, self.glyphs, hint="/expand"))
            return
        if len(displays) > 1:  # calls that ran side by side: one header over them
            self.console.print(group_line(displays, self.glyphs))
        for d in displays:
            self.console.print(call_block(d, self.glyphs))

    def live(self) -> RenderableType:
        """The live region, as rich renders it now."""
        return _Region(self)

    def region_parts(self, height: int) -> list[RenderableType]:
        """What the live region shows, within `height` lines."""
        frame = int(time.monotonic() * 10)
        parts: list[RenderableType] = []
        asked = self.question.call_id if self.question is not None else ""
        for block in self.pending:
            if isinstance(block, TextBlock):
                if block.text.strip():
                    parts.append(_Tail(block.text, self.markdown, max(3, height // 2)))
                continue
            # The call asked about is drawn once, in its question.
            displays = [
                self._ticking(d) for d in block.displays.values() if not asked or d.call_id != asked
            ]
            if not displays:
                continue
            if block.collapsible and len(displays) > 1:
                parts.append(group_block(displays, self.glyphs, frame=frame))
                continue
            if len(displays) > 1:
                parts.append(group_line(displays, self.glyphs, frame=frame))
            parts.extend(call_block(d, self.glyphs, frame=frame) for d in displays)
        if self.question is not None:
            parts.append(self.question.block(height))
        elif self.footer is not None:
            parts.append(self.footer)
        elif self.running:
            elapsed = int(time.monotonic() - self.started)
            spin = self.glyphs.spinner[frame % len(self.glyphs.spinner)]
            parts.append(
                Text.assemble(
                    (f"{spin} {self.status}{self.glyphs.ellipsis} ", "cyan"),
                    (f"({elapsed} s {self.glyphs.bullet} esc to interrupt)", "dim"),
                )
            )
        return parts

    def _ticking(self, d: Display) -> Display:
        # A running call's elapsed time counts on between its progress reports.
        start = self.starts.get(d.call_id)
        if d.status.finished or start is None:
            return d
        progress = d.progress or CallProgress()
        return replace(d, progress=replace(progress, elapsed=time.monotonic() - start))


def markdown(text: str) -> RenderableType:
    """`text` rendered as Markdown (`text` already `clean`: rich's markup is not read in it).

    A link shows its target after its text, never as a terminal hyperlink (OSC 8): the
    model chooses both, and a person should see where a link goes before following it.

    rich's Markdown (markdown-it, pygments) costs about a seventh of the start-up: it is
    imported when the first answer arrives, not before the prompt is drawn.
    """
    from rich.markdown import Markdown

    return Markdown(text, hyperlinks=False)


def split_paragraphs(text: str) -> tuple[str, str]:
    """Split streamed text after its last complete paragraph outside a code fence."""
    cut = text.rfind("\n\n")
    while cut > 0:
        head = text[:cut]
        if len(_FENCE.findall(head)) % 2 == 0:
            return head, text[cut + 2 :]
        cut = text.rfind("\n\n", 0, cut)
    return "", text


def _source_tail(text: str, lines: int) -> str:
    """Enough of the end of `text` to fill `lines` rows, still inside its code fence if open.

    A paragraph stays live until it is complete, and a long code block is one paragraph:
    re-rendering all of it on every frame would cost more with every line the model writes.
    """
    keep = lines * 3 + 20  # source lines: wrapping only makes rows more than lines
    source = text.split("\n")
    if len(source) <= keep:
        return text
    head, tail = source[:-keep], source[-keep:]
    fences = [line for line in head if _FENCE.match(line)]
    if len(fences) % 2:  # the cut falls inside a fence: reopen it, with its language
        tail.insert(0, fences[-1])
    return "\n".join(tail)


def _rows(lines: list[list[Segment]]) -> RenderResult:
    """Rendered lines back as segments, one line each."""
    for line in lines:
        yield from line
        yield Segment.line()


class _Tail:
    """The last lines of the streaming text, rendered as Markdown at the current width."""

    def __init__(self, text: str, markdown: bool, lines: int) -> None:
        self.text = text
        self.markdown = markdown
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = clean(_source_tail(self.text, self.lines), ascii=not self.markdown)
        source: Any = markdown(text) if self.markdown else Text(text)
        rendered = console.render_lines(source, options, pad=False)
        yield from _rows(rendered[-self.lines :])


class _Trimmed:
    """A renderable without its leading blank lines (rich starts a list with one)."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.inner, options, pad=False)
        start = 0
        while start < len(lines) and not "".join(seg.text for seg in lines[start]).strip():
            start += 1
        yield from _rows(lines[start:])


class _Region:
    """The live region: whatever is pending, cut to fit below the terminal's height."""

    def __init__(self, view: TurnView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        height = max(4, console.size.height - 2)
        lines = console.render_lines(Group(*self.view.region_parts(height)), options, pad=False)
        if len(lines) > height:  # the newest lines matter: keep the bottom
            lines = lines[len(lines) - height :]
        yield from _rows(lines)


def plain_lines(parts: Sequence[RenderableType], console: Console) -> list[str]:
    """Render parts to plain text lines (for tests and the benchmark)."""
    with console.capture() as cap:
        for p in parts:
            console.print(p)
    return cap.get().splitlines()
