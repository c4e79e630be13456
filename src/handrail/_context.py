"""What a running tool sees: its `ToolContext`, and the per-conversation `Session`."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import logging
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ._contract import (
    Approval,
    ApprovalRequest,
    Approver,
    Confirmation,
    Elicitation,
    ProgressEvent,
    Question,
    Sampler,
)

__all__ = [
    "FileRecord",
    "Grant",
    "PermissionMode",
    "Session",
    "StateUpdate",
    "ToolContext",
    "host_scope",
]

_HOST: contextvars.ContextVar[Any] = contextvars.ContextVar("handrail_host", default=None)


@contextlib.contextmanager
def host_scope(value: Any) -> Generator[None]:
    """Calls made inside this block see `value` as `ToolContext.host`.

    An agent framework's adapter wraps each call it makes in this block with the framework's
    own context for that call (pydantic-ai's `RunContext`, openai-agents' `ToolContext`,
    LangChain's `ToolRuntime`), so a handrail tool can reach the framework's dependencies.
    It is a context variable: it follows the call into worker threads and nested tasks.
    """
    token = _HOST.set(value)
    try:
        yield
    finally:
        _HOST.reset(token)


class PermissionMode(enum.StrEnum):
    """How the policy treats calls that no rule decides."""

    DEFAULT = "default"
    """Read-only calls run; everything else asks."""
    ACCEPT_EDITS = "accept_edits"
    """Also file edits inside the write roots run without asking."""
    PLAN = "plan"
    """Only read-only calls (and writing the plan file); everything else is denied."""
    DONT_ASK = "dont_ask"
    """Like default, but whatever would ask is denied instead."""
    BYPASS = "bypass"
    """Everything runs, except what deny rules and the sandbox refuse."""


Grant = Literal["read_only", "rule", "hook", "mode", "user"]
"""Why an allowed call runs: `read_only` (nobody was asked: the call was judged read-only, or
the session is in plan mode), `rule` (an allow rule covers it), `hook` (a pre-tool hook allowed
it), `mode` (the mode allows it: bypass, accept_edits for edits, the plan file) or `user` (a
person approved it). A tool that can change things reads it in `ToolContext.granted_by` to
choose how much it may change: `run_shell` runs a `read_only` line with no write roots."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRecord:
    """What a session knows about a file it read: enough to detect a change since."""

    mtime_ns: int
    size: int
    sha256: str
    complete: bool
    """True when the whole file was read (possibly page by page, unchanged in between)."""
    ranges: tuple[tuple[int, int], ...] = ()
    """Line ranges read so far (1-based, inclusive), for page-by-page reads."""


StateUpdate = Callable[["Session"], None]
"""A change to session state, returned by a tool and applied by the runtime in request order."""


@dataclass(kw_only=True)
class Session:
    """Per-conversation state: files read, activated deferred tools, mode, session rules.

    One session per conversation (one MCP session, one agent run). Tools never mutate it
    directly while running: they return `StateUpdate`s through `ToolContext.update_state`, and
    the runtime applies them after the call, in request order, so parallel calls stay
    deterministic.
    """

    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    mode: PermissionMode = PermissionMode.DEFAULT
    files: dict[str, FileRecord] = field(default_factory=dict[str, FileRecord])
    """Files read in this session, by resolved absolute path."""
    activated: list[str] = field(default_factory=list[str])
    """Deferred tools activated through tool_search, in activation order."""
    allow_rules: list[str] = field(default_factory=list[str])
    """Rules added by "allow always" answers."""
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    """Free-form state for tools (a todo list, background jobs), keyed by the tool's name."""
    results_dir: Path | None = None
    """Where oversized results are saved. None (the default): `results/` in the session's own
    temporary directory, removed when the session closes. A folder given here is the host's:
    it is kept."""
    notices: list[str] = field(default_factory=list[str])
    """Messages for the model that arrived between calls (a background job ended), oldest first.

    A host adds them to the conversation before the next model turn (`take_notices`)."""
    on_notice: Callable[[str], None] | None = None
    """Called with each notice as it arrives (e.g. to wake an idle agent loop)."""
    turn: int | None = None
    """The host's turn counter (the agent's user turns): checkpoints taken during a turn carry
    it, so a host can put the files back to where a turn began."""
    sampler: Sampler | None = None
    """The model that answers tools' requests for a completion (MCP sampling), or None: such
    requests are refused. An `Agent` sets its own when the session has none."""
    _closers: list[Callable[[], Awaitable[None]]] = field(
        default_factory=list[Callable[[], Awaitable[None]]], repr=False
    )
    # The session's own temporary directory, made on first use (`temp_path`); the finalizer
    # removes it once, from `aclose`, garbage collection or interpreter exit.
    _temp_dir: Path | None = field(default=None, init=False, repr=False, compare=False)
    _temp_remover: weakref.finalize[[Path], Session] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _temp_lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )
    # The reader/writer gate that keeps this session's unsafe calls from overlapping (made by
    # the runtime on first use: `handrail.runtime._gate`).
    _gate: Any = field(default=None, init=False, repr=False, compare=False)
    # The session's checkpoints (`handrail.sandbox.Checkpoints`), made by a runtime that keeps
    # them, on the first call that can change files.
    _checkpoints: Any = field(default=None, init=False, repr=False, compare=False)

    def results_path(self) -> Path:
        """The directory for full copies of truncated results, created on first use."""
        if self.results_dir is None:
            return self.temp_path("results")
        self.results_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.results_dir

    @property
    def temp_dir(self) -> Path | None:
        """The session's own temporary directory, or None while nothing needed it."""
        return self._temp_dir

    def temp_path(self, name: str) -> Path:
        """Folder `name` of the session's own temporary directory, created on first use.

        The directory (`$TMPDIR/handrail-<id>-XXXXXXXX/`, private to the user) holds what the
        session writes for a while: `results/` (full copies of truncated results, which the
        model is told about) and `tmp/` (the shell's `$TMPDIR`). `aclose` removes it; so does
        garbage collection or interpreter exit for a session that was never closed.
        """
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a folder name: {name!r}")
        with self._temp_lock:  # sync tools run in threads: one directory per session
            top = self._temp_dir
            if top is None:
                top = self._temp_dir = Path(tempfile.mkdtemp(prefix=f"handrail-{self.id[:8]}-"))
                self._temp_remover = weakref.finalize(self, _remove_tree, top)
        path = top / name
        path.mkdir(exist_ok=True)
        return path

    def notify(self, text: str) -> None:
        """Queue a notice for the model (and tell `on_notice`)."""
        self.notices.append(text)
        if self.on_notice is not None:
            self.on_notice(text)

    def take_notices(self) -> list[str]:
        """The queued notices, oldest first; the queue is emptied."""
        out, self.notices = self.notices, []
        return out

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` when the session ends (background jobs are stopped this way)."""
        self._closers.append(closer)

    async def aclose(self) -> None:
        """End the session: run the closers, newest first, then remove its temporary directory.

        Safe to call twice. Closers stop background jobs first, so nothing still writes into
        the directory while it is removed.
        """
        closers, self._closers = self._closers, []
        for closer in reversed(closers):
            try:
                await closer()
            except Exception:  # one failing closer must not keep the others from running
                logging.getLogger("handrail").exception("a session closer failed")
        with self._temp_lock:
            remover, self._temp_remover, self._temp_dir = self._temp_remover, None, None
        if remover is not None and remover.alive:
            # In a thread: a shell's tmp/ may hold many files, and the loop must stay free.
            await asyncio.to_thread(remover)


def _is_approval(answer: object) -> bool:
    # Approvers are host code: one that returns something else must not crash the tool.
    return isinstance(answer, Approval)


def _remove_tree(path: Path) -> None:
    """Remove `path` and all it holds, never following a symlink inside it.

    The shell's `tmp/` is the command's to shape: it may plant symlinks to folders outside
    (`shutil.rmtree` unlinks a symlink and never descends into it or changes its target) or
    make folders unreadable (opened up again, symlinks skipped, so nothing outside changes
    mode). Errors are logged, never raised: cleanup must not fail a session's end.
    """
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    try:
        if os.path.islink(path):
            os.unlink(path)
            return
        # Top-down: each folder is opened before os.walk lists it.
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
        for top, dirs, _ in os.walk(path):
            for name in dirs:
                sub = os.path.join(top, name)
                if not os.path.islink(sub):  # chmod would follow it
                    with contextlib.suppress(OSError):
                        os.chmod(sub, 0o700)
        shutil.rmtree(path)
    except OSError as exc:
        logging.getLogger("handrail").warning("could not remove %s: %s", path, exc)


ProgressFunc = Callable[[ProgressEvent], None]


class ToolContext:
    """Everything a running tool may use besides its arguments.

    Attributes are read-only by convention; tools change session state only through
    `update_state`, and report progress through `progress`.
    """

    __slots__ = (
        "_cancel_event",
        "_cancelled",
        "_progress",
        "_updates",
        "approver",
        "call_id",
        "cwd",
        "deadline",
        "granted_by",
        "hidden_paths",
        "locale",
        "read_roots",
        "session",
        "settings",
        "tool_name",
        "write_roots",
    )

    def __init__(
        self,
        *,
        call_id: str,
        tool_name: str,
        cwd: Path,
        read_roots: tuple[Path, ...],
        write_roots: tuple[Path, ...],
        session: Session,
        deadline: float | None = None,
        locale: str = "en",
        progress: ProgressFunc | None = None,
        settings: Mapping[str, Any] | None = None,
        hidden_paths: tuple[Path, ...] = (),
        approver: Approver | None = None,
    ) -> None:
        self.call_id = call_id
        """The id of the call being run."""
        self.tool_name = tool_name
        """The tool's canonical name."""
        self.cwd = cwd
        """The session's working directory; relative paths resolve against it."""
        self.read_roots = read_roots
        """Directories the call may read under."""
        self.write_roots = write_roots
        """Directories the call may write under."""
        self.session = session
        """Per-conversation state (read it freely; change it with `update_state`)."""
        self.deadline = deadline
        """`time.monotonic()` value at which the call times out, or None."""
        self.locale = locale
        """Language for model-facing text (`en`, `zh`)."""
        self.settings: Mapping[str, Any] = settings or {}
        """Tool settings from the runtime configuration."""
        self.hidden_paths = hidden_paths
        """Secret locations no tool may read, list or search, even inside a root; the shell's
        sandbox hides them too (`handrail.permissions.hidden_paths`). The runtime fills it."""
        self.granted_by: Grant = "read_only"
        """What allowed this call (see `Grant`), set by the runtime after its permission stage.
        A context made by hand says `read_only`: a tool run outside the pipeline was approved
        by nobody, so it gets the narrowest sandbox."""
        self.approver = approver
        """Who answers this call's questions (the call's, else the runtime's approver), or
        None when nobody can be asked. A tool asks through `ask`; a tool that starts more
        calls (a sub-agent's runtime) passes it on, so their approvals reach the same person."""
        self._progress = progress
        self._updates: list[StateUpdate] = []
        self._cancelled = False
        self._cancel_event: asyncio.Event | None = None

    @property
    def host(self) -> Any:
        """The agent framework's own context for this call, or None outside an integration.

        pydantic-ai's `RunContext` (its `deps` included), openai-agents' `ToolContext`, or
        LangChain's `ToolRuntime`, as the `handrail.integrations` adapter passed it
        (`host_scope`).
        """
        return _HOST.get()

    @property
    def cancelled(self) -> bool:
        """True once the call was cancelled or timed out; long sync work should check it."""
        return self._cancelled

    async def wait_cancelled(self) -> None:
        """Wait until the call is cancelled (for tools that watch cancellation alongside work)."""
        if self._cancelled:
            return
        if self._cancel_event is None:
            self._cancel_event = asyncio.Event()
        await self._cancel_event.wait()

    def cancel(self) -> None:
        """Mark the call cancelled (the runtime calls this on timeout and cancellation)."""
        self._cancelled = True
        if self._cancel_event is not None:
            self._cancel_event.set()

    def progress(self, message: str, **data: Any) -> None:
        """Report progress; hosts receive it at once, even while results wait for their turn."""
        if self._progress is not None:
            self._progress(
                ProgressEvent(
                    call_id=self.call_id, tool_name=self.tool_name, message=message, data=data
                )
            )

    async def ask(self, question: Question) -> Approval:
        """Ask the person behind this call something (a `Confirmation`, an `Elicitation`).

        The question names this call and tool; who asks (a sub-agent's label) is filled in on
        the way. With nobody to ask (no approver), or an approver that fails or answers
        something else than yes or no, the answer is a denial whose reason says so: a tool
        treats it as "no". `allow_always` comes back only when the question offered it.
        """
        if isinstance(question, ApprovalRequest):
            # A call's approval is the runtime's to ask; a tool asking one could pass off
            # another call as approved.
            return Approval.deny("A tool cannot ask for a call's approval.", source="mode")
        question = replace(question, agent="")
        if isinstance(question, Confirmation | Elicitation):
            question = replace(question, call_id=self.call_id, tool_name=self.tool_name)
        if self.approver is None:
            return Approval.deny("Nobody could be asked.", source="mode")
        try:
            answer = await self.approver(question)
        except Exception as exc:  # an approver's failure is a "no", never the tool's crash
            logging.getLogger("handrail").exception("approver raised")
            return Approval.deny(f"The question could not be asked ({type(exc).__name__}).")
        if not _is_approval(answer) or answer.kind == "edit":
            return Approval.deny("The answer to the question could not be read.")
        if answer.kind == "allow_always" and not (
            isinstance(question, Confirmation) and question.always
        ):
            return replace(answer, kind="allow_once", rule=None)  # filled-in values are kept
        return answer

    def update_state(self, update: StateUpdate) -> None:
        """Queue a session change; the runtime applies it after the call, in request order."""
        self._updates.append(update)

    @property
    def state_updates(self) -> tuple[StateUpdate, ...]:
        """The updates queued so far."""
        return tuple(self._updates)
