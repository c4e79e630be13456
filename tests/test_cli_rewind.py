"""`handrail run --resume ID --rewind N` and `--fork`, as real subprocesses against a scripted model.

Each test builds its own two-prompt session in its own state folder and workspace: the first
prompt edits a file (a CRLF file, so a restore must give back bytes, not text), the second
writes one file and deletes another through a sandboxed shell line. Then it goes back with
the flags under test and checks the files byte for byte, what the model was sent, the
transcripts, and what the user was told. A file changed by hand is the canary of the headless
refusal: it must still hold what the hand wrote, and the model must not have been asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from handrail.testing import ModelServer, RecordedRequest, Reply, ScriptItem, ToolUse

RUN_TIMEOUT = 90.0
"""Seconds any one `handrail run` may take before the test kills it."""
GREET = b'def greet(n):\r\n    return "Hello, " + n\r\n'
OLD = b"\x00\x01 kept as bytes\n"
FIRST = "First: say Hi in greet.py"
SECOND = "Second: make notes"
CANARY = "written by hand after the session, not by the agent\n"


def isolated_env(home: Path) -> dict[str, str]:
    """This machine's environment without keys or handrail settings; state and config in `home`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HANDRAIL_")
        and not k.endswith(("_API_KEY", "_AUTH_TOKEN"))
        and k not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")
    }
    (home / "home").mkdir(parents=True, exist_ok=True)
    env.update(
        HANDRAIL_STATE_DIR=str(home / "state"),
        XDG_STATE_HOME=str(home / "xdg-state"),
        XDG_CONFIG_HOME=str(home / "config"),
        HOME=str(home / "home"),
    )
    return env


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    requests: list[RecordedRequest]
    problems: list[str]

    def result(self) -> dict[str, Any]:
        (line,) = self.stdout.splitlines()
        data = json.loads(line)
        assert isinstance(data, dict)
        return data


@dataclass(frozen=True)
class Session:
    """A workspace and state folder holding one saved two-prompt session."""

    home: Path
    root: Path
    id: str

    def run(self, script: list[ScriptItem], *args: str) -> Run:
        """`handrail run ARGS` (json output, mode bypass) against a server playing `script`.

        Each run has a server of its own: the script's calls carry their own ids, so that the
        ids a resumed conversation sends are never used twice.
        """
        with ModelServer(script) as server:
            argv = [sys.executable, "-m", "handrail", "run", *args, "--root", str(self.root)]
            argv += ["--model", "anthropic:scripted", "--base-url", server.base_url("anthropic")]
            argv += ["--output-format", "json", "--mode", "bypass"]
            out = subprocess.run(
                argv,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=RUN_TIMEOUT,
                check=False,
                env=isolated_env(self.home),
            )
            return Run(out.returncode, out.stdout, out.stderr, server.requests, server.problems)

    def transcripts(self) -> dict[str, bytes]:
        """Every saved transcript, by session id."""
        found = (self.home / "state").glob("sessions/*/*.jsonl")
        return {p.stem: p.read_bytes() for p in found}

    def files(self) -> dict[str, bytes]:
        return {
            p.relative_to(self.root).as_posix(): p.read_bytes()
            for p in self.root.rglob("*")
            if p.is_file()
        }


BEFORE_FIRST = {"greet.py": GREET, "old.bin": OLD}
BEFORE_SECOND = {"greet.py": GREET.replace(b"Hello", b"Hi"), "old.bin": OLD}
AFTER_SECOND = {"greet.py": GREET.replace(b"Hello", b"Hi"), "notes.txt": b"made\n"}


