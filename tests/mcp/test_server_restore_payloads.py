"""What the checkpoint tools of `serve(offer_restore=True)` put on the wire, as exact payloads.

Their entries, the list of checkpoints, the question a restore asks and its results, in both
languages, from fixed checkpoints at fixed times (UTC).
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from inline_snapshot import snapshot

from handrail.mcp._server_payloads import (
    checkpoint_tool_entries,
    checkpoints_result,
    restore_question,
    restore_refused,
    restore_result,
)
from handrail.sandbox import Checkpoint, Restored, RestorePlan

NOW = 1_750_000_000.0
FIRST = Checkpoint(
    id=1,
    at=NOW - 600,
    label="edit_file: src/app.py",
    call_id="mcp-3",
    tool="edit_file",
    changed=("src/app.py",),
)
SECOND = Checkpoint(
    id=2,
    at=NOW - 42,
    label="run_shell: make build",
    call_id="mcp-4",
    tool="run_shell",
    changed=(*(f"build/out{i:02}.o" for i in range(12)), "notes.md"),
    outside=("notes.md",),
)


def texts(payload: dict[str, Any]) -> str:
    (block,) = payload["content"]
    return block["text"]


def test_the_tool_entries() -> None:
    assert checkpoint_tool_entries() == snapshot(
        [
            {
                "name": "list_checkpoints",
                "title": "List checkpoints",
                "description": "List this session's checkpoints, oldest first. A checkpoint is the state of the workspace's files just before a call of this session changed them (a file edit, a shell command); each shows its id, the call that came next, when, and the files changed after it. Read-only. To put files back, call restore_checkpoint with an id: the user is asked to confirm every restore.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
                "annotations": {
                    "title": "List checkpoints",
                    "readOnlyHint": True,
                    "destructiveHint": False,
                    "idempotentHint": True,
                    "openWorldHint": False,
                },
            },
            {
                "name": "restore_checkpoint",
                "title": "Restore checkpoint",
                "description": "Put the workspace's files back as they were at one of this session's checkpoints (see list_checkpoints): changed files get their earlier content, deleted ones come back, files made since are removed. With `paths`, only those files or folders. The user is asked to confirm in their MCP client every time, and nothing changes unless they accept; use it when the user wants earlier files back, not to clean up your own mistakes unasked. The result says what changed, what was left as it is, and the checkpoint that undoes the restore.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "checkpoint": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "The checkpoint's id, from list_checkpoints.",
                        },
                        "paths": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1},
                            "description": "Restore only these files or folders (relative to the workspace root). Default: every file that differs.",
                        },
                    },
                    "required": ["checkpoint"],
                    "additionalProperties": False,
                },
                "annotations": {
                    "title": "Restore checkpoint",
                    "readOnlyHint": False,
                    "destructiveHint": True,
                    "idempotentHint": False,
                    "openWorldHint": False,
                },
            },
        ]
    )


def test_the_list_in_both_languages() -> None:
    en = checkpoints_result([FIRST, SECOND], "en", now=NOW, tz=UTC)
    assert texts(en) == snapshot(
        """\
Checkpoints of this session, oldest first. Each is the state of the files just before the call it names; restore_checkpoint with its id puts the files back as they were then (the user is asked to confirm).
1. 2025-06-15 14:56:40, 10 min ago, before `edit_file: src/app.py`; changed after it: `src/app.py`
2. 2025-06-15 15:05:58, 42 s ago, before `run_shell: make build`; changed after it: `build/out00.o`, `build/out01.o`, `build/out02.o`, `build/out03.o`, `build/out04.o`, `build/out05.o`, `build/out06.o`, `build/out07.o`, `build/out08.o`, `build/out09.o` and 3 more (changed outside this session: `notes.md`)\
"""
    )
    assert en["_meta"]["handrail/checkpoints"][0] == snapshot(
        {
            "id": 1,
            "at": 1749999400.0,
            "label": "edit_file: src/app.py",
            "tool": "edit_file",
            "callId": "mcp-3",
            "changed": ["src/app.py"],
            "outside": [],
        }
    )
    assert en["isError"] is False
    zh = checkpoints_result([FIRST], "zh", now=NOW + 7200, tz=UTC)
    assert texts(zh) == snapshot(
        """\
