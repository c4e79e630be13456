"""skill: load a skill's instructions on demand, and grant the rules it declares while in use.

A skill is a folder holding `SKILL.md`: YAML front matter (`name`, `description`, optional
`allowed_tools`, a list of permission rules such as `run_shell(npm test:*)`) followed by the
instructions. Skills are found in `<project>/.handrail/skills/*/` and in the user's
`~/.config/handrail/skills/*/` (`$XDG_CONFIG_HOME` respected); a project skill wins over a user
skill of the same name.

Only names and descriptions reach the model, in the tool's description, within a character
budget; the instructions are returned when the model calls `skill(name)`, with a bounded listing
of the skill's files so it can read them with read_file. A malformed SKILL.md is skipped and
recorded in `Skill.problems`; discovery never raises.

A skill's `allowed_tools` become session allow rules (`Session.allow_rules`) while it is the
active skill: activating another skill removes them (rules the session already had before are
left alone). They are allow rules like any other: deny rules, the roots and plan mode still
win. Skill folders are host configuration, read when the tool is built (and on `reload()`), not
paths a call asks the policy for; a user skill's files lie outside the workspace, so a host
that wants the model to read them adds the user skills folder to the read roots.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, cast

from pydantic import BaseModel, Field

from .. import (
    CallView,
    ConfigurationError,
    Display,
    ErrorCode,
    Session,
    Tool,
    ToolContext,
    ToolFailure,
    ToolKind,
    ToolResult,
)
from ..permissions import is_trusted, parse_rule, user_settings_path
from ..validation import closest
from ._displays import skill_display
from ._i18n import text

__all__ = ["Skill", "SkillArgs", "SkillInfo", "user_skills_dir"]

STATE_KEY = "skill"
"""`Session.data` key: `{"active": name, "rules": [rules this skill added]}`."""
SKILL_FILE = "SKILL.md"
DEFAULT_BUDGET = 4000
"""Characters of skill names and descriptions listed in the tool's description."""
MAX_DESCRIPTION_CHARS = 250
"""A longer description is cut in the listing, so one skill cannot crowd out the others."""
MAX_SKILL_FILE_BYTES = 256 * 1024
MAX_LISTED_FILES = 50
MAX_NAMES_IN_ERROR = 50
_SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv"})
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")

CATALOG = {
    "en": {
        "unknown": "There is no skill named {name!r}.{hint} Available skills: {names}.",
        "did_you_mean": " Did you mean {names}?",
        "none": "(none)",
        "more_names": ", and {n} more",
        "gone": (
            "The folder of skill {name!r} ({folder}) is gone. The skill cannot be loaded; "
            "carry on without it."
        ),
        "loaded": (
            'Skill "{name}" is loaded. Follow its instructions for this task.\n'
            "Skill folder: {folder} (read its files with read_file; the paths below are "
            "relative to it)."
        ),
        "files": "Files in the skill folder:",
        "more_files": "(more files not listed; use list_files on the skill folder)",
        "rules": "Allowed without asking while this skill is active: {rules}.",
        "dropped": "The rules of the skill {previous!r} no longer apply.",
        "untrusted": (
            "This project skill lists allowed tools ({rules}), but the project folder is not "
            "trusted, so they do not apply: calls still need the usual approval. The user can "
            "trust the folder with `handrail trust`."
        ),
        "summary": "Loaded skill {name}",
    },
    "zh": {
        "unknown": "没有名为 {name!r} 的技能。{hint}可用的技能:{names}。",
        "did_you_mean": "你是不是想用 {names}?",
        "none": "(无)",
        "more_names": ",以及另外 {n} 个",
        "gone": "技能 {name!r} 的文件夹({folder})已不存在。无法加载该技能;请在没有它的情况下继续。",
        "loaded": (
            '技能 "{name}" 已加载。请在本任务中遵循它的说明。\n'
            "技能文件夹:{folder}(用 read_file 读取其中的文件;下面的路径相对于该文件夹)。"
        ),
        "files": "技能文件夹中的文件:",
        "more_files": "(还有更多文件未列出;请对技能文件夹使用 list_files)",
        "rules": "该技能生效期间无需询问即可执行:{rules}。",
        "dropped": "技能 {previous!r} 的规则不再适用。",
        "untrusted": (
            "这个项目技能列出了允许的工具({rules}),但项目文件夹未被信任,所以它们不生效:"
            "调用仍需通常的批准。用户可以用 `handrail trust` 信任该文件夹。"
        ),
        "summary": "已加载技能 {name}",
    },
}

