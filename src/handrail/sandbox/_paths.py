"""Path resolution for permission checks: one place, used for every tool.

`resolve_path` turns what a model wrote into the absolute, symlink-free path the policy checks:
a leading `@` (mention syntax) is stripped, `~` is expanded, relative paths resolve against the
session cwd, and symlinks are resolved with realpath (for a path that does not exist yet: the
realpath of its deepest existing ancestor plus the rest).
"""

from __future__ import annotations

import os
from pathlib import Path

from .._contract import ErrorCode
from ..errors import ToolFailure

__all__ = ["resolve_path"]


def resolve_path(path: str, cwd: Path) -> str:
    """The absolute, resolved form of `path` as a model wrote it."""
    if "\x00" in path:
        raise ToolFailure(
            "The path contains a NUL byte; send the path as plain text.",
            code=ErrorCode.INVALID_ARGS,
        )
    if path.startswith("@"):
        path = path[1:]
    path = os.path.expanduser(path)
    # No lexical normalisation first: `link/..` is the parent of the link's target, not `.`.
    # realpath resolves component by component and keeps the missing tail of a new path.
    return os.path.realpath(os.path.join(cwd, path))
