"""todo_write end to end through `Runtime`: validation, session state, rendering, messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, PermissionMode, Registry, Runtime, ToolResult
from handrail.builtin import TodoWrite


@pytest.fixture
def rt(tmp_path: Path) -> Runtime:
    return Runtime(Registry([TodoWrite()]), root=tmp_path)


def item(id: str, content: str, status: str = "pending") -> dict[str, str]:
    return {"id": id, "content": content, "status": status}


async def write(rt: Runtime, *todos: dict[str, Any]) -> ToolResult:
    return await rt.call("todo_write", {"todos": list(todos)})


FOUR = (
    item("1", "Read the failing test", "completed"),
    item("2", "Fix the parser", "in_progress"),
    item("3", "Add a regression test"),
    item("4", "Update the changelog", "cancelled"),
)


def test_description_flags_and_schema() -> None:
    t = TodoWrite()
    assert t.name == "todo_write"
    assert t.is_read_only(None)
    assert not t.is_concurrency_safe(None)
    assert not t.deferred
    assert t.description == snapshot(
        "Keep a task list for the current work: plan multi-step tasks, show progress, and do not lose track of what is left. Each call replaces the whole list. Mark an item in_progress before you start it (at most one at a time) and completed as soon as it is done and checked, not in batches later. Use cancelled for items no longer needed. Skip the list for a task that takes only one or two simple steps."
    )
    assert t.parameters == snapshot(
        {
            "$defs": {
                "TodoItem": {
                    "additionalProperties": False,
                    "description": "One task of the list.",
                    "properties": {
                        "id": {
                            "description": 'A short, stable id such as "1" or "tests"; keep it when the status changes.',
                            "maxLength": 64,
                            "minLength": 1,
                            "type": "string",
                        },
                        "content": {
                            "description": "The task, as a short imperative sentence.",
                            "maxLength": 500,
                            "minLength": 1,
                            "type": "string",
                        },
                        "status": {
                            "description": "pending (not started), in_progress (being worked on now; at most one item), completed (done and checked), or cancelled (no longer needed).",
                            "enum": ["pending", "in_progress", "completed", "cancelled"],
                            "type": "string",
                        },
                    },
                    "required": ["id", "content", "status"],
                    "type": "object",
                }
            },
            "additionalProperties": False,
            "properties": {
                "todos": {
                    "description": "The complete updated list, in order. It replaces the previous list, so include every item, finished ones too.",
                    "items": {"$ref": "#/$defs/TodoItem"},
                    "maxItems": 100,
                    "type": "array",
                }
            },
            "required": ["todos"],
            "type": "object",
        }
    )


async def test_the_list_is_kept_in_the_session_and_rendered(rt: Runtime) -> None:
    r = await write(rt, *FOUR)
    assert r.ok, r.content
    assert r.content == snapshot("""\
Todo list updated (4 items: 1 completed, 1 in progress, 1 pending, 1 cancelled):
[x] 1. Read the failing test
[>] 2. Fix the parser
[ ] 3. Add a regression test
[-] 4. Update the changelog\
""")
    assert r.summary == "Todos: 1/4 completed"
    assert rt.session.data["todo_write"] == [dict(t) for t in FOUR]
    assert r.metadata["counts"] == {
        "total": 4,
        "done": 1,
        "active": 1,
        "todo": 1,
        "cancelled": 1,
    }


async def test_each_call_replaces_the_whole_list(rt: Runtime) -> None:
    await write(rt, *FOUR)
    r = await write(rt, item("2", "Fix the parser", "completed"), item("5", "Release"))
    assert r.ok
    assert r.content == snapshot("""\
