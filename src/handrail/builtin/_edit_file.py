"""edit_file: replace exact text in a file this session has read, keeping every other byte.

Checks run in the order that gives the most useful refusal first: the arguments on their own (no
I/O), the path (inside the write roots), that it is an existing regular file, its size, that it
is text, and that this session read it in full with the same bytes still on disk. The
replacements then run in memory (`_matching`: the matching ladder, the restyling of new text,
all or nothing for a batch), the result is encoded back in the file's own encoding, BOM and line
endings, and written atomically. Nothing here opens or resolves a path itself: the sandbox does.
"""

from __future__ import annotations

import os.path
import stat
from collections.abc import Sequence
from typing import Any, ClassVar, NoReturn

from pydantic import BaseModel, ConfigDict, Field

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
    encode_text,
    file_kind,
    list_dir_names,
    read_file_bytes,
    sniff_binary,
    stat_file,
)
from ..validation import closest
from ._displays import edit_display
from ._i18n import text
from ._matching import (
    Applied,
    EditError,
    EditSpec,
    Rung,
    apply_edits,
    diff_changes,
    escaped_twice,
    find,
    line_numbers,
    looks_numbered,
    similar_region,
    strip_numbers,
)
from ._records import record_write, require_fresh

__all__ = ["EditFile", "EditFileArgs", "EditItem"]

MAX_BYTES = 64 * 1024 * 1024
"""Files larger than this are refused (FILE_TOO_LARGE)."""
MAX_DIFF_LINES = 80
"""Diff lines shown in the result's text; the `diff` field always has all of them."""
MAX_LISTED_LINES = 20
"""Line numbers listed for an ambiguous old_string."""
MAX_SHOWN_CHARS = 500
"""A line of the similar-text hint longer than this is cut."""

DESCRIPTION = """\
Change an existing text file by replacing exact text: old_string becomes new_string.

Use edit_file for every change to a file that already exists; use write_file only to create a \
new file or to replace a file's whole content.

- Read the whole file with read_file earlier in this conversation: edit_file refuses a file that \
was not read in full, or that changed since it was read.
- Copy old_string exactly from read_file's output, indentation included, but without the \
line-number prefix: on each line, the text is everything after the tab.
- old_string must occur exactly once. If it occurs more often, add surrounding lines until it is \
unique, or set replace_all to change every occurrence (for example to rename a variable).
- new_string replaces it (an empty string deletes it) and must differ from old_string.
- For several changes to one file, send edits: [{old_string, new_string, replace_all}] instead. \
They apply in order, and either all succeed or nothing is written. Each old_string must quote \
the file's text, not text an earlier edit inserted.
- The file keeps its encoding, byte-order mark and line endings. Differences in line endings, \
typographic quotes, dashes and spaces, and whitespace at line ends are tolerated when matching \
old_string; nothing looser is guessed."""

