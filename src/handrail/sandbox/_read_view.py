"""What a confined command may read: planned in the parent, applied by `Confinement` in the child.

A command sees the system (`/usr`, `/etc`, `/proc`, `/tmp`...), but not the user's home: an
empty tmpfs covers it, and only the paths it needs are bound back on top (the workspace, the
read and write roots, its private $TMPDIR, configured extra paths, and the toolchains its PATH
runs from). Then every hidden path the command could still reach (inside a bound-back folder, or
outside the home like `/etc/shadow`) is covered: an empty read-only tmpfs over a folder,
`/dev/null` over a file. Block devices the user can read are covered too, since reading a disk
directly would skip every mount.

Everything here runs before the fork and only looks (stat, realpath, listdir of `/dev`); the
child receives plain lists of paths.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..permissions._hidden import is_glob

__all__ = [
    "ReadView",
    "can_hide",
    "landlock_readable",
    "outermost",
    "plan_read_view",
    "toolchain_dirs",
    "within",
]

# A home that is, or holds, one of these is never covered: the system would vanish with it.
_SYSTEM = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix",
    "/opt",
    "/proc",
    "/run",
    "/sbin",
    "/snap",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
)
# Folders of a home shared by many programs: a toolchain inside them is bound back one level
# deeper (`~/.local/bin`, not `~/.local`, whose `share/keyrings` holds secrets).
_SHARED = frozenset({".local", ".config", ".cache", ".var", ".local/share", "Library"})
# A toolchain that needs a sibling folder to run: rustup's proxies in ~/.cargo/bin read
# ~/.rustup; scripts in ~/.local/bin import from ~/.local/lib.
_COMPANIONS = {".cargo": (".rustup",), ".local/bin": (".local/lib",)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadView:
    """The mounts that confine a command's reads, in the order they are made."""

    home: str | None
    """The folder covered by an empty tmpfs (None: not covered, e.g. it lies inside a root)."""
    binds: tuple[str, ...] = ()
    """Paths inside `home` bound back, outermost only (a bind carries what lies below it)."""
    make_dirs: tuple[str, ...] = ()
    """Folders to create in the tmpfs as mount points (parents first)."""
    make_files: tuple[str, ...] = ()
    """Empty files to create in the tmpfs as mount points for bound-back files."""
    cover_dirs: tuple[str, ...] = ()
    """Hidden folders the command could reach: each gets an empty read-only tmpfs."""
    cover_files: tuple[str, ...] = ()
    """Hidden files (and readable block devices) it could reach: `/dev/null` goes over each."""


def within(path: str, root: str) -> bool:
    """Is `path` `root` or inside it (normalised absolute paths, by components)?"""
    return path == root or path.startswith(root.rstrip("/") + "/")


def outermost(paths: Iterable[str]) -> list[str]:
    """Sorted, without the paths that lie inside another one."""
    out: list[str] = []
    for p in sorted(set(paths)):
        if not any(within(p, kept) for kept in out):
            out.append(p)
    return out


def can_hide(home: str) -> bool:
    """May `home` be covered? Not `/`, nothing that holds the system, nothing virtual."""
    if not os.path.isabs(home) or os.path.normpath(home) == "/":
        return False
    if any(within(home, v) for v in ("/proc", "/sys", "/dev")):
        return False
    return not any(within(s, home) for s in _SYSTEM)


