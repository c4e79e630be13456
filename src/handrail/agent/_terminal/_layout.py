"""Two small rich renderables the terminal is built from: a line that never wraps, and a hang.

rich's own `overflow="ellipsis"` cuts at the end with `…`, which loses a call's status and
duration first and is not ASCII. `Line` cuts the least important part first (the subtitle,
then the title) with the glyph set's ellipsis, at whatever width it is drawn, so the same
value fits an 80- or a 40-column terminal and a resize.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

__all__ = ["Hang", "Line", "Part"]


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of a `Line`; pieces with a higher `give` are cut first when the line is too long."""

    text: Text
    give: int = 0
    """0: kept whole (only the last-resort cut at the end touches it); 1, 2, ...: cut in turn,
    highest first."""
    least: int | None = None
    """The fewest cells worth showing (leading blanks and the ellipsis not counted): with less
    room the part is left out entirely. `None`: never left out, cut to a stub if need be."""
    middle: bool = False
    """Cut in the middle, keeping both ends: `Read src/…/settings.py` keeps the verb and the
    file name."""


@dataclass(frozen=True, slots=True)
class Line:
    """One terminal row that never wraps: its parts are cut to fit the width it is drawn at."""

    parts: tuple[Part, ...]
    ellipsis: str

    @classmethod
    def of(cls, text: Text, ellipsis: str) -> Line:
        """A line of one text, cut at its end when too long."""
        return cls((Part(text, give=1),), ellipsis)

    @property
    def text(self) -> Text:
        """The whole line, uncut."""
        return Text("").join(p.text for p in self.parts)

    @property
    def plain(self) -> str:
        """The whole line as plain text, uncut."""
        return "".join(p.text.plain for p in self.parts)

    def fit(self, width: int) -> Text:
        """The line cut to `width` cells: the highest `give` first, the end as a last resort."""
        texts = [p.text for p in self.parts]
        over = sum(t.cell_len for t in texts) - width
        for give in sorted({p.give for p in self.parts if p.give}, reverse=True):
            for i, part in enumerate(self.parts):
                if over <= 0:
                    break
                if part.give != give:
                    continue
                size = texts[i].cell_len
                keep = size - over
                shown = keep - cell_len(self.ellipsis) - _lead(texts[i].plain)
                if part.least is not None and shown < part.least:
                    texts[i], over = Text(""), over - size
                elif keep < size:
                    keep = max(keep, cell_len(self.ellipsis) + 1)
                    cut = self._cut(texts[i], keep, middle=part.middle)
                    texts[i], over = cut, over - (size - cut.cell_len)
        line = Text("").join(texts)
        return self._cut(line, width) if over > 0 else line

    def _cut(self, text: Text, width: int, *, middle: bool = False) -> Text:
        room = width - cell_len(self.ellipsis)
        if room < 1:  # no room for the ellipsis: a bare cut
            text = text.copy()
            text.truncate(max(width, 0), overflow="crop")
            return text
        if middle and room >= _MIDDLE_ROOM:
            plain = text.plain
            # The head keeps at least the first word (the verb); the tail gets the rest.
            verb = plain.find(" ") + 2
            head_cells = max(room // 3, min(verb, room // 2))
            head = _chars_within(plain, head_cells)
            tail = len(plain) - _chars_within(plain[::-1], room - cell_len(plain[:head]))
            cut = text[:head]
            cut.rstrip()
            cut.append(self.ellipsis, style=_last_style(cut))
            return cut + text[tail:]
        text = text.copy()
        text.truncate(room, overflow="crop")
        text.rstrip()
        text.append(self.ellipsis, style=_last_style(text))
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line = self.fit(options.max_width)
        line.no_wrap = True
        line.overflow = "crop"
        yield line

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        size = sum(p.text.cell_len for p in self.parts)
        return Measurement(min(size, cell_len(self.ellipsis) + 1), size)


_MIDDLE_ROOM = 12
"""Below this many cells a middle cut leaves two stubs: cut at the end instead."""


def _lead(plain: str) -> int:
    """The cells of leading blanks: a separator, not content worth keeping."""
    return len(plain) - len(plain.lstrip(" "))


def _chars_within(plain: str, cells: int) -> int:
    """How many leading characters of `plain` fit in `cells` (wide characters count two)."""
    used = 0
    for i, ch in enumerate(plain):
        used += cell_len(ch)
        if used > cells:
            return i
    return len(plain)


def _last_style(text: Text) -> str:
    # The ellipsis continues the style of what it replaces (a dim subtitle stays dim).
    end = len(text.plain)
    styles = [str(s.style) for s in text.spans if s.start < end <= s.end]
    return " ".join([str(text.style), *styles]).strip()


@dataclass(frozen=True, slots=True)
class Hang:
    """`body` drawn to the right of `prefix` on its first row, under blanks on the others.

    `  └ first line` / `    second line`: the elbow under a call, the number of a choice.
    """

    prefix: Text
    body: RenderableType

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        indent = self.prefix.cell_len
        width = max(1, options.max_width - indent)
        lines = console.render_lines(self.body, options.update_width(width), pad=False)
        blank = Segment(" " * indent)
        prefix = self.prefix.copy()
        prefix.no_wrap = True
        first = console.render_lines(prefix, options.update_width(max(indent, 1)), pad=False)[0]
        for i, row in enumerate(lines):
            row = _rstrip(row)
            if i == 0:
                yield from first
            elif row:
                yield blank
            yield from row
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        inner = Measurement.get(console, options, self.body)
        indent = self.prefix.cell_len
        return Measurement(inner.minimum + indent, inner.maximum + indent)


def _rstrip(row: list[Segment]) -> list[Segment]:
    # Wrapped text keeps the space it broke at; trailing blanks only get in a copy's way.
    row = list(row)
    while row and not row[-1].control and not row[-1].text.rstrip(" "):
        row.pop()
    if row and not row[-1].control:
        last = row[-1]
        row[-1] = Segment(last.text.rstrip(" "), last.style)
    return row