CATALOG = {
    "en": {
        "edit_n": "Edit {n}: ",
        "mixed": (
            "Send either old_string and new_string (one replacement) or edits (several), not "
            "both. Move this replacement into edits, or leave edits out."
        ),
        "mixed_replace_all": (
            "replace_all at the top level belongs to old_string; with edits, set replace_all "
            "on each edit that should change every occurrence."
        ),
        "missing": (
            "Nothing to replace: send old_string and new_string, or edits (a list of "
            "{{old_string, new_string}})."
        ),
        "missing_new": (
            "new_string is missing. Send the text that replaces old_string (an empty string "
            "deletes it)."
        ),
        "empty_old": (
            "{where}old_string is empty. Quote the exact text to replace, copied from read_file "
            "output without the line-number prefix. To insert text, quote a neighbouring line "
            "and repeat it in new_string with the addition; to create a file, use write_file."
        ),
        "same": (
            "{where}old_string and new_string are identical, so there is nothing to change. Put "
            "the text as it should read afterwards in new_string."
        ),
        "outside": "{detail}",
        "not_found": (
            "{path} does not exist.{guess} edit_file changes existing files: to create one, use "
            "write_file; to find a file, use list_files."
        ),
        "did_you_mean": " Did you mean {names}?",
        "directory": (
            "{path} is a directory, not a file. Give the path of one file in it (list_files "
            "shows them)."
        ),
        "special": (
            "{path} is {kind}, not a regular file; edit_file only changes regular text files. "
            "Edit a regular file instead."
        ),
        "too_large": (
            "{path} is {size} bytes, over edit_file's limit of {limit} bytes. Change it with a "
            "script or another tool that streams the file."
        ),
        "binary": (
            "{path} looks like {what} ({size} bytes), not text; edit_file only changes text "
            "files. Use a tool made for that format."
        ),
        "text_not_found": "{where}old_string was not found in {path}{tolerant}.",
        "tolerant": (
            ", not even when ignoring differences in line endings, typographic quotes, dashes "
            "and spaces, and whitespace at line ends"
        ),
        "nothing_changed": " Nothing was changed.",
        "nothing_written": " Nothing was written: a batch applies all of its edits or none.",
        "in_order": (
            " Edits apply in order, so edit {n} must match the text as the edits before it left it."
        ),
        "similar": "\nThe most similar text is at {lines} ({score}% similar):\n{snippet}",
        "similar_lines": "lines {a}-{b}",
        "similar_line": "line {a}",
        "whitespace_only": (
            "\nIt differs from old_string only in indentation or spacing: copy the whitespace "
            "exactly as read_file shows it."
        ),
        "numbered": (
            "\nold_string seems to include read_file's line-number prefixes (`N<TAB>`); send "
            "only the text after the tab on each line."
        ),
        "numbered_found": " Without them it matches at line {line}.",
        "escaped": (
            '\nold_string seems to be escaped twice: it has a backslash and `n` (or `t`, `"`) '
            "where the file has the character itself. Send the text as it appears in the file."
        ),
        "nothing_similar": "\nNothing in the file resembles it.",
        "not_found_next": (
            "\nCall read_file to see the current text, then copy old_string exactly from it "
            "(without the line-number prefix)."
        ),
        "multiple": (
            "{where}old_string occurs {count} times in {path} ({at}){how}.{nothing} "
            "Include more surrounding lines in old_string so that it matches exactly one "
            "place, or set replace_all to true to change every occurrence."
        ),
        "at_line": "line {lines}",
        "at_lines": "lines {lines}",
        "at_least": "at least {n}",
        "and_more": ", and more",
        "how_exact": "",
        "how_line_endings": ", ignoring line-ending differences",
        "how_typography": ", reading typographic quotes, dashes and spaces as plain ones",
        "how_trailing_whitespace": ", ignoring whitespace at line ends",
        "inside_earlier": (
            "Edit {n}: old_string occurs only in text that edit {m} puts there, not in the file "
            "as read.{nothing} Fold this change into edit {m}'s new_string, or quote text of the "
            "file in old_string."
        ),
        "no_change": (
            "This edit would leave {path} exactly as it is: new_string differs from the matched "
            "text only in line endings, typographic characters or trailing whitespace, which "
            "the file keeps as it has them. Nothing was written; if the file already reads as "
            "intended, no edit is needed."
        ),
        "unencodable": (
            "{path} is stored as {label} and cannot hold {char}. Nothing was written. Use "
            "characters that {encoding} can store (or an escape the file's language "
            "understands) in new_string."
        ),
        "raced": (
            "{path} changed on disk while this edit was being prepared. Nothing was written. "
            "Call read_file on it again, then retry the edit."
        ),
        "cancelled": "The edit was stopped before anything was written; {path} is unchanged.",
        "done": "Edited {path}: {what}, first change at line {line} (+{added} -{removed}).",
        "what_one": "1 replacement",
        "what_many": "{count} replacements",
        "what_batch": "{edits} edits, {count} replacements",
        "rung_line_endings": (
            "{where}old_string matched after ignoring line-ending differences; the file keeps "
            "its {eol} line endings."
        ),
        "rung_typography": (
            "{where}old_string matched after reading typographic quotes, dashes and spaces as "
            "plain ones; new_string's quotes were written the way the file writes them there."
        ),
        "rung_trailing_whitespace": (
            "{where}old_string matched after ignoring whitespace at line ends (and differences "
            "in line endings and typographic characters)."
        ),
        "diff_cut": "... {n} more diff lines not shown.",
    },
    "zh": {
        "edit_n": "第 {n} 处编辑:",
        "mixed": (
            "请二选一:用 old_string 和 new_string 做一处替换,或用 edits 做多处替换,不要同时"
            "使用。请把这处替换移入 edits,或去掉 edits。"
        ),
        "mixed_replace_all": (
            "顶层的 replace_all 只作用于 old_string;使用 edits 时,请在需要替换全部出现位置的"
            "那一项编辑里设置 replace_all。"
        ),
        "missing": (
            "没有要替换的内容:请提供 old_string 和 new_string,或提供 edits"
            "({{old_string, new_string}} 的列表)。"
        ),
        "missing_new": "缺少 new_string。请提供替换 old_string 的文本(空字符串表示删除)。",
        "empty_old": (
            "{where}old_string 为空。请引用要替换的原文,从 read_file 的输出中复制,不要带行号"
            "前缀。要插入文本,请引用相邻的一行,并在 new_string 中重复该行再加上新内容;要创建"
            "文件,请用 write_file。"
        ),
        "same": (
            "{where}old_string 与 new_string 完全相同,没有可修改的内容。请在 new_string 中给出"
            "修改后的文本。"
        ),
        "outside": (
            "不能修改 {path}:它不在可写根目录({roots})内,或位于保持只读的 .git/、.handrail/ "
            "目录中。请只编辑可写根目录内的文件。"
        ),
        "not_found": (
            "{path} 不存在。{guess}edit_file 只修改已有文件:创建文件请用 write_file;查找文件"
            "请用 list_files。"
        ),
        "did_you_mean": "你是不是要找 {names}?",
        "directory": "{path} 是目录,不是文件。请给出其中某个文件的路径(可用 list_files 查看)。",
        "special": (
            "{path} 是{kind},不是普通文件;edit_file 只修改普通文本文件。请改为编辑普通文件。"
        ),
        "too_large": (
            "{path} 大小为 {size} 字节,超过 edit_file 的 {limit} 字节上限。请用脚本或其他能流式"
            "处理文件的工具修改它。"
        ),
        "binary": (
            "{path} 看起来是{what}({size} 字节),不是文本;edit_file 只修改文本文件。请使用"
            "适合该格式的工具。"
        ),
        "text_not_found": "{where}在 {path} 中找不到 old_string{tolerant}。",
        "tolerant": "(即使忽略换行符、排版引号/破折号/空格以及行尾空白的差异也找不到)",
        "nothing_changed": "文件未作任何修改。",
        "nothing_written": "未写入任何内容:一批编辑要么全部生效,要么全不生效。",
        "in_order": "编辑按顺序应用,所以第 {n} 处编辑必须匹配前面的编辑完成之后的文本。",
        "similar": "\n最相似的文本位于{lines}(相似度 {score}%):\n{snippet}",
        "similar_lines": "第 {a}-{b} 行",
        "similar_line": "第 {a} 行",
        "whitespace_only": "\n它与 old_string 只差缩进或空白:请按 read_file 的显示原样复制空白。",
        "numbered": (
            "\nold_string 似乎带上了 read_file 的行号前缀(`N<TAB>`);每行只发送制表符之后的文本。"
        ),
        "numbered_found": "去掉行号后,它与第 {line} 行匹配。",
        "escaped": (
            "\nold_string 似乎被转义了两次:文件里是字符本身的地方,它写成了反斜杠加 `n`(或 "
            '`t`、`"`)。请按文件中的原样发送文本。'
        ),
        "nothing_similar": "\n文件中没有与之相似的内容。",
        "not_found_next": (
            "\n请先用 read_file 查看当前内容,再从中原样复制 old_string(不要带行号前缀)。"
        ),
        "multiple": (
            "{where}old_string 在 {path} 中出现了 {count} 次({at}){how}。{nothing}"
            "请在 old_string 中加入更多上下文,使它只匹配一处;或把 replace_all 设为 true,"
            "替换全部出现位置。"
        ),
        "at_line": "第 {lines} 行",
        "at_lines": "第 {lines} 行",
        "at_least": "至少 {n}",
        "and_more": " 等",
        "how_exact": "",
        "how_line_endings": "(忽略换行符差异)",
        "how_typography": "(把排版引号、破折号和空格视为普通字符)",
        "how_trailing_whitespace": "(忽略行尾空白)",
        "inside_earlier": (
            "第 {n} 处编辑:old_string 只出现在第 {m} 处编辑写入的文本中,而不在读取时的文件"
            "里。{nothing}请把这处修改并入第 {m} 处编辑的 new_string,或在 old_string 中引用"
            "文件原有的文本。"
        ),
        "no_change": (
            "这次编辑不会改变 {path}:new_string 与匹配到的文本只差换行符、排版字符或行尾空白,"
            "而这些都按文件原样保留。未写入任何内容;如果文件已经是想要的样子,就不需要编辑。"
        ),
        "unencodable": (
            "{path} 以 {label} 存储,无法容纳 {char}。未写入任何内容。请在 new_string 中使用 "
            "{encoding} 能存储的字符(或该文件语言支持的转义写法)。"
        ),
        "raced": (
            "在准备这次编辑期间,{path} 在磁盘上被修改了。未写入任何内容。请重新用 read_file "
            "读取它,再重试编辑。"
        ),
        "cancelled": "编辑在写入前被停止;{path} 未被修改。",
        "done": "已编辑 {path}:{what},首处修改在第 {line} 行(+{added} -{removed})。",
        "what_one": "1 处替换",
        "what_many": "{count} 处替换",
        "what_batch": "{edits} 处编辑,共 {count} 处替换",
        "rung_line_endings": "{where}old_string 在忽略换行符差异后匹配;文件保留其 {eol} 换行符。",
        "rung_typography": (
            "{where}old_string 在把排版引号、破折号和空格视为普通字符后匹配;new_string 中的"
            "引号已按文件在该处的写法改写。"
        ),
        "rung_trailing_whitespace": (
            "{where}old_string 在忽略行尾空白(以及换行符和排版字符差异)后匹配。"
        ),
        "diff_cut": "……另有 {n} 行差异未显示。",
    },
}

