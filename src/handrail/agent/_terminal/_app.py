"""`ChatApp`: the interactive terminal agent, inline in the normal screen buffer.

Two phases alternate. At the prompt, prompt_toolkit owns the terminal (multi-line input,
history, completion of `/commands` and `@paths`, Shift-Tab for the mode, a status line).
During a turn, a small live region shows what runs while finished blocks go to scrollback,
and a key reader turns Esc into an interrupt, Shift-Tab into a mode change and anything typed
into type-ahead for the next prompt. Approvals are asked inside the turn, from the same keys.

Ctrl-C interrupts a turn (a second one quits); at the prompt, Ctrl-C twice or Ctrl-D exits.
An interrupted turn still gives every call a result, so the next message carries on.
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
from typing import Any, TypeVar

from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..._context import PermissionMode
from ..._contract import Approval, ToolResult
from ...display import CallStatus
from ...permissions import rules_to_allow
from .._conversation import AssistantMessage
from .._events import ApprovalAsked, Event, RunResult
from .._loop import Agent, Model
from .._sessions import SavedSession
from ._commands import COMMANDS, Commands
from ._glyphs import clean, glyphs
from ._keys import KeyReader
from ._layout import Hang
from ._render import approval_block, call_block
from ._view import CallGroup, TurnView, markdown

T = TypeVar("T")

MODES = (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN)
"""What Shift-Tab cycles through."""
EXIT_WINDOW = 2.0
"""Seconds within which a second Ctrl-C at the prompt exits."""
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
    version: str = ""


class ChatApp:
    """The terminal agent around one `Agent` (whose approver it becomes)."""

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
        self._answer: asyncio.Future[str] | None = None
        self._reason: str | None = None
        self._ctrl_c_at = 0.0
        self._quit = False
        self._task: asyncio.Task[Any] | None = None
        agent.approver = self.approve

    # -- the main loop -----------------------------------------------------------------------

    async def run(self, first: str | None = None, *, resumed: SavedSession | None = None) -> int:
        """Hold the conversation until the user leaves; returns the exit status.

        `first` is sent as the first message; `resumed` names the session carried on.
        """
        from ._input import PromptInput

        self.banner()
        if resumed is not None:
            self.resumed(resumed)
        prompt = PromptInput(self, COMMANDS)
        pending = first
        while True:
            if pending is None:
                try:
                    text = await prompt.read(default=self._take_typeahead())
                except KeyboardInterrupt:
                    now = time.monotonic()
                    if now - self._ctrl_c_at <= EXIT_WINDOW:
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
                if self._quit:
                    return 130
                continue
            await self.turn(text)
            if self._quit:
                return 130
            pending = self._submitted_typeahead()

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
        result = await self.busy(self.agent.run(prompt, on_event=self._event))
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
        loop = asyncio.get_running_loop()
        task: asyncio.Task[T] = asyncio.ensure_future(work)
        self._task = task
        pressed = 0

        def on_sigint() -> None:
            nonlocal pressed
            pressed += 1
            if pressed > 1:
                self._quit = True
                task.cancel()
                return
            self.interrupt()

        with contextlib.ExitStack() as stack:
            try:
                loop.add_signal_handler(signal.SIGINT, on_sigint)
                stack.callback(loop.remove_signal_handler, signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
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
        # cancelling that answer first would leave its call without a result.
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
            result = await self.runtime.call("read_file", {"file_path": name})
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
        return text + "\n\nAttached files:\n\n" + "\n\n".join(attached)

    # -- approvals ---------------------------------------------------------------------------

    async def approve(self, asked: ApprovalAsked) -> Approval:
        """Ask the user about one call (the agent's or a sub-agent's, named)."""
        view = self.view
        if view is None:  # outside a turn (an @attachment that needs approval): no
            return Approval.deny("Not approved: attachments outside the workspace are refused.")
        request = asked.request
        rules = rules_to_allow(request)
        shown = " + ".join(rules)
        display = asked.display or self.runtime.display(request.call, status=CallStatus.WAITING)
        choices = [
            ("y", "Yes"),
            ("s", f"Yes, and don't ask again for {shown} in this session"),
        ]
        if self.options.save_rule is not None:
            choices.append(("p", f"Yes, and always allow {shown} here ({self.options.rule_file})"))
        choices.append(("n", "No, and tell the agent what to do instead (esc)"))
        view.flush()
        self.console.print(
            approval_block(
                display,
                # Markdown code marks read as noise on a terminal.
                reason=clean(request.reason.replace("`", ""), ascii=self.glyphs.ascii),
                agent=asked.agent,
                choices=choices,
                g=self.glyphs,
            )
        )
        keys = "/".join(k for k, _ in choices)
        view.footer = Text(f"{self.glyphs.cursor} choose {keys}: ", style="bold")
        loop = asyncio.get_running_loop()
        self._answer = loop.create_future()
        self._reason = None
        try:
            key = await self._answer
            if key == "n":
                view.footer = Text(
                    "What should the agent do instead? (Enter to send, Esc to skip): ", "bold"
                )
                self._reason = ""
                self._answer = loop.create_future()
                said = await self._answer
                return self._said(
                    Approval.deny(_declined(said)), f"declined{': ' + said if said else ''}"
                )
            if key == "esc":
                return self._said(Approval.deny(_declined("")), "declined")
            if key == "s":
                return self._said(Approval.allow_always(), f"allowed {shown} for this session")
            if key == "p" and self.options.save_rule is not None:
                try:
                    where = self.options.save_rule(rules[0])
                    for rule in rules[1:]:
                        where = self.options.save_rule(rule)
                except (OSError, ValueError) as exc:
                    said = clean(f"could not save {shown}: {exc}", ascii=self.glyphs.ascii)
                    self.console.print(Text(said, style="yellow"))
                    return self._said(Approval.allow_once(), "allowed once")
                return self._said(Approval.allow_always(), f"allowed {shown}; saved in {where}")
            return self._said(Approval.allow_once(), "allowed once")
        finally:
            self._answer = None
            self._reason = None
            view.footer = None

    def _said(self, approval: Approval, text: str) -> Approval:
        style = "red" if approval.kind == "deny" else "green"
        # Wrapped under itself, not at column 0, on a narrow terminal.
        said = clean(text, ascii=self.glyphs.ascii)
        self.console.print(Hang(Text(f"  {self.glyphs.arrow} ", style=style), Text(said, style)))
        return approval

    # -- keys during a turn ------------------------------------------------------------------

    def _escape(self) -> None:
        answer = self._answer
        if answer is not None and not answer.done():
            answer.set_result("" if self._reason is not None else "esc")
            return
        self.interrupt()

    def _backtab(self) -> None:
        self.cycle_mode()
        if self.view is not None:
            self.view.note(f"mode: {self.mode}")

    def _typed(self, text: str) -> None:
        answer = self._answer
        if answer is None or answer.done():
            for ch in text:
                if ch in "\x7f\b":
                    self.typeahead = self.typeahead[:-1]
                else:
                    self.typeahead += ch
            return
        if self._reason is None:  # choosing
            for ch in text.lower():
                key = {"1": "y", "2": "s", "3": "p", "4": "n"}.get(ch, ch)
                if key in "ysn" or (key == "p" and self.options.save_rule is not None):
                    answer.set_result(key)
                    return
            return
        for ch in text:  # typing what the agent should do instead
            if ch in "\r\n":
                answer.set_result(self._reason.strip())
                return
            if ch in "\x7f\b":
                self._reason = self._reason[:-1]
            elif ch.isprintable():
                self._reason += ch
        if self.view is not None:
            self.view.footer = Text.assemble(
                ("What should the agent do instead? ", "bold"), (self._reason, "")
            )

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


def _declined(said: str) -> str:
    if said:
        return f"The user declined this call and said: {said}"
    return (
        "The user declined this call. Do not retry it; ask what they want instead, or take "
        "another approach."
    )
