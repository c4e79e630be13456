"""handrail: a tool runtime for LLM agents.

A model emits tool calls; handrail finds the tool, validates the arguments, checks permissions,
runs it with a time limit, runs independent calls in parallel (even while the model is still
streaming), and hands back one uniform `ToolResult`, whatever happened.

Layers (imports flow one way; pyproject.toml's import-linter contract checks this order):
`_atomic` (crash-safe file replacement) -> `_i18n` (sentence lookup) -> `_contract` (values)
-> `display` (how a call looks, as data) -> `errors` -> `validation` -> `_context` -> `_tool`
-> `_registry` -> `permissions` -> `sandbox` -> `runtime` -> `builtin` -> `providers` -> `mcp`,
`integrations` (handrail inside pydantic-ai, openai-agents and LangChain, each adapter
importing only its own framework) and `ray` (session hosts on a Ray cluster), side by side
-> `agent` (with the terminal UI in
`agent._terminal`) -> `_cli`; `testing` (the scripted model server) stands alone.
"""

from __future__ import annotations

import gc as _gc

# Importing handrail (and pydantic under it) creates tens of thousands of objects, none of
# them garbage; the collector would walk them several times on the way (about a fifth of the
# import). It is paused for the import and resumed as it was.
_collecting = _gc.isenabled()
_gc.disable()
try:
    from ._context import FileRecord as FileRecord
    from ._context import Grant as Grant
    from ._context import PermissionMode as PermissionMode
    from ._context import Session as Session
    from ._context import StateUpdate as StateUpdate
    from ._context import ToolContext as ToolContext
    from ._contract import Approval as Approval
    from ._contract import ApprovalRequest as ApprovalRequest
    from ._contract import Approver as Approver
    from ._contract import AudioPart as AudioPart
    from ._contract import Confirmation as Confirmation
    from ._contract import ContentPart as ContentPart
    from ._contract import Denial as Denial
    from ._contract import Elicitation as Elicitation
    from ._contract import ErrorCode as ErrorCode
    from ._contract import FetchUrl as FetchUrl
    from ._contract import ImagePart as ImagePart
    from ._contract import Interrupted as Interrupted
    from ._contract import PermissionRequest as PermissionRequest
    from ._contract import Preflight as Preflight
    from ._contract import ProgressEvent as ProgressEvent
    from ._contract import Question as Question
    from ._contract import ReadPath as ReadPath
    from ._contract import ResourceLinkPart as ResourceLinkPart
    from ._contract import ResourcePart as ResourcePart
    from ._contract import RunCommand as RunCommand
    from ._contract import Sampler as Sampler
    from ._contract import SamplingMessage as SamplingMessage
    from ._contract import SamplingRequest as SamplingRequest
    from ._contract import SamplingResult as SamplingResult
    from ._contract import SwitchMode as SwitchMode
    from ._contract import TextPart as TextPart
    from ._contract import ToolCall as ToolCall
    from ._contract import ToolKind as ToolKind
    from ._contract import ToolResult as ToolResult
    from ._contract import ValidationIssue as ValidationIssue
    from ._contract import WritePath as WritePath
    from ._contract import parts_text as parts_text
    from ._registry import Registry as Registry
    from ._tool import Flag as Flag
    from ._tool import FunctionTool as FunctionTool
    from ._tool import JsonSchemaTool as JsonSchemaTool
    from ._tool import Tool as Tool
    from ._tool import tool as tool
    from ._version import __version__ as __version__
    from .display import CallProgress as CallProgress
    from .display import CallStatus as CallStatus
    from .display import CallView as CallView
    from .display import DiffBody as DiffBody
    from .display import Display as Display
    from .display import DisplayGroup as DisplayGroup
    from .display import TableBody as TableBody
    from .display import TextBody as TextBody
    from .errors import ConfigurationError as ConfigurationError
    from .errors import HandrailError as HandrailError
    from .errors import ToolFailure as ToolFailure
    from .permissions import Hook as Hook
    from .permissions import HookEvent as HookEvent
    from .permissions import HookResponse as HookResponse
    from .permissions import Settings as Settings
    from .runtime import Batch as Batch
    from .runtime import Runtime as Runtime
    from .runtime import StreamingExecutor as StreamingExecutor
finally:
    if _collecting:
        _gc.enable()

__all__ = [
    "Approval",
    "ApprovalRequest",
    "Approver",
    "AudioPart",
    "Batch",
    "CallProgress",
    "CallStatus",
    "CallView",
    "ConfigurationError",
    "Confirmation",
    "ContentPart",
    "Denial",
    "DiffBody",
    "Display",
    "DisplayGroup",
    "Elicitation",
    "ErrorCode",
    "FetchUrl",
    "FileRecord",
    "Flag",
    "FunctionTool",
    "Grant",
    "HandrailError",
    "Hook",
    "HookEvent",
    "HookResponse",
    "ImagePart",
    "Interrupted",
    "PermissionMode",
    "PermissionRequest",
    "Preflight",
    "ProgressEvent",
    "Question",
    "ReadPath",
    "Registry",
    "ResourceLinkPart",
    "ResourcePart",
    "RunCommand",
    "Runtime",
    "Sampler",
    "SamplingMessage",
    "SamplingRequest",
    "SamplingResult",
    "Session",
    "Settings",
    "StateUpdate",
    "StreamingExecutor",
    "SwitchMode",
    "TableBody",
    "TextBody",
    "TextPart",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolFailure",
    "ToolKind",
    "ToolResult",
    "ValidationIssue",
    "WritePath",
    "__version__",
    "parts_text",
    "tool",
]


def _publish() -> None:
    # Tracebacks and reprs name the public path (`handrail.Runtime`), not the private module.
    for name in __all__:
        obj = globals()[name]
        if getattr(obj, "__module__", "").startswith("handrail."):
            try:
                obj.__module__ = "handrail"
            except (AttributeError, TypeError):
                pass


_publish()
