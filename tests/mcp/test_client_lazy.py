"""Lazy MCP servers: tools listed from the cached tool list, the server started on first call.

Each test runs real server processes (`servers/listing_server.py`, the official SDK over
stdio) whose tool list it writes, in sessions one after the other, with the cache in a state
folder of its own. The server appends `start <pid>` to a marker file each time it starts and
`call <tool> <arguments>` for each call, so the tests count starts and see what was sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, Runtime
from handrail.mcp import McpServerConfig, McpTools
from handrail.mcp._tool_cache import ToolCache, config_key

SERVER = Path(__file__).parent / "servers" / "listing_server.py"
HOUR = 3600.0

ECHO: dict[str, Any] = {
    "name": "echo",
    "description": "Echo the arguments.",
    "inputSchema": {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "required": ["a"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
GONE: dict[str, Any] = {
    "name": "gone",
    "description": "A tool the server will drop.",
    "inputSchema": {"type": "object"},
}


class Server:
    """One configured listing server: its spec file, its marker file, its config."""

    def __init__(self, folder: Path, *, name: str = "lst", env: dict[str, str] | None = None):
        self.spec_path = folder / f"{name}.spec.json"
        self.marker = folder / f"{name}.marker"
        self.root = folder
        self.config = McpServerConfig(
            name=name,
            command=sys.executable,
            args=(str(SERVER), str(self.spec_path)),
            env=env or {},
        )

    def write(self, tools: list[dict[str, Any]], **spec: Any) -> None:
        spec = {"tools": tools, "marker": str(self.marker), **spec}
        self.spec_path.write_text(json.dumps(spec))

    def lines(self, kind: str) -> list[str]:
        if not self.marker.exists():
            return []
        return [line for line in self.marker.read_text().splitlines() if line.startswith(kind)]

    @property
    def starts(self) -> int:
        return len(self.lines("start "))

    @property
    def calls(self) -> list[str]:
        return self.lines("call ")

    def tools(self, **kw: Any) -> McpTools:
        return McpTools([self.config], root=self.root, **kw)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(folder))
    return folder


@pytest.fixture
def server(tmp_path: Path, state: Path) -> Server:
    return Server(tmp_path)


async def listed(server: Server, **kw: Any) -> tuple[list[str], set[str]]:
    """One session: its tool names and cached servers; the session ends."""
    async with server.tools(**kw) as mcp:
        return [t.name for t in mcp.tools], mcp.cached


def runtime(mcp: McpTools, root: Path) -> Runtime:
    return Runtime(mcp.registry(), root=root, mode="bypass")


def age_cache(server: Server, seconds: float) -> None:
    """Make the server's cached list `seconds` old (as if listed then)."""
    cache = ToolCache()
    key = config_key(server.config, server.root.resolve())
    found = cache.load(key)
    assert found is not None
    cache.store(key, server.config.name, replace(found, listed_at=time.time() - seconds))


async def test_a_warm_cache_lists_the_tools_without_starting_the_server(
    server: Server, state: Path
) -> None:
    server.write([ECHO, GONE], ttl_ms=3_600_000, instructions="Use echo.")
    async with server.tools() as cold:
        assert cold.cached == set()
        first = (
            [(t.name, t.parameters, t.read_only) for t in cold.tools],
            cold.instructions,
            cold.estimated_tokens,
        )
    assert server.starts == 1

    async with server.tools() as warm:
        assert warm.cached == {"lst"}
        assert warm.failures == {}
        again = (
            [(t.name, t.parameters, t.read_only) for t in warm.tools],
            warm.instructions,
            warm.estimated_tokens,
        )
        assert again == first
        assert server.starts == 1  # listed, searched, deferred: nothing started

        result = await runtime(warm, server.root).call("mcp__lst__echo", {"a": 7})
        assert result.ok, result.content
        assert json.loads(result.content) == {"tool": "echo", "arguments": {"a": 7}}
        assert server.starts == 2  # the first call started it
        result = await runtime(warm, server.root).call("mcp__lst__echo", {"a": 8})
        assert result.ok and server.starts == 2


async def test_the_cache_is_private_and_holds_no_secret_in_clear(
    tmp_path: Path, state: Path
) -> None:
    server = Server(tmp_path, env={"API_TOKEN": "s3cret-t0ken-value"})
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    folder = state / "mcp-tools"
    files = list(folder.iterdir())
    assert len(files) == 1
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    text = files[0].read_text()
    assert "s3cret-t0ken-value" not in text and "s3cret" not in files[0].name
    assert json.loads(text)["tools"] == [ECHO]  # as the server sent it


