"""The five file and search tools together, the way an agent uses them."""

from __future__ import annotations

from pathlib import Path

from inline_snapshot import snapshot

from handrail import ErrorCode, Registry, Runtime, Tool
from handrail.builtin import coding_tools


def rt_for(root: Path, mode: str = "accept_edits") -> Runtime:
    return Runtime(Registry(coding_tools()), root=root, mode=mode)


def test_the_tool_set_and_its_order() -> None:
    tools = Runtime(Registry(coding_tools())).tools()
    assert [t.name for t in tools] == snapshot(
        [
            "edit_file",
            "grep_search",
            "list_files",
            "read_file",
            "run_shell",
            "shell_output",
            "todo_write",
            "tool_search",
            "web_fetch",
            "write_file",
        ]
    )

    def flag(value: object) -> object:
        return value if isinstance(value, bool) else "depends on input"

    flags = {t.name: (t.kind.value, flag(t.read_only), flag(t.concurrency_safe)) for t in tools}
    assert flags == snapshot(
        {
            "edit_file": ("edit", False, False),
            "grep_search": ("search", True, True),
            "list_files": ("search", True, True),
            "read_file": ("read", True, True),
            "run_shell": ("execute", "depends on input", "depends on input"),
            "shell_output": ("execute", "depends on input", "depends on input"),
            "todo_write": ("think", True, False),
            "tool_search": ("search", True, True),
            "web_fetch": ("fetch", True, True),
            "write_file": ("edit", False, False),
        }
    )
    assert all(isinstance(t, Tool) and t.description for t in tools)
    assert all(t.usage for t in tools if t.name in {"edit_file", "read_file", "run_shell"})


def test_usage_notes_for_the_system_prompt() -> None:
    notes = Runtime(Registry(coding_tools())).usage_notes()
    assert [line for line in notes.splitlines() if line.startswith("## ")] == snapshot(
        [
            "## edit_file",
            "## grep_search",
            "## list_files",
            "## read_file",
            "## run_shell",
            "## web_fetch",
            "## write_file",
        ]
    )
    edit = notes.split("## edit_file\n", 1)[1].split("\n\n## ", 1)[0]
    assert edit == snapshot(
        "Before editing, read the file with read_file in this session; edits to a file that was not read in full, or that changed since, are refused. Copy old_string from read_file's output without the line-number prefix and tab, with enough surrounding lines to occur exactly once (or set replace_all). Put several changes to one file in one call with `edits`. Use edit_file, not write_file, to change part of an existing file."
    )


def test_plan_mode_offers_only_the_tools_that_can_be_read_only(tmp_path: Path) -> None:
    assert [t.name for t in rt_for(tmp_path, "plan").tools()] == snapshot(
        [
            "grep_search",
            "list_files",
            "read_file",
            "run_shell",
            "shell_output",
            "todo_write",
            "tool_search",
            "web_fetch",
        ]
    )


async def test_find_read_edit_read_again(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "greet.py").write_bytes(
        b'def greet(name):\r\n    return "Hello, " + name\r\n'
    )
    rt = rt_for(tmp_path)

    found = await rt.call("grep_search", {"pattern": "Hello"})
    assert "src/greet.py" in found.content

    early = await rt.call(
        "edit_file", {"file_path": "src/greet.py", "old_string": "Hello", "new_string": "Hi"}
    )
    assert early.error is ErrorCode.FILE_NOT_READ

    shown = await rt.call("read_file", {"file_path": "src/greet.py"})
    assert shown.content.splitlines()[1] == '2\t    return "Hello, " + name'

    edited = await rt.call(
        "edit_file",
        {"file_path": "src/greet.py", "old_string": '"Hello, "', "new_string": '"Hi, "'},
    )
    assert edited.ok, edited.content
    # CRLF kept everywhere, every other byte unchanged.
    assert (
        tmp_path / "src" / "greet.py"
    ).read_bytes() == b'def greet(name):\r\n    return "Hi, " + name\r\n'

    # The model saw only a diff: reading again shows the new text, not an "unchanged" note.
    again = await rt.call("read_file", {"file_path": "src/greet.py"})
    assert again.content.splitlines()[1] == '2\t    return "Hi, " + name'

    # A second edit needs no re-read: the session knows the content it just wrote.
    second = await rt.call(
        "edit_file", {"file_path": "src/greet.py", "old_string": "Hi", "new_string": "Hey"}
    )
    assert second.ok, second.content


async def test_reads_run_in_parallel_and_writes_alone(tmp_path: Path) -> None:
    from handrail import ToolCall

    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    rt = rt_for(tmp_path)
    batch = await rt.call_many(
        [
            ToolCall(id=str(i), name="read_file", arguments={"file_path": f"f{i}.txt"})
            for i in range(3)
        ]
        + [
            ToolCall(
                id="w", name="write_file", arguments={"file_path": "new.txt", "content": "x\n"}
            )
        ]
    )
    assert [r.ok for r in batch] == [True, True, True, True]
    assert (tmp_path / "new.txt").read_text() == "x\n"


async def test_default_mode_asks_before_writing(tmp_path: Path) -> None:
    from handrail import Approval, Interrupted

    rt = rt_for(tmp_path, mode="default")
    r = await rt.call("write_file", {"file_path": "a.txt", "content": "hello\n"})
    assert isinstance(r, Interrupted)
    assert not (tmp_path / "a.txt").exists()
    r = await rt.resume(r, Approval.allow_once())
    assert r.ok
    assert (tmp_path / "a.txt").read_text() == "hello\n"


async def test_no_tool_reaches_outside_the_root(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("top secret\n")
    rt = rt_for(ws, mode="bypass")
    calls = [
        ("read_file", {"file_path": "../secret.txt"}),
        ("write_file", {"file_path": "../secret.txt", "content": "x"}),
        ("edit_file", {"file_path": "../secret.txt", "old_string": "top", "new_string": "no"}),
        ("grep_search", {"pattern": "secret", "path": ".."}),
        ("list_files", {"path": ".."}),
    ]
    for name, args in calls:
        r = await rt.call(name, args)
        assert r.error in (ErrorCode.OUTSIDE_READ_ROOTS, ErrorCode.OUTSIDE_WRITE_ROOTS), (
            name,
            r.content,
        )
        assert "top secret" not in r.content
    assert (tmp_path / "secret.txt").read_text() == "top secret\n"


async def test_an_overlong_path_is_a_clear_error_for_every_file_tool(tmp_path: Path) -> None:
    rt = rt_for(tmp_path, mode="bypass")
    long = "x" * 5000
    for name, args in [
        ("read_file", {"file_path": long}),
        ("write_file", {"file_path": long, "content": "y"}),
        ("edit_file", {"file_path": long, "old_string": "a", "new_string": "b"}),
    ]:
        r = await rt.call(name, args)
        assert r.error is ErrorCode.INVALID_ARGS, (name, r.error, r.content[:200])
        assert "shorter path" in r.content
