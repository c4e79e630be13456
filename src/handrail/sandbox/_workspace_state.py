"""What a workspace holds, path by path, as checkpoints record it.

An `Entry` is one path's state: a file (mode and content hash), a symlink (its target, never
followed), a folder (mode), an *opaque* folder (an ignored one such as `node_modules`: kept as
a folder, its contents not copied) or an *unkept* file (too big for the store: known by its
size and time only). Each entry also carries the stat key it was made from (times, size,
inode), so a path whose key has not moved is not read again, as git's index does.

`Scanner` walks the write roots and makes entries, storing each new file content in the
`BlobStore` as it goes. It never enters a version-control folder (the user's `.git` is neither
read nor copied), a hidden path, or handrail's own state folder.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import stat
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import cast

import pathspec

from ._checkpoint_store import BlobStore, StoreFull
from ._ripgrep import VCS_DIRS

__all__ = ["Entry", "Scanner", "entry_json", "entry_of_json", "open_below"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_MODE_BITS = 0o1777  # permission bits and sticky; set-id bits are never put back

HEAVY_DIRS = frozenset(
    {"node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)
"""Folders treated as ignored even without a `.gitignore` saying so: rebuilt, never edited."""


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Entry:
    """One path's state. Two entries are the same state when `same` says so (keys aside)."""

    kind: str
    """`file`, `link`, `dir`, `opaque` (an ignored folder, contents not kept) or `unkept`
    (a file too big to keep: its content cannot be put back)."""
    mode: int = 0
    blob: str = ""
    """The content's SHA-256 (files)."""
    target: str = ""
    """Where a symlink points (as written, never followed)."""
    size: int = 0
    key: tuple[int, ...] = field(default=(), compare=False)
    """(mtime_ns, ctime_ns, size, inode, mode): unchanged means not read again."""

    def same(self, other: Entry | None) -> bool:
        """Does `other` hold the same state (content, mode, target)?"""
        if other is None or other.kind != self.kind:
            return False
        if self.kind == "unkept":
            return self.key == other.key
        return (self.mode, self.blob, self.target) == (other.mode, other.blob, other.target)


def entry_json(entry: Entry) -> list[object]:
    """A compact JSON form: `[kind, mode, blob, target, size, key]`."""
    return [entry.kind, entry.mode, entry.blob, entry.target, entry.size, list(entry.key)]


def entry_of_json(value: list[object]) -> Entry:
    """The `Entry` of `entry_json`'s form (raises ValueError/TypeError on a bad one)."""
    kind, mode, blob, target, size, key = value
    if kind not in ("file", "link", "dir", "opaque", "unkept"):
        raise ValueError(f"unknown entry kind {kind!r}")
    return Entry(
        kind=str(kind),
        mode=int(mode),  # pyright: ignore[reportArgumentType]
        blob=str(blob),
        target=str(target),
        size=int(size),  # pyright: ignore[reportArgumentType]
        key=tuple(int(x) for x in cast(list[int], key)),
    )


def _key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


@dataclass
class _Ignore:
    """The `.gitignore` rules in force in one folder (its own and its parents')."""

    rules: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()

    def below(self, folder: str, dfd: int) -> _Ignore:
        """The rules for `folder`'s children: these plus its own `.gitignore`, if any.

        The file is read through the folder's handle `dfd`.
        """
        text = _read_small(".gitignore", dfd)
        if text is None:
            return self
        try:
            spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
        except Exception:  # a broken .gitignore ignores nothing
            return self
        return _Ignore((*self.rules, (folder, spec)))

    def ignores_dir(self, path: str) -> bool:
        verdict = False
        for base, spec in self.rules:
            rel = os.path.relpath(path, base)
            result = spec.check_file(rel + "/")
            if result.include is not None:
                verdict = result.include
        return verdict


def _read_small(name: str, dfd: int, limit: int = 1 << 20) -> str | None:
    """A small regular file of the folder `dfd`, as text; None if it is anything else.

    Never through a symlink, never blocking (a fifo, a terminal), at most `limit` bytes:
    a checkout decides what its files are, and must not stall or steer the scan.
    """
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=dfd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _open_dir(name: str, dfd: int | None) -> int:
    """A handle on the folder `name` (in `dfd`), refusing a symlink. Raises OSError."""
    return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=dfd)


