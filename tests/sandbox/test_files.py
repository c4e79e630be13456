"""The sandbox file layer: checked reads, atomic writes, parent folders, directory listings."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from pathlib import Path

import pytest

import handrail._atomic as _atomic
import handrail.sandbox._files as _files
from handrail import ErrorCode, Session, ToolContext, ToolFailure
from handrail.sandbox import (
    atomic_write,
    confine_write,
    ensure_parent,
    list_dir_names,
    read_file_bytes,
    stat_file,
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/ws (the root) and tmp/outside, both real directories."""
    base = Path(os.path.realpath(tmp_path))
    (base / "ws").mkdir()
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_bytes(b"secret\n")
    return base


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(
        call_id="c",
        tool_name="t",
        cwd=root,
        read_roots=(root,),
        write_roots=(root,),
        session=Session(),
    )


def temp_files(folder: Path) -> list[str]:
    """Everything in `folder` that looks like a temporary file of handrail's."""
    return [n for n in os.listdir(folder) if ".handrail-" in n or n.endswith(".tmp")]


def dead_pid() -> int:
    """The PID of a process that has exited and been reaped (its reuse meanwhile: negligible)."""
    proc = subprocess.Popen(["true"])
    proc.wait(timeout=30)
    return proc.pid


def unnamed_files_work(folder: Path) -> bool:
    """Whether this file system makes O_TMPFILE files."""
    try:
        fd = os.open(folder, getattr(os, "O_TMPFILE", 0) | os.O_WRONLY, 0o600)
    except OSError:
        return False
    os.close(fd)
    return True


