"""Running a short-lived command (a hook) with a time limit that really stops it.

The command runs through bash (sh if bash is missing) in a new session and process group, so
at the time limit the whole group gets SIGTERM, then SIGKILL after a grace period; descendants
that left the group (setsid) but are still our descendants are found through /proc and killed
too. Output is capped in memory. The shell gets SIGKILL when handrail dies (a parent-death
signal; a lone command runs in its place and gets it itself). Unlike run_shell's commands,
which run under a supervisor (`_parent_death.py`), what a hook's shell starts is not hunted
down then: hooks are short, and their output is no longer read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ._parent_death import die_with_parent
from ._programs import system_which

__all__ = ["CommandResult", "kill_tree", "run_command"]

GRACE_SECONDS = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """How a command ended."""

    exit_code: int | None
    """None when it was killed at the time limit."""
    stdout: bytes
    stderr: bytes
    timed_out: bool


def shell_argv(command: str) -> list[str]:
    """Bash -c, or sh -c where bash is missing."""
    shell = system_which("bash") or system_which("sh") or "/bin/sh"
    return [shell, "-c", command]


def _descendants(pid: int) -> list[int]:
    """Every live process descended from `pid`, found through /proc (Linux)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses: parse after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    out: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _pipe_holders(inodes: set[int]) -> list[int]:
    """Processes other than us holding one of these pipes open.

    These are a command's escaped background children (setsid, double fork) that still hold
    its stdout or stderr: no longer our descendants, but still its doing.
    """
    if not inodes:
        return []
    wanted = {f"pipe:[{i}]" for i in inodes}
    me = os.getpid()
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") in wanted:
                    found.append(int(entry))
                    break
            except OSError:
                continue
    return found


def _signal_all(pid: int, sig: signal.Signals, extra: list[int]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    for p in extra:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


async def kill_tree(
    proc: asyncio.subprocess.Process, grace: float = GRACE_SECONDS, pipes: set[int] | None = None
) -> None:
    """SIGTERM the command's whole tree, then SIGKILL what is left after `grace` seconds.

    The tree is the process group, every descendant, and every process holding the command's
    output pipes.
    """
    pid = proc.pid
    family = sorted(set(_descendants(pid)) | set(_pipe_holders(pipes or set())))
    _signal_all(pid, signal.SIGTERM, family)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        pass
    family = sorted(set(family) | set(_descendants(pid)) | set(_pipe_holders(pipes or set())))
    _signal_all(pid, signal.SIGKILL, family)
    with contextlib.suppress(ProcessLookupError):
        await _exited(proc)


async def _read_capped(stream: asyncio.StreamReader | None, cap: int, buf: bytearray) -> None:
    # Reads into `buf` so that what arrived is kept even if the read is cancelled later.
    if stream is None:
        return
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        if len(buf) < cap:
            buf += chunk[: cap - len(buf)]


async def _exited(proc: asyncio.subprocess.Process) -> int:
    # Process.wait() in Python 3.11 also waits for the pipes to close, which a background
    # child can hold open forever; the exit status itself arrives without them.
    delay = 0.001
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
    return proc.returncode


async def run_command(
    command: str,
    *,
    stdin: bytes = b"",
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float,
    max_output: int = 1 << 20,
) -> CommandResult:
    """Run `command` through the shell, feed it `stdin`, and stop its whole tree at `timeout`."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *shell_argv(command),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            start_new_session=True,
            # Forked on the event loop's thread (asyncio runs Popen there), which outlives
            # the hook.
            preexec_fn=die_with_parent(),
        )
    )
    try:
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        # Cancelled while asyncio was still connecting the pipes: the command already runs.
        # Cancelling the spawn itself would make asyncio wait for the pipes to close, that
        # is for whatever the command started (a `sleep 300 &`), and leave it running; the
        # spawn is finished instead and the whole tree stopped, then the cancel goes on.
        with contextlib.suppress(Exception):
            started = await spawn
            await kill_tree(started, pipes=_pipe_inodes(started))
        raise

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()

    pipes = _pipe_inodes(proc)
    out, err = bytearray(), bytearray()
    out_task = asyncio.ensure_future(_read_capped(proc.stdout, max_output, out))
    err_task = asyncio.ensure_future(_read_capped(proc.stderr, max_output, err))
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.gather(feed(), _exited(proc)), timeout)
    except TimeoutError:
        timed_out = True
        await kill_tree(proc, pipes=pipes)
    except BaseException:
        await kill_tree(proc, pipes=pipes)
        out_task.cancel()
        err_task.cancel()
        raise
    exit_code = None if timed_out else proc.returncode
    # Whatever the command left running (background children) dies with it; then the pipes
    # are drained for a bounded time, keeping what already arrived.
    if not timed_out and (_descendants(proc.pid) or _group_alive(proc.pid) or _pipe_holders(pipes)):
        await kill_tree(proc, grace=0.5, pipes=pipes)
    _, pending = await asyncio.wait({out_task, err_task}, timeout=GRACE_SECONDS)
    for task in pending:
        task.cancel()
    return CommandResult(
        exit_code=exit_code, stdout=bytes(out), stderr=bytes(err), timed_out=timed_out
    )


def _pipe_inodes(proc: asyncio.subprocess.Process) -> set[int]:
    inodes: set[int] = set()
    for stream in (proc.stdout, proc.stderr):
        transport = getattr(stream, "_transport", None)
        pipe = transport.get_extra_info("pipe") if transport is not None else None
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):
                inodes.add(os.fstat(pipe.fileno()).st_ino)
    return inodes


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
