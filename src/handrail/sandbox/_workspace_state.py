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

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import pathspec

from ._checkpoint_store import BlobStore, StoreFull
from ._ripgrep import VCS_DIRS

__all__ = ["Entry", "Scanner", "entry_json", "entry_of_json"]

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_MODE_BITS = 0o1777  # permission bits and sticky; set-id bits are never put back

HEAVY_DIRS = frozenset(
    {"node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox"}
)
"""Folders treated as ignored even without a `.gitignore` saying so: rebuilt, never edited."""


@dataclass(frozen=True, slots=True)
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

    def below(self, folder: str) -> _Ignore:
        """The rules for `folder`'s children: these plus its own `.gitignore`, if any."""
        try:
            with open(os.path.join(folder, ".gitignore"), "rb") as f:
                text = f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
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


class Scanner:
    """Makes entries for paths under the tracked roots, storing new contents in the store.

    Args:
        roots: The folders tracked (the write roots).
        store: Where file contents go.
        skip: Absolute paths never entered or recorded (hidden paths, the state folder).
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
        self._skip_set = frozenset(self.skip)
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
        skip = self._skip_set
        part = path
        # `path` or a folder above it (up to the root) is a VCS folder or a skipped path.
        while len(part) >= len(root):
            if part in skip or os.path.basename(part) in VCS_DIRS:
                return True
            parent = os.path.dirname(part)
            if parent == part:
                break
            part = parent
        return False

    def _skipped_child(self, path: str, name: str) -> bool:
        """`skipped` for an entry of a folder that is not skipped itself (a walk going down)."""
        return name in VCS_DIRS or path in self._skip_set

    def _rules(self, folder: str) -> _Ignore:
        """The ignore rules for `folder`'s children (read once per folder)."""
        found = self._ignore.get(folder)
        if found is not None:
            return found
        root = self.root_of(folder)
        if root is None or folder == root:
            parent_rules = _Ignore()
        else:
            parent_rules = self._rules(os.path.dirname(folder))
        found = parent_rules.below(folder)
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

    # -- making entries --------------------------------------------------------------------

    def entry(self, path: str, old: Entry | None, *, reached: bool = False) -> Entry | None:
        """The entry for `path` now (None: absent or not a kind kept).

        `old`'s content is reused when its stat key has not moved. `reached`: the folders on
        the way were just seen to be real folders (a walk going down).
        """
        try:
            if not reached and not self._reachable(path):
                return None  # a folder on the way is a symlink: never followed
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:
            return old  # unreadable now: keep what was known
        return self.entry_from(path, st, old)

    def _reachable(self, path: str) -> bool:
        """Is every folder between `path`'s root and `path` a real folder (not a symlink)?

        `lstat` and `O_NOFOLLOW` only refuse a link as the last part: a folder that a command
        swapped for a link to elsewhere would be read through otherwise. Raises OSError.
        """
        root = self.root_of(path)
        if root is None:
            return False
        folder = os.path.dirname(path)
        while len(folder) > len(root):
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
            folder = os.path.dirname(folder)
        return True

    def entry_from(self, path: str, st: os.stat_result, old: Entry | None) -> Entry | None:
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
            return Entry(kind=kind, mode=perms, key=key)
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(path)
            except OSError:
                return old
            return Entry(kind="link", target=target, key=key)
        if not stat.S_ISREG(mode):
            return None  # sockets, fifos, devices: not kept, not put back
        if st.st_size > self.max_file_bytes:
            self.on_unkept(path, f"{st.st_size} bytes, over the {self.max_file_bytes}-byte limit")
            return Entry(kind="unkept", mode=perms, size=st.st_size, key=key)
        return self._file(path, perms, key, old)

    def _file(self, path: str, perms: int, key: tuple[int, ...], old: Entry | None) -> Entry | None:
        try:
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
        except OSError:
            return old
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return old  # swapped for something else since the lstat
            chunks: list[bytes] = []
            left = self.max_file_bytes + 1
            while left > 0:
                chunk = os.read(fd, min(left, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                left -= len(chunk)
            # The key after the read: a file written meanwhile is read again at the next look.
            key = _key(os.fstat(fd))
        except OSError:
            return old
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > self.max_file_bytes:
            self.on_unkept(path, f"over the {self.max_file_bytes}-byte limit")
            return Entry(kind="unkept", mode=perms, size=len(data), key=key)
        digest = hashlib.sha256(data).hexdigest()
        if old is not None and old.kind == "file" and old.blob == digest and old.mode == perms:
            return Entry(kind="file", mode=perms, blob=digest, size=len(data), key=key)
        try:
            self.store.put(digest, data)
        except StoreFull as exc:
            self.on_unkept(path, str(exc))
            return Entry(kind="unkept", mode=perms, size=len(data), key=key)
        return Entry(kind="file", mode=perms, blob=digest, size=len(data), key=key)

    def walk(
        self,
        top: str,
        old: dict[str, Entry],
        out: dict[str, Entry],
        folders: list[str],
        *,
        reached: bool = False,
    ) -> None:
        """Record `top` and everything tracked below it into `out`.

        `folders` gets each non-opaque folder, for watching.
        """
        if self.skipped(top):
            return
        entry = self.entry(top, old.get(top), reached=reached)
        if entry is None:
            return
        out[top] = entry
        if entry.kind != "dir":
            return
        folders.append(top)
        for path, st in _listing(top):
            if self._skipped_child(path, os.path.basename(path)):
                continue
            if stat.S_ISDIR(st.st_mode):
                self.walk(path, old, out, folders, reached=True)
                continue
            found = self.entry_from(path, st, old.get(path))
            if found is not None:
                out[path] = found

    def walk_all(self, old: dict[str, Entry]) -> tuple[dict[str, Entry], list[str]]:
        """Every tracked path under every root, and the folders to watch."""
        out: dict[str, Entry] = {}
        folders: list[str] = []
        for root in self.roots:
            self.walk(root, old, out, folders)
        return out, folders


def _listing(folder: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        with os.scandir(folder) as it:
            for item in it:
                try:
                    yield item.path, item.stat(follow_symlinks=False)
                except OSError:
                    continue
    except OSError:
        return


def is_folder(path: str | Path) -> bool:
    """A real folder (not a symlink to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
