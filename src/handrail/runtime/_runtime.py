"""`Runtime`, the public face of the runtime: settings in, one `ToolResult` per call out.

It sets up the settings, the policy and the registry, owns the pipeline every call passes, and
creates the executors that schedule batches.

`Runtime.call` runs one call through the `Pipeline` (`_pipeline.py`); `call_many`, `stream`
and batch `resume` go through a `StreamingExecutor` (`_executor.py`) driving the same pipeline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._context import PermissionMode, Session, StateUpdate
from .._contract import (
    Approval,
    Approver,
    Confirmation,
    Denial,
    ErrorCode,
    Interrupted,
    Preflight,
    ToolCall,
    ToolKind,
    ToolResult,
    make_call,
)
from .._registry import Registry
from .._tool import Tool
from ..display import (
    CallProgress,
    CallStatus,
    CallView,
    Display,
    call_arguments,
    default_display,
    status_of,
)
from ..errors import ConfigurationError
from ..permissions import Hook, Policy, Settings, is_within
from ..permissions import load_settings as _load_settings
from ..permissions._hidden import hidden_paths as _hidden_paths
from ..permissions._hooks import hook_files
from ..sandbox import Checkpoint, Checkpoints, Restored, RestorePlan, resolve_path
from ._calls import ProgressFunc
from ._checkpointing import Checkpointing
from ._executor import Batch, StreamingExecutor
from ._gate import gate_of
from ._pipeline import EDIT_NOTE, Pipeline
from ._results import denied


def _roots(values: Iterable[str | Path] | None, default: Path) -> tuple[Path, ...]:
    if values is None:
        return (default,)
    return tuple(Path(resolve_path(str(v), default)) for v in values)


class Runtime:
    """Runs tool calls through the pipeline and returns one `ToolResult` per call.

    ```python
    rt = Runtime(Registry([add]))
    r = await rt.call("add", '{"a": 1, "b": 2}')
    batch = await rt.call_many([ToolCall(id="1", name="add", arguments='{"a": 1, "b": 2}')])
    ```

    Args:
        registry: The tools (a `Registry`, or an iterable of tools).
        root: The workspace root; default read and write root, and default cwd. Default: the
            current directory.
        cwd: The session's working directory (must be inside a root). Default: `root`.
        read_roots: Directories calls may read under. Default: `[root]`.
        write_roots: Directories calls may write under. Default: `[root]`.
        mode: Permission mode for the default session. Default: the settings' `default_mode`,
            else `default`.
        allow: Extra allow rules (added to the settings' rules).
        ask: Extra ask rules.
        deny: Extra deny rules.
        policy: The policy to decide calls with, used as it is: the settings' rules and
            `allow`, `ask` and `deny` are *not* merged into it, because the caller built it
            deliberately (a sub-agent's narrowed policy, say). A `Policy` subclass may
            override `has_rules_for` and `decide`: every call of a tool for which
            `has_rules_for` is true goes through `decide`. Default: a `Policy` of the
            settings' rules plus `allow`, `ask` and `deny`.
        settings: Settings to use; with `load_settings=True` the settings files are read and
            merged under these.
        load_settings: Read `~/.config/handrail/settings.json` and `<root>/.handrail/settings.json`.
        hooks: Hooks in addition to those from settings.
        approver: Answers the questions of this runtime's calls (`Approver`): approvals and
            what tools ask while they run. A call or stream may bring its own instead. Without
            either, a call that needs approval ends as `Interrupted` (answer with `resume`).
        session: The default session (one conversation). Default: a new one.
        locale: Language of model-facing text: `en` or `zh`.
        default_timeout: Seconds a call may run when its tool sets no timeout (None: no limit).
        max_concurrency: Most calls running at once in a batch.
        on_progress: Receives every progress event from every call.
        hidden_paths: More paths hidden from every tool, on top of the built-in secret
            locations and the settings' `hidden_paths` (`~` expanded, relative to `root`).
            No call may read, list, search or write inside them, whatever the roots, rules
            or mode, and the shell's sandbox hides them.
        command_slots: A semaphore shared with other runtimes (many sessions in one host
            process): a call of an execute tool that is not read-only for its input (a
            command that may be heavy) holds a slot while it runs; its time limit starts
            once it has one. Size it to the cores the process may use. Default: no cap.
        checkpoints: Take a checkpoint of the write roots before every call that can change
            files (shell commands included), so `restore` can put them back. Kept in
            handrail's private state folder (`checkpoints/<workspace>/`), one log per session,
            contents shared by the workspace's sessions. A folder keeps them there instead
            (a host that removes them with its sessions). A `Checkpoints` (another runtime's
            `session_checkpoints()`) records into that session instead: a sub-agent's changes
            are its parent's. Default: off (the CLI turns it on).

    The settings above (`registry`, `policy`, `hooks`, `locale`, `cwd`, ...) are attributes
    too, and a host may set them later (an `on_progress`): they live on the runtime's
    pipeline, so every stage sees the change. The `approver` is fixed when the runtime is
    made: whoever needs to see or answer questions differently wraps it and passes the
    wrapper to its own calls (`stream(approver=...)`), so no component replaces another's.
    """

    def __init__(
        self,
        registry: Registry | Iterable[Tool],
        *,
        root: str | Path | None = None,
        cwd: str | Path | None = None,
        read_roots: Iterable[str | Path] | None = None,
        write_roots: Iterable[str | Path] | None = None,
        mode: PermissionMode | str | None = None,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        policy: Policy | None = None,
        settings: Settings | None = None,
        load_settings: bool = False,
        hooks: Iterable[Hook] = (),
        approver: Approver | None = None,
        session: Session | None = None,
        locale: str | None = None,
        default_timeout: float | None = None,
        max_concurrency: int = 10,
        on_progress: ProgressFunc | None = None,
        hidden_paths: Iterable[str | Path] = (),
        command_slots: asyncio.Semaphore | None = None,
        checkpoints: bool | Path | Checkpoints = False,
    ) -> None:
        self.root = (
            Path(resolve_path(str(root), Path.cwd())) if root is not None else Path.cwd().resolve()
        )
        # The files handrail's own configuration comes from, beyond the (hidden) config folder:
        # a settings file given explicitly, and the scripts hooks run outside the sandbox.
        own_files = settings.sources if settings is not None else ()
        if load_settings:
            loaded = _load_settings(self.root)
            settings = loaded.merged_with(settings) if settings is not None else loaded
        settings = settings or Settings()
        base = registry if isinstance(registry, Registry) else Registry(registry)
        tools = (
            base.merge(Registry(disabled=settings.disabled_tools))
            if settings.disabled_tools
            else base
        )
        if settings.features:
            tools = tools.with_features(settings.features)
        readable = _roots(read_roots, self.root)
        writable = _roots(write_roots, self.root)
        where = Path(resolve_path(str(cwd), self.root)) if cwd is not None else self.root
        if not any(is_within(str(where), r) for r in (*readable, *writable)):
            raise ConfigurationError(
                f"cwd {where} is outside the roots "
                f"({', '.join(str(r) for r in (*readable, *writable))})"
            )
        if policy is None:
            policy = Policy(
                allow=(*settings.allow, *allow),
                ask=(*settings.ask, *ask),
                deny=(*settings.deny, *deny),
            )
        chosen = mode if mode is not None else settings.default_mode
        self.session = session or Session()
        if chosen is not None and session is None:
            self.session.mode = PermissionMode(chosen)
        if default_timeout is not None and default_timeout <= 0:
            raise ConfigurationError("default_timeout must be positive seconds (or None)")
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self._pipeline = pipeline = Pipeline(
            registry=tools,
            policy=policy,
            hooks=(*settings.hooks, *hooks),
            approver=approver,
            settings=settings,
            locale=locale or settings.locale or "en",
            cwd=where,
            read_roots=readable,
            write_roots=writable,
            default_timeout=default_timeout,
            on_progress=on_progress,
            # The real user's home, now: a later change of $HOME does not move the secrets.
            hidden_paths=_hidden_paths(
                (
                    *settings.hidden_paths,
                    *hidden_paths,
                    *own_files,
                    *hook_files((*settings.hooks, *hooks), self.root),
                    # A host's own checkpoint folder: no tool may read or change what it keeps.
                    *([checkpoints] if isinstance(checkpoints, str | Path) else []),
                ),
                base=self.root,
            ),
        )
        # The pipeline's own methods, bound once: `call` reaches them with no extra hop.
        pipeline.command_slots = command_slots
        if checkpoints is not False:
            pipeline.checkpointing = Checkpointing(
                root=self.root,
                write_roots=writable,
                skip=pipeline.hidden_paths,
                shared=checkpoints if isinstance(checkpoints, Checkpoints) else None,
                folder=Path(checkpoints) if isinstance(checkpoints, str | Path) else None,
            )
        self.prepare = pipeline.prepare
        """Stages 1-3 of one call (`Pipeline.prepare`): the prepared call, or its result."""
        self.proceed = pipeline.proceed
        """Stages 4-8 of a prepared call (`Pipeline.proceed`); await the result."""
        self.resume_call = pipeline.resume_call
        """Carry on with one interrupted call, given the host's answer (`Pipeline.resume_call`)."""
        self._ids = 0

    # -- settings (they live on the pipeline, which every stage reads) -----------------------

    @property
    def pipeline(self) -> Pipeline:
        """The stages every call of this runtime passes (what its executors drive)."""
        return self._pipeline

    @property
    def registry(self) -> Registry:
        """The tools (after the settings' `disabled_tools` and `features`)."""
        return self._pipeline.registry

    @registry.setter
    def registry(self, value: Registry) -> None:
        self._pipeline.registry = value
        self._pipeline.forget()

    @property
    def policy(self) -> Policy:
        """Decides every call (stage 6)."""
        return self._pipeline.policy

    @policy.setter
    def policy(self, value: Policy) -> None:
        self._pipeline.policy = value
        self._pipeline.forget()

    @property
    def hooks(self) -> tuple[Hook, ...]:
        """The settings' hooks, then the constructor's."""
        return self._pipeline.hooks

    @hooks.setter
    def hooks(self, value: tuple[Hook, ...]) -> None:
        self._pipeline.hooks = value
        self._pipeline.forget()

    @property
    def default_timeout(self) -> float | None:
        """Seconds a call may run when its tool sets no timeout (None: no limit)."""
        return self._pipeline.default_timeout

    @default_timeout.setter
    def default_timeout(self, value: float | None) -> None:
        self._pipeline.default_timeout = value
        self._pipeline.forget()

    @property
    def approver(self) -> Approver | None:
        """Who answers the questions of calls that bring no approver of their own.

        Set when the runtime is made; a call or stream may bring its own. None: a call that
        asks ends as `Interrupted`, and a tool's own question gets "no".
        """
        return self._pipeline.approver

    @property
    def on_progress(self) -> ProgressFunc | None:
        """Receives every progress event from every call."""
        return self._pipeline.on_progress

    @on_progress.setter
    def on_progress(self, value: ProgressFunc | None) -> None:
        self._pipeline.on_progress = value

    @property
    def settings(self) -> Settings:
        """The settings in force (files merged under the constructor's, when loaded)."""
        return self._pipeline.settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        self._pipeline.settings = value

    @property
    def locale(self) -> str:
        """Language of model-facing text."""
        return self._pipeline.locale

    @locale.setter
    def locale(self, value: str) -> None:
        self._pipeline.locale = value

    @property
    def cwd(self) -> Path:
        """The working directory relative paths resolve against."""
        return self._pipeline.cwd

    @cwd.setter
    def cwd(self, value: Path) -> None:
        self._pipeline.cwd = value

    @property
    def hidden_paths(self) -> tuple[Path, ...]:
        """Secret locations no call may touch (built-ins, settings, the constructor's)."""
        return self._pipeline.hidden_paths

    @property
    def read_roots(self) -> tuple[Path, ...]:
        """Directories calls may read under."""
        return self._pipeline.read_roots

    @read_roots.setter
    def read_roots(self, value: tuple[Path, ...]) -> None:
        self._pipeline.read_roots = value

    @property
    def write_roots(self) -> tuple[Path, ...]:
        """Directories calls may write under."""
        return self._pipeline.write_roots

    @write_roots.setter
    def write_roots(self, value: tuple[Path, ...]) -> None:
        self._pipeline.write_roots = value

    # -- checkpoints -------------------------------------------------------------------------

    @property
    def keeps_checkpoints(self) -> bool:
        """Does this runtime take checkpoints (`Runtime(checkpoints=True)`)?"""
        return self._pipeline.checkpointing is not None

    def _tracker(self, session: Session | None) -> Checkpoints:
        keeper = self._pipeline.checkpointing
        if keeper is None:
            raise ConfigurationError("this runtime keeps no checkpoints: Runtime(checkpoints=True)")
        return keeper.of(session or self.session)

    def session_checkpoints(self, session: Session | None = None) -> Checkpoints:
        """The session's checkpoint record itself (made on first use).

        Pass it as `Runtime(checkpoints=...)` to a runtime whose changes belong to this
        session (a sub-agent's).
        """
        return self._tracker(session)

    def checkpoints(self, session: Session | None = None) -> list[Checkpoint]:
        """The session's checkpoints, oldest first (default: the runtime's own session).

        Each says what came next (`label`, the call and tool), the agent turn it opened and the
        paths changed after it, with those changed outside the session apart.
        """
        return self._tracker(session).list()

    def copy_checkpoints(self, source_id: str, session: Session | None = None) -> None:
        """Give the session (default: the runtime's own) another session's checkpoints.

        `source_id` is a session of the same workspace; the copy lets this one restore its
        points too (a fork). The other session's record is left as it is.
        """
        keeper = self._pipeline.checkpointing
        if keeper is None:
            raise ConfigurationError("this runtime keeps no checkpoints: Runtime(checkpoints=True)")
        keeper.copy(session or self.session, source_id)

    async def restore_plan(
        self,
        checkpoint: int,
        paths: Iterable[str] | None = None,
        *,
        session: Session | None = None,
    ) -> RestorePlan:
        """What `restore` would change, without changing anything.

        `RestorePlan.outside` names the files changed outside the session since the checkpoint.
        """
        tracker = self._tracker(session)
        return await asyncio.to_thread(tracker.plan, checkpoint, paths)

    async def restore(
        self,
        checkpoint: int,
        paths: Iterable[str] | None = None,
        *,
        session: Session | None = None,
        approver: Approver | None = None,
        overwrite_outside: bool = False,
    ) -> Restored:
        """Put the write roots back as they were at `checkpoint` (only under `paths`, if given).

        Files, folders, modes and symlinks are made exactly as they were: files changed since
        are put back, deleted ones made again, new ones removed. If some of those files were
        changed outside the session since (by hand, by a background job), the approver is asked
        first (a `Confirmation` with topic `restore`); with nobody to ask, or a no, nothing is
        changed and `Restored.refused` names them, unless `overwrite_outside` is true. The
        restore waits for the session's running changes to end, and is itself recorded:
        `restore(result.undo)` takes it back.

        Raises `KeyError` for an unknown checkpoint and `ConfigurationError` when the runtime
        keeps no checkpoints.
        """
        tracker = self._tracker(session)
        chosen = list(paths) if paths is not None else None
        gate = gate_of(session or self.session)
        await gate.enter(False)  # alone: no call of the session changes files meanwhile
        try:
            if overwrite_outside:
                return await asyncio.to_thread(
                    tracker.restore, checkpoint, chosen, overwrite_outside=True
                )
            agreed: tuple[str, ...] = ()
            # A file changed outside while the person was answering was not in the question:
            # it is asked about in turn (a few rounds at most), never overwritten unasked.
            rounds = 3
            while True:
                result = await asyncio.to_thread(
                    tracker.restore, checkpoint, chosen, overwrite_outside=agreed
                )
                rounds -= 1
                if result.ok or rounds == 0:
                    return result
                plan = await asyncio.to_thread(tracker.plan, checkpoint, chosen)
                if not plan.outside or not await self._confirm_overwrite(plan, approver):
                    return result
                agreed = plan.outside
        finally:
            gate.leave(False)

    async def _confirm_overwrite(self, plan: RestorePlan, approver: Approver | None) -> bool:
        asker = approver or self.approver
        if asker is None:
            return False
        names = ", ".join(plan.outside[:10])
        more = f" and {len(plan.outside) - 10} more" if len(plan.outside) > 10 else ""
        question = Confirmation(
            reason=(
                f"Restoring checkpoint {plan.checkpoint} would overwrite changes made outside "
                f"this session: {names}{more}. Overwrite them?"
            ),
            topic="restore",
            subject=", ".join(plan.outside),
        )
        try:
            answer = await asker(question)
        except Exception:  # an approver's bug is a no
            return False
        return getattr(answer, "kind", None) in ("allow_once", "allow_always")

    # -- public API --------------------------------------------------------------------------

    async def aclose(self) -> None:
        """End the default session: stop its background jobs and run its other closers."""
        await self.session.aclose()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def tools(self, *, provider: str | None = None, session: Session | None = None) -> list[Tool]:
        """The tools to show the model now (see `Registry.list`)."""
        return self.registry.list(provider=provider, session=session or self.session)

    def usage_notes(self, *, provider: str | None = None, session: Session | None = None) -> str:
        """Usage notes of the tools shown now, for the system prompt (`Registry.usage_notes`)."""
        return self.registry.usage_notes(provider=provider, session=session or self.session)

    def display(
        self,
        call: ToolCall,
        *,
        status: CallStatus = CallStatus.RUNNING,
        result: ToolResult | None = None,
        progress: CallProgress | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> Display:
        """How `call` looks now, as its tool describes it (`Tool.display`).

        Never raises: an unknown tool, or a tool whose `display` fails or returns something
        else, gets the default display built from its name and result.
        """
        tool = self.registry.get(call.name)
        view = CallView(
            call=call,
            arguments=call_arguments(call),
            status=status,
            result=result,
            progress=progress,
            data=data or {},
            cwd=str(self.cwd),
        )
        name = tool.name if tool is not None else call.name
        if tool is not None:
            try:
                shown = tool.display(view)
            except Exception:
                shown = None
            if isinstance(shown, Display):
                return _finish_display(shown, view, name)
        kind = tool.kind if tool is not None else ToolKind.OTHER  # a failed display keeps its group
        return _finish_display(default_display(view, name=name, kind=kind), view, name)

    async def call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] = "{}",
        *,
        call_id: str | None = None,
        session: Session | None = None,
        approval: Approval | None = None,
        approver: Approver | None = None,
    ) -> ToolResult:
        """Run one call through the whole pipeline.

        Returns a `ToolResult`, or an `Interrupted` (a `ToolResult`) when the call needs approval
        and no approver is set; answer it with `resume`, or call again with `approval=`.

        Calls may run concurrently (a framework runs one task per tool call): within a session,
        a call whose tool is not concurrency-safe for its input waits for the calls running
        before it and runs alone; safe calls run together. The wait comes after the permission
        decision, so a call waiting for approval holds nothing up.

        Args:
            name: The tool's name or alias, as the model wrote it.
            arguments: The arguments: the model's JSON text, or a mapping.
            call_id: The call's id (default: a new one).
            session: The conversation (default: the runtime's own session).
            approval: The answer to this call's ask, given in advance, for this call only:
                the stateless approval a host needs when it resumes from saved state (a
                framework's checkpoint, a new process) rather than from a live `Interrupted`.
                `allow_once` runs it if it asks; `allow_always` also adds the rules;
                `edit(arguments)` runs the edited arguments instead, validated again, with a
                note to the model; `deny(reason)` refuses it without running anything. Deny
                rules, the mode and hooks still refuse: an approval only answers an ask.
            approver: Answers this call's ask and its tool's questions, in place of the
                runtime's approver (e.g. the person behind this one request).
        """
        if call_id is None:
            self._ids += 1
            call_id = f"call_{self._ids}"
        call = make_call(call_id, name, arguments)  # pyright: ignore[reportArgumentType]
        sess = session or self.session
        if approval is not None:
            return await self._call_answered(call, sess, approval, approver)
        prepared = self.prepare(call, sess)
        if isinstance(prepared, ToolResult):
            return prepared
        updates: list[StateUpdate] = []
        result = await self.proceed(prepared, sess, updates, approver=approver)
        for update in updates:
            update(sess)
        return result

    async def _call_answered(
        self, call: ToolCall, sess: Session, approval: Approval, approver: Approver | None
    ) -> ToolResult:
        pipeline = self._pipeline
        notes: list[str] | None = None
        if approval.kind == "edit":
            if approval.arguments is None:
                raise ConfigurationError("Approval.edit needs the edited arguments")
            call = replace(call, arguments=approval.arguments)
            notes = [EDIT_NOTE]
        prepared = self.prepare(call, sess)
        if isinstance(prepared, ToolResult):
            if notes and prepared.error is ErrorCode.INVALID_ARGS:
                note = "The arguments edited at approval are invalid."
                return replace(prepared, content=f"{note}\n{prepared.content}")
            return prepared
        if approval.kind == "deny":
            reason = approval.reason or "The user declined this call."
            denial = Denial(reason=reason, source=approval.source)
            return denied(pipeline.locale, prepared, denial, ErrorCode.PERMISSION_DENIED)
        updates: list[StateUpdate] = []
        result = await self.proceed(
            prepared, sess, updates, notes=notes, answer=approval, approver=approver
        )
        for update in updates:
            update(sess)
        return result

    async def check(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] = "{}",
        *,
        call_id: str | None = None,
        session: Session | None = None,
    ) -> Preflight:
        """Would this call run, ask for approval, or be refused? Nothing runs or is stored.

        The stages up to the permission decision run as they would for the call (resolve,
        parse, validate, the tool's own checks, pre-tool hooks, the policy), then it stops:
        for frameworks and UIs that ask "does this need approval?" before they invoke a tool.
        A pre-tool hook runs here and again when the call is made.
        """
        call = make_call(call_id or "check", name, arguments)  # pyright: ignore[reportArgumentType]
        sess = session or self.session
        prepared = self.prepare(call, sess)
        if isinstance(prepared, ToolResult):
            return Preflight(
                verdict="refuse", call=call, tool_name=prepared.tool_name, refusal=prepared
            )
        return await self._pipeline.check(prepared, sess)

    def discard(self, call: Interrupted | str) -> bool:
        """Forget a call waiting for approval without running it; False if none waits.

        For hosts that answer elsewhere (a framework's own approval flow, then
        `call(..., approval=...)`), so nothing is left pending.
        """
        call_id = call if isinstance(call, str) else call.call_id
        return self._pipeline.pending.pop(call_id, None) is not None

    async def call_many(
        self,
        calls: Sequence[ToolCall],
        *,
        session: Session | None = None,
        approver: Approver | None = None,
    ) -> Batch:
        """Run a batch: consecutive concurrency-safe calls run together, others alone.

        Results come back in request order, one per call. `approver`: as for `stream`.
        """
        async with self.stream(session=session, approver=approver) as ex:
            for c in calls:
                ex.submit(c)
            ex.close()
            async for _ in ex:
                pass
        return ex.batch

    def stream(
        self, *, session: Session | None = None, approver: Approver | None = None
    ) -> StreamingExecutor:
        """A streaming executor: submit calls as a model's stream completes them.

        `approver` answers the asks of these calls, and their tools' questions, in place of
        the runtime's (an agent passes its own, which records what it is asked).

        ```python
        async with rt.stream() as ex:
            ex.submit(call)          # starts at once when the scheduling rules allow
            ex.close()               # the model finished its turn
            async for item in ex:    # ProgressEvent at once; ToolResult in request order
                ...
        ```
        """
        return StreamingExecutor(self, session or self.session, approver)

    async def resume(
        self,
        target: Interrupted | Batch,
        answer: Approval | Mapping[str, Approval],
        *,
        session: Session | None = None,
    ) -> Any:
        """Carry on after approvals.

        For an `Interrupted` from `call`, pass one `Approval`; returns the `ToolResult`. For a
        `Batch`, pass `{call_id: Approval}`; returns a new `Batch` in which finished calls keep
        their results (they are not run again) and answered calls carry on.
        """
        if isinstance(target, Batch):
            if isinstance(answer, Approval):
                raise ConfigurationError(
                    "resume(batch, ...) takes a mapping of call id to Approval"
                )
            return await target.resume(self, answer, session=session)
        if not isinstance(answer, Approval):
            raise ConfigurationError("resume(interrupted, ...) takes one Approval")
        pending = self._pipeline.pending.get(target.call_id)
        sess = session or (pending.session if pending is not None else self.session)
        updates: list[StateUpdate] = []
        result = await self.resume_call(target, answer, updates)
        for update in updates:
            update(sess)
        return result

    def cancel(self, call_id: str, reason: str = "The call was cancelled.") -> bool:
        """Cancel a running call; its result becomes CANCELLED. False if it is not running."""
        return self._pipeline.cancel(call_id, reason)


def _finish_display(shown: Display, view: CallView, name: str) -> Display:
    # What the runtime knows better than the tool: the status of a finished call, its id,
    # its duration, and the latest progress while it runs.
    result = view.result
    if result is not None:
        return replace(
            shown,
            status=status_of(result),
            duration=result.duration,
            tool_name=shown.tool_name or name,
            call_id=view.call.id,
            progress=None,
        )
    return replace(
        shown,
        status=view.status,
        progress=shown.progress if shown.progress is not None else view.progress,
        tool_name=shown.tool_name or name,
        call_id=view.call.id,
    )
