"""The prompt: prompt_toolkit with history, completion of `/commands` and `@paths`, and keys.

Enter sends; Esc-Enter or Ctrl-J adds a line; pasted text keeps its newlines (bracketed
paste); Shift-Tab cycles the permission mode; Ctrl-O shows the last group of calls in full.
The bottom line shows model, mode, context used and cost. History is kept per workspace in
the user's state folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

if TYPE_CHECKING:
    from ._app import ChatApp

MAX_PATHS = 50
"""Most path completions offered at once."""


class ChatCompleter(Completer):
    """`/` completes commands; `@` completes paths under the working directory."""

    def __init__(self, app: ChatApp, commands: Sequence[tuple[str, str, str]]) -> None:
        self.app = app
        self.commands = commands

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        """Completions for the word before the cursor."""
        before = document.text_before_cursor
        if before.startswith("/") and " " not in before:
            for name, args, text in self.commands:
                if name.startswith(before[1:].lower()):
                    yield Completion(
                        f"/{name}",
                        start_position=-len(before),
                        display_meta=f"{args} {text}".strip(),
                    )
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            for path in self.paths(word[1:]):
                yield Completion("@" + path, start_position=-len(word))

    def paths(self, partial: str) -> list[str]:
        """Entries under the cwd starting with `partial` (directories end with `/`).

        Dot-entries show only when asked for; nothing outside the workspace's roots and
        nothing the runtime hides (secrets) is offered.
        """
        rt = self.app.runtime
        cwd = rt.cwd
        folder, _, stem = partial.rpartition("/")
        base = (cwd / folder).resolve() if folder else cwd
        roots = rt.read_roots
        if not any(base == r or base.is_relative_to(r) for r in roots):
            return []
        hidden = rt.hidden_paths
        out: list[str] = []
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)
        except OSError:
            return []
        for entry in entries:
            name = entry.name
            if not name.startswith(stem) or (name.startswith(".") and not stem.startswith(".")):
                continue
            full = Path(base, name)
            if any(full == h or full.is_relative_to(h) for h in hidden):
                continue
            is_dir = entry.is_dir(follow_symlinks=True)
            out.append(f"{folder + '/' if folder else ''}{name}{'/' if is_dir else ''}")
            if len(out) >= MAX_PATHS:
                break
        return out


class PromptInput:
    """Reads one message at a time."""

    def __init__(self, app: ChatApp, commands: Sequence[tuple[str, str, str]]) -> None:
        self.app = app
        history: History = InMemoryHistory()
        path = app.options.history_file
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                history = FileHistory(str(path))
            except OSError:
                pass
        self.session: PromptSession[str] = PromptSession(
            history=history,
            completer=ChatCompleter(app, commands),
            complete_while_typing=True,
            key_bindings=self._keys(),
            multiline=True,
            prompt_continuation="  ",
            bottom_toolbar=app.status_line,
            enable_suspend=False,
        )

    def _keys(self) -> KeyBindings:
        kb = KeyBindings()

        @kb.add("enter")
        def _send(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if state is not None and state.current_completion is not None:
                buffer.apply_completion(state.current_completion)
                return
            buffer.validate_and_handle()

        @kb.add("escape", "enter")
        @kb.add("c-j")
        def _newline(event: KeyPressEvent) -> None:
            event.current_buffer.insert_text("\n")

        @kb.add("c-o")
        def _expand(event: KeyPressEvent) -> None:
            run_in_terminal(lambda: self.app.expand(1))

        @kb.add("s-tab")
        def _mode(event: KeyPressEvent) -> None:
            self.app.cycle_mode()
            event.app.invalidate()

        return kb

    async def read(self, default: str = "") -> str:
        """The next message (KeyboardInterrupt on Ctrl-C, EOFError on Ctrl-D).

        Ctrl-C is a key here (the terminal is raw): the app's own signal handler stays in
        place for the moments around the prompt.
        """
        mark = f"{self.app.glyphs.cursor} "
        return await self.session.prompt_async(mark, default=default, handle_sigint=False)

    def cancel(self) -> None:
        """End the prompt if it is up, as Ctrl-C does (`read` raises KeyboardInterrupt)."""
        app = self.session.app
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(exception=KeyboardInterrupt())
