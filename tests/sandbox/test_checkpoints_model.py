"""Checkpoints against a model: random sessions of real tool calls, then random restores.

Each example makes a workspace (a real git repository with a `.gitignore`, or a plain folder),
starts a real `Runtime(coding_tools(), checkpoints=True)` and drives a random list of steps
through it: `write_file`, `read_file` + `edit_file`, real sandboxed `run_shell` lines (files and
folders made, written, removed, renamed, re-moded; symlinks with relative, absolute and dangling
targets; writes inside ignored folders and to the ignored `.env`), changes made by hand between
calls, and restores of random checkpoints followed by a restore of their undo.

After every step the whole tree is read back with `lstat` (type, bytes, mode bits, link target;
nothing followed). A small model of the checkpoint log says which checkpoint each step opens,
what it records (by a call, or outside the session) and what each checkpoint's state is. A
restore must then give back, byte for byte, the tree recorded before that checkpoint's call,
with the documented exceptions for ignored folders (`_restore_tree`): their contents were never
copied, so they are left exactly as they are; an ignored folder that must go but is not empty
stays (with its parents), one that must come back comes back empty. A file tool's target inside
an ignored folder is tracked from that call on. Restoring the undo goes back to the tree before
the restore, exactly when the restore left nothing behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shlex
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from handrail import Approval, Question, Runtime
from handrail.builtin import coding_tools
from handrail.permissions import is_read_only_command
from handrail.sandbox import sandbox_support

SUPPORT = sandbox_support()
pytestmark = pytest.mark.skipif(
    not SUPPORT.available, reason=f"no OS sandbox on this machine: {SUPPORT.reason}"
)
HAS_GIT = shutil.which("git") is not None

# -- the true tree ------------------------------------------------------------------------------

Node = tuple[str, int, bytes | str]
"""(kind, mode bits, content): `file` with its bytes, `link` with its target, `dir` with ``b""``."""
Tree = dict[str, Node]
"""Relative path -> node, for everything under the root except `.git` (the root is ".")."""


def read_tree(root: Path) -> Tree:
    """Every path under `root` as it is on disk, read with lstat, nothing followed."""
    out: Tree = {}

    def visit(path: Path, rel: str) -> None:
        st_ = os.lstat(path)
        mode = stat.S_IMODE(st_.st_mode)
        if stat.S_ISLNK(st_.st_mode):
            out[rel] = ("link", 0, os.readlink(path))
        elif stat.S_ISDIR(st_.st_mode):
            out[rel] = ("dir", mode, b"")
            for name in sorted(os.listdir(path)):
                if rel == "." and name == ".git":
                    continue
                visit(path / name, name if rel == "." else f"{rel}/{name}")
        elif stat.S_ISREG(st_.st_mode):
            out[rel] = ("file", mode, path.read_bytes())
        else:
            out[rel] = ("other", mode, b"")

    visit(root, ".")
    return out


def parent_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else "."


def ancestors(rel: str) -> Iterator[str]:
    while rel != ".":
        rel = parent_of(rel)
        yield rel


# -- what checkpoints track ---------------------------------------------------------------------

OPAQUE_NAMES = frozenset({"node_modules", "__pycache__", ".venv"})
"""Folders ignored everywhere (`_workspace_state.HEAVY_DIRS`, the ones these steps use)."""
GITIGNORE = "build/\n.env\n"
"""The repository's `.gitignore`: `build/` folders are ignored (opaque); `.env`, a file, is not
a folder, so it is recorded and restored like any file."""


@dataclass
class Layout:
    git: bool

    def opaque(self, rel: str, tree: Tree) -> bool:
        """Is the folder at `rel` an ignored one (recorded as a folder, contents not copied)?"""
        node = tree.get(rel)
        if node is None or node[0] != "dir" or rel == ".":
            return False
        name = rel.rsplit("/", 1)[-1]
        return name in OPAQUE_NAMES or (self.git and name == "build")

    def inside_opaque(self, rel: str, tree: Tree) -> bool:
        """Is `rel` below an ignored folder (its contents are not walked)?"""
        return any(self.opaque(a, tree) for a in ancestors(rel) if a != ".")

    def view(self, tree: Tree, explicit: set[str]) -> Tree:
        """What the checkpoints see of `tree`: ignored folders' contents only where tracked."""
        out: Tree = {}
        for rel, node in tree.items():
            if node[0] == "other":
                continue
            if self.inside_opaque(rel, tree) and rel not in explicit:
                continue
            if self.opaque(rel, tree):
                node = ("opaque", node[1], b"")
            out[rel] = node
        return out


