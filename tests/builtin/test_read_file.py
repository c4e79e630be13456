"""read_file end to end through `Runtime`: numbered lines, paging, formats, refusals, records."""

from __future__ import annotations

import base64
import codecs
import os
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    ErrorCode,
    ImagePart,
    Registry,
    ResourcePart,
    Runtime,
    TextPart,
    ToolCall,
    ToolResult,
)
from handrail.builtin._read_file import ReadFile
from handrail.builtin._write_file import WriteFile


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workspace root, a real directory (tmp itself may be reached through a symlink)."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


def make_runtime(ws: Path, *, read_file: ReadFile | None = None, **options: Any) -> Runtime:
    options.setdefault("mode", "accept_edits")
    return Runtime(Registry([read_file or ReadFile(), WriteFile()]), root=ws, **options)


@pytest.fixture
def rt(ws: Path) -> Runtime:
    return make_runtime(ws)


async def read(rt: Runtime, path: str | Path, **args: Any) -> ToolResult:
    return await rt.call("read_file", {"file_path": str(path), **args})


def norm(text: str, ws: Path) -> str:
    """Model-facing text with the temporary workspace path replaced by `WS`."""
    return text.replace(str(ws), "WS")


def numbered(first: int, last: int, fmt: str = "line {}") -> str:
    return "\n".join(f"{n}\t{fmt.format(n)}" for n in range(first, last + 1))


def write_lines(path: Path, count: int, fmt: str = "line {}") -> None:
    path.write_text("".join(fmt.format(n) + "\n" for n in range(1, count + 1)), encoding="utf-8")


# -- the tool's face -------------------------------------------------------------------------


def test_description_flags_and_schema() -> None:
    tool = ReadFile()
    assert tool.name == "read_file"
    assert tool.kind == "read"
    assert tool.is_read_only(None)
    assert tool.is_concurrency_safe(None)
    assert not tool.is_destructive(None)
    assert tool.is_idempotent(None)
    assert tool.description == snapshot(
        "Read a text file. Returns its lines as `N<TAB>text` (N is the 1-based line number), the first 2000 lines by default; when more remains, a footer says which offset to call again with. Lines longer than 2000 characters are cut, with a marker. Use this rather than run_shell with cat, head, tail or sed to look at a file. Read a file in full (page by page if it is long) before changing it with edit_file or write_file. Images (PNG, JPEG, GIF, WebP) and PDFs come back as attachments; not for directories (use list_files) or other binary files (archives, executables). To find where something is, use grep_search first."
    )
    assert tool.usage == snapshot(
        "read_file: the line number and TAB before each line are not part of the file; copy only the text after the TAB into edit_file's old_string. A footer `showing lines A-B of N; call again with offset=B+1` means the file goes on: call again with that offset to see more. Asking again for lines you already read, unchanged, returns a short note instead of the text; rely on your earlier output."
    )
    assert tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "file_path": {
                    "description": "The file to read: a path relative to the working directory, or absolute.",
                    "minLength": 1,
                    "type": "string",
                },
                "offset": {
                    "default": 1,
                    "description": "Line number to start at (1-based). Use it to page through a long file: the footer of a partial read says which offset to use next.",
                    "minimum": 1,
                    "type": "integer",
                },
                "limit": {
                    "default": 2000,
                    "description": "How many lines to show at most (default 2000).",
                    "minimum": 1,
                    "type": "integer",
                },
            },
            "required": ["file_path"],
            "type": "object",
        }
    )


# -- numbered lines and paging -----------------------------------------------------------------


async def test_lines_are_numbered_with_a_tab(ws: Path, rt: Runtime) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n\n# end\n", encoding="utf-8")
    r = await read(rt, "a.py")
    assert r.ok
    assert r.content == "1\tdef f():\n2\t    return 1\n3\t\n4\t# end"
    assert r.summary == "Read a.py lines 1-4 of 4"
    assert r.metadata["total_lines"] == 4


