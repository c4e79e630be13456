"""The child side of a confined command: what runs between fork and exec.

`ChildSetup` is a `preexec_fn`. Everything it needs is bound in the parent (paths encoded,
buffers made, libc functions looked up), so the child allocates little and takes no lock
another thread of the parent could hold. In order:

1. new namespaces (user, mount, PID, network), the user namespace's ID maps;
2. in the mount namespace: every mount read-only but the writable paths; the folders on the way
   to a hidden path pinned (a mount point cannot be renamed or removed); `.git` and
   `.handrail` folders read-only; sealed folders (no new names in them); the home covered but
   for what the command needs, and every reachable hidden path covered; `/run`, `/var/tmp`
   and `/dev/shm` emptied and other programs' Unix sockets covered; the session's own
   temporary folder mounted at `/tmp`, with the paths the command needs that lie under the
   host's `/tmp` bound back into it (`_isolation.py` plans this);
3. with a fresh `/proc` (`fork_init`), a second fork: the grandchild is PID 1 of the new PID
   namespace, mounts a procfs that shows only the namespace, then drops capabilities and
   enters Landlock (after which no mount can change) and goes on to exec the command's init;
   the child stays behind as the supervisor: it ignores the stop signals, waits for the
   grandchild and exits with its status. Each asks for SIGKILL when its parent dies, so the
   whole namespace dies with handrail;
4. otherwise the same last steps in the child itself.
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import os
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ._parent_death import ParentDeath
from ._read_view import ReadView

__all__ = ["ChildSetup", "Isolation", "errno_error", "libc"]

try:
    libc: ctypes.CDLL | None = ctypes.CDLL(None, use_errno=True)
except OSError:  # not Linux / no libc
    libc = None

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_PR_SET_PDEATHSIG = 1
_CAP_VERSION_3 = 0x20080522
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442
_SYS_CLOSE_RANGE = 436
_MOUNT_ATTR_RDONLY = 1
_OPEN_TREE_CLONE = 1
_AT_RECURSIVE = 0x8000
_AT_FDCWD = -100
_MOVE_MOUNT_F_EMPTY_PATH = 4
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_IFREQ_LO = struct.pack("16sH14x", b"lo", _IFF_UP_LOOPBACK_RUNNING)
_SIG_IGN = ctypes.c_void_p(1)
_SIGKILL = 9
_STOP_SIGNALS = (1, 2, 3, 15)  # HUP, INT, QUIT, TERM: meant for the command, not the supervisor
_EMPTY_RO = _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC


def errno_error(what: str) -> OSError:
    """An OSError from the last libc call's errno."""
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Isolation:
    """What a command sees of the rest of the machine: planned in the parent (`_isolation`)."""

    tmp: str | None = None
    """The session's own temporary folder, mounted at `/tmp` (None: `/tmp` as it is)."""
    tmp_binds: tuple[tuple[str, str, bool], ...] = ()
    """(source, mount point under the new `/tmp`, read-only): paths the command needs that lie
    under the host's `/tmp` (roots, the results folder, allowed sockets). The mount points
    exist in `tmp` (`_isolation.prepare_tmp` makes them)."""
    run: bool = False
    """Cover `/run` with an empty tmpfs (other programs' sockets, the user's runtime folder)."""
    run_keep: tuple[str, ...] = ()
    """Paths under `/run` bound back (resolver files, allowed sockets)."""
    empty: tuple[str, ...] = ()
    """Folders covered by an empty read-only tmpfs (`/var/tmp`, `/dev/shm`)."""
    sockets: tuple[str, ...] = ()
    """Other programs' Unix sockets still reachable: `/dev/null` goes over each."""
    dev: tuple[str, ...] = ()
    """With device nodes named here, `/dev` is a fresh tmpfs holding only these (bound from
    the host's) plus `fd`, `stdin`, `stdout`, `stderr` and an empty `shm`: no terminal of
    anyone else's, no disk, no loop device."""


_NO_ISOLATION = Isolation()


