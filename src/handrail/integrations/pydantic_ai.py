"""handrail's tools in a pydantic-ai agent: `toolset(rt)`, a pydantic-ai toolset.

```python
from pydantic_ai import Agent, DeferredToolRequests
from handrail.integrations.pydantic_ai import toolset

agent = Agent(model, toolsets=[toolset(rt)], output_type=[str, DeferredToolRequests])
```

Every call goes through `Runtime.call`: handrail validates the arguments (pydantic-ai's own
validation is a pass-through, so even malformed JSON reaches handrail and the model reads
handrail's INVALID_ARGS text), checks permissions, runs the tool in its sandbox and keeps a
session's unsafe calls from overlapping. How each outcome reaches pydantic-ai:

- an ask raises `ApprovalRequired` (the run ends with `DeferredToolRequests`, whose `metadata`
  carries handrail's reason and suggested rules); nothing stays pending in the runtime. The
  resumed call is answered statelessly (`approval=`), so a run resumed from saved message
  history, by a new `Runtime` in a new process, runs the call exactly once.
  `ToolApproved(override_args=...)` runs the edited arguments, validated again, with a note
  to the model; `DeferredToolResults.metadata[call_id] = {"allow_always": True}` (and an
  optional `"rule"`) also adds session allow rules; `ToolDenied` never reaches the toolset,
  so nothing runs;
- INVALID_ARGS and TOOL_NOT_FOUND raise `ModelRetry` with handrail's text (it counts against
  the tool's retry budget, `max_retries`); any other failure raises `ToolFailed` with
  handrail's text (the model sees it and adapts; no retry budget is used);
- a success returns a `ToolReturn`: handrail's content (images and audio as `BinaryContent`)
  for the model, and `result_artifact(result)` as its `metadata` for the application.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal, cast

try:
    from pydantic_ai import (
        ApprovalRequired,
        BinaryContent,
        ModelRetry,
        RunContext,
        ToolFailed,
        ToolReturn,
    )
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as _import_error:  # pragma: no cover - the extra is installed in CI
    raise ImportError(
        'handrail.integrations.pydantic_ai needs pydantic-ai: pip install "handrail[pydantic-ai]"'
    ) from _import_error

from .._context import Session, host_scope
from .._contract import Approval, AudioPart, ImagePart, Interrupted, ToolResult, part_note
from .._tool import Tool
from ..errors import ConfigurationError
from ..permissions import parse_rule
from ..runtime import Runtime
from ._common import (
    RETRY_CODES,
    SessionArg,
    approval_payload,
    cannot_ask,
    result_artifact,
    session_for,
)

__all__ = ["HandrailToolset", "toolset"]

_log = logging.getLogger(__name__)

_RAW = "__handrail_raw_arguments__"
"""The key under which the pass-through validator keeps arguments that are not a JSON object
(malformed JSON, a list), so they reach handrail as the model wrote them."""


def toolset(
    rt: Runtime,
    *,
    session: SessionArg = None,
    id: str = "handrail",
    max_retries: int = 3,
) -> HandrailToolset:
    """The runtime's tools as a pydantic-ai toolset.

    ```python
    agent = Agent(model, toolsets=[toolset(rt)], output_type=[str, DeferredToolRequests])
    ```

    Args:
        rt: The runtime whose tools the agent calls.
        session: The handrail `Session` the calls run in: one session, a function of the
            pydantic-ai `RunContext` that picks one per conversation (from `ctx.deps` or
            `ctx.conversation_id`, say), or None for the runtime's own session. Read-before-edit
            records, activated tools and "allow always" rules live in the session.
        id: The toolset's id, unique among the agent's toolsets (pydantic-ai's durable
            execution names activities after it).
        max_retries: How many INVALID_ARGS / TOOL_NOT_FOUND answers per tool the model may
            get before pydantic-ai ends the run (`UnexpectedModelBehavior`). Other failures do
            not count.
    """
    return HandrailToolset(rt, session=session, id=id, max_retries=max_retries)


class HandrailToolset(AbstractToolset[Any]):
    """A handrail `Runtime`'s tools as a pydantic-ai toolset (build one with `toolset`).

    The tools are listed again at every step, from `Runtime.tools` for the call's session, so
    tools activated through `tool_search` appear at once. A tool that is not concurrency-safe
    for every input is `sequential` (pydantic-ai runs it alone, in order); handrail's session
    gate keeps unsafe calls apart too, whatever the framework does.
    """

    def __init__(
        self,
        rt: Runtime,
        *,
        session: SessionArg = None,
        id: str = "handrail",
        max_retries: int = 3,
    ) -> None:
        if max_retries < 0:
            raise ConfigurationError("max_retries must be 0 or more")
        self._rt = rt
        self._session = session
        self._id = id
        self._max_retries = max_retries
        # One `ToolsetTool` per tool, made again only when the tool's schema object changes
        # (the list is asked for at every step; native tools build theirs once, too).
        self._made: dict[str, tuple[Tool, object, ToolsetTool[Any]]] = {}

    @property
    def id(self) -> str:
        """The toolset's id, unique among the agent's toolsets."""
        return self._id

    @property
    def runtime(self) -> Runtime:
        """The runtime every call goes through."""
        return self._rt

    @property
    def max_retries(self) -> int:
        """INVALID_ARGS / TOOL_NOT_FOUND answers per tool before pydantic-ai ends the run."""
        return self._max_retries

    def session_for(self, ctx: RunContext[Any]) -> Session:
        """The handrail session the calls of this pydantic-ai context run in."""
        return session_for(self._rt, self._session, ctx)

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The usage notes of the tools shown now (rules and pitfalls for the system prompt)."""
        notes = self._rt.usage_notes(session=self.session_for(ctx))
        return notes or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The tools to show the model at this step, as `Runtime.tools` lists them."""
        return {
            tool.name: self._toolset_tool(tool)
            for tool in self._rt.tools(session=self.session_for(ctx))
        }

    def _toolset_tool(self, tool: Tool) -> ToolsetTool[Any]:
        made = self._made.get(tool.name)
        schema = tool.parameters
        if made is not None and made[0] is tool and made[1] is schema:
            return made[2]
        built = ToolsetTool(
            toolset=self,
            tool_def=_tool_def(tool),
            max_retries=self._max_retries,
            args_validator=_PASS_THROUGH,
        )
        self._made[tool.name] = (tool, schema, built)
        return built

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run one call through `Runtime.call` and turn its result into pydantic-ai's terms.

        Raises:
            ApprovalRequired: The call asks for approval (handrail's reason in `metadata`).
            ModelRetry: The arguments are invalid or the tool is unknown (handrail's text).
            ToolFailed: Any other failure (handrail's text).
        """
        try:
            with host_scope(ctx):
                return await self._call(name, tool_args, ctx)
        except (ApprovalRequired, ModelRetry, ToolFailed):
            raise
        except Exception as exc:  # the framework's loop must not see anything else
            _log.exception("handrail: the call of %r failed inside the adapter", name)
            raise ToolFailed(
                f"The tool `{name}` could not be run: the tool runtime failed internally "
                f"({type(exc).__name__}). Try a different approach."
            ) from exc

    async def _call(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        rt = self._rt
        sess = self.session_for(ctx)
        arguments = _arguments(tool_args)
        approval: Approval | None = None
        if ctx.tool_call_approved:
            arguments, approval = _answer(ctx, arguments)
        result = await rt.call(
            name, arguments, call_id=ctx.tool_call_id, session=sess, approval=approval
        )
        if isinstance(result, Interrupted):
            rt.discard(result)
            if result.approval is None or approval is not None:
                # Answered and still waiting: asking again would loop, so the model is told.
                raise ToolFailed(cannot_ask(result))
            raise ApprovalRequired(metadata=approval_payload(result.approval))
        if result.ok:
            content = _model_content(result, rt.locale)
            return ToolReturn(return_value=content, metadata=result_artifact(result))
        if result.error in RETRY_CODES:
            raise ModelRetry(result.content)
        raise ToolFailed(result.content)


class _PassThrough:
    """An arguments validator that accepts anything, so that handrail is the one that validates.

    A JSON object becomes a dict; anything else (malformed JSON, a list, a string) is kept as
    the model wrote it under `_RAW`, and reaches handrail unchanged.
    """

    def validate_json(
        self,
        input: str | bytes | bytearray,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return _as_arguments(input)

    def validate_python(
        self,
        input: Any,
        *,
        allow_partial: bool | Literal["off", "on", "trailing-strings"] = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return _as_arguments(input)


_PASS_THROUGH = _PassThrough()


def _as_arguments(raw: Any) -> dict[str, Any]:
    """The model's arguments as pydantic-ai passes them on: a dict, or the raw form under `_RAW`."""
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if isinstance(raw, str):
        try:
            value: Any = json.loads(raw)
        except ValueError:
            return {_RAW: raw}
        if isinstance(value, dict):
            return cast(dict[str, Any], value)
        return {_RAW: raw}
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in cast(Mapping[Any, Any], raw).items()}
    return {_RAW: raw}


def _arguments(tool_args: Mapping[str, Any]) -> str | Mapping[str, Any]:
    """What `Runtime.call` receives: the dict, or the raw text kept under `_RAW`."""
    if _RAW not in tool_args:
        return tool_args
    raw = tool_args[_RAW]
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw)
    except (TypeError, ValueError):
        return repr(raw)


def _answer(
    ctx: RunContext[Any], arguments: str | Mapping[str, Any]
) -> tuple[str | Mapping[str, Any], Approval]:
    """The approval pydantic-ai gave this call, as handrail's `Approval` (no adapter state).

    pydantic-ai resumes an approved call with `tool_args` set to `ToolApproved.override_args`
    when the user edited them: arguments that differ from the model's call are an edit.
    `DeferredToolResults.metadata[call_id] = {"allow_always": True}` (optionally with a
    `"rule"`) answers "allow always" instead of once.
    """
    original = _original_arguments(ctx)
    if original is not None and _arguments(original) != arguments:
        return _arguments(original), Approval.edit(arguments)
    meta = ctx.tool_call_metadata
    if isinstance(meta, Mapping) and cast(Mapping[str, Any], meta).get("allow_always"):
        rule = cast(Mapping[str, Any], meta).get("rule")
        if rule is not None and not _valid_rule(rule):
            # The user approved this call at least; a rule that cannot be read adds nothing.
            _log.warning("handrail: ignoring the allow-always rule %r: not a valid rule", rule)
            return arguments, Approval.allow_once()
        return arguments, Approval.allow_always(rule)
    return arguments, Approval.allow_once()


def _valid_rule(rule: object) -> bool:
    if not isinstance(rule, str):
        return False
    try:
        parse_rule(rule)
    except ConfigurationError:
        return False
    return True


def _original_arguments(ctx: RunContext[Any]) -> dict[str, Any] | None:
    """The arguments of the model's own call `ctx.tool_call_id`, from the message history."""
    for message in reversed(ctx.messages):
        if not isinstance(message, ModelResponse):
            continue
        for part in message.parts:
            if isinstance(part, ToolCallPart) and part.tool_call_id == ctx.tool_call_id:
                return _as_arguments(part.args if part.args is not None else {})
    return None


def _tool_def(tool: Tool) -> ToolDefinition:
    return ToolDefinition(
        name=tool.name,
        parameters_json_schema=copy.deepcopy(tool.parameters),
        description=tool.description,
        # None lets pydantic-ai decide per provider; True would force every property required.
        strict=None,
        # An input-dependent flag (run_shell) may be unsafe for some input: a barrier then.
        sequential=tool.concurrency_safe is not True,
    )


def _model_content(result: ToolResult, locale: str) -> str | list[str | BinaryContent]:
    """What the model reads: the text, with images and audio kept as binary content."""
    if not any(isinstance(p, ImagePart | AudioPart) for p in result.parts):
        return result.content
    content: list[str | BinaryContent] = []
    for part in result.parts:
        if isinstance(part, ImagePart | AudioPart):
            data = base64.b64decode(part.data)
            content.append(BinaryContent(data=data, media_type=part.mime_type))
        elif note := part_note(part, locale):
            content.append(note)
    return content
