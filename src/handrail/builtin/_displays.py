"""How each built-in tool's calls look: one `Tool.display` function per tool.

Built only on the public display contract (`handrail.display`), as a third-party tool's would
be. Each function starts from `default_display` (status, group, failure line, duration) and
replaces what the tool knows better: a short title in the imperative (`Read app.py`), a
subtitle (`lines 1-200 of 812`, `exit 2`, `+3 -1`), and a body (the proposed diff while an edit
waits for approval, a shell's output head and tail).

Arguments are the model's unvalidated JSON: every reader here tolerates a missing key, a wrong
type or a non-object, and nothing does I/O (a display is built on every progress event).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from .. import ErrorCode, ToolKind, ToolResult
from ..display import (
    Body,
    CallProgress,
    CallStatus,
    CallView,
    DiffBody,
    Display,
    DisplayGroup,
    TableBody,
    TextBody,
    default_display,
    one_line,
    status_of,
    terminal_text,
)
from ..sandbox import unified_diff
from ._i18n import size_text
from ._shell_text import CATALOG as SHELL_CATALOG

__all__ = [
    "edit_display",
    "enter_plan_display",
    "exit_plan_display",
    "fetch_display",
    "grep_display",
    "list_display",
    "read_display",
    "shell_display",
    "shell_output_display",
    "skill_display",
    "todo_display",
    "write_display",
]

LIVE_LINES = 5
"""Output lines a running shell call shows (the newest)."""
PLAN_LINES = 20
"""Lines of a plan shown while it waits for approval."""
COMMAND_HEAD, COMMAND_TAIL = 40, 10
"""Lines of a long command shown while it waits for approval (the title holds one line)."""


# -- reading the model's arguments and the tools' metadata, whatever their shape -------------


def _raw(args: Mapping[str, Any], key: str) -> str:
    """A string argument as given (multi-line kept), `""` when missing or not a string."""
    value = args.get(key)
    return value if isinstance(value, str) else ""


def _int(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _flag(data: Mapping[str, Any], key: str) -> bool:
    return data.get(key) is True


def _path(view: CallView, key: str, default: str = "?") -> str:
    """A path argument, normalised (no I/O) and relative to the cwd when below it."""
    raw = _raw(view.arguments, key).strip()
    if not raw:
        return default
    # A newline or tab in a path is spelled out: collapsed to a space by the one-line title,
    # `new.txt\nwrite /etc/motd` would read as something else.
    return view.relative(posixpath.normpath(terminal_text(raw, multiline=False)))


def _quoted(text: str) -> str:
    return f'"{one_line(text, 60)}"'


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def _start(view: CallView, name: str, kind: ToolKind, group: DisplayGroup, title: str) -> Display:
    """The default display with this tool's title and group."""
    return replace(default_display(view, name=name, kind=kind), title=one_line(title), group=group)


def _done(view: CallView) -> ToolResult | None:
    """The result when the call succeeded (None while it runs, or when it failed)."""
    result = view.result
    return result if result is not None and status_of(result) is CallStatus.DONE else None


def _diff_of(result: ToolResult) -> DiffBody | None:
    return DiffBody.of(result.diff) if result.diff else None


def _plus_minus(added: int | None, removed: int | None, body: Body | None) -> str:
    if added is None or removed is None:
        if not isinstance(body, DiffBody):
            return ""
        added, removed = body.added, body.removed
    return f"+{added} -{removed}"


def _join(*parts: str) -> str:
    return one_line(", ".join(p for p in parts if p))


# -- read_file, list_files, grep_search ------------------------------------------------------


def read_display(view: CallView, *, name: str = "read_file") -> Display:
    """`Read app.py` / `lines 1-200 of 812`."""
    shown = _start(view, name, ToolKind.READ, DisplayGroup.READ, f"Read {_path(view, 'file_path')}")
    result = _done(view)
    if result is None:
        offset, limit = _int(view.arguments, "offset"), _int(view.arguments, "limit")
        if view.result is None and (offset or limit):
            first = offset or 1
            last = f"-{first + limit - 1}" if limit else "+"
            return replace(shown, subtitle=f"lines {first}{last}")
        return shown
    meta = result.metadata
    first, last = _int(meta, "first_line"), _int(meta, "last_line")
    total = _int(meta, "total_lines")
    if total == 0:
        subtitle = "empty"
    elif first is None or last is None or total is None:
        return shown
    elif first == 1 and last == total:
        subtitle = _count(total, "line")
    else:
        subtitle = f"lines {first}-{last} of {total:,}"
    if _flag(meta, "unchanged"):
        subtitle += ", unchanged since the last read"
    return replace(shown, subtitle=subtitle)


