"""A shell command whose whole process tree can be stopped, with its output streamed to a capture.

The command runs through bash (sh where bash is missing) in a new session, stdin `/dev/null`,
optionally under a `Confinement`, always below a supervisor shell that ends the whole tree when
handrail dies, even by SIGKILL (`_parent_death.py`). Output goes straight from the pipes into
an `OutputCapture` (bounded memory, full copy on disk) through an asyncio protocol, without a
stream buffer.

Stopping: SIGTERM to the whole tree, SIGKILL after a grace period, then the pipes are drained for
at most two seconds. "The whole tree" is the PID namespace when the command has one (nothing can
leave it), otherwise the process group, every descendant found through /proc and every process
still holding the command's pipes (setsid and double-forked children).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._os_confinement import Confinement, members_of, open_namespace
from ._parent_death import DEATH_SIGNAL, ParentDeath, supervised_argv, supported
from ._programs import system_which
from ._timed_command import _descendants, _pipe_holders  # pyright: ignore[reportPrivateUsage]

if TYPE_CHECKING:
    from ._capture import OutputCapture

__all__ = ["SandboxSetupError", "ShellProcess", "find_shell", "read_log"]

GRACE_SECONDS = 2.0
DRAIN_SECONDS = 2.0
KILL_WAIT_SECONDS = 2.0
_SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


_GONE = (b"Z", b"X", b"x")


def _proc_stat(pid: int) -> tuple[bytes, int, int]:
    """A process's state letter, parent PID and process group (state "X" when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # The command name may hold spaces and parentheses: fields follow the last ") ".
        fields = stat[stat.rfind(b")") + 2 :].split()
        return fields[0], int(fields[1]), int(fields[2])
    except (OSError, ValueError, IndexError):
        return b"X", 0, 0


def _alive(pid: int) -> bool:
    """The process exists and has not exited (a zombie, or one being reaped, has)."""
    return _proc_stat(pid)[0] not in _GONE


def _open_proc_dir(pid: int) -> int:
    try:
        return os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return -1


def _namespace_via(proc_dir: int) -> int:
    """`open_namespace`, through a /proc/PID directory fd (fails once that process is gone)."""
    try:
        fd = os.open("ns/pid_for_children", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc_dir)
    except OSError:
        return -1
    try:
        if os.fstat(fd).st_ino != os.stat("/proc/self/ns/pid").st_ino:
            return fd
    except OSError:
        pass
    os.close(fd)
    return -1


def _ignores_term(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"SigIgn:"):
                    return bool(int(line.split()[1], 16) & _SIGTERM_BIT)
    except (OSError, ValueError, IndexError):
        pass
    return False


def find_shell() -> str:
    """Bash, or sh where bash is missing."""
    return system_which("bash") or system_which("sh") or "/bin/sh"


class SandboxSetupError(OSError):
    """The sandbox could not be applied to a new process (between fork and exec)."""


class _Pipes(asyncio.SubprocessProtocol):
    def __init__(
        self, capture: OutputCapture, on_data: Callable[[], None] | None, log_fd: int
    ) -> None:
        self.capture = capture
        self.on_data = on_data
        self.log_fd = log_fd
        self.log_bytes = 0
        self.open_pipes = 2
        self.exited = asyncio.Event()
        self.drained = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        stream: Literal["stdout", "stderr"] = "stdout" if fd == 1 else "stderr"
        chunk = data if isinstance(data, bytes) else data.encode()
        self.capture.feed(stream, chunk)
        if self.log_fd >= 0:
            try:
                self.log_bytes += os.write(self.log_fd, chunk)
            except OSError:
                self.close_log()  # a full disk stops the log, never the command
        if self.on_data is not None:
            self.on_data()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd in (1, 2):
            self.open_pipes -= 1
            if self.open_pipes <= 0:
                self.drained.set()

    def process_exited(self) -> None:
        self.exited.set()

    def close_log(self) -> None:
        if self.log_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.log_fd)
            self.log_fd = -1


