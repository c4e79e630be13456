"""write_file end to end through `Runtime`: create, read-before-overwrite, formats kept, results."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import Approval, ErrorCode, Interrupted, Registry, Runtime, ToolResult
from handrail.builtin._read_file import ReadFile
from handrail.builtin._write_file import WriteFile


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The workspace root, a real directory (tmp itself may be reached through a symlink)."""
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


def make_runtime(ws: Path, **options: Any) -> Runtime:
    options.setdefault("mode", "accept_edits")
    return Runtime(Registry([ReadFile(), WriteFile()]), root=ws, **options)


@pytest.fixture
def rt(ws: Path) -> Runtime:
    return make_runtime(ws)


def norm(text: str, ws: Path) -> str:
    """Model-facing text with the temporary workspace path replaced by `WS`."""
    return text.replace(str(ws), "WS")


async def read(rt: Runtime, path: str, **args: Any) -> ToolResult:
    r = await rt.call("read_file", {"file_path": path, **args})
    assert r.ok, r.content
    return r


async def write(rt: Runtime, path: str, content: str) -> ToolResult:
    return await rt.call("write_file", {"file_path": path, "content": content})


# -- the tool's face -------------------------------------------------------------------------


def test_description_flags_and_schema() -> None:
    tool = WriteFile()
    assert tool.name == "write_file"
    assert tool.kind == "edit"
    assert not tool.is_read_only(None)
    assert not tool.is_concurrency_safe(None)
    assert tool.is_destructive(None)
    assert tool.description == snapshot(
        "Create a new file, or replace the entire content of an existing one. Missing parent folders are created. To change part of an existing file, use edit_file instead: it sends only the change and cannot drop the rest by accident. Replacing an existing file requires that you read it in full with read_file in this session and that it has not changed since. Send the complete content, never placeholders such as 'rest unchanged'. Use this rather than run_shell with echo, cat or tee redirections."
    )
    assert tool.usage == snapshot(
        "write_file: prefer edit_file for changes to an existing file; use write_file for new files and for complete rewrites. Write plain \\n line endings: an existing file keeps its own line endings, encoding and byte-order mark."
    )
    assert tool.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "file_path": {
                    "description": "The file to create or replace: a path relative to the working directory, or absolute. Missing parent folders are created.",
                    "minLength": 1,
                    "type": "string",
                },
                "content": {
                    "description": "The complete new content of the file, with \\n line endings. An existing file keeps its own line endings, encoding and byte-order mark.",
                    "type": "string",
                },
            },
            "required": ["file_path", "content"],
            "type": "object",
        }
    )


# -- creating ----------------------------------------------------------------------------------


async def test_a_new_file_is_utf8_with_lf(ws: Path, rt: Runtime) -> None:
    r = await write(rt, "hello.py", 'print("héllo")\nprint("世界")\n')
    assert r.ok
    assert norm(r.content, ws) == snapshot("Created WS/hello.py: 2 lines (+2 -0).")
    assert r.summary == "Created hello.py (+2 -0)"
    assert (ws / "hello.py").read_bytes() == 'print("héllo")\nprint("世界")\n'.encode()
    assert r.diff == snapshot("""\
--- a/hello.py
+++ b/hello.py
@@ -0,0 +1,2 @@
+print("héllo")
+print("世界")
""")
    assert r.metadata["created"] is True
    assert r.metadata["lines"] == 2


async def test_crlf_sent_for_a_new_file_is_kept_byte_for_byte(ws: Path, rt: Runtime) -> None:
    r = await write(rt, "a.bat", "@echo off\r\necho é\r\n")
    assert r.ok, r.content
    assert (ws / "a.bat").read_bytes() == "@echo off\r\necho é\r\n".encode()
    assert norm(r.content, ws) == snapshot("Created WS/a.bat: 2 lines (+2 -0).")
    assert r.metadata["format"] == "UTF-8, CRLF"
    assert r.diff == snapshot("""\
--- a/a.bat
+++ b/a.bat
@@ -0,0 +1,2 @@
+@echo off
+echo é
""")


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("a\r\nb\nc\r\n", id="crlf-and-lf"),
        pytest.param("a\nb\r\nc", id="lf-and-crlf-no-final-newline"),
        pytest.param("a\rb\rc\n", id="cr-and-lf"),
        pytest.param("\r\n\r\n", id="only-crlf"),
    ],
)
async def test_mixed_line_endings_in_a_new_file_are_kept(
    ws: Path, rt: Runtime, content: str
) -> None:
    r = await write(rt, "mixed.txt", content)
    assert r.ok, r.content
    assert (ws / "mixed.txt").read_bytes() == content.encode()


