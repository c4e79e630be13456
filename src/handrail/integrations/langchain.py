"""handrail's tools as LangChain tools, for LangGraph graphs and `create_agent`.

```python
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver
from handrail.integrations.langchain import tools

agent = create_agent(model, tools=tools(rt), checkpointer=InMemorySaver())
```

Each tool is a `StructuredTool` whose `args_schema` is the handrail tool's JSON Schema, so
LangChain sends it to the model as it is and validates nothing: the arguments go to
`Runtime.call` untouched, and handrail's INVALID_ARGS text is what the model reads. Every
outcome comes back as a `ToolMessage` (`status="error"` for every failure) whose `artifact` is
the result as plain JSON data (`result_artifact`), so it survives any checkpointer.

A call that would ask becomes a LangGraph `interrupt` in the per-call shape of LangChain's
`HumanInTheLoopMiddleware(interrupt_mode="per_call")`: the value is `{"type": "tool_approval",
"tool_call_id", "name", "args", "description"}` plus handrail's `reason`, `source`,
`suggested_rules` and `allow_rules`, and the answer is one decision (`approve`, `edit`,
`reject`, `respond`; see `to_approval`), checked by LangGraph against the interrupt's
`response_schema` before it is saved. When the run resumes, LangGraph runs the tool again
from the start, and the answer is read first: the call is made once, with that answer
(`Runtime.call(..., approval=...)`), without asking again first (so on resume its pre-tool
hooks run once, when an approved call runs, and not for a rejected one). The answer holds
whatever the call would do now: a rejected call stays rejected, and an edited one runs the
edited arguments, even if by then it would not ask (a sibling's `"always": true` answer
added a rule that allows it, or the mode changed). A run resumed in a new process with a new
`Runtime` runs it exactly once. The runtime never keeps an ask pending. Without a
checkpointer (an interrupt could not be resumed), outside a graph, or with `on_ask="error"`,
the call is refused with the allow rule that would let it run.

Invariants: nothing raises out of a tool but LangGraph's own signals (the interrupt, and an
invalid answer, which LangGraph refuses so it can be given again); the session gate keeps a
session's unsafe calls apart although `create_agent` runs a turn's calls together; the call's
`ToolRuntime` is `ToolContext.host` inside a handrail tool.

Use `create_agent` rather than a plain `ToolNode` for tools that may ask. `create_agent` runs
each call as its own task, so an answer is always that call's own. A plain `ToolNode` runs a
turn's calls in one task: on resume it runs again the calls that did not ask, and when the
task holds several calls it cannot tell whose answer is whose before they ask, so each call
asks again first and reads its answer only if it still asks (a call that no longer asks
runs, whatever its answer was). A plain `ToolNode` with one call per turn works as
`create_agent` does. Likewise, a tool-call middleware that itself interrupts after the tool
has run would have its answer read as the tool's.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired, cast

from pydantic import AfterValidator, Discriminator, WithJsonSchema

from .._context import Session, host_scope
from .._contract import Approval, Interrupted, ToolResult
from .._i18n import render
from .._tool import Tool
from ..errors import ConfigurationError
from ..permissions import parse_rule, rules_to_allow
from ..runtime import Runtime
from ._common import SessionArg, approval_payload, portal_for, result_artifact, session_for
from ._inline_refs import inline_refs

try:
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.constants import CONFIG_KEY_CHECKPOINTER
    from langgraph.errors import GraphInterrupt
    from langgraph.prebuilt import ToolRuntime
    from langgraph.types import interrupt
    from typing_extensions import TypedDict  # pydantic needs it for TypedDicts before 3.12
except ImportError as _import_error:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "handrail.integrations.langchain needs LangChain and LangGraph: "
        'pip install "handrail[langchain]"'
    ) from _import_error


def _private(name: str, fallback: str) -> str:
    """One of LangGraph's private constants (langgraph<2 is pinned); `fallback` if it moved."""
    try:
        value: object = getattr(importlib.import_module("langgraph._internal._constants"), name)
    except (ImportError, AttributeError):  # pragma: no cover - a later LangGraph
        return fallback
    return value if isinstance(value, str) else fallback


_SCRATCHPAD = _private("CONFIG_KEY_SCRATCHPAD", "__pregel_scratchpad")
"""Where `interrupt()` finds the task's resume values, in a task's `configurable`."""
_PUSH = _private("PUSH", "__pregel_push")
"""The first item of `langgraph_path` for a task sent with `Send` (`create_agent`'s calls)."""
_PULL = _private("PULL", "__pregel_pull")
"""The first item of `langgraph_path` for a node's task (a plain `ToolNode`)."""

