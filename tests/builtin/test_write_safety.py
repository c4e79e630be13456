"""write_file never writes outside its roots, cannot be raced into doing so, survives SIGKILL.

Every confinement case goes through the whole `Runtime` (where the policy refuses it) and
through the tool alone (where the sandbox refuses it again), and checks that no byte of the
tree changed, inside or outside the root.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

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


# -- SIGKILL during a write ----------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from handrail import Session, ToolContext
    from handrail.sandbox import atomic_write

    root = Path(sys.argv[1])
    size = int(sys.argv[2])
    ctx = ToolContext(
        call_id="w", tool_name="writer", cwd=root, read_roots=(root,), write_roots=(root,),
        session=Session(),
    )
    contents = (b"A" * size, b"B" * size)
    atomic_write(str(root / "data.bin"), contents[0], ctx)
    print("ready", flush=True)
    i = 1
    while True:
        atomic_write(str(root / "data.bin"), contents[i % 2], ctx)
        i += 1
    """
)

TEMP_NAME = re.compile(r"^\.data\.bin\.[0-9a-f]{12}\.handrail-tmp$")


def test_sigkill_during_writes_leaves_old_or_new_content(tmp_path: Path) -> None:
    """Kill a process that rewrites one file in a loop, at 20 random moments.

    After every kill the file holds exactly one of the two contents, never a mix or a
    truncation. A kill between creating the temporary file and renaming it can leave that
    temporary file behind: it is hidden, named after the target, and never mistaken for the
    file. handrail does not sweep such leftovers automatically (a temp file of that name may
    belong to a live writer in another process); at most one is left per kill.
    """
    root = Path(os.path.realpath(tmp_path))
    size = 4 * 1024 * 1024
    a, b = b"A" * size, b"B" * size
    rng = random.Random(20260521)
    kills = 20
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(size)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == b"ready\n", proc.stderr.read() if proc.stderr else line
            if rng.random() < 0.9:
                # Mostly mid-loop; sometimes at once, while the first rewrite starts.
                proc_wait_quietly(proc, rng.uniform(0.0, 0.05))
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=30)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        assert proc.returncode == -signal.SIGKILL
        data = (root / "data.bin").read_bytes()
        assert data in (a, b), f"mixed content: {len(data)} bytes, starts {data[:1]!r}"
        leftovers = [n for n in os.listdir(root) if n != "data.bin"]
        assert all(TEMP_NAME.match(n) for n in leftovers), leftovers
    leftovers = len(os.listdir(root)) - 1
    assert leftovers <= kills
    # A leftover temporary file proves that some kill landed in the middle of a write (the
    # write of 4 MB takes far longer than the gap between writes), so the window was tested.
    assert leftovers >= 1


def proc_wait_quietly(proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Let the writer run for `seconds` (it never exits on its own)."""
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        pass
