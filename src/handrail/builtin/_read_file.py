"""read_file: a text file as numbered lines, paged, with what the session read recorded.

Lines are shown as `N<TAB>text` (1-based) so an old_string can be copied exactly; CRLF is shown
as LF and a byte-order mark is hidden (write_file and edit_file put both back). What was shown
is recorded per path (mtime, size, sha256, line ranges): reading a file page by page to its end
counts as reading it in full, and asking again for lines already seen, unchanged, returns a
short note instead of the same text.

An image (PNG, JPEG, GIF, WebP) or a PDF up to `attach_max_bytes` comes back as a content
part after one line of text, for the providers that take one (the others get the text view,
which names it); larger ones, and every other binary file, are refused with BINARY_FILE.

Nothing here opens, resolves or checks a path itself: the sandbox does (`confine_read`,
`stat_file`, `read_file_bytes`, `list_dir_names`), and directories, FIFOs and devices are
refused from their `lstat` before anything is opened.
"""

from __future__ import annotations

import base64
import os.path
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    ImagePart,
    PermissionRequest,
    ReadPath,
    ResourcePart,
    Session,
    TextPart,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ..sandbox import (
    FileData,
    confine_read,
    decode_text,
    list_dir_names,
    read_file_bytes,
    sniff_binary,
    split_lines,
    stat_file,
)
from ..validation import closest
from ._displays import read_display
from ._hidden_paths import refuse_hidden, visible_names
from ._i18n import size_text, text
from ._list_files import printable
from ._records import digest, record_read, unchanged_range

__all__ = ["ReadFile", "ReadFileArgs"]

DEFAULT_LIMIT = 2000
"""Lines shown when the call gives no limit."""
MAX_LINE_CHARS = 2000
"""A longer line is cut here, with a marker saying how much was cut."""
MAX_OUTPUT_CHARS = 100_000
"""About 25k tokens: a page stops early (with the paging footer) rather than grow past this."""
MAX_READ_BYTES = 256 * 1024 * 1024
ATTACH_MAX_BYTES = 3_750_000
"""Images and PDFs up to this size are returned as content parts: base64 makes it 5 MB, the
most Anthropic accepts for one image (OpenAI and Gemini accept more)."""
_ATTACHABLE: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)
"""Files larger than this are not read at all (paging cannot help: each page reads the file)."""

_NOTES_KEY = "read_file"
"""`Session.data` key: per path, the (sha256, first, last) of the last "unchanged" note."""
_SURROGATES = re.compile("[\udc80-\udcff]")

