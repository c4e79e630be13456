"""The agent loop: model turn, tool calls through the runtime, results back, until an answer.

A newcomer should be able to read `run` and `_turn` in five minutes. The loop never handles a
tool call itself: every call goes through `Runtime.stream()` (validation, policy, approval,
sandbox, ordered results), starting while the model is still writing; the loop only moves
messages and events between the model client and the runtime. Every call the model made gets
exactly one result before the next request, also when the user interrupts (the running tools
are stopped, the rest are answered as cancelled) and when the loop refuses a repeated call.

What the loop leans on, one job each: `_approvals` (the questions of its calls, observed and
passed on), `_recorder` (the transcript), `_compactor` (keeping the conversation inside the
window), `_repeats` (refusing a call the model keeps repeating) and `_subagents` (the `agent`
tool, which starts children of this same class).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from .._contract import (
    Approver,
    ErrorCode,
    ProgressEvent,
    SamplingRequest,
    SamplingResult,
    ToolCall,
    ToolResult,
)
from ..display import CallProgress
from ..errors import ConfigurationError, HandrailError, ModelError
from ..runtime import Runtime
from ._approvals import labelled, observed
from ._budget import Budget
from ._catalog import ModelInfo
from ._codecs import CallReady, ModelRequest, StreamItem
from ._compaction import CompactionSettings, ContextMeter, estimate_tokens
from ._compactor import Compactor, ContextFull
from ._conversation import (
    AssistantMessage,
    Message,
    ToolResults,
    Usage,
    UserMessage,
    message_to_json,
)
from ._definitions import user_dir
from ._events import (
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
from ._recorder import Recorder
from ._repeats import RepeatGuard
from ._rewind import Rewound, TurnCheckpoint, last_checkpoint, rewind, turn_checkpoints
from ._sessions import PromptMark, SavedSession, restore_state
from ._subagents import offer_agents
from ._text import say

__all__ = ["Agent", "EventFunc", "Model"]

logger = logging.getLogger("handrail")

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


class Agent:
    """Drives a model through a `Runtime` until it answers.

    ```python
    rt = Runtime(Registry(coding_tools()), root=".", mode="accept_edits")
    agent = Agent(ModelClient.from_spec("anthropic:claude-sonnet-4-5"), rt)
    result = await agent.run("Add a test for slugify() and run it.", on_event=print)
    async for event in agent.events("Now make it pass."):   # the same run, as an iterator
        ...
    ```

    The agent keeps its conversation across runs (a chat). Questions its calls raise (their
    approvals, what a tool asks) go to the run's `approver`, else the agent's, else the
    runtime's; each is reported as `ApprovalAsked` / `ApprovalAnswered` events (and recorded).
    With nobody to ask, a call that would ask is denied and the model is told which rule would
    allow it.

    Args:
        model: A `ModelClient` (or anything with its `respond` interface).
        runtime: The tools, policy and sandbox. Unless `agents=False`, the agent adds the
            `agent` sub-agent tool to its registry.
        instructions: Replaces the default role paragraph of the system prompt.
        approver: Answers the questions of this agent's calls and of its sub-agents' (which
            arrive labelled with the sub-agent's name), when a run brings no approver.
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
        depth: How deep this agent is nested (0 for the top). A sub-agent without an approver
            of its own passes its questions, labelled, to its runtime's approver: the parent
            call's, which records them.
    """

    def __init__(
        self,
        model: Model,
        runtime: Runtime,
        *,
        instructions: str | None = None,
        approver: Approver | None = None,
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
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ConfigurationError("max_turns must be at least 1")
        self.client = model
        self.runtime = runtime
        self.instructions = instructions
        self.approver = approver
        self.max_turns = max_turns
        self.name = name
        self.depth = depth
        self.max_depth = max_depth
        # Its own budget (what this agent spent), linked to a parent's, which sees it too.
        self.budget = Budget(max_tokens=max_tokens, max_cost_usd=max_cost_usd, parent=budget)
        self.messages: list[Message] = []
        self.prompts: list[PromptMark] = []
        """Where each of the user's prompts began, oldest first (what `rewind` goes back to)."""
        self.parent_id: str | None = None
        """The session this one was forked from (`fork`)."""
        self.session_id = runtime.session.id
        self.system: str | None = None
        self.notices: list[str] = []
        self.compactor = Compactor(compaction or CompactionSettings())
        self.repeats = RepeatGuard(repeat_limit)
        self.recorder = Recorder(save=save, path=transcript, notice=self.emit)
        self._emit_fn: EventFunc | None = None
        self._run_approver: Approver | None = None
        self._task: asyncio.Task[Any] | None = None
        self._interrupting = False
        self._warming: asyncio.Future[None] | None = None
        self._started: dict[str, tuple[ToolCall, float]] = {}
        self.meter = ContextMeter()
        self._no_tools = False
        if agents and depth < max_depth:
            offer_agents(self)
        self._sampling = asyncio.Lock()
        if runtime.session.sampler is None:  # MCP servers' sampling requests use this model
            runtime.session.sampler = self.sample

    # -- public ------------------------------------------------------------------------------

    @property
    def compaction(self) -> CompactionSettings:
        """When and how the conversation is compacted."""
        return self.compactor.settings

    @property
    def repeat_limit(self) -> int:
        """The same call this many times in a row is refused (0: never)."""
        return self.repeats.limit

    @property
    def transcript_path(self) -> Path | None:
        """Where this agent's transcript is (or will be) written; None when not saved."""
        return self.recorder.path(self.runtime.root, self.session_id)

    @property
    def transcript(self) -> Any:
        """The open transcript (`Transcript`), or None before the first run or when not saved."""
        return self.recorder.transcript

    @property
    def locale(self) -> str:
        """Language of model-facing text (the runtime's)."""
        return self.runtime.locale

    @property
    def window(self) -> int:
        """The model's context window, in tokens."""
        return self.client.info.context_window

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

    async def events(
        self, prompt: str, *, approver: Approver | None = None
    ) -> AsyncIterator[Event]:
        """`run` as an async iterator of its events.

        Closing it early (`break` inside `async with contextlib.aclosing(...)`, or `aclose()`)
        interrupts the run and waits until it has settled every call.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()

        async def runner() -> None:
            try:
                await self.run(prompt, on_event=queue.put_nowait, approver=approver)
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
        approver: Approver | None = None,
    ) -> RunResult:
        """Send `prompt` and run turns until the model answers without calling a tool.

        Never raises for what the model or the tools do: the `RunResult` says how it ended
        (`success`, `error_max_turns`, `error_budget`, `error_model`, `error_context`,
        `interrupted`). Cancelling the calling task stops the run the same way and re-raises.
        `max_turns` overrides the agent's limit for this run; with `allow_tools=False` every
        call the model makes is answered "not run" (when only a final answer is wanted);
        `approver` answers this run's questions in place of the agent's.
        """
        if self._task is not None and not self._task.done():
            raise ConfigurationError("this agent is already running; wait for the run to end")
        self._task = asyncio.current_task()
        self._interrupting = False
        self._emit_fn = on_event
        self._run_approver = approver
        self._no_tools = not allow_tools
        t0 = time.monotonic()
        usage0, cost0 = self.budget.usage, self.budget.cost_usd
        self._start()
        self._warm_checkpoints()
        self._mark_prompt(prompt)
        self._append(UserMessage(text=prompt))
        self.emit(
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
                        UserMessage(text=say(self.locale, "notice", text=notice), kind="notice")
                    )
                if limit is not None and turns >= limit:
                    subtype, error = "error_max_turns", f"stopped after {turns} turns (the limit)"
                    break
                over = self.budget.exceeded()
                if over is not None:
                    subtype, error = "error_budget", over
                    break
                await self.compactor.maybe(self)
                turns += 1
                self.emit(TurnStarted(turn=turns))
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
                self._append(UserMessage(text=say(self.locale, "empty_answer"), kind="nudge"))
        except ContextFull as exc:
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
            self._run_approver = None
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
        self.recorder.state(self.runtime.session)
        self.recorder.write({"type": "result", "result": result.to_json()})
        self.emit(RunFinished(result=result))
        if external is not None:
            raise external
        return result

    def checkpoints(self) -> list[TurnCheckpoint]:
        """The conversation's prompts, oldest first, with what going back to each would undo.

        Each lists the files the session changed from it on (until the next prompt) and the
        checkpoint that holds the files as it found them. The runtime must keep checkpoints
        (`Runtime(checkpoints=True)`; the CLI's does) for files to be listed; the prompts are
        listed either way.
        """
        return turn_checkpoints(self)

    async def rewind(
        self,
        turn: int,
        *,
        code: bool = True,
        conversation: bool = True,
        approver: Approver | None = None,
    ) -> Rewound:
        """Go back to where prompt `turn` (1 for the first) began.

        `code`: put the files back as that prompt found them, shell commands' changes and
        sub-agents' included (`Runtime.restore`; the restore is itself a checkpoint, so it can
        be undone). Files changed outside the session since are overwritten only if the
        approver (this one, else the agent's, else the runtime's) says yes; otherwise nothing
        is done and `Rewound.refused` names them. `conversation`: drop that prompt and every
        message after it (the transcript records it; a resumed session carries on from there).
        `Rewound.prompt` is the prompt's text, for a front end to offer again.
        """
        self._check_idle()
        if conversation:
            self._open_transcript()  # a resumed session records its rewind before any run
        return await rewind(self, turn, code=code, conversation=conversation, approver=approver)

    def fork(self, saved: SavedSession, turn: int | None = None) -> str:
        """Carry on a copy of a saved session as a new one; the saved one is left untouched.

        `turn`: start from where that prompt began (default: the whole conversation). The new
        session (its own id and transcript, `parent` naming the old one) takes the saved
        state (mode, session rules) and a copy of its checkpoints, so `rewind` can put the
        files back to any of its points. Returns the new session's id.
        """
        self._check_idle()
        if turn is not None and not 1 <= turn <= len(saved.prompts):
            raise ConfigurationError(
                f"no prompt {turn} in session {saved.id} (it has {len(saved.prompts)})"
            )
        self.recorder.close(forget=True)
        session = self.runtime.session
        session.id = uuid.uuid4().hex
        self.session_id = session.id
        self.parent_id = saved.id
        if self.runtime.keeps_checkpoints:
            self.runtime.copy_checkpoints(saved.id)
        messages = saved.messages if turn is None else saved.prompts[turn - 1].messages
        prompts = saved.prompts if turn is None else saved.prompts[: turn - 1]
        self.restore(messages, saved.state, prompts=prompts)
        session.files.clear()
        self.repeats.clear()
        self._open_transcript()
        # Each old prompt with the conversation before it, so the fork can rewind to it too.
        for mark in self.prompts:
            self.recorder.write(
                {"type": "compaction", "messages": [message_to_json(m) for m in mark.messages]}
            )
            self.recorder.write({"type": "prompt", "prompt": mark.prompt, "after": mark.after})
        self.recorder.write(
            {"type": "compaction", "messages": [message_to_json(m) for m in self.messages]}
        )
        return self.session_id

    async def compact(self, focus: str | None = None) -> Compacted | None:
        """Summarise the older part of the conversation now (`focus`: what to keep)."""
        return await self.compactor.compact(self, manual=True, focus=focus)

    async def aclose(self) -> None:
        """Close the transcript and the model client's connections."""
        self.recorder.close()
        await self.client.aclose()

    def set_model(self, model: Model) -> Model:
        """Use another model from the next turn on (`/model`); returns the previous one."""
        self._check_idle()
        previous, self.client = self.client, model
        self.meter.forget()
        return previous

    # -- one turn ----------------------------------------------------------------------------

    async def _turn(self, turn: int) -> AssistantMessage:
        request = self._request()
        calls: list[ToolCall] = []
        results: dict[str, ToolResult] = {}
        text: list[str] = []
        message: AssistantMessage | None = None
        failure: BaseException | None = None
        async with (
            self.runtime.stream(approver=self._approver()) as ex,
            asyncio.TaskGroup() as tg,
        ):
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
                ex.cancel(None, say(self.locale, "interrupted"))
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
                        self.emit(item)
            assert message is not None
            self._spend(message.usage)
            if message.stop != "cut":
                return message
            if calls:
                self.emit(
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
            self.emit(
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
        self.emit(ToolCallStarted(call=call, display=self.runtime.display(call)))
        refusal: str | None = None
        repeated = self.repeats.refuse(call, blocked=self._no_tools)
        if self._no_tools:
            refusal = say(self.locale, "no_tools_now")
        elif repeated is not None:
            refusal = say(self.locale, "repeated", name=call.name, count=repeated)
        if refusal is None:
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
                self.emit(
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
        self.emit(ToolCallFinished(result=result, display=display))

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
                    content=say(self.locale, "interrupted"),
                    error=ErrorCode.CANCELLED,
                    summary=f"{call.name}: cancelled",
                    call_id=call.id,
                    tool_name=call.name,
                )
                self._finished(r)
            answered.append(r)
        for call, r in zip(calls, answered, strict=True):
            self.repeats.finished(call.id, r)
        self._append(message)
        if answered:
            self._append(ToolResults(results=tuple(answered)))
        usage = message.usage
        self.meter.measured(usage, len(self.messages) - (1 if answered else 0))
        event = TurnEnded(
            turn=turn, message=message, usage=usage, context_tokens=self.context_tokens()
        )
        self.recorder.write({"type": "event", "event": event.to_json()})
        self.recorder.state(self.runtime.session)
        self.emit(event)
        return message

    # -- requests, usage, context ------------------------------------------------------------

    def _request(self, *, tools: bool = True) -> ModelRequest:
        provider = self.client.provider
        return ModelRequest(
            model=self.client.model,
            system=self.system or "",
            messages=tuple(self.messages),
            tools=self.runtime.tools(provider=provider) if tools else (),
            locale=self.locale,
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
        return self.meter.tokens(self.messages, self._fixed_tokens)

    def _fixed_tokens(self) -> int:
        return estimate_tokens(self.system or "") + sum(
            estimate_tokens(t.description) + estimate_tokens(json.dumps(t.parameters))
            for t in self.runtime.tools(provider=self.client.provider)
        )

    def replace_messages(self, messages: list[Message]) -> None:
        """Carry on with `messages` in place of the conversation (compaction), and record it."""
        self.messages = messages
        self.meter.forget()
        # What the model read is no longer in its context: it must read a file again before
        # changing it (the read-before-write rule then holds for what it actually sees).
        self.runtime.session.files.clear()
        self.recorder.write(
            {"type": "compaction", "messages": [message_to_json(m) for m in self.messages]}
        )

    async def summarize(self, system: str, text: str) -> str:
        """The model's answer to `text` under `system`, without tools (for compaction)."""
        request = ModelRequest(
            model=self.client.model,
            system=system,
            messages=(UserMessage(text=text),),
            locale=self.locale,
        )
        message: AssistantMessage | None = None
        async with contextlib.aclosing(self.client.respond(request)) as items:
            async for item in items:
                if isinstance(item, AssistantMessage):
                    message = item
                elif isinstance(item, ModelRetry):
                    self.emit(item)
        assert message is not None
        self._spend(message.usage)
        return message.text

    async def sample(self, request: SamplingRequest) -> SamplingResult:
        """One completion of `request` by this agent's model, counted in its budget.

        A tool asks through `Session.sampler` (an MCP server's sampling request, once the
        person allowed it). Refused when the budget is spent. One at a time: a burst of
        requests must each see what the previous ones spent.
        """
        async with self._sampling:
            return await self._sample(request)

    async def _sample(self, request: SamplingRequest) -> SamplingResult:
        over = self.budget.exceeded()
        if over is not None:
            raise HandrailError(f"the session's budget is spent ({over})")
        messages: list[Message] = [
            UserMessage(text=m.text)
            if m.role == "user"
            else AssistantMessage(
                text=m.text, provider=self.client.provider, model=self.client.model
            )
            for m in request.messages
        ]
        model_request = ModelRequest(
            model=self.client.model,
            system=request.system,
            messages=tuple(messages),
            max_output_tokens=request.max_tokens,
            locale=self.locale,
        )
        message: AssistantMessage | None = None
        async with contextlib.aclosing(self.client.respond(model_request)) as items:
            async for item in items:
                if isinstance(item, AssistantMessage):
                    message = item
        assert message is not None
        self._spend(message.usage)
        usage = message.usage
        self.emit(
            Notice(
                text=f"{request.requester} used the model: {usage.input_tokens} tokens in, "
                f"{usage.output_tokens} out"
            )
        )
        return SamplingResult(
            text=message.text,
            model=self.client.model,
            stop_reason="maxTokens" if message.stop == "max_tokens" else "endTurn",
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )

    # -- approvals ---------------------------------------------------------------------------

    def _approver(self) -> Approver:
        """What answers this run's questions: its observer, or (a sub-agent's) a label."""
        answerer = self._run_approver or self.approver
        if answerer is None and self.depth > 0 and self.runtime.approver is not None:
            # The parent call's approver is the parent's observer: it records the question.
            return labelled(self.name, self.runtime.approver)
        return observed(
            name=self.name,
            answerer=answerer or self.runtime.approver,
            runtime=self.runtime,
            emit=self.emit,
            record=self.recorder.write,
        )

    # -- bookkeeping -------------------------------------------------------------------------

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
            self.emit(Notice(text=text, level="warning"), record=True)

    def _open_transcript(self) -> None:
        self.recorder.open(
            self.transcript_path,
            lambda: {
                "id": self.session_id,
                "root": str(self.runtime.root),
                "cwd": str(self.runtime.cwd),
                "model": self.client.spec,
                "base_url": getattr(self.client, "base_url", None),
                "api_key_env": getattr(self.client, "api_key_env", None),
                "agent": self.name,
                "parent": self.parent_id,
            },
        )

    def _warm_checkpoints(self) -> None:
        """Record the workspace in a thread while the model thinks.

        The run's first change then waits only for what is left of the walk, if anything.
        """
        runtime = self.runtime
        if not runtime.keeps_checkpoints or (self._warming and not self._warming.done()):
            return
        tracker = runtime.session_checkpoints()
        if tracker.started:
            return
        self._warming = asyncio.ensure_future(asyncio.to_thread(tracker.start))
        self._warming.add_done_callback(_log_failure)

    def _mark_prompt(self, prompt: str) -> None:
        after = last_checkpoint(self)
        self.prompts.append(
            PromptMark(
                turn=len(self.prompts) + 1, prompt=prompt, messages=list(self.messages), after=after
            )
        )
        self.runtime.session.turn = len(self.prompts)
        self.recorder.write({"type": "prompt", "prompt": prompt, "after": after})

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self.recorder.write({"type": "message", "message": message_to_json(message)})

    def emit(self, event: Event, *, record: bool = False) -> None:
        """Hand `event` to the run's listener; `record`: write it to the transcript first."""
        if record:
            self.recorder.write({"type": "event", "event": event.to_json()})
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
        self.recorder.close(forget=True)
        self.runtime.session.id = uuid.uuid4().hex
        self.session_id = self.runtime.session.id
        self.runtime.session.files.clear()
        self.messages = []
        self.prompts = []
        self.repeats.clear()
        self.meter.forget()
        return self.session_id

    def switch_to(self, saved: SavedSession, *, own: bool = True) -> None:
        """Carry on a saved session in place of the current conversation (`/resume`).

        Only the user's own transcript (`own`) brings back its state (mode, files read,
        session rules) and is appended to; one from elsewhere brings only its conversation.
        """
        self._check_idle()
        self.recorder.close(forget=True)
        if own:
            self.runtime.session.id = saved.id
            self.session_id = saved.id
            self.recorder.chosen = saved.path
        self.runtime.session.files.clear()
        self.repeats.clear()
        # Another user's prompts name checkpoints of a record this session does not have:
        # their files are taken as they are now.
        last = last_checkpoint(self)
        prompts = saved.prompts if own else [replace(m, after=last) for m in saved.prompts]
        self.restore(saved.messages, saved.state if own else None, prompts=prompts)

    def _check_idle(self) -> None:
        if self._task is not None and not self._task.done():
            raise ConfigurationError("this agent is running; wait for the run to end")

    def restore(
        self,
        messages: list[Message],
        state: dict[str, Any] | None,
        *,
        prompts: list[PromptMark] | None = None,
    ) -> None:
        """Carry on a saved conversation (`load_session`).

        `state` restores the session too, `prompts` the points `rewind` can go back to.
        """
        self.messages = list(messages)
        self.prompts = list(prompts or [])
        if state is not None:
            restore_state(self.runtime.session, state)
        self.meter.forget()


def _log_failure(future: asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.error("recording the workspace for checkpoints failed", exc_info=future.exception())


def _minus(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens - b.input_tokens,
        output_tokens=a.output_tokens - b.output_tokens,
        cached_tokens=a.cached_tokens - b.cached_tokens,
        requests=a.requests - b.requests,
    )


def _subtype(value: str) -> RunSubtype:
    return value  # pyright: ignore[reportReturnType]
