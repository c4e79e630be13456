"""What the model reads about bad arguments: message catalogs, the INVALID_ARGS text, schemas."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from inline_snapshot import snapshot
from pydantic import BaseModel, Field

from handrail import ErrorCode, Registry, Runtime, Tool, ToolResult, tool


class Window(BaseModel):
    """A time window."""

    since: str = Field(description="Start date, YYYY-MM-DD.")
    until: str | None = None


@tool(read_only=True)
def find_files(
    path: str,
    pattern: Annotated[str, Field(description="Glob pattern, e.g. `*.py`.")],
    max_results: Annotated[int, Field(ge=1, le=500, description="Most files to return.")] = 100,
    order: Literal["name", "mtime"] = "name",
    window: Window | None = None,
) -> str:
    """Find files by glob pattern.

    Results are sorted by name unless `order` says otherwise.

    Args:
        path: Directory to search under.
        order: Sort order of the results.
    """
    return f"{path} {pattern}"


counter = Tool.from_json_schema(
    "counter",
    "Count things.",
    {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 0}, "label": {"type": "string"}},
        "required": ["n"],
        "additionalProperties": False,
    },
    lambda args: str(args["n"]),
    read_only=True,
)


async def call(
    arguments: str, *, locale: str | None = None, name: str = "find_files"
) -> ToolResult:
    rt = Runtime(Registry([find_files, counter]), locale=locale)
    result = await rt.call(name, arguments)
    assert result.error is ErrorCode.INVALID_ARGS
    assert not result.ok
    return result


BAD = '{"Path": "src", "pattern": 5, "max_results": "10", "order": "size"}'


async def test_invalid_args_content_lists_every_issue_then_asks_to_call_again() -> None:
    result = await call(BAD)
    assert result.content == snapshot("""\
Invalid arguments for `find_files`:
- /path: required field `path` is missing
- /pattern: expected string, received integer 5
- /max_results: expected integer, received string "10"
- /order: must be one of "name", "mtime", received string "size"
- /Path: unknown field `Path`; did you mean `path`?
Call `find_files` again with corrected arguments.\
""")
    lines = result.content.splitlines()
    assert len(lines) == 2 + len(result.issues)
    assert [line for line in lines[1:-1]] == [f"- {i.path}: {i.message}" for i in result.issues]


async def test_invalid_args_content_in_chinese() -> None:
    result = await call(BAD, locale="zh")
    assert result.content == snapshot("""\
`find_files` 的参数无效:
- /path: 缺少必填字段 `path`
- /pattern: 应为 string,实际收到 integer 5
- /max_results: 应为 integer,实际收到 string "10"
- /order: 必须是 "name", "mtime" 之一,实际收到 string "size"
- /Path: 未知字段 `Path`;你是不是想写 `path`?
请修正参数后重新调用 `find_files`。\
""")


async def test_same_issues_english_and_chinese_differ_only_in_text() -> None:
    en = await call(BAD)
    zh = await call(BAD, locale="zh")
    assert [(i.path, i.expected) for i in en.issues] == [(i.path, i.expected) for i in zh.issues]
    assert [i.message for i in en.issues] != [i.message for i in zh.issues]


async def test_chinese_messages_exact_strings() -> None:
    result = await call('{"path": "a", "pattern": "*", "patern": "x"}', locale="zh")
    assert [i.message for i in result.issues] == ["未知字段 `patern`;你是不是想写 `pattern`?"]
    missing = await call('{"pattern": "*"}', locale="zh")
    assert [i.message for i in missing.issues] == ["缺少必填字段 `path`"]


async def test_malformed_json_content_in_both_locales() -> None:
    en = await call('{"path": "a",\n "pattern": }')
    assert en.content == snapshot("""\
Invalid arguments for `find_files`:
- (arguments): arguments are not valid JSON: Expecting value (line 2, column 13)
Call `find_files` again with corrected arguments.\
""")
    zh = await call('{"path": "a",\n "pattern": }', locale="zh")
    assert zh.content == snapshot("""\
`find_files` 的参数无效:
- (参数): 参数不是合法的 JSON:Expecting value(第 2 行,第 13 列)
请修正参数后重新调用 `find_files`。\
""")


async def test_lone_surrogate_content_in_both_locales() -> None:
    en = await call('{"path": "a", "pattern": "x\\ud83d"}')
    assert en.content == snapshot("""\
Invalid arguments for `find_files`:
- /pattern: contains \\ud83d, half of a UTF-16 surrogate pair (a character cut in two); send the whole character, or both halves of the pair
Call `find_files` again with corrected arguments.\
""")
    zh = await call('{"path": "a", "pattern": "x\\ud83d"}', locale="zh")
    assert zh.content == snapshot("""\
`find_files` 的参数无效:
- /pattern: 含有 \\ud83d,这是 UTF-16 代理对的一半(被截成两半的字符);请发送完整的字符,或代理对的两半
请修正参数后重新调用 `find_files`。\
""")


async def test_non_object_content() -> None:
    result = await call("[1, 2]")
    assert result.content == snapshot("""\
Invalid arguments for `find_files`:
- (arguments): arguments must be a JSON object, received array of 2 items
Call `find_files` again with corrected arguments.\
""")


async def test_json_schema_tool_messages_use_the_same_catalog() -> None:
    en = await call('{"n": -1, "lable": "x"}', name="counter")
    assert en.content == snapshot("""\
Invalid arguments for `counter`:
- /n: must be >= 0, received integer -1
- /lable: unknown field `lable`; did you mean `label`?
Call `counter` again with corrected arguments.\
""")
    zh = await call('{"n": -1, "lable": "x"}', name="counter", locale="zh")
    by_path = {i.path: i.message for i in zh.issues}
    assert by_path == {
        "/lable": "未知字段 `lable`;你是不是想写 `label`?",
        "/n": "必须满足 >= 0,实际收到 integer -1",
    }


async def test_english_is_the_default_locale() -> None:
    result = await call('{"pattern": "*"}')
    assert result.content.startswith("Invalid arguments for `find_files`:")
    assert [i.message for i in result.issues] == ["required field `path` is missing"]


async def test_summary_counts_the_issues() -> None:
    result = await call(BAD)
    assert result.summary == "find_files: invalid arguments (5 issues)"


def test_generated_schema_of_a_typed_tool() -> None:
    schema: dict[str, Any] = find_files.parameters
    assert schema == snapshot(
        {
            "$defs": {
                "Window": {
                    "additionalProperties": False,
                    "description": "A time window.",
                    "properties": {
                        "since": {"description": "Start date, YYYY-MM-DD.", "type": "string"},
                        "until": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                    },
                    "required": ["since"],
                    "type": "object",
                }
            },
            "additionalProperties": False,
            "properties": {
                "path": {"description": "Directory to search under.", "type": "string"},
                "pattern": {"description": "Glob pattern, e.g. `*.py`.", "type": "string"},
                "max_results": {
                    "default": 100,
                    "description": "Most files to return.",
                    "maximum": 500,
                    "minimum": 1,
                    "type": "integer",
                },
                "order": {
                    "default": "name",
                    "description": "Sort order of the results.",
                    "enum": ["name", "mtime"],
                    "type": "string",
                },
                "window": {
                    "anyOf": [{"$ref": "#/$defs/Window"}, {"type": "null"}],
                    "default": None,
                },
            },
            "required": ["path", "pattern"],
            "type": "object",
        }
    )
    assert find_files.description == (
        "Find files by glob pattern.\n\nResults are sorted by name unless `order` says otherwise."
    )
