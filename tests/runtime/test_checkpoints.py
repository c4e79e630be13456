"""Checkpoints through a real Runtime: the coding tools, real sandboxed shell lines, real git.

The canaries a user relies on: their `.git` is never read nor written; what checkpoints keep
cannot be read back through any tool (a copy of a file the agent overwrote is not a way around
the permissions); a command that plants a symlink cannot make a restore write outside the
workspace; a restore asks before overwriting what a person changed; a session that changes
nothing gets no checkpoints, and a resumed one keeps its own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from handrail import (
    Approval,
    Confirmation,
    PermissionMode,
    Question,
    Runtime,
    Session,
    ToolResult,
)
from handrail.builtin import coding_tools
from handrail.sandbox import _change_watch as change_watch
from handrail.sandbox import checkpoint_folder, sandbox_support

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not (SUPPORT.available and SUPPORT.hides_paths),
    reason=f"this machine cannot run the shell's sandbox: {SUPPORT.reason}",
)
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


# -- helpers ------------------------------------------------------------------------------------


def tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every path under `root` but `.git`: kind, mode bits, bytes or link target (lstat)."""
    out: dict[str, tuple[str, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (folder == str(root) and d == ".git"))
        for name in [*dirs, *files]:
            path = Path(folder, name)
            st = os.lstat(path)
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), b"")
            else:
                out[rel] = ("file", stat.S_IMODE(st.st_mode), path.read_bytes())
    return out


def fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every entry under `root` with its content hash, mtime and mode (links not followed)."""
    out: dict[str, tuple[str, int, int]] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(st.st_mode):
                content = "-> " + os.readlink(path)
            else:
                content = ""
            out[str(path.relative_to(root))] = (content, st.st_mtime_ns, st.st_mode)
    return out


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid",
        },
    )


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path, state: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "README.md").write_text("# project\n")
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "src" / "sub" / "util.py").write_text("X = 1\n")
    return root


def runtime(root: Path, **kw: object) -> Runtime:
    return Runtime(coding_tools(), root=root, mode="bypass", checkpoints=True, **kw)  # type: ignore[arg-type]


async def ok(rt: Runtime, tool: str, **args: object) -> ToolResult:
    result = await rt.call(tool, args)
    assert result.ok, result.content
    return result


async def write(rt: Runtime, file_path: str, content: str) -> None:
    """`write_file`, after the full `read_file` it needs when the file exists."""
    if (rt.root / file_path).is_file():
        await ok(rt, "read_file", file_path=file_path)
    await ok(rt, "write_file", file_path=file_path, content=content)


class Asker:
    """An approver that records each question and gives the set answer."""

    def __init__(self, answer: Approval) -> None:
        self.answer = answer
        self.questions: list[Question] = []

    async def __call__(self, question: Question) -> Approval:
        self.questions.append(question)
        return self.answer


# -- the user's .git ----------------------------------------------------------------------------


@needs_git
async def test_the_git_folder_is_never_read_nor_written(ws: Path, state: Path) -> None:
    marker = f"GIT-MARKER-{uuid.uuid4().hex}"
    (ws / ".gitignore").write_text("build/\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "first")
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\n# {marker}\nexit 0\n")
    hook.chmod(0o755)
    with (ws / ".git" / "config").open("a") as f:
        f.write(f"[handrail-test]\n\tmarker = {marker}\n")
    before = fingerprint(ws / ".git")

    async with runtime(ws) as rt:
        await write(rt, "src/new.py", "new\n")
        await ok(rt, "run_shell", command="echo more >> src/app.py && rm -r src/sub && mkdir build")
        await ok(rt, "run_shell", command="printf x > build/out && chmod 600 README.md")
        assert [c.id for c in rt.checkpoints()] == [1, 2, 3]
        assert not any(".git" in p.split("/") for c in rt.checkpoints() for p in c.changed)
        first = await rt.restore(1)
        assert first.ok and first.undo is not None
        assert (ws / "src" / "sub" / "util.py").read_text() == "X = 1\n"
        assert (await rt.restore(first.undo)).ok
        assert (await rt.restore(1)).ok

    assert fingerprint(ws / ".git") == before
    # Nothing of .git went into the store or the log.
    folder = checkpoint_folder(ws)
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert marker.encode() not in data, path
            assert b"/.git/" not in data and b'/.git"' not in data, path


# -- what checkpoints keep is not a way around the permissions ----------------------------------


@pytest.mark.parametrize("inside", [False, True], ids=["state-outside", "state-inside-workspace"])
async def test_checkpoint_data_cannot_be_read_through_any_tool(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch, inside: bool
) -> None:
    if inside:  # handrail's state folder inside the workspace: still hidden, never recorded
        state = ws / ".handrail-state"
        monkeypatch.setenv("HANDRAIL_STATE_DIR", str(state))
    canary = f"CANARY-{uuid.uuid4().hex}"
    secret = ws / "secret.txt"
    secret.write_text(f"token = {canary}\n")
    # Everything around the workspace is readable, so only the hiding keeps the store out.
    async with runtime(ws, read_roots=[ws, tmp_path]) as rt:
        await ok(rt, "read_file", file_path="secret.txt")
        await write(rt, "secret.txt", "token = <redacted>\n")
        assert rt.checkpoints()[0].changed == ("secret.txt",)
        folder = checkpoint_folder(ws)
        blob = hashlib.sha256(f"token = {canary}\n".encode()).hexdigest()
        blob_path = folder / "objects" / blob[:2] / blob[2:]
        assert canary in blob_path.read_text()  # kept, so a restore can bring it back
        logs = sorted(folder.glob("*.jsonl"))
        assert logs

        seen: list[str] = []
        for tool, args in [
            ("read_file", {"file_path": str(blob_path)}),
            ("read_file", {"file_path": str(logs[0])}),
            ("list_files", {"path": str(folder)}),
            ("list_files", {"path": str(folder / "objects"), "no_ignore": True}),
            ("list_files", {"pattern": "**/*", "no_ignore": True, "limit": 1000}),
            ("list_files", {"path": str(tmp_path), "no_ignore": True, "limit": 1000}),
            ("grep_search", {"pattern": canary, "path": str(folder)}),
            ("grep_search", {"pattern": canary, "no_ignore": True}),
            ("grep_search", {"pattern": canary, "path": str(tmp_path), "no_ignore": True}),
        ]:
            result = await rt.call(tool, args)
            seen.append(f"{tool} {args}: {result.ok} {result.content}")
            assert canary not in str(result.content), (tool, args)
            if blob[2:] not in str(args):  # a refusal may name the path it was given
                assert blob[2:] not in str(result.content), (tool, args)
        # The tools did look (the workspace's own files are listed and read), and saw nothing.
        assert sum("secret.txt" in text for text in seen) >= 2, seen
        for command in [
            f"cat {blob_path}",
            f"ls -laR {folder}",
            f"grep -r {canary} {folder}",
            f"grep -r {canary} {tmp_path} 2>/dev/null",
            f"find {tmp_path} -name '{blob[2:]}' -exec cat {{}} +",
            f"cat {logs[0]}",
            f"cp {blob_path} stolen.txt; cat stolen.txt",
        ]:
            result = await rt.call("run_shell", {"command": command})
            assert canary not in str(result.content), command
            if blob[2:] not in command:
                assert blob[2:] not in str(result.content), command
        assert not (ws / "stolen.txt").exists()
        listed = await rt.call("run_shell", {"command": f"ls -a {tmp_path} {ws}"})
        assert "secret.txt" in str(listed.content)  # the shell sees around the workspace
        # The state folder is never recorded, even inside the workspace.
        assert not any(p.startswith(".handrail-state") for c in rt.checkpoints() for p in c.changed)
        done = await rt.restore(1)
        assert done.ok and secret.read_text() == f"token = {canary}\n"


# -- hostile symlinks ---------------------------------------------------------------------------


async def test_a_restore_never_writes_through_a_symlink_a_command_planted(
    tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "app.py").write_text("OUTSIDE-CANARY app\n")
    (outside / "sub" / "util.py").write_text("OUTSIDE-CANARY util\n")
    outside_before = fingerprint(outside)
    start = tree(ws)
    async with runtime(ws) as rt:
        await write(rt, "src/app.py", "print('changed')\n")
        # A command swaps the folder for a link to the outside one (and a file for a link too).
        await ok(rt, "run_shell", command=f"rm -rf src && ln -s {outside} src")
        await ok(rt, "run_shell", command=f"rm README.md && ln -s {outside}/app.py README.md")
        assert os.path.islink(ws / "src")
        done = await rt.restore(1)
        assert done.ok and not done.left
        assert tree(ws) == start
        assert not os.path.islink(ws / "src") and (ws / "src").is_dir()
        assert fingerprint(outside) == outside_before

        # Again one level down, against the checkpoint just before the swap.
        await ok(rt, "run_shell", command=f"rm -rf src/sub && ln -s {outside}/sub src/sub")
        swapped = rt.checkpoints()[-1].id
        done = await rt.restore(swapped)
        assert done.ok and (ws / "src" / "sub" / "util.py").read_text() == "X = 1\n"
        assert not os.path.islink(ws / "src" / "sub")
        assert fingerprint(outside) == outside_before


async def test_symlinks_come_back_as_links(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("elsewhere\n")
    async with runtime(ws) as rt:
        await ok(
            rt,
            "run_shell",
            command=(
                "ln -s src/app.py rel && ln -s ../elsewhere.txt up && "
                f"ln -s {tmp_path}/elsewhere.txt abs && ln -s missing/file dangling && "
                "ln -s src dirlink"
            ),
        )
        linked = tree(ws)
        await ok(
            rt,
            "run_shell",
            command="rm rel up abs dangling dirlink && echo file > rel && mkdir up",
        )
        done = await rt.restore(2)
        assert done.ok
        assert tree(ws) == linked
        assert os.readlink(ws / "abs") == f"{tmp_path}/elsewhere.txt"
        assert os.readlink(ws / "dangling") == "missing/file"
        assert (tmp_path / "elsewhere.txt").read_text() == "elsewhere\n"


# -- changes made by hand -----------------------------------------------------------------------


async def test_a_restore_asks_before_overwriting_changes_made_by_hand(ws: Path) -> None:
    async with runtime(ws) as rt:
        await write(rt, "src/app.py", "print('agent')\n")
        (ws / "README.md").write_text("# edited by hand\n")  # between two calls
        await ok(rt, "run_shell", command="echo log > build.log")
        first, second = rt.checkpoints()
        assert first.outside == ("README.md",) and set(first.changed) == {
            "src/app.py",
            "README.md",
        }
        assert second.outside == ()
        plan = await rt.restore_plan(1)
        assert plan.outside == ("README.md",)

        # Nobody to ask: nothing at all is changed.
        refused = await rt.restore(1)
        assert not refused.ok and "README.md" in (refused.refused or "")
        assert (ws / "README.md").read_text() == "# edited by hand\n"
        assert (ws / "build.log").exists()

        # Asked, and the answer is no: nothing changed either.
        no = Asker(Approval.deny("keep my edit"))
        refused = await rt.restore(1, approver=no)
        assert not refused.ok
        assert len(no.questions) == 1
        question = no.questions[0]
        assert isinstance(question, Confirmation) and question.topic == "restore"
        assert "README.md" in question.reason
        assert (ws / "README.md").read_text() == "# edited by hand\n"
        assert (ws / "build.log").exists()

        # Restoring only the agent's own files asks nobody.
        only = await rt.restore(1, paths=["src", "build.log"], approver=no)
        assert only.ok and len(no.questions) == 1
        assert (ws / "src" / "app.py").read_text() == "print('app')\n"
        assert not (ws / "build.log").exists()
        assert (ws / "README.md").read_text() == "# edited by hand\n"

        # Yes: overwritten, and said so.
        yes = Asker(Approval.allow_once())
        done = await rt.restore(1, approver=yes)
        assert done.ok and done.overwritten == ("README.md",)
        assert len(yes.questions) == 1
        assert (ws / "README.md").read_text() == "# project\n"
        # The hand edit is not lost: the restore is undone like any change.
        assert done.undo is not None
        assert (await rt.restore(done.undo)).ok
        assert (ws / "README.md").read_text() == "# edited by hand\n"


# -- no empty checkpoints -----------------------------------------------------------------------


async def test_calls_that_change_nothing_add_no_checkpoint(ws: Path) -> None:
    async with runtime(ws) as rt:
        await ok(rt, "read_file", file_path="src/app.py")
        await write(rt, "src/app.py", "print('app')\n")  # same
        await ok(rt, "run_shell", command="ls -la src")  # read-only
        await ok(rt, "run_shell", command="touch -c does-not-exist")  # may write; does not
        await ok(rt, "run_shell", command="touch src/app.py")  # times only
        await ok(rt, "run_shell", command="mkdir tmp-x && rmdir tmp-x")  # made and gone
        failed = await rt.call(
            "edit_file", {"file_path": "src/app.py", "old_string": "absent", "new_string": "x"}
        )
        assert not failed.ok
        assert rt.checkpoints() == []
        logs = list(checkpoint_folder(ws).glob("*.jsonl"))
        assert all('"t":"cp"' not in log.read_text() for log in logs)  # no mark in the log
        await ok(rt, "run_shell", command="echo real > real.txt")
        await ok(rt, "run_shell", command="touch real.txt")
        assert [(c.id, c.changed) for c in rt.checkpoints()] == [(1, ("real.txt",))]


# -- a file too big to keep ---------------------------------------------------------------------


async def test_a_file_too_big_to_keep_is_reported_and_left(ws: Path) -> None:
    async with runtime(ws) as rt:
        keeper = rt._pipeline.checkpointing
        assert keeper is not None
        keeper.max_file_bytes = 4096  # before the session's first checkpoint
        await ok(rt, "run_shell", command="head -c 10000 /dev/zero > data.bin")
        notices = rt.session.take_notices()
        assert any("data.bin" in n and "not kept" in n for n in notices), notices
        await ok(rt, "run_shell", command="head -c 20000 /dev/zero | tr '\\0' x > data.bin")
        plan = await rt.restore_plan(2)
        assert [p for p, _ in plan.not_kept] == ["data.bin"]
        done = await rt.restore(1)
        assert done.ok
        assert [p for p, _ in done.left] == ["data.bin"]
        assert (ws / "data.bin").read_bytes() == b"x" * 20000  # left, not lost


# -- a resumed session --------------------------------------------------------------------------


async def test_a_resumed_session_keeps_its_checkpoints_and_sees_changes_made_meanwhile(
    ws: Path,
) -> None:
    sid = f"resume-{uuid.uuid4().hex[:8]}"
    start = tree(ws)
    async with runtime(ws, session=Session(id=sid, mode=PermissionMode.BYPASS)) as rt:
        await write(rt, "src/app.py", "print('one')\n")
        await ok(rt, "run_shell", command="mkdir -p node_modules && echo dep > node_modules/d.js")
        await write(rt, "node_modules/d.js", "patched\n")
        marks = [(c.id, c.label, c.changed) for c in rt.checkpoints()]
    assert [m[0] for m in marks] == [1, 2, 3]

    (ws / "README.md").write_text("# changed while away\n")
    (ws / "src" / "sub").rename(ws / "src" / "lib")

    async with runtime(ws, session=Session(id=sid, mode=PermissionMode.BYPASS)) as rt:
        assert [(c.id, c.label, c.changed) for c in rt.checkpoints()] == marks
        plan = await rt.restore_plan(1)
        assert set(plan.outside) == {
            "README.md",
            "src/sub",
            "src/sub/util.py",
            "src/lib",
            "src/lib/util.py",
        }
        assert not (await rt.restore(1)).ok  # nobody to ask
        assert (ws / "README.md").read_text() == "# changed while away\n"
        await ok(rt, "run_shell", command="echo again > node_modules/d.js")
        assert rt.checkpoints()[-1].changed == ("node_modules/d.js",)  # still the agent's
        done = await rt.restore(1, overwrite_outside=True)
        assert done.ok
        assert done.left == (
            ("node_modules", "an ignored folder, whose contents were never copied: left in place"),
        )
        assert {k: v for k, v in tree(ws).items() if not k.startswith("node_modules")} == start
        # The file tool's target inside it is back as the agent first found it.
        assert (ws / "node_modules" / "d.js").read_text() == "dep\n"


# -- with and without inotify -------------------------------------------------------------------

COMMANDS = (
    "echo one > a.txt && mkdir -p x/y/z && echo f > x/y/z/f",
    "chmod 700 x/y && chmod 755 a.txt",
    "mv x renamed && echo g > renamed/y/g",
    "ln -s a.txt rel && ln -s /nonexistent/x dangling && ln -s renamed dirlink",
    "rm -rf renamed && mkdir renamed && echo h > renamed/h",
    "rm -rf src/sub && echo file > src/sub",
    "mkdir node_modules && echo m > node_modules/m.js && mv a.txt node_modules/",
    "mv node_modules/a.txt back.txt && rm -rf src",
    "echo $((1+1)) > /dev/null && touch -c nothing",
)


async def _session(root: Path) -> tuple[Sequence[object], Sequence[object]]:
    async with runtime(root) as rt:
        for command in COMMANDS:
            await ok(rt, "run_shell", command=command)
        marks = [(c.id, c.label, c.changed, c.outside) for c in rt.checkpoints()]
        restored: list[object] = []
        for c in reversed(rt.checkpoints()):
            done = await rt.restore(c.id)
            restored.append((c.id, sorted(done.changed), done.left, tree(root)))
    return marks, restored


async def test_without_inotify_the_same_changes_are_recorded(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = change_watch.ChangeWatch()
    assert probe.active, "no inotify here: both runs would take the same path"
    probe.close()
    other = tmp_path / "w2"
    shutil.copytree(ws, other, symlinks=True)
    ws = ws.rename(tmp_path / "w1")
    with_inotify = await _session(ws)
    monkeypatch.setattr(change_watch, "_inotify", lambda: None)
    without = await _session(other)
    assert without == with_inotify
    assert len(with_inotify[0]) == len(COMMANDS) - 1  # the last command changed nothing
