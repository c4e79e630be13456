"""Path resolution for permission checks: one place, used for every tool.

`resolve_path` turns what a model wrote into the absolute, symlink-free path the policy checks:
a leading `@` (mention syntax) is stripped, `~` is expanded, relative paths resolve against the
session cwd, and symlinks are resolved with realpath (for a path that does not exist yet: the
realpath of its deepest existing ancestor plus the rest).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ToolFailure

__all__ = ["resolve_path"]


def resolve_path(path: str, cwd: Path) -> str:
    """The absolute, resolved form of `path` as a model wrote it."""
    if "\x00" in path:
        raise ToolFailure("The path contains a NUL byte; send the path as plain text.")
    if path.startswith("@"):
        path = path[1:]
    path = os.path.expanduser(path)
    joined = os.path.normpath(os.path.join(cwd, path))
    return _realpath_of_existing_prefix(joined)


def _realpath_of_existing_prefix(path: str) -> str:
    if os.path.lexists(path):
        return os.path.realpath(path)
    head, tail = os.path.split(path)
    rest = [tail]
    while head and not os.path.lexists(head):
        head, tail = os.path.split(head)
        if not tail:
            break
        rest.append(tail)
    base = os.path.realpath(head) if head else os.sep
    return os.path.normpath(os.path.join(base, *reversed(rest)))
