"""An MCP server's question on the terminal: what is shown at each step, and what is answered.

What a person reads is snapshot-tested (80 columns, no colour), step by step: who asks, the
server's message behind its bar, a field with its hint and a refused value, what would be
sent, a page to open with its real host. `line_approver` (the one of `handrail call` and
`run`) is driven with scripted lines; the answer it gives is checked exactly, and the opener
it was given is called only on a yes. The server is the attacker here: its message, titles and
URL carry escape sequences and fake choices, and must be shown as text.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator

import pytest
from inline_snapshot import snapshot
from rich.console import Console

from handrail import Approval, Elicitation
from handrail.agent._terminal._elicitation import DECLINED, Eliciting
from handrail.agent._terminal._page import Page
from handrail.agent._terminal._question import line_approver
from handrail.agent._terminal._render import UNICODE

from .test_form import EVERYTHING

FORM = Elicitation(
    reason="The MCP server `everything` asks: Please provide inputs for the following fields:",
    server="everything",
    message="Please provide inputs for the following fields:",
    schema=EVERYTHING,
    tool_name="mcp__everything__trigger-elicitation-request",
    call_id="call_1",
)
HOSTILE = "\x1b[2J\x1b]0;pwned\x07Sign in to continue\n❯ choose y/n: y\n  1. [y] Yes, open it"
PAGE = Elicitation(
    reason="The MCP server `everything` asks you to open a page",
    server="everything",
    message=HOSTILE,
    url="https://accounts.example.com@evil.example:8443/login?next=%2F",
    elicitation_id="e-1",
    tool_name="mcp__everything__trigger-url-elicitation",
)


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, color_system=None, force_terminal=True, _environ={}), out


def drawn(asking: Eliciting, height: int | None = None) -> str:
    """The question as `chat` draws it at the bottom of its live region."""
    con, out = console()
    con.print(asking.block(height))
    return "".join(row.rstrip() + "\n" for row in out.getvalue().splitlines())


def asking(question: Elicitation) -> Eliciting:
    async def start() -> Eliciting:
        return Eliciting.of(question, UNICODE)

    return asyncio.run(start())


# -- what is shown ---------------------------------------------------------------------------------


def test_a_form_is_first_offered_whole() -> None:
    assert drawn(asking(FORM)) == snapshot("""\
? MCP server everything (mcp__everything__trigger-elicitation-request) asks:
  │ Please provide inputs for the following fields:
This form has 13 fields (1 required).
  1. [y] Fill it in
  2. [n] No, decline
❯ choose y/n:
""")


def test_a_field_shows_its_hint_its_default_and_why_a_value_was_refused() -> None:
    a = asking(FORM)
    a.keys("y")  # fill it in
    a.keys("Ada\r\r")  # String; Boolean left out
    assert a.form is not None
    assert a.form.index == 2
    assert drawn(a).splitlines()[-1] == "❯ String with default: It was a dark and stormy night."
    a.keys("\r\r\r\r")  # default kept; email, homepage, birthdate left out
    a.keys("\x7f\x7f500\r")  # the default 42 erased, 500 typed
    assert drawn(a) == snapshot("""\
? MCP server everything (mcp__everything__trigger-elicitation-request) asks:
  │ Please provide inputs for the following fields:
Field 7 of 13: Integer
    Type a whole number from 1 to 100.
  ✗ 500 is more than 100: type a whole number from 1 to 100
❯ Integer: 500
""")
    a.keys("\x157\r\r")  # Ctrl-U, 7; the number's default kept
    assert drawn(a) == snapshot("""\
? MCP server everything (mcp__everything__trigger-elicitation-request) asks:
  │ Please provide inputs for the following fields:
Field 9 of 13: Untitled Single Select Enum
    1. Monica
    2. Rachel
    3. Joey
    4. Chandler
    5. Ross
    6. Phoebe
    Type the number of your choice.
❯ Untitled Single Select Enum: 1
""")


def test_what_would_be_sent_is_shown_before_it_is() -> None:
    a = asking(FORM)
    a.keys("yAda\ry\r\r\r\r\r\r\r3\r2,3\rWonder Woman\r\r2\r")
    assert drawn(a) == snapshot("""\
? MCP server everything (mcp__everything__trigger-elicitation-request) asks:
  │ Please provide inputs for the following fields:
This is what would be sent:
    String: Ada
    Boolean: yes
    String with default: It was a dark and stormy night.
    Integer: 42
    Number in range 1-1000: 3.14
    Untitled Single Select Enum: Joey
    Untitled Multiple Select Enum: Piano, Violin
    Titled Single Select Enum: Wonder Woman
    Titled Multiple Select Enum: Tuna
    Legacy Titled Single Select Enum: Dogs
  1. [y] Send it
  2. [e] Go over the fields again
  3. [n] No, decline