# -- the model of the log -----------------------------------------------------------------------


@dataclass
class Mark:
    id: int
    view: Tree
    """The tracked state at this checkpoint."""
    tool: str | None = None
    """The tool of the call it came before (`restore` for a restore's own)."""
    changed: set[str] = field(default_factory=set[str])
    outside: set[str] = field(default_factory=set[str])


@dataclass
class Model:
    layout: Layout
    marks: list[Mark] = field(default_factory=list[Mark])
    pending: Mark | None = None
    last: Tree | None = None
    """The tracked state as last looked at (None: not started)."""
    explicit: set[str] = field(default_factory=set[str])
    records: list[tuple[int, str, str]] = field(default_factory=list[tuple[int, str, str]])
    """(mark id, path, source) of every recorded change."""

    def note_explicit(self, rel: str, tree: Tree) -> None:
        """A file tool's target not tracked yet: tracked from now on, even in an ignored folder."""
        if rel in self.explicit or (self.last is not None and rel in self.last):
            return
        self.explicit.add(rel)
        if self.last is None:
            return
        node = tree.get(rel)
        if node is None:
            return
        # Its value now is what every earlier checkpoint knows of it (no change is recorded).
        for mark in [*self.marks, *([self.pending] if self.pending else [])]:
            mark.view[rel] = node
        self.last[rel] = node

    def look(self, tree: Tree, source: str) -> set[str]:
        """The checkpoints look at the files: what changed since is recorded."""
        now = self.layout.view(tree, self.explicit)
        if self.last is None:
            self.last = now
            return set()
        changed = {p for p in self.last.keys() | now.keys() if self.last.get(p) != now.get(p)}
        if changed:
            if self.pending is not None:
                self.marks.append(self.pending)
                self.pending = None
            elif not self.marks:
                self.marks.append(Mark(1, dict(self.last)))
            mark = self.marks[-1]
            mark.changed |= changed
            if source == "outside":
                mark.outside |= changed
            self.records += [(mark.id, p, source) for p in changed]
        self.last = now
        return changed

    def begin(self, tree: Tree, tool: str) -> None:
        self.look(tree, "outside")
        if self.pending is None:
            assert self.last is not None
            self.pending = Mark(len(self.marks) + 1, dict(self.last))
        self.pending.tool = tool  # a mark nothing followed yet is the next call's

    def state(self, checkpoint: int) -> Tree:
        return next(m for m in self.marks if m.id == checkpoint).view

    def outside_since(self, checkpoint: int) -> set[str]:
        return {p for m, p, src in self.records if m >= checkpoint and src == "outside"}


# -- what a restore must leave ------------------------------------------------------------------


def _in_place(now: Node, want: Node) -> bool:
    """Does a restore change `now` into `want` without removing it first?"""
    folders = ("dir", "opaque")
    return (now[0] in folders and want[0] in folders) or now[0] == want[0] == "file"


def expected_after_restore(
    layout: Layout, before: Tree, want: Tree, explicit: set[str]
) -> tuple[Tree, set[str]]:
    """The tree a restore to the tracked state `want` leaves, from `before`; and what it leaves.

    The documented rules (`_restore_tree`): every tracked path that differs is put back as
    wanted: what must go is removed deepest first, the rest made shallowest first. Nothing
    untracked is touched: an ignored folder's contents (other than file tools' targets) stay
    exactly as they are, so an ignored folder that must go goes only when that leaves it empty,
    and its parent folders stay with it; one that must come back comes back empty (reported).
    """
    now = layout.view(before, explicit)
    out = dict(before)
    left: set[str] = set()
    stayed: set[str] = set()
    steps = {p for p in want.keys() | now.keys() if want.get(p) != now.get(p)}
    for rel in sorted(steps, key=lambda p: p.count("/"), reverse=True):
        node, wanted = now.get(rel), want.get(rel)
        if node is None or rel == "." or (wanted is not None and _in_place(node, wanted)):
            continue
        if node[0] in ("dir", "opaque") and any(parent_of(p) == rel for p in out if p != "."):
            stayed.add(rel)  # not empty: what is inside was never copied
            continue
        del out[rel]
    for rel in sorted(steps, key=lambda p: p.count("/")):
        wanted = want.get(rel)
        if wanted is None or rel in stayed:
            continue
        if rel != "." and out.get(parent_of(rel), ("",))[0] != "dir":
            left.add(rel)  # its folder is not there
            continue
        if wanted[0] in ("dir", "opaque"):
            out[rel] = ("dir", wanted[1], b"")
            if wanted[0] == "opaque" and rel not in now:
                left.add(rel)  # made again, empty
        else:
            out[rel] = wanted
    return out, left | stayed


