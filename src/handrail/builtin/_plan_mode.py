"""enter_plan_mode and exit_plan_mode: explore and plan first, change things after approval.

Plan mode is a permission mode (`PermissionMode.PLAN`), enforced by the policy, not by prose:
only read-only calls run, plus writing a plan file under `.handrail/plans/`. Entering needs no
approval (it only tightens). Leaving declares a `SwitchMode` request carrying the plan, which
the policy always turns into a question for the user (unless a rule decides): approved, the
session goes back to the mode it was in before; declined, it stays in plan mode.

Both tools change session state only (`Session.mode`, and the mode to return to in
`Session.data["plan_mode"]`), so both are read-only: plan mode keeps them listed. Both are
deferred: the model finds enter_plan_mode through tool_search, and entering activates
exit_plan_mode for the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, cast

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    PermissionMode,
    PermissionRequest,
    Session,
    SwitchMode,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ._displays import enter_plan_display, exit_plan_display
from ._i18n import text

__all__ = ["EnterPlanMode", "EnterPlanModeArgs", "ExitPlanMode", "ExitPlanModeArgs"]

STATE_KEY = "plan_mode"
"""`Session.data` key: `{"previous_mode": "<mode>", "reason": "..."}` while in plan mode."""
PLANS_DIR = ".handrail/plans/"

CATALOG = {
    "en": {
        "already": (
            "The session is already in plan mode. Keep exploring with read-only tools, then "
            "call exit_plan_mode with your plan to ask the user for approval."
        ),
        "not_in_plan": (
            "The session is not in plan mode (it is in {mode} mode), so there is no plan to "
            "approve. Use enter_plan_mode first to explore and design a plan, then "
            "exit_plan_mode to get it approved; or just carry on with the task."
        ),
        "blank_plan": (
            "The plan is empty. Write the plan itself: the steps, the files to change and how "
            "to check the result."
        ),
        "entered": (
            "Plan mode is on (the session was in {previous} mode). Only read-only tools run "
            "now: anything that changes files or runs commands is denied. Explore the code and "
            "design a step-by-step plan; you may save it with write_file under {plans}, the one "
            "place where writing is allowed. When the plan is ready, call exit_plan_mode with "
            "it: the user reviews it, and on approval the session returns to {previous} mode."
        ),
        "entered_reason": " Reason given: {reason}",
        "approved": (
            "The user approved the plan. Plan mode is over: the session is back in {mode} mode, "
            "so you can make changes now. Carry out the approved plan:\n\n{plan}"
        ),
        "summary_entered": "Entered plan mode",
        "summary_approved": "Plan approved; back to {mode} mode",
    },
    "zh": {
        "already": (
            "会话已经处于计划模式。请继续用只读工具探索,然后用你的计划调用 exit_plan_mode,"
            "请用户批准。"
        ),
        "not_in_plan": (
            "会话不在计划模式(当前为 {mode} 模式),因此没有需要批准的计划。请先用 "
            "enter_plan_mode 探索并设计计划,再用 exit_plan_mode 请用户批准;或者直接继续任务。"
        ),
        "blank_plan": "计划是空的。请写出计划本身:步骤、要修改的文件以及如何检查结果。",
        "entered": (
            "计划模式已开启(会话之前处于 {previous} 模式)。现在只有只读工具可以运行:"
            "任何修改文件或执行命令的调用都会被拒绝。请探索代码并设计分步计划;可以用 "
            "write_file 把计划保存在 {plans} 下,这是唯一允许写入的位置。计划完成后,"
            "用它调用 exit_plan_mode:用户会审阅,批准后会话回到 {previous} 模式。"
        ),
        "entered_reason": "给出的原因:{reason}",
        "approved": (
            "用户批准了计划。计划模式已结束:会话回到 {mode} 模式,现在可以进行修改。"
            "请执行已批准的计划:\n\n{plan}"
        ),
        "summary_entered": "已进入计划模式",
        "summary_approved": "计划已批准;回到 {mode} 模式",
    },
}


def previous_mode(session: Session) -> PermissionMode:
    """The mode exit_plan_mode returns to: the one before enter_plan_mode, else `default`.

    A session the host started in plan mode has no recorded mode, and `default` is the
    cautious choice.
    """
    state: Any = session.data.get(STATE_KEY)
    if isinstance(state, dict):
        value = cast(dict[str, Any], state).get("previous_mode")
        try:
            mode = PermissionMode(value)
        except ValueError:
            mode = PermissionMode.PLAN
        if mode is not PermissionMode.PLAN:
            return mode
    return PermissionMode.DEFAULT


class EnterPlanModeArgs(BaseModel):
    """Arguments of enter_plan_mode."""

    reason: str | None = Field(
        default=None,
        max_length=2000,
        description="Why planning first helps here, in one sentence (shown to the user).",
    )


class EnterPlanMode(Tool):
    """The built-in enter_plan_mode tool."""

    name = "enter_plan_mode"
    description = (
        "Switch the session to plan mode before a complex or risky change: only read-only "
        "tools run there, so you can explore the code and design a plan without changing "
        "anything. Use it when the task needs several steps, touches many files, or the right "
        "approach is unclear; skip it for small, obvious changes. Finish with exit_plan_mode, "
        "which asks the user to approve the plan."
    )
    kind = ToolKind.OTHER
    read_only = True  # changes session state only, never files
    concurrency_safe = False
    destructive = False
    deferred = True
    args_model: ClassVar[type[BaseModel] | None] = EnterPlanModeArgs

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`enter_plan_display`)."""
        return enter_plan_display(view, name=self.name)

    def validate_input(self, args: EnterPlanModeArgs, ctx: ToolContext) -> None:
        """Refuse to enter plan mode twice."""
        if ctx.session.mode is PermissionMode.PLAN:
            raise ToolFailure(text(ctx.locale, CATALOG, "already"), code=ErrorCode.INVALID_ARGS)

    def run(self, args: EnterPlanModeArgs, ctx: ToolContext) -> ToolResult:
        """Switch to plan mode, remembering the mode to return to."""
        loc = ctx.locale
        previous = ctx.session.mode
        reason = (args.reason or "").strip()

        def enter(session: Session) -> None:
            if session.mode is PermissionMode.PLAN:
                return
            session.data[STATE_KEY] = {"previous_mode": session.mode.value, "reason": reason}
            session.mode = PermissionMode.PLAN
            # The way out must be callable without another tool_search round trip.
            if ExitPlanMode.name not in session.activated:
                session.activated.append(ExitPlanMode.name)

        ctx.update_state(enter)
        content = text(loc, CATALOG, "entered", previous=previous.value, plans=PLANS_DIR)
        if reason:
            content += text(loc, CATALOG, "entered_reason", reason=reason)
        return ToolResult.success(
            content,
            summary=text(loc, CATALOG, "summary_entered"),
            metadata={"previous_mode": previous.value, "reason": reason},
        )