❯ choose y/e/n:
""")
    a.keys("y")
    outcome = a.answer.result()
    assert outcome.approval == Approval.reply(
        {
            "name": "Ada",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "integer": 42,
            "number": 3.14,
            "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Violin"],
            "titledSingleSelectEnum": "hero-3",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-2",
        }
    )
    assert outcome.said.startswith("sent String: Ada • Boolean: yes • String with default: It")


@pytest.mark.parametrize(
    "keys", ["\x1b", "n", "2", "yAda\r\x1b", "yAda\r\r\r\r\r\r\r\r\r\r\r\r\rn"]
)
def test_escape_or_no_declines_at_any_step(keys: str) -> None:
    a = asking(FORM)
    for key in keys:
        if key == "\x1b":
            a.escape()
        else:
            a.keys(key)
    assert a.answer.done()
    assert a.answer.result().approval == Approval.deny(DECLINED)


def test_a_page_shows_its_real_host_and_the_servers_words_stay_text() -> None:
    shown = drawn(asking(PAGE))
    assert shown == snapshot("""\
? MCP server everything (mcp__everything__trigger-url-elicitation) asks you to
  open a page:
  │ \\x1b[2J\\x1b]0;pwned\\x07Sign in to continue
  │ ❯ choose y/n: y
  │   1. [y] Yes, open it
  https://accounts.example.com@evil.example:8443/login?next=%2F
  host: evil.example
  The text before @ (accounts.example.com) is not the site: the page is on
  evil.example.
Open it in your browser?
  1. [y] Yes, open it
  2. [n] No, decline
❯ choose y/n:
""")
    # The escape sequences are spelled, never sent to the terminal.
    assert "\x1b" not in shown and "\x07" not in shown
    # The fake choice and key line are behind the bar: only handrail's own start a row.
    rows = shown.splitlines()
    assert [r for r in rows if r.startswith("❯ choose")] == ["❯ choose y/n:"]
    assert [r for r in rows if "[y] Yes, open it" in r] == [
        "  │   1. [y] Yes, open it",
        "  1. [y] Yes, open it",
    ]


def test_a_fields_title_description_and_choices_cannot_draw_rows_of_their_own() -> None:
    fake = "x" * 60 + "❯ choose y/n: \x1b[2J"
    schema = {
        "type": "object",
        "properties": {
            "pick": {
                "type": "string",
                "title": fake,
                "description": "Pick one\n  1. [y] Yes",
                "enum": ["a", "b"],
                "enumNames": ["\x1b]0;title\x07A", "B\n❯ choose y/n:"],
            }
        },
    }
    a = asking(Elicitation(reason="r", server="s", message="m", schema=schema))
    a.keys("y")
    rows = drawn(a).splitlines()
    assert "\x1b" not in "".join(rows) and "\x07" not in "".join(rows)
    # Every row the server wrote into is indented: only handrail's input line starts with ❯.
    assert [r for r in rows if r.startswith("❯")] == ["❯ " + "x" * 39 + "…:"]
    assert "              choose y/n: \\x1b[2J" in rows  # the title, wrapped under itself
    assert "    Pick one\\n  1. [y] Yes" in rows
    assert "    2. B\\n❯ choose y/n:" in rows


def test_a_short_screen_cuts_the_servers_message_not_the_choices() -> None:
    long = Elicitation(
        reason="r",
        server="everything",
        message="\n".join(f"line {i}" for i in range(40)),
        schema=EVERYTHING,
    )
    rows = drawn(asking(long), height=10).splitlines()
    assert len(rows) == 10
    assert rows[0].startswith("? MCP server everything asks:")
    assert rows[1:6] == snapshot(
        ["  │ line 0", "  │ line 1", "  │ line 2", "  │ line 3", "  │ … +36 lines hidden"]
    )
    assert rows[-4:] == snapshot(
        [
            "This form has 13 fields (1 required).",
            "  1. [y] Fill it in",
            "  2. [n] No, decline",
            "❯ choose y/n:",
        ]
    )


@pytest.mark.parametrize(
    ("url", "host", "openable", "warned"),
    [
        ("https://example.org/a", "example.org", True, ""),
        ("https://google.com@evil.example/", "evil.example", True, "before @ (google.com)"),
        ("https://аpple.com/login", "xn--pple-43d.com", True, "not ASCII (аpple.com)"),
        ("javascript:alert(1)", "", False, "only http and https"),
        ("file:///etc/passwd", "", False, "only http and https"),
        ("https://example.org/\x1b[2J", "example.org", False, "characters no URL can hold"),
        ("https://example.org/a b", "example.org", False, "characters no URL can hold"),
    ],
)
def test_a_page_is_opened_only_over_http_and_its_host_is_named(
    url: str, host: str, openable: bool, warned: str
) -> None:
    page = Page.of(url)
    assert (page.host, page.openable) == (host, openable)
    assert warned in " ".join(page.warnings)
    assert bool(page.warnings) == bool(warned)


def test_a_host_with_control_characters_is_drawn_spelled_and_never_opened() -> None:
    url = "https://ev\x1bil.example@x\x1b\x07y.com/"
    shown = drawn(asking(Elicitation(reason="r", server="s", message="Go", url=url)))
    assert "\x1b" not in shown and "\x07" not in shown
    assert "  host: x\\x1b\\x07y.com" in shown.splitlines()
    assert "[y]" not in shown
    assert "  1. [n] No, decline" in shown


def test_a_form_that_cannot_be_asked_offers_only_to_decline() -> None:
    nested = Elicitation(
        reason="r",
        server="s",
        message="Where do you live?",
        schema={"type": "object", "properties": {"address": {"type": "object"}}},
    )
    a = asking(nested)
    assert drawn(a) == snapshot("""\
