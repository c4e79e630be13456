"""Session transcripts: one JSON Lines file per run, written as it happens.

Where: `$HANDRAIL_STATE_DIR`, else `$XDG_STATE_HOME/handrail`, else `~/.local/state/handrail`,
then `sessions/<project>/<session id>.jsonl`, `<project>` naming the workspace root (its last
part and a hash of the whole path). Files and folders are private to the user (0600 / 0700):
a transcript holds whatever the model read.

Lines (each a JSON object with `type`): `session` (header: id, root, model, created, parent),
`message` (one conversation message, as appended), `compaction` (the whole conversation that
replaced the old one), `prompt` (a user prompt begins: its text, and the last checkpoint
before it), `rewind` (the conversation went back to before prompt `turn`: the messages kept),
`state` (the runtime session's state after a turn: mode, read files, activated tools, session
rules), `event` (turn ends, approvals, notices), and `result` (how a run ended). Each line is
flushed when written, so a crash loses at most the line being written; a torn last line is
ignored when reading. Loading replays the lines: messages append, a compaction or a rewind
replaces them, the last state wins.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .._context import FileRecord, PermissionMode, Session
from .._contract import ErrorCode, ToolCall, ToolResult
from ..errors import ConfigurationError
from ..sandbox import state_dir as _state_dir
from ..sandbox import workspace_key
from ._conversation import (
    AssistantMessage,
    Message,
    ToolResults,
    Usage,
    message_from_json,
)

__all__ = [
    "PromptMark",
    "SavedSession",
    "Transcript",
    "find_session",
    "is_own_session",
    "latest_session",
    "load_session",
    "project_dir",
    "recent_sessions",
    "restore_state",
    "session_state",
    "state_dir",
]


def state_dir() -> Path:
    """The user's handrail state folder (see the module docstring)."""
    return _state_dir()


def project_dir(root: Path, base: Path | None = None) -> Path:
    """The folder holding the sessions of the workspace at `root`."""
    return (base or state_dir()) / "sessions" / workspace_key(root)


def session_state(session: Session) -> dict[str, Any]:
    """What a resumed session needs of the runtime's state, as JSON."""
    data: dict[str, Any] = {}
    for key, value in session.data.items():
        try:
            data[key] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            continue  # live objects (background jobs) do not survive a restart
    return {
        "id": session.id,
        "mode": session.mode.value,
        "files": {
            path: {
                "mtime_ns": r.mtime_ns,
                "size": r.size,
                "sha256": r.sha256,
                "complete": r.complete,
                "ranges": [list(x) for x in r.ranges],
            }
            for path, r in session.files.items()
        },
        "activated": list(session.activated),
        "allow_rules": list(session.allow_rules),
        "data": data,
    }


def restore_state(session: Session, state: Mapping[str, Any]) -> None:
    """Put a saved state back into `session` (the runtime's default session)."""
    mode = state.get("mode")
    if isinstance(mode, str) and mode in PermissionMode.__members__.values():
        session.mode = PermissionMode(mode)
    files = cast(Mapping[str, Mapping[str, Any]], state.get("files") or {})
    for path, r in files.items():
        try:
            session.files[path] = FileRecord(
                mtime_ns=int(r["mtime_ns"]),
                size=int(r["size"]),
                sha256=str(r["sha256"]),
                complete=bool(r["complete"]),
                ranges=tuple((int(a), int(b)) for a, b in r.get("ranges", ())),
            )
        except (KeyError, TypeError, ValueError):
            continue
    session.activated[:] = [str(x) for x in state.get("activated", ())]
    session.allow_rules[:] = [str(x) for x in state.get("allow_rules", ())]
    for key, value in cast(Mapping[str, Any], state.get("data") or {}).items():
        session.data.setdefault(key, value)