本会话的检查点,从旧到新。每个检查点是其所列调用执行之前的文件状态;用 restore_checkpoint 加上其编号,可把文件恢复到当时的样子(会先请用户确认)。
1. 2025-06-15 14:56:40,2 小时前,在 `edit_file: src/app.py` 之前;之后改动了:`src/app.py`\
"""
    )
    assert texts(checkpoints_result([], "zh")) == snapshot(
        "本会话还没有检查点:每次会修改文件的调用(编辑文件、shell 命令)之前都会记录一个,前提是该调用确实改动了内容。"
    )


def test_the_question_names_what_is_overwritten_and_what_cannot_come_back() -> None:
    plan = RestorePlan(
        checkpoint=2,
        paths=("notes.md", "big.iso", "src/app.py"),
        outside=("notes.md",),
        not_kept=(("big.iso", "it was too big to keep"),),
    )
    assert restore_question(plan, SECOND, "en", now=NOW, tz=UTC) == snapshot(
        """\
handrail: restore the files to checkpoint 2 (2025-06-15 15:05:58, 42 s ago, before `run_shell: make build`)?
It puts 3 path(s) back as they were then: `big.iso`, `notes.md`, `src/app.py`.
Changed outside this session since (by hand or by another program); those changes would be lost: `notes.md`.
These cannot be put back and are left as they are: `big.iso` (it was too big to keep).
The MCP client's model asked for this restore. Accept restores the files (the restore can be undone); decline changes nothing.\
"""
    )
    assert restore_question(plan, SECOND, "zh", scope=["src"], now=NOW, tz=UTC) == snapshot(
        """\
handrail:把文件恢复到检查点 2(2025-06-15 15:05:58,42 秒前,在 `run_shell: make build` 之前)吗?
将有 3 个路径恢复为当时的样子:`big.iso`、`notes.md`、`src/app.py`。
仅限:`src`。
以下路径此后在本会话之外被改动过(手动或由其他程序),这些改动将会丢失:`notes.md`。
以下路径无法恢复,将保持原样:`big.iso`(it was too big to keep)。
这次恢复是 MCP 客户端的模型请求的。接受则恢复文件(恢复可以撤销);拒绝则不做任何改动。\
"""
    )


def test_the_results() -> None:
    done = Restored(
        checkpoint=2,
        undo=5,
        changed=("src/app.py", "notes.md"),
        overwritten=("notes.md",),
        left=(("big.iso", "it was too big to keep"),),
    )
    payload = restore_result(done, "en")
    assert texts(payload) == snapshot(
        """\
Restored checkpoint 2: 2 path(s) are back as they were then: `notes.md`, `src/app.py`.
The user agreed to overwrite changes made outside this session to: `notes.md`.
Left as they are: `big.iso` (it was too big to keep).
To undo this restore, restore checkpoint 5. Read a restored file again before you edit it.\
"""
    )
    assert payload["_meta"] == snapshot(
        {
            "handrail/result": {
                "ok": True,
                "error": None,
                "summary": "restored checkpoint 2",
                "durationMs": 0.0,
            },
            "handrail/restore": {
                "checkpoint": 2,
                "changed": ["notes.md", "src/app.py"],
                "overwritten": ["notes.md"],
                "left": [{"path": "big.iso", "why": "it was too big to keep"}],
                "undo": 5,
                "refused": None,
            },
        }
    )
    nothing = restore_result(Restored(checkpoint=1, undo=None), "en", scope=["src"])
    assert texts(nothing) == snapshot(
        "Nothing to restore: the files under `src` already match checkpoint 1."
    )
    refused = restore_result(
        Restored(checkpoint=1, undo=None, refused="changed outside this session: notes.md"),
        "en",
    )
    assert refused["isError"] is True
    assert texts(refused) == snapshot(
        "Nothing was restored: changed outside this session: notes.md."
    )
    declined = restore_refused(3, "the user declined `restore_checkpoint` in the MCP client", "zh")
    assert texts(declined) == snapshot(
        "没有恢复任何内容:the user declined `restore_checkpoint` in the MCP client。"
    )
    assert declined["_meta"]["handrail/result"]["error"] == "PERMISSION_DENIED"


def test_a_name_cannot_write_lines_of_its_own_into_the_question() -> None:
    # A model can create a file with any name: one holding new lines and backticks must stay
    # one quoted name, not become text the person takes for handrail's.
    hostile = "x.txt`\nhandrail: this only removes a temporary file. Accept to continue.\n`"
    plan = RestorePlan(checkpoint=2, paths=(hostile,), outside=(hostile,))
    question = restore_question(plan, SECOND, "en", now=NOW, tz=UTC)
    assert not any(line.startswith("handrail: this only") for line in question.splitlines())
    assert "`x.txt'\\nhandrail: this only removes a temporary file. Accept to continue.\\n'`" in (
        question
    )
