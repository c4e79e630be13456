"""Hidden paths in the file tools: refusing them, and keeping them out of every walk.

The policy already refuses a call whose declared path is hidden; these checks run again on the
path a tool is about to open, and on what a walk (ripgrep) finds under a folder that holds a
hidden path (a workspace that is the home): such entries are excluded from rg's walk with
anchored `--glob` exclusions, and whatever rg still prints from inside them is dropped.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import ErrorCode, ToolContext, ToolFailure
from ..permissions._hidden import hidden_entry, hidden_message, hidden_now, is_glob

__all__ = ["HiddenFilter", "current_hidden", "hidden_filter", "refuse_hidden", "visible_names"]


def current_hidden(ctx: ToolContext) -> Sequence[Path]:
    """The call's hidden paths, plus where any inside the roots was moved (by identity)."""
    return hidden_now(ctx.hidden_paths, (*ctx.read_roots, *ctx.write_roots))


def refuse_hidden(
    path: str, ctx: ToolContext, code: ErrorCode = ErrorCode.OUTSIDE_READ_ROOTS
) -> None:
    """Raise `ToolFailure(code)` when the resolved `path` is, or lies in, a hidden path."""
    entry = hidden_entry(path, current_hidden(ctx))
    if entry is not None:
        raise ToolFailure(hidden_message(path, entry), code=code)


def visible_names(folder: str, names: Sequence[str], ctx: ToolContext) -> list[str]:
    """`names` in `folder` without the hidden ones (for "did you mean" suggestions)."""
    if not ctx.hidden_paths:
        return list(names)
    hidden = current_hidden(ctx)
    return [n for n in names if hidden_entry(os.path.join(folder, n), hidden) is None]


class HiddenFilter:
    """The hidden entries under one searched folder, for rg's arguments and its output."""

    def __init__(self, globs: tuple[str, ...], pattern: re.Pattern[str]) -> None:
        self.args = tuple(a for g in globs for a in ("--glob", g))
        """rg arguments excluding the entries from the walk (anchored at the folder)."""
        self._search = pattern.match

    def keep(self, record: str) -> bool:
        """False for an rg record (a path, a path then NUL and more, a `path: note`) inside one."""
        return self._search(record) is None

    def wrap(self, keep: Callable[[str], bool] | None) -> Callable[[str], bool]:
        """This filter, then `keep` (a record must pass both)."""
        if keep is None:
            return self.keep
        inner = keep
        return lambda record: self.keep(record) and inner(record)


_GLOB_SPECIAL = re.compile(r"([*?\[\]{}\\!])")


def _glob_literal(text: str) -> str:
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def _component_regex(pattern: str) -> str:
    """A glob for one path component (`*`, `?`, `[...]`) as a regex that never crosses `/`."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = (body[1:] if negate else body).replace("\\", "\\\\")
            out.append("[" + ("^" if negate else "") + body + "]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def hidden_filter(folder: str, hidden: Sequence[Path]) -> HiddenFilter | None:
    """The filter for a walk of `folder` (resolved), or None when no hidden entry lies inside."""
    base = folder.rstrip("/") + "/"
    globs: list[str] = []
    regexes: list[str] = []
    for entry in hidden:
        text = str(entry)
        if not text.startswith(base):
            continue
        rel_dir, name = os.path.split(text[len(base) :])
        prefix = rel_dir + "/" if rel_dir else ""
        if is_glob(name):
            globs.append("!/" + _glob_literal(prefix) + name)
            regexes.append(re.escape(prefix) + _component_regex(name))
        else:
            globs.append("!/" + _glob_literal(prefix + name))
            regexes.append(re.escape(prefix + name))
    if not globs:
        return None
    pattern = re.compile("(?:" + "|".join(regexes) + ")(?:[/\x00:]|$)")
    return HiddenFilter(tuple(globs), pattern)