def list_display(view: CallView, *, name: str = "list_files") -> Display:
    """`List src` or `List "*.py" in src` / `12 files`."""
    where = _path(view, "path", ".")
    pattern = view.text("pattern")
    if pattern in ("", "**/*", "**"):
        title = f"List {where}"
    else:
        title = f"List {_quoted(pattern)}" + (f" in {where}" if where != "." else "")
    shown = _start(view, name, ToolKind.SEARCH, DisplayGroup.LIST, title)
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    total, count = _int(meta, "total"), _int(meta, "shown")
    if total is None:
        return shown
    if total == 0:
        subtitle = "no files"
    elif count is not None and count < total:
        subtitle = f"{count:,} of {_count(total, 'file')}"
    else:
        subtitle = _count(total, "file")
    return replace(shown, subtitle=_join(subtitle, "partial" if _flag(meta, "partial") else ""))


def grep_display(view: CallView, *, name: str = "grep_search") -> Display:
    """`Search "def login" in src (*.py)` / `3 matches in 2 files`."""
    title = f"Search {_quoted(view.text('pattern') or '?')}"
    if _raw(view.arguments, "path").strip():
        title += f" in {_path(view, 'path')}"
    scope = view.text("glob") or view.text("type")
    if scope:
        title += f" ({one_line(scope, 40)})"
    shown = _start(view, name, ToolKind.SEARCH, DisplayGroup.SEARCH, title)
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    files, matches = _int(meta, "files"), _int(meta, "matches")
    if files is None:
        return shown
    if matches is not None:
        subtitle = f"{_count(matches, 'match', 'matches')} in {_count(files, 'file')}"
    else:
        subtitle = _count(files, "file")
    if not files:
        subtitle = "no matches"
    return replace(shown, subtitle=_join(subtitle, "partial" if _flag(meta, "partial") else ""))


# -- write_file, edit_file -------------------------------------------------------------------


def _lf(text: str) -> str:
    text = text.replace("\r\n", "\n")
    return text if not text or text.endswith("\n") else text + "\n"


def write_display(view: CallView, *, name: str = "write_file") -> Display:
    """`Write app.py`; waiting: the new content as `+` lines; done: `+N -M` and the diff."""
    path = _path(view, "file_path")
    shown = _start(view, name, ToolKind.EDIT, DisplayGroup.EDIT, f"Write {path}")
    if view.status is CallStatus.WAITING and view.result is None:
        # Only the arguments, no I/O: whether a file is replaced is known once it runs.
        content = _lf(_raw(view.arguments, "content"))
        lines = content.count("\n")
        body = DiffBody.of(unified_diff("", content, path)) if content else None
        return replace(shown, subtitle=f"new content, {_count(lines, 'line')}", body=body)
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    body = _diff_of(result)
    if meta.get("written") is False:
        return replace(shown, subtitle="unchanged", body=None)
    stat = _plus_minus(_int(meta, "added"), _int(meta, "removed"), body)
    return replace(
        shown, subtitle=_join("new file" if _flag(meta, "created") else "", stat), body=body
    )


