"""edit_file end to end through `Runtime`: what the model sends, what lands on disk, what it reads.

A small stand-in for read_file (`mark_read`) records a full read in the session the way
read_file does, so these tests do not depend on read_file's output.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    ErrorCode,
    PermissionRequest,
    ReadPath,
    Registry,
    Runtime,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
    WritePath,
)
from handrail.builtin import _edit_file as edit_file_module
from handrail.builtin._edit_file import EditFile, EditFileArgs
from handrail.builtin._records import record_read
from handrail.sandbox import TextFormat, read_file_bytes


class MarkReadArgs(BaseModel):
    file_path: str
    partial: bool = False


class MarkRead(Tool):
    """Stand-in for read_file: records that the session read the file (in full by default)."""

    name = "mark_read"
    description = "Record a read."
    kind = ToolKind.READ
    read_only = True
    args_model = MarkReadArgs

    def permission_requests(
        self, args: MarkReadArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        return [ReadPath(path=args.file_path)]

    def run(self, args: MarkReadArgs, ctx: ToolContext) -> str:
        data = read_file_bytes(args.file_path, ctx, max_bytes=1 << 30)
        total = data.data.count(b"\n") + 1
        last = total // 2 if args.partial else total
        record_read(ctx, data, first=1, last=last, total_lines=total)
        return "read"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


def runtime(ws: Path, **kw: Any) -> Runtime:
    tool = EditFile(max_bytes=kw.pop("max_bytes")) if "max_bytes" in kw else EditFile()
    return Runtime(Registry([tool, MarkRead()]), root=ws, mode="accept_edits", **kw)


@pytest.fixture
def rt(ws: Path) -> Runtime:
    return runtime(ws)


async def read(rt: Runtime, path: Path, *, partial: bool = False) -> None:
    r = await rt.call("mark_read", {"file_path": str(path), "partial": partial})
    assert r.ok, r.content


async def prepared(rt: Runtime, path: Path, data: bytes) -> Path:
    """Write `data` to `path` and record a full read of it."""
    path.write_bytes(data)
    await read(rt, path)
    return path


async def edit(rt: Runtime, path: Path | str, **args: Any) -> ToolResult:
    return await rt.call("edit_file", {"file_path": str(path), **args})


def scrub(text: str, ws: Path) -> str:
    return text.replace(str(ws), "<ws>")


# -- the tool as the model sees it ------------------------------------------------------------


def test_declaration() -> None:
    tool = EditFile()
    assert tool.name == "edit_file"
    assert tool.kind is ToolKind.EDIT
    args = EditFileArgs(file_path="a.txt", old_string="x", new_string="y")
    assert not tool.is_read_only(args)
    assert not tool.is_concurrency_safe(args)
    assert tool.is_destructive(args)
    assert not tool.is_idempotent(args)


def test_permission_requests_name_the_file(ws: Path) -> None:
    ctx = direct_context(runtime(ws), ws)
    args = EditFileArgs(file_path="src/a.py", old_string="x", new_string="y")
    assert list(EditFile().permission_requests(args, ctx)) == [WritePath(path="src/a.py")]


def test_description() -> None:
    assert EditFile().description == snapshot("""\
Change an existing text file by replacing exact text: old_string becomes new_string.

Use edit_file for every change to a file that already exists; use write_file only to create a new file or to replace a file's whole content.

