"""A runtime's checkpoints: one `Checkpoints` per session, around calls that change files.

Which calls: every call whose tool is not read-only for its arguments and that was not
allowed as read-only (`ToolContext.granted_by`): `write_file`, `edit_file`, a `run_shell` line
that was approved or allowed to write, a tool marked destructive, an MCP server's tool. The
run stage (`_runner.py`) calls `begin` once the call holds the session's gate (so no other
change overlaps it) and `end` when it has returned, whatever the outcome.

Where: `<state>/checkpoints/<workspace>/` holds the workspace's contents (`objects/`, shared by
its sessions) and one log per session (`<session id>.jsonl`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .._context import Session, ToolContext
from .._contract import ToolKind, WritePath
from .._tool import Tool
from ..sandbox import BlobStore, Checkpoints, checkpoint_folder, resolve_path, state_dir
from ..sandbox._checkpoint_store import private_folder
from ..sandbox._checkpoints import MAX_FILE_BYTES, MAX_STORE_BYTES
from ._threads import WorkerPool

__all__ = ["Checkpointing", "Tracked"]

logger = logging.getLogger("handrail")

# Checkpoints' own few threads: the work is mostly under the GIL (stat, hash, compare), so
# more threads would not make it faster, only give each its own heap arena to keep.
_POOL = WorkerPool(max_workers=4)

_LABEL_KEYS = ("command", "path", "file_path", "url", "name")


@dataclass(frozen=True, slots=True)
class Tracked:
    """A call being recorded: its session's checkpoints, and the paths it says it changes."""

    tracker: Checkpoints
    own: tuple[str, ...] | None


