"""handrail's tools in an openai-agents agent: `function_tools(rt)`, `run_config()`, `Edits`.

```python
from agents import Agent, Runner
from handrail.integrations.openai_agents import Edits, function_tools, run_config

edits = Edits()
agent = Agent(name="coder", model=model, tools=function_tools(rt, edits=edits))
result = await Runner.run(agent, "Fix the failing test.", run_config=run_config(rt))
```

Every call goes through `Runtime.call`: handrail validates the arguments (the SDK hands the
model's raw JSON text to the tool, so the model reads handrail's INVALID_ARGS text, malformed
JSON included), checks permissions, runs the tool in its sandbox and keeps a session's unsafe
calls from overlapping (the SDK starts every call of a turn at once). How each outcome reaches
openai-agents:

- a call that would ask makes `needs_approval` true (it asks `Runtime.check`, which runs
  nothing and stores nothing), so the run pauses with `result.interruptions`. Answer with
  `state.approve(item)` or `state.reject(item, rejection_message=...)` and run again; the
  approved call is answered statelessly (`approval=`), so a run restored with
  `RunState.from_string` into a new `Runtime`, in a new process, runs it exactly once, and
  nothing is left pending in the runtime. The SDK has no edit: `Edits.edit(item, arguments)`
  (or `Edits.allow_always(item)`) before `state.approve(item)` gives handrail that answer
  (kept in memory: record it in the process that resumes the run). A call that did not ask
  when it was checked but asks when it runs (a hook changed its mind) cannot pause any more:
  it does not run, and the model is told to ask the user;
- every result, failures included, is returned as the tool's output: handrail's text byte for
  byte (the function_call_output carries no error flag to lose); images and PDFs go as the
  SDK's image and file outputs. The tool never raises, so the SDK's generic "An error
  occurred" text never replaces handrail's: even a failure inside the adapter or the runtime
  (a tool's own `permission_requests` raising, a `session` function failing) is logged and
  reaches the model as text, and `needs_approval`, the guardrail and `is_enabled` log it and
  give their safe answer (see each). `result_artifact(result)` is the output item's
  `custom_data["handrail"]` (error code, summary, diff) for the application;
- `run_config()` sets `tool_not_found_behavior="return_error_to_model"`, so a tool name the
  model invents is answered instead of ending the run (`run_config(rt)` answers with
  handrail's TOOL_NOT_FOUND text, closest names included), and runs the adapter's input
  guardrail before the approval pause: the SDK pauses for approval of any arguments it cannot
  parse as a JSON object, and the guardrail answers those calls itself unless handrail would
  ask (malformed JSON gets INVALID_ARGS at once instead of an approval prompt).

`Agent.tools` is fixed, so there is one tool per registry tool and `is_enabled` shows the
model what `Runtime.tools(session=...)` shows now (deferred tools once `tool_search` activated
them, read-only tools in plan mode). Tools added to the registry later need new
`function_tools`. Aliases are not reachable: the SDK resolves names before handrail.

`ctx.host` is the SDK's context wherever handrail evaluates a call: the `ToolContext` when it
runs and in the guardrail, the run's `RunContextWrapper` in `needs_approval` and the not-found
formatter (the SDK gives no `ToolContext` there). Both carry the run's `.context`.

Cancelling a run (the task awaiting `Runner.run`) cancels its running calls, and handrail stops
a shell call's whole process tree. The SDK does not wait for a cancelled tool, so that stop
finishes in the background (SIGTERM, then SIGKILL 2 s later); keep the event loop running
until it has (`Runtime.aclose` does not wait for calls in flight).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any, NoReturn

try:
    from agents import (
        AgentBase,
        AgentsException,
        FunctionTool,
        FunctionToolCustomDataContext,
        RunConfig,
        RunContextWrapper,
        ToolApprovalItem,
        ToolErrorFormatterArgs,
        ToolExecutionConfig,
        ToolGuardrailFunctionOutput,
        ToolInputGuardrail,
        ToolInputGuardrailData,
        ToolOutputFileContent,
        ToolOutputImage,
        ToolOutputText,
        UserError,
    )
    from agents import Tool as SDKTool
    from agents.tool_context import ToolContext
except ImportError as _import_error:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        "handrail.integrations.openai_agents needs openai-agents: "
        'pip install "handrail[openai-agents]"'
    ) from _import_error

from .._context import host_scope
from .._contract import Approval, ErrorCode, Interrupted, TextPart, ToolResult
from .._tool import Tool
from ..errors import ConfigurationError
from ..permissions import parse_rule
from ..providers import openai_responses_results, openai_strict_schema, undo_strict_nulls
from ..runtime import Runtime
from ._common import SessionArg, cannot_ask, result_artifact, session_for

__all__ = ["Edits", "function_tools", "run_config"]

ToolOutput = str | list[ToolOutputText | ToolOutputImage | ToolOutputFileContent]
"""What a handrail tool returns to openai-agents: its text, or text, images and files."""

_log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class _Answer:
    """An answer recorded in `Edits`, with the call it was given for as the SDK showed it."""

    tool_name: str
    arguments: str
    approval: Approval


class Edits:
    """Answers openai-agents cannot give: edited arguments, and "allow always" with rules.

    The SDK's `state.approve(item)` only says yes. Record the richer answer here first, then
    approve; the tool takes it when the approved call runs (once: it is consumed).

    ```python
    edits = Edits()
    agent = Agent(name="coder", tools=function_tools(rt, edits=edits))
    result = await Runner.run(agent, "Tidy the notes.", run_config=run_config())
    state = result.to_state()
    for item in result.interruptions:
        edits.edit(item, {"text": "oat milk"})     # run these arguments instead
        state.approve(item)
    result = await Runner.run(agent, state, run_config=run_config())
    ```

    An edited call is validated again, its pre-tool hooks run again, and the model is told the
    user changed it. The run's transcript keeps the arguments the model wrote.

    An answer is for the item it was recorded for: its call id, tool name and arguments as the
    item shows them. Some model servers (and the SDK's `ScriptedModel`) reuse call ids, so an
    answer left over (recorded for an item that was then rejected, or never resumed) must not
    reach a later call with the same id:

    - it is dropped when a call with that id is asked about again (a new item: the answer was
      recorded before anyone saw it);
    - it is applied only to an approved call whose tool name and raw arguments are the
      recorded item's. Any other call with that id drops it and runs as the SDK approved it,
      with the arguments the user was shown (the SDK's approval is for that item);
    - after `state.reject(item)`, `edits.pop(item.call_id)` drops it at once (a rejected call
      never reaches the tool, so the tool cannot see the rejection).

    Answers live in memory, in this object: record them in the process that resumes the run
    (a `RunState` string carries the SDK's approvals, not these). Runs that share one `Edits`
    while paused must not share call ids (with a server that reuses ids, give each
    conversation its own `function_tools(rt, edits=Edits())`).
    """

    def __init__(self) -> None:
        self._answers: dict[str, _Answer] = {}
        self._names: set[str] = set()  # the tools given these Edits (`function_tools`)

    def edit(self, item: ToolApprovalItem, arguments: str | Mapping[str, Any]) -> None:
        """Run the approved call with `arguments` instead of the model's (JSON text or a dict)."""
        self._record(item, Approval.edit(arguments))

    def allow_always(self, item: ToolApprovalItem, rule: str | None = None) -> None:
        """Run the approved call and add handrail allow rules for the rest of the session.

        `rule` is the rule to add; by default, the request's narrowest rules (its
        `allow_rules`). A malformed rule raises `ConfigurationError` here. The SDK's own
        `approve(item, always_approve=True)` is a separate, SDK-side rule: it pre-approves
        every later call of the tool in this run.
        """
        if rule is not None:
            parse_rule(rule)  # a `ConfigurationError` now, not a failure inside the run
        self._record(item, Approval.allow_always(rule))

    def pop(self, call_id: str) -> Approval | None:
        """Drop the answer recorded for `call_id` and return it, or None (e.g. after a reject)."""
        answer = self._answers.pop(call_id, None)
        return answer.approval if answer is not None else None

    def clear(self) -> None:
        """Forget every answer not taken yet."""
        self._answers.clear()

    def __len__(self) -> int:
        return len(self._answers)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._answers

    def _record(self, item: ToolApprovalItem, approval: Approval) -> None:
        if not self._names:
            # Otherwise the approved call would run as the model wrote it, silently.
            raise ConfigurationError(
                "these Edits are not used by any tools: pass them to "
                "function_tools(rt, edits=...) before answering"
            )
        call_id, name, arguments = item.call_id, item.tool_name, item.arguments
        if not call_id:
            raise ConfigurationError(f"approval item for {name!r} has no call id")
        if name not in self._names or arguments is None:
            raise ConfigurationError(
                f"approval item for {name!r} is not a call of the tools these Edits were given to"
            )
        self._answers[call_id] = _Answer(tool_name=name, arguments=arguments, approval=approval)

    def _take(self, call_id: str, tool_name: str, arguments: str) -> Approval | None:
        """The answer for this call, if it is the recorded item's; any entry for the id goes."""
        answer = self._answers.pop(call_id, None)
        if answer is None:
            return None
        if answer.tool_name == tool_name and answer.arguments == arguments:
            return answer.approval
        _log.warning(
            "handrail: the answer recorded for call %r (%s) is not for this call of %s "
            "(another call with the same id); dropped, not applied",
            call_id,
            answer.tool_name,
            tool_name,
        )
        return None

    def _forget(self, call_id: str) -> None:
        """A call with this id is being asked about: an answer recorded before is not its."""
        if self._answers.pop(call_id, None) is not None:
            _log.info("handrail: dropped the answer left over for call id %r", call_id)


def function_tools(
    rt: Runtime,
    *,
    session: SessionArg = None,
    strict: bool = True,
    edits: Edits | None = None,
) -> list[SDKTool]:
    """The runtime's tools as openai-agents function tools, one per registry tool.

    ```python
    agent = Agent(name="coder", model=model, tools=function_tools(rt),
                  instructions=rt.usage_notes())
    result = await Runner.run(agent, "Fix the failing test.", run_config=run_config(rt))
    ```

    Args:
        rt: The runtime every call goes through.
        session: The handrail `Session` calls run in: one for every call, a function of the
            run's `RunContextWrapper` (for one session per conversation, e.g. kept on
            `wrapper.context`), or None for `rt.session`. Share one across runs of a
            conversation: it holds the files read (edits need them), tool_search activations,
            "allow always" rules and its own permission mode (a `Session()` of your own
            starts in `default` mode, whatever the runtime's `mode`).
        strict: Send OpenAI strict-mode schemas where the tool's schema allows it (handrail's
            own strict form: optional arguments become nullable, and a `null` the model sends
            is "not given" again before the call). False sends every tool's own schema with
            strict mode off.
        edits: Where edited and "allow always" answers are recorded (see `Edits`).

    Returns:
        One `FunctionTool` per registry tool, typed as the SDK's `Tool` so the list goes
        straight into `Agent(tools=...)`.
    """
    if edits is not None:
        edits._names.update(t.name for t in rt.registry.all())  # pyright: ignore[reportPrivateUsage]
    tools: list[SDKTool] = [
        _function_tool(rt, tool, session, strict, edits) for tool in rt.registry.all()
    ]
    return tools


def run_config(rt: Runtime | None = None, /, *, session: SessionArg = None, **kw: Any) -> RunConfig:
    """A `RunConfig` for agents with handrail's tools (`kw` is passed on and wins).

    - `tool_not_found_behavior="return_error_to_model"`: a tool name the model invents gets an
      error to correct instead of ending the run (the SDK's default raises);
    - `tool_execution=ToolExecutionConfig(pre_approval_tool_input_guardrails=True)`: the
      adapter's guardrail answers calls whose arguments the SDK cannot parse before the SDK
      would pause to ask about them (pass your own `tool_execution` with this flag set to
      keep that);
    - with `rt` (and the tools' `session`), a `tool_error_formatter` that answers an unknown
      tool name with handrail's TOOL_NOT_FOUND text, which names the closest tools, and a
      deferred tool not activated yet with its TOOL_NOT_ACTIVATED text. Other errors keep the
      SDK's text (a rejection is `rejection_message`).
    """
    kw.setdefault("tool_not_found_behavior", "return_error_to_model")
    kw.setdefault("tool_execution", ToolExecutionConfig(pre_approval_tool_input_guardrails=True))
    if rt is not None:
        kw.setdefault("tool_error_formatter", _not_found_formatter(rt, session))
    return RunConfig(**kw)


def _not_found_formatter(rt: Runtime, session: SessionArg) -> Any:
    async def format_error(args: ToolErrorFormatterArgs[Any]) -> str | None:
        if args.kind != "tool_not_found" or args.tool_type != "function":
            return None
        try:
            sess = session_for(rt, session, args.run_context)
            tool = rt.registry.get(args.tool_name)
            if (
                tool is not None
                and rt.registry.available(tool)
                and not (tool.deferred and tool.name not in sess.activated)
            ):
                # It resolves (an alias, or a tool plan mode hides): the SDK's own text, and no
                # check, which would run the call's pre-tool hooks.
                return None
            # Unknown, or deferred and not activated: the check stops at its first stage
            # (resolving the name), before any hook, with handrail's text.
            with host_scope(args.run_context):
                pre = await rt.check(args.tool_name, "{}", call_id=args.call_id, session=sess)
        except AgentsException:
            raise
        except Exception:
            _log.exception("handrail: answering the unknown tool %r failed", args.tool_name)
            return None
        refusal = pre.refusal
        if refusal is not None and refusal.error in (
            ErrorCode.TOOL_NOT_FOUND,
            ErrorCode.TOOL_NOT_ACTIVATED,
        ):
            return refusal.content
        return None

    return format_error


def _function_tool(
    rt: Runtime, tool: Tool, session: SessionArg, strict: bool, edits: Edits | None
) -> FunctionTool:
    name = tool.name
    schema = openai_strict_schema(tool) if strict else None
    # Results waiting for the SDK to ask for their artifact, by call id (taken at once).
    results: dict[str, ToolResult] = {}

    def arguments(raw: str | Mapping[str, Any]) -> str | Mapping[str, Any]:
        return undo_strict_nulls(tool, raw) if schema is not None else raw

    async def call(ctx: ToolContext[Any], raw: str, approval: Approval | None) -> ToolResult:
        sess = session_for(rt, session, ctx)
        with host_scope(ctx):
            result = await rt.call(
                name, arguments(raw), call_id=ctx.tool_call_id, session=sess, approval=approval
            )
        if isinstance(result, Interrupted):
            # Checked as "run", yet it asked (a hook changed its mind): it cannot pause now,
            # so nothing stays pending and the model is told no decision will come.
            rt.discard(result)
            return dataclasses.replace(result, content=cannot_ask(result), parts=())
        return result

    async def needs_approval(
        wrapper: RunContextWrapper[Any], params: dict[str, Any], call_id: str
    ) -> bool:
        try:
            # The SDK asks only about a call not answered yet: an answer under its id is older.
            if edits is not None:
                edits._forget(call_id)  # pyright: ignore[reportPrivateUsage]
            sess = session_for(rt, session, wrapper)
            with host_scope(wrapper):
                pre = await rt.check(name, arguments(params), call_id=call_id, session=sess)
        except AgentsException:
            raise
        except Exception:
            # False, not True: an unapproved call still goes through `rt.call`, which runs the
            # whole pipeline (it cannot run what would ask) and gives the model text, whereas
            # True would ask the user about a call that cannot be evaluated.
            _log.exception("handrail: checking a call of %r failed", name)
            return False
        # A refusal runs through `rt.call` too, which gives the model its text.
        return pre.needs_approval

    async def invoke(ctx: ToolContext[Any], raw: str) -> ToolOutput:
        call_id = ctx.tool_call_id
        try:
            # Taken whatever happens: an answer left under this id is for no other call.
            taken = None
            if edits is not None:
                taken = edits._take(call_id, name, raw)  # pyright: ignore[reportPrivateUsage]
            approval: Approval | None = None
            if ctx.is_tool_approved(name, call_id):
                approval = taken or Approval.allow_once()
            result = await call(ctx, raw, approval)
        except AgentsException:
            raise
        except Exception as exc:
            _log.exception("handrail: the call of %r failed inside the adapter", name)
            result = _failed(name, call_id, exc)
        results[call_id] = result
        return _output(result, rt.locale)

    async def uninspectable(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        # The SDK pauses for approval of any call whose arguments it cannot parse as a JSON
        # object (it skips `needs_approval` for them). handrail decides instead: unless the
        # call would ask, answer it here (malformed JSON gets INVALID_ARGS at once).
        ctx = data.context
        try:
            status = ctx.is_tool_approved(name, ctx.tool_call_id)
            if status is not None:
                return ToolGuardrailFunctionOutput.allow()  # answered: the SDK's to act on
            if edits is not None:  # not answered yet: an answer under its id is older
                edits._forget(ctx.tool_call_id)  # pyright: ignore[reportPrivateUsage]
            raw = ctx.tool_arguments
            if _inspectable(raw):
                return ToolGuardrailFunctionOutput.allow()
            sess = session_for(rt, session, ctx)
            with host_scope(ctx):
                pre = await rt.check(name, arguments(raw), call_id=ctx.tool_call_id, session=sess)
            if pre.needs_approval:
                return ToolGuardrailFunctionOutput.allow()
            result = await call(ctx, raw, None)
        except AgentsException:
            raise
        except Exception:
            # Allow: the call goes on to the SDK's approval (or to the tool), whose failure
            # the model reads as text; a guardrail that raised would end the run.
            _log.exception("handrail: the argument guardrail of %r failed", name)
            return ToolGuardrailFunctionOutput.allow()
        return ToolGuardrailFunctionOutput.reject_content(
            result.content, output_info=result_artifact(result)
        )

    def artifact(data: FunctionToolCustomDataContext) -> dict[str, Any] | None:
        result = results.pop(data.tool_context.tool_call_id, None)
        return {"handrail": result_artifact(result)} if result is not None else None

    def enabled(wrapper: RunContextWrapper[Any], agent: AgentBase[Any]) -> bool:
        try:
            shown = rt.tools(session=session_for(rt, session, wrapper))
        except Exception:
            # Shown: offering a tool grants nothing (every call goes through `rt.call`), and
            # a call of it tells the model what failed; hidden, the failure would be silent.
            _log.exception("handrail: listing the tools for %r failed", name)
            return True
        return any(t.name == name for t in shown)

    # The SDK reads the invoke function's annotations on every call (`get_type_hints`, to
    # pick the context it passes); as objects rather than this module's postponed strings
    # they cost no `eval`.
    invoke.__annotations__ = {"ctx": ToolContext[Any], "raw": str, "return": ToolOutput}

    def build(params: dict[str, Any], is_strict: bool) -> FunctionTool:
        return FunctionTool(
            name=name,
            description=tool.description,
            params_json_schema=params,
            on_invoke_tool=invoke,
            strict_json_schema=is_strict,
            is_enabled=enabled,
            needs_approval=needs_approval,
            tool_input_guardrails=[
                ToolInputGuardrail(guardrail_function=uninspectable, name="handrail_arguments")
            ],
            custom_data_extractor=artifact,
        )

    if schema is not None:
        try:
            built = build(copy.deepcopy(schema), True)
        except UserError:
            built = None
        # The SDK applies its own strict transform on top; it must leave handrail's form
        # unchanged, or the model would be made to invent values for optional arguments.
        if built is not None and built.params_json_schema == schema:
            return built
        schema = None  # strict off: `arguments` (a closure over it) leaves nulls as sent
    return build(copy.deepcopy(tool.parameters), False)


def _failed(name: str, call_id: str, exc: Exception) -> ToolResult:
    """A failure inside the adapter or the runtime, as a result the model can read."""
    return ToolResult(
        ok=False,
        content=(
            f"The tool `{name}` could not be run: the tool runtime failed internally "
            f"({type(exc).__name__}). Try a different approach."
        ),
        error=ErrorCode.EXECUTION_ERROR,
        summary=f"internal error ({type(exc).__name__})",
        call_id=call_id,
        tool_name=name,
    )


def _reject_constant(value: str) -> NoReturn:
    raise ValueError(f"Invalid JSON constant: {value}")


def _inspectable(raw: str) -> bool:
    """Whether openai-agents can parse `raw` as a JSON object (it asks about anything else)."""
    # Mirrors `agents.util._approvals.parse_function_tool_arguments` (0.24).
    if not raw.strip():
        return False
    try:
        parsed = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        return False
    return isinstance(parsed, dict)


def _output(result: ToolResult, locale: str) -> ToolOutput:
    """The tool's output for the SDK: handrail's text, or its parts when they hold media."""
    if all(isinstance(p, TextPart) for p in result.parts):
        return result.content
    # handrail's OpenAI Responses rendering: the formats and size limits the API takes.
    output = openai_responses_results([result], locale=locale)[0]["output"]
    if isinstance(output, str):
        return result.content  # every part went as its note: the text view says the same
    items: list[ToolOutputText | ToolOutputImage | ToolOutputFileContent] = []
    for item in output:
        if item["type"] == "input_text":
            items.append(ToolOutputText(text=item["text"]))
        elif item["type"] == "input_image":
            items.append(ToolOutputImage(image_url=item["image_url"], detail=item["detail"]))
        else:
            items.append(
                ToolOutputFileContent(file_data=item["file_data"], filename=item["filename"])
            )
    return items