- Read the whole file with read_file earlier in this conversation: edit_file refuses a file that was not read in full, or that changed since it was read.
- Copy old_string exactly from read_file's output, indentation included, but without the line-number prefix: on each line, the text is everything after the tab.
- old_string must occur exactly once. If it occurs more often, add surrounding lines until it is unique, or set replace_all to change every occurrence (for example to rename a variable).
- new_string replaces it (an empty string deletes it) and must differ from old_string.
- For several changes to one file, send edits: [{old_string, new_string, replace_all}] instead. They apply in order, and either all succeed or nothing is written. Each old_string must quote the file's text, not text an earlier edit inserted.
- The file keeps its encoding, byte-order mark and line endings. Differences in line endings, typographic quotes, dashes and spaces, and whitespace at line ends are tolerated when matching old_string; nothing looser is guessed.\
""")


def test_parameters_schema() -> None:
    assert EditFile().parameters == snapshot(
        {
            "$defs": {
                "EditItem": {
                    "additionalProperties": False,
                    "description": "One replacement of a batch.",
                    "properties": {
                        "old_string": {
                            "description": "The exact text to replace, copied from read_file output without the line-number prefix.",
                            "type": "string",
                        },
                        "new_string": {
                            "description": "The text to put in its place (empty to delete it).",
                            "type": "string",
                        },
                        "replace_all": {
                            "default": False,
                            "description": "Replace every occurrence instead of requiring exactly one.",
                            "type": "boolean",
                        },
                    },
                    "required": ["old_string", "new_string"],
                    "type": "object",
                }
            },
            "additionalProperties": False,
            "description": "Arguments of edit_file.",
            "properties": {
                "file_path": {
                    "description": "The file to change: absolute, or relative to the working directory.",
                    "minLength": 1,
                    "type": "string",
                },
                "old_string": {
                    "default": "",
                    "description": "The exact text to replace, copied from read_file output without the line-number prefix. Required unless edits is given.",
                    "type": "string",
                },
                "new_string": {
                    "default": "",
                    "description": "The text to put in its place (empty to delete it). Required with old_string.",
                    "type": "string",
                },
                "replace_all": {
                    "default": False,
                    "description": "Replace every occurrence of old_string instead of requiring exactly one.",
                    "type": "boolean",
                },
                "edits": {
                    "description": "Several replacements in this file, applied in order, all or nothing. Send this instead of old_string and new_string.",
                    "items": {"$ref": "#/$defs/EditItem"},
                    "type": "array",
                },
            },
            "required": ["file_path"],
            "type": "object",
        }
    )


# -- line endings, encodings, byte-order marks ------------------------------------------------


async def test_crlf_file_edited_with_lf_old_string_keeps_crlf(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "win.txt", b"first\r\nsecond\r\nthird\r\n")
    r = await edit(rt, path, old_string="first\nsecond\n", new_string="first\nSECOND\nadded\n")
    assert r.ok, r.content
    assert path.read_bytes() == b"first\r\nSECOND\r\nadded\r\nthird\r\n"
    assert r.metadata["match"] == "line_endings"
    assert "the file keeps its CRLF line endings" in r.content


async def test_mixed_line_endings_keep_every_untouched_lines_ending(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "mixed.txt", b"a\r\nb\nc\r\nd\ne\r\n")
    r = await edit(rt, path, old_string="b\nc\nd\n", new_string="b\nC\nd\n")
    assert r.ok, r.content
    assert path.read_bytes() == b"a\r\nb\nC\r\nd\ne\r\n"


async def test_new_lines_take_the_dominant_line_ending(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "win.txt", b"one\r\ntwo\r\nthree\n")
    r = await edit(rt, path, old_string="two", new_string="two\nand a half")
    assert r.ok, r.content
    assert path.read_bytes() == b"one\r\ntwo\r\nand a half\r\nthree\n"


async def test_cr_only_file(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "mac.txt", b"one\rtwo\rthree\r")
    r = await edit(rt, path, old_string="two\nthree", new_string="2\n3\n3.5")
    assert r.ok, r.content
    assert path.read_bytes() == b"one\r2\r3\r3.5\r"
    assert r.metadata["line"] == 2


async def test_utf8_bom_survives(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "bom.py", codecs.BOM_UTF8 + b"name = 'x'\nvalue = 1\n")
    r = await edit(rt, path, old_string="value = 1", new_string="value = 2")
    assert r.ok, r.content
    assert path.read_bytes() == codecs.BOM_UTF8 + b"name = 'x'\nvalue = 2\n"


async def test_bom_sent_in_old_string_is_ignored(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "bom.py", codecs.BOM_UTF8 + b"import os\n")
    r = await edit(rt, path, old_string="\ufeffimport os", new_string="import sys")
    assert r.ok, r.content
    assert path.read_bytes() == codecs.BOM_UTF8 + b"import sys\n"


async def test_utf16_file_keeps_encoding_bom_and_crlf(rt: Runtime, ws: Path) -> None:
    original = "héllo\r\nwörld\r\n"
    path = await prepared(rt, ws / "u16.txt", codecs.BOM_UTF16_LE + original.encode("utf-16-le"))
    r = await edit(rt, path, old_string="wörld", new_string="wörld\n世界")
    assert r.ok, r.content
    data = path.read_bytes()
    assert data.startswith(codecs.BOM_UTF16_LE)
    assert data[2:].decode("utf-16-le") == "héllo\r\nwörld\r\n世界\r\n"


async def test_cp1252_bytes_survive_an_edit_elsewhere(rt: Runtime, ws: Path) -> None:
    # 0xE9 is "é" in cp1252 (not valid UTF-8); 0x81 is undefined in cp1252.
    original = b"caf\xe9 \x81 menu\nprice = 3\n"
    path = await prepared(rt, ws / "legacy.txt", original)
    r = await edit(rt, path, old_string="price = 3", new_string="price = 4")
    assert r.ok, r.content
    assert path.read_bytes() == b"caf\xe9 \x81 menu\nprice = 4\n"


async def test_cp1252_text_is_matched_as_characters(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "legacy.txt", b"caf\xe9 \x81 menu\n")
    r = await edit(rt, path, old_string="café", new_string="caf\u00e8")
    assert r.ok, r.content
    assert path.read_bytes() == b"caf\xe8 \x81 menu\n"


async def test_character_the_encoding_cannot_hold_is_refused(rt: Runtime, ws: Path) -> None:
    original = b"caf\xe9\nend\n"
    path = await prepared(rt, ws / "legacy.txt", original)
    r = await edit(rt, path, old_string="end", new_string="终")
    assert r.error is ErrorCode.INVALID_ARGS
    assert scrub(r.content, ws) == snapshot(
        "<ws>/legacy.txt is stored as cp1252, LF and cannot hold '终'. Nothing was written. Use characters that cp1252 can store (or an escape the file's language understands) in new_string."
    )
    assert path.read_bytes() == original


# -- typography and whitespace ----------------------------------------------------------------


async def test_curly_quotes_match_and_new_string_is_restyled(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "doc.md", "print(“It’s here”)\nend\n".encode())
    r = await edit(rt, path, old_string='print("It\'s here")', new_string='print("It\'s gone")')
    assert r.ok, r.content
    assert path.read_text("utf-8") == "print(“It’s gone”)\nend\n"
    assert r.metadata["match"] == "typography"
    assert "quotes were written the way the file writes them" in r.content


async def test_curly_quotes_sent_for_a_straight_quoted_file(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "a.py", b'x = "a"\ny = 1\n')
    r = await edit(rt, path, old_string="x = “a”", new_string="x = “b”")
    assert r.ok, r.content
    assert path.read_bytes() == b'x = "b"\ny = 1\n'


async def test_dashes_and_non_breaking_spaces(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "notes.txt", "Range: 1–5\u00a0items\n".encode())
    r = await edit(rt, path, old_string="Range: 1-5 items", new_string="Range: 1-10 items")
    assert r.ok, r.content
    assert path.read_text("utf-8") == "Range: 1–10\u00a0items\n"
    assert r.metadata["match"] == "typography"


async def test_trailing_whitespace_rung(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "t.py", b"a = 1   \nb = 2\t\nc = 3\n")
    r = await edit(rt, path, old_string="a = 1\nb = 2\nc = 3", new_string="a = 1\nb = 20\nc = 3")
    assert r.ok, r.content
    assert path.read_bytes() == b"a = 1   \nb = 20\t\nc = 3\n"
    assert r.metadata["match"] == "trailing_whitespace"


# -- ambiguity and misses ---------------------------------------------------------------------


async def test_two_matches_leave_the_file_untouched(rt: Runtime, ws: Path) -> None:
    original = b"x = 1\ny = 2\nx = 1\n"
    path = await prepared(rt, ws / "dup.py", original)
    r = await edit(rt, path, old_string="x = 1", new_string="x = 9")
    assert r.error is ErrorCode.TEXT_MULTIPLE_MATCHES
    assert scrub(r.content, ws) == snapshot(
        "old_string occurs 2 times in <ws>/dup.py (lines 1, 3). Nothing was changed. Include more surrounding lines in old_string so that it matches exactly one place, or set replace_all to true to change every occurrence."
    )
    assert r.metadata["count"] == 2
    assert r.metadata["lines"] == [1, 3]
    assert path.read_bytes() == original


async def test_overlapping_matches_count(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "a.txt", b"aaa\n")
    r = await edit(rt, path, old_string="aa", new_string="b")
    assert r.error is ErrorCode.TEXT_MULTIPLE_MATCHES
    assert "occurs 2 times" in r.content
    assert "(line 1)" in r.content
    assert path.read_bytes() == b"aaa\n"


async def test_matches_on_a_normalised_rung_are_ambiguous_too(rt: Runtime, ws: Path) -> None:
    original = b"a\r\nb\r\na\r\nb\r\n"
    path = await prepared(rt, ws / "a.txt", original)
    r = await edit(rt, path, old_string="a\nb", new_string="c")
    assert r.error is ErrorCode.TEXT_MULTIPLE_MATCHES
    assert "(lines 1, 3), ignoring line-ending differences." in r.content
    assert path.read_bytes() == original


async def test_missing_text_shows_the_most_similar_lines(rt: Runtime, ws: Path) -> None:
    original = b"def foo():\n    return 1\n\n\ndef bar(x):\n    return x + 2\n"
    path = await prepared(rt, ws / "m.py", original)
    r = await edit(
        rt, path, old_string="def bar(x):\n    return x + 3\n", new_string="def bar(x):\n    pass\n"
    )
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert scrub(r.content, ws) == snapshot("""\
old_string was not found in <ws>/m.py, not even when ignoring differences in line endings, typographic quotes, dashes and spaces, and whitespace at line ends. Nothing was changed.
The most similar text is at lines 5-6 (96% similar):
5	def bar(x):
6	    return x + 2
Call read_file to see the current text, then copy old_string exactly from it (without the line-number prefix).\
""")
    assert r.metadata["similar_line"] == 5
    assert path.read_bytes() == original


async def test_missing_text_with_different_indentation_says_so(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "m.py", b"if x:\n\treturn y\n")
    r = await edit(rt, path, old_string="if x:\n    return y", new_string="if x:\n    return z")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert "1\tif x:\n2\t\treturn y" in r.content
    assert "differs from old_string only in indentation or spacing" in r.content


async def test_line_number_prefixes_are_pointed_out(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "n.py", b"first\nsecond\nthird\n")
    r = await edit(rt, path, old_string="2\tsecond\n3\tthird", new_string="2\tSECOND")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert "line-number prefixes" in r.content
    assert "Without them it matches at line 2." in r.content


async def test_text_escaped_twice_is_pointed_out(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "e.py", b"a = 1\nb = 2\n")
    r = await edit(rt, path, old_string="a = 1\\nb = 2", new_string="a = 1\\nb = 3")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert "escaped twice" in r.content


async def test_nothing_similar(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "e.py", b"alpha\nbeta\n")
    r = await edit(rt, path, old_string="zzzzzzzzzzzzzzzzzzzz", new_string="q")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert "Nothing in the file resembles it." in r.content


async def test_no_fuzzy_edit_is_ever_applied(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "f.py", b"def compute(value):\n    return value\n")
    r = await edit(rt, path, old_string="def compute(valu):", new_string="def compute(v):")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert path.read_bytes() == b"def compute(value):\n    return value\n"


# -- replace_all and batches ------------------------------------------------------------------


async def test_replace_all_replaces_every_occurrence(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "r.py", b"foo()\nx = foo\nfoo.bar(foo)\n")
    r = await edit(rt, path, old_string="foo", new_string="baz", replace_all=True)
    assert r.ok, r.content
    assert path.read_bytes() == b"baz()\nx = baz\nbaz.bar(baz)\n"
    assert r.metadata["replacements"] == 4
    assert r.content.startswith("Edited r.py: 4 replacements, first change at line 1 (+3 -3).")


async def test_batch_applies_all_edits_in_order(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "b.py", b"import os\n\nx = 1\ny = 2\n")
    r = await edit(
        rt,
        path,
        edits=[
            {"old_string": "import os", "new_string": "import os\nimport sys"},
            {"old_string": "y = 2", "new_string": "y = 3"},
            {"old_string": "x", "new_string": "z", "replace_all": True},
        ],
    )
    assert r.ok, r.content
    assert path.read_bytes() == b"import os\nimport sys\n\nz = 1\ny = 3\n"
    assert r.content.startswith("Edited b.py: 3 edits, 3 replacements, first change at line 2")


async def test_batch_is_all_or_nothing(rt: Runtime, ws: Path) -> None:
    original = b"a = 1\nb = 2\n"
    path = await prepared(rt, ws / "b.py", original)
    r = await edit(
        rt,
        path,
        edits=[
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "c = 3", "new_string": "c = 30"},
        ],
    )
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert r.content.startswith("Edit 2: old_string was not found in ")
    assert "Nothing was written: a batch applies all of its edits or none." in r.content
    assert "edit 2 must match the text as the edits before it left it" in r.content
    assert path.read_bytes() == original


async def test_batch_with_an_ambiguous_edit_writes_nothing(rt: Runtime, ws: Path) -> None:
    original = b"a = 1\nb = 2\nb = 2\n"
    path = await prepared(rt, ws / "b.py", original)
    r = await edit(
        rt,
        path,
        edits=[
            {"old_string": "a = 1", "new_string": "a = 10"},
            {"old_string": "b = 2", "new_string": "b = 20"},
        ],
    )
    assert r.error is ErrorCode.TEXT_MULTIPLE_MATCHES
    assert r.content.startswith("Edit 2: old_string occurs 2 times in ")
    assert r.metadata["lines"] == [2, 3]
    assert path.read_bytes() == original


async def test_old_string_only_inside_an_earlier_new_string_is_refused(
    rt: Runtime, ws: Path
) -> None:
    original = b"import os\n\nmain()\n"
    path = await prepared(rt, ws / "b.py", original)
    r = await edit(
        rt,
        path,
        edits=[
            {"old_string": "import os", "new_string": "import os\nimport json"},
            {"old_string": "import json", "new_string": "import json as j"},
        ],
    )
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "Edit 2: old_string occurs only in text that edit 1 puts there, not in the file as read. Nothing was written: a batch applies all of its edits or none. Fold this change into edit 1's new_string, or quote text of the file in old_string."
    )
    assert path.read_bytes() == original


# -- read-before-edit -------------------------------------------------------------------------


async def test_file_not_read_is_refused(rt: Runtime, ws: Path) -> None:
    path = ws / "new.txt"
    path.write_bytes(b"hello\n")
    r = await edit(rt, path, old_string="hello", new_string="bye")
    assert r.error is ErrorCode.FILE_NOT_READ
    assert "Call read_file on it first" in r.content
    assert path.read_bytes() == b"hello\n"


async def test_partly_read_file_is_refused(rt: Runtime, ws: Path) -> None:
    path = ws / "long.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(10)))
    await read(rt, path, partial=True)
    r = await edit(rt, path, old_string="line 1\n", new_string="")
    assert r.error is ErrorCode.FILE_NOT_READ


async def test_file_changed_since_read_is_refused(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "c.txt", b"one\ntwo\n")
    path.write_bytes(b"one\ntwo\nthree\n")
    r = await edit(rt, path, old_string="two", new_string="2")
    assert r.error is ErrorCode.FILE_MODIFIED_SINCE_READ
    assert "read_file" in r.content
    assert path.read_bytes() == b"one\ntwo\nthree\n"


async def test_same_bytes_with_a_new_mtime_pass(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "c.txt", b"one\ntwo\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    r = await edit(rt, path, old_string="two", new_string="2")
    assert r.ok, r.content
    assert path.read_bytes() == b"one\n2\n"


async def test_a_second_edit_needs_no_new_read(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "c.txt", b"one\ntwo\n")
    assert (await edit(rt, path, old_string="one", new_string="1")).ok
    r = await edit(rt, path, old_string="two", new_string="2")
    assert r.ok, r.content
    assert path.read_bytes() == b"1\n2\n"


async def test_mode_bits_are_kept(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "run.sh", b"#!/bin/sh\necho hi\n")
    path.chmod(0o751)
    r = await edit(rt, path, old_string="echo hi", new_string="echo bye")
    assert r.ok, r.content
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.read_bytes() == b"#!/bin/sh\necho bye\n"


def direct_context(rt: Runtime, ws: Path) -> ToolContext:
    return ToolContext(
        call_id="c",
        tool_name="edit_file",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=rt.session,
    )


async def test_a_cancelled_edit_writes_nothing(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "c.txt", b"one\n")
    ctx = direct_context(rt, ws)
    ctx.cancel()  # as the runtime does when the call times out while it runs
    with pytest.raises(ToolFailure) as info:
        EditFile().run(EditFileArgs(file_path=str(path), old_string="one", new_string="1"), ctx)
    assert info.value.code is ErrorCode.CANCELLED
    assert path.read_bytes() == b"one\n"


async def test_a_file_changed_while_the_edit_is_prepared_is_not_overwritten(
    rt: Runtime, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = await prepared(rt, ws / "c.txt", b"one\n")
    real_encode = edit_file_module.encode_text

    def encode_while_someone_writes(text: str, fmt: TextFormat) -> bytes:
        path.write_bytes(b"one\nwritten meanwhile by someone else\n")
        return real_encode(text, fmt)

    monkeypatch.setattr(edit_file_module, "encode_text", encode_while_someone_writes)
    r = await edit(rt, path, old_string="one", new_string="1")
    assert r.error is ErrorCode.FILE_MODIFIED_SINCE_READ
    assert "changed on disk while this edit was being prepared" in r.content
    assert path.read_bytes() == b"one\nwritten meanwhile by someone else\n"


def test_the_tool_itself_refuses_paths_outside_in_chinese(rt: Runtime, ws: Path) -> None:
    # The policy refuses first (see above); the tool checks again where it opens the file.
    ctx = ToolContext(
        call_id="c",
        tool_name="edit_file",
        cwd=ws,
        read_roots=(ws,),
        write_roots=(ws,),
        session=rt.session,
        locale="zh",
    )
    args = EditFileArgs(file_path="../x.txt", old_string="a", new_string="b")
    with pytest.raises(ToolFailure) as info:
        EditFile().run(args, ctx)
    assert info.value.code is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert info.value.message.startswith("不能修改 ../x.txt:它不在可写根目录")


async def test_symlink_inside_the_root_edits_its_target(rt: Runtime, ws: Path) -> None:
    target = ws / "real.txt"
    target.write_bytes(b"value = 1\n")
    link = ws / "alias.txt"
    link.symlink_to(target)
    await read(rt, link)
    r = await edit(rt, link, old_string="value = 1", new_string="value = 2")
    assert r.ok, r.content
    assert link.is_symlink()
    assert target.read_bytes() == b"value = 2\n"
    assert r.summary == "edit_file real.txt: +1 -1 (line 1)"


async def test_empty_file_has_nothing_to_match(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "empty.txt", b"")
    r = await edit(rt, path, old_string="x", new_string="y")
    assert r.error is ErrorCode.TEXT_NOT_FOUND
    assert "Nothing in the file resembles it." in r.content


# -- the file itself --------------------------------------------------------------------------


async def test_missing_file_suggests_a_near_name(rt: Runtime, ws: Path) -> None:
    (ws / "config.yaml").write_text("a: 1\n")
    r = await edit(rt, ws / "config.yml", old_string="a: 1", new_string="a: 2")
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert scrub(r.content, ws) == snapshot(
        "<ws>/config.yml does not exist. Did you mean `config.yaml`? edit_file changes existing files: to create one, use write_file; to find a file, use list_files."
    )


async def test_directory_is_not_a_file(rt: Runtime, ws: Path) -> None:
    (ws / "src").mkdir()
    r = await edit(rt, ws / "src", old_string="a", new_string="b")
    assert r.error is ErrorCode.NOT_A_FILE
    assert "is a directory" in r.content


async def test_fifo_is_not_a_file(rt: Runtime, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    r = await edit(rt, ws / "pipe", old_string="a", new_string="b")
    assert r.error is ErrorCode.NOT_A_FILE
    assert "a FIFO" in r.content


async def test_file_over_the_size_cap(ws: Path) -> None:
    rt = runtime(ws, max_bytes=100)
    path = await prepared(rt, ws / "big.txt", b"x" * 200)
    r = await edit(rt, path, old_string="xx", new_string="y", replace_all=True)
    assert r.error is ErrorCode.FILE_TOO_LARGE
    assert "200 bytes" in r.content
    assert path.read_bytes() == b"x" * 200


async def test_binary_file(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "img.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)
    r = await edit(rt, path, old_string="PNG", new_string="JPG")
    assert r.error is ErrorCode.BINARY_FILE
    assert "a PNG image" in r.content


async def test_paths_outside_the_write_roots_are_refused(rt: Runtime, ws: Path) -> None:
    outside = ws.parent / "outside.txt"
    outside.write_bytes(b"secret\n")
    (ws.parent / "ws-evil").mkdir()
    (ws.parent / "ws-evil" / "a.txt").write_bytes(b"secret\n")
    (ws / "link.txt").symlink_to(outside)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_bytes(b"secret\n")
    for target in (
        "../outside.txt",
        str(outside),
        str(ws.parent / "ws-evil" / "a.txt"),
        "link.txt",
        ".git/config",
    ):
        r = await edit(rt, target, old_string="secret", new_string="changed")
        assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS, (target, r.content)
    assert outside.read_bytes() == b"secret\n"
    assert (ws / ".git" / "config").read_bytes() == b"secret\n"


# -- argument checks (before any I/O) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"old_string": "a", "new_string": "a"},
            "old_string and new_string are identical, so there is nothing to change.",
        ),
        ({"old_string": "", "new_string": "x"}, "old_string is empty."),
        ({"old_string": "a"}, "new_string is missing."),
        ({}, "Nothing to replace: send old_string and new_string, or edits"),
        (
            {
                "old_string": "a",
                "new_string": "b",
                "edits": [{"old_string": "c", "new_string": "d"}],
            },
            "Send either old_string and new_string (one replacement) or edits (several), not both.",
        ),
        (
            {"replace_all": True, "edits": [{"old_string": "c", "new_string": "d"}]},
            "replace_all at the top level belongs to old_string",
        ),
        (
            {
                "edits": [
                    {"old_string": "c", "new_string": "d"},
                    {"old_string": "e", "new_string": "e"},
                ]
            },
            "Edit 2: old_string and new_string are identical",
        ),
        ({"edits": [{"old_string": "", "new_string": "d"}]}, "old_string is empty."),
    ],
)
async def test_bad_arguments_are_refused_before_io(
    rt: Runtime, ws: Path, args: dict[str, Any], message: str
) -> None:
    r = await edit(rt, ws / "does-not-exist.txt", **args)
    assert r.error is ErrorCode.INVALID_ARGS
    assert message in r.content


async def test_openai_strict_style_empty_fields_beside_edits_are_fine(
    rt: Runtime, ws: Path
) -> None:
    path = await prepared(rt, ws / "s.py", b"a = 1\n")
    r = await edit(
        rt,
        path,
        old_string="",
        new_string="",
        replace_all=False,
        edits=[{"old_string": "a = 1", "new_string": "a = 2", "replace_all": False}],
    )
    assert r.ok, r.content
    assert path.read_bytes() == b"a = 2\n"


async def test_edit_that_changes_nothing_is_refused(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "w.txt", b"a\r\nb\r\n")
    r = await edit(rt, path, old_string="a\r\nb", new_string="a\nb")
    assert r.error is ErrorCode.INVALID_ARGS
    assert "would leave" in r.content
    assert path.read_bytes() == b"a\r\nb\r\n"


# -- what the model and the UI get back -------------------------------------------------------


async def test_result_text_summary_and_diff(rt: Runtime, ws: Path) -> None:
    lines = [f"line {i}\n" for i in range(1, 13)]
    (ws / "src").mkdir()
    path = await prepared(rt, ws / "src" / "app.py", "".join(lines).encode())
    r = await edit(rt, path, old_string="line 6\n", new_string="line six\nline 6.5\n")
    assert r.ok, r.content
    assert r.content == snapshot("""\
