"""`KeyReader`: the keys read while the agent works (Esc, Shift-Tab, type-ahead).

`feed` is given what one `read` of the terminal returns; the terminal tests use a real pty
pair, so cbreak mode, the restore of the terminal's settings and a closed terminal are real.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import termios
from collections.abc import Callable, Iterator

import pytest

from handrail.agent._terminal._keys import KeyReader


class Keys:
    """A KeyReader whose callbacks record what they were called with, in order."""

    def __init__(self, fd: int = -1) -> None:
        self.seen: list[str] = []
        self.changed = asyncio.Event()
        self.reader = KeyReader(
            on_escape=lambda: self.add("<esc>"),
            on_backtab=lambda: self.add("<backtab>"),
            on_text=self.add,
            fd=fd,
        )

    def add(self, what: str) -> None:
        self.seen.append(what)
        self.changed.set()

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Let the event loop run until `predicate()` holds (bounded)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def feed(self, *reads: bytes) -> list[str]:
        for data in reads:
            self.reader.feed(data)
        return self.seen

    @property
    def text(self) -> str:
        return "".join(s for s in self.seen if s not in ("<esc>", "<backtab>"))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x1b", ["<esc>"]),
        (b"\x1b[Z", ["<backtab>"]),
        (b"hello", ["hello"]),
        (b"ab\x1b[Zcd", ["ab", "<backtab>", "cd"]),
        (b"\x1b[Z\x1b[Z", ["<backtab>", "<backtab>"]),
        # Arrows, function keys, Ctrl-arrows: sequences, never an Esc, never text.
        (b"\x1b[A", []),
        (b"\x1bOP", []),
        (b"\x1b[1;5C", []),
        (b"x\x1b[Dy", ["x", "y"]),
        # Alt-x arrives as ESC x: not an interrupt.
        (b"\x1bx", []),
        # A paste in bracketed-paste mode keeps its text.
        (b"\x1b[200~pasted line\x1b[201~", ["pasted line"]),
        (b"caf\xc3\xa9 \xe2\x9c\x93", ["café ✓"]),
        (b"line one\rline two\r", ["line one\rline two\r"]),
    ],
    ids=repr,
)
def test_one_read(data: bytes, expected: list[str]) -> None:
    assert Keys().feed(data) == expected


def test_esc_is_a_lone_byte_not_the_start_of_a_sequence() -> None:
    # Esc, then (in a later read) text: an interrupt, then type-ahead.
    assert Keys().feed(b"\x1b", b"next") == ["<esc>", "next"]


def test_two_escs_in_one_read_interrupt() -> None:
    # Esc pressed twice quickly can arrive in one read (a busy loop, a slow link). Neither
    # press starts a sequence, so at least one interrupt must come of it.
    assert "<esc>" in Keys().feed(b"\x1b\x1b")


def test_a_character_split_across_reads_is_kept() -> None:
    # A long paste comes in 1,024-byte reads; a read can end inside a UTF-8 character.
    keys = Keys()
    keys.feed(b"caf\xc3", b"\xa9")
    assert keys.text == "café"


def test_backspace_and_enter_reach_the_app_as_text() -> None:
    # The app edits its type-ahead with them; the reader passes them on untouched.
    assert Keys().feed(b"ab\x7fc\r") == ["ab\x7fc\r"]


# -- on a real terminal ------------------------------------------------------------------------


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    """(controller, terminal) ends of a fresh pseudo-terminal, closed after."""
    controller, terminal = os.openpty()
    try:
        yield controller, terminal
    finally:
        for fd in (controller, terminal):
            with contextlib.suppress(OSError):
                os.close(fd)


async def test_a_turn_reads_keys_unechoed_and_restores_the_terminal(
    pty: tuple[int, int],
) -> None:
    controller, terminal = pty
    before = termios.tcgetattr(terminal)
    keys = Keys(fd=terminal)
    with keys.reader:
        lflag = termios.tcgetattr(terminal)[3]
        assert not lflag & termios.ECHO, "typed keys are not echoed over the live region"
        assert not lflag & termios.ICANON, "keys arrive one by one, not line by line"
        assert lflag & termios.ISIG, "Ctrl-C still raises SIGINT"
        os.write(controller, b"\x1b")
        await keys.until(lambda: keys.seen == ["<esc>"])
        os.write(controller, b"\x1b[Z")
        await keys.until(lambda: keys.seen == ["<esc>", "<backtab>"])
        os.write(controller, b"more")
        await keys.until(lambda: keys.text == "more")
    assert termios.tcgetattr(terminal) == before
    # Nothing is read once the turn is over: keys typed now belong to the prompt.
    os.write(controller, b"late\n")
    await asyncio.sleep(0.05)
    assert keys.text == "more"
    readable, _, _ = select.select([terminal], [], [], 5.0)
    assert readable and os.read(terminal, 100) == b"late\n"


async def test_a_closed_terminal_stops_the_reader_instead_of_spinning(
    pty: tuple[int, int],
) -> None:
    controller, terminal = pty
    reads = 0
    woke = asyncio.Event()

    class Counting(KeyReader):
        def _readable(self) -> None:
            nonlocal reads
            reads += 1
            woke.set()
            super()._readable()

    reader = Counting(
        on_escape=lambda: None, on_backtab=lambda: None, on_text=lambda _: None, fd=terminal
    )
    with reader:
        os.close(controller)  # the terminal went away (the window was closed)
        async with asyncio.timeout(5.0):
            await woke.wait()
        await asyncio.sleep(0.1)
        assert reads == 1, "a closed terminal must not wake the loop again and again"


async def test_not_a_terminal_is_left_alone() -> None:
    read_end, write_end = os.pipe()
    try:
        keys = Keys(fd=read_end)
        with keys.reader:
            os.write(write_end, b"\x1b")
            await asyncio.sleep(0.05)
        assert keys.seen == []
    finally:
        os.close(read_end)
        os.close(write_end)