class Transcript:
    """A transcript file; `write` appends one line.

    The file is opened for each line (appending, then closing): a handful of lines per turn
    costs microseconds next to a model request, and no descriptor stays open between runs.
    """

    def __init__(self, path: Path, *, append: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        flags = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
        if not append:
            flags |= os.O_EXCL
        os.close(os.open(path, flags, 0o600))
        self.closed = False

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line (ignored once closed)."""
        if self.closed:
            return
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def close(self) -> None:
        """Stop writing (idempotent)."""
        self.closed = True


@dataclass(slots=True)
class PromptMark:
    """Where one of the user's prompts began: what a rewind goes back to."""

    turn: int
    """Its place among the conversation's prompts (1 for the first)."""
    prompt: str
    messages: list[Message]
    """The conversation before it."""
    after: int
    """The last checkpoint id before it began (0: none): the files as the prompt found them
    are those of the first checkpoint after this one, if the session changed any since."""


@dataclass(slots=True)
class SavedSession:
    """A transcript, read back."""

    path: Path
    header: dict[str, Any]
    messages: list[Message] = field(default_factory=list[Message])
    state: dict[str, Any] | None = None
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """The answers approvals got, by call id (for replays)."""
    prompts: list[PromptMark] = field(default_factory=list[PromptMark])
    """The user's prompts of the conversation as it stands (after rewinds), in order."""

    @property
    def id(self) -> str:
        """The session id."""
        return str(self.header.get("id", self.path.stem))


def load_session(path: Path) -> SavedSession:
    """Read a transcript; a torn or unknown line is skipped, a missing header is an error."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ConfigurationError(f"cannot read session {path}: {exc.strerror}") from exc
    saved: SavedSession | None = None
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        record = cast(dict[str, Any], record)
        kind = record.get("type")
        if kind == "session" and saved is None:
            saved = SavedSession(path=path, header=record)
            continue
        if saved is None:
            continue
        try:
            if kind == "message":
                saved.messages.append(message_from_json(record["message"]))
            elif kind == "compaction":
                saved.messages = [message_from_json(m) for m in record["messages"]]
            elif kind == "prompt":
                saved.prompts.append(
                    PromptMark(
                        turn=len(saved.prompts) + 1,
                        prompt=str(record["prompt"]),
                        messages=list(saved.messages),
                        after=int(record.get("after") or 0),
                    )
                )
            elif kind == "rewind":
                saved.messages = [message_from_json(m) for m in record["messages"]]
                del saved.prompts[max(0, int(record["turn"]) - 1) :]
            elif kind == "state":
                saved.state = cast(dict[str, Any], record["session"])
            elif kind == "event" and record["event"].get("type") == "turn_ended":
                saved.turns += 1
                saved.usage = saved.usage + Usage.from_json(record["event"].get("usage", {}))
            elif kind == "event" and record["event"].get("type") == "approval_answered":
                if record["event"].get("about", "call") == "call":  # not a tool's own question
                    saved.approvals[str(record["event"]["call_id"])] = dict(record["event"])
        except (KeyError, TypeError, ValueError):
            continue
    if saved is None:
        raise ConfigurationError(f"{path} is not a handrail session transcript (no header line)")
    saved.messages = answer_every_call(saved.messages)
    return saved


def answer_every_call(messages: list[Message]) -> list[Message]:
    """`messages` with a "not run" result for every call that has none.

    A process that died between writing a model's calls and their results leaves calls without
    results; no provider accepts such a history, so the session could never go on.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        out.append(m)
        i += 1
        if not isinstance(m, AssistantMessage) or not m.calls:
            continue
        following = messages[i] if i < len(messages) else None
        found: dict[str, ToolResult] = {}
        if isinstance(following, ToolResults):
            found = {r.call_id: r for r in following.results}
            i += 1
        out.append(ToolResults(results=tuple(found.get(c.id) or _not_run(c) for c in m.calls)))
    return out


def _not_run(call: ToolCall) -> ToolResult:
    return ToolResult(
        ok=False,
        content="Not run: the session ended before this call had a result. Call it again if it "
        "is still needed.",
        error=ErrorCode.CANCELLED,
        call_id=call.id,
        tool_name=call.name,
    )


def is_own_session(path: Path, base: Path | None = None) -> bool:
    """True for a transcript inside the user's state folder (one handrail wrote).

    Anything else (a file in a checkout, a download) is untrusted input: its model, base URL
    and recorded approvals must not be taken as the user's choices.
    """
    try:
        return path.resolve().is_relative_to((base or state_dir()).resolve())
    except OSError:
        return False


def latest_session(root: Path, base: Path | None = None) -> Path | None:
    """The most recently written top-level session of this workspace (sub-agents excluded)."""
    folder = project_dir(root, base)
    try:
        files = [p for p in folder.glob("*.jsonl") if "--" not in p.stem]
    except OSError:
        return None
    if not files:
        return None
    return max(files, key=lambda p: (p.stat().st_mtime_ns, p.name))


def recent_sessions(root: Path, limit: int = 10, base: Path | None = None) -> list[Path]:
    """This workspace's top-level sessions, the most recently written first."""
    folder = project_dir(root, base)
    try:
        files = [p for p in folder.glob("*.jsonl") if "--" not in p.stem]
        dated = [(p.stat().st_mtime_ns, p.name, p) for p in files]
    except OSError:
        return []
    return [p for _, _, p in sorted(dated, reverse=True)[:limit]]


def find_session(root: Path, ref: str, base: Path | None = None) -> Path:
    """A session by id (or unique id prefix) in this workspace, or by path."""
    candidate = Path(ref).expanduser()
    if candidate.suffix == ".jsonl" and candidate.is_file():
        return candidate
    folder = project_dir(root, base)
    exact = folder / f"{ref}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(folder.glob(f"{ref}*.jsonl")) if re.fullmatch(r"[A-Za-z0-9_-]+", ref) else []
    matches = [m for m in matches if "--" not in m.stem]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ConfigurationError(f"session id {ref!r} is ambiguous in {folder}; give more of it")
    raise ConfigurationError(f"no session {ref!r} for this workspace (looked in {folder})")


def now_iso() -> str:
    """The current UTC time, for headers."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
