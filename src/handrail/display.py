"""How a tool call looks, as plain data: the display contract every front end reads.

A tool describes its call in every state (running, waiting for approval, done, failed, denied,
cancelled) as a `Display`: a title, a subtitle, a group key, optional progress and an optional
body (a diff, text with head and tail, a table). No terminal markup: the terminal, the
`stream-json` output, an IDE or a web page each draw it their own way.

`Tool.display(view)` returns one; the base class builds it from the tool's kind, name and
result, and each built-in tool overrides it. A third-party tool does the same:

```python
class Deploy(Tool):
    def display(self, view: CallView) -> Display:
        base = super().display(view)
        return replace(base, title=f"Deploy {view.arguments.get('service', '?')}")
```

Values only, like the contract: nothing here does I/O. The values hold the exact text; a
front end that prints them to a terminal passes each string through `terminal_text` first
(nothing a model, a tool or a server wrote may act on the terminal).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast

from ._contract import EMPTY, Approval, Denial, ErrorCode, ToolCall, ToolKind, ToolResult

__all__ = [
    "Body",
    "CallProgress",
    "CallStatus",
    "CallView",
    "DiffBody",
    "Display",
    "DisplayGroup",
    "TableBody",
    "TextBody",
    "call_arguments",
    "default_display",
    "failure_line",
    "group_summary",
    "one_line",
    "status_of",
    "terminal_text",
]

TITLE_CHARS = 120
"""Titles and subtitles are cut to this many characters (one line in any UI)."""


class CallStatus(enum.StrEnum):
    """Where a call is in its life."""

    RUNNING = "running"
    """Sent to the runtime: queued or running."""
    WAITING = "waiting"
    """Waiting for the user's approval."""
    DONE = "done"
    FAILED = "failed"
    DENIED = "denied"
    """Refused by a rule, the mode, a hook, root confinement or the user."""
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        """True once the call has its result."""
        return self not in (CallStatus.RUNNING, CallStatus.WAITING)


