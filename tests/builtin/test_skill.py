"""skill end to end through `Runtime`: discovery, budget, malformed files, loading, session rules."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    Approval,
    ErrorCode,
    Interrupted,
    PermissionMode,
    PermissionRequest,
    Registry,
    RunCommand,
    Runtime,
    Tool,
    ToolContext,
    ToolKind,
)
from handrail.builtin import ReadFile, Skill
from handrail.permissions import trust_folder


class CommandArgs(BaseModel):
    command: str


class RunCommandTool(Tool):
    """A stand-in for a shell tool: not read-only, runs a command."""

    name = "run_command"
    description = "Run a command (records it instead)."
    kind = ToolKind.EXECUTE
    read_only = False
    args_model = CommandArgs

    def permission_requests(
        self, args: CommandArgs, ctx: ToolContext
    ) -> Sequence[PermissionRequest]:
        return [RunCommand(command=args.command)]

    def run(self, args: CommandArgs, ctx: ToolContext) -> str:
        return f"ran {args.command}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    root.mkdir()
    return root


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's skills folder, under a private XDG_CONFIG_HOME (never the real one)."""
    config = Path(os.path.realpath(tmp_path)) / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return config / "handrail" / "skills"


def add_skill(
    base: Path,
    folder: str,
    *,
    name: str | None = None,
    description: str = "Does a thing.",
    body: str = "Step 1. Do the thing.",
    extra: str = "",
    raw: str | None = None,
) -> Path:
    d = base / folder
    d.mkdir(parents=True, exist_ok=True)
    if raw is None:
        raw = (
            f"---\nname: {name or folder}\ndescription: {json.dumps(description)}\n{extra}---\n"
            f"{body}\n"
        )
    (d / "SKILL.md").write_text(raw, encoding="utf-8")
    return d


def project_skills(ws: Path) -> Path:
    return ws / ".handrail" / "skills"


def scrub(text: str, *paths: Path) -> str:
    for p, label in zip(paths, ("WS", "USER"), strict=False):
        text = text.replace(str(p), label)
    return text


def make_runtime(ws: Path, skill: Skill, **options: Any) -> Runtime:
    return Runtime(Registry([ReadFile(), RunCommandTool(), skill]), root=ws, **options)


# -- discovery ---------------------------------------------------------------------------------


def test_skills_are_found_in_the_project_and_the_user_folder(ws: Path, user_dir: Path) -> None:
    add_skill(project_skills(ws), "release", description="Cut a release: bump, tag, changelog.")
    add_skill(user_dir, "pdf-forms", description="Fill in PDF forms with pypdf.")
    add_skill(project_skills(ws), "notes")  # a folder...
    (project_skills(ws) / "notes" / "SKILL.md").unlink()  # ...without SKILL.md is no skill
    t = Skill(project_dir=ws)
    assert list(t.skills) == ["pdf-forms", "release"]
    assert t.skills["release"].source == "project"
    assert t.skills["pdf-forms"].source == "user"
    assert t.skills["pdf-forms"].folder == user_dir / "pdf-forms"
    assert t.problems == ()
    assert t.description == snapshot("""\
Load a skill: instructions (and sometimes scripts or reference files) for a particular kind of task. When the user's request matches a skill's description below, call skill with its exact name before starting, then follow the instructions it returns. Use only the names listed here (or a name the user gives); do not guess names.

Available skills:
- pdf-forms: Fill in PDF forms with pypdf.
- release: Cut a release: bump, tag, changelog.\
""")


def test_the_project_skill_wins_a_name_clash(ws: Path, user_dir: Path) -> None:
    add_skill(project_skills(ws), "lint", description="The project's way.")
    add_skill(user_dir, "lint", description="The user's way.")
    t = Skill(project_dir=ws)
    assert t.skills["lint"].description == "The project's way."
    assert t.problems == ()


