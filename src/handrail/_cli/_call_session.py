"""`handrail call --session FILE`: one session across separate calls, kept in a JSON file.

Each `handrail call` is its own process, so without a file the second call of `read_file`
then `edit_file` starts a fresh session and the edit is refused (FILE_NOT_READ). The file
holds what a session carries between a model's calls: the read records (so an edit can check
the file is still what was read), activated deferred tools, "allow always" rules and the
tools' JSON state (the todo list). The permission mode is not kept: each call's `--mode` and
settings decide it. Background jobs never outlive the call that started them.

The file is written whole, under a temporary name and renamed into place (0600), so a crash
never leaves it half written; one call at a time per file (the last writer wins).

Full copies of truncated results must outlive the call that printed their path, so `handrail
call` keeps them under the state folder (`call-results/`), the newest `RESULTS_KEPT` calls'.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, cast

from .._context import Session
from ..sandbox import state_dir
from ._common import CliError

__all__ = ["RESULTS_KEPT", "load_session_file", "results_folder", "save_session_file"]

MARKER = "handrail_call_session"
"""Key naming the file's format version: a file without it is never overwritten."""
VERSION = 1
RESULTS_KEPT = 20
"""How many calls' result folders `call-results/` keeps (the oldest go first)."""
_MAX_FILE = 64 << 20
_SESSION_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


def load_session_file(path: Path, session: Session) -> None:
    """Put the state saved in `path` into `session`; a missing or empty file is a new session.

    Raises:
        CliError: The file cannot be read, or is not a session file (it is left untouched).
    """
    from ..agent._sessions import restore_state  # the agent layer: loaded only for --session

    try:
        with open(path, "rb") as f:
            raw = f.read(_MAX_FILE + 1)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise CliError(f"--session {path}: cannot read it ({exc.strerror or exc})") from exc
    if not raw.strip():
        return  # e.g. made by mktemp: a new session
    try:
        state: Any = json.loads(raw) if len(raw) <= _MAX_FILE else None
    except ValueError:
        state = None
    if not isinstance(state, dict) or cast("dict[str, Any]", state).get(MARKER) != VERSION:
        raise CliError(
            f"--session {path}: not a handrail call session file (it has no "
            f'"{MARKER}": {VERSION}), so it is left as it is; give a new file name'
        )
    saved = cast("dict[str, Any]", state)
    saved.pop("mode", None)  # each call's options decide the mode
    restore_state(session, saved)
    sid = saved.get("id")
    if isinstance(sid, str) and _SESSION_ID.fullmatch(sid):
        session.id = sid


def save_session_file(path: Path, session: Session) -> None:
    """Write `session`'s state to `path` atomically (0600).

    Raises:
        OSError: The folder is missing or not writable.
    """
    from ..agent._sessions import session_state

    state = session_state(session)
    state.pop("mode", None)
    body = {MARKER: VERSION, **state}
    data = (json.dumps(body, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    folder = path.parent if str(path.parent) else Path()
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def results_folder(session: Session) -> Path:
    """The folder for this call's truncated results: `<state dir>/call-results/<time>-<id>`.

    Older calls' folders beyond `RESULTS_KEPT` are removed first. Nothing is created until a
    result is truncated.
    """
    base = state_dir() / "call-results"
    if base.is_dir():
        # Names start with the time, so they sort oldest first.
        old = sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())
        for stale in old[: max(len(old) - (RESULTS_KEPT - 1), 0)]:
            shutil.rmtree(stale, ignore_errors=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + f".{time.time_ns() % 10**9:09d}"
    return base / f"{stamp}-{session.id[:8]}"
