"""A real terminal for tests: a child process in a pty, and the screen a person would see.

`Terminal` starts a command in a pseudo-terminal of a fixed size (pexpect) and feeds every
byte it writes into a `pyte.HistoryScreen`, so tests assert on the screen (the visible rows
plus what scrolled into the scrollback), not on escape sequences. The screen answers the
child's cursor-position and status queries the way a terminal does (prompt_toolkit asks).

A second, wider screen can watch the same bytes (`canvas_columns`): a child that believes its
terminal is 40 columns wide must leave the canvas blank past column 40.

Every wait is bounded; `close()` ends the child by its PID (SIGHUP, then SIGKILL).
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import pexpect
import pyte

WAIT = 20.0
"""Seconds any one wait may take before the test fails with the screen in its message."""

ENTER = "\r"
ESC = "\x1b"
CTRL_C = "\x03"
CTRL_D = "\x04"
SHIFT_TAB = "\x1b[Z"


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """This machine's environment without keys, colour or handrail settings; state in `home`.

    HOME, the state folder and the XDG folders all point into `home`, so the user's real
    settings, history and transcripts are never read or written.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("HANDRAIL_")
        and not k.endswith(("_API_KEY", "_AUTH_TOKEN"))
        and not k.startswith(("LC_", "PYTEST_"))
        and k
        not in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "COLUMNS", "LINES", "TERM", "LANG")
        and not k.lower().endswith("_proxy")
    }
    for name in ("home", "state", "config", "xdg-state", "cache", "tmp"):
        (home / name).mkdir(parents=True, exist_ok=True)
    env.update(
        # A chat that a test ends with SIGKILL cannot remove its session directory: keep it
        # in the test's own folder rather than the run's temporary root.
        TMPDIR=str(home / "tmp"),
        HOME=str(home / "home"),
        HANDRAIL_STATE_DIR=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_STATE_HOME=str(home / "xdg-state"),
        XDG_CACHE_HOME=str(home / "cache"),
        TERM="xterm-256color",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    env.update(extra)
    return env


class _Screen(pyte.HistoryScreen):
    """A HistoryScreen that answers the child's queries (cursor position, status)."""

    def __init__(self, columns: int, lines: int, reply: Callable[[str], None]) -> None:
        super().__init__(columns, lines, history=20_000, ratio=0.5)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data)


def _row(line: Mapping[int, Any], columns: int) -> str:
    return "".join(line[x].data for x in range(columns)).rstrip()


