"""File contents kept for checkpoints: one file per distinct content, named by its SHA-256.

The store lives in handrail's private state folder (hidden from every tool), one per workspace
and shared by its sessions, so a content kept once is never kept again. Blobs are written to a
temporary name and renamed, so a reader never sees half of one; a blob whose bytes do not hash
to its name (a crash, a disk error) is refused when read. The store has a size limit: past it,
new contents are not kept and the caller is told so (`StoreFull`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import time
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MAX_OBJECTS", "BlobStore", "StoreFull", "private_folder"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


MAX_OBJECTS = 250_000
"""The most contents one store keeps: a command making many small files cannot fill a disk's
inodes through the store."""
_BLOCK = 4096


def private_folder(path: Path) -> None:
    """Make `path` and its missing parents, each private to the user (0700)."""
    missing: list[Path] = []
    here = path
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            pass


def _on_disk(size: int) -> int:
    """What a content of `size` bytes takes on disk, at least: whole blocks, one at least."""
    return max(_BLOCK, -(-size // _BLOCK) * _BLOCK)


class StoreFull(Exception):
    """The store is at its size limit: this content is not kept."""


class BlobStore:
    """Content-addressed files under `folder/objects/`.

    Args:
        folder: The store's folder (created private to the user).
        max_bytes: The most the store may hold; a content that would pass it is refused.
    """

    def __init__(self, folder: Path, *, max_bytes: int) -> None:
        self.folder = folder
        self.objects = folder / "objects"
        self.max_bytes = max_bytes
        self._size: int | None = None
        self._count = 0
        self._known: set[str] = set()

    def _path(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest[2:]

    def size(self) -> int:
        """Bytes held on disk (counted once per process, then kept up to date)."""
        if self._size is None:
            total = count = 0
            if self.objects.is_dir():
                for sub in self.objects.iterdir():
                    with contextlib.suppress(OSError):
                        for blob in sub.iterdir():
                            with contextlib.suppress(OSError):
                                st = blob.lstat()
                                total += max(st.st_blocks * 512, _on_disk(st.st_size))
                                count += 1
            self._size, self._count = total, count
        return self._size

    def has(self, digest: str) -> bool:
        if digest in self._known:
            return True
        found = self._path(digest).is_file()
        if found:
            self._known.add(digest)
        return found

    def put(self, digest: str, data: bytes) -> None:
        """Keep `data` under `digest` (its SHA-256); nothing happens if it is already kept."""
        if self.has(digest):
            return
        if self.size() + _on_disk(len(data)) > self.max_bytes:
            raise StoreFull(f"the checkpoint store is full ({self.max_bytes} bytes)")
        if self._count >= MAX_OBJECTS:
            raise StoreFull(f"the checkpoint store is full ({MAX_OBJECTS} contents)")
        target = self._path(digest)
        private_folder(target.parent)
        tmp = target.parent / f".{digest[2:]}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, target)
        self._known.add(digest)
        if self._size is not None:
            self._size += _on_disk(len(data))
            self._count += 1

    def get(self, digest: str) -> bytes | None:
        """The content kept under `digest`, or None if it is missing or damaged."""
        try:
            fd = os.open(self._path(digest), os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                data = f.read()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        return data

    def sweep(self, keep: Iterable[str], *, min_age: float = 0.0) -> int:
        """Remove every blob not in `keep` and older than `min_age` seconds.

        Returns the bytes freed.
        """
        wanted = set(keep)
        freed = 0
        if not self.objects.is_dir():
            return 0
        cutoff = time.time() - min_age
        for sub in self.objects.iterdir():
            with contextlib.suppress(OSError):
                for blob in sub.iterdir():
                    digest = sub.name + blob.name
                    if digest in wanted or blob.name.startswith("."):
                        continue
                    with contextlib.suppress(OSError):
                        st = blob.lstat()
                        if st.st_mtime > cutoff:
                            continue  # a running session may have kept it a moment ago
                        blob.unlink()
                        freed += max(st.st_blocks * 512, _on_disk(st.st_size))
                        self._known.discard(digest)
                        self._count = max(0, self._count - 1)
        if self._size is not None:
            self._size = max(0, self._size - freed)
        return freed
