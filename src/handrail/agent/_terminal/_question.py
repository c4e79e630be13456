"""One question on the terminal, asked the same way by `handrail call`, `run` and `chat`.

A person is asked a `Question`: a call's approval (`ApprovalRequest`), a tool's yes/no while
it runs (`Confirmation`), or anything else (yes or no on its `reason`). This module holds what
every front end shows and accepts: the choices (keys and words), the block that asks (the
call with its proposed diff or command, the reason, the question, the numbered choices, the
key line), which typed key picks which choice, and the `Approval` each choice gives. An MCP
server's `Elicitation` (a form to fill in, a page to open) takes more than one key: its steps
are `_elicitation`'s, asked from the same places.

```
? Edit calc.py  +1 -1
  └ @@ -1,2 +1,2 @@
     def add(a, b):
    -    return a - b
    +    return a + b
Reason: edit_file can change things
Do you want to make this edit?
  1. [y] Yes
  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session
  3. [p] Yes, and always allow edit_file(calc.py) in this project
     (.handrail/settings.local.json)
  4. [n] No, and tell the agent what to do instead
❯ choose y/s/p/n:
```

`call` and `run` print the block whole and read a line (`line_approver`); `chat` keeps it at
the bottom of its live region, fitted to the screen's height (`QuestionBlock(height=...)`): a
diff too long for the screen is cut, with a line saying how many of its lines are hidden, so
the choices and the key line are always in sight. Everything shown that came from a model, a
tool or a file (the call, the reason, the rules, the agent's name) is `clean`ed: spelled out,
never obeyed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.text import Text

from ..._contract import (
    Approval,
    ApprovalRequest,
    Approver,
    Confirmation,
    Elicitation,
    Question,
    ToolCall,
)
from ...display import CallStatus, Display, DisplayGroup, terminal_text
from ...permissions import rules_to_allow
from ._elicitation import OpenUrl, ask_on_lines
from ._glyphs import Glyphs, clean, glyphs
from ._layout import Hang, Line
from ._render import body_rows, call_line, under_elbow, wrapped

__all__ = [
    "REASON_PROMPT",
    "SAID_NO",
    "Answer",
    "Asking",
    "Choice",
    "QuestionBlock",
    "answer_line",
    "answered",
    "choices",
    "declined",
    "key_line",
    "line_approver",
    "pick",
    "refusal",
    "settle",
    "shown_rules",
    "waiting_display",
]

Action = Literal["yes", "always", "save", "no"]
"""What a choice does: allow once, allow for the session, save a project rule, refuse."""

REASON_PROMPT = "What should the agent do instead? (Enter to skip): "
"""Asked after "No" to a call: the line typed goes to the model with the denial."""
SAID_NO = "The user said no."
"""The denial a tool gets when its question is answered "No"."""

# What an approval asks, by what the call does: "Do you want to make this edit?"
_ASKS: Mapping[DisplayGroup, str] = {
    DisplayGroup.READ: "read this file",
    DisplayGroup.SEARCH: "run this search",
    DisplayGroup.LIST: "list this directory",
    DisplayGroup.EDIT: "make this edit",
    DisplayGroup.SHELL: "run this command",
    DisplayGroup.FETCH: "fetch this page",
    DisplayGroup.AGENT: "start this agent",
}
_WORDS: Mapping[str, str] = {"yes": "y", "no": "n"}
"""Whole words a line may answer with."""


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer a person can give: its key, its words, what it does."""

    key: str
    label: str
    action: Action


@dataclass(frozen=True, slots=True)
class Answer:
    """A choice made: the `Approval`, what to show for it, and a warning if it fell short."""

    approval: Approval
    said: str
    """Shown after the question: `allowed once`, `declined: use pytest`."""
    warning: str = ""
    """Something that did not work (a rule that could not be saved); empty when all did."""


# -- the choices -------------------------------------------------------------------------------

_NO = Choice("n", "No", "no")


