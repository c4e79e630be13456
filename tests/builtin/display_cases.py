"""Every built-in tool's display in every state, from real calls: a table other tests render.

`await display_cases(tmp_path)` runs each built-in tool, tool_search and the sub-agent tool for
real in a temporary workspace (a loopback web server for web_fetch, the scripted model server
for the sub-agent) and returns `(case_id, Display)` pairs such as `("edit_file-waiting", ...)`:
the states are `running`, `progress` (live output or a child's activity), `waiting` (for
approval), `done`, `failed`, `denied` and `cancelled`, with a suffix for a variant
(`read_file-done-page`). Results come from the tools themselves, so a change in a result's
shape shows up here.

The displays are made stable for snapshots: the workspace is `/ws`, the web server is
`127.0.0.1:8000`, every duration is `DURATION` and every elapsed time `ELAPSED`.

Other test folders load this file by path (the test folders are not packages), registering it
in `sys.modules` before running it, as `test_displays._load_cases` does.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from handrail import (
    Approval,
    CallProgress,
    CallStatus,
    DiffBody,
    Display,
    Interrupted,
    ProgressEvent,
    Registry,
    Runtime,
    TableBody,
    TextBody,
    Tool,
    ToolCall,
    ToolResult,
)
from handrail.agent import Agent, ModelClient
from handrail.builtin import (
    EditFile,
    EnterPlanMode,
    ExitPlanMode,
    GrepSearch,
    ListFiles,
    ReadFile,
    RunShell,
    ShellOutput,
    Skill,
    TodoWrite,
    WebFetch,
    WriteFile,
)
from handrail.testing import ModelServer, Reply, ToolUse

__all__ = ["DURATION", "ELAPSED", "display_cases"]

DURATION = 0.25
"""Seconds every finished display says it took."""
ELAPSED = 1.5
"""Seconds every running display with progress says it has run."""
WS = "/ws"
"""The workspace as the displays show it."""
PORT = 8000
"""The web server's port as the displays show it."""

APP = """import sys


def greet(name):
    print(f"Hello, {name}!")


def main():
    greet(sys.argv[1] if len(sys.argv) > 1 else "world")


if __name__ == "__main__":
    main()
"""
GUIDE = b"""<html><head><title>Guide</title></head><body>
<h1>Getting started</h1><p>Install the package, then run <code>app.py</code>.</p>
</body></html>"""
SKILL = """---
name: release-notes
description: Write release notes from the commits since the last tag.
---
List the commits since the last tag with `git log`, group them by kind, and write the notes.
"""


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "app.py").write_text(APP)
    (ws / "src" / "util.py").write_text("def slug(text):\n    return text.lower()\n")
    (ws / "src" / "names.py").write_text("NAMES = ['ada', 'grace']\n")
    (ws / "notes.md").write_text("".join(f"Note {n}: keep it short.\n" for n in range(1, 31)))
    skill = ws / ".handrail" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    (root / "user-skills").mkdir()
    return ws


