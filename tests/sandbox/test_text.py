"""Text formats: decoding and re-encoding every byte, line endings, line numbering, binary sniffing."""

from __future__ import annotations

import codecs

import pytest

from handrail import ErrorCode, ToolFailure
from handrail.sandbox import (
    TextFormat,
    decode_text,
    encode_text,
    newline_of,
    sniff_binary,
    split_lines,
)
from handrail.sandbox._text import count_lines

SAMPLES = [
    b"",
    b"\n",
    b"one",
    b"one\n",
    b"one\ntwo",
    b"one\r\ntwo\r\n",
    b"a\r\nb\nc\r\n",
    b"a\rb\rc\r",
    b"a\rb\rc",
    b"a\rb\nc",  # LF-dominant tie: the lone CR stays inside a line
    b"stray\rcr\nin lf\n",
    b"\r\n\r\n\r\n",
    codecs.BOM_UTF8 + b"bom\r\n",
    "caf\u00e9\n".encode("cp1252") + b"\x81\x8d\n",
    codecs.BOM_UTF16_LE + "a\r\nb\u010a\r\n".encode("utf-16-le"),  # U+010A has a 0x0A byte
    codecs.BOM_UTF16_BE + "\u0a0d\nx".encode("utf-16-be"),
]


@pytest.mark.parametrize(
    ("text", "newline", "lines"),
    [
        ("", "\n", []),
        ("\n", "\n", [""]),
        ("a", "\n", ["a"]),
        ("a\nb\n", "\n", ["a", "b"]),
        ("a\r\nb\r\n", "\r\n", ["a", "b"]),
        ("a\r\nb\n", "\r\n", ["a", "b"]),
        ("a\rb\r", "\r", ["a", "b"]),
        ("a\rb\nc", "\n", ["a\rb", "c"]),
        ("a\n\nb", "\n", ["a", "", "b"]),
        ("a\x0cb\u2028c\n", "\n", ["a\x0cb\u2028c"]),  # only CR/LF end lines, unlike splitlines
    ],
)
def test_split_lines(text: str, newline: str, lines: list[str]) -> None:
    assert split_lines(text, newline) == lines  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("data", SAMPLES)
def test_count_lines_agrees_with_split_lines(data: bytes) -> None:
    text, fmt = decode_text(data)
    assert count_lines(data) == len(split_lines(text, fmt.newline))


@pytest.mark.parametrize("data", SAMPLES)
def test_every_sample_round_trips(data: bytes) -> None:
    text, fmt = decode_text(data)
    assert encode_text(text, fmt) == data


def test_every_byte_round_trips_through_the_single_byte_fallback() -> None:
    data = bytes(range(256)) * 2
    text, fmt = decode_text(data)
    assert fmt.encoding == "cp1252"
    assert encode_text(text, fmt) == data


@pytest.mark.parametrize(
    ("data", "label"),
    [
        (b"plain\n", "UTF-8, LF"),
        (b"win\r\nwin\r\n", "UTF-8, CRLF"),
        (codecs.BOM_UTF8 + b"x\n", "UTF-8 with BOM, LF"),
        (codecs.BOM_UTF16_LE + "x\r\n".encode("utf-16-le"), "UTF-16 LE with BOM, CRLF"),
        (codecs.BOM_UTF16_BE + "x\n".encode("utf-16-be"), "UTF-16 BE with BOM, LF"),
        (b"caf\xe9\r", "cp1252, CR"),
    ],
)
def test_formats_are_detected(data: bytes, label: str) -> None:
    _, fmt = decode_text(data)
    assert fmt.label == label


def test_the_bom_is_not_part_of_the_text() -> None:
    text, fmt = decode_text(codecs.BOM_UTF8 + b"x")
    assert text == "x"
    assert fmt.bom


def test_a_character_the_encoding_cannot_hold_is_refused() -> None:
    with pytest.raises(ToolFailure) as info:
        encode_text("\u4e16", TextFormat(encoding="cp1252"))
    assert info.value.code == ErrorCode.INVALID_ARGS
    assert "cp1252" in info.value.message


@pytest.mark.parametrize(
    ("text", "newline"),
    [("", "\n"), ("a\nb\n", "\n"), ("a\r\nb\r\nc\n", "\r\n"), ("a\rb\r", "\r"), ("a\rb\n", "\n")],
)
def test_newline_of(text: str, newline: str) -> None:
    assert newline_of(text) == newline


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00", "a PNG image"),
        (b"%PDF-1.7\n", "a PDF document"),
        (b"\x7fELF\x02\x01", "an ELF executable or library"),
        (b"text with a \x00 NUL", "binary data (it contains NUL bytes)"),
        (b"MZ\x90\x00\x03", "a Windows executable"),
        (b"plain text\n", None),
        (b"MZ is how this text starts\n", None),
        (codecs.BOM_UTF16_LE + "text".encode("utf-16-le"), None),
        (b"", None),
    ],
)
def test_sniff_binary(data: bytes, what: str | None) -> None:
    assert sniff_binary(data) == what
