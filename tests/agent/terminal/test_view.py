"""`TurnView` fed with the events of a real `Agent` run against the scripted model server.

What goes to the scrollback (the console's output) must come in the order the model sent it,
each finished block once; what stays live (the region rich repaints) must never be taller than
the terminal, whatever streams in; and streamed Markdown is never cut inside a code fence.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from rich.console import Console

from handrail import ApprovalRequest, Registry, Runtime, ToolCall
from handrail.agent import Agent, Event, ModelClient, RunResult
from handrail.agent._terminal._question import Asking, choices
from handrail.agent._terminal._render import glyphs
from handrail.agent._terminal._view import CallGroup, TurnView, split_paragraphs
from handrail.builtin import coding_tools
from handrail.display import CallStatus, DiffBody, Display, DisplayGroup
from handrail.testing import ModelServer, Reply, ScriptItem, ToolUse

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "README.md").write_text("# calc\n\nAdds numbers.\n")
    return root


@dataclass
class Watched:
    """A run shown through a TurnView: the scrollback, and the live region's heights."""

    console: Console
    view: TurnView
    result: RunResult | None = None
    heights: list[int] = field(default_factory=list[int])
    events: list[str] = field(default_factory=list[str])

    @property
    def scrollback(self) -> str:
        out = self.console.file
        assert isinstance(out, io.StringIO)
        return _ANSI.sub("", out.getvalue())

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.scrollback.splitlines()]

    def index(self, needle: str) -> int:
        """The row that holds `needle` (exactly one does)."""
        rows = [i for i, line in enumerate(self.lines()) if needle in line]
        assert len(rows) == 1, f"{needle!r} on rows {rows}:\n{self.scrollback}"
        return rows[0]


Watch = Callable[..., Awaitable[Watched]]


@pytest.fixture
async def watch(workspace: Path) -> AsyncIterator[Watch]:
    """`await watch(server, prompt, width=, height=, markdown=)`: one run, shown in a view."""
    closers: list[Agent] = []
    runtimes: list[Runtime] = []

    async def run(
        server: ModelServer,
        prompt: str,
        *,
        width: int = 80,
        height: int = 24,
        markdown: bool = True,
    ) -> Watched:
        console = Console(file=io.StringIO(), width=width, height=height, force_terminal=True)
        view = TurnView(console, glyphs(False), markdown=markdown)
        view.running = True  # the working line counts towards the region's height
        runtime = Runtime(
            Registry(coding_tools(project_dir=workspace)), root=workspace, mode="bypass"
        )
        runtimes.append(runtime)
        client = ModelClient(
            "openai_chat", "test-model", base_url=server.base_url("openai_chat"), timeout=10.0
        )
        agent = Agent(client, runtime, save=False, agents=False)
        closers.append(agent)
        watched = Watched(console, view)

        def on_event(event: Event) -> None:
            view.handle(event)
            watched.events.append(event.type)
            region = console.render_lines(view.live(), console.options, pad=False)
            watched.heights.append(len(region))

        async with asyncio.timeout(30):
            watched.result = await agent.run(prompt, on_event=on_event)
        view.running = False
        view.flush(final=True)
        return watched

    yield run
    for agent in closers:
        await agent.aclose()
    for runtime in runtimes:
        await runtime.aclose()


def read(path: str) -> ToolUse:
    return ToolUse("read_file", {"file_path": path})


def serve(*script: ScriptItem) -> ModelServer:
    return ModelServer(script).start()


async def test_blocks_reach_the_scrollback_in_the_order_the_model_sent_them(watch: Watch) -> None:
    with serve(
        Reply(
            text="Let me look at the code.",
            tool_calls=[
                read("calc.py"),
                read("README.md"),
                ToolUse("grep_search", {"pattern": "add"}),
            ],
            chunk_size=4,
        ),
        Reply(
            text="Found it: add subtracts.",
            tool_calls=[
                ToolUse(
                    "edit_file",
                    {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"},
                )
            ],
        ),
        Reply(text="Done: **add** adds now.", chunk_size=3),
    ) as server:
        seen = await watch(server, "fix calc.py")
        assert server.problems == []
    assert seen.result is not None and seen.result.subtype == "success"
    order = [
        seen.index("Let me look at the code."),
        seen.index("Read 2 files, searched 1 pattern"),
        seen.index("Found it: add subtracts."),
        seen.index("Edit calc.py  +1 -1"),
        seen.index("Done: add adds now."),
    ]
    assert order == sorted(order), seen.scrollback
    # The edit's diff is under its line; the reads are one line, not one per file.
    diff = seen.lines()[order[3] + 1 : order[4]]
    assert any(line.strip() == "-    return a - b" for line in diff), diff
    assert any(line.strip() == "+    return a + b" for line in diff), diff
    assert not any("Read calc.py" in line for line in seen.lines())
    assert "**" not in seen.scrollback  # Markdown, rendered
    assert max(seen.heights) < 24


@pytest.mark.parametrize(("width", "height"), [(80, 24), (40, 10)])
async def test_the_live_region_never_outgrows_the_terminal(
    watch: Watch, workspace: Path, width: int, height: int
) -> None:
    for i in range(12):
        (workspace / f"notes_{i:02d}.txt").write_text(f"note {i}\n")
    fence = "```\n" + "\n".join(f"row {i}" for i in range(120)) + "\n```"
    long_output = "python -c 'for i in range(300): print(\"output line\", i)'"
    with serve(
        # A long code block streams as one open block (it cannot be cut inside the fence);
        # then a command prints more lines than the terminal has.
        Reply(
            text="Here is the table:\n\n" + fence,
            tool_calls=[ToolUse("run_shell", {"command": long_output})],
            chunk_size=25,
        ),
        # Many calls at once: reads collapse, commands do not.
        Reply(tool_calls=[read(f"notes_{i:02d}.txt") for i in range(12)]),
        Reply(tool_calls=[ToolUse("run_shell", {"command": f"seq {i} {i + 3}"}) for i in range(8)]),
        Reply(text="All done."),
    ) as server:
        seen = await watch(server, "go", width=width, height=height)
        assert server.problems == []
    assert seen.result is not None and seen.result.subtype == "success", seen.result
    assert len(seen.heights) > 50  # it was checked at every event of the run
    assert max(seen.heights) < height, max(seen.heights)
    lines = seen.lines()
    assert "Read 12 files" in seen.scrollback and "failed" not in seen.scrollback
    assert "Ran 8 commands" in seen.scrollback
    assert "row 0" in (line.strip() for line in lines)
    assert "row 119" in (line.strip() for line in lines)
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]


