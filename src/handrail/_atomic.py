"""Putting bytes under a name in one step, so that a SIGKILL at any instant leaves no debris.

The data is written to an unnamed file (Linux `O_TMPFILE`) in the target's directory, fsynced,
and only then given a name: a new file is linked straight to its own name; an existing one gets
a temporary name that is renamed over it at once. A kill while writing leaves nothing behind
(the kernel frees the unnamed file). No syscall closes the gap between the link and the rename,
so the temporary name says who made it, `.{name}.handrail-{pid}-{hex}.tmp`, and writes sweep
the names whose writer is dead (a process's first write into a directory, then once a minute).
Where `O_TMPFILE` is missing (not Linux, NFS, no /proc) the data goes to such a named temporary
file from the start; the sweep covers that case too.

Everything here works on an open directory handle that the caller has already checked;
`write_file_atomic` is the path-level form for handrail's own files (settings, the trust store),
which no tool's confinement applies to. Standard library only: the bottom layer, so the
permissions layer and the CLI can use it as the sandbox does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time

__all__ = [
    "current_umask",
    "read_private_file",
    "replace_in_dir",
    "sweep_stale_temps",
    "temp_name",
    "write_file_atomic",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
_NAME_MAX = 255
SWEEP_INTERVAL = 60.0
"""Seconds before a process lists the same directory again for stale temporary files."""
_SWEPT: dict[tuple[int, int], float] = {}
"""(st_dev, st_ino) of a directory -> when this process last swept it (monotonic)."""
_TEMP = re.compile(r"\..*\.handrail-([1-9][0-9]{0,9})-[0-9a-f]{12}\.tmp", re.DOTALL)
# The errors that mean "this kernel or file system has no O_TMPFILE" (EISDIR: a kernel older
# than 3.11 sees only the O_DIRECTORY bit); anything else is a real failure to report.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EISDIR, errno.EINVAL})
# linkat of /proc/self/fd/N refused for a reason a named temporary file does not share.
_NO_LINK = frozenset({errno.ENOENT, errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP})


def _read_umask() -> int | None:
    """The umask from /proc (Linux 4.7+), or None where it cannot be read without changing it."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _umask_at_import() -> int:
    umask = _read_umask()
    if umask is not None:
        return umask
    # Setting the umask to read it is racy across threads; at import it is done once.
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


_IMPORT_UMASK = _umask_at_import()


def current_umask() -> int:
    """The process's umask, read without changing it (the value at import where /proc lacks it)."""
    umask = _read_umask()
    return umask if umask is not None else _IMPORT_UMASK


def temp_name(name: str) -> str:
    """A fresh temporary name beside `name` that carries this process's PID (fits NAME_MAX)."""
    tail = f".handrail-{os.getpid()}-{secrets.token_hex(6)}.tmp"
    room = _NAME_MAX - 1 - len(tail.encode())
    stem = os.fsencode(name)[:room]
    return "." + os.fsdecode(stem) + tail


