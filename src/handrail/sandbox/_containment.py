"""Containment: is a resolved path inside the roots a call may read or write?

The policy refuses calls whose declared paths fall outside the roots before they run; tools
check again here, on the path they are about to open, so that what runs is what was allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._context import ToolContext
from .._contract import ErrorCode
from ..errors import ToolFailure
from ..permissions import PROTECTED_DIRS, is_within, protected_part
from ..permissions._hidden import hidden_entry, hidden_message, hidden_now
from ._paths import resolve_path

__all__ = ["PROTECTED_DIRS", "confine_read", "confine_write", "inside", "protected_part"]


def inside(path: str, roots: Sequence[Path]) -> Path | None:
    """The root containing `path` (by components, never by string prefix), or None."""
    return next((root for root in roots if is_within(path, root)), None)


def _roots_text(roots: Sequence[Path]) -> str:
    # A write root is usually a read root too: each is named once.
    return ", ".join(dict.fromkeys(str(r) for r in roots)) or "(none)"


def confine_read(path: str, ctx: ToolContext) -> str:
    """Resolve `path` and require it inside a read (or write) root; returns the resolved path."""
    resolved = resolve_path(path, ctx.cwd)
    roots = (*ctx.read_roots, *ctx.write_roots)
    if inside(resolved, roots) is None:
        raise ToolFailure(
            f"{resolved} is outside the allowed roots ({_roots_text(roots)}); "
            "use a path inside them.",
            code=ErrorCode.OUTSIDE_READ_ROOTS,
        )
    refuse_hidden(resolved, ctx, ErrorCode.OUTSIDE_READ_ROOTS)
    return resolved


def refuse_hidden(resolved: str, ctx: ToolContext, code: ErrorCode) -> None:
    """Refuse a resolved path inside one of the session's hidden (secret) locations."""
    hidden = hidden_now(ctx.hidden_paths, (*ctx.read_roots, *ctx.write_roots))
    entry = hidden_entry(resolved, hidden)
    if entry is not None:
        raise ToolFailure(hidden_message(resolved, entry), code=code)


def confine_write(path: str, ctx: ToolContext) -> str:
    """Resolve `path` and require it inside a write root and outside protected folders."""
    resolved = resolve_path(path, ctx.cwd)
    root = inside(resolved, ctx.write_roots)
    if root is None:
        raise ToolFailure(
            f"{resolved} is outside the write roots ({_roots_text(ctx.write_roots)}); "
            "only paths inside them can be changed.",
            code=ErrorCode.OUTSIDE_WRITE_ROOTS,
        )
    part = protected_part(resolved, root)
    if part is not None:
        raise ToolFailure(
            f"{resolved} is inside a {part}/ folder, which stays read-only.",
            code=ErrorCode.OUTSIDE_WRITE_ROOTS,
        )
    refuse_hidden(resolved, ctx, ErrorCode.OUTSIDE_WRITE_ROOTS)
    return resolved
