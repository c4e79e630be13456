"""list_files: files matching a glob, newest-modified first, paged.

ripgrep (`rg --files`) does the walk, so ignore rules are git's own: .gitignore inside git
repositories, .ignore and .rgignore everywhere (`no_ignore` turns them off); hidden files are
listed, version-control folders (.git, .hg, .svn, .jj, ...) never. The glob is applied without
weakening the ignore rules (see `compile_glob`). Each path is statted while rg is still walking,
then the newest `offset + limit` are picked (ties by path, folder by folder).

Paths are shown relative to the session's working directory when the search lies inside it
(so they can be passed to read_file as they are), absolute otherwise.

The helpers shared with grep_search (resolving the search path, ordering, the time limit, the
footer wording) live here too.
"""

from __future__ import annotations

import difflib
import heapq
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar

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
from ..sandbox import (
    VCS_DIRS,
    RipgrepRun,
    SearchRoot,
    compile_glob,
    find_ripgrep,
    run_ripgrep,
    search_root,
)
from ._displays import list_display
from ._hidden_paths import current_hidden, hidden_filter, refuse_hidden, visible_names
from ._i18n import Catalog, text

__all__ = ["ListFiles", "ListFilesArgs"]

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
SEARCH_TIMEOUT = 30.0
"""Seconds before rg is stopped and the results so far are returned, flagged partial."""
MAX_GLOB_CHARS = 4096
"""Longest glob accepted. rg takes the glob as one argument, and Linux refuses an argument over
128 KiB; far below that, a glob this long is a mistake, not a file pattern."""

SEARCH_CATALOG: Catalog = {
    "en": {
        "not_found": "{path} does not exist.",
        "did_you_mean": " Did you mean {names}?",
        "not_found_next": (
            " Relative paths resolve against {cwd}. Find the right path with list_files, or "
            "leave path out to search the whole working directory."
        ),
        "other": "{path} is not a folder or a regular file. Pass a folder as path.",
        "link_loop": (
            "{path} is a symbolic link that never reaches a file or folder (the links form a "
            "loop). Pass the real folder as path, or leave path out to search the whole "
            "working directory."
        ),
        "outside": (
            "{path} is outside the folders this session may read ({roots}). Pass a path inside "
            "them, or leave path out to search the working directory."
        ),
        "bad_glob": (
            "Invalid glob {glob!r}: {reason}. Write a glob such as `*.py`, `src/**/*.ts` or "
            "`*.{{js,jsx}}`; escape a literal `*`, `?`, `[`, `{{` or `}}` with a backslash."
        ),
        "glob_too_long": (
            "The glob is {length} characters long; at most {limit} are accepted. Write a "
            "shorter pattern such as `*.py` or `src/**/*.ts`, or search a narrower path."
        ),
        "no_rg": (
            "ripgrep (rg) is not installed, so this search cannot run. Reinstall handrail "
            "(it depends on the `ripgrep` package) or put rg on PATH, then try again."
        ),
        "rg_failed": "ripgrep failed: {error}\nTry a simpler pattern or a narrower path.",
        "stopped_timeout": "the search was stopped after {seconds:g} s",
        "stopped_output_limit": "the output passed {mb} MB",
        "stopped_cancelled": "the search was cancelled",
        "partial": (
            "Partial results: {reason}, so totals count only what was found by then. Narrow "
            "the path or the pattern for complete results."
        ),
        "n_files_one": "{n} file",
        "n_files": "{n} files",
        "n_lines_one": "{n} line",
        "n_lines": "{n} lines",
    },
    "zh": {
        "not_found": "{path} 不存在。",
        "did_you_mean": "你是否想找 {names}?",
        "not_found_next": (
            "相对路径基于 {cwd} 解析。请用 list_files 找到正确的路径,"
            "或省略 path 以搜索整个工作目录。"
        ),
        "other": "{path} 既不是文件夹也不是普通文件。请把一个文件夹作为 path 传入。",
        "link_loop": (
            "{path} 是一个永远指不到文件或文件夹的符号链接(链接构成了循环)。"
            "请把真正的文件夹作为 path 传入,或省略 path 以搜索整个工作目录。"
        ),
        "outside": (
            "{path} 不在本会话可读取的文件夹({roots})之内。"
            "请传入其中的路径,或省略 path 以搜索工作目录。"
        ),
        "bad_glob": (
            "无效的 glob {glob!r}:{reason}。请写成 `*.py`、`src/**/*.ts` 或 `*.{{js,jsx}}` 这样的"
            " glob;字面的 `*`、`?`、`[`、`{{`、`}}` 请用反斜杠转义。"
        ),
        "glob_too_long": (
            "这个 glob 长 {length} 个字符,最多只接受 {limit} 个。请写更短的模式,如 `*.py` 或"
            " `src/**/*.ts`,或搜索更小的路径。"
        ),
        "no_rg": (
            "未安装 ripgrep (rg),无法执行搜索。请重新安装 handrail(它依赖 `ripgrep` 包),"
            "或把 rg 加入 PATH,然后重试。"
        ),
        "rg_failed": "ripgrep 执行失败:{error}\n请换一个更简单的模式或更小的路径。",
        "stopped_timeout": "搜索在 {seconds:g} 秒后被停止",
        "stopped_output_limit": "输出超过了 {mb} MB",
        "stopped_cancelled": "搜索被取消",
        "partial": (
            "部分结果:{reason},总数只统计了此前找到的内容。缩小 path 或模式的范围可得到完整结果。"
        ),
        "n_files_one": "{n} 个文件",
        "n_files": "{n} 个文件",
        "n_lines_one": "{n} 行",
        "n_lines": "{n} 行",
    },
}

