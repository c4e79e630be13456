"""Slash commands of the terminal agent: /help, /clear, /compact, /model, /mode, /tools, ...

Each is a method `cmd_<name>(args)`; it returns an exit status to leave the app, else None.
A command that asks something (`/rewind`) asks it the way a run's questions are asked: inside
`ChatApp.busy`, at the bottom of the live region, answered by a key (`ChatApp.choose`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from ..._context import PermissionMode
from ..._contract import Approval, Question
from ...errors import ConfigurationError, HandrailError
from ...sandbox import Restored
from .._conversation import UserMessage
from .._rewind import Rewound, TurnCheckpoint
from .._sessions import find_session, is_own_session, load_session, recent_sessions
from ._glyphs import clean
from ._question import Answer, Choice, answered
from ._rewinding import first_line, names, restored_lines, rewound_lines, typed_text

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
    ("rewind", "[N|undo]", "list the prompts, or go back to where prompt N began"),
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

    async def cmd_rewind(self, args: str) -> int | None:
        """List the prompts; go back to where one began (the files, the conversation, or both)."""
        if args.lower() == "undo":
            return await self._undo_rewind()
        turns = self.app.agent.checkpoints()
        if not turns:
            self.say("no prompt to go back to yet", "dim")
            return None
        if not args:
            table = Table.grid(padding=(0, 2))
            for t in turns:
                table.add_row(
                    f"{t.turn}.",
                    Text(clean(first_line(t.prompt), ascii=self.app.glyphs.ascii)),
                    Text(
                        clean(names(t.files), ascii=self.app.glyphs.ascii) if t.files else "-",
                        style="dim",
                    ),
                )
            self.app.console.print(table)
            self.say(
                "go back with /rewind N (then choose: code and conversation, one of them, or "
                "cancel); /rewind undo takes back the last rewind's file changes",
                "dim",
            )
            return None
        if not args.isdigit() or not 1 <= int(args) <= len(turns):
            self.say(f"no prompt {args}: /rewind N takes 1 to {len(turns)}", "yellow")
            return None
        view = self.app.new_view()
        view.status = "Rewinding"
        done = await self.app.busy(self._rewind(turns[int(args) - 1], turns), view=view)
        if done is None:
            return None
        rewound, code = done
        if not rewound.ok:
            self.say(f"nothing was rewound ({rewound.refused})", "yellow")
            return None
        for line in rewound_lines(rewound, code=code, undo="/rewind undo"):
            self.say(line, "dim")
        if rewound.conversation:
            self.app.offer(typed_text(rewound.prompt))
            self.say("its text is back in the input box: edit it and press Enter", "dim")
        return None

    async def _rewind(
        self, turn: TurnCheckpoint, turns: list[TurnCheckpoint]
    ) -> tuple[Rewound, bool] | None:
        """Ask what to restore, then rewind (None: cancelled)."""
        app = self.app
        since: dict[str, None] = {}
        for later in turns[turn.turn - 1 :]:
            since.update(dict.fromkeys(later.files))
        code = app.runtime.keeps_checkpoints and turn.checkpoint is not None
        changed = (
            f"Files changed since: {names(list(since))}." if since else "No file changed since."
        )
        question = Question(
            reason=f'Go back to where prompt {turn.turn} began ("{first_line(turn.prompt)}")? '
            f"{changed}"
        )
        options: tuple[Choice, ...] = (
            (
                Choice("b", "Restore code and conversation", "yes"),
                Choice("c", "Restore conversation only (the files stay as they are)", "yes"),
                Choice("f", "Restore code only (the conversation goes on)", "yes"),
                REWIND_CANCEL,
            )
            if code
            else (Choice("c", "Restore conversation", "yes"), REWIND_CANCEL)
        )
        picked = await app.choose(question, options)
        said = picked.label if picked is not None and picked.action != "no" else "cancelled"
        approval = Approval.deny(said) if said == "cancelled" else Approval.allow_once()
        app.console.print(answered(question, None, Answer(approval, said), app.glyphs))
        if picked is None or picked.action == "no":
            return None
        with_code = picked.key in ("b", "f")
        done = await app.agent.rewind(
            turn.turn,
            code=with_code,
            conversation=picked.key in ("b", "c"),
            approver=app.approve,
        )
        return done, with_code

    async def _undo_rewind(self) -> int | None:
        """Put the files back as they were before the last rewind (the conversation stays)."""
        rt = self.app.runtime
        restores = (
            [c for c in rt.checkpoints() if c.tool == "restore"] if rt.keeps_checkpoints else []
        )
        if not restores:
            self.say("no rewind to undo: no file was put back in this session", "dim")
            return None
        view = self.app.new_view()
        view.status = "Undoing"
        restored = await self.app.busy(self._undo(restores[-1].id), view=view)
        if restored is None:
            return None
        if not restored.ok:
            self.say(f"nothing was undone ({restored.refused})", "yellow")
            return None
        for line in restored_lines(restored):
            self.say(line, "dim")
        if restored.undo is not None:
            self.say("/rewind undo again takes this back", "dim")
        return None

    async def _undo(self, point: int) -> Restored | None:
        app = self.app
        plan = await app.runtime.restore_plan(point)
        if not plan.paths:
            return Restored(checkpoint=point, undo=None)
        question = Question(
            reason=f"Put the files back as they were before the last rewind? This changes "
            f"{names(plan.paths)}; the conversation stays as it is"
        )
        options = (Choice("y", "Yes", "yes"), REWIND_CANCEL)
        picked = await app.choose(question, options)
        said = "yes" if picked is not None and picked.action == "yes" else "cancelled"
        approval = Approval.allow_once() if said == "yes" else Approval.deny(said)
        app.console.print(answered(question, None, Answer(approval, said), app.glyphs))
        if said != "yes":
            return None
        return await app.runtime.restore(point, approver=app.approve)


REWIND_CANCEL = Choice("n", "Cancel", "no")
"""The choice that leaves everything as it is (also Esc)."""