def open_below(root: str | None, folder: str) -> int:
    """A handle on `folder`, opened from `root` down one real folder at a time.

    Raises OSError: ELOOP/ENOTDIR when a part is a symlink or not a folder, and EACCES when
    `folder` is not a plain path below `root` (no root, `..`, `.`, empty parts), so that no
    recorded path can lead up and out.
    """
    if root is None:
        raise PermissionError(errno.EACCES, "outside the tracked roots", folder)
    fd = _open_dir(root, None)
    try:
        rest = folder[len(root) :].strip("/")
        for part in rest.split("/") if rest else ():
            if part in ("", ".", ".."):
                raise PermissionError(errno.EACCES, "not a plain path", folder)
            nxt = _open_dir(part, fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


class Scanner:
    """Makes entries for paths under the tracked roots, storing new contents in the store.

    Every folder is opened through its parent's handle with `O_NOFOLLOW`, from the root down,
    and every entry is looked at and read relative to its folder's handle: a folder that a
    command swaps for a symlink at any moment is never read through.

    Args:
        roots: The folders tracked (the write roots).
        store: Where file contents go.
        skip: Absolute paths never entered or recorded (hidden paths, the state folder); the
            last part may be a glob.
        max_file_bytes: A bigger file is recorded as `unkept`.
        on_unkept: Told of each path recorded as `unkept`, with the reason.
    """

    def __init__(
        self,
        roots: Iterable[str],
        store: BlobStore,
        *,
        skip: Iterable[str] = (),
        max_file_bytes: int,
        on_unkept: Callable[[str, str], None],
    ) -> None:
        self.roots = tuple(dict.fromkeys(os.path.normpath(r) for r in roots))
        self.store = store
        self.skip = tuple(os.path.normpath(s) for s in skip)
        self._skip_set = frozenset(s for s in self.skip if not _is_glob(os.path.basename(s)))
        self._skip_globs = tuple(s for s in self.skip if _is_glob(os.path.basename(s)))
        self.max_file_bytes = max_file_bytes
        self.on_unkept = on_unkept
        self._ignore: dict[str, _Ignore] = {}

    # -- which paths are tracked -----------------------------------------------------------

    def root_of(self, path: str) -> str | None:
        """The tracked root holding `path`, or None."""
        for root in self.roots:
            if path == root or path.startswith(root.rstrip("/") + "/"):
                return root
        return None

    def skipped(self, path: str) -> bool:
        """Is `path` never recorded (a VCS folder, a hidden path, the state folder, outside)?"""
        root = self.root_of(path)
        if root is None:
            return True
        part = path
        # `path` or a folder above it (up to the root) is a VCS folder or a skipped path.
        while len(part) >= len(root):
            if self._skipped_child(part, os.path.basename(part)):
                return True
            parent = os.path.dirname(part)
            if parent == part:
                break
            part = parent
        return False

    def _skipped_child(self, path: str, name: str) -> bool:
        """`skipped` for an entry of a folder that is not skipped itself (a walk going down)."""
        if name in VCS_DIRS or path in self._skip_set:
            return True
        return any(fnmatch.fnmatchcase(path, g) for g in self._skip_globs)

    def _rules(self, folder: str, dfd: int | None = None) -> _Ignore:
        """The ignore rules for `folder`'s children (read once per folder)."""
        found = self._ignore.get(folder)
        if found is not None:
            return found
        root = self.root_of(folder)
        if root is None or folder == root:
            parent_rules = _Ignore()
        else:
            parent_rules = self._rules(os.path.dirname(folder))
        if dfd is not None:
            found = parent_rules.below(folder, dfd)
        else:
            try:
                own = self.open_folder(folder)
            except OSError:
                return parent_rules  # not a real folder now: nothing of its own applies
            try:
                found = parent_rules.below(folder, own)
            finally:
                os.close(own)
        self._ignore[folder] = found
        return found

    def forget_rules(self, folder: str) -> None:
        """A `.gitignore` in `folder` changed: its rules (and its children's) are read again."""
        prefix = folder.rstrip("/") + "/"
        for key in [k for k in self._ignore if k == folder or k.startswith(prefix)]:
            del self._ignore[key]

    def opaque(self, path: str) -> bool:
        """Is the folder at `path` ignored (contents not kept)?"""
        if self.root_of(path) == path:
            return False
        if os.path.basename(path) in HEAVY_DIRS:
            return True
        return self._rules(os.path.dirname(path)).ignores_dir(path)

    # -- folder handles --------------------------------------------------------------------

    def open_folder(self, folder: str) -> int:
        """A handle on `folder` (`open_below` from its root). Raises OSError."""
        return open_below(self.root_of(folder), folder)

    # -- making entries --------------------------------------------------------------------

    def entry(self, path: str, old: Entry | None) -> Entry | None:
        """The entry for `path` now.

        None: absent, not reachable as a real path, or not a kind kept. `old`'s content is
        reused when its stat key has not moved.
        """
        folder, name = os.path.split(path)
        if self.root_of(path) == path:
            folder, name = path, "."
        try:
            dfd = self.open_folder(folder)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return None  # a folder on the way is a symlink: never followed
            return self._unreadable(path, old, exc)
        try:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as exc:
                return self._unreadable(path, old, exc)
            return self.entry_from(path, name, st, dfd, old)
        finally:
            os.close(dfd)

    def _unreadable(self, path: str, old: Entry | None, exc: OSError) -> Entry | None:
        """A path that cannot be looked at now: its state is unknown, not what was known.

        Recorded as `unkept` (a restore puts a kept content back beside it, never over it).
        """
        if old is None:
            return None
        self.on_unkept(path, f"it cannot be read ({exc.strerror})")
        return Entry(kind="unkept", mode=old.mode, size=old.size, key=(-1, exc.errno or 0))

    def entry_from(
        self, path: str, name: str, st: os.stat_result, dfd: int, old: Entry | None
    ) -> Entry | None:
        """The entry of `name` in the folder `dfd`, whose lstat is `st`."""
        mode = st.st_mode
        key = _key(st)
        if old is not None and old.key == key and old.kind != "dir":
            return old
        perms = stat.S_IMODE(mode) & _MODE_BITS
        if stat.S_ISDIR(mode):
            # A folder once tracked stays tracked (a new ignore rule must not make its
            # recorded contents look deleted); an ignored one is looked at again by the caller
            # when a `.gitignore` changes.
            tracked = old is not None and old.kind == "dir"
            kind = "dir" if tracked or not self.opaque(path) else "opaque"
            return _one(Entry(kind=kind, mode=perms, key=key))
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(name, dir_fd=dfd)
            except OSError as exc:
                return self._unreadable(path, old, exc)
            return Entry(kind="link", target=target, key=key)
        if not stat.S_ISREG(mode):
            return None  # sockets, fifos, devices: not kept, not put back
        if st.st_size > self.max_file_bytes:
            self.on_unkept(path, f"{st.st_size} bytes, over the {self.max_file_bytes}-byte limit")
            return Entry(kind="unkept", mode=perms, size=st.st_size, key=key)
        return self._file(path, name, dfd, perms, key, old)

    def _file(
        self,
        path: str,
        name: str,
        dfd: int,
        perms: int,
        key: tuple[int, ...],
        old: Entry | None,
    ) -> Entry | None:
        try:
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return self._unreadable(path, old, exc) if old is not None else None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None  # swapped for something else since the lstat
            chunks: list[bytes] = []
            left = self.max_file_bytes + 1
            while left > 0:
                # The size it has first (one read, no big buffer made and shrunk for a small
                # file: with many threads those fragment the heap), then more if it grew.
                chunk = os.read(fd, min(left, st.st_size + 1 if not chunks else 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            # The key after the read: a file written meanwhile is read again at the next look.
            key = _key(os.fstat(fd))
        except OSError as exc:
            return self._unreadable(path, old, exc) if old is not None else None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > self.max_file_bytes:
            self.on_unkept(path, f"over the {self.max_file_bytes}-byte limit")
            return Entry(kind="unkept", mode=perms, size=len(data), key=key)
        digest = _shared(hashlib.sha256(data).hexdigest())
        if old is not None and old.kind == "file" and old.blob == digest and old.mode == perms:
            return _one(Entry(kind="file", mode=perms, blob=digest, size=len(data), key=key))
        try:
            self.store.put(digest, data)
        except StoreFull as exc:
            self.on_unkept(path, str(exc))
            return Entry(kind="unkept", mode=perms, size=len(data), key=key)
        return _one(Entry(kind="file", mode=perms, blob=digest, size=len(data), key=key))

    def walk(
        self,
        top: str,
        old: dict[str, Entry],
        out: dict[str, Entry],
        folders: list[str],
    ) -> None:
        """Record `top` and everything tracked below it into `out`.

        `folders` gets each non-opaque folder, for watching. Iterative (a tree of any depth),
        every folder opened through its parent's handle.
        """
        if self.skipped(top):
            return
        entry = self.entry(top, old.get(top))
        if entry is None:
            return
        out[top] = entry
        if entry.kind != "dir":
            return
        try:
            fd = self.open_folder(top)
        except OSError:
            return
        stack: list[tuple[str, int]] = [(top, fd)]
        while stack:
            folder, dfd = stack.pop()
            try:
                folders.append(folder)
                self._rules(folder, dfd)
                for name, st in _listing(dfd):
                    # Many sessions of one workspace each record it: one string per name.
                    path = sys.intern(os.path.join(folder, name))
                    if self._skipped_child(path, name):
                        continue
                    found = self.entry_from(path, name, st, dfd, old.get(path))
                    if found is None:
                        continue
                    out[path] = found
                    if found.kind != "dir":
                        continue
                    try:
                        sub = _open_dir(name, dfd)
                    except OSError as exc:
                        if exc.errno != errno.ENOENT:
                            # It cannot be listed (a `chmod 000`): what it held is unknown
                            # now, not what was known, so nothing there looks unchanged.
                            prefix = path + "/"
                            for below, was in old.items():
                                if below.startswith(prefix):
                                    out[below] = self._unreadable(below, was, exc) or was
                        continue
                    if os.fstat(sub).st_ino != st.st_ino:  # swapped since the listing
                        os.close(sub)
                        continue
                    stack.append((path, sub))
            finally:
                os.close(dfd)

    def walk_all(self, old: dict[str, Entry]) -> tuple[dict[str, Entry], list[str]]:
        """Every tracked path under every root, and the folders to watch."""
        out: dict[str, Entry] = {}
        folders: list[str] = []
        for root in self.roots:
            self.walk(root, old, out, folders)
        return out, folders


_DIGESTS: dict[str, str] = {}
_ENTRIES: weakref.WeakValueDictionary[tuple[object, ...], Entry] = weakref.WeakValueDictionary()
_ENTRIES_LOCK = threading.Lock()


def _one(entry: Entry) -> Entry:
    """The process's one `Entry` equal to this one, keys included.

    The sessions of a workspace each record the same versions of the same files, and need
    not each hold a copy.
    """
    token = (entry.kind, entry.mode, entry.blob, entry.target, entry.size, entry.key)
    with _ENTRIES_LOCK:
        found = _ENTRIES.get(token)
        if found is None:
            _ENTRIES[token] = found = entry
    return found


def _shared(digest: str) -> str:
    """One string per content hash in the process, whatever the number of sessions."""
    return _DIGESTS.setdefault(digest, digest)


def _listing(dfd: int) -> Iterator[tuple[str, os.stat_result]]:
    """The entries of the folder `dfd`, with their lstat (a folder that cannot be listed: none)."""
    try:
        listed = os.scandir(dfd)
    except OSError:
        return
    with listed as it:
        for item in it:
            try:
                yield item.name, item.stat(follow_symlinks=False)
            except OSError:
                continue


def _is_glob(name: str) -> bool:
    return any(c in name for c in "*?[")
