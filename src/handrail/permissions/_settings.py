"""Settings files: user, project (`.handrail/settings.json`) and personal project settings.

The user file is `~/.config/handrail/settings.json`; `.handrail/settings.local.json` holds one
person's project settings (not for version control).

Both are merged: lists are concatenated (so a deny rule anywhere wins), and for single values
the project file overrides the user file. A malformed file is a setup error naming the file and
the problem, never silently ignored.

```json
{
  "permissions": {"allow": ["run_shell(npm test:*)"], "ask": [], "deny": ["web_fetch"],
                  "default_mode": "default"},
  "disabled_tools": ["web_fetch"],
  "features": {"experimental_x": true},
  "locale": "en",
  "hooks": {"pre_tool_use": [{"matcher": "edit_file|write_file", "command": "./check.sh",
                              "timeout": 10, "on_error": "block"}]}
}
```
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._context import PermissionMode
from ..errors import ConfigurationError
from ._hooks import Hook
from ._rules import parse_rule

__all__ = ["Settings", "load_settings", "user_settings_path"]


class _HookSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str
    matcher: str | None = None
    timeout: float = Field(30.0, gt=0)
    on_error: Literal["block", "ignore"] = "block"


class _Permissions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []
    default_mode: PermissionMode | None = None


class _Hooks(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pre_tool_use: list[_HookSpec] = []
    post_tool_use: list[_HookSpec] = []
    post_tool_failure: list[_HookSpec] = []


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    permissions: _Permissions = _Permissions()
    disabled_tools: list[str] = []
    features: dict[str, bool] = {}
    locale: Literal["en", "zh"] | None = None
    hooks: _Hooks = _Hooks()
    tools: dict[str, dict[str, Any]] = {}
    """Per-tool settings, passed to tools as `ctx.settings`."""
    hidden_paths: list[str] = []
    """More paths no tool may read or list, and the shell cannot see (`~` is expanded)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Merged settings from every file that exists."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_mode: PermissionMode | None = None
    disabled_tools: tuple[str, ...] = ()
    features: Mapping[str, bool] = field(default_factory=dict[str, bool])
    locale: str | None = None
    hooks: tuple[Hook, ...] = ()
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    hidden_paths: tuple[str, ...] = ()
    """More paths hidden from every tool, on top of the built-in secret locations."""
    sources: tuple[Path, ...] = ()
    """The files these settings were read from."""

    def merged_with(self, other: Settings) -> Settings:
        """`other` layered on top of this one: lists concatenated, other's scalars win."""
        return Settings(
            allow=self.allow + other.allow,
            ask=self.ask + other.ask,
            deny=self.deny + other.deny,
            default_mode=other.default_mode or self.default_mode,
            disabled_tools=self.disabled_tools + other.disabled_tools,
            features={**self.features, **other.features},
            locale=other.locale or self.locale,
            hooks=self.hooks + other.hooks,
            tools={**self.tools, **other.tools},
            hidden_paths=self.hidden_paths + other.hidden_paths,
            sources=self.sources + other.sources,
        )


def user_settings_path() -> Path:
    """`~/.config/handrail/settings.json` (respecting XDG_CONFIG_HOME)."""
    import os

    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "handrail" / "settings.json"


def read_settings_file(path: Path) -> Settings:
    """Read one settings file; any problem is a `ConfigurationError` naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigurationError(f"cannot read settings file {path}: {exc.strerror}") from exc
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"settings file {path} is not valid JSON: {exc.msg} "
            f"at line {exc.lineno}, column {exc.colno}"
        ) from exc
    try:
        parsed = _File.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"settings file {path} is invalid: {problems}") from exc
    perms = parsed.permissions
    for rule in (*perms.allow, *perms.ask, *perms.deny):
        try:
            parse_rule(rule)
        except ConfigurationError as exc:
            raise ConfigurationError(f"settings file {path}: {exc}") from exc
    hooks: list[Hook] = []
    for event in ("pre_tool_use", "post_tool_use", "post_tool_failure"):
        specs: Sequence[_HookSpec] = getattr(parsed.hooks, event)
        for spec in specs:
            try:
                hooks.append(
                    Hook(
                        event=event,
                        matcher=spec.matcher,
                        command=spec.command,
                        timeout=spec.timeout,
                        on_error=spec.on_error,
                    )
                )
            except ConfigurationError as exc:
                raise ConfigurationError(f"settings file {path}: {exc}") from exc
    return Settings(
        allow=tuple(perms.allow),
        ask=tuple(perms.ask),
        deny=tuple(perms.deny),
        default_mode=perms.default_mode,
        disabled_tools=tuple(parsed.disabled_tools),
        features=parsed.features,
        locale=parsed.locale,
        hooks=tuple(hooks),
        tools=parsed.tools,
        hidden_paths=tuple(parsed.hidden_paths),
        sources=(path,),
    )


LOCAL_SETTINGS = Path(".handrail") / "settings.local.json"
"""Personal project settings (not meant for version control): "allow always" answers go here."""


def load_settings(project_root: Path | None = None, *, user_path: Path | None = None) -> Settings:
    """Merge the settings files that exist: user, then project, then personal project settings.

    Later files override single values; rule lists are concatenated.
    """
    settings = Settings()
    user = user_path if user_path is not None else user_settings_path()
    if user.is_file():
        settings = settings.merged_with(read_settings_file(user))
    if project_root is not None:
        for project in (
            project_root / ".handrail" / "settings.json",
            project_root / LOCAL_SETTINGS,
        ):
            if project.is_file():
                settings = settings.merged_with(read_settings_file(project))
    return settings
