"""Signing in to remote MCP servers: what handrail adds to the SDK's OAuth, seen by a user.

The server is `servers/oauth_server.py`, a real process on 127.0.0.1: an MCP server behind
OAuth with the SDK's own authorization server in it (it approves at once, like a person who
always says yes). The "browser" is an HTTP GET that follows the redirects back to handrail's
loopback listener. The OAuth flows the conformance suite checks are in
`test_conformance_client.py`; these tests are about handrail's side: the words a model reads
when a server needs authorization, never waiting for a browser nobody will open, the token
file's privacy (a canary no tool may reveal), and a sign-in that outlives its process.
"""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from inline_snapshot import snapshot

from handrail import ErrorCode, Runtime
from handrail.builtin import coding_tools
from handrail.mcp import McpServerConfig, McpTools
from handrail.mcp._client_auth import signing_in
from handrail.mcp._client_auth_redirect import LoopbackRedirect
from handrail.mcp._client_auth_store import token_file

SERVERS = Path(__file__).parent / "servers"
WAIT = 30.0  # seconds: an upper bound for anything a test waits on, never a speed threshold


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder (where sign-ins are kept) and a user config of this test alone."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


async def _serve(script: str, *args: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SERVERS / script),
        *args,
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


@pytest.fixture(params=["events"])
async def docs(request: pytest.FixtureRequest) -> AsyncIterator[McpServerConfig]:
    """The OAuth server, as the entry `docs` of a user's mcp.json would name it."""
    proc, port = await _serve("oauth_server.py", *(["--json"] if request.param == "json" else []))
    try:
        yield McpServerConfig(name="docs", url=f"http://127.0.0.1:{port}/mcp")
    finally:
        await _stop(proc)


