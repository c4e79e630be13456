"""`handrail sessions`: listing a workspace's saved sessions and cleaning up the old ones.

Sessions are made by real `handrail run`s against the scripted model server (each writes a
file through `write_file`, so each has checkpoints); the command runs as a real subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from handrail.testing import ModelServer, Reply, ToolUse

TIMEOUT = 90.0


def env_for(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HANDRAIL_") and not k.endswith(("_API_KEY", "_AUTH_TOKEN"))
    }
    (home / "home").mkdir(parents=True, exist_ok=True)
    env.update(
        HANDRAIL_STATE_DIR=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        HOME=str(home / "home"),
    )
    return env


def handrail(home: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env=env_for(home),
    )


def run_session(home: Path, root: Path, name: str, prompt: str) -> str:
    script = [
        Reply(tool_calls=[ToolUse("write_file", {"file_path": name, "content": f"{name}\n"})]),
        Reply(text="Written."),
    ]
    with ModelServer(script) as server:
        out = handrail(
            home,
            root,
            "run",
            prompt,
            "--root",
            str(root),
            "--model",
            "anthropic:scripted",
            "--base-url",
            server.base_url("anthropic"),
            "--output-format",
            "json",
            "--mode",
            "bypass",
        )
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["session_id"])


def age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


def test_sessions_lists_each_session_with_its_first_prompt_and_the_space_used(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    home = tmp_path / "h"
    first = run_session(home, root, "a.txt", "Write a\nplease")
    second = run_session(home, root, "b.txt", "Write b")
    out = handrail(home, root, "sessions")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Newest first; a prompt's new lines are folded into one line.
    assert lines[0].startswith(second[:8]) and lines[0].endswith("1 prompt  Write b")
    assert lines[1].startswith(first[:8]) and lines[1].endswith("1 prompt  Write a please")
    assert lines[2].startswith("transcripts ") and "checkpoints " in lines[2]


def test_sessions_clean_removes_old_sessions_and_keeps_the_recent_ones_restorable(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    home = tmp_path / "h"
    old = run_session(home, root, "a.txt", "Write a")
    new = run_session(home, root, "b.txt", "Write b")
    state = home / "state"
    (transcript,) = state.glob(f"sessions/*/{old}.jsonl")
    (log,) = state.glob(f"checkpoints/*/{old}.jsonl")
    age(transcript, 40)
    age(log, 40)
    for blob in state.glob("checkpoints/*/objects/*/*"):
        age(blob, 40)
    out = handrail(home, root, "sessions", "--clean", "30")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("removed 1 session, 1 checkpoint log, ")
    assert not transcript.exists() and not log.exists()
    assert list(state.glob(f"sessions/*/{new}.jsonl"))
    listed = handrail(home, root, "sessions").stdout
    assert new[:8] in listed and old[:8] not in listed


def test_sessions_says_what_is_wrong(tmp_path: Path) -> None:
    out = handrail(tmp_path, tmp_path, "sessions", str(tmp_path / "missing"))
    assert out.returncode == 2 and "no such directory" in out.stderr
    out = handrail(tmp_path, tmp_path, "sessions", "--clean", "-1")
    assert out.returncode == 2 and "0 or more" in out.stderr
    out = handrail(tmp_path, tmp_path, "sessions")
    assert out.returncode == 0 and out.stdout.startswith("no saved sessions for ")
