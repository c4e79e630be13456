"""The built-in coding tools, written only against handrail's public API.

Invariants: no tool resolves, confines or opens a path itself (the sandbox does, at open
time, after the policy has decided from the tool's declared requests); writes are atomic and
keep a file's encoding, BOM and line endings; a file is changed only after this session read it
in full, unchanged since; every failure is a `ToolResult` with a stable code and text that says
what to do next, in English or Chinese.

```python
from handrail import Registry, Runtime
from handrail.builtin import coding_tools

rt = Runtime(Registry(coding_tools(project_dir="path/to/project")), root="path/to/project",
             mode="accept_edits")
```
"""

from __future__ import annotations

from pathlib import Path

from .. import Tool
from ._edit_file import EditFile as EditFile
from ._grep_search import GrepSearch as GrepSearch
from ._list_files import ListFiles as ListFiles
from ._plan_mode import EnterPlanMode as EnterPlanMode
from ._plan_mode import ExitPlanMode as ExitPlanMode
from ._read_file import ReadFile as ReadFile
from ._run_shell import RunShell as RunShell
from ._shell_jobs import ShellOutput as ShellOutput
from ._skill import Skill as Skill
from ._skill import SkillInfo as SkillInfo
from ._todo import TodoWrite as TodoWrite
from ._web_fetch import WebFetch as WebFetch
from ._write_file import WriteFile as WriteFile

__all__ = [
    "EditFile",
    "EnterPlanMode",
    "ExitPlanMode",
    "GrepSearch",
    "ListFiles",
    "ReadFile",
    "RunShell",
    "ShellOutput",
    "Skill",
    "SkillInfo",
    "TodoWrite",
    "WebFetch",
    "WriteFile",
    "coding_tools",
]


def coding_tools(*, project_dir: str | Path | None = None) -> list[Tool]:
    """New instances of the built-in coding tools, ready for a `Registry`.

    read_file, write_file, edit_file, list_files, grep_search, run_shell, shell_output,
    web_fetch and todo_write; enter_plan_mode and exit_plan_mode (deferred: found through
    tool_search); and skill when `project_dir` (default: the current directory) or the user's
    config folder holds skills.
    """
    tools: list[Tool] = [
        EditFile(),
        EnterPlanMode(),
        ExitPlanMode(),
        GrepSearch(),
        ListFiles(),
        ReadFile(),
        RunShell(),
        ShellOutput(),
        TodoWrite(),
        WebFetch(),
        WriteFile(),
    ]
    skill = Skill(project_dir=project_dir if project_dir is not None else Path.cwd())
    if skill.skills:
        tools.append(skill)
    return tools