@contextmanager
def _web_server() -> Iterator[int]:
    """A loopback server: `/guide` is a page, anything else a 404. Yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            found = self.path == "/guide"
            body = GUIDE if found else b"no such page"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01})
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _tools(ws: Path, port: int, user_skills: Path) -> list[Tool]:
    # coding_tools(), with the web server allowed and no user skills from the real home.
    return [
        EditFile(),
        EnterPlanMode(),
        ExitPlanMode(),
        GrepSearch(),
        ListFiles(),
        ReadFile(),
        RunShell(allow_unsandboxed=True),  # the same displays on a machine without a sandbox
        ShellOutput(),
        Skill(project_dir=ws, user_dir=user_skills),
        TodoWrite(),
        WebFetch(allow_hosts=[f"127.0.0.1:{port}"]),
        WriteFile(),
    ]


# -- making displays stable -----------------------------------------------------------------


def _swap(text: str, subs: Sequence[tuple[str, str]]) -> str:
    for old, new in subs:
        text = text.replace(old, new)
    return text


def _swap_json(value: Any, subs: Sequence[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        return _swap(value, subs)
    if isinstance(value, Mapping):
        return {k: _swap_json(v, subs) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_swap_json(v, subs) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _stable_result(result: ToolResult, subs: Sequence[tuple[str, str]]) -> ToolResult:
    """The result with fixed paths and port, before a display cuts its text to one line."""
    denial = result.denial
    return replace(
        result,
        content=_swap(result.content, subs),
        summary=_swap(result.summary, subs),
        diff=_swap(result.diff, subs) if result.diff is not None else None,
        metadata=_swap_json(result.metadata, subs),
        denial=replace(denial, reason=_swap(denial.reason, subs)) if denial else None,
    )


def _stable(display: Display, subs: Sequence[tuple[str, str]]) -> Display:
    """The display with fixed paths, port and times."""
    body = display.body
    if isinstance(body, DiffBody):
        body = replace(body, diff=_swap(body.diff, subs))
    elif isinstance(body, TextBody):
        body = replace(
            body,
            head=tuple(_swap(x, subs) for x in body.head),
            tail=tuple(_swap(x, subs) for x in body.tail),
        )
    elif isinstance(body, TableBody):
        body = replace(body, rows=tuple(tuple(_swap(c, subs) for c in r) for r in body.rows))
    progress = display.progress
    if progress is not None:
        progress = replace(
            progress,
            elapsed=ELAPSED,
            lines=tuple(_swap(x, subs) for x in progress.lines),
            message=_swap(progress.message, subs),
        )
    return replace(
        display,
        title=_swap(display.title, subs),
        subtitle=_swap(display.subtitle, subs),
        body=body,
        progress=progress,
        duration=DURATION if display.status.finished else 0.0,
    )


# -- running the calls ----------------------------------------------------------------------


@dataclass
class _Cases:
    rt: Runtime
    """Default mode: edits and commands wait for approval (web_fetch too, by an ask rule)."""
    strict: Runtime
    """A deny rule for each tool that never asks."""
    bypass: Runtime
    """Nothing asks."""
    subs: list[tuple[str, str]]
    progress: list[ProgressEvent] = field(default_factory=list[ProgressEvent])
    out: list[tuple[str, Display]] = field(default_factory=list[tuple[str, Display]])
    ids: int = 0

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> ToolCall:
        self.ids += 1
        args = arguments if isinstance(arguments, str) else dict(arguments)
        return ToolCall(id=f"call_{self.ids}", name=name, arguments=args)

    def add(self, case: str, display: Display) -> None:
        self.out.append((case, _stable(display, self.subs)))

    def show(
        self,
        case: str,
        call: ToolCall,
        result: ToolResult | None = None,
        *,
        rt: Runtime | None = None,
        **kw: Any,
    ) -> None:
        if result is not None:
            result = _stable_result(result, self.subs)
        self.add(case, (rt or self.rt).display(call, result=result, **kw))

    async def run(self, call: ToolCall, rt: Runtime | None = None) -> ToolResult:
        """The call's result (approved once if it asks)."""
        runtime = rt or self.rt
        result = await runtime.call(call.name, call.arguments, call_id=call.id)
        if isinstance(result, Interrupted):
            result = await runtime.resume(result, Approval.allow_once())
        return result

    async def asked(self, call: ToolCall, rt: Runtime | None = None) -> Interrupted:
        """Run a call that must wait for approval; record its `waiting` display."""
        runtime = rt or self.rt
        result = await runtime.call(call.name, call.arguments, call_id=call.id)
        if not isinstance(result, Interrupted):
            raise AssertionError(f"{call.name} did not ask for approval: {result.content}")
        self.show(f"{call.name}-waiting", call, rt=runtime, status=CallStatus.WAITING)
        return result

    async def answer(self, asked: Interrupted, answer: Approval, rt: Runtime | None = None) -> Any:
        return await (rt or self.rt).resume(asked, answer)

    async def states(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        failing: Mapping[str, Any] | str,
        asks: bool = False,
        denial: str | None = None,
    ) -> ToolResult:
        """running, (waiting,) done, failed, denied: the common cases of one tool."""
        call = self.call(name, arguments)
        self.show(f"{name}-running", call)
        if asks:
            done = await self.answer(await self.asked(call), Approval.allow_once())
        else:
            done = await self.run(call)
        if not done.ok:
            raise AssertionError(f"{name} failed: {done.content}")
        self.show(f"{name}-done", call, done)
        bad = self.call(name, failing)
        self.show(f"{name}-failed", bad, await self.run(bad))
        if asks:  # the user says no, with a reason or without
            again = self.call(name, arguments)
            asked = await self.rt.call(name, again.arguments, call_id=again.id)
            assert isinstance(asked, Interrupted)
            no = Approval.deny(denial) if denial else Approval.deny()
            self.show(f"{name}-denied", again, await self.answer(asked, no))
        else:  # a deny rule refuses it
            again = self.call(name, arguments)
            self.show(f"{name}-denied", again, await self.run(again, self.strict), rt=self.strict)
        return done


