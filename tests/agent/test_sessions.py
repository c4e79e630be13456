"""Transcripts, resume and replay: a session survives the process and can be played back."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from handrail import Registry, Runtime
from handrail.agent import Agent, ToolResults, latest_session, load_session
from handrail.agent._replay import ReplayModel, compare, prompts
from handrail.builtin import coding_tools
from handrail.testing import ModelServer, Reply, ToolUse


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_text('def greet(n):\n    return "Hello, " + n\n')
    return root


def runtime(root: Path) -> Runtime:
    return Runtime(Registry(coding_tools(project_dir=root)), root=root, mode="accept_edits")


async def first_session(server: ModelServer, workspace: Path, client: Any) -> Agent:
    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"})]),
        Reply(text="It says Hello."),
    )
    agent = Agent(client(), runtime(workspace))
    async with asyncio.timeout(20):
        await agent.run("What does greet say?")
    return agent


async def test_the_transcript_is_private_json_lines_with_a_header(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = await first_session(server, workspace, client)
    path = agent.transcript_path
    assert path is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    header = lines[0]
    assert header["type"] == "session" and header["id"] == agent.session_id
    assert header["root"] == str(workspace.resolve())
    kinds = [line["type"] for line in lines]
    assert kinds.count("message") == 4 and kinds[-1] == "result"
    assert "state" in kinds
    # The key never lands in a transcript.
    assert "x-api-key" not in path.read_text()


async def test_a_resumed_session_carries_on_with_messages_and_read_records(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    first = await first_session(server, workspace, client)
    path = latest_session(workspace)
    assert path == first.transcript_path
    saved = load_session(path)
    assert saved.id == first.session_id and len(saved.messages) == 4 and saved.turns == 2
    # A new process: a new runtime, the saved state restored.
    rt = runtime(workspace)
    rt.session.id = saved.id
    agent = Agent(client(), rt, transcript=saved.path)
    agent.restore(saved.messages, saved.state)
    # The file was read in the first run: an edit needs no new read.
    server.push(
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello, ", "new_string": "Hi, "},
                )
            ]
        ),
        Reply(text="Changed."),
    )
    async with asyncio.timeout(20):
        result = await agent.run("Now say Hi instead.")
    assert result.subtype == "success"
    assert "Hi, " in (workspace / "greet.py").read_text()
    sent = json.dumps(server.requests[2].body)
    assert "What does greet say?" in sent and "It says Hello." in sent
    assert server.problems == []
    # Both runs are in the one file, and it loads back whole.
    again = load_session(saved.path)
    assert len(again.messages) == 8


async def test_a_torn_last_line_is_ignored(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = await first_session(server, workspace, client)
    path = agent.transcript_path
    assert path is not None
    with path.open("a") as f:
        f.write('{"type": "message", "message": {"role": "user", "te')
    saved = load_session(path)
    assert len(saved.messages) == 4


async def test_latest_session_skips_sub_agent_transcripts(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = await first_session(server, workspace, client)
    path = agent.transcript_path
    assert path is not None
    child = path.with_name(f"{path.stem}--explore-1.jsonl")
    child.write_text(path.read_text())
    os.utime(child, (path.stat().st_mtime + 10, path.stat().st_mtime + 10))
    assert latest_session(workspace) == path


async def test_a_replay_runs_the_tools_anew_and_finds_what_changed(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    recorded = await first_session(server, workspace, client)
    path = recorded.transcript_path
    assert path is not None
    saved = load_session(path)

    async def replay() -> list[Any]:
        agent = Agent(ReplayModel(saved), runtime(workspace), save=False, agents=False)
        for prompt in prompts(saved):
            async with asyncio.timeout(20):
                await agent.run(prompt)
        return compare(saved.messages, agent.messages)

    requests_before = len(server.requests)
    assert await replay() == []
    (workspace / "greet.py").write_text('def greet(n):\n    return "Howdy, " + n\n')
    diffs = await replay()
    assert len(server.requests) == requests_before  # no model was asked
    assert len(diffs) == 1
    assert diffs[0].tool_name == "read_file"
    text = diffs[0].describe()
    assert "was ok, now ok, with different content" in text
    assert '-2\t    return "Hello, " + n' in text and '+2\t    return "Howdy, " + n' in text


async def test_a_call_left_without_a_result_by_a_crash_is_answered_on_load(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = await first_session(server, workspace, client)
    path = agent.transcript_path
    assert path is not None
    # The process died right after writing the model's calls.
    lines = path.read_text().splitlines()
    kept = [ln for ln in lines if '"role":"tool"' not in ln]
    path.write_text("\n".join(kept) + "\n")
    saved = load_session(path)
    results = [m for m in saved.messages if isinstance(m, ToolResults)]
    assert len(results) == 1 and results[0].results[0].error == "CANCELLED"
    rt = runtime(workspace)
    rt.session.id = saved.id
    again = Agent(client(), rt, transcript=saved.path)
    again.restore(saved.messages, saved.state)
    server.push(Reply(text="carrying on"))
    async with asyncio.timeout(20):
        assert (await again.run("go on")).subtype == "success"
    assert server.problems == []