@pytest.fixture(params=["unnamed", "named"])
def write_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test over both ways of writing: O_TMPFILE, and the portable named temp file."""
    if request.param == "named":
        monkeypatch.setattr(_atomic, "_O_TMPFILE", 0)
    return str(request.param)


# -- list_dir_names ----------------------------------------------------------------------------


def test_list_dir_names_is_sorted(tree: Path) -> None:
    ws = tree / "ws"
    for name in ("b.txt", "a.txt", ".hidden", "sub"):
        (ws / name).mkdir() if name == "sub" else (ws / name).write_bytes(b"")
    assert list_dir_names(str(ws), ctx_for(ws)) == [".hidden", "a.txt", "b.txt", "sub"]


def test_list_dir_names_of_nothing_is_empty(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "f.txt").write_bytes(b"")
    assert list_dir_names("missing", ctx_for(ws)) == []
    assert list_dir_names("f.txt", ctx_for(ws)) == []


def test_list_dir_names_is_capped(tree: Path) -> None:
    ws = tree / "ws"
    for n in range(30):
        (ws / f"f{n:02d}").write_bytes(b"")
    assert len(list_dir_names(str(ws), ctx_for(ws), limit=10)) == 10


def test_list_dir_names_stays_inside_the_read_roots(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(tree / "outside", ws / "link")
    for path in ("../outside", "link", str(tree / "outside")):
        with pytest.raises(ToolFailure) as info:
            list_dir_names(path, ctx_for(ws))
        assert info.value.code == ErrorCode.OUTSIDE_READ_ROOTS


def test_outside_the_roots_names_each_root_once(tree: Path) -> None:
    ws = tree / "ws"
    with pytest.raises(ToolFailure) as info:
        list_dir_names("../outside", ctx_for(ws))  # the workspace is a read and a write root
    assert str(info.value) == (
        f"{tree / 'outside'} is outside the allowed roots ({ws}); use a path inside them."
    )


# -- read_file_bytes ---------------------------------------------------------------------------


def test_read_file_bytes_returns_the_identity(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "a.txt").write_bytes(b"hello\n")
    os.chmod(ws / "a.txt", 0o640)
    data = read_file_bytes("a.txt", ctx_for(ws), max_bytes=100)
    st = os.stat(ws / "a.txt")
    assert (data.path, data.data, data.size) == (str(ws / "a.txt"), b"hello\n", 6)
    assert (data.mtime_ns, data.mode) == (st.st_mtime_ns, 0o640)


def test_read_file_bytes_refuses_a_fifo_without_blocking(tree: Path) -> None:
    ws = tree / "ws"
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolFailure) as info:
        read_file_bytes("pipe", ctx_for(ws), max_bytes=100)
    assert info.value.code == ErrorCode.NOT_A_FILE


def test_read_file_bytes_refuses_what_is_over_the_cap(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "big").write_bytes(b"x" * 101)
    with pytest.raises(ToolFailure) as info:
        read_file_bytes("big", ctx_for(ws), max_bytes=100)
    assert info.value.code == ErrorCode.FILE_TOO_LARGE


def test_read_file_bytes_refuses_a_symlink_to_outside(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(tree / "outside" / "secret.txt", ws / "innocent.txt")
    with pytest.raises(ToolFailure) as info:
        read_file_bytes("innocent.txt", ctx_for(ws), max_bytes=100)
    assert info.value.code == ErrorCode.OUTSIDE_READ_ROOTS


def test_stat_file_is_none_for_missing_paths(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "f").write_bytes(b"")
    assert stat_file(str(ws / "nope")) is None
    assert stat_file(str(ws / "f" / "under-a-file")) is None
    os.symlink(ws / "nope", ws / "dangling")
    st = stat_file(str(ws / "dangling"))
    assert st is not None
    assert stat.S_ISLNK(st.st_mode)  # lstat: the link itself


# -- ensure_parent -----------------------------------------------------------------------------


def test_ensure_parent_creates_missing_folders(tree: Path) -> None:
    ws = tree / "ws"
    ensure_parent("a/b/c/file.txt", ctx_for(ws))
    assert (ws / "a" / "b" / "c").is_dir()
    assert not (ws / "a" / "b" / "c" / "file.txt").exists()


def test_ensure_parent_with_a_file_in_the_way(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "a").write_bytes(b"x")
    with pytest.raises(ToolFailure) as info:
        ensure_parent("a/b/file.txt", ctx_for(ws))
    assert info.value.code == ErrorCode.NOT_A_FILE
    assert "cannot create the folder" in info.value.message
    assert (ws / "a").read_bytes() == b"x"


def test_ensure_parent_refuses_outside_and_protected_folders(tree: Path) -> None:
    ws = tree / "ws"
    for path in ("../outside/new/x.txt", ".git/objects/x", ".handrail/x/y"):
        with pytest.raises(ToolFailure) as info:
            ensure_parent(path, ctx_for(ws))
        assert info.value.code == ErrorCode.OUTSIDE_WRITE_ROOTS
    assert not (tree / "outside" / "new").exists()
    assert not (ws / ".git").exists()


# -- atomic_write ------------------------------------------------------------------------------


def test_atomic_write_creates_with_the_umask_mode(tree: Path, write_path: str) -> None:
    ws = tree / "ws"
    umask = os.umask(0o027)
    try:
        atomic_write("new.txt", b"data", ctx_for(ws))
    finally:
        os.umask(umask)
    assert (ws / "new.txt").read_bytes() == b"data"
    assert stat.S_IMODE(os.stat(ws / "new.txt").st_mode) == 0o640
    assert temp_files(ws) == []


def test_atomic_write_keeps_the_mode_and_replaces_the_inode(tree: Path, write_path: str) -> None:
    ws = tree / "ws"
    (ws / "run.sh").write_bytes(b"old")
    os.chmod(ws / "run.sh", 0o755)
    before = os.stat(ws / "run.sh").st_ino
    atomic_write("run.sh", b"new", ctx_for(ws))
    st = os.stat(ws / "run.sh")
    assert stat.S_IMODE(st.st_mode) == 0o755
    assert st.st_ino != before  # a rename, not an in-place rewrite
    assert (ws / "run.sh").read_bytes() == b"new"


def test_atomic_write_with_an_explicit_mode(tree: Path) -> None:
    ws = tree / "ws"
    atomic_write("x", b"", ctx_for(ws), mode=0o600)
    assert stat.S_IMODE(os.stat(ws / "x").st_mode) == 0o600


def test_atomic_write_refuses_a_symlink_at_the_target(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "real.txt").write_bytes(b"real")
    os.symlink(ws / "real.txt", ws / "alias.txt")
    stale = str(ws / "alias.txt")
    # What confine_write would have returned had the link appeared after the check.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_files, "confine_write", lambda path, ctx: stale)
        with pytest.raises(ToolFailure) as info:
            atomic_write(stale, b"x", ctx_for(ws))
    assert info.value.code == ErrorCode.OUTSIDE_WRITE_ROOTS
    assert (ws / "real.txt").read_bytes() == b"real"
    assert os.path.islink(ws / "alias.txt")


def test_atomic_write_refuses_a_directory(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "d").mkdir()
    with pytest.raises(ToolFailure) as info:
        atomic_write("d", b"x", ctx_for(ws))
    assert info.value.code == ErrorCode.NOT_A_FILE
    assert (ws / "d").is_dir()


def test_a_failed_rename_leaves_the_old_content_and_no_temp_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch, write_path: str
) -> None:
    ws = tree / "ws"
    (ws / "a.txt").write_bytes(b"old")

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_files.os, "replace", fail)
    with pytest.raises(ToolFailure) as info:
        atomic_write("a.txt", b"new", ctx_for(ws))
    assert "the file is unchanged" in info.value.message
    monkeypatch.undo()
    assert (ws / "a.txt").read_bytes() == b"old"
    assert temp_files(ws) == []


def test_a_failed_write_leaves_the_old_content_and_no_temp_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch, write_path: str
) -> None:
    ws = tree / "ws"
    (ws / "a.txt").write_bytes(b"old")
    real_fsync = os.fsync
    calls: list[int] = []

    def fail_first(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", fail_first)
    with pytest.raises(ToolFailure):
        atomic_write("a.txt", b"new", ctx_for(ws))
    monkeypatch.undo()
    assert (ws / "a.txt").read_bytes() == b"old"
    assert temp_files(ws) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the file")
@pytest.mark.parametrize("exists", [True, False], ids=["replace", "create"])
def test_the_data_is_written_without_a_name(
    tree: Path, monkeypatch: pytest.MonkeyPatch, exists: bool
) -> None:
    # What a SIGKILL during the write would leave: the folder as it is while the data is
    # synced. Unnamed (O_TMPFILE), nothing new is there yet; the name comes after.
    ws = tree / "ws"
    if not unnamed_files_work(ws):
        pytest.skip("this file system has no O_TMPFILE")
    if exists:
        (ws / "a.txt").write_bytes(b"old")
    real_fsync = os.fsync
    seen: list[list[str]] = []

    def looking(fd: int) -> None:
        seen.append(sorted(os.listdir(ws)))
        real_fsync(fd)

    monkeypatch.setattr(_files.os, "fsync", looking)
    atomic_write("a.txt", b"new", ctx_for(ws))
    monkeypatch.undo()
    assert seen[0] == (["a.txt"] if exists else [])  # the data's fsync, before any name
    assert (ws / "a.txt").read_bytes() == b"new"
    assert temp_files(ws) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to name the file")
def test_a_new_file_gets_its_own_name_directly(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tree / "ws"
    if not unnamed_files_work(ws):
        pytest.skip("this file system has no O_TMPFILE")
    (ws / "old.txt").write_bytes(b"old")
    real_link = os.link
    names: list[str] = []

    def recording(
        src: str, dst: str, *, dst_dir_fd: int | None = None, follow_symlinks: bool = True
    ) -> None:
        names.append(dst)
        real_link(src, dst, dst_dir_fd=dst_dir_fd, follow_symlinks=follow_symlinks)

    monkeypatch.setattr(_files.os, "link", recording)
    atomic_write("new.txt", b"new", ctx_for(ws))
    atomic_write("old.txt", b"newer", ctx_for(ws))
    monkeypatch.undo()
    assert names[0] == "new.txt"  # no temporary name at all
    assert re.fullmatch(rf"\.old\.txt\.handrail-{os.getpid()}-[0-9a-f]{{12}}\.tmp", names[1])
    assert (ws / "new.txt").read_bytes() == b"new"
    assert (ws / "old.txt").read_bytes() == b"newer"
    assert temp_files(ws) == []


def test_a_proc_that_cannot_link_falls_back_to_a_named_file(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tree / "ws"
    (ws / "a.txt").write_bytes(b"old")
    os.chmod(ws / "a.txt", 0o640)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(2, "No such file or directory")

    monkeypatch.setattr(_files.os, "link", refuse)
    atomic_write("a.txt", b"new", ctx_for(ws))
    atomic_write("b.txt", b"bee", ctx_for(ws))
    monkeypatch.undo()
    assert (ws / "a.txt").read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(ws / "a.txt").st_mode) == 0o640
    assert (ws / "b.txt").read_bytes() == b"bee"
    assert temp_files(ws) == []


def test_a_new_file_created_meanwhile_is_replaced_as_before(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Absent at the check, present when the unnamed file is linked: the link fails, and the
    # file is replaced by a rename, as a write always did.
    ws = tree / "ws"
    if not unnamed_files_work(ws):
        pytest.skip("this file system has no O_TMPFILE")
    real_open_unnamed = _atomic._open_unnamed

    def open_then_create(dfd: int) -> int | None:
        (ws / "a.txt").write_bytes(b"someone else")
        return real_open_unnamed(dfd)

    monkeypatch.setattr(_atomic, "_open_unnamed", open_then_create)
    atomic_write("a.txt", b"mine", ctx_for(ws), mode=0o600)
    assert (ws / "a.txt").read_bytes() == b"mine"
    assert stat.S_IMODE(os.stat(ws / "a.txt").st_mode) == 0o600
    assert temp_files(ws) == []


def test_a_long_name_still_gets_a_temporary_name(tree: Path, write_path: str) -> None:
    ws = tree / "ws"
    for name in ("x" * 255, "é" * 127):  # at NAME_MAX (255 bytes) already
        (ws / name).write_bytes(b"old")
        atomic_write(name, b"new", ctx_for(ws))
        assert (ws / name).read_bytes() == b"new"
    assert temp_files(ws) == []


def test_the_umask_is_read_without_changing_it(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.umask(0) then os.umask(old) would leave other threads a moment with umask 0.
    ws = tree / "ws"
    if _atomic._read_umask() is None:
        pytest.skip("no Umask line in /proc/self/status")
    umask = os.umask(0o027)
    try:

        def forbidden(mask: int) -> int:
            raise AssertionError("atomic_write changed the process umask")

        monkeypatch.setattr(_atomic.os, "umask", forbidden)
        atomic_write("new.txt", b"data", ctx_for(ws))
        monkeypatch.undo()
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(ws / "new.txt").st_mode) == 0o640


# -- the sweep of stale temporary files ------------------------------------------------------


@pytest.fixture
def sweep_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which directories this process swept (a reused inode would look swept)."""
    monkeypatch.setattr(_atomic, "_SWEPT", {})


