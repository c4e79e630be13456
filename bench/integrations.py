"""Per-call cost of a handrail tool inside each agent framework, against the framework's own tool.

One command, in the dev environment (`pip install -e ".[dev]"` brings the three frameworks):

    python bench/integrations.py            # full run, about 3 minutes
    python bench/integrations.py --quick    # smoke run, about 40 seconds

Each framework runs its own agent loop with its own fake model (no network): pydantic-ai's
`Agent` with a `FunctionModel`, openai-agents' `Runner` with `agents.testing.ScriptedModel`,
LangChain's `create_agent` with a fake chat model. One run is one agent run: the model asks
for the calls of a row in its first turn and answers in its second. Each row runs the same
script twice over, interleaved run by run:

- native: the framework's own tool doing the work, registered the framework's usual way
  (pydantic-ai `tools=[fn]`, openai-agents `@function_tool`, LangChain `@tool`). pydantic-ai
  also gets a row group with the native tool in a `FunctionToolset`: the same extension point
  handrail's toolset uses, since pydantic-ai gathers over every toolset at every step;
- handrail: the handrail tool through `handrail.integrations` (`toolset(rt)`,
  `function_tools(rt)`, `tools(rt)`): handrail validates the arguments, decides the
  permission, takes the session's gate and runs it.

Rows:
- `add`, 1 call: a trivial async tool, one call in the turn;
- `add`, 10 calls: ten of them in one turn (the framework runs them concurrently);
- `read`, 1 call: read a 200-line file. Native: a sync function, `open().read()` with line
  numbers (every framework runs it on a worker thread). handrail: the built-in `read_file`
  (path resolution and confinement, hidden-path check, the read-before-edit record, paging;
  a worker thread too).

Cells are the median wall time of one whole agent run in ms (p90 beside it); "per call" is
handrail minus native divided by the calls in the run (µs). Ratio = handrail ÷ native; the
goal is ≤ 1.1x. The machine is a shared 2-vCPU VM: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = str(Path(__file__).resolve().parent)
# bench/ holds scripts named like packages (mcp.py): they must not shadow the real ones that
# the frameworks import.
sys.path[:] = [p for p in sys.path if str(Path(p or ".").resolve()) != HERE]
sys.path.insert(0, str(ROOT / "src"))

from handrail import Registry, Runtime, tool  # noqa: E402
from handrail.builtin import ReadFile  # noqa: E402

RunFunc = Callable[[], Awaitable[Any]]


# -- the work ------------------------------------------------------------------------------


async def add_native(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# Frameworks name a function tool after the function: the model calls `add` in both columns.
add_native.__name__ = add_native.__qualname__ = "add"


@tool(read_only=True, concurrency_safe=True)
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_file(folder: Path) -> Path:
    path = folder / "notes.txt"
    path.write_text("".join(f"line {i}: some text for the model to read\n" for i in range(200)))
    return path


def read_native_for(folder: Path) -> Callable[..., str]:
    # Sync, as file tools usually are: every framework runs it on a worker thread, as handrail
    # runs its own read_file.
    def read_file(file_path: str) -> str:
        """Read a text file; lines come numbered."""
        with open(folder / file_path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        return "\n".join(f"{i}\t{line}" for i, line in enumerate(lines, 1))

    return read_file


ROWS: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("add, 1 call", "add", [{"a": 1, "b": 2}]),
    ("add, 10 calls in one turn", "add", [{"a": i, "b": i} for i in range(10)]),
    ("read, 1 call (read_file)", "read_file", [{"file_path": "notes.txt"}]),
]


def handrail_runtime(folder: Path, name: str) -> Runtime:
    # The row's one tool, as the native agent has. Nothing in these rows asks (add is
    # read-only; read_file reads inside the root), so the default mode is kept.
    return Runtime(Registry([add if name == "add" else ReadFile()]), root=folder)


# -- pydantic-ai ---------------------------------------------------------------------------


def pydantic_ai_pair(
    folder: Path, name: str, calls: list[dict[str, Any]], *, native_toolset: bool = False
) -> tuple[RunFunc, RunFunc]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.toolsets import FunctionToolset

    from handrail.integrations.pydantic_ai import toolset

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(name, json.dumps(args), tool_call_id=f"c{i}")
                    for i, args in enumerate(calls)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    native_fn = add_native if name == "add" else read_native_for(folder)
    if native_toolset:
        # The native tool through the same extension point as handrail's: a second toolset
        # beside the agent's own, which pydantic-ai gathers over at every step.
        native = Agent(FunctionModel(script), toolsets=[FunctionToolset([native_fn])])
    else:
        native = Agent(FunctionModel(script), tools=[native_fn])
    rt = handrail_runtime(folder, name)
    hosted = Agent(FunctionModel(script), toolsets=[toolset(rt)])

    def outputs(result: Any) -> list[str]:
        return [
            part.model_response_str()
            for message in result.all_messages()
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        ]

    async def run_native() -> Any:
        return outputs(await native.run("go"))

    async def run_handrail() -> Any:
        return outputs(await hosted.run("go"))

    return run_native, run_handrail


# -- openai-agents -------------------------------------------------------------------------


def openai_agents_pair(
    folder: Path, name: str, calls: list[dict[str, Any]]
) -> tuple[RunFunc, RunFunc]:
    from agents import (
        Agent,
        RunConfig,
        Runner,
        ToolCallOutputItem,
        function_tool,
        set_tracing_disabled,
    )
    from agents.testing import ScriptedModel, assistant_message, function_call

    from handrail.integrations.openai_agents import function_tools, run_config

    set_tracing_disabled(True)

    def model() -> ScriptedModel:
        turn = [function_call(name, args, call_id=f"c{i}") for i, args in enumerate(calls)]
        return ScriptedModel([turn, [assistant_message("done")]])

    native_fn = function_tool(add_native if name == "add" else read_native_for(folder))
    rt = handrail_runtime(folder, name)
    hosted_tools = function_tools(rt)
    config = run_config(rt)
    native_config = RunConfig(tracing_disabled=True)

    def outputs(result: Any) -> list[str]:
        return [str(i.output) for i in result.new_items if isinstance(i, ToolCallOutputItem)]

    async def run_native() -> Any:
        agent = Agent(name="native", model=model(), tools=[native_fn])
        return outputs(await Runner.run(agent, "go", run_config=native_config))

    async def run_handrail() -> Any:
        agent = Agent(name="handrail", model=model(), tools=hosted_tools)
        return outputs(await Runner.run(agent, "go", run_config=config))

    return run_native, run_handrail


# -- LangChain -----------------------------------------------------------------------------


def langchain_pair(folder: Path, name: str, calls: list[dict[str, Any]]) -> tuple[RunFunc, RunFunc]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool as lc_tool

    from handrail.integrations.langchain import tools

    class Fake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return self

    def model() -> Fake:
        first = AIMessage(
            content="",
            tool_calls=[
                {"name": name, "args": args, "id": f"c{i}", "type": "tool_call"}
                for i, args in enumerate(calls)
            ],
        )
        return Fake(messages=iter([first, AIMessage(content="done")]))

    native_tool = lc_tool(add_native if name == "add" else read_native_for(folder))
    rt = handrail_runtime(folder, name)
    hosted_tools = tools(rt)

    def outputs(state: Any) -> list[str]:
        return [str(m.content) for m in state["messages"] if isinstance(m, ToolMessage)]

    async def run_native() -> Any:
        agent = create_agent(model(), tools=[native_tool])
        return outputs(await agent.ainvoke({"messages": [("user", "go")]}))

    async def run_handrail() -> Any:
        agent = create_agent(model(), tools=hosted_tools)
        return outputs(await agent.ainvoke({"messages": [("user", "go")]}))

    return run_native, run_handrail


FRAMEWORKS: list[tuple[str, str, Callable[..., tuple[RunFunc, RunFunc]]]] = [
    ("pydantic-ai", "pydantic-ai-slim", pydantic_ai_pair),
    (
        "pydantic-ai, native in a FunctionToolset",
        "pydantic-ai-slim",
        functools.partial(pydantic_ai_pair, native_toolset=True),
    ),
    ("openai-agents", "openai-agents", openai_agents_pair),
    ("langchain", "langchain", langchain_pair),
]


# -- timing --------------------------------------------------------------------------------


async def measure(
    run_native: RunFunc, run_handrail: RunFunc, rounds: int, warmup: int
) -> tuple[list[float], list[float]]:
    # Both columns must have done the same work: the model read the same tool outputs.
    native_out, hosted_out = await run_native(), await run_handrail()
    if native_out != hosted_out or not native_out:
        raise SystemExit(f"the columns differ:\n native:   {native_out}\n handrail: {hosted_out}")
    for _ in range(warmup):
        await run_native()
        await run_handrail()
    native: list[float] = []
    hosted: list[float] = []
    for i in range(rounds):
        pair = ((run_native, native), (run_handrail, hosted))
        for fn, out in pair if i % 2 == 0 else pair[::-1]:  # alternate who goes first
            t0 = time.perf_counter()
            await fn()
            out.append(time.perf_counter() - t0)
    return native, hosted


def p90(xs: list[float]) -> float:
    return sorted(xs)[int(0.9 * (len(xs) - 1))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer rounds")
    parser.add_argument("--only", nargs="*", help="frameworks to run (default: all)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "out" / "integrations.json"))
    opts = parser.parse_args()
    rounds, warmup = (60, 10) if opts.quick else (300, 30)

    print("# handrail tools inside agent frameworks: per-call cost vs the framework's own tool")
    print()
    print(
        f"python {platform.python_version()} | {platform.platform()} | nproc {os.cpu_count()} | "
        f"load {os.getloadavg()[0]:.2f} | {rounds} runs per cell, interleaved"
    )
    print()
    print(
        "| framework | row | native ms (p90) | handrail ms (p90) "
        "| handrail − native per call | ratio |"
    )
    print("|---|---|---|---|---|---|")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-integrations-") as tmp:
        folder = Path(tmp)
        make_file(folder)
        for label, dist, make in FRAMEWORKS:
            if opts.only and label.split(",")[0] not in opts.only:
                continue
            try:
                ver = version(dist)
            except Exception:
                print(f"| {label} | n/a (not installed) | | | | |")
                continue
            for row, name, calls in ROWS:
                run_native, run_handrail = make(folder, name, calls)
                native, hosted = await measure(run_native, run_handrail, rounds, warmup)
                n_med, h_med = statistics.median(native), statistics.median(hosted)
                ratio = h_med / n_med
                extra_us = (h_med - n_med) / len(calls) * 1e6
                mark = "✓" if ratio <= 1.1 else "✗"
                print(
                    f"| {label} {ver} | {row} | {n_med * 1e3:.2f} ({p90(native) * 1e3:.2f}) | "
                    f"{h_med * 1e3:.2f} ({p90(hosted) * 1e3:.2f}) | {extra_us:+.0f} µs | "
                    f"{ratio:.2f}x {mark} |",
                    flush=True,
                )
                results.append(
                    {
                        "framework": label,
                        "version": ver,
                        "row": row,
                        "native_ms": [round(x * 1e3, 4) for x in native],
                        "handrail_ms": [round(x * 1e3, 4) for x in hosted],
                        "ratio": round(ratio, 4),
                    }
                )
    print()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    save(Path(opts.out), results)


def save(out: Path, results: list[dict[str, Any]]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    print(f"raw results: {out}")


if __name__ == "__main__":
    asyncio.run(main())