@functools.lru_cache(maxsize=8)
def toolchain_dirs(path_env: str, home: str) -> tuple[str, ...]:
    """The folders under `home` that the PATH entries living there need, to be bound back.

    A PATH folder inside a virtual environment brings the environment; otherwise the folder's
    top-level ancestor under `home` comes along (`~/.pyenv/shims` -> `~/.pyenv`), one level
    deeper inside shared folders (`~/.local/bin`, plus `~/.local/lib` for its imports), with
    the companions a toolchain needs (`~/.cargo` -> `~/.rustup`). Entries outside `home`, the
    home itself and missing folders give nothing.

    Cached per (PATH, home): resolving a dozen PATH entries costs about half a millisecond,
    and toolchains do not move while a process runs.
    """
    home = os.path.realpath(home)
    out: list[str] = []
    for entry in path_env.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        real = os.path.realpath(entry)
        if real == home or not within(real, home) or not os.path.isdir(real):
            continue
        venv = os.path.dirname(real)
        if os.path.isfile(os.path.join(venv, "pyvenv.cfg")) and venv != home:
            out.append(venv)
            continue
        rel = os.path.relpath(real, home).split("/")
        take = 1
        while take < len(rel) and "/".join(rel[:take]) in _SHARED:
            take += 1
        top = "/".join(rel[:take])
        out.append(os.path.join(home, top))
        for companion in _COMPANIONS.get(top, ()):
            path = os.path.join(home, companion)
            if os.path.isdir(path):
                out.append(path)
    return tuple(dict.fromkeys(out))


_VENV_NAMES = (".venv", "venv", "env")


def venv_bases(folders: Sequence[str], home: str) -> tuple[str, ...]:
    """The interpreters under `home` that virtual environments in `folders` are built on.

    A venv's `python` is a symlink to its base interpreter (`home =` in `pyvenv.cfg`), which
    may live under the hidden home (pyenv, a uv-managed Python in `~/.local/share/uv`): that
    installation is bound back. Looked for: each folder itself, and its `.venv`, `venv` and
    `env` folders (a few failed opens per call, not cached: a venv can appear mid-session).
    """
    home = os.path.realpath(home)
    out: list[str] = []
    for folder in folders:
        for venv in (folder, *(os.path.join(folder, n) for n in _VENV_NAMES)):
            base = _venv_home(os.path.join(venv, "pyvenv.cfg"))
            if base is None:
                continue
            real = os.path.realpath(base)
            # `home` names the interpreter's bin folder: bind its installation.
            install = os.path.dirname(real) if os.path.basename(real) == "bin" else real
            if within(install, home) and install != home:
                out.append(install)
    return tuple(dict.fromkeys(out))


def _venv_home(cfg: str) -> str | None:
    try:
        with open(cfg, encoding="utf-8", errors="replace") as f:
            text = f.read(4096)
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "home" and os.path.isabs(value.strip()):
            return value.strip()
    return None


def _existing(paths: Iterable[str]) -> list[tuple[str, bool]]:
    """(path, is a folder) for the hidden paths that exist.

    Globs are expanded; symlinks are skipped (their targets are entries of their own).
    """
    out: list[tuple[str, bool]] = []
    for text in paths:
        folder, name = os.path.split(text)
        names = [text]
        if is_glob(name):
            try:
                names = [os.path.join(folder, n) for n in fnmatch.filter(os.listdir(folder), name)]
            except OSError:
                continue
        for path in names:
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if not stat.S_ISLNK(mode):
                out.append((path, stat.S_ISDIR(mode)))
    return out


@functools.lru_cache(maxsize=32)
def _reachable(hidden: tuple[str, ...], top: str | None, binds: tuple[str, ...]) -> tuple[str, ...]:
    """The hidden entries a command could reach.

    Those outside the covered home, or inside (or on the way to) a bound-back path. Cached: a
    session plans the same view for every command.
    """
    if top is None:
        return hidden
    inside = tuple(b + "/" for b in binds)
    return tuple(
        h
        for h in hidden
        if not within(h, top)
        or h in binds
        or h.startswith(inside)
        or any(b.startswith(h + "/") for b in binds)
    )


_devices: tuple[int, tuple[str, ...]] | None = None