_KINDS_ZH = {
    "a FIFO (named pipe)": "命名管道(FIFO)",
    "a device": "设备文件",
    "a socket": "套接字",
    "a symbolic link": "符号链接",
}


class EditItem(BaseModel):
    """One replacement of a batch."""

    model_config = ConfigDict(extra="forbid")

    old_string: str = Field(
        description="The exact text to replace, copied from read_file output without the "
        "line-number prefix."
    )
    new_string: str = Field(description="The text to put in its place (empty to delete it).")
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence instead of requiring exactly one.",
    )


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    model_config = ConfigDict(extra="forbid")

    file_path: str = Field(
        min_length=1,
        description="The file to change: absolute, or relative to the working directory.",
    )
    old_string: str = Field(
        default="",
        description="The exact text to replace, copied from read_file output without the "
        "line-number prefix. Required unless edits is given.",
    )
    new_string: str = Field(
        default="",
        description="The text to put in its place (empty to delete it). Required with old_string.",
    )
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence of old_string instead of requiring exactly one.",
    )
    edits: list[EditItem] = Field(
        default_factory=list[EditItem],
        description="Several replacements in this file, applied in order, all or nothing. "
        "Send this instead of old_string and new_string.",
    )


def specs(args: EditFileArgs) -> list[EditSpec]:
    """The replacements the arguments ask for (no checks)."""
    if args.edits:
        return [EditSpec(e.old_string, e.new_string, e.replace_all) for e in args.edits]
    return [EditSpec(args.old_string, args.new_string, args.replace_all)]


