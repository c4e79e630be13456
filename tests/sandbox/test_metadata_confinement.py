"""Metadata under the OS sandbox: times, modes, owners and attributes outside the roots stay put.

Landlock confines writes, creations and removals but not utime, chmod, chown or setxattr; the
command's mount namespace makes every mount but the write roots read-only for those. Real
processes in real namespaces: each test plants a canary file and folder beside the workspace,
plays the attacker on them, and checks their mtime, ctime, mode and owner did not move (any
successful change moves the ctime, even one that sets the same value).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from handrail.sandbox import SandboxSupport, ShellProcess, sandbox_support
from handrail.sandbox._capture import OutputCapture
from handrail.sandbox._os_confinement import Confinement
from handrail.sandbox._read_view import ReadView, plan_read_view

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.keeps_metadata),
    reason="this machine cannot make mounts read-only in a mount namespace (mount_setattr)",
)
# The same from inside a user namespace, as for an unprivileged user; root can take that path.
IN_USERNS = dataclasses.replace(SUPPORT, user_namespace=True)
FLAVOURS = pytest.mark.parametrize("support", [SUPPORT, IN_USERNS], ids=["direct", "userns"])
REFUSED = ("Read-only file system", "Operation not permitted", "Permission denied")


class Layout:
    """A workspace with `.git`, the command's temp folder, and a canary folder beside them."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.ws = base / "ws"
        self.tmp = base / "cmdtmp"
        self.canary = base / "canary"
        for folder in (self.ws / ".git", self.tmp, self.canary / "sub"):
            folder.mkdir(parents=True)
        (self.ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (self.ws / "inside.txt").write_text("inside\n")
        (self.canary / "secret.txt").write_text("canary\n")
        self.watched = (
            self.canary,
            self.canary / "sub",
            self.canary / "secret.txt",
            self.ws / ".git",
            self.ws / ".git" / "HEAD",
        )

    def snapshot(self) -> dict[Path, tuple[int, ...]]:
        out: dict[Path, tuple[int, ...]] = {}
        for p in self.watched:
            st = os.lstat(p)
            out[p] = (st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_ctime_ns)
        return out

    def view(self) -> ReadView:
        # The base is "the home": covered, with the workspace, temp and canary bound back.
        return plan_read_view(
            home=str(self.base),
            visible=[str(self.ws), str(self.tmp), str(self.canary)],
            hidden=(),
        )


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    return Layout(tmp_path)


async def run(command: str, cwd: Path, conf: Confinement) -> tuple[int | None, str]:
    cap = OutputCapture(None)
    proc = await ShellProcess.start(
        command, cwd=cwd, env=dict(os.environ), capture=cap, confinement=conf
    )
    await proc.wait(60)
    await proc.finish()
    cap.close()
    return proc.returncode, cap.render()


def attacks(target: Path) -> list[str]:
    """Commands that change only the metadata of `target` (never its contents)."""
    q = shlex.quote(str(target))
    uid, gid = os.geteuid(), os.getegid()
    other = "1:1" if uid == 0 else f"{uid}:{gid}"  # root could give it away; others re-own it
    found = [
        f"touch -c {q}",
        f"touch -c -d '2001-02-03 04:05' {q}",
        f"chmod 000 {q}",
        f"chown {other} {q}",
        f'python3 -c \'import os, sys; os.setxattr(sys.argv[1], "user.pwned", b"1")\' {q}',
    ]
    if shutil.which("setfacl"):
        found.append(f"setfacl -m u:{uid}:r {q}")
    return found


def script(targets: list[Path]) -> str:
    """Each attack followed by its exit status on a line of its own."""
    return "\n".join(f'{a} 2>&1; echo "rc=$?"' for t in targets for a in attacks(t))


def test_the_probe_found_read_only_mounts_and_the_confinement_uses_them(layout: Layout) -> None:
    with Confinement(write_roots=[layout.ws], temp_dir=layout.tmp) as conf:
        assert conf.keeps_metadata
    with Confinement(write_roots=[layout.ws], filesystem=False) as conf:
        assert not conf.keeps_metadata  # unconfined: no mount namespace to make read-only


@FLAVOURS
@pytest.mark.parametrize("with_view", [False, True], ids=["no-view", "view"])
async def test_metadata_outside_the_roots_and_in_git_cannot_change(
    layout: Layout, support: SandboxSupport, with_view: bool
) -> None:
    before = layout.snapshot()
    targets = [layout.canary, layout.canary / "sub", layout.canary / "secret.txt"]
    targets += [layout.ws / ".git", layout.ws / ".git" / "HEAD"]
    view = layout.view() if with_view else None
    with Confinement(
        write_roots=[layout.ws], temp_dir=layout.tmp, support=support, view=view
    ) as conf:
        code, out = await run(script(targets), layout.ws, conf)
    assert code == 0, out
    # One chunk of output per attack, each ending in its status: all failed, each refused.
    chunks = re.split(r"^rc=(\d+)$", out, flags=re.MULTILINE)
    said, statuses = chunks[0:-1:2], chunks[1::2]
    assert len(statuses) == len(targets) * len(attacks(targets[0])), out
    assert "0" not in statuses, out
    assert all(any(r in text for r in REFUSED) for text in said), out
    assert layout.snapshot() == before
    assert not os.listxattr(layout.canary / "secret.txt")


@FLAVOURS
async def test_the_same_changes_inside_the_roots_work(
    layout: Layout, support: SandboxSupport
) -> None:
    inside, made = layout.ws / "inside.txt", layout.tmp / "made.txt"
    command = (
        "touch -d '2001-02-03 04:05' inside.txt && chmod 600 inside.txt && "
        "chmod 700 $TMPDIR && touch $TMPDIR/made.txt && chmod 640 $TMPDIR/made.txt && "
        "mkdir -p deep/er && chmod 711 deep/er && echo ok > /dev/null && echo done"
    )
    env_tmp = f"TMPDIR={shlex.quote(str(layout.tmp))} "
    with Confinement(write_roots=[layout.ws], temp_dir=layout.tmp, support=support) as conf:
        code, out = await run(env_tmp + "sh -c " + shlex.quote(command), layout.ws, conf)
    assert code == 0 and out.strip() == "done", out
    assert inside.stat().st_mode & 0o777 == 0o600
    assert inside.stat().st_mtime < 1_000_000_000  # 2001
    assert layout.tmp.stat().st_mode & 0o777 == 0o700
    assert made.stat().st_mode & 0o777 == 0o640
    assert (layout.ws / "deep" / "er").stat().st_mode & 0o777 == 0o711


async def test_devices_stay_writable_but_their_metadata_does_not(layout: Layout) -> None:
    before = os.stat("/dev/null")
    with Confinement(write_roots=[layout.ws], temp_dir=layout.tmp) as conf:
        code, out = await run(
            'echo x > /dev/null && head -c 3 /dev/zero | wc -c; chmod 666 /dev/null; echo "rc=$?"',
            layout.ws,
            conf,
        )
    assert code == 0, out
    assert out.splitlines()[0].strip() == "3", out
    assert "rc=1" in out and "Read-only file system" in out, out
    assert os.stat("/dev/null").st_ctime_ns == before.st_ctime_ns
