"""The terminal's glyphs (Unicode or plain ASCII) and the cleaning every shown string goes through.

Text on screen comes from tools, files, commands and the model itself, so it is never trusted:
`clean` spells control characters (an `ESC` would let a file or a command's output recolour,
retitle or redraw the terminal), bidirectional overrides and zero-width characters (which can
make `rm -rf ~` read as something else in an approval) as their escapes, the way every front
end does (`handrail.display.terminal_text`). In ASCII mode it also spells every other
character in ASCII, so a terminal without Unicode shows no mojibake.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from ...display import CallStatus, terminal_text

__all__ = ["ASCII", "UNICODE", "Glyphs", "clean", "glyphs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Glyphs:
    """The marks the terminal draws: one set for Unicode terminals, one for plain ASCII."""

    spinner: tuple[str, ...]
    """Frames of a running call's mark, shown in turn (`frame % len`)."""
    waiting: str
    """A call waiting for the user's approval."""
    done: str
    failed: str
    denied: str
    cancelled: str
    bullet: str
    """A list item (the lead's notes, the model's text)."""
    elbow: str
    """Joins what is under a line to it: output, a diff, a group's rows."""
    ellipsis: str
    """Marks text cut to fit, and `… +N lines`."""
    arrow: str
    cursor: str
    """The selected choice of an approval."""
    ascii: bool

    def status(self, status: CallStatus, frame: int = 0) -> str:
        """The mark of a call in `status` (the spinner's `frame` while it runs)."""
        if status is CallStatus.RUNNING:
            return self.spinner[frame % len(self.spinner)]
        return {
            CallStatus.WAITING: self.waiting,
            CallStatus.DONE: self.done,
            CallStatus.FAILED: self.failed,
            CallStatus.DENIED: self.denied,
            CallStatus.CANCELLED: self.cancelled,
        }[status]


UNICODE = Glyphs(
    spinner=("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"),
    waiting="?",
    done="✓",
    failed="✗",
    denied="⊘",
    cancelled="■",
    bullet="•",
    elbow="└",
    ellipsis="…",
    arrow="→",
    cursor="❯",
    ascii=False,
)
ASCII = Glyphs(
    spinner=("|", "/", "-", "\\"),
    waiting="?",
    done="*",
    failed="x",
    denied="!",
    cancelled="#",
    bullet="-",
    elbow="|_",
    ellipsis="...",
    arrow="->",
    cursor=">",
    ascii=True,
)


def glyphs(ascii: bool) -> Glyphs:
    """The ASCII set when `ascii`, else the Unicode one."""
    return ASCII if ascii else UNICODE


# What NFKD does not spell in ASCII but a reader expects (NFKD already turns `…` into `...`).
_SPELLED: Mapping[int, str] = str.maketrans(
    {
        "→": "->",
        "←": "<-",
        "⇒": "=>",
        "—": "--",
        "–": "-",
        "‘": "'",
        "’": "'",
        "“": '"',
        "”": '"',
        "•": "*",
        "·": "*",
        "✓": "v",
        "✗": "x",
        "×": "x",
        "≤": "<=",
        "≥": ">=",
        "≠": "!=",
        "\u00a0": " ",
    }
)


def clean(text: str, *, ascii: bool = False) -> str:
    r"""`text` made safe to print: controls and invisible characters spelled, tabs expanded.

    `terminal_text` spells them (`\x1b[2J`, `\r`, `\u202e`); in `ascii` mode everything
    else is spelled in ASCII too.
    """
    text = terminal_text(text).expandtabs(4)
    if not ascii or text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text.translate(_SPELLED)):
        if ch.isascii():
            out.append(ch)
        elif not unicodedata.combining(ch):  # é -> e + U+0301: keep the e, drop the accent
            out.append("?")
    return "".join(out)