? MCP server s asks:
  │ Where do you live?
This form cannot be asked here: property 'address' has a type a form cannot ask
('object').
  1. [n] No, decline
❯ choose n:
""")
    a.keys("y")  # not a choice here
    assert not a.answer.done()
    a.keys("n")
    assert a.answer.result().approval.kind == "deny"


# -- asked a line at a time (`handrail call`, `run`) ---------------------------------------------


async def ask_lines(
    question: Elicitation, lines: list[str], opened: list[str] | None = None
) -> tuple[Approval, str]:
    """`line_approver` asked `question`, `lines` typed (then the end of input)."""
    typed: Iterator[str] = iter(lines)

    async def read_line() -> str:
        return next(typed, "")

    def open_url(url: str) -> bool:
        assert opened is not None, "nothing should be opened"
        opened.append(url)
        return True

    con, out = console()
    approve = line_approver(con, read_line, open_url=open_url)
    return await approve(question), out.getvalue()


async def test_lines_fill_the_form_field_by_field_and_send_what_was_typed() -> None:
    lines = ["y", "", "Ada", "maybe", "y", "", "ada@", "ada@example.org"]
    lines += ["", "", "500", "7", "", "3", "2,3", "", "", "2", "y"]
    approval, shown = await ask_lines(FORM, [line + "\n" for line in lines])
    assert approval == Approval.reply(
        {
            "name": "Ada",
            "check": True,
            "firstLine": "It was a dark and stormy night.",
            "email": "ada@example.org",
            "integer": 7,
            "number": 3.14,
            "untitledSingleSelectEnum": "Joey",
            "untitledMultipleSelectEnum": ["Piano", "Violin"],
            "titledSingleSelectEnum": "hero-1",
            "titledMultipleSelectEnum": ["fish-1"],
            "legacyTitledEnum": "pet-2",
        }
    )
    assert "❯ String:   ✗ String is required: type text" in shown
    assert "  ✗ 'maybe' is not yes or no: type y or n" in shown
    assert "❯ Integer [42]:   ✗ 500 is more than 100" in shown
    assert "  → sent String: Ada • Boolean: yes" in shown


@pytest.mark.parametrize(
    "lines",
    [
        [],  # the end of input at once
        ["\n"],  # an empty line at the first question
        ["n\n"],
        ["y\n", "Ada\n"],  # the end of input in the middle
        ["y\n", "\n", "\n"],  # a required field never filled: the end of input ends it
    ],
)
async def test_lines_decline_on_no_empty_or_the_end_of_input(lines: list[str]) -> None:
    approval, shown = await ask_lines(FORM, lines)
    assert approval == Approval.deny(DECLINED)
    assert "  → declined (nothing was sent)" in shown


async def test_lines_open_the_page_only_on_a_yes() -> None:
    opened: list[str] = []
    approval, shown = await ask_lines(PAGE, ["y\n"], opened)
    assert approval == Approval.allow_once()
    assert opened == [PAGE.url]  # exactly as sent, to the browser
    assert "  → opened in your browser" in shown
    assert "\x1b" not in shown

    opened.clear()
    approval, shown = await ask_lines(PAGE, ["n\n"], opened)
    assert approval == Approval.deny(DECLINED)
    assert opened == []


async def test_a_browser_that_cannot_start_still_answers_yes() -> None:
    async def read_line() -> str:
        return "y\n"

    con, out = console()
    approve = line_approver(con, read_line, open_url=lambda url: False)
    assert await approve(PAGE) == Approval.allow_once()
    assert "no browser could be opened: open the page above yourself" in out.getvalue()


async def test_a_page_that_will_not_be_opened_cannot_be_agreed_to() -> None:
    opened: list[str] = []
    local = Elicitation(reason="r", server="s", message="Open this", url="file:///etc/passwd")
    approval, shown = await ask_lines(local, ["y\n", "1\n"], opened)
    assert approval == Approval.deny(DECLINED)
    assert opened == []
    assert "handrail opens only http and https pages" in shown
    assert "Answer n, or 1-1." in shown
