"""handrail's tools inside openai-agents: the SDK's own `Runner`, driven by its `ScriptedModel`.

Nothing of handrail is mocked: every call goes through a real `Runtime` (real validation,
permissions, sandboxed shell), and what the model reads is taken from what the scripted model
receives on its next turn.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunConfig, Runner, RunState, ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool_context import ToolContext as AgentsToolContext
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    ConfigurationError,
    Hook,
    HookEvent,
    HookResponse,
    ImagePart,
    PermissionMode,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolContext,
    ToolKind,
    tool,
)
from handrail.builtin import coding_tools
from handrail.integrations.openai_agents import Edits, function_tools, run_config
from handrail.providers import openai_strict_schema
from handrail.sandbox import sandbox_support

EDIT_NOTE = (
    "Note: the user edited this call's arguments before approving it; the result below is "
    "for the edited call, do not repeat the original call."
)


def config(rt: Runtime | None = None) -> RunConfig:
    """The adapter's run config, with tracing off: these tests touch no network."""
    return run_config(rt, tracing_disabled=True)


def outputs(model: ScriptedModel) -> dict[str, Any]:
    """The function_call_output of each call, as the model received it on its last turn."""
    call = model.last_call
    assert call is not None
    return {
        item["call_id"]: item["output"]
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def functions(rt: Runtime, **kw: Any) -> list[FunctionTool]:
    """`function_tools(rt)`, narrowed to what the adapter makes: one `FunctionTool` per tool."""
    tools = function_tools(rt, **kw)
    assert all(isinstance(t, FunctionTool) for t in tools)
    return [t for t in tools if isinstance(t, FunctionTool)]


def tool_names(model: ScriptedModel, turn: int) -> list[str]:
    """The tools the model was offered on turn `turn` (0-based)."""
    return [t.name for t in model.calls[turn].tools]


@tool(read_only=True, concurrency_safe=True)
async def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool(read_only=True, concurrency_safe=True)
def greet(name: str, greeting: str = "Hello") -> str:
    """Greet someone."""
    return f"{greeting}, {name}!"


def notes_tool(path: Path) -> Any:
    """save_note: an edit (it asks in the default mode) that appends a line to `path`."""

    @tool(kind=ToolKind.EDIT)
    def save_note(text: str) -> str:
        """Save a note."""
        with path.open("a", encoding="utf-8") as f:
            f.write(text + "\n")
        return f"saved {text}"

    return save_note


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- 1. errors reach the model as handrail's text --------------------------------------------


async def test_bad_arguments_and_invented_names_get_handrails_text_byte_for_byte() -> None:
    rt = Runtime(Registry([add]))
    model = ScriptedModel(
        [
            [
                function_call("add", {"a": "x", "B": 2}, call_id="bad"),
                function_call("add", '{"a": 1', call_id="malformed"),
                function_call("ad", {"a": 1}, call_id="invented"),
                function_call("add", {"a": 2, "b": 3}, call_id="good"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="calc", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "add", run_config=config(rt))
    assert result.final_output == "done"
    assert result.interruptions == []  # malformed JSON does not pause for approval

    seen = outputs(model)
    expected = Runtime(Registry([add]))
    assert seen["bad"] == (await expected.call("add", '{"a":"x","B":2}')).content
    assert seen["malformed"] == (await expected.call("add", '{"a": 1')).content
    assert seen["invented"] == (await expected.call("ad", '{"a":1}')).content
    assert seen["good"] == "5"
    assert seen["bad"] == snapshot("""\
Invalid arguments for `add`:
- /a: expected integer, received string "x"
- /B: unknown field `B`; did you mean `b`?
Call `add` again with corrected arguments.\
""")
    assert seen["invented"] == snapshot("There is no tool named `ad`. Did you mean `add`?")
    # The application gets the outcome as data beside the text.
    artifacts = {
        i.call_id: i.custom_data for i in result.new_items if isinstance(i, ToolCallOutputItem)
    }
    good, bad = artifacts["good"], artifacts["bad"]
    assert good is not None and good["handrail"]["ok"] is True
    assert bad is not None and bad["handrail"]["error"] == "INVALID_ARGS"
    assert bad["handrail"]["issues"][0]["path"] == "/a"
    await rt.aclose()
    await expected.aclose()


async def test_an_invented_name_does_not_end_the_run_with_the_plain_run_config() -> None:
    rt = Runtime(Registry([add]))
    model = ScriptedModel(
        [[function_call("subtract", {"a": 1}, call_id="c1")], [assistant_message("done")]]
    )
    agent = Agent(name="calc", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "go", run_config=config())
    assert result.final_output == "done"
    assert outputs(model)["c1"] == "Tool 'subtract' not found."  # the SDK's own text
    await rt.aclose()


async def test_empty_arguments_are_handrails_to_judge_not_an_approval_prompt(
    tmp_path: Path,
) -> None:
    # The SDK asks for approval of any arguments it cannot parse as an object, "" included;
    # handrail reads "" as {}: a read-only call runs, an edit still asks.
    @tool(read_only=True)
    def ping() -> str:
        """Ping."""
        return "pong"

    @tool(kind=ToolKind.EDIT)
    def wipe() -> str:
        """Wipe the notes."""
        return "wiped"

    rt = Runtime(Registry([ping, wipe]), root=tmp_path)
    model = ScriptedModel(
        [
            [function_call("ping", "", call_id="p"), function_call("wipe", "", call_id="w")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="empty", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "go", run_config=config(rt))
    assert [i.call_id for i in result.interruptions] == ["w"]
    state = result.to_state()
    state.approve(result.interruptions[0])
    await Runner.run(agent, state, run_config=config(rt))
    assert outputs(model) == {"p": "pong", "w": "wiped"}
    assert rt.pipeline.pending == {}
    await rt.aclose()


# -- 2. asks become the SDK's approvals --------------------------------------------------------


def ask_script() -> ScriptedModel:
    return ScriptedModel(
        [
            [
                function_call("save_note", {"text": "milk"}, call_id="c1"),
                function_call("add", {"a": 1, "b": 1}, call_id="c2"),
            ],
            [assistant_message("done")],
        ]
    )


async def test_ask_pauses_and_approve_runs_the_call_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    model = ask_script()
    agent = Agent(name="notes", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    assert [(i.tool_name, i.call_id) for i in result.interruptions] == [("save_note", "c1")]
    assert lines(notes) == []
    assert rt.pipeline.pending == {}

    state = result.to_state()
    state.approve(result.interruptions[0])
    result = await Runner.run(agent, state, run_config=config(rt))
    assert result.final_output == "done"
    assert lines(notes) == ["milk"]
    assert outputs(model) == {"c1": "saved milk", "c2": "2"}
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_reject_runs_nothing(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    model = ask_script()
    agent = Agent(name="notes", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    state = result.to_state()
    state.reject(result.interruptions[0], rejection_message="No notes today.")
    result = await Runner.run(agent, state, run_config=config(rt))
    assert result.final_output == "done"
    assert lines(notes) == []
    assert outputs(model)["c1"] == "No notes today."
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_an_edit_runs_the_edited_arguments_with_handrails_note(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    edits = Edits()
    model = ask_script()
    agent = Agent(name="notes", model=model, tools=function_tools(rt, edits=edits))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    state = result.to_state()
    item = result.interruptions[0]
    edits.edit(item, {"text": "oat milk"})
    state.approve(item)
    result = await Runner.run(agent, state, run_config=config(rt))
    assert lines(notes) == ["oat milk"]
    assert outputs(model)["c1"] == f"saved oat milk\n\n{EDIT_NOTE}"
    assert len(edits) == 0  # taken when the call ran
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_allow_always_adds_handrails_rule_for_the_session(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    edits = Edits()
    model = ask_script()
    model.extend(
        [
            [function_call("save_note", {"text": "eggs"}, call_id="c3")],
            [assistant_message("done again")],
        ]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt, edits=edits))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    state = result.to_state()
    edits.allow_always(result.interruptions[0])
    state.approve(result.interruptions[0])
    await Runner.run(agent, state, run_config=config(rt))
    assert rt.session.allow_rules == ["save_note"]
    # A new run of the same session: handrail's rule lets the next note run without asking.
    result = await Runner.run(agent, "note eggs", run_config=config(rt))
    assert result.interruptions == []
    assert lines(notes) == ["milk", "eggs"]
    await rt.aclose()


async def test_the_sdks_always_approve_covers_the_tools_later_calls_in_the_run(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes)]), root=tmp_path)
    model = ScriptedModel(
        [
            [function_call("save_note", {"text": "milk"}, call_id="c1")],
            [function_call("save_note", {"text": "eggs"}, call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "note milk and eggs", run_config=config(rt))
    state = result.to_state()
    state.approve(result.interruptions[0], always_approve=True)
    result = await Runner.run(agent, state, run_config=config(rt))
    assert result.interruptions == []  # the SDK's sticky approval answers handrail's next ask
    assert lines(notes) == ["milk", "eggs"]
    assert rt.session.allow_rules == []  # and adds no handrail rule
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_edits_not_given_to_the_tools_refuse_to_record(tmp_path: Path) -> None:
    rt = Runtime(Registry([notes_tool(tmp_path / "notes.txt"), add]), root=tmp_path)
    model = ask_script()
    agent = Agent(name="notes", model=model, tools=function_tools(rt))  # no edits=
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    with pytest.raises(ConfigurationError, match="function_tools"):
        Edits().edit(result.interruptions[0], {"text": "oat milk"})
    await rt.aclose()


async def test_a_run_state_string_resumes_in_a_fresh_runtime_exactly_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    first = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    model = ask_script()
    agent = Agent(name="notes", model=model, tools=function_tools(first))
    result = await Runner.run(agent, "note milk", run_config=config(first))
    saved = result.to_state().to_string()
    await first.aclose()
    assert first.pipeline.pending == {}

    # Another process, in effect: a new Runtime over the same workspace, new tools, new Edits.
    second = Runtime(Registry([notes_tool(notes), add]), root=tmp_path)
    edits = Edits()
    agent = Agent(name="notes", model=model, tools=function_tools(second, edits=edits))
    state = await RunState.from_string(agent, saved)
    [item] = state.get_interruptions()
    edits.edit(item, {"text": "almond milk"})
    state.approve(item)
    result = await Runner.run(agent, state, run_config=config(second))
    assert result.final_output == "done"
    assert lines(notes) == ["almond milk"]
    assert outputs(model)["c1"] == f"saved almond milk\n\n{EDIT_NOTE}"
    assert second.pipeline.pending == {}
    await second.aclose()


async def test_a_call_that_asks_only_once_it_runs_is_not_run_nor_left_pending(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes.txt"
    answers = iter([None, HookResponse(decision="ask", reason="changed its mind")])

    def fickle(event: HookEvent) -> HookResponse | None:
        return next(answers)  # the preflight: no opinion; the call itself: ask

    rt = Runtime(
        Registry([notes_tool(notes)]),
        root=tmp_path,
        allow=["save_note"],
        hooks=[Hook(event="pre_tool_use", func=fickle)],
    )
    model = ScriptedModel(
        [
            [function_call("save_note", {"text": "milk"}, call_id="c1")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    assert result.final_output == "done"  # the SDK cannot pause now: the model is told
    assert outputs(model)["c1"] == snapshot(
        "Not run: `save_note` needs the user's approval (changed its mind), which cannot be asked for at this point. Ask the user in your reply, or do something else."
    )
    assert lines(notes) == []
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_an_edit_recorded_then_rejected_never_reaches_a_later_call_with_the_same_id(
    tmp_path: Path,
) -> None:
    # ScriptedModel (and some OpenAI-compatible servers) reuse call ids: the same call, same
    # id, in a later run. The user approves what the new item shows, and that is what runs.
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes)]), root=tmp_path)
    edits = Edits()
    model = ScriptedModel(
        [
            [function_call("save_note", {"text": "milk"}, call_id="call_0")],
            [assistant_message("ok")],
            [function_call("save_note", {"text": "milk"}, call_id="call_0")],
            [assistant_message("ok again")],
        ]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt, edits=edits))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    state = result.to_state()
    [item] = result.interruptions
    edits.edit(item, {"text": "rm -rf everything"})  # the user starts editing ...
    state.reject(item, rejection_message="never mind")  # ... then rejects instead
    await Runner.run(agent, state, run_config=config(rt))
    assert lines(notes) == []
    assert "call_0" in edits  # a rejected call never reaches the tool: the answer is left

    result = await Runner.run(agent, "note milk", run_config=config(rt))
    [item] = result.interruptions
    assert item.arguments == '{"text":"milk"}'
    assert len(edits) == 0  # a new ask for the id: the old answer is not this item's
    state = result.to_state()
    state.approve(item)
    await Runner.run(agent, state, run_config=config(rt))
    assert lines(notes) == ["milk"]
    assert outputs(model)["call_0"] == "saved milk"  # no edit note
    assert rt.pipeline.pending == {}
    await rt.aclose()


async def test_an_edit_is_applied_only_to_the_call_it_was_recorded_for(tmp_path: Path) -> None:
    # Two conversations paused at once, their calls under one id: the edit recorded for one
    # item must not run in place of the other, which the user approved as shown.
    notes = tmp_path / "notes.txt"
    rt = Runtime(Registry([notes_tool(notes)]), root=tmp_path)
    edits = Edits()
    model = ScriptedModel(
        [
            [function_call("save_note", {"text": "milk"}, call_id="c1")],
            [function_call("save_note", {"text": "bread"}, call_id="c1")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt, edits=edits))
    first = await Runner.run(agent, "note milk", run_config=config(rt))
    second = await Runner.run(agent, "note bread", run_config=config(rt))
    [milk], [bread] = first.interruptions, second.interruptions
    assert (milk.call_id, bread.call_id) == ("c1", "c1")

    edits.edit(milk, {"text": "rm -rf everything"})
    state = second.to_state()
    state.approve(bread)
    await Runner.run(agent, state, run_config=config(rt))
    assert lines(notes) == ["bread"]
    assert outputs(model)["c1"] == "saved bread"
    assert len(edits) == 0  # the stale answer went with the call that did not match it
    await rt.aclose()


async def test_allow_always_refuses_a_malformed_rule_when_it_is_recorded(tmp_path: Path) -> None:
    rt = Runtime(Registry([notes_tool(tmp_path / "notes.txt")]), root=tmp_path)
    edits = Edits()
    model = ScriptedModel(
        [[function_call("save_note", {"text": "milk"}, call_id="c1")], [assistant_message("ok")]]
    )
    agent = Agent(name="notes", model=model, tools=function_tools(rt, edits=edits))
    result = await Runner.run(agent, "note milk", run_config=config(rt))
    with pytest.raises(ConfigurationError, match="invalid permission rule 'save_note\\('"):
        edits.allow_always(result.interruptions[0], rule="save_note(")
    assert len(edits) == 0
    edits.allow_always(result.interruptions[0], rule="save_note(milk*)")
    assert "c1" in edits
    await rt.aclose()


# -- failures inside the adapter or the runtime never end the run ------------------------------


class Text(BaseModel):
    text: str = ""


async def test_a_tool_whose_permission_requests_raises_does_not_end_the_run() -> None:
    ran: list[str] = []

    class Buggy(Tool):
        name = "buggy"
        description = "Its permission_requests has a bug."
        args_model = Text

        def permission_requests(self, args: Any, ctx: ToolContext) -> Any:
            raise KeyError("oops")

        async def run(self, args: Any, ctx: ToolContext) -> str:
            ran.append(args.text)
            return "ran"

    rt = Runtime(Registry([Buggy()]))
    model = ScriptedModel(
        [[function_call("buggy", {"text": "x"}, call_id="c1")], [assistant_message("done")]]
    )
    agent = Agent(name="bug", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "go", run_config=config(rt))
    assert result.final_output == "done"
    assert result.interruptions == []
    seen = outputs(model)["c1"]
    assert isinstance(seen, str) and seen  # text for the model, whoever words it
    assert "An error occurred" not in seen  # not the SDK's generic failure text
    assert ran == []
    [output] = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert output.custom_data is not None
    assert output.custom_data["handrail"]["ok"] is False
    await rt.aclose()


async def test_a_failing_session_function_gives_the_model_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(wrapper: Any) -> Session:
        return wrapper.context["conversation"]  # the run was given no such key

    rt = Runtime(Registry([add]))
    model = ScriptedModel(
        [
            [function_call("add", {"a": 1}, call_id="c1")],
            [function_call("add", '{"a": 1', call_id="c2")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="calc", model=model, tools=function_tools(rt, session=broken))
    # is_enabled still offers the tool, needs_approval says no, the call's text says why.
    result = await Runner.run(agent, "add", context={}, run_config=config(rt))
    assert tool_names(model, 0) == ["add"]
    assert outputs(model)["c1"] == snapshot(
        "The tool `add` could not be run: the tool runtime failed internally (KeyError). Try a different approach."
    )
    # The guardrail allows what it cannot judge: the SDK asks about arguments it cannot parse.
    assert [i.call_id for i in result.interruptions] == ["c2"]
    state = result.to_state()
    state.reject(result.interruptions[0], rejection_message="No.")
    result = await Runner.run(agent, state, run_config=config(rt))
    assert result.final_output == "done"
    assert outputs(model)["c2"] == "No."
    assert "Traceback" in caplog.text and "KeyError" in caplog.text  # logged, not lost
    await rt.aclose()


# -- ctx.host and hooks where handrail evaluates a call -----------------------------------------


async def test_validate_input_sees_the_sdk_context_when_the_call_is_checked(
    tmp_path: Path,
) -> None:
    seen: list[tuple[str, str, Any]] = []

    class Stamp(Tool):
        name = "stamp"
        description = "Stamp a note for the current user."
        args_model = Text
        kind = ToolKind.EDIT

        def validate_input(self, args: Any, ctx: ToolContext) -> None:
            host = ctx.host
            seen.append((ctx.call_id, type(host).__name__, host.context if host else None))

        async def run(self, args: Any, ctx: ToolContext) -> str:
            return f"stamped for {ctx.host.context['user']}"

    rt = Runtime(Registry([Stamp()]), root=tmp_path)
    model = ScriptedModel(
        [
            [
                function_call("stamp", {"text": "x"}, call_id="c1"),  # needs_approval checks
                function_call("stamp", "", call_id="c2"),  # the guardrail checks
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="stamp", model=model, tools=function_tools(rt))
    user = {"user": "bob"}
    result = await Runner.run(agent, "stamp", context=user, run_config=config(rt))
    assert sorted(str(i.call_id) for i in result.interruptions) == ["c1", "c2"]
    assert sorted(seen) == [("c1", "RunContextWrapper", user), ("c2", "ToolContext", user)]

    seen.clear()
    state = result.to_state()
    for item in result.interruptions:
        state.approve(item)
    await Runner.run(agent, state, run_config=config(rt))
    assert sorted(seen) == [("c1", "ToolContext", user), ("c2", "ToolContext", user)]
    assert outputs(model) == {"c1": "stamped for bob", "c2": "stamped for bob"}
    await rt.aclose()


async def test_an_unknown_name_or_an_alias_runs_no_hook() -> None:
    hooked: list[str] = []

    def count(event: HookEvent) -> HookResponse | None:
        hooked.append(event.call_id)
        return None

    # Every argument optional, so `{}` is valid and a check of the alias would reach the hook.
    @tool(read_only=True, concurrency_safe=True, aliases=["plus"])
    async def add_up(a: int = 0, b: int = 1) -> int:
        """Add two integers."""
        return a + b

    @tool(read_only=True, deferred=True)
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    rt = Runtime(Registry([add_up, weather]), hooks=[Hook(event="pre_tool_use", func=count)])
    model = ScriptedModel(
        [
            [
                function_call("ad_up", {"a": 1}, call_id="invented"),
                function_call("plus", {"a": 1}, call_id="alias"),
                function_call("weather", {"city": "Oslo"}, call_id="inactive"),
                function_call("add_up", {"a": 1}, call_id="real"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="calc", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "add", run_config=config(rt))
    assert result.final_output == "done"
    seen = outputs(model)
    assert seen["invented"] == snapshot(
        "There is no tool named `ad_up`. Did you mean `add_up`? More tools can be found with tool_search."
    )
    assert seen["alias"] == "Tool 'plus' not found."  # it resolves: the SDK's own text
    assert seen["inactive"] == snapshot(
        'The tool `weather` is not loaded yet. Call tool_search with query "select:weather" first, then call `weather` again.'
    )
    assert seen["real"] == "2"
    assert hooked and set(hooked) == {"real"}  # the hook counts; only the real call's ran
    await rt.aclose()


# -- 3. strict mode ---------------------------------------------------------------------------


async def test_a_strict_null_is_not_given_so_the_default_applies() -> None:
    rt = Runtime(Registry([greet]))
    [ft] = functions(rt)
    # handrail's strict form, kept byte for byte by the SDK: optional means nullable.
    assert ft.strict_json_schema is True
    assert ft.params_json_schema == openai_strict_schema(greet)
    assert ft.params_json_schema["properties"]["greeting"]["type"] == ["string", "null"]
    model = ScriptedModel(
        [
            [function_call("greet", {"name": "Ada", "greeting": None}, call_id="c1")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="greeter", model=model, tools=[ft])
    await Runner.run(agent, "greet Ada", run_config=config(rt))
    assert outputs(model)["c1"] == "Hello, Ada!"
    # strict=False sends the tool's own schema, strict mode off.
    [loose] = functions(rt, strict=False)
    assert loose.strict_json_schema is False
    assert loose.params_json_schema == greet.parameters
    await rt.aclose()


def test_every_coding_tool_keeps_handrails_strict_schema(tmp_path: Path) -> None:
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path)
    for ft in functions(rt):
        handrail_tool = rt.registry.get(ft.name)
        assert handrail_tool is not None
        assert ft.strict_json_schema is True, ft.name
        assert ft.params_json_schema == openai_strict_schema(handrail_tool), ft.name


# -- 4. one turn's calls keep handrail's order ------------------------------------------------


async def test_unsafe_calls_never_overlap_and_safe_ones_do() -> None:
    active: list[str] = []
    overlaps: list[tuple[str, ...]] = []
    finished: list[str] = []
    met = {"ping": asyncio.Event(), "pong": asyncio.Event()}

    @tool()
    async def write_a(label: str) -> str:
        """Not concurrency-safe."""
        active.append(label)
        if len(active) > 1:
            overlaps.append(tuple(active))
        await asyncio.sleep(0.05)  # time for a sibling to start, were it allowed to
        active.remove(label)
        finished.append(label)
        return label

    def safe(me: str, other: str) -> Any:
        @tool(name=me, read_only=True, concurrency_safe=True)
        async def wait_for_the_other() -> str:
            """Concurrency-safe: it only returns once its sibling has started too."""
            met[me].set()
            try:
                await asyncio.wait_for(met[other].wait(), timeout=5)
            except TimeoutError:
                return "alone"
            return "met"

        return wait_for_the_other

    rt = Runtime(Registry([write_a, safe("ping", "pong"), safe("pong", "ping")]), mode="bypass")
    model = ScriptedModel(
        [
            [
                function_call("write_a", {"label": "w1"}, call_id="w1"),
                function_call("write_a", {"label": "w2"}, call_id="w2"),
                function_call("ping", {}, call_id="s1"),
                function_call("pong", {}, call_id="s2"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="order", model=model, tools=function_tools(rt))
    result = await Runner.run(agent, "go", run_config=config(rt))
    assert result.final_output == "done"
    assert overlaps == []
    assert sorted(finished) == ["w1", "w2"]
    assert outputs(model) == {"w1": "w1", "w2": "w2", "s1": "met", "s2": "met"}
    await rt.aclose()


# -- 5. cancelling a run stops the shell --------------------------------------------------------


def pids_with(text: str) -> list[int]:
    """Live processes whose command line holds `text` (zombies and pytest itself excluded)."""
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
        if text in cmd and state != b"Z" and "pytest" not in cmd:
            found.append(int(entry))
    return found


@pytest.mark.skipif(
    not sandbox_support().available, reason="run_shell refuses to run without its OS sandbox"
)
async def test_cancelling_a_run_kills_the_shell_process_tree(tmp_path: Path) -> None:
    # A unique sleep duration names our processes in /proc (inside the sandbox's PID namespace
    # the PID a command prints is not the host's).
    mark = f"1000.{uuid.uuid4().int % 10**9:09d}"
    command = f"sleep {mark} & echo $! > started.pid; sleep {mark}"
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path, mode="bypass")
    model = ScriptedModel(
        [
            [function_call("run_shell", {"command": command}, call_id="c1")],
            [assistant_message("never reached")],
        ]
    )
    agent = Agent(name="shell", model=model, tools=function_tools(rt))
    run = asyncio.ensure_future(Runner.run(agent, "run it", run_config=config(rt)))
    pids: list[int] = []
    for _ in range(500):  # at most ~5 s for the command to start both sleeps
        pids = pids_with(mark)
        if (tmp_path / "started.pid").exists() and len(pids) >= 2:
            break
        await asyncio.sleep(0.01)
    assert len(pids) >= 2, "the command never started"

    run.cancel()
    done, _ = await asyncio.wait({run}, timeout=10)
    assert done and run.cancelled()
    for _ in range(250):  # at most ~5 s: SIGTERM, then SIGKILL 2 s later
        if not pids_with(mark):
            break
        await asyncio.sleep(0.02)
    assert pids_with(mark) == []
    # The SDK does not wait for a cancelled tool: handrail's call finishes stopping the tree
    # in a task of its own. Wait for it, so its subprocess transport is closed, not leaked.
    me = asyncio.current_task()
    for _ in range(500):  # at most ~5 s
        if not [t for t in asyncio.all_tasks() if t is not me]:
            break
        await asyncio.sleep(0.01)
    assert [t for t in asyncio.all_tasks() if t is not me] == []
    await rt.aclose()
    gc.collect()  # a leaked transport would warn here, in this test (warnings are errors)


# -- 6. a conversation's session spans its runs ----------------------------------------------


async def test_read_in_one_run_then_edit_in_the_next_passes_read_before_edit(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.md").write_text("milk\n", encoding="utf-8")
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path)
    # One session per conversation, chosen from the run's context; each has its own mode.
    conversations = {name: Session(mode=PermissionMode.ACCEPT_EDITS) for name in ("ada", "bob")}
    tools = function_tools(rt, session=lambda wrapper: conversations[wrapper.context["user"]])
    edit = {"file_path": "notes.md", "old_string": "milk", "new_string": "oat milk"}
    model = ScriptedModel(
        [
            [function_call("read_file", {"file_path": "notes.md"}, call_id="r1")],
            [assistant_message("read")],
            [function_call("edit_file", edit, call_id="e1")],
            [assistant_message("edited")],
            [function_call("edit_file", edit, call_id="e2")],
            [assistant_message("refused")],
        ]
    )
    agent = Agent(name="coder", model=model, tools=tools)

    await Runner.run(agent, "read notes", context={"user": "ada"}, run_config=config(rt))
    result = await Runner.run(agent, "edit notes", context={"user": "ada"}, run_config=config(rt))
    assert result.final_output == "edited"
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "oat milk\n"

    [ada_output] = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert ada_output.custom_data is not None
    assert ada_output.custom_data["handrail"]["ok"] is True

    # Another conversation never read the file: handrail refuses the edit, in its own words.
    result = await Runner.run(agent, "edit notes", context={"user": "bob"}, run_config=config(rt))
    [bob_output] = [i for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    assert bob_output.custom_data is not None
    assert bob_output.custom_data["handrail"]["error"] == "FILE_NOT_READ"
    fresh = Session(mode=PermissionMode.ACCEPT_EDITS)
    expected = await rt.call("edit_file", edit, session=fresh)
    assert outputs(model)["e2"] == expected.content
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "oat milk\n"
    await fresh.aclose()
    for s in conversations.values():
        await s.aclose()
    await rt.aclose()


# -- 7. the framework's context inside a handrail tool ------------------------------------------


async def test_ctx_host_is_the_sdk_tool_context() -> None:
    seen: list[Any] = []

    @tool(read_only=True)
    def whoami(ctx: ToolContext) -> str:
        """Who is asking."""
        seen.append(ctx.host)
        return f"user {ctx.host.context['user']}"

    rt = Runtime(Registry([whoami]))
    model = ScriptedModel([[function_call("whoami", {}, call_id="c1")], [assistant_message("ok")]])
    agent = Agent(name="who", model=model, tools=function_tools(rt))
    await Runner.run(agent, "who am I", context={"user": "ada"}, run_config=config(rt))
    assert outputs(model)["c1"] == "user ada"
    [host] = seen
    assert isinstance(host, AgentsToolContext)
    assert host.tool_call_id == "c1" and host.context == {"user": "ada"}
    await rt.aclose()


# -- beyond text, and tools that appear later ---------------------------------------------------


async def test_an_image_reaches_the_model_as_an_image() -> None:
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c63f8cfc0f01f0005000201e2213bc90000000049454e44ae426082"
    )

    @tool(read_only=True)
    def screenshot() -> list[Any]:
        """Take a screenshot."""
        return ["The screen:", ImagePart.of(png, "image/png")]

    rt = Runtime(Registry([screenshot]))
    model = ScriptedModel(
        [[function_call("screenshot", {}, call_id="c1")], [assistant_message("seen")]]
    )
    agent = Agent(name="eyes", model=model, tools=function_tools(rt))
    await Runner.run(agent, "look", run_config=config(rt))
    output = outputs(model)["c1"]
    assert isinstance(output, list)
    assert output[0] == {"type": "input_text", "text": "The screen:"}
    assert output[1]["type"] == "input_image"
    assert output[1]["image_url"].startswith("data:image/png;base64,iVBORw0KGgo")
    await rt.aclose()


async def test_deferred_tools_are_offered_once_tool_search_activates_them() -> None:
    @tool(read_only=True, concurrency_safe=True, deferred=True)
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    rt = Runtime(Registry([add, weather]))
    model = ScriptedModel(
        [
            [function_call("weather", {"city": "Oslo"}, call_id="early")],
            [function_call("tool_search", {"query": "select:weather"}, call_id="search")],
            [function_call("weather", {"city": "Oslo"}, call_id="late")],
            [assistant_message("done")],
        ]
    )
    agent = Agent(name="w", model=model, tools=function_tools(rt))
    await Runner.run(agent, "weather?", run_config=config(rt))
    assert tool_names(model, 0) == ["add", "tool_search"]
    assert tool_names(model, 2) == ["add", "tool_search", "weather"]
    early = next(
        item["output"]
        for item in model.calls[1].input
        if isinstance(item, dict) and item.get("call_id") == "early" and "output" in item
    )
    async with Runtime(Registry([add, weather])) as expected:
        assert early == (await expected.call("weather", "{}")).content
    assert outputs(model)["late"] == "Sunny in Oslo"
    await rt.aclose()


# -- the README example -------------------------------------------------------------------------


async def test_the_readme_example_runs_as_written(
    capsys: pytest.CaptureFixture[str], readme_block: Callable[[str], str]
) -> None:
    example = readme_block("from handrail.integrations.openai_agents import")
    code = compile(example, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {"__name__": "readme"}
    await eval(code, namespace)
    assert capsys.readouterr().out == "Noted. ['milk', 'bread']\n"
    model: ScriptedModel = namespace["model"]
    seen = outputs(model)
    assert seen["c1"] == "Saved: milk"
    assert seen["c2"] == "No eggs, thanks."
    assert seen["c3"] == f"Saved: bread\n\n{EDIT_NOTE}"
    assert namespace["rt"].pipeline.pending == {}
