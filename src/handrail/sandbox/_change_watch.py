"""Which paths may have changed since the last look: inotify where Linux offers it.

Checkpoints must know what a call changed, shell commands included, without reading the whole
workspace around every call. Each tracked (not ignored) folder gets an inotify watch; the
kernel queues an event for every entry created, written, deleted, renamed or re-moded inside,
whoever did it (a sandboxed command in its own namespaces too), before the writing syscall
returns. So once a call has returned, `changed()` lists every path it touched. Where inotify
is missing, the watch limit is reached or the queue overflowed, `changed()` returns None and
the caller compares the whole tree by stat keys instead: slower, just as exact.

Limits (documented for users): writes through a shared `mmap` raise no event until the file
is closed or re-stat'ed; changes on a network file system made from another machine raise none.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from typing import Any

__all__ = ["ChangeWatch"]

logger = logging.getLogger("handrail")


def _inotify() -> Any:
    """The `inotify_simple` module (a Linux-only dependency), or None."""
    if sys.platform != "linux":
        return None
    try:
        return importlib.import_module("inotify_simple")
    except ImportError:  # pragma: no cover
        return None


class ChangeWatch:
    """Watches folders; `changed()` drains what happened in them since the last call."""

    def __init__(self) -> None:
        self._inotify: Any = None
        self._paths: dict[int, str] = {}
        self._lost = False
        self._mask = 0
        self.made: set[str] = set()
        """The folders made (or moved) in place since the last `changed()`: the one there now is
        another folder than before, even when it got the same inode number back."""
        module = _inotify()
        if module is None:
            return
        _flags = module.flags
        self._overflow = int(_flags.Q_OVERFLOW)
        self._ignored = int(_flags.IGNORED)
        self._made_mask = int(_flags.CREATE | _flags.MOVED_TO)
        self._isdir = int(_flags.ISDIR)
        try:
            self._inotify = module.INotify(nonblocking=True)
        except OSError as exc:  # too many instances (many sessions in one process)
            logger.info("checkpoints: no inotify (%s); whole-tree scans instead", exc)
            return
        self._mask = int(
            _flags.CREATE
            | _flags.DELETE
            | _flags.MODIFY
            | _flags.ATTRIB
            | _flags.MOVED_FROM
            | _flags.MOVED_TO
            | _flags.CLOSE_WRITE
            | _flags.DELETE_SELF
            | _flags.MOVE_SELF
            | _flags.DONT_FOLLOW
            | _flags.ONLYDIR
            | _flags.EXCL_UNLINK
        )

    @property
    def active(self) -> bool:
        """True while events are exact (a watch on every folder, no overflow)."""
        return self._inotify is not None and not self._lost

    def watch(self, folder: str) -> None:
        """Watch `folder`'s entries (again, after a rename: the new path is remembered)."""
        if self._inotify is None:
            return
        try:
            wd = int(self._inotify.add_watch(folder, self._mask))
        except OSError as exc:
            # Gone already (its deletion is an event of its parent), or out of watches.
            if exc.errno not in (2, 20):  # ENOENT, ENOTDIR
                logger.info("checkpoints: cannot watch %s (%s); whole-tree scans", folder, exc)
                self._lost = True
            return
        self._paths[wd] = folder

    def reset(self) -> None:
        """Forget every watch (before watching the folders of a fresh whole-tree scan)."""
        if self._inotify is None:
            return
        for wd in list(self._paths):
            with contextlib.suppress(OSError):
                self._inotify.rm_watch(wd)
        self._paths.clear()
        self._drain()
        self._lost = False

    def _drain(self) -> list[Any]:
        assert self._inotify is not None
        out: list[Any] = []
        for _ in range(10_000):  # bounded: a writer that never stops cannot hold us here
            try:
                events = self._inotify.read(timeout=0)
            except BlockingIOError:
                break
            if not events:
                break
            out.extend(events)
        return out

    def changed(self) -> set[str] | None:
        """The paths with an event since the last call, or None if the events are not exact.

        Not exact: no inotify, a watch could not be added, or the kernel's queue overflowed.
        """
        if self._inotify is None:
            return None
        paths: set[str] = set()
        self.made = set()
        for event in self._drain():
            mask, wd, name = int(event.mask), int(event.wd), str(event.name)
            if mask & self._overflow:
                self._lost = True
                continue
            folder = self._paths.get(wd)
            if mask & self._ignored:
                self._paths.pop(wd, None)
                continue
            if folder is None:
                continue
            path = os.path.join(folder, name) if name else folder
            paths.add(path)
            if name and mask & self._isdir and mask & self._made_mask:
                self.made.add(path)
        if self._lost:
            return None
        return paths

    def close(self) -> None:
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
            self._inotify = None
