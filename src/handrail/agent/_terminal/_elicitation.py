"""An MCP server's question on the terminal (`Elicitation`): its form's fields, or a page to open.

The same steps in `chat` (keys, in the live region's input line) and in `call`/`run` (a line
each, `ask_on_lines`), driven through one `Eliciting`:

```
? MCP server everything (trigger-elicitation-request) asks:
  │ Please provide inputs for the following fields:
This form has 13 fields (1 required).
  1. [y] Fill it in
  2. [n] No, decline
❯ choose y/n:
```

then each field in turn (its title, description, what to type, the default already in the
input; choices numbered; a value that does not fit is asked again with the reason), then what
would be sent, to send (`y`), go over the fields again (`e`) or decline (`n`). Esc, an empty
line at the first question, or the end of input declines. A page to open shows its URL spelled
out with its host marked and named on a line of its own (a hostile server may send a
look-alike: `google.com@evil.example`, Cyrillic letters), and is opened only on a yes, only
over http or https, with `webbrowser` (which follows `$BROWSER`).

The server's words are its own: its message is drawn behind a bar on every row, its field
titles and choices indented, all `clean`ed, so nothing it sends can pass for one of
handrail's lines or a choice, or act on the terminal.
"""

from __future__ import annotations

import asyncio
import webbrowser
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from ..._contract import Approval, Elicitation
from ...display import terminal_text
from ._form import Field, Form, FormUnreadable, Invalid, fields
from ._glyphs import Glyphs, clean
from ._layout import Hang
from ._page import Page

__all__ = ["DECLINED", "Eliciting", "OpenUrl", "Outcome", "ask_on_lines", "finish"]

OpenUrl = Callable[[str], bool]
"""Opens a page in the person's browser; False when none could be opened (`webbrowser.open`)."""
DECLINED = "The user declined the MCP server's request."
"""The denial an elicitation gets when the person says no (the server is told "decline")."""
MESSAGE_ROWS = 20
"""Most rows of a server's message kept in the scrollback once answered."""
LABEL_CHARS = 40
"""Most characters of a field's title on its input line."""

SHOWN_CHARS = 4000
"""Most characters of a server's text drawn in one place (its message, a field's title): the
live region redraws ten times a second, and a server may send megabytes."""
NAME_CHARS = 100
"""Most characters of a server's or a tool's name."""

Stage = Literal["choose", "field", "review"]