USAGE = (
    "Before editing, read the file with read_file in this session; edits to a file that was "
    "not read in full, or that changed since, are refused. Copy old_string from read_file's "
    "output without the line-number prefix and tab, with enough surrounding lines to occur "
    "exactly once (or set replace_all). Put several changes to one file in one call with "
    "`edits`. Use edit_file, not write_file, to change part of an existing file."
)


class EditFile(Tool):
    """Replace exact text in a file the session has read; see `DESCRIPTION`."""

    name = "edit_file"
    description = DESCRIPTION
    usage = USAGE
    kind = ToolKind.EDIT
    read_only = False
    concurrency_safe = False
    destructive = True  # it overwrites the text it replaces
    idempotent = False
    args_model: ClassVar[type[BaseModel] | None] = EditFileArgs

    def __init__(self, *, max_bytes: int = MAX_BYTES, **options: Any) -> None:
        self.max_bytes = max_bytes
        super().__init__(**options)

    # -- before any I/O ----------------------------------------------------------------------

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`edit_display`)."""
        return edit_display(view, name=self.name)

    def validate_input(self, args: EditFileArgs, ctx: ToolContext) -> None:
        """Refuse malformed requests: both forms or neither, an empty or unchanged old_string."""
        loc = ctx.locale
        given = args.model_fields_set
        single = bool(args.old_string) or bool(args.new_string)
        if args.edits:
            if single:
                _invalid(loc, "mixed")
            if args.replace_all:
                _invalid(loc, "mixed_replace_all")
            for n, e in enumerate(args.edits, 1):
                where = text(loc, CATALOG, "edit_n", n=n) if len(args.edits) > 1 else ""
                if not e.old_string:
                    _invalid(loc, "empty_old", where=where)
                if e.old_string == e.new_string:
                    _invalid(loc, "same", where=where)
            return
        if "old_string" not in given and "new_string" not in given:
            _invalid(loc, "missing")
        if not args.old_string:
            _invalid(loc, "empty_old", where="")
        if "new_string" not in given:
            _invalid(loc, "missing_new")
        if args.old_string == args.new_string:
            _invalid(loc, "same", where="")

    def permission_requests(
        self, args: EditFileArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The one file it changes."""
        return [WritePath(path=args.file_path)]

    # -- the edit ----------------------------------------------------------------------------

    def run(self, args: EditFileArgs, ctx: ToolContext) -> ToolResult:
        """Check the file, apply the replacements in memory, write the result atomically."""
        loc = ctx.locale
        resolved = _confine(args.file_path, ctx)
        shown = _shown(resolved, ctx)
        st = stat_file(resolved)
        if st is None:
            names = list_dir_names(os.path.dirname(resolved), ctx)
            guesses = closest(os.path.basename(resolved), names, n=3) if names else []
            guess = (
                text(loc, CATALOG, "did_you_mean", names=", ".join(f"`{g}`" for g in guesses))
                if guesses
                else ""
            )
            _fail(loc, ErrorCode.FILE_NOT_FOUND, "not_found", path=resolved, guess=guess)
        if stat.S_ISDIR(st.st_mode):
            _fail(loc, ErrorCode.NOT_A_FILE, "directory", path=resolved)
        if not stat.S_ISREG(st.st_mode):
            kind = file_kind(st.st_mode)
            if loc == "zh":
                kind = _KINDS_ZH.get(kind, kind)
            _fail(loc, ErrorCode.NOT_A_FILE, "special", path=resolved, kind=kind)
        if st.st_size > self.max_bytes:
            _fail(
                loc,
                ErrorCode.FILE_TOO_LARGE,
                "too_large",
                path=resolved,
                size=st.st_size,
                limit=self.max_bytes,
            )
        data = read_file_bytes(resolved, ctx, max_bytes=self.max_bytes)
        what = sniff_binary(data.data)
        if what is not None:
            _fail(loc, ErrorCode.BINARY_FILE, "binary", path=resolved, what=what, size=data.size)
        require_fresh(ctx, data)

        old_text, fmt = decode_text(data.data)
        cr_breaks = fmt.newline == "\r"
        edits = specs(args)
        outcome = apply_edits(old_text, edits, newline=fmt.newline, cr_breaks=cr_breaks)
        if isinstance(outcome, EditError):
            raise _edit_failure(loc, outcome, edits, old_text, resolved, cr_breaks)
        if not outcome.changes:
            _fail(loc, ErrorCode.INVALID_ARGS, "no_change", path=resolved)
        new_bytes = _encode(loc, outcome.text, fmt, resolved)

        if ctx.cancelled:
            _fail(loc, ErrorCode.CANCELLED, "cancelled", path=resolved)
        now = stat_file(resolved)
        if now is None or (now.st_mtime_ns, now.st_size) != (data.mtime_ns, data.size):
            _fail(loc, ErrorCode.FILE_MODIFIED_SINCE_READ, "raced", path=resolved)
        atomic_write(resolved, new_bytes, ctx)
        after = stat_file(resolved)
        record_write(ctx, resolved, new_bytes, mtime_ns=after.st_mtime_ns if after else 0)
        return _success(loc, outcome, edits, old_text, fmt, resolved, shown, cr_breaks)


