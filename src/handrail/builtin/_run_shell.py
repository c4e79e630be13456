"""run_shell: shell commands with real process control, in an OS sandbox.

A command runs through bash in the session's cwd, in a new session, with stdin `/dev/null`
(nothing can wait for input) and the environment minus configured secrets. By default it runs
confined (`sandbox.ShellSandbox`): writes only inside the write roots and a private temporary
folder, `.git` and `.handrail` read-only, no network. Where the machine offers no sandbox the
call is refused unless the user's configuration allows running unsandboxed; the model has no
way to turn the sandbox off.

At its time limit (or on cancellation) the whole process tree gets SIGTERM, SIGKILL two seconds
later, and the result is TIMEOUT with the output so far. A command is never moved to the
background silently; `run_in_background` is the model's explicit choice, and a background job
keeps its time limit, is stopped when the session ends, and leaves a notice when it exits
(`_shell_jobs`: the jobs and shell_output; `_shell_text`: the message catalogs).

Output streams into a bounded capture: the model sees head and tail with exact counts of what
was left out, and the full output is saved to a file named in the result.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    PermissionMode,
    PermissionRequest,
    RunCommand,
    Session,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ..permissions import is_read_only_command
from ..sandbox import (
    OutputCapture,
    SandboxSetupError,
    SandboxSupport,
    SandboxUnavailable,
    ShellProcess,
    stat_file,
)
from ._displays import shell_display
from ._i18n import text
from ._shell_jobs import shell_state, start_job
from ._shell_text import CATALOG, OUTPUT_CHARS, short_command

__all__ = ["RunShell", "RunShellArgs"]

MAX_COMMAND_BYTES = 100_000
"""Longest command line (Linux refuses one argument over 128 KiB; a script belongs in a file)."""
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
PROGRESS_EVERY = 0.5
"""Seconds between progress events carrying recent output lines."""

DEFAULT_ENV_DENY = (
    # The keys an agent built on handrail holds; a command has no business reading them.
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "DEEPSEEK_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "MISTRAL_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "HANDRAIL_*",
    # Credentials by their usual names: `printenv` is a read-only command and runs unasked.
    "*_API_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_*",
    "*_PASSWORD",
    "AWS_SECRET_ACCESS_KEY",
)
DEFAULT_READ_PATHS = ("~/.gitconfig", "~/.config/git")
"""Paths under the home a sandboxed command reads by default: git's identity and ignore rules
(`~/.config/git/credentials` stays hidden)."""
_FIXED_ENV = {
    # Nothing should page, prompt or ask interactively: there is no terminal and no stdin.
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
}


class RunShellArgs(BaseModel):
    """Arguments of run_shell."""

    command: str = Field(
        description=(
            "The bash command line to run, in the session's working directory. Quote paths "
            "that contain spaces. stdin is empty: the command cannot read input or prompt."
        ),
    )
    timeout_seconds: float = Field(
        default=DEFAULT_TIMEOUT,
        gt=0,
        json_schema_extra={"maximum": MAX_TIMEOUT},
        description=(
            f"Seconds before the command and all its processes are stopped "
            f"(default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g})."
        ),
    )
    description: str | None = Field(
        default=None,
        max_length=300,
        description="A few words saying what the command does, shown to the user.",
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command and return a job id at once (for servers and long builds); "
            "read its output later with shell_output. It still stops at timeout_seconds."
        ),
    )


READS_CATALOG = {
    "en": {
        "reads_hint": (
            "Note: sandboxed commands see the workspace, the read roots, $TMPDIR and the system "
            "folders, but not the rest of the home folder, and secret locations (~/.ssh, "
            "cloud and registry credentials, shell histories, handrail's own settings) are "
            "hidden from every tool. A 'No such file or directory' or 'Permission denied' "
            "error above for such a path comes from that: work inside the workspace, or ask "
            "the user to add the path to the extra_read_paths setting of run_shell."
        ),
    },
    "zh": {
        "reads_hint": (
            "注意:沙箱中的命令只能看到工作区、可读根目录、$TMPDIR 和系统目录,"
            "看不到主目录的其余部分;机密位置(~/.ssh、云服务和软件仓库的凭据、"
            "shell 历史、handrail 自身的设置)对所有工具都隐藏。"
            "上面针对此类路径的 'No such file or directory' 或 'Permission denied' 错误由此引起:"
            "请在工作区内操作,"
            "或请用户把该路径加入 run_shell 的 extra_read_paths 设置。"
        ),
    },
}


@functools.lru_cache(maxsize=32)
def _deny_pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all the fnmatch patterns (checked against every variable on every call)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


class _Options:
    """run_shell's configuration: constructor options, overridden by the user's settings."""

    def __init__(self, base: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
        merged = {**base, **{k: v for k, v in settings.items() if k in base}}
        self.sandbox = bool(merged["sandbox"])
        self.allow_unsandboxed = bool(merged["allow_unsandboxed"])
        self.network = bool(merged["network"])
        self.extra_write_paths = tuple(str(p) for p in merged["extra_write_paths"])
        self.extra_read_paths = tuple(str(p) for p in merged["extra_read_paths"])
        self.confine_reads = bool(merged["confine_reads"])
        self.env_deny = tuple(str(p) for p in merged["env_deny"])
        self.unix_sockets = tuple(str(p) for p in merged["unix_sockets"])


class RunShell(Tool):
    """The built-in run_shell tool.

    Args:
        sandbox: Confine commands with the OS sandbox (default True). False runs every command
            unsandboxed: a decision for the user's configuration, never the model's.
        allow_unsandboxed: Where no OS sandbox is available, run unsandboxed instead of refusing.
        network: Give sandboxed commands network access (default: none).
        extra_write_paths: More folders sandboxed commands may write (e.g. `~/.cache`).
        extra_read_paths: More paths under the home that sandboxed commands may read (default
            `~/.gitconfig` and `~/.config/git`, for git's identity and ignore rules).
        confine_reads: Hide the home from sandboxed commands, but for the workspace, the roots,
            these extra paths and the toolchains on PATH (default True). Hidden paths stay
            hidden either way.
        env_deny: Environment variables (fnmatch patterns) not passed to commands.
        unix_sockets: Unix sockets (or folders of them) outside the session's own folders
            that sandboxed commands may connect to, e.g. `/run/postgresql` or
            `/var/run/docker.sock`; every other program's socket is covered.
        support: What the machine offers (default: probed once); for tests and diagnostics.

    Each option can also be set by the user in the `run_shell` tool settings.
    """

    name = "run_shell"
    description = (
        "Run a bash command in the session's working directory and return its exit code and "
        "output (stdout, then stderr). Use it for builds, tests, git and other programs; use "
        "read_file, grep_search, list_files, edit_file and write_file for reading, searching "
        "and changing files. stdin is empty, so commands cannot prompt; pass flags such as -y "
        "or --no-pager. Commands run in an OS sandbox: they can write only inside the "
        "workspace and $TMPDIR, .git and .handrail are read-only, they see no part of the home "
        "folder outside the workspace, secret locations (~/.ssh, credentials) are hidden, and "
        "there is no network unless the user allowed it. The command and everything it "
        "starts are stopped at timeout_seconds; long output is cut to its head and tail, with "
        "the full text saved to a file named in the result. For servers and long jobs use "
        "run_in_background and shell_output. Independent read-only commands (ls, cat, grep, "
        "git status...) may run in parallel."
    )
    usage = (
        "run_shell: prefer the file tools over cat/sed/echo redirections; chain dependent steps "
        "with && in one call; use run_in_background for servers and watch them with "
        "shell_output."
    )
    kind = ToolKind.EXECUTE
    timeout = MAX_TIMEOUT + 30  # a backstop: the tool enforces timeout_seconds itself
    max_result_chars = OUTPUT_CHARS + 2_000
    args_model: ClassVar[type[BaseModel] | None] = RunShellArgs

    def __init__(
        self,
        *,
        sandbox: bool = True,
        allow_unsandboxed: bool = False,
        network: bool = False,
        extra_write_paths: Sequence[str] = (),
        extra_read_paths: Sequence[str] = DEFAULT_READ_PATHS,
        confine_reads: bool = True,
        env_deny: Sequence[str] = DEFAULT_ENV_DENY,
        unix_sockets: Sequence[str] = (),
        support: SandboxSupport | None = None,
        **options: Any,
    ) -> None:
        self._base: dict[str, Any] = {
            "sandbox": sandbox,
            "allow_unsandboxed": allow_unsandboxed,
            "network": network,
            "extra_write_paths": tuple(extra_write_paths),
            "extra_read_paths": tuple(extra_read_paths),
            "confine_reads": confine_reads,
            "env_deny": tuple(env_deny),
            "unix_sockets": tuple(unix_sockets),
        }
        self._support = support
        super().__init__(**options)

    # Input-dependent flags: a read-only command line runs in parallel and in plan mode.
    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`shell_display`)."""
        return shell_display(view, name=self.name)

    @staticmethod
    def read_only(args: RunShellArgs) -> bool:
        """Read-only when every simple command is on the read-only list (parsed, not guessed)."""
        return not args.run_in_background and is_read_only_command(args.command)

    @staticmethod
    def concurrency_safe(args: RunShellArgs) -> bool:
        """Read-only commands may run alongside other read-only calls."""
        return RunShell.read_only(args)

    @staticmethod
    def destructive(args: RunShellArgs) -> bool:
        """Anything not read-only may destroy data."""
        return not RunShell.read_only(args)

    def validate_input(self, args: RunShellArgs, ctx: ToolContext) -> str | None:
        """Refuse an empty or overlong command, a NUL byte, or a time limit outside 1..600 s."""
        if not args.command.strip():
            return text(ctx.locale, CATALOG, "empty")
        if len(args.command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
            return text(ctx.locale, CATALOG, "too_long", limit=MAX_COMMAND_BYTES)
        if "\x00" in args.command:
            return text(ctx.locale, CATALOG, "nul")
        got = args.timeout_seconds
        if got > MAX_TIMEOUT or got < 1:
            hint = ""
            if 1000 <= got <= MAX_TIMEOUT * 1000:
                hint = text(ctx.locale, CATALOG, "ms_hint", got=got, secs=got / 1000)
            return text(ctx.locale, CATALOG, "timeout_range", max=MAX_TIMEOUT, got=got, hint=hint)
        return None

    def permission_requests(
        self, args: RunShellArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        """The command line; the policy parses it and matches rules per simple command."""
        return [RunCommand(command=args.command)]

    def _options(self, ctx: ToolContext) -> _Options:
        return _Options(self._base, ctx.settings)

    @staticmethod
    def _env(opts: _Options) -> dict[str, str]:
        """The environment minus the denied variables, with nothing interactive.

        `ConfinedShell.start` adds `$TMPDIR`, and what keeps git off a repository's programs.
        """
        deny = _deny_pattern(opts.env_deny)
        env = {k: v for k, v in os.environ.items() if not deny.match(k)}
        env.update(_FIXED_ENV)
        return env

    async def run(self, args: RunShellArgs, ctx: ToolContext) -> ToolResult:
        """Run the command (or start it in the background) and report how it ended."""
        loc = ctx.locale
        if not ctx.cwd.is_dir():
            raise ToolFailure(
                text(loc, CATALOG, "cwd_gone", cwd=ctx.cwd), code=ErrorCode.FILE_NOT_FOUND
            )
        opts = self._options(ctx)
        state = shell_state(ctx.session)
        # Nobody approved it (it was judged read-only, or the session is in plan mode): the
        # kernel, not the parser, keeps it from writing.
        unasked = ctx.granted_by == "read_only"
        try:
            shell = await state.sandbox.confine(
                ctx,
                unasked=unasked,
                sandbox=opts.sandbox,
                allow_unsandboxed=opts.allow_unsandboxed,
                network=opts.network,
                extra_write_paths=opts.extra_write_paths,
                extra_read_paths=opts.extra_read_paths,
                confine_reads=opts.confine_reads,
                unix_sockets=opts.unix_sockets,
                support=self._support,
            )
        except SandboxUnavailable as exc:
            raise _unavailable(loc, exc) from exc
        unsandboxed_note = ""
        if shell.unsandboxed_reason is not None:
            unsandboxed_note = text(loc, CATALOG, "unsandboxed", reason=shell.unsandboxed_reason)
        results = ctx.session.results_path()
        if args.run_in_background:
            job_id = f"sh-{state.next_id}"
            state.next_id += 1
            spill = results / f"{job_id}.log"
            log: Path | None = spill
        else:
            job_id = ""
            spill = results / f"{ctx.call_id}.txt"
            log = None
        capture = OutputCapture(None if log is not None else spill, limit_chars=OUTPUT_CHARS)
        last = [0.0]

        def on_data() -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_EVERY:
                last[0] = now
                ctx.progress("output", lines=capture.recent())

        before = {} if args.run_in_background else _read_files_state(ctx.session)
        try:
            proc = await shell.start(
                args.command,
                cwd=ctx.cwd,
                env=self._env(opts),
                capture=capture,
                read_only=self.read_only(args),
                on_data=None if args.run_in_background else on_data,
                log_path=log,
            )
        except OSError as exc:
            capture.close()
            raise ToolFailure(
                text(loc, CATALOG, "start_failed", error=exc.strerror or str(exc)),
                code=ErrorCode.SANDBOX_UNAVAILABLE
                if isinstance(exc, SandboxSetupError)
                else ErrorCode.EXECUTION_ERROR,
            ) from exc
        mechanism = shell.mechanism
        # Without confine_reads the home stays visible: only the hidden paths are covered.
        reads: dict[str, str] = {"reads": shell.reads}
        if shell.reads_by is not None:
            reads["reads_by"] = shell.reads_by
        # Which sandbox the line ran in: only its $TMPDIR writable, or the write roots too.
        reads["writes"] = shell.writes
        if args.run_in_background:
            assert log is not None
            start_job(
                state,
                ctx.session,
                loc,
                job_id=job_id,
                command=args.command,
                process=proc,
                capture=capture,
                log_path=log,
                timeout=args.timeout_seconds,
            )
            return self._background(args, ctx, job_id, proc, log, mechanism, reads)
        return await self._foreground(
            args, ctx, proc, capture, spill, (mechanism, reads), unsandboxed_note, before
        )

    async def _foreground(
        self,
        args: RunShellArgs,
        ctx: ToolContext,
        proc: ShellProcess,
        capture: OutputCapture,
        spill: Path,
        sandbox: tuple[str, dict[str, str]],
        unsandboxed_note: str,
        before: dict[str, tuple[int, int] | None],
    ) -> ToolResult:
        loc = ctx.locale
        mechanism, reads = sandbox
        try:
            exited = await proc.wait(args.timeout_seconds)
            if exited:
                await proc.finish()
            else:
                await proc.stop("timeout")
        except BaseException:
            # Cancelled (by the host, or a failing shell sibling): nothing may outlive the call.
            await asyncio.shield(proc.aclose())
            capture.close()
            raise
        capture.close()
        duration = time.monotonic() - proc.started
        code = proc.returncode
        output = capture.render()
        stats = capture.stats()
        meta: dict[str, Any] = {
            "exit_code": code,
            "timed_out": not exited,
            "duration_ms": round(duration * 1000),
            "sandbox": mechanism,
            **reads,
            "output": stats,
        }
        output_file = stats.get("spill_path")
        if output_file:
            meta["output_file"] = output_file
        stale = _changed_while_running(before)
        if stale:
            meta["changed_files"] = stale
        parts: list[str] = []
        if unsandboxed_note:
            parts.append(unsandboxed_note)
        short = short_command(args.command)
        tail = [text(loc, CATALOG, "stale", paths=", ".join(stale))] if stale else []
        if not exited:
            parts.append(text(loc, CATALOG, "timeout", secs=args.timeout_seconds, max=MAX_TIMEOUT))
            parts.append(output or text(loc, CATALOG, "no_output"))
            parts += tail
            return ToolResult.failure(
                ErrorCode.TIMEOUT,
                "\n".join(parts),
                summary=text(
                    loc, CATALOG, "summary_timeout", command=short, secs=args.timeout_seconds
                ),
                metadata=meta,
            )
        assert code is not None
        net = "" if self._options(ctx).network else text(loc, CATALOG, "net_off")
        unasked = reads.get("writes") == "tmpdir"
        if unasked and _looks_sandboxed(output):
            # Also when the line ended well: its writes failed, and the model should know why.
            plan = ctx.session.mode is PermissionMode.PLAN
            tail.insert(0, text(loc, CATALOG, "plan_hint" if plan else "readonly_hint", net=net))
        if code == 0:
            parts.append(output or text(loc, CATALOG, "no_output"))
            parts += tail
            return ToolResult.success(
                "\n".join(parts),
                summary=text(loc, CATALOG, "summary_ok", command=short, secs=duration),
                metadata=meta,
            )
        # The shell reports a command killed by a signal as 128+N; a negative code means the
        # shell itself was killed.
        shown = code if code >= 0 else 128 - code
        meta["exit_code"] = shown
        sig = -code if code < 0 else (code - 128 if 128 < code < 160 else None)
        if sig is not None:
            meta["signal"] = _signal_name(sig)
            parts.append(text(loc, CATALOG, "exit_signal", name=_signal_name(sig), code=shown))
        else:
            parts.append(text(loc, CATALOG, "exit_failed", code=shown))
        parts.append(output or text(loc, CATALOG, "no_output"))
        if mechanism != "none" and not unasked and _looks_sandboxed(output):
            roots = ", ".join(str(r) for r in ctx.write_roots)
            parts.append(text(loc, CATALOG, "sandbox_hint", roots=roots, net=net))
        if reads["reads"] == "confined" and (
            "No such file or directory" in output
            or (reads.get("reads_by") == "landlock" and "Permission denied" in output)
        ):
            parts.append(text(loc, READS_CATALOG, "reads_hint"))
        parts += tail
        return ToolResult.failure(
            ErrorCode.NONZERO_EXIT,
            "\n".join(parts),
            summary=text(loc, CATALOG, "summary_failed", command=short, code=shown, secs=duration),
            metadata=meta,
        )

    def _background(
        self,
        args: RunShellArgs,
        ctx: ToolContext,
        job_id: str,
        proc: ShellProcess,
        log: Path,
        mechanism: str,
        reads: dict[str, str],
    ) -> ToolResult:
        short = short_command(args.command)
        return ToolResult.success(
            text(
                ctx.locale,
                CATALOG,
                "bg_started",
                id=job_id,
                pid=proc.pid,
                command=short,
                secs=args.timeout_seconds,
            ),
            summary=text(ctx.locale, CATALOG, "summary_bg", id=job_id, command=short),
            metadata={
                "job_id": job_id,
                "pid": proc.pid,
                "log_file": str(log),
                "sandbox": mechanism,
                **reads,
                "timeout_seconds": args.timeout_seconds,
            },
        )


def _unavailable(loc: str, exc: SandboxUnavailable) -> ToolFailure:
    """What the model reads when the command cannot run for want of a sandbox."""
    if exc.kind == "temp_in_root":
        return ToolFailure(
            text(loc, CATALOG, "temp_in_root", temp=exc.detail),
            code=ErrorCode.SANDBOX_UNAVAILABLE,
        )
    return ToolFailure(
        text(loc, CATALOG, "unavailable", reason=exc.detail),
        code=ErrorCode.SANDBOX_UNAVAILABLE,
        # The machine offers none (rather than this command's sandbox failing to set up).
        metadata={"sandbox": "none", "reason": exc.detail} if exc.kind == "no_sandbox" else None,
    )


_STALE_CHECK_LIMIT = 2_000
"""Most files read earlier that are checked for changes after a command (one stat each)."""


def _read_files_state(session: Session) -> dict[str, tuple[int, int] | None]:
    """(mtime, size) now of the files the session read (None: gone), to compare after a command."""
    state: dict[str, tuple[int, int] | None] = {}
    for i, path in enumerate(session.files):
        if i >= _STALE_CHECK_LIMIT:
            break
        try:
            st = stat_file(path)
        except ToolFailure:
            continue
        state[path] = None if st is None else (st.st_mtime_ns, st.st_size)
    return state


def _changed_while_running(before: dict[str, tuple[int, int] | None]) -> list[str]:
    """The files of `before` whose (mtime, size) differs now.

    The command (or something running at the same time) changed them, so what the session read
    of them is stale.
    """
    changed: list[str] = []
    for path, old in before.items():
        try:
            st = stat_file(path)
        except ToolFailure:
            continue
        if (None if st is None else (st.st_mtime_ns, st.st_size)) != old:
            changed.append(path)
    return changed


def _looks_sandboxed(output: str) -> bool:
    return "Read-only file system" in output or "Permission denied" in output