class Terminal:
    """`argv` running in a `columns` x `rows` pty, with the screen its user sees.

    Args:
        argv: The command.
        cwd: Where it runs.
        env: Its whole environment (see `isolated_env`).
        columns: The terminal's width, as the child sees it and as the screen draws it.
        rows: The terminal's height.
        canvas_columns: Also draw everything on a wider screen (see `beyond`).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        columns: int = 100,
        rows: int = 30,
        canvas_columns: int | None = None,
    ) -> None:
        self.columns = columns
        self.rows = rows
        self.raw = bytearray()
        """Every byte the child wrote, in order."""
        self.eof = False
        self.screen = _Screen(columns, rows, self._answer)
        self._stream = pyte.ByteStream(self.screen)
        self.canvas: pyte.Screen | None = None
        self._canvas_stream: pyte.ByteStream | None = None
        self._beyond: list[str] = []
        if canvas_columns is not None:
            self.canvas = pyte.Screen(canvas_columns, rows)
            self._canvas_stream = pyte.ByteStream(self.canvas)
        self.child = pexpect.spawn(
            argv[0],
            list(argv[1:]),
            cwd=str(cwd),
            env=dict(env),
            dimensions=(rows, columns),
            echo=False,
        )
        self.child.delayafterterminate = 0.02

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the child if it still runs (by its PID: SIGHUP, SIGINT, then SIGKILL)."""
        if self.child.isalive():
            self.child.terminate(force=True)
        self.child.close(force=True)

    def wait_exit(self, timeout: float = WAIT) -> int:
        """The child's exit status once it has ended (128 + N for a signal N)."""
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            self.pump(0.1)
        while self.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.child.isalive():
            raise AssertionError(f"still running after {timeout} s:\n{self.text()}")
        self.child.close()
        if self.child.signalstatus is not None:
            return 128 + self.child.signalstatus
        assert self.child.exitstatus is not None
        return self.child.exitstatus

    # -- reading -----------------------------------------------------------------------------

    def _answer(self, data: str) -> None:
        # The screen's replies to queries go back to the child as typed input would.
        if not self.eof:
            self.child.send(data.encode())

    def pump(self, timeout: float = 0.05) -> bool:
        """Read what the child wrote within `timeout` and draw it; False when nothing came."""
        if self.eof:
            return False
        try:
            data: bytes = self.child.read_nonblocking(65536, timeout)
        except pexpect.TIMEOUT:
            return False
        except pexpect.EOF:
            self.eof = True
            return False
        self.raw += data
        self._stream.feed(data)
        if self.canvas is not None and self._canvas_stream is not None:
            self._canvas_stream.feed(data)
            self._note_beyond()
        return True

    def _note_beyond(self) -> None:
        assert self.canvas is not None
        for y in range(self.canvas.lines):
            line = self.canvas.buffer[y]
            extra = "".join(line[x].data for x in range(self.columns, self.canvas.columns))
            if extra.strip():
                self._beyond.append(_row(line, self.canvas.columns))

    @property
    def beyond(self) -> list[str]:
        """Rows that were ever drawn past `columns` on the wider canvas (should be none)."""
        return list(self._beyond)

    def history(self) -> list[str]:
        """The rows that scrolled off the top, oldest first."""
        return [_row(line, self.columns) for line in self.screen.history.top]

    def display(self) -> list[str]:
        """The visible rows, right-stripped."""
        return [row.rstrip() for row in self.screen.display]

    def text(self) -> str:
        """Scrollback and visible rows, as one string."""
        return "\n".join([*self.history(), *self.display()])

    def wait_for(
        self, expected: str | re.Pattern[str] | Callable[[str], bool], timeout: float = WAIT
    ) -> str:
        """Read until the screen (with scrollback) shows `expected`; returns the screen text."""
        found = _matcher(expected)
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if found(text):
                return text
            if self.eof or time.monotonic() > deadline:
                why = "the child ended" if self.eof else f"{timeout} s passed"
                raise AssertionError(f"{why} before the screen showed {expected!r}:\n{text}")
            self.pump(0.05)

    def settle(self, quiet: float = 0.3, timeout: float = WAIT) -> None:
        """Read until the child has written nothing for `quiet` seconds (bounded)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pump(quiet):
            pass

    def cursor_row(self) -> str:
        """The row the cursor is on."""
        return self.display()[self.screen.cursor.y]

    # -- typing ------------------------------------------------------------------------------

    def send(self, keys: str) -> None:
        """Type `keys` (one write: an escape sequence arrives whole)."""
        self.child.send(keys.encode())

    def wait_read(self, timeout: float = WAIT) -> None:
        """Wait until the child has read everything typed so far (its tty's input queue is empty).

        Keys typed while the agent works are not echoed: this is how a test knows they
        reached the agent rather than still waiting in the terminal.
        """
        fd = os.open(os.readlink(f"/proc/{self.child.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
        try:
            deadline = time.monotonic() + timeout
            while True:
                pending = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
                if pending == 0:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(f"{pending} typed bytes still unread after {timeout} s")
                self.pump(0.02)
        finally:
            os.close(fd)

    def type_line(self, text: str) -> None:
        """Type `text` at the prompt, wait until it shows, and press Enter."""
        self.send(text)
        tail = text[-20:]
        self.wait_for(lambda _: tail in self.cursor_row())
        self.send(ENTER)


def _matcher(expected: str | re.Pattern[str] | Callable[[str], bool]) -> Callable[[str], bool]:
    if isinstance(expected, str):
        return lambda text: expected in text
    if isinstance(expected, re.Pattern):
        pattern = expected
        return lambda text: pattern.search(text) is not None
    return expected


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, dead but not reaped, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def wait_gone(pid: int, timeout: float = WAIT) -> bool:
    """Wait (bounded) until `pid` is gone; False if it still runs after `timeout`."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def find_processes(argv: Sequence[str]) -> list[int]:
    """Host PIDs of the processes whose command line is exactly `argv`.

    The sandbox runs commands in their own PID namespace, so the `$$` a command sees is not a
    host PID: tests find their processes by a command line unique to the test instead.
    """
    wanted = "\0".join(argv).encode() + b"\0"
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline == wanted and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def kill_quietly(pid: int) -> None:
    """SIGKILL `pid` if it still runs (cleanup after a failed test)."""
    if alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