@pytest.fixture
def session(tmp_path: Path) -> Session:
    """Two prompts through real tools: an edit, then a shell line (a new file, a deletion)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_bytes(GREET)
    (root / "old.bin").write_bytes(OLD)
    s = Session(tmp_path / "home", root, "")
    first = s.run(
        [
            Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"}, id="toolu_read")]),
            Reply(
                tool_calls=[
                    ToolUse(
                        "edit_file",
                        {"file_path": "greet.py", "old_string": "Hello, ", "new_string": "Hi, "},
                        id="toolu_edit",
                    )
                ]
            ),
            Reply(text="Edited."),
        ],
        FIRST,
    )
    assert first.returncode == 0, first.stderr
    s = Session(s.home, root, first.result()["session_id"])
    second = s.run(
        [
            Reply(
                tool_calls=[
                    ToolUse(
                        "run_shell",
                        {"command": "printf 'made\\n' > notes.txt && rm old.bin"},
                        id="toolu_shell",
                    )
                ]
            ),
            Reply(text="Made the notes."),
        ],
        "--resume",
        s.id,
        SECOND,
    )
    assert second.returncode == 0, second.stderr
    assert s.files() == AFTER_SECOND
    return s


def sent(run: Run) -> str:
    """Everything the model was sent in the run's first request."""
    return json.dumps(run.requests[0].body["messages"])


def prompts_of(transcript: bytes) -> list[str]:
    """The prompts of a transcript's conversation as it stands (rewinds applied)."""
    out: list[str] = []
    for line in transcript.decode().splitlines():
        record = json.loads(line)
        if record["type"] == "prompt":
            out.append(record["prompt"])
        elif record["type"] == "rewind":
            del out[record["turn"] - 1 :]
    return out


def test_rewind_puts_files_and_conversation_back_then_runs_the_prompt(session: Session) -> None:
    run = session.run([Reply(text="Again.")], "--resume", session.id, "--rewind", "2", "Third")
    assert run.returncode == 0, run.stderr
    assert run.problems == []
    # The files as the second prompt found them, byte for byte (the deleted file is back).
    assert session.files() == BEFORE_SECOND
    # The model saw the first exchange, not the second.
    assert FIRST in sent(run) and SECOND not in sent(run) and "Made the notes." not in sent(run)
    assert run.result()["session_id"] == session.id
    assert prompts_of(session.transcripts()[session.id]) == [FIRST, "Third"]
    assert 'went back to prompt 2 ("Second: make notes")' in run.stderr
    assert "restored 2 paths: notes.txt, old.bin" in run.stderr
    assert f"/rewind undo in `handrail --resume {session.id}`" in run.stderr


def test_a_hand_changed_file_stops_the_rewind_before_the_model_is_asked(
    session: Session,
) -> None:
    (session.root / "notes.txt").write_text(CANARY)
    before = session.transcripts()
    run = session.run([Reply(text="Never sent.")], "--resume", session.id, "--rewind", "2", "x")
    assert run.returncode == 1
    assert run.requests == []
    assert (session.root / "notes.txt").read_text() == CANARY
    assert not (session.root / "old.bin").exists()  # nothing else moved either
    assert session.transcripts() == before
    assert run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert line.startswith("handrail: error: --rewind 2 would overwrite changes made outside")
    assert "notes.txt" in line and "--rewind-overwrite" in line


def test_rewind_overwrite_says_yes_to_overwriting(session: Session) -> None:
    (session.root / "notes.txt").write_text(CANARY)
    run = session.run(
        [Reply(text="Again.")], "--resume", session.id, "--rewind", "2", "--rewind-overwrite", "x"
    )
    assert run.returncode == 0, run.stderr
    assert session.files() == BEFORE_SECOND
    assert "overwrote changes made outside the session: notes.txt" in run.stderr


def test_rewind_only_the_conversation_leaves_the_files(session: Session) -> None:
    (session.root / "notes.txt").write_text(CANARY)  # no file is touched, so nothing to refuse
    args = ("--resume", session.id, "--rewind", "1", "--rewind-only", "conversation", "Redo")
    run = session.run([Reply(text="Again.")], *args)
    assert run.returncode == 0, run.stderr
    assert session.files() == {**AFTER_SECOND, "notes.txt": CANARY.encode()}
    messages = run.requests[0].body["messages"]
    assert len(messages) == 1 and FIRST not in sent(run)
    assert prompts_of(session.transcripts()[session.id]) == ["Redo"]


