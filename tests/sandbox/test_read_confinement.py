"""Reads under the OS sandbox: the home hidden but for what a command needs, secrets covered.

Real processes in real namespaces: every test plants canaries where a command must not reach
and plays the attacker (relative paths, /proc, file handles, raw devices, unmounting the
covers), then checks the canary text never came back.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from handrail.permissions._hidden import hidden_paths
from handrail.sandbox import SandboxSupport, ShellProcess, sandbox_support
from handrail.sandbox._capture import OutputCapture
from handrail.sandbox._os_confinement import Confinement
from handrail.sandbox._read_view import (
    ReadView,
    can_hide,
    landlock_readable,
    plan_read_view,
    readable_block_devices,
    toolchain_dirs,
)

SUPPORT = sandbox_support()
needs_sandbox = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox on this machine: {SUPPORT.reason}"
)
needs_mounts = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.hides_paths),
    reason="this machine cannot hide paths in a mount namespace",
)
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="root's capabilities are what is tested")
# The same view from inside a user namespace, as for an unprivileged user (the mounts copied
# from the host are locked there); root can take that path too.
IN_USERNS = SandboxSupport(
    landlock=SUPPORT.landlock, namespaces=True, user_namespace=True, hides_paths=True
)
FLAVOURS = pytest.mark.parametrize("support", [None, IN_USERNS], ids=["direct", "user-namespace"])


class Home:
    """A home in a temporary folder: a workspace, a toolchain, secrets and a private file."""

    def __init__(self, base: Path) -> None:
        self.path = base / "home"
        self.ws = self.path / "ws"
        self.tmp = base / "cmdtmp"
        self.tools = self.path / "tools"
        tag = uuid.uuid4().hex[:8]
        self.ssh = f"CANARY-SSH-{tag}"
        self.netrc = f"CANARY-NETRC-{tag}"
        self.private = f"CANARY-PRIVATE-{tag}"
        self.inner = f"CANARY-INNER-{tag}"
        for folder in (self.ws / ".git", self.tmp, self.tools / "bin", self.path / ".ssh"):
            folder.mkdir(parents=True)
        (self.ws / "a.txt").write_text("hello from the workspace\n")
        (self.ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (self.path / ".ssh" / "id_rsa").write_text(self.ssh + "\n")
        (self.path / ".netrc").write_text(self.netrc + "\n")
        (self.path / "diary.txt").write_text(self.private + "\n")
        (self.path / "notes.txt").write_text("notes may be read\n")
        tool = self.tools / "bin" / "mytool"
        tool.write_text("#!/bin/sh\necho TOOL-OK\n")
        tool.chmod(0o755)
        self.canaries = (self.ssh, self.netrc, self.private, self.inner)

    def hidden(self, *extra: str) -> tuple[Path, ...]:
        return hidden_paths(extra, home=self.path, env={}, base=self.ws)

    def view(
        self, *visible: Path, home: bool = True, extra_hidden: tuple[str, ...] = ()
    ) -> ReadView:
        shown = visible or (self.ws, self.tmp, self.tools)
        return plan_read_view(
            home=str(self.path) if home else None,
            visible=[str(v) for v in shown],
            hidden=self.hidden(*extra_hidden),
        )

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.path),
            "PATH": f"{self.tools}/bin:{os.environ['PATH']}",
        }


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path)


async def run(
    command: str, cwd: Path, conf: Confinement, env: dict[str, str]
) -> tuple[int | None, str]:
    cap = OutputCapture(None)
    proc = await ShellProcess.start(command, cwd=cwd, env=env, capture=cap, confinement=conf)
    await proc.wait(60)
    await proc.finish()
    cap.close()
    return proc.returncode, cap.render()


def confine(
    home: Home, view: ReadView | None, support: SandboxSupport | None = None
) -> Confinement:
    return Confinement(write_roots=[home.ws], temp_dir=home.tmp, view=view, support=support)


def assert_no_canary(home: Home, out: str) -> None:
    for canary in home.canaries:
        assert canary not in out, out


# -- planning (no process) ---------------------------------------------------------------------


def test_toolchains_on_path_bring_their_folders_and_nothing_wider(tmp_path: Path) -> None:
    h = tmp_path / "h"
    for rel in (
        ".pyenv/shims",
        ".pyenv/plugins/venv/shims",
        ".cargo/bin",
        ".rustup",
        ".local/bin",
        ".local/lib",
        ".local/share/keyrings",
        ".local/share/pnpm",
        "go/bin",
        "envs/py/bin",
        "elsewhere",
    ):
        (h / rel).mkdir(parents=True)
    (h / "envs" / "py" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (h / "bin-link").symlink_to(h / "go" / "bin")
    outside = tmp_path / "usr-bin"
    outside.mkdir()
    path = ":".join(
        [
            f"{h}/.pyenv/plugins/venv/shims",
            f"{h}/.pyenv/shims",
            f"{h}/.cargo/bin",
            f"{h}/.local/bin",
            f"{h}/.local/share/pnpm",
            f"{h}/bin-link",
            f"{h}/envs/py/bin",
            f"{h}/missing/bin",
            str(h),
            "relative/bin",
            str(outside),
        ]
    )
    assert toolchain_dirs(path, str(h)) == tuple(
        str(h / rel)
        for rel in (
            ".pyenv",
            ".cargo",
            ".rustup",
            ".local/bin",
            ".local/lib",
            ".local/share/pnpm",
            "go",
            "envs/py",
        )
    )


def test_the_view_binds_the_outermost_paths_and_covers_only_what_stays_reachable(
    home: Home, tmp_path: Path
) -> None:
    (home.ws / "sub").mkdir()
    secret_in_ws = home.ws / ".env.credentials"
    secret_in_ws.write_text(home.inner)
    system = tmp_path / "etc"
    (system / "private").mkdir(parents=True)
    (system / "shadow").write_text("x")
    (system / "key_a").write_text("a")
    (system / "key_b").write_text("b")
    (home.path / "link-to-ssh").symlink_to(home.path / ".ssh")
    view = plan_read_view(
        home=str(home.path),
        visible=[str(home.ws), str(home.ws / "sub"), str(home.path / "notes.txt"), str(home.tmp)],
        hidden=home.hidden(
            str(secret_in_ws),
            str(system / "shadow"),
            str(system / "private"),
            str(system / "key_*"),
            str(home.path / "link-to-ssh"),
            str(tmp_path / "missing"),
        ),
    )
    assert view.home == str(home.path)
    assert view.binds == (str(home.path / "notes.txt"), str(home.ws))  # ws/sub rides along
    assert view.make_dirs == (str(home.ws),)
    assert view.make_files == (str(home.path / "notes.txt"),)
    # ~/.ssh stays under the tmpfs; what lies in a bound-back folder or outside the home is
    # covered; a symlink is not (its target is an entry of its own).
    ours = str(tmp_path) + "/"
    assert [p for p in view.cover_dirs if p.startswith(ours)] == [str(system / "private")]
    assert [p for p in view.cover_files if p.startswith(ours)] == [
        str(system / "key_a"),
        str(system / "key_b"),
        str(system / "shadow"),
        str(secret_in_ws),
    ]


def test_a_home_inside_a_visible_path_is_not_covered_but_its_secrets_are(home: Home) -> None:
    view = plan_read_view(home=str(home.path), visible=[str(home.path)], hidden=home.hidden())
    assert view.home is None and view.binds == ()
    assert str(home.path / ".ssh") in view.cover_dirs
    assert str(home.path / ".netrc") in view.cover_files


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/", False),
        ("/usr", False),
        ("/var", False),  # holds /var/lib, /var/tmp...
        ("/proc/1", False),
        ("relative", False),
        ("/home/someone", True),
        ("/var/lib/jenkins", True),
        ("/tmp/pytest-home", True),
    ],
)
def test_a_home_that_holds_the_system_is_never_covered(path: str, ok: bool) -> None:
    assert can_hide(path) is ok


def test_the_landlock_fallback_grants_everything_but_the_hidden(home: Home) -> None:
    view = home.view()
    allowed = landlock_readable(view)
    assert str(home.ws) in allowed and str(home.tools) in allowed
    for path in allowed:
        inside_home = path == str(home.path) or path.startswith(str(home.path) + "/")
        if inside_home:
            assert any(path == b or path.startswith(b + "/") for b in view.binds), path
        assert not any(
            path == c or path.startswith(c + "/") for c in (*view.cover_dirs, *view.cover_files)
        )
    if os.path.isdir("/usr") and not os.path.islink("/usr"):
        assert "/usr" in allowed


# -- the mounts, in real commands ----------------------------------------------------------------


@needs_mounts
def test_the_probe_found_mounts_can_hide_paths() -> None:
    assert SUPPORT.namespaces and SUPPORT.hides_paths


@needs_mounts
@FLAVOURS
async def test_the_home_is_hidden_but_for_what_the_command_needs(
    home: Home, support: SandboxSupport | None
) -> None:
    with confine(home, home.view(), support) as conf:
        assert conf.reads_by == "mounts"
        code, out = await run(
            "cat a.txt; mytool; cat ~/.ssh/id_rsa; cat ../.ssh/id_rsa; cat ~/diary.txt; "
            "cat ~/.netrc; grep -r CANARY ~ 2>&1; find ~ -name 'id_rsa'; "
            "cd .. && echo \"LISTED: $(ls -A | tr '\\n' ' ')\"",
            home.ws,
            conf,
            home.env(),
        )
    assert "hello from the workspace" in out and "TOOL-OK" in out
    assert_no_canary(home, out)
    assert "No such file or directory" in out
    # The cwd was entered again through the new view: `..` is the covered home.
    listed = next(line for line in out.splitlines() if line.startswith("LISTED:"))
    assert sorted(listed.split()[1:]) == ["tools", "ws"], out
    assert code == 0


@needs_mounts
async def test_a_bound_back_file_reads_and_a_hidden_one_inside_a_root_does_not(home: Home) -> None:
    (home.ws / "token.secret").write_text(home.inner)
    view = home.view(
        home.ws, home.tmp, home.path / "notes.txt", extra_hidden=(str(home.ws / "token.secret"),)
    )
    with confine(home, view) as conf:
        _, out = await run(
            "cat ~/notes.txt; cat token.secret; wc -c < token.secret; echo end",
            home.ws,
            conf,
            home.env(),
        )
    assert "notes may be read" in out and "end" in out
    assert_no_canary(home, out)
    assert (home.ws / "token.secret").read_text() == home.inner


@needs_mounts
@FLAVOURS
async def test_secrets_stay_covered_when_the_workspace_is_the_home(
    home: Home, support: SandboxSupport | None
) -> None:
    # Nothing to hide around the workspace, so no tmpfs: the covers alone keep the secrets.
    conf = Confinement(
        write_roots=[home.path],
        temp_dir=home.tmp,
        view=plan_read_view(home=str(home.path), visible=[str(home.path)], hidden=home.hidden()),
        support=support,
    )
    with conf:
        _, out = await run(
            "cat .ssh/id_rsa .netrc; ls -A .ssh; grep -r CANARY . 2>&1; "
            "touch .ssh/planted; echo x > .netrc; cat diary.txt",
            home.path,
            conf,
            home.env(),
        )
    assert home.private in out  # inside the workspace, not hidden: readable as before
    assert home.ssh not in out and home.netrc not in out
    assert sorted(p.name for p in (home.path / ".ssh").iterdir()) == ["id_rsa"]
    assert (home.path / ".netrc").read_text() == home.netrc + "\n"


@needs_mounts
@FLAVOURS
async def test_writes_and_git_stay_confined_under_the_view(
    home: Home, support: SandboxSupport | None
) -> None:
    with confine(home, home.view(), support) as conf:
        _, out = await run(
            "echo in > in.txt; echo evil > .git/HEAD; echo out > ~/tools/planted; "
            "echo out > ~/planted; echo done",
            home.ws,
            conf,
            home.env(),
        )
    assert "done" in out
    assert (home.ws / "in.txt").read_text() == "in\n"
    assert (home.ws / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert not (home.tools / "planted").exists() and not (home.path / "planted").exists()


@needs_mounts
@FLAVOURS
async def test_the_command_cannot_undo_the_covers(
    home: Home, support: SandboxSupport | None
) -> None:
    # Unmount the tmpfs over the home and the cover over a secret, directly and from a new
    # mount namespace: Landlock forbids any change of the mount topology.
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        f"home = {str(home.path)!r}\n"
        "for target in (home, home + '/.ssh', home + '/ws'):\n"
        "    print('umount', libc.umount2(target.encode(), 2), ctypes.get_errno())\n"
        "print('unshare', libc.unshare(0x20000), ctypes.get_errno())\n"
        "print('umount again', libc.umount2(home.encode(), 2), ctypes.get_errno())\n"
        "for p in (home + '/.ssh/id_rsa', home + '/diary.txt'):\n"
        "    try:\n"
        "        print(open(p).read())\n"
        "    except OSError as e:\n"
        "        print('refused', e.errno)\n"
    )
    with confine(home, home.view(), support) as conf:
        _, out = await run(f"{sys.executable} -c {shlex.quote(script)}", home.ws, conf, home.env())
    assert "refused" in out, out
    assert_no_canary(home, out)


@needs_mounts
async def test_proc_of_an_outside_process_does_not_lead_into_the_home(home: Home) -> None:
    me = os.getpid()
    with confine(home, home.view()) as conf:
        _, out = await run(
            f"cat /proc/{me}/root{home.path}/.ssh/id_rsa; cat /proc/{me}/root{home.path}/diary.txt; "
            f"ls /proc/{me}/root{home.path}/; cat /proc/1/root{home.path}/.netrc; echo end",
            home.ws,
            conf,
            home.env(),
        )
    assert "end" in out
    assert_no_canary(home, out)


class _FileHandle(ctypes.Structure):
    _fields_ = [
        ("handle_bytes", ctypes.c_uint),
        ("handle_type", ctypes.c_int),
        ("f_handle", ctypes.c_ubyte * 128),
    ]


@needs_mounts
@as_root
async def test_a_file_handle_does_not_lead_around_the_mounts(home: Home) -> None:
    # open_by_handle_at opens an inode by number, below every mount: root keeps
    # CAP_DAC_READ_SEARCH unless the sandbox drops it.
    libc = ctypes.CDLL(None, use_errno=True)
    handle, mount_id = _FileHandle(handle_bytes=128), ctypes.c_int()
    target = str(home.path / ".ssh" / "id_rsa").encode()
    if libc.name_to_handle_at(-100, target, ctypes.byref(handle), ctypes.byref(mount_id), 0) != 0:
        pytest.skip("this filesystem gives no file handles")
    raw = bytes(handle.f_handle)[: handle.handle_bytes]
    script = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "class H(ctypes.Structure):\n"
        "    _fields_ = [('n', ctypes.c_uint), ('t', ctypes.c_int), ('b', ctypes.c_ubyte * 128)]\n"
        f"h = H(n={handle.handle_bytes}, t={handle.handle_type})\n"
        f"ctypes.memmove(h.b, {raw!r}, {len(raw)})\n"
        f"mount = os.open({str(home.ws)!r}, os.O_RDONLY)\n"
        "fd = libc.open_by_handle_at(mount, ctypes.byref(h), os.O_RDONLY)\n"
        "print('fd', fd, ctypes.get_errno())\n"
        "if fd >= 0:\n"
        "    print(os.read(fd, 100))\n"
    )
    with confine(home, home.view()) as conf:
        _, out = await run(f"{sys.executable} -c {shlex.quote(script)}", home.ws, conf, home.env())
    assert "fd -1 1" in out, out  # EPERM
    assert_no_canary(home, out)


@needs_mounts
async def test_block_devices_read_as_empty(home: Home) -> None:
    devices = readable_block_devices()
    if not devices:
        pytest.skip("no block device this user could read")
    command = "; ".join(f"head -c 4096 {d} | wc -c" for d in devices)
    with confine(home, home.view()) as conf:
        _, out = await run(command, home.ws, conf, home.env())
    assert out.split() == ["0"] * len(devices), out


@needs_mounts
async def test_system_secrets_read_as_empty(home: Home) -> None:
    shadow = Path("/etc/shadow")
    if not (shadow.is_file() and os.access(shadow, os.R_OK) and shadow.stat().st_size):
        pytest.skip("no readable /etc/shadow here")
    first = shadow.read_text().splitlines()[0]
    with confine(home, home.view()) as conf:
        _, out = await run(
            "wc -c < /etc/shadow; cat /etc/shadow; ls /etc/ssl/private 2>&1",
            home.ws,
            conf,
            home.env(),
        )
    assert first not in out
    assert out.splitlines()[0] == "0"


# -- where mounts are not available ------------------------------------------------------------


@needs_sandbox
async def test_without_mounts_landlock_keeps_hidden_files_unreadable(home: Home) -> None:
    landlock_only = SandboxSupport(
        landlock=SUPPORT.landlock, namespaces=False, user_namespace=SUPPORT.user_namespace
    )
    with confine(home, home.view(), support=landlock_only) as conf:
        assert conf.reads_by == "landlock"
        _, out = await run(
            "cat a.txt; mytool; cat ~/.ssh/id_rsa ~/diary.txt ~/.netrc; "
            "grep -r CANARY ~ 2>&1; echo w > in.txt; echo w > ~/planted; echo end",
            home.ws,
            conf,
            home.env(),
        )
    assert "hello from the workspace" in out and "TOOL-OK" in out and "end" in out
    assert "Permission denied" in out
    assert_no_canary(home, out)
    assert (home.ws / "in.txt").exists() and not (home.path / "planted").exists()


@needs_sandbox
def test_without_a_view_reads_are_reported_unconfined(home: Home) -> None:
    with confine(home, None) as conf:
        assert conf.reads_by is None
    with Confinement(filesystem=False, view=home.view()) as conf:
        assert conf.reads_by is None  # no filesystem confinement: nothing hidden either


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("capsh") is None, reason="needs root and capsh"
)
def test_an_inheritable_capability_does_not_come_back_at_exec(tmp_path: Path) -> None:
    # Root regains at exec whatever is inheritable: a parent started with
    # `capsh --inh=cap_dac_read_search` must not hand the command open_by_handle_at back.
    script = (
        "import asyncio\n"
        "from handrail import Runtime\n"
        "from handrail.builtin import RunShell\n"
        "async def main():\n"
        f"    rt = Runtime([RunShell()], root={str(tmp_path)!r}, mode='bypass')\n"
        "    r = await rt.call('run_shell', {'command': 'grep -E \"^Cap(Inh|Eff)\" /proc/self/status'})\n"
        "    print(r.content)\n"
        "    await rt.aclose()\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        ["capsh", "--inh=cap_dac_read_search", "--", "-c", f'{sys.executable} -c "$0"', script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    caps = dict(line.split(":") for line in done.stdout.splitlines() if line.startswith("Cap"))
    dac_read_search = 1 << 2
    assert caps and all(not int(v.strip(), 16) & dac_read_search for v in caps.values())
