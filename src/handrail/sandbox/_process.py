"""Running a short-lived command (a hook) with a time limit that really stops it.

The command runs through bash (sh if bash is missing) in a new session and process group, so
at the time limit the whole group gets SIGTERM, then SIGKILL after a grace period; descendants
that left the group (setsid) but are still our descendants are found through /proc and killed
too. Output is capped in memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

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
    shell = shutil.which("bash") or shutil.which("sh") or "/bin/sh"
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


def _signal_all(pid: int, sig: signal.Signals, extra: list[int]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
    for p in extra:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, sig)


async def kill_tree(proc: asyncio.subprocess.Process, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the process group and every descendant, then SIGKILL after `grace` seconds."""
    pid = proc.pid
    family = _descendants(pid)
    _signal_all(pid, signal.SIGTERM, family)
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        pass
    family = sorted(set(family) | set(_descendants(pid)))
    _signal_all(pid, signal.SIGKILL, family)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


async def _read_capped(stream: asyncio.StreamReader | None, cap: int) -> bytes:
    if stream is None:
        return b""
    buf = bytearray()
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        if len(buf) < cap:
            buf += chunk[: cap - len(buf)]
    return bytes(buf)


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
    proc = await asyncio.create_subprocess_exec(
        *shell_argv(command),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=str(cwd) if cwd is not None else None,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()

    out_task = asyncio.ensure_future(_read_capped(proc.stdout, max_output))
    err_task = asyncio.ensure_future(_read_capped(proc.stderr, max_output))
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.gather(feed(), proc.wait()), timeout)
    except TimeoutError:
        timed_out = True
        await kill_tree(proc)
    except BaseException:
        await kill_tree(proc)
        out_task.cancel()
        err_task.cancel()
        raise
    # Pipes may be held open by escaped descendants: drain for a bounded time only.
    done, pending = await asyncio.wait({out_task, err_task}, timeout=GRACE_SECONDS)
    for task in pending:
        task.cancel()
    stdout = out_task.result() if out_task in done else b""
    stderr = err_task.result() if err_task in done else b""
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
    )
