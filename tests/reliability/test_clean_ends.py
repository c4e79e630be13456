"""Clean ends: nothing of a session stays in the temporary folder once the session has ended.

A session's files live in its own directory (`$TMPDIR/handrail-<id>-XXXXXXXX/`: `results/`
holds the full copies of truncated results the model is told about, `tmp/` is the shell's
`$TMPDIR`); `aclose` stops the background jobs, then removes the directory. The workloads
here are real: real bash in the real sandbox, a real `handrail serve` process with the MCP
SDK's client, a real agent with a sub-agent against the scripted model server on loopback.

The temporary folder is `tempfile.gettempdir()` (the test run's own root, see
tests/conftest.py). A module-scoped check asserts that no `handrail-*` entry appeared over the
whole module; each test also checks its own sessions' directories right after `aclose`, while
the sessions are still referenced (so garbage collection cannot be what removed them).
"""

from __future__ import annotations

import asyncio
import gc
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail import Registry, Runtime, tool
from handrail.agent import Agent, ModelClient
from handrail.builtin import coding_tools
from handrail.sandbox import sandbox_support
from handrail.testing import ModelServer, RecordedRequest, Reply, ToolUse

pytestmark = pytest.mark.skipif(
    not sandbox_support().available, reason="run_shell needs an OS sandbox on this machine"
)

WAIT = 20.0
"""Seconds any single wait may take (generous: the machine is shared)."""
RUNTIMES = 8
"""Runtimes in the full workload."""
SPILL_COMMAND = "seq 1 200000"
"""Output far over run_shell's limit: the full copy goes to the session's `results/`."""


def handrail_entries() -> set[str]:
    """The `handrail-*` entries of the temporary folder."""
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith("handrail-")}


@pytest.fixture(scope="module", autouse=True)
def nothing_new_over_the_module() -> Iterator[None]:
    """The whole module leaves no `handrail-*` entry that was not there before it."""
    before = handrail_entries()
    yield
    assert handrail_entries() - before == set()


def marker() -> str:
    """A unique sleep duration: it names our processes in /proc without matching anything else."""
    return f"1000.{uuid.uuid4().int % 10**9:09d}"


def pids_with(text: str) -> list[int]:
    """Live (not zombie) processes whose command line holds `text`."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmd and state != b"Z" and "pytest" not in cmd:
            out.append(int(entry))
    return out


async def eventually(check: Callable[[], Any], seconds: float = WAIT) -> Any:
    """Poll `check` until it returns something truthy; bounded in time and in count."""
    for _ in range(int(seconds / 0.05)):
        value = check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"still not true after {seconds} s")


@tool(read_only=True, max_result_chars=1_000)
def big_report(lines: int) -> str:
    """A report far over its result limit, so the runtime saves the full copy to a file."""
    return "\n".join(f"row {i}" for i in range(lines))


def make_runtime(root: Path, **options: Any) -> Runtime:
    tools = [*coding_tools(project_dir=root), big_report]
    return Runtime(Registry(tools), root=root, mode="bypass", load_settings=False, **options)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


# -- runtimes ------------------------------------------------------------------------------------


async def one_session(rt: Runtime) -> tuple[Path, list[int]]:
    """Spill results, fill the shell's $TMPDIR, leave background jobs running; checks each step."""
    m = marker()
    spilled = await rt.call("run_shell", {"command": SPILL_COMMAND})
    assert spilled.ok, spilled.content
    big = await rt.call("big_report", {"lines": 5_000})
    assert big.metadata["truncated"] is True
    writes = await rt.call(
        "run_shell",
        {"command": 'mkdir -p "$TMPDIR/a/b" && seq 1 1000 > "$TMPDIR/a/b/f" && echo "$TMPDIR"'},
    )
    assert writes.ok, writes.content
    busy = await rt.call(
        "run_shell",
        {
            # One job keeps writing into $TMPDIR until it is stopped; one just waits.
            "command": f'(while :; do date > "$TMPDIR/busy"; done) & sleep {m}',
            "run_in_background": True,
        },
    )
    assert busy.ok, busy.content
    pids = await eventually(lambda: pids_with(m))
    top = rt.session.temp_dir
    assert top is not None and top.parent == Path(tempfile.gettempdir())
    # What the model was told about lives under the session's directory.
    told = Path(big.metadata["full_output_path"])
    assert told.parent == top / "results" and told.read_text().startswith("row 0\nrow 1\n")
    assert f"{top}/results/" in spilled.content
    # In the sandbox the session's own `tmp/` is mounted at /tmp, and $TMPDIR says so.
    assert writes.content.strip() == "/tmp"
    assert (top / "tmp" / "a" / "b" / "f").is_file()
    await eventually(lambda: (top / "tmp" / "busy").exists())
    return top, pids


