"""write_file never writes outside its roots and cannot be raced into doing so.

Every confinement case goes through the whole `Runtime` (where the policy refuses it) and
through the tool alone (where the sandbox refuses it again), and checks that no byte of the
tree changed, inside or outside the root. A SIGKILL in the middle of a write is
tests/reliability/test_kill_write.py.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import handrail._atomic as _atomic
import handrail.sandbox._files as _files
from handrail import (
    ErrorCode,
    Registry,
    Runtime,
    Session,
    ToolContext,
    ToolFailure,
)
from handrail.builtin._read_file import ReadFile
from handrail.builtin._write_file import WriteFile, WriteFileArgs


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/ws (the root) with a .git and a .handrail, next to tmp/outside, tmp/ws-evil, tmp/home."""
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_bytes(b"[core]\n")
    (ws / ".handrail").mkdir()
    (ws / ".handrail" / "settings.json").write_bytes(b"{}\n")
    (ws / "sub" / ".git").mkdir(parents=True)
    (ws / "sub" / ".git" / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (base / "outside").mkdir()
    (base / "outside" / "victim.txt").write_bytes(b"outside original\n")
    (base / "ws-evil").mkdir()
    (base / "home").mkdir()
    os.symlink(base / "outside", ws / "link")
    os.symlink(base / "outside" / "victim.txt", ws / "innocent.txt")
    os.symlink(base / "outside" / "new.txt", ws / "dangling")
    monkeypatch.setenv("HOME", str(base / "home"))
    return base


def snapshot_tree(base: Path) -> dict[str, bytes | str]:
    """Every file's bytes and every symlink's target under `base`, without following links."""
    state: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            if os.path.islink(path):
                state[rel] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                state[rel] = Path(path).read_bytes()
            else:
                state[rel] = "dir"
    return state


def context(root: Path) -> ToolContext:
    return ToolContext(
        call_id="c1",
        tool_name="write_file",
        cwd=root,
        read_roots=(root,),
        write_roots=(root,),
        session=Session(),
    )


ESCAPES = [
    pytest.param("../outside/x.txt", id="dotdot"),
    pytest.param("@../outside/x.txt", id="mention-dotdot"),
    pytest.param("{base}/outside/x.txt", id="absolute-outside"),
    pytest.param("~/x.txt", id="tilde-home"),
    pytest.param("link/x.txt", id="symlinked-dir-to-outside"),
    pytest.param("link", id="the-symlink-itself"),
    pytest.param("innocent.txt", id="symlink-to-outside-file"),
    pytest.param("dangling", id="dangling-symlink-to-outside"),
    pytest.param("{base}/ws-evil/x.txt", id="sibling-with-root-prefix"),
    pytest.param("../ws-evil/x.txt", id="sibling-relative"),
    pytest.param(".git/config", id="git-config"),
    pytest.param(".git/hooks/pre-commit", id="git-new-hook"),
    pytest.param(".handrail/settings.json", id="handrail-settings"),
    pytest.param("sub/.git/HEAD", id="nested-git"),
]


@pytest.mark.parametrize("mode", ["accept_edits", "bypass"])
@pytest.mark.parametrize("path", ESCAPES)
async def test_escapes_are_refused_through_the_runtime(base: Path, path: str, mode: str) -> None:
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=base / "ws", mode=mode)
    before = snapshot_tree(base)
    r = await rt.call("write_file", {"file_path": path.format(base=base), "content": "pwned\n"})
    assert not r.ok
    assert r.error == ErrorCode.OUTSIDE_WRITE_ROOTS, r.content
    assert snapshot_tree(base) == before


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused_by_the_tool_itself(base: Path, path: str) -> None:
    # Without the policy in front: the sandbox helpers the tool calls refuse on their own.
    before = snapshot_tree(base)
    args = WriteFileArgs(file_path=path.format(base=base), content="pwned\n")
    with pytest.raises(ToolFailure) as info:
        WriteFile().run(args, context(base / "ws"))
    assert info.value.code == ErrorCode.OUTSIDE_WRITE_ROOTS
    assert snapshot_tree(base) == before


