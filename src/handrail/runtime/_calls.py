"""What the pipeline hands from stage to stage: one call prepared, paused or running.

`Prepared` is a call that passed stages 1-3, `Pending` one stopped at stage 6 until the host
answers, `RunState` records why a running call's task was cancelled, and `Plan` is what the
pipeline works out once per tool (which stages it may skip). Values only: no stage lives here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .._context import Session, ToolContext
from .._contract import ApprovalRequest, Approver, ProgressEvent, ToolCall
from .._tool import Tool
from ..permissions import Hook

ProgressFunc = Callable[[ProgressEvent], None]


@dataclass(slots=True)
class Prepared:
    """A call that passed stages 1-3: the tool and its validated arguments."""

    call: ToolCall
    tool: Tool
    args: Any
    t0: float


@dataclass(slots=True)
class Pending:
    """A call stopped at stage 6, waiting for the host's answer."""

    prepared: Prepared
    session: Session
    request: ApprovalRequest
    context_notes: list[str] = field(default_factory=list[str])
    approver: Approver | None = None
    """The call's own approver, which its tool keeps once the call is answered."""


@dataclass(slots=True, frozen=True)
class Plan:
    """What the pipeline needs to know about one tool, worked out once (stages it can skip)."""

    names: tuple[str, ...]
    check: bool
    """The tool has its own validate_input."""
    requests: bool
    """The tool declares permission requests."""
    rules: bool
    """The policy has rules for this tool (`Policy.has_rules_for`), so it must decide."""
    pre: tuple[Hook, ...]
    post: bool
    """Some post hook may apply."""
    context: bool
    """A ToolContext must be built."""
    timeout: float | None
    thread: bool
    """A sync tool that runs on a worker thread."""
    read_only: bool | None
    """The read-only flag when it does not depend on the input, else None."""
    safe: bool | None = None
    """The concurrency-safe flag when it does not depend on the input, else None."""


@dataclass(slots=True)
class RunState:
    """Why a running call's task was cancelled (timeout, host cancel, sibling failure)."""

    reason: Literal["timeout", "cancel", "sibling"] | None = None
    message: str = ""
    task: asyncio.Task[Any] | None = None
    ctx: ToolContext | None = None
    progress: ProgressFunc | None = None
    safe: bool | None = None
    """The call's concurrency safety, when the scheduler has worked it out already."""
    ends: float | None = None
    """When its time limit ends (`time.monotonic()`), once it runs."""
