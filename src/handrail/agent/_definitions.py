"""Sub-agent definitions: the built-in `general` and `explore`, and Markdown files.

A definition file is Markdown with YAML front matter, in `<root>/.handrail/agents/*.md` (the
project's) or `~/.config/handrail/agents/*.md` (the user's; a project file of the same name
wins)::

    ---
    name: reviewer
    description: Reviews a change for bugs and missing tests.
    tools: [read_file, grep_search, list_files, run_shell]   # allowlist (globs); omit for all
    disallowed_tools: [web_fetch]
    model: claude-haiku-4-5        # a model name on the same endpoint as the parent
    max_turns: 20
    mode: plan                     # may only narrow the parent's mode
    ---
    You review code. Report each problem with its file and line.

A definition only narrows: its tool lists and mode can take away, never add, and the policy
of the child is bounded by its parent's anyway. A project's file comes from the checkout, so
its `model` may only name another model on the parent's endpoint (a `provider:model` there
could send the code elsewhere, with the user's key); the user's own files may name any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._context import PermissionMode
from ..permissions import user_settings_path

__all__ = ["BUILTIN_AGENTS", "AgentDefinition", "load_definitions", "user_dir"]

NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
MAX_FILE_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    """What kind of sub-agent the `agent` tool can start."""

    name: str
    description: str
    instructions: str = ""
    """Replaces the default role paragraph of the child's system prompt."""
    tools: tuple[str, ...] | None = None
    """Allowed tool names or globs; None: every tool of the parent."""
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    max_turns: int = 30
    mode: PermissionMode | None = None
    read_only: bool = False
    """Writes nothing (no write roots); such children may run in parallel."""
    source: Path | None = None
    trusted: bool = True
    """False for a project's file: its `model` may only change the model name."""


GENERAL = AgentDefinition(
    name="general",
    description=(
        "A general-purpose agent for a self-contained, multi-step task (research, a change, "
        "running checks); it has your tools except starting agents."
    ),
)
EXPLORE = AgentDefinition(
    name="explore",
    description=(
        "A read-only agent that finds and reads code and answers questions about it; it "
        "cannot change anything. Several can run at once."
    ),
    instructions=(
        "You are a read-only research agent. Find what you are asked for by searching and "
        "reading; you cannot change files. Answer with what you found, citing files and line "
        "numbers, concisely."
    ),
    tools=("read_file", "list_files", "grep_search", "run_shell", "web_fetch"),
    mode=PermissionMode.PLAN,
    read_only=True,
)
BUILTIN_AGENTS: dict[str, AgentDefinition] = {"explore": EXPLORE, "general": GENERAL}


class _FrontMatter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    description: str = Field(min_length=1, max_length=500)
    tools: list[str] | None = None
    disallowed_tools: list[str] = []
    model: str | None = None
    max_turns: int = Field(30, ge=1, le=500)
    mode: PermissionMode | None = None
    read_only: bool = False


def _parse(path: Path, *, trusted: bool) -> AgentDefinition:
    data = path.read_bytes()[: MAX_FILE_BYTES + 1]
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
    text = data.decode("utf-8")
    match = re.match(r"\A---\s*\n(.*?)\n---\s*(?:\n|\Z)(.*)\Z", text, re.S)
    if match is None:
        raise ValueError("no front matter (a `---` block at the top)")
    import yaml  # only when a definition file exists: it costs ~50 ms to import

    try:
        raw: Any = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"the front matter is not valid YAML: {exc}") from None
    if not isinstance(raw, Mapping):
        raise ValueError("the front matter is not a mapping")
    front = _FrontMatter.model_validate(cast(Mapping[str, Any], raw))
    if not NAME.match(front.name):
        raise ValueError(f"name {front.name!r} must be lower case letters, digits, - or _")
    if front.model is not None and not trusted and ":" in front.model:
        raise ValueError(
            "a project's agent may only name a model on the same endpoint (no `provider:`)"
        )
    return AgentDefinition(
        name=front.name,
        description=front.description.strip(),
        instructions=match.group(2).strip(),
        tools=tuple(front.tools) if front.tools is not None else None,
        disallowed_tools=tuple(front.disallowed_tools),
        model=front.model,
        max_turns=front.max_turns,
        mode=front.mode,
        read_only=front.read_only,
        source=path,
        trusted=trusted,
    )


def load_definitions(
    root: Path, user_dir: Path | None = None
) -> tuple[dict[str, AgentDefinition], list[str]]:
    """The built-in definitions, then the user's files, then the project's (later win).

    Returns the definitions by name and one line per file that was skipped and why.
    """
    found = dict(BUILTIN_AGENTS)
    problems: list[str] = []
    folders: list[tuple[Path, bool]] = []
    if user_dir is not None:
        folders.append((user_dir / "agents", True))
    folders.append((root / ".handrail" / "agents", False))
    for folder, trusted in folders:
        try:
            files = sorted(p for p in folder.glob("*.md") if p.is_file() and not p.is_symlink())
        except OSError:
            continue
        for path in files:
            try:
                definition = _parse(path, trusted=trusted)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                detail = (
                    "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
                    if isinstance(exc, ValidationError)
                    else str(exc)
                )
                problems.append(f"agent definition {path} skipped: {detail}")
                continue
            found[definition.name] = definition
    return found, problems


def user_dir() -> Path:
    """The user's handrail config folder (beside `settings.json`; XDG_CONFIG_HOME respected)."""
    return user_settings_path().parent