def _edit_pairs(args: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """(old, new, replace_all) per replacement the arguments ask for; junk items skipped."""
    items: Any = args.get("edits")
    pairs: list[tuple[str, str, bool]] = []
    if isinstance(items, list) and items:
        for item in cast(list[Any], items):
            if isinstance(item, Mapping):
                edit = cast(Mapping[str, Any], item)
                pairs.append(
                    (_raw(edit, "old_string"), _raw(edit, "new_string"), _flag(edit, "replace_all"))
                )
        return pairs
    return [(_raw(args, "old_string"), _raw(args, "new_string"), _flag(args, "replace_all"))]


def _proposed_diff(path: str, pairs: Sequence[tuple[str, str, bool]]) -> str:
    """One diff of every replacement (old_string -> new_string), under one header."""
    hunks: list[str] = []
    for old, new, _ in pairs:
        diff = unified_diff(_lf(old), _lf(new), path)
        hunks += diff.splitlines(keepends=True)[2:]  # the `---`/`+++` header once, below
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(hunks) if hunks else ""


def edit_display(view: CallView, *, name: str = "edit_file") -> Display:
    """`Edit app.py`; waiting: the replaced lines as a diff; done: `+N -M` and the diff."""
    path = _path(view, "file_path")
    shown = _start(view, name, ToolKind.EDIT, DisplayGroup.EDIT, f"Edit {path}")
    if view.status is CallStatus.WAITING and view.result is None:
        pairs = _edit_pairs(view.arguments)
        diff = _proposed_diff(path, pairs)
        body = DiffBody.of(diff) if diff else None
        every = any(all_ for _, _, all_ in pairs)
        return replace(
            shown,
            subtitle=_join(
                _plus_minus(None, None, body),
                _count(len(pairs), "edit") if len(pairs) > 1 else "",
                "every occurrence" if every else "",
            ),
            body=body,
        )
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    body = _diff_of(result)
    count = _int(meta, "replacements") or 0
    return replace(
        shown,
        subtitle=_join(
            _plus_minus(_int(meta, "added"), _int(meta, "removed"), body),
            _count(count, "replacement") if count > 1 else "",
        ),
        body=body,
    )


# -- run_shell, shell_output -----------------------------------------------------------------


def _prefixes(*keys: str) -> tuple[str, ...]:
    """The fixed start of these catalog messages in every locale (up to the first field)."""
    out: list[str] = []
    for messages in SHELL_CATALOG.values():
        for key in keys:
            head = messages[key].split("{", 1)[0]
            if head:
                out.append(head)
    return tuple(out)


_NOTE_PREFIXES = _prefixes("unsandboxed")
_HINT_PREFIXES = (
    *_prefixes("sandbox_hint", "stale"),
    "Note: sandboxed commands see",  # run_shell's READS_CATALOG hint (one line, last)
    "注意:沙箱中的命令只能看到",
)
_NO_OUTPUT = frozenset(m["no_output"] for m in SHELL_CATALOG.values())
_NEW_OUTPUT = frozenset(m["new_output"] for m in SHELL_CATALOG.values())


def shell_output_text(result: ToolResult) -> str:
    """The command's own output in a run_shell result, without the framing for the model.

    That is the exit or timeout line before it, the sandbox notes and the stale-file list after.
    """
    lines = result.content.split("\n")
    start = 1 if lines and lines[0].startswith(_NOTE_PREFIXES) else 0
    if result.error in (ErrorCode.NONZERO_EXIT, ErrorCode.TIMEOUT):
        start += 1
    end = len(lines)
    for _ in range(3):  # at most three notes follow the output
        if end > start and lines[end - 1].startswith(_HINT_PREFIXES):
            end -= 1
    out = "\n".join(lines[start:end])
    return "" if out.strip() in _NO_OUTPUT else out


def _live(view: CallView) -> CallProgress | None:
    """The call's progress with the newest output lines (from run_shell's `lines` data)."""
    raw: Any = view.data.get("lines")
    if not isinstance(raw, list) or not raw:
        return view.progress
    lines = [one_line(x, 200) for x in cast(list[Any], raw) if isinstance(x, str)]
    return replace(view.progress or CallProgress(), lines=tuple(lines[-LIVE_LINES:]))


def shell_display(view: CallView, *, name: str = "run_shell") -> Display:
    """`Run pytest -q`; running: the last output lines; done: `exit 0` and head/tail output."""
    command = _raw(view.arguments, "command")
    lines = [line for line in command.strip().splitlines() if line.strip()]
    first = (lines[0] + (" ..." if len(lines) > 1 else "")) if lines else "?"
    shown = _start(view, name, ToolKind.EXECUTE, DisplayGroup.SHELL, f"Run {first}")
    background = _flag(view.arguments, "run_in_background")
    result = view.result
    if result is None:
        subtitle = _join(view.text("description"), "in the background" if background else "")
        body: Body | None = None
        if view.status is CallStatus.WAITING and (len(lines) > 1 or len(command) > 100):
            # The title holds one cut line; the user approves the whole command.
            body = TextBody.of(command, head=COMMAND_HEAD, tail=COMMAND_TAIL)
        return replace(shown, subtitle=subtitle, body=body, progress=_live(view))
    meta = result.metadata
    job = meta.get("job_id")
    if result.ok and isinstance(job, str):
        return replace(shown, subtitle=f"background job {one_line(job, 40)}")
    code = _int(meta, "exit_code")
    if result.error is ErrorCode.TIMEOUT:
        subtitle = "timed out"
    elif result.ok or result.error is ErrorCode.NONZERO_EXIT:
        if code is None:
            return shown
        signal = meta.get("signal")
        subtitle = f"exit {code}" + (f" ({signal})" if isinstance(signal, str) else "")
    else:
        return shown  # refused, cancelled, not started: the default failure line
    output = shell_output_text(result)
    body = TextBody.of(output, head=2, tail=2) if output.strip() else None
    return replace(shown, subtitle=subtitle, body=body)


def shell_output_display(view: CallView, *, name: str = "shell_output") -> Display:
    """`Output of sh-1` (`Stop sh-1`) / `running`, `exit 0`, ... and the new output."""
    job = view.text("job_id") or "?"
    title = f"Stop {job}" if _flag(view.arguments, "stop") else f"Output of {job}"
    shown = _start(view, name, ToolKind.EXECUTE, DisplayGroup.SHELL, title)
    result = _done(view)
    if result is None:
        wait = view.arguments.get("wait_seconds")
        if view.result is None and isinstance(wait, int | float) and wait > 0:
            return replace(shown, subtitle=f"waiting up to {wait:g} s")
        return shown
    meta = result.metadata
    status, code = meta.get("status"), _int(meta, "exit_code")
    subtitle = {
        "running": "running",
        "exited": f"exit {code}",
        "timeout": "timed out",
        "stopped": "stopped",
    }.get(status if isinstance(status, str) else "", "")
    lines = result.content.split("\n")
    new = next((i for i, line in enumerate(lines) if line in _NEW_OUTPUT), None)
    output = "\n".join(lines[new + 1 :]) if new is not None else ""
    body = TextBody.of(output, head=2, tail=2) if output.strip() else None
    return replace(shown, subtitle=_join(subtitle, "" if body else "no new output"), body=body)


# -- todo_write, web_fetch, plan mode, skill -------------------------------------------------


def _todo_rows(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    items: Any = args.get("todos")
    rows: list[tuple[str, str]] = []
    if isinstance(items, list):
        for item in cast(list[Any], items):
            if isinstance(item, Mapping):
                todo = cast(Mapping[str, Any], item)
                status = one_line(_raw(todo, "status").replace("_", " "), 20)
                rows.append((status or "?", one_line(_raw(todo, "content"), 100)))
    return rows


def todo_display(view: CallView, *, name: str = "todo_write") -> Display:
    """`Update todos` and the list as a (status, task) table / `2/5 completed`."""
    shown = _start(view, name, ToolKind.THINK, DisplayGroup.OTHER, "Update todos")
    rows = _todo_rows(view.arguments)
    body = TableBody(columns=("status", "task"), rows=tuple(rows)) if rows else None
    if view.result is not None and _done(view) is None:
        return shown  # refused: the failure line says why, and the list was not kept
    done = sum(1 for status, _ in rows if status == "completed")
    subtitle = f"{done}/{len(rows)} completed" if rows else "cleared"
    return replace(shown, subtitle=subtitle if view.result is not None else "", body=body)


def fetch_display(view: CallView, *, name: str = "web_fetch") -> Display:
    """`Fetch https://...` / `HTTP 200, 12.3 KB`."""
    shown = _start(
        view, name, ToolKind.FETCH, DisplayGroup.FETCH, f"Fetch {view.text('url') or '?'}"
    )
    if view.result is None:
        fmt = view.text("format")
        return replace(shown, subtitle=fmt if fmt in ("text", "raw") else "")
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    status, size = _int(meta, "status"), _int(meta, "bytes")
    target = meta.get("redirect")
    if isinstance(target, str):
        return replace(shown, subtitle=f"redirected to {one_line(target, 80)}")
    if status is None:
        return shown
    return replace(
        shown,
        subtitle=_join(
            f"HTTP {status}",
            size_text(size) if size is not None else "",
            "cached" if _flag(meta, "cached") else "",
        ),
    )


def enter_plan_display(view: CallView, *, name: str = "enter_plan_mode") -> Display:
    """`Enter plan mode` / the reason given."""
    shown = _start(view, name, ToolKind.OTHER, DisplayGroup.OTHER, "Enter plan mode")
    if view.result is not None and _done(view) is None:
        return shown
    return replace(shown, subtitle=view.text("reason"))


def exit_plan_display(view: CallView, *, name: str = "exit_plan_mode") -> Display:
    """`Exit plan mode`; waiting: the plan for the user to approve; done: the mode now."""
    shown = _start(view, name, ToolKind.OTHER, DisplayGroup.OTHER, "Exit plan mode")
    plan = _raw(view.arguments, "plan").strip()
    if view.status is CallStatus.WAITING and view.result is None:
        lines = len(plan.splitlines())
        body = TextBody.of(plan, head=PLAN_LINES, tail=0) if plan else None
        return replace(shown, subtitle=f"plan of {_count(lines, 'line')}", body=body)
    result = _done(view)
    if result is None:
        return shown
    mode = result.metadata.get("mode")
    return replace(
        shown, subtitle=f"back to {one_line(mode, 30)} mode" if isinstance(mode, str) else ""
    )


def skill_display(view: CallView, *, name: str = "skill") -> Display:
    """`Load skill review` / `project skill, 3 files`."""
    shown = _start(
        view, name, ToolKind.OTHER, DisplayGroup.OTHER, f"Load skill {view.text('name') or '?'}"
    )
    result = _done(view)
    if result is None:
        return shown
    meta = result.metadata
    source, files, rules = meta.get("source"), meta.get("files"), meta.get("allowed_tools")
    return replace(
        shown,
        subtitle=_join(
            f"{source} skill" if isinstance(source, str) else "",
            _count(len(cast(list[Any], files)), "file") if isinstance(files, list) else "",
            f"allows {_count(len(cast(list[Any], rules)), 'rule')}"
            if isinstance(rules, list) and rules
            else "",
        ),
    )