class ExitPlanModeArgs(BaseModel):
    """Arguments of exit_plan_mode."""

    plan: str = Field(
        min_length=1,
        description=(
            "The complete plan for the user to approve, in Markdown: the steps in order, the "
            "files to change, and how to check the result. If you saved it to a plan file, "
            "send the same text."
        ),
    )


class ExitPlanMode(Tool):
    """The built-in exit_plan_mode tool."""

    name = "exit_plan_mode"
    description = (
        "Present your plan to the user and ask to leave plan mode. Call it only in plan mode, "
        "once the plan is complete. If the user approves, the session returns to the mode it "
        "was in before plan mode and you carry out the plan. If the user declines, you stay in "
        "plan mode: revise the plan using their feedback (ask if it is unclear) and call "
        "exit_plan_mode again; do not start the changes."
    )
    kind = ToolKind.OTHER
    read_only = True  # changes session state only; it must stay listed in plan mode
    concurrency_safe = False
    destructive = False
    deferred = True
    args_model: ClassVar[type[BaseModel] | None] = ExitPlanModeArgs

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`exit_plan_display`)."""
        return exit_plan_display(view, name=self.name)

    def validate_input(self, args: ExitPlanModeArgs, ctx: ToolContext) -> None:
        """Refuse outside plan mode, and refuse a blank plan."""
        self._check_in_plan(ctx)
        if not args.plan.strip():
            raise ToolFailure(text(ctx.locale, CATALOG, "blank_plan"), code=ErrorCode.INVALID_ARGS)

    def permission_requests(
        self, args: ExitPlanModeArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """A mode switch carrying the plan: the policy asks the user, who sees the plan."""
        return [SwitchMode(mode=previous_mode(ctx.session).value, plan=args.plan)]

    def run(self, args: ExitPlanModeArgs, ctx: ToolContext) -> ToolResult:
        """Approved: return to the previous mode (a declined call never gets here)."""
        self._check_in_plan(ctx)  # the host may have changed the mode while the user decided
        loc = ctx.locale
        target = previous_mode(ctx.session)

        def leave(session: Session) -> None:
            if session.mode is PermissionMode.PLAN:
                session.mode = target
            session.data.pop(STATE_KEY, None)

        ctx.update_state(leave)
        return ToolResult.success(
            text(loc, CATALOG, "approved", mode=target.value, plan=args.plan.strip()),
            summary=text(loc, CATALOG, "summary_approved", mode=target.value),
            metadata={"mode": target.value, "plan": args.plan},
        )

    @staticmethod
    def _check_in_plan(ctx: ToolContext) -> None:
        mode = ctx.session.mode
        if mode is not PermissionMode.PLAN:
            raise ToolFailure(
                text(ctx.locale, CATALOG, "not_in_plan", mode=mode.value),
                code=ErrorCode.INVALID_ARGS,
            )
