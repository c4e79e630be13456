"""handrail's tools in LangChain's own loop: `create_agent` with a checkpointer, and a plain
`ToolNode` graph, driven by a scripted chat model. Nothing of handrail is mocked."""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")

from inline_snapshot import snapshot
from langchain.agents import create_agent
from langchain.agents.middleware import wrap_tool_call
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime, tools_condition
from langgraph.types import Command, interrupt
from pydantic import Field, ValidationError

from handrail import (
    Approval,
    ConfigurationError,
    ErrorCode,
    Hook,
    HookEvent,
    PermissionMode,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolContext,
    tool,
)
from handrail.builtin import EditFile, ReadFile, RunShell, coding_tools
from handrail.integrations import portal_for
from handrail.integrations.langchain import to_approval, tools
from handrail.sandbox import SandboxSupport, sandbox_support

SANDBOX = sandbox_support()
NO_SANDBOX = SandboxSupport(landlock=0, namespaces=False, user_namespace=False, reason="test: none")


def shell() -> RunShell:
    """run_shell in the OS sandbox, or without one where this machine has none."""
    return RunShell(allow_unsandboxed=not SANDBOX.available)


# -- the scripted model, the tools, the agent ------------------------------------------------


class ScriptedModel(GenericFakeChatModel):
    """Plays back its messages; `bind_tools` keeps it as it is (the stock one refuses).

    `heard` keeps what it was sent, one list of messages per turn: what the model read."""

    heard: list[list[BaseMessage]] = Field(default_factory=list[list[BaseMessage]])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.heard.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def call(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def model(*turns: Sequence[dict[str, Any]] | str) -> ScriptedModel:
    """One message per model turn: a list of tool calls, or the final text."""
    messages = [
        AIMessage(content=t) if isinstance(t, str) else AIMessage(content="", tool_calls=list(t))
        for t in turns
    ]
    return ScriptedModel(messages=iter(messages))


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def ask(text: str = "go") -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def results(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def notes_tools(log: Path) -> list[Tool]:
    """`save` asks in the default mode and appends to `log`: every run is counted on disk."""

    @tool
    def save(text: str) -> str:
        """Save a note."""
        with log.open("a") as f:
            f.write(text + "\n")
        return f"saved {text!r}"

    @tool(read_only=True, concurrency_safe=True)
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return [save, add]


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """LangSmith stays off: nothing here may reach the network."""
    for name in list(os.environ):
        if name.startswith(("LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    from langsmith.utils import tracing_is_enabled

    assert not tracing_is_enabled()


@pytest.fixture
async def runtimes() -> AsyncIterator[list[Runtime]]:
    """Runtimes a test makes, closed at its end."""
    made: list[Runtime] = []
    yield made
    for rt in made:
        await rt.aclose()


@pytest.fixture
def notes(tmp_path: Path, runtimes: list[Runtime]) -> Callable[..., Runtime]:
    def make(**kw: Any) -> Runtime:
        rt = Runtime(Registry(notes_tools(tmp_path / "notes.log")), root=tmp_path, **kw)
        runtimes.append(rt)
        return rt

    return make


# -- errors reach the model as handrail's text -------------------------------------------------


async def test_bad_arguments_reach_the_model_as_handrails_text_with_a_plain_artifact(
    notes: Callable[..., Runtime],
) -> None:
    rt = notes()
    checkpointer = InMemorySaver()
    agent = create_agent(
        model([call("add", {"a": "x", "B": 2}, "c1")], "fixed"),
        tools=tools(rt),
        checkpointer=checkpointer,
    )
    await agent.ainvoke(ask(), config())
    # Read back from the saved state: the checkpointer serialized the artifact and loaded it.
    saved = (await agent.aget_state(config())).values["messages"]
    msg = results(saved)["c1"]
    assert msg.status == "error"
    assert msg.name == "add"
    assert msg.content == snapshot("""\
Invalid arguments for `add`:
- /a: expected integer, received string "x"
- /b: required field `b` is missing
- /B: unknown field `B`; did you mean `b`?
Call `add` again with corrected arguments.\
""")
    assert type(msg.artifact) is dict
    assert msg.artifact["error"] == "INVALID_ARGS"
    assert msg.artifact["issues"][0] == {
        "path": "/a",
        "expected": "integer",
        "received": 'string "x"',
        "message": 'expected integer, received string "x"',
    }
    assert results(saved) == results((await agent.aget_state(config())).values["messages"])


async def test_tool_arguments_named_like_langchain_parameters_reach_the_tool(
    runtimes: list[Runtime], tmp_path: Path
) -> None:
    # StructuredTool would hand `config` and `run_manager` its own values, and LangGraph would
    # inject its runtime over an argument called `runtime`: here they all reach handrail. (The
    # runtime goes to a parameter called `_lc_runtime`: the one name a tool cannot use.)
    echo = Tool.from_json_schema(
        "echo",
        "Echo the arguments.",
        {"type": "object", "additionalProperties": True},
        lambda args: ", ".join(f"{k}={v}" for k, v in sorted(args.items())),
        read_only=True,
    )
    rt = Runtime(Registry([echo]), root=tmp_path)
    runtimes.append(rt)
    sent = {"config": 1, "run_manager": 2, "runtime": 3, "callbacks": 4}
    agent = create_agent(
        model([call("echo", sent, "c1")], "ok"), tools=tools(rt), checkpointer=InMemorySaver()
    )
    out = await agent.ainvoke(ask(), config())
    assert results(out["messages"])["c1"].content == (
        "callbacks=4, config=1, run_manager=2, runtime=3"
    )


# -- asks become LangGraph interrupts ------------------------------------------------------


async def test_an_ask_pauses_the_graph_with_the_per_call_request(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = notes()
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c1")], "done"),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    [pause] = out["__interrupt__"]
    assert pause.value == snapshot(
        {
            "type": "tool_approval",
            "tool_call_id": "c1",
            "name": "save",
            "args": {"text": "milk"},
            "description": """\
`save` can change things

Tool: save
Args: {"text": "milk"}\
""",
            "reason": "`save` can change things",
            "source": "mode",
            "suggested_rules": ["save"],
            "allow_rules": ["save"],
        }
    )
    # What a UI renders: the four decisions, the edit pinned to this tool and its schema.
    schema = pause.response_schema
    assert [b["title"] for b in schema["oneOf"]] == ["approve", "edit", "reject", "respond"]
    edit = schema["oneOf"][1]["properties"]["edited_action"]["properties"]
    assert edit["name"] == {"const": "save"}
    assert edit["args"] == rt.registry.get("save").parameters
    assert runs(tmp_path / "notes.log") == []
    assert rt.pipeline.pending == {}


@pytest.mark.parametrize(
    ("decision", "ran", "status", "says"),
    [
        ({"type": "approve"}, ["milk"], "success", "saved 'milk'"),
        (
            {"type": "edit", "edited_action": {"name": "save", "args": {"text": "oat milk"}}},
            ["oat milk"],
            "success",
            "saved 'oat milk'\n\nNote: the user edited this call's arguments before approving "
            "it; the result below is for the edited call, do not repeat the original call.",
        ),
        (
            {"type": "edit", "edited_action": {"name": "save", "args": {"text": 5}}},
            [],
            "error",
            "The arguments edited at approval are invalid.\nInvalid arguments for `save`:\n"
            "- /text: expected string, received integer 5\n"
            "Call `save` again with corrected arguments.",
        ),
        (
            {"type": "reject", "message": "We have milk."},
            [],
            "error",
            "Permission denied: The user rejected this call: We have milk. Do not retry this "
            "call as is; choose another approach or ask the user.",
        ),
        (
            {"type": "respond", "message": "Saved it myself."},
            [],
            "error",
            "Permission denied: The user answered instead of running this call: Saved it "
            "myself. Do not retry this call as is; choose another approach or ask the user.",
        ),
    ],
    ids=["approve", "edit", "invalid-edit", "reject", "respond"],
)
async def test_the_answer_runs_the_call_once_as_decided(
    notes: Callable[..., Runtime],
    tmp_path: Path,
    decision: dict[str, Any],
    ran: list[str],
    status: str,
    says: str,
) -> None:
    rt = notes()
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c1")], "done"),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    assert out["__interrupt__"] and rt.pipeline.pending == {}
    out = await agent.ainvoke(Command(resume=decision), config())
    assert "__interrupt__" not in out
    assert runs(tmp_path / "notes.log") == ran
    msg = results(out["messages"])["c1"]
    assert (msg.status, msg.content) == (status, says)
    assert out["messages"][-1].content == "done"
    assert rt.pipeline.pending == {}


async def test_two_asks_in_one_turn_are_two_interrupts_answered_by_id(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = notes()
    turn = [
        call("save", {"text": "milk"}, "c1"),
        call("add", {"a": 1, "b": 2}, "c2"),
        call("save", {"text": "eggs"}, "c3"),
    ]
    agent = create_agent(model(turn, "done"), tools=tools(rt), checkpointer=InMemorySaver())
    out = await agent.ainvoke(ask(), config())
    pauses = {p.value["tool_call_id"]: p.id for p in out["__interrupt__"]}
    assert sorted(pauses) == ["c1", "c3"] and len(set(pauses.values())) == 2
    assert rt.pipeline.pending == {}
    answers = {pauses["c1"]: {"type": "approve"}, pauses["c3"]: {"type": "reject"}}
    out = await agent.ainvoke(Command(resume=answers), config())
    got = results(out["messages"])
    assert runs(tmp_path / "notes.log") == ["milk"]
    assert got["c1"].content == "saved 'milk'"
    assert got["c2"].content == "3"  # the call that asked nothing ran once, in the first pass
    assert got["c3"].artifact["error"] == "PERMISSION_DENIED"
    assert got["c3"].artifact["denial"] == {
        "reason": "The user declined this call.",
        "source": "user",
        "rule": None,
    }
    assert rt.pipeline.pending == {}


class Hold:
    """Hooks that, once armed, hold the call `later` (if it is made) until `first` has run.

    The order in which a sibling's "always" answer lets `later` run without asking; a call
    read as answered is refused or run without asking first, and is never held."""

    def __init__(self, first: str, later: str) -> None:
        self.first, self.later = first, later
        self.armed = False
        self.ran = asyncio.Event()

    async def pre(self, event: HookEvent) -> None:
        if self.armed and event.call_id == self.later:
            await asyncio.wait_for(self.ran.wait(), 10)

    async def post(self, event: HookEvent) -> None:
        if event.call_id == self.first:
            self.ran.set()

    @property
    def hooks(self) -> list[Hook]:
        return [
            Hook(event="pre_tool_use", func=self.pre),
            Hook(event="post_tool_use", func=self.post),
        ]


@pytest.mark.parametrize(
    ("decision", "ran", "status", "says"),
    [
        (
            {"type": "reject", "message": "Not eggs."},
            ["milk"],
            "error",
            "Permission denied: The user rejected this call: Not eggs. Do not retry this call "
            "as is; choose another approach or ask the user.",
        ),
        (
            {"type": "edit", "edited_action": {"name": "save", "args": {"text": "duck eggs"}}},
            ["milk", "duck eggs"],
            "success",
            "saved 'duck eggs'\n\nNote: the user edited this call's arguments before approving "
            "it; the result below is for the edited call, do not repeat the original call.",
        ),
    ],
    ids=["reject", "edit"],
)
async def test_an_answer_holds_although_a_siblings_always_answer_lets_the_call_run(
    notes: Callable[..., Runtime],
    tmp_path: Path,
    decision: dict[str, Any],
    ran: list[str],
    status: str,
    says: str,
) -> None:
    # c1's "always" adds the rule `save` when its task runs; were c3 called after that, it
    # would not ask. c3's answer is read before c3 is called, so it holds.
    hold = Hold("c1", "c3")
    rt = notes(hooks=hold.hooks)
    chat = model([call("save", {"text": "milk"}, "c1"), call("save", {"text": "eggs"}, "c3")], "ok")
    agent = create_agent(chat, tools=tools(rt), checkpointer=InMemorySaver())
    out = await agent.ainvoke(ask(), config())
    pauses = {p.value["tool_call_id"]: p.id for p in out["__interrupt__"]}
    assert sorted(pauses) == ["c1", "c3"] and rt.pipeline.pending == {}
    answers = {pauses["c1"]: {"type": "approve", "always": True}, pauses["c3"]: decision}
    hold.armed = True
    out = await agent.ainvoke(Command(resume=answers), config())
    assert "__interrupt__" not in out
    assert runs(tmp_path / "notes.log") == ran
    assert rt.session.allow_rules == ["save"]  # c1's answer did add the rule
    got = results(out["messages"])
    assert got["c1"].content == "saved 'milk'"
    assert (got["c3"].status, got["c3"].content) == (status, says)
    # The model's next turn read c3's outcome, as decided.
    assert results(chat.heard[-1])["c3"].content == says
    assert out["messages"][-1].content == "ok"
    assert rt.pipeline.pending == {}


def test_sync_invoke_holds_a_reject_although_a_siblings_always_answer_lets_the_call_run(
    tmp_path: Path,
) -> None:
    log = tmp_path / "notes.log"
    hold = Hold("c1", "c3")
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path, hooks=hold.hooks)
    portal = portal_for(rt)
    try:
        turn = [call("save", {"text": "milk"}, "c1"), call("save", {"text": "eggs"}, "c3")]
        agent = create_agent(model(turn, "ok"), tools=tools(rt), checkpointer=InMemorySaver())
        out = agent.invoke(ask(), config())
        pauses = {p.value["tool_call_id"]: p.id for p in out["__interrupt__"]}
        assert sorted(pauses) == ["c1", "c3"] and rt.pipeline.pending == {}
        answers = {
            pauses["c1"]: {"type": "approve", "always": True},
            pauses["c3"]: {"type": "reject", "message": "Not eggs."},
        }
        hold.armed = True
        out = agent.invoke(Command(resume=answers), config())
        assert runs(log) == ["milk"]
        c3 = results(out["messages"])["c3"]
        assert c3.status == "error" and "The user rejected this call: Not eggs." in c3.content
        assert rt.pipeline.pending == {}
    finally:
        portal.run(rt.aclose())


def one_call_graph(kind: str, chat: ScriptedModel, rt: Runtime) -> Any:
    """create_agent (each call its own task) or a plain ToolNode (one task for the turn)."""
    if kind == "create_agent":
        return create_agent(chat, tools=tools(rt), checkpointer=InMemorySaver())
    return tool_node_graph(chat, ToolNode(tools(rt)))


@pytest.mark.parametrize("kind", ["create_agent", "tool_node"])
async def test_a_resumed_call_reads_its_answer_before_its_hooks_run(
    notes: Callable[..., Runtime], tmp_path: Path, kind: str
) -> None:
    seen: list[str] = []

    def count(event: HookEvent) -> None:
        seen.append(event.call_id)

    rt = notes(hooks=[Hook(event="pre_tool_use", func=count, matcher="save")])
    graph = one_call_graph(kind, model([call("save", {"text": "milk"}, "c1")], "done"), rt)
    out = await graph.ainvoke(ask(), config())
    assert out["__interrupt__"] and rt.pipeline.pending == {}
    assert seen == ["c1"]
    out = await graph.ainvoke(Command(resume={"type": "approve"}), config())
    assert seen == ["c1", "c1"]  # once per pass: no second ask on resume before the answer
    assert runs(tmp_path / "notes.log") == ["milk"]
    assert results(out["messages"])["c1"].content == "saved 'milk'"
    assert rt.pipeline.pending == {}


@pytest.mark.parametrize("kind", ["create_agent", "tool_node"])
async def test_a_reject_holds_when_a_rule_allows_the_call_by_the_resume(
    notes: Callable[..., Runtime], tmp_path: Path, kind: str
) -> None:
    rt = notes()
    graph = one_call_graph(kind, model([call("save", {"text": "milk"}, "c1")], "done"), rt)
    out = await graph.ainvoke(ask(), config())
    assert out["__interrupt__"] and rt.pipeline.pending == {}
    rt.session.allow_rules.append("save")  # meanwhile: the call would not ask any more
    out = await graph.ainvoke(Command(resume={"type": "reject"}), config())
    assert runs(tmp_path / "notes.log") == []
    assert results(out["messages"])["c1"].artifact["error"] == "PERMISSION_DENIED"
    assert rt.pipeline.pending == {}


async def test_an_answer_to_another_interrupt_of_the_task_is_not_taken_for_the_calls(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    # A tool-call middleware that asks its own question first: on resume its answer waits in
    # the call's task, but not for the call. The call then asks as usual, with its request.
    @wrap_tool_call
    async def budget(request: Any, handler: Any) -> Any:
        assert interrupt({"type": "budget"}) == "fine"
        return await handler(request)

    rt = notes()
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c1")], "done"),
        tools=tools(rt),
        middleware=[budget],
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    [pause] = out["__interrupt__"]
    assert pause.value == {"type": "budget"}
    out = await agent.ainvoke(Command(resume={pause.id: "fine"}), config())
    [pause] = out["__interrupt__"]
    assert pause.value["type"] == "tool_approval" and pause.value["reason"]
    assert runs(tmp_path / "notes.log") == [] and rt.pipeline.pending == {}
    answer = {"type": "reject", "message": "No."}
    out = await agent.ainvoke(Command(resume={pause.id: answer}), config())
    assert "__interrupt__" not in out
    assert runs(tmp_path / "notes.log") == []
    assert "The user rejected this call: No." in results(out["messages"])["c1"].content
    assert rt.pipeline.pending == {}


async def test_a_fresh_runtime_resumes_from_the_checkpoint_exactly_once(
    tmp_path: Path, runtimes: list[Runtime]
) -> None:
    log = tmp_path / "notes.log"
    checkpointer = InMemorySaver()
    first = Runtime(Registry(notes_tools(log)), root=tmp_path)
    runtimes.append(first)
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c1")]), tools=tools(first), checkpointer=checkpointer
    )
    out = await agent.ainvoke(ask(), config())
    assert out["__interrupt__"] and first.pipeline.pending == {}
    # A restart: a new runtime over the same workspace, new tools, a new agent; the saved
    # state is all that is left of the first run.
    second = Runtime(Registry(notes_tools(log)), root=tmp_path)
    runtimes.append(second)
    again = create_agent(model("done"), tools=tools(second), checkpointer=checkpointer)
    out = await again.ainvoke(Command(resume={"type": "approve"}), config())
    assert runs(log) == ["milk"]
    assert results(out["messages"])["c1"].content == "saved 'milk'"
    assert out["messages"][-1].content == "done"
    assert first.pipeline.pending == {} and second.pipeline.pending == {}


async def test_an_invalid_answer_is_refused_and_can_be_given_again(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = notes()
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c1")], "done"),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    await agent.ainvoke(ask(), config())
    bad = [
        {"type": "maybe"},
        {"type": "edit", "edited_action": {"name": "add", "args": {"a": 1, "b": 2}}},
        {"type": "edit", "edited_action": {"name": "save", "args": "x"}},
        # `to_approval` (and the runtime) would refuse this rule: the schema refuses it first.
        {"type": "approve", "rule": "save("},
        {"type": "approve", "rule": 5},
        {"type": "respond"},
    ]
    for answer in bad:
        with pytest.raises(ValidationError):
            await agent.ainvoke(Command(resume=answer), config())
        assert runs(tmp_path / "notes.log") == [] and rt.pipeline.pending == {}
        # Nothing was saved: the call still waits for its answer.
        [waiting] = (await agent.aget_state(config())).interrupts
        assert waiting.value["tool_call_id"] == "c1"
    out = await agent.ainvoke(Command(resume={"type": "approve"}), config())
    assert runs(tmp_path / "notes.log") == ["milk"]
    assert results(out["messages"])["c1"].content == "saved 'milk'"


EDIT_BATCH = {
    "file_path": "notes.txt",
    "edits": [
        {"old_string": "milk", "new_string": "oat milk"},
        {"old_string": "tea", "new_string": "coffee"},
    ],
}


@pytest.mark.parametrize(
    ("decision", "after"),
    [
        ({"type": "approve"}, "oat milk\ncoffee\n"),
        (
            {
                "type": "edit",
                "edited_action": {
                    "name": "edit_file",
                    "args": {**EDIT_BATCH, "edits": [{"old_string": "tea", "new_string": "water"}]},
                },
            },
            "milk\nwater\n",
        ),
    ],
    ids=["approve", "edit"],
)
async def test_a_tool_with_nested_models_asks_and_is_answered(
    tmp_path: Path, runtimes: list[Runtime], decision: dict[str, Any], after: str
) -> None:
    # edit_file's arguments refer to a model of their own (`edits` items: `$defs/EditItem`).
    (tmp_path / "notes.txt").write_text("milk\ntea\n")
    rt = Runtime(Registry([ReadFile(), EditFile()]), root=tmp_path)
    runtimes.append(rt)
    agent = create_agent(
        model(
            [call("read_file", {"file_path": "notes.txt"}, "r1")],
            [call("edit_file", EDIT_BATCH, "e1")],
            "done",
        ),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    [pause] = out["__interrupt__"]
    assert pause.value["name"] == "edit_file"
    # What a UI renders for an edit: the tool's schema with its nested model in place.
    edit = pause.response_schema["oneOf"][1]["properties"]["edited_action"]["properties"]
    args = edit["args"]
    assert "$defs" not in args and "$ref" not in json.dumps(pause.response_schema)
    assert (
        args["properties"]["edits"]["items"]
        == rt.registry.get("edit_file").parameters["$defs"]["EditItem"]
    )
    assert (tmp_path / "notes.txt").read_text() == "milk\ntea\n"
    out = await agent.ainvoke(Command(resume=decision), config())
    assert "__interrupt__" not in out
    assert results(out["messages"])["e1"].status == "success"
    assert (tmp_path / "notes.txt").read_text() == after
    assert out["messages"][-1].content == "done"


async def test_approve_always_adds_the_rule_for_the_session(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = notes()
    agent = create_agent(
        model(
            [call("save", {"text": "milk"}, "c1")], [call("save", {"text": "eggs"}, "c2")], "done"
        ),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    out = await agent.ainvoke(Command(resume={"type": "approve", "always": True}), config())
    assert "__interrupt__" not in out  # the second save did not ask
    assert runs(tmp_path / "notes.log") == ["milk", "eggs"]
    assert rt.session.allow_rules == ["save"]


async def test_where_nobody_can_be_asked_the_call_is_refused_with_the_rule(
    notes: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = notes()
    # No checkpointer: an interrupt could never be resumed.
    agent = create_agent(model([call("save", {"text": "milk"}, "c1")], "done"), tools=tools(rt))
    out = await agent.ainvoke(ask(), config())
    msg = results(out["messages"])["c1"]
    assert "__interrupt__" not in out
    assert msg.status == "error"
    assert msg.content == snapshot(
        "Permission denied: `save` needs the user's approval (`save` can change things), and this agent cannot ask anyone (it runs without a LangGraph checkpointer, which interrupts need); the allow rule `save` would let such calls run. Do not retry this call as is; choose another approach or ask the user."
    )
    assert msg.artifact["denial"]["source"] == "mode"
    # on_ask="error", even with a checkpointer.
    agent = create_agent(
        model([call("save", {"text": "milk"}, "c2")], "done"),
        tools=tools(rt, on_ask="error"),
        checkpointer=InMemorySaver(),
    )
    out = await agent.ainvoke(ask(), config())
    said = [str(msg.content), str(results(out["messages"])["c2"].content)]
    assert 'set up with on_ask="error"' in said[-1]
    # Outside any graph: LangChain's own shapes (text, or an error ToolMessage for a tool call).
    by_name = {t.name: t for t in tools(rt)}
    assert await by_name["add"].ainvoke({"a": 1, "b": 2}) == "3"
    msg = await by_name["save"].ainvoke(call("save", {"text": "milk"}, "c3"))
    assert isinstance(msg, ToolMessage) and msg.status == "error"
    assert "runs outside a LangGraph graph" in msg.content
    said.append(str(msg.content))
    # No decision will come: the model is told what to do instead, never to wait for one.
    for text in said:
        assert "Wait for the user's decision" not in text
        assert text.endswith(
            "Do not retry this call as is; choose another approach or ask the user."
        )
    zh = notes(locale="zh")
    msg = await {t.name: t for t in tools(zh)}["save"].ainvoke(call("save", {"text": "x"}, "c4"))
    assert (
        msg.status == "error" and "请等待" not in msg.content and "允许规则 `save`" in msg.content
    )
    assert runs(tmp_path / "notes.log") == []
    assert rt.pipeline.pending == {} and zh.pipeline.pending == {}


def test_to_approval_maps_every_decision() -> None:
    assert to_approval({"type": "approve"}) == Approval.allow_once()
    assert to_approval({"type": "approve", "always": True}) == Approval.allow_always()
    assert to_approval({"type": "approve", "rule": "run_shell(npm test:*)"}) == (
        Approval.allow_always("run_shell(npm test:*)")
    )
    assert to_approval(
        {"type": "edit", "edited_action": {"name": "save", "args": {"text": "x"}}}
    ) == Approval.edit({"text": "x"})
    assert to_approval({"type": "reject"}) == Approval.deny()
    assert to_approval({"type": "reject", "message": "no"}, locale="zh") == Approval.deny(
        "用户拒绝了这个调用:no"
    )
    for bad in (
        {"type": "maybe"},
        {"type": "edit"},
        {"type": "edit", "edited_action": {"name": "save", "args": "x"}},
        {"type": "approve", "rule": "save("},
        "approve",
    ):
        with pytest.raises(ConfigurationError):
            to_approval(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="on_ask"):
        tools(Runtime(Registry([])), on_ask="ask")  # type: ignore[arg-type]


def test_deferred_tools_and_tool_search_are_left_out(tmp_path: Path) -> None:
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path)
    names = [t.name for t in tools(rt)]
    assert "tool_search" not in names and "enter_plan_mode" not in names
    assert "read_file" in names and "run_shell" in names
    for t in tools(rt):
        assert t.tool_call_schema == {
            **rt.registry.get(t.name).parameters,
            "description": t.description,
        }


# -- concurrency ---------------------------------------------------------------------------


async def test_unsafe_calls_never_overlap_and_safe_calls_do(
    tmp_path: Path, runtimes: list[Runtime]
) -> None:
    arrived = {"a": asyncio.Event(), "b": asyncio.Event()}
    running: list[str] = []
    spans: dict[str, tuple[float, float]] = {}
    crowded: list[tuple[str, list[str]]] = []

    @tool(read_only=True, concurrency_safe=True)
    async def meet(me: str, other: str) -> str:
        """Wait for the other call: it returns `met` only if both run at once."""
        running.append(me)
        start = time.monotonic()
        arrived[me].set()
        try:
            await asyncio.wait_for(arrived[other].wait(), 10)
        except TimeoutError:
            return "alone"
        finally:
            running.remove(me)
            spans[me] = (start, time.monotonic())
        return "met"

    @tool
    async def scribble(n: int) -> str:
        """Not concurrency-safe: must run alone."""
        if running:
            crowded.append((f"w{n}", list(running)))
        running.append(f"w{n}")
        start = time.monotonic()
        await asyncio.sleep(0.05)
        running.remove(f"w{n}")
        spans[f"w{n}"] = (start, time.monotonic())
        return "ok"

    rt = Runtime(Registry([meet, scribble]), root=tmp_path, mode="bypass")
    runtimes.append(rt)
    turn = [
        call("scribble", {"n": 1}, "c1"),
        call("meet", {"me": "a", "other": "b"}, "c2"),
        call("meet", {"me": "b", "other": "a"}, "c3"),
        call("scribble", {"n": 2}, "c4"),
    ]
    agent = create_agent(model(turn, "done"), tools=tools(rt), checkpointer=InMemorySaver())
    out = await agent.ainvoke(ask(), config())
    got = results(out["messages"])
    assert [got[c].content for c in ("c1", "c2", "c3", "c4")] == ["ok", "met", "met", "ok"]
    assert crowded == []  # nothing else was running when an unsafe call started
    for w in ("w1", "w2"):  # ...nor started while it ran
        lo, hi = spans[w]
        for other, (o_lo, o_hi) in spans.items():
            if other != w:
                assert o_hi <= lo or o_lo >= hi, (w, other, spans)


# -- cancellation ----------------------------------------------------------------------------


def marker() -> str:
    """A unique sleep duration: it names our processes in /proc and nothing else."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def pids_with(text: str) -> list[int]:
    out: list[int] = []
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
        if text in cmd and state != b"Z" and "pytest" not in cmd:
            out.append(int(entry))
    return out


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandboxed", "unsandboxed"])
async def test_cancelling_a_run_kills_the_shell_process_tree(
    tmp_path: Path, runtimes: list[Runtime], sandboxed: bool
) -> None:
    if sandboxed and not SANDBOX.available:
        pytest.skip(f"no OS sandbox on this machine: {SANDBOX.reason}")
    m = marker()
    run_shell = shell() if sandboxed else RunShell(support=NO_SANDBOX, allow_unsandboxed=True)
    rt = Runtime(Registry([run_shell]), root=tmp_path, mode="bypass")
    runtimes.append(rt)
    command = f"sleep {m} & echo $! > started.pid; sleep {m}"
    agent = create_agent(
        model([call("run_shell", {"command": command, "timeout_seconds": 600}, "c1")]),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    run = asyncio.ensure_future(agent.ainvoke(ask(), config()))
    pids: list[int] = []
    for _ in range(1000):  # at most ~10 s
        pids = pids_with(m)
        if (tmp_path / "started.pid").exists() and len(pids) >= 2:
            break
        await asyncio.sleep(0.01)
    assert len(pids) >= 2, "the command never started"
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    for _ in range(500):  # at most ~5 s
        if not pids_with(m):
            break
        await asyncio.sleep(0.01)
    assert pids_with(m) == []
    assert rt.pipeline.pending == {}
    # The session's gate was left clean: the next unsafe call runs at once.
    r = await asyncio.wait_for(rt.call("run_shell", {"command": "echo again"}), 10)
    assert r.ok and r.content.strip().endswith("again")


# -- sessions --------------------------------------------------------------------------------


async def test_read_before_edit_follows_the_thread(tmp_path: Path, runtimes: list[Runtime]) -> None:
    (tmp_path / "notes.txt").write_text("milk\n")
    sessions: dict[str, Session] = {}

    def by_thread(runtime: ToolRuntime) -> Session:
        thread = runtime.config["configurable"]["thread_id"]
        return sessions.setdefault(thread, Session(mode=PermissionMode.ACCEPT_EDITS))

    rt = Runtime(Registry([ReadFile(), EditFile()]), root=tmp_path)
    runtimes.append(rt)
    edit = {"file_path": "notes.txt", "old_string": "milk", "new_string": "oat milk"}
    agent = create_agent(
        model(
            [call("read_file", {"file_path": "notes.txt"}, "r1")],
            "read it",
            [call("edit_file", edit, "e1")],
            "edited",
            [call("edit_file", edit, "e2")],
            "tried",
        ),
        tools=tools(rt, session=by_thread),
        checkpointer=InMemorySaver(),
    )
    try:
        out = await agent.ainvoke(ask("read notes.txt"), config("alice"))
        assert results(out["messages"])["r1"].status == "success"
        out = await agent.ainvoke(ask("now edit it"), config("alice"))
        assert results(out["messages"])["e1"].status == "success", out["messages"][-2].content
        assert (tmp_path / "notes.txt").read_text() == "oat milk\n"
        out = await agent.ainvoke(ask("edit it"), config("bob"))
        assert results(out["messages"])["e2"].artifact["error"] == ErrorCode.FILE_NOT_READ
        assert sorted(sessions) == ["alice", "bob"]
    finally:
        for s in sessions.values():
            await s.aclose()


# -- the sync path ---------------------------------------------------------------------------


def test_sync_invoke_runs_every_call_on_the_runtimes_portal(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    loops: list[tuple[str, Any]] = []

    @tool(read_only=True, concurrency_safe=True)
    async def where() -> str:
        """Which loop runs me."""
        loops.append(("where", asyncio.get_running_loop()))
        return "here"

    rt = Runtime(Registry([*notes_tools(log), where, shell()]), root=tmp_path, allow=["run_shell"])
    portal = portal_for(rt)
    try:
        agent = create_agent(
            model(
                [
                    call("where", {}, "c1"),
                    call("run_shell", {"command": "echo from-bash"}, "c2"),
                    call("save", {"text": "milk"}, "c3"),
                ],
                "done",
            ),
            tools=tools(rt),
            checkpointer=InMemorySaver(),
        )
        out = agent.invoke(ask(), config())
        [pause] = out["__interrupt__"]
        assert pause.value["name"] == "save" and rt.pipeline.pending == {}
        out = agent.invoke(Command(resume={"type": "approve"}), config())
        got = results(out["messages"])
        assert got["c1"].content == "here"
        assert got["c2"].status == "success" and got["c2"].content.strip().endswith("from-bash")
        assert got["c3"].content == "saved 'milk'"
        assert runs(log) == ["milk"]
        assert loops == [("where", portal.loop)]
        assert portal_for(rt) is portal  # one portal per runtime, however many calls
    finally:
        portal.run(rt.aclose())


# -- a plain ToolNode ------------------------------------------------------------------------


def tool_node_graph(chat: ScriptedModel, node: ToolNode) -> Any:
    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await chat.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition, ["tools", END])
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=InMemorySaver())


async def test_a_plain_tool_node_runs_the_siblings_of_an_ask_again_on_resume(
    tmp_path: Path, runtimes: list[Runtime]
) -> None:
    # adapters.md §3.2: a plain ToolNode runs a turn's calls in one task with asyncio.gather;
    # an interrupt ends the task, and resuming runs the whole task again. handrail's gate does
    # not change that (it orders calls, it cannot undo one), so a sibling that already ran
    # runs twice. And with two calls in the task, an answer waiting there cannot be told to be
    # the asking call's before it asks: that call asks again, then reads its answer (the
    # answer-first read is for tasks that run one call). create_agent sends each call as its
    # own task: the sibling runs once, and the asking call reads its answer first.
    log = tmp_path / "notes.log"
    started: list[str] = []
    finished: list[str] = []

    @tool(read_only=True, concurrency_safe=True)
    async def slow(tag: str) -> str:
        """Takes a moment."""
        started.append(tag)
        await asyncio.sleep(0.2)
        finished.append(tag)
        return f"slow {tag}"

    async def run(graph: Any) -> dict[str, Any]:
        out = await graph.ainvoke(ask(), config())
        assert out["__interrupt__"] and rt.pipeline.pending == {}
        for _ in range(500):  # at most ~5 s: a sibling of pass 1 may still be running
            if len(finished) == len(started):
                break
            await asyncio.sleep(0.01)
        return await graph.ainvoke(Command(resume={"type": "approve"}), config())

    rt = Runtime(Registry([*notes_tools(log), slow]), root=tmp_path)
    runtimes.append(rt)
    turn = [call("slow", {"tag": "s"}, "c1"), call("save", {"text": "milk"}, "c2")]

    out = await run(tool_node_graph(model(turn, "done"), ToolNode(tools(rt))))
    assert results(out["messages"])["c1"].content == "slow s"
    assert started == ["s", "s"]  # the sibling ran in both passes
    assert runs(log) == ["milk"]  # the asking call ran once: it ran only when answered

    started.clear()
    finished.clear()
    log.unlink()
    out = await run(
        create_agent(model(turn, "done"), tools=tools(rt), checkpointer=InMemorySaver())
    )
    assert results(out["messages"])["c1"].content == "slow s"
    assert started == ["s"]
    assert runs(log) == ["milk"]
    assert rt.pipeline.pending == {}


# -- the framework's context -----------------------------------------------------------------


async def test_ctx_host_is_the_langchain_tool_runtime(
    tmp_path: Path, runtimes: list[Runtime]
) -> None:
    seen: list[Any] = []

    @tool(read_only=True)
    def whoami(ctx: ToolContext) -> str:
        """A sync tool: it runs on a worker thread."""
        seen.append(ctx.host)
        return "me"

    @tool(read_only=True)
    async def whoami_async(ctx: ToolContext) -> str:
        """An async tool."""
        seen.append(ctx.host)
        return "me"

    rt = Runtime(Registry([whoami, whoami_async]), root=tmp_path)
    runtimes.append(rt)
    agent = create_agent(
        model([call("whoami", {}, "c1"), call("whoami_async", {}, "c2")], "done"),
        tools=tools(rt),
        checkpointer=InMemorySaver(),
    )
    await agent.ainvoke(ask(), config("t9"))
    assert sorted(h.tool_call_id for h in seen) == ["c1", "c2"]
    for host in seen:
        assert isinstance(host, ToolRuntime)
        assert host.config["configurable"]["thread_id"] == "t9"
        assert host.state["messages"][0].content == "go"


# -- the README's example --------------------------------------------------------------------


def test_the_readme_example_runs_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    readme_block: Callable[[str], str],
) -> None:
    example = readme_block("from handrail.integrations.langchain import tools")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {"__name__": "readme_example"})
    assert (tmp_path / "hello.txt").read_text() == "hi\n"
    asked, read, answer = capsys.readouterr().out.splitlines()
    assert (
        asked
        == "write_file {'file_path': 'hello.txt', 'content': 'hi\\n'}: `write_file` can change things"
    )
    assert read == f"Created {tmp_path / 'hello.txt'}: 1 line (+1 -0)."
    assert answer == "Wrote hello.txt."
