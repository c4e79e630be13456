"""The call pipeline: every call passes every stage, in order, with no way to skip one.

1 resolve  2 parse  3 validate  4 check (validate_input)  5 pre-tool hooks  6 permit  7 run
8 shape (+ post-tool hooks). `Pipeline.prepare` is stages 1-3, `Pipeline.proceed` stages 4-8
(7 and 8 come from its base, `Runner`). Each stage that refuses ends the call with a
`ToolResult`; nothing a tool, its arguments, the policy or the sandbox does raises out of it.

The pipeline also keeps what outlives one stage: the calls waiting for approval (`pending`,
answered through `resume_call`), the per-tool plans and the name table, rebuilt when the
registry changes. `Runtime` owns one pipeline; the executors drive it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._context import Grant, PermissionMode, Session, StateUpdate, ToolContext
from .._contract import (
    Approval,
    ApprovalRequest,
    Approver,
    Denial,
    ErrorCode,
    Interrupted,
    PermissionRequest,
    Preflight,
    ReadPath,
    ToolCall,
    ToolResult,
    WritePath,
)
from .._registry import Registry
from .._tool import Tool
from ..errors import ConfigurationError, ToolFailure
from ..permissions import (
    ALLOW,
    BYPASS,
    Decision,
    Hook,
    Policy,
    Settings,
    covering_rules,
    parse_rule,
    rules_to_allow,
    suggest_rules,
)
from ..permissions import Rule as _Rule
from ..permissions._hidden import hidden_now, hidden_refusal
from ..sandbox import resolve_path
from ..validation import InvalidArguments, closest
from ._calls import Pending, Plan, Prepared, ProgressFunc, RunState
from ._hooks import hook_event, run_pre_hooks
from ._messages import say
from ._results import denied, exc_text, fail, invalid, ready, waiting
from ._runner import Runner

logger = logging.getLogger("handrail")

EDIT_NOTE = (
    "Note: the user edited this call's arguments before approving it; the result below is "
    "for the edited call, do not repeat the original call."
)


class Pipeline(Runner):
    """Stages 1-8 for one call at a time, with the settings they read.

    The attributes are the `Runtime`'s settings of the same names (it reads and sets them
    here); after changing `registry`, `policy`, `hooks` or `default_timeout`, call `forget`.
    """

    def __init__(
        self,
        *,
        registry: Registry,
        policy: Policy,
        hooks: tuple[Hook, ...],
        approver: Approver | None,
        settings: Settings,
        locale: str,
        cwd: Path,
        read_roots: tuple[Path, ...],
        write_roots: tuple[Path, ...],
        default_timeout: float | None,
        on_progress: ProgressFunc | None,
        hidden_paths: tuple[Path, ...] = (),
    ) -> None:
        super().__init__(
            hooks=hooks,
            settings=settings,
            locale=locale,
            cwd=cwd,
            read_roots=read_roots,
            write_roots=write_roots,
            default_timeout=default_timeout,
            on_progress=on_progress,
        )
        self.registry = registry
        self.policy = policy
        self._approver = approver
        self.hidden_paths = hidden_paths
        """Secret locations every call is refused (checked before the policy, which cannot
        lift them) and every tool sees in its `ToolContext`."""
        # Their identities are noted now, so a hidden folder inside the roots renamed later
        # (by anything) is still known for what it is.
        hidden_now(hidden_paths, (*read_roots, *write_roots))
        self.pending: dict[str, Pending] = {}
        """Calls stopped at stage 6 without an approver, by call id, until `resume_call`."""
        self._plans: dict[str, Plan] = {}
        self._table: dict[str, Tool] = {}
        self._table_version = -1
        self._visible: dict[tuple[Any, ...], list[str]] = {}
        self._session_rules: dict[str, _Rule] = {}
        self._default_perm_requests = Tool.permission_requests
        self._default_validate_input = Tool.validate_input

    @property
    def approver(self) -> Approver | None:
        """Answers the asks of calls that bring no approver of their own (the `Runtime`'s)."""
        return self._approver

    def forget(self) -> None:
        """Drop what was worked out from the settings (plans, name table, hook lists)."""
        self._plans.clear()
        self._visible.clear()
        self._hook_cache.clear()
        self._table_version = -1

    # -- stages 1-3 --------------------------------------------------------------------------

    def prepare(self, call: ToolCall, session: Session) -> Prepared | ToolResult:
        """Stages 1-3: resolve the tool, parse and validate the arguments."""
        t0 = time.perf_counter()
        if self._table_version != self.registry.version:
            self._rebuild()
        tool = self._table.get(call.name)
        if tool is None:
            return self._not_found(call, session, t0)
        if tool.deferred and tool.name not in session.activated:
            return fail(
                call,
                tool.name,
                t0,
                ErrorCode.TOOL_NOT_ACTIVATED,
                say(self.locale, "not_activated", name=tool.name),
            )
        try:
            args = tool.validator.validate(call.arguments, self.locale)
        except InvalidArguments as exc:
            return invalid(self.locale, call, tool.name, t0, exc)
        except Exception as exc:  # a validator bug must not escape the runtime either
            logger.exception("validating arguments for %s failed", tool.name)
            text = say(self.locale, "not_checked", detail=exc_text(exc))
            return fail(call, tool.name, t0, ErrorCode.INVALID_ARGS, text)
        return Prepared(call=call, tool=tool, args=args, t0=t0)

    # -- stages 4-6 --------------------------------------------------------------------------

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
        answer: Approval | None = None,
        approver: Approver | None = None,
    ) -> Awaitable[ToolResult]:
        """Stages 4-8 for a validated call; await the result.

        `approver` answers this call's ask and reaches its tool as `ToolContext.approver`
        (default: the runtime's); without either, an ask ends the call as `Interrupted`.

        `answer` answers the call's ask in advance, for this call only (`Runtime.call(...,
        approval=...)`): an allow runs it, an "allow always" adds its rules first. It only
        answers an ask: a deny rule, the mode or a hook still refuses the call.

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
        if approver is None:
            approver = self.approver
        ctx = self._context(p.call, tool, session, state, approver) if plan.context else None
        notes = list(notes) if notes else []
        run_hooks = bool(plan.pre) and (not approved or hooks_again)
        if plan.check or run_hooks:
            return self._proceed_async(
                p, plan, session, ctx, updates, notes, approved, run_hooks, state, answer, approver
            )
        return self._permit_and_run(
            p, plan, session, ctx, updates, notes, approved, state, None, "", answer, approver
        )

    async def _proceed_async(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        approved: bool,
        run_hooks: bool,
        state: RunState | None,
        answer: Approval | None,
        approver: Approver | None,
    ) -> ToolResult:
        found = await self._early_stages(p, plan, session, ctx, notes, approved, run_hooks)
        if isinstance(found, ToolResult):
            return found
        if found[0] is not p and state is not None:
            state.safe = None  # a hook rewrote the input: its safety is worked out again
        p, hook_decision, hook_reason = found
        return await self._permit_and_run(
            p,
            plan,
            session,
            ctx,
            updates,
            notes,
            approved,
            state,
            hook_decision,
            hook_reason,
            answer,
            approver,
        )

    async def _early_stages(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        ctx: ToolContext | None,
        notes: list[str],
        approved: bool,
        run_hooks: bool,
    ) -> ToolResult | tuple[Prepared, str | None, str]:
        """Stages 4 and 5: the refusal, or the call (maybe rewritten) and the hooks' say."""
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
            cwd = str(self.cwd)
            outcome = await run_pre_hooks(
                plan.pre, hook_event("pre_tool_use", p, session, cwd), cwd
            )
            notes.extend(outcome.context)
            if outcome.blocked or outcome.decision == "deny":
                denial = Denial(reason=outcome.reason, source="hook")
                return denied(self.locale, p, denial, ErrorCode.PERMISSION_DENIED)
            if outcome.updated_input is not None:
                new_input = dict(outcome.updated_input)
                try:
                    args = tool.validator.validate(new_input, self.locale)
                except InvalidArguments as exc:
                    note = "A hook rewrote the arguments, and the result is invalid."
                    return invalid(self.locale, call, tool.name, p.t0, exc, note=note)
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
        return p, hook_decision, hook_reason

    def _permit_and_run(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        ctx: ToolContext | None,
        updates: list[StateUpdate],
        notes: list[str],
        approved: bool,
        state: RunState | None,
        hook_decision: str | None,
        hook_reason: str,
        answer: Approval | None,
        approver: Approver | None,
    ) -> Awaitable[ToolResult]:
        verdict = self._permit(p, plan, session, ctx, hook_decision, hook_reason)
        if isinstance(verdict, ToolResult):
            return ready(verdict)
        grant: Grant = "user"
        if isinstance(verdict, Decision):
            grant = verdict.grant
        elif not approved:
            if answer is None:
                return self._ask(p, session, verdict, updates, notes, approver, state)
            if answer.kind == "allow_always":
                self._allow_always(session, answer, self._request(p, verdict))
        if ctx is not None:
            # Plan mode runs nothing that changes things, whatever allowed it (a person's
            # approval of a mode switch aside): the tool gets the narrowest sandbox.
            if session.mode is PermissionMode.PLAN and grant != "user":
                grant = "read_only"
            ctx.granted_by = grant
        # 7 run, 8 shape.
        return self._run(p, plan, session, ctx, updates, notes, state)

    def _permit(
        self,
        p: Prepared,
        plan: Plan,
        session: Session,
        ctx: ToolContext | None,
        hook_decision: str | None,
        hook_reason: str,
    ) -> ToolResult | tuple[Decision, tuple[PermissionRequest, ...]] | Decision:
        """Stage 6: the allowing decision, the refusal, or the ask (decision and requests)."""
        tool, call = p.tool, p.call
        # One central decision from what the tool says it will touch.
        read_only = plan.read_only if plan.read_only is not None else _read_only(tool, p.args)
        if not (
            plan.requests
            or plan.rules
            or hook_decision is not None
            or not (read_only or session.mode is PermissionMode.BYPASS)
        ):
            # Nothing a rule, request or hook could change: allowed, as decide() says.
            return BYPASS if session.mode is PermissionMode.BYPASS else ALLOW
        requests: tuple[PermissionRequest, ...] = ()
        if plan.requests:
            assert ctx is not None
            try:
                requests = self._resolve_requests(tool.permission_requests(p.args, ctx))
            except ToolFailure as exc:
                return fail(call, tool.name, p.t0, exc.code, exc.message)
            except Exception as exc:  # a tool's bug: the call fails, nothing runs
                logger.exception("permission_requests of %s raised", tool.name)
                text = say(self.locale, "tool_failed", detail=exc_text(exc))
                return fail(call, tool.name, p.t0, ErrorCode.EXECUTION_ERROR, text)
            # Here, not in the policy alone: a Policy subclass must not be able to lift it.
            hidden = hidden_refusal(
                requests, hidden_now(self.hidden_paths, (*self.read_roots, *self.write_roots))
            )
            if hidden is not None:
                denial = Denial(reason=hidden[0], source="roots")
                return denied(self.locale, p, denial, hidden[1], hidden=True)
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
            return denied(self.locale, p, denial, decision.code)
        if decision.behavior == "ask":
            return decision, requests
        return decision

    async def check(self, p: Prepared, session: Session) -> Preflight:
        """Stages 4-6 of a validated call, and no run: would it run, ask, or be refused?

        Nothing is stored and no session state changes (state updates the tool's own checks
        queue are dropped). Pre-tool hooks run, as they would for the call: a host that checks
        and then calls runs them twice.
        """
        tool = p.tool
        plan = self._plans.get(tool.name) or self._plan(tool)
        ctx = self._context(p.call, tool, session) if plan.context else None
        found = await self._early_stages(p, plan, session, ctx, [], False, bool(plan.pre))
        if isinstance(found, ToolResult):
            return Preflight(verdict="refuse", call=p.call, tool_name=tool.name, refusal=found)
        p, hook_decision, hook_reason = found
        verdict = self._permit(p, plan, session, ctx, hook_decision, hook_reason)
        if isinstance(verdict, Decision):
            return Preflight(verdict="run", call=p.call, tool_name=tool.name)
        if isinstance(verdict, ToolResult):
            return Preflight(verdict="refuse", call=p.call, tool_name=tool.name, refusal=verdict)
        request = self._request(p, verdict)
        return Preflight(verdict="ask", call=p.call, tool_name=tool.name, request=request)

    async def _check(self, p: Prepared, ctx: ToolContext) -> ToolResult | None:
        try:
            verdict = p.tool.validate_input(p.args, ctx)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        except ToolFailure as exc:
            return fail(p.call, p.tool.name, p.t0, exc.code, exc.message, exc.metadata)
        except Exception as exc:
            logger.exception("validate_input of %s raised", p.tool.name)
            return fail(p.call, p.tool.name, p.t0, ErrorCode.EXECUTION_ERROR, exc_text(exc))
        if verdict:
            text = say(self.locale, "call_again", verdict=verdict, name=p.tool.name)
            return fail(p.call, p.tool.name, p.t0, ErrorCode.INVALID_ARGS, text)
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

    def _context(
        self,
        call: ToolCall,
        tool: Tool,
        session: Session,
        state: RunState | None = None,
        approver: Approver | None = None,
    ) -> ToolContext:
        ctx = super()._context(call, tool, session, state, approver)
        ctx.hidden_paths = self.hidden_paths
        return ctx

    # -- approvals ---------------------------------------------------------------------------

    def _request(
        self, p: Prepared, ask: tuple[Decision, tuple[PermissionRequest, ...]]
    ) -> ApprovalRequest:
        decision, requests = ask
        roots = (*self.write_roots, *self.read_roots)
        return ApprovalRequest(
            call=p.call,
            tool_name=p.tool.name,
            reason=decision.reason,
            requests=requests,
            suggested_rules=suggest_rules(p.tool.name, requests, roots),
            allow_rules=covering_rules(p.tool.name, requests, roots),
            source="mode" if decision.source not in ("rule", "hook") else decision.source,
        )

    def _allow_always(self, session: Session, answer: Approval, request: ApprovalRequest) -> None:
        added = (answer.rule,) if answer.rule else rules_to_allow(request)
        for rule in added:
            parse_rule(rule)
            if rule not in session.allow_rules:
                session.allow_rules.append(rule)

    async def _ask(
        self,
        p: Prepared,
        session: Session,
        ask: tuple[Decision, tuple[PermissionRequest, ...]],
        updates: list[StateUpdate],
        notes: list[str],
        approver: Approver | None,
        state: RunState | None,
    ) -> ToolResult:
        request = self._request(p, ask)
        pending = Pending(
            prepared=p, session=session, request=request, context_notes=notes, approver=approver
        )
        if approver is None:
            self.pending[p.call.id] = pending
            return waiting(self.locale, p, request)
        # While the person is asked, `cancel(call_id)` stops the call as it stops a running
        # one: nothing has run, and the question is dropped with it.
        asking = state if state is not None else RunState()
        task = asyncio.current_task()
        asking.task, asking.ctx = task, None
        self._running[p.call.id] = asking
        try:
            answer = _readable(await approver(request))
        except asyncio.CancelledError:
            if state is not None or asking.reason is None or task is None or task.uncancel():
                raise  # cancelled from outside (or the executor's own stop, which it reports)
            return fail(
                p.call,
                p.tool.name,
                p.t0,
                ErrorCode.CANCELLED,
                asking.message or say(self.locale, "cancelled"),
            )
        except Exception as exc:
            logger.exception("approver raised")
            answer = Approval.deny(f"The approval could not be obtained ({exc_text(exc)}).")
        finally:
            if self._running.get(p.call.id) is asking:
                del self._running[p.call.id]
        if state is not None:
            state.task = None  # the run registers it again when it starts
        return await self._answer(pending, answer, updates, state)

    async def resume_call(
        self,
        interrupted: Interrupted,
        answer: Approval,
        updates: list[StateUpdate],
        state: RunState | None = None,
    ) -> ToolResult:
        """Carry on with one interrupted call, given the host's answer."""
        pending = self.pending.pop(interrupted.call_id, None)
        if pending is None:
            raise ConfigurationError(
                f"call {interrupted.call_id!r} is not waiting for approval (already answered?)"
            )
        return await self._answer(pending, answer, updates, state)

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
            denial = Denial(reason=reason, source=answer.source)
            return denied(self.locale, p, denial, ErrorCode.PERMISSION_DENIED)
        if answer.kind == "allow_always":
            self._allow_always(session, answer, pending.request)
        if answer.kind == "edit":
            if answer.arguments is None:
                raise ConfigurationError("Approval.edit needs the edited arguments")
            edited = replace(p.call, arguments=answer.arguments)
            try:
                args = p.tool.validator.validate(answer.arguments, self.locale)
            except InvalidArguments as exc:
                note = "The arguments edited at approval are invalid."
                return invalid(self.locale, edited, p.tool.name, p.t0, exc, note=note)
            notes = [*pending.context_notes, EDIT_NOTE]
            p2 = Prepared(call=edited, tool=p.tool, args=args, t0=p.t0)
            if state is not None:
                state.safe = None  # new arguments: their safety is worked out again
            # The edited arguments are new input: hooks see them too (they may still deny).
            return await self.proceed(
                p2,
                session,
                updates,
                approved=True,
                hooks_again=True,
                notes=notes,
                state=state,
                approver=pending.approver,
            )
        return await self.proceed(
            p,
            session,
            updates,
            approved=True,
            notes=pending.context_notes,
            state=state,
            approver=pending.approver,
        )

    # -- what the stages work out once -------------------------------------------------------

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

    def _plan(self, tool: Tool) -> Plan:
        names = (tool.name, *tool.aliases)
        check = type(tool).validate_input is not self._default_validate_input
        requests = type(tool).permission_requests is not self._default_perm_requests
        post = bool(
            self._hooks_for("post_tool_use", tool) or self._hooks_for("post_tool_failure", tool)
        )
        plan = Plan(
            names=names,
            check=check,
            requests=requests,
            # The policy object's own answer (a Policy subclass may widen it), so a tool no
            # rule names skips decide() only when this policy says so.
            rules=self.policy.has_rules_for(names),
            pre=self._hooks_for("pre_tool_use", tool),
            post=post,
            context=tool.needs_context or check or requests,
            timeout=tool.timeout
            if tool.timeout is not None
            else (None if tool.inline and not tool.is_async else self.default_timeout),
            thread=not tool.is_async and not tool.inline,
            read_only=tool.read_only if isinstance(tool.read_only, bool) else None,
            safe=tool.concurrency_safe if isinstance(tool.concurrency_safe, bool) else None,
        )
        self._plans[tool.name] = plan
        return plan

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
        shown = _shown_name(call.name)
        content = say(loc, "no_tool", name=shown, hint=hint)
        return fail(call, shown, t0, ErrorCode.TOOL_NOT_FOUND, content)


def _readable(answer: object) -> Approval:
    """An approver's answer, or the denial it becomes when the runtime cannot act on it.

    Checked before anything runs: an edit without arguments, or an "always" whose rule is
    not a permission rule, is the host's bug, and the call must still get its one result.
    """
    if not isinstance(answer, Approval):
        return Approval.deny(
            f"The approval could not be obtained (the approver answered {type(answer).__name__})."
        )
    if answer.kind == "edit" and answer.arguments is None:
        return Approval.deny("The approval could not be obtained (an edit without arguments).")
    if answer.kind == "allow_always" and answer.rule:
        try:
            parse_rule(answer.rule)
        except ConfigurationError as exc:
            return Approval.deny(f"The approval could not be obtained ({exc}).")
    return answer


def _read_only(tool: Tool, args: Any) -> bool:
    try:
        return tool.is_read_only(args)
    except Exception:  # a flag function that fails: fail closed, not read-only
        logger.exception("read_only of %s raised", tool.name)
        return False


def _shown_name(name: str) -> str:
    """A model-written name as it may be echoed.

    Valid UTF-8 (a lone surrogate is escaped) and at most 100 characters.
    """
    text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 100 else text[:99] + "…"
