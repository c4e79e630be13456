"""Per-call dispatch overhead: handrail against peer frameworks, side by side, in one run.

What one timed call covers: a tool call as a model emits it (a name plus a JSON argument
string) goes in, the text the model would read comes out; validation, the tool's own
(trivial) body and result building are all inside. No LLM, no network: every transport is
in-memory. Method and fairness notes follow shared/research/dispatch-baseline.md; the
comments below cite it as "research".

The handrail columns are also measured in the previous release (`--base REV`, default the
commit this work started from), side by side in the same run: `src/` of that commit comes from
`git archive` into a temporary folder and runs in a child process (bench/_previous.py) with the
same adapters and timing code; the parent has it time its blocks in turns with the current
tree's, the order turning every round, so load on the shared machine hits both alike. The table
then shows current / previous per row. If the release cannot be extracted or imported, its
columns say n/a and the notes say why.

Run it through `bash bench/run` (it sets up bench/.venv); `--quick` for a smoke run,
`--pin` to pin to one core as the research did.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.metadata
import inspect
import json
import logging
import os
import platform
import shutil
import statistics
import sys
import time
import traceback
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import _previous  # bench/_previous.py: imported while bench/ is still on sys.path (see below)
from pydantic import BaseModel, ValidationError

# `python bench/dispatch.py` puts bench/ first on sys.path, where bench/mcp.py would shadow the
# real `mcp` package that openai-agents and fastmcp import.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

# ---------------------------------------------------------------------------------------------
# The tools. Plain functions, wrapped by each framework's own decorator or registration. This
# module uses `from __future__ import annotations`, so every framework has to resolve string
# annotations (research: all peers do; handrail must as well).
# ---------------------------------------------------------------------------------------------


class Filters(BaseModel):
    """Search filters."""

    lang: str
    since: date


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: First addend.
        b: Second addend.
    """
    return a + b


def search(query: str, limit: int = 10, filters: Filters | None = None) -> str:
    """Search the index.

    Args:
        query: What to look for.
        limit: Maximum number of hits.
        filters: Optional filters.
    """
    # The result touches `filters.since` as a date, so a framework that left the nested model as
    # a dict (or the date as a string) fails the correctness check instead of looking fast.
    if filters is None:
        return f"{query}|{limit}|-|-"
    return f"{query}|{limit}|{filters.lang}|{filters.since.isoformat()}"


async def aping(n: int) -> int:
    """Echo a number after one event-loop turn.

    Args:
        n: The number to echo.
    """
    await asyncio.sleep(0)
    return n


SLOW_S = 0.05


async def slow(i: int) -> int:
    """Wait 50 ms, then echo (batch and streaming tests only).

    Args:
        i: The number to echo.
    """
    await asyncio.sleep(SLOW_S)
    return i


TOOLS: tuple[Callable[..., Any], ...] = (add, search, aping, slow)


def slow_args(i: int) -> str:
    """The JSON argument string a model would emit for `slow(i)`."""
    return f'{{"i": {i}}}'


# ---------------------------------------------------------------------------------------------
# Cases (rows) and result model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    key: str
    label: str
    tool: str
    args: str
    kind: str  # "valid" | "invalid" | "unknown"
    expect: str = ""  # model-facing text of a valid result


CASES: tuple[Case, ...] = (
    Case("add_valid", "add valid", "add", '{"a": 1, "b": 2}', "valid", "3"),
    Case(
        "search_valid",
        "search valid (nested model)",
        "search",
        '{"query": "rust async", "limit": 5, "filters": {"lang": "en", "since": "2024-01-02"}}',
        "valid",
        "rust async|5|en|2024-01-02",
    ),
    Case("aping_valid", "aping valid (async)", "aping", '{"n": 3}', "valid", "3"),
    Case("add_invalid", 'add invalid (a="x")', "add", '{"a": "x", "b": 2}', "invalid"),
    Case(
        "search_invalid",
        "search invalid (nested date)",
        "search",
        '{"query": "q", "filters": {"lang": "en", "since": "not-a-date"}}',
        "invalid",
    ),
    Case("unknown", "unknown tool", "nope", "{}", "unknown"),
)


@dataclass
class Cell:
    status: str = "ok"  # ok | n/a | skipped | fail | error
    note: str = ""
    median_us: float | None = None
    p99_us: float | None = None
    samples: int = 0
    block_size: int = 0
    text: str = ""  # model-facing text from the correctness call (trimmed)


Cells = dict[str, dict[str, Cell]]  # column -> case key -> cell


CallFn = Callable[[], Awaitable[Any]]
Log = Callable[[str], None]


def log_stderr(msg: str) -> None:
    """Progress goes to stderr; stdout carries the report (or, in the child, the protocol)."""
    print(msg, file=sys.stderr, flush=True)


def log_child(msg: str) -> None:
    """The previous release's child logs to the same stderr: say whose line it is."""
    log_stderr(f"  previous release: {msg.strip()}")


class Timer:
    """Times one cell in steps, so cells of two columns can take turns block by block."""

    async def warm(self) -> float:
        """WARMUP untimed calls; returns ns per call, to size the blocks."""
        raise NotImplementedError

    async def block(self, n: int) -> list[int]:
        """n calls, each timed alone (perf_counter_ns)."""
        raise NotImplementedError


class LocalTimer(Timer):
    """A cell timed in this process (in the child, the previous release's cells)."""

    def __init__(self, fn: CallFn) -> None:
        self.fn = fn

    async def warm(self) -> float:
        fn, pc = self.fn, time.perf_counter_ns
        t0 = pc()
        for _ in range(WARMUP):
            await fn()
        return max(1.0, (pc() - t0) / WARMUP)

    async def block(self, n: int) -> list[int]:
        fn, pc = self.fn, time.perf_counter_ns
        samples: list[int] = []
        append = samples.append
        for _ in range(n):
            t = pc()
            await fn()
            append(pc() - t)
        return samples


class BatchRunner:
    """Times one column's calls to `slow`: one alone, and BATCH_N issued as one batch."""

    async def warm(self) -> None:
        raise NotImplementedError

    async def one(self) -> float:
        """Wall ms of one call."""
        raise NotImplementedError

    async def batch(self) -> float:
        """Wall ms of BATCH_N calls issued at once."""
        raise NotImplementedError


class LocalBatchRunner(BatchRunner):
    """Batch timing in this process; every step bounded, so a hung batch cannot stall the run."""

    def __init__(self, one: CallFn, batch: Callable[[], Awaitable[list[Any]]]) -> None:
        self._one, self._batch = one, batch

    async def warm(self) -> None:
        async with asyncio.timeout(BATCH_TIMEOUT_S):
            await self._one()
            await self._batch()

    async def one(self) -> float:
        async with asyncio.timeout(BATCH_TIMEOUT_S):
            t = time.perf_counter()
            await self._one()
            return (time.perf_counter() - t) * 1000

    async def batch(self) -> float:
        async with asyncio.timeout(BATCH_TIMEOUT_S):
            t = time.perf_counter()
            results = await self._batch()
            ms = (time.perf_counter() - t) * 1000
        if len(results) != BATCH_N:
            raise RuntimeError(f"batch returned {len(results)} results")
        return ms


