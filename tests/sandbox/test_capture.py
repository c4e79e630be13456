"""OutputCapture: the model's head+tail view with exact omitted counts, the spill file, memory."""

from __future__ import annotations

import os
import random
import re
import sys
import tracemalloc
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import pytest
from inline_snapshot import snapshot

from handrail.sandbox import OutputCapture

Stream = Literal["stdout", "stderr"]

MARKER = re.compile(
    r"\[\.\.\. (?:(?P<lines>[\d,]+) lines? \()?(?P<bytes>[\d,]+) bytes?\)? omitted(?P<where>[^\n]*) \.\.\.\]"
)


def capture(
    chunks: Iterable[tuple[Stream, bytes]], spill: Path | None = None, **options: int
) -> OutputCapture:
    cap = OutputCapture(spill, **options)
    for stream, data in chunks:
        cap.feed(stream, data)
    cap.close()
    return cap


def pieces(data: bytes, size: int, stream: Stream = "stdout") -> list[tuple[Stream, bytes]]:
    return [(stream, data[i : i + size]) for i in range(0, len(data), size)]


def numbered(n: int, width: int = 0) -> bytes:
    return b"".join(b"line %06d%s\n" % (i, b"." * width) for i in range(n))


def marker_counts(text: str) -> tuple[int, int]:
    """(lines, bytes) the one marker in `text` says were omitted."""
    found = MARKER.findall(text)
    assert len(found) == 1, text
    lines, nbytes, _ = found[0]
    return int(lines.replace(",", "") or 0), int(nbytes.replace(",", ""))


def check_cut(data: bytes, view: str) -> tuple[str, str]:
    """Check a head+tail view of plain text against its input; return (head, tail).

    The head must be a prefix of the input, the tail a suffix (trailing line breaks aside), and
    the marker's counts must be exactly the bytes and line breaks between them.
    """
    m = MARKER.search(view)
    assert m is not None, view
    head, tail = view[: m.start()], view[m.end() + 1 :]
    assert data.startswith(head.encode())
    body = data.rstrip(b"\n")
    assert body.endswith(tail.encode())
    omitted = data[len(head.encode()) : len(body) - len(tail.encode())]
    assert marker_counts(view) == (omitted.count(b"\n"), len(omitted))
    return head, tail


# -- small output ---------------------------------------------------------------------------


def test_small_output_is_shown_verbatim_and_creates_no_file(tmp_path: Path) -> None:
    spill = tmp_path / "out.txt"
    cap = capture([("stdout", b"hello\n"), ("stdout", b"  world\t!\n\n")], spill)
    assert cap.render() == "hello\n  world\t!"
    assert not spill.exists()
    assert cap.stats() == {
        "stdout": {"bytes": 17, "lines": 3, "binary": False},
        "stderr": {"bytes": 0, "lines": 0, "binary": False},
        "total_bytes": 17,
        "truncated": False,
        "spill_path": None,
        "file_bytes": 0,
        "file_capped": False,
        "file_error": None,
    }


def test_empty_output_renders_empty() -> None:
    assert capture([]).render() == ""
    assert capture([("stdout", b"")]).render() == ""
    assert capture([]).total_bytes == 0


def test_stderr_is_labelled_after_stdout() -> None:
    both = capture([("stderr", b"warning: x\n"), ("stdout", b"result\n")])
    assert both.render() == snapshot("""\
result
[stderr]
warning: x\
""")
    assert capture([("stderr", b"fatal: no repo\n")]).render() == "[stderr]\nfatal: no repo"
    assert capture([("stdout", b"ok\n")]).render() == "ok"


def test_stats_count_a_last_line_without_line_break() -> None:
    cap = capture([("stdout", b"a\nb"), ("stderr", b"x\r\ny\r\n")])
    assert cap.stats()["stdout"] == {"bytes": 3, "lines": 2, "binary": False}
    assert cap.stats()["stderr"] == {"bytes": 6, "lines": 2, "binary": False}
    assert cap.total_bytes == 9