Todo list updated (2 items: 1 completed, 0 in progress, 1 pending):
[x] 2. Fix the parser
[ ] 5. Release\
""")
    assert [t["id"] for t in rt.session.data["todo_write"]] == ["2", "5"]


async def test_one_item_is_counted_in_the_singular(rt: Runtime) -> None:
    r = await write(rt, item("1", "Release"))
    assert r.content.splitlines()[0] == (
        "Todo list updated (1 item: 0 completed, 0 in progress, 1 pending):"
    )


async def test_an_empty_list_clears_it(rt: Runtime) -> None:
    await write(rt, *FOUR)
    r = await write(rt)
    assert r.ok
    assert r.content == snapshot("Todo list cleared (no items).")
    assert rt.session.data["todo_write"] == []


async def test_two_in_progress_are_refused_and_the_list_is_unchanged(rt: Runtime) -> None:
    await write(rt, *FOUR)
    r = await write(rt, item("1", "A", "in_progress"), item("2", "B", "in_progress"))
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        'At most one todo may be in_progress, but "1", "2" are. The list was not changed; keep the one you are working on now as in_progress, set the others to pending (or completed), and send the whole list again.'
    )
    assert rt.session.data["todo_write"] == [dict(t) for t in FOUR]


async def test_duplicate_ids_are_refused_and_the_list_is_unchanged(rt: Runtime) -> None:
    await write(rt, *FOUR)
    r = await write(rt, item("1", "A"), item("1", "B"), item(" 2", "C"), item("2", "D"))
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        'Each todo needs its own id, but "1", "2" is used more than once. The list was not changed; send the whole list again with unique ids.'
    )
    assert rt.session.data["todo_write"] == [dict(t) for t in FOUR]


async def test_blank_text_is_refused(rt: Runtime) -> None:
    r = await write(rt, item("1", "A"), item("2", "   "))
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "Item 2 of the list has a blank content. The list was not changed; give every item an id and a content, and send the whole list again."
    )
    r = await write(rt, item(" ", "A"))
    assert r.error is ErrorCode.INVALID_ARGS
    assert "Item 1 of the list has a blank id" in r.content
    assert "todo_write" not in rt.session.data


async def test_schema_errors_name_the_field(rt: Runtime) -> None:
    r = await write(rt, item("1", "A", "done"))
    assert r.error is ErrorCode.INVALID_ARGS
    assert [i.path for i in r.issues] == ["/todos/0/status"]
    r = await rt.call("todo_write", {"todos": [{"id": 1, "content": "A", "status": "pending"}]})
    assert [i.path for i in r.issues] == ["/todos/0/id"]
    r = await write(rt, *(item(str(i), "x") for i in range(101)))
    assert [i.path for i in r.issues] == ["/todos"]


async def test_text_is_kept_on_one_line(rt: Runtime) -> None:
    r = await write(rt, item("a", "Fix\nthe   parser", "in_progress"))
    assert r.content.splitlines()[-1] == "[>] a. Fix the parser"


async def test_runs_in_plan_mode(tmp_path: Path) -> None:
    rt = Runtime(Registry([TodoWrite()]), root=tmp_path, mode=PermissionMode.PLAN)
    assert [t.name for t in rt.tools()] == ["todo_write"]
    r = await write(rt, item("1", "Plan"))
    assert r.ok


async def test_messages_in_chinese(tmp_path: Path) -> None:
    rt = Runtime(Registry([TodoWrite()]), root=tmp_path, locale="zh")
    r = await write(rt, *FOUR)
    assert r.content == snapshot("""\
待办列表已更新(共 4 项:1 项已完成,1 项进行中,1 项待办,1 项已取消):
[x] 1. Read the failing test
[>] 2. Fix the parser
[ ] 3. Add a regression test
[-] 4. Update the changelog\
""")
    assert r.summary == snapshot("待办:1/4 已完成")
    r = await write(rt, item("1", "A", "in_progress"), item("2", "B", "in_progress"))
    assert r.content == snapshot(
        '最多只能有一个待办事项处于 in_progress,但 "1", "2" 都是。列表没有改变;请只把当前正在做的那个保留为 in_progress,其余改为 pending(或 completed),然后重新发送完整列表。'
    )
    r = await write(rt, item("1", "A"), item("1", "B"))
    assert r.content == snapshot(
        '每个待办事项都需要唯一的 id,但 "1" 被使用了不止一次。列表没有改变;请用唯一的 id 重新发送完整列表。'
    )
    r = await write(rt, item("1", " "))
    assert r.content == snapshot(
        "列表中第 1 项的 content 是空白的。列表没有改变;请为每一项填写 id 和 content,然后重新发送完整列表。"
    )
    r = await write(rt)
    assert r.content == snapshot("待办列表已清空(没有事项)。")
