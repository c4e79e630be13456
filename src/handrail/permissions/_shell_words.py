"""Shell words: quote removal, re-quoting, and tree-sitter word nodes turned into argv entries.

A word's value is known only when nothing in it is expanded at run time; a word that depends on
`$x` or `$(...)` keeps the text as written (and `value` is None), so a caller can never mistake
it for a literal.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["Word", "assignment", "group_words", "node_text", "render"]

_SAFE_WORD = re.compile(r"[\w@%+=:,./-][\w@%+=:,./~^-]*")
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_ANSI_SIMPLE = dict(zip("abeEfnrtv\\'\"?", "\a\b\x1b\x1b\f\n\r\t\v\\'\"?", strict=True))
_HEX1 = re.compile(r"[0-9A-Fa-f]")
_HEX2 = re.compile(r"[0-9A-Fa-f]{1,2}")
_OCTAL2 = re.compile(r"[0-7]{0,2}")
_ASSIGNMENT_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


@dataclass(slots=True)
class Word:
    """A shell word: its value after quote removal, and how it was written."""

    value: str | None
    """The word after quote removal; None when it depends on an expansion."""
    raw: str
    """The word as written."""
    expands: bool = False
    """Globs or braces: the shell may turn it into other words."""
    tilde: bool = False
    """Has an unquoted `~` the shell may expand (at the start, or after `=` or `:` in an
    assignment-like `NAME=...` word): a home directory, never an option, but not literal."""

    @property
    def text(self) -> str:
        """The word in a normalised command: its value re-quoted, or as written if not static."""
        if self.value is None or self.expands or self.tilde:
            return self.raw
        return _quote(self.value)

    @property
    def arg(self) -> str:
        """The word in an argv: its value, or as written when it depends on an expansion."""
        return self.raw if self.value is None else self.value

    @property
    def static(self) -> str | None:
        """The value when it is known and the shell will not expand it further."""
        return None if self.expands or self.tilde else self.value


def _quote(value: str) -> str:
    return value if _SAFE_WORD.fullmatch(value) else shlex.quote(value)


def render(argv: Sequence[str]) -> str:
    """An argv as one normalised command: words quoted only where they need it."""
    return " ".join(_quote(a) for a in argv)


def _unquote_bare(text: str) -> tuple[str, bool]:
    out: list[str] = []
    expands = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        if c in "*?[":
            expands = True
        out.append(c)
        i += 1
    return "".join(out), expands


def _ansi_c(body: str) -> str | None:
    r"""The value of `$'body'` as bash gives it, or None where that is not certain.

    `\xHH` and octal escapes are bytes (the result must be valid UTF-8); `\u` and `\U`
    depend on the locale, and a NUL ends the string in bash: neither is static.
    """
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out += c.encode("utf-8", "surrogatepass")
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _ANSI_SIMPLE:
            out += _ANSI_SIMPLE[e].encode()
        elif e == "x":
            m = _HEX2.match(body, i)
            if m is None:
                out += b"\\x"
            else:
                out.append(int(m.group(), 16))
                i = m.end()
        elif e in "uU":
            if _HEX1.match(body, i):
                return None  # UTF-8 in a UTF-8 locale, `\\u263A` in the C locale
            out += b"\\" + e.encode()
        elif e in "01234567":
            m = _OCTAL2.match(body, i)
            digits = e + (m.group() if m else "")
            out.append(int(digits, 8) & 0xFF)
            i += len(digits) - 1
        elif e == "c" and i < n:
            # A control character; `\\c\\\\` takes both backslashes, `\\c?` is DEL.
            k = body[i]
            if not k.isascii():
                return None  # bash takes one byte of a multi-byte character
            i += 2 if body.startswith("\\\\", i) else 1
            out.append(0x7F if k == "?" else ord(k.upper()) & 0x1F)
        else:
            out += ("\\" + e).encode("utf-8", "surrogatepass")
    if 0 in out:
        return None
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None  # bytes that are not text: no rule names them


def _dq_unescape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)


# -- from tree-sitter nodes ----------------------------------------------------------------


def node_text(src: bytes, node: Node) -> str:
    """The source text of `node`."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def group_words(src: bytes, nodes: Sequence[Node]) -> list[Word]:
    """Words from argument nodes.

    Nodes that touch (or meet across a backslash-newline, which tree-sitter reads as a
    space but bash removes) are one word.
    """
    groups: list[list[Node]] = []
    prev_end = -1
    for n in nodes:
        start = n.start_byte
        if groups and (start == prev_end or not src[prev_end:start].replace(b"\\\n", b"")):
            groups[-1].append(n)
        else:
            groups.append([n])
        prev_end = n.end_byte
    return [_word(src, g) for g in groups]


def assignment(src: bytes, node: Node) -> tuple[str, str]:
    """(name, normalised text) of `NAME=value`."""
    name_node = node.child_by_field_name("name")
    name = node_text(src, name_node) if name_node is not None else ""
    value = node.child_by_field_name("value")
    op = next((node_text(src, c) for c in node.children if c.type in ("=", "+=")), "=")
    rendered = group_words(src, [value]).pop().text if value is not None else ""
    return name, f"{name}{op}{rendered}"


def _word(src: bytes, nodes: Sequence[Node]) -> Word:
    if len(nodes) == 1 and nodes[0].type == "word":
        raw = node_text(src, nodes[0])
        if _SAFE_WORD.fullmatch(raw) and "~" not in raw:
            return Word(value=raw, raw=raw)  # the common case: a plain word
    parts: list[Node] = []
    for n in nodes:
        parts.extend(n.children if n.type == "concatenation" else (n,))
    values: list[str] = []
    bare: list[str] = []
    dynamic = expands = tilde = False
    for k, p in enumerate(parts):
        t, raw = p.type, node_text(src, p)
        value: str | None
        if t == "word":
            value, globbed = _unquote_bare(raw)
            expands = expands or globbed
            tilde = tilde or (k == 0 and raw.startswith("~"))
            bare.append(raw)
        elif t in ("number", "variable_name"):
            value = raw
        elif t == "raw_string":
            value = raw[1:-1]
        elif t == "string":
            static = all(c.type == "string_content" for c in p.named_children)
            value = _DQ_ESCAPE.sub(_dq_unescape, raw[1:-1]) if static else None
        elif t == "ansi_c_string":
            value = _ansi_c(raw[2:-1])
        elif t == "brace_expression":
            value, expands = raw, True
        else:
            value = None
        if value is None:
            dynamic = True
        else:
            values.append(value)
    joined = "".join(bare)
    if "{" in joined and ("," in joined or ".." in joined):
        expands = True
    if "~" in joined and bare and _ASSIGNMENT_LIKE.match(bare[0]):
        tilde = True  # bash expands `a=~/x` and `a=b:~/x` in arguments too
    raw = src[nodes[0].start_byte : nodes[-1].end_byte].decode("utf-8", "replace")
    value = None if dynamic else "".join(values)
    return Word(value=value, raw=raw, expands=expands, tilde=tilde)