CATALOG = {
    "en": {
        "not_found": "{path} does not exist.",
        "did_you_mean": " Did you mean {names}?",
        "no_folder": " Its folder {folder} does not exist either.",
        "not_found_next": (
            " Relative paths resolve against {cwd}. Check the path with list_files, or create "
            "the file with write_file."
        ),
        "directory": (
            "{path} is a directory, not a file. Use list_files to see what it contains, then "
            "call read_file on one of those files."
        ),
        "special": (
            "{path} is {kind}, not a regular file, so read_file does not open it (reading it "
            "could block or never end). Read a regular file instead."
        ),
        "link_loop": (
            "{path} is a symbolic link that never reaches a file (the links form a loop). "
            "Read the file it was meant to point to; list_files shows what is there."
        ),
        "too_large": (
            "{path} is {size}, over read_file's limit of {limit}, so it is not read at all "
            "(paging cannot help at this size). Use grep_search to find the lines you need, or "
            "run_shell with head, tail or sed -n to look at part of it."
        ),
        "binary": (
            "{path} looks like {what} ({size}), not text; read_file shows only text files. "
            "If you need to know more about it, use a tool made for that format through "
            "run_shell (for example `file`, or `unzip -l` for an archive)."
        ),
        "attached": "{path} is {what} ({size}); it is attached below.",
        "too_big_to_attach": (
            "{path} is {what} of {size}, over the {limit} that read_file attaches; it is not "
            "shown. Make a smaller copy with run_shell if a tool for that is installed (for "
            "example `convert` for an image, `pdftotext` for a PDF), then read that."
        ),
        "summary_attached": "Read {path} ({what}, attached)",
        "offset_past_end": (
            "offset {offset} is past the end of {path}, which has {lines}. Call read_file "
            "again with an offset from 1 to {total}."
        ),
        "empty": "{path} exists but is empty (0 lines).",
        "unchanged": (
            "Lines {first}-{last} of {path} are unchanged since this session last read "
            "them: the earlier output is still accurate, so rely on it instead of reading "
            "again. (If that output is no longer available to you, call read_file again with "
            "the same arguments and the text will be shown.)"
        ),
        "cut": "… [line cut: {n} more characters]",
        "footer": "[showing lines {first}-{last} of {total}; call again with offset={next}]",
        "summary": "Read {path} lines {first}-{last} of {total}",
        "summary_empty": "Read {path} (empty)",
        "summary_unchanged": "{path} lines {first}-{last} unchanged since the last read",
        "fifo": "a FIFO (named pipe)",
        "device": "a device",
        "socket": "a socket",
        "other": "a special file",
        "lines_one": "1 line",
        "lines_many": "{n} lines",
    },
    "zh": {
        "not_found": "{path} 不存在。",
        "did_you_mean": "你是不是想读 {names}?",
        "no_folder": "它所在的文件夹 {folder} 也不存在。",
        "not_found_next": (
            "相对路径以 {cwd} 为基准解析。请用 list_files 核对路径,或用 write_file 创建该文件。"
        ),
        "directory": (
            "{path} 是目录,不是文件。请用 list_files 查看其中的内容,再对其中的文件调用 read_file。"
        ),
        "special": (
            "{path} 是{kind},不是普通文件,read_file 不会打开它(读取可能阻塞或永不结束)。"
            "请改为读取普通文件。"
        ),
        "link_loop": (
            "{path} 是一个永远指不到文件的符号链接(链接构成了循环)。"
            "请读取它本应指向的文件;用 list_files 查看那里有什么。"
        ),
        "too_large": (
            "{path} 大小为 {size},超过 read_file 的上限 {limit},因此完全不读取"
            "(文件这么大,分页也无济于事)。请用 grep_search 查找需要的行,"
            "或用 run_shell 执行 head、tail 或 sed -n 查看其中一部分。"
        ),
        "binary": (
            "{path} 看起来是{what}({size}),不是文本;read_file 只显示文本文件。"
            "如需了解更多,请通过 run_shell 使用适合该格式的工具"
            "(例如 `file`,或对压缩包用 `unzip -l`)。"
        ),
        "attached": "{path} 是{what}({size}),已附在下面。",
        "too_big_to_attach": (
            "{path} 是{what},大小 {size},超过 read_file 附带的上限 {limit},因此不显示。"
            "如果装有相应工具,请用 run_shell 生成一个更小的副本"
            "(例如图片用 `convert`,PDF 用 `pdftotext`),再读取它。"
        ),
        "summary_attached": "读取 {path}({what},已附上)",
        "offset_past_end": (
            "offset {offset} 超出了 {path} 的末尾(该文件共 {total} 行)。"
            "请用 1 到 {total} 之间的 offset 再次调用 read_file。"
        ),
        "empty": "{path} 存在,但内容为空(0 行)。",
        "unchanged": (
            "{path} 的第 {first}-{last} 行自本会话上次读取以来没有变化:之前的输出仍然准确,"
            "请直接使用它,无需再读。(如果你已无法看到那次输出,"
            "用相同参数再次调用 read_file 即会显示内容。)"
        ),
        "cut": "… [本行已截断:后面还有 {n} 个字符]",
        "footer": "[显示第 {first}-{last} 行,共 {total} 行;用 offset={next} 再次调用以继续]",
        "summary": "读取 {path} 第 {first}-{last} 行(共 {total} 行)",
        "summary_empty": "读取 {path}(空文件)",
        "summary_unchanged": "{path} 第 {first}-{last} 行自上次读取后未变",
        "fifo": "一个 FIFO(命名管道)",
        "device": "一个设备文件",
        "socket": "一个套接字",
        "other": "一个特殊文件",
        "lines_one": "1 行",
        "lines_many": "{n} 行",
    },
}