async def test_a_full_workload_leaves_the_temporary_folder_as_it_found_it(ws: Path) -> None:
    before = handrail_entries()
    runtimes = [make_runtime(ws) for _ in range(RUNTIMES)]
    async with asyncio.timeout(120):
        made = await asyncio.gather(*(one_session(rt) for rt in runtimes))
        assert len(handrail_entries() - before) == RUNTIMES
        await asyncio.gather(*(rt.aclose() for rt in runtimes))
    for top, pids in made:
        assert not os.path.lexists(top)
        # Stopped before the folder went: nothing can write into it again.
        assert [p for p in pids if p in pids_with("sleep 1000.")] == []
    assert handrail_entries() == before
    assert len(runtimes) == RUNTIMES  # still referenced: aclose removed them, not the collector


async def test_a_session_used_after_it_closed_starts_afresh_and_closes_again(ws: Path) -> None:
    # The command sees its folder as /tmp; where it is on the host is the session's business.
    rt = make_runtime(ws)
    first = await rt.call("run_shell", {"command": 'echo one > "$TMPDIR/x" && echo "$TMPDIR"'})
    assert first.ok, first.content
    old = rt.session.temp_dir
    assert old is not None and (old / "tmp" / "x").read_text() == "one\n"
    await rt.aclose()
    assert not os.path.lexists(old)
    # The shell gets a new $TMPDIR (the old one is gone) and a new cleanup.
    again = await rt.call("run_shell", {"command": 'echo two > "$TMPDIR/x" && cat /tmp/x'})
    assert again.ok, again.content
    assert again.content.strip() == "two"
    new = rt.session.temp_dir
    assert new is not None and new != old and (new / "tmp" / "x").is_file()
    await rt.aclose()
    assert not os.path.lexists(new)
    assert rt.session.temp_dir is None


def plant(outside: Path, canary: Path) -> str:
    """A command that shapes its $TMPDIR against the cleanup, then prints $TMPDIR."""
    return (
        f'ln -s {outside} "$TMPDIR/dir-link" && '
        f'ln -s {canary} "$TMPDIR/file-link" && '
        # Folders the cleanup cannot list or empty, one holding a link to the outside folder:
        # opening them up must not chmod what the link points at.
        f'mkdir -p "$TMPDIR/shut/inner" && touch "$TMPDIR/shut/inner/f" && '
        f'ln -s {outside} "$TMPDIR/shut/link" && chmod 000 "$TMPDIR/shut" && '
        f'mkdir "$TMPDIR/ro" && touch "$TMPDIR/ro/f" && chmod 500 "$TMPDIR/ro" && '
        'echo "$TMPDIR"'
    )


@pytest.fixture
def canary(tmp_path: Path) -> Path:
    """A file in a folder outside every root, with modes to check afterwards."""
    outside = tmp_path / "outside"
    outside.mkdir()
    file = outside / "canary.txt"
    file.write_text("keep me\n")
    outside.chmod(0o755)
    file.chmod(0o644)
    return file


def assert_untouched(canary: Path) -> None:
    assert canary.read_text() == "keep me\n"
    assert stat.S_IMODE(canary.parent.stat().st_mode) == 0o755  # a symlinked folder: not chmod-ed
    assert stat.S_IMODE(canary.stat().st_mode) == 0o644
    assert sorted(p.name for p in canary.parent.iterdir()) == ["canary.txt"]


async def test_removal_does_not_follow_or_open_up_what_a_command_planted(
    ws: Path, canary: Path
) -> None:
    # The attacker is the command: it may shape its $TMPDIR as it likes, then the session's
    # cleanup runs with the user's full rights, outside the sandbox.
    rt = make_runtime(ws)
    r = await rt.call("run_shell", {"command": plant(canary.parent, canary)})
    assert r.ok, r.content
    top = rt.session.temp_dir
    assert top is not None
    shell_tmp = top / "tmp"  # the command's /tmp
    assert os.path.islink(shell_tmp / "dir-link")
    await rt.aclose()
    assert not os.path.lexists(top)
    assert_untouched(canary)