class ChildSetup:
    """The `preexec_fn` of a confined command (see the module docstring)."""

    def __init__(
        self,
        *,
        userns: bool,
        uid: int,
        gid: int,
        flags: int,
        readonly: Sequence[bytes] = (),
        loopback: bool = True,
        ruleset: int = -1,
        netns: int = -1,
        view: ReadView | None = None,
        writable: Sequence[bytes] | None = None,
        drop_caps: Sequence[int] = (),
        parent_death: ParentDeath | None = None,
        pins: Sequence[str] = (),
        seals: Sequence[tuple[str, Sequence[str]]] = (),
        isolation: Isolation | None = None,
        fork_init: bool = False,
        seccomp: ctypes.Array[ctypes.c_char] | None = None,
    ) -> None:
        assert libc is not None
        # With `writable`, every mount but those paths becomes read-only (None: left as is).
        self.writable = tuple(writable) if writable is not None else None
        # struct mount_attr {attr_set, attr_clr, propagation, userns_fd}, made before the fork.
        self.attr_rdonly = ctypes.create_string_buffer(
            struct.pack("QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0), 32
        )
        self.attr_rw = ctypes.create_string_buffer(
            struct.pack("QQQQ", 0, _MOUNT_ATTR_RDONLY, 0, 0), 32
        )
        self.attr_size = ctypes.c_size_t(32)
        self.parent_death = parent_death
        self.userns = userns
        self.maps = (
            (b"/proc/self/setgroups", b"deny"),
            (b"/proc/self/uid_map", f"{uid} {uid} 1".encode()),
            (b"/proc/self/gid_map", f"{gid} {gid} 1".encode()),
        )
        self.flags = flags | (CLONE_NEWUSER if userns else 0)
        self.readonly = tuple(readonly)
        self.loopback = loopback and bool(flags & CLONE_NEWNET)
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
        self.pins = tuple(os.fsencode(p) for p in pins)
        self.seals = tuple((os.fsencode(f), tuple(map(os.fsencode, kids))) for f, kids in seals)
        iso = isolation or _NO_ISOLATION
        self.tmp = os.fsencode(iso.tmp) if iso.tmp else None
        self.tmp_binds = tuple((os.fsencode(s), os.fsencode(d), ro) for s, d, ro in iso.tmp_binds)
        self.tmp_fds = [-1] * (len(self.tmp_binds) + 1)
        self.run = iso.run
        self.run_keep = tuple(os.fsencode(p) for p in iso.run_keep)
        self.run_fds = [-1] * len(self.run_keep)
        self.run_dirs = tuple(
            tuple(os.fsencode(d) for d in _parents_below(p, "/run")) for p in iso.run_keep
        )
        self.run_is_dir = tuple(os.path.isdir(p) for p in iso.run_keep)
        self.empty = tuple(os.fsencode(p) for p in iso.empty)
        self.sockets = tuple(os.fsencode(p) for p in iso.sockets)
        self.dev = tuple(os.fsencode(p) for p in iso.dev)
        self.dev_fds = [-1] * len(self.dev)
        self.fork_init = fork_init and bool(flags & CLONE_NEWPID) and bool(flags & CLONE_NEWNS)
        self.drop_caps = tuple(drop_caps)
        # struct sock_fprog {unsigned short len; struct sock_filter *filter}, made before.
        self.seccomp = seccomp
        self.fprog = (
            ctypes.create_string_buffer(
                struct.pack("HxxxxxxP", len(seccomp) // 8, ctypes.addressof(seccomp)), 16
            )
            if seccomp is not None
            else None
        )
        # capget/capset buffers, made before the fork: a header and two data words.
        self.cap_header = ctypes.create_string_buffer(struct.pack("Ii", _CAP_VERSION_3, 0), 8)
        self.cap_data = ctypes.create_string_buffer(24)
        self.inheritable_mask = ~sum(1 << c for c in self.drop_caps) & ((1 << 64) - 1)
        self.capget = getattr(libc, "capget", None)
        self.capset = getattr(libc, "capset", None)
        self.setns = libc.setns
        self.unshare = libc.unshare
        self.mount = libc.mount
        self.prctl = libc.prctl
        self.syscall = libc.syscall
        self.fork = libc.fork
        self.signal = libc.signal
        self.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        self.getpid = os.getpid
        self.getppid = os.getppid
        self.waitpid = os.waitpid
        self.exit = os._exit
        self.pipe = os.pipe
        self.hardened = False

    # -- the steps, in order ---------------------------------------------------------------

    def __call__(self) -> None:
        if self.flags and self.unshare(self.flags) != 0:
            raise errno_error("unshare")
        if self.userns:
            for path, value in self.maps:
                fd = os.open(path, os.O_WRONLY)
                try:
                    os.write(fd, value)
                finally:
                    os.close(fd)
        if self.netns >= 0 and self.setns(self.netns, CLONE_NEWNET) != 0:
            raise errno_error("setns")
        if self.flags & CLONE_NEWNS:
            self._mounts()
        if self.loopback:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                fcntl.ioctl(s.fileno(), _SIOCSIFFLAGS, _IFREQ_LO)
            finally:
                s.close()
        if self.fork_init:
            self._fork_init()  # returns in the grandchild only
        self._confine()

    def _mounts(self) -> None:
        if self.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            raise errno_error("mount --make-rprivate /")
        if self.writable is not None:
            self._read_only_but_writable()
        # Pinned folders (on the way to a hidden path) are mount points: no rename, no rmdir.
        for path in self.pins:
            if self.mount(path, path, None, _MS_BIND | _MS_REC, None) != 0:
                raise errno_error("pin a folder")
        # After the above: clearing read-only below a write root would undo these.
        for path in self.readonly:
            if self.mount(path, path, None, _MS_BIND | _MS_REC, None) != 0:
                raise errno_error("bind mount")
            if self.mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None) != 0:
                raise errno_error("read-only remount")
        for folder, kids in self.seals:
            self._seal(folder, kids)
        if self.view:
            self._hide()
        for path in self.sockets:
            if self.mount(b"/dev/null", path, None, _MS_BIND, None) != 0:
                raise errno_error("cover a socket")
        # What must stay reachable once `/tmp` and `/run` are covered, taken now: after the
        # mounts above, so that the clones carry them (covers, read-only `.git`, pins).
        self._clone_isolated()
        self._isolate()
        # The cwd was entered before the mounts: enter it again through the new view, or `..`
        # and relative paths would still walk the old one.
        os.chdir(os.getcwdb())

    def _confine(self) -> None:
        """The last steps, in the process that will exec the command."""
        self._harden()
        if self.ruleset >= 0:
            if self.syscall(_SYS_LANDLOCK_RESTRICT_SELF, self.ruleset, 0) != 0:
                raise errno_error("landlock_restrict_self")
        if self.parent_death is not None:
            # Last: a change of credentials after it would clear the request (prctl(2)).
            self.parent_death()

    def _harden(self) -> None:
        """Capabilities, no_new_privs and seccomp: once, before Landlock (none stops a mount)."""
        if self.hardened:
            return
        self.hardened = True
        for cap in self.drop_caps:
            if self.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise errno_error("drop capability")
        if self.drop_caps:
            self._drop_inherited()
        if self.ruleset >= 0 or self.fprog is not None:
            if self.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise errno_error("no_new_privs")
        if self.fprog is not None and self.prctl(_PR_SET_SECCOMP, 2, self.fprog, 0, 0) != 0:
            raise errno_error("seccomp")

    # -- PID 1 with a fresh /proc -----------------------------------------------------------

    def _fork_init(self) -> None:
        """Fork PID 1 of the new namespace; this process stays behind as its supervisor."""
        if self.parent_death is not None:
            self.parent_death()  # the supervisor dies with handrail (SIGKILL)
        # PID 1 cannot ask whether its parent still lives (the parent is outside its
        # namespace, so getppid() says 0): it reads this pipe, which the supervisor holds.
        alive_r, alive_w = self.pipe()
        # Done here, before the fork, so that PID 1 (a copy of this process, which pays a
        # copy-on-write fault for every page it touches) has less left to do.
        self._harden()
        pid = self.fork()
        if pid < 0:
            raise errno_error("fork")
        if pid == 0:
            gc.disable()
            os.close(alive_w)
            self.prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)
            os.set_blocking(alive_r, False)
            try:
                if os.read(alive_r, 1) == b"":
                    self.exit(1)  # the supervisor died before the request: nobody waits
            except BlockingIOError:
                pass
            # PID 1: a procfs of its own namespace, then confinement, then exec.
            flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
            if self.writable is not None:
                flags |= _MS_RDONLY  # no less restrictive than the /proc it covers
            if self.mount(b"proc", b"/proc", b"proc", flags, None) != 0:
                raise errno_error("mount a fresh /proc")
            # The keyrings are the user's, not the namespace's: their names stay unlisted.
            for path in _PROC_MASKED:
                if os.path.exists(path):
                    self.mount(b"/dev/null", path, None, _MS_BIND, None)
            self.parent_death = None
            self._confine()
            return
        os.close(alive_r)
        self._supervise(pid, alive_w)

    def _supervise(self, pid: int, keep: int) -> None:
        """Wait for PID 1 and exit with its status, as a shell's `wait` would report it."""
        gc.disable()  # no finalizer of the parent's objects may run in this copy of it
        for sig in _STOP_SIGNALS:
            self.signal(sig, _SIG_IGN)
        # No other descriptor of the parent's stays open here: Popen's error pipe must close
        # when PID 1 execs, and the command's pipes when the command ends.
        if keep > 0:
            self.syscall(_SYS_CLOSE_RANGE, 0, keep - 1, 0)
        self.syscall(_SYS_CLOSE_RANGE, keep + 1, ctypes.c_uint(0xFFFFFFFF), 0)
        status = 255 << 8
        try:
            _, status = self.waitpid(pid, 0)  # EINTR is retried by Python itself
        except ChildProcessError:
            pass
        code = os.waitstatus_to_exitcode(status)
        self.exit(code if code >= 0 else 128 - code)

    # -- mounts -----------------------------------------------------------------------------

    def _clone(self, path: bytes) -> int:
        fd = self.syscall(
            _SYS_OPEN_TREE, _AT_FDCWD, path, _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC
        )
        if fd < 0:
            raise errno_error("open_tree")
        return fd

    def _attach(self, fd: int, target: bytes) -> None:
        if self.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, target, _MOVE_MOUNT_F_EMPTY_PATH):
            raise errno_error("move_mount")
        os.close(fd)

    def _read_only_at(self, path: bytes, recursive: bool) -> None:
        flags = _AT_RECURSIVE if recursive else 0
        if self.syscall(
            _SYS_MOUNT_SETATTR, _AT_FDCWD, path, flags, self.attr_rdonly, self.attr_size
        ):
            raise errno_error("mount_setattr read-only")

    def _read_only_but_writable(self) -> None:
        """Make every mount read-only but the writable paths (and what is mounted below them).

        Landlock does not cover utime, chmod, chown or extended attributes; a read-only mount
        refuses them all with EROFS. Each writable path is bound onto itself so that it is a
        mount of its own, then the whole tree is made read-only and those mounts writable again.
        """
        for path in self.writable or ():
            if self.mount(path, path, None, _MS_BIND | _MS_REC, None) != 0:
                raise errno_error("bind a writable path")
        self._read_only_at(b"/", True)
        for path in self.writable or ():
            if self.syscall(
                _SYS_MOUNT_SETATTR, _AT_FDCWD, path, _AT_RECURSIVE, self.attr_rw, self.attr_size
            ):
                raise errno_error("mount_setattr writable")
        # The cwd was entered before the binds: enter it again, or a cwd inside a write root
        # would still be on the mount below the bind, now read-only.
        os.chdir(os.getcwdb())

    def _seal(self, folder: bytes, kids: Sequence[bytes]) -> None:
        """No new name can appear in `folder`, and its entries cannot be renamed or removed.

        Each entry is bound onto itself (it stays as writable as it was), then the folder, with
        them, onto itself, and that top mount alone is made read-only.
        """
        for kid in kids:
            if self.mount(kid, kid, None, _MS_BIND | _MS_REC, None) != 0:
                raise errno_error("seal a folder (bind an entry)")
        if self.mount(folder, folder, None, _MS_BIND | _MS_REC, None) != 0:
            raise errno_error("seal a folder")
        self._read_only_at(folder, False)

    def _drop_inherited(self) -> None:
        """Clear the dropped capabilities from the inheritable and ambient sets too.

        Root regains at exec whatever is inheritable, bounding set or not (a parent started
        with `capsh --inh=...` would hand them back).
        """
        self.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # absent before 4.3
        if self.capget is None or self.capset is None:
            return
        if self.capget(self.cap_header, self.cap_data) != 0:
            raise errno_error("capget")
        words = struct.unpack("6I", self.cap_data.raw)
        low, high = self.inheritable_mask & 0xFFFFFFFF, self.inheritable_mask >> 32
        data = (words[0], words[1], words[2] & low, words[3], words[4], words[5] & high)
        ctypes.memmove(self.cap_data, struct.pack("6I", *data), 24)
        if self.capset(self.cap_header, self.cap_data) != 0:
            raise errno_error("capset")

    def _hide(self) -> None:
        """Cover the home but for the bound-back paths, then cover what is hidden."""
        if self.home is not None:
            # Clone the paths to keep (with what is mounted below them, `.git` read-only
            # included) before the tmpfs hides them, then put the clones back on top.
            for i, path in enumerate(self.binds):
                self.bind_fds[i] = self._clone(path)
            if self.mount(b"tmpfs", self.home, b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=755") != 0:
                raise errno_error("mount tmpfs over the home")
            for path in self.make_dirs:
                os.mkdir(path, 0o755)
            for path in self.make_files:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
            for i, path in enumerate(self.binds):
                self._attach(self.bind_fds[i], path)
        for path in self.cover_dirs:
            if self.mount(b"tmpfs", path, b"tmpfs", _EMPTY_RO, b"mode=700,size=4k") != 0:
                raise errno_error("cover a hidden folder")
        for path in self.cover_files:
            if self.mount(b"/dev/null", path, None, _MS_BIND, None) != 0:
                raise errno_error("cover a hidden file")

    def _clone_isolated(self) -> None:
        if self.tmp is not None:
            self.tmp_fds[0] = self._clone(self.tmp)
            for i, (source, _, _) in enumerate(self.tmp_binds, 1):
                self.tmp_fds[i] = self._clone(source)
        for i, path in enumerate(self.run_keep):
            self.run_fds[i] = self._clone(path)
        for i, path in enumerate(self.dev):
            fd = self.syscall(_SYS_OPEN_TREE, _AT_FDCWD, path, _OPEN_TREE_CLONE | os.O_CLOEXEC)
            if fd < 0:
                raise errno_error("open_tree a device")
            self.dev_fds[i] = fd

    def _fresh_dev(self) -> None:
        """A tmpfs at /dev with the usual nodes bound back; read-only once made."""
        flags = _MS_NOSUID | _MS_NOEXEC
        if self.mount(b"tmpfs", b"/dev", b"tmpfs", flags, b"mode=755,size=64k") != 0:
            raise errno_error("mount tmpfs over /dev")
        for i, path in enumerate(self.dev):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666))
            self._attach(self.dev_fds[i], path)
        for target, link in _DEV_LINKS:
            os.symlink(target, link)
        os.mkdir(b"/dev/shm", 0o755)
        if self.mount(b"tmpfs", b"/dev/shm", b"tmpfs", _EMPTY_RO, b"mode=755,size=4k") != 0:
            raise errno_error("cover /dev/shm")
        if self.mount(None, b"/dev", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags, None):
            raise errno_error("read-only /dev")

    def _isolate(self) -> None:
        """Empty `/run`, `/var/tmp`, `/dev/shm`; cover sockets; the session's folder at /tmp."""
        if self.run:
            if self.mount(b"tmpfs", b"/run", b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=755") != 0:
                raise errno_error("mount tmpfs over /run")
            for i, path in enumerate(self.run_keep):
                for folder in self.run_dirs[i]:
                    if not os.path.isdir(folder):
                        os.mkdir(folder, 0o755)
                if self.run_is_dir[i]:
                    os.mkdir(path, 0o755)
                else:
                    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
                self._attach(self.run_fds[i], path)
            if self.mount(None, b"/run", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None) != 0:
                raise errno_error("read-only /run")
        for path in self.empty:
            if self.mount(b"tmpfs", path, b"tmpfs", _EMPTY_RO, b"mode=755,size=4k") != 0:
                raise errno_error("cover a shared folder")
        if self.dev:
            self._fresh_dev()
        if self.tmp is not None:
            self._attach(self.tmp_fds[0], b"/tmp")
            for i, (_, target, read_only) in enumerate(self.tmp_binds, 1):
                self._attach(self.tmp_fds[i], target)
                if read_only:
                    self._read_only_at(target, True)


_PROC_MASKED = (b"/proc/keys", b"/proc/key-users")
_DEV_LINKS = (
    (b"/proc/self/fd", b"/dev/fd"),
    (b"/proc/self/fd/0", b"/dev/stdin"),
    (b"/proc/self/fd/1", b"/dev/stdout"),
    (b"/proc/self/fd/2", b"/dev/stderr"),
)


def _parents_below(path: str, top: str) -> tuple[str, ...]:
    """The folders between `top` (excluded) and `path` (excluded), outermost first."""
    rel = os.path.relpath(path, top).split("/")
    return tuple(os.path.join(top, *rel[:i]) for i in range(1, len(rel)))