def shown_rules(request: ApprovalRequest) -> str:
    """The rules an "always" answer adds, as the choices name them (`a + b`), on one line."""
    return " + ".join(terminal_text(r, multiline=False) for r in rules_to_allow(request))


def choices(question: Question, *, rule_file: str | None = None) -> tuple[Choice, ...]:
    """What `question` can be answered, in order (the number shown is the position).

    A call's approval: yes, yes for the session, yes and save the rule in the project (only
    when `rule_file` names where it would go), no. A `Confirmation`: yes, yes always (only when
    it has an `always`), no. Any other question: yes or no.
    """
    if isinstance(question, ApprovalRequest):
        rules = shown_rules(question)
        found: list[Choice] = [
            Choice("y", "Yes", "yes"),
            Choice("s", f"Yes, and don't ask again for {rules} in this session", "always"),
        ]
        if rule_file is not None:
            where = terminal_text(rule_file, multiline=False)
            label = f"Yes, and always allow {rules} in this project ({where})"
            found.append(Choice("p", label, "save"))
        found.append(Choice("n", "No, and tell the agent what to do instead", "no"))
        return tuple(found)
    if isinstance(question, Confirmation) and question.always:
        always = terminal_text(question.always, multiline=False)
        return (Choice("y", "Yes", "yes"), Choice("a", f"Yes, and {always}", "always"), _NO)
    return (Choice("y", "Yes", "yes"), _NO)


def pick(options: Sequence[Choice], typed: str) -> Choice | None:
    """The choice `typed` names: its key, its number, or `yes`/`no`; None for anything else."""
    text = typed.strip().lower()
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    key = _WORDS.get(text, text)
    return next((c for c in options if c.key == key), None)


def refusal(options: Sequence[Choice]) -> Choice:
    """The choice that says no (Esc, an empty line, end of input)."""
    return next(c for c in options if c.action == "no")


def key_line(options: Sequence[Choice], g: Glyphs) -> Text:
    """The line the answer is typed on: `❯ choose y/s/p/n: `."""
    keys = "/".join(c.key for c in options)
    return Text(f"{g.cursor} choose {keys}: ", style="bold")


def declined(said: str) -> str:
    """What the model is told when the user declines its call (with what they said, if any)."""
    if said:
        return f"The user declined this call and said: {said}"
    return (
        "The user declined this call. Do not retry it; ask what they want instead, or take "
        "another approach."
    )


def settle(
    question: Question,
    choice: Choice,
    *,
    reason: str = "",
    save_rule: Callable[[str], Path] | None = None,
) -> Answer:
    """The answer `choice` gives to `question`.

    `save` stores each of the call's rules with `save_rule` (a rule that cannot be saved
    allows the call once, with a warning); `reason` is what the user said with a "No".
    """
    if not isinstance(question, ApprovalRequest):
        if choice.action == "no":
            return Answer(Approval.deny(SAID_NO), "no")
        if choice.action == "always" and isinstance(question, Confirmation) and question.always:
            return Answer(Approval.allow_always(), f"yes, and {question.always}")
        return Answer(Approval.allow_once(), "yes")
    rules = rules_to_allow(question)
    shown = shown_rules(question)
    if choice.action == "no":
        said = f"declined: {reason}" if reason else "declined"
        return Answer(Approval.deny(declined(reason)), said)
    if choice.action == "always":
        return Answer(Approval.allow_always(), f"allowed {shown} for this session")
    if choice.action == "save" and save_rule is not None:
        try:
            where = Path()
            for rule in rules:
                where = save_rule(rule)
        except (OSError, ValueError) as exc:
            warning = f"could not save {shown}: {exc}; allowing this call once"
            return Answer(Approval.allow_once(), "allowed once", warning)
        return Answer(Approval.allow_always(), f"allowed {shown}; saved in {where}")
    return Answer(Approval.allow_once(), "allowed once")


# -- the block ---------------------------------------------------------------------------------


