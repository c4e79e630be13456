"""OS confinement for shell commands on Linux: Landlock for writes, namespaces for the rest.

A confined command and every process it starts:
* can write only inside its write roots, a private temporary folder and a few devices
  (`/dev/null`...): Landlock, which the kernel enforces on the whole tree and which cannot be
  undone from inside. A command nobody approved gets no write roots at all: its temporary
  folder is all it can write;
* cannot change a `.git` or `.handrail` at any depth of a write root, move a hidden path out
  from under its cover, or create one that does not exist yet (`_write_guard.py` plans the
  read-only binds, pinned and sealed folders; Landlock grants are inherited downward and
  cannot carve a read-only hole into a writable root, mounts can);
* cannot change the metadata (times, mode, owner, ACLs and other extended attributes) of
  anything outside the write roots and its temporary folder, which Landlock does not cover:
  in the same mount namespace every mount is made read-only (`mount_setattr`, Linux 5.12)
  but for the write roots, each bound onto itself first. Creating a file outside the roots
  fails with EROFS ("Read-only file system") before Landlock's EACCES is reached. Without a
  mount namespace (Landlock only, or a kernel without `mount_setattr`:
  `SandboxSupport.keeps_metadata`) and for unconfined commands, metadata outside the roots is
  not protected;
* with a `ReadView`, cannot read the user's home beyond what it needs, nor any hidden path:
  in the same mount namespace the home is covered by an empty tmpfs, the needed paths are
  cloned back on top (`open_tree` + `move_mount`), and hidden paths it could still reach are
  covered (`_read_view.py` plans it). Without mount namespaces, Landlock confines reading
  files the same way (names stay listable);
* sees only its own session (`_isolation.py`): a /proc of its own, the session's folder at
  /tmp, empty /run and /var/tmp, a /dev of a few nodes, no other program's Unix socket, its
  own IPC and UTS namespaces; Landlock's scopes (ABI 6) keep it from abstract sockets and from
  signalling outside, and a seccomp filter (`_seccomp.py`) from the keyrings and vsock;
* as root, keeps only the capabilities acting on its own files needs;
* has no network unless allowed: a new network namespace with only a loopback interface (or,
  without namespaces, Landlock's TCP rules, which leave UDP open);
* lives in its own PID namespace whose PID 1 runs the command: when PID 1 ends, the kernel
  kills whatever is left, and killing the namespace's members reaches processes that left the
  process group (setsid, double fork);
* dies with handrail: its supervisor gets a parent-death signal (`_child.py`: the setup's own
  process, which forked PID 1; `_parent_death.py`: a supervisor shell where there is no
  namespace, which kills every process below it).

Namespaces are created directly as root, or inside a new user namespace otherwise. The setup
runs in the child between fork and exec (`preexec_fn`, `_child.py`) through functions bound
before the fork, so it allocates little and takes no locks another thread could hold.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
import struct
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._child import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUTS,
    ChildSetup,
    Isolation,
    errno_error,
    libc,
)
from ._parent_death import DEATH_SIGNAL, ParentDeath, init_argv, supervised_argv
from ._programs import system_which
from ._read_view import ReadView, landlock_readable
from ._seccomp import seccomp_filter
from ._write_guard import WriteGuard

__all__ = [
    "Confinement",
    "SandboxSupport",
    "namespace_members",
    "sandbox_support",
]

_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

# Landlock filesystem rights that change something (reads and execution stay unrestricted,
# except reading files under a `ReadView` where no mount namespace can hide them).
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_ANY = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_FS_REFER = 1 << 13  # ABI 2: rename/link across folders
_FS_TRUNCATE = 1 << 14  # ABI 3
_FS_IOCTL_DEV = 1 << 15  # ABI 5: ioctl on a device (a terminal's, a loop device's...)
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1

_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1  # ABI 6
_LANDLOCK_SCOPE_SIGNAL = 2

# Capabilities that read around a mount view: open_by_handle_at (DAC_READ_SEARCH), raw I/O and
# /proc/kcore (SYS_RAWIO), new device nodes (MKNOD), kernel code (SYS_MODULE), kernel memory
# through BPF and perf (SYS_ADMIN, which also allows both, PERFMON, BPF).
_READ_AROUND_CAPS = (2, 16, 17, 21, 27, 38, 39)

# Writable devices: discarding output and reading zeros must keep working.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
PROTECTED = (".git", ".handrail")

_libc = libc
_errno_error = errno_error
SIGKILL = signal.SIGKILL


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is missing or disabled."""
    if _libc is None or not hasattr(_libc, "syscall"):
        return 0
    version = int(
        _libc.syscall(
            _SYS_LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
        )
    )
    return max(version, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSupport:
    """What this machine offers for confining commands."""

    landlock: int
    """Landlock ABI version (0: none). Without it, writes cannot be confined."""
    namespaces: bool
    """PID, mount and network namespaces can be created (as root or in a user namespace)."""
    user_namespace: bool
    """The namespaces need a user namespace first (not running as root)."""
    reason: str = ""
    """Why confinement is unavailable, when it is."""
    hides_paths: bool = False
    """A command's mount namespace can hide folders (tmpfs, subtrees cloned back on top), so
    its reads can be confined to what it needs."""
    keeps_metadata: bool = False
    """A command's mount namespace can make every mount but the write roots read-only, so it
    cannot change times, modes or owners outside them (Landlock alone does not stop that)."""
    fresh_proc: bool = False
    """A command's PID namespace gets a /proc of its own: it sees no other process."""

    @property
    def available(self) -> bool:
        """Writes can be confined (the minimum handrail calls a sandbox)."""
        return self.landlock > 0

    @property
    def mechanism(self) -> str:
        """A short label for results and logs."""
        if not self.available:
            return "none"
        return "landlock+namespaces" if self.namespaces else "landlock"


_support: SandboxSupport | None = None


def sandbox_support(*, refresh: bool = False) -> SandboxSupport:
    """Probe (once) what confinement this machine allows, by starting a confined `true`."""
    global _support
    if _support is not None and not refresh:
        return _support
    abi = landlock_abi()
    needs_userns = os.geteuid() != 0
    namespaces = hides = keeps = fresh = False
    reason = ""
    if _libc is None or not hasattr(_libc, "unshare"):
        reason = "not Linux: no Landlock or namespaces"
    else:
        namespaces = _probe_namespaces(needs_userns)
        hides = namespaces and _probe_namespaces(needs_userns, hide=True)
        keeps = namespaces and _probe_namespaces(needs_userns, read_only=True)
        fresh = namespaces and _probe_namespaces(needs_userns, read_only=keeps, fresh_proc=True)
        if abi == 0:
            reason = (
                "the kernel has no Landlock (Linux 5.13 or later with Landlock enabled, e.g. "
                "`lsm=landlock,...` on the kernel command line)"
            )
    _support = SandboxSupport(
        landlock=abi,
        namespaces=namespaces,
        user_namespace=needs_userns,
        reason=reason,
        hides_paths=hides,
        keeps_metadata=keeps,
        fresh_proc=fresh,
    )
    return _support


def _probe_namespaces(
    needs_userns: bool, *, hide: bool = False, read_only: bool = False, fresh_proc: bool = False
) -> bool:
    """Start a `true` in new namespaces.

    `hide`: through a small view; `read_only`: every mount read-only; `fresh_proc`: as PID 1
    of its namespace, with a /proc of its own, below a supervisor (`ChildSetup`).
    """
    true = system_which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="handrail-probe-") as folder:
        view = None
        if hide:
            keep, secret = os.path.join(folder, "keep"), os.path.join(folder, "keep", "secret")
            os.makedirs(os.path.join(secret, "inner"))
            view = ReadView(home=folder, binds=(keep,), make_dirs=(keep,), cover_dirs=(secret,))
        setup = ChildSetup(
            userns=needs_userns,
            uid=os.geteuid(),
            gid=os.getegid(),
            flags=CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET,
            view=view,
            writable=(os.fsencode(folder),) if read_only else None,
            fork_init=fresh_proc,
        )
        try:
            done = subprocess.run(
                [true],
                preexec_fn=setup,
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return False
    return done.returncode == 0


def _write_rights(abi: int) -> int:
    rights = _FS_WRITE_FILE | _FS_REMOVE_DIR | _FS_REMOVE_FILE | _FS_MAKE_ANY
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    return rights


def _ruleset(
    abi: int,
    writable: Sequence[str],
    devices: Sequence[str],
    block_tcp: bool,
    readable: Sequence[str] | None = None,
) -> int:
    """A Landlock ruleset fd granting writes under `writable` (and to `devices`) only.

    With `readable`, reading files is confined as well: only beneath those paths.
    """
    assert _libc is not None
    rights = _write_rights(abi)
    handled = rights | (_FS_READ_FILE if readable is not None else 0)
    if abi >= 5:
        handled |= _FS_IOCTL_DEV  # granted nowhere: no command drives a device
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if block_tcp and abi >= 4 else 0
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net (ABI 4), scoped (ABI 6).
    # Scoped: no signal to a process outside the sandbox, no connection to an abstract Unix
    # socket made outside it (an abstract socket has no path for the mounts to cover).
    if abi >= 6:
        scoped = _LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | _LANDLOCK_SCOPE_SIGNAL
        attr = struct.pack("QQQ", handled, net, scoped)
    elif abi >= 4:
        attr = struct.pack("QQ", handled, net)
    else:
        attr = struct.pack("Q", handled)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = int(
        _libc.syscall(
            _SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)
        )
    )
    if fd < 0:
        raise _errno_error("landlock_create_ruleset")
    try:
        for path, access in [
            *((p, rights) for p in writable),
            *((d, _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)) for d in devices),
            *((p, _FS_READ_FILE) for p in readable or ()),
        ]:
            try:
                target = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a missing extra path or device grants nothing
            try:
                is_dir = os.path.isdir(f"/proc/self/fd/{target}")
                # struct landlock_path_beneath_attr is packed: u64 allowed_access, s32 parent_fd.
                rule = ctypes.create_string_buffer(
                    struct.pack("=Qi", access if is_dir else access & _file_rights(abi), target),
                    12,
                )
                if _libc.syscall(_SYS_LANDLOCK_ADD_RULE, fd, _LANDLOCK_RULE_PATH_BENEATH, rule, 0):
                    raise _errno_error(f"landlock_add_rule {path}")
            finally:
                os.close(target)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _file_rights(abi: int) -> int:
    # Rights that make sense on a file (the others apply to folders only).
    return _FS_READ_FILE | _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)