Edited src/app.py: 1 replacement, first change at line 6 (+2 -1).
@@ -3,7 +3,8 @@
 line 3
 line 4
 line 5
-line 6
+line six
+line 6.5
 line 7
 line 8
 line 9\
""")
    assert r.summary == "edit_file src/app.py: +2 -1 (line 6)"
    assert r.diff == snapshot("""\
--- a/src/app.py
+++ b/src/app.py
@@ -3,7 +3,8 @@
 line 3
 line 4
 line 5
-line 6
+line six
+line 6.5
 line 7
 line 8
 line 9
""")
    assert r.metadata["line"] == 6
    assert (r.metadata["added"], r.metadata["removed"]) == (2, 1)
    assert r.metadata["match"] == "exact"
    assert r.metadata["format"] == "UTF-8, LF"


async def test_huge_diff_is_trimmed_in_the_text_but_whole_in_diff(rt: Runtime, ws: Path) -> None:
    path = await prepared(rt, ws / "many.txt", b"".join(b"x %d\n" % i for i in range(200)))
    r = await edit(rt, path, old_string="x ", new_string="y ", replace_all=True)
    assert r.ok, r.content
    assert "more diff lines not shown." in r.content
    assert r.diff is not None
    assert r.diff.count("\n+y ") == 200
    assert r.content.count("\n") < 100


async def test_messages_in_chinese(ws: Path) -> None:
    rt = runtime(ws, locale="zh")
    path = await prepared(rt, ws / "dup.py", b"x = 1\ny = 2\nx = 1\n")
    r = await edit(rt, path, old_string="x = 1", new_string="x = 9")
    assert r.error is ErrorCode.TEXT_MULTIPLE_MATCHES
    assert scrub(r.content, ws) == snapshot(
        "old_string 在 <ws>/dup.py 中出现了 2 次(第 1, 3 行)。文件未作任何修改。请在 old_string 中加入更多上下文,使它只匹配一处;或把 replace_all 设为 true,替换全部出现位置。"
    )
    r = await edit(rt, path, old_string="y = 2", new_string="y = 3")
    assert r.ok, r.content
    assert r.content.startswith("已编辑 dup.py:1 处替换,首处修改在第 2 行(+1 -1)。")
    r = await edit(rt, ws / "nope.py", old_string="a", new_string="a")
    assert r.error is ErrorCode.INVALID_ARGS
    assert "完全相同" in r.content


async def test_text_copied_from_read_file_output_edits_the_file(ws: Path) -> None:
    from handrail.builtin._read_file import ReadFile

    rt = Runtime(Registry([EditFile(), ReadFile()]), root=ws, mode="accept_edits")
    path = ws / "r.txt"
    path.write_bytes(codecs.BOM_UTF8 + "one\r\nsay “two”  \r\nthree\r\n".encode())
    shown = await rt.call("read_file", {"file_path": "r.txt"})
    assert shown.ok, shown.content
    # What a model copies: the lines after the `N<TAB>` prefixes.
    copied = "\n".join(line.split("\t", 1)[1] for line in shown.content.splitlines()[1:3])
    r = await rt.call(
        "edit_file",
        {"file_path": "r.txt", "old_string": copied, "new_string": copied.replace("two", "2")},
    )
    assert r.ok, r.content
    assert r.metadata["match"] == "line_endings"
    assert path.read_bytes() == codecs.BOM_UTF8 + "one\r\nsay “2”  \r\nthree\r\n".encode()
