"""The agent observes the questions of its calls: events, transcript, labels; it owns none.

A tool's `Confirmation` asked inside a run (or inside a sub-agent's run) reaches the run's
approver, the agent's, or the runtime's, in that order; it is reported as `approval_asked` /
`approval_answered` and written to the transcript once; headless, it is answered "no".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    Approval,
    ApprovalRequest,
    Confirmation,
    Question,
    Registry,
    Runtime,
    ToolContext,
    tool,
)
from handrail.agent import Agent, Event
from handrail.testing import ModelServer, Reply, ToolUse


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("edited by hand\n")
    return root


@tool(read_only=True)
async def replace_notes(text: str, ctx: ToolContext) -> str:
    """Replace notes.txt, after asking whoever is behind this call."""
    answer = await ctx.ask(
        Confirmation(reason="notes.txt was changed by hand; overwrite it?", topic="overwrite")
    )
    if answer.kind == "deny":
        return f"kept: {answer.reason}"
    (ctx.cwd / "notes.txt").write_text(text)
    return "written"


def events_of(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [e.to_json() for e in events if e.type == kind]


def answering(answer: Approval, seen: list[Question]) -> Any:
    async def approve(question: Question) -> Approval:
        seen.append(question)
        return answer

    return approve


async def test_a_tools_question_is_observed_and_recorded_once(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "new\n"}, id="q1")]),
        Reply(text="done"),
    )
    seen: list[Question] = []
    events: list[Event] = []
    rt = Runtime(Registry([replace_notes]), root=workspace)
    agent = Agent(client(), rt, agents=False, approver=answering(Approval.allow_once(), seen))
    async with asyncio.timeout(30):
        result = await agent.run("overwrite the notes", on_event=events.append)
    assert result.subtype == "success"
    assert (workspace / "notes.txt").read_text() == "new\n"
    (asked,) = events_of(events, "approval_asked")
    assert asked == {
        "type": "approval_asked",
        "agent": "main",
        "reason": "notes.txt was changed by hand; overwrite it?",
        "call_id": "q1",
        "tool_name": "replace_notes",
        "question": {"topic": "overwrite", "subject": "", "always": None},
    }
    (answered,) = events_of(events, "approval_answered")
    assert (answered["call_id"], answered["decision"], answered["by"]) == (
        "q1",
        "allow_once",
        "user",
    )
    assert [q.agent for q in seen] == ["main"]
    # The transcript has the question and its answer once each.
    assert agent.transcript_path is not None
    records = [json.loads(line) for line in agent.transcript_path.read_text().splitlines()]
    kinds = [r["event"]["type"] for r in records if r["type"] == "event"]
    assert kinds.count("approval_asked") == 1 and kinds.count("approval_answered") == 1


async def test_a_runs_approver_wins_over_the_agents_and_the_runtimes(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "new\n"})]),
        Reply(text="kept"),
    )
    runtime_seen: list[Question] = []
    agent_seen: list[Question] = []
    run_seen: list[Question] = []
    rt = Runtime(
        Registry([replace_notes]),
        root=workspace,
        approver=answering(Approval.allow_once(), runtime_seen),
    )
    agent = Agent(
        client(),
        rt,
        agents=False,
        save=False,
        approver=answering(Approval.allow_once(), agent_seen),
    )
    async with asyncio.timeout(30):
        await agent.run(
            "overwrite the notes",
            approver=answering(Approval.deny("Keep my edit."), run_seen),
        )
    assert (len(run_seen), agent_seen, runtime_seen) == (1, [], [])
    assert (workspace / "notes.txt").read_text() == "edited by hand\n"
    # The run's approver was for that run only.
    server.push(
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "second\n"})]),
        Reply(text="written"),
    )
    async with asyncio.timeout(30):
        await agent.run("again")
    assert (len(run_seen), len(agent_seen), runtime_seen) == (1, 1, [])
    assert (workspace / "notes.txt").read_text() == "second\n"


async def test_headless_a_question_is_answered_no_on_the_policys_behalf(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "new\n"})]),
        Reply(text="could not"),
    )
    events: list[Event] = []
    agent = Agent(client(), Runtime(Registry([replace_notes]), root=workspace), save=False)
    async with asyncio.timeout(30):
        await agent.run("overwrite the notes", on_event=events.append)
    (answered,) = events_of(events, "approval_answered")
    assert (answered["decision"], answered["by"]) == ("deny", "policy")
    assert "nobody can answer questions in this run" in answered["reason"]
    assert (workspace / "notes.txt").read_text() == "edited by hand\n"


async def test_a_sub_agents_question_reaches_the_parents_approver_labelled(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    from handrail.builtin import coding_tools

    server.push(
        Reply(
            tool_calls=[
                ToolUse(
                    "agent",
                    {
                        "description": "rewrite notes",
                        "prompt": "sub: rewrite",
                        "agent_type": "general",
                    },
                )
            ]
        ),
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "from the child\n"})]),
        Reply(text="rewrote it"),
        Reply(text="The child rewrote the notes."),
    )
    seen: list[Question] = []
    events: list[Event] = []
    rt = Runtime(Registry([*coding_tools(project_dir=workspace), replace_notes]), root=workspace)
    parent = Agent(client(), rt, save=False, approver=answering(Approval.allow_once(), seen))
    async with asyncio.timeout(30):
        result = await parent.run("rewrite via a helper", on_event=events.append)
    assert result.subtype == "success"
    assert [(type(q).__name__, q.agent) for q in seen] == [("Confirmation", "general#1")]
    assert not any(isinstance(q, ApprovalRequest) for q in seen)
    # Observed once, by the parent, with the child's label.
    assert [e["agent"] for e in events_of(events, "approval_asked")] == ["general#1"]
    assert (workspace / "notes.txt").read_text() == "from the child\n"


async def test_allow_always_for_a_child_is_recorded_once_where_parent_and_child_read_it(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    from handrail.builtin import coding_tools

    def child_writes(name: str) -> ToolUse:
        return ToolUse("write_file", {"file_path": name, "content": "x"})

    server.push(
        Reply(
            tool_calls=[
                ToolUse(
                    "agent",
                    {"description": "write two", "prompt": "sub: write", "agent_type": "general"},
                )
            ]
        ),
        Reply(tool_calls=[child_writes("a.txt")]),
        Reply(tool_calls=[child_writes("b.txt")]),
        Reply(text="wrote both"),
        Reply(tool_calls=[child_writes("c.txt")]),
        Reply(text="The child wrote them; so did I."),
    )
    seen: list[Question] = []
    rt = Runtime(Registry(coding_tools(project_dir=workspace)), root=workspace, mode="default")
    always = Approval.allow_always("write_file")
    parent = Agent(client(), rt, save=False, approver=answering(always, seen))
    async with asyncio.timeout(30):
        result = await parent.run("write files via a helper, then one yourself")
    assert result.subtype == "success"
    # Asked once, for the child's first write; the rule then held for the child and the parent.
    assert [(q.agent, q.tool_name) for q in seen if isinstance(q, ApprovalRequest)] == [
        ("general#1", "write_file")
    ]
    assert rt.session.allow_rules == ["write_file"]
    assert all((workspace / n).read_text() == "x" for n in ("a.txt", "b.txt", "c.txt"))


async def test_a_tools_question_is_not_replayed_as_its_calls_approval(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    from handrail.agent import load_session
    from handrail.builtin import coding_tools

    server.push(
        Reply(tool_calls=[ToolUse("write_file", {"file_path": "a.txt", "content": "x"}, id="w1")]),
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "new\n"}, id="q1")]),
        Reply(text="done"),
    )

    async def approve(question: Question) -> Approval:
        # The calls are approved; the tool's own question is answered no.
        if isinstance(question, ApprovalRequest):
            return Approval.allow_once()
        return Approval.deny("keep my edit")

    rt = Runtime(
        Registry([*coding_tools(project_dir=workspace), replace_notes]),
        root=workspace,
        mode="default",
    )
    agent = Agent(client(), rt, agents=False, approver=approve)
    async with asyncio.timeout(30):
        await agent.run("write, then overwrite the notes")
    assert agent.transcript_path is not None
    saved = load_session(agent.transcript_path)
    # Only the call's approval counts for a replay; the tool's "no" is its own record.
    assert {k: v["decision"] for k, v in saved.approvals.items()} == {"w1": "allow_once"}
    records = [json.loads(line) for line in agent.transcript_path.read_text().splitlines()]
    answered = [r["event"] for r in records if r["type"] == "event"]
    answered = [e for e in answered if e["type"] == "approval_answered"]
    assert [(e["call_id"], e.get("about", "call"), e["decision"]) for e in answered] == [
        ("w1", "call", "allow_once"),
        ("q1", "confirmation", "deny"),
    ]


async def test_an_approver_that_fails_is_recorded_as_the_no_it_becomes(
    workspace: Path, server: ModelServer, client: Any
) -> None:
    server.push(
        Reply(tool_calls=[ToolUse("replace_notes", {"text": "new\n"})]),
        Reply(text="could not"),
    )

    async def broken(question: Question) -> Approval:
        raise RuntimeError("the UI went away")

    events: list[Event] = []
    agent = Agent(
        client(), Runtime(Registry([replace_notes]), root=workspace), save=False, approver=broken
    )
    async with asyncio.timeout(30):
        await agent.run("overwrite the notes", on_event=events.append)
    (answered,) = events_of(events, "approval_answered")
    assert (answered["decision"], answered["by"]) == ("deny", "user")
    assert "the UI went away" in answered["reason"]
    assert (workspace / "notes.txt").read_text() == "edited by hand\n"
