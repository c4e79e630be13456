"""`ChatApp`: the interactive terminal agent, inline in the normal screen buffer.

Two phases alternate. At the prompt, prompt_toolkit owns the terminal (multi-line input,
history, completion of `/commands` and `@paths`, Shift-Tab for the mode, a status line).
During a turn, a small live region shows what runs while finished blocks go to scrollback,
and a key reader turns Esc into an interrupt, Shift-Tab into a mode change and anything typed
into type-ahead for the next prompt. The run's questions (a call's approval, a tool's
confirmation) are asked inside the turn, at the bottom of the live region, answered from the
same keys (`_question`: the same choices and words as `handrail call` and `run`); an MCP
server's form or page to open (`_elicitation`) too, its fields typed in the region's input line.

Ctrl-C interrupts a turn; a second one quits, whether the turn is still stopping or has
already given the prompt back (within `EXIT_WINDOW`). At the prompt, Ctrl-C twice or Ctrl-D
exits. An interrupted turn still gives every call a result, so the next message carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..._context import PermissionMode
from ..._contract import Approval, ApprovalRequest, Elicitation, Question, ToolResult
from ...display import CallStatus
from .._conversation import AssistantMessage
from .._events import Event, RunResult
from .._loop import Agent, Model
from .._sessions import SavedSession
from ._commands import COMMANDS, Commands
from ._elicitation import Eliciting, OpenUrl, finish
from ._glyphs import clean, glyphs
from ._keys import KeyReader
from ._question import Asking, Choice, answered, choices, pick, refusal, settle
from ._render import call_block
from ._rewinding import ATTACHED
from ._view import CallGroup, TurnView, markdown

if TYPE_CHECKING:
    from ._input import PromptInput

T = TypeVar("T")

MODES = (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN)
"""What Shift-Tab cycles through."""
EXIT_WINDOW = 2.0
"""Seconds within which a second Ctrl-C at the prompt exits (counted from the first press at
the prompt, or from when the prompt is back after a press interrupted the turn)."""
SHOW_ALL = "v"
"""The key that prints the whole call asked about (what a short screen cuts) above the question."""
NOT_ATTACHED = "Not approved: attachments outside the workspace are refused."
"""Why an @attachment that would need approval is not attached."""
_ATTACH = re.compile(r"(?<![\w@])@([^\s@]+)")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatOptions:
    """How the terminal agent behaves; the CLI fills it from its options and settings."""

    ascii: bool = False
    """Draw with ASCII only (no Unicode glyphs, no Markdown boxes)."""
    history_file: Path | None = None
    """Where prompt history is kept (None: only in memory)."""
    make_model: Callable[[str], Model] | None = None
    """Builds a model from `PROVIDER:MODEL` for `/model`."""
    save_rule: Callable[[str], Path] | None = None
    """Saves an allow rule to the project's settings ("don't ask again in this project")."""
    rule_file: str = ".handrail/settings.local.json"
    """Where `save_rule` writes, as the choice names it."""
    open_url: OpenUrl | None = None
    """Opens the page an MCP server asks to open, once the user said yes (None:
    `webbrowser.open`, which follows `$BROWSER`)."""
    version: str = ""


