"""Cleaning up old sessions: transcripts, their checkpoints, and the contents only they kept."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from handrail import Registry, Runtime
from handrail.agent import Agent, clean_sessions
from handrail.builtin import coding_tools
from handrail.sandbox import checkpoint_folder
from handrail.testing import ModelServer, Reply, ToolUse


def _age(path: Path, days: float) -> None:
    then = time.time() - days * 86400
    os.utime(path, (then, then))


async def _session(server: ModelServer, root: Path, client: Any, name: str) -> Agent:
    rt = Runtime(Registry(coding_tools()), root=root, mode="bypass", checkpoints=True)
    agent = Agent(client(), rt)
    server.push(
        Reply(tool_calls=[ToolUse("write_file", {"file_path": name, "content": f"{name}\n"})]),
        Reply(text="Written."),
    )
    async with asyncio.timeout(30):
        await agent.run("Write it.")
    await agent.aclose()
    await rt.aclose()
    return agent


async def test_old_sessions_go_with_their_checkpoints_and_only_their_contents(
    server: ModelServer, tmp_path: Path, client: Any
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "out.txt").write_text("first content, only the old session kept it\n")
    old = await _session(server, root, client, "old.txt")
    (root / "out.txt").write_text("second content, kept by the new session\n")
    new = await _session(server, root, client, "new.txt")
    folder = checkpoint_folder(root)
    assert old.transcript_path is not None and new.transcript_path is not None
    _age(old.transcript_path, 40)
    _age(folder / f"{old.session_id}.jsonl", 40)
    blobs = [p for p in (folder / "objects").rglob("*") if p.is_file()]
    for blob in blobs:
        _age(blob, 40)
    done = clean_sessions(root, older_than_days=30)
    assert done.transcripts == 1 and done.checkpoint_logs == 1 and done.bytes_freed > 0
    assert not old.transcript_path.exists()
    assert not (folder / f"{old.session_id}.jsonl").exists()
    assert new.transcript_path.exists() and (folder / f"{new.session_id}.jsonl").exists()
    # The new session can still restore its first checkpoint, byte for byte.
    rt = Runtime(Registry(coding_tools()), root=root, mode="bypass", checkpoints=True)
    rt.session.id = new.session_id
    (root / "out.txt").write_text("third\n")
    restored = await rt.restore(1, overwrite_outside=True)
    assert restored.ok and not (root / "new.txt").exists()
    assert (root / "out.txt").read_text() == "second content, kept by the new session\n"
    await rt.aclose()


async def test_nothing_recent_is_removed(server: ModelServer, tmp_path: Path, client: Any) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    agent = await _session(server, root, client, "a.txt")
    done = clean_sessions(root, older_than_days=30)
    assert (done.transcripts, done.checkpoint_logs, done.bytes_freed) == (0, 0, 0)
    assert agent.transcript_path is not None and agent.transcript_path.exists()
