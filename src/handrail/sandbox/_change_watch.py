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

import errno
import importlib
import logging
import os
import sys
import threading
import weakref
from collections.abc import Iterable
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


class _Hub:
    """The process's one inotify instance, shared by every `ChangeWatch`.

    A user has 128 inotify instances by default, for every program they run (an editor
    needs some): one per session would run out with a host's hundred sessions, and would
    make each of them read every other's events. Here a folder is watched once whatever
    the number of sessions, and each event goes to the watches whose roots hold it.
    """

    def __init__(self, module: Any) -> None:
        flags = module.flags
        self.inotify = module.INotify(nonblocking=True)
        self.overflow = int(flags.Q_OVERFLOW)
        self.ignored = int(flags.IGNORED)
        self.made_mask = int(flags.CREATE | flags.MOVED_TO)
        self.isdir = int(flags.ISDIR)
        self.mask = int(
            flags.CREATE
            | flags.DELETE
            | flags.MODIFY
            | flags.ATTRIB
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.CLOSE_WRITE
            | flags.DELETE_SELF
            | flags.MOVE_SELF
            | flags.DONT_FOLLOW
            | flags.ONLYDIR
            | flags.EXCL_UNLINK
        )
        self.paths: dict[int, str] = {}
        self.watchers: weakref.WeakSet[ChangeWatch] = weakref.WeakSet()
        self.lock = threading.Lock()

    def add(self, folder: str) -> bool:
        """Watch `folder` (again: after a rename its events carry the new path).

        False when watches ran out.
        """
        try:
            wd = int(self.inotify.add_watch(folder, self.mask))
        except OSError as exc:
            # Gone already (its deletion is an event of its parent), or out of watches.
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return True
            logger.info("checkpoints: cannot watch %s (%s); whole-tree scans", folder, exc)
            return False
        with self.lock:
            self.paths[wd] = folder
        return True

    def pump(self) -> None:
        """Hand every queued event to the watches it concerns."""
        with self.lock:
            for _ in range(10_000):  # bounded: a writer that never stops cannot hold us here
                try:
                    events = self.inotify.read(timeout=0)
                except BlockingIOError:
                    break
                if not events:
                    break
                for event in events:
                    self._hand(int(event.mask), int(event.wd), str(event.name))

    def _hand(self, mask: int, wd: int, name: str) -> None:
        if mask & self.overflow:
            for watcher in self.watchers:
                watcher.lost = True
            return
        folder = self.paths.get(wd)
        if mask & self.ignored:
            self.paths.pop(wd, None)
            return
        if folder is None:
            return
        path = os.path.join(folder, name) if name else folder
        made = bool(name and mask & self.isdir and mask & self.made_mask)
        for watcher in self.watchers:
            if watcher.holds(path):
                watcher.pending.add(path)
                if made:
                    watcher.pending_made.add(path)


class _Shared:
    """The process's hub, made on first use; `failed` once the user's instances ran out."""

    hub: _Hub | None = None
    failed = False
    lock = threading.Lock()


def _hub() -> _Hub | None:
    """The shared inotify instance, made on first use (None where there is none)."""
    if _Shared.hub is not None or _Shared.failed:
        return _Shared.hub
    with _Shared.lock:
        if _Shared.hub is None and not _Shared.failed:
            module = _inotify()
            if module is None:
                return None  # asked again next time (tests switch it off and on)
            try:
                _Shared.hub = _Hub(module)
            except OSError as exc:  # the user's inotify instances are all taken
                logger.info("checkpoints: no inotify (%s); whole-tree scans instead", exc)
                _Shared.failed = True
    return _Shared.hub


class ChangeWatch:
    """Watches folders under `roots`; `changed()` says what happened in them since its last call."""

    def __init__(self, roots: Iterable[str] = ()) -> None:
        self.roots = tuple(r.rstrip("/") for r in roots)
        self.lost = False
        self.pending: set[str] = set()
        self.pending_made: set[str] = set()
        self.made: set[str] = set()
        """The folders made (or moved) in place since the last `changed()`: the one there now is
        another folder than before, even when it got the same inode number back."""
        self._hub = _hub() if _inotify() is not None else None
        if self._hub is not None:
            with self._hub.lock:
                self._hub.watchers.add(self)

    def holds(self, path: str) -> bool:
        """Is `path` under one of this watch's roots?"""
        return not self.roots or any(path == r or path.startswith(r + "/") for r in self.roots)

    @property
    def active(self) -> bool:
        """True while events are exact (a watch on every folder, no overflow)."""
        return self._hub is not None and not self.lost

    def watch(self, folder: str) -> None:
        """Watch `folder`'s entries."""
        if self._hub is not None and not self._hub.add(folder):
            self.lost = True

    def reset(self) -> None:
        """Start exact again (before watching the folders of a fresh whole-tree scan).

        The shared watches stay: other sessions may use them, and watching again is cheap.
        """
        hub = self._hub
        if hub is None:
            return
        hub.pump()
        with hub.lock:
            self.pending.clear()
            self.pending_made.clear()
            self.lost = False

    def changed(self) -> set[str] | None:
        """The paths with an event since the last call, or None if the events are not exact.

        Not exact: no inotify, a watch could not be added, or the kernel's queue overflowed.
        """
        hub = self._hub
        if hub is None:
            return None
        hub.pump()
        with hub.lock:
            paths, self.pending = self.pending, set()
            self.made, self.pending_made = self.pending_made, set()
            lost = self.lost
        return None if lost else paths

    def close(self) -> None:
        """Stop receiving events (the shared instance stays for the process's other sessions)."""
        hub, self._hub = self._hub, None
        if hub is not None:
            with hub.lock:
                hub.watchers.discard(self)
