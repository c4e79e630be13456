"""Tool calls as rich renderables: a call's line and block, a group's line and block.

Pure functions of `handrail.display` values: no I/O, no `Live`, no input. The app decides what
stays live and prints each finished block to scrollback once; `_question` builds the question
about a call from these pieces. Everything fits the width it is drawn at (lines are cut, least
important part first, never wrapped), and meaning never rests on colour alone: every status
has its glyph and, when it went wrong, its word (`denied`).

```
✓ Edit src/app.py  +1 -1 (12 ms)
  └ @@ -1,2 +1,2 @@
     def f():
    -    return 1
    +    return 2
✓ Read 3 files, searched 2 patterns (41 ms)
⠹ Run pytest -q (3.2 s)
  └ tests/test_app.py ....
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...display import (
    CallProgress,
    CallStatus,
    DiffBody,
    Display,
    TableBody,
    TextBody,
    group_summary,
)
from ._glyphs import ASCII as ASCII
from ._glyphs import UNICODE as UNICODE
from ._glyphs import Glyphs as Glyphs
from ._glyphs import clean as clean
from ._glyphs import glyphs as glyphs
from ._layout import Hang, Part
from ._layout import Line as Line

__all__ = [
    "ASCII",
    "DIFF_LINES",
    "PROGRESS_LINES",
    "UNICODE",
    "Glyphs",
    "Line",
    "body_rows",
    "call_block",
    "call_line",
    "clean",
    "format_bytes",
    "format_duration",
    "glyphs",
    "group_block",
    "group_line",
    "under_elbow",
    "wrapped",
]

DIFF_LINES = 20
"""A collapsed diff shows this many lines, then `… +N lines`."""
PROGRESS_LINES = 5
"""A running command shows its last this-many output lines."""
_SUBTITLE_LEAST = 8
"""A subtitle cut shorter than this says nothing (`failed: Th…`): it is left out instead."""

_MARK: Mapping[CallStatus, str] = {
    CallStatus.RUNNING: "cyan",
    CallStatus.WAITING: "bold yellow",
    CallStatus.DONE: "green",
    CallStatus.FAILED: "bold red",
    CallStatus.DENIED: "bold yellow",
    CallStatus.CANCELLED: "dim",
}
_DETAIL: Mapping[CallStatus, str] = {
    CallStatus.FAILED: "red",
    CallStatus.DENIED: "yellow",
    CallStatus.CANCELLED: "dim",
}
_WORD: Mapping[CallStatus, str] = {
    CallStatus.FAILED: "failed",
    CallStatus.DENIED: "denied",
    CallStatus.CANCELLED: "cancelled",
}
_WORST = (CallStatus.FAILED, CallStatus.DENIED, CallStatus.CANCELLED)


def format_duration(seconds: float) -> str:
    """`<1 ms`, `12 ms`, `1.2 s`, `2m 03s`, `1h 05m`."""
    if 0 < seconds < 0.0005:
        return "<1 ms"
    if seconds < 0.9995:
        return f"{max(int(seconds * 1000 + 0.5), 0)} ms"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    total = round(seconds)
    if total < 3600:
        return f"{total // 60}m {total % 60:02d}s"
    return f"{total // 3600}h {total % 3600 // 60:02d}m"


def format_bytes(count: int) -> str:
    """`512 B`, `12.3 kB`, `4.0 MB` (powers of 1000)."""
    if count < 1000:
        return f"{count} B"
    value = count / 1000
    for unit in ("kB", "MB"):
        if value < 999.95:
            return f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def call_line(d: Display, g: Glyphs, *, frame: int = 0) -> Line:
    """One row for a call: mark, title, detail, `+N -M`, time; cut to the width, never wrapped.

    The mark is the spinner's `frame` while the call runs. A failed, denied or cancelled call
    says so in words too, in front of its subtitle.
    """
    return Line(tuple(_parts(d, g, frame)), g.ellipsis)


def _parts(d: Display, g: Glyphs, frame: int) -> Iterator[Part]:
    yield Part(Text(g.status(d.status, frame) + " ", style=_MARK[d.status]))
    yield Part(Text(clean(d.title, ascii=g.ascii), style="bold"), give=1, middle=True)
    detail = _DETAIL.get(d.status, "dim")
    subtitle = clean(d.subtitle, ascii=g.ascii)
    counts = _counts(d.body) if isinstance(d.body, DiffBody) else None
    if counts is not None and counts.plain in subtitle:
        subtitle = subtitle.replace(counts.plain, "").strip(" ,;·")  # said once is enough
    word = _WORD.get(d.status)
    if word:
        # The word stays when the subtitle must go: `denied by rule X` keeps `denied`.
        said = subtitle[: len(word)]
        if said.lower() == word:
            subtitle = subtitle[len(word) :]
        else:
            said, subtitle = word, f": {subtitle}" if subtitle else ""
        yield Part(Text(f"  {said}", style=detail))
    elif subtitle:
        subtitle = "  " + subtitle
    if subtitle:
        yield Part(Text(subtitle, style=detail), give=2, least=_SUBTITLE_LEAST)
    if counts is not None:
        yield Part(Text("  ") + counts)
    when = _time(d)
    if when:
        yield Part(Text(f" ({when})", style="dim"))


def _counts(body: DiffBody) -> Text:
    return Text.assemble((f"+{body.added}", "green"), " ", (f"-{body.removed}", "red"))


def _time(d: Display) -> str:
    if d.status.finished:
        return format_duration(d.duration) if d.duration > 0 else ""
    if d.status is CallStatus.RUNNING and d.progress is not None:
        return _progress_time(d.progress)
    return ""


def _progress_time(p: CallProgress) -> str:
    parts = [format_duration(p.elapsed)] if p.elapsed > 0 else []
    if p.bytes:
        parts.append(format_bytes(p.bytes))
    return ", ".join(parts)


def call_block(
    d: Display, g: Glyphs, *, frame: int = 0, expanded: bool = False, hint: str = ""
) -> RenderableType:
    """A call's line and what is under it, joined by the elbow.

    While running: the last `PROGRESS_LINES` output lines, or the latest activity (a
    sub-agent's current call). Otherwise the body: a diff (coloured, cut after `DIFF_LINES`
    lines unless `expanded`), text (head, `… +N lines`, tail), or a compact table. Collapsed,
    each row is cut to the width; `expanded` wraps them instead, so nothing is hidden.
    `hint` follows each `… +N lines` mark (e.g. `ctrl+o to expand`).
    """
    head = call_line(d, g, frame=frame)
    under = body_rows(d, g, expanded=expanded, hint=hint)
    if not under:
        return head
    return Group(head, under_elbow(g, Group(*under)))


def under_elbow(g: Glyphs, body: RenderableType) -> Hang:
    """`body` hung under the elbow: `  └ first row`, the other rows under it."""
    return Hang(Text(f"  {g.elbow} ", style="dim"), body)


def wrapped(text: Text) -> Hang:
    """`text` wrapped at the width, each row's trailing blank trimmed (a bare Text keeps it)."""
    return Hang(Text(""), text)


