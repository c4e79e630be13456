"""`handrail serve`: the real command, driven by the official `mcp` SDK client."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from mcp import Client

WAIT = 60.0
"""Seconds any single wait in these tests may take."""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "xdg").mkdir()  # an empty user config: nothing from this machine leaks in
    return root


def server(workspace: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "handrail", "serve", "--root", str(workspace), *args],
        env={"XDG_CONFIG_HOME": str(workspace.parent / "xdg")},
        cwd=str(workspace.parent),
    )


def text(result: object) -> str:
    content = getattr(result, "content", [])
    return "".join(getattr(block, "text", "") for block in content)


async def test_stdio_lists_and_calls_tools(workspace: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Client(server(workspace), mode="legacy") as client:
            assert client.server_info is not None
            listed = await client.list_tools()
            names = [t.name for t in listed.tools]
            assert names[:4] == ["edit_file", "grep_search", "list_files", "read_file"]
            assert "enter_plan_mode" not in names  # deferred
            read = await client.call_tool("read_file", {"file_path": "notes.txt"})
            assert read.is_error is False
            assert text(read) == "1\talpha\n2\tbeta"
            # accept_edits by default: a write inside the root runs, outside is refused.
            inside = await client.call_tool("write_file", {"file_path": "new.txt", "content": "x"})
            assert inside.is_error is False
            assert (workspace / "new.txt").read_text() == "x"
            outside = await client.call_tool(
                "write_file", {"file_path": "../escape.txt", "content": "x"}
            )
            assert outside.is_error is True
            assert not (workspace.parent / "escape.txt").exists()


async def test_instructions_name_every_deferred_tool_in_a_stable_order(workspace: Path) -> None:
    with anyio.fail_after(WAIT):
        async with Client(server(workspace), mode="legacy") as client:
            instructions = client.instructions or ""
            listed = {t.name for t in (await client.list_tools()).tools}
    assert "tool_search" in listed
    line = instructions.rsplit("Not yet listed: ", 1)[1].rstrip(".")
    names = line.split(", ")
    assert names == sorted(names)
    assert "enter_plan_mode" in names
    assert not set(names) & listed  # exactly the ones the client cannot see yet


async def test_stdio_applies_mode_rules_and_settings(workspace: Path) -> None:
    extra = workspace.parent / "extra.json"
    extra.write_text(json.dumps({"disabled_tools": ["web_fetch"]}))
    args = ("--mode", "plan", "--deny", "read_file(secret.txt)", "--settings", str(extra))
    (workspace / "secret.txt").write_text("s3cret")
    with anyio.fail_after(WAIT):
        async with Client(server(workspace, *args), mode="legacy") as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "web_fetch" not in names  # disabled by the extra settings file
            assert "write_file" not in names  # plan mode shows read-only tools only
            denied = await client.call_tool("read_file", {"file_path": "secret.txt"})
            assert denied.is_error is True
            assert "read_file(secret.txt)" in text(denied)
            assert "s3cret" not in text(denied)
            allowed = await client.call_tool("read_file", {"file_path": "notes.txt"})
            assert allowed.is_error is False
            write = await client.call_tool("write_file", {"file_path": "n.txt", "content": "x"})
            assert write.is_error is True
            assert not (workspace / "n.txt").exists()


async def test_settings_file_reaches_the_tools(workspace: Path) -> None:
    # Per-tool settings from --settings apply in the server: run_shell's env deny list here.
    extra = workspace.parent / "extra.json"
    extra.write_text(json.dumps({"tools": {"run_shell": {"env_deny": ["HIDE_*"]}}}))
    params = server(workspace, "--allow", "run_shell", "--settings", str(extra))
    params.env = {**os.environ, **(params.env or {}), "HIDE_ME": "hidden", "SHOW_ME": "shown"}
    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:
            r = await client.call_tool("run_shell", {"command": "env"})
    assert "SHOW_ME=shown" in text(r)
    assert "hidden" not in text(r)


def test_stdio_stdout_carries_only_the_protocol(workspace: Path) -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", "--root", str(workspace)],
        input=json.dumps(request) + "\n",  # then EOF: the client went away
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
        env={**os.environ, "XDG_CONFIG_HOME": str(workspace.parent / "xdg")},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines, done.stderr
    messages = [json.loads(line) for line in lines]  # every line is a JSON-RPC message
    assert messages[0]["id"] == 1 and "serverInfo" in messages[0]["result"]
    assert done.stderr.startswith("handrail: serving MCP on stdio (root ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(workspace: Path) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`handrail serve --http` on a free loopback port: (process, url, the printed token)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "HANDRAIL_SERVE_TOKEN"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail", "serve", "--http", f"127.0.0.1:{port}"],
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **env,
            "XDG_CONFIG_HOME": str(workspace.parent / "xdg"),
            "HANDRAIL_STATE_DIR": str(workspace.parent / "state"),
        },
    )
    try:
        assert proc.stderr is not None
        lines: list[str] = []
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            if sel.select(timeout=WAIT):
                # The serving line and the token line come in one write.
                lines = [proc.stderr.readline(), proc.stderr.readline()]
        assert lines[0].startswith(f"handrail: serving MCP on http://127.0.0.1:{port}/mcp "), lines
        assert lines[1].startswith("handrail: bearer token "), lines
        yield proc, f"http://127.0.0.1:{port}/mcp", lines[1].split()[3]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=WAIT)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


async def test_http_serves_the_workspace_of_the_current_directory(
    http_server: tuple[subprocess.Popen[str], str, str],
) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    proc, url, token = http_server
    with anyio.fail_after(WAIT):
        async with (
            create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            names = [t.name for t in (await client.list_tools()).tools]
            assert "read_file" in names
            read = await client.call_tool("read_file", {"file_path": "notes.txt", "limit": 1})
            assert text(read).startswith("1\talpha")
    # SIGTERM stops it cleanly: exit status 128 + 15, and no traceback.
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    assert time.monotonic() - t0 < WAIT


@pytest.mark.parametrize("value", ["8765", "localhost:", "127.0.0.1:http", "[::1]:99999"])
def test_a_bad_http_address_is_a_usage_error(workspace: Path, value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", "--http", value],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 2
    assert (
        done.stderr == f"handrail: error: --http {value}: expected HOST:PORT, e.g. 127.0.0.1:8765\n"
    )
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--stateless"], "--stateless applies to --http only"),
        (
            ["--http", "127.0.0.1:0", "--state-secret-file", "secret"],
            "--state-secret-file signs stateless approvals: add --stateless",
        ),
    ],
)
def test_stateless_flags_that_cannot_apply_are_usage_errors(
    workspace: Path, args: list[str], message: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handrail", "serve", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert (done.returncode, done.stderr) == (2, f"handrail: error: {message}\n")


async def test_a_state_secret_file_inside_the_root_is_hidden_from_the_tools(
    workspace: Path,
) -> None:
    secret = "STATE-CANARY-" + "5" * 32
    (workspace / "state.secret").write_text(secret + "\n")
    (workspace / "state.secret").chmod(0o600)
    port = free_port()
    proc = start_serve(
        workspace,
        *("--http", f"127.0.0.1:{port}", "--no-auth", "--stateless"),
        *("--state-secret-file", "state.secret"),
    )
    try:
        assert proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            assert sel.select(timeout=WAIT)
            assert proc.stderr.readline().startswith("handrail: serving MCP on")
        with anyio.fail_after(WAIT):
            # A stateless client (2026-07-28), as the flag invites.
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client:
                read = await client.call_tool("read_file", {"file_path": "state.secret"})
                shell = await client.call_tool("run_shell", {"command": "cat state.secret"})
        assert read.is_error
        assert secret not in text(read) + text(shell)
    finally:
        proc.terminate()
        proc.wait(timeout=WAIT)
        if proc.stderr is not None:
            proc.stderr.close()


async def test_serve_offers_a_sub_agent_whose_approvals_reach_the_client(
    workspace: Path,
) -> None:
    import mcp_types as types

    from handrail.testing import ModelServer, Reply, ToolUse

    asked: list[str] = []

    async def accept(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    script = [
        # The sub-agent's turns: it writes a file (which asks), then answers.
        Reply(tool_calls=[ToolUse("run_shell", {"command": "echo made > child.txt"})]),
        Reply(text="I wrote child.txt."),
    ]
    with ModelServer(script) as model:
        params = server(
            workspace,
            "--agent-model",
            "openai_chat:scripted",
            "--agent-base-url",
            model.base_url("openai_chat"),
        )
        params.env = {**(params.env or {}), "HANDRAIL_STATE_DIR": str(workspace.parent / "state")}
        with anyio.fail_after(WAIT):
            async with Client(params, mode="legacy", elicitation_callback=accept) as client:
                listed = await client.list_tools()
                agent = next(t for t in listed.tools if t.name == "agent")
                assert "explore" in (agent.description or "")
                result = await client.call_tool(
                    "agent",
                    {
                        "description": "make a file",
                        "prompt": "Create child.txt containing 'made'.",
                        "agent_type": "general",
                    },
                )
        assert result.is_error is False, text(result)
        assert "I wrote child.txt." in text(result)
        assert (workspace / "child.txt").read_text() == "made\n"
        # The child's shell call was put to the client's user, naming the sub-agent.
        assert len(asked) == 1
        assert asked[0].startswith("The sub-agent general#1 asks.\nhandrail: allow `run_shell`")
        assert model.problems == []


async def test_handrails_own_files_inside_the_root_are_hidden_from_every_tool(
    workspace: Path,
) -> None:
    # A --settings file and the script a hook runs (outside the sandbox), both inside the
    # root: a client's tools can neither read nor change them, in bypass mode too.
    settings = workspace / "handrail-settings.json"
    hook = workspace / "guard.sh"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    settings.write_text(
        json.dumps({"hooks": {"post_tool_use": [{"command": "./guard.sh", "matcher": "none"}]}})
    )
    params = server(workspace, "--mode", "bypass", "--settings", str(settings))
    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:
            reads = [
                await client.call_tool("read_file", {"file_path": name})
                for name in ("handrail-settings.json", "guard.sh")
            ]
            edit = await client.call_tool(
                "write_file", {"file_path": "guard.sh", "content": "#!/bin/sh\ntouch PWNED\n"}
            )
            shell = await client.call_tool(
                "run_shell",
                {"command": "cat guard.sh handrail-settings.json; echo 'touch PWNED' >> guard.sh"},
            )
            grep = await client.call_tool("grep_search", {"pattern": "exit 0|hooks"})
    assert all(r.is_error for r in reads) and edit.is_error
    assert "exit 0" not in text(shell) + text(grep) and "hooks" not in text(shell) + text(grep)
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    assert not (workspace / "PWNED").exists()


async def test_a_token_file_inside_the_root_is_hidden_from_the_tools(workspace: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    secret = "TOKEN-CANARY-" + "7" * 24
    token_file = workspace / "serve.token"
    token_file.write_text(secret + "\n")
    token_file.chmod(0o600)
    port = free_port()
    proc = start_serve(workspace, "--http", f"127.0.0.1:{port}", "--token-file", "serve.token")
    try:
        assert proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            assert sel.select(timeout=WAIT)
            assert proc.stderr.readline().startswith("handrail: serving MCP on")
        with anyio.fail_after(WAIT):
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {secret}"}) as http,
                Client(
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
                ) as client,
            ):
                read = await client.call_tool("read_file", {"file_path": "serve.token"})
                shell = await client.call_tool("run_shell", {"command": "cat serve.token"})
                grep = await client.call_tool("grep_search", {"pattern": "TOKEN-CANARY"})
        assert read.is_error
        assert secret not in text(read) + text(shell) + text(grep)
    finally:
        proc.terminate()  # SIGTERM: a clean stop that removes its session's folder
        proc.wait(timeout=WAIT)
        if proc.stderr is not None:
            proc.stderr.close()


def start_serve(workspace: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "handrail", "serve", "--mode", "bypass", *args],
        cwd=workspace,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "XDG_CONFIG_HOME": str(workspace.parent / "xdg")},
    )


async def test_nothing_can_be_planted_beside_a_hook_script(workspace: Path) -> None:
    # `python3 hooks/guard.py` imports what lies beside it first: a model writing
    # hooks/json.py would run its own code outside the sandbox at the next call.
    (workspace / "hooks").mkdir()
    (workspace / "hooks" / "guard.py").write_text("import json\n")
    settings = workspace.parent / "hooked.json"
    hook = {"command": f"{sys.executable} hooks/guard.py", "matcher": "read_file"}
    settings.write_text(json.dumps({"hooks": {"post_tool_use": [hook]}}))
    planted = "import pathlib; pathlib.Path('PWNED').touch()\n"
    params = server(workspace, "--mode", "bypass", "--settings", str(settings))
    with anyio.fail_after(WAIT):
        async with Client(params, mode="legacy") as client:
            write = await client.call_tool(
                "write_file", {"file_path": "hooks/json.py", "content": planted}
            )
            shell = await client.call_tool(
                "run_shell", {"command": f"printf %s {planted!r} > hooks/json.py"}
            )
            await client.call_tool("read_file", {"file_path": "notes.txt"})
    assert write.is_error and shell.is_error
    assert not (workspace / "hooks" / "json.py").exists()
    assert not (workspace / "PWNED").exists()
