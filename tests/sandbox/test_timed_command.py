"""`run_command`: bash, stdin, capped output, exit codes, and a time limit that really stops."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from handrail.sandbox import CommandResult, run_command

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="process-tree checks need /proc"
)


def _alive(pid: int) -> bool:
    """Is the process running (a zombie waiting to be reaped counts as gone)?"""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] not in (b"Z", b"X")


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
    """Kill the sleeps a test started, if the code under test left them running."""
    try:
        yield
    finally:
        for pid in _read_pids(*pid_files):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"sleep" in cmdline and _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        gc.collect()


def q(path: Path) -> str:
    return shlex.quote(str(path))


# -- running -------------------------------------------------------------------------------


async def test_runs_through_bash() -> None:
    r = await run_command("[[ 1 -lt 2 ]] && echo bash-ok", timeout=30)
    assert r == CommandResult(exit_code=0, stdout=b"bash-ok\n", stderr=b"", timed_out=False)


async def test_exit_code_and_stderr() -> None:
    r = await run_command("echo out; echo oops >&2; exit 3", timeout=30)
    assert (r.exit_code, r.stdout, r.stderr, r.timed_out) == (3, b"out\n", b"oops\n", False)


async def test_stdin_is_fed() -> None:
    data = b'{"tool": "x"}\n\x00binary\xff'
    r = await run_command("cat", stdin=data, timeout=30)
    assert r.stdout == data


async def test_large_stdin_is_fed_completely() -> None:
    data = b"x" * (3 << 20)
    r = await run_command("wc -c", stdin=data, timeout=30)
    assert r.stdout.strip() == str(len(data)).encode()


async def test_stdin_the_command_never_reads_is_fine() -> None:
    r = await run_command("exit 0", stdin=b"y" * (3 << 20), timeout=30)
    assert (r.exit_code, r.timed_out) == (0, False)


async def test_cwd_and_env(tmp_path: Path) -> None:
    real = os.path.realpath(tmp_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HR_TEST": "v 1"}
    r = await run_command('pwd -P; echo "$HR_TEST"', cwd=tmp_path, env=env, timeout=30)
    assert r.stdout.decode().splitlines() == [real, "v 1"]


async def test_output_is_capped_without_blocking_the_command() -> None:
    r = await run_command(
        "head -c 5000000 /dev/zero; head -c 5000000 /dev/zero >&2; echo done >&2",
        timeout=30,
        max_output=1000,
    )
    assert r.exit_code == 0
    assert not r.timed_out
    assert r.stdout == b"\0" * 1000
    assert len(r.stderr) == 1000


async def test_missing_program_is_exit_127() -> None:
    r = await run_command("/nonexistent/handrail-xyz", timeout=30)
    assert r.exit_code == 127
    assert r.stderr


# -- time limits ---------------------------------------------------------------------------


async def test_timeout_stops_the_command_and_keeps_earlier_output() -> None:
    t0 = time.monotonic()
    r = await run_command("echo started; sleep 60", timeout=0.5)
    assert time.monotonic() - t0 < 20
    assert r.timed_out
    assert r.exit_code is None
    assert r.stdout == b"started\n"


async def test_timeout_kills_the_group_and_every_descendant(tmp_path: Path) -> None:
    child, escaped, stubborn = tmp_path / "child", tmp_path / "escaped", tmp_path / "stubborn"
    command = (
        f"sleep 60 & echo $! > {q(child)}\n"
        f"setsid sleep 300 & echo $! > {q(escaped)}\n"
        # Ignored signals are inherited: this sleep shrugs off SIGTERM and needs SIGKILL.
        f"(trap '' TERM; exec sleep 120) & echo $! > {q(stubborn)}\n"
        "wait\n"
    )
    with reaper(child, escaped, stubborn):
        t0 = time.monotonic()
        r = await run_command(command, timeout=1)
        assert time.monotonic() - t0 < 20
        assert r.timed_out
        pids = _read_pids(child, escaped, stubborn)
        assert len(pids) == 3
        assert _wait_gone(pids) == []


async def test_shell_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "shell"
    with reaper(pidfile):
        t0 = time.monotonic()
        r = await run_command(
            f"trap '' TERM; echo $$ > {q(pidfile)}; sleep 60; sleep 60", timeout=0.5
        )
        assert time.monotonic() - t0 < 20
        assert r.timed_out
        assert _wait_gone(_read_pids(pidfile)) == []


async def test_cancelling_the_caller_kills_the_tree(tmp_path: Path) -> None:
    child, escaped = tmp_path / "child", tmp_path / "escaped"
    command = f"sleep 60 & echo $! > {q(child)}\nsetsid sleep 300 & echo $! > {q(escaped)}\nwait\n"
    with reaper(child, escaped):
        task = asyncio.ensure_future(run_command(command, timeout=120))
        for _ in range(500):
            if len(_read_pids(child, escaped)) == 2:
                break
            await asyncio.sleep(0.02)
        pids = _read_pids(child, escaped)
        assert len(pids) == 2
        task.cancel()
        # Bounded: a cancel that left part of the tree holding the pipes once hung a whole
        # CI run here; it must fail this test instead, naming what is still alive.
        done, _ = await asyncio.wait({task}, timeout=30)
        assert done, f"run_command still running 30 s after its cancel; alive: {_wait_gone(pids)}"
        with pytest.raises(asyncio.CancelledError):
            task.result()
        assert _wait_gone(pids) == []


async def test_output_survives_a_background_child_holding_the_pipe(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg"
    with reaper(pidfile):
        # The shell itself exits at once, well within its limit: that is a normal exit with
        # its output, not a timeout (the leftover child is the sandbox's to clean up).
        r = await run_command(f"sleep 30 & echo $! > {q(pidfile)}; echo done", timeout=3)
        assert (r.exit_code, r.timed_out) == (0, False)
        assert r.stdout == b"done\n"


async def test_background_child_does_not_outlive_the_time_limit(tmp_path: Path) -> None:
    pidfile = tmp_path / "bg"
    with reaper(pidfile):
        await run_command(f"sleep 300 > /dev/null 2>&1 & echo $! > {q(pidfile)}", timeout=1)
        pids = _read_pids(pidfile)
        assert len(pids) == 1
        # Give the time limit (1 s) and the kill grace period every chance to pass.
        assert _wait_gone(pids, limit=6.0) == []


async def test_escaped_child_of_an_exited_shell_is_killed_at_the_time_limit(
    tmp_path: Path,
) -> None:
    # The shell exits at once but leaves a setsid child holding its stdout: at the time limit
    # that child must not be left running.
    pidfile = tmp_path / "escaped"
    with reaper(pidfile):
        r = await run_command(f"setsid sleep 300 & echo $! > {q(pidfile)}", timeout=1)
        assert r.exit_code in (0, None)
        pids = _read_pids(pidfile)
        assert len(pids) == 1
        assert _wait_gone(pids, limit=6.0) == []


# -- the parent's death --------------------------------------------------------------------

_HOOK_HOST = r"""
import asyncio, sys
from handrail.sandbox import run_command

