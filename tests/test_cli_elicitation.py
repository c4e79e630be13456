"""`handrail call` and `run` answer an MCP server's questions a line at a time, or decline them.

The official server-everything is configured for a trusted project (`.handrail/mcp.json`). On
a terminal (a pty drawn by pyte), `call` and `run` ask its form one field per line and its
page to open with a yes or no; `$BROWSER` is a script that writes down the page it was given.
Without a terminal, `run` declines at once with a notice naming the server on stderr: the
run ends (bounded by the test's timeout) and the model is told the server got a "decline".
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from handrail.testing import ModelServer, Reply, ToolUse

from .agent.terminal.pty_screen import Terminal, isolated_env
from .mcp.conftest import Peers

FORM_TOOL = "mcp__everything__trigger-elicitation-request"
URL_TOOL = "mcp__everything__trigger-url-elicitation"
# The fields of the form in order, answered: name, check, then every default kept or the
# field left out, but the integer, the friend and the pet.
LINES = ["y", "Ada", "y", "", "", "", "", "101", "7", "", "Joey", "", "", "", "dogs", "y"]
SENT = {
    "name": "Ada",
    "check": True,
    "firstLine": "It was a dark and stormy night.",
    "integer": 7,
    "number": 3.14,
    "untitledSingleSelectEnum": "Joey",
    "untitledMultipleSelectEnum": ["Guitar"],
    "titledSingleSelectEnum": "hero-1",
    "titledMultipleSelectEnum": ["fish-1"],
    "legacyTitledEnum": "pet-2",
}


@pytest.fixture
def opened(tmp_path: Path) -> Path:
    return tmp_path / "opened.txt"


@pytest.fixture
def env(tmp_path: Path, opened: Path) -> dict[str, str]:
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    return isolated_env(tmp_path / "home", BROWSER=str(browser))


@pytest.fixture
def workspace(tmp_path: Path, mcp_peers: Peers, env: dict[str, str]) -> Path:
    """A trusted project whose `.handrail/mcp.json` runs server-everything."""
    root = tmp_path / "ws"
    (root / ".handrail").mkdir(parents=True)
    command, *args = mcp_peers.everything
    servers = {"mcpServers": {"everything": {"command": command, "args": args}}}
    (root / ".handrail" / "mcp.json").write_text(json.dumps(servers))
    trusted = handrail(root, env, "trust", str(root))
    assert trusted.returncode == 0, trusted.stderr
    return root


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for term in started:
        term.close()


def handrail(
    cwd: Path, env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """`handrail *args` with pipes for stdin, stdout and stderr (no terminal at all)."""
    return subprocess.run(
        [sys.executable, "-m", "handrail", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def on_terminal(terminals: list[Terminal], cwd: Path, env: dict[str, str], *args: str) -> Terminal:
    term = Terminal([sys.executable, "-m", "handrail", *args], cwd=cwd, env=env, rows=50)
    terminals.append(term)
    return term


def answer(term: Terminal, lines: list[str]) -> None:
    """Type each line once the prompt before it is on the cursor's row."""
    for i, line in enumerate(lines):
        # A prompt ends with ": "; the count of them tells this prompt from the last one.
        term.wait_for(lambda _, n=i: term.cursor_row().endswith(":") and prompts(term) == n + 1)
        term.send(line + "\r")


def prompts(term: Terminal) -> int:
    return sum(1 for row in term.text().splitlines() if row.startswith("❯ "))


def told(body: object) -> str:
    """The text of the tool result the model got (server-everything's answer, as it wrote it)."""
    if isinstance(body, dict):
        return "".join(told(v) for v in cast(dict[str, object], body).values())
    if isinstance(body, list):
        return "".join(told(v) for v in cast(list[object], body))
    return body if isinstance(body, str) and "Raw result: " in body else ""


def raw_result(text: str) -> dict[str, Any]:
    """The `Raw result: {...}` server-everything quotes: what handrail answered it."""
    start = text.index("Raw result: ") + len("Raw result: ")
    return json.JSONDecoder().raw_decode(text[start:].lstrip())[0]


def test_call_asks_the_form_a_field_per_line(
    terminals: list[Terminal], workspace: Path, env: dict[str, str]
) -> None:
    term = on_terminal(terminals, workspace, env, "call", "--yes", FORM_TOOL)
    answer(term, LINES)
    assert term.wait_exit(60) == 0
    text = term.text()
    assert f"? MCP server everything ({FORM_TOOL}) asks:" in text
    assert "  │ Please provide inputs for the following fields:" in text
    # (The pty does not echo what is typed: each prompt is followed by what it printed next.)
    assert "❯ Integer [42]:   ✗ 101 is more than 100: type a whole number from 1 to 100" in text
    assert "❯ Integer [42]: Field 8 of 13: Number in range 1-1000" in text
    assert "  → sent String: Ada • Boolean: yes" in text
    assert raw_result(text) == {"action": "accept", "content": SENT}


def test_call_opens_the_page_only_after_a_yes(
    terminals: list[Terminal], workspace: Path, env: dict[str, str], opened: Path
) -> None:
    url = "https://example.org/authorize?state=1"
    term = on_terminal(terminals, workspace, env, "call", "--yes", URL_TOOL, f"url={url}")
    term.wait_for(lambda _: term.cursor_row().startswith("❯ choose y/n:"))
    assert "  host: example.org" in term.text()
    assert not opened.exists()
    term.send("y\r")
    assert term.wait_exit(60) == 0
    assert "  → opened in your browser" in term.text()
    assert opened.read_text() == url


def test_run_on_a_terminal_asks_the_form_too(
    terminals: list[Terminal], workspace: Path, env: dict[str, str]
) -> None:
    script = [Reply(tool_calls=[ToolUse(FORM_TOOL, {})]), Reply(text="Thanks.")]
    with ModelServer(script) as server:
        model = ["--model", "anthropic:scripted", "--base-url", server.base_url("anthropic")]
        term = on_terminal(
            terminals, workspace, env, "run", *model, "--allow", FORM_TOOL, "sign me up"
        )
        answer(term, LINES)
        assert term.wait_exit(60) == 0
        assert "Thanks." in term.text()
        assert raw_result(told(server.requests[1].body)) == {"action": "accept", "content": SENT}
    assert server.problems == []


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_run_without_a_terminal_declines_with_a_notice_naming_the_server(
    fmt: str, workspace: Path, env: dict[str, str]
) -> None:
    script = [Reply(tool_calls=[ToolUse(FORM_TOOL, {})]), Reply(text="Thanks.")]
    with ModelServer(script) as server:
        model = ["--model", "anthropic:scripted", "--base-url", server.base_url("anthropic")]
        args = ["run", *model, "--allow", FORM_TOOL, "--output-format", fmt, "sign me up"]
        out = handrail(workspace, env, *args)
        assert out.returncode == 0, out.stderr
        notices = [line for line in out.stderr.splitlines() if "asked to fill in a form" in line]
        assert notices == [
            f"handrail: MCP server `everything` asked to fill in a form during {FORM_TOOL} "
            "(Please provide inputs for the following fields:): declined, because nobody can "
            "answer in a headless run; run it on a terminal (handrail chat, or handrail run "
            "with text output) to answer"
        ]
        assert raw_result(told(server.requests[1].body)) == {"action": "decline"}
        # Said once: the MCP client's own log line does not repeat it.
        assert "nobody could answer" not in out.stderr
    if fmt == "json":
        assert json.loads(out.stdout)["result"] == "Thanks."
    assert server.problems == []
