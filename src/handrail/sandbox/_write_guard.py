"""What a command that may write still cannot change inside its write roots.

Planned in the parent, applied by `ChildSetup` in the command's mount namespace:
* every `.git` and `.handrail` inside a write root, at any depth (nested repositories, a
  submodule's `.git` file), is bound read-only. They are found with `find` (pruned at each
  match, symlinks not followed) once per session and write root, and looked for again after a
  command that ran git (which is how a new repository appears);
* a hidden path inside a write root cannot be moved out from under its cover: every folder
  between the root and it is pinned (bound onto itself; a mount point cannot be renamed or
  removed), and so is the hidden path itself (its cover). The same holds for the folders above
  a nested `.git` (no repository swapped for another by renaming its parent) and above a
  sealed folder;
* a hidden path that does not exist yet cannot be created. For handrail's built-in secret
  locations a stand-in is made first (an empty folder `0700`, or an empty file `0600` where
  the program reading it takes an empty file for none), which the command then finds covered
  like any other; where an empty file would not do (a JSON or XML file) its folder is made
  and sealed. For the paths a user added, whose kind is unknown, and for globs, the nearest
  existing folder is sealed: nothing new can be named in it (its entries stay as writable as
  they were).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..permissions._hidden import (
    HOME_SECRET_FOLDERS,
    HOME_SECRETS,
    HOME_SECRETS_FORMATTED,
    is_glob,
)
from ._programs import system_which
from ._read_view import within

__all__ = ["GitScan", "WriteGuard", "plan_write_guard"]

PROTECTED = (".git", ".handrail")
_FIND_TIMEOUT = 120.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteGuard:
    """The mounts that keep a writing command off protected paths."""

    readonly: tuple[str, ...] = ()
    """`.git` and `.handrail` entries inside the write roots, bound read-only."""
    pins: tuple[str, ...] = ()
    """Folders bound onto themselves so that they cannot be renamed or removed."""
    seals: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(folder, its entries): no new name can appear in the folder."""


@dataclass
class GitScan:
    """The `.git` / `.handrail` entries found under each write root, kept for a session."""

    found: dict[str, tuple[str, ...]] = field(default_factory=dict[str, tuple[str, ...]])

    def forget(self) -> None:
        """Look again at the next command (a command ran git, which may have made a repo)."""
        self.found.clear()

    def under(self, root: str) -> tuple[str, ...]:
        """The protected entries below `root` (found once, then remembered)."""
        hit = self.found.get(root)
        if hit is None:
            hit = self.found[root] = _find_protected(root)
        return hit


def _find_protected(root: str) -> tuple[str, ...]:
    """Every `.git` / `.handrail` below `root`, by `find` (about 4x faster than a walk here)."""
    if not os.path.isdir(root):
        return ()
    find = system_which("find")
    if find is not None:
        argv = [find, root, "(", "-name", ".git", "-o", "-name", ".handrail", ")"]
        try:
            done = subprocess.run(
                [*argv, "-print0", "-prune"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=_FIND_TIMEOUT,
                check=False,
            )
            return tuple(os.fsdecode(p) for p in done.stdout.split(b"\0") if p)
        except subprocess.TimeoutExpired:
            # A tree too big to walk in time: at least the top of the root is protected.
            logging.getLogger("handrail").warning(
                "looking for .git folders under %s took over %g s; only the top one is "
                "read-only to commands",
                root,
                _FIND_TIMEOUT,
            )
            return tuple(p for p in (os.path.join(root, n) for n in PROTECTED) if _lexists(p))
        except (OSError, subprocess.SubprocessError):
            pass
    out: list[str] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for e in entries:
                if e.name in PROTECTED:
                    out.append(e.path)
                elif e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return tuple(out)


def _kind(entry: str, home: str) -> str:
    """`folder`, `file`, `formatted` (a built-in file that must not be empty) or `unknown`."""
    rel = os.path.relpath(entry, home) if within(entry, home) else ""
    if rel in HOME_SECRET_FOLDERS or os.path.basename(entry) == "handrail":
        return "folder"
    if rel in HOME_SECRETS_FORMATTED:
        return "formatted"
    if rel in HOME_SECRETS:
        return "file"
    return "unknown"


def _lexists(path: str) -> bool:
    return os.path.lexists(path)


def _make_folders(path: str, stop: str) -> None:
    """Create `path` and its missing parents below `stop`, private to the user."""
    missing: list[str] = []
    while not _lexists(path) and within(path, stop) and path != stop:
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)


def _nearest_existing(path: str, stop: str) -> str:
    while not os.path.isdir(path) and path != stop and within(path, stop):
        path = os.path.dirname(path)
    return path


def _between(root: str, path: str) -> list[str]:
    """The folders strictly between `root` and `path`, outermost first."""
    parts = os.path.relpath(path, root).split("/")
    if parts == ["."]:
        return []
    return [os.path.join(root, *parts[:i]) for i in range(1, len(parts))]


def _entries(folder: str) -> tuple[str, ...]:
    """A sealed folder's entries that can be bound onto themselves (not symlinks)."""
    out: list[str] = []
    with contextlib.suppress(OSError), os.scandir(folder) as it:
        for e in it:
            if not e.is_symlink():
                out.append(e.path)
    return tuple(sorted(out))


def plan_write_guard(
    *,
    write_roots: Sequence[str],
    hidden: Sequence[str | Path],
    home: str,
    git: GitScan,
) -> WriteGuard:
    """Plan the read-only binds, pins and seals for a command that may write `write_roots`.

    Makes the stand-ins for missing built-in secret locations inside the roots (see the
    module docstring) before it plans, so that they are covered like what existed.
    """
    roots = [os.path.realpath(r) for r in write_roots if os.path.isdir(r)]
    readonly: list[str] = []
    pins: list[str] = []
    seals: list[str] = []
    for root in roots:
        for p in git.under(root):
            if os.path.islink(p):
                # A `.git` symlink: what it points to is protected where it lies in a root.
                p = os.path.realpath(p)
                if not any(within(p, r) for r in roots):
                    continue
            readonly.append(p)
            # Nor can a nested repository be swapped for another by renaming a folder above.
            pins += _between(root, p)
    for raw in map(str, hidden):
        root = next((r for r in roots if within(raw, r) and raw != r), None)
        if root is None:
            continue
        folder, name = os.path.split(raw)
        if is_glob(name):
            seals.append(_nearest_existing(folder, root))
            pins += _between(root, seals[-1])
            continue
        if not _lexists(raw):
            kind = _kind(raw, home)
            if kind == "folder":
                _make_folders(raw, root)
            elif kind == "file":
                _make_folders(folder, root)
                with contextlib.suppress(OSError):
                    os.close(
                        os.open(raw, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                    )
            elif kind == "formatted":
                _make_folders(folder, root)
        if not _lexists(raw) or os.path.islink(raw):
            # Still missing (or a symlink, which no mount can cover): no new name here, and
            # no folder on the way to it can be renamed to make the path anew elsewhere.
            seals.append(_nearest_existing(folder, root))
            pins += _between(root, seals[-1])
            continue
        pins += _between(root, raw)
    sealed = sorted(set(seals))
    pinned = [p for p in dict.fromkeys(pins) if p not in sealed]
    return WriteGuard(
        readonly=tuple(dict.fromkeys(readonly)),
        pins=tuple(pinned),
        seals=tuple((f, _entries(f)) for f in sealed),
    )
