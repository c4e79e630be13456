"""Reading and writing files safely: checked at open time, written atomically.

Reads open the resolved path without following a symlink on the final component, refuse
anything that is not a regular file before reading from it (a FIFO is never opened for
reading: it could block forever), and check the path that was actually opened against the
roots. Writes go to an unnamed file in the same directory (opened through a directory handle
whose real location is checked), are fsynced, keep the file's mode, and take the target's
name with one link or rename (`_atomic`), so a crash at any instant leaves the old content or
the new, never a mix, and (where Linux allows) no temporary file to clean up.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._atomic import current_umask, replace_in_dir, sweep_stale_temps
from .._context import ToolContext
from .._contract import ErrorCode
from ..errors import ToolFailure
from ._containment import confine_read, confine_write, inside, protected_part, refuse_hidden

__all__ = [
    "FileData",
    "atomic_write",
    "ensure_parent",
    "file_kind",
    "list_dir_names",
    "read_file_bytes",
    "stat_file",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class FileData:
    """What was read: the bytes and the file's identity at that moment."""

    path: str
    data: bytes
    mtime_ns: int
    size: int
    mode: int


def _opened_path(fd: int) -> str | None:
    """The real path behind an open descriptor (Linux); None where it cannot be known."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages: `a directory`, `a FIFO (named pipe)`..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def stat_file(path: str) -> os.stat_result | None:
    """lstat, or None when nothing is there; any other OS refusal is a `ToolFailure`."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise ToolFailure(
                "The path is longer than the file system allows; use a shorter path.",
                code=ErrorCode.INVALID_ARGS,
            ) from exc
        raise ToolFailure(f"cannot access {path}: {exc.strerror}.") from exc


