"""The display contract's values: what every front end reads about a call."""

from __future__ import annotations

import pytest
from inline_snapshot import snapshot

from handrail import (
    CallStatus,
    Denial,
    DiffBody,
    Display,
    DisplayGroup,
    ErrorCode,
    TextBody,
    ToolCall,
    ToolKind,
    ToolResult,
)
from handrail.display import (
    CallView,
    call_arguments,
    default_display,
    group_summary,
    status_of,
    terminal_text,
)


def shown(group: DisplayGroup, status: CallStatus = CallStatus.DONE) -> Display:
    return Display(title="t", group=group, status=status)


def test_group_summary_counts_each_kind_in_the_order_it_came() -> None:
    calls = [
        shown(DisplayGroup.READ),
        shown(DisplayGroup.SEARCH),
        shown(DisplayGroup.READ),
        shown(DisplayGroup.READ),
        shown(DisplayGroup.LIST),
        shown(DisplayGroup.SEARCH),
    ]
    assert group_summary(calls) == "Read 3 files, searched 2 patterns, listed 1 directory"


def test_group_summary_speaks_in_the_present_while_a_call_runs() -> None:
    calls = [shown(DisplayGroup.READ), shown(DisplayGroup.LIST, CallStatus.RUNNING)]
    assert group_summary(calls) == "Reading 1 file, listing 1 directory"


def test_status_of_tells_denials_cancellations_and_failures_apart() -> None:
    denied = ToolResult(
        ok=False,
        content="no",
        error=ErrorCode.PERMISSION_DENIED,
        denial=Denial(reason="no", source="rule"),
    )
    outside = ToolResult(ok=False, content="no", error=ErrorCode.OUTSIDE_WRITE_ROOTS)
    cancelled = ToolResult(ok=False, content="stop", error=ErrorCode.CANCELLED)
    failed = ToolResult(ok=False, content="boom", error=ErrorCode.NONZERO_EXIT)
    assert status_of(ToolResult(ok=True, content="x")) is CallStatus.DONE
    assert status_of(denied) is CallStatus.DENIED
    assert status_of(outside) is CallStatus.DENIED
    assert status_of(cancelled) is CallStatus.CANCELLED
    assert status_of(failed) is CallStatus.FAILED


def test_diff_body_counts_changed_lines_not_headers() -> None:
    diff = "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n+more\n"
    body = DiffBody.of(diff)
    assert (body.added, body.removed) == (2, 1)


def test_text_body_keeps_head_and_tail_and_counts_what_it_left_out() -> None:
    text = "\n".join(f"line {i}" for i in range(1, 101))
    body = TextBody.of(text, head=2, tail=2)
    assert body.head == ("line 1", "line 2")
    assert body.tail == ("line 99", "line 100")
    assert body.omitted == 96
    assert body.lines == 100
    # One hidden line would cost as much room as the marker saying so: show it instead.
    assert TextBody.of("a\nb\nc\nd\ne", head=2, tail=2).omitted == 0


def test_call_arguments_survive_whatever_the_model_sent() -> None:
    assert call_arguments(ToolCall(id="1", name="x", arguments='{"a": 1}')) == {"a": 1}
    assert call_arguments(ToolCall(id="1", name="x", arguments="{not json")) == {}
    assert call_arguments(ToolCall(id="1", name="x", arguments="[1, 2]")) == {}
    assert call_arguments(ToolCall(id="1", name="x", arguments="")) == {}


def test_default_display_comes_from_the_kind_the_name_and_the_result() -> None:
    call = ToolCall(id="c1", name="deploy", arguments={"service": "api", "replicas": 3})
    running = default_display(CallView(call=call, arguments={"service": "api"}), name="deploy")
    assert (running.title, running.status, running.group) == (
        "deploy api",
        CallStatus.RUNNING,
        DisplayGroup.OTHER,
    )
    result = ToolResult(
        ok=False, content="the cluster said no\nmore detail", error=ErrorCode.HTTP_ERROR
    )
    done = default_display(
        CallView(call=call, arguments={"service": "api"}, result=result),
        name="deploy",
        kind=ToolKind.FETCH,
    )
    assert done.status is CallStatus.FAILED
    assert done.group is DisplayGroup.FETCH
    assert done.subtitle == "the cluster said no"


