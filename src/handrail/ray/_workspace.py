"""Workspace providers: where one session's files come from, made on the node that runs it.

A provider is a small frozen value that the driver builds and Ray pickles to the node; there
`make(dest, cache)` runs in a worker thread and returns the workspace root. Only the provider
travels, never the tree (a `TarWorkspace` carries its tarball, capped at 64 MiB):

* `EmptyWorkspace`   a new empty directory
* `DirWorkspace`     a copy of a directory that already exists on the node
* `GitWorkspace`     a detached checkout, cloned from a node-local mirror kept in `cache`
                     (in `_git.py`)
* `TarWorkspace`     a small tarball from the driver, extracted with the `data` filter
* `PathWorkspace`    an existing directory on the node, used in place and never deleted

Every owned workspace is built in a hidden sibling of `dest` and renamed into place, so a
failure leaves nothing at `dest`. Failures raise `WorkspaceError`, whose message says what to
fix. `remove_workspace` deletes a tree without following symlinks out of it.

Plain filesystem code: this module never imports Ray.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import shutil
import socket
import stat
import tarfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from ..errors import ConfigurationError

__all__ = [
    "DirWorkspace",
    "EmptyWorkspace",
    "PathWorkspace",
    "TarWorkspace",
    "Workspace",
    "WorkspaceError",
    "build_in_place",
    "remove_workspace",
]


class WorkspaceError(ConfigurationError):
    """A workspace could not be made; the message says what to fix."""


class Workspace(Protocol):
    """How a session's workspace is made on the node that runs the session."""

    owned: ClassVar[bool]
    """True: the host made the workspace and deletes it when the session closes."""

    def make(self, dest: Path, cache: Path) -> Path:
        """Make the workspace on this node and return its root (absolute, resolved).

        Runs in a worker thread. Leaves nothing at `dest` when it fails.

        Args:
            dest: Where to make it; does not exist yet, its parent does.
            cache: A node-local directory shared by every session on the node.

        Raises:
            WorkspaceError: The workspace could not be made; the message says why.
        """
        ...


@dataclass(frozen=True, slots=True)
class EmptyWorkspace:
    """A new empty directory: costs one `mkdir`."""

    owned: ClassVar[bool] = True

    def make(self, dest: Path, cache: Path) -> Path:
        """Make an empty directory at `dest` (see `Workspace.make`)."""
        return build_in_place(dest, lambda _tmp: None)


@dataclass(frozen=True, slots=True)
class DirWorkspace:
    """A copy of a directory tree that exists on the node.

    Symlinks are copied as symlinks (never followed), file modes and times are kept; sockets,
    FIFOs and device files are skipped. Costs a full copy of the tree, on every session: for a
    big tree that many sessions share, prefer `GitWorkspace` or `PathWorkspace`.
    """

    source: str
    """Absolute path of the directory on the node (not on the driver)."""

    owned: ClassVar[bool] = True

    def __post_init__(self) -> None:
        _require_absolute("DirWorkspace", self.source)

    def make(self, dest: Path, cache: Path) -> Path:
        """Copy `source` to `dest` (see `Workspace.make`)."""
        source = _existing_dir("DirWorkspace", self.source)
        target = dest.parent.resolve() / dest.name
        if target == source or source in target.parents:
            raise WorkspaceError(
                f"DirWorkspace: cannot copy {source} into {dest}, which is inside it; "
                "choose a source outside the directory that holds the workspaces"
            )

        def fill(tmp: Path) -> None:
            try:
                shutil.copytree(
                    source, tmp, symlinks=True, copy_function=_copy_regular, dirs_exist_ok=True
                )
            except shutil.Error as exc:
                failures: list[tuple[str, str, str]] = exc.args[0]
                shown = "; ".join(f"{src}: {why}" for src, _dst, why in failures[:3])
                more = f" (and {len(failures) - 3} more)" if len(failures) > 3 else ""
                raise WorkspaceError(
                    f"DirWorkspace: could not copy {source}: {shown}{more}; "
                    "make these files readable on the node"
                ) from exc

        return build_in_place(dest, fill)