def readable_block_devices() -> tuple[str, ...]:
    """Block devices in /dev this process could read (root: all of them); cached per /dev mtime."""
    global _devices
    try:
        mtime = os.stat("/dev").st_mtime_ns
    except OSError:
        return ()
    if _devices is not None and _devices[0] == mtime:
        return _devices[1]
    found: list[str] = []
    try:
        with os.scandir("/dev") as entries:
            for entry in entries:
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    continue
                if stat.S_ISBLK(mode) and os.access(entry.path, os.R_OK):
                    found.append(entry.path)
    except OSError:
        return ()
    _devices = (mtime, tuple(sorted(found)))
    return _devices[1]


def plan_read_view(
    *,
    home: str | None,
    visible: Sequence[str | Path],
    hidden: Sequence[str | Path],
) -> ReadView:
    """Plan the mounts that hide `home` except `visible`, then cover `hidden` where reachable.

    Args:
        home: The user's home; not covered when it lies inside a visible path, holds the
            system (`can_hide`), or is missing.
        visible: Paths the command needs (roots, $TMPDIR, extra read and write paths,
            `toolchain_dirs`), absolute and resolved (symlinks followed); missing ones are
            skipped.
        hidden: The hidden set (`permissions.hidden_paths`); globs are expanded now.
    """
    shown = [os.path.normpath(v) for v in map(str, dict.fromkeys(visible)) if os.path.exists(v)]
    top = os.path.realpath(home) if home else None
    if (
        top is None
        or not can_hide(top)
        or not os.path.isdir(top)
        or any(within(top, v) for v in shown)
    ):
        top = None
    binds: list[str] = []
    dirs: list[str] = []
    files: list[str] = []
    if top is not None:
        binds = outermost(v for v in shown if within(v, top) and v != top)
        for bind in binds:
            parts = os.path.relpath(bind, top).split("/")
            for depth in range(1, len(parts)):
                folder = os.path.join(top, *parts[:depth])
                if folder not in dirs:
                    dirs.append(folder)
            (dirs if os.path.isdir(bind) else files).append(bind)

    # Decided on the names first: most entries lie in the covered home and need no stat.
    found = dict(_existing(_reachable(tuple(map(str, hidden)), top, tuple(binds))))
    covers = outermost(found)
    cover_dirs = [p for p in covers if found[p]]
    cover_files = [p for p in covers if not found[p]]
    cover_files += [d for d in readable_block_devices() if not any(within(d, c) for c in covers)]
    return ReadView(
        home=top,
        binds=tuple(binds),
        make_dirs=tuple(dirs),
        make_files=tuple(files),
        cover_dirs=tuple(cover_dirs),
        cover_files=tuple(cover_files),
    )


def landlock_readable(view: ReadView) -> list[str]:
    """The paths Landlock lets a command read so that what `view` hides stays unreadable.

    For machines where no mount namespace can be made. Landlock only grants, beneath a path,
    so every folder on the way to something hidden is split into its entries, each granted
    unless it is hidden (`/`, then `/etc`, the home's parents...); symlinks get no grant (what
    they point to is judged where it lives). Only file contents are confined this way: folder
    listings still show the names.
    """
    covers = (*view.cover_dirs, *view.cover_files)
    hidden = ((view.home,) if view.home else ()) + covers
    edges = (*hidden, *view.binds)

    def readable(path: str) -> bool:
        if any(within(path, c) for c in covers):
            return False
        if view.home and within(path, view.home):
            return any(within(path, b) for b in view.binds)
        return True

    if not hidden:
        return ["/"]
    out: list[str] = []
    pending = ["/"]
    while pending:  # only folders with something hidden or bound back inside are listed
        folder = pending.pop()
        try:
            with os.scandir(folder) as entries:
                found = [(e.path, e.is_symlink(), e.is_dir(follow_symlinks=False)) for e in entries]
        except OSError:
            continue
        for path, link, is_dir in found:
            if link:
                continue
            if is_dir and any(e != path and within(e, path) for e in edges):
                pending.append(path)
            elif readable(path):
                out.append(path)
    return sorted(out)