# -- helpers ----------------------------------------------------------------------------------


def _invalid(loc: str, key: str, **values: object) -> NoReturn:
    raise ToolFailure(text(loc, CATALOG, key, **values), code=ErrorCode.INVALID_ARGS)


def _fail(loc: str, code: ErrorCode, key: str, **values: object) -> NoReturn:
    raise ToolFailure(text(loc, CATALOG, key, **values), code=code)


def _confine(path: str, ctx: ToolContext) -> str:
    try:
        return confine_write(path, ctx)
    except ToolFailure as exc:
        if ctx.locale == "en" or exc.code is not ErrorCode.OUTSIDE_WRITE_ROOTS:
            raise
        roots = ", ".join(str(r) for r in ctx.write_roots) or "-"
        raise ToolFailure(
            text(ctx.locale, CATALOG, "outside", path=path, roots=roots, detail=exc.message),
            code=exc.code,
        ) from exc


def _shown(resolved: str, ctx: ToolContext) -> str:
    """The path as UIs show it: relative to the working directory when inside it."""
    rel = os.path.relpath(resolved, ctx.cwd)
    return resolved if rel == ".." or rel.startswith(".." + os.sep) else rel


def _encode(loc: str, new_text: str, fmt: TextFormat, path: str) -> bytes:
    try:
        return encode_text(new_text, fmt)
    except ToolFailure as exc:
        cause = exc.__cause__
        bad = cause.object[cause.start : cause.end] if isinstance(cause, UnicodeEncodeError) else ""
        raise ToolFailure(
            text(
                loc,
                CATALOG,
                "unencodable",
                path=path,
                label=fmt.label,
                char=repr(bad),
                encoding=fmt.encoding,
            ),
            code=ErrorCode.INVALID_ARGS,
        ) from exc