def diff(a: Tree, b: Tree) -> list[str]:
    lines = []
    for rel in sorted(a.keys() | b.keys()):
        if a.get(rel) != b.get(rel):
            lines.append(f"{rel}: {a.get(rel)!r} != {b.get(rel)!r}")
    return lines


# -- the steps ----------------------------------------------------------------------------------

FILES = (
    "a.txt",
    "b.txt",
    "src/c.py",
    "src/sub/d.txt",
    ".env",
    "node_modules/m.js",
    "node_modules/pkg/x.js",
    "build/out.txt",
    "src/__pycache__/c.pyc",
)
DIRS = ("src", "src/sub", "empty", "build", "node_modules", "src/__pycache__", "moved")
LINKS = ("lnk", "src/lnk", "b.txt", "empty/lnk")
TEXTS = ("", "x", "hello\n", "line 1\nline 2\n", "canary \u2713\n")
MODES_FILE = ("600", "644", "755", "400")
MODES_DIR = ("700", "755", "555", "1777")
RENAMES = (
    ("a.txt", "b.txt"),
    ("b.txt", "moved"),
    ("src/c.py", "src/sub/c.py"),
    ("src/sub", "moved"),
    ("src", "moved"),
    ("moved", "src"),
    ("build", "moved"),
    ("src/sub", "node_modules/sub"),
    ("node_modules/m.js", "a.txt"),
    ("lnk", "src/sub/lnk"),
)
OUTSIDE = "OUTSIDE"
"""Stands for an absolute path outside the workspace (filled in per example)."""
LINK_TARGETS = ("a.txt", "../a.txt", "src", "nowhere", "/nonexistent/x", OUTSIDE, "ROOT/a.txt")


def q(text: str) -> str:
    return shlex.quote(text)


def parent_cmd(path: str) -> str:
    return f"mkdir -p {q(parent_of(path))} 2>/dev/null" if "/" in path else "true"


fragments = st.one_of(
    st.builds(
        lambda p, t: f"{parent_cmd(p)}; printf %s {q(t)} > {q(p)}",
        st.sampled_from(FILES),
        st.sampled_from(TEXTS),
    ),
    st.builds(
        lambda p, t: f"printf %s {q(t)} >> {q(p)}", st.sampled_from(FILES), st.sampled_from(TEXTS)
    ),
    st.builds(lambda p: f"rm -f {q(p)}", st.sampled_from(FILES + LINKS)),
    st.builds(lambda d: f"rm -rf {q(d)}", st.sampled_from(DIRS)),
    st.builds(lambda d: f"mkdir -p {q(d)}", st.sampled_from(DIRS)),
    st.builds(lambda d: f"rmdir {q(d)}", st.sampled_from(DIRS)),
    st.sampled_from(RENAMES).map(lambda sd: f"mv -T {q(sd[0])} {q(sd[1])}"),
    st.builds(
        lambda m, p: f"chmod {m} {q(p)}", st.sampled_from(MODES_FILE), st.sampled_from(FILES)
    ),
    st.builds(lambda m, d: f"chmod {m} {q(d)}", st.sampled_from(MODES_DIR), st.sampled_from(DIRS)),
    st.builds(
        lambda t, p: f"{parent_cmd(p)}; ln -sfn {q(t)} {q(p)}",
        st.sampled_from(LINK_TARGETS),
        st.sampled_from(LINKS),
    ),
    # A folder removed and made again at once (it may get its inode number back), then filled.
    st.builds(
        lambda d, t: f"rm -rf {q(d)}; mkdir -p {q(d)}/new; printf %s {q(t)} > {q(d)}/new/f",
        st.sampled_from(DIRS),
        st.sampled_from(TEXTS),
    ),
    # A folder swapped for a link (to the outside folder, which holds the same names).
    st.builds(
        lambda d, t: f"rm -rf {q(d)} && ln -s {q(t)} {q(d)}",
        st.sampled_from(("src", "src/sub", "node_modules", "build", "empty")),
        st.sampled_from((OUTSIDE, "sub", "..", "/nonexistent", "ROOT/src")),
    ),
    st.just("echo quiet > /dev/null"),  # read-only: no checkpoint looks
    st.just("touch -c nothing-here"),  # may write: looked at, changes nothing
)


