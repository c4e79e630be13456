"""The call pipeline end to end through `Runtime.call`."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    ErrorCode,
    Hook,
    HookEvent,
    HookResponse,
    PermissionRequest,
    ProgressEvent,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
    WritePath,
    tool,
)


@tool(read_only=True, concurrency_safe=True)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(read_only=True)
def boom(message: str) -> str:
    """Always raises."""
    raise ValueError(message)


@tool(read_only=True)
def nothing() -> None:
    """Returns nothing."""


def rt_with(*tools: Tool, **kw: Any) -> Runtime:
    return Runtime(Registry(tools), **kw)


async def test_valid_call_returns_text_and_identity() -> None:
    r = await rt_with(add).call("add", '{"a": 1, "b": 2}', call_id="c1")
    assert (r.ok, r.content, r.error) == (True, "3", None)
    assert (r.call_id, r.tool_name) == ("c1", "add")
    assert r.duration > 0


async def test_arguments_may_be_a_mapping() -> None:
    r = await rt_with(add).call("add", {"a": 2, "b": 5})
    assert r.content == "7"


async def test_call_ids_are_generated_when_missing() -> None:
    rt = rt_with(add)
    ids = {(await rt.call("add", '{"a": 1, "b": 1}')).call_id for _ in range(3)}
    assert len(ids) == 3


async def test_exception_becomes_execution_error_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="handrail"):
        r = await rt_with(boom).call("boom", '{"message": "disk on fire"}')
    assert r.ok is False
    assert r.error is ErrorCode.EXECUTION_ERROR
    assert "ValueError: disk on fire" in r.content
    assert "Traceback" not in r.content
    # The traceback goes to the log for the developer.
    assert any(rec.exc_info for rec in caplog.records)


async def test_tool_failure_keeps_its_code_and_message() -> None:
    @tool(read_only=True)
    def missing(path: str) -> str:
        """Read a file."""
        raise ToolFailure(f"{path} does not exist", code=ErrorCode.FILE_NOT_FOUND)

    r = await rt_with(missing).call("missing", '{"path": "a.txt"}')
    assert (r.error, r.content) == (ErrorCode.FILE_NOT_FOUND, "a.txt does not exist")


async def test_empty_success_says_so() -> None:
    r = await rt_with(nothing).call("nothing")
    assert r.ok
    assert r.content == "(nothing completed with no output)"


class Point(BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Report:
    name: str
    tags: list[str]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"files": 3, "ok": True, "nested": {"a": None}}, "files: 3\nok: true\nnested:\n  a: null"),
        ([1, "two", {"k": 1.5}], "- 1\n- two\n- k: 1.5"),
        (Point(x=1, y=2), "x: 1\ny: 2"),
        (Report(name="r", tags=["a", "b"]), "name: r\ntags:\n  - a\n  - b"),
        (False, "false"),
        (2.5, "2.5"),
        ({}, "(empty)"),
    ],
)
async def test_non_string_values_become_readable_text(value: Any, text: str) -> None:
    @tool(read_only=True)
    def give() -> Any:
        """Return a value."""
        return value

    r = await rt_with(give).call("give")
    assert r.content == text
    assert "{" not in r.content or value == {}  # not a repr or a JSON dump


async def test_tool_may_return_a_full_result() -> None:
    @tool(read_only=True)
    def rich() -> ToolResult:
        """Return a result with a summary and a diff."""
        return ToolResult.success(
            "done", summary="1 file", diff="--- a\n+++ b\n", metadata={"n": 1}
        )

    r = await rt_with(rich).call("rich")
    assert (r.content, r.summary, r.diff, dict(r.metadata)) == (
        "done",
        "1 file",
        "--- a\n+++ b\n",
        {"n": 1},
    )
    assert r.tool_name == "rich"


async def test_long_output_is_cut_to_head_and_tail_and_saved(tmp_path: Path) -> None:
    lines = [f"line {i:05d} " + "x" * 40 for i in range(2000)]
    full = "\n".join(lines)

    @tool(read_only=True, max_result_chars=2000)
    def loud() -> str:
        """Print a lot."""
        return full

    session = Session(results_dir=tmp_path)
    r = await rt_with(loud).call("loud", session=session)
    assert len(r.content) <= 2000
    assert r.content.startswith("line 00000")
    assert r.content.endswith(lines[-1])  # the end (where errors are) survives
    meta = r.metadata
    saved = Path(meta["full_output_path"])
    assert saved.read_text() == full
    assert str(saved) in r.content
    kept_head, _, rest = r.content.partition("\n\n[... ")
    kept_tail = rest.split("...]\n\n", 1)[1]
    # The counts are exact: what was kept plus what was omitted is the whole text.
    assert len(kept_head) + meta["omitted_chars"] + len(kept_tail) == len(full)
    omitted = full[len(kept_head) : len(full) - len(kept_tail)]
    assert meta["omitted_lines"] == omitted.count("\n")
    assert (
        f"{meta['omitted_chars']} characters ({meta['omitted_lines']} lines) omitted" in r.content
    )


async def test_async_timeout_stops_the_tool() -> None:
    finished: list[bool] = []

    @tool(read_only=True, timeout=0.2)
    async def hang() -> str:
        """Never finishes."""
        await asyncio.sleep(30)
        finished.append(True)
        return "late"

    r = await rt_with(hang).call("hang")
    assert r.error is ErrorCode.TIMEOUT
    assert "0.2 seconds" in r.content
    assert finished == []  # stopped: had it run on, this would hold True after 30 s


async def test_timeout_counts_even_if_the_tool_swallows_cancellation() -> None:
    @tool(read_only=True, timeout=0.1)
    async def stubborn() -> str:
        """Ignores cancellation."""
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "I refuse"
        return "late"

    r = await rt_with(stubborn).call("stubborn")
    assert r.error is ErrorCode.TIMEOUT
    # And the runtime's own task is not left cancelled: awaiting still works.
    await asyncio.sleep(0)


async def test_sync_timeout_returns_and_flags_the_context() -> None:
    seen: list[bool] = []
    release = threading.Event()

    @tool(read_only=True, timeout=0.2)
    def grind(ctx: ToolContext) -> str:
        """Busy work that checks for cancellation."""
        for _ in range(300):
            if ctx.cancelled:
                seen.append(True)
                break
            release.wait(0.05)
        return "done"

    r = await rt_with(grind).call("grind")
    assert r.error is ErrorCode.TIMEOUT
    for _ in range(100):  # the worker thread notices within a few polls
        if seen:
            break
        await asyncio.sleep(0.02)
    assert seen == [True]


async def test_default_timeout_applies_to_tools_without_one() -> None:
    @tool(read_only=True)
    async def hang() -> str:
        """Never finishes."""
        await asyncio.sleep(30)
        return "late"

    r = await rt_with(hang, default_timeout=0.1).call("hang")
    assert r.error is ErrorCode.TIMEOUT


async def test_sync_tool_does_not_block_the_event_loop() -> None:
    @tool(read_only=True)
    def sleepy() -> str:
        """Blocks its thread for a while."""
        time.sleep(0.3)
        return "rested"

    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    t = asyncio.ensure_future(ticker())
    r = await rt_with(sleepy).call("sleepy")
    stop.set()
    await t
    assert r.content == "rested"
    assert ticks >= 5  # the loop kept running while the tool slept


async def test_inline_sync_tool_runs_on_the_loop_thread() -> None:
    loop_thread = threading.get_ident()
    where: list[int] = []

    @tool(read_only=True, inline=True)
    def quick() -> str:
        """CPU-only."""
        where.append(threading.get_ident())
        return "ok"

    @tool(read_only=True)
    def offloaded() -> str:
        """Default: a worker thread."""
        where.append(threading.get_ident())
        return "ok"

    rt = rt_with(quick, offloaded)
    await rt.call("quick")
    await rt.call("offloaded")
    assert where[0] == loop_thread
    assert where[1] != loop_thread


async def test_cancel_by_call_id_gives_cancelled() -> None:
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait() -> str:
        """Waits."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    rt = rt_with(wait)
    task = asyncio.ensure_future(rt.call("wait", call_id="w1"))
    await started.wait()
    assert rt.cancel("w1", "The user pressed stop.")
    r = await task
    assert (r.error, r.content) == (ErrorCode.CANCELLED, "The user pressed stop.")
    assert rt.cancel("w1") is False  # no longer running


