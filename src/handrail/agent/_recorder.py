"""An agent's transcript as it runs: where it goes, its header, and every record after it.

One JSON line per record (`_sessions.py` reads them back for `--resume` and replays). A
transcript that can no longer be written (a full disk) must not end the run: the recorder
says so once, through the notice callback, and stops writing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._context import Session
from ._events import Notice
from ._sessions import Transcript, now_iso, project_dir, session_state, state_dir

__all__ = ["Recorder"]


class Recorder:
    """Writes one agent's transcript: opened on first use, appended to, closed at the end."""

    def __init__(self, *, save: bool, path: Path | None, notice: Callable[[Notice], None]) -> None:
        self.save = save
        """False writes nothing, whatever `path` says."""
        self.chosen = path
        """The transcript's path when given (a resumed session's); None: the default place."""
        self.transcript: Transcript | None = None
        self._notice = notice

    def path(self, root: Path, session_id: str) -> Path | None:
        """Where the transcript of `session_id` is (or will be) written; None when not saved."""
        if not self.save:
            return None
        if self.chosen is not None:
            return self.chosen
        return project_dir(root, state_dir()) / f"{session_id}.jsonl"

    def open(self, path: Path | None, header: Callable[[], Mapping[str, Any]]) -> None:
        """Start writing to `path` (once); a new file begins with the session's `header`."""
        if path is None or self.transcript is not None:
            return
        self.transcript = Transcript(path, append=path.exists())
        if path.stat().st_size == 0:
            self.write({"type": "session", "version": 1, **header(), "created": now_iso()})

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record; a failure closes the transcript and is said once."""
        transcript = self.transcript
        if transcript is None or transcript.closed:
            return
        try:
            transcript.write(record)
        except OSError as exc:
            transcript.close()
            self._notice(
                Notice(
                    text=f"the transcript {transcript.path} could not be written any more "
                    f"({exc.strerror or exc}); this session will not be resumable from here",
                    level="warning",
                )
            )

    def state(self, session: Session) -> None:
        """Record the session's state (mode, files read, session rules) for a resume."""
        self.write({"type": "state", "session": session_state(session)})

    def close(self, *, forget: bool = False) -> None:
        """Stop writing; `forget` also drops the chosen path (the next one is the default)."""
        if self.transcript is not None:
            self.transcript.close()
        if forget:
            self.transcript = None
            self.chosen = None