@dataclass(frozen=True)
class Step:
    kind: str
    """`shell`, `write`, `edit`, `hand_write`, `hand_remove`, `hand_chmod`, `restore`."""
    arg: Any = None
    text: str = ""


steps = st.one_of(
    st.builds(
        lambda frags: Step("shell", " ; ".join(frags)), st.lists(fragments, min_size=1, max_size=3)
    ),
    st.builds(Step, st.just("write"), st.sampled_from(FILES), st.sampled_from(TEXTS)),
    st.builds(Step, st.just("edit"), st.sampled_from(FILES), st.sampled_from(TEXTS[1:])),
    st.builds(Step, st.just("hand_write"), st.sampled_from(FILES), st.sampled_from(TEXTS)),
    st.builds(Step, st.just("hand_remove"), st.sampled_from(FILES)),
    st.builds(Step, st.just("hand_chmod"), st.sampled_from(FILES), st.sampled_from(MODES_FILE)),
    st.builds(Step, st.just("restore"), st.integers(0, 50), st.sampled_from(("", "undo"))),
)


# -- the run ------------------------------------------------------------------------------------


def make_workspace(base: Path, git: bool) -> Path:
    root = base / "ws"
    root.mkdir()
    (root / "a.txt").write_text("first\n")
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "c.py").write_text("print('c')\n")
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "x.js").write_text("module.exports = 1\n")
    if git:
        (root / ".gitignore").write_text(GITIGNORE)
        (root / "build").mkdir()
        (root / "build" / "out.txt").write_text("built\n")
        (root / ".env").write_text("TOKEN=1\n")
        subprocess.run(
            ["git", "init", "-q", str(root)],
            check=True,
            capture_output=True,
            env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
        )
    return root


async def hand_step(root: Path, step: Step) -> None:
    path = root / step.arg
    if any(p.is_symlink() for p in path.parents if p.is_relative_to(root) and p != root):
        return  # a person edits the workspace, not what a planted link points at
    with contextlib.suppress(OSError):
        if step.kind == "hand_write":
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_symlink():
                path.unlink()
            path.write_text(step.text)
        elif step.kind == "hand_remove":
            path.unlink()
        elif step.kind == "hand_chmod" and not path.is_symlink():
            path.chmod(int(step.text, 8))


