"""`handrail.mcp.serve` end to end: the real SDK client against a real server process.

Every scenario runs over stdio (the client spawns the server) and over streamable HTTP (one
server process on 127.0.0.1 for the module). Real bash, real files, real sandbox.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from handrail import ConfigurationError, Registry, Runtime
from handrail.builtin import coding_tools
from handrail.mcp import serve
from handrail.sandbox import sandbox_support
from mcp import Client

pytestmark = pytest.mark.skipif(
    not sandbox_support().available, reason="run_shell needs an OS sandbox on this machine"
)

SCRIPT = (
    "import asyncio, sys\n"
    "from handrail.mcp import serve\n"
    "asyncio.run(serve(root=sys.argv[1], load_settings=False{extra}))\n"
)
WAIT = 30.0
"""Seconds any single wait in these tests may take."""
TOKEN = "test-token-0123456789abcdef"
"""The HTTP server's bearer token (`serve --http` requires one)."""
HTTP = f", http=('127.0.0.1', 0), token={TOKEN!r}, ready=lambda url: print(url, flush=True)"


@contextlib.asynccontextmanager
async def http_client(url: str, **options: Any) -> AsyncIterator[Client]:
    """The SDK client on `url`, sending the bearer token."""
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), **options) as client:
            yield client


def marker() -> str:
    """A unique sleep duration: it names our processes in /proc without matching anything else."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def pids_with(text: str) -> list[int]:
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != b"Z" and "pytest" not in cmd:
            out.append(int(entry))
    return out


async def eventually(check: Callable[[], Any], seconds: float = WAIT) -> Any:
    """Poll `check` until it returns something truthy; bounded in time and in count."""
    for _ in range(int(seconds / 0.05)):
        value = check()
        if value:
            return value
        await anyio.sleep(0.05)
    raise AssertionError(f"still not true after {seconds} s")


def meta(result: types.CallToolResult) -> dict[str, Any]:
    assert result.meta is not None
    return result.meta["handrail/result"]


def text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "notes.txt").write_text("first line\nsecond line\n")
    return root.resolve()


@pytest.fixture(scope="module")
def http_url(workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One HTTP server process for the module, on a free loopback port; stopped by PID."""
    log = tmp_path_factory.mktemp("log") / "server.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT.format(extra=HTTP), str(workspace)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=WAIT)
        line = proc.stdout.readline().strip() if ready else ""
        assert line.startswith("http://127.0.0.1:"), f"server did not start: {log.read_text()}"
        yield line
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()  # pyright: ignore[reportOptionalMemberAccess]


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def connect(
    transport: str, workspace: Path, request: pytest.FixtureRequest
) -> Callable[..., contextlib.AbstractAsyncContextManager[Client]]:
    """`connect(**client_options)`: a connected SDK client (a new MCP session each time)."""
    url = request.getfixturevalue("http_url") if transport == "http" else None

    @contextlib.asynccontextmanager
    async def open_client(extra: str = "", **options: Any) -> AsyncIterator[Client]:
        if url is not None:
            async with http_client(url, read_timeout_seconds=WAIT, **options) as client:
                yield client
            return
        server = StdioServerParameters(
            command=sys.executable,
            args=["-c", SCRIPT.format(extra=extra), str(workspace)],
        )
        async with Client(server, read_timeout_seconds=WAIT, **options) as client:
            yield client

    return open_client


async def accept(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    ASKED.append(params.message)
    return types.ElicitResult(action="accept", content={})


async def decline(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    ASKED.append(params.message)
    return types.ElicitResult(action="decline")


ASKED: list[str] = []


@pytest.fixture(autouse=True)
def _clear_asked() -> None:
    ASKED.clear()


# -- listing ----------------------------------------------------------------------------------


async def test_list_tools_shows_schemas_and_annotations(connect: Any, workspace: Path) -> None:
    expected = Runtime(
        Registry(coding_tools(project_dir=workspace)), root=workspace, mode="accept_edits"
    ).tools(provider="mcp")
    async with connect() as client:
        # The SDK client opens with a 2026 discovery probe; the server answers with the session
        # era, where read-before-edit state and elicitation live.
        assert client.protocol_version == "2025-11-25"
        assert client.server_info is not None and client.server_info.name == "handrail"
        assert "run_shell:" in (client.instructions or "")
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed] == [t.name for t in expected]
    by_name = {t.name: t for t in listed}
    for tool in expected:
        assert by_name[tool.name].input_schema == tool.parameters
    flags = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        for name, t in by_name.items()
        if (a := t.annotations) is not None
    }
    assert flags["read_file"] == (True, False, True, False)
    assert flags["write_file"] == (False, True, True, False)
    # run_shell is read-only for some commands only: the safe side is reported.
    assert flags["run_shell"] == (False, True, False, True)
    assert by_name["read_file"].title == "Read file"


# -- calls ------------------------------------------------------------------------------------


