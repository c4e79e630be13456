"""What `handrail serve` puts on the wire: tool entries, call results, approval texts.

Results come from the real `Runtime`; the payloads are the exact dicts the server returns.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    ApprovalRequest,
    AudioPart,
    ImagePart,
    Interrupted,
    ProgressEvent,
    Registry,
    ResourceLinkPart,
    ResourcePart,
    Runtime,
    SwitchMode,
    TextPart,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    ToolResult,
    tool,
)
from handrail.builtin import coding_tools
from handrail.mcp._server_payloads import (
    CATALOG,
    approval_message,
    call_result,
    deferred_note,
    fallback_reason,
    progress_text,
    tool_annotations,
    tool_entry,
)


def runtime(root: Path, mode: str = "accept_edits") -> Runtime:
    return Runtime(Registry(coding_tools(project_dir=root)), root=root, mode=mode)


def stable(payload: dict[str, Any], root: Path) -> dict[str, Any]:
    """The payload with the run's duration and temporary root replaced by fixed values."""
    meta = payload["_meta"]["handrail/result"]
    meta["durationMs"] = 1.0
    text = payload["content"][0]["text"].replace(str(root), "ROOT")
    payload["content"][0]["text"] = text
    if "diff" in meta:
        meta["diff"] = meta["diff"].replace(str(root), "ROOT")
    if "denial" in meta:
        meta["denial"]["reason"] = meta["denial"]["reason"].replace(str(root), "ROOT")
    return payload


def test_annotations_of_the_builtin_tools(tmp_path: Path) -> None:
    flags = {
        t.name: {k: v for k, v in tool_annotations(t).items() if k != "title"}
        for t in runtime(tmp_path).registry.all()
    }
    assert flags == snapshot(
        {
            "edit_file": {
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": False,
                "openWorldHint": False,
            },
            "enter_plan_mode": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": True,
            },
            "exit_plan_mode": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": True,
            },
            "grep_search": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "list_files": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "read_file": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "run_shell": {
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": False,
                "openWorldHint": True,
            },
            "shell_output": {
                "readOnlyHint": False,
                "destructiveHint": False,
                "idempotentHint": False,
                "openWorldHint": True,
            },
            "todo_write": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "tool_search": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": False,
            },
            "web_fetch": {
                "readOnlyHint": True,
                "destructiveHint": False,
                "idempotentHint": True,
                "openWorldHint": True,
            },
            "write_file": {
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        }
    )


class _Args(BaseModel):
    path: str


class _Sometimes(Tool):
    """Read-only, idempotent and non-destructive for some inputs only."""

    name = "sometimes"
    description = "Depends on the input."
    kind = ToolKind.EDIT
    args_model = _Args

    @staticmethod
    def read_only(args: _Args) -> bool:
        return args.path.startswith("/tmp")

    @staticmethod
    def destructive(args: _Args) -> bool:
        return not args.path.startswith("/tmp")

    @staticmethod
    def idempotent(args: _Args) -> bool:
        return True

    def run(self, args: _Args, ctx: ToolContext) -> str:
        return args.path


def test_input_dependent_flags_report_the_safe_side() -> None:
    assert tool_annotations(_Sometimes()) == snapshot(
        {
            "title": "Sometimes",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        }
    )


def test_a_tool_may_name_its_title_and_world() -> None:
    @tool(read_only=True)
    def lookup_weather(city: str) -> str:
        """Look up the weather."""
        return city

    lookup_weather.title = "Weather"  # type: ignore[attr-defined]
    lookup_weather.open_world = True  # type: ignore[attr-defined]
    entry = tool_entry(lookup_weather)
    assert entry["title"] == "Weather"
    assert entry["annotations"]["openWorldHint"] is True
    plain = Tool.from_json_schema(
        "mcp__github__search_issues", "Search issues.", {"properties": {}}, lambda a: ""
    )
    # A raw schema with no top-level type still lists as an object schema.
    assert tool_entry(plain) == snapshot(
        {
            "name": "mcp__github__search_issues",
            "title": "Mcp github search issues",
            "description": "Search issues.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {
                "title": "Mcp github search issues",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": False,
                "openWorldHint": True,
            },
        }
    )