# -- the limit ------------------------------------------------------------------------------


def test_exactly_at_the_limit_is_shown_whole_and_one_more_is_cut(tmp_path: Path) -> None:
    text = b"x" * 59 + b"\n" + b"y" * 40  # 100 characters of text
    at = capture([("stdout", text)], tmp_path / "at.txt", limit_chars=100)
    assert at.render() == text.decode()
    assert not at.stats()["truncated"]
    assert not (tmp_path / "at.txt").exists()

    over = capture([("stdout", text + b"z")], tmp_path / "over.txt", limit_chars=100)
    assert over.stats()["truncated"]
    assert "omitted" in over.render()
    assert (tmp_path / "over.txt").read_bytes() == text + b"z"


def test_both_streams_together_at_the_limit_fit() -> None:
    cap = capture([("stdout", b"a" * 60), ("stderr", b"b" * 40)], limit_chars=100)
    assert cap.render() == "a" * 60 + "\n[stderr]\n" + "b" * 40
    cap = capture([("stdout", b"a" * 60), ("stderr", b"b" * 41)], limit_chars=100)
    assert cap.stats()["truncated"]


CUTS = [
    (n, limit, chunk)
    for n, limit in [(50, 300), (2_000, 1_000), (40_000, 1_000)]
    for chunk in [1, 7, 4096, 65536]
    if not (chunk == 1 and n > 2_000)  # a byte at a time over 500 KB adds only time
]


@pytest.mark.parametrize(("n", "limit", "chunk"), CUTS)
def test_over_the_limit_keeps_head_and_tail_with_exact_counts(
    tmp_path: Path, n: int, limit: int, chunk: int
) -> None:
    data = numbered(n)
    cap = capture(pieces(data, chunk), tmp_path / "out.txt", limit_chars=limit)
    view = cap.render()
    head, tail = check_cut(data, view)
    assert head.startswith("line 000000\n")
    assert tail.endswith(f"line {n - 1:06d}")
    assert len(head) + len(tail) <= limit
    assert len(view) <= limit + 100 + len(str(tmp_path))
    # Cut on line boundaries; the tail (the end of a command) gets the larger part.
    assert head.endswith("\n")
    assert tail.startswith("line ")
    assert len(tail) > len(head)
    assert f"; full output: {tmp_path / 'out.txt'} ...]" in view
    assert (tmp_path / "out.txt").read_bytes() == data


def test_default_limit_is_30000_characters(tmp_path: Path) -> None:
    data = numbered(100_000, width=20)  # 3 MB
    cap = capture(pieces(data, 65536), tmp_path / "out.txt")
    view = cap.render()
    head, tail = check_cut(data, view)
    assert 29_000 < len(head) + len(tail) <= 30_000
    assert cap.stats()["stdout"]["lines"] == 100_000


def test_both_streams_over_the_limit_share_it(tmp_path: Path) -> None:
    out, err = numbered(5_000), b"".join(b"err %05d\n" % i for i in range(5_000))
    chunks = [*pieces(out, 999), *pieces(err, 999, "stderr")]
    view = capture(chunks, tmp_path / "o.txt", limit_chars=2_000).render()
    out_view, err_view = view.split("\n[stderr]\n")
    out_head, out_tail = check_cut(out, out_view)
    err_head, err_tail = check_cut(err, err_view)
    assert len(out_head) + len(out_tail) <= 1_000
    assert len(err_head) + len(err_tail) <= 1_000
    assert len(out_head) + len(out_tail) + len(err_head) + len(err_tail) > 1_900
    # stderr keeps more of its end (the error that stopped the command) than stdout does.
    assert len(err_tail) / len(err_head) > len(out_tail) / len(out_head) > 1


def test_a_short_stream_is_shown_whole_beside_a_long_one() -> None:
    out = numbered(10_000)
    err = b"Traceback (most recent call last):\nValueError: boom\n"
    view = capture([*pieces(out, 4096), ("stderr", err)], limit_chars=1_000).render()
    out_view, err_view = view.split("\n[stderr]\n")
    assert err_view == err.decode().rstrip("\n")
    head, tail = check_cut(out, out_view)
    assert len(head) + len(tail) <= 1_000 - len(err_view)
    assert len(head) + len(tail) > 1_000 - len(err_view) - 30