class Adapter:
    """One column: how a framework is set up and how a case is sent through it."""

    name: str = ""
    dist: str | None = None  # distribution whose version is printed
    is_peer: bool = True
    pairs_with: str = ""  # the column this one is timed in turns with (its current version)
    unavailable: str | None = None  # set when the column cannot run at all
    why: str = ""  # detail for `unavailable`

    @property
    def label(self) -> str:
        """The column's heading in the report."""
        return self.name

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        """Build tools/servers; enter long-lived contexts on `stack`."""

    def make_call(self, case: Case) -> CallFn | str:
        """A zero-argument coroutine function doing one full call, or a reason it is n/a."""
        raise NotImplementedError

    def view(self, result: Any) -> tuple[bool, str]:
        """(is_success, model-facing text) of a result."""
        raise NotImplementedError

    def check(self, case: Case, result: Any, valid_text: str | None) -> str | None:
        """None when the correctness call's result is right, else what is wrong."""
        ok, text = self.view(result)
        if case.kind == "valid":
            if not ok or text != case.expect:
                return f"expected success {case.expect!r}, got ok={ok} {text[:120]!r}"
            return None
        if ok or not text or text == valid_text:
            return f"expected an error result, got ok={ok} {text[:120]!r}"
        return None

    async def prepare(
        self, case: Case, cell: Cell, valid_text: dict[str, str], log: Log
    ) -> Timer | None:
        """Make the untimed correctness call; a Timer for the cell, or None (`cell` says why).

        `valid_text` maps "column:tool" to the text of that tool's valid case: an invalid case
        must give a different text.
        """
        made = self.make_call(case)
        if isinstance(made, str):
            cell.status, cell.note = "n/a", made
            return None
        first = await made()
        _, text = self.view(first)
        cell.text = _trim(text)
        key = f"{self.name}:{case.tool}"
        problem = self.check(case, first, valid_text.get(key))
        if case.kind == "valid":
            valid_text[key] = text
        if problem:
            cell.status, cell.note = "fail", problem
            log(f"  {self.name:<20} {case.key:<15} FAIL: {problem}")
            return None
        return LocalTimer(made)

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        """A coroutine function issuing n `slow` calls as one batch, or a reason it is n/a."""
        return "n/a"

    def make_slow_one(self) -> CallFn | str:
        return "n/a"

    def batch_runner(self) -> BatchRunner | str:
        """What times this column's batch row, or a reason it is n/a."""
        batch, one = self.make_batch(BATCH_N), self.make_slow_one()
        if isinstance(batch, str):
            return batch
        if isinstance(one, str):
            return one
        return LocalBatchRunner(one, batch)


