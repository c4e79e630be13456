"""`handrail chat` in a real terminal: a pty read by a terminal emulator, a scripted model.

Each test starts `python -m handrail chat` (or `handrail` alone) in a pseudo-terminal of a
fixed size with its own home, state and config folders, talking to a
`handrail.testing.ModelServer` in this process over loopback HTTP. Keys are typed into the pty
and the assertions are on the screen a person would see (pyte draws every byte, the
scrollback included), on the files in the workspace, on the processes the agent started and
on what the model was sent. `server.problems == []` at the end of a test means every tool call
the model made got its result, however the turn ended.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from handrail.testing import ModelServer, RecordedRequest, Reply, ScriptItem, ToolUse

from .pty_screen import (
    CTRL_C,
    CTRL_D,
    ENTER,
    ESC,
    SHIFT_TAB,
    WAIT,
    Terminal,
    find_processes,
    isolated_env,
    kill_quietly,
    wait_gone,
)

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TOOLBAR = re.compile(r"^ anthropic:scripted \S mode (\w+)")
"""The status line at the bottom while the prompt waits for input (the mode in group 1)."""


# -- set-up ------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """HOME, state and config of the child: all under the test's folder."""
    return tmp_path / "home"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "README.md").write_text("# calc\n")
    return root


@pytest.fixture
def serve() -> Iterator[Callable[..., ModelServer]]:
    """`serve(*script)`: a started model server, closed after the test."""
    servers: list[ModelServer] = []

    def start(*script: ScriptItem) -> ModelServer:
        server = ModelServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def spawn(home: Path, workspace: Path) -> Iterator[Callable[..., Terminal]]:
    """`spawn(server, *args, columns=, rows=, env=, command=)`: a chat in a pty, ended after."""
    started: list[Terminal] = []

    def start(
        server: ModelServer,
        *args: str,
        columns: int = 100,
        rows: int = 30,
        canvas_columns: int | None = None,
        env: dict[str, str] | None = None,
        command: Sequence[str] = ("chat",),
    ) -> Terminal:
        argv = [
            sys.executable,
            "-m",
            "handrail",
            *command,
            "--model",
            "anthropic:scripted",
            "--base-url",
            server.base_url("anthropic"),
            *args,
        ]
        term = Terminal(
            argv,
            cwd=workspace,
            env=isolated_env(home, **(env or {})),
            columns=columns,
            rows=rows,
            canvas_columns=canvas_columns,
        )
        started.append(term)
        return term

    yield start
    for term in started:
        term.close()


def ready(term: Terminal) -> None:
    """Wait until the prompt takes input: its status line is drawn and the cursor is on it."""
    mark = re.compile(r"^[❯>]")
    term.wait_for(
        lambda _: (
            TOOLBAR.match(term.display()[-1]) is not None
            and mark.match(term.cursor_row()) is not None
        )
    )


def mode_shown(term: Terminal) -> str | None:
    """The mode on the status line."""
    match = TOOLBAR.match(term.display()[-1])
    return match.group(1) if match else None


def say(term: Terminal, text: str) -> None:
    """Type a message at the prompt and send it."""
    ready(term)
    term.type_line(text)


ANSWERED = re.compile(r"^  [→>-]+ (allowed|declined|yes|no)\b", re.M)
"""The line an answered question leaves in the scrollback (`  → allowed once`)."""


def question(term: Terminal, nth: int = 1, keys: str = "y/s/p/n") -> str:
    """Wait until the `nth` question of the session waits for its answer; returns the screen.

    (Counting the answered ones keeps a test from answering the previous question again
    while its key line is still on the screen.)
    """
    return term.wait_for(
        lambda text: (
            len(ANSWERED.findall(text)) == nth - 1 and f"choose {keys}:" in term.cursor_row()
        )
    )


def choose(term: Terminal, key: str, nth: int = 1) -> None:
    """Answer the `nth` approval question with `key`."""
    question(term, nth)
    term.send(key)


