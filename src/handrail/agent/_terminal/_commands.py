"""Slash commands of the terminal agent: /help, /clear, /compact, /model, /mode, /tools, ...

Each is a method `cmd_<name>(args)`; it returns an exit status to leave the app, else None.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from ..._context import PermissionMode
from ...errors import ConfigurationError, HandrailError
from .._conversation import UserMessage
from .._sessions import find_session, is_own_session, load_session, recent_sessions
from ._glyphs import clean

if TYPE_CHECKING:
    from ._app import ChatApp

COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("help", "", "commands and keys"),
    ("clear", "", "start a new conversation"),
    ("compact", "[FOCUS]", "summarise the conversation so far (keeping FOCUS)"),
    ("model", "[PROVIDER:MODEL]", "show or change the model"),
    ("mode", "[MODE]", "show or change the permission mode"),
    ("tools", "", "the tools the model can call"),
    ("resume", "[ID]", "list this workspace's sessions, or carry one on"),
    ("cost", "", "tokens used and, where prices are known, money"),
    ("expand", "[N]", "show the last (or Nth last) group of calls in full"),
    ("exit", "", "leave (also Ctrl-D)"),
)
"""(name, arguments, help) of every command, in the order /help lists them."""

KEYS = (
    ("Enter", "send"),
    ("Esc Enter / Ctrl-J", "new line"),
    ("@path", "attach a file"),
    ("Esc / Ctrl-C", "interrupt the agent (running commands are stopped)"),
    ("Shift-Tab", "cycle the mode: default, accept_edits, plan"),
    ("Ctrl-O", "show the last group of calls in full (as /expand)"),
    ("Ctrl-C twice / Ctrl-D", "exit"),
)


class Commands:
    """Runs slash commands against a `ChatApp`."""

    def __init__(self, app: ChatApp) -> None:
        self.app = app

    async def run(self, line: str) -> int | None:
        """Run `/name args`; an unknown name gets the closest ones."""
        name, _, args = line[1:].partition(" ")
        name = name.lower()
        if name == "quit":
            name = "exit"
        handler = getattr(self, f"cmd_{name}", None)
        if handler is None or name not in {c[0] for c in COMMANDS}:
            near = [c[0] for c in COMMANDS if c[0].startswith(name[:2])] if name else []
            hint = f" (did you mean /{', /'.join(near)}?)" if near else ""
            self.say(f"unknown command /{name}{hint}; /help lists them", "yellow")
            return None
        return await handler(args.strip())

    def say(self, text: str, style: str = "") -> None:
        """One line of the command's answer."""
        self.app.console.print(Text(clean(text, ascii=self.app.glyphs.ascii), style=style))

    # -- the commands --------------------------------------------------------------------------

    async def cmd_help(self, args: str) -> int | None:
        """List commands and keys."""
        table = Table.grid(padding=(0, 2))
        for name, arg, text in COMMANDS:
            table.add_row(f"/{name} {arg}".rstrip(), Text(text, style="dim"))
        for key, text in KEYS:
            table.add_row(key, Text(text, style="dim"))
        self.app.console.print(table)
        return None

    async def cmd_exit(self, args: str) -> int | None:
        """Leave."""
        return 0

    async def cmd_clear(self, args: str) -> int | None:
        """A new conversation (the old one stays resumable)."""
        old = self.app.agent.session_id
        new = self.app.agent.clear()
        self.say(f"new conversation {new[:8]} (the last one: /resume {old[:8]})", "dim")
        return None

    async def cmd_compact(self, args: str) -> int | None:
        """Summarise the conversation now."""
        view = self.app.new_view()
        view.status = "Compacting"
        done = await self.app.busy(self.app.agent.compact(args or None), view=view)
        if done is None:
            self.say("nothing was compacted", "yellow")
        else:
            self.say(
                f"compacted: {done.tokens_before:,} -> {done.tokens_after:,} tokens "
                f"({done.summarized_messages} messages summarised, {done.pruned_results} "
                "tool outputs pruned)",
                "dim",
            )
        return None

    async def cmd_model(self, args: str) -> int | None:
        """Show or change the model."""
        agent = self.app.agent
        if not args:
            window = agent.client.info.context_window
            self.say(f"model: {agent.client.spec} (context window {window:,} tokens)")
            return None
        make = self.app.options.make_model
        if make is None:
            self.say("this session cannot change its model", "yellow")
            return None
        try:
            model = make(args)
        except (ConfigurationError, HandrailError, ValueError) as exc:
            self.say(f"cannot use {args}: {exc}", "red")
            return None
        previous = agent.set_model(model)
        await previous.aclose()
        self.say(f"model: {model.spec}", "dim")
        return None

    async def cmd_mode(self, args: str) -> int | None:
        """Show or change the permission mode."""
        session = self.app.runtime.session
        if not args:
            modes = ", ".join(m.value for m in PermissionMode)
            self.say(f"mode: {session.mode.value} (modes: {modes}; Shift-Tab cycles)")
            return None
        try:
            mode = PermissionMode(args.replace("-", "_"))
        except ValueError:
            self.say(
                f"no mode {args!r}; one of {', '.join(m.value for m in PermissionMode)}", "red"
            )
            return None
        if mode is PermissionMode.BYPASS:
            self.say(
                "bypass cannot be turned on from inside a session; start with --mode bypass", "red"
            )
            return None
        session.mode = mode
        self.say(f"mode: {mode.value}", "dim")
        return None

    async def cmd_tools(self, args: str) -> int | None:
        """The tools the model sees now."""
        table = Table.grid(padding=(0, 2))
        for tool in self.app.runtime.tools(provider=self.app.agent.client.provider):
            first = (tool.description.strip().splitlines() or [""])[0]
            table.add_row(
                tool.name,
                Text(tool.kind.value, style="dim"),
                Text(clean(first, ascii=self.app.glyphs.ascii)[:70], style="dim"),
            )
        self.app.console.print(table)
        return None

    async def cmd_cost(self, args: str) -> int | None:
        """Tokens and money spent in this session."""
        budget = self.app.agent.budget
        u = budget.usage
        self.say(
            f"tokens: {u.input_tokens:,} in ({u.cached_tokens:,} cached), {u.output_tokens:,} "
            f"out, {u.requests} requests"
        )
        if budget.cost_usd is None:
            self.say(
                "cost: unknown (handrail does not know the prices of "
                f"{self.app.agent.client.model!r})",
                "dim",
            )
        else:
            self.say(f"cost: ${budget.cost_usd:.4f}")
        self.say(
            f"context: {self.app.agent.context_tokens():,} tokens "
            f"({self.app.context_percent()}% of the window)",
            "dim",
        )
        return None

    async def cmd_expand(self, args: str) -> int | None:
        """Show a past group of calls in full."""
        n = int(args) if args.isdigit() and int(args) > 0 else 1
        if not self.app.expand(n):
            self.say("no calls to show yet", "dim")
        return None

    async def cmd_resume(self, args: str) -> int | None:
        """List sessions, or carry one on."""
        root = self.app.runtime.root
        if not args:
            paths = recent_sessions(root)
            if not paths:
                self.say("no saved sessions for this workspace yet", "dim")
                return None
            table = Table.grid(padding=(0, 2))
            for path in paths:
                try:
                    saved = load_session(path)
                except (OSError, ValueError, HandrailError):
                    continue
                first = next(
                    (
                        m.text
                        for m in saved.messages
                        if isinstance(m, UserMessage) and m.kind == "prompt"
                    ),
                    "",
                )
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(path.stat().st_mtime))
                table.add_row(
                    saved.id[:8],
                    when,
                    Text(
                        clean(" ".join(first.split()), ascii=self.app.glyphs.ascii)[:60],
                        style="dim",
                    ),
                )
            self.app.console.print(table)
            self.say("carry one on with /resume ID", "dim")
            return None
        try:
            path = find_session(root, args)
            saved = load_session(path)
        except (OSError, ValueError, HandrailError) as exc:
            self.say(str(exc), "red")
            return None
        self.app.agent.switch_to(saved, own=is_own_session(path))
        self.app.resumed(saved)
        return None