def capped(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text`, cut to `limit` characters with a note of how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} characters)"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the person answered: the `Approval`, what to show for it, a page to open first."""

    approval: Approval
    said: str
    url: str | None = None


# -- the pieces shown ---------------------------------------------------------------------------


def _bar(g: Glyphs) -> str:
    return "|" if g.ascii else "│"


@dataclass(frozen=True, slots=True)
class Quote:
    """The server's own text, each row behind a bar: no row of it can pass for handrail's.

    With `rows`, only that many are drawn, the last saying how many more there are.
    """

    text: str
    g: Glyphs
    rows: int | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        g = self.g
        bar = Segment(f"  {_bar(g)} ", Style(dim=True))
        inner = options.update_width(max(1, options.max_width - 4))
        body = Text(clean(capped(self.text.strip("\n")), ascii=g.ascii))
        lines = console.render_lines(body, inner, pad=False)
        if self.rows is not None and len(lines) > self.rows:
            hidden = len(lines) - max(self.rows - 1, 0)
            more = Text(f"{g.ellipsis} +{hidden} lines hidden", style="dim")
            lines = [*lines[: max(self.rows - 1, 0)], console.render_lines(more, inner)[0]]
        for line in lines:
            yield bar
            yield from line
            yield Segment.line()


def head(q: Elicitation, g: Glyphs) -> Hang:
    """`? MCP server NAME (TOOL) asks:`, naming the sub-agent that runs the call, if any.

    Wrapped under itself: a long tool name cannot start a row of its own.
    """
    said = Text()
    if q.agent not in ("", "main"):
        said.append(clean(q.agent, ascii=g.ascii), "bold magenta")
        said.append(f" {g.bullet} ")
    said.append("MCP server ", "bold")
    server = clean(terminal_text(capped(q.server, NAME_CHARS), multiline=False), ascii=g.ascii)
    said.append(server, "bold cyan")
    if q.tool_name:
        tool = terminal_text(capped(q.tool_name, NAME_CHARS), multiline=False)
        said.append(f" ({clean(tool, ascii=g.ascii)})")
    said.append(" asks you to open a page:" if q.url is not None else " asks:", "bold")
    return Hang(Text(f"{g.waiting} ", style="bold yellow"), said)


def _choices(options: Sequence[tuple[str, str]]) -> list[RenderableType]:
    return [
        Hang(Text(f"  {i}. "), Text.assemble((f"[{key}]", "bold cyan"), f" {label}"))
        for i, (key, label) in enumerate(options, 1)
    ]


def _key_line(options: Sequence[tuple[str, str]], g: Glyphs) -> Text:
    return Text(f"{g.cursor} choose {'/'.join(k for k, _ in options)}: ", style="bold")


def _indented(text: str, g: Glyphs, style: str = "") -> Hang:
    # Indented, and one line however it was sent: a title cannot draw a row of its own.
    shown = clean(terminal_text(capped(text), multiline=False), ascii=g.ascii)
    return Hang(Text("    "), Text(shown, style=style))


# -- one question, step by step ----------------------------------------------------------------


@dataclass(slots=True)
class Eliciting:
    """An `Elicitation` being answered: the step it is at, what is typed, and the answer to come.

    `chat` feeds it keys (`keys`, `escape`) and draws `block`; `ask_on_lines` feeds it lines.
    `answer` is done once the person sent, agreed to open, or declined.
    """

    question: Elicitation
    g: Glyphs
    answer: asyncio.Future[Outcome]
    form: Form | None = None
    page: Page | None = None
    problem: str = ""
    """Why the server's form cannot be asked (then only "decline" is offered)."""
    stage: Stage = "choose"
    text: str = ""
    """The input line: what is typed for the current field."""
    fresh: bool = False
    """The input still holds the field's default (or earlier answer) untouched: a typed key
    replaces it, as it would a selected text; Backspace edits it."""
    notice: str = ""
    """What was wrong with the last answer, shown above the input until the next one."""

    @classmethod
    def of(cls, question: Elicitation, g: Glyphs) -> Eliciting:
        """Start answering `question` (its form read, or its page checked)."""
        asking = cls(question, g, asyncio.get_running_loop().create_future())
        if question.url is not None:
            asking.page = Page.of(question.url)
        else:
            try:
                asking.form = Form(fields(question.schema or {}))
            except FormUnreadable as exc:
                asking.problem = f"This form cannot be asked here: {exc}."
        return asking

    @property
    def call_id(self) -> str:
        """Empty: the call the server runs stays drawn where it is, running."""
        return ""

    # -- answering ---------------------------------------------------------------------------

    def options(self) -> list[tuple[str, str]]:
        """The choices of this step (none while a field is typed)."""
        if self.stage == "field":
            return []
        if self.stage == "review":
            return [("y", "Send it"), ("e", "Go over the fields again"), ("n", "No, decline")]
        if self.page is not None:
            yes = [("y", "Yes, open it")] if self.page.openable else []
            return [*yes, ("n", "No, decline")]
        fill = [] if self.form is None else [("y", "Fill it in")]
        return [*fill, ("n", "No, decline")]

    def escape(self) -> None:
        """Decline, whatever the step."""
        self._done(Outcome(Approval.deny(DECLINED), "declined (nothing was sent)"))

    def keys(self, text: str) -> None:
        """Keys typed in `chat`: a choice's key, or the field's input (Enter ends it)."""
        for ch in text:
            if self.answer.done():
                return
            if self.stage != "field":
                if ch.strip():
                    self._choose(ch)
            elif ch in "\r\n":
                self._submit(self.text)
            elif ch in "\x7f\b":
                self.text, self.fresh = self.text[:-1], False
            elif ch == "\x15":  # Ctrl-U: clear the line
                self.text, self.fresh = "", False
            elif ch.isprintable():
                self.text, self.fresh = (ch if self.fresh else self.text + ch), False

    def line(self, typed: str) -> None:
        """One line typed in `call` or `run`: a choice, or the field's value (empty keeps it)."""
        if self.stage == "field":
            self._submit(typed)
            return
        if not typed.strip():
            if self.stage == "choose":
                self.escape()  # an empty line is "no", as for every question
            else:
                self.notice = self._say_keys()
            return
        self._choose(typed.strip())

    def _choose(self, typed: str) -> None:
        options = self.options()
        word = {"yes": "y", "no": "n"}.get(typed.lower(), typed.lower())
        if word.isdigit() and 1 <= int(word) <= len(options):
            word = options[int(word) - 1][0]
        if word not in [k for k, _ in options]:
            self.notice = self._say_keys()
            return
        self.notice = ""
        if word == "n":
            self.escape()
        elif self.page is not None:
            self._done(Outcome(Approval.allow_once(), "agreed to open the page", self.page.url))
        elif self.stage == "review" and word == "y":
            assert self.form is not None
            self._done(Outcome(Approval.reply(self.form.values), self._sent()))
        else:  # fill it in, or go over the fields again
            assert self.form is not None
            self.form.again()
            self._next_field()

    def _submit(self, typed: str) -> None:
        assert self.form is not None
        try:
            self.form.answer(typed)
        except Invalid as exc:
            self.notice, self.fresh = str(exc), False  # kept, to be put right
            return
        self.notice = ""
        self._next_field()

    def _next_field(self) -> None:
        assert self.form is not None
        f = self.form.current
        if f is None:
            self.stage, self.text = "review", ""
        else:
            self.stage, self.text = "field", self.form.prefill(f)
            self.fresh = bool(self.text)

    def _done(self, outcome: Outcome) -> None:
        if not self.answer.done():
            self.answer.set_result(outcome)

    def _say_keys(self) -> str:
        options = self.options()
        keys = ", ".join(k for k, _ in options)
        return f"Answer {keys}, or 1-{len(options)}."

    def _sent(self) -> str:
        assert self.form is not None
        given = self.form.summary()
        if not given:
            return "sent the form with no field filled in"
        return "sent " + f" {self.g.bullet} ".join(f"{k}: {v}" for k, v in given)

    # -- drawing ------------------------------------------------------------------------------

    def intro(self) -> list[RenderableType]:
        """Who asks and the server's message (drawn once in line mode, always in `chat`)."""
        message = self.question.message
        return [head(self.question, self.g), *([Quote(message, self.g)] if message else [])]

    def step(self) -> list[RenderableType]:
        """What this step shows between the message and the input line."""
        g = self.g
        if self.stage == "field":
            return self._field_rows()
        if self.stage == "review":
            assert self.form is not None
            rows: list[RenderableType] = [Text("This is what would be sent:", style="bold")]
            given = self.form.summary() or [("(every field left empty)", "")]
            rows += [_indented(f"{k}: {v}" if v else k, g) for k, v in given]
            return [*rows, *_choices(self.options())]
        rows = []
        if self.page is not None:
            host = clean(self.page.host, ascii=g.ascii) or "(none: not a web address)"
            rows += [Hang(Text("  "), self.page.shown(g)), Text(f"  host: {host}")]
            rows += [
                Hang(Text("  "), Text(clean(w, ascii=g.ascii), style="yellow"))
                for w in self.page.warnings
            ]
            if self.page.openable:
                rows.append(Text("Open it in your browser?", style="bold"))
        elif self.form is None:
            rows.append(Text(clean(self.problem, ascii=g.ascii), style="yellow"))
        else:
            count, required = len(self.form.fields), self.form.required
            many = f"{count} field{'s' if count != 1 else ''}"
            rows.append(Text(f"This form has {many} ({required} required).", style="bold"))
        return [*rows, *_choices(self.options())]

    def _field_rows(self) -> list[RenderableType]:
        g, form = self.g, self.form
        assert form is not None
        f = form.current
        assert f is not None
        where = Text(f"Field {form.index + 1} of {len(form.fields)}: ", style="bold")
        title = Text(clean(terminal_text(capped(f.label), multiline=False), ascii=g.ascii), "bold")
        if f.required:
            title.append(" (required)", "yellow")
        rows: list[RenderableType] = [Hang(where, title)]  # a long title wraps under itself
        if f.description:
            rows.append(_indented(f.description, g, "dim"))
        rows += [_indented(f"{i}. {o.label}", g) for i, o in enumerate(f.options, 1)]
        rows.append(_indented(_what_to_type(f), g, "dim"))
        return rows

    def footer(self, *, lines: bool = False) -> Text:
        """The input line: `❯ choose y/n: `, or `❯ Name: typed` (line mode: `❯ Name [kept]: `)."""
        g = self.g
        if self.stage != "field":
            return _key_line(self.options(), g)
        assert self.form is not None
        f = self.form.current
        assert f is not None
        label = clean(
            terminal_text(capped(f.label, LABEL_CHARS * 2), multiline=False), ascii=g.ascii
        )
        if len(label) > LABEL_CHARS:  # whole in the field's title: the input line stays short
            label = label[: LABEL_CHARS - 1].rstrip() + g.ellipsis
        if not lines:
            typed = clean(terminal_text(capped(self.text), multiline=False), ascii=g.ascii)
            # A default not yet touched is dim: the first key typed replaces it.
            style = "dim" if self.fresh else ""
            return Text.assemble(
                (f"{g.cursor} {label}: ", "bold"), (typed, style), (" ", "reverse")
            )
        kept = self.form.prefill(f)
        kept_text = clean(terminal_text(capped(kept), multiline=False), ascii=g.ascii)
        shown = f" [{kept_text}]" if kept else ""
        return Text(f"{g.cursor} {label}{shown}: ", style="bold")

    def warning(self) -> Text | None:
        """What was wrong with the last answer, if anything."""
        if not self.notice:
            return None
        return Text(f"  {self.g.failed} {clean(self.notice, ascii=self.g.ascii)}", style="yellow")

    def block(self, height: int | None = None) -> RenderableType:
        """The whole question for `chat`'s live region, within `height` rows."""
        warning = self.warning()
        below = [*self.step(), *([warning] if warning is not None else []), self.footer()]
        return _Fitted(self.intro(), below, height)


@dataclass(frozen=True, slots=True)
class _Fitted:
    """The intro above the step, cut to `height`: the message first, then from the top."""

    intro: list[RenderableType]
    below: list[RenderableType]
    height: int | None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        def render(parts: list[RenderableType]) -> list[list[Segment]]:
            return console.render_lines(Group(*parts), options, pad=False) if parts else []

        below = render(self.below)
        top = render(self.intro)
        if self.height is not None and len(top) + len(below) > self.height:
            first, *rest = self.intro
            room = self.height - len(below) - len(render([first]))
            if rest and isinstance(rest[0], Quote) and room >= 1:
                top = render([first, Quote(rest[0].text, rest[0].g, rows=room)])
        lines = [*top, *below]
        if self.height is not None and len(lines) > self.height:
            lines = lines[len(lines) - self.height :]  # the choices and the input stay
        for line in lines:
            yield from line
            yield Segment.line()


def _what_to_type(f: Field) -> str:
    """The hint under a field: what to type, and what Enter alone does."""
    if f.kind == "choice":
        hint = "Type the number of your choice"
    else:
        hint = f"Type {f.hint()}"
    if not f.required and not f.has_default:
        hint += "; an empty answer leaves it out"
    return hint + "."


# -- the end of the question --------------------------------------------------------------------


async def finish(
    asking: Eliciting,
    outcome: Outcome,
    console: Console,
    open_url: OpenUrl | None,
    *,
    recap: bool = True,
) -> Approval:
    """Open the page if the person agreed to, print the answer, and return the `Approval`.

    With `recap` (`chat`, whose question was drawn in the live region), who asked, the message
    and the page go to the scrollback above the answer, like every answered question; a line
    front end printed them already. A browser that cannot be started still answers yes: the
    person agreed, and the URL is on the screen to open by hand.
    """
    g = asking.g
    said, style = outcome.said, "red" if outcome.approval.kind == "deny" else "green"
    if outcome.url is not None:
        try:
            done = await asyncio.to_thread(open_url or webbrowser.open, outcome.url)
        except Exception:  # a browser command that fails is no reason to fail the call
            done = False
        if done:
            said = "opened in your browser"
        else:
            said, style = "no browser could be opened: open the page above yourself", "yellow"
    shown: list[RenderableType] = []
    if recap:
        shown.append(head(asking.question, g))
        if asking.question.message:
            shown.append(Quote(asking.question.message, g, rows=MESSAGE_ROWS))
        if asking.page is not None:
            shown.append(Hang(Text("  "), asking.page.shown(g)))
    arrow = Text(f"  {g.arrow} ", style=style)
    shown.append(Hang(arrow, Text(clean(said, ascii=g.ascii), style=style)))
    console.print(Group(*shown))
    return outcome.approval


async def ask_on_lines(
    question: Elicitation,
    console: Console,
    read_line: Callable[[], Awaitable[str]],
    g: Glyphs,
    open_url: OpenUrl | None = None,
) -> Approval:
    """Ask `question` a line at a time (`handrail call`, `run`): the end of input declines."""
    asking = Eliciting.of(question, g)
    for part in asking.intro():
        console.print(part)
    shown: tuple[Stage, int] | None = None
    while not asking.answer.done():
        where = (asking.stage, asking.form.index if asking.form is not None else 0)
        if where != shown:
            for part in asking.step():
                console.print(part)
            shown = where
        warning = asking.warning()
        if warning is not None:
            console.print(warning)
            asking.notice = ""
        console.print(asking.footer(lines=True), end="")
        typed = await read_line()
        if not typed:  # the end of input: nobody is left to answer
            console.print()
            asking.escape()
            break
        asking.line(typed.rstrip("\r\n"))
    return await finish(asking, asking.answer.result(), console, open_url, recap=False)