def test_view_stays_within_the_limit_plus_marker_overhead(tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = [
        b"a",
        b"\xc3\xa9",
        b"\xe6\x97\xa5",
        b"\xf0\x9f\x98\x80",
        b"\n",
        b"\r",
        b"\x1b[31m",
        b" ",
    ]
    for _ in range(40):
        limit = rng.choice([0, 10, 100, 1_000, 5_000])
        chunks: list[tuple[Stream, bytes]] = []
        for _ in range(rng.randint(1, 30)):
            stream: Stream = rng.choice(["stdout", "stderr"])
            chunks.append((stream, b"".join(rng.choices(alphabet, k=rng.randint(1, 3_000)))))
        cap = capture(chunks, tmp_path / "o.txt", limit_chars=limit)
        view = cap.render()
        overhead = 2 * (len("[... 9,999,999 lines (99,999,999 bytes) omitted; full output:  ...]"))
        overhead += 2 * len(str(tmp_path / "o.txt")) + len("\n[stderr]\n") + 2
        assert len(view) <= limit + overhead
        assert "\ufffd" not in view  # no character was split
        assert "\x1b" not in view and "\r" not in view
        for piece in view.split("\n[stderr]\n"):
            if "omitted" in piece:
                nbytes = marker_counts(piece)[1]
                assert 0 < nbytes <= cap.total_bytes


# -- large output: the tail buffer dropped the middle -----------------------------------------


@pytest.mark.parametrize("chunk", [100, 65536])
def test_counts_stay_exact_after_the_middle_is_dropped(tmp_path: Path, chunk: int) -> None:
    data = numbered(200_000)  # 2.4 MB, far beyond what is held in memory
    cap = capture(pieces(data, chunk), tmp_path / "out.txt", limit_chars=2_000)
    head, tail = check_cut(data, cap.render())
    assert head.startswith("line 000000\n") and tail.endswith("line 199999")
    assert (tmp_path / "out.txt").read_bytes() == data


def test_one_huge_line_is_cut_inside_it(tmp_path: Path) -> None:
    data = b"".join(b"%07d," % i for i in range(300_000)) + b"\n"
    view = capture(pieces(data, 65536), None, limit_chars=1_000).render()
    m = MARKER.search(view)
    assert m is not None
    head, tail = view[: m.start()], view[m.end() + 1 :]
    assert head.endswith("\n")  # the marker is on a line of its own
    head = head[:-1]
    assert data.startswith(head.encode()) and data.rstrip(b"\n").endswith(tail.encode())
    assert len(head) + len(tail) <= 1_000
    assert len(head) + len(tail) > 990
    omitted = len(data) - len(head) - len(tail) - 1  # the final line break is shown (as nothing)
    assert marker_counts(view) == (0, omitted)
    assert f"[... {omitted:,} bytes omitted ...]" in view


def test_multibyte_characters_are_never_split_at_the_cut() -> None:
    text = "日本語のテキスト" * 20_000  # one 480 KB line of 3-byte characters
    data = text.encode()
    for chunk in (1_000, 65_536, 7):
        view = capture(pieces(data[:199_998], chunk), limit_chars=500).render()
        assert "\ufffd" not in view
        m = MARKER.search(view)
        assert m is not None
        head, tail = view[: m.start()].rstrip("\n"), view[m.end() + 1 :]
        assert text.startswith(head) and data[:199_998].decode().endswith(tail)
        assert 490 <= len(head) + len(tail) <= 500  # characters, not bytes
        assert marker_counts(view) == (0, 199_998 - len(head.encode()) - len(tail.encode()))


def test_multibyte_characters_split_across_chunks_are_whole() -> None:
    data = "naïve café — 日本 😀\n".encode() * 3
    cap = capture(pieces(data, 1))
    assert cap.render() == ("naïve café — 日本 😀\n" * 3).rstrip("\n")
    invalid = capture([("stdout", b"ok \xff\xfe end")]).render()
    assert invalid == "ok \ufffd\ufffd end"  # undecodable bytes are replaced, not fatal


# -- terminal text ----------------------------------------------------------------------------


def test_crlf_is_normalised() -> None:
    assert (
        capture([("stdout", b"a\r\nb\r\n"), ("stderr", b"e\r\n")]).render() == "a\nb\n[stderr]\ne"
    )


def test_colour_and_cursor_escapes_are_stripped() -> None:
    data = (
        b"\x1b[1;31mFAILED\x1b[0m test_x\n"
        b"\x1b]8;;https://example.invalid\x1b\\link\x1b]8;;\x1b\\ done\n"
        b"\x1b]0;window title\x07\x1b[2K\x1b[1Gplain\x1b(B\x07\n"
        b"cut off \x1b[3"
    )
    assert capture([("stdout", data)]).render() == "FAILED test_x\nlink done\nplain\ncut off "


def test_carriage_return_progress_keeps_the_last_state() -> None:
    bar = b"".join(b"\rDownloading %3d%%" % p for p in range(0, 101, 5))
    data = b"start\n" + bar + b"\r\ndone\n" + b"50%\r100%\r\n"
    chunks = pieces(data, 3)
    assert capture(chunks).render() == "start\nDownloading 100%\ndone\n100%"


def test_a_long_progress_bar_line_collapses_even_when_cut(tmp_path: Path) -> None:
    bar = b"".join(b"\r[%-50s] %7d" % (b"#" * (i % 50), i) for i in range(200_000))
    cap = capture(pieces(bar + b"\nfinished\n", 65536), tmp_path / "o.txt", limit_chars=1_000)
    view = cap.render()
    assert view.endswith("]  199999\nfinished")
    assert re.fullmatch(r"\[#* *\] +\d+", view.split("\n")[0])  # a complete earlier state
    assert "\r" not in view
    assert marker_counts(view)[1] > 0


# -- binary -----------------------------------------------------------------------------------


def test_binary_output_is_not_shown(tmp_path: Path) -> None:
    data = Path(sys.executable).resolve().read_bytes()[:300_000]
    spill = tmp_path / "out.bin"
    cap = capture(pieces(data, 65536), spill)
    assert cap.render() == f"[binary output, {len(data):,} bytes; full output: {spill}]"
    assert spill.read_bytes() == data
    assert cap.stats()["stdout"]["binary"] and cap.stats()["truncated"]


def test_small_binary_output_is_saved_to_the_file(tmp_path: Path) -> None:
    spill = tmp_path / "out.bin"
    cap = capture([("stdout", b"PK\x03\x04\x00\x00"), ("stderr", b"warning\n")], spill)
    assert cap.render() == f"[binary output, 6 bytes; full output: {spill}]\n[stderr]\nwarning"
    assert spill.read_bytes() == b"PK\x03\x04\x00\x00warning\n"
    assert cap.recent() == ["warning"]  # the binary stream adds no lines


def test_nul_bytes_after_the_start_are_dropped_from_text() -> None:
    assert capture([("stdout", b"a" * 9000), ("stdout", b"b\x00c\n")]).render() == "a" * 9000 + "bc"


# -- the spill file -----------------------------------------------------------------------------


def test_spill_file_holds_both_streams_in_arrival_order(tmp_path: Path) -> None:
    rng = random.Random(1)
    chunks: list[tuple[Stream, bytes]] = []
    for i in range(600):
        stream: Stream = rng.choice(["stdout", "stderr"])
        size = rng.choice([1, 2, 100, 5_000, 70_000])
        chunks.append((stream, bytes([i % 251 + 1]) * (size - 1) + b"\n"))
    spill = tmp_path / "out.txt"
    cap = capture(chunks, spill, limit_chars=1_000)
    expected = b"".join(data for _, data in chunks)
    assert spill.read_bytes() == expected
    assert cap.stats()["file_bytes"] == len(expected) == cap.total_bytes
    assert cap.stats()["spill_path"] == str(spill)
    assert oct(spill.stat().st_mode & 0o777) == "0o600"


def test_spill_file_opens_only_when_needed_and_keeps_what_came_before(tmp_path: Path) -> None:
    spill = tmp_path / "sub" / "out.txt"
    cap = OutputCapture(spill, limit_chars=100)
    cap.feed("stderr", b"e" * 50)
    cap.feed("stdout", b"o" * 50)
    assert not spill.exists()
    cap.feed("stderr", b"!")
    assert spill.read_bytes() == b"e" * 50 + b"o" * 50 + b"!"  # written as it arrives
    cap.feed("stdout", b"more")
    cap.close()
    assert spill.read_bytes() == b"e" * 50 + b"o" * 50 + b"!" + b"more"


def test_spill_file_is_removed_when_the_view_shows_everything(tmp_path: Path) -> None:
    # 2,000 bytes of colour codes around 40 characters of text: over the limit in bytes only.
    data = b"".join(b"\x1b[38;5;%dm%c\x1b[0m" % (i, 65 + i % 26) for i in range(40))
    data = data * 3 + b"\x1b[0m" * 300
    spill = tmp_path / "out.txt"
    cap = OutputCapture(spill, limit_chars=200)
    cap.feed("stdout", data)
    assert spill.exists()
    cap.close()
    assert not spill.exists()
    assert len(cap.render()) == 120 and not cap.stats()["truncated"]
    assert cap.stats()["spill_path"] is None


def test_max_file_bytes_stops_the_file_and_says_so(tmp_path: Path) -> None:
    data = numbered(10_000)
    spill = tmp_path / "out.txt"
    cap = capture(pieces(data, 4096), spill, limit_chars=500, max_file_bytes=50_000)
    assert spill.read_bytes() == data[:50_000]
    assert cap.stats()["file_capped"] and cap.stats()["file_bytes"] == 50_000
    assert f"; first 50,000 bytes of output in: {spill} ...]" in cap.render()
    check_cut(data, cap.render())


def test_unwritable_spill_folder_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    spill = blocker / "out.txt"
    data = numbered(1_000)
    cap = capture(pieces(data, 1000), spill, limit_chars=300)
    view = cap.render()
    assert cap.stats()["file_error"] in ("Not a directory", "File exists")
    assert cap.stats()["spill_path"] is None and cap.stats()["file_bytes"] == 0
    assert f"; output not saved ({cap.stats()['file_error']}: {spill}) ...]" in view
    check_cut(data, view)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_reported_not_raised() -> None:
    data = numbered(1_000)
    cap = capture(pieces(data, 1000), Path("/dev/full"), limit_chars=300)
    assert cap.stats()["file_error"] == "No space left on device"
    assert "; output not saved (No space left on device: /dev/full) ...]" in cap.render()
    assert Path("/dev/full").exists()


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="needs O_NOFOLLOW")
def test_a_symlink_at_the_spill_path_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "out.txt").symlink_to(target)
    cap = capture(pieces(numbered(1_000), 1000), tmp_path / "out.txt", limit_chars=300)
    assert target.read_text() == "keep me"
    assert cap.stats()["file_error"] is not None


