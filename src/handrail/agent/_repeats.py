"""Refusing a call the model keeps repeating: the same call, the same arguments, the same result.

The loop asks `RepeatGuard.refuse` for every call the model makes and tells it each call's
result at the end of the turn. A call is refused once it would be the `limit`-th in a row with
the same name and arguments whose known results were all the same: the model is stuck, and
another identical call would not tell it anything new.
"""

from __future__ import annotations

import json

from .._contract import ToolCall, ToolResult

__all__ = ["RepeatGuard"]

_KEPT = 64
"""Calls remembered (a run of repeats longer than the limit is all that matters)."""


class RepeatGuard:
    """Remembers the latest calls and their results' fingerprints."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        """The same call this many times in a row is refused (0: never)."""
        self._history: list[list[str | None]] = []
        self._running: dict[str, list[str | None]] = {}

    def refuse(self, call: ToolCall, *, blocked: bool = False) -> int | None:
        """Note the call; how many in a row it would make when it is refused, else None.

        `blocked`: the call will not run for another reason (it is noted, never refused here).
        """
        count = 0 if blocked else self._repeats(call) + 1
        entry: list[str | None] = [_call_key(call), None]
        self._history.append(entry)
        del self._history[:-_KEPT]
        if blocked:
            return None
        if count >= self.limit > 0:
            return count
        self._running[call.id] = entry
        return None

    def finished(self, call_id: str, result: ToolResult) -> None:
        """The result of a call `refuse` let through (its fingerprint counts from now on)."""
        entry = self._running.pop(call_id, None)
        if entry is not None:
            entry[1] = f"{result.ok}\0{result.error}\0{result.content}"

    def clear(self) -> None:
        """Forget every call (a new conversation)."""
        self._history.clear()
        self._running.clear()

    def _repeats(self, call: ToolCall) -> int:
        """How many calls just before this one were the same, with the same known results."""
        key = _call_key(call)
        count, seen = 0, None
        for k, fingerprint in reversed(self._history):
            if k != key:
                break
            if fingerprint is not None:
                if seen is not None and fingerprint != seen:
                    break
                seen = fingerprint
            count += 1
        return count


def _call_key(call: ToolCall) -> str:
    args = call.arguments
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return f"{call.name}\0{args}"
    try:
        return f"{call.name}\0{json.dumps(args, sort_keys=True, default=str)}"
    except (TypeError, ValueError):
        return f"{call.name}\0{args!r}"
