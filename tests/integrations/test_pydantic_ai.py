"""handrail inside pydantic-ai: `toolset(rt)` driven by pydantic-ai's own agent loop.

Every test runs a real `Agent` with pydantic-ai's `FunctionModel` (a scripted model that also
records what it was sent) or `TestModel`, over a real `Runtime`; nothing of handrail is mocked.
Each asserts what a user of the adapter would notice: what the model reads, what ran and how
often, what is left running or pending.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from handrail import (
    ErrorCode,
    ImagePart,
    PermissionMode,
    Registry,
    Runtime,
    Session,
    ToolContext,
    ToolKind,
    tool,
)
from handrail.builtin import coding_tools
from handrail.sandbox import sandbox_support

pytest.importorskip("pydantic_ai")  # the suite also runs without the extras

from pydantic_ai import (
    Agent,
    BinaryContent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    RunContext,
    ToolApproved,
    ToolDenied,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition

from handrail.integrations.pydantic_ai import HandrailToolset, toolset

# -- a scripted model ------------------------------------------------------------------------


class Script:
    """A model that plays scripted turns, then answers "done"; it records what it was sent."""

    def __init__(self, *turns: Sequence[ModelResponsePart]) -> None:
        self.turns = [list(t) for t in turns]
        self.seen: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        turn = len(self.seen) - 1
        if turn < len(self.turns):
            return ModelResponse(parts=self.turns[turn])
        return ModelResponse(parts=[TextPart("done")])

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)

    def returns(self, turn: int = -1) -> dict[str, ToolReturnPart]:
        """The tool results the model was sent at `turn`, by call id."""
        request = self.seen[turn][-1]
        assert isinstance(request, ModelRequest)
        return {p.tool_call_id: p for p in request.parts if isinstance(p, ToolReturnPart)}


def call(name: str, args: str | dict[str, Any], call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=call_id)


def agent(script: Script | TestModel, ts: HandrailToolset | Any, **kw: Any) -> Agent[Any, Any]:
    model = script.model if isinstance(script, Script) else script
    return Agent(model, toolsets=[ts], output_type=[str, DeferredToolRequests], **kw)


# -- tools -----------------------------------------------------------------------------------


@tool(read_only=True, concurrency_safe=True)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def note_tools(notes: Path) -> list[Any]:
    """`save_note` appends a line to `notes` (an edit: it asks in the default mode)."""

    @tool(kind=ToolKind.EDIT)
    def save_note(text: str) -> str:
        """Save a note."""
        with notes.open("a") as f:
            f.write(text + "\n")
        return f"saved {text}"

    return [add, save_note]


def saved(notes: Path) -> list[str]:
    return notes.read_text().splitlines() if notes.exists() else []


# -- 1. handrail's INVALID_ARGS text reaches the model ---------------------------------------


async def test_bad_and_malformed_arguments_reach_the_model_as_handrails_text() -> None:
    async with Runtime(Registry([add])) as rt:
        bad, malformed = '{"a": "x", "b": 2}', '{"a": 1, "b":'
        expected_bad = (await rt.call("add", bad)).content
        expected_malformed = (await rt.call("add", malformed)).content
        script = Script([call("add", bad, "c1"), call("add", malformed, "c2")])

        result = await agent(script, toolset(rt)).run("add")

    assert result.output == "done"
    sent = script.returns()  # what the model read on its next turn
    assert sent["c1"].outcome == "retried" and sent["c2"].outcome == "retried"
    assert sent["c1"].content == expected_bad
    assert sent["c2"].content == expected_malformed
    assert expected_bad.startswith("Invalid arguments for `add`:")
    assert "not valid JSON" in expected_malformed


# -- 2. an ask becomes pydantic-ai's deferred approval ---------------------------------------


async def test_an_ask_pauses_the_run_with_handrails_reason_and_leaves_nothing_pending(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        request = (await rt.check("save_note", {"text": "milk"})).request
        assert request is not None
        script = Script(
            [call("add", {"a": 1, "b": 2}, "c1"), call("save_note", {"text": "milk"}, "c2")]
        )

        result = await agent(script, toolset(rt)).run("note it")

        assert isinstance(result.output, DeferredToolRequests)
        assert [c.tool_call_id for c in result.output.approvals] == ["c2"]
        meta = result.output.metadata["c2"]
        assert meta["reason"] == request.reason
        assert meta["suggested_rules"] == list(request.suggested_rules)
        assert meta["args"] == {"text": "milk"}
        assert rt.pipeline.pending == {}
        assert saved(notes) == []


async def test_approving_runs_the_call_exactly_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script([call("save_note", {"text": "milk"}, "c1")])
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        assert isinstance(paused.output, DeferredToolRequests)

        done = await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
        )

        assert done.output == "done"
        assert saved(notes) == ["milk"]
        sent = script.returns()["c1"]
        assert sent.content == "saved milk"
        assert sent.metadata is not None  # for the application, never sent to the model
        assert sent.metadata["ok"] is True and sent.metadata["call_id"] == "c1"
        assert rt.pipeline.pending == {}


async def test_resuming_saved_history_in_a_fresh_runtime_runs_the_call_once(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    script = Script([call("save_note", {"text": "milk"}, "c1")])
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        paused = await agent(script, toolset(rt)).run("note it")
        assert isinstance(paused.output, DeferredToolRequests)
        saved_state = ModelMessagesTypeAdapter.dump_json(paused.all_messages())
    # A new process, in effect: a new Runtime and Agent over the same workspace.
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as fresh:
        done = await agent(script, toolset(fresh)).run(
            message_history=ModelMessagesTypeAdapter.validate_json(saved_state),
            deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
        )
        assert fresh.pipeline.pending == {}
    assert done.output == "done"
    assert saved(notes) == ["milk"]


async def test_approving_with_edited_arguments_runs_the_edit_and_tells_the_model(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script([call("save_note", {"text": "milk"}, "c1")])
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        edited = ToolApproved(override_args={"text": "oat milk"})
        await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"c1": edited}),
        )
    assert saved(notes) == ["oat milk"]
    sent = script.returns()["c1"]
    assert str(sent.content).startswith("saved oat milk")
    assert "the user edited this call's arguments before approving it" in str(sent.content)


async def test_invalid_edited_arguments_run_nothing_and_say_so(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script([call("save_note", {"text": "milk"}, "c1")])
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        edited = ToolApproved(override_args={"txt": "oat milk"})
        await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"c1": edited}),
        )
    assert saved(notes) == []
    sent = script.returns()["c1"]
    assert sent.outcome == "retried"
    assert str(sent.content).startswith("The arguments edited at approval are invalid.")


async def test_denying_runs_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script([call("save_note", {"text": "milk"}, "c1")])
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        done = await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"c1": ToolDenied("Not today.")}),
        )
        assert rt.pipeline.pending == {}
    assert done.output == "done"
    assert saved(notes) == []
    sent = script.returns()["c1"]
    assert sent.outcome == "denied" and sent.content == "Not today."


async def test_allow_always_in_the_results_metadata_stops_later_asks(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script(
            [call("save_note", {"text": "milk"}, "c1")],
            [call("save_note", {"text": "eggs"}, "c2")],
        )
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        done = await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={"c1": True}, metadata={"c1": {"allow_always": True}}
            ),
        )
        assert rt.session.allow_rules == ["save_note"]
    assert done.output == "done"  # the second note did not ask
    assert saved(notes) == ["milk", "eggs"]


async def test_an_unreadable_allow_always_rule_runs_the_call_once_and_adds_nothing(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    async with Runtime(Registry(note_tools(notes)), root=tmp_path) as rt:
        script = Script([call("save_note", {"text": "milk"}, "c1")])
        ag = agent(script, toolset(rt))
        paused = await ag.run("note it")
        done = await ag.run(
            message_history=paused.all_messages(),
            deferred_tool_results=DeferredToolResults(
                approvals={"c1": True}, metadata={"c1": {"allow_always": True, "rule": "save("}}
            ),
        )
        assert rt.session.allow_rules == []
        assert rt.pipeline.pending == {}
    assert done.output == "done"
    assert saved(notes) == ["milk"]


# -- 3. unsafe calls never overlap -----------------------------------------------------------

Interval = tuple[str, float, float]


def overlaps(a: Interval, b: Interval) -> bool:
    return a[1] < b[2] and b[1] < a[2]


class Recorder:
    """`write` (unsafe) and `read` (safe; waits, at most 5 s, until its partner runs too)."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self.arrived = 0
        self.together = asyncio.Event()

        @tool(kind=ToolKind.EDIT)
        async def write(label: str) -> str:
            """Unsafe."""
            start = time.monotonic()
            await asyncio.sleep(0.02)
            self.intervals.append((label, start, time.monotonic()))
            return label

        @tool(read_only=True, concurrency_safe=True)
        async def read(label: str) -> str:
            """Safe."""
            start = time.monotonic()
            self.arrived += 1
            if self.arrived >= 2:
                self.together.set()
            await asyncio.wait_for(self.together.wait(), 5)
            self.intervals.append((label, start, time.monotonic()))
            return label

        self.tools = [write, read]

    def check(self) -> None:
        by = {i[0]: i for i in self.intervals}
        assert sorted(by) == ["r1", "r2", "w1", "w2"]
        assert overlaps(by["r1"], by["r2"])  # they waited for each other
        for unsafe in ("w1", "w2"):
            for other in by:
                if other != unsafe:
                    assert not overlaps(by[unsafe], by[other]), (unsafe, other)


