"""`handrail chat` answers an MCP server's questions, in a real terminal, from the real server.

The project configures the official server-everything (`.handrail/mcp.json`, the folder
trusted with `handrail trust`); a scripted model calls its `trigger-elicitation-request` (a
form of every field kind) and `trigger-url-elicitation` (a page to open). The chat runs in a
pseudo-terminal drawn by pyte; the keys a person would press go in, and the assertions are on
the screen, on what the server got back (its tool result quotes the raw answer) and on the
page handed to the browser (`$BROWSER` is a script that writes down its argument).

The server is the attacker in the URL test: the model has it ask with a message full of
escape sequences and a fake key line, and a URL whose host hides behind `name@`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest

from handrail.testing import ModelServer, RecordedRequest, Reply, ScriptItem, ToolUse

from .pty_screen import CTRL_C, ENTER, ESC, Terminal, isolated_env

FORM_TOOL = "mcp__everything__trigger-elicitation-request"
URL_TOOL = "mcp__everything__trigger-url-elicitation"
HOSTILE = "\x1b[2J\x1b[31mSign in to continue\n❯ choose y/n: y\n  1. [y] Yes, open it"
LOOK_ALIKE = "https://accounts.example.com@evil.example/login?next=%2F"
CTRL_U = "\x15"
BACKSPACE = "\x7f"


class Peers(Protocol):
    """The npm peers (`mcp_peers` in tests/mcp/conftest.py)."""

    @property
    def everything(self) -> list[str]: ...


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def opened(tmp_path: Path) -> Path:
    """Where the `$BROWSER` script writes the page it was asked to open."""
    return tmp_path / "opened.txt"


@pytest.fixture
def env(home: Path, tmp_path: Path, opened: Path) -> dict[str, str]:
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    return isolated_env(home, BROWSER=str(browser))


@pytest.fixture
def workspace(tmp_path: Path, mcp_peers: Peers, env: dict[str, str]) -> Path:
    """A project whose `.handrail/mcp.json` runs server-everything, trusted."""
    root = tmp_path / "ws"
    (root / ".handrail").mkdir(parents=True)
    command, *args = mcp_peers.everything
    servers = {"mcpServers": {"everything": {"command": command, "args": args}}}
    (root / ".handrail" / "mcp.json").write_text(json.dumps(servers))
    trusted = subprocess.run(
        [sys.executable, "-m", "handrail", "trust", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert trusted.returncode == 0, trusted.stderr
    return root


@pytest.fixture
def chat(
    workspace: Path, env: dict[str, str]
) -> Iterator[Callable[..., tuple[Terminal, ModelServer]]]:
    """`chat(*script)`: a chat at its prompt in a 100x40 pty, its model playing `script`."""
    started: list[tuple[Terminal, ModelServer]] = []

    def start(*script: ScriptItem) -> tuple[Terminal, ModelServer]:
        server = ModelServer(script).start()
        argv = [sys.executable, "-m", "handrail", "chat", "--model", "anthropic:scripted"]
        argv += ["--base-url", server.base_url("anthropic")]
        argv += ["--allow", FORM_TOOL, "--allow", URL_TOOL]  # only the server's question asks
        term = Terminal(argv, cwd=workspace, env=env, columns=100, rows=40)
        started.append((term, server))
        term.wait_for(lambda _: term.cursor_row().startswith("❯"))
        return term, server

    yield start
    for term, server in started:
        term.close()
        server.close()


def at(term: Terminal, start: str) -> None:
    """Wait until the input line (the cursor's row) starts with `start`."""
    term.wait_for(lambda _: term.cursor_row().startswith(start))


def tool_result(request: RecordedRequest) -> str:
    """The text of the one tool result a request carries (the server's answer to its call)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "tool_result":
                found.append(json.dumps(node.get("content"), ensure_ascii=False))
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(request.body)
    assert len(found) == 1, found
    return json.loads(found[0]) if found[0].startswith('"') else found[0]


def raw_result(text: str) -> dict[str, Any]:
    """The `Raw result: {...}` server-everything quotes: what handrail answered it."""
    decoded = json.loads(text) if text.startswith("[") else text
    if isinstance(decoded, list):
        decoded = "".join(b.get("text", "") for b in decoded if isinstance(b, dict))
    start = decoded.index("Raw result: ") + len("Raw result: ")
    return json.JSONDecoder().raw_decode(decoded[start:].lstrip())[0]


def test_a_form_is_filled_in_field_by_field_and_the_server_gets_what_was_typed(
    chat: Callable[..., tuple[Terminal, ModelServer]],
) -> None:
    term, server = chat(Reply(tool_calls=[ToolUse(FORM_TOOL, {})]), Reply(text="Thanks."))
    term.type_line("sign me up")
    at(term, "❯ choose y/n:")
    screen = term.text()
    assert f"? MCP server everything ({FORM_TOOL}) asks:" in screen
    assert "  │ Please provide inputs for the following fields:" in screen
    assert "This form has 13 fields (1 required)." in screen
    term.send("y")
    at(term, "❯ String:")
    term.send(ENTER)  # required
    term.wait_for("✗ String is required: type text")
    term.send("Ada" + ENTER)
    at(term, "❯ Boolean:")
    term.send("maybe" + ENTER)
    term.wait_for("✗ 'maybe' is not yes or no: type y or n")
    term.send(CTRL_U + "y" + ENTER)
    # The default is in the input already: Enter sends it.
    at(term, "❯ String with default: It was a dark and stormy night.")
    term.send(ENTER + "ada@example" + ENTER)
    term.wait_for("is not an email address")
    term.send(".org" + ENTER)  # what was typed stays, to be put right
    at(term, "❯ String with uri format:")
    term.send(ENTER + ENTER)  # homepage and birthdate left out
    at(term, "❯ Integer: 42")
    term.send("7" + ENTER + ENTER)  # a key replaces the default; the number's is kept
    at(term, "❯ Untitled Single Select Enum: 1")
    term.send("3" + ENTER)
    at(term, "❯ Untitled Multiple Select Enum: 1")
    term.send(BACKSPACE + "2,3" + ENTER + "Wonder Woman" + ENTER + ENTER + "2" + ENTER)
    at(term, "❯ choose y/e/n:")
    summary = term.text()
    assert "    Untitled Multiple Select Enum: Piano, Violin" in summary
    assert "    Titled Single Select Enum: Wonder Woman" in summary
    term.send("y")
    text = term.wait_for("Thanks.")
    # What was asked and what was sent stay in the scrollback.
    assert "  → sent String: Ada • Boolean: yes • String with default: It was a dark" in text
    assert text.count("  │ Please provide inputs for the following fields:") == 1
    assert raw_result(tool_result(server.requests[1])) == {
        "action": "accept",
        "content": {
            "name": "Ada",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "email": "ada@example.org",
            "integer": 7,
            "number": 3.14,
            "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Violin"],
            "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-2",
        },
    }
    assert server.problems == []


def test_escape_declines_the_form_midway(
    chat: Callable[..., tuple[Terminal, ModelServer]],
) -> None:
    term, server = chat(Reply(tool_calls=[ToolUse(FORM_TOOL, {})]), Reply(text="Thanks."))
    term.type_line("sign me up")
    at(term, "❯ choose y/n:")
    term.send("y")
    at(term, "❯ String:")
    term.send("Ada" + ENTER)
    at(term, "❯ Boolean:")
    term.send(ESC)
    text = term.wait_for("Thanks.")
    assert "  → declined (nothing was sent)" in text
    assert raw_result(tool_result(server.requests[1])) == {"action": "decline"}


def test_a_page_is_shown_spelled_out_with_its_real_host_and_opened_on_a_yes(
    chat: Callable[..., tuple[Terminal, ModelServer]], opened: Path
) -> None:
    call = ToolUse(URL_TOOL, {"url": LOOK_ALIKE, "message": HOSTILE})
    term, server = chat(Reply(tool_calls=[call]), Reply(text="Thanks."))
    term.type_line("log me in")
    at(term, "❯ choose y/n:")
    rows = term.display()
    # The server's words are text behind the bar: its escape sequences spelled (the screen
    # was not cleared: the banner is still there), its fake key line and choice not a row of
    # their own.
    assert term.text().startswith("handrail")
    assert "  │ \\x1b[2J\\x1b[31mSign in to continue" in rows
    assert "  │ ❯ choose y/n: y" in rows
    assert [r for r in rows if r.startswith("❯ choose")] == ["❯ choose y/n:"]
    assert [r for r in rows if "[y] Yes, open it" in r] == [
        "  │   1. [y] Yes, open it",
        "  1. [y] Yes, open it",
    ]
    # The host the browser would go to, not the one before the @.
    assert f"  {LOOK_ALIKE}" in rows
    assert "  host: evil.example" in rows
    assert any("The text before @ (accounts.example.com) is not the site" in r for r in rows)
    assert not opened.exists()
    term.send("y")
    text = term.wait_for("Thanks.")
    assert "  → opened in your browser" in text
    assert opened.read_text() == LOOK_ALIKE
    assert raw_result(tool_result(server.requests[1])) == {"action": "accept"}


def test_no_to_a_page_opens_nothing(
    chat: Callable[..., tuple[Terminal, ModelServer]], opened: Path
) -> None:
    call = ToolUse(URL_TOOL, {"url": "https://example.org/pay"})
    term, server = chat(Reply(tool_calls=[call]), Reply(text="Thanks."))
    term.type_line("pay")
    at(term, "❯ choose y/n:")
    term.send("n")
    text = term.wait_for("Thanks.")
    assert "  → declined (nothing was sent)" in text
    assert raw_result(tool_result(server.requests[1])) == {"action": "decline"}
    assert not opened.exists()


def test_ctrl_c_at_a_form_interrupts_and_the_next_question_is_asked(
    chat: Callable[..., tuple[Terminal, ModelServer]],
) -> None:
    ask = Reply(tool_calls=[ToolUse(FORM_TOOL, {})])
    term, server = chat(ask, ask, Reply(text="Thanks."))
    term.type_line("sign me up")
    at(term, "❯ choose y/n:")
    term.send("y")
    at(term, "❯ String:")
    term.send(CTRL_C)
    term.wait_for("Interrupted. Tell the agent what to do instead.")
    term.wait_for(lambda _: term.cursor_row().startswith("❯") and "choose" not in term.cursor_row())
    # The question was let go with the turn (declined): the next one is asked, not stuck
    # behind it.
    assert "  → declined (nothing was sent)" in term.text()
    term.type_line("try again")
    term.wait_for(
        lambda text: (
            text.count("This form has 13 fields") == 1 and "❯ choose y/n:" in term.cursor_row()
        )
    )
    term.send(ESC)
    term.wait_for("Thanks.")
    assert server.problems == []