def test_tool_entry_carries_the_raw_schema(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    read_file = next(t for t in rt.tools() if t.name == "read_file")
    entry = tool_entry(read_file)
    assert entry["inputSchema"] is read_file.parameters
    assert entry["description"] == read_file.description
    assert list(entry) == snapshot(["name", "title", "description", "inputSchema", "annotations"])


async def test_call_results(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    rt = runtime(tmp_path)
    ok = await rt.call("read_file", {"file_path": "a.txt"})
    edited = await rt.call(
        "edit_file", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}
    )
    invalid = await rt.call("read_file", {"file_path": 3})
    refused = await rt.call("write_file", {"file_path": "/etc/x.conf", "content": "x"})
    assert stable(call_result(ok), tmp_path) == snapshot(
        {
            "content": [{"type": "text", "text": "1\talpha"}],
            "isError": False,
            "_meta": {
                "handrail/result": {
                    "ok": True,
                    "error": None,
                    "summary": "Read a.txt lines 1-1 of 1",
                    "durationMs": 1.0,
                }
            },
        }
    )
    assert stable(call_result(edited), tmp_path) == snapshot(
        {
            "content": [
                {
                    "type": "text",
                    "text": """\
Edited a.txt: 1 replacement, first change at line 1 (+1 -1).
@@ -1 +1 @@
-alpha
+beta\
""",
                }
            ],
            "isError": False,
            "_meta": {
                "handrail/result": {
                    "ok": True,
                    "error": None,
                    "summary": "edit_file a.txt: +1 -1 (line 1)",
                    "durationMs": 1.0,
                    "diff": """\
--- a/a.txt
+++ b/a.txt
@@ -1 +1 @@
-alpha
+beta
""",
                }
            },
        }
    )
    assert stable(call_result(invalid), tmp_path) == snapshot(
        {
            "content": [
                {
                    "type": "text",
                    "text": """\
Invalid arguments for `read_file`:
- /file_path: expected string, received integer 3
Call `read_file` again with corrected arguments.\
""",
                }
            ],
            "isError": True,
            "_meta": {
                "handrail/result": {
                    "ok": False,
                    "error": "INVALID_ARGS",
                    "summary": "read_file: invalid arguments (1 issue)",
                    "durationMs": 1.0,
                    "issues": [
                        {
                            "path": "/file_path",
                            "expected": "string",
                            "received": "integer 3",
                            "message": "expected string, received integer 3",
                        }
                    ],
                }
            },
        }
    )
    assert stable(call_result(refused), tmp_path) == snapshot(
        {
            "content": [
                {
                    "type": "text",
                    "text": "Refused: /etc/x.conf is outside the write roots (ROOT). Only paths inside the allowed roots can be used.",
                }
            ],
            "isError": True,
            "_meta": {
                "handrail/result": {
                    "ok": False,
                    "error": "OUTSIDE_WRITE_ROOTS",
                    "summary": "write_file: denied",
                    "durationMs": 1.0,
                    "denial": {
                        "reason": "/etc/x.conf is outside the write roots (ROOT)",
                        "source": "roots",
                        "rule": None,
                    },
                }
            },
        }
    )


async def test_approval_texts_in_both_languages(tmp_path: Path) -> None:
    rt = runtime(tmp_path)
    asked = await rt.call("run_shell", {"command": "touch new.txt"})
    assert isinstance(asked, Interrupted) and asked.approval is not None
    request = asked.approval
    assert approval_message(request, "en") == snapshot("""\
handrail: allow `run_shell` to run `touch new.txt`?
Why it asks: `run_shell` can change things.
Accept runs this call once; decline refuses it.\
""")
    assert approval_message(request, "zh") == snapshot("""\
handrail:允许 `run_shell` 运行 `touch new.txt` 吗?
需要批准的原因:`run_shell` can change things。
接受则只执行这一次调用;拒绝则不执行。\
""")
    assert fallback_reason(request, "en") == snapshot(
        "`run_shell` needs the user's approval (`run_shell` can change things), and this MCP client cannot ask its user (it does not support elicitation); the server's operator can allow such calls with the allow rule `run_shell(touch:*)` (handrail serve --allow)"
    )
    assert fallback_reason(request, "zh") == snapshot(
        "`run_shell` 需要用户批准(`run_shell` can change things),但这个 MCP 客户端无法询问用户(它不支持 elicitation);服务器的管理者可以用允许规则放行这类调用,例如 `run_shell(touch:*)`(handrail serve --allow)"
    )


def test_approval_message_for_a_mode_switch_and_for_bare_arguments() -> None:
    switch = ApprovalRequest(
        call=ToolCall(id="1", name="exit_plan_mode", arguments={"plan": "1. Do it."}),
        tool_name="exit_plan_mode",
        reason="switching to default mode needs the user's approval",
        requests=(SwitchMode(mode="default", plan="1. Do it."),),
    )
    assert approval_message(switch, "en") == snapshot("""\
handrail: allow `exit_plan_mode` to switch to default mode?
Why it asks: switching to default mode needs the user's approval.
Accept runs this call once; decline refuses it.

The plan:
1. Do it.\
""")
    bare = ApprovalRequest(
        call=ToolCall(id="2", name="save_note", arguments={"text": "x" * 600}),
        tool_name="save_note",
        reason="`save_note` can change things",
    )
    message = approval_message(bare, "en")
    assert message.startswith('handrail: allow `save_note` to run with the arguments {"text": "xxx')
    assert len(message) < 700


def test_progress_text() -> None:
    def event(message: str, **data: Any) -> ProgressEvent:
        return ProgressEvent(call_id="c", tool_name="run_shell", message=message, data=data)

    assert progress_text(event("output", lines=["step1", "step2  "])) == "step2"
    assert progress_text(event("indexing")) == "indexing"
    assert progress_text(event("output", lines=[])) == "output"
    assert len(progress_text(event("output", lines=["y" * 500]))) == 200


def test_catalogs_match() -> None:
    def fields(template: str) -> set[str]:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name}

    assert CATALOG["en"].keys() == CATALOG["zh"].keys()
    for key, template in CATALOG["en"].items():
        assert fields(template) == fields(CATALOG["zh"][key]), key
        assert not re.search(r"[\u4e00-\u9fff]", template), key


