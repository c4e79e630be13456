"""`handrail chat` in tmux at 80x15: the question's choices stay on screen, Ctrl-C twice quits.

A short terminal used to push an approval's choices off the screen: the question was printed
to the scrollback with its whole diff, and the waiting call's block, diff again, stayed in the
live region below it. These tests run the chat in a tmux pane of 80 columns and 15 rows
against a scripted model server (loopback) and read the screen back from tmux itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.testing import ModelServer, Reply, ToolUse

from .pty_screen import isolated_env
from .tmux_screen import Tmux, have_tmux

pytestmark = pytest.mark.skipif(not have_tmux(), reason="tmux is not installed")

OLD = "".join(f"def f{i}(x):\n    return x - {i}\n" for i in range(6))
NEW = OLD.replace(" - ", " + ")
DIFF_ROWS = 19
"""The edit's diff as shown: its hunk header, 6 unchanged, 6 removed and 6 added lines."""
SCRIPT = (
    Reply(tool_calls=[ToolUse("read_file", {"file_path": "calc.py"})]),
    Reply(
        text="Fixing every function.",
        tool_calls=[
            ToolUse("edit_file", {"file_path": "calc.py", "old_string": OLD, "new_string": NEW})
        ],
    ),
    Reply(text="All fixed."),
)
CHOICES = (
    "  1. [y] Yes",
    "  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session",
    "  3. [p] Yes, and always allow edit_file(calc.py) in this project",
    "  4. [n] No, and tell the agent what to do instead",
)
KEY_LINE = "❯ choose y/s/p/n:"


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[tuple[Tmux, ModelServer, Path]]:
    """A chat in an 80x15 tmux pane, waiting at the prompt; its model server; its workspace."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(OLD)
    with ModelServer(SCRIPT) as server:
        argv = [sys.executable, "-m", "handrail", "chat", "--model", "anthropic:scripted"]
        argv += ["--base-url", server.base_url("anthropic")]
        env = isolated_env(tmp_path / "home")
        with Tmux(argv, socket=tmp_path / "t.sock", cwd=root, env=env) as term:
            prompt(term)
            yield term, server, root


def prompt(term: Tmux) -> None:
    """Wait until the prompt takes input (its status line is the bottom row)."""
    term.wait_for(lambda _: term.display()[-1].startswith(" anthropic:scripted"))


def asked(term: Tmux) -> list[str]:
    """Wait until the edit's question waits for its key; returns the visible rows."""
    term.wait_for(lambda _: term.cursor_row().startswith(KEY_LINE))
    return term.display()


def test_at_80_by_15_the_questions_choices_stay_on_screen(
    chat: tuple[Tmux, ModelServer, Path],
) -> None:
    term, server, root = chat
    term.type_text("fix every function in calc.py")
    term.send("Enter")
    rows = asked(term)
    screen = "\n".join(rows)
    # Every choice and the key line are on the visible screen, the question above them.
    assert "Do you want to make this edit?" in rows, screen
    for choice in CHOICES:
        assert any(row.startswith(choice) for row in rows), screen
    assert rows.index("Do you want to make this edit?") < rows.index(KEY_LINE)
    # The diff is cut to what fits, drawn once, and says how many of its lines are hidden.
    assert screen.count("@@ -1,12 +1,12 @@") == 1, screen
    hidden = re.search(r"… \+(\d+) lines hidden \(v shows all\)", screen)
    assert hidden is not None, screen
    shown = [r for r in rows if "@@ -1" in r or re.match(r"^    [-+ ] *(def|return) ", r)]
    assert len(shown) + int(hidden.group(1)) == DIFF_ROWS, screen
    assert (root / "calc.py").read_text() == OLD

    # `v` prints the whole diff above; the question stays, whole, at the bottom.
    term.send("v")
    term.wait_for("+    return x + 5")
    rows = asked(term)
    for choice in CHOICES:
        assert any(row.startswith(choice) for row in rows), "\n".join(rows)

    term.send("y")
    text = term.wait_for("All fixed.")
    assert re.search(r"^\? Edit calc\.py  \+6 -6\n  → allowed once$", text, re.M), text
    assert (root / "calc.py").read_text() == NEW
    prompt(term)
    term.send("C-d")
    assert term.wait_exit() == 0
    assert server.problems == []


def test_ctrl_c_twice_at_a_question_quits(chat: tuple[Tmux, ModelServer, Path]) -> None:
    term, server, root = chat
    term.type_text("fix every function in calc.py")
    term.send("Enter")
    asked(term)
    term.send("C-c")
    term.send("C-c")  # the turn may be over already: the prompt takes it as the second
    assert term.wait_exit() == 130
    assert "Press Ctrl-C again to exit" not in term.text()
    assert (root / "calc.py").read_text() == OLD
    assert server.problems == []
