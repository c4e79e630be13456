"""Text files as they are on disk: encoding, byte-order mark, line endings, binary content.

`decode_text` keeps the text exactly as stored (line endings included) and reports its format;
`encode_text` turns text back into the same bytes. Every byte round-trips: UTF-8 and UTF-16
strictly, anything else through cp1252 with surrogate escapes (the five bytes cp1252 leaves
undefined survive too).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Literal

from .._contract import ErrorCode
from ..errors import ToolFailure

__all__ = [
    "TextFormat",
    "count_lines",
    "decode_text",
    "encode_text",
    "newline_of",
    "sniff_binary",
    "split_lines",
]

Newline = Literal["\n", "\r\n", "\r"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextFormat:
    """How a text file is stored."""

    encoding: Literal["utf-8", "utf-16-le", "utf-16-be", "cp1252"] = "utf-8"
    bom: bool = False
    newline: Newline = "\n"
    """The dominant line ending (the one new lines get)."""

    @property
    def label(self) -> str:
        """Short description, e.g. `UTF-8 with BOM, CRLF`."""
        names = {
            "utf-8": "UTF-8",
            "utf-16-le": "UTF-16 LE",
            "utf-16-be": "UTF-16 BE",
            "cp1252": "cp1252",
        }
        eol = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}[self.newline]
        return f"{names[self.encoding]}{' with BOM' if self.bom else ''}, {eol}"


_BOMS: tuple[tuple[bytes, Literal["utf-8", "utf-16-le", "utf-16-be"]], ...] = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "a PNG image"),
    (b"\xff\xd8\xff", 0, "a JPEG image"),
    (b"GIF87a", 0, "a GIF image"),
    (b"GIF89a", 0, "a GIF image"),
    (b"RIFF", 0, "a RIFF file (WebP image, WAV audio or AVI video)"),
    (b"%PDF-", 0, "a PDF document"),
    (b"PK\x03\x04", 0, "a ZIP archive (or a format built on it: docx, xlsx, jar, whl)"),
    (b"\x1f\x8b", 0, "a gzip archive"),
    (b"BZh", 0, "a bzip2 archive"),
    (b"\xfd7zXZ\x00", 0, "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive"),
    (b"\x28\xb5\x2f\xfd", 0, "a zstd archive"),
    (b"\x7fELF", 0, "an ELF executable or library"),
    (b"MZ", 0, "a Windows executable"),
    (b"\xcf\xfa\xed\xfe", 0, "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", 0, "a Java class file or Mach-O universal binary"),
    (b"\x00asm", 0, "a WebAssembly module"),
    (b"SQLite format 3\x00", 0, "an SQLite database"),
    (b"ustar", 257, "a tar archive"),
    (b"\x00\x00\x01\x00", 0, "an icon file"),
    (b"OggS", 0, "an Ogg media file"),
    (b"ID3", 0, "an MP3 audio file"),
    (b"fLaC", 0, "a FLAC audio file"),
)


def sniff_binary(data: bytes) -> str | None:
    """What binary content looks like (`"a PNG image"`), or None for text."""
    for bom, _ in _BOMS:
        if data.startswith(bom):
            return None  # UTF-16 text has NUL bytes; its BOM says it is text
    for magic, offset, what in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            if magic == b"MZ" and b"\x00" not in data[:8192]:
                continue  # plain text that happens to start with "MZ"
            return what
    if b"\x00" in data[:8192]:
        return "binary data (it contains NUL bytes)"
    return None


def newline_of(text: str) -> Newline:
    """The dominant line ending of `text` (LF when there is none)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if crlf > lf and crlf >= cr:
        return "\r\n"
    if cr > lf and cr > crlf:
        return "\r"
    return "\n"


def decode_text(data: bytes) -> tuple[str, TextFormat]:
    """The text as stored (line endings untouched) and its format."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError:
                break
            return text, TextFormat(encoding=encoding, bom=True, newline=newline_of(text))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("cp1252", errors="surrogateescape")
        return text, TextFormat(encoding="cp1252", bom=False, newline=newline_of(text))
    return text, TextFormat(encoding="utf-8", bom=False, newline=newline_of(text))


def encode_text(text: str, fmt: TextFormat) -> bytes:
    """Bytes for `text` in `fmt` (the BOM added back); refuses characters it cannot store."""
    errors = "surrogateescape" if fmt.encoding == "cp1252" else "strict"
    try:
        body = text.encode(fmt.encoding, errors=errors)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise ToolFailure(
            f"the file is stored as {fmt.label} and cannot hold {bad!r}; use characters that "
            f"{fmt.encoding} can store (or an ASCII escape), and the file is unchanged.",
            code=ErrorCode.INVALID_ARGS,
        ) from exc
    if fmt.bom:
        bom = next(b for b, enc in _BOMS if enc == fmt.encoding)
        return bom + body
    return body


def split_lines(text: str, newline: Newline = "\n") -> list[str]:
    """The lines of `text` without their endings, numbered the way read_file numbers them.

    CRLF and LF end a line in every file; a lone CR only in a file whose dominant ending is CR
    (elsewhere it is a stray character inside a line). A final line ending does not start an
    extra empty line; empty text has no lines.
    """
    if not text:
        return []
    flat = text.replace("\r\n", "\n")
    if newline == "\r":
        flat = flat.replace("\r", "\n")
    lines = flat.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def count_lines(data: bytes) -> int:
    """`len(split_lines(...))` of a file's bytes, without decoding unless it is UTF-16."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        text, fmt = decode_text(data)
        return len(split_lines(text, fmt.newline))
    if not data:
        return 0
    # CR and LF are single bytes in UTF-8 and cp1252 and never part of another character.
    lf = data.count(b"\n")
    crlf = data.count(b"\r\n")
    cr = data.count(b"\r") - crlf
    if cr > lf - crlf and cr > crlf:  # CR is the dominant ending (as in `newline_of`)
        ends = lf + cr
        last_ends = data.endswith((b"\n", b"\r"))
    else:
        ends = lf
        last_ends = data.endswith(b"\n")
    return ends + (0 if last_ends else 1)
