"""handrail inside other agent frameworks: its tools, checks and approvals in their loops.

One module per framework, each behind its extra, each importing only its own framework:

- `handrail.integrations.pydantic_ai` (`pip install "handrail[pydantic-ai]"`): `toolset(rt)`,
  a pydantic-ai toolset;
- `handrail.integrations.openai_agents` (`pip install "handrail[openai-agents]"`):
  `function_tools(rt)`, openai-agents function tools;
- `handrail.integrations.langchain` (`pip install "handrail[langchain]"`): `tools(rt)`,
  LangChain tools for LangGraph and `create_agent`.

Invariants, whichever the framework: every call goes through `Runtime.call`, so handrail
validates the arguments (its INVALID_ARGS text is what the model reads), checks permissions,
runs the tool in its sandbox and keeps a session's unsafe calls from overlapping. A call that
would ask becomes the framework's own human-in-the-loop pause, and its answer comes back as a
stateless `approval=`, so a run resumed from saved state (a new process, a new `Runtime`) runs
the call exactly once and nothing is left pending. Failures go back to the model as text,
never as exceptions out of the framework's loop. The framework's own context for a call is
`ToolContext.host` inside a handrail tool (`host_scope`).

Nothing in handrail's core imports this package.
"""

from __future__ import annotations

from .._context import host_scope as host_scope
from ._common import Portal as Portal
from ._common import SessionArg as SessionArg
from ._common import approval_payload as approval_payload
from ._common import portal_for as portal_for
from ._common import result_artifact as result_artifact

__all__ = [
    "Portal",
    "SessionArg",
    "approval_payload",
    "host_scope",
    "portal_for",
    "result_artifact",
]