def lines_text(locale: str, n: int) -> str:
    """`1 line`, `3 lines` (in the locale)."""
    return text(locale, CATALOG, "lines_one" if n == 1 else "lines_many", n=n)


def kind_key(mode: int) -> str:
    """Catalog key naming what a non-regular, non-directory file is."""
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "other"


def shown_path(path: str, ctx: ToolContext) -> str:
    """`path` relative to the working directory when it lies below it (for summaries)."""
    cwd = str(ctx.cwd)
    if path.startswith(cwd.rstrip(os.sep) + os.sep):
        return path[len(cwd.rstrip(os.sep)) + 1 :]
    return path


class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    file_path: str = Field(
        min_length=1,
        description="The file to read: a path relative to the working directory, or absolute.",
    )
    offset: int = Field(
        default=1,
        ge=1,
        description=(
            "Line number to start at (1-based). Use it to page through a long file: the "
            "footer of a partial read says which offset to use next."
        ),
    )
    limit: int = Field(
        default=DEFAULT_LIMIT,
        ge=1,
        description="How many lines to show at most (default 2000).",
    )


class ReadFile(Tool):
    """The built-in read_file tool."""

    name = "read_file"
    description = (
        "Read a text file. Returns its lines as `N<TAB>text` (N is the 1-based line number), "
        "the first 2000 lines by default; when more remains, a footer says which offset to "
        "call again with. Lines longer than 2000 characters are cut, with a marker. Use this "
        "rather than run_shell with cat, head, tail or sed to look at a file. Read a file in "
        "full (page by page if it is long) before changing it with edit_file or write_file. "
        "Images (PNG, JPEG, GIF, WebP) and PDFs come back as attachments; not for "
        "directories (use list_files) or other binary files (archives, executables). To "
        "find where something is, use grep_search first."
    )
    usage = (
        "read_file: the line number and TAB before each line are not part of the file; copy "
        "only the text after the TAB into edit_file's old_string. A footer `showing lines A-B "
        "of N; call again with offset=B+1` means the file goes on: call again with that offset "
        "to see more. Asking again for lines you already read, unchanged, returns a short "
        "note instead of the text; rely on your earlier output."
    )
    kind = ToolKind.READ
    read_only = True
    concurrency_safe = True
    destructive = False
    idempotent = True
    args_model: ClassVar[type[BaseModel] | None] = ReadFileArgs

    def __init__(
        self,
        *,
        max_bytes: int = MAX_READ_BYTES,
        max_output_chars: int = MAX_OUTPUT_CHARS,
        attach_max_bytes: int = ATTACH_MAX_BYTES,
        **options: Any,
    ) -> None:
        self.max_bytes = max_bytes
        """Files larger than this are refused with FILE_TOO_LARGE."""
        self.attach_max_bytes = attach_max_bytes
        """Images and PDFs up to this size come back as content parts (0: never)."""
        self.max_output_chars = max_output_chars
        """A page stops early (with the paging footer) before its text grows past this."""
        # The tool pages itself: room for the page plus a footer, so the runtime never cuts it.
        options.setdefault("max_result_chars", max_output_chars + 10_000)
        super().__init__(**options)

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`read_display`)."""
        return read_display(view, name=self.name)

    def permission_requests(
        self, args: ReadFileArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The file is read: the policy confines it to the read roots."""
        return [ReadPath(path=args.file_path)]

    def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:
        """Read the file and return the requested page of numbered lines."""
        loc = ctx.locale
        path = confine_read(args.file_path, ctx)
        refuse_hidden(path, ctx)  # again at open time: the policy saw the path before the run
        data = self._load(path, ctx)
        what = sniff_binary(data.data)
        mime = _attachable(data.data) if what is not None else None
        if mime is not None and self.attach_max_bytes > 0:
            return self._attach(path, data, what or mime, mime, ctx)
        if what is not None:
            raise ToolFailure(
                text(loc, CATALOG, "binary", path=path, what=what, size=size_text(data.size)),
                code=ErrorCode.BINARY_FILE,
            )
        body, fmt = decode_text(data.data)
        if fmt.encoding == "cp1252":
            body = _SURROGATES.sub("\ufffd", body)  # undefined cp1252 bytes: not valid Unicode
        lines = split_lines(body, fmt.newline)
        total = len(lines)
        sha = digest(data.data)
        meta: dict[str, Any] = {"path": path, "total_lines": total, "format": fmt.label}
        rel = shown_path(path, ctx)
        if total == 0:
            record_read(ctx, data, first=1, last=0, total_lines=0, sha256=sha)
            return ToolResult.success(
                text(loc, CATALOG, "empty", path=path),
                summary=text(loc, CATALOG, "summary_empty", path=rel),
                metadata={**meta, "first_line": 0, "last_line": 0},
            )
        first = args.offset
        if first > total:
            raise ToolFailure(
                text(
                    loc,
                    CATALOG,
                    "offset_past_end",
                    offset=first,
                    path=path,
                    total=total,
                    lines=lines_text(loc, total),
                ),
                code=ErrorCode.INVALID_ARGS,
            )
        out, last = self._page(lines, first, min(total, first + args.limit - 1), loc)
        meta.update(first_line=first, last_line=last)
        key = (sha, first, last)
        if unchanged_range(ctx, data, first=first, last=last, sha256=sha):
            if _last_note(ctx.session, path) != key:
                _set_note(ctx, path, key)
                return ToolResult.success(
                    text(loc, CATALOG, "unchanged", first=first, last=last, path=path),
                    summary=text(
                        loc, CATALOG, "summary_unchanged", path=rel, first=first, last=last
                    ),
                    metadata={**meta, "unchanged": True},
                )
        if _last_note(ctx.session, path) is not None:
            _set_note(ctx, path, None)
        record_read(ctx, data, first=first, last=last, total_lines=total, sha256=sha)
        content = "\n".join(out)
        if last < total:
            footer = text(
                loc, CATALOG, "footer", first=first, last=last, total=total, next=last + 1
            )
            content += "\n\n" + footer
        return ToolResult.success(
            content,
            summary=text(loc, CATALOG, "summary", path=rel, first=first, last=last, total=total),
            metadata=meta,
        )

    def _attach(
        self, path: str, data: FileData, what: str, mime: str, ctx: ToolContext
    ) -> ToolResult:
        """An image or a PDF as a content part, after one line that names it."""
        loc = ctx.locale
        size = size_text(data.size)
        if data.size > self.attach_max_bytes:
            limit = size_text(self.attach_max_bytes)
            raise ToolFailure(
                text(
                    loc, CATALOG, "too_big_to_attach", path=path, what=what, size=size, limit=limit
                ),
                code=ErrorCode.BINARY_FILE,
            )
        intro = TextPart(text=text(loc, CATALOG, "attached", path=path, what=what, size=size))
        if mime.startswith("image/"):
            part: ImagePart | ResourcePart = ImagePart.of(data.data, mime)
        else:
            blob = base64.b64encode(data.data).decode("ascii")
            part = ResourcePart(uri=Path(path).as_uri(), mime_type=mime, blob=blob)
        rel = shown_path(path, ctx)
        return ToolResult.success(
            parts=(intro, part),
            summary=text(loc, CATALOG, "summary_attached", path=rel, what=what),
            metadata={"path": path, "mime_type": mime, "size": data.size},
        )

    def _load(self, path: str, ctx: ToolContext) -> FileData:
        """The file's bytes, after refusing what must not be opened (from its lstat)."""
        loc = ctx.locale
        st = stat_file(path)
        if st is None:
            raise ToolFailure(_not_found(path, ctx), code=ErrorCode.FILE_NOT_FOUND)
        if stat.S_ISDIR(st.st_mode):
            raise ToolFailure(text(loc, CATALOG, "directory", path=path), code=ErrorCode.NOT_A_FILE)
        if stat.S_ISLNK(st.st_mode):  # still a link after resolving: a loop
            raise ToolFailure(text(loc, CATALOG, "link_loop", path=path), code=ErrorCode.NOT_A_FILE)
        if not stat.S_ISREG(st.st_mode):
            kind = text(loc, CATALOG, kind_key(st.st_mode))
            raise ToolFailure(
                text(loc, CATALOG, "special", path=path, kind=kind), code=ErrorCode.NOT_A_FILE
            )
        if st.st_size > self.max_bytes:
            raise ToolFailure(
                text(
                    loc,
                    CATALOG,
                    "too_large",
                    path=path,
                    size=size_text(st.st_size),
                    limit=size_text(self.max_bytes),
                ),
                code=ErrorCode.FILE_TOO_LARGE,
            )
        return read_file_bytes(path, ctx, max_bytes=self.max_bytes)

    def _page(self, lines: list[str], first: int, last: int, loc: str) -> tuple[list[str], int]:
        """Numbered lines `first`..`last`, stopping early before the output budget runs out."""
        out: list[str] = []
        used = 0
        shown = first - 1
        for number in range(first, last + 1):
            line = lines[number - 1]
            if len(line) > MAX_LINE_CHARS:
                cut = text(loc, CATALOG, "cut", n=len(line) - MAX_LINE_CHARS)
                line = line[:MAX_LINE_CHARS] + cut
            entry = f"{number}\t{line}"
            if out and used + len(entry) + 1 > self.max_output_chars:
                break
            out.append(entry)
            used += len(entry) + 1
            shown = number
        return out, shown


