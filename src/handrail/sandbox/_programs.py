"""The programs handrail itself runs (git, find, bash...), looked up where commands cannot write.

handrail runs a few programs of its own, some outside any sandbox: `git config` for the git
guard, `find` for `.git` folders, the shell of a hook, the shell that supervises a command. A
lookup through `PATH` could find one in a folder a command may write (a workspace's `.venv/bin`,
`~/.local/bin` when the workspace is the home), and the next call would run what the command
left there. These come from the system's own folders; only where a program is not there is
`PATH` asked.
"""

from __future__ import annotations

import functools
import os
import shutil

__all__ = ["SYSTEM_BIN", "system_which"]

SYSTEM_BIN = (
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
    "/run/current-system/sw/bin",  # NixOS
)
"""Folders only an administrator can change."""


@functools.cache
def system_which(name: str) -> str | None:
    """`name` from the system's folders, else from `PATH` (None: nowhere)."""
    found = shutil.which(name, path=os.pathsep.join(SYSTEM_BIN))
    return found or shutil.which(name)