def body_rows(d: Display, g: Glyphs, *, expanded: bool, hint: str) -> list[RenderableType]:
    """What goes under a call's line, row by row (see `call_block`); `[]` when nothing does."""
    p = d.progress
    if not d.status.finished and p is not None and (p.lines or p.message):
        rows = [_row(_screen_line(x), "dim", g, wrap=False) for x in p.lines[-PROGRESS_LINES:]]
        if p.message:
            rows.append(_row(p.message, "dim", g, wrap=False))
        return rows
    body = d.body
    if isinstance(body, DiffBody):
        return _diff_rows(body, g, expanded=expanded, hint=hint)
    if isinstance(body, TextBody):
        rows = [_row(x, "dim", g, wrap=expanded) for x in body.head]
        if body.omitted:
            rows.append(_more(body.omitted, "lines", g, hint))
        rows += [_row(x, "dim", g, wrap=expanded) for x in body.tail]
        return rows
    if isinstance(body, TableBody):
        return _table_rows(body, g, expanded=expanded, hint=hint)
    return []


def _screen_line(line: str) -> str:
    # A running command's progress bar redraws its line with `\r`: its live tail shows the
    # last redraw, as a terminal would. Nothing else does (`_row` spells a `\r` out): what a
    # call will do or did must not lose the start of a line.
    line = line.rstrip("\r")
    return line.rsplit("\r", 1)[-1]


def _row(text: str, style: str, g: Glyphs, *, wrap: bool, sign: bool = False) -> RenderableType:
    shown = Text(clean(text, ascii=g.ascii), style=style)
    if not wrap:
        return Line.of(shown, g.ellipsis)
    if sign and shown.plain[:1] in ("+", "-", " "):  # a wrapped diff line hangs after its sign
        return Hang(shown[:1], shown[1:])
    return shown


def _more(count: int, noun: str, g: Glyphs, hint: str) -> Line:
    text = Text(f"{g.ellipsis} +{count} {noun}", style="dim")
    if hint:
        text.append(f" ({clean(hint, ascii=g.ascii)})", style="dim")
    return Line.of(text, g.ellipsis)