def waiting_display(question: Question) -> Display | None:
    """The call a question is about, as shown when its tool's own display is not at hand."""
    if not isinstance(question, ApprovalRequest):
        return None
    return Display(
        title=question.tool_name or question.call.name,
        status=CallStatus.WAITING,
        tool_name=question.tool_name,
        call_id=question.call.id,
    )


def _asker(question: Question) -> str:
    return question.agent if question.agent not in ("", "main") else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionBlock:
    """The question as drawn: the call and what it would do, the reason, the choices, the key line.

    With a `height`, the block never takes more rows than that: the body (a diff, a command,
    output) is cut first, to the rows that fit, under a line saying how many are hidden (and
    `more`, e.g. how to see them); then the reason goes, then the call's line, then the
    question, then each choice is cut to one row; the choices and the `footer` (the key line)
    stay at the bottom (on a screen too short even for them, the key line and the last ones).
    Without one, everything is drawn, the body wrapped rather than cut.
    """

    question: Question
    options: tuple[Choice, ...]
    g: Glyphs
    display: Display | None = None
    """The call as its tool shows it while it waits (an `ApprovalRequest`'s)."""
    selected: int | None = None
    """The choice to mark with the cursor."""
    footer: RenderableType | None = None
    height: int | None = None
    more: str = ""
    """Follows `… +N lines hidden` when the body is cut."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self._lines(console, options):
            yield from line
            yield Segment.line()

    def _lines(self, console: Console, options: ConsoleOptions) -> list[list[Segment]]:
        g = self.g

        def render(*parts: RenderableType) -> list[list[Segment]]:
            if not parts:
                return []
            return console.render_lines(Group(*parts), options, pad=False)

        head, rows, reason, ask = self._pieces()
        pieces = {
            "head": render(*head),
            "reason": render(*reason),
            "question": render(*ask),
            "choices": render(*self._choice_rows()),
            "footer": render(*([self.footer] if self.footer is not None else [])),
        }
        body = render(under_elbow(g, Group(*rows))) if rows else []
        total = sum(len(v) for v in pieces.values()) + len(body)
        if self.height is not None and total > self.height:
            if rows:
                room = self.height - sum(len(v) for v in pieces.values())
                shown = self._cut(console, options, rows, max(room, 1))
                body = render(under_elbow(g, Group(*shown)))
            # Still too tall: drop the least needed pieces, in this order, then draw each
            # choice on one row.
            for name in ("reason", "body", "head", "question", "choices"):
                if sum(len(v) for v in pieces.values()) + len(body) <= self.height:
                    break
                if name == "body":
                    body = []
                elif name == "choices":
                    pieces[name] = render(*self._choice_rows(one_line=True))
                else:
                    pieces[name] = []
        lines = [
            *pieces["head"],
            *body,
            *pieces["reason"],
            *pieces["question"],
            *pieces["choices"],
            *pieces["footer"],
        ]
        if self.height is not None and len(lines) > self.height:
            lines = lines[len(lines) - self.height :]  # the choices and the key line stay
        return lines

    def _cut(
        self,
        console: Console,
        options: ConsoleOptions,
        rows: list[RenderableType],
        room: int,
    ) -> list[RenderableType]:
        """The rows that fit in `room` lines with the `… +N lines hidden` line under them."""
        g = self.g
        inner = options.update_width(max(1, options.max_width - cell_len(f"  {g.elbow} ")))
        used, kept = 1, 0  # the hidden line
        for row in rows:
            size = len(console.render_lines(row, inner, pad=False))
            if used + size > room:
                break
            used, kept = used + size, kept + 1
        hidden = len(rows) - kept
        mark = Text(f"{g.ellipsis} +{hidden} lines hidden", style="dim")
        if self.more:
            mark.append(f" ({clean(self.more, ascii=g.ascii)})", style="dim")
        return [*rows[:kept], Line.of(mark, g.ellipsis)]

    def _pieces(
        self,
    ) -> tuple[
        list[RenderableType], list[RenderableType], list[RenderableType], list[RenderableType]
    ]:
        """The call's line, its body rows, the reason, the question."""
        q, g = self.question, self.g
        agent = _asker(q)
        mark = Text(f"{g.waiting} ", style="bold yellow")
        if not isinstance(q, ApprovalRequest):
            said = Text()
            if agent:
                said.append(clean(agent, ascii=g.ascii), "bold magenta")
                said.append(f" {g.bullet} ")
            tool = q.tool_name if isinstance(q, Confirmation) else ""
            if tool:
                said.append(f"{clean(tool, ascii=g.ascii)} asks: ", "bold")
            # One line, newlines spelled out: a tool's text must not draw choices of its own.
            said.append(clean(terminal_text(q.reason, multiline=False), ascii=g.ascii), "bold")
            return [Hang(mark, said)], [], [], []
        d = self.display or waiting_display(q)
        assert d is not None
        # Wrapped, not cut: the user must see all of what they are asked to allow.
        _, *rest = call_line(d, g).parts
        head: list[RenderableType] = [Hang(mark, Text("").join(p.text for p in rest))]
        rows = body_rows(d, g, expanded=True, hint="")
        reason: list[RenderableType] = []
        if q.reason:
            # Markdown code marks read as noise on a terminal.
            text = clean(q.reason.replace("`", ""), ascii=g.ascii)
            reason.append(wrapped(Text.assemble(("Reason: ", "dim"), text)))
        asks = _ASKS.get(d.group) or f"call {clean(q.tool_name, ascii=g.ascii) or 'this tool'}"
        if agent:
            question = Text.assemble(
                (clean(agent, ascii=g.ascii), "bold magenta"), f" wants to {asks}. Allow it?"
            )
        else:
            question = Text(f"Do you want to {asks}?")
        question.stylize("bold")
        return head, rows, reason, [wrapped(question)]

    def _choice_rows(self, *, one_line: bool = False) -> list[RenderableType]:
        g = self.g
        rows: list[RenderableType] = []
        for i, c in enumerate(self.options):
            mine = i == self.selected
            prefix = Text(f"{g.cursor if mine else ' ' * cell_len(g.cursor)} {i + 1}. ")
            label = Text.assemble(
                (f"[{clean(c.key, ascii=g.ascii)}]", "bold cyan"),
                " ",
                clean(c.label, ascii=g.ascii),
            )
            if mine:
                prefix.stylize("bold cyan")
                label.stylize("bold")
            rows.append(Line.of(prefix + label, g.ellipsis) if one_line else Hang(prefix, label))
        return rows


