"""The `agent` tool: run a sub-agent with its own context and narrower permissions.

`agent(description, prompt, agent_type)` starts a child `Agent` on a runtime narrowed from the
parent's (see `_narrow.py`), waits for its final answer and returns it as the call's result.
The child's events reach the parent as progress of the call; its runtime's approver is the
call's own (`ToolContext.approver`), so its questions reach whoever answers the parent's,
labelled with the child (`explore#2`), and an "allow always" lands in the session the two
share; its tokens count against the parent's budget; its transcript is saved beside the
parent's. A child that ends without an answer, or at its turn limit, gets one more turn told
to answer now, without tools; if it still has none, or fails, the result is an error that
says so (never an empty success).
Read-only children (such as `explore`) run in parallel; their results come back in order.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from .._context import ToolContext
from .._contract import ErrorCode, ToolKind, ToolResult
from .._tool import Tool
from ..display import CallView, Display
from ..errors import ToolFailure
from ._definitions import AgentDefinition, load_definitions, user_dir
from ._narrow import narrowed_runtime
from ._subagent_display import agent_display
from ._text import say

if TYPE_CHECKING:
    from ._events import Event
    from ._loop import Agent

__all__ = ["AgentTool", "offer_agents"]


def offer_agents(parent: Agent) -> None:
    """Give `parent`'s runtime the `agent` tool, whose children are `parent`'s from now on."""
    found = parent.runtime.registry.get("agent")
    if found is None:
        parent.runtime.registry.add(AgentTool(parent))
    elif isinstance(found, AgentTool):
        found.bind(parent)  # the newest agent on a runtime is the children's parent


MAX_RUNNING = 4
"""Children of one parent running at once."""


class AgentArgs(BaseModel):
    """Arguments of the agent tool."""

    model_config = ConfigDict(extra="forbid")
    description: str = Field(
        min_length=1,
        max_length=120,
        description="A short (3-5 words) description of the task, shown to the user.",
    )
    prompt: str = Field(
        min_length=1,
        description=(
            "The task for the sub-agent. It starts with no memory of this conversation, so "
            "include everything it needs: the goal, file paths, names, constraints, and what "
            "its answer should contain."
        ),
    )
    agent_type: str = Field("general", description="Which kind of agent to run (see the list).")


class AgentTool(Tool):
    """Starts a sub-agent for a self-contained task and returns its final answer."""

    name = "agent"
    kind = ToolKind.OTHER
    # The call itself changes nothing; every call the child makes is decided on its own, by a
    # policy never wider than the parent's.
    read_only = True
    destructive = False
    args_model = AgentArgs
    max_result_chars = 60_000
    usage = (
        "Use `agent` for a self-contained task whose details you do not need in your own "
        "context (a broad search, a separate change). Give it a complete prompt: it sees none "
        "of this conversation. Its answer is its report; verify what matters. Start several in "
        "one turn when they are independent and read-only."
    )

    def __init__(self, parent: Agent) -> None:
        self._parent = parent
        self.definitions, self.problems = load_definitions(parent.runtime.root, user_dir())
        self._count = 0
        self._running = asyncio.Semaphore(MAX_RUNNING)
        listing = "\n".join(
            f"- {d.name}: {d.description}"
            for d in sorted(self.definitions.values(), key=lambda d: d.name)
        )
        self.description = (
            "Start a sub-agent for a self-contained task; it works with its own context and "
            "returns its final answer as this call's result.\nAgent types (agent_type):\n" + listing
        )
        self.concurrency_safe = self._parallel
        super().__init__()

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`agent_display`)."""
        return agent_display(view, name=self.name)

    def bind(self, parent: Agent) -> None:
        """Start children for `parent` from now on (its model, budget and approvals)."""
        self._parent = parent

    def _parallel(self, args: AgentArgs) -> bool:
        found = self.definitions.get(args.agent_type)
        return found is not None and found.read_only

    def validate_input(self, args: AgentArgs, ctx: ToolContext) -> str | None:
        """Refuse an unknown agent type, naming the known ones."""
        if args.agent_type not in self.definitions:
            names = ", ".join(sorted(self.definitions))
            return f"There is no agent type {args.agent_type!r}. Use one of: {names}."
        return None

    async def run(self, args: AgentArgs, ctx: ToolContext) -> ToolResult:
        """Run the child to its answer."""
        parent = self._parent
        definition = self.definitions[args.agent_type]
        self._count += 1
        label = f"{definition.name}#{self._count}"
        if parent.name != "main":
            label = f"{parent.name}/{label}"
        runtime = narrowed_runtime(
            parent.runtime,
            parent_session=ctx.session,
            allow=definition.tools,
            deny=definition.disallowed_tools,
            mode=definition.mode,
            read_only=definition.read_only,
            approver=ctx.approver,
        )
        client = parent.client
        if definition.model:
            client = _model_for(parent, definition)
        path = parent.transcript_path
        # A random part as well: a resumed session counts its children from 1 again.
        name = f"{path.stem}--{_slug(label)}-{uuid.uuid4().hex[:6]}.jsonl" if path else ""
        transcript = path.with_name(name) if path is not None else None
        # The parent's own class (the loop imports this module, not the other way round).
        child = type(parent)(
            client,
            runtime,
            instructions=definition.instructions or None,
            max_turns=definition.max_turns,
            repeat_limit=parent.repeat_limit,
            compaction=parent.compaction,
            save=transcript is not None,
            transcript=transcript,
            agents=parent.depth + 1 < parent.max_depth,
            max_depth=parent.max_depth,
            name=label,
            budget=parent.budget,
            depth=parent.depth + 1,
        )

        calls = 0

        def forward(event: Event) -> None:
            nonlocal calls
            data = event.to_json()
            if data.get("type") == "tool_call_finished":
                calls += 1
            ctx.progress(_progress_line(event, data), agent=label, event=data)

        try:
            async with self._running:
                result = await child.run(args.prompt, on_event=forward)
                answer = result.result.strip()
                if not answer and result.subtype in ("success", "error_max_turns"):
                    grace = await child.run(
                        say(runtime.locale, "nudge_answer"),
                        on_event=forward,
                        max_turns=1,
                        allow_tools=False,
                    )
                    answer = grace.result.strip()
                    result = replace(
                        grace,
                        num_turns=result.num_turns + grace.num_turns,
                        usage=result.usage + grace.usage,
                        subtype=result.subtype if not answer else grace.subtype,
                    )
        finally:
            await runtime.aclose()
            if child.transcript is not None:
                child.transcript.close()
            if client is not parent.client:
                await client.aclose()
        meta: dict[str, Any] = {
            "agent": label,
            "agent_type": definition.name,
            "subtype": result.subtype,
            "turns": result.num_turns,
            "tool_calls": calls,
            "usage": result.usage.to_json(),
            "cost_usd": result.cost_usd,
            "transcript": str(transcript) if transcript is not None else None,
        }
        status = "completed" if answer and result.subtype == "success" else result.subtype
        if not answer:
            where = f" Its transcript: {transcript}." if transcript is not None else ""
            why = result.error or "it ended without a final answer"
            raise ToolFailure(
                f"The sub-agent {label} ({args.description}) gave no answer: {why}.{where} "
                "Do the task yourself, or start the agent again with a clearer, smaller prompt.",
                code=ErrorCode.EXECUTION_ERROR,
                metadata=meta,
            )
        body = (
            f'<agent_result agent="{definition.name}" id="{label}" turns="{result.num_turns}" '
            f'status="{status}">\n{answer}\n</agent_result>'
        )
        return ToolResult.success(
            body,
            summary=f"{label}: {args.description} ({result.num_turns} turns, {status})",
            metadata=meta,
        )


def _model_for(parent: Agent, definition: AgentDefinition) -> Any:
    from ._client import ModelClient

    wanted = definition.model or ""
    if ":" in wanted and definition.trusted:
        return ModelClient.from_spec(wanted)
    with_model = getattr(parent.client, "with_model", None)
    if with_model is None:
        return parent.client
    return with_model(wanted.rsplit(":", 1)[-1])


def _slug(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", label)


def _progress_line(event: Event, data: dict[str, Any]) -> str:
    kind = data.get("type")
    if kind == "tool_call_started":
        return f"{data['call']['name']}"
    if kind == "tool_call_finished":
        r = data["result"]
        return f"{r['tool_name']} {'done' if r['ok'] else r.get('error', 'failed')}"
    if kind == "turn_started":
        return f"turn {data['turn']}"
    return str(kind)