async def test_last_line_without_newline_is_shown(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_text("one\ntwo", encoding="utf-8")
    r = await read(rt, "a.txt")
    assert r.content == "1\tone\n2\ttwo"


async def test_first_2000_lines_then_a_footer_naming_the_next_offset(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "long.txt", 2500)
    first = await read(rt, "long.txt")
    assert first.ok
    body, footer = first.content.split("\n\n")
    assert body == numbered(1, 2000)
    assert footer == "[showing lines 1-2000 of 2500; call again with offset=2001]"
    rest = await read(rt, "long.txt", offset=2001)
    assert rest.content == numbered(2001, 2500)  # the end: no footer


async def test_offset_and_limit_select_a_window(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "long.txt", 100)
    r = await read(rt, "long.txt", offset=10, limit=5)
    assert r.content == numbered(10, 14) + (
        "\n\n[showing lines 10-14 of 100; call again with offset=15]"
    )
    assert r.metadata["first_line"] == 10
    assert r.metadata["last_line"] == 14


async def test_a_limit_past_the_end_just_stops_at_the_end(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 3)
    r = await read(rt, "a.txt", offset=2, limit=50)
    assert r.content == numbered(2, 3)


async def test_offset_past_the_end_says_how_long_the_file_is(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 3)
    r = await read(rt, "a.txt", offset=10)
    assert r.error == ErrorCode.INVALID_ARGS
    assert norm(r.content, ws) == snapshot(
        "offset 10 is past the end of WS/a.txt, which has 3 lines. Call read_file again with an offset from 1 to 3."
    )


async def test_offset_and_limit_must_be_positive(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 3)
    for bad in ({"offset": 0}, {"limit": 0}, {"offset": -1}):
        r = await read(rt, "a.txt", **bad)
        assert r.error == ErrorCode.INVALID_ARGS
        assert r.issues


async def test_a_long_line_is_cut_with_a_marker_saying_how_much(ws: Path, rt: Runtime) -> None:
    (ws / "wide.txt").write_text("x" * 5000 + "\n" + "y" * 2000 + "\nshort\n", encoding="utf-8")
    r = await read(rt, "wide.txt")
    lines = r.content.split("\n")
    assert lines[0] == "1\t" + "x" * 2000 + "… [line cut: 3000 more characters]"
    assert lines[1] == "2\t" + "y" * 2000  # exactly 2000 characters: not cut
    assert lines[2] == "3\tshort"


async def test_a_huge_single_line_is_cut_not_refused(ws: Path, rt: Runtime) -> None:
    (ws / "min.js").write_text("a" * 3_000_000, encoding="utf-8")
    r = await read(rt, "min.js")
    assert r.ok
    assert r.content == "1\t" + "a" * 2000 + "… [line cut: 2998000 more characters]"


async def test_a_page_stops_early_rather_than_overflow_the_output(ws: Path, rt: Runtime) -> None:
    # 2000 lines of 1500 characters would be 3 MB of output: the page stops near 100k
    # characters, with the same footer, and the runtime never has to cut the result.
    write_lines(ws / "wide.txt", 2000, fmt="{:04d}" + "z" * 1496)
    r = await read(rt, "wide.txt")
    body, footer = r.content.split("\n\n")
    shown = body.split("\n")
    last = len(shown)
    assert 1 < last < 2000
    assert len(body) <= 100_000
    assert footer == f"[showing lines 1-{last} of 2000; call again with offset={last + 1}]"
    assert "truncated" not in r.metadata
    more = await read(rt, "wide.txt", offset=last + 1)
    assert more.content.startswith(f"{last + 1}\t{last + 1:04d}zzz")


async def test_the_output_budget_is_configurable(ws: Path) -> None:
    rt = make_runtime(ws, read_file=ReadFile(max_output_chars=30))
    write_lines(ws / "a.txt", 10)
    r = await read(rt, "a.txt")
    assert r.content == numbered(1, 3) + "\n\n[showing lines 1-3 of 10; call again with offset=4]"


async def test_one_line_is_shown_even_when_it_alone_is_over_the_budget(ws: Path) -> None:
    rt = make_runtime(ws, read_file=ReadFile(max_output_chars=10))
    write_lines(ws / "a.txt", 2, fmt="a long line number {}")
    r = await read(rt, "a.txt")
    assert (
        r.content == "1\ta long line number 1\n\n[showing lines 1-1 of 2; call again with offset=2]"
    )


# -- formats -----------------------------------------------------------------------------------


async def test_crlf_is_shown_as_lf(ws: Path, rt: Runtime) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\n\r\nfour\r\n")
    r = await read(rt, "win.txt")
    assert r.content == "1\tone\n2\ttwo\n3\t\n4\tfour"
    assert "\r" not in r.content
    assert r.metadata["format"] == "UTF-8, CRLF"


async def test_mixed_line_endings_count_every_line(ws: Path, rt: Runtime) -> None:
    (ws / "mixed.txt").write_bytes(b"a\r\nb\nc\r\n")
    r = await read(rt, "mixed.txt")
    assert r.content == "1\ta\n2\tb\n3\tc"


async def test_classic_mac_cr_line_endings_are_lines(ws: Path, rt: Runtime) -> None:
    (ws / "mac.txt").write_bytes(b"a\rb\rc\r")
    r = await read(rt, "mac.txt")
    assert r.content == "1\ta\n2\tb\n3\tc"


async def test_a_utf8_bom_is_hidden(ws: Path, rt: Runtime) -> None:
    (ws / "bom.txt").write_bytes(codecs.BOM_UTF8 + b"first\nsecond\n")
    r = await read(rt, "bom.txt")
    assert r.content == "1\tfirst\n2\tsecond"
    assert r.metadata["format"] == "UTF-8 with BOM, LF"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
async def test_utf16_with_a_bom_is_read_as_text(ws: Path, rt: Runtime, encoding: str) -> None:
    bom = codecs.BOM_UTF16_LE if encoding == "utf-16-le" else codecs.BOM_UTF16_BE
    (ws / "u16.txt").write_bytes(bom + "héllo\r\nwörld 世界\r\n".encode(encoding))
    r = await read(rt, "u16.txt")
    assert r.ok
    assert r.content == "1\théllo\n2\twörld 世界"


async def test_cp1252_bytes_are_decoded(ws: Path, rt: Runtime) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9 \x93quoted\x94 \x80\n")
    r = await read(rt, "latin.txt")
    assert r.content == "1\tcafé “quoted” €"
    assert r.metadata["format"] == "cp1252, LF"


async def test_bytes_cp1252_leaves_undefined_are_shown_as_replacement_chars(
    ws: Path, rt: Runtime
) -> None:
    (ws / "odd.txt").write_bytes(b"a\x81b\xe9\n")
    r = await read(rt, "odd.txt")
    assert r.content == "1\ta\ufffdbé"
    r.content.encode("utf-8")  # no lone surrogates reach the model


async def test_an_empty_file_says_it_is_empty(ws: Path, rt: Runtime) -> None:
    (ws / "empty.txt").write_bytes(b"")
    r = await read(rt, "empty.txt")
    assert r.ok
    assert r.content == f"{ws}/empty.txt exists but is empty (0 lines)."
    (ws / "bom-only.txt").write_bytes(codecs.BOM_UTF8)
    assert "is empty" in (await read(rt, "bom-only.txt")).content


async def test_a_lone_newline_is_one_empty_line(ws: Path, rt: Runtime) -> None:
    (ws / "nl.txt").write_bytes(b"\n")
    assert (await read(rt, "nl.txt")).content == "1\t"


# -- refusals ----------------------------------------------------------------------------------


async def test_binary_file_says_what_it_looks_like_and_its_size(ws: Path, rt: Runtime) -> None:
    (ws / "bundle.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 2044)
    r = await read(rt, "bundle.zip")
    assert r.error == ErrorCode.BINARY_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/bundle.zip looks like a ZIP archive (or a format built on it: docx, xlsx, jar, whl) (2.0 KB), not text; read_file shows only text files. If you need to know more about it, use a tool made for that format through run_shell (for example `file`, or `unzip -l` for an archive)."
    )


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 2040


async def test_an_image_comes_back_as_an_image_part_with_its_bytes(ws: Path, rt: Runtime) -> None:
    (ws / "logo.png").write_bytes(PNG)
    (ws / "pic.webp").write_bytes(b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x01" * 8)
    r = await read(rt, "logo.png")
    assert (r.ok, r.summary) == (True, "Read logo.png (a PNG image, attached)")
    intro, image = r.parts
    assert isinstance(intro, TextPart) and isinstance(image, ImagePart)
    assert (image.mime_type, base64.b64decode(image.data)) == ("image/png", PNG)
    assert norm(r.content, ws) == snapshot(
        """\
WS/logo.png is a PNG image (2.0 KB); it is attached below.
[image: image/png, 2048 bytes]\
"""
    )
    webp = await read(rt, "pic.webp")
    assert isinstance(webp.parts[1], ImagePart) and webp.parts[1].mime_type == "image/webp"


async def test_a_pdf_comes_back_as_an_embedded_resource(ws: Path, rt: Runtime) -> None:
    (ws / "doc.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    r = await read(rt, "doc.pdf")
    doc = r.parts[1]
    assert isinstance(doc, ResourcePart) and doc.mime_type == "application/pdf"
    assert doc.uri == (ws / "doc.pdf").as_uri()
    assert base64.b64decode(doc.blob or "") == b"%PDF-1.4\n%%EOF\n"


async def test_an_image_over_the_attach_cap_is_refused_with_what_to_do(ws: Path) -> None:
    (ws / "logo.png").write_bytes(PNG)
    small = make_runtime(ws, read_file=ReadFile(attach_max_bytes=1000))
    r = await read(small, "logo.png")
    assert (r.error, r.parts) == (ErrorCode.BINARY_FILE, ())
    assert norm(r.content, ws) == snapshot(
        "WS/logo.png is a PNG image of 2.0 KB, over the 1000 bytes that read_file attaches; it is not shown. Make a smaller copy with run_shell if a tool for that is installed (for example `convert` for an image, `pdftotext` for a PDF), then read that."
    )
    never = make_runtime(ws, read_file=ReadFile(attach_max_bytes=0))
    assert (await read(never, "logo.png")).error == ErrorCode.BINARY_FILE


async def test_an_image_outside_the_roots_is_not_attached(ws: Path, rt: Runtime) -> None:
    secret = ws.parent / "secret.png"
    secret.write_bytes(PNG + b"CANARY")
    (ws / "link.png").symlink_to(secret)
    for path in (secret, "link.png"):
        r = await read(rt, path)
        assert (r.ok, r.parts) == (False, ())
        assert r.error in (ErrorCode.OUTSIDE_READ_ROOTS, ErrorCode.PERMISSION_DENIED)
        assert base64.b64encode(PNG + b"CANARY").decode() not in repr(r)


async def test_nul_bytes_make_a_file_binary(ws: Path, rt: Runtime) -> None:
    (ws / "data.bin").write_bytes(b"abc\x00def")
    r = await read(rt, "data.bin")
    assert r.error == ErrorCode.BINARY_FILE
    assert "binary data (it contains NUL bytes) (7 bytes)" in r.content


async def test_a_directory_is_refused_with_a_pointer_to_list_files(ws: Path, rt: Runtime) -> None:
    (ws / "src").mkdir()
    r = await read(rt, "src")
    assert r.error == ErrorCode.NOT_A_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/src is a directory, not a file. Use list_files to see what it contains, then call read_file on one of those files."
    )


async def test_a_fifo_is_refused_without_being_opened(ws: Path) -> None:
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    # Opening a FIFO for reading blocks until a writer appears; the timeout only bounds the
    # test if the tool were wrong, and the finally releases a reader that got stuck.
    rt = make_runtime(ws, default_timeout=10)
    try:
        r = await read(rt, "pipe")
    finally:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            pass  # ENXIO: nobody has it open for reading, as it should be
        else:
            os.close(fd)
            pytest.fail("read_file opened the FIFO")
    assert r.error == ErrorCode.NOT_A_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/pipe is a FIFO (named pipe), not a regular file, so read_file does not open it (reading it could block or never end). Read a regular file instead."
    )


async def test_a_suggested_name_that_is_not_utf8_is_sent_as_utf8(ws: Path, rt: Runtime) -> None:
    # Found by tests/reliability/test_fuzz_tools.py: the suggestion carried a surrogate escape.
    (ws / os.fsdecode(b"caf\xe9.txt")).write_bytes(b"x\n")
    r = await read(rt, "caf.txt")
    assert r.error == ErrorCode.FILE_NOT_FOUND
    assert "WS/caf\ufffd.txt" in norm(r.content, ws)
    r.content.encode("utf-8")


async def test_a_symlink_loop_is_named_as_one(ws: Path, rt: Runtime) -> None:
    # Found by tests/reliability/test_fuzz_tools.py: it said "is not a regular file, not a
    # regular file".
    os.symlink("loop2", ws / "loop1")
    os.symlink("loop1", ws / "loop2")
    r = await read(rt, "loop1")
    assert r.error == ErrorCode.NOT_A_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/loop1 is a symbolic link that never reaches a file (the links form a loop). Read the file it was meant to point to; list_files shows what is there."
    )


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
async def test_a_device_is_refused(ws: Path) -> None:
    rt = make_runtime(ws, read_roots=[ws, "/dev"])
    r = await read(rt, "/dev/null")
    assert r.error == ErrorCode.NOT_A_FILE
    assert "is a device, not a regular file" in r.content