CATALOG: Catalog = {
    "en": {
        "none": "No files found",
        "not_dir": (
            "{path} is a file, not a folder. Call read_file to read it, or pass its folder as "
            "path to list files there."
        ),
        "all": "({files}{order}.)",
        "page": (
            "(Showing {first}-{last} of {files}{order}. More: call list_files again "
            "with offset={next}, or narrow the pattern or path.)"
        ),
        "last_page": "(Showing {first}-{last} of {files}{order}; this is the last page.)",
        "order_newest": ", newest first",
        "order_path": ", by path",
        "past_end": (
            "(No files at offset={offset}: only {files} match. Call again with a smaller "
            "offset, e.g. offset=0.)"
        ),
    },
    "zh": {
        "none": "未找到文件",
        "not_dir": (
            "{path} 是文件而不是文件夹。请用 read_file 读取它,或把它所在的文件夹作为 path 传入。"
        ),
        "all": "(共 {files}{order}。)",
        "page": (
            "(显示第 {first}-{last} 个,共 {files}{order}。查看更多:再次调用 list_files"
            " 并传入 offset={next},或缩小模式或路径的范围。)"
        ),
        "last_page": "(显示第 {first}-{last} 个,共 {files}{order};这是最后一页。)",
        "order_newest": ",最新修改的在前",
        "order_path": ",按路径排序",
        "past_end": (
            "(offset={offset} 处没有文件:只有 {files} 匹配。"
            "请用更小的 offset 再调用,例如 offset=0。)"
        ),
    },
}


# -- helpers shared with grep_search ------------------------------------------------------------


def vcs_args() -> list[str]:
    """The rg arguments that keep every search out of version-control folders."""
    out: list[str] = []
    for name in VCS_DIRS:
        out += ("--glob", "!" + name)
    return out


def time_limit(ctx: ToolContext, limit: float) -> float:
    """`limit`, shortened to finish a little before the call's own deadline (if any)."""
    if ctx.deadline is None:
        return limit
    remaining = ctx.deadline - time.monotonic()
    return max(0.05, min(limit, remaining - min(1.0, remaining * 0.1)))


