"""`handrail call`: one call through the whole pipeline, run as a real subprocess."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import selectors
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail._cli._call import parse_arguments
from handrail._cli._call_session import RESULTS_KEPT


def run(
    workspace: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "call", *args],
        cwd=workspace,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env or isolated_env(workspace),
    )


def isolated_env(workspace: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["XDG_CONFIG_HOME"] = str(workspace.parent / "xdg")  # no user settings from this machine
    env["HANDRAIL_STATE_DIR"] = str(workspace.parent / "state")  # kept results go here
    env.pop("TTY_COMPATIBLE", None)
    env.update(extra)
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root


def test_read_file_prints_the_content_and_exits_0(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "1\talpha\n2\tbeta\n3\tgamma\n"
    assert out.stderr == ""


def test_key_value_values_are_json_when_they_parse(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt", "offset=2", "limit=1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("2\tbeta\n\n[showing lines 2-2 of 3")


def test_options_may_follow_the_arguments(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt", "--mode", "plan", "limit=1")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1\talpha\n\n[showing lines 1-1 of 3")


def test_parse_arguments_rules() -> None:
    import io

    empty = io.StringIO("")
    assert parse_arguments([], empty) == "{}"
    assert parse_arguments(['{"a": 1}'], empty) == '{"a": 1}'  # raw: the pipeline parses it
    assert parse_arguments(
        ["n=3", "f=true", "x=null", "s=hello", 'q="3"', "l=[1, 2]", "e=", "nan=NaN", "k=a=b"],
        empty,
    ) == {
        "n": 3,
        "f": True,
        "x": None,
        "s": "hello",
        "q": "3",
        "l": [1, 2],
        "e": "",
        "nan": "NaN",
        "k": "a=b",
    }
    assert parse_arguments(["-"], io.StringIO('{"file_path": "x"}')) == '{"file_path": "x"}'
    schema = {"properties": {"content": {"type": "string"}, "n": {"type": "integer"}}}
    assert parse_arguments(["content=42", "n=42"], empty, schema) == {"content": "42", "n": 42}


def test_a_string_field_keeps_the_text_as_typed(workspace: Path) -> None:
    out = run(workspace, "write_file", "file_path=n.txt", "content=42", "--yes")
    assert out.returncode == 0, out.stderr
    assert (workspace / "n.txt").read_text() == "42"


def test_json_object_argument(workspace: Path) -> None:
    out = run(workspace, "read_file", '{"file_path": "notes.txt", "limit": 1}')
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1\talpha\n\n[showing lines 1-1 of 3")


def test_dash_reads_the_arguments_from_stdin(workspace: Path) -> None:
    out = run(workspace, "read_file", "-", stdin='{"file_path": "notes.txt", "offset": 3}')
    assert out.returncode == 0, out.stderr
    assert out.stdout == "3\tgamma\n"


def test_validation_error_exits_1_with_the_issues(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt", "offset=x", "bogus=1")
    assert out.returncode == 1
    assert "Invalid arguments for `read_file`" in out.stdout
    assert out.stderr.splitlines() == [
        "error: INVALID_ARGS",
        '  issue /offset: expected integer, received string "x"',
        "  issue /bogus: unknown field `bogus`; allowed fields: `file_path`, `offset`, `limit`",
    ]


def test_malformed_json_is_reported_like_a_models(workspace: Path) -> None:
    out = run(workspace, "read_file", '{"file_path": "notes.txt",')
    assert out.returncode == 1
    assert out.stderr.startswith("error: INVALID_ARGS")
    assert "Traceback" not in out.stderr


def test_unknown_tool_suggests_the_closest(workspace: Path) -> None:
    out = run(workspace, "read_fiel", "file_path=notes.txt")
    assert out.returncode == 1
    assert "Did you mean `read_file`" in out.stdout
    assert out.stderr.startswith("error: TOOL_NOT_FOUND")


def test_a_write_is_denied_when_nobody_can_approve_it(workspace: Path) -> None:
    out = run(workspace, "write_file", "file_path=new.txt", "content=hi")
    assert out.returncode == 1
    assert not (workspace / "new.txt").exists()
    assert out.stderr.splitlines()[0] == "error: PERMISSION_DENIED"
    assert "rerun with --yes, or allow it with --allow 'write_file(new.txt)'" in out.stderr
    # Nobody declined it: the mode asked and no one could answer.
    assert "denied by mode:" in out.stderr
    assert "denied by user" not in out.stderr


def test_a_compound_command_is_denied_naming_every_rule_it_needs(workspace: Path) -> None:
    canary = workspace / "ran.txt"
    line = f"cd . && touch {canary} && mkdir -p made"
    out = run(workspace, "run_shell", f"command={line}")
    assert out.returncode == 1
    assert not canary.exists()
    assert "--allow 'run_shell(touch:*)' --allow 'run_shell(mkdir:*)'" in out.stderr
    allowed = run(
        workspace,
        "run_shell",
        f"command={line}",
        "--allow",
        "run_shell(touch:*)",
        "--allow",
        "run_shell(mkdir:*)",
    )
    assert allowed.returncode == 0, allowed.stderr
    assert canary.exists()


def test_yes_approves_and_the_diff_is_printed(workspace: Path) -> None:
    out = run(workspace, "write_file", "file_path=new.txt", "content=hi\n", "--yes")
    assert out.returncode == 0, out.stderr
    assert (workspace / "new.txt").read_text() == "hi\n"
    assert out.stdout.splitlines() == [
        f"Created {workspace / 'new.txt'}: 1 line (+1 -0).",
        "--- a/new.txt",
        "+++ b/new.txt",
        "@@ -0,0 +1 @@",
        "+hi",
    ]


def test_an_allow_rule_lets_the_write_run_without_asking(workspace: Path) -> None:
    out = run(workspace, "write_file", "file_path=new.txt", "content=hi", "--allow", "write_file")
    assert out.returncode == 0, out.stderr
    assert (workspace / "new.txt").exists()


def test_a_deny_rule_wins_over_yes(workspace: Path) -> None:
    out = run(workspace, "--deny", "write_file", "--yes", "write_file", "file_path=x", "content=")
    assert out.returncode == 1
    assert "denied by rule write_file" in out.stderr
    assert not (workspace / "x").exists()


def test_plan_mode_denies_a_write_even_with_yes(workspace: Path) -> None:
    out = run(workspace, "write_file", "file_path=new.txt", "content=hi", "--mode", "plan", "--yes")
    assert out.returncode == 1
    assert out.stderr.splitlines()[0] == "error: PERMISSION_DENIED"
    assert "denied by mode" in out.stderr
    assert not (workspace / "new.txt").exists()


def test_accept_edits_writes_inside_the_root_and_refuses_outside(workspace: Path) -> None:
    inside = run(workspace, "write_file", "file_path=a.txt", "content=x", "--mode", "accept_edits")
    assert inside.returncode == 0, inside.stderr
    outside = run(
        workspace, "write_file", "file_path=../b.txt", "content=x", "--mode", "accept_edits"
    )
    assert outside.returncode == 1
    assert outside.stderr.startswith("error: OUTSIDE_WRITE_ROOTS")
    assert not (workspace.parent / "b.txt").exists()


def test_root_option_chooses_the_workspace(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "handrail",
            "call",
            "read_file",
            "file_path=notes.txt",
            "--root",
            str(workspace),
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=isolated_env(workspace),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("1\talpha")


# -- --session FILE ----------------------------------------------------------------------------


def test_a_read_then_an_edit_work_across_calls_with_a_session_file(workspace: Path) -> None:
    edit = ["edit_file", "file_path=notes.txt", "old_string=beta", "new_string=BETA", "--yes"]
    # Each call on its own is a new session: the edit is refused, the file untouched.
    alone = run(workspace, *edit)
    assert alone.returncode == 1
    assert alone.stderr.splitlines()[0] == "error: FILE_NOT_READ"
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    session = workspace.parent / "session.json"
    read = run(workspace, "--session", str(session), "read_file", "file_path=notes.txt")
    assert read.returncode == 0, read.stderr
    assert stat.S_IMODE(session.stat().st_mode) == 0o600
    saved = json.loads(session.read_text())
    assert saved["handrail_call_session"] == 1
    assert list(saved["files"]) == [str(workspace / "notes.txt")]
    assert "mode" not in saved  # each call's options decide it
    edited = run(workspace, *edit, "--session", str(session))
    assert edited.returncode == 0, edited.stderr
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    # The record follows the edit: a second edit needs no new read.
    again = run(
        workspace,
        "edit_file",
        "file_path=notes.txt",
        "old_string=BETA",
        "new_string=beta",
        "--yes",
        "--session",
        str(session),
    )
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in session.parent.iterdir() if p.name.startswith(".session")) == []


def test_the_session_file_keeps_the_todo_list(workspace: Path) -> None:
    session = workspace.parent / "todo.json"
    todos = '{"todos": [{"id": "1", "content": "Write tests", "status": "in_progress"}]}'
    out = run(workspace, "--session", str(session), "todo_write", todos)
    assert out.returncode == 0, out.stderr
    assert json.loads(session.read_text())["data"]["todo_write"] == [
        {"id": "1", "content": "Write tests", "status": "in_progress"}
    ]


@pytest.mark.parametrize("content", ["hi\n", '{"files": {}}', "[1, 2]"])
def test_a_file_that_is_not_a_session_file_is_left_as_it_is(workspace: Path, content: str) -> None:
    other = workspace / "other.json"
    other.write_text(content)
    out = run(workspace, "--session", str(other), "read_file", "file_path=notes.txt")
    assert out.returncode == 2
    assert out.stderr == (
        f"handrail: error: --session {other}: not a handrail call session file (it has no "
        '"handrail_call_session": 1), so it is left as it is; give a new file name\n'
    )
    assert other.read_text() == content


def test_an_empty_session_file_starts_a_session(workspace: Path) -> None:
    session = workspace.parent / "empty.json"
    session.write_text("")
    out = run(workspace, "--session", str(session), "read_file", "file_path=notes.txt")
    assert out.returncode == 0, out.stderr
    assert json.loads(session.read_text())["handrail_call_session"] == 1


def test_a_truncated_results_file_outlives_the_call(workspace: Path) -> None:
    kept = workspace.parent / "state" / "call-results"
    kept.mkdir(parents=True)
    for i in range(RESULTS_KEPT + 5):  # older calls' folders: only the newest stay
        (kept / f"20000101-000000.{i:09d}-00000000").mkdir()
    out = run(workspace, "run_shell", "command=seq 1 100000")
    assert out.returncode == 0, out.stderr
    found = re.search(r"full output: (\S+) \.\.\.\]", out.stdout)
    assert found is not None, out.stdout[-300:]
    path = Path(found.group(1))
    assert path.parent.parent == kept
    assert path.read_text().splitlines()[-1] == "100000"
    folders = sorted(p.name for p in kept.iterdir())
    assert len(folders) == RESULTS_KEPT
    assert folders[-1] == path.parent.name
    assert folders[0] == f"20000101-000000.{6:09d}-00000000"


def test_json_output_holds_the_whole_result(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt", "offset=x", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["ok"] is False
    assert data["error"] == "INVALID_ARGS"
    assert data["issues"] == [
        {
            "path": "/offset",
            "expected": "integer",
            "received": 'string "x"',
            "message": 'expected integer, received string "x"',
        }
    ]
    ok = json.loads(
        run(workspace, "write_file", "file_path=n", "content=1\n", "-y", "--json").stdout
    )
    assert ok["ok"] is True and ok["diff"].startswith("--- a/n")


def test_json_output_holds_the_parts_and_the_structured_content(workspace: Path) -> None:
    # An MCP server's tools answer with an image and with structured content; `--json` prints
    # them as MCP content blocks, base64 kept, and the structured content as it came.
    servers = Path(__file__).parent / "mcp" / "servers"
    config = workspace.parent / "xdg" / "handrail"
    config.mkdir(parents=True)
    entry = {"command": sys.executable, "args": [str(servers / "content_server.py")]}
    (config / "mcp.json").write_text(json.dumps({"mcpServers": {"content": entry}}))

    def call_json(tool: str, *args: str) -> dict[str, Any]:
        out = run(workspace, tool, *args, "-y", "--json")
        data = json.loads(out.stdout)
        return {k: data[k] for k in ("ok", "error", "content", "parts", "structured")}

    assert call_json("mcp__content__failing_picture") == snapshot(
        {
            "ok": False,
            "error": "EXECUTION_ERROR",
            "content": """\