CLOSE_AS_USER = """\
import asyncio, os, sys
from pathlib import Path
from handrail import Registry, Runtime
from handrail.builtin import coding_tools

async def main() -> None:
    ws = Path(sys.argv[1])
    rt = Runtime(Registry(coding_tools(project_dir=ws)), root=ws, mode="bypass", load_settings=False)
    r = await rt.call("run_shell", {"command": sys.argv[2]})
    assert r.ok, r.content
    top = rt.session.temp_dir
    await rt.aclose()
    print(top, os.path.lexists(top), flush=True)

asyncio.run(main())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="as a user, the test above opens folders up already")
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs setpriv (util-linux)")
def test_removal_opens_up_shut_folders_without_root_overrides(ws: Path, canary: Path) -> None:
    # Root reads and empties a chmod 000 folder anyway, so the path that opens folders up
    # runs only for a user: here, root without the capabilities that override permissions.
    out = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            sys.executable,
            "-c",
            CLOSE_AS_USER,
            str(ws),
            plant(canary.parent, canary),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    top, exists = out.stdout.split()
    assert Path(top).parent == Path(tempfile.gettempdir())
    assert exists == "False" and not os.path.lexists(top)
    assert_untouched(canary)


async def test_a_session_never_closed_goes_when_collected(ws: Path) -> None:
    rt = make_runtime(ws)
    r = await rt.call("big_report", {"lines": 5_000})
    top = rt.session.temp_dir
    assert top is not None and Path(r.metadata["full_output_path"]).is_file()
    del rt, r
    gc.collect()
    assert not os.path.lexists(top)


def test_a_session_never_closed_goes_when_the_process_exits(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from handrail import Session\n"
        "s = Session()\n"
        "(s.temp_path('results') / 'kept.txt').write_text('x')\n"
        "print(s.temp_dir, flush=True)\n"
        "sys.modules['__main__'].keep = s  # alive until the interpreter exits\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    top = Path(out.stdout.strip())
    assert top.parent == Path(tempfile.gettempdir())
    assert not os.path.lexists(top)


# -- MCP: `handrail serve` ---------------------------------------------------------------------

SERVE = (
    "import asyncio, sys\n"
    "from handrail.mcp import serve\n"
    "asyncio.run(serve(root=sys.argv[1], load_settings=False, mode='bypass'))\n"
)


async def test_an_mcp_session_leaves_nothing_when_the_client_goes(ws: Path) -> None:
    import mcp_types as types
    from mcp.client.stdio import StdioServerParameters

    from mcp import Client

    before = handrail_entries()
    m = marker()
    # The SDK passes only a few variables on by default; $TMPDIR must reach the server.
    server = StdioServerParameters(
        command=sys.executable, args=["-c", SERVE, str(ws)], env=dict(os.environ)
    )
    async with asyncio.timeout(60):
        async with Client(server, read_timeout_seconds=WAIT) as client:
            spilled = await client.call_tool("run_shell", {"command": SPILL_COMMAND})
            job = await client.call_tool(
                "run_shell", {"command": f"sleep {m}", "run_in_background": True}
            )
            assert job.is_error is False
            await eventually(lambda: pids_with(m))
            (block,) = [b for b in spilled.content if isinstance(b, types.TextContent)]
            found = re.search(r"full output: (\S+?) \.\.\.\]", block.text)
            assert found is not None, block.text[-500:]
            path = Path(found.group(1))
            assert path.is_file() and path.parent.parent.parent == Path(tempfile.gettempdir())
            assert len(handrail_entries() - before) == 1
        # The client closed stdin: the server ends its session and exits.
        await eventually(lambda: not os.path.lexists(path) and not pids_with(m))
        await eventually(lambda: handrail_entries() == before)


# -- the agent and its sub-agents ----------------------------------------------------------------


async def test_an_agent_run_with_a_sub_agent_leaves_nothing(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(tmp_path / "state"))
    before = handrail_entries()
    child_results: list[str] = []

    def child_turn(req: RecordedRequest) -> Reply:
        # The child's second request carries its run_shell result, with the spill path.
        sent = [m for m in req.body["messages"] if m["role"] == "tool"]
        if not sent:
            return Reply(tool_calls=[ToolUse("run_shell", {"command": SPILL_COMMAND})])
        child_results.append(str(sent[0]["content"]))
        return Reply(text="counted")

    with ModelServer(
        [
            Reply(
                tool_calls=[
                    ToolUse(
                        "agent",
                        {"description": "count", "prompt": "Count.", "agent_type": "explore"},
                    ),
                    ToolUse("run_shell", {"command": SPILL_COMMAND}),
                ]
            ),
            child_turn,
            child_turn,
            Reply(text="done"),
        ]
    ) as server:
        client = ModelClient(
            "openai_chat", "test-model", base_url=server.base_url("openai_chat"), timeout=10
        )
        rt = make_runtime(ws)
        try:
            async with asyncio.timeout(60):
                result = await Agent(client, rt).run("Count with a helper.")
        finally:
            await client.aclose()
        assert result.subtype == "success", result
        (told,) = child_results
        found = re.search(r"full output: (\S+?) \.\.\.\]", told)
        assert found is not None, told[-500:]
        child_file = Path(found.group(1))
        # The child's runtime closed when its answer came back: its folder is gone already.
        assert not os.path.lexists(child_file)
        parent_dir = rt.session.temp_dir
        assert parent_dir is not None and parent_dir.is_dir()
        assert child_file.parent.parent != parent_dir
        await rt.aclose()
        assert not os.path.lexists(parent_dir)
    assert handrail_entries() == before
    assert server.problems == []
