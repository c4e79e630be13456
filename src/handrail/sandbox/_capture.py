"""Bounded streaming capture of a command's output: a head+tail view for the model, a full file.

`OutputCapture` is fed a command's stdout and stderr chunk by chunk as they arrive. Per stream
it keeps a head buffer and a tail buffer of bounded size (a few hundred KB in all, however much
is fed) and exact byte and line counts. Once the output is too big to be sure the model sees it
whole, every byte goes, in arrival order, to a spill file. `render()` is the model's view:
stdout, then stderr under a `[stderr]` line (whenever stderr has text, alone or not, so the
model always knows which stream it reads), each cut to a head and a tail around a marker that
gives the exact number of lines and bytes left out and the file that has them.

Budget: at most `limit_chars` characters of output text, plus the markers and the label. When
only one stream is too long it gets whatever the other leaves; when both are, they split it
evenly. Within a stream the tail gets the larger part (60% for stdout, 80% for stderr): the end
carries the summary, the traceback or the error that stopped the command, which is exactly what
head-only truncation loses (Codex #6415), while a smaller head still shows what the command
started doing and, on stderr, the first (often root-cause) compiler error. A part that the head
cannot use on whole lines goes to the tail.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import stat
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

__all__ = ["OutputCapture"]

STDERR_LABEL = "[stderr]"

_HEAD_SHARE = (0.4, 0.2)  # stdout, stderr: the rest of each stream's budget goes to its tail
_SNIFF_BYTES = 8192  # a NUL byte this early in a stream marks it binary
_RECENT_BYTES = 4096  # per line kept for recent(): a `\r` progress bar keeps its last state
_RECENT_CHARS = 200  # per line returned by recent()

# Colour and cursor escapes a terminal would interpret: CSI (also one cut off at the end), OSC
# (titles, hyperlinks), DCS/SOS/PM/APC strings, and two-character escapes.
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*(?:[@-~]|\Z)"
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\|\Z)"
    r"|[PX^_][^\x1b]*(?:\x1b\\|\Z)"
    r"|[ -/]*[0-~])"
)
# What is left of C0 controls (bell, backspace, NUL, stray escapes); tab is kept.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def _clean_line(raw: bytes | bytearray) -> str:
    """One line (without its line break) as a terminal would end up showing it."""
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # A CR rewrites the line (progress bars); a trailing one is the CR of a CRLF.
        text = next((part for part in reversed(text.split("\r")) if part), "")
    return _CONTROL.sub("", text)


def _clean(raw: bytes | bytearray) -> str:
    """Output text with line breaks kept and each line cleaned."""
    return "\n".join(_clean_line(line) for line in raw.split(b"\n"))


def _is_continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _char_floor(data: bytes, n: int) -> int:
    """`n` moved back (at most 3 bytes) so that `data[:n]` does not end inside a character."""
    for _ in range(3):
        if 0 < n < len(data) and _is_continuation(data[n]):
            n -= 1
    return n


def _char_ceil(data: bytes, n: int) -> int:
    """`n` moved forward (at most 3 bytes) so that `data[n:]` does not start inside a character."""
    for _ in range(3):
        if n < len(data) and _is_continuation(data[n]):
            n += 1
    return n


def _complete_end(data: bytes) -> int:
    """Length of `data` without an incomplete UTF-8 sequence at its end."""
    n = len(data)
    for back in range(1, min(4, n) + 1):
        byte = data[n - back]
        if _is_continuation(byte):
            continue
        if byte >= 0xC0:
            size = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return n - back if size > back else n
        return n
    return n


def _fit_prefix(seg: bytes, budget: int, *, whole_line: bool) -> int:
    """Bytes of `seg` (at a character boundary) whose cleaned text fits in `budget` chars.

    Bisection: cleaning is not monotonic (escapes, carriage-return rewrites), so this finds a
    long prefix that fits rather than the longest; `seg` is a bounded buffer, so it is cheap.
    `whole_line` says whether `seg` ends where its line does (not where a buffer does).
    """
    if len(_clean_line(seg)) <= budget:
        if whole_line:
            return len(seg)
        n = len(seg)
    else:
        lo, hi = 0, len(seg)  # a prefix of lo bytes fits, one of hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if len(_clean_line(seg[: _char_floor(seg, mid)])) <= budget:
                lo = mid
            else:
                hi = mid
        n = _char_floor(seg, lo)
    # Inside a `\r`-rewritten line, end before a rewrite so the last state shown is complete.
    cr = seg.rfind(b"\r", 0, n)
    if cr > 0 and seg[n : n + 1] != b"\r" and len(_clean_line(seg[:cr])) <= budget:
        n = cr
    return n


def _fit_suffix(seg: bytes, budget: int) -> int:
    """Start of a suffix of `seg` (at a character boundary) that fits in `budget` chars."""
    if len(_clean_line(seg)) <= budget:
        return 0
    lo, hi = 0, len(seg)  # a suffix from hi fits, one from lo does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if len(_clean_line(seg[_char_ceil(seg, mid) :])) <= budget:
            hi = mid
        else:
            lo = mid
    return _char_ceil(seg, hi)


def _take_head(buf: bytes, budget: int) -> tuple[int, int]:
    """End of the head of `buf` that fits in `budget` chars, and the chars it uses.

    Whole lines while they fit; when not even the first line does, a cut inside it.
    """
    pos = used = 0
    while True:
        nl = buf.find(b"\n", pos)
        if nl < 0:
            break
        cost = len(_clean_line(buf[pos:nl])) + 1
        if used + cost > budget:
            break
        used += cost
        pos = nl + 1
    if pos == 0:
        first = buf.find(b"\n")
        seg = buf[: len(buf) if first < 0 else first]
        pos = _fit_prefix(seg, budget, whole_line=first >= 0)
        used = len(_clean_line(buf[:pos]))
    return pos, used


def _take_tail(buf: bytes, lo: int, lo_starts_line: bool, budget: int) -> int:
    """Start of the tail of `buf[lo:]` that fits in `budget` chars.

    Whole lines from the end while they fit (trailing line breaks are free: the view drops
    them); when not even the last line does, a cut inside it. The text before the first line
    break after `lo` is a whole line only if `lo_starts_line`.
    """
    end = len(buf)
    while end > lo and buf[end - 1] == 0x0A:
        end -= 1
    last_end = end
    t, used, taken = len(buf), 0, False
    while True:
        nl = buf.rfind(b"\n", lo, end)
        start = nl + 1 if nl >= 0 else lo
        if nl < 0 and not lo_starts_line:
            # Only the end of a line is held; after its last `\r` rewrite it is a whole state.
            cr = buf.rfind(b"\r", lo, end - 1 if buf[end - 1 : end] == b"\r" else end)
            if cr < 0:
                break
            start = cr
        cost = len(_clean_line(buf[start:end])) + 1
        if used + cost > budget:
            break
        used += cost
        t, taken = start, True
        if nl < 0:
            break
        end = nl
    if not taken:
        nl = buf.rfind(b"\n", lo, last_end)
        start = nl + 1 if nl >= 0 else lo
        t = start + _fit_suffix(buf[start:last_end], budget)
    return t


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


class _Stream:
    """What is kept of one stream: bounded head and tail bytes, exact counts."""

    __slots__ = (
        "binary",
        "ends_line",
        "head",
        "nbytes",
        "newlines",
        "partial",
        "partial_seq",
        "tail",
    )

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.nbytes = 0
        self.newlines = 0
        self.ends_line = True
        self.binary = False
        self.partial = bytearray()  # the line being written, for recent()
        self.partial_seq = 0

    @property
    def dropped(self) -> int:
        """Bytes between head and tail that are no longer held."""
        return self.nbytes - len(self.head) - len(self.tail)

    @property
    def lines(self) -> int:
        """Lines, a final line without a line break included."""
        return self.newlines + (0 if self.ends_line else 1)


class OutputCapture:
    """A command's stdout and stderr, captured with bounded memory; see the module docstring.

    Feed chunks with `feed()` as they arrive, then `close()` (or use it as a context manager)
    and `render()`. The spill file is opened only once the output exceeds `limit_chars` bytes
    (or a stream turns out binary), and `close()` removes it again when the view turned out to
    show everything, so small outputs leave no file. Write errors (disk full, unwritable
    folder) never raise: they are recorded and named in the view and in `stats()`.

    Args:
        spill_path: where to write the full output, or None to keep none.
        limit_chars: most characters of output text in `render()`, markers and label aside.
        max_file_bytes: the spill file stops growing here (the view says so).
        recent_lines: how many lines `recent()` returns.
    """

    def __init__(
        self,
        spill_path: Path | None,
        *,
        limit_chars: int = 30_000,
        max_file_bytes: int = 1 << 30,
        recent_lines: int = 5,
    ) -> None:
        if limit_chars < 0 or max_file_bytes < 0 or recent_lines < 0:
            raise ValueError("limit_chars, max_file_bytes and recent_lines must not be negative")
        self._limit = limit_chars
        # Enough raw bytes to fill the budget with 4-byte characters or escape-heavy text.
        self._cap = max(4 * limit_chars, 4096)
        self._trim_at = self._cap + self._cap // 2  # trimming the tail only now keeps it O(1)
        self._out = _Stream()
        self._err = _Stream()
        self._streams = {"stdout": self._out, "stderr": self._err}
        self._total = 0
        self._seq = 0
        self._recent_n = recent_lines
        self._recent: collections.deque[tuple[int, bytes]] = collections.deque(maxlen=recent_lines)
        self._path = spill_path
        self._max_file = max_file_bytes
        # The file: "off" (no path), "pending" (not needed yet), "open", "done".
        self._file_state = "off" if spill_path is None else "pending"
        self._pending = bytearray()  # output in arrival order until the file opens
        self._fd: int | None = None
        self._opened = False
        self._regular = False
        self._kept = True
        self._written = 0
        self._capped = False
        self._file_error: str | None = None
        self._closed = False
        self._cache: tuple[str, bool] | None = None

    def __enter__(self) -> OutputCapture:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def feed(self, stream: Literal["stdout", "stderr"], data: bytes) -> None:
        """Take the next chunk of one stream (work in proportion to it; never raises on I/O).

        After `close()` the view and the file are final: a late chunk (a pipe drained after the
        caller gave up on it) is ignored.
        """
        if self._closed or not data:
            return
        s = self._streams[stream]
        self._seq += 1
        self._cache = None
        if s.nbytes < _SNIFF_BYTES and b"\x00" in data[: _SNIFF_BYTES - s.nbytes]:
            s.binary = True
            s.head.clear()
            s.tail.clear()
            s.partial.clear()
        size = len(data)
        s.nbytes += size
        s.newlines += data.count(b"\n")
        s.ends_line = data[-1] == 0x0A
        self._total += size
        if not s.binary:
            self._keep(s, data)
            self._note_recent(s, data)
        if self._file_state == "pending":
            self._pending += data
            if self._total > self._limit or s.binary:
                self._open_file()
                if self._fd is not None:
                    self._write(self._pending)
                self._pending = bytearray()
        elif self._file_state == "open":
            self._write(data)

    def close(self) -> None:
        """Flush and close the spill file; remove it if the view shows everything (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._finish_file()
        self._pending = bytearray()
        self._cache = None
        path = self._path
        if path is not None and self._opened and self._regular and not self.truncated:
            with contextlib.suppress(OSError):
                path.unlink()
                self._kept = False

    def recent(self) -> list[str]:
        """The last few lines of either stream, complete or still being written, cleaned."""
        entries = list(self._recent)
        for s in (self._out, self._err):
            if s.partial:
                entries.append((s.partial_seq, bytes(s.partial)))
        entries.sort(key=lambda entry: entry[0])  # stable: a chunk's lines keep their order
        lines: list[str] = []
        for _, raw in entries:
            raw = raw[_char_ceil(raw, 0) : _complete_end(raw)]
            line = _clean_line(raw).strip()
            if line:
                lines.append(line[:_RECENT_CHARS])
        return lines[-self._recent_n :] if self._recent_n else []

    def render(self) -> str:
        """The model's view: `""` when there was no output (the caller says "(no output)")."""
        return self._compose_cached()[0]

    @property
    def total_bytes(self) -> int:
        """Bytes fed so far, both streams."""
        return self._total

    @property
    def truncated(self) -> bool:
        """Whether `render()` leaves anything out (a binary stream included)."""
        return self._compose_cached()[1]

    def stats(self) -> dict[str, Any]:
        """Counts and file facts, JSON-ready, e.g. for a result's metadata.

        Keys: `stdout` and `stderr` (`bytes`, `lines`, `binary`), `total_bytes`, `truncated`,
        `spill_path` (the file holding the output, or None when none was kept), `file_bytes`
        (written to it), `file_capped` (stopped at `max_file_bytes`), `file_error` (why
        writing failed, or None).
        """
        streams = {
            name: {"bytes": s.nbytes, "lines": s.lines, "binary": s.binary}
            for name, s in self._streams.items()
        }
        kept = self._opened and self._kept
        return {
            **streams,
            "total_bytes": self._total,
            "truncated": self.truncated,
            "spill_path": str(self._path) if kept else None,
            "file_bytes": self._written if kept else 0,
            "file_capped": self._capped,
            "file_error": self._file_error,
        }

    # -- feeding -------------------------------------------------------------------------

    def _keep(self, s: _Stream, data: bytes) -> None:
        room = self._cap - len(s.head)
        if room >= len(data):
            s.head += data
            return
        view = memoryview(data)
        if room > 0:
            s.head += view[:room]
            view = view[room:]
        s.tail += view
        if len(s.tail) > self._trim_at:
            del s.tail[: len(s.tail) - self._cap]

    def _note_recent(self, s: _Stream, data: bytes) -> None:
        nl = data.rfind(b"\n")
        if nl < 0:
            s.partial += data
            if len(s.partial) > _RECENT_BYTES:
                del s.partial[: len(s.partial) - _RECENT_BYTES]
            s.partial_seq = self._seq
            return
        lines: list[bytes] = []
        end = nl
        # Blank lines are skipped; a bounded number of look-ups keeps a flood of them cheap.
        for _ in range(4 * self._recent_n + 4):
            if len(lines) >= self._recent_n:
                break
            prev = data.rfind(b"\n", 0, end)
            if prev < 0:
                line = (bytes(s.partial) + data[max(0, end - _RECENT_BYTES) : end])[-_RECENT_BYTES:]
            else:
                line = data[max(prev + 1, end - _RECENT_BYTES) : end]
            if line.strip():
                lines.append(line)
            if prev < 0:
                break
            end = prev
        self._recent.extend((self._seq, line) for line in reversed(lines))
        s.partial = bytearray(data[max(nl + 1, len(data) - _RECENT_BYTES) :])
        s.partial_seq = self._seq

    # -- the spill file --------------------------------------------------------------------

    def _open_file(self) -> None:
        path = self._path
        assert path is not None
        self._file_state = "done"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Owner-only (output may hold secrets); never through a planted symlink.
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
            fd = os.open(path, flags, 0o600)
        except OSError as exc:
            self._file_error = exc.strerror or type(exc).__name__
            return
        self._fd, self._opened, self._file_state = fd, True, "open"
        with contextlib.suppress(OSError):
            self._regular = stat.S_ISREG(os.fstat(fd).st_mode)

    def _write(self, data: bytes | bytearray) -> None:
        fd = self._fd
        assert fd is not None
        view = memoryview(data)
        room = self._max_file - self._written
        if len(view) > room:
            view = view[:room]
            self._capped = True
        try:
            while view:
                n = os.write(fd, view)
                if n <= 0:
                    raise OSError(0, "nothing was written")
                self._written += n
                view = view[n:]
        except OSError as exc:
            self._file_error = exc.strerror or type(exc).__name__
            self._finish_file()
            return
        finally:
            view.release()
        if self._capped:
            self._finish_file()

    def _finish_file(self) -> None:
        if self._file_state == "pending":
            self._file_state = "done"
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
            self._file_state = "done"

    # -- the view --------------------------------------------------------------------------

    def _compose_cached(self) -> tuple[str, bool]:
        if self._cache is None:
            self._cache = self._compose()
        return self._cache

    def _compose(self) -> tuple[str, bool]:
        limit = self._limit
        streams = (self._out, self._err)
        fulls: list[str | None] = []
        needs: list[int] = []
        for s in streams:
            if s.binary:
                fulls.append(None)
                needs.append(0)
            elif s.dropped:
                fulls.append(None)
                needs.append(limit + 1)
            else:
                full = _clean(s.head + s.tail).rstrip("\n")
                fulls.append(full)
                needs.append(len(full))
        budgets = _share(needs[0], needs[1], limit)
        texts: list[str] = []
        truncated = False
        for s, full, budget, head_share in zip(streams, fulls, budgets, _HEAD_SHARE, strict=True):
            if s.binary:
                texts.append(f"[binary output, {_plural(s.nbytes, 'byte')}{self._where()}]")
                truncated = True
            elif full is not None and len(full) <= budget:
                texts.append(full)
            else:
                texts.append(self._cut(s, budget, head_share))
                truncated = True
        out, err = texts
        if err:
            err = f"{STDERR_LABEL}\n{err}"
        return "\n".join(part for part in (out, err) if part), truncated

    def _cut(self, s: _Stream, budget: int, head_share: float) -> str:
        """Head, marker, tail of one stream within `budget` chars of text."""
        if s.dropped:
            hbuf, tbuf = bytes(s.head), bytes(s.tail)
            h, used = _take_head(hbuf, int(budget * head_share))
            # The tail buffer was trimmed: its first line is only the end of one.
            t = _take_tail(tbuf, 0, False, budget - used)
            lost_newlines = s.newlines - hbuf.count(b"\n") - tbuf.count(b"\n")
            lines = hbuf.count(b"\n", h) + lost_newlines + tbuf.count(b"\n", 0, t)
        else:
            hbuf = tbuf = bytes(s.head + s.tail)
            h, used = _take_head(hbuf, int(budget * head_share))
            starts_line = h == 0 or hbuf[h - 1] == 0x0A
            t = _take_tail(tbuf, h, starts_line, budget - used)
            lines = hbuf.count(b"\n", h, t)
        omitted = s.nbytes - h - (len(tbuf) - t)
        what = _plural(omitted, "byte")
        if lines:  # a cut inside one long line omits no line break: bytes say it all
            what = f"{_plural(lines, 'line')} ({what})"
        head = _clean(hbuf[:h])
        if head and not head.endswith("\n"):
            head += "\n"  # a cut inside a line: the marker still gets a line of its own
        tail = _clean(tbuf[t:]).rstrip("\n")
        marker = f"[... {what} omitted{self._where()} ...]"
        return f"{head}{marker}\n{tail}" if tail else f"{head}{marker}"

    def _where(self) -> str:
        """Where the full output is, for a marker: `; full output: PATH`, or why it is not."""
        if self._path is None:
            return ""
        path = str(self._path)
        first = f"; first {_plural(self._written, 'byte')} of output in: {path}"
        if self._file_error is not None:
            if self._written:
                return f"{first} (then: {self._file_error})"
            return f"; output not saved ({self._file_error}: {path})"
        if self._capped:
            return first
        return f"; full output: {path}"


def _share(need_out: int, need_err: int, limit: int) -> tuple[int, int]:
    """Split `limit` chars between the streams: what one leaves unused, the other may take."""
    half = limit // 2
    if need_out + need_err <= limit:
        return need_out, need_err
    if need_out <= half:
        return need_out, limit - need_out
    if need_err <= limit - half:
        return limit - need_err, need_err
    return half, limit - half