def test_rewind_only_the_code_keeps_the_conversation(session: Session) -> None:
    args = ("--resume", session.id, "--rewind", "1", "--rewind-only", "code", "Third")
    run = session.run([Reply(text="Again.")], *args)
    assert run.returncode == 0, run.stderr
    assert session.files() == BEFORE_FIRST
    assert FIRST in sent(run) and SECOND in sent(run)
    assert prompts_of(session.transcripts()[session.id]) == [FIRST, SECOND, "Third"]
    assert "the conversation goes on as it was" in run.stderr


def test_fork_starts_a_new_session_and_leaves_the_old_one(session: Session) -> None:
    old = session.transcripts()[session.id]
    args = ("--resume", session.id, "--rewind", "2", "--fork", "Other way")
    run = session.run([Reply(text="Forked.")], *args)
    assert run.returncode == 0, run.stderr
    new_id = run.result()["session_id"]
    assert new_id != session.id
    assert f"forked session {session.id} as {new_id}" in run.stderr
    transcripts = session.transcripts()
    assert transcripts[session.id] == old  # the old session, byte for byte
    assert json.loads(transcripts[new_id].decode().splitlines()[0])["parent"] == session.id
    assert prompts_of(transcripts[new_id]) == [FIRST, "Other way"]
    assert session.files() == BEFORE_SECOND
    assert FIRST in sent(run) and SECOND not in sent(run)
    # The fork carries the checkpoints: it can go back further, to before its first prompt.
    again = session.run([Reply(text="Back.")], "--resume", new_id, "--rewind", "1", "Start")
    assert again.returncode == 0, again.stderr
    assert session.files() == BEFORE_FIRST
    assert session.transcripts()[session.id] == old


def test_fork_without_rewind_copies_the_whole_conversation(session: Session) -> None:
    run = session.run([Reply(text="Forked.")], "--resume", session.id, "--fork", "Go on")
    assert run.returncode == 0, run.stderr
    new_id = run.result()["session_id"]
    assert new_id != session.id
    assert prompts_of(session.transcripts()[new_id]) == [FIRST, SECOND, "Go on"]
    assert session.files() == AFTER_SECOND


def test_a_refused_fork_leaves_no_new_session(session: Session) -> None:
    (session.root / "notes.txt").write_text(CANARY)
    before = session.transcripts()
    args = ("--resume", session.id, "--rewind", "1", "--fork", "x")
    run = session.run([Reply(text="Never sent.")], *args)
    assert run.returncode == 1
    assert run.requests == []
    assert (session.root / "notes.txt").read_text() == CANARY
    assert session.transcripts() == before
    assert "notes.txt" in run.stderr and "--rewind-overwrite" in run.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--rewind", "1"), "--rewind goes with --resume ID or --continue"),
        (("--fork",), "--fork goes with --resume ID or --continue"),
        (("--continue", "--rewind-only", "code"), "--rewind-only goes with --rewind N"),
        (("--continue", "--rewind-overwrite"), "--rewind-overwrite goes with --rewind N"),
        (("--continue", "--rewind", "3"), "has 2 prompts to go back to (1 to 2)"),
        (("--continue", "--rewind", "0"), "has 2 prompts to go back to (1 to 2)"),
        (("--continue", "--fork", "--no-save"), "--fork makes a new saved session"),
    ],
)
def test_usage_errors_exit_2_before_anything_runs(
    session: Session, args: tuple[str, ...], message: str
) -> None:
    before = (session.files(), session.transcripts())
    run = session.run([], *args, "x")
    assert run.returncode == 2
    assert message in run.stderr
    assert run.requests == []
    assert (session.files(), session.transcripts()) == before


def test_a_replay_does_not_rewind(session: Session) -> None:
    (path,) = (session.home / "state").glob(f"sessions/*/{session.id}.jsonl")
    before = (session.files(), session.transcripts())
    run = session.run([], "--replay", str(path), "--rewind", "1")
    assert run.returncode == 2
    assert "--rewind goes with --resume ID or --continue" in run.stderr
    assert (session.files(), session.transcripts()) == before
