"""`handrail call`, `run` and `chat` ask the same question, in a real terminal.

Each front end is started in a pseudo-terminal (pexpect, drawn by pyte) against the same
scripted edit; the rows from the question to its key line must be the same in all three, and
each takes the same keys. `run` and `call` read the answer as a line, `chat` as a key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handrail.testing import ModelServer, Reply, ToolUse

from .pty_screen import CTRL_C, ENTER, Terminal, isolated_env

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
EDIT = {"file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}
KEY_LINE = "❯ choose y/s/p/n:"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    return root


@pytest.fixture
def start(tmp_path: Path, workspace: Path) -> Iterator[Callable[..., Terminal]]:
    """`start(*args)`: `python -m handrail *args` in a 100x40 pty, ended after the test."""
    started: list[Terminal] = []

    def run(*args: str) -> Terminal:
        argv = [sys.executable, "-m", "handrail", *args]
        term = Terminal(
            argv, cwd=workspace, env=isolated_env(tmp_path / "home"), columns=100, rows=40
        )
        started.append(term)
        return term

    yield run
    for term in started:
        term.close()


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """A model that reads calc.py, edits it, then answers."""
    script = [
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "calc.py"})]),
        Reply(text="Fixing it.", tool_calls=[ToolUse("edit_file", EDIT)]),
        Reply(text="Done."),
    ]
    with ModelServer(script) as served:
        yield served


def model(server: ModelServer) -> tuple[str, ...]:
    return ("--model", "anthropic:scripted", "--base-url", server.base_url("anthropic"))


def question(term: Terminal) -> list[str]:
    """Wait for the question; its rows from "Do you want" to the key line."""
    term.wait_for(lambda _: term.cursor_row().startswith(KEY_LINE))
    rows = term.text().splitlines()
    start = max(i for i, row in enumerate(rows) if row.startswith("Do you want to"))
    end = next(i for i in range(start, len(rows)) if rows[i].startswith(KEY_LINE))
    return [row.rstrip() for row in rows[start : end + 1]]


def test_call_run_and_chat_ask_the_same_question(
    start: Callable[..., Terminal], server: ModelServer, workspace: Path
) -> None:
    asked: dict[str, list[str]] = {}

    chat = start("chat", *model(server))
    chat.wait_for(lambda _: chat.cursor_row().startswith("❯"))
    chat.type_line("fix calc.py")
    asked["chat"] = question(chat)
    chat.send("n")
    chat.wait_for("What should the agent do instead?")
    chat.send(ENTER)
    chat.wait_for("Done.")
    chat.close()

    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "calc.py"})]),
        Reply(text="Fixing it.", tool_calls=[ToolUse("edit_file", EDIT)]),
        Reply(text="Done."),
    )
    run = start("run", *model(server), "fix calc.py")
    asked["run"] = question(run)
    run.send("n" + ENTER + ENTER)  # no, and nothing to say instead
    assert run.wait_exit() == 0

    call = start("call", "edit_file", *(f"{k}={v}" for k, v in EDIT.items()))
    asked["call"] = question(call)
    call.send("n" + ENTER + ENTER)
    assert call.wait_exit() == 1

    assert asked["chat"] == [
        "Do you want to make this edit?",
        "  1. [y] Yes",
        "  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session",
        "  3. [p] Yes, and always allow edit_file(calc.py) in this project (.handrail/settings.local.json)",
        "  4. [n] No, and tell the agent what to do instead",
        KEY_LINE,
    ]
    assert asked["run"] == asked["chat"]
    assert asked["call"] == asked["chat"]
    assert (workspace / "calc.py").read_text() == BUGGY
    assert server.problems == []


@pytest.mark.parametrize("front", ["run", "chat"])
def test_the_same_keys_answer_in_run_and_chat(
    front: str, start: Callable[..., Terminal], server: ModelServer, workspace: Path
) -> None:
    # `s`: yes, and don't ask again in this session; the edit is made.
    if front == "chat":
        term = start("chat", *model(server))
        term.wait_for(lambda _: term.cursor_row().startswith("❯"))
        term.type_line("fix calc.py")
        question(term)
        term.send("s")
    else:
        term = start("run", *model(server), "fix calc.py")
        question(term)
        term.send("s" + ENTER)
    text = term.wait_for("Done.")
    assert "  → allowed edit_file(calc.py) for this session" in text
    assert (workspace / "calc.py").read_text() == FIXED
    if front == "run":
        assert term.wait_exit() == 0
    assert server.problems == []


def test_run_tells_the_model_what_to_do_instead(
    start: Callable[..., Terminal], server: ModelServer, workspace: Path
) -> None:
    term = start("run", *model(server), "fix calc.py")
    question(term)
    term.send("n" + ENTER)
    term.wait_for(lambda _: "What should the agent do instead?" in term.cursor_row())
    term.send("use sed instead" + ENTER)
    assert term.wait_exit() == 0
    assert "  → declined: use sed instead" in term.text()
    assert (workspace / "calc.py").read_text() == BUGGY
    told = str(server.requests[2].body)
    assert "The user declined this call and said: use sed instead" in told


def test_ctrl_c_at_runs_question_interrupts_the_run(
    start: Callable[..., Terminal], server: ModelServer, workspace: Path
) -> None:
    term = start("run", *model(server), "fix calc.py")
    question(term)
    term.send(CTRL_C)  # the line being read is not waited for
    assert term.wait_exit() == 130
    assert (workspace / "calc.py").read_text() == BUGGY
    assert "carry on with: handrail run --resume" in term.text()
    assert server.problems == []
