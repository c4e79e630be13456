"""The MCP client through the real Runtime: a real SDK server over stdio and loopback HTTP.

Every test starts its own server process from `.handrail/mcp.json` in a temporary project, and
closes it (by closing the `McpTools`) before it ends.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    ErrorCode,
    Interrupted,
    ProgressEvent,
    Registry,
    Runtime,
    ToolCall,
    tool,
)
from handrail.builtin import coding_tools
from handrail.mcp import DEFAULT_TOKEN_BUDGET, McpTool, McpTools, load_mcp_tools
from handrail.permissions import trust_folder

SERVER = Path(__file__).parent / "servers" / "tools_server.py"
WAIT = 30.0  # seconds: an upper bound for anything a test waits on, never a speed threshold


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The user's own ~/.config/handrail (MCP servers, skills) must not leak into these tests.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def stdio(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SERVER)], **extra}


def write_config(root: Path, servers: dict[str, Any]) -> None:
    """Write the project's mcp.json and trust the folder (an untrusted one starts no server)."""
    (root / ".handrail").mkdir(exist_ok=True)
    (root / ".handrail" / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    trust_folder(root)


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[McpTools]:
    write_config(tmp_path, {"demo": stdio(env={"HANDRAIL_TEST_MARK": "from-config"})})
    async with McpTools.from_config(tmp_path) as mcp:
        yield mcp


def runtime(root: Path, mcp: McpTools, **kw: Any) -> Runtime:
    kw.setdefault("mode", "bypass")
    return Runtime(mcp.registry(), root=root, **kw)


async def status(rt: Runtime) -> dict[str, Any]:
    r = await rt.call("mcp__demo__status", {})
    assert r.ok, r.content
    return json.loads(r.content)


async def test_tools_follow_the_builtins_with_names_schemas_and_flags(
    tmp_path: Path, demo: McpTools
) -> None:
    rt = Runtime(Registry(coding_tools(project_dir=tmp_path), imported=demo.tools), root=tmp_path)
    assert [t.name for t in rt.tools()] == snapshot(
        [
            "edit_file",
            "grep_search",
            "list_files",
            "read_file",
            "run_shell",
            "shell_output",
            "todo_write",
            "tool_search",
            "web_fetch",
            "write_file",
            "mcp__demo__add",
            "mcp__demo__crash",
            "mcp__demo__echo",
            "mcp__demo__fail",
            "mcp__demo__get_weather",
            "mcp__demo__mixed",
            "mcp__demo__refuse",
            "mcp__demo__slow",
            "mcp__demo__status",
            "mcp__demo__summarise_the_quarterly_report_for_every_regio_715931",
        ]
    )
    assert all(len(t.name) <= 64 for t in rt.tools())
    assert not demo.deferred and 0 < demo.estimated_tokens < DEFAULT_TOKEN_BUDGET
    assert demo.failures == {}
    assert demo.instructions == {"demo": "Test tools for handrail's MCP client."}

    add = rt.registry.get("mcp__demo__add")
    assert isinstance(add, McpTool)
    assert (add.description, add.parameters) == snapshot(
        (
            "Add two non-negative integers.",
            {
                "type": "object",
                "properties": {
                    "a": {"minimum": 0, "title": "A", "type": "integer"},
                    "b": {"minimum": 0, "title": "B", "type": "integer"},
                },
                "required": ["a", "b"],
                "title": "addArguments",
            },
        )
    )
    flags = {
        t.name.removeprefix("mcp__demo__"): (
            "read_only" * t.is_read_only({}),
            "concurrent" * t.is_concurrency_safe({}),
            "destructive" * t.is_destructive({}),
            "idempotent" * t.is_idempotent({}),
            "open_world" * t.open_world,
        )
        for t in demo.tools
    }
    assert flags == snapshot(
        {
            "add": ("read_only", "concurrent", "", "idempotent", ""),
            "crash": ("", "", "destructive", "", "open_world"),
            "echo": ("read_only", "concurrent", "", "idempotent", ""),
            "fail": ("read_only", "concurrent", "", "idempotent", ""),
            "get_weather": ("read_only", "concurrent", "", "idempotent", ""),
            "mixed": ("", "", "destructive", "", "open_world"),
            "refuse": ("read_only", "concurrent", "", "idempotent", ""),
            "slow": ("read_only", "concurrent", "", "idempotent", ""),
            "status": ("read_only", "concurrent", "", "idempotent", ""),
            "summarise_the_quarterly_report_for_every_regio_715931": (
                "read_only",
                "concurrent",
                "",
                "idempotent",
                "",
            ),
        }
    )
    weather = rt.registry.get("mcp__demo__get_weather")
    assert isinstance(weather, McpTool) and weather.remote_name == "get.weather"


async def test_calls_run_on_the_server_after_json_schema_validation(
    tmp_path: Path, demo: McpTools
) -> None:
    rt = runtime(tmp_path, demo)
    r = await rt.call("mcp__demo__echo", '{"text": "hi there"}')
    assert (r.ok, r.content, r.metadata["mcp_tool"]) == (True, "hi there", "echo")
    assert (await rt.call("mcp__demo__add", {"a": 2, "b": 3})).content == "5"
    # The original (unsanitised) name is the one used on the wire.
    assert (await rt.call("mcp__demo__get_weather", {"city": "Paris"})).content == "sunny in Paris"

    bad_type = await rt.call("mcp__demo__add", {"a": "x", "b": 1})
    negative = await rt.call("mcp__demo__add", {"a": -1, "b": 1})
    assert [bad_type.error, negative.error] == [ErrorCode.INVALID_ARGS, ErrorCode.INVALID_ARGS]
    assert [i.path for i in (*bad_type.issues, *negative.issues)] == ["/a", "/a"]
    assert negative.content == snapshot("""\
Invalid arguments for `mcp__demo__add`:
- /a: must be >= 0, received integer -1
Call `mcp__demo__add` again with corrected arguments.\
""")
    # The JSON Schema track refused them: the server only ever saw the valid call.
    state = await status(rt)
    assert state["calls"] == {"add": 1, "echo": 1, "get.weather": 1}
    assert (state["mark"], Path(state["cwd"])) == ("from-config", tmp_path.resolve())


async def test_server_errors_become_execution_errors(tmp_path: Path, demo: McpTools) -> None:
    rt = runtime(tmp_path, demo)
    r = await rt.call("mcp__demo__fail", {"reason": "disk full"})
    assert (r.ok, r.error, r.content) == (False, ErrorCode.EXECUTION_ERROR, "failed: disk full")
    empty = await rt.call("mcp__demo__fail", {"reason": ""})
    refused = await rt.call("mcp__demo__refuse", {})
    assert [empty.error, refused.error] == [ErrorCode.EXECUTION_ERROR] * 2
    assert [empty.content, refused.content] == snapshot(
        [
            "`mcp__demo__fail` reported an error without details.",
            "MCP server `demo` refused the call to `mcp__demo__refuse`: invoice 42 does not exist.",
        ]
    )
    zh = runtime(tmp_path, demo, locale="zh")
    zh_texts = [
        (await zh.call(n, a)).content
        for n, a in [("mcp__demo__fail", {"reason": ""}), ("mcp__demo__refuse", {})]
    ]
    assert zh_texts == snapshot(
        [
            "`mcp__demo__fail` 报告了错误，但没有给出详情。",
            "MCP 服务器 `demo` 拒绝了对 `mcp__demo__refuse` 的调用：invoice 42 does not exist。",
        ]
    )


async def test_non_text_content_is_summarised_a_line_each(tmp_path: Path, demo: McpTools) -> None:
    r = await runtime(tmp_path, demo).call("mcp__demo__mixed", {})
    assert r.content == snapshot("""\
first line
second line
[image: image/png, 32 bytes]
[resource link: notes <file:///tmp/notes.txt>]
[resource: file:///tmp/readme.md (text/markdown)]
# hello\
""")
    zh = await runtime(tmp_path, demo, locale="zh").call("mcp__demo__mixed", {})
    assert zh.content == snapshot("""\
first line
second line
[图片：image/png，32 字节]
[资源链接：notes <file:///tmp/notes.txt>]
[资源：file:///tmp/readme.md（text/markdown）]
# hello\
""")


async def test_progress_reaches_on_progress(tmp_path: Path, demo: McpTools) -> None:
    events: list[ProgressEvent] = []
    rt = runtime(tmp_path, demo, on_progress=events.append)
    r = await rt.call("mcp__demo__slow", {"steps": 3, "delay": 0.01}, call_id="p1")
    assert r.content == "done after 3 steps"
    await rt.call("mcp__demo__slow", {"steps": 2, "delay": 0.01, "quiet": True}, call_id="p2")
    assert [(e.call_id, e.message, dict(e.data)) for e in events] == snapshot(
        [
            ("p1", "step 1 of 3", {"progress": 1.0, "total": 3.0}),
            ("p1", "step 2 of 3", {"progress": 2.0, "total": 3.0}),
            ("p1", "step 3 of 3", {"progress": 3.0, "total": 3.0}),
            ("p2", "1 of 2", {"progress": 1.0, "total": 2.0}),
            ("p2", "2 of 2", {"progress": 2.0, "total": 2.0}),
        ]
    )


async def test_cancelling_a_call_cancels_it_on_the_server(tmp_path: Path, demo: McpTools) -> None:
    started = asyncio.Event()
    rt = runtime(tmp_path, demo, on_progress=lambda e: started.set())
    call = asyncio.ensure_future(
        rt.call("mcp__demo__slow", {"steps": 1000, "delay": 0.05}, call_id="long")
    )
    await asyncio.wait_for(started.wait(), WAIT)
    assert rt.cancel("long")
    r = await asyncio.wait_for(call, WAIT)
    assert (r.ok, r.error) == (False, ErrorCode.CANCELLED)
    # The server got notifications/cancelled and stopped the handler (bounded poll).
    state = await status(rt)
    for _ in range(200):
        if state["cancelled"]:
            break
        await asyncio.sleep(0.05)
        state = await status(rt)
    assert state["cancelled"] == 1


async def test_concurrent_calls_share_one_connection(tmp_path: Path, demo: McpTools) -> None:
    rt = runtime(tmp_path, demo)
    calls = [
        ToolCall(id=f"c{i}", name="mcp__demo__echo", arguments={"text": f"n{i}"}) for i in range(8)
    ]
    batch = await rt.call_many(calls)
    assert [r.content for r in batch.results] == [f"n{i}" for i in range(8)]
    first = await status(rt)
    assert first["calls"]["echo"] == 8
    assert (await status(rt))["pid"] == first["pid"]


async def test_a_crashed_server_gives_execution_error_and_restarts(
    tmp_path: Path, demo: McpTools
) -> None:
    rt = runtime(tmp_path, demo)
    before = (await status(rt))["pid"]
    r = await rt.call("mcp__demo__crash", {})
    assert (r.ok, r.error) == (False, ErrorCode.EXECUTION_ERROR)
    assert r.content == snapshot(
        "MCP server `demo` stopped: the connection closed during the call; its last error output "
        "was: about to crash on purpose; it will be restarted on the next call. Call "
        "`mcp__demo__crash` again if you still need it."
    )
    assert (await rt.call("mcp__demo__echo", {"text": "back"})).content == "back"
    after = (await status(rt))["pid"]
    assert after != before

    zh = await runtime(tmp_path, demo, locale="zh").call("mcp__demo__crash", {})
    assert zh.content == snapshot(
        "MCP 服务器 `demo` 已停止：调用过程中连接已关闭；它最后的错误输出是：about to crash on "
        "purpose；下次调用时会重新启动。如果仍然需要，请再次调用 `mcp__demo__crash`。"
    )
    assert (await status(rt))["pid"] not in (before, after)


async def test_tools_are_deferred_over_the_token_budget(tmp_path: Path) -> None:
    write_config(tmp_path, {"demo": stdio()})

    @tool(read_only=True)
    def local_note() -> str:
        """A local tool."""
        return "note"

    async with McpTools.from_config(tmp_path, token_budget=50) as mcp:
        assert mcp.deferred and mcp.estimated_tokens > 50
        rt = Runtime(Registry([local_note], imported=mcp.tools), root=tmp_path, mode="bypass")
        assert [t.name for t in rt.tools()] == ["local_note", "tool_search"]
        hidden = await rt.call("mcp__demo__echo", {"text": "x"})
        assert hidden.error == ErrorCode.TOOL_NOT_ACTIVATED

        found = await rt.call("tool_search", {"query": "select:mcp__demo__echo"})
        assert found.ok and found.content.startswith("Loaded 1 tool(s)")
        assert [t.name for t in rt.tools()] == ["local_note", "tool_search", "mcp__demo__echo"]
        assert (await rt.call("mcp__demo__echo", {"text": "x"})).content == "x"
        # Keyword search finds them by name and description too.
        by_words = await rt.call("tool_search", {"query": "weather city"})
        assert "mcp__demo__get_weather" in by_words.content


async def test_policy_rules_name_mcp_tools_and_servers(tmp_path: Path, demo: McpTools) -> None:
    default = runtime(tmp_path, demo, mode="default")
    assert (await default.call("mcp__demo__echo", {"text": "ro"})).ok  # read-only: no question
    asked = await default.call("mcp__demo__mixed", {})
    assert isinstance(asked, Interrupted) and asked.approval is not None
    assert asked.approval.suggested_rules == ("mcp__demo__mixed",)

    denied = await runtime(tmp_path, demo, deny=["mcp__demo__echo"]).call(
        "mcp__demo__echo", {"text": "no"}
    )
    assert (denied.error, denied.denial and denied.denial.rule) == (
        ErrorCode.PERMISSION_DENIED,
        "mcp__demo__echo",
    )
    server_allowed = runtime(tmp_path, demo, mode="default", allow=["mcp__demo"])
    assert (await server_allowed.call("mcp__demo__mixed", {})).ok
    server_denied = runtime(tmp_path, demo, deny=["mcp__demo"])
    assert (await server_denied.call("mcp__demo__status", {})).error == ErrorCode.PERMISSION_DENIED
    # A server rule names only its own server's tools.
    other = runtime(tmp_path, demo, deny=["mcp__dem"])
    assert (await other.call("mcp__demo__echo", {"text": "yes"})).ok


async def test_closing_with_the_session_stops_the_server(tmp_path: Path, demo: McpTools) -> None:
    rt = runtime(tmp_path, demo)
    demo.close_with(rt.session)
    pid = (await status(rt))["pid"]
    await rt.aclose()
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    # A call after closing starts the server again (closed again by the fixture).
    assert (await status(runtime(tmp_path, demo)))["pid"] != pid


async def test_a_server_that_cannot_start_is_reported_not_raised(tmp_path: Path) -> None:
    fails = "import sys; sys.stderr.write('bad token\\n'); sys.exit(2)"
    write_config(
        tmp_path,
        {
            "missing": {"command": str(tmp_path / "no-such-server")},
            "exits": {"command": sys.executable, "args": ["-c", fails]},
            "demo": stdio(),
        },
    )
    mcp = await load_mcp_tools(tmp_path)
    try:
        assert sorted(mcp.failures) == ["exits", "missing"]
        assert mcp.failures["missing"].startswith("FileNotFoundError: ")
        assert mcp.failures["exits"] == snapshot("Connection closed (stderr: bad token)")
        assert {t.server for t in mcp.tools} == {"demo"}
    finally:
        await mcp.aclose()


async def test_a_server_that_never_answers_is_stopped_after_the_startup_timeout(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "pid"
    silent = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)"
    write_config(
        tmp_path, {"silent": {"command": sys.executable, "args": ["-c", silent, str(pid_file)]}}
    )
    async with McpTools.from_config(tmp_path, startup_timeout=1.5) as mcp:
        assert mcp.failures == {
            "silent": "it did not complete the MCP handshake within 1.5 seconds"
        }
        assert mcp.tools == []
        pid = int(pid_file.read_text())
        for _ in range(200):  # the SDK's shutdown: stdin closed, then SIGTERM
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.05)
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def _start_http_server(token: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVER),
        "--http",
        "--token",
        token,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), WAIT)
    assert line.startswith(b"PORT "), line
    return proc, int(line.split()[1])


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), WAIT)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def test_an_http_server_with_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_TOKEN", "s3cret")
    proc, port = await _start_http_server("s3cret")
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        write_config(
            tmp_path,
            {
                "web": {"url": url, "headers": {"X-Test-Token": "${HANDRAIL_TEST_TOKEN}"}},
                "nokey": {"type": "http", "url": url},
            },
        )
        async with McpTools.from_config(tmp_path) as mcp:
            assert list(mcp.failures) == ["nokey"]  # the server refuses it without the header
            rt = Runtime(mcp.registry(), root=tmp_path, mode="bypass")
            assert "mcp__web__echo" in [t.name for t in rt.tools()]
            r = await rt.call("mcp__web__echo", {"text": "over http"})
            assert (r.ok, r.content) == (True, "over http")
            bad = await rt.call("mcp__web__add", {"a": 1})
            assert bad.error == ErrorCode.INVALID_ARGS

            await _stop(proc)  # the server goes away: calls fail as results, never raise
            gone = await rt.call("mcp__web__echo", {"text": "anyone?"})
            assert (gone.ok, gone.error) == (False, ErrorCode.EXECUTION_ERROR)
            # That call may have found the connection closed (stopped) or not; the next one
            # cannot start it again.
            again = await rt.call("mcp__web__echo", {"text": "anyone?"})
            assert again.error == ErrorCode.EXECUTION_ERROR
            assert again.content == snapshot(
                "MCP server `web` could not be started: ConnectError: All connection attempts failed. Its tools cannot run right now; tell the user, or try again later."
            )
            zh = Runtime(mcp.registry(), root=tmp_path, mode="bypass", locale="zh")
            assert (await zh.call("mcp__web__echo", {"text": "?"})).content == snapshot(
                "MCP 服务器 `web` 无法启动：ConnectError: All connection attempts failed。它的工具暂时无法运行；请告知用户，或稍后再试。"
            )
    finally:
        await _stop(proc)