def read_file_bytes(path: str, ctx: ToolContext, *, max_bytes: int) -> FileData:
    """Read a regular file inside the read roots, at most `max_bytes` of it.

    Raises `ToolFailure` with FILE_NOT_FOUND, NOT_A_FILE, FILE_TOO_LARGE or OUTSIDE_READ_ROOTS.
    """
    resolved = confine_read(path, ctx)
    st = stat_file(resolved)
    if st is None:
        raise ToolFailure(f"{resolved} does not exist.", code=ErrorCode.FILE_NOT_FOUND)
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailure(f"{resolved} is {file_kind(st.st_mode)}.", code=ErrorCode.NOT_A_FILE)
    try:
        fd = os.open(resolved, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolFailure(
                f"{resolved} became a symbolic link after it was checked; it was not opened.",
                code=ErrorCode.OUTSIDE_READ_ROOTS,
            ) from exc
        if exc.errno == errno.ENOENT:
            raise ToolFailure(f"{resolved} does not exist.", code=ErrorCode.FILE_NOT_FOUND) from exc
        raise ToolFailure(f"cannot open {resolved}: {exc.strerror}.") from exc
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            raise ToolFailure(f"{resolved} is {file_kind(fst.st_mode)}.", code=ErrorCode.NOT_A_FILE)
        opened = _opened_path(fd)
        roots = (*ctx.read_roots, *ctx.write_roots)
        if opened is not None and inside(opened, roots) is None:
            raise ToolFailure(
                f"{resolved} led outside the allowed roots when opened; it was not read.",
                code=ErrorCode.OUTSIDE_READ_ROOTS,
            )
        if opened is not None:
            # A symlink swapped in after the check could lead into a secret inside a root.
            refuse_hidden(opened, ctx, ErrorCode.OUTSIDE_READ_ROOTS)
        if fst.st_size > max_bytes:
            raise ToolFailure(
                f"{resolved} is {fst.st_size} bytes, over the {max_bytes}-byte limit.",
                code=ErrorCode.FILE_TOO_LARGE,
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise ToolFailure(
                    f"{resolved} grew past the {max_bytes}-byte limit while being read.",
                    code=ErrorCode.FILE_TOO_LARGE,
                )
            chunks.append(chunk)
        return FileData(
            path=resolved,
            data=b"".join(chunks),
            mtime_ns=fst.st_mtime_ns,
            size=fst.st_size,
            mode=stat.S_IMODE(fst.st_mode),
        )
    finally:
        os.close(fd)


def list_dir_names(path: str, ctx: ToolContext, *, limit: int = 10_000) -> list[str]:
    """The names in a directory inside the read roots, sorted (at most `limit` of them).

    For suggestions ("did you mean"): a missing or unreadable directory gives `[]`.
    """
    resolved = confine_read(path, ctx)
    names: list[str] = []
    try:
        with os.scandir(resolved) as entries:
            for entry in entries:
                names.append(entry.name)
                if len(names) >= limit:
                    break
    except OSError:
        return []
    return sorted(names)


def ensure_parent(path: str, ctx: ToolContext) -> None:
    """Create the missing parent directories of a path inside the write roots."""
    resolved = confine_write(path, ctx)
    parent = os.path.dirname(resolved)
    if os.path.isdir(parent):
        return
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.EEXIST):  # a component is an existing file
            raise ToolFailure(
                f"cannot create the folder {parent}: part of that path is an existing file; "
                "nothing was written. Choose a path whose folders are folders.",
                code=ErrorCode.NOT_A_FILE,
            ) from exc
        raise ToolFailure(
            f"cannot create the folder {parent}: {exc.strerror}; nothing was written."
        ) from exc
    # makedirs follows symlinks; check where the directories really ended up.
    real = os.path.realpath(parent)
    root = inside(real, ctx.write_roots)
    if root is None or protected_part(os.path.join(real, "x"), root) is not None:
        raise ToolFailure(
            f"{parent} resolves outside the write roots; nothing was written.",
            code=ErrorCode.OUTSIDE_WRITE_ROOTS,
        )


def _open_dir_checked(parent: str, write_roots: Sequence[Path]) -> int:
    try:
        dfd = os.open(parent, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ToolFailure(
                f"{parent} is not a plain directory (a symbolic link was swapped in?); "
                "nothing was written.",
                code=ErrorCode.OUTSIDE_WRITE_ROOTS,
            ) from exc
        if exc.errno == errno.ENOENT:
            raise ToolFailure(
                f"the directory {parent} does not exist.", code=ErrorCode.FILE_NOT_FOUND
            ) from exc
        raise ToolFailure(f"cannot open the directory {parent}: {exc.strerror}.") from exc
    opened = _opened_path(dfd)
    if opened is not None:
        root = inside(opened, write_roots)
        if root is None or protected_part(os.path.join(opened, "x"), root) is not None:
            os.close(dfd)
            raise ToolFailure(
                f"{parent} led outside the write roots when opened; nothing was written.",
                code=ErrorCode.OUTSIDE_WRITE_ROOTS,
            )
    return dfd


def atomic_write(path: str, data: bytes, ctx: ToolContext, *, mode: int | None = None) -> None:
    """Replace (or create) a file inside the write roots with `data`, atomically.

    The existing file's permission bits are kept (new files get 0o666 minus the umask, or
    `mode`). A symbolic link at the target is refused, never followed. A SIGKILL at any
    instant leaves the old bytes or the new ones and, but for a link-to-rename gap of a few
    microseconds, no temporary file; such a leftover is removed by a later write into the
    directory once its writer is dead (see `_atomic`).
    """
    resolved = confine_write(path, ctx)
    parent, name = os.path.split(resolved)
    dfd = _open_dir_checked(parent, ctx.write_roots)
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            code = (
                ErrorCode.OUTSIDE_WRITE_ROOTS if stat.S_ISLNK(st.st_mode) else ErrorCode.NOT_A_FILE
            )
            raise ToolFailure(
                f"{resolved} is {file_kind(st.st_mode)}; it was not replaced.", code=code
            )
        if mode is None:
            mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~current_umask()
        replace_in_dir(dfd, name, data, mode, exists=st is not None)
        with contextlib.suppress(OSError):
            os.fsync(dfd)  # make the rename (or link) itself durable
    except OSError as exc:
        raise ToolFailure(
            f"cannot write {resolved}: {exc.strerror}; the file is unchanged."
        ) from exc
    else:
        sweep_stale_temps(dfd)
    finally:
        os.close(dfd)
