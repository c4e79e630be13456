"""Attacks on the terminal by an MCP server's question: every field hostile, pages that lie.

The server writes the message, the URL, every property key, title, description, choice and
default. Nothing of it may reach the terminal raw (no escape sequence, bell, C1 control,
carriage return or bidi override), at any step, in `chat`'s live region or a line at a time;
the page it asks to open must be named by the host the browser would really go to; and its
size must not make each redraw of the live region (ten a second) a stall.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from typing import Any

import pytest
from rich.console import Console

from handrail import Approval, Elicitation
from handrail._cli._run import _Output, declined_headless
from handrail.agent._terminal._elicitation import Eliciting, finish
from handrail.agent._terminal._page import Page
from handrail.agent._terminal._question import line_approver
from handrail.agent._terminal._render import UNICODE

EVIL = "\x1b[2J\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x9b31m\r\u202eevil\u200b\x08"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e", "\u200b", "\x08")


def hostile_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            EVIL + "key": {"type": "string", "default": EVIL + "default"},
            "titled": {
                "type": "string",
                "title": EVIL + "title",
                "description": EVIL + "description",
                "minLength": 1,
            },
            "pick": {"type": "string", "enum": [EVIL + "a", EVIL + "b"]},
            "named": {
                "type": "string",
                "enum": ["a", "b"],
                "enumNames": [EVIL + "A", EVIL + "B"],
            },
            "one": {
                "type": "string",
                "oneOf": [{"const": EVIL + "c", "title": EVIL + "C"}, {"const": "d"}],
            },
            "many": {
                "type": "array",
                "items": {"anyOf": [{"const": "x", "title": EVIL + "X"}, {"const": "y"}]},
                "default": ["x"],
            },
            "flag": {"type": "boolean", "title": EVIL + "flag", "default": True},
        },
        "required": ["titled"],
    }


FORM = Elicitation(
    reason="r",
    server=EVIL + "server",
    message=EVIL + "message\n❯ choose y/n: y",
    schema=hostile_schema(),
    tool_name="mcp__s__" + EVIL,
    agent=EVIL + "agent",
)


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=80, color_system=None, force_terminal=True, _environ={}), out


def drawn(asking: Eliciting, height: int | None = None) -> str:
    con, out = console()
    con.print(asking.block(height))
    return out.getvalue()


def asking(question: Elicitation) -> Eliciting:
    async def start() -> Eliciting:
        return Eliciting.of(question, UNICODE)

    return asyncio.run(start())


def assert_spelled(shown: str) -> None:
    found = [c for c in RAW if c in shown]
    assert not found, f"raw {found!r} reached the terminal"


def test_no_field_of_a_form_reaches_the_live_region_raw() -> None:
    a = asking(FORM)
    screens = [drawn(a), drawn(a, height=8)]
    a.keys("y")  # fill it in
    # Each field is drawn, then answered; a refused answer (its notice quotes the field) is
    # drawn too, then cleared (Ctrl-U) and put right. Keys typed by the person are plain.
    for typed in ["\r", "\r", "zz\r", "9\r", "\x151\r", "9\r", "\x151\r", "9\r", "\x151\r"] + [
        "\r"
    ] * 2:
        screens.append(drawn(a))
        a.keys(typed)
    assert a.stage == "review"
    screens.append(drawn(a))
    a.keys("y")
    outcome = a.answer.result()
    assert outcome.approval.kind == "allow_once"
    con, out = console()

    async def end() -> Approval:
        return await finish(a, outcome, con, None)

    asyncio.run(end())
    screens.append(out.getvalue())
    for shown in screens:
        assert_spelled(shown)
    assert "\\x1b[2J" in screens[0]  # spelled out, so a person sees what was sent


async def test_no_field_of_a_form_or_page_reaches_a_line_front_end_raw() -> None:
    page = Elicitation(
        reason="r",
        server=EVIL,
        message=EVIL,
        url="https://example.org/" + EVIL,
        tool_name=EVIL,
    )
    for question, lines in [
        (FORM, ["y", "", "", "zz", "1", "9", "1", "9", "1", "", "", "y"]),
        (page, ["y"]),
    ]:
        typed: Iterator[str] = iter(line + "\n" for line in lines)

        async def read_line(typed: Iterator[str] = typed) -> str:
            return next(typed, "")

        opened: list[str] = []

        def open_url(url: str, opened: list[str] = opened) -> bool:
            opened.append(url)
            return True

        con, out = console()
        approval = await line_approver(con, read_line, open_url=open_url)(question)
        assert_spelled(out.getvalue())
        if question is page:
            assert opened == [] and approval.kind == "deny"  # never opened, never agreed to
        else:
            assert approval.kind == "allow_once"


def test_the_headless_notice_spells_the_servers_words() -> None:
    err = io.StringIO()
    _Output("text", io.StringIO(), err).note(declined_headless(FORM))
    assert_spelled(err.getvalue())
    assert "declined" in err.getvalue()


# -- pages that lie about where they go -------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example\\@accounts.google.com/login",
        "https://evil.example\\\\@accounts.google.com/",
    ],
)
def test_a_page_is_never_named_by_a_host_the_browser_will_not_visit(url: str) -> None:
    page = Page.of(url)
    shown = drawn(asking(Elicitation(reason="r", server="s", message="Sign in", url=url)))
    # The browser goes to evil.example (`new URL(url).host` in any browser or Node).
    assert not page.openable or page.host == "evil.example"
    assert "host: accounts.google.com" not in shown
    assert "the page is on accounts.google.com" not in shown.replace("\n  ", " ")


# -- size -------------------------------------------------------------------------------------------

BIG = 3_000_000


@pytest.mark.parametrize("where", ["message", "url", "field"])
def test_a_huge_question_is_drawn_cut(where: str) -> None:
    # The live region redraws ten times a second: what it draws of a server's megabytes must
    # be cut before it is laid out, or each redraw stalls `chat`. Cut means: a bounded screen,
    # saying how much was left out.
    shown = _drawn(where, BIG)
    assert len(shown) < 20_000
    assert "characters)" in shown or "lines hidden" in shown or where == "url"
    if where == "url":
        assert "will not be opened" in shown.replace("\n  ", " ")


def _drawn(where: str, size: int) -> str:
    words = "word " * (size // 5)
    if where == "message":
        q = Elicitation(reason="r", server="s", message=words, schema=hostile_schema())
    elif where == "url":
        q = Elicitation(reason="r", server="s", message="m", url="https://e.example/" + "a" * size)
    else:
        schema = {"type": "object", "properties": {"f": {"type": "string", "title": words}}}
        q = Elicitation(reason="r", server="s", message="m", schema=schema)
    a = asking(q)
    if where == "field":
        a.keys("y")
    return drawn(a, height=24)
