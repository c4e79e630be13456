"""`handrail sessions`: a workspace's saved sessions, and cleaning up the old ones.

`handrail sessions [DIR]` lists the most recent sessions of the workspace (id, when last
written, prompts, the first prompt) and what its transcripts and checkpoints take on disk.
`--clean DAYS` removes the sessions not written for that many days: transcripts, their
checkpoint logs, and the checkpoint contents no remaining session refers to
(`handrail.agent.clean_sessions`). Prompts are the user's own text, printed with control
characters spelled out.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..display import terminal_text
from ..errors import HandrailError
from ._common import CliError, warn

if TYPE_CHECKING:
    from ._common import SubParsers

LISTED = 20


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail sessions`."""
    parser = sub.add_parser(
        "sessions",
        help="list a workspace's saved sessions, or --clean the old ones",
        description="Each run and chat is saved as a session of its workspace: a transcript\n"
        "(for --resume) and checkpoints (for --rewind and /rewind), kept in handrail's\n"
        "state folder ($HANDRAIL_STATE_DIR, else $XDG_STATE_HOME/handrail, else\n"
        "~/.local/state/handrail). Nothing is removed on its own: --clean DAYS removes the\n"
        "sessions not written for that long, their checkpoints, and the file contents no\n"
        "remaining session needs.",
        epilog="examples:\n"
        "  handrail sessions                  # the current directory's sessions\n"
        "  handrail sessions ~/src/project\n"
        "  handrail sessions --clean 30       # remove sessions idle for 30 days",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dir", nargs="?", metavar="DIR", help="the workspace (default: the current directory)"
    )
    parser.add_argument(
        "--clean",
        type=float,
        metavar="DAYS",
        help="remove the sessions not written for DAYS days, with their checkpoints",
    )
    return parser


def run(ns: argparse.Namespace) -> int:
    """Run `handrail sessions`; a problem is one line on stderr with exit status 2."""
    try:
        root = _directory(ns.dir)
        if ns.clean is not None:
            if ns.clean < 0:
                raise CliError("--clean takes a number of days, 0 or more")
            return _clean(root, ns.clean)
        return _list(root)
    except CliError as exc:
        warn(f"error: {exc.message}")
        return exc.status
    except HandrailError as exc:
        warn(f"error: {exc}")
        return 2


def _directory(value: str | None) -> Path:
    path = Path(value).expanduser() if value else Path.cwd()
    if not path.is_dir():
        raise CliError(f"{value}: no such directory")
    return path.resolve()


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def _size(folder: Path) -> int:
    total = 0
    for top, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                continue
    return total


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _ago(seconds: float) -> str:
    if seconds < 3600:
        return f"{max(1, int(seconds // 60))} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def _list(root: Path) -> int:
    from ..agent import load_session
    from ..agent._sessions import project_dir, recent_sessions
    from ..sandbox import checkpoint_folder

    paths = recent_sessions(root, limit=LISTED)
    if not paths:
        _out(f"no saved sessions for {terminal_text(str(root))}")
        return 0
    now = time.time()
    for path in paths:
        try:
            saved = load_session(path)
        except HandrailError:
            continue
        first = saved.prompts[0].prompt if saved.prompts else ""
        first = terminal_text(" ".join(first.split()))
        if len(first) > 60:
            first = first[:59] + "…"
        when = _ago(now - path.stat().st_mtime)
        prompts = len(saved.prompts)
        _out(
            f"{saved.id[:8]}  {when:>10}  {prompts:>3} prompt{'' if prompts == 1 else 's'}  {first}"
        )
    transcripts = _size(project_dir(root))
    checkpoints = _size(checkpoint_folder(root))
    _out(
        f"transcripts {_human(transcripts)}, checkpoints {_human(checkpoints)} "
        "(handrail sessions --clean DAYS removes the old ones)"
    )
    return 0


def _clean(root: Path, days: float) -> int:
    from ..agent import clean_sessions

    done = clean_sessions(root, older_than_days=days)
    _out(
        f"removed {done.transcripts} session{'' if done.transcripts == 1 else 's'}, "
        f"{done.checkpoint_logs} checkpoint log{'' if done.checkpoint_logs == 1 else 's'}, "
        f"{_human(done.bytes_freed)} of kept file contents"
    )
    return 0