@pytest.mark.usefixtures("sweep_due")
def test_a_write_sweeps_the_temporary_files_of_dead_writers(tree: Path) -> None:
    ws = tree / "ws"
    live = subprocess.Popen(["sleep", "30"])
    zombie = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 10  # generous bound for `true` to exit (left unreaped)
        while _atomic._writer_gone(zombie.pid) is False and time.monotonic() < deadline:
            time.sleep(0.01)
        dead = dead_pid()
        names = {
            "dead": f".a.txt.handrail-{dead}-{'0' * 12}.tmp",
            "zombie": f".b.txt.handrail-{zombie.pid}-{'1' * 12}.tmp",
            "dead-other-name": f".other.handrail-{dead}-{'2' * 12}.tmp",
            "live": f".a.txt.handrail-{live.pid}-{'3' * 12}.tmp",
            "mine": f".a.txt.handrail-{os.getpid()}-{'4' * 12}.tmp",
            "not-hidden": f"a.txt.handrail-{dead}-{'5' * 12}.tmp",
            "old-style": ".a.txt.0123456789ab.handrail-tmp",
            "user-file": "notes.tmp",
        }
        for name in names.values():
            (ws / name).write_bytes(b"partial")
        atomic_write("a.txt", b"new", ctx_for(ws))
        left = set(os.listdir(ws))
    finally:
        live.kill()
        live.wait(timeout=10)
        zombie.wait(timeout=10)
    gone = {key for key, name in names.items() if name not in left}
    assert gone == {"dead", "zombie", "dead-other-name"}
    assert "a.txt" in left