async def _file_tools(c: _Cases) -> None:
    await c.states(
        "read_file",
        {"file_path": "app.py"},
        failing={"file_path": "src/utils.py"},
    )
    # Reading outside the workspace: refused by root confinement, not by a rule.
    outside = c.call("read_file", {"file_path": "/etc/ssh/ssh_host_ed25519_key"})
    c.show("read_file-denied-roots", outside, await c.run(outside))
    page = c.call("read_file", {"file_path": str(Path(c.subs[0][0]) / "notes.md"), "limit": 10})
    c.show("read_file-running-page", page)
    c.show("read_file-done-page", page, await c.run(page))
    await c.states(
        "write_file",
        {"file_path": "src/greeting.py", "content": 'GREETING = "Hello"\nPUNCTUATION = "!"\n'},
        failing={"file_path": "src/util.py", "content": "replaced\n"},  # not read first
        asks=True,
    )
    await c.states(
        "edit_file",
        {
            "file_path": "app.py",
            "old_string": '    print(f"Hello, {name}!")',
            "new_string": '    greeting = "Hello"\n    print(f"{greeting}, {name}!")',
        },
        failing={"file_path": "app.py", "old_string": "print(name)", "new_string": "pass"},
        asks=True,
        denial="keep the f-string as it is",
    )
    batch = c.call(
        "edit_file",
        {
            "file_path": "app.py",
            "edits": [
                {"old_string": "import sys", "new_string": "import os\nimport sys"},
                {"old_string": '"world"', "new_string": '"there"', "replace_all": True},
            ],
        },
    )
    await c.asked(batch)
    c.out[-1] = ("edit_file-waiting-batch", c.out[-1][1])
    await c.states(
        "list_files",
        {"pattern": "*.py", "path": "src"},
        failing={"path": "lib"},
    )
    await c.states(
        "grep_search",
        {"pattern": "def \\w+", "output_mode": "content", "glob": "*.py"},
        failing={"pattern": "def (", "output_mode": "content"},
    )


async def _shell(c: _Cases) -> None:
    printf = "printf 'line %s\\n' 1 2 3 4 5 6 7"
    await c.states(
        "run_shell",
        {"command": f"mkdir -p build && {printf} | tee build/log.txt", "description": "Build"},
        failing={"command": "echo compiling; echo 'error: missing ;' >&2; exit 2"},
        asks=True,
    )
    # Live output: the latest progress report of a real run.
    # Reports come at most every 0.5 s: the last six lines arrive after a pause longer than
    # that, so one report is sure to hold them, whatever the timing of the first. They come in
    # one write (coreutils printf, not the shell's builtin, which may write line by line).
    rest = "/usr/bin/printf '" + "".join(f"line {i}\\n" for i in range(2, 8)) + "'"
    live = c.call("run_shell", {"command": f"echo line 1; sleep 0.7; {rest}; sleep 0.1"})
    c.progress.clear()
    assert (await c.run(live)).ok
    reports = [
        e
        for e in c.progress
        if e.call_id == live.id and "line 7" in "".join(e.data.get("lines") or ())
    ]
    assert reports, "run_shell reported no output lines"
    progress = CallProgress(elapsed=ELAPSED, bytes=None)
    c.show("run_shell-progress", live, progress=progress, data=reports[-1].data)
    slow = c.call("run_shell", {"command": "sleep 5", "timeout_seconds": 1})
    c.show("run_shell-failed-timeout", slow, await c.run(slow))
    script = (
        "cat > build/check.sh <<'EOF'\nset -e\npython -m compileall -q .\n"
        "grep -rn TODO src || true\nEOF\nbash build/check.sh"
    )
    long = c.call("run_shell", {"command": script})
    await c.asked(long)
    c.out[-1] = ("run_shell-waiting-script", c.out[-1][1])
    await c.answer(await c.rt.call("run_shell", long.arguments), Approval.deny())

    # A background job and shell_output on it (bypass: no approval for the job itself).
    job = c.call("run_shell", {"command": f"{printf}", "run_in_background": True})
    c.show("run_shell-running-background", job)
    started = await c.run(job, c.bypass)
    c.show("run_shell-done-background", job, started, rt=c.bypass)
    job_id = started.metadata["job_id"]
    out = c.call("shell_output", {"job_id": job_id, "wait_seconds": 10})
    c.show("shell_output-running", out, rt=c.bypass)
    c.show("shell_output-done", out, await c.run(out, c.bypass), rt=c.bypass)
    bad = c.call("shell_output", {"job_id": "sh-9"})
    c.show("shell_output-failed", bad, await c.run(bad, c.bypass), rt=c.bypass)
    denied = c.call("shell_output", {"job_id": job_id})
    c.show("shell_output-denied", denied, await c.run(denied, c.strict), rt=c.strict)


