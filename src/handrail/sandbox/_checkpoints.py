"""Checkpoints: every change a session makes to its write roots, recorded so it can be undone.

How it works (the design is in `docs/checkpoints.md`):
- The first time a session is about to change something, the write roots are walked once and
  every file's content is put in the private `BlobStore` (by hash: a content is kept once per
  workspace). Ignored folders (`.gitignore`d ones, `node_modules`, `.venv`, ...) are recorded
  as folders, their contents not copied; the user's `.git` is never read.
- Around every call that can change files, `begin` and `end` look at what changed since the
  last look: with inotify only the paths with events are looked at again (`_change_watch`),
  otherwise the whole tree is compared by stat keys. A file tool's target inside an ignored
  folder is recorded on its own (`begin(paths=...)`), so an overwritten ignored file comes back.
- What changed is appended to the session's log as one record per path (state before, state
  after, and who: a call, a restore, or someone outside the session). A checkpoint is a mark
  in that log, written only when a change follows it: unchanged state costs nothing.
- A checkpoint's state is the current state with the later records undone. `restore` puts the
  paths that differ back (`_restore_tree`), after saying which of them were changed outside the
  session since; it is itself recorded, so it can be undone.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from ._change_watch import ChangeWatch
from ._checkpoint_store import BlobStore, private_folder
from ._restore_tree import Step, apply_steps
from ._workspace_state import Entry, Scanner, entry_json, entry_of_json

__all__ = ["Checkpoint", "Checkpoints", "RestorePlan", "Restored"]

logger = logging.getLogger("handrail")

MAX_FILE_BYTES = 16 << 20
"""A bigger file is not kept (`unkept`): a restore cannot bring its earlier content back."""
LISTED = 1000
"""The most paths a checkpoint lists as changed (and as changed outside); the record itself
keeps every change."""
MAX_STORE_BYTES = 2 << 30
"""The most one workspace's store holds; past it, new contents are not kept."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A point a session's files can be put back to."""

    id: int
    """1, 2, 3, ... within the session."""
    at: float
    """When it was taken (Unix time)."""
    label: str
    """What came next: `write_file`, `run_shell: pytest -q`, `restore to 3`, ..."""
    turn: int | None = None
    """The agent's turn it opened (a host's label; None outside an agent)."""
    call_id: str | None = None
    tool: str | None = None
    changed: tuple[str, ...] = ()
    """The paths changed after it (until the next checkpoint), relative to the first root (the
    first 1,000)."""
    outside: tuple[str, ...] = ()
    """Of those, the paths changed by someone outside the session (by hand, a background job,
    another session in the same workspace)."""


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What restoring a checkpoint would do, before it is done."""

    checkpoint: int
    paths: tuple[str, ...]
    """The paths that would change (relative to the first root)."""
    outside: tuple[str, ...]
    """Of those, the ones changed outside the session since the checkpoint: a restore would
    overwrite someone's work, so it asks first."""
    not_kept: tuple[tuple[str, str], ...] = ()
    """Paths a restore cannot put back, and why (too big to keep, an ignored folder)."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore did."""

    checkpoint: int
    undo: int | None
    """Restore this checkpoint to undo the restore (None when nothing changed)."""
    changed: tuple[str, ...] = ()
    """Paths put back (relative to the first root)."""
    overwritten: tuple[str, ...] = ()
    """Of those, the ones that had been changed outside the session (the person agreed)."""
    left: tuple[tuple[str, str], ...] = ()
    """Paths left as they are, and why."""
    refused: str | None = None
    """Why nothing was restored (changes made outside the session, not confirmed)."""

    @property
    def ok(self) -> bool:
        return self.refused is None


@dataclass
class _Mark:
    id: int
    at: float
    label: str
    turn: int | None
    call_id: str | None
    tool: str | None

    def record(self) -> dict[str, Any]:
        return {
            "t": "cp",
            "id": self.id,
            "at": self.at,
            "label": self.label,
            "turn": self.turn,
            "call": self.call_id,
            "tool": self.tool,
        }


class _OpenFiles:
    """What a `Checkpoints` holds open: the inotify handle and the log."""

    def __init__(self, watch: ChangeWatch) -> None:
        self.watch = watch
        self.log: TextIO | None = None

    def close(self) -> None:
        self.watch.close()
        if self.log is not None:
            self.log.close()
            self.log = None