async def test_outside_cancellation_propagates() -> None:
    started = asyncio.Event()

    @tool(read_only=True)
    async def wait() -> str:
        """Waits."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    task = asyncio.ensure_future(rt_with(wait).call("wait"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class Checked(Tool):
    """A class-form tool that records which stages ran, in order."""

    name = "checked"
    description = "Writes a file."
    kind = ToolKind.EDIT

    class Args(BaseModel):
        path: str
        size: int

    args_model = Args

    def __init__(self, log: list[str]) -> None:
        self.log = log
        super().__init__()

    def validate_input(self, args: Args, ctx: ToolContext) -> str | None:
        self.log.append("check")
        if args.size < 0:
            return "size must not be negative"
        return None

    def permission_requests(self, args: Args, ctx: ToolContext) -> Sequence[PermissionRequest]:
        self.log.append("permit")
        return [WritePath(path=args.path)]

    def run(self, args: Args, ctx: ToolContext) -> str:
        self.log.append("run")
        return f"wrote {args.size} bytes"


async def test_stages_run_in_order(tmp_path: Path) -> None:
    log: list[str] = []

    def pre(event: HookEvent) -> HookResponse | None:
        log.append("pre_hook")
        return None

    def post(event: HookEvent) -> HookResponse | None:
        log.append("post_hook")
        return None

    rt = Runtime(
        Registry([Checked(log)]),
        root=tmp_path,
        mode="accept_edits",
        hooks=[Hook(event="pre_tool_use", func=pre), Hook(event="post_tool_use", func=post)],
    )
    r = await rt.call("checked", {"path": "a.txt", "size": 3})
    assert r.content == "wrote 3 bytes"
    assert log == ["check", "pre_hook", "permit", "run", "post_hook"]


async def test_business_rules_run_before_permissions(tmp_path: Path) -> None:
    log: list[str] = []
    rt = Runtime(Registry([Checked(log)]), root=tmp_path)  # default mode would ask
    r = await rt.call("checked", {"path": "a.txt", "size": -1})
    assert r.error is ErrorCode.INVALID_ARGS
    assert "size must not be negative" in r.content
    assert log == ["check"]


async def test_schema_errors_stop_before_business_rules(tmp_path: Path) -> None:
    log: list[str] = []
    rt = Runtime(Registry([Checked(log)]), root=tmp_path)
    r = await rt.call("checked", {"path": "a.txt", "size": "3"})
    assert r.error is ErrorCode.INVALID_ARGS
    assert log == []


async def test_invalid_arguments_content_lists_every_issue() -> None:
    r = await rt_with(add).call("add", '{"a": "x", "B": 2}')
    assert r.error is ErrorCode.INVALID_ARGS
    assert [i.path for i in r.issues] == ["/a", "/b", "/B"]
    assert r.content == snapshot("""\