_DESCRIPTION_HEAD = (
    "Load a skill: instructions (and sometimes scripts or reference files) for a particular "
    "kind of task. When the user's request matches a skill's description below, call skill "
    "with its exact name before starting, then follow the instructions it returns. Use only "
    "the names listed here (or a name the user gives); do not guess names."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillInfo:
    """One discovered skill."""

    name: str
    description: str
    """One line, whitespace collapsed."""
    folder: Path
    """The folder holding SKILL.md."""
    source: Literal["project", "user"]
    instructions: str
    """The body of SKILL.md after the front matter."""
    allowed_tools: tuple[str, ...] = ()
    """Permission rules granted while the skill is active."""


def user_skills_dir() -> Path:
    """`~/.config/handrail/skills` (respecting `XDG_CONFIG_HOME`)."""
    return user_settings_path().parent / "skills"


class SkillArgs(BaseModel):
    """Arguments of skill."""

    name: str = Field(
        min_length=1,
        max_length=200,
        description="The exact name of a skill from the list in this tool's description.",
    )


class _Malformed(Exception):
    """A SKILL.md that cannot be used; the message says why."""


def _one_line(value: str) -> str:
    return " ".join(value.split())


def parse_skill_file(path: Path, source: Literal["project", "user"]) -> SkillInfo:
    """Read and check one SKILL.md; raises `_Malformed` with a readable reason."""
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_FILE_BYTES:
            raise _Malformed(f"it is {size} bytes, over the {MAX_SKILL_FILE_BYTES} bytes allowed")
        raw = path.read_bytes()
    except OSError as exc:
        raise _Malformed(f"it cannot be read ({exc.strerror or exc})") from exc
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Malformed("it is not UTF-8 text") from exc
    lines = content.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise _Malformed("it does not start with a `---` line opening the YAML front matter")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise _Malformed("the front matter is not closed by a `---` line")
    import yaml  # only where a skill exists: about 20 ms of every start-up otherwise

    try:
        meta: Any = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _Malformed(f"the front matter is not valid YAML ({detail})") from exc
    if not isinstance(meta, dict):
        raise _Malformed("the front matter is not a mapping of keys to values")
    fields = cast(dict[Any, Any], meta)
    name, description = fields.get("name"), fields.get("description")
    if not isinstance(name, str) or not name.strip():
        raise _Malformed("`name` is missing or not a string")
    name = name.strip()
    if len(name) > 64 or not set(name) <= _NAME_CHARS:
        raise _Malformed(
            f"`name` {name!r} must be 1-64 characters from letters, digits, '-', '_' and '.'"
        )
    if not isinstance(description, str) or not description.strip():
        raise _Malformed("`description` is missing or not a string")
    rules = _rules(fields.get("allowed_tools"))
    instructions = "".join(lines[end + 1 :]).strip()
    if not instructions:
        raise _Malformed("there are no instructions after the front matter")
    return SkillInfo(
        name=name,
        description=_one_line(description),
        folder=path.parent,
        source=source,
        instructions=instructions,
        allowed_tools=rules,
    )


def _rules(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Malformed("`allowed_tools` must be a list of permission rules")
    out: list[str] = []
    for item in cast(list[Any], value):
        if not isinstance(item, str):
            raise _Malformed(f"`allowed_tools` holds {item!r}, which is not a rule string")
        try:
            rule = parse_rule(item)
        except ConfigurationError as exc:
            raise _Malformed(f"`allowed_tools`: {exc}") from exc
        if rule.text not in out:
            out.append(rule.text)
    return tuple(out)


def _skill_folders(base: Path) -> list[Path]:
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except OSError:
        return []  # no skills folder (the usual case) or an unreadable one
    return [Path(e.path) for e in entries if not e.name.startswith(".") and _is_dir(e)]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symlinked skill folder
    except OSError:
        return False


def skill_files(folder: Path, limit: int = MAX_LISTED_FILES) -> tuple[list[str], bool]:
    """Up to `limit` files below `folder` (relative, `/`-separated, sorted), and whether more exist.

    Symlinked folders are not followed (no loops), and VCS/cache folders are skipped.
    """
    found: list[str] = []
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = os.path.relpath(top, folder)
        for f in sorted(files):
            if len(found) == limit:
                return found, True
            found.append(f if rel == "." else f"{rel.replace(os.sep, '/')}/{f}")
    return found, False


class Skill(Tool):
    """The built-in skill tool.

    Args:
        project_dir: The project root; its skills are in `<project_dir>/.handrail/skills/`.
            None: no project skills.
        user_dir: The folder of the user's skills. Default: `~/.config/handrail/skills`
            (`$XDG_CONFIG_HOME/handrail/skills` when that is set).
        budget: Most characters of skill names and descriptions listed in the description.
        **options: Tool options (`name`, `deferred`, ...).
    """

    name = "skill"
    kind = ToolKind.OTHER
    read_only = True  # reads instructions and changes session rules only, never files
    concurrency_safe = False
    destructive = False
    args_model: ClassVar[type[BaseModel] | None] = SkillArgs

    def __init__(
        self,
        *,
        project_dir: str | Path | None,
        user_dir: str | Path | None = None,
        budget: int = DEFAULT_BUDGET,
        **options: Any,
    ) -> None:
        if budget < 0:
            raise ConfigurationError("Skill budget must be a number of characters, at least 0")
        self.project_dir = Path(project_dir) if project_dir is not None else None
        """The project root (None: no project skills)."""
        self.user_dir = Path(user_dir) if user_dir is not None else None
        """The user skills folder given at construction (None: the default, looked up on load)."""
        self.budget = budget
        self.skills: dict[str, SkillInfo] = {}
        """Usable skills by name, sorted by name."""
        self.problems: tuple[str, ...] = ()
        """One line per SKILL.md that was skipped: `<path>: <why>`."""
        self.unlisted = 0
        """How many skills did not fit in the description's budget."""
        super().__init__(**options)
        self.reload()

    def display(self, view: CallView) -> Display:
        """How a call of this tool looks (`skill_display`)."""
        return skill_display(view, name=self.name)

    def folders(self) -> list[tuple[Path, Literal["project", "user"]]]:
        """The skills folders searched, project first."""
        out: list[tuple[Path, Literal["project", "user"]]] = []
        if self.project_dir is not None:
            out.append((self.project_dir / ".handrail" / "skills", "project"))
        out.append((self.user_dir if self.user_dir is not None else user_skills_dir(), "user"))
        return out

    def reload(self) -> None:
        """Discover the skills again and rebuild the description."""
        found: dict[str, SkillInfo] = {}
        problems: list[str] = []
        for base, source in self.folders():
            for folder in _skill_folders(base):
                path = folder / SKILL_FILE
                if not path.is_file():
                    continue  # a folder without SKILL.md is not a skill (scripts, assets)
                try:
                    info = parse_skill_file(path, source)
                except _Malformed as exc:
                    problems.append(f"{path}: {exc}")
                    continue
                other = found.get(info.name)
                if other is None:
                    found[info.name] = info
                elif other.source == source:
                    problems.append(
                        f"{path}: the name {info.name!r} is already used by "
                        f"{other.folder / SKILL_FILE}"
                    )
                # else: a project skill shadows the user's skill of the same name.
        self.skills = dict(sorted(found.items()))
        self.problems = tuple(problems)
        self.description = self._describe(self.skills.values())

    def _describe(self, skills: Iterable[SkillInfo]) -> str:
        lines: list[str] = []
        used = 0
        pending = list(skills)
        for i, info in enumerate(pending):
            desc = info.description
            if len(desc) > MAX_DESCRIPTION_CHARS:
                desc = desc[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
            line = f"- {info.name}: {desc}"
            if used + len(line) + 1 > self.budget:
                self.unlisted = len(pending) - i
                break
            lines.append(line)
            used += len(line) + 1
        else:
            self.unlisted = 0
        if not pending:
            return _DESCRIPTION_HEAD + "\n\nNo skills are installed."
        out = _DESCRIPTION_HEAD + "\n\nAvailable skills:\n" + "\n".join(lines)
        if self.unlisted:
            out += (
                f"\n({self.unlisted} more skill{'s' if self.unlisted != 1 else ''} not listed "
                f"here, to keep this list short; if the user names one, call skill with that "
                f"name.)"
            )
        return out

    def validate_input(self, args: SkillArgs, ctx: ToolContext) -> None:
        """An unknown name fails with did-you-mean and the list of names."""
        if args.name in self.skills:
            return
        loc = ctx.locale
        names = list(self.skills)
        guesses = closest(args.name, names)
        hint = (
            text(loc, CATALOG, "did_you_mean", names=" / ".join(f"`{g}`" for g in guesses))
            if guesses
            else ""
        )
        shown = ", ".join(f"`{n}`" for n in names[:MAX_NAMES_IN_ERROR]) or text(
            loc, CATALOG, "none"
        )
        if len(names) > MAX_NAMES_IN_ERROR:
            shown += text(loc, CATALOG, "more_names", n=len(names) - MAX_NAMES_IN_ERROR)
        raise ToolFailure(
            text(loc, CATALOG, "unknown", name=args.name, hint=hint, names=shown),
            code=ErrorCode.INVALID_ARGS,
        )

    def _project_trusted(self) -> bool:
        if self.project_dir is None:
            return False
        try:
            return is_trusted(self.project_dir)
        except ConfigurationError:  # an unreadable store or file: trust nothing
            return False

    def run(self, args: SkillArgs, ctx: ToolContext) -> ToolResult:
        """Return the instructions and the file listing; make the skill's rules the active ones."""
        loc = ctx.locale
        info = self.skills[args.name]
        if not info.folder.is_dir():
            raise ToolFailure(
                text(loc, CATALOG, "gone", name=info.name, folder=info.folder),
                code=ErrorCode.FILE_NOT_FOUND,
            )
        files, more = skill_files(info.folder)
        state: Any = ctx.session.data.get(STATE_KEY)
        before = cast(dict[str, Any], state) if isinstance(state, dict) else {}
        previous, previous_rules = before.get("active"), before.get("rules")
        rules = info.allowed_tools
        untrusted: tuple[str, ...] = ()
        if rules and info.source == "project" and not self._project_trusted():
            # A checkout's own skill must not widen permissions before the user trusts it.
            untrusted, rules = rules, ()

        def activate(session: Session) -> None:
            old: Any = session.data.get(STATE_KEY)
            if isinstance(old, dict):
                for rule in cast(dict[str, Any], old).get("rules") or ():
                    if rule in session.allow_rules:
                        session.allow_rules.remove(rule)
            added = [r for r in rules if r not in session.allow_rules]
            session.allow_rules.extend(added)
            session.data[STATE_KEY] = {"active": info.name, "rules": added}

        ctx.update_state(activate)
        parts = [
            text(loc, CATALOG, "loaded", name=info.name, folder=info.folder),
            f"<instructions>\n{info.instructions}\n</instructions>",
            text(loc, CATALOG, "files")
            + "\n"
            + "\n".join(files)
            + ("\n" + text(loc, CATALOG, "more_files") if more else ""),
        ]
        notes: list[str] = []
        if rules:
            notes.append(text(loc, CATALOG, "rules", rules=", ".join(f"`{r}`" for r in rules)))
        if untrusted:
            notes.append(
                text(loc, CATALOG, "untrusted", rules=", ".join(f"`{r}`" for r in untrusted))
            )
        if previous_rules and previous != info.name:
            notes.append(text(loc, CATALOG, "dropped", previous=previous))
        if notes:
            parts.append("\n".join(notes))
        return ToolResult.success(
            "\n\n".join(parts),
            summary=text(loc, CATALOG, "summary", name=info.name),
            metadata={
                "name": info.name,
                "folder": str(info.folder),
                "source": info.source,
                "files": files,
                "allowed_tools": list(rules),
            },
        )
