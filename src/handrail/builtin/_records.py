"""What the session knows about files it read: read-before-write and change detection.

A file may be overwritten or edited only if this session read it in full and it is unchanged
since. "Unchanged" means the same bytes: a formatter that only touched the modification time
does not block. Reading page by page to the end, with the file unchanged in between, counts as
a full read. After a successful write the record describes the new content, so the next edit
needs no re-read.
"""

from __future__ import annotations

import hashlib

from .. import ErrorCode, FileRecord, Session, ToolContext, ToolFailure
from ..sandbox import FileData
from ._i18n import text

__all__ = ["digest", "record_read", "record_write", "require_fresh", "unchanged_range"]

CATALOG = {
    "en": {
        "not_read": (
            "{path} has not been read in full in this session. Call read_file on it first "
            "(all of it, page by page if it is long), then try again."
        ),
        "changed": (
            "{path} changed on disk after this session last read it. Call read_file on it "
            "again to see the current content, then retry the change against that."
        ),
    },
    "zh": {
        "not_read": "本会话尚未完整读取 {path}。请先用 read_file 读取它(较长时分页读完),然后再试。",
        "changed": (
            "{path} 在本会话上次读取后已在磁盘上被修改。"
            "请重新用 read_file 读取当前内容,再基于它重试修改。"
        ),
    },
}


def digest(data: bytes) -> str:
    """The sha256 of a file's bytes."""
    return hashlib.sha256(data).hexdigest()


def _merge(
    ranges: tuple[tuple[int, int], ...], new: tuple[int, int]
) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted((*ranges, new)):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def record_read(
    ctx: ToolContext,
    data: FileData,
    *,
    first: int,
    last: int,
    total_lines: int,
    sha256: str | None = None,
) -> None:
    """Note that lines `first`..`last` (1-based) of this content were read.

    Ranges accumulate while the content stays the same; they reset when it changed. Pass
    `sha256` (of `data.data`) when it is already known, to skip hashing the file again.
    """
    sha = sha256 or digest(data.data)
    path = data.path

    def update(session: Session) -> None:
        old = session.files.get(path)
        ranges = old.ranges if old is not None and old.sha256 == sha else ()
        if last >= first:
            ranges = _merge(ranges, (first, last))
        complete = total_lines == 0 or (
            len(ranges) == 1 and ranges[0][0] <= 1 and ranges[0][1] >= total_lines
        )
        session.files[path] = FileRecord(
            mtime_ns=data.mtime_ns, size=data.size, sha256=sha, complete=complete, ranges=ranges
        )

    ctx.update_state(update)


def unchanged_range(
    ctx: ToolContext, data: FileData, *, first: int, last: int, sha256: str | None = None
) -> bool:
    """True if this session already read exactly these lines of exactly this content."""
    old = ctx.session.files.get(data.path)
    if old is None or old.mtime_ns != data.mtime_ns:
        return False
    if old.sha256 != (sha256 or digest(data.data)):
        return False
    return any(start <= first and last <= end for start, end in old.ranges)


def require_fresh(ctx: ToolContext, current: FileData) -> None:
    """Refuse to change a file this session has not read in full, or that changed since."""
    old = ctx.session.files.get(current.path)
    if old is None or not old.complete:
        raise ToolFailure(
            text(ctx.locale, CATALOG, "not_read", path=current.path), code=ErrorCode.FILE_NOT_READ
        )
    if old.sha256 != digest(current.data):
        raise ToolFailure(
            text(ctx.locale, CATALOG, "changed", path=current.path),
            code=ErrorCode.FILE_MODIFIED_SINCE_READ,
        )


def record_write(ctx: ToolContext, path: str, data: bytes, *, mtime_ns: int) -> None:
    """After a write: the session knows the new content in full."""
    sha = digest(data)
    size = len(data)

    def update(session: Session) -> None:
        session.files[path] = FileRecord(
            # Fresh for the next change, but the text was never *shown* (an edit shows a diff):
            # no ranges, so read_file displays the new content rather than an "unchanged" note.
            mtime_ns=mtime_ns,
            size=size,
            sha256=sha,
            complete=True,
            ranges=(),
        )

    ctx.update_state(update)