async def test_a_nul_byte_is_refused(base: Path) -> None:
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=base / "ws", mode="bypass")
    before = snapshot_tree(base)
    r = await rt.call("write_file", {"file_path": "a\x00/../../outside/x", "content": "pwned"})
    assert not r.ok
    assert "NUL" in r.content
    assert snapshot_tree(base) == before
    with pytest.raises(ToolFailure):
        WriteFile().run(WriteFileArgs(file_path="a\x00b", content="x"), context(base / "ws"))
    assert snapshot_tree(base) == before


async def test_the_refusal_names_the_allowed_roots(base: Path) -> None:
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=base / "ws", mode="accept_edits")
    r = await rt.call("write_file", {"file_path": "../outside/x.txt", "content": "x"})
    assert str(base / "ws") in r.content
    assert r.denial is not None
    assert r.denial.source == "roots"


async def test_writes_inside_the_root_through_an_inside_symlink_are_fine(base: Path) -> None:
    ws = base / "ws"
    (ws / "real").mkdir()
    os.symlink(ws / "real", ws / "alias")
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")
    r = await rt.call("write_file", {"file_path": "alias/x.txt", "content": "ok\n"})
    assert r.ok, r.content
    assert (ws / "real" / "x.txt").read_bytes() == b"ok\n"


# -- a symlink swapped in after the check --------------------------------------------------------


def race(
    monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]
) -> Callable[[str, ToolContext], str]:
    """Make the sandbox's own confinement check pass, then let the attacker swap the tree.

    `atomic_write` (and `ensure_parent`) resolve and check the path first; the swap happens
    right after that check returns, before anything is opened: the worst possible moment.
    """
    real = _files.confine_write
    swapped: list[bool] = []

    def racing(path: str, ctx: ToolContext) -> str:
        resolved = real(path, ctx)
        if not swapped:
            swapped.append(True)
            swap()
        return resolved

    monkeypatch.setattr(_files, "confine_write", racing)
    return racing


async def read_all(rt: Runtime, path: str) -> None:
    r = await rt.call("read_file", {"file_path": path})
    assert r.ok, r.content


