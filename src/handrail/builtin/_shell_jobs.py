"""shell_output and the background jobs of run_shell, kept per session.

`run_in_background` is the model's explicit choice: a job keeps its time limit (a watcher
task stops its process tree there), is stopped when the session ends, and leaves a notice
for the model when it exits. shell_output reads a job's new output and status, waits for it
or stops it. The session's state (its jobs, and `$TMPDIR`: `tmp/` in the session's own
temporary directory) lives in `session.data["run_shell"]`; the jobs are stopped when the
session closes, and the session then removes the folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field

from .. import (
    CallView,
    Display,
    ErrorCode,
    Session,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ..sandbox import OutputCapture, ShellProcess, ShellSandbox, read_log
from ._displays import shell_output_display
from ._i18n import text
from ._shell_text import CATALOG, OUTPUT_CHARS, short_command

__all__ = ["ShellOutput", "ShellOutputArgs", "shell_state", "start_job"]

_STATE_KEY = "run_shell"


class ShellOutputArgs(BaseModel):
    """Arguments of shell_output."""

    job_id: str = Field(max_length=100, description="The id run_shell returned, e.g. `sh-1`.")
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
    """Per-session: the shell's sandbox (its private temporary folder) and the background jobs."""

    sandbox: ShellSandbox
    """`$TMPDIR`, and the `.git` folders found in the write roots, kept read-only for commands
    that write."""
    jobs: dict[str, _Job] = field(default_factory=dict[str, "_Job"])
    next_id: int = 1


def shell_state(session: Session) -> _ShellState:
    """The session's run_shell state; the first call registers its cleanup.

    The shell's `$TMPDIR` is `tmp/` in the session's own temporary directory, which the
    session removes when it closes, after the jobs were stopped here.
    """
    state = session.data.get(_STATE_KEY)
    if isinstance(state, _ShellState):
        return state
    new = _ShellState(sandbox=ShellSandbox(session.temp_path("tmp")))
    # setdefault: two parallel calls of one session end up sharing one state.
    state = session.data.setdefault(_STATE_KEY, new)
    if state is new:

        async def close() -> None:
            # Forget the state: a call after the session closed starts afresh (a new $TMPDIR,
            # a new cleanup) instead of reusing a removed folder and unwatched jobs.
            if session.data.get(_STATE_KEY) is new:
                del session.data[_STATE_KEY]
            await _close_state(new)

        session.on_close(close)
    assert isinstance(state, _ShellState)
    return state


async def _close_state(state: _ShellState) -> None:
    jobs = list(state.jobs.values())
    await asyncio.gather(*(job.process.aclose() for job in jobs), return_exceptions=True)
    for job in jobs:
        if job.watcher is not None and not job.watcher.done():
            job.watcher.cancel()
        job.capture.close()


def start_job(
    state: _ShellState,
    session: Session,
    locale: str,
    *,
    job_id: str,
    command: str,
    process: ShellProcess,
    capture: OutputCapture,
    log_path: Path,
    timeout: float,
) -> None:
    """Register a started background job and watch it until it ends or reaches `timeout`."""
    job = _Job(
        id=job_id,
        command=command,
        process=process,
        capture=capture,
        log_path=log_path,
        timeout=timeout,
        started=process.started,
    )
    state.jobs[job_id] = job
    job.watcher = asyncio.get_running_loop().create_task(
        _watch(job, session, locale), name=f"handrail-{job_id}"
    )


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
    short = short_command(job.command)
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

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`shell_output_display`)."""
        return shell_output_display(view, name=self.name)

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
