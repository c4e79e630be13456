"""Clean-up of a workspace's checkpoints: old session logs, then contents no log refers to.

A session's log goes when its transcript goes (`handrail.agent.clean_sessions`), or when it
has not been written for a while and has no transcript (a host's runtime that never saved
one). Contents are shared by the workspace's sessions, so a content is removed only once no
remaining log refers to it, and only if it is older than `min_blob_age` seconds: a session
still running may have kept it a moment ago and not logged it yet.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ._checkpoint_store import BlobStore

__all__ = ["CheckpointCleanup", "clean_checkpoints"]

BLOB = 2  # an entry's content hash, in `entry_json`'s list form


@dataclass(frozen=True, slots=True)
class CheckpointCleanup:
    """What `clean_checkpoints` removed."""

    logs: int = 0
    """Session logs removed."""
    bytes_freed: int = 0
    """Bytes of contents removed from the store."""


def _referenced(log: Path) -> set[str]:
    out: set[str] = set()
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            record = json.loads(line)
            if record.get("t") == "base":
                entries: Iterable[list[object]] = record["entries"].values()
            elif record.get("t") == "ch":
                entries = [e for e in (record.get("a"), record.get("b")) if e]
            else:
                continue
            for entry in entries:
                if entry[BLOB]:
                    out.add(str(entry[BLOB]))
        except (ValueError, KeyError, TypeError, IndexError):
            continue
    return out


def clean_checkpoints(
    folder: Path,
    *,
    remove: Iterable[str] = (),
    older_than: float | None = None,
    keep: Iterable[str] = (),
    min_blob_age: float = 3600.0,
) -> CheckpointCleanup:
    """Remove session logs from a workspace's checkpoint folder, then the unreferenced contents.

    Args:
        folder: The workspace's checkpoint folder (`<state>/checkpoints/<workspace>`).
        remove: Session ids whose logs go (their transcripts were removed).
        older_than: Also remove logs not written for this many seconds, except those in `keep`.
        keep: Session ids whose logs stay whatever their age (sessions still on record).
        min_blob_age: Contents younger than this many seconds stay (a running session's).
    """
    if not folder.is_dir():
        return CheckpointCleanup()
    gone = {f"{s}.jsonl" for s in remove}
    kept_ids = {f"{s}.jsonl" for s in keep}
    now = time.time()
    removed = 0
    logs: list[Path] = []
    for log in folder.glob("*.jsonl"):
        stale = False
        if older_than is not None and log.name not in kept_ids:
            with contextlib.suppress(OSError):
                stale = now - log.stat().st_mtime > older_than
        if log.name in gone or stale:
            with contextlib.suppress(OSError):
                log.unlink()
                removed += 1
                continue
        logs.append(log)
    wanted: set[str] = set()
    for log in logs:
        wanted |= _referenced(log)
    store = BlobStore(folder, max_bytes=1 << 62)
    freed = store.sweep(wanted, min_age=min_blob_age)
    return CheckpointCleanup(logs=removed, bytes_freed=freed)