@dataclass(frozen=True, slots=True)
class TarWorkspace:
    """A tarball (plain or compressed) from the driver, extracted on the node.

    `data` travels through Ray's object store with the session, hence the 64 MiB cap
    (`max_bytes`); put bigger trees on the nodes or in git. Extraction uses `tarfile`'s `data`
    filter, and absolute member names are refused too: members that would land outside the
    workspace, links pointing out of it and device files make `make` fail with nothing
    written. Symlinks inside the tree are kept; file modes are kept, less setuid/setgid and
    group/other write bits.
    """

    data: bytes = field(repr=False)
    """The tar archive; gzip, bzip2 or xz compression is detected."""

    owned: ClassVar[bool] = True
    max_bytes: ClassVar[int] = 64 * 1024 * 1024
    """The largest `data` accepted (64 MiB)."""

    def __post_init__(self) -> None:
        if len(self.data) > self.max_bytes:
            raise WorkspaceError(
                f"TarWorkspace: the tarball is {len(self.data) / 2**20:.1f} MiB, over the "
                f"{self.max_bytes // 2**20} MiB limit for data sent through Ray's object "
                "store; put the tree on the nodes (DirWorkspace) or in git (GitWorkspace)"
            )

    def __repr__(self) -> str:
        return f"TarWorkspace(<{len(self.data)} bytes>)"

    @classmethod
    def of(cls, path: str | Path) -> TarWorkspace:
        """Pack a local directory (on the driver) into a gzip tarball.

        Symlinks are packed as symlinks; one pointing outside the directory is refused when
        the tarball is extracted. Sockets, FIFOs and device files are left out.

        Args:
            path: The directory to pack; its contents become the workspace root.

        Raises:
            WorkspaceError: `path` is not a directory, cannot be read, or packs to more
                than `max_bytes`.
        """
        root = Path(path)
        if not root.is_dir():
            raise WorkspaceError(f"TarWorkspace.of: {root} is not a directory")
        buffer = io.BytesIO()
        try:
            with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
                for child in sorted(root.iterdir()):
                    tar.add(child, arcname=child.name, filter=_packable)
        except OSError as exc:
            raise WorkspaceError(f"TarWorkspace.of: could not pack {root}: {exc}") from exc
        return cls(buffer.getvalue())

    def make(self, dest: Path, cache: Path) -> Path:
        """Extract the tarball at `dest` (see `Workspace.make`)."""

        def fill(tmp: Path) -> None:
            try:
                with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:*") as tar:
                    tar.errorlevel = 2
                    tar.extractall(tmp, filter=_safe_member)
            except tarfile.TarError as exc:
                raise WorkspaceError(f"TarWorkspace: refused the tarball: {exc}") from exc

        return build_in_place(dest, fill)


@dataclass(frozen=True, slots=True)
class PathWorkspace:
    """An existing directory on the node, used in place: costs nothing, shares everything.

    Not owned: the host never deletes it, and sessions using the same path see each other's
    changes. `dest` is ignored.
    """

    path: str
    """Absolute path of the directory on the node (not on the driver)."""

    owned: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _require_absolute("PathWorkspace", self.path)

    def make(self, dest: Path, cache: Path) -> Path:
        """Return `path`, resolved, after checking it is a directory (see `Workspace.make`)."""
        return _existing_dir("PathWorkspace", self.path)


