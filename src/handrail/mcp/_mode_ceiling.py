"""The server's permission mode is the widest any MCP client's session may reach.

A client's session starts in the server's mode and may tighten it (enter plan mode), but
nothing it does may leave it in a wider one: exit_plan_mode returns to the mode before plan
mode, which for a server started in plan mode would be `default`, and an approval answered by
the client's user would widen what the operator chose. `ModeCeilingPolicy` wraps the server's
policy and fails closed on both paths:

- a mode switch (`SwitchMode`) to any mode but the server's own or plan is denied before
  anyone is asked;
- every call is decided as if the session's mode were the server's whenever it is anything but
  those two, whatever changed it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import PermissionMode, PermissionRequest, SwitchMode
from ..permissions import Decision, Policy

__all__ = ["ModeCeilingPolicy", "ceiling_reason"]


def ceiling_reason(ceiling: PermissionMode, target: str) -> str:
    """Why a switch to `target` is refused (the model reads it in the denial)."""
    return (
        f"this server runs in {ceiling.value} mode, the widest mode its clients' sessions may "
        f"use, so the session cannot switch to {target} mode; carry on within {ceiling.value} "
        "mode (its operator chooses the mode: handrail serve --mode)"
    )


class ModeCeilingPolicy(Policy):
    """A policy deciding every call like `inner`, never in a mode wider than `ceiling`.

    Args:
        inner: The server's policy (its rules decide as before).
        ceiling: The server's mode.
    """

    def __init__(self, inner: Policy, ceiling: PermissionMode) -> None:
        # The same rules as `inner`, for code that copies a policy's rules (a sub-agent's).
        super().__init__(allow=inner.allow, ask=inner.ask, deny=inner.deny)
        self.inner = inner
        self.ceiling = ceiling
        self.allowed = frozenset({ceiling, PermissionMode.PLAN})
        """The modes a session may be in: the server's, or the narrower plan mode."""

    def bound(self, mode: PermissionMode) -> PermissionMode:
        """`mode` if a session may be in it, else the server's mode."""
        return mode if mode in self.allowed else self.ceiling

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        """Every call is decided here (so a wider mode cannot skip `decide`), unless in bypass."""
        return self.ceiling is not PermissionMode.BYPASS or self.inner.has_rules_for(names)

    def decide(
        self, *, requests: Sequence[PermissionRequest], mode: PermissionMode, **rest: Any
    ) -> Decision:
        """`inner`'s decision in the bounded mode; a switch past the ceiling is denied."""
        for q in requests:
            if isinstance(q, SwitchMode) and q.mode not in self.allowed:
                return Decision(
                    behavior="deny", reason=ceiling_reason(self.ceiling, q.mode), source="mode"
                )
        # Everything else (names, roots, hooks, ...) passes through as the pipeline gave it.
        return self.inner.decide(requests=requests, mode=self.bound(mode), **rest)
