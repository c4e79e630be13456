"""A shell command's OS sandbox, assembled from the call and the user's settings.

A shell tool keeps one `ShellSandbox` per session: the session's private `$TMPDIR`, and the
`.git` folders found in its write roots (looked for once, and again after a command that ran
git). For each command, `ShellSandbox.confine` plans
* the write guard (`_write_guard.py`): `.git` and `.handrail` read-only at any depth, hidden
  paths pinned, missing ones uncreatable; for a command someone approved;
* what the command may read (`_read_view.py`): the home covered but for what it needs (the
  roots, `$TMPDIR`, the extra paths, the toolchains on PATH), hidden paths never;
* what it sees of the machine (`_isolation.py`): its own /tmp, an empty /run, other programs'
  sockets covered;
* the kernel confinement that applies all of it (`_os_confinement.py`),
and returns a `ConfinedShell`, which starts the command (`ShellProcess`) with its `$TMPDIR` and,
for a line that runs unasked or only reads, git without the repository's programs
(`_git_guard.py`).

A command nobody approved (`unasked`) gets no write roots: only its `$TMPDIR` is writable, and
it reaches no socket that was listening before it started. Where the machine offers no sandbox,
`confine` raises `SandboxUnavailable` unless the options allow running unsandboxed; nothing a
model sends can turn the sandbox off.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from .._context import ToolContext
from ..permissions import is_within
from ..permissions._hidden import hidden_entry, hidden_now
from ._capture import OutputCapture
from ._child import Isolation
from ._git_guard import git_guard_env
from ._isolation import plan_isolation, prepare_tmp
from ._os_confinement import Confinement, SandboxSupport, sandbox_support
from ._read_view import ReadView, plan_read_view, toolchain_dirs, venv_bases
from ._shell_process import ShellProcess
from ._write_guard import GitScan, WriteGuard, plan_write_guard

__all__ = ["ConfinedShell", "SandboxUnavailable", "ShellSandbox", "command_env"]

_MESSAGES = {
    "no_sandbox": "no OS sandbox on this machine ({detail}); running unsandboxed is not allowed",
    "temp_in_root": "the session's temporary folder ({detail}) lies inside a root",
    "setup_failed": "the sandbox could not be set up: {detail}",
}


class SandboxUnavailable(OSError):
    """The command cannot run: its sandbox cannot be set up, and it may not run without one."""

    def __init__(
        self, kind: Literal["no_sandbox", "temp_in_root", "setup_failed"], detail: str
    ) -> None:
        super().__init__(_MESSAGES[kind].format(detail=detail))
        self.kind = kind
        """Why: `no_sandbox` (the machine offers none, and the options do not allow running
        unsandboxed), `temp_in_root` (the session's temporary folder lies inside a root, where
        commands could plant links in what handrail writes there) or `setup_failed` (planning
        this command's sandbox failed)."""
        self.detail = detail
        """What the machine lacks (`SandboxSupport.reason`), the temporary folder, or the error."""


class ShellSandbox:
    """A session's shell sandbox: its private `$TMPDIR` and the `.git` folders of its roots.

    Keep one per session (what it found is reused) and call `confine` for each command:

    ```python
    box = ShellSandbox(ctx.session.temp_path("tmp"))
    shell = await box.confine(ctx, unasked=ctx.granted_by == "read_only")
    proc = await shell.start(command, cwd=ctx.cwd, env=env, capture=OutputCapture(None))
    ```

    Args:
        temp_dir: The session's private temporary folder, the commands' `$TMPDIR`; it must lie
            outside every root.
    """

    def __init__(self, temp_dir: Path) -> None:
        self.temp_dir = temp_dir
        """The commands' `$TMPDIR` on the host (mounted at `/tmp` where the machine allows)."""
        self._git = GitScan()

    async def confine(
        self,
        ctx: ToolContext,
        *,
        unasked: bool,
        sandbox: bool = True,
        allow_unsandboxed: bool = False,
        network: bool = False,
        extra_write_paths: Sequence[str] = (),
        extra_read_paths: Sequence[str] = (),
        confine_reads: bool = True,
        unix_sockets: Sequence[str] = (),
        support: SandboxSupport | None = None,
    ) -> ConfinedShell:
        """Plan the sandbox of one command of this call; raises `SandboxUnavailable`.

        Args:
            ctx: The call: its cwd, roots, hidden paths and session.
            unasked: Nobody approved the command (it runs because it was judged read-only):
                it may write only its `$TMPDIR`.
            sandbox: Confine the command (False: only process control, for the user's
                configuration to decide, never the model's).
            allow_unsandboxed: Where the machine offers no sandbox, run unsandboxed instead of
                refusing.
            network: Give the command network access.
            extra_write_paths: More folders an approved command may write (`~` expanded);
                readable by any command.
            extra_read_paths: More paths under the home the command may read.
            confine_reads: Hide the home but for what the command needs (hidden paths stay
                hidden either way).
            unix_sockets: Sockets (or folders of them) outside the session's folders that the
                command may connect to.
            support: What the machine offers (default: probed once).
        """
        support = support or sandbox_support()
        guard = None
        if not unasked and sandbox and support.namespaces:
            # A thread: the first look for `.git` folders walks the whole workspace.
            guard = await asyncio.to_thread(self._guard, ctx, extra_write_paths)
        return self._plan(
            ctx,
            unasked=unasked,
            sandbox=sandbox,
            allow_unsandboxed=allow_unsandboxed,
            network=network,
            extra_write_paths=extra_write_paths,
            extra_read_paths=extra_read_paths,
            confine_reads=confine_reads,
            unix_sockets=unix_sockets,
            support=support,
            guard=guard,
        )

    def _plan(
        self,
        ctx: ToolContext,
        *,
        unasked: bool,
        sandbox: bool,
        allow_unsandboxed: bool,
        network: bool,
        extra_write_paths: Sequence[str],
        extra_read_paths: Sequence[str],
        confine_reads: bool,
        unix_sockets: Sequence[str],
        support: SandboxSupport,
        guard: WriteGuard | None,
    ) -> ConfinedShell:
        """`confine` once the write guard is planned (None: the command gets none)."""
        unsandboxed: str | None = None
        if sandbox and not support.available:
            if not allow_unsandboxed:
                raise SandboxUnavailable("no_sandbox", support.reason)
            unsandboxed = support.reason
        confine = sandbox and support.available
        if not confine and not support.namespaces:
            return ConfinedShell(
                None, self.temp_dir, self._git, unasked, unsandboxed, confine_reads
            )
        temp_dir = self.temp_dir
        if confine and any(
            is_within(os.path.realpath(temp_dir), r) for r in (*ctx.read_roots, *ctx.write_roots)
        ):
            # Commands could then plant links where handrail writes the session's results.
            raise SandboxUnavailable("temp_in_root", str(temp_dir))
        write_roots = () if unasked else ctx.write_roots
        # Readable either way; writable only for a line someone approved.
        extra_paths = [os.path.expanduser(p) for p in extra_write_paths]
        extra_write = [] if unasked else extra_paths
        view = isolation = None
        if confine:
            visible = _visible(ctx, temp_dir, extra_paths, extra_read_paths)
            view = _read_view(ctx, visible, confine_reads)
            isolation = _isolation(ctx, temp_dir, visible, view.home, unasked, unix_sockets)
        try:
            conf = Confinement(
                write_roots=write_roots,
                temp_dir=temp_dir,
                network=network,
                extra_write=extra_write,
                filesystem=confine,
                support=support,
                view=view,
                guard=guard,
                isolation=isolation,
            )
            if conf.isolation is not None:
                prepare_tmp(conf.isolation)
        except OSError as exc:
            raise SandboxUnavailable("setup_failed", str(exc)) from exc
        return ConfinedShell(conf, self.temp_dir, self._git, unasked, unsandboxed, confine_reads)

    def _guard(self, ctx: ToolContext, extra_write_paths: Sequence[str]) -> WriteGuard:
        """`.git` read-only at any depth, hidden paths pinned, missing ones uncreatable."""
        writable = [
            *map(str, ctx.write_roots),
            *(os.path.expanduser(p) for p in extra_write_paths),
        ]
        home = os.path.realpath(Path.home())
        return plan_write_guard(write_roots=writable, hidden=_hidden(ctx), home=home, git=self._git)


class ConfinedShell:
    """One command's sandbox, planned by `ShellSandbox.confine`: `start` runs the command in it.

    The attributes say how the command is confined, for the result's metadata and for hints
    about failures the sandbox may have caused.
    """

    def __init__(
        self,
        confinement: Confinement | None,
        temp_dir: Path,
        git: GitScan,
        unasked: bool,
        unsandboxed: str | None,
        confine_reads: bool,
    ) -> None:
        self._confinement = confinement
        self._git = git
        self._started = False
        self.unasked = unasked
        """Nobody approved the command: it may write only its `$TMPDIR`."""
        self.unsandboxed_reason = unsandboxed
        """Why the command runs without the sandbox the options asked for (the machine offers
        none, and running unsandboxed is allowed); None when that is not the case."""
        conf = confinement
        self.mechanism = conf.label if conf is not None else "none"
        """What confines the command: `landlock+namespaces`, `landlock` or `none`."""
        self.reads_by: Literal["mounts", "landlock"] | None = (
            conf.reads_by if conf is not None else None
        )
        """How its reads are confined: `mounts` (it cannot see what is hidden), `landlock` (it
        cannot read hidden files, but folder listings show their names), or None."""
        self.reads: Literal["confined", "secrets_hidden", "unconfined"] = (
            "unconfined"
            if self.reads_by is None
            else "confined"
            if confine_reads
            else "secrets_hidden"
        )
        """What it may read: the home hidden but for what it needs (`confined`), everything but
        the hidden paths (`secrets_hidden`), or whatever the user can (`unconfined`)."""
        self.writes: Literal["tmpdir", "write_roots", "unconfined"] = (
            ("tmpdir" if unasked else "write_roots")
            if conf is not None and conf.filesystem
            else "unconfined"
        )
        """Where it may write: only its `$TMPDIR`, the write roots too, or anywhere."""
        iso = conf.isolation if conf is not None else None
        self.temp_dir = "/tmp" if iso is not None and iso.tmp else str(temp_dir)
        """The command's `$TMPDIR` as it sees it (`/tmp`, where its own folder is mounted)."""

    async def start(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        capture: OutputCapture,
        read_only: bool = False,
        on_data: Callable[[], None] | None = None,
        log_path: Path | None = None,
    ) -> ShellProcess:
        """Start `command` in this sandbox (once); raises OSError when it cannot be started.

        `env` is the command's environment, secrets already left out; `$TMPDIR` is set here.
        When the command runs unasked or was judged `read_only`, git in it runs none of the
        programs the repository's own config names. `SandboxSetupError` (an OSError) means the
        sandbox could not be applied; the other arguments are `ShellProcess.start`'s.
        """
        if self._started:
            raise RuntimeError("a ConfinedShell starts one command; confine the next one anew")
        self._started = True
        conf = self._confinement
        with conf if conf is not None else contextlib.nullcontext():
            proc = await ShellProcess.start(
                command,
                cwd=cwd,
                env=command_env(env, self.temp_dir, command, cwd, self.unasked or read_only),
                capture=capture,
                confinement=conf,
                on_data=on_data,
                log_path=log_path,
            )
        if not self.unasked and "git" in command:
            self._git.forget()  # it may make a repository: look for `.git` folders again
        return proc


def command_env(
    env: Mapping[str, str], temp_dir: str, command: str, cwd: Path, guard_git: bool
) -> dict[str, str]:
    """`env` with `$TMPDIR` set, and with `guard_git` git kept off the repository's programs."""
    out = dict(env)
    out["TMPDIR"] = temp_dir
    if guard_git:
        # It runs without the user's approval, or only reads: git must not run programs the
        # repository's own config names (fsmonitor, textconv, filters, external diffs).
        out.update(git_guard_env(command, cwd, out))
    return out


def _hidden(ctx: ToolContext) -> Sequence[Path]:
    """The call's hidden paths, plus where any inside the roots was moved (by identity)."""
    return hidden_now(ctx.hidden_paths, (*ctx.read_roots, *ctx.write_roots))


@functools.lru_cache(maxsize=8)
def _path_dirs(path_env: str, home: str) -> tuple[str, ...]:
    """What a command keeps seeing when `/tmp` is replaced (a venv in the host's /tmp).

    The home, and the folders PATH runs programs from, with their virtual environments and the
    base interpreters those are built on (resolved, existing). Cached per PATH.
    """
    out: list[str] = [home] if os.path.isdir(home) else []
    for entry in path_env.split(os.pathsep):
        if os.path.isabs(entry) and os.path.isdir(entry):
            real = os.path.realpath(entry)
            venv = os.path.dirname(real)
            out.append(venv if os.path.isfile(os.path.join(venv, "pyvenv.cfg")) else real)
    out += venv_bases(out[1:], "/")
    return tuple(dict.fromkeys(out))


def _visible(
    ctx: ToolContext, temp_dir: Path, extra_write: Sequence[str], extra_read: Sequence[str]
) -> list[str]:
    """What a command needs to see: roots, cwd, extra paths, the toolchains on PATH."""
    home = os.path.realpath(Path.home())
    tools = toolchain_dirs(os.environ.get("PATH", ""), home)
    roots = [str(r) for r in (ctx.cwd, *ctx.read_roots, *ctx.write_roots)]
    return [
        # The roots and the cwd are resolved already; the settings' paths are not.
        *roots,
        os.path.realpath(temp_dir),
        *(os.path.realpath(p) for p in extra_write),
        *(os.path.realpath(os.path.expanduser(p)) for p in extra_read),
        *tools,
        # A venv in a root or on PATH whose base interpreter lives under the home.
        *venv_bases([*roots, *tools], home),
    ]


def _read_view(ctx: ToolContext, visible: Sequence[str], confine_reads: bool) -> ReadView:
    """What the command may read: the home hidden but for what it needs; hidden paths never.

    With `confine_reads` off the home stays visible, and only the hidden paths are covered.
    """
    home = os.path.realpath(Path.home())
    return plan_read_view(
        home=home if confine_reads else None, visible=visible, hidden=_hidden(ctx)
    )


def _isolation(
    ctx: ToolContext,
    temp_dir: Path,
    visible: Sequence[str],
    home: str | None,
    unasked: bool,
    unix_sockets: Sequence[str],
) -> Isolation:
    """The session's own /tmp, an empty /run, other programs' sockets covered.

    What the command needs that lies under the host's /tmp stays visible: the roots, the
    home (or its covered view), the programs on PATH and their virtual environments. A
    line nobody approved reaches no socket that was listening before it started, not even
    one in the workspace (a dev server, a language server, an approved background job).
    """
    roots = [str(r) for r in (ctx.cwd, *ctx.read_roots, *ctx.write_roots)]
    # Shown read-only, unless it lies in a hidden place (handrail's own state folder).
    results = ctx.session.results_path()
    seen = [*visible, *_path_dirs(os.environ.get("PATH", ""), os.path.realpath(Path.home()))]
    return plan_isolation(
        tmp=temp_dir,
        visible=seen,
        own=[] if unasked else [*roots, os.path.realpath(temp_dir)],
        results=results if hidden_entry(str(results), _hidden(ctx)) is None else None,
        allow_sockets=[os.path.expanduser(p) for p in unix_sockets],
        covered=[home] if home else [],
    )
