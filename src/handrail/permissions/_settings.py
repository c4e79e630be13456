"""Settings files: user, project (`.handrail/settings.json`) and personal project settings.

The user file is `~/.config/handrail/settings.json`; `.handrail/settings.local.json` holds one
person's project settings (not for version control).

Both are merged: lists are concatenated (so a deny rule anywhere wins), and for single values
the project file overrides the user file. A malformed file is a setup error naming the file and
the problem, never silently ignored.

A project's files come with the checkout, so until the user trusts the folder (`_trust.py`,
`handrail trust DIR`) they may only narrow: deny and ask rules, `hidden_paths`,
`disabled_tools`, `locale`, features turned off and a default mode no wider than `default`
(`default`, `plan`, `dont_ask`) apply; allow rules, hooks, per-tool settings, features turned
on and the `accept_edits` / `bypass` modes are left out, each file's refusals named once in
`Settings.refused` and logged. The user's own file and an explicit settings file are trusted.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._context import PermissionMode
from ..errors import ConfigurationError
from ._hooks import Hook
from ._rules import parse_rule
from ._trust import (
    LOCAL_SETTINGS_FILE,
    SETTINGS_FILE,
    FolderConfig,
    is_trusted,
    printable,
    read_folder_config,
    refusal_notice,
    report_refused,
)

__all__ = [
    "Settings",
    "load_settings",
    "narrowed",
    "parse_settings",
    "project_settings",
    "read_settings_file",
    "user_settings_path",
    "widening_items",
]


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
    refused: tuple[str, ...] = ()
    """One notice per untrusted project file that held more than it may set: what was left
    out, and the command that trusts the folder."""

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
            refused=self.refused + other.refused,
        )


def user_settings_path() -> Path:
    """`~/.config/handrail/settings.json` (respecting XDG_CONFIG_HOME)."""
    import os

    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "handrail" / "settings.json"


def read_settings_file(path: Path) -> Settings:
    """Read one settings file; any problem is a `ConfigurationError` naming the file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read settings file {path}: {exc.strerror}") from exc
    return parse_settings(data, path)


def parse_settings(data: bytes, path: Path) -> Settings:
    """Parse the contents of one settings file (`path` names it in errors and `sources`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"settings file {path} is not UTF-8 text: {exc.reason}") from exc
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
    if any("\x00" in item or not item.strip() for item in parsed.hidden_paths):
        raise ConfigurationError(
            f"settings file {path}: hidden_paths holds an empty path or one with a NUL byte"
        )
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


LOCAL_SETTINGS = LOCAL_SETTINGS_FILE
"""Personal project settings (not meant for version control): "allow always" answers go here."""

_NARROW_MODES = frozenset({PermissionMode.DEFAULT, PermissionMode.PLAN, PermissionMode.DONT_ASK})
"""Modes an untrusted folder may choose: none runs more without asking than `default` does
(`plan` runs less, `dont_ask` denies what would ask)."""


def widening_items(settings: Settings, *, limit: int | None = 200) -> tuple[str, ...]:
    """What in `settings` only a trusted folder may set, one short phrase per kind.

    Allow rules, hooks (they run commands), per-tool settings (they can lift the sandbox or
    widen its paths), features turned on, and a default mode wider than `default`. Each value
    is escaped and cut to `limit` characters (None: whole, to show before trusting).
    """

    def shown(text: str) -> str:
        return printable(text, limit)

    items: list[str] = []
    if settings.allow:
        items.append("allow rules " + ", ".join(shown(r) for r in settings.allow))
    if settings.default_mode is not None and settings.default_mode not in _NARROW_MODES:
        items.append(f"default_mode {settings.default_mode.value}")
    if settings.hooks:
        hooks = (f"{h.event} {shown(h.command or h.name)}" for h in settings.hooks)
        items.append("hooks " + ", ".join(hooks))
    if settings.tools:
        tools = (
            f"{shown(name)} {shown(json.dumps(dict(config), ensure_ascii=False))}"
            for name, config in settings.tools.items()
        )
        items.append("tool settings " + ", ".join(tools))
    enabled = [name for name, on in settings.features.items() if on]
    if enabled:
        items.append("features " + ", ".join(shown(n) for n in enabled))
    return tuple(items)


def narrowed(settings: Settings) -> Settings:
    """`settings` without what `widening_items` names: only what narrows is kept.

    Per-tool settings are dropped whole: which keys narrow is up to each tool (a third party's
    too), and a tool's dict replaces the user's for that tool when merged, so even a
    "narrowing" key could drop the user's own stricter choice.
    """
    mode = settings.default_mode if settings.default_mode in _NARROW_MODES else None
    return replace(
        settings,
        allow=(),
        default_mode=mode,
        hooks=(),
        tools={},
        features={name: on for name, on in settings.features.items() if not on},
    )


def load_settings(
    project_root: Path | None = None, *, user_path: Path | None = None, trust: bool | None = None
) -> Settings:
    """Merge the settings files that exist: user, then project, then personal project settings.

    Later files override single values; rule lists are concatenated. The project's files
    (`<project_root>/.handrail/settings.json` and `settings.local.json`) apply in full only
    when the folder is trusted; otherwise only what narrows applies, and what was left out is
    described in `Settings.refused` and logged once as a warning on the `handrail` logger.

    Args:
        project_root: The project folder (None: the user's settings only).
        user_path: The user's settings file. Default: `~/.config/handrail/settings.json`.
        trust: Whether the project folder is trusted. None: as the user recorded with
            `handrail trust` (`~/.config/handrail/trusted.json`), for these exact files.

    Raises:
        ConfigurationError: A settings file, or the trust store, is malformed or unreadable.
    """
    settings = Settings()
    user = user_path if user_path is not None else user_settings_path()
    if user.is_file():
        settings = settings.merged_with(read_settings_file(user))
    if project_root is not None:
        folder = read_folder_config(project_root)
        project = project_settings(folder, trust=trust)
        trusted = trust if trust is not None else bool(folder.files) and is_trusted(folder)
        mode = settings.default_mode
        settings = settings.merged_with(project)
        if not trusted and mode is not None and project.default_mode is not None:
            # An untrusted folder may narrow the user's mode, never swap it for a wider one.
            settings = replace(settings, default_mode=_stricter(mode, project.default_mode))
        report_refused(settings.refused)
    return settings


# From the mode that runs the least without asking to the one that runs the most.
_STRICTNESS = (
    PermissionMode.PLAN,
    PermissionMode.DONT_ASK,
    PermissionMode.DEFAULT,
    PermissionMode.ACCEPT_EDITS,
    PermissionMode.BYPASS,
)


def _stricter(a: PermissionMode, b: PermissionMode) -> PermissionMode:
    return a if _STRICTNESS.index(a) <= _STRICTNESS.index(b) else b


def project_settings(folder: FolderConfig, *, trust: bool | None = None) -> Settings:
    """The folder's two settings files merged, narrowed unless the folder is trusted.

    Reads nothing: the files are those `folder` holds (the same bytes its digest covers).
    """
    if trust is None:
        trust = bool(folder.files) and is_trusted(folder)
    settings = Settings()
    for relative in (SETTINGS_FILE, LOCAL_SETTINGS_FILE):
        data = folder.content(relative)
        if data is None:
            continue
        parsed = parse_settings(data, folder.path(relative))
        items = () if trust else widening_items(parsed)
        if items:
            notice = refusal_notice(folder.path(relative), items, folder.root)
            parsed = replace(narrowed(parsed), refused=(notice,))
        settings = settings.merged_with(parsed)
    return settings
