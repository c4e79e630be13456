"""Workspace providers make real trees with real git and tar, and refuse hostile input."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import shutil
import stat
import subprocess
import tarfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from handrail.errors import ConfigurationError
from handrail.ray._git import GitWorkspace
from handrail.ray._workspace import (
    DirWorkspace,
    EmptyWorkspace,
    PathWorkspace,
    TarWorkspace,
    Workspace,
    WorkspaceError,
    remove_workspace,
)

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def nodes(tmp_path: Path) -> Path:
    """The directory the host makes workspaces in; each test asserts what is left there."""
    path = tmp_path / "nodes"
    path.mkdir()
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    path = tmp_path / "cache"
    path.mkdir()
    return path


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


# --- EmptyWorkspace / PathWorkspace -----------------------------------------------------------


def test_empty_workspace_is_a_new_empty_directory(nodes: Path, cache: Path) -> None:
    root = EmptyWorkspace().make(nodes / "ws", cache)
    assert root == (nodes / "ws").resolve()
    assert root.is_absolute()
    assert list(root.iterdir()) == []
    assert EmptyWorkspace.owned


def test_an_existing_dest_is_refused_and_kept(nodes: Path, cache: Path) -> None:
    (nodes / "ws").mkdir()
    (nodes / "ws" / "keep.txt").write_text("mine")
    with pytest.raises(WorkspaceError, match="exists already"):
        EmptyWorkspace().make(nodes / "ws", cache)
    assert (nodes / "ws" / "keep.txt").read_text() == "mine"
    assert [p.name for p in nodes.iterdir()] == ["ws"]


def test_path_workspace_is_used_in_place_and_not_owned(
    tmp_path: Path, nodes: Path, cache: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    ws = PathWorkspace(str(shared))
    assert ws.owned is False
    assert ws.make(nodes / "ws", cache) == shared.resolve()
    assert list(nodes.iterdir()) == []  # dest is ignored


def test_path_workspace_missing_or_relative_is_refused(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist on node"):
        PathWorkspace(str(tmp_path / "missing")).make(tmp_path / "ws", cache)
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        PathWorkspace(str(tmp_path / "file")).make(tmp_path / "ws", cache)
    with pytest.raises(WorkspaceError, match="absolute"):
        PathWorkspace("relative/dir")


# --- DirWorkspace -----------------------------------------------------------------------------


def test_dir_workspace_copies_content_modes_and_symlinks(
    tmp_path: Path, nodes: Path, cache: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    src = tmp_path / "src"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "a.txt").write_text("alpha")
    (src / "sub" / "deeper" / "b.bin").write_bytes(bytes(range(256)))
    (src / "run.sh").write_text("#!/bin/sh\n")
    (src / "run.sh").chmod(0o750)
    (src / "private.txt").write_text("p")
    (src / "private.txt").chmod(0o600)
    (src / "rel-link").symlink_to("a.txt")
    (src / "out-link").symlink_to(outside)
    (src / "dangling").symlink_to("nowhere")
    os.mkfifo(src / "pipe")  # copying must not block on it

    root = DirWorkspace(str(src)).make(nodes / "ws", cache)

    assert root == (nodes / "ws").resolve()
    assert (root / "a.txt").read_text() == "alpha"
    assert (root / "sub" / "deeper" / "b.bin").read_bytes() == bytes(range(256))
    assert _mode(root / "run.sh") == 0o750
    assert _mode(root / "private.txt") == 0o600
    assert os.readlink(root / "rel-link") == "a.txt"
    assert os.readlink(root / "out-link") == str(outside)  # a link, not a copy of outside
    assert os.readlink(root / "dangling") == "nowhere"
    assert not os.path.lexists(root / "pipe")
    assert sorted(p.name for p in nodes.iterdir()) == ["ws"]


def test_dir_workspace_missing_source_leaves_nothing(
    tmp_path: Path, nodes: Path, cache: Path
) -> None:
    with pytest.raises(WorkspaceError, match="does not exist on node"):
        DirWorkspace(str(tmp_path / "missing")).make(nodes / "ws", cache)
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        DirWorkspace(str(tmp_path / "file.txt")).make(nodes / "ws", cache)
    with pytest.raises(WorkspaceError, match="absolute"):
        DirWorkspace("src")
    assert list(nodes.iterdir()) == []


def test_a_copy_that_fails_midway_leaves_nothing_at_dest(tmp_path: Path, cache: Path) -> None:
    # Paths that fit under the source but not under a deeper dest: the copy fails part way
    # (ENAMETOOLONG), whoever runs the test (root reads unreadable files).
    src = tmp_path / "s"
    deep = src.joinpath(*["d" * 200] * ((4000 - len(str(src))) // 201))
    deep.mkdir(parents=True)
    (src / "first.txt").write_text("copied before the failure")
    (deep / "f.txt").write_text("too deep for dest")
    nodes = tmp_path.joinpath("n" * 200, "m" * 200)
    nodes.mkdir(parents=True)

    with pytest.raises(WorkspaceError, match="could not copy"):
        DirWorkspace(str(src)).make(nodes / "ws", cache)
    assert list(nodes.iterdir()) == []


def test_dir_workspace_refuses_to_copy_into_itself(tmp_path: Path, cache: Path) -> None:
    (tmp_path / "inside").mkdir()
    with pytest.raises(WorkspaceError, match="inside it"):
        DirWorkspace(str(tmp_path)).make(tmp_path / "inside" / "ws", cache)
    assert list((tmp_path / "inside").iterdir()) == []


# --- GitWorkspace -----------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


@dataclass
class Repo:
    path: Path
    first: str
    second: str

    def commit(self, text: str) -> str:
        (self.path / "file.txt").write_text(text)
        _git(self.path, "commit", "-q", "-am", text)
        return _git(self.path, "rev-parse", "HEAD")

    def mirror(self, cache: Path, url: str | None = None) -> Path:
        key = hashlib.sha256((url or str(self.path)).encode()).hexdigest()
        return cache / "git" / f"{key}.git"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    path = tmp_path / "upstream"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "file.txt").write_text("first")
    (path / "tool.sh").write_text("#!/bin/sh\n")
    (path / "tool.sh").chmod(0o755)
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "first")
    first = _git(path, "rev-parse", "HEAD")
    repo = Repo(path, first, "")
    repo.second = repo.commit("second")
    return repo


@needs_git
def test_git_workspace_checks_out_the_asked_commit(repo: Repo, nodes: Path, cache: Path) -> None:
    root = GitWorkspace(str(repo.path), commit=repo.first).make(nodes / "ws", cache)
    assert root == (nodes / "ws").resolve()
    assert (root / "file.txt").read_text() == "first"
    assert _mode(root / "tool.sh") & 0o111
    assert _git(root, "rev-parse", "HEAD") == repo.first
    assert _git(root, "status", "--porcelain") == ""
    assert sorted(p.name for p in nodes.iterdir()) == ["ws"]


@needs_git
def test_git_workspace_defaults_to_head(repo: Repo, nodes: Path, cache: Path) -> None:
    root = GitWorkspace(f"file://{repo.path}").make(nodes / "ws", cache)
    assert (root / "file.txt").read_text() == "second"
    assert _git(root, "rev-parse", "HEAD") == repo.second


@needs_git
def test_the_mirror_is_made_once_and_reused(repo: Repo, nodes: Path, cache: Path) -> None:
    GitWorkspace(str(repo.path), commit=repo.first).make(nodes / "a", cache)
    mirror = repo.mirror(cache)
    assert (mirror / "HEAD").is_file()
    (mirror / "marker").write_text("made by the first session")
    inode = os.stat(mirror).st_ino

    GitWorkspace(str(repo.path), commit=repo.second).make(nodes / "b", cache)
    GitWorkspace(str(repo.path)).make(nodes / "c", cache)

    assert (mirror / "marker").read_text() == "made by the first session"
    assert os.stat(mirror).st_ino == inode
    assert [p.name for p in (cache / "git").glob("*.git*")] == [mirror.name]
    assert _git(nodes / "b", "rev-parse", "HEAD") == repo.second


@needs_git
def test_eight_threads_share_one_mirror(repo: Repo, nodes: Path, cache: Path) -> None:
    barrier = threading.Barrier(8)

    def make(i: int) -> str:
        barrier.wait(timeout=120)
        root = GitWorkspace(str(repo.path)).make(nodes / f"ws{i}", cache)
        return _git(root, "rev-parse", "HEAD")

    with ThreadPoolExecutor(max_workers=8) as pool:
        heads = list(pool.map(make, range(8)))

    assert heads == [repo.second] * 8
    assert sorted(p.name for p in nodes.iterdir()) == [f"ws{i}" for i in range(8)]
    assert [p.name for p in (cache / "git").glob("*.git*")] == [repo.mirror(cache).name]


@needs_git
def test_a_commit_missing_from_the_mirror_is_fetched(repo: Repo, nodes: Path, cache: Path) -> None:
    GitWorkspace(str(repo.path), commit=repo.first).make(nodes / "a", cache)
    third = repo.commit("third")

    pinned = GitWorkspace(str(repo.path), commit=third).make(nodes / "b", cache)
    assert (pinned / "file.txt").read_text() == "third"

    fourth = repo.commit("fourth")
    by_branch = GitWorkspace(str(repo.path), commit="main").make(nodes / "c", cache)
    assert _git(by_branch, "rev-parse", "HEAD") == fourth
    by_default = GitWorkspace(str(repo.path)).make(nodes / "d", cache)
    assert _git(by_default, "rev-parse", "HEAD") == fourth


@needs_git
def test_an_unknown_commit_is_refused(repo: Repo, nodes: Path, cache: Path) -> None:
    with pytest.raises(WorkspaceError, match=r"'0{40}' is not a commit in"):
        GitWorkspace(str(repo.path), commit="0" * 40).make(nodes / "a", cache)
    with pytest.raises(WorkspaceError, match="'no-such-branch' is not a commit in"):
        GitWorkspace(str(repo.path), commit="no-such-branch").make(nodes / "b", cache)
    assert list(nodes.iterdir()) == []


@needs_git
def test_a_bad_url_is_refused_with_gits_reason(tmp_path: Path, nodes: Path, cache: Path) -> None:
    with pytest.raises(WorkspaceError, match="could not clone") as caught:
        GitWorkspace(str(tmp_path / "no-repo")).make(nodes / "ws", cache)
    assert "does not exist" in str(caught.value)  # git's own words
    assert list(nodes.iterdir()) == []
    assert list((cache / "git").glob("*.git*")) == []


def test_option_like_commits_and_urls_are_refused() -> None:
    with pytest.raises(WorkspaceError, match="not a commit"):
        GitWorkspace("/repo", commit="--upload-pack=touch x")
    with pytest.raises(WorkspaceError, match="not a repository url"):
        GitWorkspace("--upload-pack=touch x")


@needs_git
def test_the_workspace_runs_no_hooks_from_the_repository(
    repo: Repo, tmp_path: Path, nodes: Path, cache: Path
) -> None:
    canary = tmp_path / "hook-ran"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {canary}\n")
    hook.chmod(0o755)
    GitWorkspace(str(repo.path)).make(nodes / "ws", cache)
    assert not canary.exists()


# --- TarWorkspace -----------------------------------------------------------------------------


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the nodes one, with a canary no archive may touch."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "canary.txt").write_text("original")
    return path


Members = list[tuple[tarfile.TarInfo, bytes]]

# Workspaces are built in nodes/.ws.<hex>.tmp, so ../../outside is the canary's directory.
HOSTILE: dict[str, Callable[[Path], Members]] = {
    "absolute path": lambda out: [(_member(str(out / "canary.txt")), b"pwned")],
    "absolute new file": lambda out: [(_member(str(out / "new.txt")), b"pwned")],
    "dot-dot": lambda out: [(_member("../../outside/canary.txt"), b"pwned")],
    "dot-dot next to dest": lambda out: [(_member("../escaped.txt"), b"pwned")],
    "symlink out, then write through it": lambda out: [
        (_member("link", tarfile.SYMTYPE, "../../outside"), b""),
        (_member("link/canary.txt"), b"pwned"),
    ],
    "absolute symlink, then write through it": lambda out: [
        (_member("link", tarfile.SYMTYPE, str(out)), b""),
        (_member("link/canary.txt"), b"pwned"),
    ],
    "hardlink out, then write to it": lambda out: [
        (_member("hl", tarfile.LNKTYPE, "../../outside/canary.txt"), b""),
        (_member("hl"), b"pwned"),
    ],
    "absolute hardlink, then write to it": lambda out: [
        (_member("hl", tarfile.LNKTYPE, str(out / "canary.txt")), b""),
        (_member("hl"), b"pwned"),
    ],
    "device file": lambda out: [(_member("null", tarfile.CHRTYPE), b"")],
}


@pytest.mark.parametrize("members", HOSTILE.values(), ids=list(HOSTILE))
def test_hostile_tarballs_are_refused_and_touch_nothing(
    members: Callable[[Path], Members], outside: Path, nodes: Path, cache: Path
) -> None:
    # A harmless member first: what was extracted before the refusal must go too.
    ws = TarWorkspace(_tar((_member("ok.txt"), b"fine"), *members(outside)))
    with pytest.raises(WorkspaceError, match="refused the tarball"):
        ws.make(nodes / "ws", cache)
    assert (outside / "canary.txt").read_text() == "original"
    assert sorted(p.name for p in outside.iterdir()) == ["canary.txt"]
    assert list(nodes.iterdir()) == []  # neither dest nor a half-made temporary


def test_a_file_that_is_not_a_tarball_is_refused(nodes: Path, cache: Path) -> None:
    with pytest.raises(WorkspaceError, match="refused the tarball"):
        TarWorkspace(b"this is not a tar archive").make(nodes / "ws", cache)
    assert list(nodes.iterdir()) == []


def test_an_oversized_tarball_is_refused() -> None:
    with pytest.raises(WorkspaceError, match="64 MiB limit"):
        TarWorkspace(bytes(TarWorkspace.max_bytes + 1))


def test_tar_workspace_of_a_directory_round_trips(tmp_path: Path, nodes: Path, cache: Path) -> None:
    src = tmp_path / "project"
    (src / "bin").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "README").write_text("hello")
    (src / "bin" / "run").write_bytes(b"#!/bin/sh\nexit 0\n")
    (src / "bin" / "run").chmod(0o755)
    (src / "link").symlink_to("README")
    os.mkfifo(src / "pipe")

    ws = TarWorkspace.of(src)
    assert ws == pickle.loads(pickle.dumps(ws))
    assert "bytes" in repr(ws)
    root = ws.make(nodes / "ws", cache)

    assert sorted(p.name for p in root.iterdir()) == ["README", "bin", "empty", "link"]
    assert (root / "README").read_text() == "hello"
    assert (root / "bin" / "run").read_bytes() == b"#!/bin/sh\nexit 0\n"
    assert _mode(root / "bin" / "run") == 0o755
    assert (root / "empty").is_dir()
    assert os.readlink(root / "link") == "README"


def test_tar_workspace_of_a_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="not a directory"):
        TarWorkspace.of(tmp_path / "missing")


# --- every provider ---------------------------------------------------------------------------

PROVIDERS: list[Workspace] = [
    EmptyWorkspace(),
    DirWorkspace("/srv/project"),
    GitWorkspace("https://example.com/repo.git", commit="main", timeout=30.0),
    TarWorkspace(b"\x1f\x8b tar bytes"),
    PathWorkspace("/srv/shared"),
]


@pytest.mark.parametrize("ws", PROVIDERS, ids=lambda ws: type(ws).__name__)
def test_every_provider_pickles_equal(ws: Workspace) -> None:
    copy = pickle.loads(pickle.dumps(ws))
    assert copy == ws
    assert type(copy) is type(ws)
    assert copy.owned == ws.owned


def test_workspace_error_is_a_configuration_error() -> None:
    assert issubclass(WorkspaceError, ConfigurationError)


# --- remove_workspace -------------------------------------------------------------------------


def test_remove_workspace_removes_read_only_trees_but_not_what_links_point_to(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    ws = tmp_path / "ws"
    (ws / "ro" / "inner").mkdir(parents=True)
    (ws / "ro" / "inner" / "f.txt").write_text("x")
    (ws / "ro" / "f.txt").write_text("x")
    (ws / "ro" / "f.txt").chmod(0o400)
    (ws / "locked").mkdir()
    (ws / "locked" / "f.txt").write_text("x")
    (ws / "to-outside").symlink_to(outside)
    (ws / "ro" / "to-outside").symlink_to(outside)
    (ws / "ro" / "inner").chmod(0o500)
    (ws / "ro").chmod(0o555)
    (ws / "locked").chmod(0o000)

    remove_workspace(ws)

    assert not os.path.lexists(ws)
    assert (outside / "keep.txt").read_text() == "keep"


def test_remove_workspace_of_a_symlink_removes_only_the_link(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    (tmp_path / "ws").symlink_to(target)
    remove_workspace(tmp_path / "ws")
    assert not os.path.lexists(tmp_path / "ws")
    assert (target / "keep.txt").read_text() == "keep"


def test_remove_workspace_ignores_a_missing_path(tmp_path: Path) -> None:
    remove_workspace(tmp_path / "missing")
    assert list(tmp_path.iterdir()) == []
