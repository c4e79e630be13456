"""Keys pressed while the agent works: Esc interrupts, Shift-Tab cycles the mode, text is kept.

While a turn runs there is no prompt on the screen, so the terminal is put in cbreak mode
(keys arrive one by one, unechoed; Ctrl-C still raises SIGINT) and stdin is watched by the
event loop. A lone ESC byte is the Esc key; ESC followed by more bytes in the same read is an
escape sequence (an arrow, Shift-Tab as `ESC [ Z`). Everything else typed is type-ahead, handed
to the next prompt, never dropped.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import sys
import termios
import tty
from collections.abc import Callable
from typing import Any

BACKTAB = b"\x1b[Z"


class KeyReader:
    """Watches stdin during a turn and calls back for Esc, Shift-Tab and typed text."""

    def __init__(
        self,
        *,
        on_escape: Callable[[], None],
        on_backtab: Callable[[], None],
        on_text: Callable[[str], None],
        fd: int | None = None,
    ) -> None:
        self.on_escape = on_escape
        self.on_backtab = on_backtab
        self.on_text = on_text
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._saved: list[Any] | None = None
        # A read can end inside a UTF-8 character (a long paste): decode across reads.
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> KeyReader:
        if not os.isatty(self.fd):
            return self
        with contextlib.suppress(termios.error):
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd, termios.TCSANOW)
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.fd, self._readable)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.fd)
            self._loop = None
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self._saved = None

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 1024)
        except OSError:
            data = b""
        if not data:  # stdin closed: stop watching rather than spin
            if self._loop is not None:
                self._loop.remove_reader(self.fd)
            return
        self.feed(data)

    def feed(self, data: bytes) -> None:
        """Interpret what one read returned."""
        while data:
            if data == b"\x1b" or data.startswith(b"\x1b\x1b"):
                # Esc alone, or Esc pressed before another key arrived in the same read.
                self.on_escape()
                data = data[1:]
                continue
            if data.startswith(BACKTAB):
                self.on_backtab()
                data = data[len(BACKTAB) :]
                continue
            if data.startswith(b"\x1b"):
                data = _skip_sequence(data)
                continue
            end = data.find(b"\x1b")
            chunk, data = (data, b"") if end < 0 else (data[:end], data[end:])
            text = self._decoder.decode(chunk)
            if text:
                self.on_text(text)


def _skip_sequence(data: bytes) -> bytes:
    """Drop one escape sequence (CSI `ESC [ ... final` or `ESC x`) from the front of `data`."""
    if data[1:2] in (b"[", b"O"):
        for i in range(2, len(data)):
            if 0x40 <= data[i] <= 0x7E:
                return data[i + 1 :]
        return b""
    return data[2:]