def answered(question: Question, display: Display | None, answer: Answer, g: Glyphs) -> Group:
    """What stays in the scrollback once a question is answered: what was asked, and the answer.

    ```
    ? Edit calc.py  +1 -1
      → allowed once
    ```
    """
    d = display or waiting_display(question)
    if d is not None:
        head: RenderableType = call_line(d, g)
    else:
        agent = _asker(question)
        said = f"{agent} {g.bullet} " if agent else ""
        if isinstance(question, Confirmation) and question.tool_name:
            said += f"{question.tool_name} asks: "
        line = f"{g.waiting} {said}{question.reason}".replace("\n", " ")
        head = Line.of(Text(clean(line, ascii=g.ascii), style="bold"), g.ellipsis)
    return Group(head, answer_line(answer, g))


def answer_line(answer: Answer, g: Glyphs) -> Hang:
    """`  → allowed once`: green for a yes, red for a no."""
    style = "red" if answer.approval.kind == "deny" else "green"
    # Wrapped under itself, not at column 0, on a narrow terminal.
    return Hang(Text(f"  {g.arrow} ", style=style), Text(clean(answer.said, ascii=g.ascii), style))


# -- asking in the chat's live region ---------------------------------------------------------


@dataclass(slots=True)
class Asking:
    """A question on the chat's screen while it waits for its keys (state the keys change)."""

    question: Question
    options: tuple[Choice, ...]
    g: Glyphs
    display: Display | None = None
    reason: str | None = None
    """What the user types after "No" (None while they are still choosing)."""
    more: str = field(default="")
    """Follows `… +N lines hidden` (how to see them)."""

    @property
    def call_id(self) -> str:
        """The call asked about ("" for a question that is not a call's approval)."""
        return self.question.call.id if isinstance(self.question, ApprovalRequest) else ""

    def footer(self) -> Text:
        """The key line, or the line the reason is typed on."""
        if self.reason is None:
            return key_line(self.options, self.g)
        return Text.assemble((REASON_PROMPT, "bold"), clean(self.reason, ascii=self.g.ascii))

    def block(self, height: int | None = None) -> QuestionBlock:
        """The question drawn within `height` rows (None: all of it)."""
        return QuestionBlock(
            question=self.question,
            options=self.options,
            g=self.g,
            display=self.display,
            footer=self.footer(),
            height=height,
            more=self.more,
        )

    def whole(self) -> RenderableType:
        """The call and all of its body, for the scrollback (what a cut block hides)."""
        d = self.display or waiting_display(self.question)
        if d is None:
            return QuestionBlock(question=self.question, options=(), g=self.g)
        rows = body_rows(d, self.g, expanded=True, hint="")
        head = call_line(d, self.g)
        return Group(head, under_elbow(self.g, Group(*rows))) if rows else head


