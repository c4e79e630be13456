"""enter_plan_mode / exit_plan_mode end to end through `Runtime`, beside the real file tools."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    Approval,
    ErrorCode,
    Interrupted,
    PermissionMode,
    PermissionRequest,
    Registry,
    RunCommand,
    Runtime,
    SwitchMode,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    ToolResult,
)
from handrail.builtin import EditFile, EnterPlanMode, ExitPlanMode, ReadFile, WriteFile

PLAN = "1. Add `greet()` to app.py.\n2. Test it."


class CommandArgs(BaseModel):
    command: str


class RunCommandTool(Tool):
    """A stand-in for a shell tool: not read-only, runs a command."""

    name = "run_command"
    description = "Run a command (records it instead)."
    kind = ToolKind.EXECUTE
    read_only = False
    args_model = CommandArgs

    def __init__(self) -> None:
        self.ran: list[str] = []
        super().__init__()

    def permission_requests(
        self, args: CommandArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        return [RunCommand(command=args.command)]

    def run(self, args: CommandArgs, ctx: ToolContext) -> str:
        self.ran.append(args.command)
        return f"ran {args.command}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    return root


def make_runtime(ws: Path, **options: Any) -> Runtime:
    options.setdefault("mode", "accept_edits")
    tools: list[Tool] = [
        ReadFile(),
        WriteFile(),
        EditFile(),
        RunCommandTool(),
        EnterPlanMode(),
        ExitPlanMode(),
    ]
    return Runtime(Registry(tools), root=ws, **options)


async def activate(rt: Runtime, *names: str) -> None:
    r = await rt.call("tool_search", {"query": "select:" + ",".join(names)})
    assert r.ok, r.content


async def enter(rt: Runtime, **args: Any) -> ToolResult:
    await activate(rt, "enter_plan_mode")
    r = await rt.call("enter_plan_mode", args)
    assert r.ok, r.content
    return r


async def exit_plan(rt: Runtime, plan: str = PLAN) -> ToolResult:
    return await rt.call("exit_plan_mode", {"plan": plan})


async def ask_exit(rt: Runtime, plan: str = PLAN) -> Interrupted:
    r = await exit_plan(rt, plan)
    assert isinstance(r, Interrupted), r.content
    return r


def names(rt: Runtime) -> list[str]:
    return [t.name for t in rt.tools()]


# -- the tools' face -------------------------------------------------------------------------


def test_descriptions_flags_and_schemas() -> None:
    enter_tool, exit_tool = EnterPlanMode(), ExitPlanMode()
    for t in (enter_tool, exit_tool):
        assert t.deferred
        assert t.is_read_only(None)  # session state only; stays listed in plan mode
        assert not t.is_concurrency_safe(None)
        assert not t.is_destructive(None)
    assert enter_tool.description == snapshot(
        "Switch the session to plan mode before a complex or risky change: only read-only tools run there, so you can explore the code and design a plan without changing anything. Use it when the task needs several steps, touches many files, or the right approach is unclear; skip it for small, obvious changes. Finish with exit_plan_mode, which asks the user to approve the plan."
    )
    assert exit_tool.description == snapshot(
        "Present your plan to the user and ask to leave plan mode. Call it only in plan mode, once the plan is complete. If the user approves, the session returns to the mode it was in before plan mode and you carry out the plan. If the user declines, you stay in plan mode: revise the plan using their feedback (ask if it is unclear) and call exit_plan_mode again; do not start the changes."
    )
    assert enter_tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "reason": {
                    "anyOf": [{"maxLength": 2000, "type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "Why planning first helps here, in one sentence (shown to the user).",
                }
            },
            "type": "object",
        }
    )
    assert exit_tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "plan": {
                    "description": "The complete plan for the user to approve, in Markdown: the steps in order, the files to change, and how to check the result. If you saved it to a plan file, send the same text.",
                    "minLength": 1,
                    "type": "string",
                }
            },
            "required": ["plan"],
            "type": "object",
        }
    )


async def test_tools_are_hidden_until_tool_search_selects_them(ws: Path) -> None:
    rt = make_runtime(ws)
    assert "enter_plan_mode" not in names(rt)
    assert "tool_search" in names(rt)
    r = await rt.call("enter_plan_mode", {})
    assert r.error is ErrorCode.TOOL_NOT_ACTIVATED
    assert rt.session.mode is PermissionMode.ACCEPT_EDITS
    await activate(rt, "enter_plan_mode")
    assert "enter_plan_mode" in names(rt)
    assert "exit_plan_mode" not in names(rt)
    r = await rt.call("enter_plan_mode", {})
    assert r.ok
    # Entering loads the way out, and plan mode keeps it listed (it is read-only).
    assert names(rt) == snapshot(["read_file", "tool_search", "enter_plan_mode", "exit_plan_mode"])


# -- entering ----------------------------------------------------------------------------------


async def test_enter_switches_to_plan_mode_and_remembers_the_mode_before(ws: Path) -> None:
    rt = make_runtime(ws)
    r = await enter(rt, reason="The change touches three modules.")
    assert rt.session.mode is PermissionMode.PLAN
    assert rt.session.data["plan_mode"] == {
        "previous_mode": "accept_edits",
        "reason": "The change touches three modules.",
    }
    assert r.content == snapshot(
        "Plan mode is on (the session was in accept_edits mode). Only read-only tools run now: anything that changes files or runs commands is denied. Explore the code and design a step-by-step plan; you may save it with write_file under .handrail/plans/, the one place where writing is allowed. When the plan is ready, call exit_plan_mode with it: the user reviews it, and on approval the session returns to accept_edits mode. Reason given: The change touches three modules."
    )
    assert r.summary == "Entered plan mode"


async def test_entering_twice_is_an_error_that_says_what_to_do(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.call("enter_plan_mode", {})
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "The session is already in plan mode. Keep exploring with read-only tools, then call exit_plan_mode with your plan to ask the user for approval."
    )
    assert rt.session.data["plan_mode"]["previous_mode"] == "accept_edits"  # not overwritten


async def test_exiting_outside_plan_mode_is_an_error_that_says_what_to_do(ws: Path) -> None:
    rt = make_runtime(ws)
    await activate(rt, "exit_plan_mode")
    r = await exit_plan(rt)
    assert r.error is ErrorCode.INVALID_ARGS
    assert not isinstance(r, Interrupted)  # refused before anyone is asked
    assert r.content == snapshot(
        "The session is not in plan mode (it is in accept_edits mode), so there is no plan to approve. Use enter_plan_mode first to explore and design a plan, then exit_plan_mode to get it approved; or just carry on with the task."
    )


async def test_a_blank_plan_is_refused(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await exit_plan(rt, "  \n ")
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "The plan is empty. Write the plan itself: the steps, the files to change and how to check the result."
    )


# -- in plan mode ------------------------------------------------------------------------------


async def test_plan_mode_denies_writes_edits_and_commands_but_allows_reads(ws: Path) -> None:
    rt = make_runtime(ws)
    r = await rt.call("read_file", {"file_path": "app.py"})
    assert r.ok
    await enter(rt)
    r = await rt.call("read_file", {"file_path": "app.py"})
    assert r.ok, r.content
    for name, args in [
        ("write_file", {"file_path": "new.py", "content": "x = 1\n"}),
        ("edit_file", {"file_path": "app.py", "old_string": "hi", "new_string": "bye"}),
        ("run_command", {"command": "npm install"}),
    ]:
        r = await rt.call(name, args)
        assert r.error is ErrorCode.PERMISSION_DENIED, (name, r.content)
        assert r.denial is not None and r.denial.source == "mode"
        assert "plan mode" in r.content
    assert r.content == snapshot(
        "Permission denied: `run_command` changes things and the session is in plan mode, where only read-only calls run; finish the plan and exit plan mode first. Do not retry this call as is; choose another approach or ask the user."
    )
    assert not (ws / "new.py").exists()
    assert (ws / "app.py").read_text() == "print('hi')\n"


async def test_writing_the_plan_file_is_allowed_in_plan_mode(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.call("write_file", {"file_path": ".handrail/plans/x.md", "content": PLAN})
    assert r.ok, r.content
    assert (ws / ".handrail" / "plans" / "x.md").read_text() == PLAN
    # ...but not the rest of .handrail/, nor a plans folder elsewhere.
    r = await rt.call("write_file", {"file_path": ".handrail/settings.json", "content": "{}"})
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    r = await rt.call("write_file", {"file_path": "plans/x.md", "content": PLAN})
    assert r.error is ErrorCode.PERMISSION_DENIED


async def test_a_write_in_the_same_batch_after_entering_is_denied(ws: Path) -> None:
    rt = make_runtime(ws)
    await activate(rt, "enter_plan_mode")
    batch = await rt.call_many(
        [
            ToolCall(id="1", name="enter_plan_mode", arguments="{}"),
            ToolCall(id="2", name="write_file", arguments={"file_path": "a.txt", "content": "x"}),
        ]
    )
    assert [r.error for r in batch] == [None, ErrorCode.PERMISSION_DENIED]
    assert not (ws / "a.txt").exists()


# -- exiting -----------------------------------------------------------------------------------


async def test_exit_asks_for_approval_with_the_plan(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await exit_plan(rt)
    assert isinstance(r, Interrupted)
    assert r.error is ErrorCode.INTERRUPTED
    assert r.approval is not None
    assert r.approval.requests == (SwitchMode(mode="accept_edits", plan=PLAN),)
    assert r.approval.reason == snapshot("switching to accept_edits mode needs the user's approval")
    assert r.approval.suggested_rules == ("exit_plan_mode(accept_edits)", "exit_plan_mode")
    assert r.content == snapshot(
        "Not run yet: `exit_plan_mode` needs the user's approval (switching to accept_edits mode needs the user's approval). Wait for the user's decision."
    )
    assert rt.session.mode is PermissionMode.PLAN


async def test_approval_restores_the_previous_mode(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.resume(await ask_exit(rt), Approval.allow_once())
    assert r.ok, r.content
    assert rt.session.mode is PermissionMode.ACCEPT_EDITS
    assert "plan_mode" not in rt.session.data
    assert r.content == snapshot("""\
