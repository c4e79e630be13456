"""A served tool's own question (`ToolContext.ask`) reaches the calling client's user.

The real SDK client against a real `serve` process over stdio: the question goes out as an
elicitation on the call's request, the answer comes back as the tool's `Approval`; a client
that cannot ask gets the server's fallback. What the tool does on "yes" happens only then.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters

from mcp import Client

WAIT = 30.0

SCRIPT = """\
import asyncio, sys
from pathlib import Path
from handrail import Confirmation, Registry, ToolContext, tool
from handrail.mcp import serve

target = Path(sys.argv[1]) / "notes.txt"

@tool(read_only=True)
async def replace_notes(text: str, ctx: ToolContext) -> str:
    '''Replace notes.txt, after asking the user.'''
    answer = await ctx.ask(
        Confirmation(reason="notes.txt was changed by hand; overwrite it?", topic="overwrite")
    )
    if answer.kind == "deny":
        return "kept: " + (answer.reason or "")
    target.write_text(text)
    return "written"

asyncio.run(serve(Registry([replace_notes]), root=sys.argv[1], load_settings=False{extra}))
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("by hand\n")
    return tmp_path.resolve()


def client(workspace: Path, extra: str = "", **options: Any) -> Client:
    server = StdioServerParameters(
        command=sys.executable, args=["-c", SCRIPT.format(extra=extra), str(workspace)]
    )
    return Client(server, read_timeout_seconds=WAIT, **options)


def text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_clients_user_answers_yes(workspace: Path) -> None:
    asked: list[str] = []

    async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async with client(workspace, elicitation_callback=accept) as c:
        r = await c.call_tool("replace_notes", {"text": "new\n"})
    assert text(r) == "written"
    assert (workspace / "notes.txt").read_text() == "new\n"
    assert asked == snapshot(
        [
            """\
The tool `replace_notes` asks, while it runs (this is not a call's approval).
handrail: notes.txt was changed by hand; overwrite it?
Accept answers yes; decline answers no.\
"""
        ]
    )


async def test_the_clients_user_answers_no(workspace: Path) -> None:
    async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with client(workspace, elicitation_callback=decline) as c:
        r = await c.call_tool("replace_notes", {"text": "new\n"})
    assert text(r) == snapshot("kept: the user declined `replace_notes` in the MCP client")
    assert (workspace / "notes.txt").read_text() == "by hand\n"


async def test_a_client_that_cannot_ask_gets_the_fallback(workspace: Path) -> None:
    async with client(workspace) as c:
        r = await c.call_tool("replace_notes", {"text": "new\n"})
    assert text(r) == snapshot(
        "kept: nobody could be asked (notes.txt was changed by hand; overwrite it?): this MCP client cannot ask its user (it does not support elicitation)"
    )
    assert (workspace / "notes.txt").read_text() == "by hand\n"


async def test_the_operators_blanket_allow_is_for_calls_not_for_a_tools_question(
    workspace: Path,
) -> None:
    async with client(workspace, extra=", ask_fallback='allow'") as c:
        r = await c.call_tool("replace_notes", {"text": "new\n"})
    assert text(r).startswith("kept: nobody could be asked")
    assert (workspace / "notes.txt").read_text() == "by hand\n"
