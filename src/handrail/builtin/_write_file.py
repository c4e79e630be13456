"""write_file: create a file, or replace the whole of one this session has read.

An existing file is replaced only if this session read it in full and its bytes are unchanged
since (a formatter that only touched the mtime does not block). It keeps its encoding, byte-order
mark and dominant line ending: the model sends LF text, which is converted. A new file gets
exactly the text the model sent, as UTF-8: its line endings (LF, CRLF or a mix) byte for byte.
The write is atomic (the sandbox's `atomic_write`: unnamed file, fsync, link or rename, mode
kept), and afterwards the session knows the new content, so the next edit needs no re-read.

Nothing here opens, resolves or checks a path itself: the sandbox does (`confine_write`,
`stat_file`, `read_file_bytes`, `ensure_parent`, `atomic_write`).
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    PermissionRequest,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
    WritePath,
)
from ..sandbox import (
    TextFormat,
    atomic_write,
    confine_write,
    decode_text,
    diff_stat,
    encode_text,
    ensure_parent,
    newline_of,
    read_file_bytes,
    sniff_binary,
    split_lines,
    stat_file,
    unified_diff,
)
from . import _records
from ._displays import write_display
from ._i18n import size_text, text
from ._read_file import MAX_READ_BYTES, kind_key, lines_text, shown_path
from ._records import record_write, require_fresh

__all__ = ["WriteFile", "WriteFileArgs"]

CATALOG = {
    "en": {
        "trailing_slash": (
            "file_path {path!r} ends with a path separator, so it names a folder; give the path "
            "of the file to write (folders are created as needed)."
        ),
        "directory": (
            "{path} is a directory, so write_file cannot replace it. Give the path of a file "
            "(inside it, or elsewhere)."
        ),
        "special": (
            "{path} is {kind}, not a regular file, so write_file does not replace it. Choose "
            "another path."
        ),
        "too_large": (
            "{path} is {size}, over the {limit} that read_file can read, so this session cannot "
            "have read it in full and write_file will not replace it. Change it with run_shell "
            "tools if you must, or write a new file."
        ),
        "binary": (
            "{path} looks like {what} ({size}), not text; write_file will not replace a binary "
            "file with text. Write to another path, or remove the file first if replacing it "
            "is really intended."
        ),
        "appeared": (
            "{path} did not exist when this call started but does now (something else created "
            "it). Call read_file on it, then decide whether to replace it."
        ),
        "created": "Created {path}: {lines} (+{added} -{removed}).",
        "updated": "Updated {path}: {lines} (+{added} -{removed}).",
        "same": "{path} already had exactly this content ({lines}); nothing was written.",
        "kept": " Kept its format: {format}.",
        "summary_created": "Created {path} (+{added} -{removed})",
        "summary_updated": "Updated {path} (+{added} -{removed})",
        "summary_same": "{path} unchanged",
        "fifo": "a FIFO (named pipe)",
        "device": "a device",
        "socket": "a socket",
        "other": "not a regular file",
    },
    "zh": {
        "trailing_slash": (
            "file_path {path!r} 以路径分隔符结尾,表示的是文件夹;请给出要写入的文件路径"
            "(所需的文件夹会自动创建)。"
        ),
        "directory": "{path} 是目录,write_file 无法替换它。请给出一个文件的路径(在其中或别处)。",
        "special": "{path} 是{kind},不是普通文件,write_file 不会替换它。请换一个路径。",
        "too_large": (
            "{path} 大小为 {size},超过 read_file 能读取的 {limit},本会话不可能完整读过它,"
            "因此 write_file 不会替换它。如确有必要,请用 run_shell 中的工具修改,或写入一个新文件。"
        ),
        "binary": (
            "{path} 看起来是{what}({size}),不是文本;write_file 不会用文本替换二进制文件。"
            "请写到其他路径;如果确实要替换,请先删除该文件。"
        ),
        "appeared": (
            "本次调用开始时 {path} 还不存在,现在却存在了(被其他程序创建)。"
            "请先用 read_file 读取它,再决定是否替换。"
        ),
        "created": "已创建 {path}:共 {lines}(+{added} -{removed})。",
        "updated": "已更新 {path}:共 {lines}(+{added} -{removed})。",
        "same": "{path} 的内容与要写入的完全相同(共 {lines});未写入任何内容。",
        "kept": "保留了原有格式:{format}。",
        "summary_created": "已创建 {path}(+{added} -{removed})",
        "summary_updated": "已更新 {path}(+{added} -{removed})",
        "summary_same": "{path} 未变",
        "fifo": "一个 FIFO(命名管道)",
        "device": "一个设备文件",
        "socket": "一个套接字",
        "other": "非普通文件",
    },
}

_DEFAULT_FORMAT = TextFormat()


def _as_lf(body: str, fmt: TextFormat) -> str:
    """The text as read_file shows it: line endings as LF (for the diff against new content)."""
    if fmt.newline == "\r":
        return body.replace("\r\n", "\n").replace("\r", "\n")
    return body.replace("\r\n", "\n")


class WriteFileArgs(BaseModel):
    """Arguments of write_file."""

    file_path: str = Field(
        min_length=1,
        description=(
            "The file to create or replace: a path relative to the working directory, or "
            "absolute. Missing parent folders are created."
        ),
    )
    content: str = Field(
        description=(
            "The complete new content of the file, with \\n line endings. An existing file "
            "keeps its own line endings, encoding and byte-order mark."
        ),
    )


class WriteFile(Tool):
    """The built-in write_file tool."""

    name = "write_file"
    description = (
        "Create a new file, or replace the entire content of an existing one. Missing parent "
        "folders are created. To change part of an existing file, use edit_file instead: it "
        "sends only the change and cannot drop the rest by accident. Replacing an existing "
        "file requires that you read it in full with read_file in this session and that it "
        "has not changed since. Send the complete content, never placeholders such as "
        "'rest unchanged'. Use this rather than run_shell with echo, cat or tee redirections."
    )
    usage = (
        "write_file: prefer edit_file for changes to an existing file; use write_file for new "
        "files and for complete rewrites. Write plain \\n line endings: an existing file keeps "
        "its own line endings, encoding and byte-order mark."
    )
    kind = ToolKind.EDIT
    read_only = False
    concurrency_safe = False
    destructive = True
    idempotent = True  # writing the same content twice leaves the same file as writing it once
    args_model: ClassVar[type[BaseModel] | None] = WriteFileArgs

    def __init__(self, *, max_bytes: int = MAX_READ_BYTES, **options: Any) -> None:
        self.max_bytes = max_bytes
        """Existing files larger than this are never replaced (read_file cannot read them)."""
        super().__init__(**options)

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`write_display`)."""
        return write_display(view, name=self.name)

    def validate_input(self, args: WriteFileArgs, ctx: ToolContext) -> str | None:
        """Refuse a path that names a folder (`dir/`) before anything is checked on disk."""
        if args.file_path.endswith(("/", "\\")):
            return text(ctx.locale, CATALOG, "trailing_slash", path=args.file_path)
        return None

    def permission_requests(
        self, args: WriteFileArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The file is written: the policy confines it to the write roots."""
        return [WritePath(path=args.file_path)]

    def run(self, args: WriteFileArgs, ctx: ToolContext) -> ToolResult:
        """Write the file and report what changed."""
        loc = ctx.locale
        path = confine_write(args.file_path, ctx)
        st = stat_file(path)
        old_data: bytes | None = None
        old_identity: tuple[int, int, int] | None = None
        if st is None:
            # A new file gets exactly the text sent; only the diff and line count see LF.
            fmt = TextFormat(newline=newline_of(args.content))
            new_lf = _as_lf(args.content, fmt)
            data = encode_text(args.content, _DEFAULT_FORMAT)
            old_lf = ""
        else:
            self._check_replaceable(path, st.st_mode, st.st_size, loc)
            current = read_file_bytes(path, ctx, max_bytes=self.max_bytes)
            what = sniff_binary(current.data)
            if what is not None:
                raise ToolFailure(
                    text(
                        loc, CATALOG, "binary", path=path, what=what, size=size_text(current.size)
                    ),
                    code=ErrorCode.BINARY_FILE,
                )
            require_fresh(ctx, current)
            old_text, fmt = decode_text(current.data)
            old_lf = _as_lf(old_text, fmt)
            old_data = current.data
            old_identity = (current.mtime_ns, current.size, st.st_ino)
            # An existing file keeps its line ending: the model's text is converted to it.
            new_lf = args.content.replace("\r\n", "\n")
            on_disk = new_lf if fmt.newline == "\n" else new_lf.replace("\n", fmt.newline)
            data = encode_text(on_disk, fmt)
        lines = len(split_lines(new_lf))
        added, removed = diff_stat(old_lf, new_lf)
        rel = shown_path(path, ctx)
        meta: dict[str, Any] = {
            "path": path,
            "created": st is None,
            "lines": lines,
            "added": added,
            "removed": removed,
            "format": fmt.label,
        }
        if old_data is not None and data == old_data:
            record_write(ctx, path, data, mtime_ns=old_identity[0] if old_identity else 0)
            return ToolResult.success(
                text(loc, CATALOG, "same", path=path, lines=lines_text(loc, lines)),
                summary=text(loc, CATALOG, "summary_same", path=rel),
                metadata={**meta, "written": False},
            )
        self._check_still_same(path, old_identity, loc)
        if st is None:
            ensure_parent(path, ctx)
        atomic_write(path, data, ctx)
        after = stat_file(path)
        record_write(ctx, path, data, mtime_ns=after.st_mtime_ns if after is not None else 0)
        key = "created" if st is None else "updated"
        content = text(
            loc,
            CATALOG,
            key,
            path=path,
            lines=lines_text(loc, lines),
            added=added,
            removed=removed,
        )
        if st is not None and fmt != _DEFAULT_FORMAT:
            content += text(loc, CATALOG, "kept", format=fmt.label)
        return ToolResult.success(
            content,
            summary=text(loc, CATALOG, f"summary_{key}", path=rel, added=added, removed=removed),
            diff=unified_diff(old_lf, new_lf, rel),
            metadata={**meta, "written": True},
        )

    def _check_replaceable(self, path: str, mode: int, size: int, loc: str) -> None:
        """Refuse directories, special files and files too large to have been read."""
        if stat.S_ISDIR(mode):
            raise ToolFailure(text(loc, CATALOG, "directory", path=path), code=ErrorCode.NOT_A_FILE)
        if not stat.S_ISREG(mode):
            kind = text(loc, CATALOG, kind_key(mode))
            raise ToolFailure(
                text(loc, CATALOG, "special", path=path, kind=kind), code=ErrorCode.NOT_A_FILE
            )
        if size > self.max_bytes:
            raise ToolFailure(
                text(
                    loc,
                    CATALOG,
                    "too_large",
                    path=path,
                    size=size_text(size),
                    limit=size_text(self.max_bytes),
                ),
                code=ErrorCode.FILE_TOO_LARGE,
            )

    @staticmethod
    def _check_still_same(path: str, identity: tuple[int, int, int] | None, loc: str) -> None:
        """Just before writing: the file is still the one that was checked (or still absent)."""
        now = stat_file(path)
        if identity is None:
            if now is not None:
                raise ToolFailure(
                    text(loc, CATALOG, "appeared", path=path), code=ErrorCode.FILE_NOT_READ
                )
            return
        if now is None or (now.st_mtime_ns, now.st_size, now.st_ino) != identity:
            raise ToolFailure(
                text(loc, _records.CATALOG, "changed", path=path),
                code=ErrorCode.FILE_MODIFIED_SINCE_READ,
            )