def test_close_is_idempotent_and_late_chunks_are_ignored(tmp_path: Path) -> None:
    spill = tmp_path / "out.txt"
    with OutputCapture(spill, limit_chars=10) as cap:
        cap.feed("stdout", b"0123456789abc\n")
    cap.close()
    cap.feed("stdout", b"late\n")
    assert spill.read_bytes() == b"0123456789abc\n"
    assert cap.total_bytes == 14


def test_negative_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        OutputCapture(None, limit_chars=-1)


# -- markers ----------------------------------------------------------------------------------


def test_marker_wording(tmp_path: Path) -> None:
    data = numbered(3_000)

    def view(spill: Path | None, **options: int) -> str:
        text = capture(pieces(data, 8192), spill, limit_chars=60, **options).render()
        return text.replace(str(tmp_path), "TMP")

    assert view(None) == snapshot("""\
line 000000
line 000001
[... 2,995 lines (35,940 bytes) omitted ...]
line 002997
line 002998
line 002999\
""")
    assert view(tmp_path / "o.txt") == snapshot("""\
line 000000
line 000001
[... 2,995 lines (35,940 bytes) omitted; full output: TMP/o.txt ...]
line 002997
line 002998
line 002999\
""")
    assert view(tmp_path / "c.txt", max_file_bytes=1_000) == snapshot("""\
line 000000
line 000001
[... 2,995 lines (35,940 bytes) omitted; first 1,000 bytes of output in: TMP/c.txt ...]
line 002997
line 002998
line 002999\
""")
    one = capture([("stderr", b"x" * 100)], None, limit_chars=10).render()
    assert one == snapshot("""\
[stderr]
xx
[... 90 bytes omitted ...]
xxxxxxxx\
""")
    single = capture([("stdout", b"a\n" + b"b" * 20 + b"\nc\n")], None, limit_chars=8).render()
    assert single == snapshot("""\
a
[... 1 line (21 bytes) omitted ...]
c\
""")


