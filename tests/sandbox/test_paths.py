"""`resolve_path`: what a model wrote -> the absolute, symlink-free path the policy checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import handrail
from handrail.sandbox import resolve_path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """tmp/ws (the cwd), tmp/outside; both real directories (tmp itself may be a symlink)."""
    base = Path(os.path.realpath(tmp_path))
    (base / "ws" / "src").mkdir(parents=True)
    (base / "outside" / "deep").mkdir(parents=True)
    return base


def test_relative_path_resolves_against_cwd(tree: Path) -> None:
    ws = tree / "ws"
    assert resolve_path("src/a.py", ws) == str(ws / "src" / "a.py")
    assert resolve_path("./src/../b.txt", ws) == str(ws / "b.txt")
    assert resolve_path(".", ws) == str(ws)


def test_absolute_path_is_kept(tree: Path) -> None:
    target = tree / "outside" / "x.txt"
    assert resolve_path(str(target), tree / "ws") == str(target)


def test_parent_references_are_resolved(tree: Path) -> None:
    assert resolve_path("../outside/x", tree / "ws") == str(tree / "outside" / "x")


def test_leading_at_is_stripped(tree: Path) -> None:
    ws = tree / "ws"
    assert resolve_path("@src/a.py", ws) == str(ws / "src" / "a.py")
    assert resolve_path(f"@{ws / 'b'}", ws) == str(ws / "b")


def test_only_one_leading_at_is_stripped(tree: Path) -> None:
    ws = tree / "ws"
    assert resolve_path("@@x", ws) == str(ws / "@x")
    assert resolve_path("a@b", ws) == str(ws / "a@b")


def test_tilde_expands_to_home(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tree / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert resolve_path("~/notes.txt", tree / "ws") == str(home / "notes.txt")
    assert resolve_path("~", tree / "ws") == str(home)
    assert resolve_path("@~/x", tree / "ws") == str(home / "x")


def test_symlink_inside_root_pointing_outside_resolves_outside(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(tree / "outside", ws / "link")
    (tree / "outside" / "f.txt").write_text("x", encoding="utf-8")
    assert resolve_path("link", ws) == str(tree / "outside")
    assert resolve_path("link/f.txt", ws) == str(tree / "outside" / "f.txt")


def test_symlinked_file_resolves_to_its_target(tree: Path) -> None:
    ws = tree / "ws"
    target = tree / "outside" / "secret.txt"
    target.write_text("x", encoding="utf-8")
    os.symlink(target, ws / "innocent.txt")
    assert resolve_path("innocent.txt", ws) == str(target)


def test_dangling_symlink_resolves_to_its_target(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(tree / "outside" / "new.txt", ws / "dangling")
    assert resolve_path("dangling", ws) == str(tree / "outside" / "new.txt")


def test_new_path_under_a_symlinked_directory_resolves_through_it(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(tree / "outside", ws / "link")
    got = resolve_path("link/not/yet/there.txt", ws)
    assert got == str(tree / "outside" / "not" / "yet" / "there.txt")


def test_new_path_with_missing_parents_stays_put(tree: Path) -> None:
    ws = tree / "ws"
    assert resolve_path("new/dir/file.txt", ws) == str(ws / "new" / "dir" / "file.txt")


def test_symlinked_cwd_is_resolved(tree: Path) -> None:
    os.symlink(tree / "ws", tree / "ws-link")
    assert resolve_path("src", tree / "ws-link") == str(tree / "ws" / "src")


def test_dotdot_after_a_symlink_follows_the_filesystem(tree: Path) -> None:
    # The OS resolves `link/..` to the parent of the link's target, not to the folder that
    # holds the link; the path the policy checks must be the one a tool would really open.
    ws = tree / "ws"
    os.symlink(tree / "outside" / "deep", ws / "link")
    got = resolve_path("link/../escape.txt", ws)
    assert got == os.path.realpath(ws / "link" / ".." / "escape.txt")
    assert got == str(tree / "outside" / "escape.txt")


def test_symlink_loop_does_not_hang(tree: Path) -> None:
    ws = tree / "ws"
    os.symlink(ws / "b", ws / "a")
    os.symlink(ws / "a", ws / "b")
    got = resolve_path("a/x", ws)
    assert os.path.isabs(got)


def test_nul_byte_is_a_tool_failure(tree: Path) -> None:
    with pytest.raises(handrail.ToolFailure) as info:
        resolve_path("src/a\x00.py", tree / "ws")
    assert "NUL" in info.value.message


async def test_nul_byte_in_a_requested_path_ends_the_call_cleanly(tree: Path) -> None:
    from collections.abc import Sequence

    from pydantic import BaseModel

    from handrail import ErrorCode, PermissionRequest, Runtime, Tool, ToolContext, WritePath

    ran: list[str] = []

    class Args(BaseModel):
        path: str

    class Save(Tool):
        name = "save"
        description = "Save."
        args_model = Args

        def permission_requests(self, args: Args, ctx: ToolContext) -> Sequence[PermissionRequest]:
            return [WritePath(path=args.path)]

        def run(self, args: Args, ctx: ToolContext) -> str:
            ran.append(args.path)
            return "saved"

    rt = Runtime([Save()], root=tree / "ws", mode="bypass")
    r = await rt.call("save", {"path": "a\x00b"})
    assert not r.ok
    assert r.error is not ErrorCode.INTERRUPTED
    assert "NUL" in r.content
    assert ran == []