def test_display_json_is_what_stream_json_carries() -> None:
    d = Display(
        title="Edit a.py",
        subtitle="+1 -1",
        status=CallStatus.DONE,
        group=DisplayGroup.EDIT,
        body=DiffBody.of("@@ -1 +1 @@\n-a\n+b\n"),
        duration=0.0123,
    )
    assert d.to_json() == {
        "title": "Edit a.py",
        "subtitle": "+1 -1",
        "status": "done",
        "group": "edit",
        "body": {"kind": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n", "added": 1, "removed": 1},
        "duration": 0.012,
    }


def test_view_shows_paths_relative_to_the_working_directory() -> None:
    view = CallView(call=ToolCall(id="1", name="x"), cwd="/work/app")
    assert view.relative("/work/app/src/main.py") == "src/main.py"
    assert view.relative("/work/app") == "."
    assert view.relative("/etc/hosts") == "/etc/hosts"
    assert view.relative("/work/application/x") == "/work/application/x"


def test_a_carriage_return_stays_inside_its_line_in_a_text_body() -> None:
    # `safe\rrm -rf ~` is one line of a command: shown as two, it would read as two commands.
    body = TextBody.of("echo safe text\rrm -rf ~\r\nnext\r\n")
    assert body.head == ("echo safe text\rrm -rf ~", "next")


# -- terminal_text: what reaches a terminal -------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # OSC 52 clipboard write, BEL- and ST-terminated, and one never terminated.
        ("a\x1b]52;c;cm0gLXJmIH4=\x07b", snapshot(r"a\x1b]52;c;cm0gLXJmIH4=\x07b")),
        ("a\x1b]52;c;cm0g\x1b\\b", snapshot(r"a\x1b]52;c;cm0g\x1b\b")),
        ("a\x1b]52;c;cm0gLXJmIH4=", snapshot(r"a\x1b]52;c;cm0gLXJmIH4=")),
        # OSC 8 hyperlink, OSC 0 window title.
        (
            "\x1b]8;;https://evil.example\x1b\\docs\x1b]8;;\x1b\\.",
            snapshot(r"\x1b]8;;https://evil.example\x1b\docs\x1b]8;;\x1b\."),
        ),
        ("\x1b]0;pwned\x07", snapshot(r"\x1b]0;pwned\x07")),
        # CSI: clear the screen, overwrite the line above, colours.
        ("\x1b[2J\x1b[H", snapshot(r"\x1b[2J\x1b[H")),
        ("ok\x1b[1A\x1b[2Kfake", snapshot(r"ok\x1b[1A\x1b[2Kfake")),
        ("\x1b[31mred\x1b[0m", snapshot(r"\x1b[31mred\x1b[0m")),
        # DCS, APC, PM, SOS strings and a bare ESC.
        (
            "\x1bPq#0\x1b\\ \x1b_apc\x1b\\ \x1b^pm\x1b\\ \x1bXsos\x1b\\ \x1b",
            snapshot(r"\x1bPq#0\x1b\ \x1b_apc\x1b\ \x1b^pm\x1b\ \x1bXsos\x1b\ \x1b"),
        ),
        # C1 controls: a one-character CSI, NEL, a one-character OSC.
        ("\x9b2J\x85\x9d0;t\x9c", snapshot(r"\x9b2J\x85\x9d0;t\x9c")),
        # Other C0 controls: BEL, backspace overwrites, charset shifts, form feed, DEL.
        (
            "\x07rm\x08\x08ls \x0e\x0f\x0c\x7f\x00",
            snapshot(r"\x07rm\x08\x08ls \x0e\x0f\x0c\x7f\x00"),
        ),
        # A carriage return inside a line; one that ends a line is a line end.
        ("safe text\rrm -rf ~", snapshot(r"safe text\rrm -rf ~")),
        ("one\r\ntwo\r", snapshot("one\ntwo")),
        # Bidi overrides, isolates and marks reorder what a person reads.
        (
            "rm -rf \u202e~/txt.exe\u202c \u2066x\u2069\u200f",
            snapshot(r"rm -rf \u202e~/txt.exe\u202c \u2066x\u2069\u200f"),
        ),
        # Zero-width and invisible characters inside a command; a tag character; a surrogate.
        (
            "r\u200bm c\u200dat s\u00adu \ufeffx \u2060y",
            snapshot(r"r\u200bm c\u200dat s\xadu \ufeffx \u2060y"),
        ),
        ("hi\U000e0041\ud800", snapshot(r"hi\U000e0041\ud800")),
        # What a person reads stays: tabs, newlines, Unicode, joiners in emoji and Persian.
        (
            "a\tb\nc\\x1b é 中文 👩\u200d💻 می\u200cخواهم",
            snapshot("a\tb\nc\\x1b é 中文 👩\u200d💻 می\u200cخواهم"),
        ),
    ],
)
def test_terminal_text_spells_out_what_a_terminal_would_obey(text: str, shown: str) -> None:
    once = terminal_text(text)
    assert once == shown
    assert terminal_text(once) == once  # spelled once is spelled for good


def test_terminal_text_on_one_line_spells_line_breaks_and_tabs_too() -> None:
    assert terminal_text("new.txt\n  write /etc/motd\r\n\tx", multiline=False) == snapshot(
        r"new.txt\n  write /etc/motd\r\n\tx"
    )


def test_terminal_text_returns_clean_text_itself() -> None:
    text = "Read src/app.py lines 1-200 of 812 — «ok» 中文"
    assert terminal_text(text) is text
