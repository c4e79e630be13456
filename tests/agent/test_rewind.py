"""Rewind and fork: going back to where a prompt began, files and conversation, over real calls.

The agent runs against the scripted model server over loopback HTTP; its calls are the real
coding tools (a real sandboxed shell included) on a real folder, with checkpoints on.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from handrail import Approval, Confirmation, Question, Registry, Runtime
from handrail.agent import Agent, UserMessage, load_session
from handrail.builtin import coding_tools
from handrail.errors import ConfigurationError
from handrail.testing import ModelServer, Reply, ToolUse


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_text('def greet(n):\n    return "Hello, " + n\n')
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text("TOKEN=original\n")
    return root


def runtime(root: Path, **kw: Any) -> Runtime:
    return Runtime(
        Registry(coding_tools(project_dir=root)),
        root=root,
        mode="bypass",
        checkpoints=True,
        **kw,
    )


def tree(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = "<dir>" if path.is_dir() else path.read_bytes()
    return out


async def three_prompts(server: ModelServer, agent: Agent) -> list[dict[str, bytes | str]]:
    """Three prompts: an edit, a shell line (new file, overwritten .env), a sub-folder."""
    before: list[dict[str, bytes | str]] = []
    root = agent.runtime.root
    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"})]),
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello, ", "new_string": "Hi, "},
                )
            ]
        ),
        Reply(text="Edited."),
    )
    before.append(tree(root))
    async with asyncio.timeout(30):
        await agent.run("Say Hi.")
    server.push(
        Reply(
            tool_calls=[
                ToolUse("run_shell", {"command": "echo made > notes.txt && echo TOKEN=x > .env"})
            ]
        ),
        Reply(text="Done."),
    )
    before.append(tree(root))
    async with asyncio.timeout(30):
        await agent.run("Make notes.")
    server.push(
        Reply(tool_calls=[ToolUse("run_shell", {"command": "mkdir -p pkg/sub && rm greet.py"})]),
        Reply(text="Reorganised."),
    )
    before.append(tree(root))
    async with asyncio.timeout(30):
        await agent.run("Reorganise.")
    return before


async def test_each_prompt_lists_the_files_it_changed(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    await three_prompts(server, agent)
    turns = agent.checkpoints()
    assert [t.prompt for t in turns] == ["Say Hi.", "Make notes.", "Reorganise."]
    assert turns[0].files == ("greet.py",)
    assert set(turns[1].files) == {".env", "notes.txt"}
    assert set(turns[2].files) == {"greet.py", "pkg", "pkg/sub"}
    assert all(t.checkpoint is not None for t in turns)


async def test_rewinding_code_and_conversation_goes_back_exactly(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    before = await three_prompts(server, agent)
    messages_before_second = list(agent.prompts[1].messages)
    done = await agent.rewind(2)
    assert done.ok and done.prompt == "Make notes." and done.conversation
    # The files as the second prompt found them: the edit kept, later changes gone, the
    # ignored .env back to what the shell overwrote.
    assert tree(workspace) == before[1]
    assert (workspace / ".env").read_text() == "TOKEN=original\n"
    assert agent.messages == messages_before_second
    assert [t.prompt for t in agent.checkpoints()] == ["Say Hi."]
    # The next prompt is the conversation's second again, and the model sees the rewound history.
    server.push(Reply(text="Fine."))
    async with asyncio.timeout(30):
        await agent.run("Something else.")
    sent = json.dumps(server.requests[-1].body)
    assert "Say Hi." in sent and "Make notes." not in sent and "Reorganise." not in sent
    # The rewind's restore is itself undoable.
    assert done.restored is not None and done.restored.undo is not None
    await agent.runtime.restore(done.restored.undo)
    assert tree(workspace) == tree_after_third(before, workspace)


def tree_after_third(before: list[dict[str, bytes | str]], root: Path) -> dict[str, bytes | str]:
    # After the third prompt: greet.py gone, pkg/sub made, notes.txt and the new .env kept.
    expected = dict(before[2])
    expected.pop("greet.py")
    expected["pkg"] = "<dir>"
    expected["pkg/sub"] = "<dir>"
    return expected


async def test_rewinding_only_the_conversation_leaves_the_files(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    await three_prompts(server, agent)
    now = tree(workspace)
    done = await agent.rewind(1, code=False)
    assert done.ok and done.restored is None
    assert tree(workspace) == now
    assert agent.messages == [] and agent.prompts == []


async def test_rewinding_only_the_code_keeps_the_conversation(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    before = await three_prompts(server, agent)
    messages = list(agent.messages)
    done = await agent.rewind(1, conversation=False)
    assert done.ok and not done.conversation
    assert tree(workspace) == before[0]
    assert agent.messages == messages and len(agent.prompts) == 3


async def test_a_file_changed_by_hand_is_not_overwritten_without_a_yes(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    await three_prompts(server, agent)
    (workspace / "notes.txt").write_text("my own notes\n")
    # Nobody to ask: nothing changes, and the refusal names the file.
    done = await agent.rewind(2)
    assert not done.ok and done.refused is not None and "notes.txt" in done.refused
    assert (workspace / "notes.txt").read_text() == "my own notes\n"
    assert len(agent.prompts) == 3  # the conversation did not move either
    asked: list[Question] = []

    async def no(question: Question) -> Approval:
        asked.append(question)
        return Approval.deny("keep it")

    done = await agent.rewind(2, approver=no)
    assert not done.ok and (workspace / "notes.txt").read_text() == "my own notes\n"
    assert isinstance(asked[0], Confirmation) and asked[0].topic == "restore"
    assert "notes.txt" in asked[0].reason

    async def yes(question: Question) -> Approval:
        return Approval.allow_once()

    done = await agent.rewind(2, approver=yes)
    assert done.ok and not (workspace / "notes.txt").exists()
    assert done.restored is not None and done.restored.overwritten == ("notes.txt",)


async def test_a_resumed_session_can_rewind_to_its_earlier_prompts(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    before = await three_prompts(server, agent)
    await agent.aclose()
    await agent.runtime.aclose()
    path = agent.transcript_path
    assert path is not None
    saved = load_session(path)
    assert [m.prompt for m in saved.prompts] == ["Say Hi.", "Make notes.", "Reorganise."]
    # A new process: a new runtime on the same session id reads its checkpoints back.
    rt = runtime(workspace)
    rt.session.id = saved.id
    again = Agent(client(), rt, transcript=saved.path)
    again.switch_to(saved)
    done = await again.rewind(1)
    assert done.ok and tree(workspace) == before[0]
    # The transcript says so: loading it again gives the rewound conversation.
    assert load_session(path).messages == [] and load_session(path).prompts == []


async def test_a_fork_starts_a_new_session_and_leaves_the_old_one(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    before = await three_prompts(server, agent)
    old_path = agent.transcript_path
    assert old_path is not None
    await agent.aclose()
    old_text = old_path.read_text()
    saved = load_session(old_path)
    forked = Agent(client(), runtime(workspace))
    new_id = forked.fork(saved, turn=3)
    assert new_id != saved.id and forked.session_id == new_id
    assert [m.prompt for m in forked.prompts] == ["Say Hi.", "Make notes."]
    assert isinstance(forked.messages[0], UserMessage)
    # Its checkpoints are a copy: it can put the files back to the second prompt.
    done = await forked.rewind(2)
    assert done.ok and tree(workspace) == before[1]
    assert old_path.read_text() == old_text  # the old session is untouched
    new_path = forked.transcript_path
    assert new_path is not None and new_path != old_path
    header = json.loads(new_path.read_text().splitlines()[0])
    assert header["parent"] == saved.id


async def test_rewind_says_what_is_wrong(server: ModelServer, workspace: Path, client: Any) -> None:
    plain = Agent(client(), Runtime(Registry(coding_tools()), root=workspace, mode="bypass"))
    server.push(Reply(text="Hi."))
    async with asyncio.timeout(30):
        await plain.run("Hello.")
    with pytest.raises(ConfigurationError, match="checkpoints=True"):
        await plain.rewind(1)
    with pytest.raises(ConfigurationError, match="no prompt 5"):
        await plain.rewind(5, code=False)
    # Without checkpoints, the conversation alone can still go back.
    done = await plain.rewind(1, code=False)
    assert done.ok and plain.messages == []


async def test_a_sub_agents_changes_belong_to_the_parents_prompt(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    server.push(
        Reply(
            tool_calls=[
                ToolUse(
                    "agent",
                    {
                        "description": "write notes",
                        "prompt": "Write the notes.",
                        "agent_type": "general",
                    },
                )
            ]
        ),
        # the child's turns: one file through the file tool, one through the shell
        Reply(tool_calls=[ToolUse("write_file", {"file_path": "a.md", "content": "child\n"})]),
        Reply(tool_calls=[ToolUse("run_shell", {"command": "echo child > b.md"})]),
        Reply(text="Notes written."),
        # the parent again
        Reply(text="Done."),
    )
    agent = Agent(client(), runtime(workspace))
    before = tree(workspace)
    async with asyncio.timeout(60):
        result = await agent.run("Have a helper write notes.")
    assert result.subtype == "success"
    assert (workspace / "a.md").read_text() == "child\n" and (workspace / "b.md").exists()
    (turn,) = agent.checkpoints()
    assert set(turn.files) == {"a.md", "b.md"}
    done = await agent.rewind(1)
    assert done.ok and tree(workspace) == before


async def test_a_new_conversation_has_its_own_checkpoints(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    await three_prompts(server, agent)
    agent.clear()  # /clear: a new session id, a new record
    server.push(
        Reply(tool_calls=[ToolUse("write_file", {"file_path": "b.txt", "content": "b\n"})]),
        Reply(text="Written."),
    )
    async with asyncio.timeout(30):
        await agent.run("Write b.")
    (turn,) = agent.checkpoints()
    assert turn.files == ("b.txt",)
    now = tree(workspace)
    done = await agent.rewind(1)
    # Only the new conversation's change goes back; the old conversation's files stay.
    assert done.ok and not (workspace / "b.txt").exists()
    now.pop("b.txt")
    assert tree(workspace) == now


async def test_the_workspace_is_recorded_while_the_model_thinks(
    server: ModelServer, workspace: Path, client: Any
) -> None:
    agent = Agent(client(), runtime(workspace))
    tracker = agent.runtime.session_checkpoints()
    assert not tracker.started
    server.push(Reply(text="Nothing to change."))
    async with asyncio.timeout(30):
        await agent.run("Just look.")
    # No call changed anything, yet the tree is being recorded in the background, so the
    # first change of a later prompt need not walk it.
    for _ in range(200):  # at most 10 s
        if tracker.started:
            break
        await asyncio.sleep(0.05)
    assert tracker.started and agent.runtime.checkpoints() == []
