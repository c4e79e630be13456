"""What every framework adapter shares, without any framework: host context, artifacts, portal."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import Interrupted, Registry, Runtime, Session, ToolContext, tool
from handrail.builtin import coding_tools
from handrail.integrations import (
    approval_payload,
    host_scope,
    portal_for,
    result_artifact,
)
from handrail.integrations._common import cannot_ask, session_for


class FrameworkCtx:
    """Stands in for a framework's own per-call context (its `deps` live on it)."""

    def __init__(self, deps: dict[str, Any]) -> None:
        self.deps = deps


async def test_a_tool_sees_the_framework_context_async_and_in_a_thread() -> None:
    @tool(read_only=True)
    async def who_async(ctx: ToolContext) -> str:
        """Async tool."""
        return ctx.host.deps["user"]

    @tool(read_only=True)
    def who_sync(ctx: ToolContext) -> str:
        """Sync tool: runs on a worker thread."""
        assert threading.current_thread() is not threading.main_thread()
        return ctx.host.deps["user"]

    rt = Runtime(Registry([who_async, who_sync]))
    with host_scope(FrameworkCtx({"user": "ada"})):
        assert (await rt.call("who_async")).content == "ada"
        assert (await rt.call("who_sync")).content == "ada"
    with host_scope(FrameworkCtx({"user": "bob"})):
        assert (await rt.call("who_sync")).content == "bob"

    @tool(read_only=True)
    def none_outside(ctx: ToolContext) -> str:
        """Outside an integration there is no host."""
        return repr(ctx.host)

    rt.registry = Registry([none_outside])
    assert (await rt.call("none_outside")).content == "None"


async def test_concurrent_calls_each_see_their_own_host() -> None:
    @tool(read_only=True, concurrency_safe=True)
    async def echo_host(ctx: ToolContext) -> str:
        """Reads its host after the others have set theirs."""
        await asyncio.sleep(0.01)
        return ctx.host.deps["n"]

    rt = Runtime(Registry([echo_host]))

    async def one(n: str) -> str:
        with host_scope(FrameworkCtx({"n": n})):
            return (await rt.call("echo_host")).content

    assert await asyncio.gather(*(one(str(i)) for i in range(5))) == ["0", "1", "2", "3", "4"]


async def test_artifacts_are_plain_json(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    async with Runtime(Registry(coding_tools()), root=tmp_path, mode="accept_edits") as rt:
        await rt.call("read_file", {"file_path": "a.txt"})
        edit = await rt.call(
            "edit_file", {"file_path": "a.txt", "old_string": "one", "new_string": "two"}
        )
        bad = await rt.call("read_file", {"file_path": 3})
        denied = await rt.call("write_file", {"file_path": "/etc/x", "content": "x"})
    for r in (edit, bad, denied):
        data = result_artifact(r)
        assert json.loads(json.dumps(data)) == data  # nothing but JSON types
    assert result_artifact(edit)["ok"] is True
    assert "-one\n+two" in result_artifact(edit)["diff"]
    issues = result_artifact(bad)["issues"]
    assert result_artifact(bad)["error"] == "INVALID_ARGS"
    assert issues[0]["path"] == "/file_path"
    assert result_artifact(denied)["denial"]["source"] in ("roots", "rule", "mode")


async def test_the_approval_payload_is_plain_json(tmp_path: Path) -> None:
    async with Runtime(Registry(coding_tools()), root=tmp_path) as rt:
        r = await rt.call("write_file", {"file_path": "n.txt", "content": "x"}, call_id="c1")
        assert isinstance(r, Interrupted) and r.approval is not None
        payload = approval_payload(r.approval)
        rt.discard(r)
    assert json.loads(json.dumps(payload)) == payload
    assert payload["tool_call_id"] == "c1"
    assert payload["name"] == "write_file"
    assert payload["args"] == {"file_path": "n.txt", "content": "x"}
    assert payload["suggested_rules"]
    assert payload["reason"]


def test_session_for_picks_the_runtimes_a_fixed_or_a_chosen_session() -> None:
    rt = Runtime(Registry([]))
    fixed = Session()
    by_thread: dict[str, Session] = {}

    def choose(ctx: Any) -> Session:
        return by_thread.setdefault(ctx["thread"], Session())

    assert session_for(rt, None, object()) is rt.session
    assert session_for(rt, fixed, object()) is fixed
    a = session_for(rt, choose, {"thread": "a"})
    assert session_for(rt, choose, {"thread": "a"}) is a
    assert session_for(rt, choose, {"thread": "b"}) is not a


def test_one_portal_per_runtime_runs_sync_calls_on_one_loop(tmp_path: Path) -> None:
    @tool(read_only=True, concurrency_safe=True)
    async def loop_id() -> str:
        """The id of the loop the call runs on."""
        return str(id(asyncio.get_running_loop()))

    rt = Runtime(Registry([loop_id]), root=tmp_path)
    portal = portal_for(rt)
    assert portal_for(rt) is portal
    seen = {portal.run(rt.call("loop_id")).content for _ in range(3)}
    assert seen == {str(id(portal.loop))}

    # Many threads at once (a sync graph runs tools on a thread pool): still one loop.
    results: list[str] = []

    def worker() -> None:
        results.append(portal.run(rt.call("loop_id")).content)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == [str(id(portal.loop))] * 4
    portal.run(rt.aclose())


def test_the_portal_stops_with_its_runtime() -> None:
    rt = Runtime(Registry([]))
    portal = portal_for(rt)
    thread = portal._thread  # pyright: ignore[reportPrivateUsage]
    assert thread.is_alive()
    del rt
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert portal.loop.is_closed()


def test_the_portal_refuses_to_wait_on_itself() -> None:
    rt = Runtime(Registry([]))
    portal = portal_for(rt)

    async def nested() -> str:
        async def inner() -> str:
            return "x"

        with pytest.raises(RuntimeError, match="deadlock"):
            portal.run(inner())
        return "refused"

    assert portal.run(nested()) == "refused"
    portal.close()


def test_no_framework_is_imported_by_the_shared_modules() -> None:
    # A fresh interpreter: this process may have imported the frameworks for other tests.
    code = (
        "import sys, handrail.integrations; "
        "print(sorted(m for m in ('pydantic_ai', 'agents', 'langchain_core', 'langgraph') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_a_call_that_cannot_be_asked_about_says_what_to_do(tmp_path: Path) -> None:
    async with Runtime(Registry(coding_tools()), root=tmp_path) as rt:
        r = await rt.call("write_file", {"file_path": "n.txt", "content": "x"})
        assert isinstance(r, Interrupted)
        rt.discard(r)
    assert cannot_ask(r) == snapshot(
        "Not run: `write_file` needs the user's approval (`write_file` can change things), which cannot be asked for at this point. Ask the user in your reply, or do something else."
    )


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [
        ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("openai_agents", "agents", "openai-agents"),
        ("langchain", "langchain_core", "langchain"),
    ],
)
def test_a_missing_framework_names_the_extra_to_install(
    module: str, framework: str, extra: str
) -> None:
    # A fresh interpreter in which the framework cannot be imported (None in sys.modules).
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        "try:\n"
        f"    import handrail.integrations.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f'pip install "handrail[{extra}]"' in out.stdout