class Checkpointing:
    """Makes and drives the checkpoints of a runtime's sessions.

    Args:
        root: The workspace root (names the store's folder).
        write_roots: The folders tracked.
        skip: Paths never recorded nor restored (the hidden paths).
        folder: Where the store and the logs go (default: `checkpoint_folder(root)`).
        max_file_bytes: Files bigger than this are not kept.
        max_store_bytes: The most the workspace's store holds.
        shared: Record every session's changes here (a sub-agent's runtime records into its
            parent's session, so the child's changes are the parent's call's).
    """

    def __init__(
        self,
        *,
        root: Path,
        write_roots: Iterable[Path],
        skip: Iterable[Path] = (),
        folder: Path | None = None,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_store_bytes: int = MAX_STORE_BYTES,
        shared: Checkpoints | None = None,
    ) -> None:
        self.shared = shared
        self._making = threading.Lock()
        self.folder = folder or checkpoint_folder(root)
        self.write_roots = tuple(write_roots)
        # The state folder itself is never tracked, wherever it is (inside a root, say).
        self.skip = (*skip, self.folder, state_dir())
        self.max_file_bytes = max_file_bytes
        self.store = BlobStore(self.folder, max_bytes=max_store_bytes)

    def of(self, session: Session) -> Checkpoints:
        """The session's checkpoints (made, or read back from its log, on first use)."""
        if self.shared is not None:
            return self.shared
        found: Checkpoints | None = session._checkpoints  # pyright: ignore[reportPrivateUsage]
        if found is not None and found.log_path == self.log_of(session.id):
            return found
        with self._making:  # hosts ask from threads too: one record per session
            return self._make(session)

    def _make(self, session: Session) -> Checkpoints:
        found: Checkpoints | None = session._checkpoints  # pyright: ignore[reportPrivateUsage]
        if found is not None and found.log_path != self.log_of(session.id):
            # The session took another id (a new conversation, a resumed one): its record is
            # that id's, not the one made for the old id.
            found.close()
            found = session._checkpoints = None  # pyright: ignore[reportPrivateUsage]
        if found is None:
            found = Checkpoints(
                self.write_roots,
                store=self.store,
                log=self.log_of(session.id),
                skip=self.skip,
                max_file_bytes=self.max_file_bytes,
            )
            session._checkpoints = found  # pyright: ignore[reportPrivateUsage]
            tracker = found

            async def close() -> None:
                tracker.close()

            session.on_close(close)
        return found

    def log_of(self, session_id: str) -> Path:
        """The log file of the session with this id."""
        return self.folder / f"{_safe_name(session_id)}.jsonl"

    def copy(self, session: Session, source_id: str) -> None:
        """Give `session` a copy of another session's checkpoints (a fork)."""
        source = self.log_of(source_id)
        target = self.log_of(session.id)
        old: Checkpoints | None = session._checkpoints  # pyright: ignore[reportPrivateUsage]
        if old is not None:
            old.close()
            session._checkpoints = None  # pyright: ignore[reportPrivateUsage]
        if not source.is_file() or target.exists():
            return
        private_folder(target.parent)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(source.read_bytes())

    def tracks(self, tool: Tool, args: Any, ctx: ToolContext | None) -> bool:
        """Can this call change files (so a checkpoint goes before it)?"""
        if ctx is not None and ctx.granted_by == "read_only":
            return False
        try:
            return not tool.is_read_only(args)
        except Exception:  # a flag that fails: assume it writes
            return True

    async def begin(
        self, session: Session, tool: Tool, args: Any, ctx: ToolContext | None, call_id: str
    ) -> Tracked | None:
        """Mark the state before the call; None (and a log line) if that failed."""
        tracker = self.of(session)
        paths = _write_paths(tool, args, ctx)
        # A file tool changes what it names: other changes meanwhile are someone else's. A
        # command, or a tool that names nothing, may change anything under the roots.
        own = tuple(paths) if paths and tool.kind is not ToolKind.EXECUTE else None
        label = _label(tool.name, args)
        try:
            await _POOL.submit(
                partial(
                    tracker.begin,
                    label,
                    call_id=call_id,
                    tool=tool.name,
                    paths=paths,
                    turn=session.turn,
                )
            )
        except Exception:  # a checkpoint that fails must not stop the call
            logger.exception("checkpoint before %s failed", tool.name)
            return None
        return Tracked(tracker, own)

    async def end(self, session: Session, tracked: Tracked, call_id: str) -> None:
        """Record what the call changed.

        On the tools' worker threads: the loop serves other sessions meanwhile, and no extra
        threads keep memory of their own.
        """
        tracker = tracked.tracker
        try:
            await _POOL.submit(partial(tracker.end, call_id=call_id, only=tracked.own))
        except Exception as exc:
            logger.exception("checkpoint after call %s failed", call_id)
            # The next look compares the whole tree; the person should know meanwhile.
            session.notify(
                f"Checkpoints: what call {call_id} changed could not be recorded ({exc}); it "
                "will be recorded as a change made outside the session."
            )
            return
        for notice in tracker.take_notices():
            session.notify(notice)


def _safe_name(session_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:100] or "session"


def _write_paths(tool: Tool, args: Any, ctx: ToolContext | None) -> list[str]:
    """The paths the call says it writes (file tools' targets), resolved."""
    if ctx is None or type(tool).permission_requests is Tool.permission_requests:
        return []
    try:
        requests = tool.permission_requests(args, ctx)
    except Exception:
        return []
    return [resolve_path(q.path, ctx.cwd) for q in requests if isinstance(q, WritePath)]


def _label(name: str, args: Any) -> str:
    """`run_shell: pytest -q`, `edit_file: src/a.py`: what a checkpoint came before."""
    values: dict[str, Any] = {}
    if isinstance(args, dict):
        values = args  # pyright: ignore[reportUnknownVariableType]
    elif hasattr(args, "model_dump"):
        try:
            values = args.model_dump()
        except Exception:
            values = {}
    for key in _LABEL_KEYS:
        value = values.get(key)
        if isinstance(value, str) and value:
            line = value.strip().splitlines()[0] if value.strip() else value
            return f"{name}: {line[:80]}"
    return name
