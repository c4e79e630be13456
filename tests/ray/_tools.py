"""Tools the pool tests run in their hosts (module-level, so they pickle by value).

`coding` is the coding tools; `with_stubborn` adds tools that misbehave on purpose: one that
ignores cancellation without blocking the host (`stubborn`), one that blocks the host's event
loop (`wedge`), so the client's deadline has something to catch.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from handrail import Registry, ToolKind, tool
from handrail.builtin import coding_tools


def coding(root: Path) -> Registry:
    """The coding tools over the session's workspace."""
    return Registry(coding_tools(project_dir=root))


@tool(timeout=1.0, read_only=True)
async def stubborn(seconds: float) -> str:
    """Sleep, and refuse to be cancelled.

    Args:
        seconds: How long to sleep.
    """
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            await asyncio.sleep(end - time.monotonic())
        except asyncio.CancelledError:
            continue
    return "woke up"


@tool(inline=True, read_only=True)
def wedge(seconds: float) -> str:
    """Block the host's event loop.

    Args:
        seconds: How long to block.
    """
    time.sleep(seconds)
    return "unwedged"


@tool(timeout=2.0, kind=ToolKind.EXECUTE)
async def busy(seconds: float) -> str:
    """Hold a command slot for a while, like a test run.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "done"


def with_stubborn(root: Path) -> Registry:
    """The coding tools plus the misbehaving ones."""
    return Registry([*coding_tools(project_dir=root), stubborn, wedge, busy])