def require_rg(locale: str) -> None:
    """Fail with a clear message when rg is missing."""
    if find_ripgrep() is None:
        raise ToolFailure(text(locale, SEARCH_CATALOG, "no_rg"), code=ErrorCode.EXECUTION_ERROR)


def resolve_search(path: str | None, ctx: ToolContext) -> SearchRoot:
    """Resolve and confine the search path; refusals say what to do, in the session's locale."""
    try:
        root = search_root(path, ctx)
    except ToolFailure as exc:
        if exc.code is not ErrorCode.OUTSIDE_READ_ROOTS:
            raise
        roots = ", ".join(dict.fromkeys(str(r) for r in (*ctx.read_roots, *ctx.write_roots)))
        raise ToolFailure(
            text(ctx.locale, SEARCH_CATALOG, "outside", path=path, roots=roots or "-"),
            code=ErrorCode.OUTSIDE_READ_ROOTS,
        ) from None
    refuse_hidden(root.path, ctx)
    if root.kind == "missing" and os.path.islink(root.path):  # resolving stopped at a loop
        raise ToolFailure(
            text(ctx.locale, SEARCH_CATALOG, "link_loop", path=root.path),
            code=ErrorCode.FILE_NOT_FOUND,
        )
    if root.kind == "missing":
        msg = text(ctx.locale, SEARCH_CATALOG, "not_found", path=root.path)
        wanted = root.path.rstrip("/").rsplit("/", 1)[-1]
        folder = os.path.dirname(root.path)
        while folder and not os.path.isdir(folder):  # where `nearby` was listed
            folder = os.path.dirname(folder)
        names = visible_names(folder or "/", root.nearby, ctx)
        near = difflib.get_close_matches(wanted, names, n=3, cutoff=0.6)
        if near:
            names = ", ".join(f"`{n}`" for n in near)
            msg += text(ctx.locale, SEARCH_CATALOG, "did_you_mean", names=names)
        msg += text(ctx.locale, SEARCH_CATALOG, "not_found_next", cwd=ctx.cwd)
        # printable: a suggested name may be bytes that are not UTF-8 (surrogate escapes).
        raise ToolFailure(printable(msg), code=ErrorCode.FILE_NOT_FOUND)
    if root.kind == "other":
        raise ToolFailure(
            text(ctx.locale, SEARCH_CATALOG, "other", path=root.path),
            code=ErrorCode.INVALID_ARGS,
        )
    return root


def path_key(path: str) -> str:
    """Sort key ordering paths folder by folder (as rg --sort=path walks them)."""
    return path.replace("/", "\x00")


def first_by_path(paths: Sequence[str], count: int) -> list[str]:
    """The first `count` paths in path order (folder by folder)."""
    if count * 4 < len(paths):
        return heapq.nsmallest(count, paths, key=path_key)
    return sorted(paths, key=path_key)[:count]


def newest_first(paths: Sequence[str], mtimes: Sequence[int], count: int) -> list[int]:
    """Indices of the first `count` paths, newest-modified first, ties by path.

    Only the candidates that can be among the first `count` are sorted.
    """
    n = len(paths)
    if count <= 0 or n == 0:
        return []
    if count < n:
        threshold = heapq.nlargest(count, mtimes)[-1]
        candidates = [i for i, m in enumerate(mtimes) if m >= threshold]
    else:
        candidates = list(range(n))
    candidates.sort(key=lambda i: (-mtimes[i], path_key(paths[i])))
    return candidates[:count]


def count_text(locale: str, key: str, n: int) -> str:
    """`3 files`, `1 line`, ... in the session's language."""
    return text(locale, SEARCH_CATALOG, f"{key}_one" if n == 1 else key, n=n)