Invalid arguments for `add`:
- /a: expected integer, received string "x"
- /b: required field `b` is missing
- /B: unknown field `B`; did you mean `b`?
Call `add` again with corrected arguments.\
""")


async def test_unknown_tool_suggests_close_names() -> None:
    r = await rt_with(add, boom).call("ad")
    assert r.error is ErrorCode.TOOL_NOT_FOUND
    assert r.content == snapshot("There is no tool named `ad`. Did you mean `add`?")


async def test_unknown_tool_without_close_names_lists_tools() -> None:
    r = await rt_with(add, boom).call("zzzzzz")
    assert r.content == snapshot("There is no tool named `zzzzzz`. Available tools: `add`, `boom`.")


async def test_aliases_resolve_to_the_tool() -> None:
    @tool(name="read_file", aliases=["Read", "cat"], read_only=True)
    def read(path: str) -> str:
        """Read."""
        return path

    rt = rt_with(read)
    r = await rt.call("cat", '{"path": "x"}')
    assert (r.ok, r.tool_name) == (True, "read_file")


async def test_state_updates_apply_after_the_call() -> None:
    @tool(read_only=True)
    def remember(key: str, ctx: ToolContext) -> str:
        """Remember a key."""
        ctx.update_state(lambda s: s.data.setdefault("keys", []).append(key))
        assert "keys" not in ctx.session.data or key not in ctx.session.data["keys"]
        return "ok"

    rt = rt_with(remember)
    await rt.call("remember", '{"key": "a"}')
    await rt.call("remember", '{"key": "b"}')
    assert rt.session.data["keys"] == ["a", "b"]


async def test_progress_events_reach_the_host() -> None:
    events: list[ProgressEvent] = []

    @tool(read_only=True)
    async def work(ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.progress("half way", done=1, total=2)
        return "done"

    rt = rt_with(work, on_progress=events.append)
    await rt.call("work", call_id="p1")
    assert [(e.call_id, e.tool_name, e.message, dict(e.data)) for e in events] == [
        ("p1", "work", "half way", {"done": 1, "total": 2})
    ]


async def test_settings_a_host_sets_later_reach_every_stage() -> None:
    events: list[ProgressEvent] = []

    @tool(read_only=True)
    async def work(n: int, ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.progress("tick")
        return ctx.locale

    rt = rt_with(work)
    assert (await rt.call("work", '{"n": 1}')).content == "en"  # plans and tables now cached
    rt.on_progress = events.append
    rt.locale = "zh"
    assert (await rt.call("work", '{"n": 1}')).content == "zh"
    assert [e.message for e in events] == ["tick"]
    assert rt.on_progress == events.append
    invalid = await rt.call("work", '{"n": "x"}')
    assert invalid.error is ErrorCode.INVALID_ARGS
    assert invalid.content != (await rt_with(work).call("work", '{"n": "x"}')).content


async def test_a_crashing_progress_callback_does_not_fail_the_call() -> None:
    def bad(event: ProgressEvent) -> None:
        raise RuntimeError("ui crashed")

    @tool(read_only=True)
    async def work(ctx: ToolContext) -> str:
        """Reports progress."""
        ctx.progress("tick")
        return "done"

    r = await rt_with(work, on_progress=bad).call("work")
    assert r.content == "done"


async def test_settings_per_tool_reach_the_context(tmp_path: Path) -> None:
    from handrail import Settings

    seen: list[dict[str, Any]] = []

    @tool(read_only=True)
    def configured(ctx: ToolContext) -> str:
        """Reads its settings."""
        seen.append(dict(ctx.settings))
        return "ok"

    rt = rt_with(configured, settings=Settings(tools={"configured": {"depth": 3}}))
    await rt.call("configured")
    assert seen == [{"depth": 3}]


async def test_context_carries_roots_cwd_and_deadline(tmp_path: Path) -> None:
    seen: list[ToolContext] = []

    @tool(read_only=True, timeout=5)
    async def look(ctx: ToolContext) -> str:
        """Looks at its context."""
        seen.append(ctx)
        return "ok"

    (tmp_path / "sub").mkdir()
    rt = rt_with(look, root=tmp_path, cwd=tmp_path / "sub")
    await rt.call("look")
    ctx = seen[0]
    assert ctx.cwd == (tmp_path / "sub").resolve()
    assert ctx.write_roots == (tmp_path.resolve(),)
    assert ctx.read_roots == (tmp_path.resolve(),)
    assert ctx.deadline is not None and ctx.deadline > time.monotonic()


def test_cwd_outside_the_roots_is_refused(tmp_path: Path) -> None:
    from handrail import ConfigurationError

    (tmp_path / "ws").mkdir()
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(ConfigurationError, match="outside the roots"):
        Runtime(Registry([add]), root=tmp_path / "ws", cwd=tmp_path / "elsewhere")


async def test_hooks_see_the_validated_arguments_with_defaults() -> None:
    seen: list[dict[str, Any]] = []

    @tool(read_only=True)
    def search(query: str, limit: int = 10) -> str:
        """Search."""
        return query

    def pre(event: HookEvent) -> None:
        seen.append(dict(event.tool_input))

    rt = rt_with(search, hooks=[Hook(event="pre_tool_use", func=pre)])
    await rt.call("search", '{"query": "x"}')
    await rt.call("search", {"query": "y", "limit": 2})
    assert seen == [{"query": "x", "limit": 10}, {"query": "y", "limit": 2}]


async def test_edited_arguments_go_through_the_hooks_again(tmp_path: Path) -> None:
    from handrail import Approval, Interrupted

    ran: list[str] = []

    @tool
    def save(text: str) -> str:
        """Save (asks in the default mode)."""
        ran.append(text)
        return "saved"

    def pre(event: HookEvent) -> HookResponse | None:
        if "secret" in event.tool_input["text"]:
            return HookResponse(decision="deny", reason="no secrets in notes")
        return None

    rt = rt_with(save, hooks=[Hook(event="pre_tool_use", func=pre)])
    r = await rt.call("save", {"text": "hello"})
    assert isinstance(r, Interrupted)
    r = await rt.resume(r, Approval.edit({"text": "my secret"}))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "no secrets" in r.content
    assert ran == []
