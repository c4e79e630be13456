"""Hooks: code that runs before and after tool calls, as Python callables or shell commands.

A shell hook receives one JSON document on stdin (session id, cwd, mode, event, tool name,
input, call id; post hooks also the result). Exit code 2 blocks the call and its stderr is shown
to the model; exit 0 may print a JSON object with `decision` (allow / deny / ask), `reason`,
`updated_input` (validated again) and `additional_context` (added to the result). Any other
exit, a crash or a timeout is a hook failure: a pre-tool hook then blocks the call unless it
was configured with `on_error="ignore"`. No hook can allow what a deny rule denies.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._contract import ToolResult
from ..errors import ConfigurationError

__all__ = ["Hook", "HookEvent", "HookEventName", "HookFunc", "HookResponse", "hook_files"]

HookEventName = Literal["pre_tool_use", "post_tool_use", "post_tool_failure"]
HOOK_EVENTS: tuple[HookEventName, ...] = ("pre_tool_use", "post_tool_use", "post_tool_failure")


@dataclass(frozen=True, slots=True, kw_only=True)
class HookEvent:
    """What a hook is told about the call."""

    event: HookEventName
    session_id: str
    cwd: str
    mode: str
    tool_name: str
    tool_input: Mapping[str, Any]
    call_id: str
    result: ToolResult | None = None
    """For post hooks: the result so far."""

    def to_json(self) -> dict[str, Any]:
        """The document a shell hook reads on stdin."""
        doc: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "mode": self.mode,
            "event": self.event,
            "tool_name": self.tool_name,
            "tool_input": dict(self.tool_input),
            "call_id": self.call_id,
        }
        if self.result is not None:
            doc["tool_result"] = {
                "ok": self.result.ok,
                "content": self.result.content,
                "error": self.result.error.value if self.result.error else None,
            }
        return doc


@dataclass(frozen=True, slots=True, kw_only=True)
class HookResponse:
    """What a hook answers. Every field is optional."""

    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""
    updated_input: Mapping[str, Any] | None = None
    additional_context: str = ""


HookFunc = Callable[[HookEvent], "HookResponse | Awaitable[HookResponse | None] | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Hook:
    """One hook: when it runs, for which tools, and what it runs.

    Give exactly one of `command` (a shell command) or `func` (a Python callable).
    """

    event: HookEventName
    matcher: str | None = None
    """Regular expression that must match the whole tool name (or an alias); None: all tools."""
    command: str | None = None
    func: HookFunc | None = None
    timeout: float = 30.0
    """Seconds; at the limit the hook's whole process tree is killed."""
    on_error: Literal["block", "ignore"] = "block"
    """What a failing pre-tool hook means for the call."""
    name: str = ""
    _pattern: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.event not in HOOK_EVENTS:
            raise ConfigurationError(f"unknown hook event {self.event!r}; use one of {HOOK_EVENTS}")
        if (self.command is None) == (self.func is None):
            raise ConfigurationError("a hook needs exactly one of `command` or `func`")
        if self.timeout <= 0:
            raise ConfigurationError("hook timeout must be positive seconds")
        if self.matcher is not None:
            try:
                object.__setattr__(self, "_pattern", re.compile(self.matcher))
            except re.error as exc:
                raise ConfigurationError(f"invalid hook matcher {self.matcher!r}: {exc}") from exc
        if not self.name:
            label = (
                self.command if self.command is not None else getattr(self.func, "__name__", "hook")
            )
            object.__setattr__(self, "name", str(label)[:60])

    def applies_to(self, names: tuple[str, ...]) -> bool:
        """Does the matcher select this tool (by name or alias)?"""
        if self._pattern is None:
            return True
        return any(self._pattern.fullmatch(n) for n in names)


_SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib", "/etc/", "/opt/", "/nix/", "/snap/")


def hook_files(hooks: Sequence[Hook], root: Path) -> tuple[str, ...]:
    """The files hook commands run (`./check.sh`, `python3 hooks/guard.py`), resolved.

    Hooks run outside the sandbox: a tool that could change what one runs could run anything.
    These files, and the folders inside the root that hold them, are hidden like
    handrail's settings (`Runtime` adds them), so no tool reads or writes them or plants a
    module beside them. A word counts when it names an existing file relative to `root` (where
    hooks run) or the home; programs in system folders (`/usr/bin/python3`) do not.
    """
    out: list[str] = []
    home = os.path.realpath(os.path.expanduser("~"))
    base = os.path.realpath(root)
    for hook in hooks:
        if hook.command is None:
            continue
        try:
            words = shlex.split(hook.command)
        except ValueError:
            words = hook.command.split()
        for word in words:
            path = os.path.expanduser(word)
            if "/" not in path and not os.path.isfile(os.path.join(root, path)):
                continue
            real = os.path.realpath(os.path.join(root, path))
            if os.path.isfile(real) and not real.startswith(_SYSTEM_DIRS):
                out.append(real)
                # What lies beside it is what it imports or sources first (Python puts the
                # script's folder first on sys.path): a folder inside the root goes too (one
                # outside it no tool reaches; the root itself stays).
                folder = os.path.dirname(real)
                if folder.startswith(base + os.sep) and folder != home:
                    out.append(folder)
    return tuple(dict.fromkeys(out))
