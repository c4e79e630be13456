"""Checkpoints on their own (no runtime): what a user of `Checkpoints` must be able to count on.

The changes here are made by this process, standing in for a command: `begin` and `end` are
what the runtime calls around every call that can change files. Each test reads the files back
with lstat (never following a link) and checks what a person would see: what a restore puts
back, what it leaves and says so, what it asks about, and what survives a resumed session or a
machine without inotify.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from handrail.sandbox import BlobStore, Checkpoints
from handrail.sandbox import _change_watch as change_watch

# -- helpers ------------------------------------------------------------------------------------


def tree(root: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """Every path under `root` (but `.git`): kind, mode bits, bytes or link target (lstat)."""
    out: dict[str, tuple[str, int, bytes | str]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not (folder == str(root) and d == ".git"))
        for name in [*dirs, *files]:
            path = Path(folder, name)
            rel = str(path.relative_to(root))
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.readlink(path))
                dirs[:] = [d for d in dirs if d != name]
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode, b"")
            else:
                out[rel] = ("file", mode, path.read_bytes())
    return out


def digest_tree(root: Path) -> dict[str, str]:
    """Every file under `root` with its hash and times (to show nothing touched it)."""
    out: dict[str, str] = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            st = os.lstat(path)
            data = b"" if stat.S_ISLNK(st.st_mode) else path.read_bytes()
            out[str(path.relative_to(root))] = (
                f"{hashlib.sha256(data).hexdigest()} {st.st_mtime_ns} {oct(st.st_mode)}"
            )
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "src" / "main.py").write_text("print('main')\n")
    (root / "src" / "sub" / "deep.txt").write_text("deep\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    return root


def make(tmp_path: Path, root: Path, name: str = "s", max_file_bytes: int = 1 << 20) -> Checkpoints:
    """The checkpoints of `root`, logged in `<tmp>/state/<name>.jsonl` (the same log resumes)."""
    store = BlobStore(tmp_path / "state" / "objects-home", max_bytes=1 << 30)
    return Checkpoints(
        [root],
        store=store,
        log=tmp_path / "state" / f"{name}.jsonl",
        max_file_bytes=max_file_bytes,
    )


def call(
    cp: Checkpoints, label: str, change: Callable[[], object], paths: tuple[str, ...] = ()
) -> tuple[int, tuple[str, ...]]:
    """One call: `begin`, the change, `end`; returns the checkpoint id and what was recorded."""
    cid = cp.begin(label, call_id=label, tool="run_shell", paths=paths)
    change()
    return cid, cp.end(call_id=label)


# -- restores -----------------------------------------------------------------------------------


def test_a_restore_puts_back_bytes_modes_links_and_empty_folders(tmp_path: Path, ws: Path) -> None:
    cp = make(tmp_path, ws)
    (ws / "link").symlink_to("a.txt")
    (ws / "empty").mkdir(mode=0o750)
    os.chmod(ws / "empty", 0o750)
    before = tree(ws)

    def wreck() -> None:
        (ws / "a.txt").write_bytes(b"\x00changed")
        os.chmod(ws / "src" / "main.py", 0o600)
        (ws / "src" / "sub").rename(ws / "moved")
        (ws / "link").unlink()
        (ws / "link").write_text("now a file\n")
        (ws / "empty").rmdir()
        (ws / "new.txt").write_text("new\n")

    first, changed = call(cp, "wreck", wreck)
    assert first == 1
    assert set(changed) == {
        "a.txt",
        "src/main.py",
        "src/sub",
        "src/sub/deep.txt",
        "moved",
        "moved/deep.txt",
        "link",
        "empty",
        "new.txt",
    }
    after = tree(ws)
    done = cp.restore(first)
    assert done.ok and not done.left
    assert tree(ws) == before
    assert done.undo is not None
    cp.restore(done.undo)
    assert tree(ws) == after
    cp.close()


def test_symlinks_are_restored_as_links_and_never_followed(tmp_path: Path, ws: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside, untouched\n")
    (outside / "main.py").write_text("outside main\n")
    (ws / "to-outside").symlink_to(outside / "target.txt")
    (ws / "dangling").symlink_to("nowhere/at/all")
    (ws / "rel").symlink_to("../ws/a.txt")
    cp = make(tmp_path, ws)
    before, outside_before = tree(ws), digest_tree(outside)

    def swap() -> None:
        # The links become files and the folder a link to the outside folder.
        for name in ("to-outside", "dangling", "rel"):
            (ws / name).unlink()
            (ws / name).write_text("replaced\n")
        for p in sorted((ws / "src").rglob("*"), reverse=True):
            p.rmdir() if p.is_dir() else p.unlink()
        (ws / "src").rmdir()
        (ws / "src").symlink_to(outside)

    first, _ = call(cp, "swap", swap)
    done = cp.restore(first)
    assert done.ok and not done.left
    assert tree(ws) == before
    assert os.readlink(ws / "to-outside") == str(outside / "target.txt")
    assert os.readlink(ws / "dangling") == "nowhere/at/all"
    assert not (ws / "src").is_symlink() and (ws / "src" / "main.py").read_text() == (
        "print('main')\n"
    )
    assert digest_tree(outside) == outside_before  # nothing written through a link
    cp.close()


def test_a_file_too_big_is_reported_and_left_not_lost(tmp_path: Path, ws: Path) -> None:
    big = ws / "big.bin"
    big.write_bytes(b"B" * 5000)
    cp = make(tmp_path, ws, max_file_bytes=1000)
    first, _ = call(cp, "grow", lambda: big.write_bytes(b"C" * 6000))
    notices = cp.take_notices()
    assert any("big.bin" in n and "not kept" in n for n in notices), notices
    plan = cp.plan(first)
    assert dict(plan.not_kept).keys() == {"big.bin"}
    done = cp.restore(first)
    assert done.ok
    assert [p for p, _ in done.left] == ["big.bin"]
    assert big.read_bytes() == b"C" * 6000  # left as it is, not removed nor truncated

    # A big file that a later call removes cannot come back: said so, not pretended.
    second, _ = call(cp, "remove", big.unlink)
    third, _ = call(cp, "edit", lambda: (ws / "a.txt").write_text("edited\n"))
    done = cp.restore(second)
    assert ("big.bin", "it was too big to keep, so its earlier content cannot come back") in (
        done.left
    )
    assert not big.exists()
    assert (ws / "a.txt").read_text() == "alpha\n"
    assert third == second + 1
    cp.close()


def test_an_ignored_folder_is_left_in_place_and_made_again_empty(tmp_path: Path, ws: Path) -> None:
    nm = ws / "node_modules"
    os.chmod(nm, 0o750)
    cp = make(tmp_path, ws)
    first, changed = call(cp, "npm", lambda: (nm / "more.js").write_text("x\n"))
    assert changed == () and cp.list() == []  # its contents are not recorded
    target = nm / "index.js"
    target.write_text("by hand\n")
    second, changed = call(cp, "edit", lambda: target.write_text("edited\n"), (str(target),))
    assert changed == ("node_modules/index.js",)  # a file tool's target is
    assert first == second == 1  # the first call changed nothing recorded: no checkpoint
    third, changed = call(cp, "rm", lambda: [p.unlink() for p in nm.glob("*.js")])
    assert third == 2 and changed == ("node_modules/index.js",)
    done = cp.restore(second)
    assert done.ok and not done.left
    assert target.read_text() == "by hand\n"  # the target comes back as the call found it
    assert not (nm / "more.js").exists()  # what was never copied does not
    assert (nm / "pkg" / "index.js").read_text() == "module.exports = 1\n"  # nor is it removed

    # Removed by a command: made again, empty but for the target, with its mode (and said so).
    fourth, _ = call(cp, "rm -rf", lambda: shutil.rmtree(nm))
    done = cp.restore(fourth)
    assert done.left == (
        ("node_modules", "an ignored folder: made again, empty (its contents were never copied)"),
    )
    assert tree(nm) == {"index.js": ("file", 0o644, b"by hand\n")}
    assert stat.S_IMODE(os.lstat(nm).st_mode) == 0o750

    # Undoing that restore removes the folder again: it holds nothing the store lacks.
    assert done.undo is not None
    again = cp.restore(done.undo)
    assert again.ok and not again.left
    assert not nm.exists()

    # Made by a command and filled by another: a restore before it leaves it, and says so.
    fifth, _ = call(cp, "mkdir", lambda: (nm / "x").mkdir(parents=True))
    done = cp.restore(fifth)
    assert done.left == (
        ("node_modules", "an ignored folder, whose contents were never copied: left in place"),
    )
    assert (nm / "x").is_dir()
    cp.close()


# -- what is recorded ---------------------------------------------------------------------------


def test_calls_that_change_nothing_add_no_checkpoint(tmp_path: Path, ws: Path) -> None:
    cp = make(tmp_path, ws)
    assert call(cp, "nothing", lambda: None) == (1, ())
    # Touched, rewritten with the same bytes, re-moded to the same mode: no change either.
    assert call(cp, "touch", lambda: os.utime(ws / "a.txt", (1, 1))) == (1, ())
    assert call(cp, "same", lambda: (ws / "a.txt").write_text("alpha\n")) == (1, ())
    assert call(cp, "chmod", lambda: os.chmod(ws / "a.txt", 0o644)) == (1, ())
    assert call(cp, "made and gone", lambda: [(ws / "t").write_text("t"), (ws / "t").unlink()]) == (
        1,
        (),
    )
    assert cp.list() == []
    assert call(cp, "real", lambda: (ws / "a.txt").write_text("beta\n")) == (1, ("a.txt",))
    assert call(cp, "nothing again", lambda: None) == (2, ())
    assert [(c.id, c.label) for c in cp.list()] == [(1, "real")]
    # The log holds one mark: the calls that changed nothing left no trace in it.
    log = (tmp_path / "state" / "s.jsonl").read_text()
    assert log.count('"t":"cp"') == 1
    cp.close()


def test_changes_made_by_hand_are_told_apart_and_not_overwritten_unasked(
    tmp_path: Path, ws: Path
) -> None:
    cp = make(tmp_path, ws)
    first, _ = call(cp, "agent", lambda: (ws / "a.txt").write_text("by the agent\n"))
    (ws / "src" / "main.py").write_text("by hand\n")  # between calls
    (ws / "notes.txt").write_text("my notes\n")
    second, _ = call(cp, "agent again", lambda: (ws / "b.txt").write_text("b\n"))
    marks = cp.list()
    assert [(c.id, set(c.changed), set(c.outside)) for c in marks] == [
        (1, {"a.txt", "src/main.py", "notes.txt"}, {"src/main.py", "notes.txt"}),
        (2, {"b.txt"}, set()),
    ]
    assert cp.plan(second).outside == ()  # nothing changed by hand since checkpoint 2
    plan = cp.plan(first)
    assert set(plan.outside) == {"src/main.py", "notes.txt"}
    refused = cp.restore(first)
    assert not refused.ok and refused.undo is None
    assert "src/main.py" in (refused.refused or "")
    assert (ws / "notes.txt").read_text() == "my notes\n"  # nothing at all was changed
    assert (ws / "b.txt").exists()
    done = cp.restore(first, overwrite_outside=True)
    assert done.ok and set(done.overwritten) == {"src/main.py", "notes.txt"}
    assert (ws / "src" / "main.py").read_text() == "print('main')\n"
    assert not (ws / "notes.txt").exists()
    # Only the agent's own changes: a restore limited to them needs no one's agreement.
    assert done.undo is not None
    back = cp.restore(done.undo)
    assert back.ok and (ws / "notes.txt").read_text() == "my notes\n"
    only = cp.restore(first, paths=["a.txt", "b.txt"])
    assert only.ok and set(only.changed) == {"a.txt", "b.txt"}
    assert (ws / "notes.txt").read_text() == "my notes\n"
    cp.close()


def test_a_target_changed_by_hand_before_its_call_is_a_change_made_outside(
    tmp_path: Path, ws: Path
) -> None:
    cp = make(tmp_path, ws)
    first, _ = call(cp, "agent", lambda: (ws / "b.txt").write_text("b\n"))
    (ws / "notes.txt").write_text("my notes\n")  # by hand
    target = str(ws / "notes.txt")
    second, _ = call(cp, "write_file", lambda: Path(target).write_text("agent\n"), (target,))
    assert set(cp.list()[0].outside) == {"notes.txt"}
    # Restoring before the hand edit asks first: the notes were the person's, not the agent's.
    assert cp.plan(first).outside == ("notes.txt",)
    assert not cp.restore(first).ok
    assert cp.restore(second).ok
    assert (ws / "notes.txt").read_text() == "my notes\n"
    cp.close()


def test_damaged_contents_are_reported_not_written(tmp_path: Path, ws: Path) -> None:
    cp = make(tmp_path, ws)
    first, _ = call(cp, "edit", lambda: (ws / "a.txt").write_text("changed\n"))
    digest = hashlib.sha256(b"alpha\n").hexdigest()
    blob = tmp_path / "state" / "objects-home" / "objects" / digest[:2] / digest[2:]
    blob.write_bytes(b"garbage")
    done = cp.restore(first)
    assert done.left == (("a.txt", "its kept content is missing or damaged"),)
    assert (ws / "a.txt").read_text() == "changed\n"
    cp.close()


# -- a resumed session --------------------------------------------------------------------------


def test_a_resumed_session_keeps_its_checkpoints_and_sees_what_changed_meanwhile(
    tmp_path: Path, ws: Path
) -> None:
    cp = make(tmp_path, ws)
    target = ws / "node_modules" / "index.js"
    first, _ = call(cp, "edit", lambda: (ws / "a.txt").write_text("one\n"))
    second, _ = call(cp, "write_file", lambda: target.write_text("agent\n"), (str(target),))
    assert second == 2
    before = [(c.id, c.label, c.changed, c.outside) for c in cp.list()]
    cp.close()
    (ws / "src" / "main.py").write_text("edited while away\n")
    (ws / "src" / "sub").rename(ws / "src" / "renamed")

    again = make(tmp_path, ws)
    assert [(c.id, c.label, c.changed, c.outside) for c in again.list()] == before
    plan = again.plan(first)
    # What changed while it was away is the person's; the agent's own target is still its own.
    assert set(plan.outside) == {
        "src/main.py",
        "src/sub",
        "src/sub/deep.txt",
        "src/renamed",
        "src/renamed/deep.txt",
    }
    assert "node_modules/index.js" in plan.paths
    third, changed = call(again, "later", lambda: target.write_text("later\n"))
    assert third == 3 and changed == ("node_modules/index.js",)  # still tracked after resume
    done = again.restore(first, overwrite_outside=True)
    assert done.ok and not done.left
    assert tree(ws) == tree_of_start(tmp_path)
    again.close()


def tree_of_start(tmp_path: Path) -> dict[str, tuple[str, int, bytes | str]]:
    """The `ws` fixture's tree, made afresh elsewhere."""
    other = tmp_path / "fresh"
    (other / "src" / "sub").mkdir(parents=True)
    (other / "a.txt").write_text("alpha\n")
    (other / "src" / "main.py").write_text("print('main')\n")
    (other / "src" / "sub" / "deep.txt").write_text("deep\n")
    (other / "node_modules" / "pkg").mkdir(parents=True)
    (other / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    return tree(other)


# -- with and without inotify -------------------------------------------------------------------


def _changes(root: Path, outside: Path) -> Iterator[tuple[str, Callable[[], object]]]:
    """A session's worth of changes, each as a command would make them."""

    def rmtree_src_sub() -> None:
        shutil.rmtree(root / "src" / "sub")

    yield "create", lambda: (root / "new.txt").write_text("new\n")
    yield (
        "nested",
        lambda: (
            (root / "x" / "y" / "z").mkdir(parents=True),
            (root / "x" / "y" / "z" / "f").write_text("f"),
        ),
    )
    yield "modify", lambda: (root / "a.txt").write_text("changed\n")
    yield "chmod", lambda: os.chmod(root / "src" / "main.py", 0o755)
    yield "chmod dir", lambda: os.chmod(root / "x" / "y", 0o700)
    yield "rename dir", lambda: (root / "x").rename(root / "renamed")
    yield "inside renamed", lambda: (root / "renamed" / "y" / "g").write_text("g")
    yield (
        "links",
        lambda: (
            (root / "rel").symlink_to("a.txt"),
            (root / "abs").symlink_to(outside / "secret.txt"),
            (root / "dangling").symlink_to("/nonexistent/x"),
        ),
    )
    yield "relink", lambda: ((root / "rel").unlink(), (root / "rel").symlink_to("new.txt"))
    yield "dir to file", lambda: (rmtree_src_sub(), (root / "src" / "sub").write_text("file\n"))
    yield (
        "file to dir",
        lambda: (
            (root / "new.txt").unlink(),
            (root / "new.txt").mkdir(),
            (root / "new.txt" / "in").write_text("in"),
        ),
    )
    yield (
        "dir swapped for same name",
        lambda: (
            shutil.rmtree(root / "renamed"),
            (root / "renamed").mkdir(),
            (root / "renamed" / "h").write_text("h"),
        ),
    )
    yield "ignored", lambda: (root / "node_modules" / "pkg" / "more.js").write_text("m")
    yield "move into ignored", lambda: (root / "a.txt").rename(root / "node_modules" / "a.txt")
    yield "move out of ignored", lambda: (root / "node_modules" / "pkg").rename(root / "pkg")
    yield "rm -rf", lambda: shutil.rmtree(root / "src")
    yield "nothing", lambda: None


def _run_changes(tmp_path: Path, root: Path) -> tuple[list[object], list[dict[str, object]]]:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("s")
    cp = make(tmp_path, root, name=root.name)
    states: list[dict[str, object]] = []
    for label, change in _changes(root, outside):
        call(cp, label, change)
        states.append(
            {
                os.path.relpath(p, root): (e.kind, e.mode, e.blob, e.target)
                for p, e in cp.state().items()
            }
        )
    marks = [(c.id, c.label, c.changed, c.outside) for c in cp.list()]
    restored = []
    for c in reversed(cp.list()):
        done = cp.restore(c.id)
        restored.append((done.changed, done.left, tree(root)))
    cp.close()
    return [marks, restored], states


def test_without_inotify_the_same_changes_are_recorded(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "ws2"
    shutil.copytree(ws, other, symlinks=True)
    ws = ws.rename(tmp_path / "w1")
    other = other.rename(tmp_path / "w2")  # same length: the same relative links
    with_inotify = _run_changes(tmp_path, ws)
    probe = change_watch.ChangeWatch()
    assert probe.active, "this machine has no inotify: the comparison would be of one mode"
    probe.close()
    monkeypatch.setattr(change_watch, "_inotify", lambda: None)
    probe = change_watch.ChangeWatch()
    assert not probe.active
    without = _run_changes(tmp_path, other)
    assert without[1] == with_inotify[1]  # the recorded state after every call
    assert without[0] == with_inotify[0]  # the checkpoints, and what restoring each does


def test_a_folder_recorded_before_a_new_ignore_rule_stays_recorded(
    tmp_path: Path, ws: Path
) -> None:
    """A folder recorded until a `.gitignore` rule ignores it stays recorded (a resume too):
    its later changes are kept, so a restore can put it back and its undo can bring them."""
    dist = ws / "dist"
    dist.mkdir()
    (dist / "app.js").write_text("v1\n")
    cp = make(tmp_path, ws)
    first, _ = call(cp, "ignore dist", lambda: (ws / ".gitignore").write_text("dist/\n"))
    cp.close()
    again = make(tmp_path, ws)  # resumed: the rule now applies to dist
    call(again, "build", lambda: (dist / "app.js").write_text("v2\n"))
    done = again.restore(first, overwrite_outside=True)
    assert done.ok and done.left == ()
    assert (dist / "app.js").read_text() == "v1\n"
    assert not (ws / ".gitignore").exists()
    assert done.undo is not None
    assert again.restore(done.undo, overwrite_outside=True).ok
    assert (dist / "app.js").read_text() == "v2\n"
    again.close()


def test_a_folder_no_longer_ignored_is_recorded_from_then_on(tmp_path: Path, ws: Path) -> None:
    """`.gitignore` drops a rule: the folder's later changes are recorded and restorable."""
    (ws / ".gitignore").write_text("out/\n")
    out = ws / "out"
    out.mkdir()
    (out / "gen.txt").write_text("v1\n")
    cp = make(tmp_path, ws)
    call(cp, "unignore", lambda: (ws / ".gitignore").write_text(""))
    second, changed = call(cp, "v2", lambda: (out / "gen.txt").write_text("v2\n"))
    assert "out/gen.txt" in changed
    call(cp, "v3", lambda: (out / "gen.txt").write_text("v3\n"))
    assert cp.restore(second).ok
    assert (out / "gen.txt").read_text() == "v1\n"
    cp.close()


def test_a_write_through_a_hard_link_is_recorded_for_every_name(tmp_path: Path, ws: Path) -> None:
    (ws / "b.py").write_text("b\n")
    cp = make(tmp_path, ws)
    first, changed = call(
        cp,
        "link and append",
        lambda: (os.link(ws / "b.py", ws / "hard.py"), (ws / "hard.py").write_text("b\nmore\n")),
    )
    assert set(changed) == {"b.py", "hard.py"}
    done = cp.restore(first)
    assert done.ok and done.left == ()
    assert (ws / "b.py").read_text() == "b\n" and not (ws / "hard.py").exists()
    cp.close()
