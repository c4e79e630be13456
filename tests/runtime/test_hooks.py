"""Hooks through `Runtime`: Python and shell hooks before and after tool calls."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import handrail
from handrail import (
    Approval,
    ErrorCode,
    Hook,
    HookEvent,
    HookResponse,
    Interrupted,
    PermissionRequest,
    Runtime,
    Tool,
    ToolContext,
    ToolKind,
    WritePath,
    tool,
)


class NoteArgs(BaseModel):
    path: str
    text: str = ""


class WriteNote(Tool):
    name = "write_note"
    aliases = ("save_note",)
    description = "Write a note."
    kind = ToolKind.EDIT
    args_model = NoteArgs

    def __init__(self, log: list[NoteArgs]) -> None:
        self.log = log
        super().__init__()

    def permission_requests(self, args: NoteArgs, ctx: ToolContext) -> Sequence[PermissionRequest]:
        return [WritePath(path=args.path)]

    async def run(self, args: NoteArgs, ctx: ToolContext) -> str:
        self.log.append(args)
        return f"wrote {args.path}: {args.text}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def writes() -> list[NoteArgs]:
    return []


@pytest.fixture
def write_note(writes: list[NoteArgs]) -> WriteNote:
    return WriteNote(writes)


@tool(read_only=True)
def peek(name: str) -> str:
    """Look at something."""
    return f"peeked {name}"


@tool(read_only=True)
def explode(name: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom {name}")


def script(tmp_path: Path, body: str, name: str = "hook.sh") -> str:
    """Write a bash script and return the command that runs it."""
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return f"bash {shlex.quote(str(path))}"


def note(path: str = "a.txt", text: str = "hi") -> dict[str, str]:
    return {"path": path, "text": text}


# -- Python hooks --------------------------------------------------------------------------


async def test_python_hook_deny_blocks_the_call(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    seen: list[HookEvent] = []

    def guard(event: HookEvent) -> HookResponse:
        seen.append(event)
        return HookResponse(decision="deny", reason="notes are frozen this week")

    rt = Runtime(
        [write_note], root=ws, mode="bypass", hooks=[Hook(event="pre_tool_use", func=guard)]
    )
    r = await rt.call("write_note", note(), call_id="c7")
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.source == "hook"
    assert "notes are frozen this week" in r.content
    assert writes == []
    assert [(e.event, e.tool_name, e.call_id) for e in seen] == [
        ("pre_tool_use", "write_note", "c7")
    ]
    assert dict(seen[0].tool_input) == note()


async def test_async_python_hook(ws: Path, write_note: WriteNote, writes: list[NoteArgs]) -> None:
    async def guard(event: HookEvent) -> HookResponse:
        return HookResponse(decision="deny")

    rt = Runtime(
        [write_note], root=ws, mode="bypass", hooks=[Hook(event="pre_tool_use", func=guard)]
    )
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_python_hook_returning_none_changes_nothing(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    rt = Runtime(
        [write_note],
        root=ws,
        mode="bypass",
        hooks=[Hook(event="pre_tool_use", func=lambda e: None)],
    )
    assert (await rt.call("write_note", note())).ok
    assert len(writes) == 1


async def test_python_hook_that_raises_blocks_by_default(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    def broken(event: HookEvent) -> HookResponse:
        raise ValueError("hook bug")

    rt = Runtime(
        [write_note], root=ws, mode="bypass", hooks=[Hook(event="pre_tool_use", func=broken)]
    )
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "hook bug" in r.content
    assert writes == []


async def test_python_hook_that_raises_is_ignored_when_configured(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    def broken(event: HookEvent) -> HookResponse:
        raise ValueError("hook bug")

    hook = Hook(event="pre_tool_use", func=broken, on_error="ignore")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    assert (await rt.call("write_note", note())).ok
    assert len(writes) == 1


async def test_slow_async_python_hook_times_out_and_blocks(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    import asyncio

    async def slow(event: HookEvent) -> HookResponse:
        await asyncio.sleep(60)
        return HookResponse()

    hook = Hook(event="pre_tool_use", func=slow, timeout=0.2)
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    t0 = time.monotonic()
    r = await rt.call("write_note", note())
    assert time.monotonic() - t0 < 20
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "timed out" in r.content
    assert writes == []


async def test_slow_sync_python_hook_times_out_and_blocks(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    def slow(event: HookEvent) -> HookResponse:
        time.sleep(2)
        return HookResponse(decision="allow")

    hook = Hook(event="pre_tool_use", func=slow, timeout=0.2)
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "timed out" in r.content
    assert writes == []


async def test_hooks_run_once_per_call_even_across_an_approval(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    seen: list[HookEvent] = []

    def rewrite(event: HookEvent) -> HookResponse:
        seen.append(event)
        return HookResponse(
            updated_input={**event.tool_input, "text": "stamped"}, additional_context="stamp ok"
        )

    rt = Runtime([write_note], root=ws, hooks=[Hook(event="pre_tool_use", func=rewrite)])
    r = await rt.call("write_note", note())
    assert isinstance(r, Interrupted)
    assert r.approval is not None
    sent = r.approval.call.arguments
    assert (json.loads(sent) if isinstance(sent, str) else dict(sent))["text"] == "stamped"
    done = await rt.resume(r, Approval.allow_once())
    assert done.ok
    assert [w.text for w in writes] == ["stamped"]
    assert "stamp ok" in done.content
    assert len(seen) == 1


# -- shell hooks: the document on stdin ----------------------------------------------------


async def test_shell_hook_receives_the_call_on_stdin(
    ws: Path, tmp_path: Path, write_note: WriteNote
) -> None:
    doc = tmp_path / "pre.json"
    hook = Hook(event="pre_tool_use", command=f"cat > {shlex.quote(str(doc))}")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", '{"path": "a.txt", "text": "héllo"}', call_id="call-9")
    assert r.ok
    data = json.loads(doc.read_text(encoding="utf-8"))
    assert data["session_id"] == rt.session.id
    assert data["cwd"] == str(ws)
    assert data["mode"] == "bypass"
    assert data["event"] == "pre_tool_use"
    assert data["tool_name"] == "write_note"
    assert data["tool_input"] == {"path": "a.txt", "text": "héllo"}
    assert data["call_id"] == "call-9"
    assert "tool_result" not in data


async def test_shell_hook_called_through_an_alias_gets_the_canonical_name(
    ws: Path, tmp_path: Path, write_note: WriteNote
) -> None:
    doc = tmp_path / "pre.json"
    hook = Hook(event="pre_tool_use", command=f"cat > {shlex.quote(str(doc))}")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    assert (await rt.call("save_note", note())).ok
    assert json.loads(doc.read_text(encoding="utf-8"))["tool_name"] == "write_note"


async def test_shell_hook_runs_in_the_session_cwd(ws: Path, tmp_path: Path) -> None:
    out = tmp_path / "pwd.txt"
    hook = Hook(event="pre_tool_use", command=f"pwd -P > {shlex.quote(str(out))}")
    rt = Runtime([peek], root=ws, hooks=[hook])
    assert (await rt.call("peek", {"name": "x"})).ok
    assert out.read_text(encoding="utf-8").strip() == str(ws)


async def test_post_hook_receives_the_result(
    ws: Path, tmp_path: Path, write_note: WriteNote
) -> None:
    doc = tmp_path / "post.json"
    hook = Hook(event="post_tool_use", command=f"cat > {shlex.quote(str(doc))}")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note(), call_id="p1")
    assert r.ok
    data = json.loads(doc.read_text(encoding="utf-8"))
    assert data["event"] == "post_tool_use"
    assert data["call_id"] == "p1"
    assert data["tool_input"] == note()
    assert data["tool_result"] == {"ok": True, "content": "wrote a.txt: hi", "error": None}


async def test_post_tool_failure_runs_for_a_tool_that_raises(ws: Path, tmp_path: Path) -> None:
    doc = tmp_path / "fail.json"
    ok_doc = tmp_path / "ok.json"
    hooks = [
        Hook(event="post_tool_failure", command=f"cat > {shlex.quote(str(doc))}"),
        Hook(event="post_tool_use", command=f"cat > {shlex.quote(str(ok_doc))}"),
    ]
    rt = Runtime([explode], root=ws, hooks=hooks)
    r = await rt.call("explode", {"name": "x"})
    assert r.error is ErrorCode.EXECUTION_ERROR
    data = json.loads(doc.read_text(encoding="utf-8"))
    assert data["event"] == "post_tool_failure"
    assert data["tool_name"] == "explode"
    assert data["tool_result"]["ok"] is False
    assert data["tool_result"]["error"] == "EXECUTION_ERROR"
    assert "boom x" in data["tool_result"]["content"]
    assert not ok_doc.exists()


async def test_post_tool_failure_context_reaches_the_model(ws: Path) -> None:
    hook = Hook(
        event="post_tool_failure",
        command="""printf '{"additional_context": "see docs/troubleshooting.md"}'""",
    )
    rt = Runtime([explode], root=ws, hooks=[hook])
    r = await rt.call("explode", {"name": "x"})
    assert r.error is ErrorCode.EXECUTION_ERROR
    assert "boom x" in r.content
    assert "see docs/troubleshooting.md" in r.content


async def test_post_tool_use_does_not_run_when_the_tool_fails(ws: Path) -> None:
    seen: list[str] = []

    def record(event: HookEvent) -> None:
        seen.append(event.event)

    hooks = [Hook(event="post_tool_use", func=record)]
    rt = Runtime([explode, peek], root=ws, hooks=hooks)
    await rt.call("explode", {"name": "x"})
    assert seen == []
    await rt.call("peek", {"name": "x"})
    assert seen == ["post_tool_use"]


async def test_post_tool_use_context_is_appended(ws: Path, tmp_path: Path) -> None:
    hook = Hook(
        event="post_tool_use",
        command=script(tmp_path, 'echo \'{"additional_context": "remember to run the tests"}\'\n'),
    )
    rt = Runtime([peek], root=ws, hooks=[hook])
    r = await rt.call("peek", {"name": "x"})
    assert r.ok
    assert r.content.startswith("peeked x")
    assert r.content.rstrip().endswith("remember to run the tests")


async def test_python_post_hook_sees_the_result(ws: Path) -> None:
    results: list[Any] = []

    def watch(event: HookEvent) -> HookResponse:
        results.append(event.result)
        return HookResponse(additional_context="watched")

    rt = Runtime([peek], root=ws, hooks=[Hook(event="post_tool_use", func=watch)])
    r = await rt.call("peek", {"name": "x"})
    assert "watched" in r.content
    assert results[0] is not None and results[0].content == "peeked x"


# -- shell hooks: answers ------------------------------------------------------------------


async def test_exit_2_blocks_and_shows_stderr(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    body = "cat > /dev/null\necho 'notes must end in .md' >&2\nexit 2\n"
    hook = Hook(event="pre_tool_use", command=script(tmp_path, body))
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.source == "hook"
    assert "notes must end in .md" in r.content
    assert writes == []


async def test_decision_allow_skips_the_question(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="""echo '{"decision": "allow"}'""")
    rt = Runtime([write_note], root=ws, hooks=[hook])
    r = await rt.call("write_note", note())
    assert not isinstance(r, Interrupted)
    assert r.ok
    assert len(writes) == 1


async def test_decision_allow_cannot_override_a_deny_rule(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="""echo '{"decision": "allow"}'""")
    rt = Runtime([write_note], root=ws, hooks=[hook], deny=["write_note(a.txt)"])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.source == "rule"
    assert writes == []


async def test_decision_allow_cannot_override_the_roots(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="""echo '{"decision": "allow"}'""")
    rt = Runtime([write_note], root=ws, hooks=[hook])
    r = await rt.call("write_note", note(str(tmp_path / "out.txt")))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_decision_allow_cannot_override_plan_mode(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="""echo '{"decision": "allow"}'""")
    rt = Runtime([write_note], root=ws, hooks=[hook], mode="plan")
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_decision_deny_with_reason(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(
        event="pre_tool_use",
        command="""echo '{"decision": "deny", "reason": "use the wiki instead"}'""",
    )
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "use the wiki instead" in r.content
    assert writes == []


async def test_decision_ask_asks_even_for_a_read_only_tool(ws: Path) -> None:
    hook = Hook(
        event="pre_tool_use", command="""echo '{"decision": "ask", "reason": "double-check"}'"""
    )
    rt = Runtime([peek], root=ws, hooks=[hook])
    r = await rt.call("peek", {"name": "x"})
    assert isinstance(r, Interrupted)
    assert r.approval is not None and "double-check" in r.approval.reason
    assert (await rt.resume(r, Approval.allow_once())).content == "peeked x"


async def test_unknown_decision_is_a_failed_hook(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="""echo '{"decision": "yes please"}'""")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_updated_input_changes_the_arguments(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    body = (
        "import json, sys\n"
        "doc = json.load(sys.stdin)\n"
        "args = dict(doc['tool_input'], text=doc['tool_input']['text'].upper())\n"
        "print(json.dumps({'updated_input': args}))\n"
    )
    (tmp_path / "upper.py").write_text(body, encoding="utf-8")
    import sys

    cmd = f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'upper.py'))}"
    rt = Runtime(
        [write_note], root=ws, mode="bypass", hooks=[Hook(event="pre_tool_use", command=cmd)]
    )
    r = await rt.call("write_note", note(text="quiet"))
    assert r.ok
    assert [(w.path, w.text) for w in writes] == [("a.txt", "QUIET")]
    assert "QUIET" in r.content


async def test_invalid_updated_input_is_invalid_args(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(
        event="pre_tool_use", command="""echo '{"updated_input": {"path": 3, "colour": "red"}}'"""
    )
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.INVALID_ARGS
    assert {i.path for i in r.issues} >= {"/path", "/colour"}
    assert "hook" in r.content
    assert writes == []


async def test_updated_input_is_checked_by_the_policy(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    outside = json.dumps({"updated_input": {"path": str(tmp_path / "escape.txt")}})
    hook = Hook(event="pre_tool_use", command=f"echo {shlex.quote(outside)}")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_updated_input_is_seen_by_the_next_hook(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    seen: list[dict[str, Any]] = []

    def record(event: HookEvent) -> None:
        seen.append(dict(event.tool_input))

    hooks = [
        Hook(event="pre_tool_use", command="""echo '{"updated_input": {"path": "b.txt"}}'"""),
        Hook(event="pre_tool_use", func=record),
    ]
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=hooks)
    assert (await rt.call("write_note", note())).ok
    assert seen == [{"path": "b.txt"}]
    assert [(w.path, w.text) for w in writes] == [("b.txt", "")]


async def test_additional_context_appears_in_the_result(ws: Path) -> None:
    hook = Hook(
        event="pre_tool_use",
        command="""echo '{"additional_context": "the project uses tabs"}'""",
    )
    rt = Runtime([peek], root=ws, hooks=[hook])
    r = await rt.call("peek", {"name": "x"})
    assert r.ok
    assert "peeked x" in r.content
    assert "the project uses tabs" in r.content


async def test_plain_text_stdout_is_context(ws: Path) -> None:
    hook = Hook(event="pre_tool_use", command="echo 'reminder: be brief'")
    rt = Runtime([peek], root=ws, hooks=[hook])
    r = await rt.call("peek", {"name": "x"})
    assert r.ok
    assert "reminder: be brief" in r.content


async def test_silent_hook_changes_nothing(ws: Path) -> None:
    rt = Runtime([peek], root=ws, hooks=[Hook(event="pre_tool_use", command="true")])
    r = await rt.call("peek", {"name": "x"})
    assert (r.ok, r.content) == (True, "peeked x")


async def test_hook_crash_blocks_by_default(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    body = "echo 'linter not installed' >&2\nexit 1\n"
    rt = Runtime(
        [write_note],
        root=ws,
        mode="bypass",
        hooks=[Hook(event="pre_tool_use", command=script(tmp_path, body))],
    )
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "status 1" in r.content
    assert "linter not installed" in r.content
    assert writes == []


async def test_hook_crash_is_ignored_with_on_error_ignore(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command=script(tmp_path, "exit 1\n"), on_error="ignore")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.ok
    assert len(writes) == 1


async def test_on_error_ignore_does_not_ignore_exit_2(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="echo nope >&2; exit 2", on_error="ignore")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_missing_hook_program_blocks(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hook = Hook(event="pre_tool_use", command="/nonexistent/handrail-hook-xyz")
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    r = await rt.call("write_note", note())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


# -- timeouts and process trees ------------------------------------------------------------


def _alive(pid: int) -> bool:
    """Is the process running (a zombie waiting to be reaped counts as gone)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    state = stat[stat.rfind(b")") + 2 :].split()[0]
    return state not in (b"Z", b"X")


