"""todo_write: the model's task list for the session, replaced whole on every call.

The list is checked before it is kept: ids are unique and at most one item is in progress; a
list that breaks a rule is refused and the previous one stays. It lives in
`Session.data["todo_write"]` (a list of `{"id", "content", "status"}` dicts, for hosts to
show), and the result is the rendered list, one compact line per item, plus the counts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    Session,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ._displays import todo_display
from ._i18n import text

__all__ = ["TodoItem", "TodoWrite", "TodoWriteArgs"]

STATE_KEY = "todo_write"
MAX_ITEMS = 100

Status = Literal["pending", "in_progress", "completed", "cancelled"]
MARKS: dict[str, str] = {"pending": " ", "in_progress": ">", "completed": "x", "cancelled": "-"}

CATALOG = {
    "en": {
        "duplicate_ids": (
            "Each todo needs its own id, but {ids} is used more than once. The list was not "
            "changed; send the whole list again with unique ids."
        ),
        "many_in_progress": (
            "At most one todo may be in_progress, but {ids} are. The list was not changed; "
            "keep the one you are working on now as in_progress, set the others to pending "
            "(or completed), and send the whole list again."
        ),
        "blank": (
            "Item {n} of the list has a blank {field}. The list was not changed; give every "
            "item an id and a content, and send the whole list again."
        ),
        "updated": "Todo list updated ({counts}):",
        "cleared": "Todo list cleared (no items).",
        "counts": "{total} items: {done} completed, {active} in progress, {todo} pending",
        "counts_one": "1 item: {done} completed, {active} in progress, {todo} pending",
        "counts_cancelled": ", {cancelled} cancelled",
        "summary": "Todos: {done}/{total} completed",
    },
    "zh": {
        "duplicate_ids": (
            "每个待办事项都需要唯一的 id,但 {ids} 被使用了不止一次。列表没有改变;"
            "请用唯一的 id 重新发送完整列表。"
        ),
        "many_in_progress": (
            "最多只能有一个待办事项处于 in_progress,但 {ids} 都是。列表没有改变;"
            "请只把当前正在做的那个保留为 in_progress,其余改为 pending(或 completed),"
            "然后重新发送完整列表。"
        ),
        "blank": (
            "列表中第 {n} 项的 {field} 是空白的。列表没有改变;请为每一项填写 id 和 content,"
            "然后重新发送完整列表。"
        ),
        "updated": "待办列表已更新({counts}):",
        "cleared": "待办列表已清空(没有事项)。",
        "counts": "共 {total} 项:{done} 项已完成,{active} 项进行中,{todo} 项待办",
        "counts_one": "共 1 项:{done} 项已完成,{active} 项进行中,{todo} 项待办",
        "counts_cancelled": ",{cancelled} 项已取消",
        "summary": "待办:{done}/{total} 已完成",
    },
}


class TodoItem(BaseModel):
    """One task of the list."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(
        min_length=1,
        max_length=64,
        description='A short, stable id such as "1" or "tests"; keep it when the status changes.',
    )
    content: str = Field(
        min_length=1,
        max_length=500,
        description="The task, as a short imperative sentence.",
    )
    status: Status = Field(
        description=(
            "pending (not started), in_progress (being worked on now; at most one item), "
            "completed (done and checked), or cancelled (no longer needed)."
        ),
    )


class TodoWriteArgs(BaseModel):
    """Arguments of todo_write."""

    todos: list[TodoItem] = Field(
        max_length=MAX_ITEMS,
        description=(
            "The complete updated list, in order. It replaces the previous list, so include "
            "every item, finished ones too."
        ),
    )


def _one_line(value: str) -> str:
    """Whitespace runs (newlines included) as one space, so each item renders on one line."""
    return " ".join(value.split())


def _quoted(ids: list[str]) -> str:
    return ", ".join(f'"{i}"' for i in ids)


def render(todos: list[dict[str, str]]) -> str:
    """One line per item: `[x] id. content` (` ` pending, `>` in progress, `-` cancelled)."""
    return "\n".join(f"[{MARKS[t['status']]}] {t['id']}. {t['content']}" for t in todos)


class TodoWrite(Tool):
    """The built-in todo_write tool."""

    name = "todo_write"
    description = (
        "Keep a task list for the current work: plan multi-step tasks, show progress, and do "
        "not lose track of what is left. Each call replaces the whole list. Mark an item "
        "in_progress before you start it (at most one at a time) and completed as soon as it "
        "is done and checked, not in batches later. Use cancelled for items no longer needed. "
        "Skip the list for a task that takes only one or two simple steps."
    )
    kind = ToolKind.THINK
    read_only = True  # session state only; no file or process is touched
    concurrency_safe = False
    destructive = False
    idempotent = True
    args_model: ClassVar[type[BaseModel] | None] = TodoWriteArgs

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`todo_display`)."""
        return todo_display(view, name=self.name)

    def validate_input(self, args: TodoWriteArgs, ctx: ToolContext) -> None:
        """No blank text, unique ids, at most one item in progress; else the list is kept."""
        loc = ctx.locale
        for n, t in enumerate(args.todos, 1):
            for field, value in (("id", t.id), ("content", t.content)):
                if not value.strip():
                    raise ToolFailure(
                        text(loc, CATALOG, "blank", n=n, field=field), code=ErrorCode.INVALID_ARGS
                    )
        seen = Counter(_one_line(t.id) for t in args.todos)
        dupes = [i for i, n in seen.items() if n > 1]
        if dupes:
            raise ToolFailure(
                text(loc, CATALOG, "duplicate_ids", ids=_quoted(dupes)), code=ErrorCode.INVALID_ARGS
            )
        active = [_one_line(t.id) for t in args.todos if t.status == "in_progress"]
        if len(active) > 1:
            raise ToolFailure(
                text(loc, CATALOG, "many_in_progress", ids=_quoted(active)),
                code=ErrorCode.INVALID_ARGS,
            )

    def run(self, args: TodoWriteArgs, ctx: ToolContext) -> ToolResult:
        """Keep the list in the session and show it."""
        loc = ctx.locale
        todos = [
            {"id": _one_line(t.id), "content": _one_line(t.content), "status": t.status}
            for t in args.todos
        ]

        def keep(session: Session) -> None:
            session.data[STATE_KEY] = todos

        ctx.update_state(keep)
        n = Counter(t["status"] for t in todos)
        counts: dict[str, Any] = {
            "total": len(todos),
            "done": n["completed"],
            "active": n["in_progress"],
            "todo": n["pending"],
            "cancelled": n["cancelled"],
        }
        if not todos:
            content = text(loc, CATALOG, "cleared")
        else:
            key = "counts_one" if counts["total"] == 1 else "counts"
            line = text(loc, CATALOG, key, **counts)
            if counts["cancelled"]:
                line += text(loc, CATALOG, "counts_cancelled", **counts)
            content = text(loc, CATALOG, "updated", counts=line) + "\n" + render(todos)
        return ToolResult.success(
            content,
            summary=text(loc, CATALOG, "summary", **counts),
            metadata={"todos": todos, "counts": counts},
        )
