"""The previous release of handrail in a child process, driven one step at a time.

Two versions of one package cannot be imported into one interpreter, so a benchmark that
compares this tree with the previous release runs the previous one in a child process, as
bench/shell_sandbox.py does: `src/` of the release comes from `git archive <rev>` (history is
only read; the work tree and HEAD are not touched), is extracted into a temporary folder and
goes first on the child's PYTHONPATH.

The parent sends one request at a time (a JSON line on the child's stdin) and waits for the
answer (a JSON line on the child's stdout). The child does nothing in between, so the parent
can interleave the child's steps with its own and load on the machine hits both versions alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

BASE = "9eee773"
"""The release before the current work (the commit it started from)."""

WORKTREE = "worktree"
"""A `rev` meaning a copy of this work tree's `src/`: an A/A run, to see the method's own noise."""

REPO = Path(__file__).resolve().parent.parent


class ChildError(RuntimeError):
    """A request the child did not answer: the error it raised, or that it exited."""


def _git(*args: str) -> bytes:
    """Output of a read-only git command in this repository; CalledProcessError says why not."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout


def short_rev(rev: str) -> str:
    """`rev` as a short commit hash, so the report names exactly what was measured."""
    if rev == WORKTREE:
        return "this work tree (A/A)"
    return _git("rev-parse", "--short", f"{rev}^{{commit}}").decode().strip()


def extract(rev: str, into: Path) -> Path:
    """`src/` of the release at `rev`, from git, under `into`."""
    if rev == WORKTREE:
        return Path(shutil.copytree(REPO / "src", into / "src"))
    archive = _git("archive", rev, "src")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


class Child:
    """A child process answering one JSON-line request at a time."""

    def __init__(self, argv: list[str], src: Path) -> None:
        # PYTHONPATH comes before site-packages, so the child imports the extracted release,
        # not the current tree that bench/run installs editable (the child checks which it got).
        env = {**os.environ, "PYTHONPATH": str(src)}
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )

    def request(self, op: str, **args: Any) -> Any:
        """Send one request, wait for its answer; ChildError if the child failed or is gone."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps({"op": op, "args": args}) + "\n")
            stdin.flush()
            line = stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise ChildError(f"child gone ({type(e).__name__}); its stderr is above") from e
        if not line:
            code = self.proc.wait(10)
            raise ChildError(f"child exited with code {code}; its stderr is above")
        answer = json.loads(line)
        if "error" in answer:
            raise ChildError(answer["error"])
        return answer["result"]

    def close(self) -> None:
        """Closing stdin ends the child's loop; kill it (by its own pid) if it hangs."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # already gone: a request said so
                self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


class PreviousRelease:
    """The release at `rev`, extracted and running in a child, or the reason it is not.

    Started at most once and shared by every column that measures the previous release.
    """

    def __init__(self, rev: str) -> None:
        self.rev = rev
        self.commit = rev  # a short hash once resolved
        self.reason = ""  # why it cannot run, when it cannot
        self.child: Child | None = None
        self.tmp: Path | None = None
        self.info: Any = None  # the answer to the first request

    def start(self, argv: list[str], first_op: str) -> None:
        """Extract the release, start the child and send `first_op`; on failure set `reason`."""
        if self.child is not None or self.reason:
            return
        try:
            self.commit = short_rev(self.rev)
            self.tmp = Path(tempfile.mkdtemp(prefix="handrail-bench-previous-"))
            self.child = Child(argv, extract(self.rev, self.tmp))
            self.info = self.child.request(first_op)
        except subprocess.CalledProcessError as e:
            err = (e.stderr or b"").decode(errors="replace").strip().splitlines()
            self.reason = f"git {self.rev}: {err[-1] if err else e}"
        except (OSError, ChildError) as e:
            self.reason = f"{type(e).__name__}: {e}"

    def request(self, op: str, **args: Any) -> Any:
        if self.child is None:
            raise ChildError(self.reason or "previous release not started")
        return self.child.request(op, **args)

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


async def serve(handlers: Mapping[str, Callable[..., Awaitable[Any]]]) -> None:
    """Child side: answer requests from stdin until it closes.

    Only the answers go to the real stdout; anything else the code prints goes to stderr, so it
    cannot break the protocol. Reading stdin blocks the event loop on purpose: between requests
    the child is meant to be idle.
    """
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"result": await handlers[request["op"]](**request["args"])}
        except Exception as e:
            answer = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(answer, default=str) + "\n")
        out.flush()