_HUNK = re.compile(r"@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff's lines to show, each with its style; file headers left out.

    Hunk headers give how many old and new lines follow, so a removed line that starts with
    `--` (a SQL comment) is never taken for a `---` file header.
    """
    out: list[tuple[str, str]] = []
    old = new = 0
    # Lines end at `\n` only: a `\r` inside a line stays there, spelled out, not a break.
    for line in diff.replace("\r\n", "\n").removesuffix("\n").split("\n") if diff else ():
        if old > 0 or new > 0:
            tag = line[:1]
            if tag == "-":
                old -= 1
                out.append((line, "red"))
            elif tag == "+":
                new -= 1
                out.append((line, "green"))
            elif tag == "\\":  # "\ No newline at end of file"
                out.append((line, "dim"))
            else:
                old, new = old - 1, new - 1
                out.append((line, ""))
            continue
        hunk = _HUNK.match(line)
        if hunk:
            old = int(hunk[1]) if hunk[1] is not None else 1
            new = int(hunk[2]) if hunk[2] is not None else 1
            out.append((line, "cyan"))
        elif not line.startswith(("--- ", "+++ ", "diff ", "index ")):
            style = {"+": "green", "-": "red", "\\": "dim"}.get(line[:1], "")
            out.append((line, style))
    return out


def _diff_rows(body: DiffBody, g: Glyphs, *, expanded: bool, hint: str) -> list[RenderableType]:
    lines = _diff_lines(body.diff)
    # One hidden line costs as much as the `… +1 lines` mark: show it instead.
    shown = lines if expanded or len(lines) <= DIFF_LINES + 1 else lines[:DIFF_LINES]
    rows = [_row(text, style, g, wrap=expanded, sign=True) for text, style in shown]
    if len(shown) < len(lines):
        rows.append(_more(len(lines) - len(shown), "lines", g, hint))
    return rows


def _table_rows(body: TableBody, g: Glyphs, *, expanded: bool, hint: str) -> list[RenderableType]:
    named = any(c.strip() for c in body.columns)
    table = Table(
        box=None, show_header=named, show_edge=False, pad_edge=False, padding=(0, 2, 0, 0)
    )
    for column in body.columns:
        table.add_column(Text(clean(column, ascii=g.ascii), style="bold"), overflow="fold")
    width = len(body.columns)
    for cells in body.rows:
        cells = (*cells[:width], *("",) * (width - len(cells)))
        table.add_row(*(_row(c, "", g, wrap=expanded) for c in cells))
    rows: list[RenderableType] = [table]
    if body.omitted:
        rows.append(_more(body.omitted, "rows", g, hint))
    return rows


def group_line(ds: Sequence[Display], g: Glyphs, *, frame: int = 0, hint: str = "") -> Line:
    """One row for a run of calls: `✓ Read 3 files, searched 2 patterns (41 ms)`.

    `-ing…` with the spinner while any call runs; a failed, denied or cancelled member turns
    the mark into its own and is counted in words (`1 failed`). The time is the calls' total
    once all are done, the longest elapsed while some run. `hint` ends the row (`ctrl+o to
    expand`), dropped first when the row is too long.
    """
    status = _group_status(ds)
    parts = [
        Part(Text(g.status(status, frame) + " ", style=_MARK[status])),
        Part(Text(group_summary(ds) if ds else "", style="bold"), give=1),
    ]
    if not status.finished:
        parts[1].text.append(g.ellipsis)
    bad = [(s, n) for s in _WORST if (n := sum(1 for d in ds if d.status is s))]
    if bad:
        counts = Text(", ").join(Text(f"{n} {_WORD[s]}", style=_DETAIL[s]) for s, n in bad)
        parts.append(Part(Text("  ") + counts))
    if status.finished:
        total = sum(d.duration for d in ds)
        when = format_duration(total) if total > 0 else ""
    else:
        running = [d.progress.elapsed for d in ds if d.progress is not None and d.progress.elapsed]
        when = format_duration(max(running)) if running else ""
    if when:
        parts.append(Part(Text(f" ({when})", style="dim")))
    if hint:
        shown = Text(f" ({clean(hint, ascii=g.ascii)})", style="dim")
        parts.append(Part(shown, give=3, least=shown.cell_len - 1))  # whole or not at all
    return Line(tuple(parts), g.ellipsis)


def _group_status(ds: Sequence[Display]) -> CallStatus:
    # The group shows what most needs the eye: still running, waiting, then the worst end.
    for status in (CallStatus.RUNNING, CallStatus.WAITING, *_WORST):
        if any(d.status is status for d in ds):
            return status
    return CallStatus.DONE


def group_block(
    ds: Sequence[Display], g: Glyphs, *, frame: int = 0, expanded: bool = False, hint: str = ""
) -> RenderableType:
    """A group's line and, under it, one `call_line` per call.

    Collapsed, only the calls that are not done (running, waiting, failed, denied,
    cancelled) get their row, so a failure is named; `expanded` lists every call.
    """
    head = group_line(ds, g, frame=frame, hint="" if expanded else hint)
    members = ds if expanded else [d for d in ds if d.status is not CallStatus.DONE]
    if not members:
        return head
    return Group(head, under_elbow(g, Group(*(call_line(d, g, frame=frame) for d in members))))
