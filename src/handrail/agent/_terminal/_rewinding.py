"""What `/rewind` and `handrail run --rewind` say: the prompts listed, and what a rewind did.

Plain strings (no rich), shared by the terminal agent and the headless `run`, so both say the
same thing in the same words. The text quotes prompts and paths as they are: each front end
spells out control characters where it prints (`clean`, `terminal_text`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...sandbox import Restored
from .._rewind import Rewound

__all__ = ["ATTACHED", "first_line", "names", "restored_lines", "rewound_lines", "typed_text"]

ATTACHED = "\n\nAttached files:\n\n"
"""What separates a message's text from the files its `@path`s attached."""


def typed_text(prompt: str) -> str:
    """The prompt as the user typed it: without the files its `@path`s attached."""
    return prompt.partition(ATTACHED)[0]


def first_line(text: str, limit: int = 60) -> str:
    """The first non-empty line of what the user typed, cut to `limit` characters."""
    line = next((ln.strip() for ln in typed_text(text).splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def names(paths: Sequence[str], most: int = 3) -> str:
    """`a, b, c +2 more`: the first `most` paths and how many others."""
    shown = ", ".join(paths[:most])
    return shown + (f" +{len(paths) - most} more" if len(paths) > most else "")


def restored_lines(restored: Restored | None) -> list[str]:
    """What a restore changed back, what it overwrote and what it left as it was."""
    if restored is None or not (restored.changed or restored.left):
        return ["no file to put back: none changed since then"]
    lines: list[str] = []
    if restored.changed:
        lines.append(f"restored {_count(restored.changed)}: {names(restored.changed, 8)}")
    if restored.overwritten:
        lines.append(
            f"overwrote changes made outside the session: {names(restored.overwritten, 8)}"
        )
    if restored.left:
        left = [f"{path} ({why})" for path, why in restored.left]
        lines.append(f"left as they are: {names(left, 5)}")
    return lines


def rewound_lines(done: Rewound, *, code: bool, undo: str) -> list[str]:
    """What `Agent.rewind` did: the files (when `code` was asked), the conversation, the undo.

    `undo` says how to take the file changes back (`/rewind undo`), shown when there are some.
    """
    lines = [f'went back to prompt {done.turn} ("{first_line(done.prompt)}")']
    if code:
        lines.extend(restored_lines(done.restored))
    if done.conversation:
        lines.append(f"the conversation is back to before prompt {done.turn}")
    else:
        lines.append("the conversation goes on as it was")
    if done.restored is not None and done.restored.undo is not None and undo:
        lines.append(f"to undo the file changes: {undo}")
    return lines


def _count(paths: Sequence[str]) -> str:
    return f"{len(paths)} path" if len(paths) == 1 else f"{len(paths)} paths"