async def _other_tools(c: _Cases, plan_rt: Runtime) -> None:
    todos = [
        {"id": "1", "content": "Read app.py", "status": "completed"},
        {"id": "2", "content": "Add a greeting setting", "status": "in_progress"},
        {"id": "3", "content": "Run the tests", "status": "pending"},
    ]
    await c.states(
        "todo_write",
        {"todos": todos},
        failing={"todos": [{**t, "status": "in_progress"} for t in todos]},
    )
    url = f"http://127.0.0.1:{PORT}/guide"
    real = c.subs[-1][0]
    await c.states(
        "web_fetch",
        {"url": url.replace(f"127.0.0.1:{PORT}", real)},
        failing={"url": url.replace(f"127.0.0.1:{PORT}", real).replace("guide", "missing")},
        asks=True,
        denial="no browsing for this task",
    )
    await c.states("skill", {"name": "release-notes"}, failing={"name": "release-note"})
    await c.states(
        "tool_search", {"query": "plan mode"}, failing='{"query": ["not", "a", "string"]}'
    )
    none = c.call("tool_search", {"query": "kubernetes"})
    c.show("tool_search-done-none", none, await c.run(none))
    picked = c.call("tool_search", {"query": "select:enter_plan_mode,exit_plan_mode"})
    c.show("tool_search-done-select", picked, await c.run(picked))

    # Plan mode on its own runtime: entering it denies every change afterwards.
    assert (await plan_rt.call("tool_search", {"query": "select:enter_plan_mode"})).ok
    enter = c.call("enter_plan_mode", {"reason": "The change touches several modules."})
    c.show("enter_plan_mode-running", enter, rt=plan_rt)
    entered = await c.run(enter, plan_rt)
    assert entered.ok, entered.content
    c.show("enter_plan_mode-done", enter, entered, rt=plan_rt)
    twice = c.call("enter_plan_mode", {})
    c.show("enter_plan_mode-failed", twice, await c.run(twice, plan_rt), rt=plan_rt)
    denied = c.call("enter_plan_mode", {})
    c.show("enter_plan_mode-denied", denied, await c.run(denied, c.strict), rt=c.strict)
    plan = (
        "1. Add GREETING to src/greeting.py.\n2. Use it in app.py's greet().\n"
        "3. Run the tests with pytest -q."
    )
    leave = c.call("exit_plan_mode", {"plan": plan})
    c.show("exit_plan_mode-running", leave, rt=plan_rt)
    asked = await c.asked(leave, plan_rt)
    no = c.call("exit_plan_mode", {"plan": plan})
    c.show(
        "exit_plan_mode-denied",
        no,
        await c.answer(asked, Approval.deny("also update the README"), plan_rt),
        rt=plan_rt,
    )
    again = await plan_rt.call("exit_plan_mode", leave.arguments, call_id=leave.id)
    assert isinstance(again, Interrupted)
    done = await c.answer(again, Approval.allow_once(), plan_rt)
    assert done.ok, done.content
    c.show("exit_plan_mode-done", leave, done, rt=plan_rt)
    late = c.call("exit_plan_mode", {"plan": plan})
    c.show("exit_plan_mode-failed", late, await c.run(late, plan_rt), rt=plan_rt)


async def _agent(c: _Cases, server: ModelServer) -> None:
    task = {
        "description": "Find the greeting code",
        "prompt": "Where is the greeting printed? Answer with the file and function.",
        "agent_type": "explore",
    }
    server.push(
        Reply(tool_calls=[ToolUse("read_file", {"file_path": "app.py"})], input_tokens=1800),
        Reply(text="In app.py, greet() prints it.", input_tokens=2400, output_tokens=40),
    )
    call = c.call("agent", task)
    c.show("agent-running", call)
    c.progress.clear()
    done = await c.run(call)
    assert done.ok, done.content
    events = [e.data for e in c.progress if e.call_id == call.id]
    # The child's activity: a call started, a call finished, its answer streaming.
    for case, kind in [
        ("agent-progress", "tool_call_started"),
        ("agent-progress-finished", "tool_call_finished"),
        ("agent-progress-answer", "text_delta"),
    ]:
        data = next(d for d in events if d["event"]["type"] == kind)
        c.show(case, call, progress=CallProgress(), data=data)
    c.show("agent-done", call, done)
    server.push(Reply(text=""), Reply(text=""))  # no answer, not even when asked again
    lost = c.call("agent", {**task, "description": "Map the modules"})
    c.show("agent-failed", lost, await c.run(lost))
    refused = c.call("agent", task)
    c.show("agent-denied", refused, await c.run(refused, c.strict), rt=c.strict)