def _lines_text(loc: str, lines: Sequence[int], more: bool) -> str:
    unique = sorted(set(lines))
    shown = ", ".join(str(n) for n in unique[:MAX_LISTED_LINES])
    if more or len(unique) > MAX_LISTED_LINES:
        shown += text(loc, CATALOG, "and_more")
    return text(loc, CATALOG, "at_line" if len(unique) == 1 else "at_lines", lines=shown)


def _snippet(first: int, lines: Sequence[str]) -> str:
    out: list[str] = []
    for n, line in enumerate(lines, first):
        if len(line) > MAX_SHOWN_CHARS:
            line = line[:MAX_SHOWN_CHARS] + f"... [{len(line) - MAX_SHOWN_CHARS} more chars]"
        out.append(f"{n}\t{line}")
    return "\n".join(out)


def _edit_failure(
    loc: str,
    err: EditError,
    edits: Sequence[EditSpec],
    old_text: str,
    path: str,
    cr_breaks: bool,
) -> ToolFailure:
    batch = len(edits) > 1
    where = text(loc, CATALOG, "edit_n", n=err.index + 1) if batch else ""
    nothing = text(loc, CATALOG, "nothing_written" if batch else "nothing_changed")
    old = edits[err.index].old
    if err.kind == "inside_earlier":
        message = text(
            loc, CATALOG, "inside_earlier", n=err.index + 1, m=err.earlier + 1, nothing=nothing
        )
        return ToolFailure(
            message,
            code=ErrorCode.INVALID_ARGS,
            metadata={"edit": err.index, "earlier_edit": err.earlier},
        )
    if err.kind == "ambiguous":
        lines = line_numbers(old_text, sorted(err.positions), cr_breaks=cr_breaks)
        count = str(len(err.positions))
        if err.more:
            count = text(loc, CATALOG, "at_least", n=len(err.positions))
        message = text(
            loc,
            CATALOG,
            "multiple",
            where=where,
            count=count,
            path=path,
            at=_lines_text(loc, lines, err.more),
            how=text(loc, CATALOG, f"how_{err.rung or 'exact'}"),
            nothing=nothing,
        )
        return ToolFailure(
            message,
            code=ErrorCode.TEXT_MULTIPLE_MATCHES,
            metadata={
                "edit": err.index,
                "count": len(err.positions),
                "more": err.more,
                "lines": lines,
                "match": err.rung,
            },
        )
    # not found: explain what is there instead
    parts = [
        text(
            loc,
            CATALOG,
            "text_not_found",
            where=where,
            path=path,
            tolerant=text(loc, CATALOG, "tolerant"),
        ),
        nothing,
    ]
    if batch and err.index > 0:
        parts.append(text(loc, CATALOG, "in_order", n=err.index + 1))
    metadata: dict[str, Any] = {"edit": err.index}
    hinted = False
    if looks_numbered(old):
        hinted = True
        parts.append(text(loc, CATALOG, "numbered"))
        again = find(old_text, strip_numbers(old), cr_breaks=cr_breaks, limit=1)
        if again is not None and again.regions:
            line = line_numbers(old_text, [again.regions[0][0]], cr_breaks=cr_breaks)[0]
            parts.append(text(loc, CATALOG, "numbered_found", line=line))
    if escaped_twice(old_text, old, cr_breaks=cr_breaks):
        hinted = True
        parts.append(text(loc, CATALOG, "escaped"))
    similar = similar_region(old_text, old, cr_breaks=cr_breaks)
    if similar is not None:
        last = similar.first_line + similar.total_lines - 1
        span = (
            text(loc, CATALOG, "similar_line", a=similar.first_line)
            if last == similar.first_line
            else text(loc, CATALOG, "similar_lines", a=similar.first_line, b=last)
        )
        parts.append(
            text(
                loc,
                CATALOG,
                "similar",
                lines=span,
                score=round(similar.score),
                snippet=_snippet(similar.first_line, similar.lines),
            )
        )
        if similar.whitespace_only:
            parts.append(text(loc, CATALOG, "whitespace_only"))
        metadata.update(similar_line=similar.first_line, similarity=round(similar.score, 1))
    elif not hinted:
        parts.append(text(loc, CATALOG, "nothing_similar"))
    parts.append(text(loc, CATALOG, "not_found_next"))
    return ToolFailure("".join(parts), code=ErrorCode.TEXT_NOT_FOUND, metadata=metadata)


