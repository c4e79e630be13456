"""The agent layer: model clients, the agent loop, sub-agents, sessions.

A model client speaks one wire format (`openai_chat`, `openai_responses`, `anthropic`,
`gemini`) over plain httpx with streaming; the `Agent` loop sends the conversation, hands each
tool call to the `Runtime` the moment its arguments are complete (so tools run while the model
is still writing), and sends the results back, until the model answers. Everything a front end
shows comes from one typed event stream, whose tool events carry each call's `Display`; the
loop renders nothing. The terminal front end (`handrail chat`) lives in `_terminal`, the only
place that imports rich's live display and prompt_toolkit.

```python
from handrail import Registry, Runtime
from handrail.agent import Agent, ModelClient
from handrail.builtin import coding_tools

rt = Runtime(Registry(coding_tools()), root=".", mode="accept_edits")
agent = Agent(ModelClient.from_spec("deepseek:deepseek-chat"), rt)
result = await agent.run("Find the slowest test and make it faster.")
print(result.subtype, result.result)
```

Invariants: every tool call the model makes gets exactly one result before the next request
(interrupts and refusals included); a sub-agent's policy is its parent's narrowed, never
widened; nothing raises out of `Agent.run` for what a model or a tool does (`RunResult` says
how the run ended); the API key never reaches a transcript or a log.
"""

from __future__ import annotations

from ..errors import ModelError as ModelError
from ._budget import Budget as Budget
from ._catalog import PRESETS as PRESETS
from ._catalog import ModelInfo as ModelInfo
from ._catalog import Preset as Preset
from ._catalog import Prices as Prices
from ._catalog import model_info as model_info
from ._cleanup import Cleaned as Cleaned
from ._cleanup import clean_sessions as clean_sessions
from ._client import ModelClient as ModelClient
from ._codecs import ModelRequest as ModelRequest
from ._compaction import CompactionSettings as CompactionSettings
from ._conversation import AssistantMessage as AssistantMessage
from ._conversation import Message as Message
from ._conversation import ToolResults as ToolResults
from ._conversation import Usage as Usage
from ._conversation import UserMessage as UserMessage
from ._definitions import AgentDefinition as AgentDefinition
from ._definitions import load_definitions as load_definitions
from ._events import ApprovalAnswered as ApprovalAnswered
from ._events import ApprovalAsked as ApprovalAsked
from ._events import Compacted as Compacted
from ._events import Event as Event
from ._events import ModelRetry as ModelRetry
from ._events import Notice as Notice
from ._events import ReasoningDelta as ReasoningDelta
from ._events import RunFinished as RunFinished
from ._events import RunResult as RunResult
from ._events import RunStarted as RunStarted
from ._events import TextDelta as TextDelta
from ._events import ToolCallFinished as ToolCallFinished
from ._events import ToolCallProgress as ToolCallProgress
from ._events import ToolCallStarted as ToolCallStarted
from ._events import TurnEnded as TurnEnded
from ._events import TurnStarted as TurnStarted
from ._loop import Agent as Agent
from ._loop import EventFunc as EventFunc
from ._loop import Model as Model
from ._narrow import NarrowedPolicy as NarrowedPolicy
from ._rewind import Rewound as Rewound
from ._rewind import TurnCheckpoint as TurnCheckpoint
from ._sessions import PromptMark as PromptMark
from ._sessions import SavedSession as SavedSession
from ._sessions import find_session as find_session
from ._sessions import is_own_session as is_own_session
from ._sessions import latest_session as latest_session
from ._sessions import load_session as load_session
from ._sessions import state_dir as state_dir
from ._subagents import AgentTool as AgentTool

__all__ = [
    "PRESETS",
    "Agent",
    "AgentDefinition",
    "AgentTool",
    "ApprovalAnswered",
    "ApprovalAsked",
    "AssistantMessage",
    "Budget",
    "Cleaned",
    "Compacted",
    "CompactionSettings",
    "Event",
    "EventFunc",
    "Message",
    "Model",
    "ModelClient",
    "ModelError",
    "ModelInfo",
    "ModelRequest",
    "ModelRetry",
    "NarrowedPolicy",
    "Notice",
    "Preset",
    "Prices",
    "PromptMark",
    "ReasoningDelta",
    "Rewound",
    "RunFinished",
    "RunResult",
    "RunStarted",
    "SavedSession",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolResults",
    "TurnCheckpoint",
    "TurnEnded",
    "TurnStarted",
    "Usage",
    "UserMessage",
    "clean_sessions",
    "find_session",
    "is_own_session",
    "latest_session",
    "load_definitions",
    "load_session",
    "model_info",
    "state_dir",
]


def _publish() -> None:
    # Tracebacks and reprs name the public path (`handrail.agent.Agent`).
    for name in __all__:
        obj = globals()[name]
        if getattr(obj, "__module__", "").startswith("handrail.agent."):
            try:
                obj.__module__ = __name__
            except (AttributeError, TypeError):
                pass


_publish()
