"""Checkpoints against a hostile model or checkout: each test plays an attack a review found.

A canary stands for what the attack is after (a secret outside the roots, a person's edit, a
file the model ruined); each test asserts it was not read, written or lost, not only that a
result came back.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest

from handrail import Approval, Confirmation, Question, Runtime
from handrail.builtin import coding_tools
from handrail.sandbox import BlobStore, Checkpoints, checkpoint_folder

CANARY = "CANARY-SECRET-outside-the-roots\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("precious work\n")
    (root / "notes.txt").write_text("notes\n")
    return root


def runtime(root: Path, **kw: object) -> Runtime:
    kw.setdefault("checkpoints", True)
    return Runtime(coding_tools(), root=root, mode="bypass", **kw)  # type: ignore[arg-type]


async def shell(rt: Runtime, command: str) -> None:
    async with asyncio.timeout(60):
        result = await rt.call("run_shell", {"command": command})
    assert result.ok, result.content


async def test_a_fifo_or_a_terminal_as_gitignore_does_not_stall_the_scan(
    ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-fifo"
    os.mkfifo(outside)
    async with runtime(ws) as rt:
        # A fifo in a folder, and a committed `.gitignore` that is a link to another fifo
        # (as `-> /dev/tty` would be): a scan that opened them would wait for a writer forever.
        await shell(rt, "mkdir -p sub/x && mkfifo sub/.gitignore && echo v2 > src/app.py")
        (ws / "x").mkdir()
        (ws / "x" / ".gitignore").symlink_to(outside)
        await shell(rt, "echo v3 > x/f.txt")
        assert "src/app.py" in rt.checkpoints()[0].changed
        assert "x/f.txt" in rt.checkpoints()[-1].changed


async def test_a_tree_deeper_than_pythons_recursion_is_recorded_and_restored(ws: Path) -> None:
    async with runtime(ws) as rt:
        deep = "/".join(["d"] * 1200)
        await shell(rt, f"echo EVIL > src/app.py; rm notes.txt; mkdir -p {deep}")
        done = await rt.restore(1)
        assert done.ok and done.left == ()
        assert (ws / "src" / "app.py").read_text() == "precious work\n"
        assert (ws / "notes.txt").read_text() == "notes\n"
        assert not (ws / "d").exists()


async def test_a_file_grown_past_the_limit_is_moved_aside_and_the_kept_one_put_back(
    ws: Path,
) -> None:
    async with runtime(ws) as rt:
        keeper = rt._pipeline.checkpointing  # pyright: ignore[reportPrivateUsage]
        assert keeper is not None
        keeper.max_file_bytes = 1000
        await shell(rt, "head -c 5000 /dev/zero > src/app.py")
        done = await rt.restore(1)
        assert done.ok
        assert (ws / "src" / "app.py").read_text() == "precious work\n"
        (aside,) = [p for p in (ws / "src").iterdir() if ".before-restore-" in p.name]
        assert aside.read_bytes() == b"\0" * 5000  # not lost either
        assert any("moved to" in why for _, why in done.left)


async def test_a_long_named_symlink_comes_back(ws: Path) -> None:
    name = "l" * 240
    (ws / name).symlink_to("src/app.py")
    async with runtime(ws) as rt:
        await shell(rt, f"rm {name}")
        done = await rt.restore(1)
        assert done.ok and done.left == ()
        assert os.readlink(ws / name) == "src/app.py"


async def test_a_persons_edit_during_a_file_tool_call_is_theirs_not_the_calls(
    ws: Path,
) -> None:
    async with runtime(ws) as rt:
        tracker = rt.session_checkpoints()
        # The person writes while the model's write_file runs (between begin and end).
        real_end = tracker.end

        def end(**kw: object) -> tuple[str, ...]:
            (ws / "notes.txt").write_text("the person's edit\n")
            return real_end(**kw)  # type: ignore[arg-type]

        tracker.end = end  # type: ignore[method-assign]
        result = await rt.call("write_file", {"file_path": "new.txt", "content": "x\n"})
        assert result.ok
        (cp,) = rt.checkpoints()
        assert set(cp.changed) == {"new.txt", "notes.txt"} and cp.outside == ("notes.txt",)
        # Undoing the call asks before touching the person's edit; with nobody to ask, no.
        refused = await rt.restore(1)
        assert not refused.ok and "notes.txt" in (refused.refused or "")
        assert (ws / "notes.txt").read_text() == "the person's edit\n"


async def test_a_file_changed_while_the_person_answers_is_asked_about_too(ws: Path) -> None:
    asked: list[list[str]] = []
    async with runtime(ws) as rt:
        await shell(rt, "echo one > a.txt; echo one > b.txt")
        (ws / "a.txt").write_text("by hand\n")

        async def answer(question: Question) -> Approval:
            assert isinstance(question, Confirmation) and question.topic == "restore"
            asked.append(question.subject.split(", "))
            if len(asked) == 1:
                (ws / "b.txt").write_text("by hand while the question was open\n")
                return Approval.allow_once()
            return Approval.deny("keep b")

        done = await rt.restore(1, approver=answer)
        assert asked == [["a.txt"], ["a.txt", "b.txt"]]
        assert not done.ok
        assert (ws / "b.txt").read_text() == "by hand while the question was open\n"


async def test_a_hosts_checkpoint_folder_inside_the_root_is_hidden_and_its_log_cannot_steer(
    ws: Path, tmp_path: Path
) -> None:
    folder = ws / ".checkpoints"
    (ws / ".env").write_text("API_KEY=old-secret\n")
    async with runtime(ws, checkpoints=folder) as rt:
        await shell(rt, "echo API_KEY=new > .env")
        # No tool reads what the store keeps.
        read = await rt.call("run_shell", {"command": "grep -rh API_KEY .checkpoints || true"})
        assert "old-secret" not in read.content
        refused = await rt.call("read_file", {"file_path": ".checkpoints"})
        assert not refused.ok
        session_id = rt.session.id
    # A log that says to write outside the roots (by hand: no tool can reach it) is not obeyed.
    target = tmp_path / "outside-target" / "hook.sh"
    target.parent.mkdir()
    log = folder / f"{session_id}.jsonl"
    entry = ["file", 0o755, "0" * 64, "", 1, [1, 1, 1, 1, 1]]
    escape = str(ws / ".." / "outside-target" / "hook.sh")
    lines = [
        json.dumps({"t": "cp", "id": 9, "at": 0, "label": "x", "turn": None}),
        json.dumps({"t": "ch", "src": "call", "p": escape, "a": entry, "b": None, "_mark": 9}),
    ]
    with log.open("a") as f:
        f.write("\n".join(lines) + "\n")
    rt2 = runtime(ws, checkpoints=folder)
    rt2.session.id = session_id
    done = await rt2.restore(9, overwrite_outside=True)
    assert "hook.sh" not in " ".join(done.changed)  # the record's path was not taken
    assert not target.exists()
    await rt2.aclose()


async def test_a_glob_hidden_path_is_never_copied_into_the_store(ws: Path) -> None:
    (ws / "keys").mkdir()
    (ws / "keys" / "id.pem").write_text(CANARY)
    async with runtime(ws, hidden_paths=["keys/*.pem"]) as rt:
        await shell(rt, "echo changed > src/app.py")
        store = checkpoint_folder(ws)
        for path in store.rglob("*"):
            if path.is_file():
                assert CANARY.encode() not in path.read_bytes(), path


def test_the_state_folders_are_private(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    state = tmp_path / "fresh-state"
    store = BlobStore(state / "checkpoints" / "ws-x", max_bytes=1 << 30)
    cp = Checkpoints([root], store=store, log=state / "checkpoints" / "ws-x" / "s.jsonl")
    cp.begin("x")
    (root / "a.txt").write_text("b\n")
    cp.end()
    cp.close()
    for folder in (state, state / "checkpoints", state / "checkpoints" / "ws-x"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