the camera jammed
[image: image/png, 69 bytes]\
""",
            "parts": [
                {"type": "text", "text": "the camera jammed"},
                {
                    "type": "image",
                    "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC",
                    "mimeType": "image/png",
                },
            ],
            "structured": None,
        }
    )
    assert call_json("mcp__content__weather", "city=Oslo") == snapshot(
        {
            "ok": True,
            "error": None,
            "content": "Oslo: 21.5 C",
            "parts": [],
            "structured": {"city": "Oslo", "temperature": 21.5},
        }
    )
    # A text result has no parts: its text is `content`.
    assert call_json("read_file", "file_path=notes.txt")["parts"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["read_file", "oops"], "argument 'oops' is neither a JSON object nor key=value"),
        (["read_file", "a=1", "a=2"], "argument 'a' is given twice"),
        (["read_file", "-", "a=1"], "'-' (JSON on stdin) cannot be combined"),
        (["read_file", "--mode", "fast"], "argument --mode: invalid choice: 'fast'"),
        (["read_file", "--allow", "bad(("], "invalid permission rule 'bad(('"),
        (["read_file", "--root", "missing"], "--root missing: no such directory"),
        (["read_file", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    workspace: Path, args: list[str], message: str
) -> None:
    out = run(workspace, *args)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert message in out.stderr
    assert out.stdout == ""


def test_debug_shows_the_traceback(workspace: Path) -> None:
    out = run(workspace, "read_file", "--root", "missing", "--debug")
    assert out.returncode != 0
    assert "Traceback" in out.stderr


def test_piped_output_is_plain_text(workspace: Path) -> None:
    out = run(workspace, "read_file", "file_path=notes.txt", "offset=x")
    assert "\x1b[" not in out.stdout + out.stderr


def test_terminal_output_is_styled_and_no_color_is_respected(workspace: Path) -> None:
    styled = run(
        workspace,
        "read_file",
        "file_path=notes.txt",
        "offset=x",
        env=isolated_env(workspace, TTY_COMPATIBLE="1", TERM="xterm-256color"),
    )
    assert "\x1b[1;31merror: INVALID_ARGS" in styled.stderr
    plain = run(
        workspace,
        "read_file",
        "file_path=notes.txt",
        "offset=x",
        env=isolated_env(workspace, TTY_COMPATIBLE="1", TERM="xterm-256color", NO_COLOR="1"),
    )
    assert "error: INVALID_ARGS" in plain.stderr
    assert "31m" not in plain.stderr  # bold may stay, red goes


def run_on_a_terminal(workspace: Path, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdin on a pseudo-terminal and type `answer` at the approval prompt."""
    out = raw_on_a_terminal(workspace, answer, *args)
    text = [b.decode().replace("\r\n", "\n").replace("\r", "\n") for b in (out.stdout, out.stderr)]
    return subprocess.CompletedProcess(out.args, out.returncode, *text)