def partial_note(locale: str, run: RipgrepRun, seconds: float, max_output: int) -> str | None:
    """The "partial results" line when rg was stopped early, else None."""
    if run.stopped is None:
        return None
    reason = text(
        locale,
        SEARCH_CATALOG,
        f"stopped_{run.stopped}",
        seconds=round(seconds, 2),
        mb=max_output >> 20,
    )
    return text(locale, SEARCH_CATALOG, "partial", reason=reason)


def printable(content: str) -> str:
    """Text safe to send anywhere: bytes that were not UTF-8 become U+FFFD."""
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return content.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a surrogate that is no escaped byte
            return content.encode("utf-8", "replace").decode("utf-8")
    return content


def relative_glob(pattern: str, folder: str) -> str:
    """A glob written as an absolute path inside `folder`, made relative to it."""
    negated = pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    base = folder.rstrip("/") + "/"
    if body.startswith(base):
        body = body[len(base) :]
    return ("!" if negated else "") + body


def glob_error(locale: str, pattern: str, type_filter: bool = True) -> str | None:
    """The INVALID_ARGS message for a malformed (or absurdly long) glob, or None."""
    if len(pattern) > MAX_GLOB_CHARS:
        return text(
            locale, SEARCH_CATALOG, "glob_too_long", length=len(pattern), limit=MAX_GLOB_CHARS
        )
    try:
        compile_glob(pattern, type_filter=type_filter)
    except ValueError as exc:
        return text(locale, SEARCH_CATALOG, "bad_glob", glob=pattern, reason=exc)
    return None


def rg_failure(locale: str, run: RipgrepRun) -> ToolFailure:
    """The failure when rg refused a search for a reason the tool did not foresee."""
    return ToolFailure(
        text(locale, SEARCH_CATALOG, "rg_failed", error=run.error),
        code=ErrorCode.EXECUTION_ERROR,
    )


# -- the tool ----------------------------------------------------------------------------------


class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    pattern: str = Field(
        "**/*",
        description=(
            "Glob matched against paths relative to `path`. `*` and `?` stay within one folder "
            "level, `**` spans any number of folders, `{a,b}` and `[abc]` work; case-sensitive. "
            "A pattern without `/` matches file names at any depth (`*.py`); one with `/` is "
            "anchored at `path` (`src/**/*.ts`). A leading `!` lists everything except the "
            "matches (`!**/*.md`)."
        ),
    )
    path: str | None = Field(
        None,
        description="Folder to list (default: the working directory). Omit it rather than "
        "passing null or an empty string.",
    )
    limit: int = Field(
        DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Most paths to return (default 100)."
    )
    offset: int = Field(0, ge=0, description="Skip this many paths first, to page (default 0).")
    no_ignore: bool = Field(
        False,
        description="Also list files that .gitignore / .ignore rules leave out (build output, "
        "dependencies). Version-control folders stay excluded.",
    )