async def test_read_file_and_a_validation_error(connect: Any) -> None:
    async with connect() as client:
        ok = await client.call_tool("read_file", {"file_path": "notes.txt"})
        bad = await client.call_tool("read_file", {"file_path": "notes.txt", "offest": 2})
    assert ok.is_error is False
    assert text(ok) == snapshot("1\tfirst line\n2\tsecond line")
    assert meta(ok)["error"] is None
    # A validation error is a tool result the model can act on, not a JSON-RPC error.
    assert bad.is_error is True
    assert text(bad) == snapshot(
        """\
Invalid arguments for `read_file`:
- /offest: unknown field `offest`; did you mean `offset`?
Call `read_file` again with corrected arguments.\
"""
    )
    assert meta(bad)["error"] == "INVALID_ARGS"
    assert meta(bad)["issues"][0]["path"] == "/offest"


async def test_write_outside_the_root_is_refused(
    connect: Any, workspace: Path, transport: str
) -> None:
    outside = workspace.parent / f"outside-{transport}.txt"
    async with connect() as client:
        r = await client.call_tool("write_file", {"file_path": str(outside), "content": "x"})
    assert r.is_error is True
    assert meta(r)["error"] == "OUTSIDE_WRITE_ROOTS"
    assert "Refused" in text(r)
    assert not outside.exists()


async def test_edit_inside_the_root_runs_without_asking(
    connect: Any, workspace: Path, transport: str
) -> None:
    path = workspace / f"edit-{transport}.txt"
    path.write_text("alpha\n")
    async with connect() as client:
        await client.call_tool("read_file", {"file_path": path.name})
        r = await client.call_tool(
            "edit_file", {"file_path": path.name, "old_string": "alpha", "new_string": "beta"}
        )
    assert r.is_error is False, text(r)
    assert path.read_text() == "beta\n"
    assert ASKED == []


async def test_read_before_edit_state_is_per_session(
    connect: Any, workspace: Path, transport: str
) -> None:
    path = workspace / f"state-{transport}.txt"
    path.write_text("one\n")
    edit = {"file_path": path.name, "old_string": "one", "new_string": "two"}
    async with connect() as first, connect() as second:
        await first.call_tool("read_file", {"file_path": path.name})
        other = await second.call_tool("edit_file", edit)
        same = await first.call_tool("edit_file", edit)
    assert other.is_error is True
    assert meta(other)["error"] == "FILE_NOT_READ"
    assert same.is_error is False, text(same)
    assert path.read_text() == "two\n"


async def test_activating_a_deferred_tool_changes_the_list(connect: Any) -> None:
    changed: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.append(message)

    async with connect(message_handler=on_message) as client:
        before = [t.name for t in (await client.list_tools()).tools]
        r = await client.call_tool("tool_search", {"query": "select:enter_plan_mode"})
        assert r.is_error is False, text(r)
        await eventually(lambda: changed)
        after = [t.name for t in (await client.list_tools()).tools]
    assert "enter_plan_mode" not in before
    assert after == [*before, "enter_plan_mode"]


# -- cancellation and progress ----------------------------------------------------------------