async def browser(url: str) -> None:
    """A person who approves: visit the URL, follow the redirects back to handrail."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=WAIT, trust_env=False) as http:
        await http.get(url)


async def sign_in(config: McpServerConfig, root: Path) -> None:
    """Sign in as `handrail mcp login` does: start the server with a person to ask."""
    with signing_in(browser, timeout=WAIT):
        async with McpTools([config], root=root) as mcp:
            assert mcp.failures == {}


async def call(config: McpServerConfig, root: Path, *names: str) -> list[str]:
    """A headless session (nobody to ask): start the server and call `names` in order."""
    async with asyncio.timeout(WAIT), McpTools([config], root=root) as mcp:
        assert mcp.failures == {}
        rt = Runtime(mcp.registry(), root=root, mode="bypass")
        texts = [(await rt.call(f"mcp__docs__{n}", {})).content for n in names]
        await rt.aclose()
        return texts


# -- when a server needs authorization ----------------------------------------------------------


async def test_a_server_that_needs_a_sign_in_is_refused_at_once_when_nobody_can_sign_in(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    # No browser, no terminal: the start fails with what to do, without waiting for anyone.
    async with asyncio.timeout(WAIT), McpTools([docs], root=tmp_path) as mcp:
        assert mcp.tools == []
        assert mcp.failures["docs"] == snapshot(
            "it needs authorization (HTTP 401) and no one has signed in to it yet; ask the user to run `handrail mcp login docs` in a terminal, then try again"
        )
    assert not (token_file(docs).read().get("tokens"))


async def test_a_call_after_the_sign_in_was_revoked_says_how_to_sign_in_again(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    await sign_in(docs, tmp_path)
    async with asyncio.timeout(WAIT), McpTools([docs], root=tmp_path) as mcp:
        rt = Runtime(mcp.registry(), root=tmp_path, mode="bypass")
        assert (await rt.call("mcp__docs__revoke_all", {})).ok
        refused = await rt.call("mcp__docs__whoami", {})
        assert refused.error == ErrorCode.EXECUTION_ERROR
        assert refused.content == snapshot(
            "MCP server `docs` refused the call to `mcp__docs__whoami`: it needs authorization (HTTP 401) and no one has signed in to it yet; ask the user to run `handrail mcp login docs` in a terminal, then try again."
        )
        await rt.aclose()


async def test_a_401_without_oauth_says_how_to_give_the_server_a_token(tmp_path: Path) -> None:
    proc, port = await _serve("tools_server.py", "--http", "--token", "t0k")
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        servers = [
            McpServerConfig(name="bare", url=url),
            McpServerConfig(name="keyed", url=url, headers={"Authorization": "Bearer wrong"}),
        ]
        async with asyncio.timeout(WAIT), McpTools(servers, root=tmp_path) as mcp:
            assert mcp.failures == snapshot(
                {
                    "bare": 'it needs authorization (HTTP 401) but offers no OAuth sign-in; the user can give it a token in mcp.json ("headers": {"Authorization": "Bearer ..."})',
                    "keyed": "it refused the Authorization header configured for it (HTTP 401): the token is missing, wrong or expired; the user should update `headers` of `keyed` in mcp.json",
                }
            )
    finally:
        await _stop(proc)


async def test_a_sign_in_nobody_completes_ends_after_its_timeout(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    shown: list[str] = []

    async def nobody_there(url: str) -> None:
        shown.append(url)

    with signing_in(nobody_there, timeout=0.5):
        async with asyncio.timeout(WAIT), McpTools([docs], root=tmp_path) as mcp:
            assert mcp.failures["docs"] == snapshot(
                "it needs authorization (HTTP 401) and signing in failed: nobody completed the sign-in in the browser within 0.5 seconds; the user can try `handrail mcp login docs`, or check the `oauth` settings of `docs` in mcp.json"
            )
    assert len(shown) == 1 and "code_challenge_method=S256" in shown[0]
    # The loopback listener is gone with the sign-in: its port no longer answers.
    (redirect,) = token_file(docs).read()["client_info"]["redirect_uris"]
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient(trust_env=False) as http:
            await http.get(redirect)


@pytest.mark.parametrize("docs", ["json"], indirect=True)
async def test_calls_to_a_signed_in_server_run_side_by_side(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    # A server that answers each request only once it is done (JSON, not events): the SDK's
    # provider would hold its lock across the first call, and the second would wait for it.
    await sign_in(docs, tmp_path)
    async with asyncio.timeout(WAIT), McpTools([docs], root=tmp_path) as mcp:
        rt = Runtime(mcp.registry(), root=tmp_path, mode="bypass")
        both = await asyncio.gather(*(rt.call("mcp__docs__meet", {}) for _ in range(2)))
        await rt.aclose()
    assert [r.content for r in both] == ["met", "met"]


# -- the sign-in, kept between sessions ---------------------------------------------------------


async def test_a_sign_in_is_used_by_later_sessions_and_refreshed_once_expired(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    await sign_in(docs, tmp_path)
    assert await call(docs, tmp_path, "whoami") == ["token #1; sign-ins 1; refreshes 0"]
    # The token expired while no handrail ran: the next session refreshes it, asking nobody.
    stored = token_file(docs)
    first = stored.read()["tokens"]["access_token"]
    data = stored.read()
    data["expires_at"] = 1.0
    stored.write(data)
    assert await call(docs, tmp_path, "whoami") == ["token #2; sign-ins 1; refreshes 1"]
    assert stored.read()["tokens"]["access_token"] != first
    assert (stored.expires_at() or 0) > 1.0


async def test_the_token_file_is_0600_in_a_0700_folder(
    docs: McpServerConfig, tmp_path: Path, private_state: Path
) -> None:
    await sign_in(docs, tmp_path)
    path = token_file(docs).path
    assert path.parent == private_state / "mcp-oauth"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    # The file says what it is for; the access token is the server's, kept as it was issued.
    data = json.loads(path.read_text())
    assert (data["url"], data["client"]) == (docs.url, "authorization_code")


CANARY = "CANARY-mcp-access-token-7f3a9c"


async def test_no_tool_reveals_a_kept_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The strongest case: the state folder inside the workspace, every call allowed (bypass).
    from mcp.shared.auth import OAuthToken

    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("nothing secret here\n")
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(root / ".state"))
    stored = token_file(McpServerConfig(name="docs", url="https://docs.example/mcp"))
    await stored.set_tokens(OAuthToken(access_token=CANARY, refresh_token=CANARY + "-refresh"))
    assert CANARY in stored.path.read_text()
    relative = stored.path.relative_to(root)
    attacks: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"file_path": str(relative)}),
        ("read_file", {"file_path": str(stored.path)}),
        ("grep_search", {"pattern": "CANARY", "output_mode": "content"}),
        ("grep_search", {"pattern": "access_token", "path": ".state", "output_mode": "content"}),
        ("list_files", {"pattern": "**/*.json"}),
        ("run_shell", {"command": f"cat {relative}"}),
        ("run_shell", {"command": "cat .state/mcp-oauth/*.json; grep -r CANARY . ; true"}),
        ("run_shell", {"command": f"cp {relative} copy.txt; cat copy.txt; true"}),
    ]
    async with Runtime(coding_tools(), root=root, mode="bypass") as rt:
        results = [await rt.call(name, args) for name, args in attacks]
    for (name, args), result in zip(attacks, results, strict=True):
        assert CANARY not in result.content, (name, args, result.content)
    assert not results[0].ok and "hidden from every tool" in results[0].content
    assert not (root / "copy.txt").exists() or CANARY not in (root / "copy.txt").read_text()


# -- the loopback listener ----------------------------------------------------------------------


async def test_the_loopback_listener_takes_only_this_sign_ins_redirect() -> None:
    async with LoopbackRedirect() as listener, httpx.AsyncClient(trust_env=False) as http:
        listener.expect("s1")
        assert listener.uri.startswith("http://127.0.0.1:")
        base = listener.uri
        other = (
            await http.get(base.replace("/callback", "/other") + "?code=x&state=s1")
        ).status_code
        forged = (await http.get(f"{base}?code=evil&state=guess")).status_code
        good = await http.get(f"{base}?code=c0de&state=s1&iss=https%3A%2F%2Fas.example")
        again = (await http.get(f"{base}?code=c0de2&state=s1")).status_code
        redirect = await listener.wait(WAIT)
    assert (other, forged, good.status_code, again) == (404, 400, 200, 409)
    assert "You can close this tab" in good.text
    assert (redirect.code, redirect.state, redirect.iss) == ("c0de", "s1", "https://as.example")


# -- handrail mcp login / logout ----------------------------------------------------------------


async def test_mcp_login_and_logout_from_the_command_line(
    docs: McpServerConfig, tmp_path: Path
) -> None:
    config = tmp_path / "xdg" / "handrail" / "mcp.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"mcpServers": {"docs": {"url": docs.url}}}))
    argv = [sys.executable, "-m", "handrail", "mcp"]
    login = await asyncio.create_subprocess_exec(
        *argv, "login", "docs", "--no-browser", "--root", str(tmp_path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert login.stderr is not None and login.stdout is not None
        url = ""
        async with asyncio.timeout(WAIT):
            for _ in range(20):  # the URL is on the third line; a bound all the same
                line = (await login.stderr.readline()).decode().strip()
                if line.startswith("http://"):
                    url = line
                    break
            await browser(url)
            out, _ = await login.communicate()
    finally:
        if login.returncode is None:
            login.kill()
            await login.wait()
    assert login.returncode == 0
    path = token_file(docs).path
    assert out.decode().replace(str(path), "<path>") == snapshot(
        "Signed in to MCP server 'docs' (3 tools); the sign-in is kept in <path> and refreshed as needed.\n"
    )
    assert await call(docs, tmp_path, "whoami") == ["token #1; sign-ins 1; refreshes 0"]

    logout = await asyncio.create_subprocess_exec(
        *argv, "logout", "docs", "--root", str(tmp_path), stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(logout.communicate(), WAIT)
    assert logout.returncode == 0 and not path.exists()
    assert out.decode().replace(str(path), "<path>") == snapshot(
        "Signed out of MCP server 'docs' (removed <path>).\n"
    )
