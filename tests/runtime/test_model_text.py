"""Every sentence the runtime itself shows the model, pinned as snapshots.

Prompt surface is product surface: a change here must show up in review as a diff.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path

from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    Approval,
    PermissionRequest,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    WritePath,
    tool,
)


@tool(read_only=True, timeout=0.05)
async def hang() -> str:
    """Never finishes."""
    await asyncio.sleep(30)
    return "late"


@tool(read_only=True)
def crash() -> str:
    """Raises."""
    raise KeyError("missing_key")


@tool
def save(text: str) -> str:
    """Save a note."""
    return "saved"


@tool(read_only=True, deferred=True)
def github_issues(repo: str, state: str = "open") -> str:
    """List the issues of a GitHub repository.

    Args:
        repo: owner/name.
        state: open or closed.
    """
    return f"{repo}: no {state} issues"


class Writer(Tool):
    name = "write_file"
    description = "Write a file."
    kind = ToolKind.EDIT

    class Args(BaseModel):
        path: str

    args_model = Args

    def permission_requests(self, args: Args, ctx: ToolContext) -> Sequence[PermissionRequest]:
        return [WritePath(path=args.path)]

    def run(self, args: Args, ctx: ToolContext) -> str:
        return "written"


def rt(tmp_path: Path, *tools: Tool, **kw: object) -> Runtime:
    return Runtime(Registry(tools), root=tmp_path, **kw)  # type: ignore[arg-type]


async def test_timeout_text(tmp_path: Path) -> None:
    r = await rt(tmp_path, hang).call("hang")
    assert r.content == snapshot(
        "`hang` did not finish within 0.05 seconds and was stopped. Try a smaller task, or narrower arguments."
    )


async def test_execution_error_text(tmp_path: Path) -> None:
    r = await rt(tmp_path, crash).call("crash")
    assert r.content == snapshot("""\
KeyError: 'missing_key'
The tool failed; fix the cause or try a different approach.\
""")


async def test_interrupted_texts(tmp_path: Path) -> None:
    batch = await rt(tmp_path, save).call_many(
        [
            ToolCall(id="a", name="save", arguments={"text": "x"}),
            ToolCall(id="b", name="save", arguments={"text": "y"}),
        ]
    )
    assert [r.content for r in batch] == snapshot(
        [
            "Not run yet: `save` needs the user's approval (`save` can change things). Wait for the user's decision.",
            "Not run yet: waiting for the approval of call `a`.",
        ]
    )


async def test_denied_texts(tmp_path: Path) -> None:
    r = await rt(tmp_path, save, deny=["save"]).call("save", {"text": "x"})
    assert r.content == snapshot(
        "Permission denied: the rule `save` denies this call. Do not retry this call as is; choose another approach or ask the user."
    )
    r = await rt(tmp_path, save, mode="plan").call("save", {"text": "x"})
    assert r.content == snapshot(
        "Permission denied: `save` changes things and the session is in plan mode, where only read-only calls run; finish the plan and exit plan mode first. Do not retry this call as is; choose another approach or ask the user."
    )


async def test_user_denial_and_edit_notes(tmp_path: Path) -> None:
    runtime = rt(tmp_path, save)
    r = await runtime.call("save", {"text": "x"})
    denied = await runtime.resume(r, Approval.deny())
    assert denied.content == snapshot(
        "Permission denied: The user declined this call. Do not retry this call as is; choose another approach or ask the user."
    )
    r = await runtime.call("save", {"text": "x"})
    edited = await runtime.resume(r, Approval.edit({"text": "y"}))
    assert edited.content == snapshot("""\
saved

Note: the user edited this call's arguments before approving it; the result below is for the edited call, do not repeat the original call.\
""")


