"""`handrail serve` keeps checkpoints per session; `--offer-restore` lets the client restore one.

The real SDK client against a real server process (stdio, and streamable HTTP on 127.0.0.1).
Off by default the checkpoint tools are not listed. With them, every restore that would change
something is put to the client's user: a no (or a client that cannot ask) changes nothing, a yes
puts the files back byte for byte, and the restore's own checkpoint undoes it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from inline_snapshot import snapshot
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from handrail.sandbox import sandbox_support, workspace_key
from mcp import Client

pytestmark = pytest.mark.skipif(
    not sandbox_support().available, reason="run_shell needs an OS sandbox on this machine"
)

WAIT = 30.0
"""Seconds any single wait in these tests may take."""
TOKEN = "test-token-0123456789abcdef"
SCRIPT = (
    "import asyncio, sys\n"
    "from handrail.mcp import serve\n"
    "asyncio.run(serve(root=sys.argv[1], load_settings=False, allow=['run_shell']{extra}))\n"
)
OFFER = ", offer_restore=True"
HTTP = f", http=('127.0.0.1', 0), token={TOKEN!r}, ready=lambda url: print(url, flush=True)"
TOOLS = {"list_checkpoints", "restore_checkpoint"}
BLOB = bytes(range(256)) * 3 + b"\r\n\x00end"
"""A file's first content: every byte value, a CR LF, a NUL."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blob.bin").write_bytes(BLOB)
    (root / "blob.bin").chmod(0o640)
    (root / "notes.txt").write_text("first\n")
    return root.resolve()


def stdio(workspace: Path, extra: str = OFFER, **options: Any) -> Client:
    server = StdioServerParameters(
        command=sys.executable, args=["-c", SCRIPT.format(extra=extra), str(workspace)]
    )
    return Client(server, read_timeout_seconds=WAIT, **options)


@contextlib.contextmanager
def http_server(workspace: Path, log: Path) -> Iterator[str]:
    """`serve(offer_restore=True)` over HTTP on a free loopback port; stopped by its PID."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT.format(extra=OFFER + HTTP), str(workspace)],
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


@contextlib.asynccontextmanager
async def http_client(url: str, **options: Any) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        async with Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=WAIT, **options
        ) as client:
            yield client


class Person:
    """The client's user: answers every question as told, and remembers what was asked."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={})
        return types.ElicitResult(action="decline")