TURN = [
    call("write", {"label": "w1"}, "c1"),
    call("read", {"label": "r1"}, "c2"),
    call("read", {"label": "r2"}, "c3"),
    call("write", {"label": "w2"}, "c4"),
]


async def test_unsafe_calls_of_one_turn_never_overlap_and_safe_ones_do() -> None:
    rec = Recorder()
    script = Script(TURN)
    async with Runtime(Registry(rec.tools), mode="bypass") as rt:
        result = await agent(script, toolset(rt)).run("go")
    assert result.output == "done"
    assert {t.name: t.sequential for t in script.infos[0].function_tools} == {
        "write": True,
        "read": False,
    }
    rec.check()


async def test_handrails_gate_keeps_unsafe_calls_apart_without_pydantic_ais_barrier() -> None:
    rec = Recorder()
    async with Runtime(Registry(rec.tools), mode="bypass") as rt:

        def no_barriers(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
            return [dataclasses.replace(d, sequential=False) for d in defs]

        script = Script(TURN)
        result = await agent(script, toolset(rt).prepared(no_barriers)).run("go")
    assert result.output == "done"
    assert not any(t.sequential for t in script.infos[0].function_tools)
    rec.check()


async def test_only_tools_safe_for_every_input_run_in_parallel(tmp_path: Path) -> None:
    async with Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path) as rt:
        ts = toolset(rt)
        script = Script()
        await agent(script, ts).run("hi")
    sequential = {t.name: t.sequential for t in script.infos[0].function_tools}
    assert sequential["read_file"] is False and sequential["grep_search"] is False
    # run_shell is safe only for read-only commands: pydantic-ai treats it as a barrier.
    assert sequential["run_shell"] is True and sequential["edit_file"] is True