The user approved the plan. Plan mode is over: the session is back in accept_edits mode, so you can make changes now. Carry out the approved plan:

1. Add `greet()` to app.py.
2. Test it.\
""")
    assert r.summary == "Plan approved; back to accept_edits mode"
    assert r.metadata == {"mode": "accept_edits", "plan": PLAN}
    # accept_edits again: the write runs without asking.
    r = await rt.call("write_file", {"file_path": "new.py", "content": "x = 1\n"})
    assert r.ok, r.content


async def test_denial_keeps_plan_mode(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.resume(await ask_exit(rt), Approval.deny("Also cover the CLI."))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.source == "user"
    assert "Also cover the CLI" in r.content
    assert rt.session.mode is PermissionMode.PLAN
    assert rt.session.data["plan_mode"]["previous_mode"] == "accept_edits"
    r = await rt.call("write_file", {"file_path": "new.py", "content": "x = 1\n"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    # A revised plan asks again, and approval then ends plan mode.
    again = await exit_plan(rt, PLAN + "\n3. Update the CLI.")
    assert isinstance(again, Interrupted)
    r = await rt.resume(again, Approval.allow_once())
    assert r.ok
    assert rt.session.mode is PermissionMode.ACCEPT_EDITS


async def test_a_plan_edited_at_approval_is_the_one_returned(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.resume(await ask_exit(rt), Approval.edit({"plan": "1. Only add greet()."}))
    assert r.ok
    assert "1. Only add greet()." in r.content
    assert "edited" in r.content  # the runtime's note about the edit
    assert r.metadata["plan"] == "1. Only add greet()."


async def test_a_session_started_in_plan_mode_returns_to_default(ws: Path) -> None:
    rt = make_runtime(ws, mode="plan")
    await activate(rt, "exit_plan_mode")
    r = await exit_plan(rt)
    assert isinstance(r, Interrupted) and r.approval is not None
    assert r.approval.requests == (SwitchMode(mode="default", plan=PLAN),)
    r = await rt.resume(r, Approval.allow_once())
    assert r.ok
    assert rt.session.mode is PermissionMode.DEFAULT


async def test_rules_decide_the_exit(ws: Path) -> None:
    rt = make_runtime(ws, deny=["exit_plan_mode(bypass)", "exit_plan_mode(accept_edits)"])
    await enter(rt)
    r = await exit_plan(rt)
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.rule == "exit_plan_mode(accept_edits)"
    assert rt.session.mode is PermissionMode.PLAN

    rt = make_runtime(ws, allow=["exit_plan_mode"])
    await enter(rt)
    r = await exit_plan(rt)
    assert r.ok  # explicitly allowed: no question
    assert rt.session.mode is PermissionMode.ACCEPT_EDITS


async def test_allow_always_skips_the_question_next_time(ws: Path) -> None:
    rt = make_runtime(ws)
    await enter(rt)
    r = await rt.resume(await ask_exit(rt), Approval.allow_always())
    assert r.ok
    assert rt.session.allow_rules == ["exit_plan_mode(accept_edits)"]
    r = await rt.call("enter_plan_mode", {})
    assert r.ok
    r = await exit_plan(rt)
    assert r.ok
    assert rt.session.mode is PermissionMode.ACCEPT_EDITS


async def test_an_approver_answers_inline(ws: Path) -> None:
    seen: list[Any] = []

    async def approver(request: Any) -> Approval:
        seen.append(request)
        return Approval.allow_once()

    rt = make_runtime(ws, approver=approver, mode="default")
    await enter(rt)
    r = await exit_plan(rt)
    assert r.ok
    assert [q.plan for q in seen[0].requests] == [PLAN]
    assert rt.session.mode is PermissionMode.DEFAULT


# -- Chinese -----------------------------------------------------------------------------------


async def test_messages_in_chinese(ws: Path) -> None:
    rt = make_runtime(ws, locale="zh")
    await activate(rt, "exit_plan_mode")
    r = await exit_plan(rt)
    assert r.content == snapshot(
        "会话不在计划模式(当前为 accept_edits 模式),因此没有需要批准的计划。请先用 enter_plan_mode 探索并设计计划,再用 exit_plan_mode 请用户批准;或者直接继续任务。"
    )
    r = await enter(rt, reason="涉及多个模块")
    assert r.content == snapshot(
        "计划模式已开启(会话之前处于 accept_edits 模式)。现在只有只读工具可以运行:任何修改文件或执行命令的调用都会被拒绝。请探索代码并设计分步计划;可以用 write_file 把计划保存在 .handrail/plans/ 下,这是唯一允许写入的位置。计划完成后,用它调用 exit_plan_mode:用户会审阅,批准后会话回到 accept_edits 模式。给出的原因:涉及多个模块"
    )
    r = await rt.call("enter_plan_mode", {})
    assert r.content == snapshot(
        "会话已经处于计划模式。请继续用只读工具探索,然后用你的计划调用 exit_plan_mode,请用户批准。"
    )
    r = await exit_plan(rt, " ")
    assert r.content == snapshot("计划是空的。请写出计划本身:步骤、要修改的文件以及如何检查结果。")
    r = await rt.resume(await ask_exit(rt), Approval.allow_once())
    assert r.content == snapshot("""\
用户批准了计划。计划模式已结束:会话回到 accept_edits 模式,现在可以进行修改。请执行已批准的计划:

1. Add `greet()` to app.py.
2. Test it.\
""")
