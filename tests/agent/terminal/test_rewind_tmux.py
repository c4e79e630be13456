"""`/rewind` in `handrail chat`, in a real tmux pane, against a scripted model over loopback.

Two prompts change files through the real tools (an edit, then a sandboxed shell line that
writes one file and deletes another); `/rewind` lists them, `/rewind 1` asks what to restore
and puts everything back byte for byte, the conversation goes back to before the first prompt
and that prompt's text waits in the input box. A file changed by hand is overwritten only
after a yes asked through the terminal's one prompt.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from handrail.testing import ModelServer, Reply, ToolUse

from .pty_screen import isolated_env
from .tmux_screen import Tmux, have_tmux

pytestmark = pytest.mark.skipif(not have_tmux(), reason="tmux is not installed")

GREET = b'def greet(n):\r\n    return "Hello, " + n\r\n'
"""CRLF line endings: the restore must give back the same bytes, not the same text."""
OLD = b"\x00\x01 binary and kept\n"
FIRST = "First: say Hi in greet.py"
SECOND = "Second: make notes"
CHOICES = (
    "  1. [b] Restore code and conversation",
    "  2. [c] Restore conversation only (the files stay as they are)",
    "  3. [f] Restore code only (the conversation goes on)",
    "  4. [n] Cancel",
)


def script() -> list[Reply]:
    return [
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "greet.py"})]),
        Reply(
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "greet.py", "old_string": "Hello, ", "new_string": "Hi, "},
                )
            ]
        ),
        Reply(text="Edited."),
        Reply(
            tool_calls=[
                ToolUse("run_shell", {"command": "printf 'made\\n' > notes.txt && rm old.bin"})
            ]
        ),
        Reply(text="Made the notes."),
    ]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[tuple[Tmux, ModelServer, Path]]:
    """A chat (mode bypass: nothing asks) in a 100x40 pane after the two prompts."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_bytes(GREET)
    (root / "old.bin").write_bytes(OLD)
    with ModelServer(script()) as server:
        argv = [sys.executable, "-m", "handrail", "chat", "--model", "anthropic:scripted"]
        argv += ["--base-url", server.base_url("anthropic"), "--mode", "bypass"]
        env = isolated_env(tmp_path / "home")
        with Tmux(
            argv, socket=tmp_path / "t.sock", cwd=root, env=env, columns=100, rows=40
        ) as term:
            prompt(term)
            send(term, FIRST)
            term.wait_for("Edited.")
            prompt(term)
            send(term, SECOND)
            term.wait_for("Made the notes.")
            prompt(term)
            assert (root / "greet.py").read_bytes() == GREET.replace(b"Hello", b"Hi")
            assert (root / "notes.txt").read_text() == "made\n"
            assert not (root / "old.bin").exists()
            yield term, server, root


def prompt(term: Tmux, text: str = "") -> None:
    """Wait until the prompt takes input (its status line is the bottom row), holding `text`."""
    term.wait_for(
        lambda _: (
            term.display()[-1].startswith(" anthropic:scripted")
            and term.cursor_row().startswith(f"❯ {text}".rstrip())
        )
    )


def send(term: Tmux, text: str) -> None:
    term.type_text(text)
    term.send("Enter")


def asked(term: Tmux, keys: str) -> list[str]:
    """Wait until a question waits for its key (`❯ choose KEYS:`); the visible rows."""
    term.wait_for(lambda _: term.cursor_row().startswith(f"❯ choose {keys}:"))
    return term.display()


def test_rewind_puts_the_files_and_the_conversation_back_and_the_prompt_in_the_input(
    chat: tuple[Tmux, ModelServer, Path],
) -> None:
    term, server, root = chat
    send(term, "/rewind")
    text = term.wait_for("go back with /rewind N")
    assert "1.  First: say Hi in greet.py  greet.py" in text, text
    assert "2.  Second: make notes" in text and "notes.txt" in text and "old.bin" in text, text
    prompt(term)

    send(term, "/rewind 1")
    rows = asked(term, "b/c/f/n")
    screen = "\n".join(rows)
    assert f'Go back to where prompt 1 began ("{FIRST}")?' in screen, screen
    for choice in CHOICES:
        assert any(row.startswith(choice) for row in rows), screen
    term.send("1")
    text = term.wait_for("its text is back in the input box")
    assert "→ Restore code and conversation" in text, text
    assert "went back to prompt 1" in text and "the conversation is back to before prompt 1" in text
    assert "to undo the file changes: /rewind undo" in text, text

    # The files as the first prompt found them, byte for byte: the edit undone, the shell
    # line's new file gone and the file it deleted back.
    assert tree(root) == {"greet.py": GREET, "old.bin": OLD}
    # The prompt's text waits in the input box; sent again, the model sees no earlier turn.
    prompt(term, FIRST)
    server.push(Reply(text="Starting over."))
    term.send("Enter")
    term.wait_for("Starting over.")
    messages = server.requests[-1].body["messages"]
    assert len(messages) == 1, json.dumps(messages)[:2000]
    sent = json.dumps(messages)
    assert FIRST in sent and SECOND not in sent and "Edited." not in sent

    # /rewind undo takes the file changes back (after a yes).
    prompt(term)
    send(term, "/rewind undo")
    asked(term, "y/n")
    term.send("y")
    term.wait_for("/rewind undo again takes this back")
    assert (root / "greet.py").read_bytes() == GREET.replace(b"Hello", b"Hi")
    assert (root / "notes.txt").read_text() == "made\n"
    assert not (root / "old.bin").exists()
    prompt(term)
    term.send("C-d")
    assert term.wait_exit() == 0
    assert server.problems == []


def test_a_file_changed_by_hand_is_kept_unless_the_person_says_yes(
    chat: tuple[Tmux, ModelServer, Path],
) -> None:
    term, server, root = chat
    canary = "written by hand, not by the agent\n"
    (root / "notes.txt").write_text(canary)
    send(term, "/rewind 2")
    asked(term, "b/c/f/n")
    term.send("f")  # code only
    # The restore's own question, through the same prompt: overwrite what was changed by hand?
    rows = asked(term, "y/n")
    assert "would overwrite changes made outside this session: notes.txt" in "".join(rows)
    term.send("n")
    text = term.wait_for("nothing was rewound")
    assert "notes.txt" in text.split("nothing was rewound")[-1], text
    assert (root / "notes.txt").read_text() == canary
    assert not (root / "old.bin").exists()
    # Nothing moved: both prompts are still there to go back to.
    prompt(term)
    send(term, "/rewind")
    text = term.wait_for(lambda t: t.count("go back with /rewind N") == 1)
    assert "2.  Second: make notes" in text, text

    # Asked again, a yes overwrites it, and the conversation goes on as it was.
    prompt(term)
    send(term, "/rewind 2")
    asked(term, "b/c/f/n")
    term.send("3")
    asked(term, "y/n")
    term.send("y")
    text = term.wait_for("the conversation goes on as it was")
    assert "overwrote changes made outside the session: notes.txt" in text, text
    assert tree(root) == {"greet.py": GREET.replace(b"Hello", b"Hi"), "old.bin": OLD}
    prompt(term)  # only the conversation rewind puts a prompt back in the input box
    term.send("C-d")
    assert term.wait_exit() == 0
    assert server.problems == []
