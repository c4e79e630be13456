"""SessionPool and RemoteRuntime on a real local Ray: sessions, approvals, streams, limits.

Every test starts its own pool (hosts are Ray actors) and closes it; faults live in
test_faults.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from handrail import Approval, ConfigurationError, ErrorCode, Interrupted, Runtime, ToolCall
from handrail.providers import anthropic_tools, openai_chat_tools
from handrail.ray import DirWorkspace, GitWorkspace, PathWorkspace, SessionPool

from .conftest import TOOLS, pids_running

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_local")]


def pool_dir(pool: SessionPool) -> Path:
    return Path(tempfile.gettempdir()) / f"handrail-ray-{pool.id}"


async def test_each_session_works_in_its_own_workspace_with_read_before_edit() -> None:
    async with SessionPool(TOOLS.coding, hosts=1, mode="accept_edits", allow=["run_shell"]) as pool:
        a = await pool.open()
        b = await pool.open()
        assert a.root != b.root
        assert Path(a.root).is_relative_to(pool_dir(pool))

        wrote = await a.call("write_file", {"file_path": "app.py", "content": "x = 1\n"})
        assert wrote.ok, wrote.content
        missing = await b.call("read_file", {"file_path": "app.py"})
        assert missing.error is ErrorCode.FILE_NOT_FOUND

        # Read-before-edit holds across calls, in the host's session: b never read a's file,
        # and a file b writes by shell was not read by b either.
        await b.call("write_file", {"file_path": "b.py", "content": "y = 1\n"})
        await b.call("run_shell", {"command": "echo 'z = 3' > shell.py"})
        unread = await b.call(
            "edit_file", {"file_path": "shell.py", "old_string": "z = 3", "new_string": "z = 4"}
        )
        assert unread.error is ErrorCode.FILE_NOT_READ
        assert (await b.call("read_file", {"file_path": "shell.py"})).ok
        edited = await b.call(
            "edit_file", {"file_path": "shell.py", "old_string": "z = 3", "new_string": "z = 4"}
        )
        assert edited.ok, edited.content
        shown = await b.call("run_shell", {"command": "cat shell.py"})
        assert "z = 4" in shown.content

        bad = await a.call("read_file", '{"file_path": 7}')
        assert bad.error is ErrorCode.INVALID_ARGS and bad.issues
        assert bad.call_id and bad.tool_name == "read_file"
        await a.aclose()
        await b.aclose()


async def test_a_directory_workspace_is_copied_on_the_node_and_removed_on_close(
    tmp_path: Path,
) -> None:
    source = tmp_path / "repo"
    (source / "src").mkdir(parents=True)
    (source / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    async with SessionPool(TOOLS.coding, hosts=1, mode="accept_edits") as pool:
        rt = await pool.open(DirWorkspace(str(source)))
        root = Path(rt.root)
        assert (root / "src" / "calc.py").exists()
        await rt.call("read_file", {"file_path": "src/calc.py"})
        fixed = await rt.call(
            "edit_file",
            {"file_path": "src/calc.py", "old_string": "a - b", "new_string": "a + b"},
        )
        assert fixed.ok
        assert "a - b" in (source / "src" / "calc.py").read_text()  # the source is untouched
        await rt.aclose()
        assert not root.exists()
        after = await rt.call("read_file", {"file_path": "src/calc.py"})
        assert after.error is ErrorCode.SESSION_LOST
        assert after.metadata["reason"] == "closed" and after.metadata["executed"] == "no"
        assert pool.sessions == 0


async def test_approvals_cross_the_actor_boundary(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with SessionPool(TOOLS.coding, hosts=1) as pool:
        rt = await pool.open(PathWorkspace(str(ws)))
        asked = await rt.call("run_shell", {"command": "echo yes > approved.txt"})
        assert isinstance(asked, Interrupted) and asked.approval is not None
        assert not (ws / "approved.txt").exists()
        done = await rt.resume(asked, Approval.allow_once())
        assert done.ok and (ws / "approved.txt").read_text() == "yes\n"

        # A denial given with the call runs nothing.
        denied = await rt.call(
            "run_shell",
            {"command": "echo no > canary.txt"},
            approval=Approval.deny("not today"),
        )
        assert denied.error is ErrorCode.PERMISSION_DENIED
        assert not (ws / "canary.txt").exists()

        # A batch waits for its ask; finished calls keep their results on resume.
        calls = [
            ToolCall(id="r1", name="read_file", arguments='{"file_path": "approved.txt"}'),
            ToolCall(id="w1", name="run_shell", arguments='{"command": "echo 2 >> approved.txt"}'),
        ]
        batch = await rt.call_many(calls)
        assert not batch.complete and [i.call_id for i in batch.interrupted] == ["w1"]
        assert batch[0].ok
        resumed = await rt.resume(batch, {"w1": Approval.allow_once()})
        assert resumed.complete and resumed[0] == batch[0]
        assert (ws / "approved.txt").read_text() == "yes\n2\n"

        # `check` asks the host without running anything.
        pre = await rt.check("run_shell", {"command": "echo 3 > check.txt"})
        assert pre.verdict == "ask" and not (ws / "check.txt").exists()
        await rt.aclose()
    assert ws.exists()  # an existing directory is the caller's: never removed


async def test_a_stream_runs_in_the_host_and_yields_results_in_request_order() -> None:
    async with SessionPool(TOOLS.coding, hosts=1, mode="accept_edits") as pool:
        rt = await pool.open()
        await rt.call("write_file", {"file_path": "a.txt", "content": "a\n"})
        order: list[str] = []
        async with rt.stream() as ex:
            ex.submit(
                ToolCall(id="slow", name="run_shell", arguments='{"command": "sleep 0.3; echo s"}')
            )
            ex.submit(ToolCall(id="read", name="read_file", arguments='{"file_path": "a.txt"}'))
            ex.submit(
                ToolCall(
                    id="write",
                    name="write_file",
                    arguments='{"file_path": "b.txt", "content": "b"}',
                )
            )
            with pytest.raises(ConfigurationError):
                ex.submit(ToolCall(id="read", name="read_file", arguments="{}"))
            ex.close()
            async for item in ex:
                if hasattr(item, "ok"):
                    order.append(item.call_id)  # pyright: ignore[reportAttributeAccessIssue]
        assert order == ["slow", "read", "write"]
        assert ex.batch.complete and [r.ok for r in ex.batch] == [True, True, True]
        assert (await rt.call("read_file", {"file_path": "b.txt"})).ok
        await rt.aclose()


async def test_tools_render_for_providers_exactly_as_a_local_runtime(tmp_path: Path) -> None:
    local = Runtime(TOOLS.coding(tmp_path), root=tmp_path)
    async with SessionPool(TOOLS.coding, hosts=1) as pool:
        rt = await pool.open()
        assert [t.name for t in rt.tools()] == [t.name for t in local.tools()]
        assert openai_chat_tools(rt.tools()) == openai_chat_tools(local.tools())
        assert anthropic_tools(rt.tools()) == anthropic_tools(local.tools())
        assert rt.usage_notes() == local.usage_notes()
        # Plan mode shows only tools that can be read-only, here and there alike.
        plan = await pool.open(mode="plan")
        local.session.mode = plan.session.mode
        assert [t.name for t in plan.tools()] == [t.name for t in local.tools()]
        await rt.aclose()
        await plan.aclose()


async def test_a_full_pool_answers_backend_unavailable_or_waits_for_room() -> None:
    async with SessionPool(TOOLS.coding, hosts=1, max_sessions_per_host=2) as pool:
        first = await pool.open()
        await pool.open()
        full = await pool.open()
        assert full.lost is not None and full.lost.error is ErrorCode.BACKEND_UNAVAILABLE
        assert full.lost.metadata["reason"] == "full"
        r = await full.call("read_file", {"file_path": "x"}, call_id="c9")
        assert r.error is ErrorCode.BACKEND_UNAVAILABLE and r.call_id == "c9"
        assert r.metadata["executed"] == "no" and r.metadata["retryable"] is True

        async def free_a_slot() -> None:
            await asyncio.sleep(0.3)
            await first.aclose()

        closing = asyncio.create_task(free_a_slot())
        waited = await pool.open(wait=30)
        await closing
        assert waited.lost is None
        assert (await waited.call("list_files", {})).ok


async def test_unknown_options_and_bad_workspaces_raise_and_take_no_slot(tmp_path: Path) -> None:
    async with SessionPool(TOOLS.coding, hosts=1, max_sessions_per_host=1) as pool:
        with pytest.raises(ConfigurationError, match="unknown session options"):
            await pool.open(approver=print)
        with pytest.raises(ConfigurationError, match="WorkspaceError"):
            await pool.open(DirWorkspace(str(tmp_path / "missing")))
        with pytest.raises(ConfigurationError):
            await pool.open(mode="sideways")
        ok = await pool.open()  # the failed opens left the one slot free
        assert ok.lost is None
        assert (await pool.stats())[0]["sessions"] == 1


async def test_a_call_the_host_cannot_take_is_a_result_not_an_exception() -> None:
    async with SessionPool(TOOLS.coding, hosts=1) as pool:
        rt = await pool.open()
        unknown = await rt.call("raed_file", {"file_path": "x"})
        assert unknown.error is ErrorCode.TOOL_NOT_FOUND and "read_file" in unknown.content
        unsendable = await rt.call("read_file", {"file_path": lambda: "x"})
        assert unsendable.error is ErrorCode.EXECUTION_ERROR
        assert "could not run this call" in unsendable.content
        assert (await rt.call("list_files", {})).ok  # the session is fine
        await rt.aclose()


async def test_hidden_paths_stay_hidden_inside_the_host(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "secrets").mkdir(parents=True)
    (ws / "secrets" / "token").write_text("CANARY-7f3a")
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        rt = await pool.open(PathWorkspace(str(ws)), hidden_paths=["secrets"])
        read = await rt.call("read_file", {"file_path": "secrets/token"})
        shell = await rt.call("run_shell", {"command": "cat secrets/token; ls secrets"})
        grep = await rt.call("grep_search", {"pattern": "CANARY"})
        for r in (read, shell, grep):
            assert "CANARY-7f3a" not in r.content
        assert not read.ok
        await rt.aclose()


async def test_command_slots_run_heavy_commands_one_at_a_time_and_reads_alongside(
    tmp_path: Path,
) -> None:
    async with SessionPool(
        TOOLS.coding, hosts=1, host_cpus=1, command_slots=1, mode="bypass"
    ) as pool:
        a = await pool.open()
        b = await pool.open()
        heavy = "date +%s.%N > start; sleep 0.5; date +%s.%N > end"
        first = asyncio.create_task(a.call("run_shell", {"command": heavy}))
        second = asyncio.create_task(b.call("run_shell", {"command": heavy}))
        # A read-only command takes no slot: it answers while a heavy one holds it.
        await asyncio.sleep(0.2)
        look = await a.call("run_shell", {"command": "ls"})
        assert look.ok
        results = await asyncio.gather(first, second)
        assert all(r.ok for r in results), [r.content for r in results]
        spans = sorted(
            (
                float((Path(rt.root) / "start").read_text()),
                float((Path(rt.root) / "end").read_text()),
            )
            for rt in (a, b)
        )
        assert spans[0][1] <= spans[1][0], f"the two commands overlapped: {spans}"
        await a.aclose()
        await b.aclose()


async def test_notices_from_background_jobs_reach_the_client() -> None:
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        rt = await pool.open()
        started = await rt.call("run_shell", {"command": "echo bg-done", "run_in_background": True})
        assert started.ok, started.content
        notices: list[str] = []
        for _ in range(100):  # bounded: 10 s
            notices += await rt.take_notices()
            if notices:
                break
            await asyncio.sleep(0.1)
        assert notices and any("bg" in n or "exit" in n.lower() for n in notices), notices
        await rt.aclose()


async def test_idle_and_absolute_time_limits_end_sessions_in_the_host(tmp_path: Path) -> None:
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        idle = await pool.open(idle_ttl=1)
        root = Path(idle.root)
        ended = None
        for _ in range(100):  # bounded: 10 s
            await asyncio.sleep(0.1)
            if not root.exists():
                ended = await idle.call("list_files", {})
                break
        assert ended is not None and ended.error is ErrorCode.SESSION_LOST
        assert ended.metadata["reason"] == "expired"
        assert "idle" in ended.content

        ws = tmp_path / "ws"
        ws.mkdir()
        short = await pool.open(PathWorkspace(str(ws)), ttl=1.5)
        marker = f"sleep 31{os.getpid() % 1000}"
        cut = await asyncio.wait_for(short.call("run_shell", {"command": marker}), 30)
        assert cut.error is ErrorCode.SESSION_LOST and cut.metadata["executed"] == "unknown"
        assert "total" in cut.content
        for _ in range(50):  # bounded: the command dies with its session
            if not pids_running(marker):
                break
            await asyncio.sleep(0.1)
        assert not pids_running(marker)
        assert ws.exists()


async def test_cancel_stops_a_remote_call_and_its_command() -> None:
    marker = f"sleep 53{os.getpid() % 1000}"
    async with SessionPool(TOOLS.coding, hosts=1, mode="bypass") as pool:
        rt = await pool.open()
        running = asyncio.create_task(rt.call("run_shell", {"command": marker}, call_id="long"))
        for _ in range(100):  # bounded: until the command runs
            if pids_running(marker):
                break
            await asyncio.sleep(0.1)
        assert rt.cancel("long", "The user pressed stop.")
        assert not rt.cancel("not-running")
        r = await asyncio.wait_for(running, 30)
        assert r.error is ErrorCode.CANCELLED and "pressed stop" in r.content
        for _ in range(50):
            if not pids_running(marker):
                break
            await asyncio.sleep(0.1)
        assert not pids_running(marker)
        await rt.aclose()


async def test_git_workspaces_are_checked_out_on_the_node_at_the_asked_commit(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    (repo / "v.txt").write_text("one\n")
    git("add", "v.txt")
    git("commit", "-qm", "one")
    first = git("rev-parse", "HEAD")
    (repo / "v.txt").write_text("two\n")
    git("commit", "-qam", "two")
    async with SessionPool(TOOLS.coding, hosts=1, cache_dir=str(tmp_path / "cache")) as pool:
        old = await pool.open(GitWorkspace(str(repo), commit=first))
        new = await pool.open(GitWorkspace(str(repo)))
        assert "one" in (await old.call("read_file", {"file_path": "v.txt"})).content
        assert "two" in (await new.call("read_file", {"file_path": "v.txt"})).content
        assert len(list((tmp_path / "cache" / "git").glob("*.git"))) == 1  # one mirror
        await old.aclose()
        await new.aclose()


async def test_open_rate_spaces_out_session_creation() -> None:
    async with SessionPool(TOOLS.coding, hosts=1, open_rate=10, open_burst=1) as pool:
        started = time.monotonic()
        sessions = await asyncio.gather(*(pool.open() for _ in range(4)))
        # Four sessions at 10 per second with no burst: at least three waits of 0.1 s.
        assert time.monotonic() - started >= 0.3
        assert all(rt.lost is None for rt in sessions)
        for rt in sessions:
            await rt.aclose()