def request_text(request: RecordedRequest) -> str:
    """Everything the model was sent in one request, as searchable text."""
    return json.dumps(request.body, ensure_ascii=False)


def tool_results(request: RecordedRequest) -> list[str]:
    """The contents of the tool results in one (Anthropic Messages) request, oldest first."""
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
    return found


def assert_no_leftovers(term: Terminal) -> None:
    """The live region left nothing behind: no working line, no question, no spinner."""
    text = term.text()
    assert "esc to interrupt" not in text, text
    assert "choose y/s" not in text, text
    assert "[n] No" not in text, text
    assert "What should the agent do instead?" not in text, text


def edit(old: str, new: str) -> ToolUse:
    return ToolUse("edit_file", {"file_path": "calc.py", "old_string": old, "new_string": new})


def shell(command: str) -> ToolUse:
    return ToolUse("run_shell", {"command": command})


FIX_SCRIPT: tuple[ScriptItem, ...] = (
    Reply(
        text="Let me look at the code.",
        tool_calls=[ToolUse("read_file", {"file_path": "calc.py"}), ToolUse("list_files", {})],
    ),
    Reply(text="Found it: `add` subtracts.", tool_calls=[edit("return a - b", "return a + b")]),
    Reply(tool_calls=[shell("python -c 'import calc; print(calc.add(2, 3))'")]),
    Reply(tool_calls=[shell("python -c 'print(40 + 2)'")]),
    Reply(text="## Fixed\n\nThe function now **adds**:\n\n- `add(2, 3)` returns 5\n"),
)
"""Reads, an edit, two commands of one prefix, a Markdown answer."""


def fix_the_bug(term: Terminal, *, edit_key: str = "y", shell_key: str = "s") -> str:
    """Hold the FIX_SCRIPT conversation; returns the screen at its end.

    Each question is checked as it waits: its choices, numbered, start a row each, and the
    key line is the last row of the region.
    """
    say(term, "fix the bug in calc.py")
    for nth, key in enumerate((edit_key, shell_key), 1):
        question(term, nth)
        rows = term.display()
        assert any(r.startswith("  1. [y] Yes") for r in rows), rows
        assert any(r.startswith("  4. [n] No") for r in rows), rows
        term.send(key)
    term.wait_for("returns 5")
    ready(term)
    return term.text()


# -- 1. a coding conversation ------------------------------------------------------------------