async def _cancelled(c: _Cases, names: Sequence[tuple[str, Any]]) -> None:
    """Each call queued behind a running command and cancelled; then the command itself."""
    bypass = c.bypass
    assert (await bypass.call("tool_search", {"query": "select:enter_plan_mode,exit_plan_mode"})).ok
    blocker = c.call("run_shell", {"command": "echo started; sleep 30; rm -f build/stamp"})
    queued = [c.call(name, args) for name, args in names]
    results: dict[str, ToolResult] = {}
    async with asyncio.timeout(30), bypass.stream() as ex:
        ex.submit(blocker)
        for q in queued:
            ex.submit(q)
        ex.close()
        async for item in ex:
            if isinstance(item, ToolResult):
                results[item.call_id] = item
            elif item.call_id == blocker.id and blocker.id not in results:
                # The command runs (it printed): cancel what waits behind it, then it.
                for q in queued:
                    ex.cancel(q.id)
                ex.cancel(blocker.id)
    for q in [blocker, *queued]:
        result = results[q.id]
        assert result.error is not None and result.error.value == "CANCELLED", result
        c.show(f"{q.name}-cancelled", q, result, rt=bypass)


async def display_cases(tmp_path: Path) -> list[tuple[str, Display]]:
    """`(case_id, Display)` for every built-in tool in every state; see the module docstring."""
    root = Path(os.path.realpath(tmp_path))
    ws = _workspace(root)
    with _web_server() as port, ModelServer([]) as server:
        client = ModelClient(
            "openai_chat",
            "test-model",
            base_url=server.base_url("openai_chat"),
            timeout=10.0,
            max_retries=0,
        )
        subs = [(str(ws), WS), (str(root), "/tmp"), (f"127.0.0.1:{port}", f"127.0.0.1:{PORT}")]
        progress: list[ProgressEvent] = []
        user_skills = root / "user-skills"

        def runtime(mode: str, **kw: Any) -> Runtime:
            rt = Runtime(
                Registry(_tools(ws, port, user_skills)),
                root=ws,
                mode=mode,
                on_progress=progress.append,
                **kw,
            )
            Agent(client, rt, save=False)  # adds the `agent` tool
            return rt

        never_ask = [
            "read_file",
            "list_files",
            "grep_search",
            "shell_output",
            "todo_write",
            "skill",
            "tool_search",
            "enter_plan_mode",
            "agent",
        ]
        rt = runtime("default", ask=["web_fetch"])
        strict = runtime("bypass", deny=never_ask)
        plan_rt = runtime("default")
        bypass = runtime("bypass")
        strict.session.activated.append("enter_plan_mode")  # deferred: found by tool_search
        c = _Cases(rt=rt, strict=strict, bypass=bypass, subs=subs, progress=progress)
        try:
            await _file_tools(c)
            await _shell(c)
            await _other_tools(c, plan_rt)
            await _agent(c, server)
            await _cancelled(
                c,
                [
                    ("read_file", {"file_path": "app.py"}),
                    ("write_file", {"file_path": "new.txt", "content": "new\n"}),
                    ("edit_file", {"file_path": "app.py", "old_string": "a", "new_string": "b"}),
                    ("list_files", {"pattern": "*.md"}),
                    ("grep_search", {"pattern": "TODO"}),
                    ("shell_output", {"job_id": "sh-1"}),
                    ("todo_write", {"todos": []}),
                    ("web_fetch", {"url": "http://example.com/"}),
                    ("skill", {"name": "release-notes"}),
                    ("tool_search", {"query": "plan"}),
                    ("enter_plan_mode", {}),
                    ("exit_plan_mode", {"plan": "1. Do it."}),
                    (
                        "agent",
                        {"description": "Look around", "prompt": "Look.", "agent_type": "explore"},
                    ),
                ],
            )
        finally:
            for r in (rt, strict, plan_rt, bypass):
                await r.aclose()
            await client.aclose()
        assert server.problems == [], server.problems
    return c.out


def _main() -> None:  # pragma: no cover - a look at the table by hand
    import json
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        cases = asyncio.run(display_cases(Path(tmp)))
    for case, display in cases:
        sys.stdout.write(f"{case}: {json.dumps(display.to_json(), ensure_ascii=False)}\n")


if __name__ == "__main__":  # pragma: no cover
    _main()