# -- asking on a line (`handrail call`, `handrail run`) ----------------------------------------


def line_approver(
    console: Console,
    read_line: Callable[[], Awaitable[str]],
    *,
    display: Callable[[ToolCall], Display] | None = None,
    save_rule: Callable[[str], Path] | None = None,
    rule_file: str | None = None,
    open_url: OpenUrl | None = None,
) -> Approver:
    """An approver that prints each question whole on `console` and reads the answer as a line.

    The line is a choice's key or number (`yes` and `no` too); an empty line or the end of
    input is "No", anything else asks again. After "No" to a call, a second line says what
    the agent should do instead. `display` shows the call as its tool does (the proposed
    diff); `save_rule` and `rule_file` offer "always allow in this project". An MCP server's
    `Elicitation` is asked a line per field, or its page opened with `open_url` (default:
    `webbrowser.open`) on a yes (`_elicitation`). Questions asked at the same time (parallel
    sub-agents) wait for each other.
    """
    ascii = not (console.encoding or "").lower().replace("-", "").startswith("utf")
    g = glyphs(ascii)
    turn = asyncio.Lock()

    async def approve(question: Question) -> Approval:
        async with turn:
            if isinstance(question, Elicitation):
                return await ask_on_lines(question, console, read_line, g, open_url)
            options = choices(question, rule_file=rule_file if save_rule is not None else None)
            d = (
                display(question.call)
                if display and isinstance(question, ApprovalRequest)
                else None
            )
            console.print(QuestionBlock(question=question, options=options, g=g, display=d))
            while True:
                console.print(key_line(options, g), end="")
                typed = await read_line()
                if not typed.strip():  # an empty line, or the end of input
                    chosen = refusal(options)
                    break
                found = pick(options, typed)
                if found is not None:
                    chosen = found
                    break
                keys = ", ".join(c.key for c in options)
                console.print(Text(f"Answer {keys}, or 1-{len(options)}.", style="yellow"))
            said = ""
            if chosen.action == "no" and isinstance(question, ApprovalRequest) and typed.strip():
                console.print(Text(REASON_PROMPT, style="bold"), end="")
                said = (await read_line()).strip()
            answer = settle(question, chosen, reason=said, save_rule=save_rule)
            if answer.warning:
                console.print(Text(clean(answer.warning, ascii=g.ascii), style="yellow"))
            console.print(answer_line(answer, g))
            return answer.approval

    return approve