asyncio.run(run_command(sys.argv[1], timeout=600))
"""


def test_the_shell_dies_with_the_process_that_runs_it(tmp_path: Path) -> None:
    # A parent-death signal: SIGKILL the host mid-command and the command's shell goes with it
    # (bash runs a lone command in place, so here that is the sleep itself).
    pidfile = tmp_path / "pid"
    host = subprocess.Popen(
        [sys.executable, "-c", _HOOK_HOST, f"echo $$ > {q(pidfile)}; exec sleep 120"],
        stdin=subprocess.DEVNULL,
    )
    with reaper(pidfile):
        try:
            for _ in range(1500):  # the host starts in about a second; bounded at ~15 s
                if _read_pids(pidfile) and _alive(_read_pids(pidfile)[0]):
                    break
                time.sleep(0.01)
            pids = _read_pids(pidfile)
            assert pids and _alive(pids[0])
        finally:
            host.kill()
            host.wait(10)
        assert _wait_gone(pids, limit=1.0) == []


@pytest.mark.parametrize("turns", [1, 2, 3, 4, 5])
async def test_a_cancel_while_the_command_is_being_spawned_stops_its_tree(
    tmp_path: Path, turns: int
) -> None:
    # A cancel that lands while asyncio still connects the pipes (a few loop turns after the
    # fork) used to make it wait for the pipes to close, that is for the command's own
    # `sleep 30 &`, and leave that child running: a whole CI run hung on it.
    child = tmp_path / "child"
    with reaper(child):
        task = asyncio.ensure_future(
            run_command(f"sleep 30 & echo $! > {q(child)}\nwait\n", timeout=120)
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=20)
        assert done, f"run_command still running 20 s after its cancel (after {turns} turns)"
        with pytest.raises(asyncio.CancelledError):
            task.result()
        assert _wait_gone(_read_pids(child)) == []