def test_a_conversation_reads_edits_runs_and_answers(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(*FIX_SCRIPT)
    term = spawn(server)
    say(term, "fix the bug in calc.py")

    # The reads collapse into one line.
    term.wait_for(re.compile(r"✓ Read 1 file, listed 1 directory"))
    # The edit's approval shows the proposed change, and nothing is written before the answer.
    asking = question(term)
    assert "Do you want to make this edit?" in asking
    assert "-return a - b" in asking and "+return a + b" in asking, asking
    screen = term.display()
    for row in (
        "  1. [y] Yes",
        "  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session",
        "  3. [p] Yes, and always allow edit_file(calc.py) in this project",
        "  4. [n] No, and tell the agent what to do instead",
        "❯ choose y/s/p/n:",
    ):
        assert any(line.startswith(row) for line in screen), screen
    # Drawn once: the waiting call is the question's, not also the live region's.
    assert asking.count("+return a + b") == 1, asking
    assert (workspace / "calc.py").read_text() == BUGGY
    choose(term, "y")

    text = question(term, 2)
    assert "Do you want to run this command?" in text
    assert (workspace / "calc.py").read_text() == FIXED
    # The committed edit: its counts, and the diff in the file's context.
    assert re.search(r"✓ Edit calc\.py  \+1 -1 \(\d+ ms\)", text), text
    assert "    -    return a - b" in text and "    +    return a + b" in text
    assert re.search(r"^\? Edit calc\.py  \+1 -1\n  → allowed once$", text, re.M), text
    choose(term, "s", 2)  # and don't ask again for python commands in this session

    term.wait_for("returns 5")
    ready(term)
    text = term.text()
    assert "allowed run_shell(python:*) for this session" in text
    # The command's output, under its line.
    assert re.search(r"✓ Run python -c 'import calc; print\(calc\.add\(2, 3\)\)'  exit 0", text)
    assert "  └ 5" in text
    # The second command of the same prefix ran without asking: one question, answered.
    assert len(ANSWERED.findall(text)) == 2
    assert len(re.findall(r"^\? Run python -c", text, re.M)) == 1, text
    assert re.search(r"✓ Run python -c 'print\(40 \+ 2\)'  exit 0", text)
    assert "  └ 42" in text
    # The answer is rendered Markdown: no stars, no backticks, a bullet.
    assert "The function now adds:" in text
    assert " • add(2, 3) returns 5" in text
    assert "**" not in text and "`add" not in text
    assert_no_leftovers(term)
    # Each finished block is in the scrollback once (the live region's repaints are not).
    assert text.count("Let me look at the code.") == 1
    assert text.count("Read 1 file, listed 1 directory") == 1
    assert text.count("? Edit calc.py") == 1  # the question; the committed block is ✓
    assert len(server.requests) == 5
    output = tool_results(server.requests[3])[-1]  # the command's output went to the model
    assert re.search(r"\b5\b", output), output
    assert server.problems == []

    term.send(CTRL_D)
    assert term.wait_exit() == 0


# -- 2. a denial, with what to do instead ------------------------------------------------------


def test_a_denied_edit_tells_the_model_what_to_do_instead(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(
        Reply(text="Fixing it.", tool_calls=[edit("return a - b", "return a + b")]),
        Reply(text="Then I run it.", tool_calls=[shell("python -c 'print(1)' > ran.txt")]),
        Reply(text="Or write it.", tool_calls=[edit("return a - b", "return b + a")]),
        Reply(text="Understood: I will use pytest."),
    )
    term = spawn(server)
    say(term, "fix the bug")
    choose(term, "n")
    term.wait_for("What should the agent do instead?")
    for ch in "use pytest insteaX":
        term.send(ch)
    term.send("\x7f")  # backspace
    term.send("d")
    term.wait_for(lambda _: "use pytest instead" in term.cursor_row())
    term.send(ENTER)
    term.wait_for("declined: use pytest instead")

    # The next call is declined with Esc: no reason, and the model is told not to retry.
    choose(term, ESC, 2)
    # The third: No, then Esc at the reason line sends no reason.
    choose(term, "n", 3)
    term.wait_for(lambda _: "What should the agent do instead?" in term.cursor_row())
    term.send(ESC)
    term.wait_for("Understood: I will use pytest.")
    ready(term)

    assert (workspace / "calc.py").read_text() == BUGGY
    assert not (workspace / "ran.txt").exists()
    after_edit = tool_results(server.requests[1])[-1]
    assert "The user declined this call and said: use pytest instead" in after_edit
    for after in (server.requests[2], server.requests[3]):
        assert "The user declined this call. Do not retry it" in tool_results(after)[-1]
    text = term.text()
    assert re.search(r"⊘ Edit calc\.py", text), text
    assert_no_leftovers(term)
    assert server.problems == []


def test_always_allow_is_saved_for_the_workspace(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(
        Reply(tool_calls=[shell("python -c 'print(6 * 7)'")]),
        Reply(text="It is 42."),
        Reply(tool_calls=[shell("python -c 'print(7 * 6)'")]),
        Reply(text="Still 42."),
    )
    term = spawn(server)
    say(term, "what is 6 times 7?")
    choose(term, "p")
    text = term.wait_for("It is 42.")
    assert "allowed run_shell(python:*); saved in" in text
    saved = json.loads((workspace / ".handrail" / "settings.local.json").read_text())
    assert "run_shell(python:*)" in json.dumps(saved)
    ready(term)
    term.send(CTRL_D)
    assert term.wait_exit() == 0

    # A new session in the same workspace does not ask again.
    again = spawn(server)
    say(again, "and 7 times 6?")
    text = again.wait_for("Still 42.")
    assert "Do you want to run this command?" not in text
    assert re.search(r"✓ Run python -c 'print\(7 \* 6\)'  exit 0", text), text
    assert server.problems == []


def test_escape_sequences_from_the_model_and_commands_are_shown_not_obeyed(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    # Set the window title, clear the screen and the scrollback, switch to the alternate screen.
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[3J\x1b[?1049h"
    printf = r"printf '\033]0;pwned\007\033[2J\033[3J\033[?1049h'; echo end-of-output"
    server = serve(
        Reply(text=f"Look at this: {hostile} and more.", tool_calls=[shell(printf)]),
        Reply(text=f"Finished {hostile} here."),
    )
    term = spawn(server, "--mode", "bypass")
    say(term, "print something odd")
    text = term.wait_for(re.compile(r"Finished .* here\."))
    ready(term)
    text = term.text()
    raw = bytes(term.raw)
    for sequence in (b"\x1b]0;", b"\x1b[2J", b"\x1b[3J", b"\x1b[?1049h"):
        assert sequence not in raw, f"{sequence!r} reached the terminal"
    assert term.screen.title == ""  # pyte sets it on `ESC ] 0 ;`
    # The sequences are spelled out, as text, where the model wrote them.
    spelled = r"\x1b]0;pwned\x07\x1b[2J\x1b[3J\x1b[?1049h"
    assert f"Look at this: {spelled} and more." in text, text
    assert f"Finished {spelled} here." in text, text
    assert "  └ end-of-output" in text
    assert server.problems == []


def test_a_markdown_answer_renders_but_its_escape_sequences_stay_text(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    # A clipboard write (OSC 52: "rm -rf ~"), a clear screen, a C1 CSI, and a link whose
    # target is not its text: a terminal hyperlink (OSC 8) would hide where it goes.
    answer = (
        "## Summary\n\nThe fix is **really done**\x1b]52;c;cm0gLXJmIH4=\x07 and"
        "\x1b[2J\x1b[H\x9b2J checked.\n\nSee [the docs](https://evil.example/phish) for more.\n\n"
        "Not markup: [bold red]loud[/bold red] [link=https://evil.example/x]click[/link]\n"
    )
    server = serve(Reply(text=answer, chunk_size=7))
    term = spawn(server)
    say(term, "is it fixed?")
    term.wait_for("Not markup:")
    ready(term)
    raw = bytes(term.raw)
    for sequence in (b"\x1b]52", b"\x1b[2J", b"\x9b", b"\x1b]8;", b"\x07"):
        assert sequence not in raw, f"{sequence!r} reached the terminal"
    text = term.text()
    # The Markdown is rendered: a heading, bold text, the link's target in plain sight...
    assert "**" not in text and "##" not in text, text
    assert "See the docs (https://evil.example/phish) for more." in text, text
    (y,) = [y for y, row in enumerate(term.display()) if "really done" in row]
    x = term.display()[y].index("really done")
    assert all(term.screen.buffer[y][x + i].bold for i in range(len("really done")))
    # ...rich's own markup in the answer is the model's text, not rich's...
    assert "Not markup: [bold red]loud[/bold red] [link=https://evil.example/x]click[/link]" in text
    # ...and the escape sequences are text a person can read.
    assert r"really done\x1b]52;c;cm0gLXJmIH4=\x07 and\x1b[2J\x1b[H\x9b2J checked." in text
    assert server.problems == []


# -- 3. interrupting a running command ---------------------------------------------------------


@pytest.mark.parametrize("key", [ESC, CTRL_C], ids=["esc", "ctrl-c"])
def test_an_interrupt_kills_the_running_command_and_the_next_turn_works(
    key: str,
    serve: Callable[..., ModelServer],
    spawn: Callable[..., Terminal],
    workspace: Path,
) -> None:
    # A duration no other process uses names the command's process among the host's.
    sleeper = ["sleep", f"29.{secrets.randbelow(10**6):06d}"]
    server = serve(
        Reply(
            text="Running the slow suite.",
            tool_calls=[shell(f"sh -c 'echo $$ > started; exec {' '.join(sleeper)}'")],
        ),
        Reply(text="Still here; the suite was stopped."),
    )
    term = spawn(server, "--mode", "bypass")
    pids: list[int] = []
    try:
        say(term, "run the slow suite")
        term.wait_for(lambda _: (workspace / "started").is_file() and bool(find_processes(sleeper)))
        pids = find_processes(sleeper)
        assert len(pids) == 1
        term.wait_for("esc to interrupt")
        term.send(key)
        term.wait_for("Interrupted. Tell the agent what to do instead.")
        assert wait_gone(pids[0]), f"the command (pid {pids[0]}) still runs after the interrupt"
        ready(term)
        text = term.text()
        assert re.search(r"■ Run sh -c", text), text
        assert_no_leftovers(term)

        say(term, "are you there?")
        term.wait_for("Still here; the suite was stopped.")
        ready(term)
        # The interrupted call got a result, sent with the next message.
        assert len(server.requests) == 2
        assert "are you there?" in request_text(server.requests[1])
        assert "interrupted" in tool_results(server.requests[1])[-1]
        assert server.problems == []
    finally:
        for pid in pids:
            kill_quietly(pid)


def test_ctrl_c_twice_during_a_turn_exits_and_leaves_no_process_behind(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    sleeper = ["sleep", f"29.{secrets.randbelow(10**6):06d}"]
    server = serve(Reply(text="Running.", tool_calls=[shell(f"exec {' '.join(sleeper)}")]))
    term = spawn(server, "--mode", "bypass")
    pids: list[int] = []
    try:
        say(term, "run it")
        term.wait_for(lambda _: bool(find_processes(sleeper)))
        pids = find_processes(sleeper)
        term.send(CTRL_C)
        term.send(CTRL_C)  # during the turn, or at the prompt the first one gave back: quits
        assert term.wait_exit() == 130
        assert "Press Ctrl-C again to exit" not in term.text()
        assert wait_gone(pids[0]), f"the command (pid {pids[0]}) outlived handrail"
    finally:
        for pid in pids:
            kill_quietly(pid)


def test_ctrl_c_at_an_approval_question_interrupts_the_turn(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(
        Reply(text="Fixing it.", tool_calls=[edit("return a - b", "return a + b")]),
        Reply(text="Waiting for you."),
    )
    term = spawn(server)
    say(term, "fix the bug")
    question(term)
    term.send(CTRL_C)
    term.wait_for("Interrupted. Tell the agent what to do instead.", timeout=10)
    ready(term)
    assert (workspace / "calc.py").read_text() == BUGGY
    assert re.search(r"■ Edit calc\.py", term.text()), term.text()
    say(term, "never mind")
    term.wait_for("Waiting for you.")
    assert "interrupted" in tool_results(server.requests[1])[-1]
    assert server.problems == []


# -- 4. resuming -------------------------------------------------------------------------------


def first_session(server: ModelServer, spawn: Callable[..., Terminal]) -> None:
    """A session that says the word and ends with Ctrl-D."""
    term = spawn(server)
    say(term, "remember the word kumquat")
    term.wait_for("Noted: the word is kumquat.")
    ready(term)
    term.send(CTRL_D)
    assert term.wait_exit() == 0


def test_continue_and_resume_carry_on_a_session(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], home: Path
) -> None:
    server = serve(
        Reply(text="Noted: the word is kumquat."),
        Reply(text="The word was kumquat."),
        Reply(text="Hei."),
        Reply(text="A kumquat is a small citrus fruit."),
    )
    first_session(server, spawn)
    (transcript,) = (home / "state" / "sessions").glob("**/*.jsonl")
    session_id = transcript.stem

    # `--continue`: the latest session of this workspace, its last answer shown again.
    term = spawn(server, "--continue")
    term.wait_for(f"resumed session {session_id[:8]}")
    term.wait_for("Noted: the word is kumquat.")
    say(term, "which word?")
    term.wait_for("The word was kumquat.")
    sent = request_text(server.requests[-1])
    assert "remember the word kumquat" in sent and "Noted: the word is kumquat." in sent
    say(term, "/exit")
    assert term.wait_exit() == 0

    # `/resume` inside another conversation: the list, then the switch.
    term = spawn(server)
    say(term, "say hello in Finnish")
    term.wait_for("Hei.")
    say(term, "/resume")
    text = term.wait_for("carry one on with /resume ID")
    listing = [row for row in text.splitlines() if row.startswith(session_id[:8])]
    assert len(listing) == 1 and "remember the word kumquat" in listing[0], text
    say(term, f"/resume {session_id[:8]}")
    term.wait_for(f"resumed session {session_id[:8]} (4 messages)")
    term.wait_for(lambda text: text.count("The word was kumquat.") == 1)
    say(term, "what is it?")
    term.wait_for("A kumquat is a small citrus fruit.")
    sent = request_text(server.requests[-1])
    assert "remember the word kumquat" in sent and "which word?" in sent
    assert "Finnish" not in sent  # the conversation left behind is not sent
    assert server.problems == []


# -- 5. /compact -------------------------------------------------------------------------------


def test_compact_summarises_and_the_next_request_carries_the_summary(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    server = serve(
        Reply(text="The capital of France is Paris."),
        Reply(text="SUMMARY-7Q: the user asked about France; the answer was Paris."),
        Reply(text="Lyon is the third largest."),
    )
    term = spawn(server)
    say(term, "what is the capital of France?")
    term.wait_for("The capital of France is Paris.")
    say(term, "/compact")
    term.wait_for(re.compile(r"compacted: [\d,]+ -> [\d,]+ tokens"))
    say(term, "and its third city?")
    term.wait_for("Lyon is the third largest.")
    summary_request = request_text(server.requests[1])
    assert "capital of France" in summary_request  # the conversation went to the summary
    sent = request_text(server.requests[2])
    assert "SUMMARY-7Q" in sent
    assert server.problems == []


# -- 6. keys -----------------------------------------------------------------------------------


def test_shift_tab_cycles_the_mode_and_ctrl_c_twice_exits(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    server = serve()
    term = spawn(server, command=())  # `handrail` alone on a terminal is the chat
    ready(term)
    assert mode_shown(term) == "default"
    for mode in ("accept_edits", "plan", "default"):
        term.send(SHIFT_TAB)
        term.wait_for(lambda _, mode=mode: mode_shown(term) == mode)
    term.send(CTRL_C)
    term.wait_for("Press Ctrl-C again to exit")
    term.send(CTRL_C)
    assert term.wait_exit() == 130
    assert server.requests == []


def gate() -> tuple[threading.Event, Callable[[RecordedRequest], Reply]]:
    """A script item that answers only once the test opens the gate (bounded)."""
    opened = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        opened.wait(WAIT)
        return Reply(text="Slow answer.")

    return opened, answer


def test_text_and_keys_typed_during_a_turn(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    first, slow = gate()
    second, slow_again = gate()
    server = serve(slow, Reply(text="Got the draft."), slow_again, Reply(text="Got the queue."))
    term = spawn(server)
    say(term, "take your time")
    term.wait_for(lambda _: len(server.requests) == 1 and "esc to interrupt" in term.text())
    term.send("draft text")  # no Enter: it waits in the next prompt
    term.send(SHIFT_TAB)  # the mode changes during a turn too
    term.wait_for("mode: accept_edits")
    term.wait_read()
    first.set()
    term.wait_for("Slow answer.")
    ready(term)
    term.wait_for(lambda _: term.cursor_row().endswith("draft text"))
    assert mode_shown(term) == "accept_edits"
    term.send(ENTER)
    term.wait_for("Got the draft.")
    assert "draft text" in request_text(server.requests[1])

    # A line typed and entered during a turn is sent as soon as the turn ends.
    say(term, "again")
    term.wait_for(lambda _: len(server.requests) == 3)
    term.send("queued message")
    term.send(ENTER)
    term.wait_read()
    second.set()
    term.wait_for("Got the queue.")
    assert "queued message" in request_text(server.requests[3])
    say(term, "/exit")
    assert term.wait_exit() == 0
    assert server.problems == []


def test_slash_commands_attachments_and_multi_line_input(
    serve: Callable[..., ModelServer],
    spawn: Callable[..., Terminal],
    workspace: Path,
    tmp_path: Path,
) -> None:
    # Canaries: a file outside the workspace, and a link inside it that points there.
    (tmp_path / "secret.txt").write_text("CANARY-5521\n")
    (workspace / "link.txt").symlink_to(tmp_path / "secret.txt")
    server = serve(
        Reply(
            text="Reading.",
            tool_calls=[ToolUse("read_file", {"file_path": "calc.py"}), ToolUse("list_files", {})],
        ),
        Reply(text="Read them."),
        Reply(text="Seen the attachment."),
        Reply(text="Two lines received."),
        Reply(text="A fresh start."),
    )
    term = spawn(server, rows=40)
    say(term, "read the code")
    term.wait_for("Read them.")

    say(term, "/expand")  # the collapsed reads, call by call
    text = term.wait_for(re.compile(r"✓ List \."))
    assert re.search(r"✓ Read calc\.py  2 lines", text), text
    say(term, "/mode plan")
    term.wait_for(lambda _: mode_shown(term) == "plan")
    say(term, "/mode bypass")
    term.wait_for("bypass cannot be turned on from inside a session")
    ready(term)
    assert mode_shown(term) == "plan"
    say(term, "/mode default")
    term.wait_for(lambda _: mode_shown(term) == "default")
    say(term, "/cost")
    term.wait_for(re.compile(r"tokens: \d+ in \(0 cached\), \d+ out, 2 requests"))
    say(term, "/tools")
    term.wait_for(re.compile(r"read_file +read "))
    say(term, "/help")
    term.wait_for(re.compile(r"/compact \[FOCUS\] +summarise"))
    say(term, "/nonsense")
    term.wait_for("unknown command /nonsense")

    say(term, f"look at @calc.py, @../secret.txt, @{tmp_path / 'secret.txt'} and @link.txt")
    term.wait_for("Seen the attachment.")
    text = term.text()
    assert "attached calc.py" in text
    assert "not attached ../secret.txt" in text
    assert f"not attached {tmp_path / 'secret.txt'}" in text.replace("\n", "")
    assert "not attached link.txt" in text
    sent = request_text(server.requests[2])
    assert "return a - b" in sent
    assert "CANARY-5521" not in sent

    # Esc Enter adds a line; Enter sends both.
    ready(term)
    term.send("first line")
    term.send(ESC + ENTER)
    term.type_line("second line")
    term.wait_for("Two lines received.")
    assert "first line\\nsecond line" in request_text(server.requests[3])

    say(term, "/clear")
    term.wait_for("new conversation")
    say(term, "hello")
    term.wait_for("A fresh start.")
    assert "read the code" not in request_text(server.requests[4])
    assert server.problems == []


# -- 7. plain terminals ------------------------------------------------------------------------

_SGR = re.compile(rb"\x1b\[([0-9;:]*)m")
_COLOUR = {*range(30, 39), *range(40, 49), *range(90, 98), *range(100, 108)}


def colours(raw: bytes) -> list[bytes]:
    """The SGR sequences in `raw` that set a foreground or background colour."""
    found: list[bytes] = []
    for match in _SGR.finditer(raw):
        params = [int(p) for p in re.split(rb"[;:]", match.group(1)) if p.isdigit()]
        if _COLOUR & set(params):
            found.append(match.group(0))
    return found


def test_no_color_draws_no_colour(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(*FIX_SCRIPT)
    term = spawn(server, env={"NO_COLOR": "1"})
    text = fix_the_bug(term)
    assert (workspace / "calc.py").read_text() == FIXED
    assert "+1 -1" in text
    assert colours(bytes(term.raw)) == []
    # Without colour the diff still says which lines go and which come.
    assert "    -    return a - b" in text and "    +    return a + b" in text
    assert server.problems == []


@pytest.mark.parametrize("how", ["--ascii", "HANDRAIL_ASCII=1"])
def test_ascii_draws_only_ascii(
    how: str, serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    server = serve(*FIX_SCRIPT)
    if how == "--ascii":
        term = spawn(server, "--ascii")
    else:
        term = spawn(server, env={"HANDRAIL_ASCII": "1"})
    text = fix_the_bug(term)
    bad = sorted({ch for ch in text if not ch.isascii()})
    assert not bad, f"non-ASCII on screen: {bad}\n{text}"
    assert "Edit calc.py  +1 -1" in text
    assert server.problems == []


def test_forty_columns_draw_nothing_past_the_edge(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal], workspace: Path
) -> None:
    server = serve(*FIX_SCRIPT)
    # The child is told 40 columns; a wider canvas sees anything drawn beyond them.
    term = spawn(server, columns=40, rows=20, canvas_columns=80)
    text = fix_the_bug(term)
    assert (workspace / "calc.py").read_text() == FIXED
    assert term.beyond == [], term.beyond
    rows = text.splitlines()
    # The committed diff is whole rows, not wrapped fragments.
    assert "    -    return a - b" in rows and "    +    return a + b" in rows, text
    assert any(re.fullmatch(r"✓ Edit calc\.py  \+1 -1 \(\d+ ms\)", r) for r in rows), text
    assert " • add(2, 3) returns 5" in rows
    assert_no_leftovers(term)
    assert server.problems == []


# -- 8. not a terminal -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["chat"], []], ids=["chat", "bare"])
def test_without_a_terminal_it_runs_one_prompt(
    command: list[str], serve: Callable[..., ModelServer], home: Path, workspace: Path
) -> None:
    server = serve(Reply(text="Hi from the pipe."))
    argv = [sys.executable, "-m", "handrail", *command]
    argv += ["--model", "anthropic:scripted", "--base-url", server.base_url("anthropic")]
    out = subprocess.run(
        argv,
        input="hi\n",
        capture_output=True,
        text=True,
        cwd=workspace,
        env=isolated_env(home),
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Hi from the pipe.\n"
    assert "\x1b" not in out.stdout
    assert '"hi' in request_text(server.requests[0])
    assert server.problems == []


# -- 9. scrollback -----------------------------------------------------------------------------


def test_a_long_answer_stays_in_the_scrollback(
    serve: Callable[..., ModelServer], spawn: Callable[..., Terminal]
) -> None:
    lines = [f"Paragraph {i:02d} of the long answer." for i in range(1, 61)]
    server = serve(Reply(text="\n\n".join(lines), chunk_size=40))
    term = spawn(server, rows=20)
    say(term, "tell me a long story")
    term.wait_for(lines[-1])
    ready(term)
    history = term.history()
    assert lines[0] in history, "the first lines scrolled into the terminal's scrollback"
    text = term.text()
    for line in lines:
        assert text.count(line) == 1, f"{line!r} is not on screen exactly once:\n{text}"
    raw = bytes(term.raw)
    assert b"\x1b[3J" not in raw  # the scrollback is never erased
    assert b"\x1b[?1049h" not in raw and b"\x1b[?47h" not in raw  # no alternate screen
    assert_no_leftovers(term)
    assert server.problems == []
