"""OS confinement for shell commands on Linux: Landlock for writes, namespaces for the rest.

A confined command and every process it starts:
* can write only inside the write roots, a private temporary folder and a few devices
  (`/dev/null`...): Landlock, which the kernel enforces on the whole tree and which cannot be
  undone from inside;
* cannot change `.git` or `.handrail` at the top of a write root: they are bind-mounted
  read-only in a private mount namespace (Landlock grants are inherited downward and cannot
  carve a read-only hole into a writable root);
* cannot change the metadata (times, mode, owner, ACLs and other extended attributes) of
  anything outside the write roots and its temporary folder, which Landlock does not cover:
  in the same mount namespace every mount is made read-only (`mount_setattr`, Linux 5.12)
  but for the write roots, each bound onto itself first. Devices, FIFOs and sockets stay
  writable on a read-only mount, so `/dev/null` and the terminal keep working; creating a
  file outside the roots now fails with EROFS ("Read-only file system") before Landlock's
  EACCES is reached. Without a mount namespace (Landlock only, or a kernel without
  `mount_setattr`: `SandboxSupport.keeps_metadata`) and for unconfined commands, metadata
  outside the roots is not protected;
* with a `ReadView`, cannot read the user's home beyond what it needs, nor any hidden path:
  in the same mount namespace the home is covered by an empty tmpfs, the needed paths are
  cloned back on top (`open_tree` + `move_mount`), and hidden paths it could still reach are
  covered (`_read_view.py` plans it). Without mount namespaces, Landlock confines reading
  files the same way (names stay listable). As root, the capabilities that read around
  mounts (file handles, raw devices, device nodes, kernel memory and modules) leave its
  bounding set;
* has no network unless allowed: a new network namespace with only a loopback interface (or,
  without namespaces, Landlock's TCP rules, which leave UDP open);
* lives in its own PID namespace under a shell that is its init: when that shell ends, the
  kernel kills whatever is left, and killing the namespace's members reaches processes that
  left the process group (setsid, double fork);
* dies with handrail: the supervisor shell that starts it gets a parent-death signal and then
  kills the namespace's init (`_parent_death.py`; without a namespace, every process below it).

Namespaces are created directly as root, or inside a new user namespace otherwise. The setup
runs in the child between fork and exec (`preexec_fn`) through functions bound before the
fork, so it allocates little and takes no locks another thread could hold.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._parent_death import DEATH_SIGNAL, ParentDeath, supervised_argv
from ._read_view import ReadView, landlock_readable

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
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522
_SYS_OPEN_TREE = 428  # Linux 5.2; Landlock (5.13) implies it
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442  # Linux 5.12; the same number on every architecture
_MOUNT_ATTR_RDONLY = 1
_OPEN_TREE_CLONE = 1
_AT_RECURSIVE = 0x8000
_AT_FDCWD = -100
_MOVE_MOUNT_F_EMPTY_PATH = 4
# Capabilities that read around a mount view: open_by_handle_at (DAC_READ_SEARCH), raw I/O and
# /proc/kcore (SYS_RAWIO), new device nodes (MKNOD), kernel code (SYS_MODULE), kernel memory
# through BPF and perf (SYS_ADMIN, which also allows both, PERFMON, BPF).
_READ_AROUND_CAPS = (2, 16, 17, 21, 27, 38, 39)
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_IFREQ_LO = struct.pack("16sH14x", b"lo", _IFF_UP_LOOPBACK_RUNNING)

# Writable devices: discarding output and reading zeros must keep working.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
PROTECTED = (".git", ".handrail")

try:
    _libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux / no libc
    _libc = None


def _errno_error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


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
    namespaces = hides = keeps = False
    reason = ""
    if _libc is None or not hasattr(_libc, "unshare"):
        reason = "not Linux: no Landlock or namespaces"
    else:
        namespaces = _probe_namespaces(needs_userns)
        hides = namespaces and _probe_namespaces(needs_userns, hide=True)
        keeps = namespaces and _probe_namespaces(needs_userns, read_only=True)
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
    )
    return _support


def _probe_namespaces(needs_userns: bool, *, hide: bool = False, read_only: bool = False) -> bool:
    """Start a `true` in new namespaces (`hide`: through a small view; `read_only`: read-only)."""
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="handrail-probe-") as folder:
        view = None
        if hide:
            keep, secret = os.path.join(folder, "keep"), os.path.join(folder, "keep", "secret")
            os.makedirs(os.path.join(secret, "inner"))
            view = ReadView(home=folder, binds=(keep,), make_dirs=(keep,), cover_dirs=(secret,))
        setup = _Setup(
            userns=needs_userns,
            uid=os.geteuid(),
            gid=os.getegid(),
            flags=_CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET,
            readonly=(),
            loopback=True,
            ruleset=-1,
            view=view,
            writable=(os.fsencode(folder),) if read_only else None,
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


class _Setup:
    """The child-side setup, run between fork and exec. Everything is bound beforehand."""

    def __init__(
        self,
        *,
        userns: bool,
        uid: int,
        gid: int,
        flags: int,
        readonly: Sequence[bytes],
        loopback: bool,
        ruleset: int,
        netns: int = -1,
        view: ReadView | None = None,
        writable: Sequence[bytes] | None = None,
        drop_caps: Sequence[int] = (),
        parent_death: ParentDeath | None = None,
    ) -> None:
        assert _libc is not None
        # With `writable`, every mount but those paths becomes read-only (None: left as is).
        self.writable = tuple(writable) if writable is not None else None
        # struct mount_attr {attr_set, attr_clr, propagation, userns_fd}, made before the fork.
        self.attr_rdonly = ctypes.create_string_buffer(
            struct.pack("QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0), 32
        )
        self.attr_rw = ctypes.create_string_buffer(
            struct.pack("QQQQ", 0, _MOUNT_ATTR_RDONLY, 0, 0), 32
        )
        self.parent_death = parent_death
        self.userns = userns
        self.maps = (
            (b"/proc/self/setgroups", b"deny"),
            (b"/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            (b"/proc/self/gid_map", f"{gid} {gid} 1".encode()),
        )
        self.flags = flags | (_CLONE_NEWUSER if userns else 0)
        self.readonly = tuple(readonly)
        self.loopback = loopback and bool(flags & _CLONE_NEWNET)
        self.ruleset = ruleset
        self.netns = netns
        self.view = view is not None
        plan = view if view is not None else ReadView(home=None)
        self.home = os.fsencode(plan.home) if plan.home else None
        self.binds = tuple(os.fsencode(p) for p in plan.binds)
        self.bind_fds = [-1] * len(self.binds)  # filled in the child: no list grows there
        self.make_dirs = tuple(os.fsencode(p) for p in plan.make_dirs)
        self.make_files = tuple(os.fsencode(p) for p in plan.make_files)
        self.cover_dirs = tuple(os.fsencode(p) for p in plan.cover_dirs)
        self.cover_files = tuple(os.fsencode(p) for p in plan.cover_files)
        self.drop_caps = tuple(drop_caps)
        # capget/capset buffers, made before the fork: a header and two data words.
        self.cap_header = ctypes.create_string_buffer(struct.pack("Ii", _CAP_VERSION_3, 0), 8)
        self.cap_data = ctypes.create_string_buffer(24)
        self.inheritable_mask = ~sum(1 << c for c in self.drop_caps) & ((1 << 64) - 1)
        self.capget = getattr(_libc, "capget", None)
        self.capset = getattr(_libc, "capset", None)
        self.setns = _libc.setns
        self.unshare = _libc.unshare
        self.mount = _libc.mount
        self.prctl = _libc.prctl
        self.syscall = _libc.syscall

    def __call__(self) -> None:
        if self.flags and self.unshare(self.flags) != 0:
            raise _errno_error("unshare")
        if self.userns:
            for path, value in self.maps:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, value)
                finally:
                    os.close(fd)
        if self.netns >= 0 and self.setns(self.netns, _CLONE_NEWNET) != 0:
            raise _errno_error("setns")
        if self.flags & _CLONE_NEWNS:
            if self.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
                raise _errno_error("mount --make-rprivate /")
            if self.writable is not None:
                self._read_only_but_writable()
            # After the above: clearing read-only below a write root would undo these.
            for path in self.readonly:
                if self.mount(path, path, None, _MS_BIND | _MS_REC, None) != 0:
                    raise _errno_error("bind mount")
                if self.mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None) != 0:
                    raise _errno_error("read-only remount")
            if self.view:
                self._hide()
        if self.loopback:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, _IFREQ_LO)
            finally:
                s.close()
        for cap in self.drop_caps:
            if self.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise _errno_error("drop capability")
        if self.drop_caps:
            self._drop_inherited()
        if self.ruleset >= 0:
            if self.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise _errno_error("no_new_privs")
            if self.syscall(_SYS_LANDLOCK_RESTRICT_SELF, self.ruleset, 0) != 0:
                raise _errno_error("landlock_restrict_self")
        if self.parent_death is not None:
            # Last: a change of credentials after it would clear the request (prctl(2)).
            self.parent_death()

    def _read_only_but_writable(self) -> None:
        """Make every mount read-only but the writable paths (and what is mounted below them).

        Landlock does not cover utime, chmod, chown or extended attributes; a read-only mount
        refuses them all with EROFS. Each writable path is bound onto itself so that it is a
        mount of its own, then the whole tree is made read-only and those mounts writable again.
        """
        for path in self.writable or ():
            if self.mount(path, path, None, _MS_BIND | _MS_REC, None) != 0:
                raise _errno_error("bind a writable path")
        size = ctypes.c_size_t(32)
        if self.syscall(_SYS_MOUNT_SETATTR, _AT_FDCWD, b"/", _AT_RECURSIVE, self.attr_rdonly, size):
            raise _errno_error("mount_setattr read-only")
        for path in self.writable or ():
            if self.syscall(_SYS_MOUNT_SETATTR, _AT_FDCWD, path, _AT_RECURSIVE, self.attr_rw, size):
                raise _errno_error("mount_setattr writable")
        # The cwd was entered before the binds: enter it again, or a cwd inside a write root
        # would still be on the mount below the bind, now read-only.
        os.chdir(os.getcwdb())

    def _drop_inherited(self) -> None:
        """Clear the dropped capabilities from the inheritable and ambient sets too.

        Root regains at exec whatever is inheritable, bounding set or not (a parent started
        with `capsh --inh=...` would hand them back).
        """
        self.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # absent before 4.3
        if self.capget is None or self.capset is None:
            return
        if self.capget(self.cap_header, self.cap_data) != 0:
            raise _errno_error("capget")
        words = struct.unpack("6I", self.cap_data.raw)
        low, high = self.inheritable_mask & 0xFFFFFFFF, self.inheritable_mask >> 32
        data = (words[0], words[1], words[2] & low, words[3], words[4], words[5] & high)
        ctypes.memmove(self.cap_data, struct.pack("6I", *data), 24)
        if self.capset(self.cap_header, self.cap_data) != 0:
            raise _errno_error("capset")

    def _hide(self) -> None:
        """Cover the home but for the bound-back paths, then cover what is hidden."""
        if self.home is not None:
            # Clone the paths to keep (with what is mounted below them, `.git` read-only
            # included) before the tmpfs hides them, then put the clones back on top.
            for i, path in enumerate(self.binds):
                fd = self.syscall(
                    _SYS_OPEN_TREE, _AT_FDCWD, path, _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC
                )
                if fd < 0:
                    raise _errno_error("open_tree")
                self.bind_fds[i] = fd
            if self.mount(b"tmpfs", self.home, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=755") != 0:
                raise _errno_error("mount tmpfs over the home")
            for path in self.make_dirs:
                os.mkdir(path, 0o755)
            for path in self.make_files:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            for i, path in enumerate(self.binds):
                fd = self.bind_fds[i]
                if self.syscall(
                    _SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, path, _MOVE_MOUNT_F_EMPTY_PATH
                ):
                    raise _errno_error("move_mount")
                os.close(fd)
        for path in self.cover_dirs:
            flags = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
            if self.mount(b"tmpfs", path, b"tmpfs", flags, b"mode=700,size=4k") != 0:
                raise _errno_error("cover a hidden folder")
        for path in self.cover_files:
            if self.mount(b"/dev/null", path, None, _MS_BIND, None) != 0:
                raise _errno_error("cover a hidden file")
        # The cwd was entered before the mounts: enter it again through the new view, or `..`
        # and relative paths would still walk the old one.
        os.chdir(os.getcwdb())


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
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if block_tcp and abi >= 4 else 0
    # struct landlock_ruleset_attr: handled_access_fs, handled_access_net (ABI 4), scoped (ABI 6)
    attr = struct.pack("QQ", handled, net) if abi >= 4 else struct.pack("Q", handled)
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
        flags = _CLONE_NEWPID if ns else 0
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
        if filesystem:
            writable = [str(r) for r in self.write_roots] + [*extra_write]
            if temp_dir is not None:
                writable.append(str(temp_dir))
            self._fd = _ruleset(
                self.support.landlock, writable, _DEVICES, not network and not ns, readable
            )
            if ns:
                flags |= _CLONE_NEWNS
                if not network:
                    netns = _shared_netns(self.support)
                    if netns < 0:
                        flags |= _CLONE_NEWNET
                if self.support.keeps_metadata:
                    # A missing extra path grants nothing (as in the ruleset); the others exist.
                    writable_mounts = [os.fsencode(p) for p in writable if os.path.exists(p)]
                for root in self.write_roots:
                    for name in PROTECTED:
                        p = root / name
                        # A real folder or file only: a symlink there is not followed (the
                        # write roots are Landlock-confined anyway).
                        if os.path.lexists(p) and not os.path.islink(p):
                            readonly.append(os.fsencode(p))
        # As root (no user namespace) the command keeps root's capabilities: drop those that
        # read around the mounts. In a user namespace they reach nothing outside it anyway.
        root = os.geteuid() == 0 and not (ns and self.support.user_namespace)
        drop = _READ_AROUND_CAPS if self.reads_by is not None and root else ()
        self.setup: Callable[[], None] = _Setup(
            userns=ns and self.support.user_namespace,
            uid=os.geteuid(),
            gid=os.getegid(),
            flags=flags,
            readonly=readonly,
            loopback=True,
            ruleset=self._fd,
            netns=netns,
            view=view if hides else None,
            writable=writable_mounts,
            drop_caps=drop,
            # Without a PID namespace the supervisor is the command's subreaper, so that it can
            # find and end everything the command started when handrail dies.
            parent_death=ParentDeath(DEATH_SIGNAL, subreaper=not ns),
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

        With a PID namespace the supervisor's first child is the namespace's init: a subshell
        that runs the command as its own child, so the command is never PID 1 itself (PID 1
        ignores signals it has no handler for, even `kill -9 $$` from inside). When the command
        ends, PID 1 exits and the kernel kills whatever the command left in the namespace.
        """
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
    cat = shutil.which("cat") or "/bin/cat"
    setup = _Setup(
        userns=False,
        uid=0,
        gid=0,
        flags=_CLONE_NEWNET,
        readonly=(),
        loopback=True,
        ruleset=-1,
    )
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
