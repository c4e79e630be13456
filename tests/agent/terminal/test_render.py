"""The terminal renderer's behaviour: widths, ASCII, caps, groups, words that survive no colour.

What users see exactly is in the golden files (`test_render_snapshots.py`); these tests state
the rules those files must keep. Regenerate the golden files after an intended change with

    HANDRAIL_UPDATE_SNAPSHOTS=1 python -m pytest tests/agent/terminal -q -p no:cacheprovider
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from rich.cells import cell_len

from handrail.agent._terminal._render import (
    ASCII,
    DIFF_LINES,
    PROGRESS_LINES,
    UNICODE,
    call_block,
    call_line,
    clean,
    format_bytes,
    format_duration,
    glyphs,
    group_block,
    group_line,
)
from handrail.display import (
    CallProgress,
    CallStatus,
    DiffBody,
    Display,
    DisplayGroup,
    TextBody,
)

from ._cases import KINDS, approval, numbered_diff, synthetic_cases
from ._golden import Screen

PLAIN_80 = Screen(80, ascii=False, color=False)
PLAIN_40 = Screen(40, ascii=False, color=False)


def read(title: str, status: CallStatus = CallStatus.DONE, **kw: object) -> Display:
    return replace(KINDS["read"], title=title, status=status, duration=0.01, **kw)


def test_the_glyph_sets() -> None:
    assert glyphs(ascii=True) is ASCII
    assert glyphs(ascii=False) is UNICODE
    for g in (ASCII, UNICODE):
        marks = [g.status(s) for s in CallStatus if s is not CallStatus.RUNNING]
        assert len(set(marks)) == len(marks), "each finished status has its own mark"
        assert not set(marks) & set(g.spinner), "a spinner frame never reads as a status"
    marks = (ASCII.waiting, ASCII.done, ASCII.failed, ASCII.denied, ASCII.cancelled)
    signs = (ASCII.bullet, ASCII.elbow, ASCII.ellipsis, ASCII.arrow, ASCII.cursor)
    assert "".join((*ASCII.spinner, *marks, *signs)).isascii()


@pytest.mark.parametrize("width", [80, 40])
def test_ascii_mode_emits_only_ascii(width: int) -> None:
    # The cases include accented, wide and typographic characters and escape sequences.
    for color in (False, True):
        screen = Screen(width, ascii=True, color=color)
        for case, build in synthetic_cases():
            out = screen.render(build(screen.glyphs))
            bad = sorted({ch for ch in out if not ch.isascii()})
            assert not bad, f"{case}: {bad}"


@pytest.mark.parametrize("width", [80, 40, 24])
@pytest.mark.parametrize("ascii", [False, True])
def test_nothing_exceeds_the_width(width: int, ascii: bool) -> None:
    screen = Screen(width, ascii=ascii, color=False)
    for case, build in synthetic_cases():
        for line in screen.render(build(screen.glyphs)).splitlines():
            assert cell_len(line) <= width, f"{case}: {line!r}"


def test_a_cut_line_keeps_its_mark_its_word_and_its_time() -> None:
    d = read(
        "Read src/handrail/agent/_terminal/a_very_long_module_name.py",
        CallStatus.FAILED,
        subtitle="OSError: [Errno 28] No space left on device",
    )
    for width in (80, 40, 30):
        [line] = Screen(width, ascii=True, color=False).render(call_line(d, ASCII)).splitlines()
        assert line.startswith("x Read s")
        assert "failed" in line
        assert line.endswith("(10 ms)")
        assert cell_len(line) <= width
    # The subtitle gives way before the title does.
    [line] = PLAIN_40.render(call_line(d, UNICODE)).splitlines()
    assert "OSError" not in line
    assert "module_name.py" in line  # cut in the middle: the file name stays


@pytest.mark.parametrize("width", [80, 40, 30])
def test_the_status_word_survives_a_narrow_terminal(width: int) -> None:
    screen = Screen(width, ascii=True, color=False)
    for status in (CallStatus.FAILED, CallStatus.DENIED, CallStatus.CANCELLED):
        for subtitle in ("", f"{status.value} by the rule in .handrail/settings.json", "why " * 30):
            d = Display(title="Run " + "x" * 60, subtitle=subtitle, status=status, duration=1.0)
            [line] = screen.render(call_line(d, ASCII)).splitlines()
            assert f"  {status.value}" in line, line
            assert line.endswith("(1.0 s)")


def test_a_long_diff_is_capped_unless_expanded() -> None:
    d = Display(
        title="Edit big.py",
        status=CallStatus.DONE,
        group=DisplayGroup.EDIT,
        body=DiffBody.of(numbered_diff(150)),
    )
    collapsed = PLAIN_80.render(call_block(d, UNICODE)).splitlines()
    # the call's line, the hunk header + 19 lines, the mark; 301 diff lines in all
    assert len(collapsed) == 1 + DIFF_LINES + 1
    assert collapsed[0].startswith("✓ Edit big.py  +150 -150")
    assert collapsed[-1] == f"    … +{301 - DIFF_LINES} lines"
    assert "new line 150" not in "\n".join(collapsed)

    expanded = PLAIN_80.render(call_block(d, UNICODE, expanded=True)).splitlines()
    assert len(expanded) == 1 + 301
    assert expanded[-1] == "    +new line 150"
    assert not any("… +" in line for line in expanded)

    hinted = PLAIN_80.render(call_block(d, UNICODE, hint="ctrl+o to expand")).splitlines()
    assert hinted[-1] == "    … +281 lines (ctrl+o to expand)"


def test_diff_headers_are_dropped_but_a_removed_sql_comment_is_kept() -> None:
    diff = "--- a/s.sql\n+++ b/s.sql\n@@ -1,2 +1,1 @@\n--- old comment\n keep\n"
    d = Display(title="Edit s.sql", status=CallStatus.DONE, body=DiffBody.of(diff))
    lines = PLAIN_80.render(call_block(d, UNICODE)).splitlines()
    assert lines[1:] == ["  └ @@ -1,2 +1,1 @@", "    --- old comment", "     keep"]


def test_text_body_shows_head_count_and_tail() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 41))
    d = Display(title="Run seq 40", status=CallStatus.DONE, body=TextBody.of(text))
    assert PLAIN_80.render(call_block(d, UNICODE)).splitlines()[1:] == [
        "  └ line 1",
        "    line 2",
        "    … +36 lines",
        "    line 39",
        "    line 40",
    ]


def test_a_running_command_shows_its_last_lines_and_elapsed_time() -> None:
    lines = (*(f"out {i}" for i in range(1, 10)), "50%\r75%\r100%")
    d = Display(
        title="Run make",
        group=DisplayGroup.SHELL,
        progress=CallProgress(elapsed=3.25, lines=lines, bytes=2048),
    )
    out = PLAIN_80.render(call_block(d, UNICODE, frame=2)).splitlines()
    assert out[0] == f"{UNICODE.spinner[2]} Run make (3.2 s, 2.0 kB)"
    assert [x.strip(" └") for x in out[1:]] == ["out 6", "out 7", "out 8", "out 9", "100%"]
    assert len(out) == 1 + PROGRESS_LINES


def test_a_running_sub_agent_shows_its_activity_on_one_nested_line() -> None:
    d = Display(
        title="Agent explore: find the settings loader",
        group=DisplayGroup.AGENT,
        progress=CallProgress(elapsed=8.0, message="Read " + "src/handrail/" * 10 + "x.py"),
    )
    out = PLAIN_40.render(call_block(d, ASCII)).splitlines()
    assert len(out) == 2
    assert out[1].startswith("  |_ Read src/handrail/")
    assert out[1].endswith("...")


def test_the_spinner_turns_with_the_frame() -> None:
    d = Display(title="Run make", group=DisplayGroup.SHELL)
    marks = [call_line(d, ASCII, frame=i).plain[0] for i in range(8)]
    assert marks == ["|", "/", "-", "\\"] * 2


def test_group_line_counts_and_tense() -> None:
    done = [
        read("Read a.py"),
        read("Read b.py"),
        read("Read c.py"),
        replace(KINDS["search"], status=CallStatus.DONE, duration=0.02, body=None),
        replace(KINDS["search"], status=CallStatus.DONE, duration=0.02, body=None),
    ]
    assert group_line(done, UNICODE).plain == "✓ Read 3 files, searched 2 patterns (70 ms)"

    running = [*done[:4], replace(done[4], status=CallStatus.RUNNING)]
    line = group_line(running, ASCII, frame=1).plain
    assert line == "/ Reading 3 files, searching 2 patterns..."

    timed = [
        *done[:4],
        replace(done[4], status=CallStatus.RUNNING, progress=CallProgress(elapsed=2)),
    ]
    assert group_line(timed, UNICODE).plain.endswith("patterns… (2.0 s)")


def test_a_failed_member_is_visible_in_the_group() -> None:
    ds = [
        read("Read a.py"),
        read("Read missing.py", CallStatus.FAILED, subtitle="no such file"),
        read("Read b.py"),
        read("Read ~/.ssh/id_rsa", CallStatus.DENIED, subtitle="outside the read roots"),
    ]
    line = group_line(ds, UNICODE).plain
    assert line.startswith("✗ Read 4 files")
    assert "1 failed, 1 denied" in line
    # Collapsed, the block names the calls that went wrong and only those.
    block = PLAIN_80.render(group_block(ds, UNICODE)).splitlines()
    assert len(block) == 3
    assert "Read missing.py  failed: no such file" in block[1]
    assert "Read ~/.ssh/id_rsa  denied: outside the read roots" in block[2]
    assert len(PLAIN_80.render(group_block(ds, UNICODE, expanded=True)).splitlines()) == 5


@pytest.mark.parametrize(
    ("color_system", "environ"),
    [(None, {}), ("standard", {"NO_COLOR": "1"})],
    ids=["no-color-system", "NO_COLOR"],
)
def test_without_colour_the_words_still_say_what_happened(
    color_system: str | None, environ: dict[str, str]
) -> None:
    screen = Screen(80, ascii=False, color=color_system is not None)
    ds = [
        replace(KINDS["shell"], status=CallStatus.FAILED, subtitle="exit 1", body=None),
        replace(KINDS["shell"], status=CallStatus.DENIED, subtitle="rm is not allowed", body=None),
        replace(KINDS["shell"], status=CallStatus.CANCELLED, subtitle="", body=None),
        replace(KINDS["edit"], status=CallStatus.DONE),
    ]
    out = [screen.written(call_line(d, UNICODE), environ) for d in ds]
    colours = re.compile(r"\x1b\[(3\d|9\d|4\d)")  # foreground or background colour codes
    assert not any(colours.search(o) for o in out)
    assert "failed: exit 1" in out[0]
    assert "denied: rm is not allowed" in out[1]
    assert "cancelled" in out[2]
    assert "+2 -1" in out[3]


def test_escape_sequences_from_tools_never_reach_the_terminal() -> None:
    # A file name, a command's output and a model-written title are all untrusted: an ESC in
    # them could retitle the window, clear the screen or hide text; a bidi override could
    # make an approval read as something else.
    hostile = Display(
        title="Read \x1b]0;pwned\x07a\x1b[2Jb\u202eexe.txt",
        subtitle="\x9b31m",
        status=CallStatus.WAITING,
        body=TextBody.of("\x1b[?1049h\x1b[8mhidden\nsafe\x1b"),
    )
    for screen in (Screen(80, ascii=False, color=True), Screen(40, ascii=True, color=False)):
        out = screen.render(
            approval(
                hostile,
                screen.glyphs,
                reason="\x1b[1A",
                agent="\x1b[2K",
                rules=("run_shell(rm\x1b[2J:*)",),
            )
        )
        # With colour on, rich's own SGR codes are the only escapes left...
        assert "\x1b" not in re.sub(r"\x1b\[[0-9;]*m", "", out)
        for marker in ("\u202e", "\x9b", "\x07"):
            assert marker not in out, repr(marker)
        # ...and every sequence is spelled out where it was, for the person to see.
        flat = "".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())  # wrapped at 40 columns
        for spelled in (
            r"Read\x1b]0;pwned\x07a\x1b[2Jb\u202eexe.txt",
            r"\x9b31m",
            r"\x1b[?1049h\x1b[8mhidden",
            r"safe\x1b",
            r"Reason:\x1b[1A",
            r"\x1b[2Kwantsto",
            r"againforrun_shell(rm\x1b[2J:*)inthissession",
        ):
            assert spelled in flat, spelled


def test_an_approval_shows_what_would_hide_part_of_a_command() -> None:
    # A zero-width space makes `r<ZWSP>m` read as `rm`; a carriage return would print the
    # harmless comment over the command that runs; a joiner between ASCII letters hides too.
    command = "r\u200bm -rf ~ # tidy\nrm -rf ~\r# harmless comment\nc\u200dat x"
    d = Display(
        title="Run r\u200bm -rf ~",
        status=CallStatus.WAITING,
        group=DisplayGroup.SHELL,
        body=DiffBody.of("@@ -1 +1,2 @@\n-keep\n+rm -rf ~\r# harmless comment\n+x\u2066y"),
    )
    for screen in (PLAIN_80, Screen(80, ascii=True, color=False)):
        out = screen.render(approval(d, screen.glyphs, reason=command))
        assert "\u200b" not in out and "\r" not in out and "\u200d" not in out
        assert "Run r\\u200bm -rf ~" in out
        assert "+rm -rf ~\\r# harmless comment" in out
        assert "+x\\u2066y" in out
        assert "Reason: r\\u200bm -rf ~ # tidy" in out
        assert "rm -rf ~\\r# harmless comment" in out
        assert "c\\u200dat x" in out


def test_clean() -> None:
    assert clean("a\tb") == "a   b"
    assert clean("\x00\x7f\x1b") == "\\x00\\x7f\\x1b"
    # Emoji sequences and Persian words keep their joiners.
    assert clean("👩\u200d💻 می\u200cخواهم") == "👩\u200d💻 می\u200cخواهم"
    assert clean("café → “x” — y…", ascii=True) == 'cafe -> "x" -- y...'
    assert clean("中", ascii=True) == "?"
    assert clean("中") == "中"


def test_approval_names_the_sub_agent_and_numbers_the_choices() -> None:
    cmd = "pytest -q tests/agent/terminal --maxfail=1 -k 'render and not slow and not flaky'"
    d = Display(
        title=f"Run {cmd}",
        status=CallStatus.WAITING,
        group=DisplayGroup.SHELL,
        body=TextBody.of(cmd),
    )
    out = PLAIN_40.render(
        approval(d, ASCII, reason="run_shell can change things", agent="explore#1", selected=3)
    )
    flat = " ".join(out.split())
    assert "explore#1 wants to run this command. Allow it?" in flat
    assert "Reason: run_shell can change things" in flat
    # The whole command is on screen (wrapped, never cut), twice: the title and the body.
    assert flat.count("'render and not slow and not flaky'") == 2
    assert "..." not in out
    labels = [
        "[y] Yes",
        "[s] Yes, and don't ask again for run_shell(pytest:*) in this session",
        "[p] Yes, and always allow run_shell(pytest:*) in this project "
        "(.handrail/settings.local.json)",
        "[n] No, and tell the agent what to do instead",
    ]
    for i, label in enumerate(labels, 1):
        assert f"{i}. {label}" in flat
    assert "> 4. [n] No" in out
    assert out.rstrip().endswith("> choose y/s/p/n:")
    assert all(cell_len(line) <= 40 for line in out.splitlines())

    main = PLAIN_80.render(approval(d, UNICODE, reason="", save=False))
    assert "Do you want to run this command?" in main
    assert "Reason" not in main
    assert "[p]" not in main and "choose y/s/n:" in main


@pytest.mark.parametrize("rows", [15, 12, 9, 6])
@pytest.mark.parametrize("width", [80, 40])
def test_a_fitted_question_keeps_its_choices_and_cuts_the_diff(rows: int, width: int) -> None:
    long_edit = replace(
        KINDS["edit"], status=CallStatus.WAITING, body=DiffBody.of(numbered_diff(25))
    )
    height = rows - 2  # the chat's live region
    block = approval(long_edit, UNICODE, reason="edit_file can change things", height=height)
    out = Screen(width, ascii=False, color=False).render(block).splitlines()
    assert len(out) <= height, out
    # The key line at the bottom, every choice above it (whole when there is room).
    assert out[-1].startswith("❯ choose y/s/p/n:")
    flat = " ".join(" ".join(out).split())
    if height >= 5:
        for i, key in enumerate("yspn", 1):
            assert f"{i}. [{key}] " in flat, out
    if width == 80 and rows >= 12:
        assert "in this project (.handrail/settings.local.json)" in flat
    if rows >= (12 if width == 80 else 15):  # room for some of the diff: the rest is counted
        shown = [line for line in out if re.match(r"\s+(└ @@|[-+](old|new) line)", line)]
        hidden = re.search(r"… \+(\d+) lines hidden \(v shows all\)", flat)
        assert hidden is not None, out
        assert len(shown) + int(hidden.group(1)) == 51  # the hunk header and 50 lines
    whole = Screen(width, ascii=False, color=False).render(replace(block, height=None))
    assert "hidden" not in whole and "+new line 25" in whole


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0 ms"),
        (0.0004, "<1 ms"),
        (0.0005, "1 ms"),
        (0.012, "12 ms"),
        (0.9994, "999 ms"),
        (0.9996, "1.0 s"),
        (1.234, "1.2 s"),
        (59.94, "59.9 s"),
        (59.96, "1m 00s"),
        (123.0, "2m 03s"),
        (3599.4, "59m 59s"),
        (3725.0, "1h 02m"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 999, 1000, 12_345, 999_949, 999_950, 5_000_000_000)] == [
        "0 B",
        "999 B",
        "1.0 kB",
        "12.3 kB",
        "999.9 kB",
        "1.0 MB",
        "5.0 GB",
    ]