async def test_cancel_stops_a_long_command(connect: Any) -> None:
    mark = marker()
    async with connect() as client:
        scope = anyio.CancelScope()
        outcome: list[types.CallToolResult] = []

        async def run() -> None:
            with scope:
                outcome.append(await client.call_tool("run_shell", {"command": f"sleep {mark}"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            pids = await eventually(lambda: pids_with(mark))
            scope.cancel()  # the SDK client sends notifications/cancelled
        assert outcome == []
        assert pids
        await eventually(lambda: not pids_with(mark))
        # The session carries on.
        after = await client.call_tool("read_file", {"file_path": "notes.txt"})
    assert after.is_error is False


async def test_progress_is_forwarded(connect: Any) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    command = "for i in 1 2 3 4; do echo step$i; sleep 0.6; done"
    async with connect() as client:
        r = await client.call_tool("run_shell", {"command": command}, progress_callback=on_progress)
        await eventually(lambda: seen)
    assert r.is_error is False, text(r)
    values = [p for p, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all(m is not None and m.startswith("step") for _, m in seen)


# -- approval ---------------------------------------------------------------------------------


async def test_elicitation_accept_runs_the_command(
    connect: Any, workspace: Path, transport: str
) -> None:
    made = workspace / f"made-{transport}.txt"
    async with connect(elicitation_callback=accept) as client:
        r = await client.call_tool("run_shell", {"command": f"touch {made.name}"})
    assert r.is_error is False, text(r)
    assert made.exists()
    (question,) = ASKED
    assert question.replace(made.name, "FILE") == snapshot(
        """\
handrail: allow `run_shell` to run `touch FILE`?
Why it asks: `run_shell` can change things.
Accept runs this call once; decline refuses it.\
"""
    )


async def test_elicitation_decline_denies(connect: Any, workspace: Path, transport: str) -> None:
    made = workspace / f"declined-{transport}.txt"
    async with connect(elicitation_callback=decline) as client:
        r = await client.call_tool("run_shell", {"command": f"touch {made.name}"})
    assert r.is_error is True
    assert meta(r)["error"] == "PERMISSION_DENIED"
    assert meta(r)["denial"]["source"] == "user"
    assert text(r) == snapshot(
        "Permission denied: the user declined `run_shell` in the MCP client. Do not retry this call as is; choose another approach or ask the user."
    )
    assert len(ASKED) == 1
    assert not made.exists()


async def test_without_elicitation_the_fallback_denies(connect: Any, workspace: Path) -> None:
    async with connect() as client:
        r = await client.call_tool("run_shell", {"command": "touch fallback.txt"})
    assert r.is_error is True
    assert meta(r)["error"] == "PERMISSION_DENIED"
    # The server's mode refused it (nobody could be asked): not labelled as the user's answer.
    assert meta(r)["denial"]["source"] == "mode"
    assert text(r) == snapshot(
        "Permission denied: `run_shell` needs the user's approval (`run_shell` can change things), and this MCP client cannot ask its user (it does not support elicitation); the server's operator can allow such calls with the allow rule `run_shell(touch:*)` (handrail serve --allow). Do not retry this call as is; choose another approach or ask the user."
    )
    assert not (workspace / "fallback.txt").exists()


async def test_cancel_while_the_user_is_asked(
    connect: Any, workspace: Path, transport: str
) -> None:
    made = workspace / f"never-{transport}.txt"

    async def hang(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        ASKED.append(params.message)
        await anyio.sleep(WAIT)  # the server withdraws this question when the call is cancelled
        return types.ElicitResult(action="accept", content={})

    async with connect(elicitation_callback=hang) as client:
        scope = anyio.CancelScope()

        async def run() -> None:
            with scope:
                await client.call_tool("run_shell", {"command": f"touch {made.name}"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await eventually(lambda: ASKED)
            scope.cancel()
        after = await client.call_tool("read_file", {"file_path": "notes.txt"})
    assert after.is_error is False
    assert not made.exists()


async def test_background_jobs_stop_when_the_session_ends(connect: Any) -> None:
    mark = marker()
    async with connect(elicitation_callback=accept) as client:
        r = await client.call_tool(
            "run_shell", {"command": f"sleep {mark}", "run_in_background": True}
        )
        assert r.is_error is False, text(r)
        await eventually(lambda: pids_with(mark))
    await eventually(lambda: not pids_with(mark))


# -- one transport only -----------------------------------------------------------------------


async def test_ask_fallback_allow(workspace: Path) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-c", SCRIPT.format(extra=", ask_fallback='allow'"), str(workspace)],
    )
    async with Client(server, read_timeout_seconds=WAIT) as client:
        r = await client.call_tool("run_shell", {"command": "touch allowed.txt"})
    assert r.is_error is False, text(r)
    assert (workspace / "allowed.txt").exists()


async def test_a_stateless_era_client_is_told_which_versions_are_served(http_url: str) -> None:
    async with http_client(http_url, mode="2026-07-28", read_timeout_seconds=WAIT) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.error.code == types.UNSUPPORTED_PROTOCOL_VERSION
    assert "2025-11-25" in str(caught.value.error.data)


async def test_over_stdio_too_a_stateless_era_client_is_told_which_versions_are_served(
    workspace: Path,
) -> None:
    server = StdioServerParameters(
        command=sys.executable, args=["-c", SCRIPT.format(extra=""), str(workspace)]
    )
    async with Client(server, mode="2026-07-28", read_timeout_seconds=WAIT) as client:
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.error.code == types.UNSUPPORTED_PROTOCOL_VERSION
    assert "2025-11-25" in str(caught.value.error.data)


async def test_a_client_of_the_newest_sdk_falls_back_to_a_session_and_can_edit(
    http_url: str, workspace: Path
) -> None:
    # `mode="auto"` probes the stateless era first; without --stateless the server refuses it,
    # and the session the client falls back to remembers the read an edit needs.
    (workspace / "app.py").write_text("x = 1\n")
    async with http_client(http_url, mode="auto", read_timeout_seconds=WAIT) as client:
        assert client.protocol_version == "2025-11-25"
        read = await client.call_tool("read_file", {"file_path": "app.py"})
        edit = {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}
        edited = await client.call_tool("edit_file", edit)
    assert read.is_error is False and edited.is_error is False, text(edited)
    assert (workspace / "app.py").read_text() == "x = 2\n"


def test_importing_handrail_mcp_does_not_load_the_sdk() -> None:
    code = "import sys, handrail, handrail.mcp; print('mcp' in sys.modules or 'mcp_types' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT, check=True
    )
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"mode": "yolo"}, "unknown mode 'yolo'"),
        ({"root": "/no/such/dir"}, "is not a directory"),
        ({"http": ("127.0.0.1", 70000)}, "http must be"),
        ({"ask_fallback": "maybe"}, "ask_fallback must be"),
        ({"allow": ["run_shell("]}, "run_shell("),
    ],
)
async def test_bad_configuration_is_refused_before_serving(
    options: dict[str, Any], message: str, tmp_path: Path
) -> None:
    options.setdefault("root", tmp_path)
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")):
        await serve(load_settings=False, **options)


def test_sigterm_stops_the_http_server(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT.format(extra=HTTP), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            assert sel.select(timeout=WAIT)
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=15)  # raises if the server does not stop
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()  # pyright: ignore[reportOptionalMemberAccess]