async def test_a_code_fence_is_never_split_while_it_streams(watch: Watch) -> None:
    # Blank lines inside the fence look like paragraph ends to a naive splitter.
    text = (
        "First paragraph.\n\n"
        "```python\ndef one():\n    return 1\n\n\ndef two():\n    return 2\n```\n\n"
        "Last paragraph."
    )
    with serve(Reply(text=text, chunk_size=3)) as server:
        seen = await watch(server, "show me", markdown=False)
        assert server.problems == []
    # Without Markdown the text is printed as sent, each printed piece followed by one blank
    # line: a fence cut at its blank lines would have gained blank lines inside it.
    assert "```python\ndef one():\n    return 1\n\n\ndef two():\n    return 2\n```" in (
        seen.scrollback
    ), seen.scrollback
    assert seen.index("First paragraph.") < seen.index("def one():") < seen.index("Last paragraph.")


@pytest.mark.parametrize(
    ("text", "done", "rest"),
    [
        ("one\n\ntwo", "one", "two"),
        ("one\n\ntwo\n\nthr", "one\n\ntwo", "thr"),
        ("no break yet", "", "no break yet"),
        # An open fence holds everything from its start.
        ("intro\n\n```py\na = 1\n\nb = 2", "intro", "```py\na = 1\n\nb = 2"),
        # A closed fence is whole again; the cut may come after it.
        ("```\na\n\nb\n```\n\nnext", "```\na\n\nb\n```", "next"),
        ("~~~\na\n\nb\n~~~\n\nafter\n\nmore", "~~~\na\n\nb\n~~~\n\nafter", "more"),
        ("```\nonly code\n\nstill code", "", "```\nonly code\n\nstill code"),
    ],
)
def test_split_paragraphs(text: str, done: str, rest: str) -> None:
    assert split_paragraphs(text) == (done, rest)


def test_a_long_open_code_block_renders_only_its_end_still_highlighted_as_code() -> None:
    # A code block is one paragraph until its fence closes: the live region must not render
    # all of it on every frame (each frame would cost more than the last), yet stay code.
    from handrail.agent._terminal._view import _source_tail

    text = "Here it is:\n\n```python\n" + "\n".join(f"x_{i} = {i}" for i in range(3000))
    tail = _source_tail(text, 10)
    lines = tail.split("\n")
    assert len(lines) <= 10 * 3 + 20 + 1
    assert lines[0] == "```python"  # reopened: the tail is still a Python code block
    assert lines[-1] == "x_2999 = 2999"
    short = "a\n\n```\ncode\n"
    assert _source_tail(short, 10) == short


def test_a_question_is_the_bottom_of_the_region_and_its_call_is_drawn_only_there() -> None:
    diff = "@@ -1,12 +1,12 @@\n" + "".join(f"-old {i}\n+new {i}\n" for i in range(6))
    waiting = Display(
        title="Edit calc.py",
        status=CallStatus.WAITING,
        group=DisplayGroup.EDIT,
        body=DiffBody.of(diff),
        tool_name="edit_file",
        call_id="c1",
    )
    running = Display(
        title="Run make", group=DisplayGroup.SHELL, tool_name="run_shell", call_id="c2"
    )
    request = ApprovalRequest(
        call=ToolCall(id="c1", name="edit_file"), tool_name="edit_file", reason="asks"
    )
    console = Console(file=io.StringIO(), width=80, height=15, force_terminal=True)
    view = TurnView(console, glyphs(False))
    view.running = True
    view.pending.append(CallGroup(collapsible=False, displays={"c1": waiting, "c2": running}))

    def region() -> list[str]:
        lines = console.render_lines(view.live(), console.options, pad=False)
        return [_ANSI.sub("", "".join(s.text for s in line)).rstrip() for line in lines]

    before = region()
    assert "    +new 5" in before  # the waiting call, drawn with the running one
    view.question = Asking(request, choices(request), glyphs(False), display=waiting, more="v")
    rows = region()
    assert len(rows) <= 13  # the terminal's 15 rows, less the two the region leaves free
    assert rows[-1].startswith("❯ choose y/s/n:"), rows
    assert rows.count("  └ @@ -1,12 +1,12 @@") == 1, rows  # the diff once, in the question
    assert any(r.startswith("  3. [n] No") for r in rows), rows
    assert re.search(r"… \+\d+ lines hidden \(v\)", "\n".join(rows)), rows
    assert "esc to interrupt" not in "\n".join(rows)  # the key line replaces the working line