class ShellProcess:
    """A running shell command. Start it with `await ShellProcess.start(...)`."""

    def __init__(
        self,
        transport: asyncio.SubprocessTransport,
        pipes: _Pipes,
        *,
        confined: bool,
        pipe_inodes: set[int],
    ) -> None:
        self._transport = transport
        self._pipes = pipes
        self.pid: int = transport.get_pid()
        """The supervisor shell's process id (the host's view); the command runs below it."""
        self.started = time.monotonic()
        self.pid_namespace = confined
        """The command runs in its own PID namespace."""
        # The kernel shows the namespace only once its first process exists, which may be
        # just after the spawn returns: `_family` looks again until it is found.
        self._ns = open_namespace(self.pid) if confined else -1
        # Held while the namespace is still to be found: a later lookup through it fails once
        # the supervisor is gone, instead of finding whoever reuses its PID.
        self._proc_dir = _open_proc_dir(self.pid) if confined and self._ns < 0 else -1
        self._pipe_inodes = pipe_inodes
        self.killed_by: Literal["timeout", "cancel", "stop"] | None = None
        """Why handrail stopped the command, if it did."""
        self._finished = False

    @classmethod
    async def start(
        cls,
        command: str,
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        capture: OutputCapture,
        confinement: Confinement | None = None,
        shell: str | None = None,
        on_data: Callable[[], None] | None = None,
        log_path: Path | None = None,
    ) -> ShellProcess:
        """Start `command`; raises OSError when it cannot be started.

        `SandboxSetupError` (an OSError) means the sandbox could not be applied. With
        `log_path`, every byte of output is also appended there as it arrives (background jobs
        read their new output from it).
        """
        loop = asyncio.get_running_loop()
        sh = shell or find_shell()
        extra: dict[str, Any] = {}
        if confinement is not None:
            argv = confinement.argv(sh, command)
            extra["preexec_fn"] = confinement.setup
        elif supported():
            argv = supervised_argv(sh, command, pid_namespace=False)
            extra["preexec_fn"] = ParentDeath(DEATH_SIGNAL, subreaper=True)
        else:
            argv = [sh, "-c", command]
        log_fd = -1
        if log_path is not None:
            log_fd = os.open(
                log_path,
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
                0o600,
            )
        pipes = _Pipes(capture, on_data, log_fd)
        # asyncio runs Popen (the fork) on this, the event loop's, thread: the parent-death
        # signal fires when the forking *thread* exits, and this one outlives the command.
        spawn = asyncio.ensure_future(
            loop.subprocess_exec(
                lambda: pipes,
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=str(cwd),
                env=dict(env),
                start_new_session=True,
                **extra,
            )
        )
        try:
            # Shielded: cancelled half-way, asyncio would kill only the shell it started and
            # leave the rest of the tree running; finish starting, then stop the whole tree.
            transport, _ = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            await asyncio.shield(cls._abandon(spawn, confinement))
            raise
        except Exception as exc:
            pipes.close_log()
            # Popen reports a failing preexec_fn as SubprocessError; say what it was.
            if isinstance(exc, OSError):
                raise
            raise SandboxSetupError(f"the sandbox could not be set up: {exc}") from exc
        inodes: set[int] = set()
        for fd in (1, 2):
            pipe = transport.get_pipe_transport(fd)
            obj = pipe.get_extra_info("pipe") if pipe is not None else None
            if obj is not None:
                with contextlib.suppress(OSError, ValueError):
                    inodes.add(os.fstat(obj.fileno()).st_ino)
        return cls(
            transport,
            pipes,
            confined=confinement is not None and confinement.pid_namespace,
            pipe_inodes=inodes,
        )

    @classmethod
    async def _abandon(
        cls,
        spawn: asyncio.Future[tuple[asyncio.SubprocessTransport, Any]],
        conf: Confinement | None,
    ) -> None:
        """A start cancelled half-way: wait for the process, then stop its whole tree."""
        try:
            transport, pipes = await spawn
        except Exception:
            return  # it never started
        assert isinstance(pipes, _Pipes)
        proc = cls(
            transport,
            pipes,
            confined=conf is not None and conf.pid_namespace,
            pipe_inodes=set(),
        )
        await proc.aclose()

    @property
    def returncode(self) -> int | None:
        """The shell's exit status (negative: killed by that signal), None while it runs."""
        return self._transport.get_returncode()

    @property
    def running(self) -> bool:
        """True until the shell has exited."""
        return self.returncode is None

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait for the shell to exit; False when `timeout` seconds passed first."""
        if timeout is None:
            await self._pipes.exited.wait()
            return True
        try:
            await asyncio.wait_for(self._pipes.exited.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def _family(self) -> list[int]:
        if self._ns < 0 and self._proc_dir >= 0:
            self._ns = _namespace_via(self._proc_dir)
            if self._ns >= 0:
                os.close(self._proc_dir)
                self._proc_dir = -1
        if self._ns >= 0:
            return members_of(self._ns)
        # No namespace, or not found yet (the supervisor has not forked, or has just died):
        # whatever is in one is below the supervisor too.
        return sorted(set(_descendants(self.pid)) | set(_pipe_holders(self._pipe_inodes)))

    def _signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        for p in self._family():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, sig)

    def _terminate(
        self, family: list[int], delivered: set[int], spared: set[int], first: bool
    ) -> bool:
        """SIGTERM each process of the tree still owed one; False once none is.

        `delivered` holds the PIDs known to have got it. A SIGTERM can be lost in two ways: the
        namespace's PID 1 drops every signal it has no handler for (so a command it forks
        after the first SIGTERM never saw one), and a process the supervisor just forked
        ignores SIGTERM (the supervisor's own setting) until its first line resets it. So,
        after the first round, a new process is owed one only when no ancestor of it got one:
        whatever descends from a process that did is that process's business (a cleanup step
        and its children, say), and goes to `spared`. A disposition only goes from ignored to
        default on that path, so a PID seen not ignoring SIGTERM before the signal got it.
        """
        stats = {p: _proc_stat(p) for p in family if p != self.pid}
        init = next(
            (p for p, (_, parent, _) in stats.items() if self.pid_namespace and parent == self.pid),
            None,
        )
        # Dispositions are read before anything is sent (see above).
        sends: list[tuple[int, bool]] = []
        for p, (state, parent, _) in stats.items():
            if p in delivered or p in spared or state in _GONE:
                continue
            if not first and (parent in delivered or parent in spared):
                spared.add(p)
                continue
            sends.append((p, p == init or _ignores_term(p)))
        if first:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGTERM)
        waiting = False  # a process seen ignoring SIGTERM, to be sent it again
        for p, ignoring in sends:
            if not (first and stats[p][2] == self.pid):  # the group's members just got it
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(p, signal.SIGTERM)
            if not ignoring:
                delivered.add(p)
            elif p != init:
                waiting = True
        # PID 1 itself never takes it: what is owed is its child, the command, once it exists.
        fed = init is None or any(stats.get(p, (b"", 0, 0))[1] == init for p in delivered)
        return waiting or not fed

    def _live_family(self) -> list[int]:
        return [p for p in self._family() if _alive(p)]

    async def _until_gone(self, seconds: float) -> None:
        """Wait (at most `seconds`) until no process of the tree is left but zombies.

        A SIGKILL is delivered later than kill(2) returns: a caller told "stopped" should not
        still find the command running.
        """
        deadline = time.monotonic() + seconds
        delay = 0.002
        while self._live_family() and time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    async def stop(
        self,
        reason: Literal["timeout", "cancel", "stop"] = "stop",
        grace: float = GRACE_SECONDS,
    ) -> None:
        """SIGTERM the whole tree, SIGKILL after `grace` seconds, then drain and finish.

        Returns once the tree is gone (each process exited; the kernel may not yet have reaped
        every one), or after a further `KILL_WAIT_SECONDS` if the kernel is slower than that.
        """
        if self.killed_by is None and (self.running or self._family()):
            self.killed_by = reason
        delivered: set[int] = set()
        spared: set[int] = set()
        owed = self._terminate(self._family(), delivered, spared, first=True)
        deadline = time.monotonic() + grace
        delay = 0.005
        while time.monotonic() < deadline:
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
            family = self._family()  # one scan of /proc per poll
            if not self.running and not family:
                break
            if owed:
                owed = self._terminate(family, delivered, spared, first=False)
        # Always, even with the supervisor gone: its process group still reaches what it
        # orphaned (a process group ID is not reused while a member lives).
        self._signal(signal.SIGKILL)
        await self._until_gone(KILL_WAIT_SECONDS)
        await self.finish()

    async def finish(self) -> None:
        """After the shell exited: end what it left behind and drain the pipes (≤ 2 s)."""
        if self._finished:
            return
        await self._pipes.exited.wait()
        # With a PID namespace the kernel already ended the rest when its init exited;
        # otherwise leftovers (background children) die with the command.
        # Pipes already closed by everyone: nothing of the command's can be left (the scan of
        # /proc that finds escaped children costs milliseconds, so skip it when it cannot help).
        leftovers = not self._pipes.drained.is_set() and self._family()
        if leftovers:
            self._signal(signal.SIGKILL)
            await self._until_gone(KILL_WAIT_SECONDS)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._pipes.drained.wait(), DRAIN_SECONDS)
        self._transport.close()
        self._pipes.close_log()
        if self._ns >= 0:
            os.close(self._ns)
            self._ns = -1
        if self._proc_dir >= 0:
            os.close(self._proc_dir)
            self._proc_dir = -1
        self._finished = True

    @property
    def log_bytes(self) -> int:
        """Bytes written to the log file so far."""
        return self._pipes.log_bytes

    async def aclose(self) -> None:
        """Stop the command if it still runs (for cleanup paths); never raises."""
        with contextlib.suppress(Exception):
            if self.running:
                await self.stop("stop", grace=0.2)
            else:
                await self.finish()


def read_log(path: Path, offset: int, max_bytes: int) -> tuple[bytes, int]:
    """Up to `max_bytes` of a job log from `offset`, and the log's current size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return b"", 0
    try:
        size = os.fstat(fd).st_size
        if offset >= size:
            return b"", size
        return os.pread(fd, min(max_bytes, size - offset), offset), size
    finally:
        os.close(fd)