def _is_our_sleep(pid: int) -> bool:
    try:
        return b"sleep" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _wait_gone(pids: Sequence[int], limit: float = 5.0) -> list[int]:
    deadline = time.monotonic() + limit
    for _ in range(500):
        alive = [p for p in pids if _alive(p)]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.02)
    return [p for p in pids if _alive(p)]


def _read_pids(*files: Path) -> list[int]:
    pids: list[int] = []
    for f in files:
        with contextlib.suppress(OSError, ValueError):
            pids.append(int(f.read_text(encoding="utf-8").strip()))
    return pids


@contextlib.contextmanager
def reaper(*pid_files: Path) -> Iterator[None]:
    """Kill whatever the test's hook left behind, if the code under test did not."""
    try:
        yield
    finally:
        for pid in _read_pids(*pid_files):
            if _alive(pid) and _is_our_sleep(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
async def test_hook_timeout_blocks_and_kills_the_whole_tree(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    escaped, child = tmp_path / "escaped.pid", tmp_path / "child.pid"
    body = (
        f"setsid sleep 300 & echo $! > {shlex.quote(str(escaped))}\n"
        f"sleep 60 & echo $! > {shlex.quote(str(child))}\n"
        "wait\n"
    )
    hook = Hook(event="pre_tool_use", command=script(tmp_path, body), timeout=1)
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    with reaper(escaped, child):
        t0 = time.monotonic()
        r = await rt.call("write_note", note())
        elapsed = time.monotonic() - t0
        assert r.error is ErrorCode.PERMISSION_DENIED
        assert "timed out" in r.content
        assert writes == []
        assert elapsed < 20
        pids = _read_pids(escaped, child)
        assert len(pids) == 2
        assert _wait_gone(pids) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
async def test_hook_timeout_with_on_error_ignore_runs_the_call_and_still_kills(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    pidfile = tmp_path / "sleep.pid"
    body = f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}\nwait\n"
    hook = Hook(
        event="pre_tool_use", command=script(tmp_path, body), timeout=0.5, on_error="ignore"
    )
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    with reaper(pidfile):
        r = await rt.call("write_note", note())
        assert r.ok
        assert len(writes) == 1
        assert _wait_gone(_read_pids(pidfile)) == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
async def test_hook_that_leaves_a_background_child_still_answers(
    ws: Path, tmp_path: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    # The hook script finishes at once; a child it forgot to detach from stdout must not turn
    # its answer into a timeout.
    pidfile = tmp_path / "bg.pid"
    body = (
        f"sleep 30 & echo $! > {shlex.quote(str(pidfile))}\n"
        """echo '{"additional_context": "checked by bg hook"}'\n"""
    )
    hook = Hook(event="pre_tool_use", command=script(tmp_path, body), timeout=3)
    rt = Runtime([write_note], root=ws, mode="bypass", hooks=[hook])
    with reaper(pidfile):
        r = await rt.call("write_note", note())
        assert r.ok, r.content
        assert "checked by bg hook" in r.content
        assert len(writes) == 1


# -- matchers ------------------------------------------------------------------------------


async def test_matcher_selects_tools_by_name(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    seen: list[str] = []

    def record(event: HookEvent) -> None:
        seen.append(event.tool_name)

    hooks = [Hook(event="pre_tool_use", matcher="peek|other", func=record)]
    rt = Runtime([write_note, peek], root=ws, mode="bypass", hooks=hooks)
    await rt.call("write_note", note())
    await rt.call("peek", {"name": "x"})
    assert seen == ["peek"]


async def test_matcher_must_match_the_whole_name(ws: Path) -> None:
    seen: list[str] = []

    def record(event: HookEvent) -> None:
        seen.append(event.tool_name)

    rt = Runtime([peek], root=ws, hooks=[Hook(event="pre_tool_use", matcher="pee", func=record)])
    await rt.call("peek", {"name": "x"})
    assert seen == []


async def test_matcher_selects_tools_by_alias(
    ws: Path, write_note: WriteNote, writes: list[NoteArgs]
) -> None:
    hooks = [
        Hook(event="pre_tool_use", matcher="save_.*", func=lambda e: HookResponse(decision="deny"))
    ]
    rt = Runtime([write_note, peek], root=ws, mode="bypass", hooks=hooks)
    assert (await rt.call("write_note", note())).error is ErrorCode.PERMISSION_DENIED
    assert (await rt.call("peek", {"name": "x"})).ok
    assert writes == []


async def test_no_matcher_applies_to_every_tool(ws: Path, write_note: WriteNote) -> None:
    seen: list[str] = []

    def record(event: HookEvent) -> None:
        seen.append(event.tool_name)

    rt = Runtime(
        [write_note, peek], root=ws, mode="bypass", hooks=[Hook(event="pre_tool_use", func=record)]
    )
    await rt.call("peek", {"name": "x"})
    await rt.call("save_note", note())
    assert seen == ["peek", "write_note"]


# -- setup errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"event": "pre_tool_use"},
        {"event": "pre_tool_use", "command": "true", "func": lambda e: None},
        {"event": "before_tool", "command": "true"},
        {"event": "pre_tool_use", "command": "true", "matcher": "(unclosed"},
        {"event": "pre_tool_use", "command": "true", "timeout": 0},
    ],
)
def test_bad_hook_definitions_are_configuration_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(handrail.ConfigurationError):
        Hook(**kwargs)