def remove_workspace(path: Path) -> None:
    """Delete a workspace tree; a missing path is not an error.

    Directories the tree made read-only (or unreadable) are given back to their owner first.
    Symlinks are removed, never followed, so nothing outside the tree is touched; if `path`
    itself is a symlink, only the link goes.

    Raises:
        OSError: Something in the tree could not be deleted (not owned by this user, a
            mount point, ...).
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        path.unlink(missing_ok=True)
        return
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        if not os.path.lexists(path):
            return
    except PermissionError:
        pass
    _unlock_tree(path)
    shutil.rmtree(path)


# --- building in place ----------------------------------------------------------------------


def build_in_place(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Make a hidden sibling of `dest`, `fill` it, and rename it to `dest`; its root."""
    if os.path.lexists(dest):
        raise WorkspaceError(f"the workspace path {dest} exists already; pick a new one")
    try:
        tmp = dest.parent / f".{dest.name}.{secrets.token_hex(6)}.tmp"
        tmp.mkdir()
    except OSError as exc:
        raise WorkspaceError(f"cannot make a workspace at {dest}: {exc}") from exc
    try:
        fill(tmp)
        tmp.rename(dest)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            remove_workspace(tmp)
        if isinstance(exc, OSError):
            raise WorkspaceError(f"could not make the workspace at {dest}: {exc}") from exc
        raise
    return dest.resolve()


def _require_absolute(kind: str, path: str) -> None:
    if not os.path.isabs(path):
        raise WorkspaceError(
            f"{kind}: {path!r} is not an absolute path; give the directory's absolute path on "
            "the node (a relative one would resolve against the Ray worker's directory)"
        )


def _existing_dir(kind: str, path: str) -> Path:
    """`path` resolved, or WorkspaceError naming the node when it is not a directory there."""
    where = f"on node {socket.gethostname()}"
    try:
        resolved = Path(path).resolve(strict=True)
    except OSError as exc:
        raise WorkspaceError(
            f"{kind}: {path} does not exist {where}; the path must exist on every node "
            "that runs sessions"
        ) from exc
    if not resolved.is_dir():
        raise WorkspaceError(f"{kind}: {path} is not a directory {where}")
    return resolved


def _copy_regular(src: str, dst: str) -> None:
    """`shutil.copy2` for regular files; sockets, FIFOs and devices are skipped."""
    if stat.S_ISREG(os.lstat(src).st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)


def _packable(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Keep what the `data` filter extracts: files, directories, links."""
    if not (info.isreg() or info.isdir() or info.issym() or info.islnk()):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _safe_member(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """The `data` filter, which also refuses (rather than strips) absolute member names."""
    if member.name.startswith(("/", os.sep)):
        raise tarfile.AbsolutePathError(member)
    return tarfile.data_filter(member, dest)


# --- removal ----------------------------------------------------------------------------------

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)


def _unlock_tree(root: Path) -> None:
    """Give the owner rwx on every directory under `root`, walking by handle, no symlinks."""
    parent = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        top = _open_unlocked(parent, root.name)
    finally:
        os.close(parent)
    if top is None:
        return
    # Depth first, one open handle per level, so a wide tree does not run out of them.
    stack = [(top, _subdirs(top))]
    try:
        while stack:
            fd, names = stack[-1]
            if not names:
                os.close(fd)
                stack.pop()
                continue
            child = _open_unlocked(fd, names.pop())
            if child is not None:
                stack.append((child, _subdirs(child)))
    finally:
        for fd, _names in stack:
            os.close(fd)


def _subdirs(fd: int) -> list[str]:
    with os.scandir(fd) as entries:
        return [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]


def _open_unlocked(parent: int, name: str) -> int | None:
    """Open directory `name` under `parent` with owner rwx; None if it is not a directory."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        fd = None
    except (NotADirectoryError, FileNotFoundError):
        return None
    except OSError as exc:  # ELOOP: a symlink, left for rmtree to unlink
        if exc.errno == errno.ELOOP:
            return None
        raise
    if fd is not None:
        mode = os.fstat(fd).st_mode
        if mode & 0o700 != 0o700:
            os.chmod(fd, stat.S_IMODE(mode) | 0o700)
        return fd
    # Unreadable: change it through a handle that cannot be a symlink, then open it.
    if _O_PATH:
        handle = os.open(
            name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
        )
        try:
            mode = os.fstat(handle).st_mode
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(mode) | 0o700)
        finally:
            os.close(handle)
    else:
        info = os.lstat(name, dir_fd=parent)
        if not stat.S_ISDIR(info.st_mode):
            return None
        os.chmod(name, stat.S_IMODE(info.st_mode) | 0o700, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)
