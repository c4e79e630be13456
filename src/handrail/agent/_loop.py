"""The agent loop: model turn, tool calls through the runtime, results back, until an answer.

A newcomer should be able to read `run` and `_turn` in five minutes. The loop never handles a
tool call itself: every call goes through `Runtime.stream()` (validation, policy, approval,
sandbox, ordered results), starting while the model is still writing; the loop only moves
messages and events between the model client and the runtime. Every call the model made gets
exactly one result before the next request, also when the user interrupts (the running tools
are stopped, the rest are answered as cancelled) and when the loop refuses a repeated call.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .._contract import (
    Approval,
    ApprovalRequest,
    ErrorCode,
    ProgressEvent,
    ToolCall,
    ToolResult,
)
from ..display import CallProgress, CallStatus
from ..errors import ConfigurationError, ModelError
from ..permissions import rules_to_allow, user_settings_path
from ..runtime import ApproverFunc, Runtime
from ._budget import Budget
from ._catalog import ModelInfo
from ._codecs import CallReady, ModelRequest, StreamItem
from ._compaction import (
    SUMMARY_SYSTEM,
    CompactionSettings,
    estimate_tokens,
    message_tokens,
    prune_results,
    render_for_summary,
    split_point,
)
from ._conversation import (
    AssistantMessage,
    Message,
    ToolResults,
    Usage,
    UserMessage,
    message_to_json,
)
from ._events import (
    ApprovalAnswered,
    ApprovalAsked,
    Compacted,
    Event,
    ModelRetry,
    Notice,
    RunFinished,
    RunResult,
    RunStarted,
    RunSubtype,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    TurnEnded,
    TurnStarted,
)
from ._prompt import project_instructions, system_prompt
from ._sessions import (
    SavedSession,
    Transcript,
    now_iso,
    project_dir,
    restore_state,
    session_state,
    state_dir,
)
from ._text import say

__all__ = ["Agent", "ApprovalFunc", "EventFunc", "Model"]

logger = logging.getLogger("handrail")

ApprovalFunc = Callable[[ApprovalAsked], Awaitable[Approval]]
"""Answers an approval question (the terminal prompts; a UI asks its user)."""
EventFunc = Callable[[Event], None]
"""Receives every event of a run, in order."""


class Model(Protocol):
    """What the loop needs of a model client (`ModelClient`, or a replay of a transcript)."""

    provider: str
    model: str
    info: ModelInfo
    max_retries: int

    @property
    def spec(self) -> str: ...

    def respond(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamItem | ModelRetry | AssistantMessage, None]: ...

    async def aclose(self) -> None: ...


_EMPTY_STOPS = frozenset({"max_tokens", "refusal", "malformed_call"})
"""Stop reasons that, with no text and no call, mean the answer went missing."""


class _ContextFull(Exception):
    """The conversation no longer fits the window and compaction cannot help."""


class Agent:
    """Drives a model through a `Runtime` until it answers.

    ```python
    rt = Runtime(Registry(coding_tools()), root=".", mode="accept_edits")
    agent = Agent(ModelClient.from_spec("anthropic:claude-sonnet-4-5"), rt)
    result = await agent.run("Add a test for slugify() and run it.", on_event=print)
    async for event in agent.events("Now make it pass."):   # the same run, as an iterator
        ...
    ```

    The agent keeps its conversation across runs (a chat). Approvals reach `approver`; without
    one, a call that would ask is denied and the model is told which rule would allow it.

    Args:
        model: A `ModelClient` (or anything with its `respond` interface).
        runtime: The tools, policy and sandbox. The agent installs its approval hook on it and,
            unless `agents=False`, the `agent` sub-agent tool.
        instructions: Replaces the default role paragraph of the system prompt.
        approver: Answers approval questions (also those of sub-agents, labelled).
        max_turns: Most model requests per run (None: no limit).
        max_tokens: Token budget (input + output, sub-agents included) across runs.
        max_cost_usd: Cost budget, where the model's prices are known.
        repeat_limit: The same call with the same arguments and the same result this many times
            in a row is refused (0: never).
        compaction: When and how to compact the conversation.
        save: Write a transcript (under the user's state folder, `handrail.agent.state_dir`);
            False writes nothing, whatever `transcript` says.
        transcript: Write the transcript to this path instead.
        agents: Offer the `agent` tool (True: built-in and configured definitions).
        max_depth: How deep sub-agents may nest (1: sub-agents cannot start their own).
        name: How events and approvals name this agent.
        budget: A parent's budget this agent's spending also counts against (sub-agents).
        depth: How deep this agent is nested (0 for the top).
        take_approvals: Answer the runtime's approvals through `approver` (and events). False
            when a host answers them itself (`handrail serve` asks its MCP client); the
            sub-agents' approvals still come to `approver`.
    """

    def __init__(
        self,
        model: Model,
        runtime: Runtime,
        *,
        instructions: str | None = None,
        approver: ApprovalFunc | None = None,
        max_turns: int | None = None,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        repeat_limit: int = 3,
        compaction: CompactionSettings | None = None,
        save: bool = True,
        transcript: Path | None = None,
        agents: bool = True,
        max_depth: int = 1,
        name: str = "main",
        budget: Budget | None = None,
        depth: int = 0,
        take_approvals: bool = True,
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ConfigurationError("max_turns must be at least 1")
        self.client = model
        self.runtime = runtime
        self.instructions = instructions
        self.approver = approver
        self.max_turns = max_turns
        self.repeat_limit = repeat_limit
        self.compaction = compaction or CompactionSettings()
        self.name = name
        self.depth = depth
        self.max_depth = max_depth
        # Its own budget (what this agent spent), linked to a parent's, which sees it too.
        self.budget = Budget(max_tokens=max_tokens, max_cost_usd=max_cost_usd, parent=budget)
        self.messages: list[Message] = []
        self.session_id = runtime.session.id
        self.system: str | None = None
        self.notices: list[str] = []
        self._save = save
        self._transcript_path = transcript
        self.transcript: Transcript | None = None
        self._upstream: ApproverFunc | None = runtime.approver
        if take_approvals:
            runtime.approver = self._approve
        self._emit_fn: EventFunc | None = None
        self._task: asyncio.Task[Any] | None = None
        self._interrupting = False
        self._history: list[list[str | None]] = []
        self._started: dict[str, tuple[ToolCall, float]] = {}
        self._entries: dict[str, list[str | None]] = {}
        self._context_base = 0
        self._context_index = 0
        self._compact_failures = 0
        self._no_tools = False
        if agents and depth < max_depth:
            from ._subagents import AgentTool

            found = runtime.registry.get("agent")
            if found is None:
                runtime.registry.add(AgentTool(self))
            elif isinstance(found, AgentTool):
                found.bind(self)  # the newest agent on a runtime is the children's parent

    # -- public ------------------------------------------------------------------------------

    @property
    def transcript_path(self) -> Path | None:
        """Where this agent's transcript is (or will be) written; None when not saved."""
        if not self._save:
            return None
        if self._transcript_path is not None:
            return self._transcript_path
        return project_dir(self.runtime.root, state_dir()) / f"{self.session_id}.jsonl"

    def interrupt(self) -> bool:
        """Stop the current run: running tools are stopped, every call gets a result.

        The run returns a result with subtype `interrupted`; the conversation stays valid, so
        the next `run` carries on. False when nothing is running.
        """
        if self._task is None or self._task.done():
            return False
        self._interrupting = True
        self._task.cancel()
        return True

    async def events(self, prompt: str) -> AsyncIterator[Event]:
        """`run` as an async iterator of its events.

        Closing it early (`break` inside `async with contextlib.aclosing(...)`, or `aclose()`)
        interrupts the run and waits until it has settled every call.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        async def runner() -> None:
            try:
                await self.run(prompt, on_event=queue.put_nowait)
            finally:
                queue.put_nowait(None)

        # A task of our own rather than a task group: a task group would wrap the GeneratorExit
        # of an early close in an exception group.
        task = asyncio.ensure_future(runner())
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            if not task.done():
                self.interrupt()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(
        self,
        prompt: str,
        *,
        on_event: EventFunc | None = None,
        max_turns: int | None = None,
        allow_tools: bool = True,
    ) -> RunResult:
        """Send `prompt` and run turns until the model answers without calling a tool.

        Never raises for what the model or the tools do: the `RunResult` says how it ended
        (`success`, `error_max_turns`, `error_budget`, `error_model`, `error_context`,
        `interrupted`). Cancelling the calling task stops the run the same way and re-raises.
        `max_turns` overrides the agent's limit for this run; with `allow_tools=False` every
        call the model makes is answered "not run" (when only a final answer is wanted).
        """
        if self._task is not None and not self._task.done():
            raise ConfigurationError("this agent is already running; wait for the run to end")
        self._task = asyncio.current_task()
        self._interrupting = False
        self._emit_fn = on_event
        self._no_tools = not allow_tools
        t0 = time.monotonic()
        usage0, cost0 = self.budget.usage, self.budget.cost_usd
        self._start()
        self._append(UserMessage(text=prompt))
        self._emit(
            RunStarted(
                session_id=self.session_id,
                model=self.client.model,
                provider=self.client.provider,
                agent=self.name,
                prompt=prompt,
            )
        )
        limit = max_turns if max_turns is not None else self.max_turns
        turns, final, subtype, error = 0, "", "success", ""
        nudged = False
        external: asyncio.CancelledError | None = None
        try:
            while True:
                for notice in self.runtime.session.take_notices():
                    self._append(
                        UserMessage(text=say(self._locale, "notice", text=notice), kind="notice")
                    )
                if limit is not None and turns >= limit:
                    subtype, error = "error_max_turns", f"stopped after {turns} turns (the limit)"
                    break
                over = self.budget.exceeded()
                if over is not None:
                    subtype, error = "error_budget", over
                    break
                await self._maybe_compact()
                turns += 1
                self._emit(TurnStarted(turn=turns))
                message = await self._turn(turns)
                if message.calls:
                    continue
                if message.text.strip() or message.stop not in _EMPTY_STOPS:
                    final = message.text
                    break
                if nudged:
                    subtype = "error_model"
                    error = f"the model gave no answer twice (stop reason: {message.stop})"
                    break
                nudged = True  # once: an empty answer cut by length or a filter, ask again
                self._append(UserMessage(text=say(self._locale, "empty_answer"), kind="nudge"))
        except _ContextFull as exc:
            subtype, error = "error_context", str(exc)
        except ModelError as exc:
            subtype, error = "error_model", exc.message
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if self._interrupting and task is not None:
                task.uncancel()
            else:
                external = exc
            subtype, error = "interrupted", "the run was interrupted"
        finally:
            self._task = None
        usage = _minus(self.budget.usage, usage0)
        cost = (
            None if self.budget.cost_usd is None or cost0 is None else self.budget.cost_usd - cost0
        )
        result = RunResult(
            subtype=_subtype(subtype),
            result=final,
            session_id=self.session_id,
            num_turns=turns,
            usage=usage,
            duration_ms=int((time.monotonic() - t0) * 1000),
            cost_usd=cost,
            error=error,
        )
        self._record_state()
        self._write({"type": "result", "result": result.to_json()})
        self._emit(RunFinished(result=result))
        if external is not None:
            raise external
        return result

    async def compact(self, focus: str | None = None) -> Compacted | None:
        """Summarise the older part of the conversation now (`focus`: what to keep)."""
        return await self._compact(manual=True, focus=focus)

    async def aclose(self) -> None:
        """Close the transcript and the model client's connections."""
        if self.transcript is not None:
            self.transcript.close()
        await self.client.aclose()

    def set_model(self, model: Model) -> Model:
        """Use another model from the next turn on (`/model`); returns the previous one."""
        self._check_idle()
        previous, self.client = self.client, model
        self._context_base, self._context_index = 0, 0
        return previous

    # -- one turn ----------------------------------------------------------------------------

    async def _turn(self, turn: int) -> AssistantMessage:
        request = self._request()
        calls: list[ToolCall] = []
        results: dict[str, ToolResult] = {}
        text: list[str] = []
        message: AssistantMessage | None = None
        failure: BaseException | None = None
        async with self.runtime.stream() as ex, asyncio.TaskGroup() as tg:
            drain = tg.create_task(self._drain(ex, results))
            try:
                message = await self._stream(request, ex, calls, results, text)
                ex.close()
                # Shielded: an interrupt while the tools run must not kill the drain, which
                # still has to collect every call's (cancelled) result.
                await asyncio.shield(drain)
            except (Exception, asyncio.CancelledError) as exc:
                # Stop what runs and let the drain collect every result before leaving: the
                # exception is raised again below, outside the task group (which would wrap it).
                failure = exc
                ex.cancel(None, say(self._locale, "interrupted"))
                ex.close()
                await drain
        if failure is not None:
            if calls or isinstance(failure, asyncio.CancelledError):
                partial = AssistantMessage(
                    text="".join(text),
                    calls=tuple(calls),
                    provider=self.client.provider,
                    model=self.client.model,
                    stop="interrupted",
                )
                self._finish_turn(turn, partial, calls, results)
            raise failure
        assert message is not None
        return self._finish_turn(turn, replace(message, calls=tuple(calls)), calls, results)

    async def _stream(
        self,
        request: ModelRequest,
        ex: Any,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
        text: list[str],
    ) -> AssistantMessage:
        cuts = 0
        while True:
            text.clear()
            message: AssistantMessage | None = None
            async with contextlib.aclosing(self.client.respond(request)) as items:
                async for item in items:
                    if isinstance(item, AssistantMessage):
                        message = item
                    elif isinstance(item, CallReady):
                        self._submit(ex, item.call, calls, results)
                    else:
                        if isinstance(item, TextDelta):
                            text.append(item.text)
                        self._emit(item)
            assert message is not None
            self._spend(message.usage)
            if message.stop != "cut":
                return message
            if calls:
                self._emit(
                    Notice(
                        text="the model's response stream ended early; the calls it had "
                        "completed were run",
                        level="warning",
                    )
                )
                return message
            cuts += 1
            if cuts > self.client.max_retries:
                raise ModelError(
                    f"the model's response stream ended early {cuts} times in a row; try "
                    "again later",
                    kind="cut",
                    retryable=True,
                )
            delay = min(8.0, 0.5 * 2 ** (cuts - 1))
            self._emit(
                ModelRetry(
                    attempt=cuts,
                    delay=delay,
                    reason="the response stream ended early",
                    discard=True,
                )
            )
            await asyncio.sleep(delay)

    def _submit(
        self, ex: Any, call: ToolCall, calls: list[ToolCall], results: dict[str, ToolResult]
    ) -> None:
        if not call.id or any(c.id == call.id for c in calls):
            call = replace(call, id=f"call_{uuid.uuid4().hex[:12]}")
        calls.append(call)
        self._started[call.id] = (call, time.monotonic())
        self._emit(ToolCallStarted(call=call, display=self.runtime.display(call)))
        refusal: str | None = None
        if self._no_tools:
            refusal = say(self._locale, "no_tools_now")
        elif self._repeats(call) + 1 >= self.repeat_limit > 0:
            refusal = say(self._locale, "repeated", name=call.name, count=self._repeats(call) + 1)
        entry: list[str | None] = [_call_key(call), None]
        self._history.append(entry)
        del self._history[:-64]
        if refusal is None:
            self._entries[call.id] = entry
            ex.submit(call)
            return
        result = ToolResult(
            ok=False,
            content=refusal,
            error=ErrorCode.REPEATED_CALL,
            summary=f"{call.name}: refused",
            call_id=call.id,
            tool_name=call.name,
        )
        results[call.id] = result
        self._finished(result)

    def _repeats(self, call: ToolCall) -> int:
        """How many calls just before this one were the same, with the same known results."""
        key = _call_key(call)
        count, seen = 0, None
        for k, fingerprint in reversed(self._history):
            if k != key:
                break
            if fingerprint is not None:
                if seen is not None and fingerprint != seen:
                    break
                seen = fingerprint
            count += 1
        return count

    async def _drain(self, ex: Any, results: dict[str, ToolResult]) -> None:
        async for item in ex:
            if isinstance(item, ProgressEvent):
                started = self._started.get(item.call_id)
                display = None
                if started is not None:
                    display = self.runtime.display(
                        started[0],
                        progress=CallProgress(elapsed=time.monotonic() - started[1]),
                        data=item.data,
                    )
                self._emit(
                    ToolCallProgress(
                        call_id=item.call_id,
                        tool_name=item.tool_name,
                        message=item.message,
                        data=dict(item.data),
                        display=display,
                    )
                )
                continue
            results[item.call_id] = item
            self._finished(item)

    def _finished(self, result: ToolResult) -> None:
        started = self._started.pop(result.call_id, None)
        call = started[0] if started is not None else ToolCall(id=result.call_id, name="?")
        display = self.runtime.display(call, result=result)
        self._emit(ToolCallFinished(result=result, display=display))

    def _finish_turn(
        self,
        turn: int,
        message: AssistantMessage,
        calls: list[ToolCall],
        results: dict[str, ToolResult],
    ) -> AssistantMessage:
        answered: list[ToolResult] = []
        for call in calls:
            r = results.get(call.id)
            if r is None:  # never started before an interrupt
                r = ToolResult(
                    ok=False,
                    content=say(self._locale, "interrupted"),
                    error=ErrorCode.CANCELLED,
                    summary=f"{call.name}: cancelled",
                    call_id=call.id,
                    tool_name=call.name,
                )
                self._finished(r)
            answered.append(r)
        for call, r in zip(calls, answered, strict=True):
            entry = self._entries.pop(call.id, None)
            if entry is not None:
                entry[1] = _fingerprint(r)
        self._append(message)
        if answered:
            self._append(ToolResults(results=tuple(answered)))
        usage = message.usage
        if usage.input_tokens:
            self._context_base = usage.input_tokens + usage.output_tokens
            self._context_index = len(self.messages) - (1 if answered else 0)
        event = TurnEnded(
            turn=turn, message=message, usage=usage, context_tokens=self.context_tokens()
        )
        self._write({"type": "event", "event": event.to_json()})
        self._record_state()
        self._emit(event)
        return message

    # -- requests, usage, context ------------------------------------------------------------

    def _request(self, *, tools: bool = True) -> ModelRequest:
        provider = self.client.provider
        return ModelRequest(
            model=self.client.model,
            system=self.system or "",
            messages=tuple(self.messages),
            tools=self.runtime.tools(provider=provider) if tools else (),
            locale=self._locale,
        )

    def _spend(self, usage: Usage) -> None:
        prices = self.client.info.prices
        cost = (
            prices.cost(usage.input_tokens, usage.output_tokens, usage.cached_tokens)
            if prices is not None
            else None
        )
        self.budget.add(usage, cost)

    def context_tokens(self) -> int:
        """How many tokens the conversation fills now (the provider's count plus estimates)."""
        if self._context_base:
            tail = self.messages[self._context_index :]
            return self._context_base + sum(message_tokens(m) for m in tail)
        fixed = estimate_tokens(self.system or "") + sum(
            estimate_tokens(t.description) + estimate_tokens(json.dumps(t.parameters))
            for t in self.runtime.tools(provider=self.client.provider)
        )
        return fixed + sum(message_tokens(m) for m in self.messages)

    async def _maybe_compact(self) -> None:
        """Compact while the window is fuller than the threshold, up to `max_failures` tries."""
        settings = self.compaction
        window = self.client.info.context_window
        while settings.enabled and self.context_tokens() >= settings.threshold * window:
            if self._compact_failures >= settings.max_failures:
                if self.context_tokens() >= window:
                    raise _ContextFull(
                        "the conversation no longer fits the model's context window and "
                        f"compaction failed {self._compact_failures} times; start a new session "
                        "or compact it with a focus"
                    )
                return
            if await self._compact(manual=False) is not None:
                return

    async def _compact(self, *, manual: bool, focus: str | None = None) -> Compacted | None:
        settings = self.compaction
        window = self.client.info.context_window
        before = self.context_tokens()
        protect = min(settings.protect_tokens, window // 4)
        pruned, n_pruned, freed = prune_results(self.messages, protect=protect, locale=self._locale)
        enough = min(settings.min_prune_tokens, window // 10)
        if (
            not manual
            and n_pruned
            and freed >= enough
            and before - freed < settings.threshold * window
        ):
            return self._replace(pruned, before, n_pruned, 0, manual)
        source = pruned if n_pruned else self.messages
        cut = split_point(source, 0 if manual else min(settings.keep_tokens, window // 5))
        if cut == 0:
            if n_pruned:
                return self._replace(pruned, before, n_pruned, 0, manual)
            self._compact_failures += 1
            self._emit(Notice(text="nothing to compact yet", level="warning"))
            return None
        summary = ""
        try:
            for chunk in render_for_summary(source[:cut], limit_chars=max(4000, window * 2)):
                text = (
                    (f"Summary so far:\n{summary}\n\n" if summary else "")
                    + (f"Pay special attention to: {focus}\n\n" if focus else "")
                    + "Conversation to summarise:\n\n"
                    + chunk
                )
                summary = await self._ask(SUMMARY_SYSTEM, text)
        except ModelError as exc:
            self._compact_failures += 1
            self._emit(Notice(text=f"compaction failed: {exc.message}", level="warning"))
            return None
        if not summary.strip():
            self._compact_failures += 1
            self._emit(Notice(text="compaction failed: the summary was empty", level="warning"))
            return None
        head = UserMessage(
            text=say(self._locale, "summary", summary=summary.strip()), kind="summary"
        )
        return self._replace([head, *source[cut:]], before, n_pruned, cut, manual)

    def _replace(
        self, messages: list[Message], before: int, pruned: int, summarized: int, manual: bool
    ) -> Compacted:
        self.messages = messages
        self._context_base, self._context_index = 0, 0
        # What the model read is no longer in its context: it must read a file again before
        # changing it (the read-before-write rule then holds for what it actually sees).
        self.runtime.session.files.clear()
        after = self.context_tokens()
        if not manual and after >= self.compaction.threshold * self.client.info.context_window:
            self._compact_failures += 1
        else:
            self._compact_failures = 0
        self._write({"type": "compaction", "messages": [message_to_json(m) for m in self.messages]})
        event = Compacted(
            tokens_before=before,
            tokens_after=after,
            pruned_results=pruned,
            summarized_messages=summarized,
            manual=manual,
        )
        self._write({"type": "event", "event": event.to_json()})
        self._emit(event)
        return event

    async def _ask(self, system: str, text: str) -> str:
        request = ModelRequest(
            model=self.client.model,
            system=system,
            messages=(UserMessage(text=text),),
            locale=self._locale,
        )
        message: AssistantMessage | None = None
        async with contextlib.aclosing(self.client.respond(request)) as items:
            async for item in items:
                if isinstance(item, AssistantMessage):
                    message = item
                elif isinstance(item, ModelRetry):
                    self._emit(item)
        assert message is not None
        self._spend(message.usage)
        return message.text

    # -- approvals ---------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> Approval:
        """Answer one approval question (this agent's or a sub-agent's, labelled)."""
        return await self._approve(request)

    async def _approve(self, request: ApprovalRequest) -> Approval:
        agent = request.agent or self.name
        if self.approver is None and self._upstream is not None:
            return await self._upstream(replace(request, agent=agent))
        asked = ApprovalAsked(
            request=request,
            agent=agent,
            display=self.runtime.display(request.call, status=CallStatus.WAITING),
        )
        self._emit(asked)
        self._write({"type": "event", "event": asked.to_json()})
        if self.approver is not None:
            answer = await self.approver(asked)
            by = "user"
        else:
            rules = " + ".join(f"`{r}`" for r in rules_to_allow(request))
            answer = Approval.deny(
                say(self._locale, "headless_denied", reason=request.reason, rule=rules),
                source=request.source,
            )
            by = "policy"
        answered = ApprovalAnswered(call_id=request.call.id, approval=answer, by=by, agent=agent)
        self._write({"type": "event", "event": answered.to_json()})
        self._emit(answered)
        return answer

    # -- bookkeeping -------------------------------------------------------------------------

    @property
    def _locale(self) -> str:
        return self.runtime.locale

    def _start(self) -> None:
        if self.system is None:
            self._first_start()
        self._open_transcript()

    def _first_start(self) -> None:
        project = project_instructions(self.runtime.cwd, user_dir=user_dir())
        self.notices.extend(project.notices)
        tool = self.runtime.registry.get("agent")
        self.notices.extend(getattr(tool, "problems", ()))
        if self.budget.max_cost_usd is not None and self.client.info.prices is None:
            self.notices.append(
                f"the cost budget cannot be enforced: the prices of {self.client.model!r} are "
                "unknown (set them with ModelClient(prices=...), or use a token budget)"
            )
        self.system = system_prompt(
            self.runtime,
            provider=self.client.provider,
            instructions=self.instructions,
            project=project,
        )
        self._open_transcript()
        for text in self.notices:
            self._emit(Notice(text=text, level="warning"))
            self._write({"type": "event", "event": Notice(text=text, level="warning").to_json()})

    def _open_transcript(self) -> None:
        path = self.transcript_path
        if path is None or self.transcript is not None:
            return
        self.transcript = Transcript(path, append=path.exists())
        if path.stat().st_size == 0:
            self._write(
                {
                    "type": "session",
                    "version": 1,
                    "id": self.session_id,
                    "root": str(self.runtime.root),
                    "cwd": str(self.runtime.cwd),
                    "model": self.client.spec,
                    "base_url": getattr(self.client, "base_url", None),
                    "api_key_env": getattr(self.client, "api_key_env", None),
                    "agent": self.name,
                    "created": now_iso(),
                }
            )

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self._write({"type": "message", "message": message_to_json(message)})

    def _write(self, record: dict[str, Any]) -> None:
        if self.transcript is None or self.transcript.closed:
            return
        try:
            self.transcript.write(record)
        except OSError as exc:  # a full disk must not end the run; say it once, stop writing
            self.transcript.close()
            self._emit(
                Notice(
                    text=f"the transcript {self.transcript.path} could not be written any more "
                    f"({exc.strerror or exc}); this session will not be resumable from here",
                    level="warning",
                )
            )

    def _record_state(self) -> None:
        self._write({"type": "state", "session": session_state(self.runtime.session)})

    def _emit(self, event: Event) -> None:
        if self._emit_fn is None:
            return
        try:
            self._emit_fn(event)
        except Exception:
            logger.exception("an on_event callback raised")

    def clear(self) -> str:
        """Start a new conversation in a new session (its own transcript); returns its id.

        The runtime's session keeps its mode and rules; what the model read is forgotten, so
        a file must be read again before it is changed.
        """
        self._check_idle()
        self._close_transcript()
        self.runtime.session.id = uuid.uuid4().hex
        self.session_id = self.runtime.session.id
        self.runtime.session.files.clear()
        self.messages = []
        self._history.clear()
        self._context_base, self._context_index = 0, 0
        return self.session_id

    def switch_to(self, saved: SavedSession, *, own: bool = True) -> None:
        """Carry on a saved session in place of the current conversation (`/resume`).

        Only the user's own transcript (`own`) brings back its state (mode, files read,
        session rules) and is appended to; one from elsewhere brings only its conversation.
        """
        self._check_idle()
        self._close_transcript()
        if own:
            self.runtime.session.id = saved.id
            self.session_id = saved.id
            self._transcript_path = saved.path
        self.runtime.session.files.clear()
        self._history.clear()
        self.restore(saved.messages, saved.state if own else None)

    def _check_idle(self) -> None:
        if self._task is not None and not self._task.done():
            raise ConfigurationError("this agent is running; wait for the run to end")

    def _close_transcript(self) -> None:
        if self.transcript is not None:
            self.transcript.close()
        self.transcript = None
        self._transcript_path = None

    def restore(self, messages: list[Message], state: dict[str, Any] | None) -> None:
        """Carry on a saved conversation (`load_session`); `state` restores the session too."""
        self.messages = list(messages)
        if state is not None:
            restore_state(self.runtime.session, state)
        self._context_base, self._context_index = 0, 0


def _call_key(call: ToolCall) -> str:
    args = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return f"{call.name}\0{args}"
    try:
        return f"{call.name}\0{json.dumps(args, sort_keys=True, default=str)}"
    except (TypeError, ValueError):
        return f"{call.name}\0{args!r}"


def _fingerprint(result: ToolResult) -> str:
    return f"{result.ok}\0{result.error}\0{result.content}"


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens - b.input_tokens,
        output_tokens=a.output_tokens - b.output_tokens,
        cached_tokens=a.cached_tokens - b.cached_tokens,
        requests=a.requests - b.requests,
    )


def _subtype(value: str) -> RunSubtype:
    return value  # pyright: ignore[reportReturnType]


def user_dir() -> Path:
    """The user's handrail config folder (beside `settings.json`; XDG_CONFIG_HOME respected)."""
    return user_settings_path().parent
