"""run_shell and shell_output: shell commands with real process control, in an OS sandbox.

A command runs through bash in the session's cwd, in a new session, with stdin `/dev/null`
(nothing can wait for input) and the environment minus configured secrets. By default it runs
confined (`sandbox.Confinement`): writes only inside the write roots and a private temporary
folder, `.git` and `.handrail` read-only, no network. Where the machine offers no sandbox the
call is refused unless the user's configuration allows running unsandboxed; the model has no
way to turn the sandbox off.

At its time limit (or on cancellation) the whole process tree gets SIGTERM, SIGKILL two seconds
later, and the result is TIMEOUT with the output so far. A command is never moved to the
background silently; `run_in_background` is the model's explicit choice, and a background job
keeps its time limit, is stopped when the session ends, and leaves a notice when it exits.

Output streams into a bounded capture: the model sees head and tail with exact counts of what
was left out, and the full output is saved to a file named in the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import functools
import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from .. import (
    ErrorCode,
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
    Confinement,
    OutputCapture,
    SandboxSupport,
    ShellProcess,
    read_log,
    sandbox_support,
    stat_file,
)
from ._i18n import text

__all__ = ["RunShell", "RunShellArgs", "ShellOutput", "ShellOutputArgs"]

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
OUTPUT_CHARS = 30_000
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
)
_FIXED_ENV = {
    # Nothing should page, prompt or ask interactively: there is no terminal and no stdin.
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
}
_STATE_KEY = "run_shell"

CATALOG = {
    "en": {
        "timeout_range": (
            "timeout_seconds is in seconds and must be between 1 and {max:g} (10 minutes); got "
            "{got:g}.{hint} For longer work, use run_in_background=true and check it with "
            "shell_output."
        ),
        "ms_hint": " That looks like milliseconds: {secs:g} seconds would be {got:g} / 1000.",
        "empty": "command is empty or only whitespace; give the shell command to run.",
        "nul": "command contains a NUL character, which no shell command can contain.",
        "no_output": "(no output)",
        "exit_failed": "Exit code {code}.",
        "exit_signal": "Killed by signal {name} (exit code {code}).",
        "timeout": (
            "Timed out after {secs:g} s: the command and every process it started were stopped "
            "(SIGTERM, then SIGKILL after 2 s). Output so far is below. If it needs longer, call "
            "again with a larger timeout_seconds (at most {max:g}), or run it with "
            "run_in_background=true."
        ),
        "sandbox_hint": (
            "Note: the command ran in the OS sandbox: it can write only inside {roots} and "
            "$TMPDIR; .git and .handrail are read-only{net}. A 'Permission denied' or "
            "'Read-only file system' error above may come from it; use the file tools for "
            "edits, or ask the user to widen the sandbox in the run_shell settings."
        ),
        "net_off": ", and there is no network",
        "stale": (
            "Files read earlier in this session that changed while the command ran (read them "
            "again before editing): {paths}"
        ),
        "unavailable": (
            "run_shell cannot run this command: no OS sandbox is available on this machine "
            "({reason}), and the configuration does not allow running commands unsandboxed. Use "
            "the file tools (read_file, grep_search, list_files, edit_file) instead, or ask the "
            "user to enable a sandbox or set allow_unsandboxed in the run_shell settings."
        ),
        "unsandboxed": (
            "(No OS sandbox on this machine: {reason}. The command ran unsandboxed because the "
            "configuration allows it.)"
        ),
        "start_failed": "The command could not be started: {error}.",
        "cwd_gone": (
            "The working directory {cwd} no longer exists, so the command cannot run there. "
            "Recreate it or ask the user to restart the session in an existing folder."
        ),
        "bg_started": (
            "Started background job {id} (pid {pid}): {command}\nIt is stopped after {secs:g} s. "
            'Check its output and status with shell_output(job_id="{id}"); stop it with '
            'shell_output(job_id="{id}", stop=true).'
        ),
        "bg_exited": "Background job {id} ({command}) exited with code {code} after {secs:.1f} s.",
        "bg_timeout": (
            "Background job {id} ({command}) was stopped at its time limit of {limit:g} s."
        ),
        "bg_stopped": "Background job {id} ({command}) was stopped.",
        "job_unknown": ("There is no background job {id!r} in this session. {known}"),
        "jobs_known": "Known jobs: {ids}.",
        "jobs_none": "No background jobs were started in this session.",
        "status_running": "Job {id} is still running ({secs:.1f} s so far).",
        "status_exited": "Job {id} exited with code {code} after {secs:.1f} s.",
        "status_timeout": "Job {id} was stopped at its time limit of {limit:g} s.",
        "status_stopped": "Job {id} was stopped.",
        "new_output": "New output:",
        "no_new_output": "(no new output)",
        "skipped": "[... {bytes:,} earlier bytes of new output skipped; full log: {path}]",
        "summary_ok": "Ran {command} (exit 0, {secs:.1f} s)",
        "summary_failed": "{command} exited with {code} ({secs:.1f} s)",
        "summary_timeout": "{command} timed out after {secs:g} s",
        "summary_bg": "Started {id}: {command}",
    },
    "zh": {
        "timeout_range": (
            "timeout_seconds 的单位是秒,必须在 1 到 {max:g}(10 分钟)之间;收到的是 {got:g}。"
            "{hint}更长的工作请使用 run_in_background=true,再用 shell_output 查看。"
        ),
        "ms_hint": "这看起来是毫秒:{got:g} 毫秒即 {secs:g} 秒。",
        "empty": "command 为空或只有空白;请给出要运行的 shell 命令。",
        "nul": "command 含有 NUL 字符,shell 命令中不可能出现它。",
        "no_output": "(无输出)",
        "exit_failed": "退出码 {code}。",
        "exit_signal": "被信号 {name} 终止(退出码 {code})。",
        "timeout": (
            "运行 {secs:g} 秒后超时:命令及其启动的所有进程都已被终止(先 SIGTERM,2 秒后 "
            "SIGKILL)。下面是到目前为止的输出。如果需要更长时间,请用更大的 timeout_seconds"
            "(最多 {max:g})重新调用,或使用 run_in_background=true 运行。"
        ),
        "sandbox_hint": (
            "注意:命令在操作系统沙箱中运行:只能写入 {roots} 和 $TMPDIR;.git 和 .handrail "
            "是只读的{net}。上面的 'Permission denied' 或 'Read-only file system' 错误可能来自"
            "沙箱;请用文件工具修改文件,或请用户在 run_shell 设置中放宽沙箱。"
        ),
        "net_off": ",并且没有网络",
        "stale": "本会话之前读过、在命令运行期间被修改的文件(编辑前请重新读取):{paths}",
        "unavailable": (
            "run_shell 无法运行此命令:本机没有可用的操作系统沙箱({reason}),且配置不允许"
            "在沙箱外运行命令。请改用文件工具(read_file、grep_search、list_files、edit_file),"
            "或请用户启用沙箱,或在 run_shell 设置中设置 allow_unsandboxed。"
        ),
        "unsandboxed": "(本机没有操作系统沙箱:{reason}。因配置允许,命令在沙箱外运行。)",
        "start_failed": "无法启动命令:{error}。",
        "cwd_gone": (
            "工作目录 {cwd} 已不存在,命令无法在那里运行。请重新创建它,或请用户在一个存在的"
            "文件夹中重新开始会话。"
        ),
        "bg_started": (
            "已启动后台任务 {id}(pid {pid}):{command}\n它将在 {secs:g} 秒后被终止。"
            '用 shell_output(job_id="{id}") 查看输出和状态;用 '
            'shell_output(job_id="{id}", stop=true) 终止它。'
        ),
        "bg_exited": "后台任务 {id}({command})在 {secs:.1f} 秒后退出,退出码 {code}。",
        "bg_timeout": "后台任务 {id}({command})达到 {limit:g} 秒的时间限制,已被终止。",
        "bg_stopped": "后台任务 {id}({command})已被终止。",
        "job_unknown": "本会话中没有后台任务 {id!r}。{known}",
        "jobs_known": "已有的任务:{ids}。",
        "jobs_none": "本会话还没有启动过后台任务。",
        "status_running": "任务 {id} 仍在运行(已运行 {secs:.1f} 秒)。",
        "status_exited": "任务 {id} 在 {secs:.1f} 秒后退出,退出码 {code}。",
        "status_timeout": "任务 {id} 达到 {limit:g} 秒的时间限制,已被终止。",
        "status_stopped": "任务 {id} 已被终止。",
        "new_output": "新的输出:",
        "no_new_output": "(没有新的输出)",
        "skipped": "[... 跳过了 {bytes:,} 字节较早的新输出;完整日志:{path}]",
        "summary_ok": "已运行 {command}(退出码 0,{secs:.1f} 秒)",
        "summary_failed": "{command} 以 {code} 退出({secs:.1f} 秒)",
        "summary_timeout": "{command} 在 {secs:g} 秒后超时",
        "summary_bg": "已启动 {id}:{command}",
    },
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


class ShellOutputArgs(BaseModel):
    """Arguments of shell_output."""

    job_id: str = Field(description="The id run_shell returned, e.g. `sh-1`.")
    wait_seconds: float = Field(
        default=0,
        ge=0,
        le=60,
        description=(
            "Wait up to this many seconds for the job to exit before answering (0: answer now)."
        ),
    )
    stop: bool = Field(
        default=False, description="Stop the job (its whole process tree) before answering."
    )


@dataclass(kw_only=True)
class _Job:
    id: str
    command: str
    process: ShellProcess
    capture: OutputCapture
    log_path: Path
    timeout: float
    started: float
    read_offset: int = 0
    status: str = "running"  # running | exited | timeout | stopped
    ended: float | None = None
    watcher: asyncio.Task[None] | None = None


@dataclass(kw_only=True)
class _ShellState:
    """Per-session: the private temporary folder and the background jobs."""

    temp_dir: Path
    jobs: dict[str, _Job] = field(default_factory=dict[str, "_Job"])
    next_id: int = 1


def _state(session: Session) -> _ShellState:
    state = session.data.get(_STATE_KEY)
    if isinstance(state, _ShellState):
        return state
    new = _ShellState(temp_dir=Path(tempfile.mkdtemp(prefix=f"handrail-tmp-{session.id[:8]}-")))
    # setdefault: two parallel calls of one session end up sharing one state.
    state = session.data.setdefault(_STATE_KEY, new)
    if state is new:

        async def close() -> None:
            await _close_state(new)

        session.on_close(close)
    else:
        shutil.rmtree(new.temp_dir, ignore_errors=True)
    assert isinstance(state, _ShellState)
    return state


async def _close_state(state: _ShellState) -> None:
    jobs = list(state.jobs.values())
    await asyncio.gather(*(job.process.aclose() for job in jobs), return_exceptions=True)
    for job in jobs:
        if job.watcher is not None and not job.watcher.done():
            job.watcher.cancel()
        job.capture.close()
    shutil.rmtree(state.temp_dir, ignore_errors=True)


@functools.lru_cache(maxsize=32)
def _deny_pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all the fnmatch patterns (checked against every variable on every call)."""
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def _short(command: str, limit: int = 80) -> str:
    line = " ".join(command.split())
    return f"`{line}`" if len(line) <= limit else f"`{line[: limit - 1]}…`"


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
        self.env_deny = tuple(str(p) for p in merged["env_deny"])