class Confinement:
    """One command's sandbox: the argv to run and the setup to apply between fork and exec.

    With `filesystem=False` only process control remains: the command still gets its own PID
    namespace (when the machine allows one) so that nothing it starts can outlive it, but
    writes and network are not restricted. Use as a context manager around the spawn; the
    Landlock ruleset fd is closed on exit.

    A command approved by nobody gets no `write_roots` and no `extra_write`: it can write only
    its `temp_dir` (`$TMPDIR`, mounted at `/tmp` with an `isolation` plan).
    """

    def __init__(
        self,
        *,
        write_roots: Sequence[Path] = (),
        temp_dir: Path | None = None,
        network: bool = False,
        extra_write: Sequence[str] = (),
        filesystem: bool = True,
        support: SandboxSupport | None = None,
        view: ReadView | None = None,
        guard: WriteGuard | None = None,
        isolation: Isolation | None = None,
    ) -> None:
        self.support = support or sandbox_support()
        if filesystem and not self.support.available:
            raise OSError(f"no OS sandbox on this machine: {self.support.reason}")
        self.filesystem = filesystem
        self.write_roots = tuple(write_roots)
        self.network = network or not filesystem
        ns = self.support.namespaces
        self._fd = -1
        netns = -1
        readonly: list[bytes] = []
        writable_mounts: list[bytes] | None = None
        flags = CLONE_NEWPID if ns else 0
        if ns and filesystem:
            # No System V shared memory, semaphores or message queues of the host's, and a
            # hostname of its own to change.
            flags |= CLONE_NEWIPC | CLONE_NEWUTS
        # Reads are confined by mounts where a mount namespace can hide paths, else by
        # Landlock (file contents only); callers report `reads_by`.
        hides = filesystem and view is not None and ns and self.support.hides_paths
        readable = None
        if filesystem and view is not None and not hides:
            readable = landlock_readable(view)
        self.reads_by: Literal["mounts", "landlock"] | None = (
            "mounts" if hides else "landlock" if readable is not None else None
        )
        """How the command's reads are confined: `mounts` (it cannot see what is hidden),
        `landlock` (it cannot read hidden files, but folder listings show their names), or
        None (it reads what the user can)."""
        mounts = filesystem and ns
        self.fresh_proc = mounts and self.support.fresh_proc
        """The command's PID namespace has a /proc of its own: no other process shows."""
        self.isolation = isolation if mounts and self.support.hides_paths else None
        """What the command sees of `/tmp`, `/run` and other programs' sockets (None: all)."""
        if filesystem:
            writable = [str(r) for r in self.write_roots] + [*extra_write]
            if temp_dir is not None:
                writable.append(str(temp_dir))
            self._fd = _ruleset(
                self.support.landlock, writable, _DEVICES, not network and not ns, readable
            )
            if ns:
                flags |= CLONE_NEWNS
                if not network:
                    netns = _shared_netns(self.support)
                    if netns < 0:
                        flags |= CLONE_NEWNET
                if self.support.keeps_metadata:
                    # A missing extra path grants nothing (as in the ruleset); the others exist.
                    writable_mounts = [os.fsencode(p) for p in writable if os.path.exists(p)]
                if guard is not None:
                    readonly = [os.fsencode(p) for p in guard.readonly]
                else:
                    readonly = [os.fsencode(p) for p in _top_protected(self.write_roots)]
        # As root (no user namespace) the command keeps root's capabilities: drop those that
        # read around the mounts. In a user namespace they reach nothing outside it anyway.
        root = os.geteuid() == 0 and not (ns and self.support.user_namespace)
        drop: Sequence[int] = ()
        if root and filesystem:
            # As root, a confined command keeps only what acting as root on its own files
            # needs; the rest (the clock, the kernel log, network admin, raw sockets...) would
            # change the host from inside the sandbox.
            drop = _root_caps_to_drop()
        elif root and self.reads_by is not None:
            drop = _READ_AROUND_CAPS
        # Without a PID namespace the supervisor is the command's subreaper, so that it can
        # find and end everything the command started when handrail dies. With a fresh /proc
        # the supervisor is the forked child itself, and SIGKILL takes the namespace along.
        death = ParentDeath(SIGKILL, subreaper=False) if self.fresh_proc else None
        self.setup: Callable[[], None] = ChildSetup(
            userns=ns and self.support.user_namespace,
            uid=os.geteuid(),
            gid=os.getegid(),
            flags=flags,
            readonly=readonly,
            ruleset=self._fd,
            netns=netns,
            view=view if hides else None,
            writable=writable_mounts,
            drop_caps=drop,
            parent_death=death or ParentDeath(DEATH_SIGNAL, subreaper=not ns),
            pins=guard.pins if guard is not None and mounts else (),
            seals=guard.seals if guard is not None and mounts else (),
            isolation=self.isolation,
            fork_init=self.fresh_proc,
            seccomp=seccomp_filter() if filesystem else None,
        )
        self.pid_namespace = ns
        """The command gets its own PID namespace (stopping it reaches every descendant)."""
        self.readonly = tuple(os.fsdecode(p) for p in readonly)
        """Paths bind-mounted read-only for the command."""
        self.keeps_metadata = writable_mounts is not None
        """Every mount but the writable paths is read-only for the command, so it cannot change
        times, modes or owners outside them. False without a mount namespace (Landlock alone
        does not cover them) and for `filesystem=False`."""

    @property
    def label(self) -> str:
        """What confines the command: `landlock+namespaces`, `landlock`, or `none`."""
        return self.support.mechanism if self.filesystem else "none"

    def argv(self, shell: str, command: str) -> list[str]:
        """The argv that runs `command` under this confinement, through its supervisor.

        With a PID namespace the namespace's init (PID 1) is a shell that runs the command as
        its own child, so the command is never PID 1 itself (PID 1 ignores signals it has no
        handler for, even `kill -9 $$` from inside). When the command ends, PID 1 exits and the
        kernel kills whatever the command left in the namespace. With a fresh /proc the setup
        forks PID 1 itself (the argv is PID 1's); otherwise a supervisor shell starts it.
        """
        if self.fresh_proc:
            return init_argv(shell, command)
        return supervised_argv(shell, command, pid_namespace=self.pid_namespace)

    def close(self) -> None:
        """Release the ruleset fd (the child keeps its own restriction)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Confinement:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, NET_BIND_SERVICE.
_ROOT_CAPS_KEPT = frozenset({0, 1, 3, 4, 5, 6, 7, 10})


@functools.cache
def _root_caps_to_drop() -> tuple[int, ...]:
    """Every capability this kernel knows but `_ROOT_CAPS_KEPT`."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 40
    return tuple(c for c in range(last + 1) if c not in _ROOT_CAPS_KEPT)


