"""Removing old sessions of a workspace: transcripts, their checkpoints, the contents they kept.

Nothing is removed on its own: a person (or a host's schedule) calls `clean_sessions`. A
transcript older than the cutoff goes with its checkpoint log; a checkpoint log with no
transcript (a host's runtime that saved none) goes once it is older than the cutoff too; then
the workspace's store drops every content no remaining log refers to.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from ..sandbox import checkpoint_folder, clean_checkpoints
from ._sessions import project_dir

__all__ = ["Cleaned", "clean_sessions"]


@dataclass(frozen=True, slots=True)
class Cleaned:
    """What `clean_sessions` removed."""

    transcripts: int
    checkpoint_logs: int
    bytes_freed: int
    """Checkpoint contents removed from the workspace's store."""


def clean_sessions(root: Path, *, older_than_days: float, base: Path | None = None) -> Cleaned:
    """Remove the sessions of the workspace at `root` not written for `older_than_days` days.

    Their transcripts and checkpoint logs go, then the checkpoint contents that no remaining
    session refers to. `base`: the state folder (default: `state_dir()`).
    """
    cutoff = older_than_days * 86400
    now = time.time()
    folder = project_dir(root, base)
    removed: list[str] = []
    kept: list[str] = []
    if folder.is_dir():
        for transcript in folder.glob("*.jsonl"):
            try:
                old = now - transcript.stat().st_mtime > cutoff
            except OSError:
                continue
            if not old:
                kept.append(transcript.stem)
                continue
            with contextlib.suppress(OSError):
                transcript.unlink()
                removed.append(transcript.stem)
    result = clean_checkpoints(
        checkpoint_folder(root, base), remove=removed, older_than=cutoff, keep=kept
    )
    return Cleaned(
        transcripts=len(removed), checkpoint_logs=result.logs, bytes_freed=result.bytes_freed
    )