async def test_outside_roots_text(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    runtime = Runtime(Registry([Writer()]), root=tmp_path / "ws", mode="accept_edits")
    r = await runtime.call("write_file", {"path": "../elsewhere.txt"})
    assert r.content.replace(str(tmp_path), "<tmp>") == snapshot(
        "Refused: <tmp>/elsewhere.txt is outside the write roots (<tmp>/ws). Only paths inside the allowed roots can be used."
    )


async def test_deferred_tool_texts(tmp_path: Path) -> None:
    runtime = rt(tmp_path, github_issues)
    r = await runtime.call("github_issues", {"repo": "a/b"})
    assert r.content == snapshot(
        'The tool `github_issues` is not loaded yet. Call tool_search with query "select:github_issues" first, then call `github_issues` again.'
    )
    found = await runtime.call("tool_search", {"query": "github issues"})
    assert found.content == snapshot(
        'Loaded 1 tool(s); you can call them now: github_issues.\n<function>{"description": "List the issues of a GitHub repository.", "name": "github_issues", "parameters": {"additionalProperties": false, "properties": {"repo": {"description": "owner/name.", "type": "string"}, "state": {"default": "open", "description": "open or closed.", "type": "string"}}, "required": ["repo"], "type": "object"}}</function>'
    )
    none = await runtime.call("tool_search", {"query": "weather"})
    assert none.content == snapshot(
        "No deferred tool matches 'weather'. Deferred tools: github_issues. Try other keywords, or \"select:<name>\" with one of these names."
    )


def test_tool_search_definition() -> None:
    search = Registry([github_issues]).search_tool
    assert search.description == snapshot(
        'Search for additional tools that are available but not loaded yet. Returns the full definitions of the best matches and makes them callable for the rest of the session. Use keywords (e.g. "github issues"), or "select:tool_a,tool_b" to load tools by exact name.'
    )
    assert json.dumps(search.parameters, sort_keys=True) == snapshot(
        '{"additionalProperties": false, "properties": {"max_results": {"default": 5, "description": "How many tools to return at most.", "maximum": 25, "minimum": 1, "type": "integer"}, "query": {"description": "Keywords describing the capability you need, or \\"select:name1,name2\\" to activate tools by exact name.", "type": "string"}}, "required": ["query"], "type": "object"}'
    )


async def test_truncation_marker(tmp_path: Path) -> None:
    @tool(read_only=True, max_result_chars=400)
    def loud() -> str:
        """Print a lot."""
        return "\n".join(f"row {i}" for i in range(500))

    r = await rt(tmp_path, loud).call("loud", session=Session(results_dir=tmp_path / "out"))
    marker = re.search(r"\[\.\.\. .*\.\.\.\]", r.content)
    assert marker is not None
    marker = marker.group(0).replace(str(tmp_path), "<tmp>")
    assert marker == snapshot(
        "[... 3684 characters (471 lines) omitted. The full output is saved in <tmp>/out/loud-call_1.txt; read that file to see the omitted part ...]"
    )


async def test_runtime_sentences_in_chinese(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    zh = Runtime(Registry([Writer(), save, hang, github_issues]), root=tmp_path / "ws", locale="zh")
    texts = [
        (await zh.call("sav")).content,
        (await zh.call("github_issues", {"repo": "a/b"})).content,
        (await zh.call("save", {"text": "x"})).content,
        (await zh.call("hang")).content,
    ]
    accept = Runtime(Registry([Writer()]), root=tmp_path / "ws", mode="accept_edits", locale="zh")
    outside = (await accept.call("write_file", {"path": "../x.txt"})).content
    texts.append(outside.replace(str(tmp_path), "<tmp>"))
    assert texts == snapshot(
        [
            "没有名为 `sav` 的工具。你是不是想用 `save`?更多工具可以用 tool_search 查找。",
            '工具 `github_issues` 尚未加载。请先用 query "select:github_issues" 调用 tool_search,再重新调用 `github_issues`。',
            "尚未执行:`save` 需要用户批准(`save` can change things)。请等待用户的决定。",
            "`hang` 未能在 0.05 秒内完成,已被停止。请缩小任务或参数范围。",
            "已拒绝:<tmp>/x.txt is outside the write roots (<tmp>/ws)。只能使用允许的根目录内的路径。",
        ]
    )