@pytest.mark.usefixtures("sweep_due")
def test_a_directory_is_listed_again_only_after_the_interval(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Listing a folder costs about 1 ms per 1,000 entries: not on every write.
    ws = tree / "ws"
    atomic_write("a.txt", b"1", ctx_for(ws))
    stale = ws / f".a.txt.handrail-{dead_pid()}-{'0' * 12}.tmp"
    stale.write_bytes(b"partial")
    atomic_write("a.txt", b"2", ctx_for(ws))
    assert stale.exists()
    monkeypatch.setattr(_atomic, "SWEEP_INTERVAL", 0.0)
    atomic_write("a.txt", b"3", ctx_for(ws))
    assert not stale.exists()


@pytest.mark.usefixtures("sweep_due")
def test_the_sweep_does_not_run_when_the_write_fails(tree: Path) -> None:
    ws = tree / "ws"
    (ws / "d").mkdir()
    stale = ws / f".x.handrail-{dead_pid()}-{'0' * 12}.tmp"
    stale.write_bytes(b"partial")
    with pytest.raises(ToolFailure):
        atomic_write("d", b"x", ctx_for(ws))
    assert stale.exists()


def test_atomic_write_outside_the_roots_is_refused(tree: Path) -> None:
    ws = tree / "ws"
    with pytest.raises(ToolFailure) as info:
        atomic_write("../outside/secret.txt", b"pwned", ctx_for(ws))
    assert info.value.code == ErrorCode.OUTSIDE_WRITE_ROOTS
    assert (tree / "outside" / "secret.txt").read_bytes() == b"secret\n"


def test_a_third_party_tool_cannot_open_a_hidden_path_inside_its_roots(tmp_path: Path) -> None:
    # A tool that opens files with the sandbox helpers gets the hidden set for free, also
    # when the path it was handed leads there through a symlink.
    root = Path(os.path.realpath(tmp_path))
    secret = root / ".ssh" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("CANARY-KEY\n")
    (root / "innocent.txt").symlink_to(secret)
    ctx = ToolContext(
        call_id="c",
        tool_name="t",
        cwd=root,
        read_roots=(root,),
        write_roots=(root,),
        session=Session(),
        hidden_paths=(root / ".ssh",),
    )
    for path in (str(secret), "innocent.txt"):
        with pytest.raises(ToolFailure) as read:
            read_file_bytes(path, ctx, max_bytes=1000)
        assert read.value.code is ErrorCode.OUTSIDE_READ_ROOTS
        assert "CANARY" not in str(read.value)
        with pytest.raises(ToolFailure) as write:
            confine_write(path, ctx)
        assert write.value.code is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert secret.read_text() == "CANARY-KEY\n"