_EOL_NAMES = {"\n": "LF", "\r\n": "CRLF", "\r": "CR"}


def _success(
    loc: str,
    outcome: Applied,
    edits: Sequence[EditSpec],
    old_text: str,
    fmt: TextFormat,
    resolved: str,
    shown: str,
    cr_breaks: bool,
) -> ToolResult:
    diff = diff_changes(old_text, outcome.text, outcome.changes, cr_breaks=cr_breaks)
    count = sum(outcome.counts)
    if len(edits) > 1:
        what = text(loc, CATALOG, "what_batch", edits=len(edits), count=count)
    elif count == 1:
        what = text(loc, CATALOG, "what_one")
    else:
        what = text(loc, CATALOG, "what_many", count=count)
    lines = [
        text(
            loc,
            CATALOG,
            "done",
            path=shown,
            what=what,
            line=diff.first_line,
            added=diff.added,
            removed=diff.removed,
        )
    ]
    for n, rung in enumerate(outcome.rungs, 1):
        if rung != "exact":
            where = text(loc, CATALOG, "edit_n", n=n) if len(edits) > 1 else ""
            lines.append(
                text(loc, CATALOG, f"rung_{rung}", where=where, eol=_EOL_NAMES[fmt.newline])
            )
    hunks = list(diff.hunks)
    shown_hunks = hunks[:MAX_DIFF_LINES]
    content = "\n".join([*lines, *shown_hunks])
    if len(hunks) > MAX_DIFF_LINES:
        content += "\n" + text(loc, CATALOG, "diff_cut", n=len(hunks) - MAX_DIFF_LINES)
    full = "".join(f"{h}\n" for h in [f"--- a/{shown}", f"+++ b/{shown}", *hunks])
    rungs: list[Rung] = list(outcome.rungs)
    return ToolResult.success(
        content,
        summary=f"edit_file {shown}: +{diff.added} -{diff.removed} (line {diff.first_line})",
        diff=full,
        metadata={
            "path": resolved,
            "line": diff.first_line,
            "added": diff.added,
            "removed": diff.removed,
            "replacements": count,
            "match": rungs[0] if len(rungs) == 1 else rungs,
            "format": fmt.label,
        },
    )
