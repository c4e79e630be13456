"""The call pipeline: every call passes every stage, in order, with no way to skip one.

1 resolve  2 parse  3 validate  4 check (validate_input)  5 pre-tool hooks  6 permit  7 run
8 shape (+ post-tool hooks). Each stage that refuses ends the call with a `ToolResult`; nothing a
tool, its arguments, the policy or the sandbox does raises out of `Runtime`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from .._context import PermissionMode, Session, StateUpdate, ToolContext
from .._contract import (
    EMPTY,
    Approval,
    ApprovalRequest,
    Denial,
    ErrorCode,
    FetchUrl,
    Interrupted,
    PermissionRequest,
    ProgressEvent,
    ReadPath,
    RunCommand,
    ToolCall,
    ToolResult,
    WritePath,
    make_call,
    make_result,
)
from .._registry import Registry
from .._tool import Tool
from ..errors import ConfigurationError, ToolFailure
from ..permissions import (
    Decision,
    Hook,
    HookEvent,
    Policy,
    Settings,
    is_within,
    load_settings,
    parse_rule,
    suggest_rules,
)
from ..permissions import Rule as _Rule
from ..sandbox import resolve_path
from ..validation import InvalidArguments, closest, format_issues
from ._hooks import run_post_hooks, run_pre_hooks
from ._messages import say
from ._shaping import to_text, truncate
from ._threads import POOL

logger = logging.getLogger("handrail")

ApproverFunc = Callable[[ApprovalRequest], Awaitable[Approval]]
"""Answers approval requests inline (a terminal prompt, a UI round trip)."""
ProgressFunc = Callable[[ProgressEvent], None]


@dataclass(slots=True)
class Prepared:
    """A call that passed stages 1-3: the tool and its validated arguments."""

    call: ToolCall
    tool: Tool
    args: Any
    t0: float


@dataclass(slots=True)
class Pending:
    """A call stopped at stage 6, waiting for the host's answer."""

    prepared: Prepared
    session: Session
    request: ApprovalRequest
    context_notes: list[str] = field(default_factory=list[str])


@dataclass(slots=True, frozen=True)
class _Plan:
    """What the pipeline needs to know about one tool, worked out once (stages it can skip)."""

    names: tuple[str, ...]
    check: bool
    """The tool has its own validate_input."""
    requests: bool
    """The tool declares permission requests."""
    rules: bool
    """Some rule names this tool."""
    pre: tuple[Hook, ...]
    post: bool
    """Some post hook may apply."""
    context: bool
    """A ToolContext must be built."""
    timeout: float | None
    thread: bool
    """A sync tool that runs on a worker thread."""
    read_only: bool | None
    """The read-only flag when it does not depend on the input, else None."""