def raw_on_a_terminal(
    workspace: Path, answer: str, *args: str
) -> subprocess.CompletedProcess[bytes]:
    """`run_on_a_terminal`, with stdout and stderr byte for byte."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "handrail", "call", *args],
            cwd=workspace,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=isolated_env(workspace),
        )
        os.close(slave)
        slave = -1
        os.write(master, answer.encode() + b"\n")  # waits in the terminal's buffer for the prompt
        try:
            stdout, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_terminal_prompt_yes_allows_once(workspace: Path) -> None:
    out = run_on_a_terminal(workspace, "y", "write_file", "file_path=new.txt", "content=hi")
    assert out.returncode == 0, out.stderr
    # The question of `handrail chat`: the call and its diff, the reason, the same choices.
    asked = out.stderr.splitlines()
    assert asked[:3] == [
        "? Write new.txt  new content, 1 line  +1 -0",
        "  └ @@ -0,0 +1 @@",
        "    +hi",
    ], out.stderr
    assert "Reason: write_file can change things" in asked
    assert "Do you want to make this edit?" in asked
    assert "  1. [y] Yes" in asked
    assert "  2. [s] Yes, and don't ask again for write_file(new.txt) in this session" in asked
    assert "  3. [p] Yes, and always allow write_file(new.txt) in this project" in asked
    assert "  4. [n] No, and tell the agent what to do instead" in asked
    assert "❯ choose y/s/p/n:   → allowed once" in asked  # the typed answer is not echoed here
    assert (workspace / "new.txt").read_text() == "hi"
    assert not (workspace / ".handrail").exists()


@pytest.mark.parametrize("answer", ["", "n\n"], ids=["empty-line", "n-then-no-reason"])
def test_terminal_prompt_default_is_no(workspace: Path, answer: str) -> None:
    out = run_on_a_terminal(workspace, answer, "write_file", "file_path=new.txt", "content=hi")
    assert out.returncode == 1
    assert "  → declined" in out.stderr
    assert "denied by user: The user declined this call. Do not retry it" in out.stderr
    assert not (workspace / "new.txt").exists()


def test_terminal_prompt_no_tells_the_model_what_to_do_instead(workspace: Path) -> None:
    out = run_on_a_terminal(
        workspace, "n\nwrite notes.md instead", "write_file", "file_path=new.txt", "content=hi"
    )
    assert out.returncode == 1
    assert "What should the agent do instead? (Enter to skip):" in out.stderr
    assert "  → declined: write notes.md instead" in out.stderr
    assert "The user declined this call and said: write notes.md instead" in out.stderr
    assert not (workspace / "new.txt").exists()


def test_terminal_prompt_asks_again_until_it_understands(workspace: Path) -> None:
    out = run_on_a_terminal(workspace, "maybe\n1", "write_file", "file_path=new.txt", "content=x")
    assert out.returncode == 0, out.stderr
    assert "Answer y, s, p, n, or 1-4." in out.stderr
    assert out.stderr.count("❯ choose y/s/p/n:") == 2
    assert (workspace / "new.txt").read_text() == "x"


def test_terminal_prompt_session_answer_is_kept_in_the_session_file(workspace: Path) -> None:
    session = workspace.parent / "s.json"
    args = ("--session", str(session), "write_file", "file_path=new.txt")
    out = run_on_a_terminal(workspace, "s", *args, "content=1")
    assert out.returncode == 0, out.stderr
    assert "  → allowed write_file(new.txt) for this session" in out.stderr
    assert not (workspace / ".handrail").exists()  # nothing saved in the project
    # The next call of the session, with nobody to ask, is allowed by the session's rule.
    again = run(workspace, *args, "content=2")
    assert again.returncode == 0, again.stderr
    assert (workspace / "new.txt").read_text() == "2"


def test_terminal_prompt_always_saves_the_rule_for_next_time(workspace: Path) -> None:
    # The rule goes to the personal settings.local.json, next to the shared settings.json,
    # which stays as it was.
    (workspace / ".handrail").mkdir()
    (workspace / ".handrail" / "settings.json").write_text('{"locale": "en"}')
    (workspace / ".handrail" / "settings.local.json").write_text('{"locale": "en"}')
    out = run_on_a_terminal(workspace, "p", "write_file", "file_path=new.txt", "content=1")
    assert out.returncode == 0, out.stderr
    saved_in = workspace / ".handrail" / "settings.local.json"
    said = f"→ allowed write_file(new.txt); saved in {saved_in}"  # wrapped at 80 columns
    assert "".join(said.split()) in "".join(out.stderr.split()), out.stderr
    saved = json.loads((workspace / ".handrail" / "settings.local.json").read_text())
    assert saved == {"locale": "en", "permissions": {"allow": ["write_file(new.txt)"]}}
    assert (workspace / ".handrail" / "settings.json").read_text() == '{"locale": "en"}'
    # The next call, with no terminal and no --yes, is allowed by the saved rule.
    again = run(workspace, "write_file", "file_path=new.txt", "content=2")
    assert again.returncode == 1  # not read in this session: the rule let it through to the tool
    assert again.stderr.startswith("error: FILE_NOT_READ")
    other = run(workspace, "write_file", "file_path=other.txt", "content=2")
    assert other.stderr.startswith("error: PERMISSION_DENIED")


@pytest.mark.parametrize(
    ("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_a_signal_at_the_prompt_stops_at_once(
    workspace: Path, sig: signal.Signals, status: int
) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail", "call", "write_file", "file_path=n.txt", "content=x"],
        cwd=workspace,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=isolated_env(workspace),
    )
    os.close(slave)
    try:
        assert proc.stderr is not None
        shown = b""
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stderr, selectors.EVENT_READ)
            for _ in range(600):  # up to 60 s for the prompt
                if b"choose y/s/p/n:" in shown:
                    break
                if not sel.select(timeout=0.1):
                    continue
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                shown += chunk
        assert b"choose y/s/p/n:" in shown
        proc.send_signal(sig)  # nobody answers: the signal alone must end it
        proc.communicate(timeout=30)
        assert proc.returncode == status
        assert not (workspace / "n.txt").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        os.close(master)


# -- what reaches the terminal -----------------------------------------------------------------

# A clipboard write (OSC 52), an OSC 8 hyperlink, a clear screen, a C1 cursor-up + erase-line,
# a carriage return that prints the second part over the first, a bidi override, a zero-width
# space inside a word.
HOSTILE = (
    "hello\x1b]52;c;cm0gLXJmIH4=\x07 \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ "
    "world\x1b[2J\x9b1A\x9b2K\nsafe text\rrm -rf ~ \u202eexe.txt r\u200bm"
)
SHOWN = (
    "hello\\x1b]52;c;cm0gLXJmIH4=\\x07 \\x1b]8;;https://evil.example\\x1b\\link\\x1b]8;;\\x1b\\ "
    "world\\x1b[2J\\x9b1A\\x9b2K\nsafe text\\rrm -rf ~ \\u202eexe.txt r\\u200bm"
)
RAW_CONTROLS = (b"\x1b", b"\x9b", b"\x07", b"\r", "\u202e".encode(), "\u200b".encode())


def assert_no_raw_controls(raw: bytes) -> None:
    """Nothing in `raw` acts on a terminal but the colours handrail itself chose (SGR)."""
    raw = re.sub(rb"\x1b\[[0-9;]*m", b"", raw)
    for sequence in RAW_CONTROLS:
        assert sequence not in raw, f"{sequence!r} reached the terminal: {raw!r}"


def test_a_tools_output_is_shown_without_obeying_its_escape_sequences(workspace: Path) -> None:
    (workspace / "evil.txt").write_text(HOSTILE, newline="")
    argv = [sys.executable, "-m", "handrail", "call", "read_file", "file_path=evil.txt"]
    for env in (isolated_env(workspace), isolated_env(workspace, TTY_COMPATIBLE="1")):
        out = subprocess.run(argv, cwd=workspace, capture_output=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        assert_no_raw_controls(out.stdout + out.stderr)
        shown = SHOWN.replace("\n", "\n2\t")
        assert out.stdout.decode() == f"1\t{shown}\n"


def test_json_output_keeps_the_tools_exact_output(workspace: Path) -> None:
    (workspace / "evil.txt").write_text(HOSTILE, newline="")
    out = run(workspace, "read_file", "file_path=evil.txt", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["content"] == "1\t" + HOSTILE.replace("\n", "\n2\t")
    # ...as JSON escapes: `cat`-ing the output to a terminal obeys nothing either.
    assert_no_raw_controls(out.stdout.encode())


def test_an_approval_shows_the_arguments_without_obeying_their_escape_sequences(
    workspace: Path,
) -> None:
    out = raw_on_a_terminal(workspace, "n\n", "run_shell", f"command=echo {HOSTILE}")
    assert out.returncode == 1
    assert_no_raw_controls(out.stderr)
    shown = out.stderr.decode()
    assert "Do you want to run this command?" in shown
    # The whole command under the call's line (wrapped at 80 columns), every hidden or
    # overwritten part of it visible.
    body = shown[shown.index("  └ echo ") : shown.index("Reason:")]
    assert "".join(body.split()) == "└echo" + "".join(SHOWN.split()), body
    assert "  → declined\n" in shown


def test_an_approval_shows_a_path_on_one_line(workspace: Path) -> None:
    name = "new.txt\n  write /etc/motd"
    out = raw_on_a_terminal(workspace, "n\n", "write_file", f"file_path={name}", "content=x")
    assert out.returncode == 1
    shown = out.stderr.decode()
    # The rule names the path as it is, the newline spelled: nothing reads as another line.
    flat = " ".join(shown.split())
    assert "don't ask again for write_file(new.txt\\n write /etc/motd) in this session" in flat
    assert not any(line.startswith("  write /etc/motd") for line in shown.splitlines()), shown


async def test_yes_approves_the_call_but_not_what_its_tool_asks(tmp_path: Path) -> None:
    # --yes answers the call's approval; a tool's own question ("overwrite a file changed by
    # hand?") with nobody at a terminal is a no, not a yes nobody gave.
    from rich.console import Console

    from handrail import Approval, ApprovalRequest, Confirmation, ToolCall
    from handrail._cli._call import choose_approver

    approve = choose_approver(True, False, tmp_path, Console(file=io.StringIO()))
    call = ApprovalRequest(reason="edits", call=ToolCall(id="c", name="w"), tool_name="w")
    assert await approve(call) == Approval.allow_once()
    answer = await approve(Confirmation(reason="overwrite notes.txt?", topic="overwrite"))
    assert answer.kind == "deny"
    assert "overwrite notes.txt?" in (answer.reason or "")