def _top_protected(write_roots: Sequence[Path]) -> list[str]:
    """`.git` and `.handrail` at the top of each write root.

    A real folder or file only: a symlink there is not followed (the write roots are
    Landlock-confined anyway).
    """
    out: list[str] = []
    for root in write_roots:
        for name in PROTECTED:
            p = os.path.join(root, name)
            if os.path.lexists(p) and not os.path.islink(p):
                out.append(p)
    return out


_netns_fd: int | None = None


def _shared_netns(support: SandboxSupport) -> int:
    """An fd of one network namespace (loopback only) that confined commands share, or -1.

    Sharing it lets a later command reach a server a background job started on localhost, and
    joining an existing namespace is much cheaper than creating one per command. Only as root:
    an unprivileged process would have to join the user namespace that owns it first.
    """
    global _netns_fd
    if support.user_namespace or _libc is None:
        return -1
    if _netns_fd is not None:
        return _netns_fd
    _netns_fd = -1
    cat = system_which("cat") or "/bin/cat"
    setup = ChildSetup(userns=False, uid=0, gid=0, flags=CLONE_NEWNET)
    try:
        # `cat` waits on its stdin until we have opened its namespace, then ends.
        holder = subprocess.Popen(
            [cat], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=setup
        )
    except (OSError, subprocess.SubprocessError):
        return -1
    try:
        _netns_fd = os.open(f"/proc/{holder.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        _netns_fd = -1
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    return _netns_fd


def open_namespace(pid: int) -> int:
    """An fd for the PID namespace `pid` made for its children, or -1 when it made none.

    Holding the fd keeps the namespace's identity (its inode) from being reused, so its members
    can still be found after `pid` itself has exited.
    """
    try:
        fd = os.open(f"/proc/{pid}/ns/pid_for_children", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1
    try:
        if os.fstat(fd).st_ino == os.stat("/proc/self/ns/pid").st_ino:
            os.close(fd)
            return -1
    except OSError:
        os.close(fd)
        return -1
    return fd


def members_of(ns_fd: int) -> list[int]:
    """Host PIDs of the live processes in the PID namespace held by `ns_fd`."""
    try:
        target = os.fstat(ns_fd).st_ino
        entries = os.listdir("/proc")
    except OSError:
        return []
    out: list[int] = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}/ns/pid").st_ino == target:
                out.append(int(entry))
        except OSError:
            continue
    return out


def namespace_members(pid: int) -> list[int]:
    """Host PIDs of the processes in the PID namespace that `pid` created for its children."""
    fd = open_namespace(pid)
    if fd < 0:
        return []
    try:
        return members_of(fd)
    finally:
        os.close(fd)