def text(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def meta(result: types.CallToolResult, key: str) -> Any:
    assert result.meta is not None
    return result.meta[key]


async def change_files(client: Client) -> None:
    """One call that changes both files and adds one: checkpoint 1 is the state before it."""
    r = await client.call_tool(
        "run_shell",
        {"command": "printf 'canary\\n' > blob.bin && echo second >> notes.txt && touch new.txt"},
    )
    assert r.is_error is False, text(r)


def logs_of(workspace: Path) -> list[Path]:
    """The session logs of the workspace's checkpoints, in the state folder of the run."""
    folder = Path(os.environ["HANDRAIL_STATE_DIR"]) / "checkpoints" / workspace_key(workspace)
    return sorted(folder.glob("*.jsonl"))


# -- off by default ---------------------------------------------------------------------------


async def test_off_by_default_the_tools_are_absent_and_checkpoints_are_still_kept(
    workspace: Path,
) -> None:
    async with stdio(workspace, extra="") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        await change_files(client)
        called = await client.call_tool("restore_checkpoint", {"checkpoint": 1})
    assert not names & TOOLS
    assert called.is_error is True
    assert meta(called, "handrail/result")["error"] == "TOOL_NOT_FOUND"
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"
    # The session's checkpoint was recorded all the same, in the state folder of the run.
    logs = logs_of(workspace)
    assert len(logs) == 1 and '"label":"run_shell: printf' in logs[0].read_text()


# -- with --offer-restore ---------------------------------------------------------------------


async def test_the_tools_are_listed_after_the_registrys(workspace: Path) -> None:
    async with stdio(workspace) as client:
        listed = (await client.list_tools()).tools
    assert [t.name for t in listed[-2:]] == ["list_checkpoints", "restore_checkpoint"]
    flags = {
        t.name: (t.annotations.read_only_hint, t.annotations.destructive_hint)
        for t in listed[-2:]
        if t.annotations is not None
    }
    assert flags == {"list_checkpoints": (True, False), "restore_checkpoint": (False, True)}


async def test_a_declined_restore_changes_nothing(workspace: Path) -> None:
    person = Person("decline")
    async with stdio(workspace, elicitation_callback=person) as client:
        await change_files(client)
        listed = await client.call_tool("list_checkpoints", {})
        refused = await client.call_tool("restore_checkpoint", {"checkpoint": 1})
    (checkpoint,) = meta(listed, "handrail/checkpoints")
    assert checkpoint["id"] == 1 and checkpoint["changed"] == ["blob.bin", "new.txt", "notes.txt"]
    assert text(listed).splitlines()[0] == snapshot(
        "Checkpoints of this session, oldest first. Each is the state of the files just before the call it names; restore_checkpoint with its id puts the files back as they were then (the user is asked to confirm)."
    )
    assert refused.is_error is True
    assert text(refused) == snapshot(
        "Nothing was restored: the user declined `restore_checkpoint` in the MCP client."
    )
    # The canary is where the session left it, and nothing else moved either.
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"
    assert (workspace / "notes.txt").read_text() == "first\nsecond\n"
    assert (workspace / "new.txt").exists()
    (question,) = person.asked
    assert question.split("\n", 1)[1] == snapshot(
        """\
It puts 3 path(s) back as they were then: `blob.bin`, `new.txt`, `notes.txt`.
The MCP client's model asked for this restore. Accept restores the files (the restore can be undone); decline changes nothing.\
"""
    )
    assert question.startswith("handrail: restore the files to checkpoint 1 (")


async def test_an_accepted_restore_is_exact_and_its_undo_works(workspace: Path) -> None:
    person = Person("accept")
    async with stdio(workspace, elicitation_callback=person) as client:
        await change_files(client)
        done = await client.call_tool("restore_checkpoint", {"checkpoint": 1})
        assert done.is_error is False, text(done)
        restored = {
            "blob": (workspace / "blob.bin").read_bytes(),
            "mode": (workspace / "blob.bin").stat().st_mode & 0o777,
            "notes": (workspace / "notes.txt").read_text(),
            "new": (workspace / "new.txt").exists(),
        }
        undo = meta(done, "handrail/restore")["undo"]
        undone = await client.call_tool("restore_checkpoint", {"checkpoint": undo})
        assert undone.is_error is False, text(undone)
    assert restored == {"blob": BLOB, "mode": 0o640, "notes": "first\n", "new": False}
    assert text(done) == snapshot(
        """\
Restored checkpoint 1: 3 path(s) are back as they were then: `blob.bin`, `new.txt`, `notes.txt`.
To undo this restore, restore checkpoint 2. Read a restored file again before you edit it.\
"""
    )
    assert meta(done, "handrail/restore") == snapshot(
        {
            "checkpoint": 1,
            "changed": ["blob.bin", "new.txt", "notes.txt"],
            "overwritten": [],
            "left": [],
            "undo": 2,
            "refused": None,
        }
    )
    # The undo is a restore like any other: asked for, and exact.
    assert len(person.asked) == 2
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"
    assert (workspace / "notes.txt").read_text() == "first\nsecond\n"
    assert (workspace / "new.txt").exists()


async def test_a_restore_of_some_paths_and_of_files_changed_by_hand(workspace: Path) -> None:
    person = Person("accept")
    async with stdio(workspace, elicitation_callback=person) as client:
        await change_files(client)
        (workspace / "notes.txt").write_text("by hand\n")  # outside the session
        done = await client.call_tool(
            "restore_checkpoint", {"checkpoint": 1, "paths": ["notes.txt"]}
        )
    assert done.is_error is False, text(done)
    assert (workspace / "notes.txt").read_text() == "first\n"
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"  # not asked for: left
    # One question, naming the file changed by hand; the runtime does not ask again.
    (question,) = person.asked
    assert question.split("\n", 1)[1] == snapshot(
        """\
It puts 1 path(s) back as they were then: `notes.txt`.
Only under: `notes.txt`.
Changed outside this session since (by hand or by another program); those changes would be lost: `notes.txt`.
The MCP client's model asked for this restore. Accept restores the files (the restore can be undone); decline changes nothing.\
"""
    )
    assert meta(done, "handrail/restore")["overwritten"] == ["notes.txt"]
    assert "The user agreed to overwrite changes made outside this session to: `notes.txt`." in (
        text(done)
    )


async def test_a_restore_cancelled_while_the_user_is_asked_changes_nothing(
    workspace: Path,
) -> None:
    asked = anyio.Event()

    async def hang(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.set()
        await anyio.sleep(WAIT)  # withdrawn when the request is cancelled
        return types.ElicitResult(action="accept", content={})

    async with stdio(workspace, elicitation_callback=hang) as client:
        await change_files(client)
        scope = anyio.CancelScope()

        async def run() -> None:
            with scope:
                await client.call_tool("restore_checkpoint", {"checkpoint": 1})

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await asked.wait()
                scope.cancel()
        after = await client.call_tool("list_checkpoints", {})
    assert [c["id"] for c in meta(after, "handrail/checkpoints")] == [1]
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"


async def test_a_client_that_cannot_ask_cannot_restore(workspace: Path) -> None:
    # Not even when the operator lets calls run whenever nobody can be asked.
    async with stdio(workspace, extra=OFFER + ", ask_fallback='allow'") as client:
        await change_files(client)
        refused = await client.call_tool("restore_checkpoint", {"checkpoint": 1})
        unknown = await client.call_tool("restore_checkpoint", {"checkpoint": 7})
    assert refused.is_error is True
    assert text(refused) == snapshot(
        "Nothing was restored: restoring needs the user's confirmation, and this MCP client cannot ask its user (it does not support elicitation)."
    )
    assert (workspace / "blob.bin").read_bytes() == b"canary\n"
    assert meta(unknown, "handrail/result")["error"] == "INVALID_ARGS"
    assert text(unknown) == snapshot(
        """\
Invalid arguments for `restore_checkpoint`:
- /checkpoint: there is no checkpoint 7 in this session; list_checkpoints shows the ones there are
Call `restore_checkpoint` again with corrected arguments.\
"""
    )


async def test_checkpoints_belong_to_the_session_over_http(workspace: Path, tmp_path: Path) -> None:
    person = Person("accept")
    with http_server(workspace, tmp_path / "server.log") as url:
        async with (
            http_client(url, elicitation_callback=person) as first,
            http_client(url, elicitation_callback=person) as second,
        ):
            await change_files(first)
            mine = meta(await first.call_tool("list_checkpoints", {}), "handrail/checkpoints")
            listed = await second.call_tool("list_checkpoints", {})
            theirs = await second.call_tool("restore_checkpoint", {"checkpoint": 1})
            assert (workspace / "blob.bin").read_bytes() == b"canary\n"
            done = await first.call_tool("restore_checkpoint", {"checkpoint": 1})
    assert [c["id"] for c in mine] == [1]
    assert meta(listed, "handrail/checkpoints") == []
    assert text(listed) == snapshot(
        "This session has no checkpoints yet: one is taken before each call that changes files (a file edit, a shell command), once that call has changed something."
    )
    assert meta(theirs, "handrail/result")["error"] == "INVALID_ARGS"
    assert done.is_error is False, text(done)
    assert (workspace / "blob.bin").read_bytes() == BLOB
    assert len(person.asked) == 1  # the first session's restore only
    logs = logs_of(workspace)
    assert len(logs) == 1  # the second session changed nothing: no log of its own


async def test_the_cli_flag_offers_the_tools(workspace: Path) -> None:
    def params(*args: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "handrail", "serve", "--root", str(workspace), "--no-settings", *args],
            cwd=str(workspace),
        )

    async with Client(params(), read_timeout_seconds=WAIT) as client:
        plain = {t.name for t in (await client.list_tools()).tools}
    async with Client(params("--offer-restore"), read_timeout_seconds=WAIT) as client:
        offered = {t.name for t in (await client.list_tools()).tools}
    assert not plain & TOOLS
    assert offered - plain == TOOLS