def test_user_folder_defaults_to_home_config_without_xdg(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    add_skill(home / ".config" / "handrail" / "skills", "mine")
    assert list(Skill(project_dir=ws).skills) == ["mine"]


def test_an_explicit_user_dir_and_no_project(tmp_path: Path, user_dir: Path) -> None:
    other = tmp_path / "elsewhere"
    add_skill(other, "explicit")
    add_skill(user_dir, "ignored")
    t = Skill(project_dir=None, user_dir=other)
    assert list(t.skills) == ["explicit"]


def test_no_skills(ws: Path, user_dir: Path) -> None:
    t = Skill(project_dir=ws)
    assert t.skills == {}
    assert t.description.endswith("\n\nNo skills are installed.")


def test_reload_finds_new_skills(ws: Path, user_dir: Path) -> None:
    t = Skill(project_dir=ws)
    add_skill(project_skills(ws), "late")
    assert "late" not in t.skills
    t.reload()
    assert "late" in t.skills
    assert "- late: Does a thing." in t.description


def test_the_listing_keeps_to_its_budget(ws: Path, user_dir: Path) -> None:
    for i in range(30):
        add_skill(project_skills(ws), f"skill-{i:02d}", description=f"Skill number {i}.")
    add_skill(project_skills(ws), "zz-long", description="word " * 100)
    t = Skill(project_dir=ws, budget=200)
    listed = [line for line in t.description.splitlines() if line.startswith("- ")]
    assert sum(len(line) + 1 for line in listed) <= 200
    assert len(listed) == 7
    assert t.unlisted == 24
    assert t.description.splitlines()[-1] == snapshot(
        "(24 more skills not listed here, to keep this list short; if the user names one, call skill with that name.)"
    )
    # A long description is cut, so it cannot crowd out the others.
    t = Skill(project_dir=ws)
    long_line = next(line for line in t.description.splitlines() if "zz-long" in line)
    assert len(long_line) == len("- zz-long: ") + 250
    assert long_line.endswith("…")
    assert t.unlisted == 0
    # budget=0: names only through the user (and the error's list of names).
    assert Skill(project_dir=ws, budget=0).unlisted == 31


# -- malformed SKILL.md ------------------------------------------------------------------------


BAD = {
    "no-front-matter": "Just text.\n",
    "unclosed": "---\nname: unclosed\ndescription: x\n",
    "bad-yaml": "---\nname: [unclosed\ndescription: x\n---\nbody\n",
    "not-a-mapping": "---\n- a\n- b\n---\nbody\n",
    "no-name": "---\ndescription: x\n---\nbody\n",
    "bad-name": "---\nname: has space\ndescription: x\n---\nbody\n",
    "no-description": "---\nname: no-description\n---\nbody\n",
    "rules-not-a-list": "---\nname: r\ndescription: x\nallowed_tools: run_shell\n---\nbody\n",
    "bad-rule": "---\nname: r2\ndescription: x\nallowed_tools: ['run shell(x)']\n---\nbody\n",
    "no-body": "---\nname: no-body\ndescription: x\n---\n\n",
}


def test_malformed_skill_files_are_skipped_and_reported(ws: Path, user_dir: Path) -> None:
    base = project_skills(ws)
    for folder, raw in BAD.items():
        add_skill(base, folder, raw=raw)
    add_skill(base, "latin1", raw="---\nname: latin1\ndescription: caf\xe9\n---\nbody\n")
    (base / "latin1" / "SKILL.md").write_bytes(
        "---\nname: l\ndescription: café\n---\nbody\n".encode("latin-1")
    )
    add_skill(base, "good")
    add_skill(base, "good-twin", name="good")
    t = Skill(project_dir=ws)
    assert list(t.skills) == ["good"]
    assert [scrub(p, ws) for p in t.problems] == snapshot(
        [
            "WS/.handrail/skills/bad-name/SKILL.md: `name` 'has space' must be 1-64 characters from letters, digits, '-', '_' and '.'",
            "WS/.handrail/skills/bad-rule/SKILL.md: `allowed_tools`: invalid permission rule 'run shell(x)': write `tool_name` or `tool_name(specifier)`, e.g. `run_shell(npm test:*)`, `edit_file(src/**)`, `web_fetch(domain:example.com)`",
            "WS/.handrail/skills/bad-yaml/SKILL.md: the front matter is not valid YAML (while parsing a flow sequence)",
            "WS/.handrail/skills/good-twin/SKILL.md: the name 'good' is already used by WS/.handrail/skills/good/SKILL.md",
            "WS/.handrail/skills/latin1/SKILL.md: it is not UTF-8 text",
            "WS/.handrail/skills/no-body/SKILL.md: there are no instructions after the front matter",
            "WS/.handrail/skills/no-description/SKILL.md: `description` is missing or not a string",
            "WS/.handrail/skills/no-front-matter/SKILL.md: it does not start with a `---` line opening the YAML front matter",
            "WS/.handrail/skills/no-name/SKILL.md: `name` is missing or not a string",
            "WS/.handrail/skills/not-a-mapping/SKILL.md: the front matter is not a mapping of keys to values",
            "WS/.handrail/skills/rules-not-a-list/SKILL.md: `allowed_tools` must be a list of permission rules",
            "WS/.handrail/skills/unclosed/SKILL.md: the front matter is not closed by a `---` line",
        ]
    )


def test_an_oversized_skill_file_is_skipped(ws: Path, user_dir: Path) -> None:
    add_skill(project_skills(ws), "huge", body="x" * (300 * 1024))
    t = Skill(project_dir=ws)
    assert t.skills == {}
    assert "over the 262144 bytes allowed" in t.problems[0]


# -- loading a skill ---------------------------------------------------------------------------


async def test_loading_returns_instructions_folder_and_files(ws: Path, user_dir: Path) -> None:
    d = add_skill(
        project_skills(ws),
        "release",
        description="Cut a release.",
        body="# Release\n\n1. Run `scripts/bump.sh`.\n2. Read reference/checklist.md.",
    )
    (d / "scripts").mkdir()
    (d / "scripts" / "bump.sh").write_text("echo bump\n")
    (d / "reference").mkdir()
    (d / "reference" / "checklist.md").write_text("- tag\n")
    (d / ".git").mkdir()
    (d / ".git" / "HEAD").write_text("ref\n")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("skill", {"name": "release"})
    assert r.ok, r.content
    assert scrub(r.content, ws) == snapshot("""\
Skill "release" is loaded. Follow its instructions for this task.
Skill folder: WS/.handrail/skills/release (read its files with read_file; the paths below are relative to it).

<instructions>
# Release

1. Run `scripts/bump.sh`.
2. Read reference/checklist.md.
</instructions>

Files in the skill folder:
SKILL.md
reference/checklist.md
scripts/bump.sh\
""")
    assert r.summary == "Loaded skill release"
    assert r.metadata["folder"] == str(d)
    assert r.metadata["files"] == ["SKILL.md", "reference/checklist.md", "scripts/bump.sh"]
    # The model can read the skill's files with read_file.
    r = await rt.call("read_file", {"file_path": str(d / "reference" / "checklist.md")})
    assert r.ok, r.content


async def test_the_file_listing_is_bounded(ws: Path, user_dir: Path) -> None:
    d = add_skill(project_skills(ws), "big")
    for i in range(80):
        (d / f"f{i:03d}.txt").write_text("x")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("skill", {"name": "big"})
    assert len(r.metadata["files"]) == 50
    assert r.content.splitlines()[-1] == snapshot(
        "(more files not listed; use list_files on the skill folder)"
    )


async def test_an_unknown_name_suggests_and_lists_names(ws: Path, user_dir: Path) -> None:
    add_skill(project_skills(ws), "release")
    add_skill(project_skills(ws), "pdf-forms")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("skill", {"name": "relase"})
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content == snapshot(
        "There is no skill named 'relase'. Did you mean `release`? Available skills: `pdf-forms`, `release`."
    )
    r = await rt.call("skill", {"name": "zzz"})
    assert r.content == snapshot(
        "There is no skill named 'zzz'. Available skills: `pdf-forms`, `release`."
    )
    rt = make_runtime(ws, Skill(project_dir=None, user_dir=ws / "none"))
    r = await rt.call("skill", {"name": "release"})
    assert r.content == snapshot("There is no skill named 'release'. Available skills: (none).")


async def test_a_skill_folder_removed_since_discovery(ws: Path, user_dir: Path) -> None:
    d = add_skill(project_skills(ws), "gone")
    rt = make_runtime(ws, Skill(project_dir=ws))
    shutil.rmtree(d)
    r = await rt.call("skill", {"name": "gone"})
    assert r.error is ErrorCode.FILE_NOT_FOUND
    assert "is gone" in r.content


# -- allowed_tools as session rules ------------------------------------------------------------


async def test_allowed_tools_are_granted_while_the_skill_is_active(
    ws: Path, user_dir: Path
) -> None:
    base = project_skills(ws)
    add_skill(base, "test", extra="allowed_tools:\n  - run_command(npm test:*)\n")
    add_skill(base, "build", extra="allowed_tools: ['run_command(make:*)']\n")
    add_skill(base, "plain")
    trust_folder(ws)
    rt = make_runtime(ws, Skill(project_dir=ws))

    r = await rt.call("run_command", {"command": "npm test"})
    assert isinstance(r, Interrupted)  # no rule yet: it asks

    r = await rt.call("skill", {"name": "test"})
    assert r.content.splitlines()[-1] == snapshot(
        "Allowed without asking while this skill is active: `run_command(npm test:*)`."
    )
    assert rt.session.allow_rules == ["run_command(npm test:*)"]
    r = await rt.call("run_command", {"command": "npm test -- --watch"})
    assert r.ok and r.content == "ran npm test -- --watch"
    assert isinstance(await rt.call("run_command", {"command": "npm publish"}), Interrupted)

    r = await rt.call("skill", {"name": "build"})
    assert r.content.splitlines()[-2:] == snapshot(
        [
            "Allowed without asking while this skill is active: `run_command(make:*)`.",
            "The rules of the skill 'test' no longer apply.",
        ]
    )
    assert rt.session.allow_rules == ["run_command(make:*)"]
    assert isinstance(await rt.call("run_command", {"command": "npm test"}), Interrupted)
    assert (await rt.call("run_command", {"command": "make all"})).ok

    await rt.call("skill", {"name": "plain"})
    assert rt.session.allow_rules == []
    assert rt.session.data["skill"] == {"active": "plain", "rules": []}


async def test_an_untrusted_project_skill_grants_nothing(ws: Path, user_dir: Path) -> None:
    # The checkout wrote this skill; until the user trusts the folder, its rules stay out.
    add_skill(project_skills(ws), "test", extra="allowed_tools: ['run_command(npm test:*)']\n")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("skill", {"name": "test"})
    assert r.ok and r.metadata["allowed_tools"] == []
    assert r.content.splitlines()[-1] == snapshot(
        "This project skill lists allowed tools (`run_command(npm test:*)`), but the project folder is not trusted, so they do not apply: calls still need the usual approval. The user can trust the folder with `handrail trust`."
    )
    assert rt.session.allow_rules == []
    assert isinstance(await rt.call("run_command", {"command": "npm test"}), Interrupted)
    trust_folder(ws)
    await rt.call("skill", {"name": "test"})
    assert rt.session.allow_rules == ["run_command(npm test:*)"]
    # A skill changed (or added) after the user trusted the folder needs trust again.
    add_skill(project_skills(ws), "test", extra="allowed_tools: ['run_command']\n")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("skill", {"name": "test"})
    assert rt.session.allow_rules == [] and r.metadata["allowed_tools"] == []


async def test_rules_the_session_already_had_are_kept(ws: Path, user_dir: Path) -> None:
    base = project_skills(ws)
    add_skill(base, "test", extra="allowed_tools: ['run_command(npm test:*)']\n")
    add_skill(base, "other")
    rt = make_runtime(ws, Skill(project_dir=ws))
    r = await rt.call("run_command", {"command": "npm test"})
    assert isinstance(r, Interrupted)
    await rt.resume(r, Approval.allow_always("run_command(npm test:*)"))
    await rt.call("skill", {"name": "test"})
    await rt.call("skill", {"name": "other"})
    assert rt.session.allow_rules == ["run_command(npm test:*)"]  # the user's answer stands


async def test_skill_rules_do_not_lift_plan_mode(ws: Path, user_dir: Path) -> None:
    add_skill(project_skills(ws), "test", extra="allowed_tools: ['run_command(npm test:*)']\n")
    rt = make_runtime(ws, Skill(project_dir=ws), mode=PermissionMode.PLAN)
    r = await rt.call("skill", {"name": "test"})
    assert r.ok  # read-only: it runs in plan mode
    r = await rt.call("run_command", {"command": "npm test"})
    assert r.error is ErrorCode.PERMISSION_DENIED


def test_flags_and_schema(ws: Path, user_dir: Path) -> None:
    t = Skill(project_dir=ws)
    assert t.is_read_only(None)
    assert not t.is_concurrency_safe(None)
    assert not t.is_destructive(None)
    assert t.parameters == snapshot(
        {
            "additionalProperties": False,
            "properties": {
                "name": {
                    "description": "The exact name of a skill from the list in this tool's description.",
                    "maxLength": 200,
                    "minLength": 1,
                    "type": "string",
                }
            },
            "required": ["name"],
            "type": "object",
        }
    )


# -- Chinese -----------------------------------------------------------------------------------


async def test_messages_in_chinese(ws: Path, user_dir: Path) -> None:
    base = project_skills(ws)
    add_skill(base, "test", extra="allowed_tools: ['run_command(npm test:*)']\n")
    add_skill(base, "build")
    trust_folder(ws)
    rt = make_runtime(ws, Skill(project_dir=ws), locale="zh")
    r = await rt.call("skill", {"name": "tset"})
    assert r.content == snapshot(
        "没有名为 'tset' 的技能。你是不是想用 `test`?可用的技能:`build`, `test`。"
    )
    r = await rt.call("skill", {"name": "test"})
    assert scrub(r.content, ws) == snapshot("""\
技能 "test" 已加载。请在本任务中遵循它的说明。
技能文件夹:WS/.handrail/skills/test(用 read_file 读取其中的文件;下面的路径相对于该文件夹)。

<instructions>
Step 1. Do the thing.
</instructions>

技能文件夹中的文件:
SKILL.md

该技能生效期间无需询问即可执行:`run_command(npm test:*)`。\
""")
    r = await rt.call("skill", {"name": "build"})
    assert r.content.splitlines()[-1] == snapshot("技能 'test' 的规则不再适用。")
    assert r.summary == "已加载技能 build"