def _attachable(data: bytes) -> str | None:
    """The media type of an image or PDF read_file can attach, or None."""
    for magic, mime in _ATTACHABLE:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _not_found(path: str, ctx: ToolContext) -> str:
    loc = ctx.locale
    message = text(loc, CATALOG, "not_found", path=path)
    folder, name = os.path.split(path)
    names = visible_names(folder, list_dir_names(folder, ctx), ctx)
    guesses = closest(name, names, n=3) if names else []
    if guesses:
        shown = ", ".join(os.path.join(folder, g) for g in guesses)
        message += text(loc, CATALOG, "did_you_mean", names=shown)
    elif stat_file(folder) is None:
        message += text(loc, CATALOG, "no_folder", folder=folder)
    # printable: a suggested name may be bytes that are not UTF-8 (surrogate escapes).
    return printable(message + text(loc, CATALOG, "not_found_next", cwd=ctx.cwd))


def _notes(session: Session) -> dict[str, tuple[str, int, int]]:
    found = session.data.get(_NOTES_KEY)
    return cast(dict[str, tuple[str, int, int]], found) if isinstance(found, dict) else {}


def _last_note(session: Session, path: str) -> tuple[str, int, int] | None:
    return _notes(session).get(path)


def _set_note(ctx: ToolContext, path: str, key: tuple[str, int, int] | None) -> None:
    """Remember (or forget) that an "unchanged" note was the last answer for this path."""

    def update(session: Session) -> None:
        notes = _notes(session)
        if key is None:
            notes.pop(path, None)
        else:
            notes[path] = key
        session.data[_NOTES_KEY] = notes

    ctx.update_state(update)