async def test_parent_directory_swapped_for_a_symlink_is_not_followed(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    (ws / "docs").mkdir()
    (ws / "docs" / "victim.txt").write_bytes(b"inside original\n")
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")
    await read_all(rt, "docs/victim.txt")

    def swap() -> None:
        os.rename(ws / "docs", ws / "docs-moved")
        os.symlink(base / "outside", ws / "docs")

    race(monkeypatch, swap)
    r = await rt.call("write_file", {"file_path": "docs/victim.txt", "content": "pwned\n"})
    assert r.error == ErrorCode.OUTSIDE_WRITE_ROOTS, r.content
    assert "nothing was written" in r.content
    assert (base / "outside" / "victim.txt").read_bytes() == b"outside original\n"
    assert sorted(os.listdir(base / "outside")) == ["victim.txt"]
    assert (ws / "docs-moved" / "victim.txt").read_bytes() == b"inside original\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="open-time path check needs /proc")
async def test_a_higher_directory_swapped_for_a_symlink_is_caught_at_open(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # O_NOFOLLOW guards only the last component; the real path of the opened directory is
    # checked too, so swapping a directory further up is caught.
    ws = base / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    (ws / "a" / "b" / "f.txt").write_bytes(b"inside\n")
    (base / "outside" / "b").mkdir()
    (base / "outside" / "b" / "f.txt").write_bytes(b"outside b\n")
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")
    await read_all(rt, "a/b/f.txt")

    def swap() -> None:
        os.rename(ws / "a", ws / "a-moved")
        os.symlink(base / "outside", ws / "a")

    race(monkeypatch, swap)
    r = await rt.call("write_file", {"file_path": "a/b/f.txt", "content": "pwned\n"})
    assert r.error == ErrorCode.OUTSIDE_WRITE_ROOTS, r.content
    assert (base / "outside" / "b" / "f.txt").read_bytes() == b"outside b\n"
    assert sorted(os.listdir(base / "outside" / "b")) == ["f.txt"]


async def test_the_file_swapped_for_a_symlink_is_not_written_through(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    (ws / "f.txt").write_bytes(b"inside\n")
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")
    await read_all(rt, "f.txt")

    def swap() -> None:
        os.unlink(ws / "f.txt")
        os.symlink(base / "outside" / "victim.txt", ws / "f.txt")

    race(monkeypatch, swap)
    r = await rt.call("write_file", {"file_path": "f.txt", "content": "pwned\n"})
    assert not r.ok
    assert r.error == ErrorCode.OUTSIDE_WRITE_ROOTS, r.content
    assert (base / "outside" / "victim.txt").read_bytes() == b"outside original\n"
    assert os.path.islink(ws / "f.txt")  # the link itself was not replaced either


async def test_a_new_files_folder_swapped_for_a_symlink_is_refused(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = base / "ws"
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")

    def swap() -> None:
        os.symlink(base / "outside", ws / "newdir")

    race(monkeypatch, swap)
    r = await rt.call("write_file", {"file_path": "newdir/x.txt", "content": "pwned\n"})
    assert r.error == ErrorCode.OUTSIDE_WRITE_ROOTS, r.content
    assert sorted(os.listdir(base / "outside")) == ["victim.txt"]


def test_a_stale_check_cannot_redirect_atomic_write(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The check ran before the swap and is not repeated: its answer is the pre-swap path.
    ws = base / "ws"
    (ws / "docs").mkdir()
    stale = str(ws / "docs" / "victim.txt")
    os.rename(ws / "docs", ws / "docs-moved")
    os.symlink(base / "outside", ws / "docs")
    monkeypatch.setattr(_files, "confine_write", lambda path, ctx: stale)
    with pytest.raises(ToolFailure) as info:
        _files.atomic_write(stale, b"pwned\n", context(ws))
    assert info.value.code == ErrorCode.OUTSIDE_WRITE_ROOTS
    assert (base / "outside" / "victim.txt").read_bytes() == b"outside original\n"
    assert sorted(os.listdir(base / "outside")) == ["victim.txt"]


# -- the sweep of stale temporary files ----------------------------------------------------------


def dead_pid() -> int:
    """The PID of a process that has exited and been reaped (its reuse meanwhile: negligible)."""
    proc = subprocess.Popen(["true"])
    proc.wait(timeout=30)
    return proc.pid


async def test_planted_stale_names_cannot_turn_the_sweep_against_files(
    base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sweep removes a dead writer's temporary names. Names planted to look like one must
    # not make it delete or follow anything else: a symlink and a folder are left alone, and a
    # hard link loses only its own name, never the bytes of the file it shares.
    monkeypatch.setattr(_atomic, "_SWEPT", {})  # a reused inode would look swept already
    ws = base / "ws"
    dead = dead_pid()
    stale = f".a.txt.handrail-{dead}-{'a' * 12}.tmp"
    os.symlink(base / "outside" / "victim.txt", ws / stale)
    folder = ws / f".b.txt.handrail-{dead}-{'b' * 12}.tmp"
    folder.mkdir()
    (folder / "keep").write_bytes(b"keep\n")
    (ws / "shared.txt").write_bytes(b"shared original\n")
    os.link(ws / "shared.txt", ws / f".c.txt.handrail-{dead}-{'c' * 12}.tmp")
    before = snapshot_tree(base / "outside")
    rt = Runtime(Registry([ReadFile(), WriteFile()]), root=ws, mode="accept_edits")
    r = await rt.call("write_file", {"file_path": "a.txt", "content": "new\n"})
    assert r.ok, r.content
    assert snapshot_tree(base / "outside") == before
    assert os.readlink(ws / stale) == str(base / "outside" / "victim.txt")
    assert (folder / "keep").read_bytes() == b"keep\n"
    assert (ws / "shared.txt").read_bytes() == b"shared original\n"
    assert not (ws / f".c.txt.handrail-{dead}-{'c' * 12}.tmp").exists()