class ListFiles(Tool):
    """Find files by glob, newest-modified first."""

    name = "list_files"
    description = (
        "Find files by name with a glob pattern; returns paths newest-modified first. Use it "
        "instead of running find, ls -R or rg --files in a shell.\n"
        "- `*.py` finds Python files at any depth; `src/**/*.test.ts` only under src; "
        "`**/*` (the default) lists everything.\n"
        "- Files ignored by .gitignore (in git repositories) or .ignore are left out unless "
        "no_ignore=true; hidden files are included; .git and other version-control folders "
        "never are.\n"
        "- Paths are relative to the working directory, ready for read_file. At most `limit` "
        "(default 100) are returned; the last line gives the total and the offset of the next "
        "page.\n"
        "- To find text inside files use grep_search; to read a file use read_file."
    )
    usage = (
        "Use list_files (not find/ls in a shell) to locate files by name; narrow with a glob "
        "and path rather than listing a whole large tree."
    )
    kind = ToolKind.SEARCH
    read_only = True
    concurrency_safe = True
    destructive = False
    idempotent = True
    args_model: ClassVar[type[BaseModel] | None] = ListFilesArgs

    newest_first: bool = True
    """Order newest-modified first (one stat per listed file, done while rg walks), or by
    path when False (faster on huge trees; the issue's contract is newest first)."""
    search_timeout: float = SEARCH_TIMEOUT
    """Seconds before rg is stopped and the files found so far are returned, flagged."""
    max_output: int = 32 << 20
    """Bytes of rg output kept; past it the listing is stopped and flagged partial."""

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`list_display`)."""
        return list_display(view, name=self.name)

    def validate_input(self, args: ListFilesArgs, ctx: ToolContext) -> str | None:
        """Refuse a malformed glob before anything runs."""
        return glob_error(ctx.locale, args.pattern)

    def permission_requests(
        self, args: ListFilesArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The folder listed."""
        return [ReadPath(path=args.path or str(ctx.cwd))]

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:
        """List, order, page."""
        locale = ctx.locale
        root = resolve_search(args.path, ctx)
        if root.kind == "file":
            raise ToolFailure(
                text(locale, CATALOG, "not_dir", path=root.path), code=ErrorCode.INVALID_ARGS
            )
        require_rg(locale)
        glob = compile_glob(relative_glob(args.pattern, root.path))
        rg_args = ["--files", "--null", "--no-messages", "--hidden", *vcs_args()]
        if args.no_ignore:
            rg_args.append("--no-ignore")
        rg_args += glob.args
        keep = glob.match
        hidden = hidden_filter(root.cwd, current_hidden(ctx))
        if hidden is not None:  # the folder holds a hidden path: out of the walk and the output
            rg_args += hidden.args
            keep = hidden.wrap(keep)
        seconds = time_limit(ctx, self.search_timeout)
        run = await run_ripgrep(
            rg_args,
            cwd=root.cwd,
            timeout=seconds,
            ctx=ctx,
            nul_separated=True,
            with_mtime=self.newest_first,
            keep=keep,
            max_output=self.max_output,
        )
        if run.failed:
            raise rg_failure(locale, run)
        return self._result(args, ctx, root, run, seconds)

    def _result(
        self,
        args: ListFilesArgs,
        ctx: ToolContext,
        root: SearchRoot,
        run: RipgrepRun,
        seconds: float,
    ) -> ToolResult:
        locale = ctx.locale
        paths, total = run.records, len(run.records)
        stop = args.offset + args.limit
        if self.newest_first:
            shown = [paths[i] for i in newest_first(paths, run.mtimes, stop)[args.offset :]]
        else:
            shown = first_by_path(paths, stop)[args.offset :]
        lines = [root.prefix + p for p in shown]
        first, last = args.offset + 1, args.offset + len(lines)
        files = count_text(locale, "n_files", total)
        how = text(locale, CATALOG, "order_newest" if self.newest_first else "order_path")
        if total == 0:
            footer = None
            lines = [text(locale, CATALOG, "none")]
        elif not lines:
            footer = text(locale, CATALOG, "past_end", offset=args.offset, files=files)
        elif last < total:
            footer = text(
                locale, CATALOG, "page", first=first, last=last, files=files, next=last, order=how
            )
        elif args.offset:
            footer = text(
                locale, CATALOG, "last_page", first=first, last=last, files=files, order=how
            )
        else:
            footer = text(locale, CATALOG, "all", files=files, order=how)
        note = partial_note(locale, run, seconds, self.max_output)
        content = "\n".join([*lines, *(f for f in (footer, note) if f)])
        metadata: dict[str, Any] = {
            "total": total,
            "shown": len(shown),
            "offset": args.offset,
            "limit": args.limit,
            "partial": run.partial,
            "stopped": run.stopped,
        }
        noun = "file" if total == 1 else "files"
        summary = f"list_files: {len(shown)} of {total} {noun}" + (
            " (partial)" if run.partial else ""
        )
        return ToolResult.success(printable(content), summary=summary, metadata=metadata)
