"""grep_search: ripgrep over the workspace, with paging the model can follow.

Three output modes: `files_with_matches` (paths in path order; newest-modified first with
`newest_first=True`, which costs one stat per matching file),
`content` (matching lines as rg prints them, `path:N:text` and `path-N-text` for context lines,
`--` between groups; files in path order, so pages are stable), and `count` (matching lines per
file, path order). The lines and counts are rg's own; only their order and paging are added.
A pattern always goes in as `--regexp=PATTERN`, so one starting with `-` is a pattern, never an
option. Lines are cut by rg at 500 columns (`--max-columns-preview` marks the cut). CRLF files
match like LF files (`--crlf`: `$` matches before CRLF) and are shown with LF.

Ignore rules and globs are list_files' (see there and `compile_glob`): gitignored files are
skipped even when a glob names them, hidden files are searched, VCS folders never.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    PermissionRequest,
    ReadPath,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ..sandbox import RipgrepRun, SearchRoot, compile_glob, run_ripgrep
from ._displays import grep_display
from ._hidden_paths import current_hidden, hidden_filter
from ._i18n import Catalog, count_of, text
from ._list_files import (
    SEARCH_TIMEOUT,
    count_text,
    first_by_path,
    glob_error,
    newest_first,
    partial_note,
    path_key,
    printable,
    relative_glob,
    require_rg,
    resolve_search,
    time_limit,
    vcs_args,
)

__all__ = ["GrepSearch", "GrepSearchArgs"]

DEFAULT_FILES_LIMIT = 250
"""Paths shown by default (files_with_matches, count)."""
DEFAULT_LINES_LIMIT = 100
"""Output lines shown by default (content)."""
MAX_COLUMNS = 500
"""rg cuts longer lines here and marks the cut."""

OutputMode = Literal["files_with_matches", "content", "count"]
_DIGITS = "0123456789"

MAX_PATTERN_CHARS = 16_384
"""Longest pattern (or type) accepted: far beyond any real regex, far below the 128 KiB one
argument may be."""

CATALOG: Catalog = {
    "en": {
        "none": "No matches found.",
        "n_matches_one": "{n} matching line",
        "n_matches": "{n} matching lines",
        "files_all": "(Found {files}{order}.)",
        "files_page": (
            "(Found {files}; showing {first}-{last} (head_limit={limit}, offset={offset})"
            "{order}. Next page: call grep_search again with offset={next}.)"
        ),
        "files_last": (
            "(Found {files}; showing {first}-{last} (head_limit={limit}, offset={offset})"
            "{order}; this is the last page.)"
        ),
        "order_newest": ", newest first",
        "order_path": ", by path",
        "content_all": "(Found {matches} in {files}.)",
        "content_page": (
            "(Found {matches} in {files}; showing output lines {first}-{last} of {total} "
            "(head_limit={limit}, offset={offset}). Next page: call grep_search again with "
            "offset={next}.)"
        ),
        "content_last": (
            "(Found {matches} in {files}; showing output lines {first}-{last} of {total} "
            "(head_limit={limit}, offset={offset}); this is the last page.)"
        ),
        "count_all": "(Found {matches} in {files}.)",
        "count_page": (
            "(Found {matches} in {files}; showing files {first}-{last} (head_limit={limit}, "
            "offset={offset}). Next page: call grep_search again with offset={next}.)"
        ),
        "count_last": (
            "(Found {matches} in {files}; showing files {first}-{last} (head_limit={limit}, "
            "offset={offset}); this is the last page.)"
        ),
        "past_end": (
            "(Nothing at offset={offset}: the search found {found}. Call again with a smaller "
            "offset, e.g. offset=0.)"
        ),
        "bad_regex": (
            "The pattern is not a valid regular expression. ripgrep says:\n{error}\n"
            "Fix the pattern (Rust regex syntax: escape ( ) [ ] {{ }} . * + ? | ^ $ \\ with a "
            "backslash to match them literally), or pass fixed_strings=true to search for the "
            "text exactly as written."
        ),
        "bad_type": (
            "Unknown file type {type!r} (ripgrep says: {error}).{hint} Pass one of ripgrep's "
            "type names (py, js, ts, rust, go, java, cpp, md, ...), or filter by name with "
            'glob instead, e.g. glob="*.ext".'
        ),
        "type_hint": " Did you mean {names}?",
        "nul_pattern": (
            "The pattern contains a NUL byte, which cannot be passed to ripgrep. Remove it (to "
            "find binary files, search for text they contain)."
        ),
        "too_long": (
            "The {field} is {length} characters long; at most {limit} are accepted. Search for "
            "a shorter, distinctive part of the text instead."
        ),
        "context_mode": (
            'context, before and after only apply to output_mode="content". Add '
            'output_mode="content" to see the lines around each match, or drop them.'
        ),
    },
    "zh": {
        "none": "未找到匹配。",
        "n_matches_one": "{n} 行匹配",
        "n_matches": "{n} 行匹配",
        "files_all": "(找到 {files}{order}。)",
        "files_page": (
            "(找到 {files};显示第 {first}-{last} 个(head_limit={limit},offset={offset})"
            "{order}。下一页:再次调用 grep_search 并传入 offset={next}。)"
        ),
        "files_last": (
            "(找到 {files};显示第 {first}-{last} 个(head_limit={limit},offset={offset})"
            "{order};这是最后一页。)"
        ),
        "order_newest": ",最新修改的在前",
        "order_path": ",按路径排序",
        "content_all": "(在 {files} 中找到 {matches}。)",
        "content_page": (
            "(在 {files} 中找到 {matches};显示输出的第 {first}-{last} 行,共 {total} 行"
            "(head_limit={limit},offset={offset})。下一页:再次调用 grep_search 并传入 "
            "offset={next}。)"
        ),
        "content_last": (
            "(在 {files} 中找到 {matches};显示输出的第 {first}-{last} 行,共 {total} 行"
            "(head_limit={limit},offset={offset});这是最后一页。)"
        ),
        "count_all": "(在 {files} 中找到 {matches}。)",
        "count_page": (
            "(在 {files} 中找到 {matches};显示第 {first}-{last} 个文件(head_limit={limit},"
            "offset={offset})。下一页:再次调用 grep_search 并传入 offset={next}。)"
        ),
        "count_last": (
            "(在 {files} 中找到 {matches};显示第 {first}-{last} 个文件(head_limit={limit},"
            "offset={offset});这是最后一页。)"
        ),
        "past_end": (
            "(offset={offset} 处没有结果:本次搜索找到 {found}。"
            "请用更小的 offset 再调用,例如 offset=0。)"
        ),
        "bad_regex": (
            "模式不是有效的正则表达式。ripgrep 的报错:\n{error}\n"
            "请修正模式(Rust 正则语法:要按字面匹配 ( ) [ ] {{ }} . * + ? | ^ $ \\ 时"
            "请用反斜杠转义),"
            "或传入 fixed_strings=true 按原文搜索。"
        ),
        "bad_type": (
            "未知的文件类型 {type!r}(ripgrep 的报错:{error})。{hint}请使用 ripgrep 的类型名"
            '(py、js、ts、rust、go、java、cpp、md 等),或改用 glob 按文件名过滤,例如 glob="*.ext"。'
        ),
        "type_hint": "你是否想用 {names}?",
        "nul_pattern": (
            "模式中含有 NUL 字节,无法传给 ripgrep。请删除它(要查找二进制文件,"
            "请搜索其中包含的文本)。"
        ),
        "too_long": (
            "{field} 长 {length} 个字符,最多只接受 {limit} 个。请改为搜索其中较短且有特征的部分。"
        ),
        "context_mode": (
            'context、before 和 after 只在 output_mode="content" 时有效。'
            '请加上 output_mode="content" 以查看匹配行周围的内容,或去掉这些参数。'
        ),
    },
}


class GrepSearchArgs(BaseModel):
    """Arguments of grep_search."""

    pattern: str = Field(
        min_length=1,
        description="Regular expression (Rust regex syntax, like PCRE without look-around or "
        "backreferences) to search for; with fixed_strings=true, plain text.",
    )
    path: str | None = Field(
        None,
        description="File or folder to search (default: the working directory). Omit it "
        "rather than passing null or an empty string.",
    )
    glob: str | None = Field(
        None,
        description="Only search files whose path (relative to `path`) matches this glob, "
        "e.g. `*.py`, `*.{ts,tsx}`, `src/**/*.rs`; a leading `!` excludes (`!*.min.js`). "
        "Not applied when path is a single file.",
    )
    type: str | None = Field(
        None,
        description="Only search files of this ripgrep type, e.g. py, js, ts, rust, go, java, "
        "md (more efficient than glob for standard types). Not applied when path is a file.",
    )
    output_mode: OutputMode = Field(
        "files_with_matches",
        description='"files_with_matches" (default): matching file paths, sorted by path; '
        '"content": the matching lines as path:line:text; "count": matching lines per file.',
    )
    case_insensitive: bool = Field(False, description="Ignore case (rg -i).")
    line_numbers: bool | None = Field(
        None, description='Show line numbers in "content" mode (default true).'
    )
    context: int | None = Field(
        None, ge=0, description='Lines to show before and after each match ("content" only).'
    )
    before: int | None = Field(
        None, ge=0, description='Lines to show before each match ("content" only).'
    )
    after: int | None = Field(
        None, ge=0, description='Lines to show after each match ("content" only).'
    )
    multiline: bool = Field(
        False,
        description="Let the pattern span lines: `.` also matches newlines (rg -U "
        "--multiline-dotall). Slower; use only when needed.",
    )
    fixed_strings: bool = Field(
        False, description="Treat the pattern as plain text, not a regex (rg -F)."
    )
    head_limit: int | None = Field(
        None,
        ge=0,
        description="Most entries to return: paths (default 250) or output lines in "
        '"content" mode (default 100); 0 means no limit.',
    )
    offset: int = Field(
        0, ge=0, description="Skip this many entries first, to page through results."
    )
    no_ignore: bool = Field(
        False,
        description="Also search files that .gitignore / .ignore rules leave out. "
        "Version-control folders stay excluded.",
    )


class GrepSearch(Tool):
    """Search file contents with ripgrep."""

    name = "grep_search"
    description = (
        "Search file contents with a regular expression (ripgrep). Use it instead of running "
        "grep or rg in a shell.\n"
        "- Rust regex syntax: escape literal braces and parentheses (`interface\\{\\}`, "
        "`foo\\(`), or set fixed_strings=true to search for text as written.\n"
        '- output_mode "files_with_matches" (default) lists matching files by path; '
        '"content" shows matching lines as `path:line:text` (add context/before/after for '
        'surrounding lines); "count" gives matching lines per file.\n'
        "- Narrow with path (a folder or one file), glob (`*.py`, `src/**/*.ts`) or type "
        "(`py`, `js`, `rust`...). Files ignored by .gitignore are skipped unless "
        "no_ignore=true; hidden files are searched; .git is not. Lines over 500 characters "
        "are cut.\n"
        "- Results stop at head_limit (default 250 files or 100 lines); the last line gives "
        "the total and the offset for the next page.\n"
        "- To find files by name use list_files; to read a whole file use read_file."
    )
    usage = (
        "Use grep_search (not grep/rg in a shell) to search code. Start with the default "
        'files_with_matches mode, then look at lines with output_mode="content" on a narrowed '
        "path or glob."
    )
    kind = ToolKind.SEARCH
    read_only = True
    concurrency_safe = True
    destructive = False
    idempotent = True
    args_model: ClassVar[type[BaseModel] | None] = GrepSearchArgs

    newest_first: bool = False
    """files_with_matches order: by path (the default, as fast as rg itself), or
    newest-modified first when True (one stat per matching file: about 1.2x rg's time when
    thousands of files match, measured in bench/search.py)."""
    search_timeout: float = SEARCH_TIMEOUT
    """Seconds before rg is stopped and what it found so far is returned, flagged partial."""
    max_output: int = 32 << 20
    """Bytes of rg output kept; past it the search is stopped and flagged partial."""

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`grep_display`)."""
        return grep_display(view, name=self.name)

    def validate_input(self, args: GrepSearchArgs, ctx: ToolContext) -> str | None:
        """Cheap checks before anything runs."""
        if "\x00" in args.pattern:
            return text(ctx.locale, CATALOG, "nul_pattern")
        for field, value in (("pattern", args.pattern), ("type", args.type or "")):
            if len(value) > MAX_PATTERN_CHARS:
                # rg takes each as one argument; Linux refuses one over 128 KiB.
                length, limit = len(value), MAX_PATTERN_CHARS
                return text(
                    ctx.locale, CATALOG, "too_long", field=field, length=length, limit=limit
                )
        if args.output_mode != "content" and any(
            v is not None for v in (args.context, args.before, args.after)
        ):
            return text(ctx.locale, CATALOG, "context_mode")
        if args.glob is not None:
            return glob_error(ctx.locale, args.glob, type_filter=args.type is None)
        return None

    def permission_requests(
        self, args: GrepSearchArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The file or folder searched."""
        return [ReadPath(path=args.path or str(ctx.cwd))]

    async def run(self, args: GrepSearchArgs, ctx: ToolContext) -> ToolResult:
        """Search, order, page."""
        root = resolve_search(args.path, ctx)
        require_rg(ctx.locale)
        mode = args.output_mode
        rg_args = ["--no-messages", "--hidden", "--crlf", "--color=never", *vcs_args()]
        if args.no_ignore:
            rg_args.append("--no-ignore")
        if args.case_insensitive:
            rg_args.append("--ignore-case")
        if args.fixed_strings:
            rg_args.append("--fixed-strings")
        if args.multiline:
            rg_args += ("--multiline", "--multiline-dotall")
        match: Callable[[str], bool] | None = None
        if root.kind == "dir":  # rg searches a named file whatever the filters say
            if args.type is not None:
                rg_args.append(f"--type={args.type}")
            if args.glob is not None:
                glob = compile_glob(
                    relative_glob(args.glob, root.path), type_filter=args.type is None
                )
                rg_args += glob.args
                match = glob.match
        if mode == "files_with_matches":
            rg_args += ("--files-with-matches", "--null")
        elif mode == "count":
            rg_args += ("--count", "--with-filename", "--null")
        else:
            rg_args += (
                "--line-number",
                "--with-filename",
                "--no-heading",
                "--null",
                f"--max-columns={MAX_COLUMNS}",
                "--max-columns-preview",
            )
            if args.context is not None:
                rg_args.append(f"--context={args.context}")
            if args.before is not None:
                rg_args.append(f"--before-context={args.before}")
            if args.after is not None:
                rg_args.append(f"--after-context={args.after}")
        rg_args.append(f"--regexp={args.pattern}")
        keep = _keeper(match, mode)
        hidden = hidden_filter(root.cwd, current_hidden(ctx)) if root.kind == "dir" else None
        if hidden is not None:  # the folder holds a hidden path: out of the walk and the output
            rg_args += hidden.args
            keep = hidden.wrap(keep)
        if root.name is not None:
            rg_args += ("--", root.name)
        seconds = time_limit(ctx, self.search_timeout)
        run = await run_ripgrep(
            rg_args,
            cwd=root.cwd,
            timeout=seconds,
            ctx=ctx,
            nul_separated=mode == "files_with_matches",
            with_mtime=mode == "files_with_matches" and self.newest_first,
            keep=keep,
            max_output=self.max_output,
        )
        if run.failed:
            raise await self._refusal(args, ctx, run)
        return _Page(self, args, ctx, root, run, seconds).result()

    async def _refusal(
        self, args: GrepSearchArgs, ctx: ToolContext, run: RipgrepRun
    ) -> ToolFailure:
        locale = ctx.locale
        if args.type is not None and "unrecognized file type" in run.error:
            listing = await run_ripgrep(["--type-list"], cwd=str(ctx.cwd), timeout=5.0)
            names = [r.split(":", 1)[0] for r in listing.records if ":" in r]
            near = difflib.get_close_matches(args.type, names, n=3, cutoff=0.5)
            hint = (
                text(locale, CATALOG, "type_hint", names=", ".join(f"`{n}`" for n in near))
                if near
                else ""
            )
            message = text(locale, CATALOG, "bad_type", type=args.type, error=run.error, hint=hint)
        else:
            message = text(locale, CATALOG, "bad_regex", error=run.error)
        return ToolFailure(message, code=ErrorCode.INVALID_ARGS, metadata={"rg_error": run.error})


def _keeper(match: Callable[[str], bool] | None, mode: OutputMode) -> Callable[[str], bool] | None:
    """The record filter for a glob rg cannot apply itself (records name their path first)."""
    if match is None or mode == "files_with_matches":
        return match

    def keep(record: str) -> bool:
        path, sep, _ = record.partition("\x00")
        return not sep or match(path)

    return keep


class _Page:
    """One result page: ordering, paging and wording for one search."""

    def __init__(
        self,
        tool: GrepSearch,
        args: GrepSearchArgs,
        ctx: ToolContext,
        root: SearchRoot,
        run: RipgrepRun,
        seconds: float,
    ) -> None:
        self.tool, self.args, self.root, self.run = tool, args, root, run
        self.locale = ctx.locale
        self.seconds = seconds
        default = DEFAULT_LINES_LIMIT if args.output_mode == "content" else DEFAULT_FILES_LIMIT
        limit = default if args.head_limit is None else args.head_limit
        self.limit = limit or None  # 0: no limit
        self.offset = args.offset
        self.metadata: dict[str, Any] = {
            "output_mode": args.output_mode,
            "offset": args.offset,
            "head_limit": limit,
            "partial": run.partial,
            "stopped": run.stopped,
        }

    def _window(self, total: int) -> tuple[int, int]:
        """The [start, stop) entries shown."""
        start = min(self.offset, total)
        stop = total if self.limit is None else min(total, self.offset + self.limit)
        return start, stop

    def result(self) -> ToolResult:
        mode = self.args.output_mode
        if mode == "files_with_matches":
            lines, footer, summary = self._files()
        elif mode == "count":
            lines, footer, summary = self._count()
        else:
            lines, footer, summary = self._content()
        if footer is None:
            lines = [text(self.locale, CATALOG, "none")]
        note = partial_note(self.locale, self.run, self.seconds, self.tool.max_output)
        content = "\n".join([*lines, *(f for f in (footer, note) if f)])
        if self.run.partial:
            summary += " (partial)"
        return ToolResult.success(
            printable(content), summary=f"grep_search: {summary}", metadata=self.metadata
        )

    def _footer(self, kind: str, start: int, stop: int, total: int, **values: Any) -> str:
        """The footer: totals, then the window shown and how to page when it is not all."""
        values = {**values, "limit": self.limit or 0, "offset": self.offset}
        if start >= stop:
            return text(self.locale, CATALOG, "past_end", **values)
        window = {"first": start + 1, "last": stop, "total": total, **values}
        if stop < total:
            return text(self.locale, CATALOG, f"{kind}_page", next=stop, **window)
        if start > 0:
            return text(self.locale, CATALOG, f"{kind}_last", **window)
        return text(self.locale, CATALOG, f"{kind}_all", **window)

    def _files(self) -> tuple[list[str], str | None, str]:
        paths, total = self.run.records, len(self.run.records)
        start, stop = self._window(total)
        if self.tool.newest_first:
            order = newest_first(paths, self.run.mtimes, stop)[start:]
            shown = [paths[i] for i in order]
        else:
            shown = first_by_path(paths, stop)[start:]
        lines = [self.root.prefix + p for p in shown]
        files = count_text(self.locale, "n_files", total)
        self.metadata.update(total=total, files=total, shown=len(lines))
        how = text(self.locale, CATALOG, "order_newest" if self.tool.newest_first else "order_path")
        footer = (
            self._footer("files", start, stop, total, files=files, found=files, order=how)
            if total
            else None
        )
        return lines, footer, count_of(total, "file")

    def _count(self) -> tuple[list[str], str | None, str]:
        counts: list[tuple[str, int]] = []
        for record in self.run.records:
            path, _, n = record.rpartition("\x00")
            n = n.removesuffix("\r")  # --crlf ends rg's own lines with CRLF
            if path and n.isdigit():
                counts.append((path, int(n)))
        counts.sort(key=lambda c: path_key(c[0]))
        total = len(counts)
        matches = sum(n for _, n in counts)
        start, stop = self._window(total)
        prefix = self.root.prefix
        lines = [f"{prefix}{path}:{n}" for path, n in counts[start:stop]]
        files = count_text(self.locale, "n_files", total)
        found = text(
            self.locale, CATALOG, "n_matches_one" if matches == 1 else "n_matches", n=matches
        )
        self.metadata.update(total=total, files=total, matches=matches, shown=len(lines))
        footer = (
            self._footer("count", start, stop, total, files=files, matches=found, found=files)
            if total
            else None
        )
        return lines, footer, f"{count_of(matches, 'matching line')} in {count_of(total, 'file')}"

    def _content(self) -> tuple[list[str], str | None, str]:
        blocks, notes = _parse_content(self.run.records)
        has_context = any(
            v for v in (self.args.context, self.args.before, self.args.after) if v is not None
        )
        order = sorted(blocks, key=path_key)
        entries = sum(len(b) for b in blocks.values())
        if has_context:
            matches = sum(1 for b in blocks.values() for r in b if r is not None and _is_match(r))
        else:
            matches = entries
        separators = len(order) - 1 if has_context and order else 0
        total = entries + separators + len(notes)
        start, stop = self._window(total)
        numbers = self.args.line_numbers is not False
        prefix = self.root.prefix
        lines = [
            _show(prefix, path, rest, numbers=numbers)
            for path, rest in islice(_flatten(blocks, order, notes, has_context), start, stop)
        ]
        files = count_text(self.locale, "n_files", len(order) + len(notes))
        found = text(
            self.locale, CATALOG, "n_matches_one" if matches == 1 else "n_matches", n=matches
        )
        self.metadata.update(total=total, files=len(order), matches=matches, shown=len(lines))
        footer = (
            self._footer("content", start, stop, total, files=files, matches=found, found=found)
            if total
            else None
        )
        return (
            lines,
            footer,
            f"{count_of(matches, 'matching line')} in {count_of(len(order), 'file')}",
        )


def _parse_content(records: list[str]) -> tuple[dict[str, list[str | None]], list[str]]:
    """Group rg's content lines by file; None marks a `--` break inside a file's lines."""
    blocks: dict[str, list[str | None]] = {}
    notes: list[str] = []
    current: list[str | None] = []
    current_path: str | None = None
    pending = False
    for line in records:
        path, sep, rest = line.partition("\x00")
        if sep:
            if path != current_path:
                current = blocks.setdefault(path, [])
                current_path = path
            elif pending:
                current.append(None)
            pending = False
            current.append(rest)
        elif line in ("--", "--\r"):  # --crlf ends rg's own lines with CRLF
            pending = True
        elif line:
            notes.append(line.removesuffix("\r"))
    return blocks, notes


def _flatten(
    blocks: dict[str, list[str | None]], order: list[str], notes: list[str], separate: bool
) -> Iterator[tuple[str | None, str | None]]:
    """Output lines in order as (path, rest): (path, None) is `--`, (None, note) a note."""
    for k, path in enumerate(order):
        if separate and k:
            yield path, None
        for rest in blocks[path]:
            yield path, rest
    for note in notes:
        yield None, note


def _is_match(rest: str) -> bool:
    return rest.lstrip(_DIGITS)[:1] == ":"


def _show(prefix: str, path: str | None, rest: str | None, *, numbers: bool) -> str:
    """One line as rg prints it without --null: `path:N:text` (match) or `path-N-text`."""
    if rest is None:
        return "--"
    if path is None:
        return prefix + rest  # rg's own note, e.g. "a.bin: binary file matches (...)"
    body = rest.lstrip(_DIGITS)
    number = rest[: len(rest) - len(body)]
    sep, body = body[:1], body[1:]
    if body.endswith("\r"):
        body = body[:-1]
    if numbers:
        return f"{prefix}{path}{sep}{number}{sep}{body}"
    return f"{prefix}{path}{sep}{body}"
