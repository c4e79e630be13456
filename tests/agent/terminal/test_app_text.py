"""The text the terminal agent itself sends to the model (snapshots: the model reads these)."""

from __future__ import annotations

import io
from pathlib import Path

from inline_snapshot import snapshot
from rich.console import Console

from handrail import Approval, Question, Registry, Runtime
from handrail.agent import Agent, ModelClient
from handrail.agent._terminal._app import ChatApp
from handrail.agent._terminal._question import SAID_NO, declined
from handrail.builtin import coding_tools


def test_a_declined_call_tells_the_model_what_to_do() -> None:
    assert declined("") == snapshot(
        "The user declined this call. Do not retry it; ask what they want instead, or take another approach."
    )
    assert declined("use pytest instead") == snapshot(
        "The user declined this call and said: use pytest instead"
    )
    # A tool's own question answered "No" (what the tool passes on is its own).
    assert SAID_NO == snapshot("The user said no.")


async def test_an_attached_file_reaches_the_model_framed_and_a_secret_does_not(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("CANARY-7f3a\n")
    (root / "link.txt").symlink_to(secret)
    rt = Runtime(Registry(coding_tools(project_dir=root)), root=root)
    # No request is made: the model client is only needed to build the app.
    client = ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1", key_required=False)
    agent = Agent(client, rt, save=False)
    out = io.StringIO()
    app = ChatApp(agent, Console(file=out, width=80, force_terminal=False))
    sent = await app.attach(f"summarise @notes.txt and @link.txt and @{secret}")
    assert sent.replace(str(secret), "SECRET") == snapshot("""\
summarise @notes.txt and @link.txt and @SECRET

Attached files:

<file path="notes.txt">
1\talpha
2\tbeta
</file>\
""")
    assert "CANARY" not in sent
    shown = out.getvalue()
    assert "attached notes.txt" in shown
    assert "not attached link.txt" in shown
    await agent.aclose()
    await rt.aclose()


async def test_an_attachment_that_would_ask_is_refused_without_asking(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    asked: list[Question] = []

    async def approve(question: Question) -> Approval:  # the runtime's own: never used here
        asked.append(question)
        return Approval.allow_once()

    rt = Runtime(
        Registry(coding_tools(project_dir=tmp_path)),
        root=tmp_path,
        ask=["read_file"],
        approver=approve,
    )
    client = ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1", key_required=False)
    agent = Agent(client, rt, save=False)
    out = io.StringIO()
    app = ChatApp(agent, Console(file=out, width=200, force_terminal=False))
    sent = await app.attach("look at @notes.txt")
    assert sent == "look at @notes.txt"
    assert asked == []
    (line,) = out.getvalue().splitlines()
    assert line.startswith("✗ not attached notes.txt: "), line
    assert "Not approved: attachments outside the workspace are refused." in line
    await agent.aclose()
    await rt.aclose()


async def test_a_model_servers_error_is_shown_without_obeying_its_escape_sequences(
    tmp_path: Path,
) -> None:
    from handrail.agent import RunResult, Usage

    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path)
    client = ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1", key_required=False)
    agent = Agent(client, rt, save=False)
    out = io.StringIO()
    app = ChatApp(agent, Console(file=out, width=200, force_terminal=True))
    error = "HTTP 400: bad\x1b]52;c;cm0gLXJmIH4=\x07 request\x9b2J"
    failed = RunResult(
        subtype="error_model",
        result="",
        session_id="s",
        num_turns=1,
        usage=Usage(),
        duration_ms=1,
        error=error,
    )
    app._report(failed, 0.1)  # pyright: ignore[reportPrivateUsage]
    shown = out.getvalue()
    assert "\x1b]" not in shown and "\x9b" not in shown
    assert r"error_model: HTTP 400: bad\x1b]52;c;cm0gLXJmIH4=\x07 request\x9b2J" in shown
    await agent.aclose()
    await rt.aclose()


async def test_each_question_shows_its_own_call_even_when_call_ids_collide(
    tmp_path: Path,
) -> None:
    # Call ids are unique only within one agent's turn: parallel sub-agents' calls may share
    # one. Three questions arrive (each announced by its event, as the agent does) while the
    # first waits; each must show its own call, never one looked up by id.
    import asyncio

    from handrail import ApprovalRequest, ToolCall
    from handrail.agent import ApprovalAsked
    from handrail.display import CallStatus

    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path)
    client = ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1", key_required=False)
    agent = Agent(client, rt, save=False)
    app = ChatApp(agent, Console(file=io.StringIO(), width=80, force_terminal=False))
    app.view = app.new_view()
    tasks = []
    for i, host in enumerate(["one.example", "two.example", "three.example"]):
        call = ToolCall(id="f1", name="web_fetch", arguments={"url": f"https://{host}/"})
        question = ApprovalRequest(
            reason=f"web_fetch would contact {host}",
            call=call,
            tool_name="web_fetch",
            agent=f"explore#{i + 1}",
        )
        shown = rt.display(call, status=CallStatus.WAITING)
        app._event(ApprovalAsked(request=question, agent=question.agent, display=shown))  # pyright: ignore[reportPrivateUsage]
        tasks.append(asyncio.ensure_future(app.approve(question)))
        await asyncio.sleep(0.01)
    titles: list[str] = []
    for task in tasks:
        for _ in range(200):  # bounded: the next question is up within a few loop turns
            asking = app._asking  # pyright: ignore[reportPrivateUsage]
            if asking is not None and app._answer is not None and not app._answer.done():  # pyright: ignore[reportPrivateUsage]
                break
            await asyncio.sleep(0.01)
        asking = app._asking  # pyright: ignore[reportPrivateUsage]
        assert asking is not None and asking.display is not None
        titles.append(f"{asking.question.reason} | {asking.display.title}")
        app._escape()  # pyright: ignore[reportPrivateUsage]  # Esc: a plain no
        assert (await asyncio.wait_for(task, 10)).kind == "deny"
    for line in titles:
        reason, title = line.split(" | ")
        assert reason.rsplit(" ", 1)[-1] in title, line
    assert len(titles) == 3
    await agent.aclose()
    await rt.aclose()