class DisplayGroup(enum.StrEnum):
    """What kind of work a call is, for grouping: reads collapse, writes stand alone."""

    READ = "read"
    SEARCH = "search"
    LIST = "list"
    EDIT = "edit"
    SHELL = "shell"
    FETCH = "fetch"
    AGENT = "agent"
    OTHER = "other"

    @property
    def collapsible(self) -> bool:
        """Consecutive calls of these groups may show as one line (`Read 3 files, ...`)."""
        return self in (DisplayGroup.READ, DisplayGroup.SEARCH, DisplayGroup.LIST)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallProgress:
    """How a running call is getting on."""

    elapsed: float = 0.0
    """Seconds since the call started."""
    bytes: int | None = None
    """Bytes of output or transfer so far, when the tool knows."""
    lines: tuple[str, ...] = ()
    """The latest output lines (a shell's tail), newest last."""
    message: str = ""
    """The latest activity, in a few words (a sub-agent's current call)."""

    def to_json(self) -> dict[str, Any]:
        """The progress as JSON."""
        out: dict[str, Any] = {"elapsed": round(self.elapsed, 3)}
        if self.bytes is not None:
            out["bytes"] = self.bytes
        if self.lines:
            out["lines"] = list(self.lines)
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffBody:
    """A unified diff with its added and removed line counts."""

    kind: ClassVar[str] = "diff"
    diff: str
    added: int
    removed: int

    @classmethod
    def of(cls, diff: str) -> DiffBody:
        """Count the `+` and `-` lines of a unified diff (headers excluded)."""
        added = removed = 0
        for line in diff.splitlines():
            if line.startswith(("+++", "---")):
                continue
            if line.startswith("+"):
                added += 1
            elif line.startswith("-"):
                removed += 1
        return cls(diff=diff, added=added, removed=removed)

    def to_json(self) -> dict[str, Any]:
        """The body as JSON."""
        return {"kind": self.kind, "diff": self.diff, "added": self.added, "removed": self.removed}


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBody:
    """Text shown as its first and last lines, with how many lines lie between."""

    kind: ClassVar[str] = "text"
    head: tuple[str, ...]
    tail: tuple[str, ...] = ()
    omitted: int = 0
    """Lines left out between `head` and `tail`."""

    @classmethod
    def of(cls, text: str, *, head: int = 2, tail: int = 2) -> TextBody:
        r"""Keep `head` + `tail` lines of `text` (all of it when that is no more).

        Lines end at `\n` (or CRLF) only: a lone `\r` stays inside its line, for the front
        end to spell out, rather than starting a line that looks like another one.
        """
        lines = text.replace("\r\n", "\n").rstrip("\n").split("\n") if text.strip() else []
        if len(lines) <= head + tail + 1:  # one hidden line costs as much as the marker
            return cls(head=tuple(lines))
        return cls(
            head=tuple(lines[:head]),
            tail=tuple(lines[len(lines) - tail :]) if tail else (),
            omitted=len(lines) - head - tail,
        )

    @property
    def lines(self) -> int:
        """How many lines the whole text had."""
        return len(self.head) + self.omitted + len(self.tail)

    def to_json(self) -> dict[str, Any]:
        """The body as JSON."""
        return {
            "kind": self.kind,
            "head": list(self.head),
            "tail": list(self.tail),
            "omitted": self.omitted,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TableBody:
    """Rows under column headings (matches per file, a todo list)."""

    kind: ClassVar[str] = "table"
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    omitted: int = 0
    """Rows left out after the last one shown."""

    def to_json(self) -> dict[str, Any]:
        """The body as JSON."""
        return {
            "kind": self.kind,
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "omitted": self.omitted,
        }


Body = DiffBody | TextBody | TableBody


@dataclass(frozen=True, slots=True, kw_only=True)
class Display:
    """One call as a UI shows it: `Read src/app.py` / `lines 1-200 of 812`."""

    title: str
    """The action and its object, e.g. `Read src/app.py`, `Run pytest -q`."""
    subtitle: str = ""
    """A short detail: `lines 1-200 of 812`, `exit 0`, `+3 -1`, the error in a few words."""
    status: CallStatus = CallStatus.RUNNING
    group: DisplayGroup = DisplayGroup.OTHER
    progress: CallProgress | None = None
    body: Body | None = None
    duration: float = 0.0
    """Seconds the call took, once finished."""
    tool_name: str = ""
    call_id: str = ""

    def to_json(self) -> dict[str, Any]:
        """The display as JSON (the `display` field of `stream-json` tool events)."""
        out: dict[str, Any] = {
            "title": self.title,
            "subtitle": self.subtitle,
            "status": self.status.value,
            "group": self.group.value,
        }
        if self.progress is not None:
            out["progress"] = self.progress.to_json()
        if self.body is not None:
            out["body"] = self.body.to_json()
        if self.status.finished:
            out["duration"] = round(self.duration, 3)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CallView:
    """What a tool is told when it describes a call: the call, where it is, what it gave."""

    call: ToolCall
    arguments: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """The call's arguments as parsed JSON (`{}` when they are not a JSON object): the
    model's own, not yet validated, so read them with `.get` and expect any type."""
    status: CallStatus = CallStatus.RUNNING
    result: ToolResult | None = None
    """The result, once the call is finished."""
    progress: CallProgress | None = None
    """The call's latest progress, while it runs."""
    data: Mapping[str, Any] = EMPTY
    """The data of the tool's latest progress report (`ctx.progress(..., **data)`)."""
    cwd: str = ""
    """The session's working directory, to show paths relative to it (`relative`)."""

    def relative(self, path: str) -> str:
        """`path` relative to `cwd` when it lies under it, else as given (one line)."""
        cwd = self.cwd.rstrip("/")
        if cwd and path.startswith(cwd + "/"):
            path = path[len(cwd) + 1 :]
        elif cwd and path == cwd:
            path = "."
        return one_line(path)

    def text(self, key: str, default: str = "") -> str:
        """An argument as a one-line string (`default` when missing or not a string)."""
        value = self.arguments.get(key)
        return one_line(value) if isinstance(value, str) else default


def call_arguments(call: ToolCall) -> Mapping[str, Any]:
    """A call's arguments as a JSON object, `{}` when they are not one."""
    args: object = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return {}
    return cast("Mapping[str, Any]", args) if isinstance(args, Mapping) else {}


def status_of(result: ToolResult) -> CallStatus:
    """The status a finished result shows as."""
    if result.ok:
        return CallStatus.DONE
    if result.denial is not None or result.error in _DENIED:
        return CallStatus.DENIED
    if result.error in (ErrorCode.CANCELLED, ErrorCode.INTERRUPTED):
        return CallStatus.CANCELLED
    return CallStatus.FAILED


_DENIED = frozenset(
    {ErrorCode.PERMISSION_DENIED, ErrorCode.OUTSIDE_READ_ROOTS, ErrorCode.OUTSIDE_WRITE_ROOTS}
)

_GROUPS: Mapping[ToolKind, DisplayGroup] = {
    ToolKind.READ: DisplayGroup.READ,
    ToolKind.SEARCH: DisplayGroup.SEARCH,
    ToolKind.EDIT: DisplayGroup.EDIT,
    ToolKind.DELETE: DisplayGroup.EDIT,
    ToolKind.MOVE: DisplayGroup.EDIT,
    ToolKind.EXECUTE: DisplayGroup.SHELL,
    ToolKind.FETCH: DisplayGroup.FETCH,
}


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _args_hint(arguments: Mapping[str, Any]) -> str:
    # The first string argument says most about a call (a path, a query, a command).
    for value in arguments.values():
        if isinstance(value, str) and value.strip():
            return value
    return ""


def default_display(view: CallView, *, name: str, kind: ToolKind = ToolKind.OTHER) -> Display:
    """How a call looks when its tool says nothing more: built from the kind, name and result.

    Tools overriding `Tool.display` usually start from this and `replace` what they know
    better (the title, the subtitle, the body).
    """
    hint = _args_hint(view.arguments)
    title = one_line(f"{name} {hint}" if hint else name)
    group = DisplayGroup.AGENT if name == "agent" else _GROUPS.get(kind, DisplayGroup.OTHER)
    result = view.result
    if result is None:
        return Display(
            title=title,
            status=view.status,
            group=group,
            progress=view.progress,
            tool_name=name,
            call_id=view.call.id,
        )
    status = status_of(result)
    body: Body | None = None
    if status is CallStatus.DONE:
        subtitle = result.summary or (result.content.strip().splitlines() or [""])[0]
        if result.diff:
            body = DiffBody.of(result.diff)
    else:
        subtitle = failure_line(result)
    return Display(
        title=title,
        subtitle=one_line(subtitle),
        status=status,
        group=group,
        body=body,
        duration=result.duration,
        tool_name=name,
        call_id=view.call.id,
    )


def failure_line(result: ToolResult) -> str:
    """A failed result in a few words: who denied it and why, or the first line of its text.

    Denials all start with `denied`: `denied by the user`, `denied by the user: <their
    words>`, `denied by rule run_shell(rm:*)`, or `denied: <reason>` (the mode, root
    confinement, a hook).
    """
    if result.denial is not None:
        return one_line(_denial_line(result.denial))
    text = (result.content.strip().splitlines() or [""])[0]
    return one_line(text or (result.error.value if result.error else "failed"))


def _denial_line(denial: Denial) -> str:
    reason = denial.reason.strip().rstrip(".")
    if denial.source == "user":
        plain = not reason or denial.reason == Approval.deny().reason  # a bare "no"
        return "denied by the user" if plain else f"denied by the user: {reason}"
    if denial.source == "rule" and denial.rule:
        return f"denied by rule {denial.rule}"
    return f"denied: {reason}" if reason else "denied"


# verb while running, verb when done, noun, plural noun
_PHRASES: Mapping[DisplayGroup, tuple[str, str, str, str]] = {
    DisplayGroup.READ: ("reading", "read", "file", "files"),
    DisplayGroup.SEARCH: ("searching", "searched", "pattern", "patterns"),
    DisplayGroup.LIST: ("listing", "listed", "directory", "directories"),
    DisplayGroup.FETCH: ("fetching", "fetched", "page", "pages"),
    DisplayGroup.EDIT: ("editing", "edited", "file", "files"),
    DisplayGroup.SHELL: ("running", "ran", "command", "commands"),
    DisplayGroup.AGENT: ("running", "ran", "agent", "agents"),
    DisplayGroup.OTHER: ("calling", "called", "tool", "tools"),
}


def group_summary(displays: Sequence[Display]) -> str:
    """One line for a run of calls: `Read 3 files, searched 2 patterns, listed 1 directory`.

    In the `-ing` form while any of them still runs (`Reading 3 files, ...`); groups appear in
    the order their first call came.
    """
    running = any(not d.status.finished for d in displays)
    counts: dict[DisplayGroup, int] = {}
    for d in displays:
        counts[d.group] = counts.get(d.group, 0) + 1
    parts: list[str] = []
    for group, n in counts.items():
        doing, done, noun, nouns = _PHRASES[group]
        parts.append(f"{doing if running else done} {n} {noun if n == 1 else nouns}")
    text = ", ".join(parts)
    return text[:1].upper() + text[1:]


# -- text for a terminal ----------------------------------------------------------------------

# Characters a terminal acts on or that hide, reorder or fake what a person reads: C0 controls
# (ESC opens every CSI, OSC, DCS, APC, PM and SOS sequence; CR overwrites; BS, BEL, SO/SI),
# DEL, C1 controls (U+009B is a one-character CSI), the soft hyphen, invisible joiners and
# fillers, bidirectional marks, embeddings, overrides and isolates, line and paragraph
# separators, the BOM, tag characters, and lone surrogates (which cannot even be encoded).
_HIDDEN = (
    r"\xad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    r"\ufeff\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f\ud800-\udfff"
)
_UNSAFE_LINES = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_HIDDEN}]")  # keeps \t and \n
_UNSAFE_LINE = re.compile(rf"[\x00-\x1f\x7f-\x9f{_HIDDEN}]")
_JOINERS = frozenset("\u200c\u200d")