@pytest.mark.parametrize(
    ("modern", "ttl_ms", "age", "started"),
    [
        pytest.param(False, None, 23 * HOUR, False, id="no-ttl-23h-fresh"),
        pytest.param(False, None, 25 * HOUR, True, id="no-ttl-25h-stale"),
        pytest.param(False, 1000, 60.0, False, id="old-protocol-ttl-ignored"),
        pytest.param(True, 60_000, 30.0, False, id="ttl-60s-at-30s-fresh"),
        pytest.param(True, 60_000, 120.0, True, id="ttl-60s-at-120s-stale"),
        pytest.param(True, 0, 0.0, True, id="ttl-0-always-stale"),
        pytest.param(True, 3_600_000, -HOUR, True, id="listed-in-the-future"),
    ],
)
async def test_freshness_follows_the_servers_ttl_else_a_day(
    server: Server, modern: bool, ttl_ms: int | None, age: float, started: bool
) -> None:
    spec: dict[str, Any] = {"modern": modern}
    if ttl_ms is not None:
        spec["ttl_ms"] = ttl_ms
    server.write([ECHO], **spec)
    await listed(server)
    age_cache(server, age)
    names, cached = await listed(server)
    assert names == ["mcp__lst__echo"]
    assert (server.starts, cached) == ((2, set()) if started else (1, {"lst"}))


@pytest.mark.parametrize(
    "damage",
    ["not json", '{"format": 99}', '{"format": 1, "tools": "x"}', "symlink"],
)
async def test_a_damaged_cache_file_is_a_miss(server: Server, state: Path, damage: str) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    (path,) = (state / "mcp-tools").iterdir()
    if damage == "symlink":  # a link planted in the folder is not followed
        real = state / "elsewhere.json"
        path.rename(real)
        path.symlink_to(real)
    else:
        path.write_text(damage)
    names, cached = await listed(server)
    assert names == ["mcp__lst__echo"] and cached == set() and server.starts == 2
    _, cached = await listed(server)  # rewritten by the session that started the server
    assert cached == {"lst"} and server.starts == 2


async def test_a_changed_configuration_starts_the_server(tmp_path: Path, state: Path) -> None:
    first = Server(tmp_path, env={"TOKEN": "one"})
    first.write([ECHO], ttl_ms=3_600_000)
    await listed(first)
    second = Server(tmp_path, env={"TOKEN": "two"})  # same files, another token
    _, cached = await listed(second)
    assert cached == set() and second.starts == 2
    _, cached = await listed(first)  # each configuration has its own list
    assert cached == {"lst"} and first.starts == 2


async def test_opting_out_and_refreshing(server: Server, state: Path) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    _, cached = await listed(server, lazy=False)
    assert cached == set() and server.starts == 1
    assert not (state / "mcp-tools").exists()  # lazy=False keeps no cache

    await listed(server)
    server.write([ECHO, GONE], ttl_ms=3_600_000)
    names, cached = await listed(server, refresh=True)
    assert cached == set() and server.starts == 3
    assert names == ["mcp__lst__echo", "mcp__lst__gone"]
    names, cached = await listed(server)  # the refresh rewrote the cache
    assert cached == {"lst"} and names == ["mcp__lst__echo", "mcp__lst__gone"]


async def test_a_tool_removed_since_the_cache_is_a_clear_error(server: Server) -> None:
    server.write([ECHO, GONE], ttl_ms=3_600_000)
    await listed(server)
    server.write([ECHO], ttl_ms=3_600_000)
    async with server.tools() as mcp:
        assert [t.name for t in mcp.tools] == ["mcp__lst__echo", "mcp__lst__gone"]
        result = await runtime(mcp, server.root).call("mcp__lst__gone", {})
        assert result.error == ErrorCode.TOOL_NOT_FOUND
        assert result.content == snapshot(
            "MCP server `lst` no longer offers `mcp__lst__gone`: this session's tool list came "
            "from a cache, and the server has removed the tool since. Do not call it again; use "
            "another tool or tell the user. The next session lists the server's tools as they "
            "are now."
        )
        assert server.calls == []
        assert (await runtime(mcp, server.root).call("mcp__lst__echo", {"a": 1})).ok
    names, cached = await listed(server)  # the next session: the server's list, from the cache
    assert names == ["mcp__lst__echo"] and cached == {"lst"}
    assert server.starts == 2


async def test_a_changed_schema_is_checked_before_the_call_goes_out(server: Server) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    wider = {
        **ECHO,
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    }
    server.write([wider], ttl_ms=3_600_000)
    async with server.tools() as mcp:
        rt = runtime(mcp, server.root)
        result = await rt.call("mcp__lst__echo", {"a": 1})  # fits the cached schema only
        assert result.error == ErrorCode.INVALID_ARGS
        assert result.content.startswith(
            "MCP server `lst` changed the parameters of `mcp__lst__echo` since this session's "
            "tool list was cached, and these arguments do not fit the new ones, so the call was "
            'not sent. Its parameters are now: {"type":"object","properties":'
        )
        assert "b" in result.content.split("\n", 1)[1]  # the issue names the missing field
        assert server.calls == []

        # The model retries with the new field, which the cached schema forbade.
        result = await rt.call("mcp__lst__echo", {"a": 1, "b": "x"})
        assert result.ok, result.content
        assert server.calls == ['call echo {"a": 1, "b": "x"}']
        assert mcp.tools[0].parameters == wider["inputSchema"]