def test_a_result_with_parts_and_structured_content_on_the_wire() -> None:
    result = ToolResult.success(
        parts=(
            TextPart(text="caption", meta={"k": "v"}),
            ImagePart(data="iVBO", mime_type="image/png", annotations={"audience": ["user"]}),
            AudioPart(data="UklG", mime_type="audio/wav"),
            ResourcePart(uri="file:///a.md", mime_type="text/markdown", text="# a"),
            ResourcePart(uri="file:///b.bin", blob="AAAA"),
            ResourceLinkPart(uri="file:///c.csv", name="c.csv", size=10),
        ),
        structured={"n": 1},
    )
    payload = call_result(result)
    payload["_meta"]["handrail/result"]["durationMs"] = 1.0
    assert payload == snapshot(
        {
            "content": [
                {"type": "text", "text": "caption", "_meta": {"k": "v"}},
                {
                    "type": "image",
                    "data": "iVBO",
                    "mimeType": "image/png",
                    "annotations": {"audience": ["user"]},
                },
                {"type": "audio", "data": "UklG", "mimeType": "audio/wav"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.md", "mimeType": "text/markdown", "text": "# a"},
                },
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA"}},
                {"type": "resource_link", "uri": "file:///c.csv", "name": "c.csv", "size": 10},
            ],
            "isError": False,
            "_meta": {
                "handrail/result": {"ok": True, "error": None, "summary": "", "durationMs": 1.0}
            },
            "structuredContent": {"n": 1},
        }
    )


def test_an_output_schema_is_listed_and_deferred_tools_are_named() -> None:
    @tool(
        read_only=True, output_schema={"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    def count(text: str) -> dict[str, int]:
        """Count."""
        return {"n": len(text)}

    assert tool_entry(count)["outputSchema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
    }
    assert deferred_note(["enter_plan_mode", "web_fetch"], "en") == snapshot(
        "More tools exist but are not listed yet. To use one, call tool_search with query "
        '"select:<name>" (or keywords), then call it. Not yet listed: enter_plan_mode, web_fetch.'
    )
    assert deferred_note(["a"], "zh") == snapshot(
        '还有一些工具尚未列出。要使用其中一个，请先用查询 "select:<名称>"（或关键词）调用 tool_search，然后再调用它。尚未列出的工具：a。'
    )
