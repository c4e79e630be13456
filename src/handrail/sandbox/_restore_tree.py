"""Putting paths back to recorded states, never following a link and never leaving half a file.

Given, per path, the state now and the state wanted, `apply` removes what must go (deepest
first), makes folders, files and links (shallowest first), then sets folder modes (deepest
first, so a read-only folder is filled before it closes). Every step opens the parent through
folder handles from the root down with `O_NOFOLLOW`: a folder swapped for a symlink since the
checkpoint is removed as a link, and nothing is ever written through one. Files are replaced
atomically (`_atomic.replace_in_dir`). A content the store does not have (too big to keep, or
an ignored folder's) is never removed or overwritten: that would be a change no later restore
could undo. It is left as it is and reported (an ignored folder that must go goes only if it
is empty). An ignored folder made again comes back empty, with its mode.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .._atomic import replace_in_dir, temp_name
from ._workspace_state import Entry, open_below

__all__ = ["Step", "apply_steps"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_PATH = getattr(os, "O_PATH", 0)


@dataclass(frozen=True, slots=True)
class Step:
    """One path to put back: its state now and the state wanted (None: absent)."""

    path: str
    now: Entry | None
    want: Entry | None


def _depth(path: str) -> int:
    return path.count("/")


class _Folders:
    """Opens folders below a root one component at a time, never through a symlink."""

    def __init__(self, roots: Sequence[str]) -> None:
        self.roots = sorted(roots, key=len, reverse=True)

    def open(self, folder: str) -> int:
        """A handle on `folder`, from the innermost root holding it (`open_below`)."""
        root = next(
            (r for r in self.roots if folder == r or folder.startswith(r.rstrip("/") + "/")), None
        )
        return open_below(root, folder)


def _move_aside(folders: _Folders, parent: str, name: str) -> str | None:
    """Rename `name` to a free `name.before-restore-XXXXXX`; its new name, or None."""
    try:
        dfd = folders.open(parent)
    except OSError:
        return None
    try:
        for _ in range(5):
            aside = f"{name[:200]}.before-restore-{secrets.token_hex(3)}"
            try:
                os.stat(aside, dir_fd=dfd, follow_symlinks=False)
                continue
            except FileNotFoundError:
                pass
            try:
                os.rename(name, aside, src_dir_fd=dfd, dst_dir_fd=dfd)
            except OSError:
                return None
            return os.path.join(parent, aside)
        return None
    finally:
        os.close(dfd)


def _open_up(folders: _Folders, steps: Sequence[Step], roots: set[str]) -> list[tuple[str, int]]:
    """Give the owner rwx on every folder the restore goes through.

    A `chmod 000` cannot keep a restore out. Returns the (folder, mode) pairs to put back.
    """
    wanted: set[str] = set()
    for step in steps:
        folder = os.path.dirname(step.path)
        while folder not in wanted and folder not in roots and os.path.dirname(folder) != folder:
            wanted.add(folder)
            folder = os.path.dirname(folder)
        if step.now is not None and step.now.kind in ("dir", "opaque"):
            wanted.add(step.path)
    changed: list[tuple[str, int]] = []
    for folder in sorted(wanted, key=_depth):
        parent, name = os.path.split(folder)
        try:
            dfd = folders.open(parent)
        except OSError:
            continue
        try:
            fd = os.open(name, _O_PATH | _O_NOFOLLOW | getattr(os, "O_DIRECTORY", 0), dir_fd=dfd)
        except OSError:
            continue
        finally:
            os.close(dfd)
        try:
            mode = stat.S_IMODE(os.fstat(fd).st_mode)
            if mode & 0o700 != 0o700:
                # An O_PATH handle is this very folder: the chmod cannot land elsewhere.
                os.chmod(f"/proc/self/fd/{fd}", mode | 0o700)
                changed.append((folder, mode))
        except OSError:
            pass
        finally:
            os.close(fd)
    return changed


def apply_steps(
    steps: Sequence[Step], roots: Sequence[str], content: Callable[[str], bytes | None]
) -> tuple[list[str], list[tuple[str, str]]]:
    """Apply `steps`; returns the paths put back and the (path, why) pairs left as they are."""
    folders = _Folders(roots)
    done: list[str] = []
    left: list[tuple[str, str]] = []
    root_set = set(folders.roots)
    stayed: set[str] = set()  # could not be removed: nothing is made in their place

    def fail(path: str, why: str) -> None:
        left.append((path, why))

    # 0. Folders on the way that the owner cannot enter or write are opened up for the restore.
    opened = _open_up(folders, steps, root_set) if _O_PATH else []

    # 1. Removals, deepest first: what is not wanted, or is wanted as another kind.
    for step in sorted(steps, key=lambda s: _depth(s.path), reverse=True):
        now, want = step.now, step.want
        if now is None or (want is not None and _replaced_in_place(now, want)):
            continue
        if step.path in root_set:
            continue
        parent, name = os.path.split(step.path)
        if now.kind == "unkept":
            if want is not None and want.kind in ("file", "link", "dir"):
                # Its content was never kept, yet a kept one is wanted here: it is moved
                # aside, not lost, and the kept content goes in its place.
                aside = _move_aside(folders, parent, name)
                if aside is not None:
                    fail(
                        step.path,
                        f"what was there could not be kept (too big or unreadable): moved to "
                        f"{aside}, and the checkpoint's version put back",
                    )
                    continue
            stayed.add(step.path)
            fail(
                step.path,
                "a file too big to keep or unreadable, whose contents were never copied: "
                "left in place",
            )
            continue
        try:
            dfd = folders.open(parent)
        except OSError as exc:
            if not _gone(exc):
                fail(step.path, f"cannot reach its folder ({exc.strerror})")
            continue
        try:
            if now.kind == "opaque":
                # Only if empty (rmdir refuses otherwise): its contents were never copied.
                try:
                    os.rmdir(name, dir_fd=dfd)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
                    stayed.add(step.path)
                    fail(
                        step.path,
                        "an ignored folder, whose contents were never copied: left in place",
                    )
                    continue
            elif now.kind == "dir":
                os.rmdir(name, dir_fd=dfd)
            else:
                os.unlink(name, dir_fd=dfd)
            if want is None:
                done.append(step.path)
        except FileNotFoundError:
            if want is None:
                done.append(step.path)
        except OSError as exc:
            stayed.add(step.path)
            fail(step.path, f"could not remove it ({exc.strerror})")
        finally:
            os.close(dfd)

    # 2. Creations and contents, shallowest first.
    dir_modes: list[tuple[str, int]] = []
    for step in sorted(steps, key=lambda s: _depth(s.path)):
        want = step.want
        if want is None:
            continue
        if step.path in stayed:
            continue  # reported above
        if want.kind == "unkept":
            fail(step.path, "it was too big to keep, so its earlier content cannot come back")
            continue
        parent, name = os.path.split(step.path)
        try:
            dfd = folders.open(parent) if step.path not in root_set else -1
        except OSError as exc:
            fail(step.path, f"cannot reach its folder ({exc.strerror})")
            continue
        try:
            if step.now is None and step.path not in root_set and _there(dfd, name, want):
                # Not recorded, yet there (made where changes are not tracked, say a folder
                # that a new `.gitignore` rule ignores): its content was never kept.
                fail(step.path, "something not recorded is there now: left in place")
                continue
            if want.kind in ("dir", "opaque"):
                if step.path not in root_set:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o700, dir_fd=dfd)
                dir_modes.append((step.path, want.mode))
                if want.kind == "opaque" and step.now is None:
                    fail(
                        step.path,
                        "an ignored folder: made again, empty (its contents were never copied)",
                    )
                    continue
                done.append(step.path)
            elif want.kind == "link":
                tmp = temp_name(name)
                os.symlink(want.target, tmp, dir_fd=dfd)
                try:
                    os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
                except OSError:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp, dir_fd=dfd)
                    raise
                done.append(step.path)
            else:
                data = content(want.blob)
                if data is None:
                    fail(step.path, "its kept content is missing or damaged")
                    continue
                exists = step.now is not None and step.now.kind == "file"
                replace_in_dir(dfd, name, data, want.mode, exists=exists)
                done.append(step.path)
        except OSError as exc:
            fail(step.path, f"could not write it ({exc.strerror})")
        finally:
            if dfd >= 0:
                os.close(dfd)

    # 3. Folder modes, deepest first (a read-only folder is closed after it was filled); a
    # folder opened up in step 0 that the restore does not set gets its own mode back.
    setting = {path for path, _ in dir_modes}
    dir_modes += [(path, mode) for path, mode in opened if path not in setting]
    for path, mode in sorted(dir_modes, key=lambda x: _depth(x[0]), reverse=True):
        try:
            fd = folders.open(path)
        except OSError as exc:
            fail(path, f"cannot set its mode ({exc.strerror})")
            continue
        try:
            os.fchmod(fd, mode)
        except OSError as exc:
            fail(path, f"cannot set its mode ({exc.strerror})")
        finally:
            os.close(fd)
    return list(dict.fromkeys(done)), left


def _there(dfd: int, name: str, want: Entry) -> bool:
    """Is something at `name` that making `want` would replace (a folder wanted may stay)?"""
    try:
        st = os.lstat(name, dir_fd=dfd)
    except FileNotFoundError:
        return False
    return not (want.kind in ("dir", "opaque") and stat.S_ISDIR(st.st_mode))


def _replaced_in_place(now: Entry, want: Entry) -> bool:
    """Can `now` become `want` without removing it first (a file rewritten, a folder kept)?"""
    if now.kind in ("dir", "opaque") and want.kind in ("dir", "opaque"):
        return True
    return now.kind == "file" and want.kind == "file"


def _gone(exc: OSError) -> bool:
    return exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