async def test_missing_file_suggests_near_names_in_the_same_folder(ws: Path, rt: Runtime) -> None:
    (ws / "conf").mkdir()
    for name in ("settings.yaml", "logging.ini", "README.md"):
        (ws / "conf" / name).write_text("x", encoding="utf-8")
    r = await read(rt, "conf/setings.yaml")
    assert r.error == ErrorCode.FILE_NOT_FOUND
    assert norm(r.content, ws) == snapshot(
        "WS/conf/setings.yaml does not exist. Did you mean WS/conf/settings.yaml? Relative paths resolve against WS. Check the path with list_files, or create the file with write_file."
    )
    wrong_case = await read(rt, "conf/readme.md")
    assert f"Did you mean {ws}/conf/README.md?" in wrong_case.content


async def test_missing_file_with_nothing_similar(ws: Path, rt: Runtime) -> None:
    (ws / "zzz.bin").write_text("x", encoding="utf-8")
    r = await read(rt, "notes.txt")
    assert r.error == ErrorCode.FILE_NOT_FOUND
    assert "Did you mean" not in r.content
    assert r.content.startswith(f"{ws}/notes.txt does not exist. Relative paths resolve")


async def test_missing_folder_is_named(ws: Path, rt: Runtime) -> None:
    r = await read(rt, "nope/x.txt")
    assert r.error == ErrorCode.FILE_NOT_FOUND
    assert f"Its folder {ws}/nope does not exist either." in r.content


