"""What a confined command sees of the rest of the machine: only its own session.

Planned in the parent, applied by `ChildSetup` in the command's mount namespace:
* `/tmp` is the session's own temporary folder (the shell's `$TMPDIR`), so what a command
  leaves there is there for the session's next command, and nothing of other sessions or other
  programs (their spilled results, temporary files, tmux or X sockets) is. Paths the command
  needs that lie under the host's `/tmp` (a workspace there, the session's results folder,
  read-only) are bound back at their own paths, on mount points made in the session's folder;
* `/run` is an empty tmpfs (the D-Bus buses, the user's runtime folder, container and database
  sockets), but for the resolver's files and the sockets the user allowed;
* `/var/tmp` is empty, and `/dev` holds only `null`, `zero`, `full`, `random`, `urandom`,
  `tty` and an empty `shm`: no other terminal to read keystrokes from, no disk, no loop device;
* every other Unix socket a program is listening on (`/proc/net/unix`) outside the session's
  own folders is covered by `/dev/null`, unless the user allowed it.
A fresh procfs (PID 1's, see `_child.py`) completes the picture: no other process's command
line, environment or descriptors.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from ._child import Isolation
from ._read_view import outermost, within

__all__ = ["listening_sockets", "plan_isolation", "prepare_tmp"]

_TMP = "/tmp"
_RUN = "/run"
_SHARED_EMPTY = ("/var/tmp",)
_DEV_NODES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
_RESOLVER = ("/etc/resolv.conf", "/etc/hosts")


def _real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def listening_sockets() -> list[str]:
    """Paths of the Unix sockets programs listen on, from `/proc/net/unix`."""
    try:
        with open("/proc/net/unix", "rb") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    out: list[str] = []
    for line in lines:
        fields = line.split(maxsplit=7)
        if len(fields) == 8 and fields[7].startswith(b"/"):
            out.append(os.fsdecode(fields[7]))
    return out


def plan_isolation(
    *,
    tmp: Path | str | None,
    visible: Sequence[str],
    own: Sequence[str],
    results: Path | str | None = None,
    allow_sockets: Sequence[str] = (),
    covered: Sequence[str] = (),
) -> Isolation:
    """Plan what the command sees of `/tmp`, `/run`, shared folders and other sockets.

    Args:
        tmp: The session's own temporary folder, mounted at `/tmp` (None: `/tmp` unchanged).
        visible: Resolved paths the command must still see (roots, cwd, extra paths).
        own: The session's own folders: sockets inside them stay reachable.
        results: The session's results folder, bound back read-only where it lies under
            `/tmp`.
        allow_sockets: Sockets (or folders of sockets) the user allows commands to reach.
        covered: Folders the read view covers already (the home): sockets there need nothing.
    """
    allowed = [os.path.realpath(p) for p in allow_sockets]
    shown = [os.path.normpath(v) for v in visible]
    private_tmp = None
    binds: list[tuple[str, str, bool]] = []
    real_tmp = os.path.realpath(tmp) if tmp is not None else None
    if (
        real_tmp is not None
        and _real_dir(_TMP)
        # A root that holds /tmp, or the session's folder itself, keeps the host's /tmp.
        and not any(within(_TMP, v) or (v != real_tmp and within(real_tmp, v)) for v in shown)
    ):
        private_tmp = real_tmp
        wanted = [v for v in shown if within(v, _TMP)]
        wanted += [a for a in allowed if within(a, _TMP) and os.path.exists(a)]
        extra = os.path.realpath(results) if results is not None else None
        if extra is not None and not within(extra, _TMP):
            extra = None  # elsewhere it stays where it is (or hidden, in handrail's state)
        for src in outermost([*wanted, *([extra] if extra else [])]):
            if within(src, private_tmp) or within(private_tmp, src) or not os.path.exists(src):
                continue
            binds.append((src, os.path.join(_TMP, os.path.relpath(src, _TMP)), src == extra))
    run = _real_dir(_RUN) and not any(within(_RUN, v) for v in shown)
    keep: list[str] = []
    if run:
        resolver = [os.path.realpath(p) for p in _RESOLVER]
        candidates = [
            *(p for p in resolver if within(p, _RUN)),
            *(v for v in shown if within(v, _RUN)),
            *(a for a in allowed if within(a, _RUN)),
        ]
        keep = [p for p in outermost(candidates) if p != _RUN and os.path.exists(p)]
    empty = [d for d in _SHARED_EMPTY if _real_dir(d) and not any(within(v, d) for v in [*shown])]
    dev: tuple[str, ...] = ()
    if _real_dir("/dev") and not any(within(v, "/dev") for v in shown):
        dev = tuple(d for d in _DEV_NODES if os.path.exists(d))
    gone = [
        *([_TMP] if private_tmp else []),
        *([_RUN] if run else []),
        *(["/dev"] if dev else []),
        *empty,
        *covered,
    ]
    mine = [os.path.normpath(p) for p in own]
    sockets: list[str] = []
    for sock in dict.fromkeys(listening_sockets()):
        if any(within(sock, m) for m in mine):
            continue
        # Under a covered folder it is out of sight, unless a path bound back shows it.
        if any(within(sock, g) for g in gone) and not any(within(sock, v) for v in shown):
            continue
        if any(within(sock, a) for a in allowed):
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(sock).st_mode):
                sockets.append(sock)
    return Isolation(
        dev=dev,
        tmp=private_tmp,
        tmp_binds=tuple(binds),
        run=run,
        run_keep=tuple(keep),
        empty=tuple(empty),
        sockets=tuple(sockets),
    )


def prepare_tmp(plan: Isolation) -> None:
    """Make the mount points of `plan.tmp_binds` inside the session's temporary folder.

    They live in the folder the command can change: each component is checked (a real
    folder, not a symlink a command planted) and made again when it is not.
    """
    if plan.tmp is None:
        return
    for source, target, _ in plan.tmp_binds:
        rel = os.path.relpath(target, _TMP).split("/")
        folder = plan.tmp
        for i, name in enumerate(rel):
            path = os.path.join(folder, name)
            last = i == len(rel) - 1
            want_dir = not last or os.path.isdir(source)
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and (stat.S_ISDIR(mode) if want_dir else stat.S_ISREG(mode)):
                folder = path
                continue
            if mode is not None:
                _remove(path, mode)
            if want_dir:
                os.mkdir(path, 0o700)
            else:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            folder = path


def _remove(path: str, mode: int) -> None:
    if stat.S_ISDIR(mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)