def _writer_gone(pid: int) -> bool:
    """True if no live process has this PID (a zombie counts as gone: it can write no more)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            state = stat_file.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return False
    return state in ([b"Z"], [b"X"])


def _due(dfd: int) -> bool:
    """Whether this directory is due for a sweep, noting that it is being swept now."""
    try:
        st = os.fstat(dfd)
    except OSError:
        return False
    key, now = (st.st_dev, st.st_ino), time.monotonic()
    last = _SWEPT.get(key)
    if last is not None and now - last < SWEEP_INTERVAL:
        return False
    if len(_SWEPT) >= 4096:
        _SWEPT.clear()  # a bound, not a cache policy: forgetting only means sweeping again
    _SWEPT[key] = now
    return True


def sweep_stale_temps(dfd: int) -> list[str]:
    """Remove handrail's temporary files in this directory whose writer is dead; best effort.

    Only regular files owned by this user whose name matches `temp_name`'s pattern, made by
    another process that no longer runs, are removed. A process sweeps a directory at its
    first write there and then at most every `SWEEP_INTERVAL` seconds (listing costs about
    1 ms per 1,000 entries). Returns the names removed.
    """
    if not _due(dfd):
        return []
    me, uid = os.getpid(), os.geteuid()
    removed: list[str] = []
    with contextlib.suppress(OSError), os.scandir(dfd) as entries:
        for entry in entries:
            found = _TEMP.fullmatch(entry.name)
            if found is None or int(found[1]) == me or not _writer_gone(int(found[1])):
                continue
            with contextlib.suppress(OSError):
                st = entry.stat(follow_symlinks=False)
                if entry.is_file(follow_symlinks=False) and st.st_uid == uid:
                    os.unlink(entry.name, dir_fd=dfd)
                    removed.append(entry.name)
    return removed


def _fill(fd: int, data: bytes, mode: int) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fchmod(fd, mode)
    os.fsync(fd)


def _open_unnamed(dfd: int) -> int | None:
    """An unnamed file in the directory, or None where the system cannot make or link one."""
    if not _O_TMPFILE or not os.path.isdir("/proc/self/fd"):
        return None  # without /proc the file could not be given a name afterwards
    try:
        return os.open(".", _O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, 0o600, dir_fd=dfd)
    except OSError as exc:
        if exc.errno in _NO_TMPFILE:
            return None
        raise


def _link(fd: int, name: str, dfd: int) -> bool:
    """Give the unnamed file `fd` a name; False if /proc cannot name it here (restricted).

    Raises FileExistsError if the name is taken, and OSError for a real failure.
    """
    # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N names an O_TMPFILE file without the
    # CAP_DAC_READ_SEARCH that AT_EMPTY_PATH needs; os.link uses linkat because of dst_dir_fd.
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dfd, follow_symlinks=True)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno in _NO_LINK:
            return False
        raise
    return True


def _rename_over(tmp: str, name: str, dfd: int) -> None:
    try:
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise


def replace_in_dir(dfd: int, name: str, data: bytes, mode: int, *, exists: bool) -> None:
    """Make `name` in the directory `dfd` hold exactly `data` with permission bits `mode`.

    The old file (if `exists`) is replaced by one rename; a new one appears by one link. The
    data is fsynced before it gets any name; the caller fsyncs the directory. Raises OSError,
    after which the old file is untouched and no name of ours is left.
    """
    fd = _open_unnamed(dfd)
    if fd is None:
        _replace_named(dfd, name, data, mode)
        return
    try:
        _fill(fd, data, mode)
        if not exists:
            try:
                if _link(fd, name, dfd):
                    return
            except FileExistsError:
                pass  # created by someone else meanwhile: replace it, as a rename would
        tmp = temp_name(name)
        # The only moment with a name of ours on disk starts here, and ends at the rename.
        named = _link(fd, tmp, dfd)
    finally:
        os.close(fd)
    if named:
        _rename_over(tmp, name, dfd)
    else:
        _replace_named(dfd, name, data, mode)


def _replace_named(dfd: int, name: str, data: bytes, mode: int) -> None:
    """The portable way: a named temporary file, written, fsynced and renamed."""
    tmp = temp_name(name)
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd
    )
    try:
        _fill(fd, data, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    os.close(fd)
    _rename_over(tmp, name, dfd)


def write_file_atomic(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Replace (or create) the file at `path` with `data` in one step, durably.

    A kill at any moment leaves the old bytes or the new ones, never a partial file. An
    existing file keeps its permission bits unless `mode` is given; a new one gets `mode`, or
    0o666 minus the umask. Raises OSError (the old file then untouched).
    """
    parent, name = os.path.split(os.path.abspath(path))
    dfd = os.open(parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _O_CLOEXEC)
    try:
        sweep_stale_temps(dfd)
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if mode is None:
            mode = st.st_mode & 0o7777 if st is not None else 0o666 & ~current_umask()
        replace_in_dir(dfd, name, data, mode, exists=st is not None)
        with contextlib.suppress(OSError):
            os.fsync(dfd)  # the rename (or link) itself, durable
    finally:
        os.close(dfd)


def read_private_file(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file of this user, opened without following a symlink.

    Raises:
        OSError: It cannot be opened (missing, a symlink).
        ValueError: It is not a regular file of this user, or larger than `max_bytes`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise ValueError("not a regular file of this user")
        if st.st_size > max_bytes:
            raise ValueError(f"larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