def terminal_text(text: str, *, multiline: bool = True) -> str:
    r"""`text` made safe to print on a terminal: nothing in it acts on the terminal or hides.

    Every control character, and every invisible character that could hide, reorder or fake
    part of what a person reads, shows as its Python escape, as text: an escape sequence
    stays visible and does nothing (`\x1b]52;c;...\x07`, `\x1b[2J`, `\x9b1A`), a carriage
    return shows as `\r` instead of printing the rest of its line over the start, a bidi
    override as `\u202e`, a zero-width space inside a command as `\u200b`. Newlines and tabs
    stay, and a carriage return that ends a line (CRLF) is dropped; with `multiline=False`
    they show as `\n`, `\t` and `\r` too, for what must stay on one line (a path, a rule).
    A zero-width joiner or non-joiner between two non-ASCII characters stays (emoji
    sequences, Persian). Printable text, backslashes included, is left as it is, so the
    result of a string with nothing to escape is that string.

    For text shown to a person only: JSON output keeps the exact text. Hand the result to
    rich as `Text`, never as a markup string (`[bold]` in it is the model's, not rich's).

    Args:
        text: Text from a model, a tool, its arguments, a file or a server.
        multiline: Keep newlines and tabs (and drop the CR of a CRLF).

    Returns:
        The text with each such character spelled as its escape; `text` itself when it
        holds none.
    """
    unsafe = _UNSAFE_LINES if multiline else _UNSAFE_LINE
    if unsafe.search(text) is None:  # the common case: one scan, no copy
        return text
    return unsafe.sub(_shown_line_ends if multiline else _shown, text)


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char in _JOINERS:
        text, start, end = match.string, match.start(), match.end()
        if start > 0 and end < len(text) and _visible(text[start - 1]) and _visible(text[end]):
            return char  # joins letters or emoji no ASCII word is spelled with
    return char.encode("unicode_escape").decode("ascii")


def _shown_line_ends(match: re.Match[str]) -> str:
    if match.group() == "\r":
        text, end = match.string, match.end()
        if end == len(text) or text[end] == "\n":
            return ""  # it ends a line: there is nothing after it to print over
    return _shown(match)


def _visible(char: str) -> bool:
    return not char.isascii() and char.isprintable()