class ChatApp:
    """The terminal agent around one `Agent`; it answers the questions of the runs it starts."""

    def __init__(self, agent: Agent, console: Console, options: ChatOptions | None = None) -> None:
        self.agent = agent
        self.runtime = agent.runtime
        self.console = console
        self.options = options or ChatOptions()
        self.glyphs = glyphs(self.options.ascii)
        self.view: TurnView | None = None
        self.commands = Commands(self)
        self.typeahead = ""
        self.last_result: RunResult | None = None
        self.history: list[CallGroup] = []
        """Groups of calls shown so far, newest last (for /expand)."""
        self._asking: Asking | Eliciting | None = None
        self._answer: asyncio.Future[Choice | str | None] | None = None
        self._one_question = asyncio.Lock()
        """The call each waiting question is about, as the run showed it."""
        self._ctrl_c_at = 0.0
        self._ctrl_c_in_turn = False
        """A Ctrl-C interrupted the last turn: the prompt's window for a second one is open."""
        self._presses = 0
        """Ctrl-C presses during the running turn."""
        self._quit = False
        self._task: asyncio.Task[Any] | None = None
        self._prompt: PromptInput | None = None

    # -- the main loop -----------------------------------------------------------------------

    async def run(self, first: str | None = None, *, resumed: SavedSession | None = None) -> int:
        """Hold the conversation until the user leaves; returns the exit status.

        `first` is sent as the first message; `resumed` names the session carried on.
        """
        loop = asyncio.get_running_loop()
        with contextlib.ExitStack() as stack:
            # One Ctrl-C handler for the whole session, not one per turn: a press that lands
            # between a turn and the prompt (the terminal is cooked for that moment) must not
            # reach the default handler, which raises KeyboardInterrupt wherever the program
            # happens to be. The prompt itself reads Ctrl-C as a key.
            try:
                loop.add_signal_handler(signal.SIGINT, self._sigint)
                stack.callback(loop.remove_signal_handler, signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
            return await self._converse(first, resumed)

    async def _converse(self, first: str | None, resumed: SavedSession | None) -> int:
        from ._input import PromptInput

        self.banner()
        if resumed is not None:
            self.resumed(resumed)
        prompt = self._prompt = PromptInput(self, COMMANDS)
        pending = first
        while True:
            if self._quit:
                return 130
            if pending is None:
                if self._ctrl_c_in_turn:
                    # Counted from when the prompt is back, so a press typed ahead always lands.
                    self._ctrl_c_at, self._ctrl_c_in_turn = time.monotonic(), False
                try:
                    text = await prompt.read(default=self._take_typeahead())
                except KeyboardInterrupt:
                    now = time.monotonic()
                    if self._quit or now - self._ctrl_c_at <= EXIT_WINDOW:
                        return 130
                    self._ctrl_c_at = now
                    self.console.print(Text("Press Ctrl-C again to exit", style="dim"))
                    continue
                except EOFError:
                    return 0
            else:
                text, pending = pending, None
            text = text.strip()
            if not text:
                continue
            if text.startswith("/"):
                status = await self.commands.run(text)
                if status is not None:
                    return status
                continue
            await self.turn(text)
            pending = self._submitted_typeahead()

    def _sigint(self) -> None:
        """Ctrl-C as a signal: the first interrupts the turn, the second quits.

        Outside a turn (the moment between a turn and the prompt), the prompt's rule holds:
        a second press within `EXIT_WINDOW`, or after a press that interrupted the turn, quits.
        """
        task = self._task
        if task is not None and not task.done():
            self._presses += 1
            if self._presses > 1:
                self._quit = True
                task.cancel()
            else:
                self.interrupt()
            return
        now = time.monotonic()
        if self._ctrl_c_in_turn or now - self._ctrl_c_at <= EXIT_WINDOW:
            self._quit = True
            if self._prompt is not None:
                self._prompt.cancel()  # a prompt already up returns at once
            return
        self._ctrl_c_at = now

    def banner(self) -> None:
        """The first lines: what runs, where, and how to get help."""
        g = self.glyphs
        client = self.agent.client
        self.console.print(
            Text.assemble(
                ("handrail", "bold"),
                (f" {self.options.version}" if self.options.version else "", "dim"),
                (
                    f" {g.bullet} {clean(client.spec)} {g.bullet} mode {self.mode} {g.bullet} ",
                    "dim",
                ),
                (clean(str(self.runtime.root), ascii=g.ascii), "dim"),
            )
        )
        self.console.print(
            Text(
                "/help for commands, @path to attach a file, Esc to interrupt, "
                "Shift-Tab to change mode, Ctrl-D to exit",
                style="dim",
            )
        )

    def resumed(self, saved: SavedSession) -> None:
        """Say which session carries on, and what its last answer was."""
        self.console.print(
            Text(
                f"resumed session {clean(saved.id[:8])} ({len(saved.messages)} messages)",
                style="dim",
            )
        )
        last = next(
            (m for m in reversed(saved.messages) if isinstance(m, AssistantMessage) and m.text),
            None,
        )
        if isinstance(last, AssistantMessage):
            self.markdown(last.text)

    # -- one turn ----------------------------------------------------------------------------

    async def turn(self, text: str) -> RunResult | None:
        """Send one message and show the run until it ends."""
        prompt = await self.attach(text)
        started = time.monotonic()
        work = self.agent.run(prompt, on_event=self._event, approver=self.approve)
        result = await self.busy(work)
        if result is None:
            return None
        self.last_result = result
        self._report(result, time.monotonic() - started)
        return result

    def new_view(self) -> TurnView:
        """A view for one turn, sharing the app's history of shown calls."""
        return TurnView(
            self.console, self.glyphs, markdown=not self.options.ascii, history=self.history
        )

    def expand(self, n: int = 1) -> bool:
        """Print the `n`th last group of calls in full; False when there is none."""
        if n > len(self.history):
            return False
        for d in self.history[-n].displays.values():
            self.console.print(call_block(d, self.glyphs, expanded=True))
        return True

    def _event(self, event: Event) -> None:
        if self.view is not None:
            self.view.handle(event)

    async def busy(self, work: Coroutine[Any, Any, T], *, view: TurnView | None = None) -> T | None:
        """Run `work` with the live region up and the keys watched; Ctrl-C/Esc interrupt it."""
        view = view or self.new_view()
        previous, self.view = self.view, view
        view.running = True
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._task = task
        self._presses = 0
        with contextlib.ExitStack() as stack:
            stack.enter_context(
                KeyReader(on_escape=self._escape, on_backtab=self._backtab, on_text=self._typed)
            )
            live = _SyncLive(
                view.live(),
                console=self.console,
                auto_refresh=False,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            stack.enter_context(live)
            refresher = asyncio.ensure_future(_refresh(live))
            try:
                return await task
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise
                return None
            finally:
                # The turn may end before the next press: the prompt takes it as the second.
                self._ctrl_c_in_turn = self._presses > 0
                if isinstance(self._asking, Eliciting):  # its call ended: nobody will answer
                    self._asking.escape()
                refresher.cancel()
                view.running = False
                view.footer = None
                view.flush(final=True)
                live.refresh()
                self._task = None
                self.view = previous

    def interrupt(self) -> None:
        """Stop the turn: running commands are killed, every call gets a result."""
        # The run's own interrupt settles every call, the one waiting for an answer included;
        # cancelling that answer first would leave its call without a result. A server's
        # question waits in the server's own task, which no interrupt reaches: declined here.
        if isinstance(self._asking, Eliciting):
            self._asking.escape()
        if self.agent.interrupt():
            if self.view is not None:
                self.view.status = "Interrupting"
            return
        if self._answer is not None and not self._answer.done():
            self._answer.cancel()
        if self._task is not None and not self._task.done():
            self._task.cancel()  # a slash command's work (/compact)

    def _report(self, result: RunResult, seconds: float) -> None:
        g = self.glyphs
        if result.subtype == "interrupted":
            self.console.print(
                Text(
                    f"{g.cancelled} Interrupted. Tell the agent what to do instead.",
                    style="yellow",
                )
            )
        elif result.is_error:
            # The error may quote the model server's own words.
            error = clean(result.error, ascii=g.ascii)
            self.console.print(Text(f"{g.failed} {result.subtype}: {error}", style="red"))
        u = result.usage
        parts = [f"in {_tokens(u.input_tokens)}"]
        if u.cached_tokens:
            parts[-1] += f" (cached {_tokens(u.cached_tokens)})"
        parts.append(f"out {_tokens(u.output_tokens)}")
        if result.cost_usd is not None:
            parts.append(f"${result.cost_usd:.4f}")
        parts.append(f"ctx {self.context_percent()}%")
        parts.append(f"{seconds:.1f} s")
        self.console.print(Text(f" {g.bullet} ".join(parts), style="dim"))

    # -- attachments ------------------------------------------------------------------------

    async def attach(self, text: str) -> str:
        """Append the files named `@path` in the message (read through the runtime's checks)."""
        attached: list[str] = []
        for match in _ATTACH.finditer(text):
            name = match.group(1).rstrip(".,;:!?)")
            path = (self.runtime.cwd / name).expanduser()
            if not path.is_file():
                continue
            # Outside a turn nobody is asked: what would need approval is not attached.
            result = await self.runtime.call(
                "read_file", {"file_path": name}, approver=_refuse_attachment
            )
            if result.ok:
                attached.append(f'<file path="{name}">\n{result.content}\n</file>')
                shown = clean(name, ascii=self.glyphs.ascii)
                self.console.print(Text(f"{self.glyphs.bullet} attached {shown}", style="dim"))
            else:
                self.console.print(
                    Text(
                        f"{self.glyphs.failed} not attached {clean(name)}: {_first(result)}",
                        "yellow",
                    )
                )
        if not attached:
            return text
        return text + ATTACHED + "\n\n".join(attached)

    # -- questions ---------------------------------------------------------------------------

    async def approve(self, question: Question) -> Approval:
        """Ask the user one question of a run (the agent's or a sub-agent's, named).

        The question takes the bottom of the live region until a key answers it; what was
        asked and the answer then stay in the scrollback. Questions asked at the same time
        (calls run side by side) come one after the other.
        """
        if isinstance(question, Elicitation):
            return await self._elicit(question)
        async with self._one_question:
            view = self.view
            if view is None:  # not inside a turn: nobody is watching the keys
                return Approval.deny("Nobody could be asked.", source="mode")
            display = None
            if isinstance(question, ApprovalRequest):
                # From the question itself: call ids are unique only within one agent's turn,
                # so a sub-agent's call may share its id with another waiting call.
                display = self.runtime.display(question.call, status=CallStatus.WAITING)
            save = self.options.save_rule
            options = choices(question, rule_file=self.options.rule_file if save else None)
            asking = Asking(
                question, options, self.glyphs, display=display, more=f"{SHOW_ALL} shows all"
            )
            view.flush()
            view.question = asking
            self._asking = asking
            loop = asyncio.get_running_loop()
            try:
                self._answer = loop.create_future()
                picked = await self._answer
                reason = ""
                if not isinstance(picked, Choice):  # Esc
                    picked = refusal(options)
                elif picked.action == "no" and isinstance(question, ApprovalRequest):
                    asking.reason = ""
                    self._answer = loop.create_future()
                    said = await self._answer
                    reason = said.strip() if isinstance(said, str) else ""
                answer = settle(question, picked, reason=reason, save_rule=save)
            finally:
                self._answer = None
                self._asking = None
                view.question = None
            if answer.warning:
                self.console.print(Text(clean(answer.warning, ascii=self.glyphs.ascii), "yellow"))
            self.console.print(answered(question, display, answer, self.glyphs))
            return answer.approval

    async def _elicit(self, question: Elicitation) -> Approval:
        """An MCP server's form or page (`_elicitation`), asked like any question of the run."""
        async with self._one_question:
            view = self.view
            if view is None:
                return Approval.deny("Nobody could be asked.", source="mode")
            asking = Eliciting.of(question, self.glyphs)
            view.flush()
            view.question = self._asking = asking
            try:
                outcome = await asking.answer
            finally:
                self._asking = None
                view.question = None
            return await finish(asking, outcome, self.console, self.options.open_url)

    async def choose(self, question: Question, options: tuple[Choice, ...]) -> Choice | None:
        """Ask `question` with `options` at the bottom of the live region; None for Esc.

        For a slash command's own question (`/rewind`), inside `busy` (the keys are read
        there), with the same keys and look as a run's questions. Outside `busy`, nobody is
        asked: None.
        """
        async with self._one_question:
            view = self.view
            if view is None:
                return None
            asking = Asking(question, options, self.glyphs)
            view.flush()
            view.question = asking
            self._asking = asking
            try:
                self._answer = asyncio.get_running_loop().create_future()
                picked = await self._answer
            finally:
                self._answer = None
                self._asking = None
                view.question = None
            return picked if isinstance(picked, Choice) else None

    def offer(self, text: str) -> None:
        """Put `text` in the next prompt's input box, to edit and send (or clear)."""
        self.typeahead = text + self.typeahead

    # -- keys during a turn ------------------------------------------------------------------

    def _escape(self) -> None:
        answer, asking = self._answer, self._asking
        if isinstance(asking, Eliciting):  # a server's question: declined
            asking.escape()
            return
        if answer is not None and not answer.done() and asking is not None:
            # Choosing: plain "No"; typing what to do instead: "No" without it.
            answer.set_result(None if asking.reason is None else "")
            return
        self.interrupt()

    def _backtab(self) -> None:
        self.cycle_mode()
        if self.view is not None:
            self.view.note(f"mode: {self.mode}")

    def _typed(self, text: str) -> None:
        answer, asking = self._answer, self._asking
        if isinstance(asking, Eliciting):
            asking.keys(text)
            return
        if answer is None or answer.done() or asking is None:
            for ch in text:
                if ch in "\x7f\b":
                    self.typeahead = self.typeahead[:-1]
                else:
                    self.typeahead += ch
            return
        if asking.reason is None:  # choosing
            for ch in text:
                if ch.lower() == SHOW_ALL:
                    self.console.print(asking.whole())
                    continue
                found = pick(asking.options, ch)
                if found is not None:
                    answer.set_result(found)
                    return
            return
        for ch in text:  # typing what the agent should do instead
            if ch in "\r\n":
                answer.set_result(asking.reason)
                return
            if ch in "\x7f\b":
                asking.reason = asking.reason[:-1]
            elif ch.isprintable():
                asking.reason += ch

    def _take_typeahead(self) -> str:
        text, self.typeahead = self.typeahead, ""
        return text.rstrip("\r\n")

    def _submitted_typeahead(self) -> str | None:
        # A line typed and entered while the agent worked is sent as soon as the turn ends.
        head, sep, rest = self.typeahead.replace("\r", "\n").partition("\n")
        if not sep or not head.strip():
            return None
        self.typeahead = rest
        shown = clean(head, ascii=self.glyphs.ascii)  # typed, or pasted from anywhere
        self.console.print(Text(f"{self.glyphs.cursor} {shown}", style="bold"))
        return head

    # -- state shown in the status line ------------------------------------------------------

    @property
    def mode(self) -> str:
        """The session's permission mode."""
        return self.runtime.session.mode.value

    def cycle_mode(self) -> None:
        """Default -> accept edits -> plan -> default (from any other mode: default)."""
        current = self.runtime.session.mode
        nxt = MODES[(MODES.index(current) + 1) % len(MODES)] if current in MODES else MODES[0]
        self.runtime.session.mode = nxt

    def context_percent(self) -> int:
        """How full the model's context window is."""
        window = self.agent.client.info.context_window or 1
        return min(999, round(100 * self.agent.context_tokens() / window))

    def status_line(self) -> str:
        """Model, mode, context used and cost, for the bottom of the prompt."""
        sep = f" {self.glyphs.bullet} "
        parts = [self.agent.client.spec, f"mode {self.mode}", f"ctx {self.context_percent()}%"]
        cost = self.agent.budget.cost_usd
        if cost is not None and self.agent.client.info.prices is not None:
            parts.append(f"${cost:.4f}")
        parts.append("shift+tab mode")
        parts.append("/help")
        return " " + sep.join(parts) + " "

    def markdown(self, text: str) -> None:
        """Print model text the way the turn shows it."""
        text = clean(text, ascii=self.glyphs.ascii)
        self.console.print(Text(text) if self.options.ascii else markdown(text))


class _SyncLive(Live):
    """rich's Live with each repaint wrapped in synchronized output (DEC mode 2026).

    A terminal that supports it shows the repaint at once instead of line by line; others
    ignore the sequence.
    """

    def refresh(self) -> None:
        """Repaint the live region as one frame."""
        sync = self.console.is_terminal and not self.console.is_dumb_terminal
        if sync:
            self.console.file.write("\x1b[?2026h")
        try:
            super().refresh()
        finally:
            if sync:
                self.console.file.write("\x1b[?2026l")
                self.console.file.flush()


async def _refresh(live: Live, every: float = 0.1) -> None:
    while True:
        await asyncio.sleep(every)
        live.refresh()


def _tokens(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def _first(result: ToolResult) -> str:
    return clean((result.content.strip().splitlines() or [""])[0][:400])


async def _refuse_attachment(question: Question) -> Approval:
    return Approval.deny(NOT_ATTACHED)