# -- recent lines -------------------------------------------------------------------------------


def test_recent_lines_follow_arrival_across_streams() -> None:
    cap = OutputCapture(None, recent_lines=3)
    assert cap.recent() == []
    cap.feed("stdout", b"one\ntwo\n")
    assert cap.recent() == ["one", "two"]
    cap.feed("stderr", b"warn: a\nwarn: b")
    assert cap.recent() == ["two", "warn: a", "warn: b"]  # the last is still being written
    cap.feed("stdout", b"thr")
    cap.feed("stderr", b" (cont.)\n")
    assert cap.recent() == ["warn: a", "thr", "warn: b (cont.)"]
    cap.feed("stdout", b"ee\n\n\n")
    assert cap.recent() == ["warn: a", "warn: b (cont.)", "three"]  # blank lines are skipped


def test_recent_lines_are_clean_and_short() -> None:
    cap = OutputCapture(None, recent_lines=2)
    cap.feed("stdout", b"\x1b[32mok\x1b[0m\r\n")
    for p in range(0, 101, 10):
        cap.feed("stdout", b"\rprogress %d%%" % p)
    assert cap.recent() == ["ok", "progress 100%"]
    cap.feed("stdout", b"\n" + b"z" * 100_000 + "é".encode()[:1])
    assert cap.recent() == ["progress 100%", "z" * 200]
    many = OutputCapture(None, recent_lines=5)
    many.feed("stdout", numbered(10_000))
    assert many.recent() == [f"line {i:06d}" for i in range(9_995, 10_000)]


# -- memory -------------------------------------------------------------------------------------


@pytest.mark.parametrize("spill", [True, False])
def test_memory_stays_bounded_for_200_mb(tmp_path: Path, spill: bool) -> None:
    line = b"x" * 99 + b"\n"
    chunk = line * 655  # 65,500 bytes
    count = 3_200  # 209.6 MB
    path = tmp_path / "out.txt" if spill else None
    tracemalloc.start()
    try:
        cap = OutputCapture(path, max_file_bytes=8 << 20)
        for i in range(count):
            cap.feed("stdout" if i % 5 else "stderr", chunk)
        cap.close()
        view = cap.render()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, f"peak {peak:,} bytes"
    assert cap.total_bytes == len(chunk) * count
    stats = cap.stats()
    assert stats["stdout"]["lines"] == 655 * (count - count // 5)
    assert stats["stderr"]["lines"] == 655 * (count // 5)
    for part in view.split("\n[stderr]\n"):
        lines, nbytes = marker_counts(part)
        assert nbytes == 100 * lines  # whole 100-byte lines were cut
    if spill:
        assert stats["file_bytes"] == 8 << 20 and stats["file_capped"]
        assert (tmp_path / "out.txt").stat().st_size == 8 << 20