@dataclass(slots=True)
class RunState:
    """Why a running call's task was cancelled (timeout, host cancel, sibling failure)."""

    reason: Literal["timeout", "cancel", "sibling"] | None = None
    message: str = ""
    task: asyncio.Task[Any] | None = None
    ctx: ToolContext | None = None
    progress: ProgressFunc | None = None


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
        settings: Settings to use; with `load_settings=True` the settings files are read and
            merged under these.
        load_settings: Read `~/.config/handrail/settings.json` and `<root>/.handrail/settings.json`.
        hooks: Hooks in addition to those from settings.
        approver: Answers approval requests inline; without one, a call that needs approval
            ends as `Interrupted` and the host answers with `resume`.
        session: The default session (one conversation). Default: a new one.
        locale: Language of model-facing text: `en` or `zh`.
        default_timeout: Seconds a call may run when its tool sets no timeout (None: no limit).
        max_concurrency: Most calls running at once in a batch.
        on_progress: Receives every progress event from every call.
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
        settings: Settings | None = None,
        load_settings: bool = False,
        hooks: Iterable[Hook] = (),
        approver: ApproverFunc | None = None,
        session: Session | None = None,
        locale: str | None = None,
        default_timeout: float | None = None,
        max_concurrency: int = 10,
        on_progress: ProgressFunc | None = None,
    ) -> None:
        self.root = (
            Path(resolve_path(str(root), Path.cwd())) if root is not None else Path.cwd().resolve()
        )
        if load_settings:
            loaded = _load(self.root)
            settings = loaded.merged_with(settings) if settings is not None else loaded
        self.settings = settings or Settings()
        base = registry if isinstance(registry, Registry) else Registry(registry)
        self.registry = (
            base.merge(Registry(disabled=self.settings.disabled_tools))
            if self.settings.disabled_tools
            else base
        )
        if self.settings.features:
            self.registry = self.registry.with_features(self.settings.features)
        self.read_roots = _roots(read_roots, self.root)
        self.write_roots = _roots(write_roots, self.root)
        self.cwd = Path(resolve_path(str(cwd), self.root)) if cwd is not None else self.root
        if not any(is_within(str(self.cwd), r) for r in (*self.read_roots, *self.write_roots)):
            raise ConfigurationError(
                f"cwd {self.cwd} is outside the roots "
                f"({', '.join(str(r) for r in (*self.read_roots, *self.write_roots))})"
            )
        self.policy = Policy(
            allow=(*self.settings.allow, *allow),
            ask=(*self.settings.ask, *ask),
            deny=(*self.settings.deny, *deny),
        )
        self.hooks: tuple[Hook, ...] = (*self.settings.hooks, *hooks)
        self.approver = approver
        chosen = mode if mode is not None else self.settings.default_mode
        self.session = session or Session()
        if chosen is not None and session is None:
            self.session.mode = PermissionMode(chosen)
        self.locale = locale or self.settings.locale or "en"
        if default_timeout is not None and default_timeout <= 0:
            raise ConfigurationError("default_timeout must be positive seconds (or None)")
        self.default_timeout = default_timeout
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.on_progress = on_progress
        self._plans: dict[str, _Plan] = {}
        self._table: dict[str, Tool] = {}
        self._table_version = -1
        self._visible: dict[tuple[Any, ...], list[str]] = {}
        self._pending: dict[str, Pending] = {}
        # A running call maps to its RunState, or (cheaper, the common case) to (task, ctx);
        # a RunState is made on demand when such a call is cancelled.
        self._running: dict[
            str, RunState | tuple[asyncio.Task[Any] | None, ToolContext | None]
        ] = {}
        self._stops: dict[str, RunState] = {}
        self._hook_cache: dict[tuple[str, str], tuple[Hook, ...]] = {}
        self._session_rules: dict[str, _Rule] = {}
        self._default_perm_requests = Tool.permission_requests
        self._default_validate_input = Tool.validate_input
        self._ids = 0

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

    async def call(
        self,
        name: str,
        arguments: str | bytes | Mapping[str, Any] = "{}",
        *,
        call_id: str | None = None,
        session: Session | None = None,
    ) -> ToolResult:
        """Run one call through the whole pipeline.

        Returns a `ToolResult`, or an `Interrupted` (a `ToolResult`) when the call needs approval
        and no approver is set; answer it with `resume`.
        """
        if call_id is None:
            self._ids += 1
            call_id = f"call_{self._ids}"
        call = make_call(call_id, name, arguments)  # pyright: ignore[reportArgumentType]
        sess = session or self.session
        prepared = self.prepare(call, sess)
        if isinstance(prepared, ToolResult):
            return prepared
        updates: list[StateUpdate] = []
        result = await self.proceed(prepared, sess, updates)
        for update in updates:
            update(sess)
        return result

    async def call_many(
        self, calls: Sequence[ToolCall], *, session: Session | None = None
    ) -> Batch:
        """Run a batch: consecutive concurrency-safe calls run together, others alone.

        Results come back in request order, one per call.
        """
        async with self.stream(session=session) as ex:
            for c in calls:
                ex.submit(c)
            ex.close()
            async for _ in ex:
                pass
        return ex.batch

    def stream(self, *, session: Session | None = None) -> StreamingExecutor:
        """A streaming executor: submit calls as a model's stream completes them.

        ```python
        async with rt.stream() as ex:
            ex.submit(call)          # starts at once when the scheduling rules allow
            ex.close()               # the model finished its turn
            async for item in ex:    # ProgressEvent at once; ToolResult in request order
                ...
        ```
        """
        from ._executor import StreamingExecutor

        return StreamingExecutor(self, session or self.session)

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
        from ._executor import Batch as _Batch

        if isinstance(target, _Batch):
            if isinstance(answer, Approval):
                raise ConfigurationError(
                    "resume(batch, ...) takes a mapping of call id to Approval"
                )
            return await target.resume(self, answer, session=session)
        if not isinstance(answer, Approval):
            raise ConfigurationError("resume(interrupted, ...) takes one Approval")
        pending = self._pending.get(target.call_id)
        sess = session or (pending.session if pending is not None else self.session)
        updates: list[StateUpdate] = []
        result = await self.resume_call(target, answer, updates)
        for update in updates:
            update(sess)
        return result

    def cancel(self, call_id: str, reason: str = "The call was cancelled.") -> bool:
        """Cancel a running call; its result becomes CANCELLED. False if it is not running."""
        entry = self._running.get(call_id)
        if entry is None:
            return False
        if isinstance(entry, RunState):
            state = entry
        else:
            if call_id in self._stops:
                return False
            state = self._stops[call_id] = RunState(task=entry[0], ctx=entry[1])
        if state.task is None or state.reason is not None:
            return False
        state.reason, state.message = "cancel", reason
        if state.ctx is not None:
            state.ctx.cancel()
        state.task.cancel()
        return True

    # -- the pipeline ------------------------------------------------------------------------

    def prepare(self, call: ToolCall, session: Session) -> Prepared | ToolResult:
        """Stages 1-3: resolve the tool, parse and validate the arguments."""
        t0 = time.perf_counter()
        if self._table_version != self.registry.version:
            self._rebuild()
        tool = self._table.get(call.name)
        if tool is None:
            return self._not_found(call, session, t0)
        if tool.deferred and tool.name not in session.activated:
            return self._fail(
                call,
                tool.name,
                t0,
                ErrorCode.TOOL_NOT_ACTIVATED,
                say(self.locale, "not_activated", name=tool.name),
            )
        try:
            args = tool.validator.validate(call.arguments, self.locale)
        except InvalidArguments as exc:
            return self._invalid(call, tool.name, t0, exc)
        except Exception as exc:  # a validator bug must not escape the runtime either
            logger.exception("validating arguments for %s failed", tool.name)
            text = say(self.locale, "not_checked", detail=_exc_text(exc))
            return self._fail(call, tool.name, t0, ErrorCode.INVALID_ARGS, text)
        return Prepared(call=call, tool=tool, args=args, t0=t0)

    def proceed(
        self,
        p: Prepared,
        session: Session,
        updates: list[StateUpdate],
        *,
        approved: bool = False,
        hooks_again: bool = False,
        notes: list[str] | None = None,
        state: RunState | None = None,
        progress: ProgressFunc | None = None,
    ) -> Awaitable[ToolResult]:
        """Stages 4-8 for a validated call; await the result.

        A plain function returning the awaitable: when no stage before the run needs to await
        (no business-rule check, no pre-tool hook), the call goes straight to the run, one
        coroutine frame shorter. The stages and their order are the same either way.
        """
        tool = p.tool
        plan = self._plans.get(tool.name) or self._plan(tool)
        if progress is not None:
            if state is None:
                state = RunState()
            state.progress = progress
        ctx = self._context(p.call, tool, session, state) if plan.context else None
        notes = list(notes) if notes else []
        run_hooks = bool(plan.pre) and (not approved or hooks_again)
        if plan.check or run_hooks:
            return self._proceed_async(
                p, plan, session, ctx, updates, notes, approved, run_hooks, state
            )
        return self._permit_and_run(
            p, plan, session, ctx, updates, notes, approved, state, None, ""
        )

    async def _proceed_async(
        self,
        p: Prepared,
        plan: _Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        approved: bool,
        run_hooks: bool,
        state: RunState | None,
    ) -> ToolResult:
        tool, call = p.tool, p.call
        # 4 check: business rules, before permissions and before any I/O the tool does.
        if plan.check:
            assert ctx is not None
            refused = await self._check(p, ctx)
            if refused is not None:
                return refused
        # 5 hooks: may block, ask, allow, or rewrite the input (which is validated again).
        hook_decision: str | None = None
        hook_reason = ""
        if run_hooks:
            outcome = await run_pre_hooks(
                plan.pre, self._event("pre_tool_use", p, session), str(self.cwd)
            )
            notes.extend(outcome.context)
            if outcome.blocked or outcome.decision == "deny":
                return self._denied(
                    p, Denial(reason=outcome.reason, source="hook"), ErrorCode.PERMISSION_DENIED
                )
            if outcome.updated_input is not None:
                new_input = dict(outcome.updated_input)
                try:
                    args = tool.validator.validate(new_input, self.locale)
                except InvalidArguments as exc:
                    note = "A hook rewrote the arguments, and the result is invalid."
                    return self._invalid(call, tool.name, p.t0, exc, note=note)
                call = replace(call, arguments=new_input)
                p = Prepared(call=call, tool=tool, args=args, t0=p.t0)
                if plan.check:
                    assert ctx is not None
                    refused = await self._check(p, ctx)
                    if refused is not None:
                        return refused
            hook_decision, hook_reason = outcome.decision, outcome.reason
            if approved and hook_decision == "ask":
                hook_decision = None  # the user has just approved this very call
        return await self._permit_and_run(
            p, plan, session, ctx, updates, notes, approved, state, hook_decision, hook_reason
        )

    def _permit_and_run(
        self,
        p: Prepared,
        plan: _Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        approved: bool,
        state: RunState | None,
        hook_decision: str | None,
        hook_reason: str,
    ) -> Awaitable[ToolResult]:
        tool, call = p.tool, p.call
        # 6 permit: one central decision from what the tool says it will touch.
        read_only = plan.read_only if plan.read_only is not None else tool.is_read_only(p.args)
        if (
            plan.requests
            or plan.rules
            or hook_decision is not None
            or not (read_only or session.mode is PermissionMode.BYPASS)
        ):
            # Otherwise nothing a rule, request or hook could change: allowed, as decide() says.
            requests: tuple[PermissionRequest, ...] = ()
            if plan.requests:
                assert ctx is not None
                try:
                    requests = self._resolve_requests(tool.permission_requests(p.args, ctx))
                except ToolFailure as exc:
                    return _ready(self._fail(call, tool.name, p.t0, exc.code, exc.message))
            decision = self.policy.decide(
                names=plan.names,
                kind=tool.kind,
                read_only=read_only,
                requests=requests,
                mode=session.mode,
                read_roots=self.read_roots,
                write_roots=self.write_roots,
                session_allow=self._session_allow(session) if session.allow_rules else (),
                hook=hook_decision,  # pyright: ignore[reportArgumentType]
                hook_reason=hook_reason,
            )
            if decision.behavior == "deny":
                denial = Denial(reason=decision.reason, source=decision.source, rule=decision.rule)
                return _ready(self._denied(p, denial, decision.code))
            if decision.behavior == "ask" and not approved:
                return self._ask(p, session, decision, requests, updates, notes)
        # 7 run, 8 shape.
        return self._run(p, plan, session, ctx, updates, notes, state)

    def _rebuild(self) -> None:
        table: dict[str, Tool] = {}
        for t in self.registry.all():
            if self.registry.available(t):
                for key in (t.name, *t.aliases):
                    table[key] = t
        self._table = table
        self._plans.clear()
        self._visible.clear()
        self._table_version = self.registry.version

    def _plan(self, tool: Tool) -> _Plan:
        names = (tool.name, *tool.aliases)
        check = type(tool).validate_input is not self._default_validate_input
        requests = type(tool).permission_requests is not self._default_perm_requests
        post = bool(
            self._hooks_for("post_tool_use", tool) or self._hooks_for("post_tool_failure", tool)
        )
        plan = _Plan(
            names=names,
            check=check,
            requests=requests,
            rules=self.policy.has_rules_for(names),
            pre=self._hooks_for("pre_tool_use", tool),
            post=post,
            context=tool.needs_context or check or requests,
            timeout=tool.timeout
            if tool.timeout is not None
            else (None if tool.inline and not tool.is_async else self.default_timeout),
            thread=not tool.is_async and not tool.inline,
            read_only=tool.read_only if isinstance(tool.read_only, bool) else None,
        )
        self._plans[tool.name] = plan
        return plan

    async def resume_call(
        self,
        interrupted: Interrupted,
        answer: Approval,
        updates: list[StateUpdate],
        state: RunState | None = None,
    ) -> ToolResult:
        """Carry on with one interrupted call, given the host's answer."""
        pending = self._pending.pop(interrupted.call_id, None)
        if pending is None:
            raise ConfigurationError(
                f"call {interrupted.call_id!r} is not waiting for approval (already answered?)"
            )
        return await self._answer(pending, answer, updates, state)

    # -- stage helpers -----------------------------------------------------------------------

    async def _check(self, p: Prepared, ctx: ToolContext) -> ToolResult | None:
        try:
            verdict = p.tool.validate_input(p.args, ctx)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except ToolFailure as exc:
            return self._fail(p.call, p.tool.name, p.t0, exc.code, exc.message, exc.metadata)
        except Exception as exc:
            logger.exception("validate_input of %s raised", p.tool.name)
            return self._fail(p.call, p.tool.name, p.t0, ErrorCode.EXECUTION_ERROR, _exc_text(exc))
        if verdict:
            text = say(self.locale, "call_again", verdict=verdict, name=p.tool.name)
            return self._fail(p.call, p.tool.name, p.t0, ErrorCode.INVALID_ARGS, text)
        return None

    def _resolve_requests(
        self, requests: Sequence[PermissionRequest]
    ) -> tuple[PermissionRequest, ...]:
        out: list[PermissionRequest] = []
        for q in requests:
            if isinstance(q, ReadPath):
                out.append(ReadPath(path=resolve_path(q.path, self.cwd)))
            elif isinstance(q, WritePath):
                out.append(WritePath(path=resolve_path(q.path, self.cwd)))
            elif isinstance(q, RunCommand | FetchUrl):
                out.append(q)
            else:
                out.append(q)
        return tuple(out)

    def _session_allow(self, session: Session) -> list[_Rule]:
        rules: list[_Rule] = []
        for text in session.allow_rules:
            rule = self._session_rules.get(text)
            if rule is None:
                rule = self._session_rules[text] = parse_rule(text)
            rules.append(rule)
        return rules

    async def _ask(
        self,
        p: Prepared,
        session: Session,
        decision: Decision,
        requests: tuple[PermissionRequest, ...],
        updates: list[StateUpdate],
        notes: list[str],
    ) -> ToolResult:
        request = ApprovalRequest(
            call=p.call,
            tool_name=p.tool.name,
            reason=decision.reason,
            requests=requests,
            suggested_rules=suggest_rules(
                p.tool.name, requests, (*self.write_roots, *self.read_roots)
            ),
        )
        pending = Pending(prepared=p, session=session, request=request, context_notes=notes)
        if self.approver is not None:
            try:
                answer = await self.approver(request)
            except Exception as exc:
                logger.exception("approver raised")
                answer = Approval.deny(f"The approval could not be obtained ({_exc_text(exc)}).")
            return await self._answer(pending, answer, updates, None)
        self._pending[p.call.id] = pending
        return Interrupted(
            ok=False,
            content=say(self.locale, "needs_approval", name=p.tool.name, reason=decision.reason),
            error=ErrorCode.INTERRUPTED,
            summary=f"{p.tool.name}: waiting for approval",
            approval=request,
            duration=time.perf_counter() - p.t0,
            call_id=p.call.id,
            tool_name=p.tool.name,
        )

    async def _answer(
        self,
        pending: Pending,
        answer: Approval,
        updates: list[StateUpdate],
        state: RunState | None,
    ) -> ToolResult:
        p, session = pending.prepared, pending.session
        if answer.kind == "deny":
            reason = answer.reason or "The user declined this call."
            return self._denied(
                p, Denial(reason=reason, source="user"), ErrorCode.PERMISSION_DENIED
            )
        if answer.kind == "allow_always":
            rule = answer.rule or (pending.request.suggested_rules or (p.tool.name,))[0]
            parse_rule(rule)
            if rule not in session.allow_rules:
                session.allow_rules.append(rule)
        if answer.kind == "edit":
            if answer.arguments is None:
                raise ConfigurationError("Approval.edit needs the edited arguments")
            edited = replace(p.call, arguments=answer.arguments)
            try:
                args = p.tool.validator.validate(answer.arguments, self.locale)
            except InvalidArguments as exc:
                return self._invalid(
                    edited,
                    p.tool.name,
                    p.t0,
                    exc,
                    note="The arguments edited at approval are invalid.",
                )
            notes = [
                *pending.context_notes,
                "Note: the user edited this call's arguments before approving it; the result "
                "below is for the edited call, do not repeat the original call.",
            ]
            p2 = Prepared(call=edited, tool=p.tool, args=args, t0=p.t0)
            # The edited arguments are new input: hooks see them too (they may still deny).
            return await self.proceed(
                p2, session, updates, approved=True, hooks_again=True, notes=notes, state=state
            )
        return await self.proceed(
            p, session, updates, approved=True, notes=pending.context_notes, state=state
        )

    async def _run(
        self,
        p: Prepared,
        plan: _Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        state: RunState | None,
    ) -> ToolResult:
        tool, call = p.tool, p.call
        timeout = plan.timeout
        task = asyncio.current_task()
        running = self._running
        timer: asyncio.TimerHandle | None = None
        if state is None and timeout is None:
            mine: RunState | tuple[asyncio.Task[Any] | None, ToolContext | None] = (task, ctx)
        else:
            if state is None:
                state = RunState()
            state.task, state.ctx = task, ctx
            mine = state
            if timeout is not None and task is not None:
                timer = asyncio.get_running_loop().call_later(timeout, _expire, state)
        running[call.id] = mine
        try:
            if tool.is_async:
                value = await tool.run(p.args, ctx)  # pyright: ignore[reportArgumentType]
            elif plan.thread:
                value = await POOL.submit(tool.run, p.args, ctx)
            else:
                value = tool.run(p.args, ctx)  # pyright: ignore[reportArgumentType]
        except asyncio.CancelledError:
            if ctx is not None:
                ctx.cancel()
            if state is None:
                state = self._stops.pop(call.id, None)
            if state is None or state.reason is None or task is None or task.uncancel() > 0:
                raise  # cancelled from outside: cancellation propagates
            return await self._stopped(p, session, state, notes, timeout)
        except ToolFailure as exc:
            result = self._fail(call, tool.name, p.t0, exc.code, exc.message, exc.metadata)
            return await self._post(p, plan, session, result, notes, failed=True)
        except Exception as exc:
            logger.error("tool %s raised", tool.name, exc_info=exc)
            text = say(self.locale, "tool_failed", detail=_exc_text(exc))
            result = self._fail(call, tool.name, p.t0, ErrorCode.EXECUTION_ERROR, text)
            return await self._post(p, plan, session, result, notes, failed=True)
        finally:
            if timer is not None:
                timer.cancel()
            if running.get(call.id) is mine:
                del running[call.id]
        if state is None and self._stops:
            state = self._stops.pop(call.id, None)
        if state is not None and state.reason is not None and task is not None:
            # The tool swallowed our cancellation and returned anyway: the stop still counts.
            if task.uncancel() > 0:
                raise asyncio.CancelledError
            return await self._stopped(p, session, state, notes, timeout)
        if ctx is not None and ctx._updates:  # pyright: ignore[reportPrivateUsage]
            updates.extend(ctx._updates)  # pyright: ignore[reportPrivateUsage]
        # Fast path for the common results (short text, a number); _shape does the rest.
        text: str | None = (
            value if type(value) is str else str(value) if type(value) is int else None
        )
        if text and len(text) <= tool.max_result_chars:
            result = make_result(True, text, call.id, tool.name, time.perf_counter() - p.t0)
        else:
            result = self._shape(value, tool, call, session, p.t0)
        if notes or plan.post:
            return await self._post(p, plan, session, result, notes, failed=not result.ok)
        return result

    async def _stopped(
        self,
        p: Prepared,
        session: Session,
        state: RunState,
        notes: list[str],
        timeout: float | None,
    ) -> ToolResult:
        if state.ctx is not None:
            state.ctx.cancel()
        if state.reason == "timeout":
            text = say(self.locale, "timeout", name=p.tool.name, seconds=timeout or 0)
            result = self._fail(p.call, p.tool.name, p.t0, ErrorCode.TIMEOUT, text)
            return await self._post(
                p,
                self._plans.get(p.tool.name) or self._plan(p.tool),
                session,
                result,
                notes,
                failed=True,
            )
        return self._fail(
            p.call,
            p.tool.name,
            p.t0,
            ErrorCode.CANCELLED,
            state.message or say(self.locale, "cancelled"),
        )

    def _shape(
        self, value: Any, tool: Tool, call: ToolCall, session: Session, t0: float
    ) -> ToolResult:
        if isinstance(value, ToolResult):
            content = value.content
            base = value
        else:
            if type(value) is str:
                content = value
            elif type(value) is int:
                content = str(value)
            else:
                content = to_text(value)
            base = None
        meta: Mapping[str, Any] = base.metadata if base is not None else EMPTY
        ok = base.ok if base is not None else True
        if not content and ok:
            content = say(self.locale, "no_output", name=tool.name)
        elif len(content) > tool.max_result_chars:
            content, extra = truncate(
                content,
                tool.max_result_chars,
                tool=tool.name,
                call_id=call.id,
                results_dir=session.results_path(),
            )
            meta = {**meta, **extra}
        if base is None:
            return make_result(
                True, content, call.id, tool.name, time.perf_counter() - t0, metadata=meta
            )
        return replace(
            base,
            content=content,
            metadata=meta,
            error=base.error if base.ok else (base.error or ErrorCode.EXECUTION_ERROR),
            duration=time.perf_counter() - t0,
            call_id=call.id,
            tool_name=tool.name,
        )

    async def _post(
        self,
        p: Prepared,
        plan: _Plan,
        session: Session,
        result: ToolResult,
        notes: list[str],
        *,
        failed: bool,
    ) -> ToolResult:
        event_name = "post_tool_failure" if failed else "post_tool_use"
        hooks = self._hooks_for(event_name, p.tool) if plan.post else ()
        extra = list(notes)
        if hooks:
            event = self._event(event_name, p, session, result)
            extra.extend(await run_post_hooks(hooks, event, str(self.cwd)))
        if not extra:
            return result
        content = result.content + "\n\n" + "\n".join(extra)
        return replace(result, content=content)

    # -- results for refusals ----------------------------------------------------------------

    def _fail(
        self,
        call: ToolCall,
        tool_name: str,
        t0: float,
        code: ErrorCode,
        content: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        return make_result(
            False,
            content,
            call.id,
            tool_name,
            time.perf_counter() - t0,
            error=code,
            summary=f"{tool_name}: {code.value}",
            metadata=metadata or EMPTY,
        )

    def _invalid(
        self, call: ToolCall, tool_name: str, t0: float, exc: InvalidArguments, note: str = ""
    ) -> ToolResult:
        content = format_issues(tool_name, exc.issues, self.locale)
        if note:
            content = note + "\n" + content
        n = len(exc.issues)
        return make_result(
            False,
            content,
            call.id,
            tool_name,
            time.perf_counter() - t0,
            error=ErrorCode.INVALID_ARGS,
            summary=f"{tool_name}: invalid arguments ({n} issue{'s' if n != 1 else ''})",
            issues=exc.issues,
        )

    def _denied(self, p: Prepared, denial: Denial, code: ErrorCode) -> ToolResult:
        reason = denial.reason.rstrip(".")
        key = "denied" if code is ErrorCode.PERMISSION_DENIED else "refused"
        text = say(self.locale, key, reason=reason)
        return ToolResult(
            ok=False,
            content=text,
            error=code,
            summary=f"{p.tool.name}: denied",
            denial=denial,
            duration=time.perf_counter() - p.t0,
            call_id=p.call.id,
            tool_name=p.tool.name,
        )

    def _not_found(self, call: ToolCall, session: Session, t0: float) -> ToolResult:
        key = (session.mode, tuple(session.activated))
        visible = self._visible.get(key)
        if visible is None:
            tools = self.registry.list(session=session)
            visible = self._visible[key] = [t.name for t in tools if t.name in self._table]
        guesses = closest(call.name, visible)
        loc = self.locale
        if guesses:
            names = say(loc, "or").join(f"`{g}`" for g in guesses)
            hint = say(loc, "did_you_mean", names=names)
        else:
            names = ", ".join(f"`{n}`" for n in visible) or say(loc, "none")
            hint = say(loc, "available", names=names)
        if self.registry.has_deferred:
            hint += say(loc, "more_tools")
        content = say(loc, "no_tool", name=call.name, hint=hint)
        return self._fail(call, call.name, t0, ErrorCode.TOOL_NOT_FOUND, content)

    # -- small helpers -----------------------------------------------------------------------

    def _context(
        self, call: ToolCall, tool: Tool, session: Session, state: RunState | None = None
    ) -> ToolContext:
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        return ToolContext(
            call_id=call.id,
            tool_name=tool.name,
            cwd=self.cwd,
            read_roots=self.read_roots,
            write_roots=self.write_roots,
            session=session,
            deadline=time.monotonic() + timeout if timeout is not None else None,
            locale=self.locale,
            progress=state.progress
            if state is not None and state.progress is not None
            else self._emit_progress,
            settings=self.settings.tools.get(tool.name, {}),
        )

    def _emit_progress(self, event: ProgressEvent) -> None:
        if self.on_progress is not None:
            try:
                self.on_progress(event)
            except Exception:
                logger.exception("on_progress callback raised")

    def _hooks_for(self, event: str, tool: Tool) -> tuple[Hook, ...]:
        if not self.hooks:
            return ()
        key = (event, tool.name)
        found = self._hook_cache.get(key)
        if found is None:
            names = (tool.name, *tool.aliases)
            found = tuple(h for h in self.hooks if h.event == event and h.applies_to(names))
            self._hook_cache[key] = found
        return found

    def _event(
        self, name: str, p: Prepared, session: Session, result: ToolResult | None = None
    ) -> HookEvent:
        # Hooks always see the validated arguments (defaults filled in), as JSON.
        args = p.args
        tool_input: Mapping[str, Any] = (
            args.model_dump(mode="json", by_alias=True)
            if isinstance(args, BaseModel)
            else dict(args)
        )
        return HookEvent(
            event=name,  # pyright: ignore[reportArgumentType]
            session_id=session.id,
            cwd=str(self.cwd),
            mode=session.mode.value,
            tool_name=p.tool.name,
            tool_input=tool_input,
            call_id=p.call.id,
            result=result,
        )


async def _ready(result: ToolResult) -> ToolResult:
    return result


def _expire(state: RunState) -> None:
    if state.reason is None and state.task is not None:
        state.reason = "timeout"
        if state.ctx is not None:
            state.ctx.cancel()
        state.task.cancel()


def _exc_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _load(root: Path) -> Settings:
    return load_settings(root)


from ._executor import Batch, StreamingExecutor  # noqa: E402  (circular: executor uses Runtime)