async def test_an_existing_crlf_file_still_gets_crlf_for_lf_text(ws: Path, rt: Runtime) -> None:
    # Created with CRLF as sent; replaced afterwards with LF text, it keeps its CRLF.
    await write(rt, "a.txt", "one\r\ntwo\r\n")
    r = await write(rt, "a.txt", "one\ntwo\nthree\n")
    assert r.ok, r.content
    assert (ws / "a.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"
    assert norm(r.content, ws) == snapshot(
        "Updated WS/a.txt: 3 lines (+1 -0). Kept its format: UTF-8, CRLF."
    )


async def test_missing_parent_folders_are_created(ws: Path, rt: Runtime) -> None:
    r = await write(rt, "deep/er/still/x.txt", "x\n")
    assert r.ok
    assert (ws / "deep" / "er" / "still" / "x.txt").read_bytes() == b"x\n"
    assert r.summary == "Created deep/er/still/x.txt (+1 -0)"


async def test_an_empty_new_file(ws: Path, rt: Runtime) -> None:
    r = await write(rt, "empty.txt", "")
    assert r.ok
    assert (ws / "empty.txt").read_bytes() == b""
    assert r.metadata["lines"] == 0


async def test_a_new_file_gets_the_default_mode(ws: Path, rt: Runtime) -> None:
    umask = os.umask(0)
    os.umask(umask)
    await write(rt, "a.txt", "x")
    assert stat.S_IMODE(os.stat(ws / "a.txt").st_mode) == 0o666 & ~umask


async def test_after_creating_the_file_can_be_rewritten_without_a_read(
    ws: Path, rt: Runtime
) -> None:
    await write(rt, "a.txt", "one\n")
    r = await write(rt, "a.txt", "two\n")
    assert r.ok, r.content
    assert (ws / "a.txt").read_bytes() == b"two\n"


# -- read before overwrite ---------------------------------------------------------------------


async def test_overwriting_an_unread_file_is_refused(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_bytes(b"precious\n")
    r = await write(rt, "a.txt", "gone\n")
    assert r.error == ErrorCode.FILE_NOT_READ
    assert norm(r.content, ws) == snapshot(
        "WS/a.txt has not been read in full in this session. Call read_file on it first (all of it, page by page if it is long), then try again."
    )
    assert (ws / "a.txt").read_bytes() == b"precious\n"


async def test_a_partial_read_is_not_enough(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_text("".join(f"{n}\n" for n in range(10)), encoding="utf-8")
    await read(rt, "a.txt", limit=5)
    r = await write(rt, "a.txt", "gone\n")
    assert r.error == ErrorCode.FILE_NOT_READ
    assert (ws / "a.txt").read_text(encoding="utf-8").startswith("0\n1\n")


async def test_a_file_changed_since_the_read_is_refused(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_bytes(b"v1\n")
    await read(rt, "a.txt")
    (ws / "a.txt").write_bytes(b"v2 by someone else\n")
    r = await write(rt, "a.txt", "mine\n")
    assert r.error == ErrorCode.FILE_MODIFIED_SINCE_READ
    assert norm(r.content, ws) == snapshot(
        "WS/a.txt changed on disk after this session last read it. Call read_file on it again to see the current content, then retry the change against that."
    )
    assert (ws / "a.txt").read_bytes() == b"v2 by someone else\n"
    await read(rt, "a.txt")  # reading again is the way out
    assert (await write(rt, "a.txt", "mine\n")).ok


async def test_same_bytes_with_a_new_mtime_pass(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_bytes(b"formatted\n")
    await read(rt, "a.txt")
    st = os.stat(ws / "a.txt")
    os.utime(ws / "a.txt", ns=(st.st_atime_ns, st.st_mtime_ns + 7_000_000_000))
    (ws / "a.txt").write_bytes(b"formatted\n")  # a formatter rewrote the same bytes
    r = await write(rt, "a.txt", "changed\n")
    assert r.ok, r.content
    assert (ws / "a.txt").read_bytes() == b"changed\n"


async def test_a_write_updates_the_record_so_the_next_change_needs_no_read(
    ws: Path, rt: Runtime
) -> None:
    (ws / "a.txt").write_bytes(b"v1\n")
    await read(rt, "a.txt")
    assert (await write(rt, "a.txt", "v2\n")).ok
    record = rt.session.files[str(ws / "a.txt")]
    assert record.complete
    assert record.mtime_ns == os.stat(ws / "a.txt").st_mtime_ns
    assert (await write(rt, "a.txt", "v3\n")).ok
    assert (ws / "a.txt").read_bytes() == b"v3\n"


# -- formats kept ------------------------------------------------------------------------------


async def rewrite(rt: Runtime, ws: Path, raw: bytes, content: str) -> ToolResult:
    (ws / "f.txt").write_bytes(raw)
    await read(rt, "f.txt")
    r = await write(rt, "f.txt", content)
    assert r.ok, r.content
    return r


async def test_crlf_is_kept(ws: Path, rt: Runtime) -> None:
    r = await rewrite(rt, ws, b"one\r\ntwo\r\n", "one\nTWO\nthree\n")
    assert (ws / "f.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    assert norm(r.content, ws) == snapshot(
        "Updated WS/f.txt: 3 lines (+2 -1). Kept its format: UTF-8, CRLF."
    )


async def test_crlf_sent_for_a_crlf_file_is_not_doubled(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, b"one\r\n", "one\r\ntwo\r\n")
    assert (ws / "f.txt").read_bytes() == b"one\r\ntwo\r\n"


async def test_dominant_line_ending_wins_in_a_mixed_file(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, b"a\r\nb\r\nc\n", "a\nb\nc\nd\n")
    assert (ws / "f.txt").read_bytes() == b"a\r\nb\r\nc\r\nd\r\n"


async def test_an_lf_file_stays_lf_when_crlf_is_sent(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, b"a\nb\n", "a\r\nB\r\n")
    assert (ws / "f.txt").read_bytes() == b"a\nB\n"


async def test_cr_line_endings_are_kept(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, b"a\rb\r", "a\nb\nc\n")
    assert (ws / "f.txt").read_bytes() == b"a\rb\rc\r"


async def test_a_utf8_bom_is_kept(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, codecs.BOM_UTF8 + b"old\n", "new\n")
    assert (ws / "f.txt").read_bytes() == codecs.BOM_UTF8 + b"new\n"


async def test_a_bom_sent_by_the_model_is_not_doubled(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, codecs.BOM_UTF8 + b"old\n", "\ufeffnew\n")
    # The model's content is the text; a BOM inside it is a character it asked for.
    assert (ws / "f.txt").read_bytes() == codecs.BOM_UTF8 + "\ufeffnew\n".encode()


async def test_bom_and_crlf_together(ws: Path, rt: Runtime) -> None:
    await rewrite(rt, ws, codecs.BOM_UTF8 + b"a\r\nb\r\n", "a\nb\nc\n")
    assert (ws / "f.txt").read_bytes() == codecs.BOM_UTF8 + b"a\r\nb\r\nc\r\n"


async def test_cp1252_is_kept_and_its_other_bytes_survive(ws: Path, rt: Runtime) -> None:
    raw = b"caf\xe9 \x93q\x94 \x80\r\nsecond\r\n"
    r = await rewrite(rt, ws, raw, "café “q” €\nsecond\nna\u00efve\n")
    assert (ws / "f.txt").read_bytes() == raw + b"na\xefve\r\n"
    assert r.metadata["format"] == "cp1252, CRLF"
    assert "Kept its format: cp1252, CRLF." in r.content


async def test_a_character_cp1252_cannot_hold_is_refused_and_the_file_kept(
    ws: Path, rt: Runtime
) -> None:
    (ws / "f.txt").write_bytes(b"caf\xe9\n")
    await read(rt, "f.txt")
    r = await write(rt, "f.txt", "café 世界\n")
    assert r.error == ErrorCode.INVALID_ARGS
    assert "cp1252" in r.content
    assert (ws / "f.txt").read_bytes() == b"caf\xe9\n"


@pytest.mark.parametrize(
    ("bom", "encoding"),
    [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")],
)
async def test_utf16_is_kept(ws: Path, rt: Runtime, bom: bytes, encoding: str) -> None:
    r = await rewrite(rt, ws, bom + "héllo\r\n".encode(encoding), "héllo\nwörld 世界\n")
    assert (ws / "f.txt").read_bytes() == bom + "héllo\r\nwörld 世界\r\n".encode(encoding)
    label = "UTF-16 LE" if encoding == "utf-16-le" else "UTF-16 BE"
    assert r.metadata["format"] == f"{label} with BOM, CRLF"


async def test_the_mode_bits_are_kept(ws: Path, rt: Runtime) -> None:
    (ws / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(ws / "run.sh", 0o755)
    await read(rt, "run.sh")
    assert (await write(rt, "run.sh", "#!/bin/sh\necho bye\n")).ok
    assert stat.S_IMODE(os.stat(ws / "run.sh").st_mode) == 0o755
    os.chmod(ws / "run.sh", 0o640)
    await read(rt, "run.sh")
    assert (await write(rt, "run.sh", "#!/bin/sh\n")).ok
    assert stat.S_IMODE(os.stat(ws / "run.sh").st_mode) == 0o640


# -- results -----------------------------------------------------------------------------------


async def test_an_update_reports_lines_diff_stat_and_carries_the_diff(
    ws: Path, rt: Runtime
) -> None:
    (ws / "app.py").write_text("import os\n\n\ndef main():\n    pass\n", encoding="utf-8")
    await read(rt, "app.py")
    r = await write(rt, "app.py", "import os\nimport sys\n\n\ndef main():\n    print(sys.argv)\n")
    assert norm(r.content, ws) == snapshot("Updated WS/app.py: 6 lines (+2 -1).")
    assert r.summary == snapshot("Updated app.py (+2 -1)")
    assert r.diff == snapshot("""\
--- a/app.py
+++ b/app.py
@@ -1,5 +1,6 @@
 import os
+import sys
 \n\
 \n\
 def main():
-    pass
+    print(sys.argv)
""")
    meta = dict(r.metadata)
    assert meta.pop("path") == str(ws / "app.py")
    assert meta == snapshot(
        {
            "created": False,
            "lines": 6,
            "added": 2,
            "removed": 1,
            "format": "UTF-8, LF",
            "written": True,
        }
    )


async def test_the_diff_of_a_crlf_file_shows_lf(ws: Path, rt: Runtime) -> None:
    r = await rewrite(rt, ws, b"a\r\nb\r\n", "a\nB\n")
    assert r.diff is not None
    assert "\r" not in r.diff
    assert "-b\n+B\n" in r.diff


async def test_identical_content_writes_nothing(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_bytes(b"same\r\n")
    await read(rt, "a.txt")
    before = os.stat(ws / "a.txt")
    r = await write(rt, "a.txt", "same\n")
    assert r.ok
    assert norm(r.content, ws) == snapshot(
        "WS/a.txt already had exactly this content (1 line); nothing was written."
    )
    assert r.diff is None
    after = os.stat(ws / "a.txt")
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert r.metadata["written"] is False


# -- refusals ----------------------------------------------------------------------------------


async def test_a_directory_is_not_replaced(ws: Path, rt: Runtime) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "keep.txt").write_text("keep", encoding="utf-8")
    r = await write(rt, "src", "x")
    assert r.error == ErrorCode.NOT_A_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/src is a directory, so write_file cannot replace it. Give the path of a file (inside it, or elsewhere)."
    )
    assert (ws / "src" / "keep.txt").read_text(encoding="utf-8") == "keep"


async def test_a_path_ending_in_a_separator_is_refused_before_anything(
    ws: Path, rt: Runtime
) -> None:
    r = await write(rt, "newdir/", "x")
    assert r.error == ErrorCode.INVALID_ARGS
    assert r.content == snapshot("""\
file_path 'newdir/' ends with a path separator, so it names a folder; give the path of the file to write (folders are created as needed).
Call `write_file` again with corrected arguments.\
""")
    assert not (ws / "newdir").exists()


async def test_a_fifo_is_not_opened_or_replaced(ws: Path) -> None:
    rt = make_runtime(ws, default_timeout=10)
    os.mkfifo(ws / "pipe")
    r = await write(rt, "pipe", "x")
    assert r.error == ErrorCode.NOT_A_FILE
    assert "is a FIFO (named pipe), not a regular file" in r.content
    assert stat.S_ISFIFO(os.lstat(ws / "pipe").st_mode)


async def test_a_binary_file_is_not_replaced_with_text(ws: Path, rt: Runtime) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 100
    (ws / "logo.png").write_bytes(png)
    r = await write(rt, "logo.png", "not a png")
    assert r.error == ErrorCode.BINARY_FILE
    assert norm(r.content, ws) == snapshot(
        "WS/logo.png looks like a PNG image (108 bytes), not text; write_file will not replace a binary file with text. Write to another path, or remove the file first if replacing it is really intended."
    )
    assert (ws / "logo.png").read_bytes() == png


async def test_a_file_in_the_way_of_a_parent_folder(ws: Path, rt: Runtime) -> None:
    (ws / "a.txt").write_text("x", encoding="utf-8")
    r = await write(rt, "a.txt/b.txt", "y")
    assert r.error == ErrorCode.NOT_A_FILE
    assert "cannot create the folder" in r.content
    assert (ws / "a.txt").read_text(encoding="utf-8") == "x"


async def test_an_existing_file_over_the_cap_is_not_replaced(ws: Path) -> None:
    rt = Runtime(Registry([ReadFile(), WriteFile(max_bytes=100)]), root=ws, mode="accept_edits")
    (ws / "big.txt").write_bytes(b"x" * 200)
    r = await write(rt, "big.txt", "small")
    assert r.error == ErrorCode.FILE_TOO_LARGE
    assert (ws / "big.txt").read_bytes() == b"x" * 200


# -- permissions -------------------------------------------------------------------------------


async def test_default_mode_asks_before_writing(ws: Path) -> None:
    rt = make_runtime(ws, mode="default")
    r = await write(rt, "a.txt", "hello\n")
    assert isinstance(r, Interrupted)
    assert r.approval is not None
    assert r.approval.tool_name == "write_file"
    assert not (ws / "a.txt").exists()
    done = await rt.resume(r, Approval.allow_once())
    assert done.ok
    assert (ws / "a.txt").read_bytes() == b"hello\n"


async def test_a_denied_write_writes_nothing(ws: Path) -> None:
    rt = make_runtime(ws, mode="default")
    r = await write(rt, "a.txt", "hello\n")
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.deny("no"))
    assert done.error == ErrorCode.PERMISSION_DENIED
    assert not (ws / "a.txt").exists()


async def test_plan_mode_refuses_writes(ws: Path) -> None:
    rt = make_runtime(ws, mode="plan")
    r = await write(rt, "a.txt", "hello\n")
    assert r.error == ErrorCode.PERMISSION_DENIED
    assert not (ws / "a.txt").exists()


# -- Chinese -----------------------------------------------------------------------------------


async def test_messages_in_chinese(ws: Path) -> None:
    rt = make_runtime(ws, locale="zh")
    r = await write(rt, "a.txt", "一\n二\n")
    assert norm(r.content, ws) == snapshot("已创建 WS/a.txt:共 2 行(+2 -0)。")
    assert r.summary == snapshot("已创建 a.txt(+2 -0)")
    (ws / "b.txt").write_text("x\n", encoding="utf-8")
    assert norm((await write(rt, "b.txt", "y\n")).content, ws) == snapshot(
        "本会话尚未完整读取 WS/b.txt。请先用 read_file 读取它(较长时分页读完),然后再试。"
    )
    (ws / "c.txt").write_bytes(b"c\r\n")
    await read(rt, "c.txt")
    assert norm((await write(rt, "c.txt", "d\n")).content, ws) == snapshot(
        "已更新 WS/c.txt:共 1 行(+1 -1)。保留了原有格式:UTF-8, CRLF。"
    )