__all__ = ["OnAsk", "to_approval", "tools"]

OnAsk = Literal["interrupt", "error"]
"""What a call that asks does: pause the graph (`interrupt`), or be refused (`error`)."""

_CATALOG = {
    "en": {
        "rejected": "The user rejected this call: {message}",
        "responded": "The user answered instead of running this call: {message}",
        "cannot_ask": (
            "`{name}` needs the user's approval ({reason}), and this agent cannot ask anyone "
            "(it {why}); the allow rule {rule} would let such calls run"
        ),
        "no_checkpointer": "runs without a LangGraph checkpointer, which interrupts need",
        "outside_graph": "runs outside a LangGraph graph, where nothing can be interrupted",
        "error_mode": 'was set up with on_ask="error"',
        "unreadable": "The approval answer could not be read ({detail}).",
        "not_asked": "`{name}` waits for an approval that this agent cannot ask for",
    },
    "zh": {
        "rejected": "用户拒绝了这个调用:{message}",
        "responded": "用户代替执行给出了答复:{message}",
        "cannot_ask": (
            "`{name}` 需要用户批准({reason}),但这个智能体无法询问任何人(它{why});"
            "允许规则 {rule} 可以放行这类调用"
        ),
        "no_checkpointer": "运行时没有 LangGraph checkpointer,而中断需要它",
        "outside_graph": "在 LangGraph 图之外运行,无法中断",
        "error_mode": '设置了 on_ask="error"',
        "unreadable": "无法读取批准答复({detail})。",
        "not_asked": "`{name}` 在等待一个这个智能体无法请求的批准",
    },
}

_NO_RUNTIME: Any = None
"""The default of the injected runtime parameter: a tool invoked outside a `ToolNode`."""


# -- decisions ------------------------------------------------------------------------------


def _valid_rule(rule: str) -> str:
    try:
        parse_rule(rule)
    except ConfigurationError as exc:
        raise ValueError(str(exc)) from None
    return rule


class _Approve(TypedDict):
    type: Literal["approve"]
    always: NotRequired[bool]
    rule: NotRequired[Annotated[str, AfterValidator(_valid_rule)]]


class _Action(TypedDict):
    name: str
    args: dict[str, Any]


class _Edit(TypedDict):
    type: Literal["edit"]
    edited_action: _Action


class _Reject(TypedDict):
    type: Literal["reject"]
    message: NotRequired[str]


class _Respond(TypedDict):
    type: Literal["respond"]
    message: str