class Checkpoints:
    """One session's checkpoints of its write roots.

    Args:
        roots: The folders tracked (the runtime's write roots).
        store: Where contents are kept (one per workspace, shared by its sessions).
        log: The session's log file (JSON Lines, private); read back if it exists, so a
            resumed session keeps its checkpoints. None: kept in memory only.
        skip: Paths never recorded nor restored (hidden paths, handrail's state folder).
        max_file_bytes: Files bigger than this are not kept (see `MAX_FILE_BYTES`).

    Thread-safe: `begin`, `end`, `restore` may be called from worker threads.
    """

    def __init__(
        self,
        roots: Iterable[str | Path],
        *,
        store: BlobStore,
        log: Path | None = None,
        skip: Iterable[str | Path] = (),
        max_file_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self.roots = tuple(os.path.normpath(str(r)) for r in roots)
        self.store = store
        self.log_path = log
        self.notices: list[str] = []
        """Things a person should know (a file too big to keep), oldest first; hosts take them."""
        self._noticed: set[str] = set()
        self._scanner = Scanner(
            self.roots,
            store,
            skip=[str(s) for s in skip],
            max_file_bytes=max_file_bytes,
            on_unkept=self._unkept,
        )
        self._watch = ChangeWatch(self.roots)
        self._watching = False
        self._open = _OpenFiles(self._watch)
        # A session never closed (no `aclose`) still gives its inotify handle and log back.
        self._closer = weakref.finalize(self, self._open.close)
        self._lock = threading.RLock()
        self._current: dict[str, Entry] | None = None
        self._records: list[dict[str, Any]] = []
        self._marks: list[_Mark] = []
        self._pending: _Mark | None = None
        self._explicit: set[str] = set()
        self.turn: int | None = None
        """The host's turn of the last `begin`."""
        if log is not None and log.exists():
            self._load(log)

    # -- public ------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Has the workspace been recorded yet?"""
        return self._current is not None

    def start(self) -> None:
        """Record the workspace now, if not done yet.

        A host does it ahead of the first change, in a thread, so that change does not wait
        for the whole walk.
        """
        with self._lock:
            if self._current is None:
                self._baseline()

    def begin(
        self,
        label: str,
        *,
        call_id: str | None = None,
        tool: str | None = None,
        paths: Iterable[str] = (),
        turn: int | None = None,
    ) -> int:
        """Mark the state before a change; returns the id the checkpoint will have.

        Changes since the last look are recorded first (as made outside the session). `paths`
        are files the change will write (a file tool's targets): recorded even inside an
        ignored folder. `turn` is the host's turn the change belongs to. The mark is written
        only once a change follows it.
        """
        with self._lock:
            if turn is not None:  # a sub-agent's calls carry none: they are the parent's turn's
                self.turn = turn
            # Changes made outside first: a target changed by hand since the last look is
            # recorded as such, not taken as its state before this change.
            self._refresh("outside", None)
            for path in paths:
                self._note_explicit(os.path.normpath(path))
            if self._pending is None:
                self._pending = _Mark(
                    id=len(self._marks) + 1,
                    at=time.time(),
                    label=label,
                    turn=self.turn,
                    call_id=call_id,
                    tool=tool,
                )
            else:  # nothing changed since the last mark: it is this one, under its new name
                pending = self._pending
                pending.at, pending.label = time.time(), label
                pending.turn, pending.call_id, pending.tool = self.turn, call_id, tool
            return self._pending.id

    def end(
        self,
        *,
        call_id: str | None = None,
        source: str = "call",
        only: Iterable[str] | None = None,
    ) -> tuple[str, ...]:
        """Record what changed since `begin`; returns those paths (relative).

        `only`: the paths the call says it changes (a file tool's targets); a change
        elsewhere meanwhile is someone else's (a person's edit during the call) and is
        recorded as made outside the session, so a restore asks before undoing it.
        """
        own = None if only is None else tuple(os.path.normpath(p) for p in only)
        with self._lock:
            return tuple(self._rel(p) for p in self._refresh(source, call_id, own))

    @property
    def last_id(self) -> int:
        """The latest checkpoint's id (0: none yet)."""
        with self._lock:
            return self._marks[-1].id if self._marks else 0

    def list(self) -> list[Checkpoint]:
        """The checkpoints, oldest first, each with the paths changed after it.

        The paths come from the record (on disk, when logged): a session sharing a workspace
        with many others sees all their changes, and keeping those lists for every mark in
        memory would cost more than the rare listing does.
        """
        with self._lock:
            changed: dict[int, dict[str, None]] = {m.id: {} for m in self._marks}
            outside: dict[int, dict[str, None]] = {m.id: {} for m in self._marks}
            for rec in self._recs():
                mark = rec.get("_mark", 0)
                listed = changed.get(mark)
                if listed is None or len(listed) >= LISTED:
                    continue
                rel = self._rel(rec["p"])
                listed[rel] = None
                if rec.get("src") == "outside":
                    outside[mark][rel] = None
            return [
                self._public(m, tuple(changed[m.id]), tuple(outside[m.id])) for m in self._marks
            ]

    def plan(self, checkpoint: int, paths: Iterable[str] | None = None) -> RestorePlan:
        """What `restore(checkpoint, paths)` would change, looking at the files now."""
        with self._lock:
            self._refresh("outside", None)
            steps, outside = self._steps(checkpoint, paths)
            not_kept = tuple(
                (self._rel(s.path), _why_not_kept(s)) for s in steps if _why_not_kept(s)
            )
            return RestorePlan(
                checkpoint=checkpoint,
                paths=tuple(self._rel(s.path) for s in steps),
                outside=tuple(self._rel(p) for p in outside),
                not_kept=not_kept,
            )

    def restore(
        self,
        checkpoint: int,
        paths: Iterable[str] | None = None,
        *,
        overwrite_outside: bool | Iterable[str] = False,
    ) -> Restored:
        """Put the files back as they were at `checkpoint` (only under `paths`, if given).

        Files changed outside the session since then are not overwritten unless
        `overwrite_outside` is true, or names them (relative paths, as `plan` gave them: a
        person agreed to those, and a file changed since the question is not among them):
        otherwise the result is `refused` and names them. The restore is recorded like any
        change, behind a checkpoint of its own (`Restored.undo`).
        """
        agreed: set[str] | None = None
        if not isinstance(overwrite_outside, bool):
            agreed = set(overwrite_outside)
        with self._lock:
            self._refresh("outside", None)
            steps, outside = self._steps(checkpoint, paths)
            unagreed = (
                []
                if overwrite_outside is True
                else [p for p in outside if agreed is None or self._rel(p) not in agreed]
            )
            if unagreed:
                outside = unagreed
                names = ", ".join(self._rel(p) for p in outside[:10])
                more = f" and {len(outside) - 10} more" if len(outside) > 10 else ""
                return Restored(
                    checkpoint=checkpoint,
                    undo=None,
                    refused=f"changed outside this session since checkpoint {checkpoint}: "
                    f"{names}{more}",
                    overwritten=tuple(self._rel(p) for p in outside),
                )
            if not steps:
                return Restored(checkpoint=checkpoint, undo=None)
            undo = self.begin(f"restore to {checkpoint}", tool="restore", turn=self.turn)
            done, left = apply_steps(steps, self.roots, self.store.get)
            changed = self._refresh("restore", None)
            if not changed:
                undo_id: int | None = None
            else:
                undo_id = undo
            overwritten = [p for p in outside if p in set(done)]
            return Restored(
                checkpoint=checkpoint,
                undo=undo_id,
                changed=tuple(self._rel(p) for p in done),
                overwritten=tuple(self._rel(p) for p in overwritten),
                left=tuple((self._rel(p), why) for p, why in left),
            )

    def state(self, checkpoint: int | None = None) -> dict[str, Entry]:
        """The recorded state (absolute path -> entry) at `checkpoint`, or now."""
        with self._lock:
            if checkpoint is None:
                self._refresh("outside", None)
                return dict(self._current or {})
            return self._state_at(checkpoint)

    def blobs(self) -> set[str]:
        """Every content this session's records refer to (what store clean-up must keep)."""
        with self._lock:
            out = {e.blob for e in (self._current or {}).values() if e.blob}
            for rec in self._recs():
                for side in ("a", "b"):
                    value = rec.get(side)
                    if value and value[2]:
                        out.add(value[2])
            return out

    def take_notices(self) -> list[str]:
        with self._lock:
            out, self.notices = self.notices, []
            return out

    def close(self) -> None:
        """Stop watching and close the log (reopened if the session records again)."""
        with self._lock:
            self._open.close()
            self._watching = False

    # -- recording ---------------------------------------------------------------------------

    def _unkept(self, path: str, why: str) -> None:
        if path in self._noticed:
            return
        self._noticed.add(path)
        self.notices.append(
            f"Checkpoints: {self._rel(path)} is not kept ({why}); restoring an earlier "
            "checkpoint leaves it as it is."
        )

    def _note_explicit(self, path: str) -> None:
        if self._scanner.skipped(path) or path in self._explicit:
            return
        current = self._current
        if current is not None and (path in current or self._covered(path, current)):
            return  # tracked already, or will be seen where it appears
        self._explicit.add(path)
        self._write({"t": "x", "p": path})  # a resumed session tracks it too
        if current is not None:
            entry = self._scanner.entry(path, None)
            if entry is not None:
                current[path] = entry  # its state before the change: known, not a change

    def _covered(self, path: str, current: dict[str, Entry]) -> bool:
        """Is `path` below a tracked folder (so its appearance is seen without help)?

        Only a target inside an ignored folder needs recording on its own.
        """
        folder: str = os.path.dirname(path)
        missing: list[str] = []  # folders the call will make: one may be an ignored one
        while folder not in current:
            parent: str = os.path.dirname(folder)
            if parent == folder or self._scanner.root_of(parent) is None:
                return False
            missing.append(folder)
            folder = parent
        if current[folder].kind != "dir":
            return False
        return not any(self._scanner.opaque(m) for m in missing)

    def _refresh(
        self, source: str, call_id: str | None, own: tuple[str, ...] | None = None
    ) -> list[str]:
        """Record what changed since the last look; returns the paths.

        If the look fails, the next one compares the whole tree: the events it drained are
        gone, and no change may be dropped with them.
        """
        try:
            return self._look(source, call_id, own)
        except BaseException:
            self._watching = False
            raise

    def _look(self, source: str, call_id: str | None, own: tuple[str, ...] | None) -> list[str]:
        if self._current is None:
            self._baseline()
            return []
        current = self._current
        dirty = self._watch.changed() if self._watching else None
        updates: dict[str, Entry | None] = {}
        if dirty is None:
            fresh, folders = self._scanner.walk_all(current)
            for path in self._explicit:
                entry = self._scanner.entry(path, current.get(path))
                if entry is not None:
                    fresh[path] = entry
            for path in current.keys() | fresh.keys():
                old, new = current.get(path), fresh.get(path)
                if old is None or new is None or not old.same(new) or old.key != new.key:
                    updates[path] = new
            self._rewatch(folders)
        else:
            for path in sorted(dirty | self._explicit):
                self._rescan(path, current, updates)
            self._rescan_links(current, updates)
        return self._apply(updates, source, call_id, own)

    def _rescan_links(self, current: dict[str, Entry], updates: dict[str, Entry | None]) -> None:
        """Look again at the other names of a changed file with hard links.

        A file written through one of its names raises events for that name only.
        """
        for path, new in list(updates.items()):
            if new is None or new.kind != "file" or not new.key:
                continue
            try:
                if os.lstat(path).st_nlink < 2:
                    continue
            except OSError:
                continue
            inode = new.key[3]
            same = [
                other
                for other, entry in current.items()
                if other != path and entry.kind == "file" and entry.key[3:4] == (inode,)
            ]
            for other in same:
                if other not in updates:
                    self._rescan(other, current, updates)

    def _rewatch(self, folders: Sequence[str]) -> None:
        self._watch.reset()
        for folder in folders:
            self._watch.watch(folder)
        self._watching = self._watch.active

    def _rescan(
        self, path: str, current: dict[str, Entry], updates: dict[str, Entry | None]
    ) -> None:
        if self._scanner.root_of(path) is None or (
            self._scanner.skipped(path) and path not in self._explicit
        ):
            return
        if os.path.basename(path) == ".gitignore":
            self._rules_changed(os.path.dirname(path), current)
        old = updates[path] if path in updates else current.get(path)
        new = self._scanner.entry(path, old)
        inode_moved = (
            old is not None
            and new is not None
            and old.kind == new.kind == "dir"
            # A folder removed and made again can get its inode number back: the event says so.
            and (old.key[3:4] != new.key[3:4] or path in self._watch.made)
        )
        if new is None or new.kind != "dir" or old is None or old.kind != "dir" or inode_moved:
            # What was below it is gone or re-made: forget it, and walk what is there now.
            if old is not None and old.kind in ("dir", "opaque"):
                prefix = path.rstrip("/") + "/"
                for below in [p for p in current if p.startswith(prefix)]:
                    if below not in self._explicit or new is None:
                        updates.setdefault(below, None)
            if new is not None and new.kind == "dir":
                fresh: dict[str, Entry] = {}
                folders: list[str] = []
                for folder in (path,):
                    self._watch.watch(folder)
                self._scanner.walk(path, current, fresh, folders)
                for folder in folders:
                    self._watch.watch(folder)
                updates.update(fresh)
                return
        elif new.kind == "dir":
            self._watch.watch(path)  # after a rename, its events carry the new name
        updates[path] = new

    def _rules_changed(self, folder: str, current: dict[str, Entry]) -> None:
        """A `.gitignore` in `folder` changed: look again at the ignored folders below it.

        One no longer ignored is walked and watched from now on; what it holds is known
        state, not a change (its earlier contents were never kept). A tracked folder newly
        ignored stays tracked.
        """
        self._scanner.forget_rules(folder)
        prefix = folder.rstrip("/") + "/"
        for path in [p for p, e in current.items() if e.kind == "opaque" and p.startswith(prefix)]:
            if path not in current or self._scanner.opaque(path):
                continue
            fresh: dict[str, Entry] = {}
            folders: list[str] = []
            self._scanner.walk(path, {}, fresh, folders)
            for below in [p for p in current if p.startswith(path + "/")]:
                del current[below]  # explicit targets inside: walked again with the rest
            current.update(fresh)
            for watched in folders:
                self._watch.watch(watched)

    def _apply(
        self,
        updates: dict[str, Entry | None],
        source: str,
        call_id: str | None,
        own: tuple[str, ...] | None = None,
    ) -> list[str]:
        current = self._current
        assert current is not None
        changed: list[str] = []
        records: list[dict[str, Any]] = []
        for path in sorted(updates):
            new = updates[path]
            old = current.get(path)
            if new is None:
                if old is None:
                    continue
                del current[path]
            else:
                current[path] = new
                if old is not None and old.same(new):
                    continue  # touched, same content: the new key is kept, nothing recorded
            changed.append(path)
            # A target, what is below it, or a folder made on the way to it.
            mine = own is None or any(
                path == o or path.startswith(o + "/") or o.startswith(path + "/") for o in own
            )
            records.append(
                {
                    "t": "ch",
                    "src": source if mine else "outside",
                    "call": call_id,
                    "p": path,
                    "a": entry_json(old) if old is not None else None,
                    "b": entry_json(new) if new is not None else None,
                }
            )
        if not records:
            return changed
        if self._pending is not None:
            mark, self._pending = self._pending, None
            self._marks.append(mark)
            self._write(mark.record())
        elif not self._marks:
            # Changes before any mark (outside, before the first call): a mark of their own.
            mark = _Mark(
                id=1, at=time.time(), label="start", turn=self.turn, call_id=None, tool=None
            )
            self._marks.append(mark)
            self._write(mark.record())
        for rec in records:
            if self.log_path is None:
                self._records.append(rec)
            self._write(rec)
        return changed

    def _baseline(self) -> None:
        fresh, folders = self._scanner.walk_all({})
        for path in self._explicit:
            entry = self._scanner.entry(path, None)
            if entry is not None:
                fresh[path] = entry
        self._current = fresh
        self._rewatch(folders)
        self._write(
            {
                "t": "base",
                "roots": list(self.roots),
                "at": time.time(),
                "entries": {p: entry_json(e) for p, e in fresh.items()},
            }
        )

    # -- restoring ---------------------------------------------------------------------------

    def _recs(self) -> list[dict[str, Any]]:
        """The change records, oldest first.

        Kept in memory only without a log; otherwise read back from it when a restore, a plan
        or a clean-up needs them (rare), so a long session (or many sessions sharing a
        workspace, each recording the others' changes) does not hold them all in memory.
        """
        if self.log_path is None:
            return self._records
        out: list[dict[str, Any]] = []
        try:
            lines = self.log_path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return out
        for line in lines:
            try:
                value: object = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if not isinstance(value, dict):
                continue
            rec = cast(dict[str, Any], value)
            if rec.get("t") == "ch" and self._plain(rec.get("p")):
                out.append(rec)
        return out

    def _after(self, checkpoint: int) -> list[dict[str, Any]]:
        """The records after `checkpoint` (each record names the mark before it)."""
        if not any(m.id == checkpoint for m in self._marks):
            raise KeyError(f"no checkpoint {checkpoint}")
        recs = self._recs()
        for i, rec in enumerate(recs):
            if rec.get("_mark", 0) >= checkpoint:
                return recs[i:]
        return []

    def _state_at(self, checkpoint: int) -> dict[str, Entry]:
        """The current state with every record after `checkpoint` undone, newest first."""
        state = dict(self._current or {})
        for rec in reversed(self._after(checkpoint)):
            before = rec["a"]
            if before is None:
                state.pop(rec["p"], None)
            else:
                state[rec["p"]] = entry_of_json(before)
        return state

    def _steps(self, checkpoint: int, paths: Iterable[str] | None) -> tuple[list[Step], list[str]]:
        want = self._state_at(checkpoint)
        now = self._current or {}
        chosen = None if paths is None else [self._abs(p) for p in paths]
        steps: list[Step] = []
        for path in sorted(want.keys() | now.keys()):
            if chosen is not None and not any(
                path == c or path.startswith(c.rstrip("/") + "/") for c in chosen
            ):
                continue
            a, b = now.get(path), want.get(path)
            if a is not None and b is not None and a.same(b):
                continue
            if a is None and b is None:
                continue
            steps.append(Step(path=path, now=a, want=b))
        changed_outside: set[str] = set()
        for rec in self._after(checkpoint):
            if rec["src"] == "outside":
                changed_outside.add(rec["p"])
        outside = [s.path for s in steps if s.path in changed_outside]
        return steps, outside

    # -- the log -----------------------------------------------------------------------------

    def _write(self, record: dict[str, Any]) -> None:
        if record.get("t") == "ch" and self._marks:
            record["_mark"] = self._marks[-1].id
        if self.log_path is None:
            return
        log = self._open.log
        if log is None:
            private_folder(self.log_path.parent)
            fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            log = self._open.log = os.fdopen(fd, "a", encoding="utf-8")
        log.write(json.dumps(record, separators=(",", ":")) + "\n")
        log.flush()

    def _load(self, log: Path) -> None:
        try:
            lines = log.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            logger.warning("checkpoints: cannot read %s (%s); starting afresh", log, exc)
            return
        current: dict[str, Entry] | None = None
        for line in lines:
            try:
                rec = json.loads(line)
                kind = rec["t"]
                if kind == "base":
                    current = {
                        p: entry_of_json(v) for p, v in rec["entries"].items() if self._plain(p)
                    }
                elif kind == "cp":
                    self._marks.append(
                        _Mark(
                            id=int(rec["id"]),
                            at=float(rec["at"]),
                            label=str(rec["label"]),
                            turn=rec.get("turn"),
                            call_id=rec.get("call"),
                            tool=rec.get("tool"),
                        )
                    )
                elif kind == "x" and self._plain(rec["p"]):
                    self._explicit.add(str(rec["p"]))
                elif kind == "ch" and current is not None and self._plain(rec["p"]):
                    path = str(rec["p"])
                    after = rec.get("b")
                    if after is None:
                        current.pop(path, None)
                    else:
                        current[path] = entry_of_json(after)
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line (a crash while writing)
        self._current = current
        # The next look compares the whole tree: nothing watched it while we were away.
        self._watching = False

    # -- paths -------------------------------------------------------------------------------

    def _plain(self, path: object) -> bool:
        """Is a path read back from the log one this session could have recorded?

        The log is handrail's private file, but it is read as untrusted input all the same:
        only a normalised absolute path inside the roots and not skipped is taken.
        """
        return (
            isinstance(path, str)
            and "\0" not in path
            and os.path.isabs(path)
            and os.path.normpath(path) == path
            and not self._scanner.skipped(path)
        )

    def _rel(self, path: str) -> str:
        root = self.roots[0] if self.roots else ""
        if path == root:
            return "."
        if root and path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
        return path

    def _abs(self, path: str) -> str:
        if os.path.isabs(path):
            return os.path.normpath(path)
        return os.path.normpath(os.path.join(self.roots[0], path))

    def _public(
        self, mark: _Mark, changed: tuple[str, ...], outside: tuple[str, ...]
    ) -> Checkpoint:
        return Checkpoint(
            id=mark.id,
            at=mark.at,
            label=mark.label,
            turn=mark.turn,
            call_id=mark.call_id,
            tool=mark.tool,
            changed=changed,
            outside=outside,
        )


def _why_not_kept(step: Step) -> str:
    if step.want is not None and step.want.kind == "unkept":
        return "it was too big to keep"
    if step.now is not None and step.now.kind in ("unkept", "opaque") and step.want is None:
        return "its contents were never copied (an ignored folder or a file too big to keep)"
    return ""