async def test_arguments_that_fit_a_changed_schema_go_out(server: Server) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    optional_b = {
        **ECHO,
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
        },
    }
    server.write([optional_b], ttl_ms=3_600_000)
    async with server.tools() as mcp:
        result = await runtime(mcp, server.root).call("mcp__lst__echo", {"a": 5})
        assert result.ok, result.content
    assert server.calls == ['call echo {"a": 5}']


async def test_a_tool_that_no_longer_claims_to_only_read_is_refused(server: Server) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    server.write([{**ECHO, "annotations": {"readOnlyHint": False}}], ttl_ms=3_600_000)
    async with server.tools() as mcp:
        assert mcp.tools[0].read_only is True  # as cached: it would run without asking
        rt = runtime(mcp, server.root)
        for _ in range(2):  # refused for the whole session, not just the first call
            result = await rt.call("mcp__lst__echo", {"a": 1})
            assert result.error == ErrorCode.EXECUTION_ERROR
            assert "its annotations were" in result.content
            assert '"readOnlyHint": false' in result.content
    assert server.calls == []


async def test_concurrent_first_calls_share_one_start(server: Server) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    async with server.tools() as mcp:
        rt = runtime(mcp, server.root)
        results = await asyncio.gather(*(rt.call("mcp__lst__echo", {"a": i}) for i in range(4)))
        assert all(r.ok for r in results), [r.content for r in results]
    assert server.starts == 2
    assert sorted(server.calls) == [f'call echo {{"a": {i}}}' for i in range(4)]


async def test_a_cached_server_that_no_longer_starts_fails_its_calls(server: Server) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    await listed(server)
    server.spec_path.unlink()  # the server now exits at once
    async with server.tools() as mcp:
        assert mcp.cached == {"lst"} and mcp.failures == {}
        result = await runtime(mcp, server.root).call("mcp__lst__echo", {"a": 1})
        assert result.error == ErrorCode.EXECUTION_ERROR
        assert result.content.startswith("MCP server `lst` could not be started: ")


def test_a_warm_start_imports_no_sdk_and_starts_no_server(server: Server, state: Path) -> None:
    server.write([ECHO], ttl_ms=3_600_000)
    asyncio.run(listed(server))
    script = (
        "import asyncio, json, sys\n"
        "from handrail.mcp import McpServerConfig, McpTools\n"
        "config = McpServerConfig(**json.loads(sys.argv[1]))\n"
        "mcp = McpTools([config], root=sys.argv[2])\n"
        "tools = asyncio.run(mcp.start())\n"
        "print(json.dumps([[t.name for t in tools], sorted(mcp.cached),\n"
        "    [m for m in ('mcp', 'mcp_types') if m in sys.modules]]))\n"
    )
    config = {"name": "lst", "command": sys.executable, "args": list(server.config.args)}
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(config), str(server.root)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HANDRAIL_STATE_DIR": str(state)},
        check=True,
    )
    assert json.loads(done.stdout) == [["mcp__lst__echo"], ["lst"], []]
    assert server.starts == 1


def test_the_key_changes_with_what_can_change_the_list_only(tmp_path: Path) -> None:
    from handrail.mcp._config_oauth import McpOAuthConfig

    stdio = McpServerConfig(name="a", command="srv", args=("--x",), env={"TOKEN": "1"})
    http = McpServerConfig(name="b", url="https://h.example/mcp", headers={"Authorization": "1"})
    key = config_key(stdio, tmp_path)
    assert config_key(replace(stdio, name="renamed", timeout=5.0), tmp_path) == key
    others = [
        config_key(replace(stdio, command="srv2"), tmp_path),
        config_key(replace(stdio, args=("--y",)), tmp_path),
        config_key(replace(stdio, env={"TOKEN": "2"}), tmp_path),
        config_key(stdio, tmp_path / "elsewhere"),
    ]
    assert len({key, *others}) == 5
    http_key = config_key(http, tmp_path)
    assert config_key(replace(http, headers={"authorization": "1"}), tmp_path) == http_key
    assert config_key(http, tmp_path / "elsewhere") == http_key  # no working directory
    others = [
        config_key(replace(http, url="https://h.example/other"), tmp_path),
        config_key(replace(http, headers={"Authorization": "2"}), tmp_path),
        config_key(replace(http, oauth=McpOAuthConfig(scopes=("read",))), tmp_path),
    ]
    assert len({http_key, *others}) == 4