_Decision = Annotated[_Approve | _Edit | _Reject | _Respond, Discriminator("type")]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def to_approval(decision: Mapping[str, Any], *, locale: str = "en") -> Approval:
    """The handrail `Approval` for one LangChain human-in-the-loop decision.

    The decisions of `HumanInTheLoopMiddleware`:

    - `{"type": "approve"}`: `Approval.allow_once()`. handrail adds `"always": true` (every
      rule of the request's `allow_rules`) or `"rule": "run_shell(npm test:*)"` (that rule):
      `Approval.allow_always(rule)`, an allow rule for the rest of the session;
    - `{"type": "edit", "edited_action": {"name": ..., "args": {...}}}`:
      `Approval.edit(args)`, validated again, with a note to the model;
    - `{"type": "reject"}` or `{"type": "reject", "message": "..."}`: `Approval.deny`, the
      message reaching the model;
    - `{"type": "respond", "message": "..."}`: also a denial (handrail runs a call or refuses
      it; it has no "answered for the tool" outcome), the message reaching the model.

    Args:
        decision: The decision, as a reviewer sent it.
        locale: Language of the denial text the model reads (`en`, `zh`).

    Raises:
        ConfigurationError: An unknown decision type, an edit without `edited_action.args`
            (a mapping), or an approval whose `rule` is not a permission rule. Inside a graph
            this cannot happen: LangGraph checks the answer against the interrupt's
            `response_schema` first, and refuses an invalid one so it can be given again.
    """
    if not isinstance(decision, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigurationError(f"a decision is a mapping with a `type`, not {decision!r}")
    kind = decision.get("type")
    if kind == "approve":
        rule = decision.get("rule")
        if rule is not None:
            if not isinstance(rule, str):
                raise ConfigurationError(f"an approval's `rule` is a string, not {rule!r}")
            parse_rule(rule)
            return Approval.allow_always(rule)
        return Approval.allow_always() if decision.get("always") is True else Approval.allow_once()
    if kind == "edit":
        action = decision.get("edited_action")
        args: object = (
            cast("Mapping[str, Any]", action).get("args") if isinstance(action, Mapping) else None
        )
        if not isinstance(args, Mapping):
            raise ConfigurationError(
                'an edit decision carries {"edited_action": {"name": ..., "args": {...}}}'
            )
        return Approval.edit(dict(cast("Mapping[str, Any]", args)))
    if kind in ("reject", "respond"):
        message = _text(decision.get("message"))
        if message is None:
            return Approval.deny()
        key = "rejected" if kind == "reject" else "responded"
        return Approval.deny(render(_CATALOG, locale, key, message=message.strip()))
    raise ConfigurationError(
        f"unknown decision type {kind!r}: use approve, edit, reject or respond"
    )


def _decision_schema(name: str, parameters: Mapping[str, Any]) -> Any:
    """The `response_schema` of one tool's interrupts: LangGraph checks answers against it.

    What clients see is the JSON Schema of the four decisions, the edit's `name` pinned to
    this tool and its `args` showing the tool's own schema (handrail validates them, after),
    its references inlined: nested here, a `$ref` to the tool's `$defs` would name nothing
    (pydantic, making LangGraph's copy, would fail on it).
    """

    def same_tool(decision: Any) -> Any:
        if decision["type"] == "edit" and decision["edited_action"]["name"] != name:
            raise ValueError(f"an edit of this call keeps the tool name {name!r}")
        return decision

    def branch(kind: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return {
            "type": "object",
            "title": kind,
            "properties": {"type": {"const": kind}, **props},
            "required": ["type", *required],
        }

    message = {"type": "string"}
    action = {
        "type": "object",
        "properties": {"name": {"const": name}, "args": inline_refs(parameters)},
        "required": ["name", "args"],
    }
    shown = {
        "oneOf": [
            branch("approve", {"always": {"type": "boolean"}, "rule": {"type": "string"}}, []),
            branch("edit", {"edited_action": action}, ["edited_action"]),
            branch("reject", {"message": message}, []),
            branch("respond", {"message": message}, ["message"]),
        ],
        "discriminator": {"propertyName": "type"},
    }
    return Annotated[_Decision, AfterValidator(same_tool), WithJsonSchema(shown)]


# -- the tools ------------------------------------------------------------------------------


class _HandrailTool(StructuredTool):
    """A `StructuredTool` that hands its function exactly the model's arguments.

    `StructuredTool` gives its function `config` and `run_manager` (and `callbacks`) by
    name, which would take the place of a tool argument so named; here only the model's
    arguments and the injected runtime reach it.
    """

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        assert self.func is not None
        return self.func(*args, **kwargs)

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        assert self.coroutine is not None
        return await self.coroutine(*args, **kwargs)


class _Binding:
    """One handrail tool seen from LangChain: its calls, asks and results."""

    def __init__(self, rt: Runtime, tool: Tool, session: SessionArg, on_ask: OnAsk) -> None:
        self.rt = rt
        self.name = tool.name
        self.session = session
        self.on_ask = on_ask
        self.schema = _decision_schema(tool.name, tool.parameters)

    # The injected parameter is not called `runtime`: LangGraph injects a `ToolRuntime` into
    # any parameter annotated with it, and a tool argument called `runtime` would be lost.
    async def acall(
        self, _lc_runtime: ToolRuntime[Any, Any] = _NO_RUNTIME, **args: Any
    ) -> ToolMessage | str:
        runtime, args = _split(_lc_runtime, args)
        call_id, sess, why = self._setup(runtime)
        approval = self._answer_first(runtime, why)
        if approval is None:
            r = await self._first(args, runtime, call_id, sess, why)
            if not isinstance(r, Interrupted):
                return self._message(r, call_id)
            approval = self._decide(r, runtime)
        r = await self._answered(args, runtime, call_id, sess, approval)
        return self._message(r, call_id)

    def call(
        self, _lc_runtime: ToolRuntime[Any, Any] = _NO_RUNTIME, **args: Any
    ) -> ToolMessage | str:
        # Sync `invoke`: the calls run on the runtime's portal loop (its sessions, gates and
        # shell jobs live on one loop); the interrupt is raised here, in the graph's thread,
        # where LangGraph's config is.
        runtime, args = _split(_lc_runtime, args)
        call_id, sess, why = self._setup(runtime)
        portal = portal_for(self.rt)
        approval = self._answer_first(runtime, why)
        if approval is None:
            r = portal.run(self._first(args, runtime, call_id, sess, why))
            if not isinstance(r, Interrupted):
                return self._message(r, call_id)
            approval = self._decide(r, runtime)
        r = portal.run(self._answered(args, runtime, call_id, sess, approval))
        return self._message(r, call_id)

    def _setup(self, runtime: ToolRuntime[Any, Any] | None) -> tuple[str | None, Session, str]:
        """The call id, the session, and why an ask cannot pause the graph ("" if it can)."""
        call_id = (runtime.tool_call_id or None) if runtime is not None else None
        sess = session_for(self.rt, self.session, runtime)
        if self.on_ask == "error":
            why = "error_mode"
        elif runtime is None:
            why = "outside_graph"
        elif runtime.config.get("configurable", {}).get(CONFIG_KEY_CHECKPOINTER) is None:
            why = "no_checkpointer"
        else:
            why = ""
        return call_id, sess, why

    async def _first(
        self,
        args: dict[str, Any],
        runtime: ToolRuntime[Any, Any] | None,
        call_id: str | None,
        sess: Session,
        why: str,
    ) -> ToolResult:
        """The call as it stands: its result, or an `Interrupted` to ask about (not pending)."""
        rt = self.rt
        with host_scope(runtime):
            r = await rt.call(self.name, args, call_id=call_id, session=sess)
            if not isinstance(r, Interrupted):
                return r
            # Asked through LangGraph, answered statelessly: nothing waits in the runtime, so
            # an interrupt (or a restart) leaves nothing behind, and another thread's call
            # with the same id cannot be answered by mistake.
            rt.discard(r)
            request = r.approval
            if request is not None and not why:
                return r
            # Nobody can be asked: refused (the model reads a denial and what to do instead,
            # not "wait for the user's decision": none will come), with the rule that would
            # let it run. The denial is an answer given with the call, so it cannot miss.
            if request is None:  # not its own ask (`Runtime.call` gives none such)
                reason = render(_CATALOG, rt.locale, "not_asked", name=r.tool_name)
                source = "mode"
            else:
                reason = render(
                    _CATALOG,
                    rt.locale,
                    "cannot_ask",
                    name=request.tool_name,
                    reason=request.reason.rstrip("."),
                    why=render(_CATALOG, rt.locale, why),
                    rule=" + ".join(f"`{x}`" for x in rules_to_allow(request)),
                )
                source = request.source
            deny = Approval.deny(reason, source=source)
            return await rt.call(self.name, args, call_id=call_id, session=sess, approval=deny)

    def _answer_first(self, runtime: ToolRuntime[Any, Any] | None, why: str) -> Approval | None:
        """The answer LangGraph holds for this call, read before the call is made; else None.

        On resume the answer must be read before `Runtime.call`: by now the call may not ask
        (a sibling's "always" answer, a new mode), and it would run although it was rejected
        or edited. So where an answer waits for this call alone (`_answer_waits`), it is read
        first, and the call is made once with it. `interrupt()` returns it at once; if it
        finds none after all (the answer was another interrupt's of this task), the call goes
        the usual way: it asks, and that interrupt is the one shown (same id, same index).
        """
        if why or runtime is None or not _answer_waits(runtime):
            return None
        try:
            decision = interrupt(
                {"type": "tool_approval", "tool_call_id": runtime.tool_call_id, "name": self.name},
                response_schema=self.schema,
            )
        except GraphInterrupt:
            return None
        return self._approval(decision)

    def _approval(self, decision: Any) -> Approval:
        try:
            return to_approval(decision, locale=self.rt.locale)
        except ConfigurationError as exc:  # cannot happen once LangGraph checked it
            return Approval.deny(render(_CATALOG, self.rt.locale, "unreadable", detail=exc))

    def _decide(self, r: Interrupted, runtime: ToolRuntime[Any, Any] | None) -> Approval:
        """Pause the graph with the ask (first pass), or read the answer (on resume)."""
        request = r.approval
        assert request is not None and runtime is not None  # `_first` answered the others
        payload = approval_payload(request)
        args = json.dumps(payload["args"], ensure_ascii=False, default=str)
        description = f"{request.reason}\n\nTool: {payload['name']}\nArgs: {args}"
        value = {
            "type": "tool_approval",
            "tool_call_id": payload.pop("tool_call_id"),
            "name": payload.pop("name"),
            "args": payload.pop("args"),
            "description": description,
            **payload,
        }
        return self._approval(interrupt(value, response_schema=self.schema))

    async def _answered(
        self,
        args: dict[str, Any],
        runtime: ToolRuntime[Any, Any] | None,
        call_id: str | None,
        sess: Session,
        approval: Approval,
    ) -> ToolResult:
        with host_scope(runtime):
            return await self.rt.call(
                self.name, args, call_id=call_id, session=sess, approval=approval
            )

    def _message(self, r: ToolResult, call_id: str | None) -> ToolMessage | str:
        if call_id is None:
            # Outside a ToolNode (a plain `ainvoke`): LangChain's own shape, the text, and a
            # failure as a handled `ToolException` (an error `ToolMessage` for a tool call).
            if r.ok:
                return r.content
            raise ToolException(r.content)
        return ToolMessage(
            content=r.content,
            tool_call_id=call_id,
            name=self.name,
            status="success" if r.ok else "error",
            artifact=result_artifact(r),
        )


# LangChain and LangGraph read these functions' annotations with `get_type_hints` on every
# call (looking for an injected runtime or config); as objects rather than this module's
# postponed strings they cost no `eval` (about 100 µs a call each before).
for _method in (_Binding.acall, _Binding.call):
    _method.__annotations__ = {
        "_lc_runtime": ToolRuntime[Any, Any],
        "args": Any,
        "return": ToolMessage | str,
    }
for _method in (_HandrailTool._run, _HandrailTool._arun):  # pyright: ignore[reportPrivateUsage]
    _method.__annotations__ = {"args": Any, "kwargs": Any, "return": Any}


def _answer_waits(runtime: ToolRuntime[Any, Any]) -> bool:
    """Does LangGraph hold an answer for this call's ask, read by the next `interrupt()`?

    True when the task that runs this call holds a resume value (`interrupt()` would return
    it rather than pause), and the task runs this one call, so the answer is this call's:
    `create_agent` sends each tool call as its own task (a push task), and a `ToolNode` task
    (a pull task) runs the calls of the latest `AIMessage`, here only this one. A task that
    runs several calls cannot tell whose answer is whose before they ask: False, and the
    call asks again first. Reads LangGraph's private scratchpad (`interrupt()` reads the
    same): anything unexpected is False, the way calls went before.
    """
    try:
        conf = runtime.config
        pad: Any = conf.get("configurable", {})[_SCRATCHPAD]
        if not pad.resume and pad.get_null_resume(False) is None:
            return False
        path: Any = conf.get("metadata", {}).get("langgraph_path")
        if path[0] == _PUSH:
            return True
        if path[0] != _PULL:
            return False
        state: Any = runtime.state
        messages = cast(
            "list[Any]", state["messages"] if isinstance(state, Mapping) else state.messages
        )
        latest = next(m for m in reversed(messages) if isinstance(m, AIMessage))
        return [c.get("id") for c in latest.tool_calls] == [runtime.tool_call_id]
    except Exception:
        return False


def _split(
    injected: object, args: dict[str, Any]
) -> tuple[ToolRuntime[Any, Any] | None, dict[str, Any]]:
    """The LangGraph runtime, if one was injected, and the model's arguments."""
    if injected is None or isinstance(injected, ToolRuntime):
        return cast("ToolRuntime[Any, Any] | None", injected), args
    # Not LangGraph's: a tool argument that happens to have the parameter's name.
    return None, {**args, "_lc_runtime": injected}


def tools(
    rt: Runtime, *, session: SessionArg = None, on_ask: OnAsk = "interrupt"
) -> list[BaseTool]:
    """The runtime's tools as LangChain tools, for `create_agent` or a LangGraph `ToolNode`.

    Every tool of the registry that is available and not deferred: deferred tools and
    `tool_search` are left out, since LangChain binds a model's tools once and a tool found
    later could not be called. Both `ainvoke` and `invoke` work; sync calls run on the
    runtime's portal loop (`handrail.integrations.portal_for`), so keep one session to one
    of the two.

    Args:
        rt: The runtime every call goes through.
        session: The handrail session of a call: one `Session`, or a function of the call's
            `ToolRuntime` (None outside a graph) that picks one, e.g. by
            `runtime.config["configurable"]["thread_id"]`; default: the runtime's own.
        on_ask: A call that asks: `interrupt` pauses the graph (it needs a checkpointer;
            without one the call is refused, with the rule that would let it run); `error`
            always refuses it that way.

    Raises:
        ConfigurationError: `on_ask` is neither `interrupt` nor `error`.
    """
    if on_ask not in ("interrupt", "error"):
        raise ConfigurationError(f"on_ask must be 'interrupt' or 'error', not {on_ask!r}")
    registry = rt.registry
    search = registry.search_tool.name if registry.has_deferred else None
    out: list[BaseTool] = []
    for tool in registry.list():
        if tool.name == search:
            continue
        binding = _Binding(rt, tool, session, on_ask)
        out.append(
            _HandrailTool(
                name=tool.name,
                description=tool.description,
                args_schema=dict(tool.parameters),
                func=binding.call,
                coroutine=binding.acall,
                handle_tool_error=True,
            )
        )
    return out