# -- 4. cancelling a run kills the shell's process tree --------------------------------------


def marked_pids(mark: str) -> list[int]:
    """Live processes whose command line holds `mark` (a sleep duration nothing else uses)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if mark in cmd and state != b"Z" and "pytest" not in cmd:
            found.append(int(entry))
    return found


SANDBOX = sandbox_support()


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
@pytest.mark.skipif(not SANDBOX.available, reason=f"no OS sandbox here: {SANDBOX.reason}")
async def test_cancelling_the_run_kills_the_shells_process_tree(tmp_path: Path) -> None:
    # PIDs written by the command ($!) would be those of the sandbox's PID namespace, so the
    # processes are found in /proc by a sleep duration no other process uses.
    mark = f"300.{uuid.uuid4().int % 10**9:09d}"
    ready = tmp_path / "ready"
    command = f"sleep {mark} & (setsid sleep {mark} &); echo up > ready; sleep {mark}"
    tools = Registry(coding_tools(project_dir=tmp_path))
    async with Runtime(tools, root=tmp_path, mode=PermissionMode.BYPASS) as rt:
        script = Script([call("run_shell", {"command": command}, "c1")])
        run = asyncio.ensure_future(agent(script, toolset(rt)).run("sleep"))
        pids: list[int] = []
        for _ in range(1000):  # at most ~10 s for the sandbox to start the command
            pids = marked_pids(mark)
            if (ready.exists() and len(pids) >= 3) or run.done():
                break
            await asyncio.sleep(0.01)
        assert not run.done(), run.result()
        assert ready.exists() and len(pids) >= 3, pids

        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

        for _ in range(500):  # at most ~5 s for the kernel to reap them
            if not marked_pids(mark):
                break
            await asyncio.sleep(0.01)
        assert marked_pids(mark) == []


# -- 5. one conversation, one session: read in one run, edit in the next ---------------------


async def test_read_then_edit_across_runs_of_one_conversation(tmp_path: Path) -> None:
    target = tmp_path / "greet.py"
    target.write_text('print("Hello")\n')
    sessions: dict[str, Session] = {}

    def by_conversation(ctx: RunContext[Any]) -> Session:
        assert ctx.conversation_id is not None
        return sessions.setdefault(ctx.conversation_id, Session(mode=PermissionMode.ACCEPT_EDITS))

    edit = {"file_path": "greet.py", "old_string": "Hello", "new_string": "Hi"}
    async with Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path) as rt:
        ts = toolset(rt, session=by_conversation)
        reader = Script([call("read_file", {"file_path": "greet.py"}, "r1")])
        first = await agent(reader, ts).run("read greet.py")
        editor = Script([call("edit_file", edit, "e1")])
        second = await agent(editor, ts).run("now edit it", message_history=first.all_messages())
        stranger = Script([call("edit_file", edit, "e2")])
        await agent(stranger, ts).run("edit greet.py")  # a new conversation
        sessions["direct"] = Session(mode=PermissionMode.ACCEPT_EDITS)
        not_read = await rt.call("edit_file", edit, session=sessions["direct"])
        for s in sessions.values():
            await s.aclose()
    assert not_read.error is ErrorCode.FILE_NOT_READ

    assert second.output == "done"
    assert editor.returns()["e1"].outcome == "success"
    assert target.read_text() == 'print("Hi")\n'
    assert len(sessions) == 3  # two conversations, and the direct call's
    refused = stranger.returns()["e2"]
    assert refused.outcome == "failed"  # no retry budget used: the model must read first
    assert refused.content == not_read.content


# -- 6. the retry budget ---------------------------------------------------------------------


async def test_invalid_arguments_past_max_retries_end_the_run() -> None:
    async with Runtime(Registry([add])) as rt:
        ts = toolset(rt, max_retries=1)
        assert ts.max_retries == 1
        script = Script(*([call("add", {"a": "x", "b": 1}, f"c{i}")] for i in range(5)))
        with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 1"):
            await agent(script, ts).run("add")
    assert len(script.seen) == 2  # one retry, then the run ended


async def test_other_failures_reach_the_model_without_using_the_retry_budget() -> None:
    @tool(read_only=True)
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    async with Runtime(Registry([explode])) as rt:
        expected = (await rt.call("explode", {"reason": "disk on fire"})).content
        script = Script(*([call("explode", {"reason": "disk on fire"}, f"c{i}")] for i in range(3)))
        result = await agent(script, toolset(rt, max_retries=1)).run("go")
    assert result.output == "done"
    sent = script.returns()["c2"]
    assert sent.outcome == "failed" and sent.content == expected


async def test_an_error_inside_the_adapter_reaches_the_model_not_the_loop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Runtime(Registry([add])) as rt:

        def broken_at_call_time(ctx: RunContext[Any]) -> Session:
            if ctx.tool_name is not None:  # listing tools works; calling them fails
                raise RuntimeError("no session store")
            return rt.session

        script = Script([call("add", {"a": 1, "b": 2}, "c1")])
        result = await agent(script, toolset(rt, session=broken_at_call_time)).run("add")
    assert result.output == "done"
    sent = script.returns()["c1"]
    assert sent.outcome == "failed"
    assert sent.content == (
        "The tool `add` could not be run: the tool runtime failed internally (RuntimeError). "
        "Try a different approach."
    )
    assert "no session store" in caplog.text  # the details go to the application's log


# -- images -----------------------------------------------------------------------------------

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)


async def test_an_image_result_reaches_the_model_as_binary_content() -> None:
    @tool(read_only=True)
    def screenshot() -> list[Any]:
        """Take a screenshot."""
        return ["The screen:", ImagePart.of(PNG, "image/png")]

    async with Runtime(Registry([screenshot])) as rt:
        script = Script([call("screenshot", {}, "c1")])
        await agent(script, toolset(rt)).run("look")
    content = script.returns()["c1"].content
    assert isinstance(content, list)
    text, image = content
    assert text == "The screen:"
    assert isinstance(image, BinaryContent)
    assert image.data == PNG and image.media_type == "image/png"


# -- 7. the pydantic-ai RunContext inside a handrail tool ------------------------------------


async def test_a_handrail_tool_sees_the_run_context_as_ctx_host() -> None:
    hosts: list[Any] = []

    @tool(read_only=True)
    def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        hosts.append(ctx.host)
        return ctx.host.deps["user"]

    async with Runtime(Registry([whoami])) as rt:
        script = Script([call("whoami", {}, "c1")])
        await agent(script, toolset(rt), deps_type=dict).run("who?", deps={"user": "ada"})
    assert script.returns()["c1"].content == "ada"
    (host,) = hosts
    assert isinstance(host, RunContext) and host.tool_call_id == "c1"


# -- the tool list and instructions follow the session ---------------------------------------


async def test_tools_activated_by_tool_search_are_offered_at_the_next_step() -> None:
    @tool(read_only=True, deferred=True, usage="Call `secret` only on Tuesdays.")
    def secret() -> str:
        """A deferred tool."""
        return "42"

    async with Runtime(Registry([add, secret])) as rt:
        script = Script(
            [call("tool_search", {"query": "select:secret"}, "c1")],
            [call("secret", {}, "c2")],
        )
        await agent(script, toolset(rt)).run("find it")
    names = [sorted(t.name for t in info.function_tools) for info in script.infos]
    assert names[0] == ["add", "tool_search"]
    assert "secret" in names[1]
    assert script.returns()["c2"].content == "42"
    assert "Tuesdays" in (script.infos[1].instructions or "")
    assert "Tuesdays" not in (script.infos[0].instructions or "")


# -- 8. smoke: every coding tool's schema is accepted ----------------------------------------


async def test_test_model_calls_every_coding_tool_without_schema_errors(tmp_path: Path) -> None:
    async with Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path) as rt:
        names = {t.name for t in rt.tools()}
        model = TestModel(call_tools="all")
        result = await agent(model, toolset(rt)).run("use everything")
        assert rt.pipeline.pending == {}
    messages = result.all_messages()
    called = {p.tool_name for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    answered = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    assert called == names
    # Every call got handrail's own text, or asked (run_shell and write_file, in this mode).
    assert all(isinstance(p.content, str) and p.content for p in answered)
    assert isinstance(result.output, DeferredToolRequests)
    asked = {c.tool_name for c in result.output.approvals}
    assert {p.tool_name for p in answered} | asked == names


# -- the README example ----------------------------------------------------------------------


def test_the_readme_example_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    readme_block: Callable[[str], str],
) -> None:
    example = readme_block("from handrail.integrations.pydantic_ai import toolset")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md (pydantic-ai)", "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("approve write_file {'file_path': 'hello.txt', 'content': 'hi\\n'}? (")
    assert out[1:] == ["Wrote hello.txt."]
    assert (tmp_path / "hello.txt").read_text() == "hi\n"


# -- a tool's own question travels the same road ---------------------------------------------


def overwrite_tool(notes: Path) -> Any:
    from handrail import Confirmation

    @tool(read_only=True)
    async def replace_notes(text: str, ctx: ToolContext) -> str:
        """Replace the notes after asking the user."""
        answer = await ctx.ask(
            Confirmation(reason="the notes were changed by hand; overwrite?", topic="overwrite")
        )
        if answer.kind == "deny":
            return f"kept: {answer.reason}"
        notes.write_text(text + "\n")
        return "written"

    return replace_notes


async def test_a_tools_question_reaches_the_runtimes_approver_inside_pydantic_ais_loop(
    tmp_path: Path,
) -> None:
    from handrail import Approval, Confirmation, Question

    notes = tmp_path / "notes.txt"
    notes.write_text("by hand\n")
    asked: list[Question] = []

    async def approve(question: Question) -> Approval:
        asked.append(question)
        return Approval.allow_once()

    script = Script([call("replace_notes", {"text": "new"}, "c1")])
    async with Runtime(Registry([overwrite_tool(notes)]), root=tmp_path, approver=approve) as rt:
        result = await agent(script, toolset(rt)).run("replace the notes")
    assert result.output == "done"
    assert script.returns()["c1"].content == "written"
    assert saved(notes) == ["new"]
    (question,) = asked
    assert isinstance(question, Confirmation) and question.call_id == "c1"


async def test_with_no_approver_a_tools_question_is_answered_no(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("by hand\n")
    script = Script([call("replace_notes", {"text": "new"}, "c1")])
    async with Runtime(Registry([overwrite_tool(notes)]), root=tmp_path) as rt:
        result = await agent(script, toolset(rt)).run("replace the notes")
    assert result.output == "done"
    assert script.returns()["c1"].content == "kept: Nobody could be asked."
    assert saved(notes) == ["by hand"]