async def test_a_file_used_as_a_folder_is_not_found(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_text("x", encoding="utf-8")
    r = await read(rt, "a.txt/b.txt")
    assert r.error == ErrorCode.FILE_NOT_FOUND


async def test_too_large_only_past_the_byte_cap(ws: Path) -> None:
    rt = make_runtime(ws, read_file=ReadFile(max_bytes=1000))
    (ws / "big.log").write_text("x\n" * 600, encoding="utf-8")
    r = await read(rt, "big.log")
    assert r.error == ErrorCode.FILE_TOO_LARGE
    assert norm(r.content, ws) == snapshot(
        "WS/big.log is 1.2 KB, over read_file's limit of 1000 bytes, so it is not read at all (paging cannot help at this size). Use grep_search to find the lines you need, or run_shell with head, tail or sed -n to look at part of it."
    )
    (ws / "ok.log").write_text("x\n" * 500, encoding="utf-8")
    assert (await read(rt, "ok.log")).ok


async def test_reads_outside_the_roots_are_refused(ws: Path, rt: Runtime) -> None:
    outside = ws.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET", encoding="utf-8")
    os.symlink(outside / "secret.txt", ws / "innocent.txt")
    (ws.parent / "ws-evil").mkdir()
    (ws.parent / "ws-evil" / "x.txt").write_text("EVIL-CONTENT", encoding="utf-8")
    for path in (
        "../outside/secret.txt",
        str(outside / "secret.txt"),
        "innocent.txt",
        str(ws.parent / "ws-evil" / "x.txt"),
    ):
        r = await read(rt, path)
        assert r.error == ErrorCode.OUTSIDE_READ_ROOTS, path
        assert "TOP-SECRET" not in r.content
        assert "EVIL-CONTENT" not in r.content


async def test_mention_syntax_and_absolute_paths(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_text("hi\n", encoding="utf-8")
    (ws / "b.txt").write_text("ho\n", encoding="utf-8")
    assert (await read(rt, "@a.txt")).content == "1\thi"
    assert (await read(rt, ws / "b.txt", offset=1, limit=5)).content == "1\tho"


async def test_a_symlink_inside_the_root_to_a_file_inside_is_read(ws: Path, rt: Runtime) -> None:
    (ws / "real.txt").write_text("real\n", encoding="utf-8")
    os.symlink(ws / "real.txt", ws / "alias.txt")
    r = await read(rt, "alias.txt")
    assert r.content == "1\treal"
    assert r.metadata["path"] == str(ws / "real.txt")


# -- records: unchanged re-reads, complete by paging --------------------------------------------


async def test_rereading_an_unchanged_range_returns_a_short_note(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 5)
    first = await read(rt, "a.txt")
    assert first.content == numbered(1, 5)
    again = await read(rt, "a.txt")
    assert again.ok
    assert norm(again.content, ws) == snapshot(
        "Lines 1-5 of WS/a.txt are unchanged since this session last read them: the earlier output is still accurate, so rely on it instead of reading again. (If that output is no longer available to you, call read_file again with the same arguments and the text will be shown.)"
    )
    assert again.metadata["unchanged"] is True
    # A part of what was read is unchanged too.
    part = await read(rt, "a.txt", offset=2, limit=2)
    assert part.content.startswith("Lines 2-3 of")


async def test_asking_twice_after_the_note_shows_the_text(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 5)
    contents = [(await read(rt, "a.txt")).content for _ in range(5)]
    text = numbered(1, 5)
    assert [c == text for c in contents] == [True, False, True, False, True]


async def test_a_changed_file_is_shown_again(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 5)
    await read(rt, "a.txt")
    write_lines(ws / "a.txt", 6)
    r = await read(rt, "a.txt")
    assert r.content == numbered(1, 6)


async def test_a_touched_file_is_shown_again(ws: Path, rt: Runtime) -> None:
    # Same bytes, new mtime: the note needs the same stat too (the text is cheap to resend).
    write_lines(ws / "a.txt", 5)
    await read(rt, "a.txt")
    st = os.stat(ws / "a.txt")
    os.utime(ws / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert (await read(rt, "a.txt")).content == numbered(1, 5)


async def test_new_lines_beyond_an_earlier_read_are_shown(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 20)
    await read(rt, "a.txt", limit=10)
    r = await read(rt, "a.txt", offset=5, limit=10)
    assert r.content.startswith("5\tline 5")


async def test_reading_page_by_page_to_the_end_is_a_full_read(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 25)
    await read(rt, "a.txt", limit=10)
    await read(rt, "a.txt", offset=11, limit=10)
    record = rt.session.files[str(ws / "a.txt")]
    assert not record.complete
    blocked = await rt.call("write_file", {"file_path": "a.txt", "content": "new\n"})
    assert blocked.error == ErrorCode.FILE_NOT_READ
    await read(rt, "a.txt", offset=21, limit=10)
    assert rt.session.files[str(ws / "a.txt")].complete
    done = await rt.call("write_file", {"file_path": "a.txt", "content": "new\n"})
    assert done.ok, done.content


async def test_pages_of_different_content_do_not_add_up(ws: Path, rt: Runtime) -> None:
    write_lines(ws / "a.txt", 20)
    await read(rt, "a.txt", limit=10)
    write_lines(ws / "a.txt", 20, fmt="changed {}")
    await read(rt, "a.txt", offset=11)
    assert not rt.session.files[str(ws / "a.txt")].complete
    r = await rt.call("write_file", {"file_path": "a.txt", "content": "x\n"})
    assert r.error == ErrorCode.FILE_NOT_READ


async def test_the_record_holds_the_files_identity(ws: Path, rt: Runtime) -> None:
    import hashlib

    (ws / "a.txt").write_bytes(b"abc\n")
    await read(rt, "a.txt")
    record = rt.session.files[str(ws / "a.txt")]
    st = os.stat(ws / "a.txt")
    assert record.mtime_ns == st.st_mtime_ns
    assert record.size == 4
    assert record.sha256 == hashlib.sha256(b"abc\n").hexdigest()
    assert record.complete
    assert record.ranges == ((1, 1),)


async def test_reading_an_empty_file_counts_as_a_full_read(ws: Path, rt: Runtime) -> None:
    (ws / "empty.txt").write_bytes(b"")
    await read(rt, "empty.txt")
    r = await rt.call("write_file", {"file_path": "empty.txt", "content": "now\n"})
    assert r.ok


async def test_parallel_reads_run_together_and_keep_order(ws: Path, rt: Runtime) -> None:
    for name in "abc":
        (ws / f"{name}.txt").write_text(name * 3 + "\n", encoding="utf-8")
    batch = await rt.call_many(
        [ToolCall(id=n, name="read_file", arguments={"file_path": f"{n}.txt"}) for n in "abc"]
    )
    assert [r.content for r in batch.results] == ["1\taaa", "1\tbbb", "1\tccc"]


async def test_read_only_means_it_runs_without_asking_in_default_mode(ws: Path) -> None:
    rt = make_runtime(ws, mode="default")
    (ws / "a.txt").write_text("x\n", encoding="utf-8")
    r = await read(rt, "a.txt")
    assert r.ok
    assert r.content == "1\tx"


# -- Chinese -----------------------------------------------------------------------------------


async def test_messages_in_chinese(ws: Path) -> None:
    rt = make_runtime(ws, locale="zh")
    write_lines(ws / "a.txt", 3)
    (ws / "src").mkdir()
    assert (await read(rt, "a.txt", limit=2)).content == numbered(1, 2) + (
        "\n\n[显示第 1-2 行,共 3 行;用 offset=3 再次调用以继续]"
    )
    assert norm((await read(rt, "a.txt", limit=2)).content, ws) == snapshot(
        "WS/a.txt 的第 1-2 行自本会话上次读取以来没有变化:之前的输出仍然准确,请直接使用它,无需再读。(如果你已无法看到那次输出,用相同参数再次调用 read_file 即会显示内容。)"
    )
    assert norm((await read(rt, "src")).content, ws) == snapshot(
        "WS/src 是目录,不是文件。请用 list_files 查看其中的内容,再对其中的文件调用 read_file。"
    )
    assert norm((await read(rt, "b.txt")).content, ws) == snapshot(
        "WS/b.txt 不存在。你是不是想读 WS/a.txt?相对路径以 WS 为基准解析。请用 list_files 核对路径,或用 write_file 创建该文件。"
    )
    (ws / "wide.txt").write_text("x" * 2010, encoding="utf-8")
    assert (await read(rt, "wide.txt")).content.endswith("… [本行已截断:后面还有 10 个字符]")
