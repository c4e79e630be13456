"""`GitWorkspace`: a checkout made on the node from a node-local mirror of the repository.

Split from `_workspace.py` (the other providers, and the building blocks shared with them):
this is the one provider that runs a program (`git`), with a fixed environment, a lock per
mirror and a time limit.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import signal
import socket
import subprocess
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..sandbox import system_which
from ._workspace import WorkspaceError, build_in_place, remove_workspace

__all__ = ["GitWorkspace"]


@dataclass(frozen=True, slots=True)
class GitWorkspace:
    """A detached checkout of a git repository, without submodules.

    The node keeps a bare mirror of each url in `cache/git/<sha256 of url>.git`, made once
    (`git clone --mirror`) and shared by every session on the node; each session then costs a
    `git clone --shared` of the mirror (no object copy) and a checkout of the files. A full
    commit id already in the mirror is used without contacting the remote; anything else (no
    commit, a branch, a tag, a short id) fetches into the mirror first, since names move.

    The checkout borrows the mirror's objects, so the mirror is never garbage-collected and
    must outlive the workspace (do not clear the cache under live sessions). Its `origin` is
    the mirror. Git runs without user or system config, hooks or prompts: a private repository
    needs an ssh url with a key or agent on the node, or a token in the url (redacted from
    error messages). Git LFS files stay pointers.
    """

    url: str
    """A local path on the node or any url git understands (https, ssh, file)."""
    commit: str | None = field(default=None, kw_only=True)
    """What to check out: a commit id, branch or tag; None for the remote's HEAD."""
    timeout: float = field(default=600.0, kw_only=True)
    """Seconds each git command may run before it is killed."""

    owned: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if not self.url or self.url.startswith("-"):
            raise WorkspaceError(f"GitWorkspace: {self.url!r} is not a repository url")
        if self.commit is not None and not _REV.fullmatch(self.commit):
            raise WorkspaceError(
                f"GitWorkspace: {self.commit!r} is not a commit, branch or tag name"
            )
        if not self.timeout > 0:
            raise WorkspaceError(f"GitWorkspace: timeout must be positive, not {self.timeout}")

    def make(self, dest: Path, cache: Path) -> Path:
        """Check out the commit at `dest` (see `Workspace.make`)."""
        mirror, sha = self._mirror(cache)

        def fill(tmp: Path) -> None:
            self._git(
                f"could not clone the mirror of {_redact(self.url)}",
                "clone",
                "--quiet",
                "--shared",
                "--no-checkout",
                "--",
                str(mirror),
                str(tmp),
            )
            self._git(
                f"could not check out {sha}",
                "-C",
                str(tmp),
                "checkout",
                "--quiet",
                "--detach",
                sha,
            )

        return build_in_place(dest, fill)

    def _mirror(self, cache: Path) -> tuple[Path, str]:
        """Make or update the node's mirror of `url` until it holds `commit`; its full id."""
        root = cache / "git"
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"GitWorkspace: cannot use the cache {cache}: {exc}") from exc
        key = hashlib.sha256(self.url.encode()).hexdigest()
        mirror = root / f"{key}.git"
        pinned = self.commit is not None and _FULL_ID.fullmatch(self.commit) is not None
        with _locked(root / f"{key}.lock"):
            fresh = not mirror.is_dir()
            if fresh:
                self._make_mirror(mirror)
            sha = self._resolve(mirror)
            if not fresh and not (pinned and sha is not None):
                self._git(
                    f"could not fetch {_redact(self.url)}",
                    f"--git-dir={mirror}",
                    "fetch",
                    "--quiet",
                    "origin",
                )
                sha = self._resolve(mirror)
            if sha is None and pinned and self.commit is not None:
                # A commit no branch or tag reaches: some servers still serve it by id.
                with contextlib.suppress(WorkspaceError):
                    self._git("", f"--git-dir={mirror}", "fetch", "--quiet", "origin", self.commit)
                sha = self._resolve(mirror)
        if sha is None:
            wanted = "HEAD" if self.commit is None else self.commit
            raise WorkspaceError(
                f"GitWorkspace: {wanted!r} is not a commit in {_redact(self.url)} "
                "(after fetching it); check the commit id, branch or tag name"
            )
        return mirror, sha

    def _make_mirror(self, mirror: Path) -> None:
        """Clone the bare mirror into a temporary name, then rename it into place."""
        # The lock is held: temporaries left by a killed clone are nobody's.
        for stale in mirror.parent.glob(f"{mirror.name}.*.tmp"):
            remove_workspace(stale)
        tmp = mirror.with_name(f"{mirror.name}.{secrets.token_hex(6)}.tmp")
        try:
            self._git(
                f"could not clone {_redact(self.url)}",
                "clone",
                "--quiet",
                "--mirror",
                "--",
                self.url,
                str(tmp),
            )
            tmp.rename(mirror)
        except BaseException:
            with contextlib.suppress(OSError):
                remove_workspace(tmp)
            raise

    def _resolve(self, mirror: Path) -> str | None:
        """The full id of `commit` (or HEAD) in the mirror, or None when it is not there."""
        rev = "HEAD" if self.commit is None else self.commit
        code, out, _err = _run_git(
            [f"--git-dir={mirror}", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
            timeout=self.timeout,
        )
        sha = out.strip()
        return sha if code == 0 and _FULL_ID.fullmatch(sha) else None

    def _git(self, what: str, *args: str) -> str:
        """Run git; its stdout, or WorkspaceError with `what` and git's trimmed stderr."""
        code, out, err = _run_git(list(args), timeout=self.timeout)
        if code != 0:
            raise WorkspaceError(f"GitWorkspace: {what}: {_trim(err) or f'git exited {code}'}")
        return out


# --- git --------------------------------------------------------------------------------------

_FULL_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_REV = re.compile(r"[^-\s\x00-\x1f\x7f][^\s\x00-\x1f\x7f]*")
"""A revision that git cannot read as an option: no leading dash, no spaces or controls."""
_GIT_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    # Checkouts borrow the mirror's objects (--shared): nothing may prune them.
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
)
_PASSED_ENV = (
    "PATH",
    "HOME",  # ssh finds keys and known_hosts here; git's own config is off below
    "SSH_AUTH_SOCK",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
)
_STDERR_CHARS = 1000