def _trim(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


# ---------------------------------------------------------------------------------------------
# handrail
# ---------------------------------------------------------------------------------------------


class HandrailAdapter(Adapter):
    name = "handrail"
    dist = "handrail"
    is_peer = False

    def __init__(self) -> None:
        self.rt: Any = None
        self.ToolCall: Any = None
        self.ToolResult: Any = None

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        try:
            from handrail import Registry, Runtime, ToolCall, tool
        except Exception as e:  # not installed yet, or mid-edit
            self.unavailable = "SKIPPED (not importable)"
            self.why = f"{type(e).__name__}: {e}"
            return
        import handrail

        # The streaming test skips items that are not ToolResults (e.g. ProgressEvent).
        self.ToolCall, self.ToolResult = ToolCall, getattr(handrail, "ToolResult", None)
        # handrail's default mode asks for approval before non-read-only tools; these are pure
        # functions, so declaring them read-only and concurrency-safe is the honest setup.
        tools = [tool(read_only=True, concurrency_safe=True)(f) for f in TOOLS]
        self.rt = Runtime(Registry(tools))

    def make_call(self, case: Case) -> CallFn | str:
        rt, name, args = self.rt, case.tool, case.args

        async def call() -> Any:
            return await rt.call(name, args)

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        return bool(result.ok), str(result.content)

    def check(self, case: Case, result: Any, valid_text: str | None) -> str | None:
        if case.kind == "valid":
            return super().check(case, result, valid_text)
        want = "INVALID_ARGS" if case.kind == "invalid" else "TOOL_NOT_FOUND"
        if result.ok or str(result.error) != want:
            return f"expected error {want}, got ok={result.ok} error={result.error!r}"
        if case.kind == "invalid" and not result.issues:
            return "INVALID_ARGS without structured issues"
        return None

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        rt, ToolCall = self.rt, self.ToolCall
        calls = [ToolCall(id=str(i), name="slow", arguments=slow_args(i)) for i in range(n)]

        async def batch() -> list[Any]:
            results = list(await rt.call_many(calls))
            bad = [r for r in results if not r.ok]
            if bad:
                raise RuntimeError(f"call_many: {bad[0].error}: {bad[0].content[:200]}")
            return results

        return batch

    def make_slow_one(self) -> CallFn | str:
        rt = self.rt

        async def one() -> Any:
            return await rt.call("slow", '{"i": 0}')

        return one


class HandrailInlineAdapter(HandrailAdapter):
    """handrail with the two sync tools declared `inline=True`.

    By default handrail runs a sync tool on a worker thread so it can never block the event
    loop, which costs a thread hop, as it does for every peer. `inline=True` is the documented
    opt-in for quick, CPU-only functions: the tool runs on the loop thread. Reported as its own
    column so the default and the opt-in are both visible. Async rows are identical by design.
    """

    name = "handrail_inline"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        await super().setup(stack)
        if self.unavailable:
            return
        from handrail import Registry, Runtime, tool

        tools = [
            tool(read_only=True, concurrency_safe=True, inline=not asyncio.iscoroutinefunction(f))(
                f
            )
            for f in TOOLS
        ]
        self.rt = Runtime(Registry(tools))

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        return "n/a (same as handrail)"

    def make_slow_one(self) -> CallFn | str:
        return "n/a (same as handrail)"


# ---------------------------------------------------------------------------------------------
# openai-agents
# ---------------------------------------------------------------------------------------------


class OpenAIAgentsAdapter(Adapter):
    """`ToolContext(...)` + `await FunctionTool.on_invoke_tool(ctx, json_str)`.

    Research: `on_invoke_tool` is a public field documented as taking "the arguments from the
    LLM, as a JSON string". It includes json.loads, the args model, a sync tool's hop through
    `asyncio.to_thread` (the framework default) and the default failure handler. Tool lookup by
    name happens in the Runner, so the unknown-tool row is n/a here.
    """

    name = "openai_agents"
    dist = "openai-agents"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        from agents import function_tool, set_tracing_disabled
        from agents.tool_context import ToolContext

        # Left on, tracing tries to export spans to OpenAI (research).
        set_tracing_disabled(True)
        self.ToolContext = ToolContext
        self.tools = {f.__name__: function_tool(f) for f in TOOLS}

    def make_call(self, case: Case) -> CallFn | str:
        if case.kind == "unknown":
            return "n/a (lookup is in Runner)"
        ft, ToolContext, name, args = self.tools[case.tool], self.ToolContext, case.tool, case.args

        async def call() -> Any:
            ctx = ToolContext(
                context=None, tool_name=name, tool_call_id="call_1", tool_arguments=args
            )
            return await ft.on_invoke_tool(ctx, args)

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        # Returns the raw value, or the failure handler's string on error.
        text = str(result)
        return not text.startswith("An error occurred"), text

    def _slow(self) -> CallFn:
        ft, ToolContext = self.tools["slow"], self.ToolContext

        async def one(i: int = 0) -> Any:
            a = slow_args(i)
            return await ft.on_invoke_tool(
                ToolContext(context=None, tool_name="slow", tool_call_id=f"c{i}", tool_arguments=a),
                a,
            )

        return one

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        one = self._slow()

        async def batch() -> list[Any]:
            return list(await asyncio.gather(*(one(i) for i in range(n))))

        return batch

    def make_slow_one(self) -> CallFn | str:
        return self._slow()


# ---------------------------------------------------------------------------------------------
# pydantic-ai
# ---------------------------------------------------------------------------------------------


class PydanticAIAdapter(Adapter):
    """`ToolManager.handle_call(ToolCallPart)` -> ToolReturnPart, as the agent graph does it.

    Research: the ToolManager (public module `pydantic_ai.tool_manager`) is built from
    `FunctionToolset(max_retries=1)` with no root capability, so the Agent's hooks, events and
    instrumentation are not included. The two return-part helpers are internal
    (`_tool_execution`) but are exactly what the agent graph calls. A sync tool runs in anyio's
    thread executor (framework default). Retry counts only advance between run steps, so
    repeated invalid calls in one step keep returning retry parts.
    """

    name = "pydantic_ai"
    dist = "pydantic-ai-slim"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        from pydantic_ai import RunContext
        from pydantic_ai._tool_execution import build_tool_return_part, tool_bound_retry_part
        from pydantic_ai.exceptions import ToolRetryError
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage

        ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        self.tm = await ToolManager(
            toolset=FunctionToolset(list(TOOLS), max_retries=1)
        ).for_run_step(ctx)
        self.ToolCallPart = ToolCallPart
        self.build_tool_return_part = build_tool_return_part
        self.tool_bound_retry_part = tool_bound_retry_part
        self.ToolRetryError = ToolRetryError

    def _caller(self) -> Callable[[str, str, str], Awaitable[Any]]:
        tm, ToolCallPart = self.tm, self.ToolCallPart
        build, retry_part, ToolRetryError = (
            self.build_tool_return_part,
            self.tool_bound_retry_part,
            self.ToolRetryError,
        )

        async def call(name: str, args: str, call_id: str) -> Any:
            part = ToolCallPart(tool_name=name, args=args, tool_call_id=call_id)
            try:
                result = await tm.handle_call(part)
            except ToolRetryError as e:
                return retry_part(e)
            tool_def = tm.get_tool_def(name)
            return build(result, call=part, tool_kind=tool_def.tool_kind if tool_def else None)[0]

        return call

    def make_call(self, case: Case) -> CallFn | str:
        inner, name, args = self._caller(), case.tool, case.args

        async def call() -> Any:
            return await inner(name, args, "call_1")

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        # model_response_str() is the provider rendering; it is only used for the check, untimed.
        return result.outcome == "success", result.model_response_str()

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        inner = self._caller()

        async def batch() -> list[Any]:
            return list(
                await asyncio.gather(*(inner("slow", slow_args(i), f"c{i}") for i in range(n)))
            )

        return batch

    def make_slow_one(self) -> CallFn | str:
        inner = self._caller()

        async def one() -> Any:
            return await inner("slow", '{"i": 0}', "c0")

        return one


# ---------------------------------------------------------------------------------------------
# langchain-core
# ---------------------------------------------------------------------------------------------


class LangchainAdapter(Adapter):
    """`json.loads` + `await StructuredTool.ainvoke({"type": "tool_call", ...})` -> ToolMessage.

    Research: langchain takes a dict, so the timed call pays the json.loads a provider adapter
    would do. Tools use `handle_validation_error=True` (the default raises ValidationError out
    of `invoke`). A sync tool goes through `run_in_executor` in ainvoke (framework default).
    langchain-core has no name-based dispatch (that is langgraph's ToolNode): unknown is n/a.
    """

    name = "langchain_ainvoke"
    dist = "langchain-core"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        from langchain_core.tools import StructuredTool

        tools: dict[str, Any] = {}
        for f in TOOLS:
            if asyncio.iscoroutinefunction(f):
                t = StructuredTool.from_function(coroutine=f, handle_validation_error=True)
            else:
                t = StructuredTool.from_function(func=f, handle_validation_error=True)
            tools[f.__name__] = t
        self.tools = tools

    def make_call(self, case: Case) -> CallFn | str:
        if case.kind == "unknown":
            return "n/a (no name dispatch)"
        t, name, args = self.tools[case.tool], case.tool, case.args

        async def call() -> Any:
            return await t.ainvoke(
                {"type": "tool_call", "id": "call_1", "name": name, "args": json.loads(args)}
            )

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        return result.status != "error", str(result.content)

    def _slow(self) -> Callable[[int], Awaitable[Any]]:
        t = self.tools["slow"]

        async def one(i: int = 0) -> Any:
            return await t.ainvoke(
                {
                    "type": "tool_call",
                    "id": f"c{i}",
                    "name": "slow",
                    "args": json.loads(slow_args(i)),
                }
            )

        return one

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        one = self._slow()

        async def batch() -> list[Any]:
            return list(await asyncio.gather(*(one(i) for i in range(n))))

        return batch

    def make_slow_one(self) -> CallFn | str:
        return self._slow()


# ---------------------------------------------------------------------------------------------
# fastmcp
# ---------------------------------------------------------------------------------------------


class FastMCPAdapter(Adapter):
    """`json.loads` + `await Client(FastMCP).call_tool_mcp(name, args)` -> CallToolResult.

    Research ("fastmcp_raw"): the narrowest fastmcp call yielding what goes to the model
    (content text + is_error). In-memory transport: a full MCP JSON-RPC round-trip over anyio
    memory streams, server middleware, validation, a sync tool in the threadpool (default
    `run_in_thread=True`). No socket is opened.
    """

    name = "fastmcp"
    dist = "fastmcp"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        from fastmcp import Client, FastMCP

        server = FastMCP("bench")
        for f in TOOLS:
            server.tool(f)
        self.client = await stack.enter_async_context(Client(server))

    def make_call(self, case: Case) -> CallFn | str:
        client, name, args = self.client, case.tool, case.args

        async def call() -> Any:
            return await client.call_tool_mcp(name, json.loads(args))

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        texts = [getattr(c, "text", "") for c in result.content]
        return not result.is_error, "\n".join(texts)

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        client = self.client

        async def batch() -> list[Any]:
            return list(
                await asyncio.gather(
                    *(client.call_tool_mcp("slow", json.loads(slow_args(i))) for i in range(n))
                )
            )

        return batch

    def make_slow_one(self) -> CallFn | str:
        client = self.client

        async def one() -> Any:
            return await client.call_tool_mcp("slow", json.loads('{"i": 0}'))

        return one


# ---------------------------------------------------------------------------------------------
# floor: the minimum a validating dispatcher needs (reference, not a framework)
# ---------------------------------------------------------------------------------------------


class FloorPydanticAdapter(Adapter):
    """`Model.model_validate_json(s)` + direct call (+ await); invalid -> `e.errors()` as issues.

    Research: roughly the lower bound for handrail. The argument models are built once from the
    signatures (with `Filters` resolved), the lookup is a dict get.
    """

    name = "floor_pydantic"
    dist = "pydantic"
    is_peer = False

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        from pydantic import ConfigDict, create_model

        entries: dict[str, tuple[type[BaseModel], Callable[..., Any], bool]] = {}
        for f in TOOLS:
            hints = typing.get_type_hints(f)
            sig = inspect.signature(f)
            fields: dict[str, Any] = {
                p.name: (hints[p.name], ... if p.default is inspect.Parameter.empty else p.default)
                for p in sig.parameters.values()
            }
            model = create_model(
                f"{f.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields
            )
            entries[f.__name__] = (model, f, asyncio.iscoroutinefunction(f))
        self.entries = entries

    def make_call(self, case: Case) -> CallFn | str:
        entries, name, args = self.entries, case.tool, case.args

        async def call() -> Any:
            entry = entries.get(name)
            if entry is None:
                return {"ok": False, "error_code": "tool_not_found", "name": name}
            model, fn, is_async = entry
            try:
                m = model.model_validate_json(args)
            except ValidationError as e:
                issues = e.errors(include_url=False)
                return {"ok": False, "error_code": "invalid_arguments", "issues": issues}
            kw = {k: getattr(m, k) for k in type(m).model_fields}
            out = (await fn(**kw)) if is_async else fn(**kw)
            return {"ok": True, "content": str(out)}

        return call

    def view(self, result: Any) -> tuple[bool, str]:
        if result["ok"]:
            return True, result["content"]
        return False, json.dumps(result, default=str)

    def make_batch(self, n: int) -> Callable[[], Awaitable[list[Any]]] | str:
        async def batch() -> list[Any]:
            return list(await asyncio.gather(*(slow(i) for i in range(n))))

        return batch

    def make_slow_one(self) -> CallFn | str:
        async def one() -> Any:
            return await slow(0)

        return one


ADAPTERS: tuple[type[Adapter], ...] = (
    HandrailAdapter,
    HandrailInlineAdapter,
    OpenAIAgentsAdapter,
    PydanticAIAdapter,
    LangchainAdapter,
    FastMCPAdapter,
    FloorPydanticAdapter,
)

# ---------------------------------------------------------------------------------------------
# handrail, previous release (`--base`): the same handrail columns, in a child process
# ---------------------------------------------------------------------------------------------

CASES_BY_KEY = {case.key: case for case in CASES}
PREVIOUS_OF = ("handrail", "handrail_inline")  # the columns also measured in the previous release


class ChildTimer(Timer):
    """A cell of the previous release: each step is one request to the child."""

    def __init__(self, release: _previous.PreviousRelease, column: str, case: str) -> None:
        self.release, self.where = release, {"column": column, "case": case}

    async def warm(self) -> float:
        return float(self.release.request("warm", **self.where))

    async def block(self, n: int) -> list[int]:
        return list(self.release.request("block", n=n, **self.where))


class ChildBatchRunner(BatchRunner):
    """The previous release's batch row: each step is one request to the child."""

    def __init__(self, release: _previous.PreviousRelease, column: str) -> None:
        self.release, self.column = release, column

    async def warm(self) -> None:
        self.release.request("batch_warm", column=self.column)

    async def one(self) -> float:
        return float(self.release.request("batch_one", column=self.column))

    async def batch(self) -> float:
        return float(self.release.request("batch_many", column=self.column))


class PreviousAdapter(Adapter):
    """A handrail column (`pairs_with`) measured in the previous release, in a child process.

    The child runs this same file with the release's `src/` first on PYTHONPATH and the same
    adapter classes (served by `PreviousServer`), so both versions take the same path through
    the same code; only the handrail underneath differs. Its cells are timed in turns with the
    current column's (`time_group`). Requests block this process while the child works:
    nothing here has to run meanwhile, and an idle parent disturbs the child's timing least.
    """

    is_peer = False

    def __init__(self, of: str, release: _previous.PreviousRelease) -> None:
        self.name, self.pairs_with, self.release = f"{of}_prev", of, release

    @property
    def label(self) -> str:
        return f"{self.pairs_with} (previous release)"

    async def setup(self, stack: contextlib.AsyncExitStack) -> None:
        self.unavailable, self.why = self._start()

    def _start(self) -> tuple[str | None, str]:
        """Start the shared child (once); (None, "") if this column can run, else why not."""
        release = self.release
        release.start([sys.executable, os.path.abspath(__file__), "--previous-child"], "setup")
        if release.reason:
            short = "cannot extract" if release.reason.startswith("git") else "not importable"
            return f"n/a ({short})", release.reason
        column = release.info["columns"][self.pairs_with]
        if column["unavailable"]:
            why = column["why"] or column["unavailable"]
            return "n/a (not importable)", why
        imported = Path(release.info["file"] or "/").resolve()
        if release.tmp is None or not imported.is_relative_to(release.tmp.resolve()):
            return "n/a (wrong handrail)", f"the child imported {imported}, not {release.commit}"
        return None, ""

    async def prepare(
        self, case: Case, cell: Cell, valid_text: dict[str, str], log: Log
    ) -> Timer | None:
        got = self.release.request("check", column=self.pairs_with, case=case.key)
        cell.status, cell.note, cell.text = got["status"], got["note"], got["text"]
        return ChildTimer(self.release, self.pairs_with, case.key) if got["timed"] else None

    def batch_runner(self) -> BatchRunner | str:
        reason = self.release.request("batch_setup", column=self.pairs_with)
        return reason or ChildBatchRunner(self.release, self.pairs_with)

    def stream(self) -> dict[str, Any]:
        """The streaming test, run in the child (only for the default `handrail` column)."""
        if self.unavailable:
            return {"status": "n/a", "note": self.unavailable}
        try:
            return dict(self.release.request("stream"))
        except _previous.ChildError as e:
            return {"status": "error", "note": _trim(str(e), 200)}


class PreviousServer:
    """The child side of the previous-release columns: one step per request from the parent.

    Holds the handrail adapters built on the release's handrail and what the parent set up
    through them (a cell's call after its correctness check, a batch row), keyed by column.
    """

    def __init__(self) -> None:
        self.stack = contextlib.AsyncExitStack()
        self.columns: dict[str, Adapter] = {}
        self.valid_text: dict[str, str] = {}
        self.timers: dict[tuple[str, str], Timer] = {}
        self.batches: dict[str, BatchRunner] = {}

    def handlers(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        return {
            "setup": self.setup,
            "check": self.check,
            "warm": self.warm,
            "block": self.block,
            "batch_setup": self.batch_setup,
            "batch_warm": self.batch_warm,
            "batch_one": self.batch_one,
            "batch_many": self.batch_many,
            "stream": self.stream,
        }

    async def setup(self) -> dict[str, Any]:
        """Build the columns; say which handrail was imported, so the parent can check it."""
        for cls in (HandrailAdapter, HandrailInlineAdapter):
            a = cls()
            await a.setup(self.stack)
            self.columns[a.name] = a
        handrail = sys.modules.get("handrail")
        return {
            "file": getattr(handrail, "__file__", None),
            "version": getattr(handrail, "__version__", None),
            "columns": {
                name: {"unavailable": a.unavailable, "why": a.why}
                for name, a in self.columns.items()
            },
        }

    async def check(self, column: str, case: str) -> dict[str, Any]:
        cell = Cell()
        timer = await self.columns[column].prepare(
            CASES_BY_KEY[case], cell, self.valid_text, log_child
        )
        if timer is not None:
            self.timers[column, case] = timer
        return {"status": cell.status, "note": cell.note, "text": cell.text, "timed": bool(timer)}

    async def warm(self, column: str, case: str) -> float:
        per_call_ns = await self.timers[column, case].warm()
        gc.collect()  # as the parent does before its own blocks
        return per_call_ns

    async def block(self, column: str, case: str, n: int) -> list[int]:
        return await self.timers[column, case].block(n)

    async def batch_setup(self, column: str) -> str:
        runner = self.columns[column].batch_runner()
        if isinstance(runner, str):
            return runner
        self.batches[column] = runner
        return ""

    async def batch_warm(self, column: str) -> None:
        await self.batches[column].warm()

    async def batch_one(self, column: str) -> float:
        return await self.batches[column].one()

    async def batch_many(self, column: str) -> float:
        return await self.batches[column].batch()

    async def stream(self) -> dict[str, Any]:
        return await run_stream(self.columns["handrail"], log_child)


def build_columns(only: list[str] | None, release: _previous.PreviousRelease) -> list[Adapter]:
    """The columns in table order, each handrail column followed by its previous release."""
    columns: list[Adapter] = []
    for cls in ADAPTERS:
        a = cls()
        if only and a.name not in only and not a.name.startswith("handrail"):
            continue
        columns.append(a)
        if a.name in PREVIOUS_OF:
            columns.append(PreviousAdapter(a.name, release))
    return columns


def column_groups(adapters: list[Adapter]) -> list[list[Adapter]]:
    """Columns timed together, in turns: a handrail column with its previous release."""
    groups: dict[str, list[Adapter]] = {}
    for a in adapters:
        groups.setdefault(a.pairs_with or a.name, []).append(a)
    return list(groups.values())


def rotated(items: list[str], turn: int) -> list[str]:
    """`items` starting at `turn`: over the rounds every column goes first as often."""
    k = turn % len(items) if items else 0
    return items[k:] + items[:k]


# ---------------------------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------------------------

WARMUP = 200
BLOCKS = 7
MAX_BLOCK_CALLS = 200_000  # bound per block, whatever the calibration says
MIN_BLOCK_CALLS = 20
OVERRUN = 4  # a cell stops early once its timed blocks take OVERRUN x the planned time


QUIETED_LOGGERS = (
    "fastmcp",
    "mcp",
    "openai",
    "openai.agents",
    "pydantic_ai",
    "langchain_core",
    "httpx",
)


def quiet_loggers() -> None:
    """Replace framework log sinks with NullHandler (research: levels stay at their defaults, so
    records are still created and paid for, but terminal output is not timed). fastmcp logs a
    WARNING per invalid call and mcp an INFO, through rich console handlers; openai-agents' narrow
    path logs "No active span" to stderr via `logging.lastResort`."""
    for name in QUIETED_LOGGERS:
        lg = logging.getLogger(name)
        for h in list(lg.handlers):
            lg.removeHandler(h)
        lg.addHandler(logging.NullHandler())
        lg.propagate = False


def pct(sorted_samples: list[int], q: float) -> int:
    """Nearest-rank percentile of sorted samples."""
    idx = min(len(sorted_samples) - 1, max(0, round(q * len(sorted_samples)) - 1))
    return sorted_samples[idx]


def _error(cell: Cell | BatchResult, what: str, e: Exception, log: Log) -> None:
    """Mark a cell or batch row as errored (the rest of the run goes on) and say so."""
    cell.status, cell.note = "error", f"{type(e).__name__}: {_trim(str(e), 200)}"
    log(f"  {what} ERROR: {cell.note}")


def block_size(per_call_ns: float, block_s: float) -> int:
    """Calls per block for about `block_s` a block, within bounds."""
    return int(min(MAX_BLOCK_CALLS, max(MIN_BLOCK_CALLS, block_s * 1e9 / per_call_ns)))


async def prepare_cell(
    a: Adapter, case: Case, cell: Cell, valid_text: dict[str, str], log: Log
) -> Timer | None:
    """The cell's Timer after its correctness call, or None with the reason in `cell`."""
    if a.unavailable:
        cell.status, cell.note = "skipped", a.unavailable
        return None
    try:
        return await a.prepare(case, cell, valid_text, log)
    except Exception as e:
        _error(cell, f"{a.name:<20} {case.key:<15}", e, log)
        return None


async def time_group(
    timers: dict[str, Timer], cells: dict[str, Cell], case: Case, block_s: float, log: Log
) -> None:
    """Time the cells of one row for columns timed together, filling `cells`.

    Each column warms up and sizes its blocks to about `block_s`; then BLOCKS rounds of one
    block per column, the order turning every round, so a burst of load on the machine hits
    every column alike and none always runs first (or right after the other). A column alone
    (every peer) is timed exactly as before: warm-up, then its BLOCKS blocks.
    """
    live, sizes = dict(timers), {}
    for name, timer in timers.items():
        try:
            sizes[name] = block_size(await timer.warm(), block_s)
        except Exception as e:
            _error(cells[name], f"{name:<20} {case.key:<15}", e, log)
            del live[name]
    gc.collect()  # research: GC stays on, collect before each case's timed blocks
    samples: dict[str, list[int]] = {name: [] for name in live}
    pc = time.perf_counter_ns
    deadline = pc() + int(OVERRUN * BLOCKS * block_s * 1e9) * max(1, len(live))
    for turn in range(BLOCKS):
        for name in rotated(list(live), turn):
            try:
                samples[name].extend(await live[name].block(sizes[name]))
            except Exception as e:
                _error(cells[name], f"{name:<20} {case.key:<15}", e, log)
                del live[name]
        if pc() > deadline:  # calls got much slower than calibrated: keep the run bounded
            break
    for name in live:
        cell, got = cells[name], sorted(samples[name])
        cell.median_us = statistics.median(got) / 1000
        cell.p99_us = pct(got, 0.99) / 1000
        cell.samples, cell.block_size = len(got), sizes[name]
        log(
            f"  {name:<20} {case.key:<15} {cell.median_us:9.1f} / {cell.p99_us:9.1f} µs"
            f"  (n={len(got)})"
        )


async def run_cells(adapters: list[Adapter], block_s: float, log: Log) -> Cells:
    """Every (case, column) cell: correctness call, then timing.

    A handrail column and its previous release are timed together (`time_group`): comparing
    the two is what the run is for, and taking turns is what makes it fair on a noisy machine.
    """
    cells: Cells = {a.name: {} for a in adapters}
    valid_text: dict[str, str] = {}  # "column:tool" -> text of that tool's valid case
    groups = column_groups(adapters)
    for case in CASES:
        for group in groups:
            timers: dict[str, Timer] = {}
            for a in group:
                cell = cells[a.name][case.key] = Cell()
                timer = await prepare_cell(a, case, cell, valid_text, log)
                if timer is not None:
                    timers[a.name] = timer
            if timers:
                await time_group(timers, cells_of(cells, timers, case), case, block_s, log)
    return cells


def cells_of(cells: Cells, columns: dict[str, Any], case: Case) -> dict[str, Cell]:
    return {name: cells[name][case.key] for name in columns}


@dataclass
class BatchResult:
    status: str = "ok"
    note: str = ""
    single_ms: float | None = None
    batch_ms: float | None = None
    ratio: float | None = None
    runs: list[float] = field(default_factory=list)


BATCH_N = 10
BATCH_RUNS = 5
BATCH_TIMEOUT_S = 30


def batch_runner(a: Adapter, res: BatchResult, log: Log) -> BatchRunner | None:
    """The column's BatchRunner, or None with the reason in `res`."""
    if a.unavailable:
        res.status, res.note = "skipped", a.unavailable
        return None
    try:
        runner = a.batch_runner()
    except Exception as e:
        _error(res, f"batch {a.name:<20}", e, log)
        return None
    if isinstance(runner, str):
        res.status, res.note = "n/a", runner
        return None
    return runner


async def batch_turns(
    runners: dict[str, BatchRunner], step: str, rounds: int, out: dict[str, BatchResult], log: Log
) -> dict[str, list[float]]:
    """`rounds` rounds of `step` ("warm", "one" or "batch") for every runner, in turns.

    The order turns every round, as in `time_group`. A runner that fails is marked and dropped.
    """
    got: dict[str, list[float]] = {name: [] for name in runners}
    for turn in range(rounds):
        for name in rotated(list(runners), turn):
            try:
                got[name].append(await getattr(runners[name], step)())
            except Exception as e:
                _error(out[name], f"batch {name:<20}", e, log)
                del runners[name]
    return got


async def run_batches(adapters: list[Adapter], log: Log) -> dict[str, BatchResult]:
    """10 x `slow` (50 ms) as one batch vs one call, wall time, median of BATCH_RUNS runs.

    Columns timed together (a handrail column and its previous release) take turns run by run.
    """
    out = {a.name: BatchResult() for a in adapters}
    for group in column_groups(adapters):
        runners = {a.name: r for a in group if (r := batch_runner(a, out[a.name], log))}
        await batch_turns(runners, "warm", 1, out, log)
        singles = await batch_turns(runners, "one", BATCH_RUNS, out, log)
        batches = await batch_turns(runners, "batch", BATCH_RUNS, out, log)
        for name in runners:
            res = out[name]
            res.single_ms = statistics.median(singles[name])
            res.batch_ms = statistics.median(batches[name])
            res.ratio = res.batch_ms / res.single_ms
            res.runs = [round(x, 2) for x in batches[name]]
            log(
                f"  batch {name:<20} one {res.single_ms:6.1f} ms, "
                f"10 {res.batch_ms:6.1f} ms, {res.ratio:.2f}x"
            )
    return out


STREAM_AT_S = (0.6, 1.2, 1.8, 2.4, 3.0)


async def run_stream(h: Adapter, log: Log) -> dict[str, Any]:
    """A simulated model emits 5 calls to the 50 ms tool over 3 s; results stream back in order.

    Ideal wall time = time of the last submit (3.0 s) + one tool run (50 ms).
    """
    if h.unavailable:
        return {"status": "skipped", "note": h.unavailable}
    rt = h.rt
    if not hasattr(rt, "stream"):
        return {"status": "skipped", "note": "SKIPPED (Runtime.stream not available yet)"}
    ToolCall, ToolResult = h.ToolCall, h.ToolResult
    ideal = STREAM_AT_S[-1] + SLOW_S
    submitted: dict[str, float] = {}
    received: list[tuple[str, float, bool]] = []
    try:
        async with asyncio.timeout(ideal + 10):
            t0 = time.perf_counter()
            async with rt.stream() as ex:

                async def model() -> None:
                    for k, at in enumerate(STREAM_AT_S):
                        await asyncio.sleep(max(0.0, t0 + at - time.perf_counter()))
                        cid = f"s{k}"
                        submitted[cid] = time.perf_counter() - t0
                        ex.submit(ToolCall(id=cid, name="slow", arguments=slow_args(k)))
                    ex.close()

                producer = asyncio.create_task(model())
                try:
                    async for item in ex:
                        is_result = (
                            isinstance(item, ToolResult) if ToolResult else hasattr(item, "ok")
                        )
                        if not is_result:
                            continue  # ProgressEvent and the like
                        received.append((item.call_id, time.perf_counter() - t0, bool(item.ok)))
                finally:
                    if not producer.done():
                        producer.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await producer
            total = time.perf_counter() - t0
    except Exception as e:
        log(f"  stream ERROR: {type(e).__name__}: {e}")
        return {"status": "error", "note": f"{type(e).__name__}: {_trim(str(e), 200)}"}
    ids = [r[0] for r in received]
    expected_ids = [f"s{k}" for k in range(len(STREAM_AT_S))]
    problems = []
    if ids != expected_ids:
        problems.append(f"results {ids} != {expected_ids} (request order)")
    if not all(r[2] for r in received):
        problems.append("a streamed call failed")
    overhead = (total - ideal) / ideal * 100
    per_call = []
    for cid, at, _ in received:
        sent = submitted.get(cid, float("nan"))
        per_call.append(
            {
                "id": cid,
                "submitted_s": round(sent, 4),
                "result_s": round(at, 4),
                "latency_ms": round((at - sent) * 1000, 2),
            }
        )
    log(f"  stream total {total:.3f} s vs ideal {ideal:.3f} s: {overhead:+.2f}%")
    return {
        "status": "fail" if problems else "ok",
        "note": "; ".join(problems),
        "total_s": round(total, 4),
        "ideal_s": ideal,
        "overhead_pct": round(overhead, 2),
        "calls": per_call,
    }


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

TARGET_VS_PEER = 0.5
TARGET_BATCH = 1.3
TARGET_STREAM_PCT = 5.0


def version_of(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        mod = sys.modules.get(dist.replace("-", "_"))  # importable without metadata (PYTHONPATH)
        return f"{getattr(mod, '__version__', '?')} (no dist metadata)" if mod else "not installed"


def machine_info(pinned: bool) -> dict[str, Any]:
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:
        affinity = []
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "affinity": affinity,
        "pinned": pinned,
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "event_loop": type(asyncio.get_running_loop()).__module__,
        "gc": gc.isenabled(),
    }


def fmt_cell(c: Cell) -> str:
    if c.status == "ok" and c.median_us is not None and c.p99_us is not None:
        return f"**{c.median_us:.1f}** / {c.p99_us:.0f}"
    if c.status in ("n/a", "skipped"):
        return c.note
    return c.status.upper()


def ratio_cell(
    case: Case, cells: Cells, adapters: list[Adapter], column: str = "handrail"
) -> tuple[str, float | None, str | None]:
    """A ratio column: a handrail column's median / fastest peer median (floor excluded)."""
    h = cells.get(column, {}).get(case.key)
    peers = [
        (a.name, cells[a.name][case.key].median_us)
        for a in adapters
        if a.is_peer and cells[a.name][case.key].status == "ok"
    ]
    peers = [(n, m) for n, m in peers if m is not None]
    if not peers:
        return "n/a (no peer)", None, None
    best_name, best = min(peers, key=lambda p: p[1])
    if h is None or h.status != "ok" or h.median_us is None:
        return f"– (fastest peer: {best_name} {best:.1f})", None, best_name
    r = h.median_us / best
    mark = "✓" if r <= TARGET_VS_PEER else "✗"
    return f"{r:.2f}x vs {best_name} {mark}", r, best_name


def previous_ratio_cell(case: Case, cells: Cells, column: str) -> tuple[str, float | None]:
    """A handrail column's median ÷ its previous release's, same row: below 1 is faster now."""
    now, before = cells[column][case.key], cells[f"{column}_prev"][case.key]
    if before.status != "ok" or before.median_us is None:
        if before.note.startswith("n/a"):  # the release could not run: the cell says why
            return before.note, None
        return f"n/a (previous: {before.status.upper()})", None
    if now.status != "ok" or now.median_us is None:
        return f"n/a ({now.status.upper()})", None
    r = now.median_us / before.median_us
    return f"{r:.2f}x", r


def previous_summary(meta: dict[str, Any], ratios: dict[str, Any], paired: list[str]) -> str:
    """How to read the vs-previous columns, and their geometric mean over the rows."""
    prev = meta["previous"]
    if prev["reason"]:
        return f"vs previous release: n/a, `--base {prev['rev']}` did not run: {prev['reason']}"
    means = []
    for column in paired:
        got = [r[f"{column}_vs_previous"] for r in ratios.values()]
        got = [x for x in got if x is not None]
        if got:
            means.append(f"{column} {statistics.geometric_mean(got):.2f}x over {len(got)} rows")
    summary = "; geometric mean: " + ", ".join(means) if means else ""
    return (
        f"vs previous release = median ÷ the same column's median in {prev['commit']} "
        f"(`--base {prev['rev']}`), measured in this run in turns with it; "
        f"below 1 is faster now{summary}."
    )


def stream_lines(label: str, stream: dict[str, Any]) -> list[str]:
    """The streaming result of one column, as report lines."""
    if stream.get("status") == "ok" or "total_s" in stream:
        met = stream["overhead_pct"] <= TARGET_STREAM_PCT and stream["status"] == "ok"
        lat = ", ".join(f"{c['latency_ms']:.1f}" for c in stream["calls"])
        lines = [
            f"{label} `rt.stream()`: total {stream['total_s']:.3f} s vs ideal "
            f"{stream['ideal_s']:.3f} s (last submit + 50 ms): **{stream['overhead_pct']:+.2f}%** "
            f"{'✓' if met else '✗'} (target within {TARGET_STREAM_PCT:.0f}%)",
            f"per-call latency submit→result, ms: {lat}",
        ]
        if stream.get("note"):
            lines.append(f"FAIL: {stream['note']}")
        return lines
    note = stream.get("note", "")
    status = stream.get("status", "").upper()
    shown = note if note.upper().startswith(status) else f"{status}: {note}"
    return [f"{label} `rt.stream()`: {shown}"]


def render(
    meta: dict[str, Any],
    adapters: list[Adapter],
    cells: Cells,
    batches: dict[str, BatchResult],
    stream: dict[str, Any],
    stream_prev: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """The markdown report and the raw JSON data."""
    lines: list[str] = []
    m = meta["machine"]
    lines.append("# handrail dispatch benchmark")
    lines.append("")
    lines.append(
        f"- machine: {m['python']}, {m['platform']}, nproc {m['nproc']}, "
        f"affinity {m['affinity']}{' (pinned)' if m['pinned'] else ''}, load average {m['loadavg']}"
    )
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    lines.append(
        f"- method: 1 untimed correctness call, {WARMUP} warm-up calls, {BLOCKS} blocks of "
        f"~{meta['block_s']} s per cell{' (--quick)' if meta['quick'] else ''}, each call timed "
        "alone (perf_counter_ns), gc.collect() before each cell's blocks; a handrail column and "
        "its previous release take turns block by block, the order turning every round"
    )
    lines.append("")
    lines.append("## Per call, µs: **median** / p99")
    lines.append("")
    inline = any(a.name == "handrail_inline" for a in adapters)
    paired = [a.pairs_with for a in adapters if a.pairs_with]
    header = ["case", *(a.label for a in adapters), "handrail vs fastest peer"]
    if inline:
        header.append("handrail_inline vs fastest peer")
    header.extend(f"{column} vs previous release" for column in paired)
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    ratios: dict[str, Any] = {}
    for case in CASES:
        text, r, best = ratio_cell(case, cells, adapters)
        ratios[case.key] = {"ratio": None if r is None else round(r, 4), "fastest_peer": best}
        row = [case.label, *(fmt_cell(cells[a.name][case.key]) for a in adapters), text]
        if inline:
            text2, r2, _ = ratio_cell(case, cells, adapters, "handrail_inline")
            ratios[case.key]["ratio_inline"] = None if r2 is None else round(r2, 4)
            row.append(text2)
        for column in paired:
            text3, r3 = previous_ratio_cell(case, cells, column)
            ratios[case.key][f"{column}_vs_previous"] = None if r3 is None else round(r3, 4)
            row.append(text3)
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(
        "Ratio = handrail median ÷ fastest peer median in the row (floor excluded); "
        f"target ≤ {TARGET_VS_PEER}x. p99 is noisy on a shared VM; read it as a rough guide."
    )
    if paired:
        lines.append("")
        lines.append(previous_summary(meta, ratios, paired))

    notes = [
        f"- {a.name} / {case.key}: {c.status.upper()}: {c.note}"
        for a in adapters
        for case in CASES
        if (c := cells[a.name][case.key]).status in ("fail", "error")
    ]
    why = [f"- {a.name}: {a.unavailable} ({a.why})" for a in adapters if a.unavailable and a.why]
    if notes or why:
        lines.append("")
        lines.append("Notes:")
        lines.extend(why + notes)

    lines.append("")
    lines.append(f"## Batch: {BATCH_N} × slow() (50 ms each), wall ms, median of {BATCH_RUNS}")
    lines.append("")
    lines.append("| column | how issued | one call | batch of 10 | batch ÷ one |")
    lines.append("|---|---|---|---|---|")
    how = {"handrail": "rt.call_many", "floor_pydantic": "asyncio.gather of the bare coroutines"}
    for a in adapters:
        b = batches[a.name]
        if b.status == "ok" and b.ratio is not None:
            mark = f" {'✓' if b.ratio <= TARGET_BATCH else '✗'}" if a.name == "handrail" else ""
            issued = how.get(a.pairs_with or a.name, "asyncio.gather of 10 calls")
            lines.append(
                f"| {a.label} | {issued} | {b.single_ms:.1f} | {b.batch_ms:.1f} "
                f"| {b.ratio:.2f}x{mark} |"
            )
        else:
            why_not = f"{b.status.upper()}: {b.note}" if b.status in ("error", "fail") else b.note
            lines.append(f"| {a.label} | – | – | – | {why_not} |")
    lines.append("")
    lines.append(f"Target for handrail: batch ≤ {TARGET_BATCH}x one call (serial would be ~10x).")

    lines.append("")
    lines.append("## Streaming: 5 calls to slow() submitted at 0.6/1.2/1.8/2.4/3.0 s, then close")
    lines.append("")
    lines.extend(stream_lines("handrail", stream))
    if paired:
        lines.extend(stream_lines("handrail (previous release)", stream_prev))
    if paired:
        lines.append("")
        lines.append(
            "The previous release's batch and streaming run in its child process; its batch row "
            "takes turns with handrail's, its streaming test runs after handrail's."
        )

    data = {
        "meta": meta,
        "cells": {a: {k: vars(c) for k, c in cs.items()} for a, cs in cells.items()},
        "ratios": ratios,
        "batch": {a: vars(b) for a, b in batches.items()},
        "stream": stream,
        "stream_previous": stream_prev,
    }
    return "\n".join(lines) + "\n", data


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def maybe_pin(argv: list[str]) -> bool:
    """--pin: re-exec under `taskset -c 1` (research pinned to one core). Returns True if pinned."""
    if os.environ.get("HANDRAIL_BENCH_PINNED") == "1":
        return True
    taskset = shutil.which("taskset")
    if taskset is None:
        print("--pin: taskset not found, running unpinned", file=sys.stderr)
        return False
    cpus = sorted(os.sched_getaffinity(0))
    cpu = 1 if 1 in cpus else cpus[0]
    os.environ["HANDRAIL_BENCH_PINNED"] = "1"
    sys.stdout.flush()
    os.execv(taskset, [taskset, "-c", str(cpu), sys.executable, os.path.abspath(__file__), *argv])
    return True  # not reached


VERSION_DISTS = (
    "handrail",
    "openai-agents",
    "pydantic-ai-slim",
    "langchain-core",
    "fastmcp",
    "mcp",
    "pydantic",
    "pydantic-core",
    "anyio",
)


async def setup_columns(columns: list[Adapter], stack: contextlib.AsyncExitStack, log: Log) -> None:
    """Set up each column; one that cannot run is marked `unavailable`, the others still run."""
    for a in columns:
        if a.dist and a.dist != "handrail" and version_of(a.dist) == "not installed":
            a.unavailable = "n/a (not installed)"
            continue
        try:
            await a.setup(stack)
        except Exception as e:
            a.unavailable = "n/a (setup failed)" if a.is_peer else "SKIPPED (setup failed)"
            a.why = f"{type(e).__name__}: {e}"
            log(f"setup {a.name} failed:\n{traceback.format_exc()}")
        if a.unavailable and a.why:
            log(f"{a.name}: {a.unavailable}: {a.why}")


def previous_meta(release: _previous.PreviousRelease, adapters: list[Adapter]) -> dict[str, Any]:
    """What the report says about the previous release: which commit, or why it did not run."""
    version = (release.info or {}).get("version")
    why_not = [a.why for a in adapters if isinstance(a, PreviousAdapter) and a.unavailable]
    return {
        "rev": release.rev,
        "commit": release.commit,
        "version": version,
        "reason": release.reason or (why_not[0] if why_not else ""),
    }


async def amain(args: argparse.Namespace, pinned: bool) -> tuple[str, dict[str, Any]]:
    """Set up every column, run all measurements, return (report, raw data)."""
    log = log_stderr
    block_s = 0.05 if args.quick else 0.25
    release = _previous.PreviousRelease(args.base)
    async with contextlib.AsyncExitStack() as stack:
        stack.callback(release.close)
        adapters = build_columns(args.only, release)
        await setup_columns(adapters, stack, log)
        quiet_loggers()  # after imports/setup: fastmcp installs its rich handlers on import

        versions = {d: version_of(d) for d in VERSION_DISTS}
        prev = previous_meta(release, adapters)
        versions["handrail (previous release)"] = (
            f"{prev['commit']} ({prev['version']})" if not prev["reason"] else "n/a"
        )
        meta = {
            "machine": machine_info(pinned),
            "versions": versions,
            "previous": prev,
            "quick": args.quick,
            "block_s": block_s,
            "warmup": WARMUP,
            "blocks": BLOCKS,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        log(f"versions: {versions}")
        log("per-call cells (median / p99):")
        cells = await run_cells(adapters, block_s, log)
        log("batches:")
        batches = await run_batches(adapters, log)
        log("streaming:")
        stream, stream_prev = await run_streams(adapters, log)
        meta["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]

    return render(meta, adapters, cells, batches, stream, stream_prev)


async def run_streams(adapters: list[Adapter], log: Log) -> tuple[dict[str, Any], dict[str, Any]]:
    """The streaming test for handrail, then for its previous release (in the child)."""
    stream: dict[str, Any] = {"status": "skipped", "note": "not selected"}
    stream_prev = dict(stream)
    for a in adapters:
        if a.name == "handrail":
            stream = await run_stream(a, log)
        elif isinstance(a, PreviousAdapter) and a.pairs_with == "handrail":
            stream_prev = a.stream()
    return stream, stream_prev


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="~0.05 s blocks (smoke run)")
    parser.add_argument("--pin", action="store_true", help="re-exec under `taskset -c 1`")
    parser.add_argument(
        "--only", nargs="*", metavar="COLUMN", help="limit columns (handrail always runs)"
    )
    parser.add_argument(
        "--base",
        default=_previous.BASE,
        metavar="REV",
        help=f"the previous release to compare with, a git rev (default {_previous.BASE}); "
        f"`{_previous.WORKTREE}` runs a copy of this tree instead, to see the method's own noise",
    )
    parser.add_argument(
        "--out",
        default=str(Path(__file__).resolve().parent / "out" / "dispatch.json"),
        help="raw JSON results path (default: bench/out/dispatch.json)",
    )
    # The child process of the previous-release columns (see PreviousAdapter); not for people.
    parser.add_argument("--previous-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.previous_child:
        asyncio.run(_previous.serve(PreviousServer().handlers()))
        return 0
    pinned = maybe_pin(sys.argv[1:]) if args.pin else False
    text, data = asyncio.run(amain(args, pinned))
    print(text, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2, default=str) + "\n")
    print(f"raw results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
