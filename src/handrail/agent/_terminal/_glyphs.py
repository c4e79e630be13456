"""The terminal's glyphs (Unicode or plain ASCII) and the cleaning every shown string goes through.

Text on screen comes from tools, files, commands and the model itself, so it is never trusted:
`clean` turns control characters (an `ESC` would let a file or a command's output recolour,
retitle or redraw the terminal) and bidirectional overrides (which can make `rm -rf ~` read as
something else in an approval) into visible stand-ins. In ASCII mode it also spells every
other character in ASCII, so a terminal without Unicode shows no mojibake.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from ...display import CallStatus

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


# C0 controls in caret notation (`ESC` shows as `^[`, as `cat -v` does), C1 controls and
# bidirectional embeddings, overrides and isolates as `?`. Tabs become spaces before this.
_UNSAFE: Mapping[int, str] = {
    **{c: "^" + chr(c + 64) for c in range(0x20) if c != 0x0A},
    0x7F: "^?",
    **dict.fromkeys(range(0x80, 0xA0), "?"),
    **dict.fromkeys((*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F), "?"),
}

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


# Whole escape sequences (a command's colours, a window title) are dropped rather than shown.
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def clean(text: str, *, ascii: bool = False) -> str:
    """`text` made safe to print: tabs expanded, controls visible, ASCII only when `ascii`.

    Escape sequences (colours, titles) are dropped, other control characters shown in caret
    notation (`^[`, `^H`), bidirectional overrides as `?`.
    """
    if "\x1b" in text:
        text = _SEQUENCE.sub("", text)
    text = text.expandtabs(4).translate(_UNSAFE)
    if not ascii or text.isascii():
        return text
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text.translate(_SPELLED)):
        if ch.isascii():
            out.append(ch)
        elif not unicodedata.combining(ch):  # é -> e + U+0301: keep the e, drop the accent
            out.append("?")
    return "".join(out)