def _git_env() -> dict[str, str]:
    env = {name: value for name in _PASSED_ENV if (value := os.environ.get(name)) is not None}
    env.setdefault("PATH", os.defpath)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_TERMINAL_PROMPT="0",
        GIT_SSH_COMMAND="ssh -o BatchMode=yes",
        LC_ALL="C",
    )
    return env


def _run_git(args: list[str], *, timeout: float) -> tuple[int, str, str]:
    """Run git in its own process group; (exit code, stdout, stderr). Killed on timeout."""
    # The system's git, not one a session's command may have left in a folder on PATH.
    command = [system_which("git") or "git"]
    for setting in _GIT_CONFIG:
        command += ["-c", setting]
    try:
        proc = subprocess.Popen(
            command + args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_git_env(),
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise WorkspaceError(
            f"GitWorkspace: git is not installed on node {socket.gethostname()}; "
            "install it on every node that runs sessions"
        ) from exc
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as exc:
        # The whole group: a transport helper git started may hold the pipes open.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise WorkspaceError(
                f"GitWorkspace: git {' '.join(_redact(a) for a in args)} took longer than "
                f"{timeout:g} s and was stopped; raise `timeout` for big repositories"
            ) from None
        raise
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _redact(text: str) -> str:
    """Hide the credentials of urls such as `https://user:token@host/...`."""
    return re.sub(r"(://)[^/@\s]*@", r"\1***@", text)


def _trim(stderr: str) -> str:
    text = " ".join(line.strip() for line in stderr.strip().splitlines() if line.strip())
    text = _redact(text)
    return text if len(text) <= _STDERR_CHARS else text[: _STDERR_CHARS - 1] + "…"


@contextlib.contextmanager
def _locked(lock: Path) -> Generator[None]:
    """Hold an exclusive `flock` on `lock`, across threads and processes of the node."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
