"""A real terminal emulator for tests: a command in a tmux pane of a fixed size.

pyte (`pty_screen`) draws what the child writes; tmux is a terminal people use, with its own
idea of scrolling, so a test that asks "are the choices on the visible screen?" can take
tmux's answer (`capture-pane`). Each `Tmux` runs its own server on a socket in the test's
folder, reads no tmux configuration, and keeps the pane after the command ends
(`remain-on-exit`). The command runs under a small Python parent that writes its exit status
to a file: tmux 3.3 now and then leaves an exited pane process unreaped, never marking the
pane dead, and a shell would die of the same Ctrl-C the command gets. Every wait is bounded;
`close()` stops that one server (`kill-server` on its own socket), and with it the pane's
processes.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

WAIT = 20.0
"""Seconds any one wait may take before the test fails with the screen in its message."""
COMMAND_TIMEOUT = 10.0
"""Seconds one tmux command may take."""
_PARENT = (
    "import signal, subprocess, sys\n"
    "signal.signal(signal.SIGINT, lambda *_: None)  # Ctrl-C is the child's, not ours\n"
    "status = subprocess.call(sys.argv[2:])\n"
    "open(sys.argv[1], 'w').write(str(status if status >= 0 else 128 - status))\n"
)
"""Runs the command (a signal handler, not SIG_IGN, so the child gets the default back)."""


def have_tmux() -> bool:
    """Whether tmux is installed."""
    return shutil.which("tmux") is not None


class Tmux:
    """`argv` in a `columns` x `rows` tmux pane, with the screen tmux shows.

    Args:
        argv: The command.
        socket: The tmux server's socket (a path in the test's folder).
        cwd: Where the command runs.
        env: Its whole environment (and the tmux client's).
        columns: The pane's width.
        rows: The pane's height.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        socket: Path,
        cwd: Path,
        env: Mapping[str, str],
        columns: int = 80,
        rows: int = 15,
    ) -> None:
        self.socket = socket
        self.status_file = socket.with_name(socket.name + ".status")
        self.env = dict(env)
        self.columns = columns
        self.rows = rows
        parent = [sys.executable, "-c", _PARENT, str(self.status_file), *argv]
        self._tmux(
            "-f",
            "/dev/null",
            "start-server",
            ";",
            "set-option",
            "-g",
            "remain-on-exit",
            "on",
            ";",
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(columns),
            "-y",
            str(rows),
            "-c",
            str(cwd),
            shlex.join(parent),
        )

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

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
        """Stop this test's tmux server (its pane's process gets SIGHUP)."""
        subprocess.run(
            ["tmux", "-S", str(self.socket), "kill-server"],
            env=self.env,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )

    def exit_status(self) -> int | None:
        """The command's exit status once it has ended (128 + N for a signal N), else None."""
        try:
            return int(self.status_file.read_text())
        except (OSError, ValueError):  # not yet, or being written
            return None

    def wait_exit(self, timeout: float = WAIT) -> int:
        """The command's exit status, waiting (bounded) for it to end."""
        deadline = time.monotonic() + timeout
        while (status := self.exit_status()) is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout} s:\n{self.text()}")
            time.sleep(0.05)
        return status

    # -- reading -----------------------------------------------------------------------------

    def display(self) -> list[str]:
        """The visible rows, right-stripped (exactly `rows` of them)."""
        out = self._tmux("capture-pane", "-p", "-t", "t").split("\n")
        rows = [line.rstrip() for line in out[: self.rows]]
        return rows + [""] * (self.rows - len(rows))

    def text(self) -> str:
        """The scrollback and the visible rows, as one string."""
        return self._tmux("capture-pane", "-p", "-S", "-", "-t", "t")

    def cursor_row(self) -> str:
        """The row the cursor is on."""
        y = int(self._tmux("display-message", "-p", "-t", "t", "#{cursor_y}").strip())
        return self.display()[y]

    def wait_for(
        self, expected: str | re.Pattern[str] | Callable[[str], bool], timeout: float = WAIT
    ) -> str:
        """Poll until the scrollback and screen show `expected`; returns that text."""
        found = _matcher(expected)
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if found(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{timeout} s passed before tmux showed {expected!r}:\n{text}")
            time.sleep(0.05)

    # -- typing ------------------------------------------------------------------------------

    def send(self, *keys: str) -> None:
        """Press keys, by tmux's names (`Enter`, `C-c`, `Escape`) or as literal text."""
        self._tmux("send-keys", "-t", "t", *keys)

    def type_text(self, text: str) -> None:
        """Type `text` literally (no key names)."""
        self._tmux("send-keys", "-t", "t", "-l", text)


def _matcher(expected: str | re.Pattern[str] | Callable[[str], bool]) -> Callable[[str], bool]:
    if isinstance(expected, str):
        return lambda text: expected in text
    if isinstance(expected, re.Pattern):
        pattern = expected
        return lambda text: pattern.search(text) is not None
    return expected