class Driver:
    def __init__(self, rt: Runtime, root: Path, layout: Layout, outside: Path) -> None:
        self.rt, self.root, self.layout, self.outside = rt, root, layout, outside
        self.model = Model(layout)
        self.asked: list[Question] = []
        self.calls = 0

    def tree(self) -> Tree:
        return read_tree(self.root)

    def check_marks(self) -> None:
        got = self.rt.checkpoints()
        assert [c.id for c in got] == [m.id for m in self.model.marks]
        for cp, mark in zip(got, self.model.marks, strict=True):
            assert cp.tool == mark.tool, cp
            assert set(cp.changed) == mark.changed, cp
            assert set(cp.outside) == mark.outside, cp

    async def call(self, tool: str, args: dict[str, Any], targets: tuple[str, ...] = ()) -> None:
        if tool == "run_shell" and is_read_only_command(args["command"]):
            # Judged read-only: it runs with no write roots, and no checkpoint looks around it.
            await self.rt.call(tool, args)
            return
        before = self.tree()
        kept = copy.deepcopy(self.model)
        self.model.begin(before, tool)
        for rel in targets:
            self.model.note_explicit(rel, before)
        result = await self.rt.call(tool, args)
        if result.denial is not None:
            # Refused before its run stage (a write through a link out of the workspace): no
            # checkpoint looked at anything, so what changed by hand is seen by a later call.
            self.model = kept
            return
        self.model.look(self.tree(), "call")

    async def run(self, step: Step) -> None:
        if step.kind == "shell":
            command = step.arg.replace(OUTSIDE, str(self.outside)).replace("ROOT/", f"{self.root}/")
            await self.call("run_shell", {"command": command})
        elif step.kind == "write":
            if (self.root / step.arg).is_file():  # as an agent must, before overwriting
                await self.rt.call("read_file", {"file_path": step.arg})
            await self.call(
                "write_file", {"file_path": step.arg, "content": step.text}, targets=(step.arg,)
            )
        elif step.kind == "edit":
            read = await self.rt.call("read_file", {"file_path": step.arg})
            path = self.root / step.arg
            if not read.ok or path.is_symlink() or not path.is_file():
                return
            old = path.read_text(errors="replace")
            if not old or old == step.text:
                return
            await self.call(
                "edit_file",
                {"file_path": step.arg, "old_string": old, "new_string": step.text},
                targets=(step.arg,),
            )
        elif step.kind.startswith("hand_"):
            await hand_step(self.root, step)
        elif step.kind == "restore":
            await self.restore(step)
        self.check_marks()

    async def restore(self, step: Step) -> None:
        marks = self.model.marks
        if not marks:
            return
        checkpoint = marks[step.arg % len(marks)].id
        before = self.tree()
        self.model.look(before, "outside")
        now_view = self.layout.view(before, self.model.explicit)
        want = self.model.state(checkpoint)
        differs = {p for p in want.keys() | now_view.keys() if want.get(p) != now_view.get(p)}
        outside = differs & self.model.outside_since(checkpoint)
        plan = await self.rt.restore_plan(checkpoint)
        assert set(plan.paths) == differs
        assert set(plan.outside) == outside
        if outside:
            refused = await self.rt.restore(checkpoint)
            assert refused.refused is not None and refused.undo is None
            assert set(refused.overwritten) == outside
            assert self.tree() == before, "a refused restore changed files"
            self.check_marks()
        expected, left = expected_after_restore(self.layout, before, want, self.model.explicit)

        async def yes(question: Question) -> Approval:
            self.asked.append(question)
            return Approval.allow_once()

        asked = len(self.asked)
        if differs:  # nothing to put back: no checkpoint is opened
            self.model.begin(before, "restore")
        done = await self.rt.restore(checkpoint, approver=yes)
        assert done.ok, done
        assert len(self.asked) == asked + (1 if outside else 0)
        if outside:
            assert self.asked[-1].topic == "restore"  # pyright: ignore[reportAttributeAccessIssue]
            assert set(done.overwritten) <= outside
        after = self.tree()
        assert not diff(after, expected), "\n".join(diff(after, expected))
        event(f"restore: {'outside, ' if outside else ''}{'left' if left else 'exact'}")
        assert {p for p, _ in done.left} == left, done.left
        recorded = self.model.look(after, "restore")
        assert (done.undo is not None) == bool(recorded), done
        self.check_marks()
        if step.text != "undo" or done.undo is None:
            return
        # The undo goes back to the tree before the restore (exactly, when nothing was left).
        undo = done.undo
        self.model.begin(after, "restore")
        want = self.model.state(undo)
        expected, left = expected_after_restore(self.layout, after, want, self.model.explicit)
        again = await self.rt.restore(undo)
        assert again.ok, again
        back = self.tree()
        assert not diff(back, expected), "\n".join(diff(back, expected))
        if not done.left:
            assert not diff(back, before), "\n".join(diff(back, before))
        self.model.look(back, "restore")
        self.check_marks()


async def run_session(base: Path, git: bool, plan: list[Step]) -> None:
    layout = Layout(git=git)
    root = make_workspace(base, git)
    outside = base / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("outside canary\n")
    # The names a link to here would show where the workspace's own files were.
    for name in ("c.py", "sub/d.txt", "m.js", "out.txt", "pkg/x.js"):
        (outside / name).parent.mkdir(exist_ok=True)
        (outside / name).write_text(f"outside {name}\n")
    outside_before = read_tree(outside)
    async with Runtime(coding_tools(), root=root, mode="bypass", checkpoints=True) as rt:
        driver = Driver(rt, root, layout, outside)
        for step in plan:
            await driver.run(step)
        # Every checkpoint, newest first, then the first again: each gives its state back.
        for mark in reversed(list(driver.model.marks)):
            await driver.restore(Step("restore", driver.model.marks.index(mark), ""))
    assert read_tree(outside) == outside_before, "a restore wrote outside the workspace"


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
@settings(
    max_examples=int(os.environ.get("CP_MODEL_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(git=st.booleans(), plan=st.lists(steps, min_size=1, max_size=12))
def test_restores_match_the_recorded_trees(
    git: bool, plan: list[Step], monkeypatch: pytest.MonkeyPatch
) -> None:
    base = Path(tempfile.mkdtemp(prefix="cp-model-"))
    try:
        with monkeypatch.context() as mp:
            mp.setenv("HANDRAIL_STATE_DIR", str(base / "state"))
            asyncio.run(run_session(base, git, plan))
    finally:
        shutil.rmtree(base, ignore_errors=True)