class RunShell(Tool):
    """The built-in run_shell tool.

    Args:
        sandbox: Confine commands with the OS sandbox (default True). False runs every command
            unsandboxed: a decision for the user's configuration, never the model's.
        allow_unsandboxed: Where no OS sandbox is available, run unsandboxed instead of refusing.
        network: Give sandboxed commands network access (default: none).
        extra_write_paths: More folders sandboxed commands may write (e.g. `~/.cache`).
        env_deny: Environment variables (fnmatch patterns) not passed to commands.
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
        "workspace and $TMPDIR, .git and .handrail are read-only, and there is no network "
        "unless the user allowed it. The command and everything it starts are stopped at "
        "timeout_seconds; long output is cut to its head and tail, with the full text saved to "
        "a file named in the result. For servers and long jobs use run_in_background and "
        "shell_output. Independent read-only commands (ls, cat, grep, git status...) may run "
        "in parallel."
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
        env_deny: Sequence[str] = DEFAULT_ENV_DENY,
        support: SandboxSupport | None = None,
        **options: Any,
    ) -> None:
        self._base: dict[str, Any] = {
            "sandbox": sandbox,
            "allow_unsandboxed": allow_unsandboxed,
            "network": network,
            "extra_write_paths": tuple(extra_write_paths),
            "env_deny": tuple(env_deny),
        }
        self._support = support
        super().__init__(**options)

    # Input-dependent flags: a read-only command line runs in parallel and in plan mode.
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
        """Refuse an empty command, a NUL byte, or a time limit outside 1..600 seconds."""
        if not args.command.strip():
            return text(ctx.locale, CATALOG, "empty")
        if "\x00" in args.command:
            return text(ctx.locale, CATALOG, "nul")
        got = args.timeout_seconds
        if got > MAX_TIMEOUT or got < 1:
            hint = ""
            if got >= 1000:
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

    def _env(self, opts: _Options, temp_dir: Path) -> dict[str, str]:
        deny = _deny_pattern(opts.env_deny)
        env = {k: v for k, v in os.environ.items() if not deny.match(k)}
        env.update(_FIXED_ENV)
        env["TMPDIR"] = str(temp_dir)
        return env

    def _confinement(
        self, opts: _Options, ctx: ToolContext, temp_dir: Path
    ) -> tuple[Confinement | None, str]:
        """The sandbox for this call (None: plain process), and a note when it runs unconfined."""
        support = self._support or sandbox_support()
        note = ""
        if opts.sandbox and not support.available:
            if not opts.allow_unsandboxed:
                raise ToolFailure(
                    text(ctx.locale, CATALOG, "unavailable", reason=support.reason),
                    code=ErrorCode.SANDBOX_UNAVAILABLE,
                    metadata={"sandbox": "none", "reason": support.reason},
                )
            note = text(ctx.locale, CATALOG, "unsandboxed", reason=support.reason)
        confine = opts.sandbox and support.available
        if not confine and not support.namespaces:
            return None, note
        try:
            conf = Confinement(
                write_roots=ctx.write_roots,
                temp_dir=temp_dir,
                network=opts.network,
                extra_write=[os.path.expanduser(p) for p in opts.extra_write_paths],
                filesystem=confine,
                support=support,
            )
        except OSError as exc:
            raise ToolFailure(
                text(ctx.locale, CATALOG, "unavailable", reason=str(exc)),
                code=ErrorCode.SANDBOX_UNAVAILABLE,
            ) from exc
        return conf, note

    async def run(self, args: RunShellArgs, ctx: ToolContext) -> ToolResult:
        """Run the command (or start it in the background) and report how it ended."""
        loc = ctx.locale
        if not ctx.cwd.is_dir():
            raise ToolFailure(
                text(loc, CATALOG, "cwd_gone", cwd=ctx.cwd), code=ErrorCode.FILE_NOT_FOUND
            )
        opts = self._options(ctx)
        state = _state(ctx.session)
        conf, unsandboxed_note = self._confinement(opts, ctx, state.temp_dir)
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
            with conf if conf is not None else contextlib.nullcontext():
                proc = await ShellProcess.start(
                    args.command,
                    cwd=ctx.cwd,
                    env=self._env(opts, state.temp_dir),
                    capture=capture,
                    confinement=conf,
                    on_data=None if args.run_in_background else on_data,
                    log_path=log,
                )
        except OSError as exc:
            capture.close()
            raise ToolFailure(
                text(loc, CATALOG, "start_failed", error=exc.strerror or str(exc)),
                code=ErrorCode.SANDBOX_UNAVAILABLE
                if conf is not None and conf.filesystem
                else ErrorCode.EXECUTION_ERROR,
            ) from exc
        mechanism = conf.label if conf is not None else "none"
        if args.run_in_background:
            assert log is not None
            return self._background(args, ctx, state, job_id, proc, capture, log, mechanism)
        return await self._foreground(
            args, ctx, proc, capture, spill, mechanism, unsandboxed_note, before
        )

    async def _foreground(
        self,
        args: RunShellArgs,
        ctx: ToolContext,
        proc: ShellProcess,
        capture: OutputCapture,
        spill: Path,
        mechanism: str,
        unsandboxed_note: str,
        before: dict[str, tuple[int, int] | None],
    ) -> ToolResult:
        loc = ctx.locale
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
        short = _short(args.command)
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
        if mechanism != "none" and _looks_sandboxed(output):
            roots = ", ".join(str(r) for r in ctx.write_roots)
            net = "" if self._options(ctx).network else text(loc, CATALOG, "net_off")
            parts.append(text(loc, CATALOG, "sandbox_hint", roots=roots, net=net))
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
        state: _ShellState,
        job_id: str,
        proc: ShellProcess,
        capture: OutputCapture,
        log: Path,
        mechanism: str,
    ) -> ToolResult:
        job = _Job(
            id=job_id,
            command=args.command,
            process=proc,
            capture=capture,
            log_path=log,
            timeout=args.timeout_seconds,
            started=proc.started,
        )
        state.jobs[job_id] = job
        job.watcher = asyncio.get_running_loop().create_task(
            _watch(job, ctx.session, ctx.locale), name=f"handrail-{job_id}"
        )
        short = _short(args.command)
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
                "timeout_seconds": args.timeout_seconds,
            },
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


async def _watch(job: _Job, session: Session, locale: str) -> None:
    """Keep a background job to its time limit, then leave a notice for the model."""
    proc = job.process
    try:
        exited = await proc.wait(job.timeout)
        if exited:
            await proc.finish()
        else:
            await proc.stop("timeout")
    except asyncio.CancelledError:
        await asyncio.shield(proc.aclose())
        raise
    finally:
        job.capture.close()
        job.ended = time.monotonic()
    short = _short(job.command)
    if proc.killed_by == "timeout":
        job.status = "timeout"
        session.notify(
            text(locale, CATALOG, "bg_timeout", id=job.id, command=short, limit=job.timeout)
        )
    elif proc.killed_by is not None:
        job.status = "stopped"
        session.notify(text(locale, CATALOG, "bg_stopped", id=job.id, command=short))
    else:
        job.status = "exited"
        code = proc.returncode
        shown = code if code is None or code >= 0 else 128 - code
        session.notify(
            text(
                locale,
                CATALOG,
                "bg_exited",
                id=job.id,
                command=short,
                code=shown,
                secs=job.ended - job.started,
            )
        )


class ShellOutput(Tool):
    """The built-in shell_output tool: new output and status of a background job."""

    name = "shell_output"
    description = (
        "Get the new output (since the last check) and the status of a background job started "
        "with run_shell(run_in_background=true). wait_seconds waits for the job to exit first; "
        "stop=true stops the job and everything it started."
    )
    kind = ToolKind.EXECUTE
    destructive = False
    max_result_chars = OUTPUT_CHARS + 2_000
    args_model: ClassVar[type[BaseModel] | None] = ShellOutputArgs

    @staticmethod
    def read_only(args: ShellOutputArgs) -> bool:
        """Reading output changes nothing; stopping a job does."""
        return not args.stop

    @staticmethod
    def concurrency_safe(args: ShellOutputArgs) -> bool:
        """Reads may run alongside other reads."""
        return not args.stop

    async def run(self, args: ShellOutputArgs, ctx: ToolContext) -> ToolResult:
        """Report the job's status and its output since the last check."""
        loc = ctx.locale
        state = ctx.session.data.get(_STATE_KEY)
        job = state.jobs.get(args.job_id) if isinstance(state, _ShellState) else None
        if job is None:
            ids = sorted(state.jobs) if isinstance(state, _ShellState) else []
            known = (
                text(loc, CATALOG, "jobs_known", ids=", ".join(ids))
                if ids
                else text(loc, CATALOG, "jobs_none")
            )
            raise ToolFailure(
                text(loc, CATALOG, "job_unknown", id=args.job_id, known=known),
                code=ErrorCode.INVALID_ARGS,
            )
        if args.stop and job.process.running:
            await job.process.stop("stop")
        elif args.wait_seconds > 0 and job.watcher is not None and not job.watcher.done():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.watcher), args.wait_seconds)
        if args.stop and job.watcher is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(job.watcher), 5)
        data, size = read_log(job.log_path, job.read_offset, 4 * OUTPUT_CHARS)
        skipped = 0
        if size - job.read_offset > len(data):
            # More arrived than one answer shows: keep the newest part.
            skipped = size - job.read_offset - 4 * OUTPUT_CHARS
            data, _ = read_log(job.log_path, size - 4 * OUTPUT_CHARS, 4 * OUTPUT_CHARS)
        job.read_offset = size
        view = OutputCapture(None, limit_chars=OUTPUT_CHARS)
        view.feed("stdout", data)
        view.close()
        rendered = view.render()
        secs = (job.ended or time.monotonic()) - job.started
        code = job.process.returncode
        shown = code if code is None or code >= 0 else 128 - code
        status = {
            "running": text(loc, CATALOG, "status_running", id=job.id, secs=secs),
            "exited": text(loc, CATALOG, "status_exited", id=job.id, code=shown, secs=secs),
            "timeout": text(loc, CATALOG, "status_timeout", id=job.id, limit=job.timeout),
            "stopped": text(loc, CATALOG, "status_stopped", id=job.id),
        }[job.status if job.status != "running" or job.process.running else "running"]
        parts = [status]
        if skipped > 0:
            parts.append(text(loc, CATALOG, "skipped", bytes=skipped, path=job.log_path))
        if rendered:
            parts += [text(loc, CATALOG, "new_output"), rendered]
        else:
            parts.append(text(loc, CATALOG, "no_new_output"))
        return ToolResult.success(
            "\n".join(parts),
            summary=status,
            metadata={
                "job_id": job.id,
                "status": job.status,
                "exit_code": shown,
                "log_file": str(job.log_path),
                "new_bytes": len(data) + max(skipped, 0),
            },
        )
