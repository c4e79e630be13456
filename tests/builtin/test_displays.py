"""How every built-in tool's calls look (`Tool.display`), in every state, from real calls.

The table of cases lives in `display_cases.py` (the terminal's rendering tests use it too); here
it is snapshotted as the JSON every front end receives, and the behaviour a user would notice is
checked on its own: junk arguments never break a display, a third-party tool's own display is
used, a failing one falls back to the default, paths are shown relative to the working folder,
and an edit waiting for approval shows the lines it replaces.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    Approval,
    CallProgress,
    CallStatus,
    CallView,
    Denial,
    DiffBody,
    Display,
    DisplayGroup,
    ErrorCode,
    Interrupted,
    Registry,
    Runtime,
    TextBody,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    ToolResult,
)
from handrail.agent import Agent, ModelClient
from handrail.builtin import ReadFile, RunShell, Skill, coding_tools
from handrail.display import call_arguments
from handrail.sandbox import SandboxSupport


def _load_cases() -> ModuleType:
    # The test folders are not packages: load the shared table by its path.
    name = "handrail_tests_display_cases"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).with_name("display_cases.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before running it: its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


cases_module = _load_cases()

TOOLS = [
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "grep_search",
    "run_shell",
    "shell_output",
    "todo_write",
    "web_fetch",
    "enter_plan_mode",
    "exit_plan_mode",
    "skill",
    "tool_search",
    "agent",
]
ASKING = ["write_file", "edit_file", "run_shell", "web_fetch", "exit_plan_mode"]
NO_SANDBOX = SandboxSupport(landlock=0, namespaces=False, user_namespace=False, reason="test: none")


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sub-agent definitions, transcripts and settings come from the test's folder only."""
    monkeypatch.setenv("HANDRAIL_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = Path(os.path.realpath(tmp_path)) / "ws"
    (root / "src").mkdir(parents=True)
    (root / "app.py").write_text("def main():\n    print('hi')\n    return 0\n")
    (root / "src" / "util.py").write_text("def slug(text):\n    return text.lower()\n")
    return root


# -- the whole table ------------------------------------------------------------------------


async def test_every_tool_in_every_state(tmp_path: Path) -> None:
    cases: list[tuple[str, Display]] = await cases_module.display_cases(tmp_path)
    ids = [case for case, _ in cases]
    assert len(ids) == len(set(ids)), "case ids repeat"
    states = {(case.split("-")[0], case.split("-")[1]) for case in ids}
    for name in TOOLS:
        for state in ["running", "done", "failed", "denied", "cancelled"]:
            assert (name, state) in states, f"{name} has no {state} case"
    for name in ASKING:
        assert (name, "waiting") in states, f"{name} has no waiting case"
    for name in ["run_shell", "agent"]:
        assert (name, "progress") in states
    # The status each case claims is the one its display shows.
    for case, display in cases:
        expected = case.split("-")[1].replace("progress", "running")
        assert display.status.value == expected, case
        assert display.tool_name == case.split("-")[0] and display.call_id
    # Denials read the same way whoever refused.
    for case, display in cases:
        if display.status is CallStatus.DENIED:
            assert display.subtitle.startswith("denied"), case
    assert {case: display.to_json() for case, display in cases} == snapshot(
        {
            "read_file-running": {
                "title": "Read app.py",
                "subtitle": "",
                "status": "running",
                "group": "read",
            },
            "read_file-done": {
                "title": "Read app.py",
                "subtitle": "13 lines",
                "status": "done",
                "group": "read",
                "duration": 0.25,
            },
            "read_file-failed": {
                "title": "Read src/utils.py",
                "subtitle": "/ws/src/utils.py does not exist. Did you mean /ws/src/util.py? Relative paths resolve against /ws. Check the path with …",
                "status": "failed",
                "group": "read",
                "duration": 0.25,
            },
            "read_file-denied": {
                "title": "Read app.py",
                "subtitle": "denied by rule read_file",
                "status": "denied",
                "group": "read",
                "duration": 0.25,
            },
            "read_file-denied-roots": {
                "title": "Read /etc/ssh/ssh_host_ed25519_key",
                "subtitle": "denied: /etc/ssh/ssh_host_ed25519_key (inside /etc/ssh/ssh_host_*_key) is a protected secret location, hidden from ever…",
                "status": "denied",
                "group": "read",
                "duration": 0.25,
            },
            "read_file-running-page": {
                "title": "Read notes.md",
                "subtitle": "lines 1-10",
                "status": "running",
                "group": "read",
            },
            "read_file-done-page": {
                "title": "Read notes.md",
                "subtitle": "lines 1-10 of 30",
                "status": "done",
                "group": "read",
                "duration": 0.25,
            },
            "write_file-running": {
                "title": "Write src/greeting.py",
                "subtitle": "",
                "status": "running",
                "group": "edit",
            },
            "write_file-waiting": {
                "title": "Write src/greeting.py",
                "subtitle": "new content, 2 lines",
                "status": "waiting",
                "group": "edit",
                "body": {
                    "kind": "diff",
                    "diff": """\
--- a/src/greeting.py
+++ b/src/greeting.py
@@ -0,0 +1,2 @@
+GREETING = "Hello"
+PUNCTUATION = "!"
""",
                    "added": 2,
                    "removed": 0,
                },
            },
            "write_file-done": {
                "title": "Write src/greeting.py",
                "subtitle": "new file, +2 -0",
                "status": "done",
                "group": "edit",
                "body": {
                    "kind": "diff",
                    "diff": """\
--- a/src/greeting.py
+++ b/src/greeting.py
@@ -0,0 +1,2 @@
+GREETING = "Hello"
+PUNCTUATION = "!"
""",
                    "added": 2,
                    "removed": 0,
                },
                "duration": 0.25,
            },
            "write_file-failed": {
                "title": "Write src/util.py",
                "subtitle": "/ws/src/util.py has not been read in full in this session. Call read_file on it first (all of it, page by page if it is…",
                "status": "failed",
                "group": "edit",
                "duration": 0.25,
            },
            "write_file-denied": {
                "title": "Write src/greeting.py",
                "subtitle": "denied by the user",
                "status": "denied",
                "group": "edit",
                "duration": 0.25,
            },
            "edit_file-running": {
                "title": "Edit app.py",
                "subtitle": "",
                "status": "running",
                "group": "edit",
            },
            "edit_file-waiting": {
                "title": "Edit app.py",
                "subtitle": "+2 -1",
                "status": "waiting",
                "group": "edit",
                "body": {
                    "kind": "diff",
                    "diff": """\
--- a/app.py
+++ b/app.py
@@ -1 +1,2 @@
-    print(f"Hello, {name}!")
+    greeting = "Hello"
+    print(f"{greeting}, {name}!")
""",
                    "added": 2,
                    "removed": 1,
                },
            },
            "edit_file-done": {
                "title": "Edit app.py",
                "subtitle": "+2 -1",
                "status": "done",
                "group": "edit",
                "body": {
                    "kind": "diff",
                    "diff": """\
--- a/app.py
+++ b/app.py
@@ -2,7 +2,8 @@
 \n\
 \n\
 def greet(name):
-    print(f"Hello, {name}!")
+    greeting = "Hello"
+    print(f"{greeting}, {name}!")
 \n\
 \n\
 def main():
""",
                    "added": 2,
                    "removed": 1,
                },
                "duration": 0.25,
            },
            "edit_file-failed": {
                "title": "Edit app.py",
                "subtitle": "old_string was not found in /ws/app.py, not even when ignoring differences in line endings, typographic quotes, dashes …",
                "status": "failed",
                "group": "edit",
                "duration": 0.25,
            },
            "edit_file-denied": {
                "title": "Edit app.py",
                "subtitle": "denied by the user: keep the f-string as it is",
                "status": "denied",
                "group": "edit",
                "duration": 0.25,
            },
            "edit_file-waiting-batch": {
                "title": "Edit app.py",
                "subtitle": "+2 -1, 2 edits, every occurrence",
                "status": "waiting",
                "group": "edit",
                "body": {
                    "kind": "diff",
                    "diff": """\
--- a/app.py
+++ b/app.py
@@ -1 +1,2 @@
+import os
 import sys
@@ -1 +1 @@
-"world"
+"there"
""",
                    "added": 2,
                    "removed": 1,
                },
            },
            "list_files-running": {
                "title": 'List "*.py" in src',
                "subtitle": "",
                "status": "running",
                "group": "list",
            },
            "list_files-done": {
                "title": 'List "*.py" in src',
                "subtitle": "3 files",
                "status": "done",
                "group": "list",
                "duration": 0.25,
            },
            "list_files-failed": {
                "title": "List lib",
                "subtitle": "/ws/lib does not exist. Relative paths resolve against /ws. Find the right path with list_files, or leave path out to s…",
                "status": "failed",
                "group": "list",
                "duration": 0.25,
            },
            "list_files-denied": {
                "title": 'List "*.py" in src',
                "subtitle": "denied by rule list_files",
                "status": "denied",
                "group": "list",
                "duration": 0.25,
            },
            "grep_search-running": {
                "title": 'Search "def \\w+" (*.py)',
                "subtitle": "",
                "status": "running",
                "group": "search",
            },
            "grep_search-done": {
                "title": 'Search "def \\w+" (*.py)',
                "subtitle": "3 matches in 2 files",
                "status": "done",
                "group": "search",
                "duration": 0.25,
            },
            "grep_search-failed": {
                "title": 'Search "def ("',
                "subtitle": "The pattern is not a valid regular expression. ripgrep says:",
                "status": "failed",
                "group": "search",
                "duration": 0.25,
            },
            "grep_search-denied": {
                "title": 'Search "def \\w+" (*.py)',
                "subtitle": "denied by rule grep_search",
                "status": "denied",
                "group": "search",
                "duration": 0.25,
            },
            "run_shell-running": {
                "title": "Run mkdir -p build && printf 'line %s\\n' 1 2 3 4 5 6 7 | tee build/log.txt",
                "subtitle": "Build",
                "status": "running",
                "group": "shell",
            },
            "run_shell-waiting": {
                "title": "Run mkdir -p build && printf 'line %s\\n' 1 2 3 4 5 6 7 | tee build/log.txt",
                "subtitle": "Build",
                "status": "waiting",
                "group": "shell",
            },
            "run_shell-done": {
                "title": "Run mkdir -p build && printf 'line %s\\n' 1 2 3 4 5 6 7 | tee build/log.txt",
                "subtitle": "exit 0",
                "status": "done",
                "group": "shell",
                "body": {
                    "kind": "text",
                    "head": ["line 1", "line 2"],
                    "tail": ["line 6", "line 7"],
                    "omitted": 3,
                },
                "duration": 0.25,
            },
            "run_shell-failed": {
                "title": "Run echo compiling; echo 'error: missing ;' >&2; exit 2",
                "subtitle": "exit 2",
                "status": "failed",
                "group": "shell",
                "body": {
                    "kind": "text",
                    "head": ["compiling", "[stderr]", "error: missing ;"],
                    "tail": [],
                    "omitted": 0,
                },
                "duration": 0.25,
            },
            "run_shell-denied": {
                "title": "Run mkdir -p build && printf 'line %s\\n' 1 2 3 4 5 6 7 | tee build/log.txt",
                "subtitle": "denied by the user",
                "status": "denied",
                "group": "shell",
                "duration": 0.25,
            },
            "run_shell-progress": {
                "title": "Run echo line 1; sleep 0.7; /usr/bin/printf 'line 2\\nline 3\\nline 4\\nline 5\\nline 6\\nline 7\\n'; sleep 0.1",
                "subtitle": "",
                "status": "running",
                "group": "shell",
                "progress": {
                    "elapsed": 1.5,
                    "lines": ["line 3", "line 4", "line 5", "line 6", "line 7"],
                },
            },
            "run_shell-failed-timeout": {
                "title": "Run sleep 5",
                "subtitle": "timed out",
                "status": "failed",
                "group": "shell",
                "body": {
                    "kind": "text",
                    "head": ["[stderr]", "Terminated"],
                    "tail": [],
                    "omitted": 0,
                },
                "duration": 0.25,
            },
            "run_shell-waiting-script": {
                "title": "Run cat > build/check.sh <<'EOF' ...",
                "subtitle": "",
                "status": "waiting",
                "group": "shell",
                "body": {
                    "kind": "text",
                    "head": [
                        "cat > build/check.sh <<'EOF'",
                        "set -e",
                        "python -m compileall -q .",
                        "grep -rn TODO src || true",
                        "EOF",
                        "bash build/check.sh",
                    ],
                    "tail": [],
                    "omitted": 0,
                },
            },
            "run_shell-running-background": {
                "title": "Run printf 'line %s\\n' 1 2 3 4 5 6 7",
                "subtitle": "in the background",
                "status": "running",
                "group": "shell",
            },
            "run_shell-done-background": {
                "title": "Run printf 'line %s\\n' 1 2 3 4 5 6 7",
                "subtitle": "background job sh-1",
                "status": "done",
                "group": "shell",
                "duration": 0.25,
            },
            "shell_output-running": {
                "title": "Output of sh-1",
                "subtitle": "waiting up to 10 s",
                "status": "running",
                "group": "shell",
            },
            "shell_output-done": {
                "title": "Output of sh-1",
                "subtitle": "exit 0",
                "status": "done",
                "group": "shell",
                "body": {
                    "kind": "text",
                    "head": ["line 1", "line 2"],
                    "tail": ["line 6", "line 7"],
                    "omitted": 3,
                },
                "duration": 0.25,
            },
            "shell_output-failed": {
                "title": "Output of sh-9",
                "subtitle": "There is no background job 'sh-9' in this session. Known jobs: sh-1.",
                "status": "failed",
                "group": "shell",
                "duration": 0.25,
            },
            "shell_output-denied": {
                "title": "Output of sh-1",
                "subtitle": "denied by rule shell_output",
                "status": "denied",
                "group": "shell",
                "duration": 0.25,
            },
            "todo_write-running": {
                "title": "Update todos",
                "subtitle": "",
                "status": "running",
                "group": "other",
                "body": {
                    "kind": "table",
                    "columns": ["status", "task"],
                    "rows": [
                        ["completed", "Read app.py"],
                        ["in progress", "Add a greeting setting"],
                        ["pending", "Run the tests"],
                    ],
                    "omitted": 0,
                },
            },
            "todo_write-done": {
                "title": "Update todos",
                "subtitle": "1/3 completed",
                "status": "done",
                "group": "other",
                "body": {
                    "kind": "table",
                    "columns": ["status", "task"],
                    "rows": [
                        ["completed", "Read app.py"],
                        ["in progress", "Add a greeting setting"],
                        ["pending", "Run the tests"],
                    ],
                    "omitted": 0,
                },
                "duration": 0.25,
            },
            "todo_write-failed": {
                "title": "Update todos",
                "subtitle": 'At most one todo may be in_progress, but "1", "2", "3" are. The list was not changed; keep the one you are working on n…',
                "status": "failed",
                "group": "other",
                "duration": 0.25,
            },
            "todo_write-denied": {
                "title": "Update todos",
                "subtitle": "denied by rule todo_write",
                "status": "denied",
                "group": "other",
                "duration": 0.25,
            },
            "web_fetch-running": {
                "title": "Fetch http://127.0.0.1:8000/guide",
                "subtitle": "",
                "status": "running",
                "group": "fetch",
            },
            "web_fetch-waiting": {
                "title": "Fetch http://127.0.0.1:8000/guide",
                "subtitle": "",
                "status": "waiting",
                "group": "fetch",
            },
            "web_fetch-done": {
                "title": "Fetch http://127.0.0.1:8000/guide",
                "subtitle": "HTTP 200, 142 bytes",
                "status": "done",
                "group": "fetch",
                "duration": 0.25,
            },
            "web_fetch-failed": {
                "title": "Fetch http://127.0.0.1:8000/missing",
                "subtitle": "http://127.0.0.1:8000/missing answered HTTP 404 Not Found. The page does not exist (any more): check the URL, or search…",
                "status": "failed",
                "group": "fetch",
                "duration": 0.25,
            },
            "web_fetch-denied": {
                "title": "Fetch http://127.0.0.1:8000/guide",
                "subtitle": "denied by the user: no browsing for this task",
                "status": "denied",
                "group": "fetch",
                "duration": 0.25,
            },
            "skill-running": {
                "title": "Load skill release-notes",
                "subtitle": "",
                "status": "running",
                "group": "other",
            },
            "skill-done": {
                "title": "Load skill release-notes",
                "subtitle": "project skill, 1 file",
                "status": "done",
                "group": "other",
                "duration": 0.25,
            },
            "skill-failed": {
                "title": "Load skill release-note",
                "subtitle": "There is no skill named 'release-note'. Did you mean `release-notes`? Available skills: `release-notes`.",
                "status": "failed",
                "group": "other",
                "duration": 0.25,
            },
            "skill-denied": {
                "title": "Load skill release-notes",
                "subtitle": "denied by rule skill",
                "status": "denied",
                "group": "other",
                "duration": 0.25,
            },
            "tool_search-running": {
                "title": 'Search tools "plan mode"',
                "subtitle": "",
                "status": "running",
                "group": "search",
            },
            "tool_search-done": {
                "title": 'Search tools "plan mode"',
                "subtitle": "loaded enter_plan_mode, exit_plan_mode",
                "status": "done",
                "group": "search",
                "duration": 0.25,
            },
            "tool_search-failed": {
                "title": 'Search tools "?"',
                "subtitle": "Invalid arguments for `tool_search`:",
                "status": "failed",
                "group": "search",
                "duration": 0.25,
            },
            "tool_search-denied": {
                "title": 'Search tools "plan mode"',
                "subtitle": "denied by rule tool_search",
                "status": "denied",
                "group": "search",
                "duration": 0.25,
            },
            "tool_search-done-none": {
                "title": 'Search tools "kubernetes"',
                "subtitle": "no match",
                "status": "done",
                "group": "search",
                "duration": 0.25,
            },
            "tool_search-done-select": {
                "title": "Load tools enter_plan_mode, exit_plan_mode",
                "subtitle": "loaded enter_plan_mode, exit_plan_mode",
                "status": "done",
                "group": "search",
                "duration": 0.25,
            },
            "enter_plan_mode-running": {
                "title": "Enter plan mode",
                "subtitle": "The change touches several modules.",
                "status": "running",
                "group": "other",
            },
            "enter_plan_mode-done": {
                "title": "Enter plan mode",
                "subtitle": "The change touches several modules.",
                "status": "done",
                "group": "other",
                "duration": 0.25,
            },
            "enter_plan_mode-failed": {
                "title": "Enter plan mode",
                "subtitle": "The session is already in plan mode. Keep exploring with read-only tools, then call exit_plan_mode with your plan to as…",
                "status": "failed",
                "group": "other",
                "duration": 0.25,
            },
            "enter_plan_mode-denied": {
                "title": "Enter plan mode",
                "subtitle": "denied by rule enter_plan_mode",
                "status": "denied",
                "group": "other",
                "duration": 0.25,
            },
            "exit_plan_mode-running": {
                "title": "Exit plan mode",
                "subtitle": "",
                "status": "running",
                "group": "other",
            },
            "exit_plan_mode-waiting": {
                "title": "Exit plan mode",
                "subtitle": "plan of 3 lines",
                "status": "waiting",
                "group": "other",
                "body": {
                    "kind": "text",
                    "head": [
                        "1. Add GREETING to src/greeting.py.",
                        "2. Use it in app.py's greet().",
                        "3. Run the tests with pytest -q.",
                    ],
                    "tail": [],
                    "omitted": 0,
                },
            },
            "exit_plan_mode-denied": {
                "title": "Exit plan mode",
                "subtitle": "denied by the user: also update the README",
                "status": "denied",
                "group": "other",
                "duration": 0.25,
            },
            "exit_plan_mode-done": {
                "title": "Exit plan mode",
                "subtitle": "back to default mode",
                "status": "done",
                "group": "other",
                "duration": 0.25,
            },
            "exit_plan_mode-failed": {
                "title": "Exit plan mode",
                "subtitle": "The session is not in plan mode (it is in default mode), so there is no plan to approve. Use enter_plan_mode first to e…",
                "status": "failed",
                "group": "other",
                "duration": 0.25,
            },
            "agent-running": {
                "title": "explore: Find the greeting code",
                "subtitle": "",
                "status": "running",
                "group": "agent",
            },
            "agent-progress": {
                "title": "explore: Find the greeting code",
                "subtitle": "",
                "status": "running",
                "group": "agent",
                "progress": {"elapsed": 1.5, "message": "Read app.py"},
            },
            "agent-progress-finished": {
                "title": "explore: Find the greeting code",
                "subtitle": "",
                "status": "running",
                "group": "agent",
                "progress": {"elapsed": 1.5, "message": "Read app.py: 14 lines"},
            },
            "agent-progress-answer": {
                "title": "explore: Find the greeting code",
                "subtitle": "",
                "status": "running",
                "group": "agent",
                "progress": {"elapsed": 1.5, "message": "writing its answer"},
            },
            "agent-done": {
                "title": "explore: Find the greeting code",
                "subtitle": "1 tool call, 2 turns, 4.2k tokens",
                "status": "done",
                "group": "agent",
                "duration": 0.25,
            },
            "agent-failed": {
                "title": "explore: Map the modules",
                "subtitle": "no answer, 0 tool calls, 2 turns, 30 tokens",
                "status": "failed",
                "group": "agent",
                "duration": 0.25,
            },
            "agent-denied": {
                "title": "explore: Find the greeting code",
                "subtitle": "denied by rule agent",
                "status": "denied",
                "group": "agent",
                "duration": 0.25,
            },
            "run_shell-cancelled": {
                "title": "Run echo started; sleep 30; rm -f build/stamp",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "shell",
                "duration": 0.25,
            },
            "read_file-cancelled": {
                "title": "Read app.py",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "read",
                "duration": 0.25,
            },
            "write_file-cancelled": {
                "title": "Write new.txt",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "edit",
                "duration": 0.25,
            },
            "edit_file-cancelled": {
                "title": "Edit app.py",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "edit",
                "duration": 0.25,
            },
            "list_files-cancelled": {
                "title": 'List "*.md"',
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "list",
                "duration": 0.25,
            },
            "grep_search-cancelled": {
                "title": 'Search "TODO"',
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "search",
                "duration": 0.25,
            },
            "shell_output-cancelled": {
                "title": "Output of sh-1",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "shell",
                "duration": 0.25,
            },
            "todo_write-cancelled": {
                "title": "Update todos",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "other",
                "duration": 0.25,
            },
            "web_fetch-cancelled": {
                "title": "Fetch http://example.com/",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "fetch",
                "duration": 0.25,
            },
            "skill-cancelled": {
                "title": "Load skill release-notes",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "other",
                "duration": 0.25,
            },
            "tool_search-cancelled": {
                "title": 'Search tools "plan"',
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "search",
                "duration": 0.25,
            },
            "enter_plan_mode-cancelled": {
                "title": "Enter plan mode",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "other",
                "duration": 0.25,
            },
            "exit_plan_mode-cancelled": {
                "title": "Exit plan mode",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "other",
                "duration": 0.25,
            },
            "agent-cancelled": {
                "title": "explore: Look around",
                "subtitle": "The call was cancelled.",
                "status": "cancelled",
                "group": "agent",
                "duration": 0.25,
            },
        }
    )


# -- what a user would notice ---------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
ARG_KEYS = [
    "file_path", "content", "old_string", "new_string", "replace_all", "edits", "offset", "limit",
    "path", "pattern", "glob", "type", "command", "description", "run_in_background", "job_id",
    "stop", "wait_seconds", "todos", "url", "format", "reason", "plan", "name", "query",
    "agent_type",
]  # fmt: skip
META_KEYS = [
    "first_line", "last_line", "total_lines", "unchanged", "created", "written", "added",
    "removed", "replacements", "total", "shown", "files", "matches", "partial", "exit_code",
    "signal", "job_id", "status", "redirect", "bytes", "cached", "mode", "source",
    "allowed_tools", "turns", "tool_calls", "usage", "cost_usd", "subtype",
]  # fmt: skip
EVENTS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(
            ["tool_call_started", "tool_call_finished", "tool_call_progress", "approval_asked",
             "turn_started", "text_delta", "model_retry"]
        )
        | JSON,
        "display": st.dictionaries(st.sampled_from(["title", "subtitle"]), JSON) | JSON,
        "call": st.dictionaries(st.just("name"), JSON) | JSON,
        "result": st.dictionaries(st.just("tool_name"), JSON) | JSON,
        "turn": JSON,
    },
)  # fmt: skip
ARGUMENTS = (
    st.dictionaries(st.sampled_from(ARG_KEYS) | st.text(max_size=6), JSON, max_size=6) | JSON
)
METADATA = st.dictionaries(st.sampled_from(META_KEYS), JSON, max_size=6)
DATA = st.fixed_dictionaries({}, optional={"lines": JSON, "event": EVENTS | JSON, "agent": JSON})
CONTENT = st.text(max_size=120) | st.sampled_from(
    [
        "Exit code 2.\nout\n[stderr]\nerr",
        "Loaded 1 tool(s); you can call them now: x.\n",
        "New output:\nx",
    ]
)
RESULTS = st.none() | st.builds(
    lambda ok, content, meta, diff, code, denial: (
        ToolResult.success(content, metadata=meta, diff=diff)
        if ok
        else replace(ToolResult.failure(code, content, metadata=meta), denial=denial)
    ),
    st.booleans(),
    CONTENT,
    METADATA,
    st.none() | st.text(max_size=80),
    st.sampled_from(list(ErrorCode)),
    st.none()
    | st.builds(
        Denial,
        reason=st.text(max_size=40),
        source=st.sampled_from(["rule", "mode", "roots", "hook", "user"]),
        rule=st.none() | st.text(max_size=20),
    ),
)


@functools.cache
def _all_tools() -> list[Tool]:
    """One of each tool (built once, after `_private_dirs` has set the config folders)."""
    rt = Runtime(Registry(coding_tools(project_dir=None)), root=Path.cwd())
    Agent(ModelClient("openai_chat", "m", base_url="http://127.0.0.1:9/v1"), rt, save=False)
    found = [rt.registry.get(name) for name in TOOLS if name != "skill"]
    tools = [t for t in found if t is not None] + [Skill(project_dir=None)]
    assert sorted(t.name for t in tools) == sorted(TOOLS)
    return tools


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arguments=ARGUMENTS,
    status=st.sampled_from(list(CallStatus)),
    result=RESULTS,
    data=DATA,
    progress=st.none()
    | st.builds(CallProgress, elapsed=st.floats(0, 1e6), message=st.text(max_size=10)),
    cwd=st.sampled_from(["", "/ws", "/"]),
)
def test_junk_arguments_never_break_a_display(
    arguments: Any,
    status: CallStatus,
    result: ToolResult | None,
    data: dict[str, Any],
    progress: CallProgress | None,
    cwd: str,
) -> None:
    # The model's JSON as it arrives: any value, parsed the way the runtime parses it.
    call = ToolCall(id="call_1", name="x", arguments=json.dumps(arguments))
    view = CallView(
        call=call,
        arguments=call_arguments(call),
        status=status,
        result=result,
        progress=progress,
        data=data,
        cwd=cwd,
    )
    for tool in _all_tools():
        shown = tool.display(view)  # called directly: Runtime.display would hide an exception
        assert isinstance(shown, Display), tool.name
        assert shown.title and "\n" not in shown.title and "\n" not in shown.subtitle, tool.name
        json.dumps(shown.to_json())


class DeployArgs(BaseModel):
    service: str
    version: str = "latest"


class Deploy(Tool):
    """A third-party tool that says how its calls look, through the public API only."""

    name = "deploy"
    description = "Deploy a service."
    kind = ToolKind.EXECUTE
    args_model: ClassVar[type[BaseModel] | None] = DeployArgs

    def run(self, args: DeployArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult.success(f"{args.service} is live", metadata={"url": "https://api.test"})

    def display(self, view: CallView) -> Display:
        base = super().display(view)
        title = f"Deploy {view.text('service', '?')} {view.text('version', 'latest')}"
        result = view.result
        subtitle = f"live at {result.metadata['url']}" if result and result.ok else base.subtitle
        return replace(base, title=title, subtitle=subtitle, group=DisplayGroup.SHELL)


async def test_a_third_party_tool_describes_its_own_calls(ws: Path) -> None:
    rt = Runtime(Registry([Deploy()]), root=ws, mode="default")
    call = ToolCall(id="call_1", name="deploy", arguments={"service": "api", "version": "1.4"})
    asked = await rt.call(call.name, call.arguments, call_id=call.id)
    assert isinstance(asked, Interrupted)
    waiting = rt.display(call, status=CallStatus.WAITING)
    assert (waiting.title, waiting.status, waiting.group) == (
        "Deploy api 1.4",
        CallStatus.WAITING,
        DisplayGroup.SHELL,
    )
    result = await rt.resume(asked, Approval.allow_once())
    done = rt.display(call, result=result)
    # The tool's title and subtitle; the runtime's status, duration and ids.
    assert done.to_json() == snapshot(
        {
            "title": "Deploy api 1.4",
            "subtitle": "live at https://api.test",
            "status": "done",
            "group": "shell",
            "duration": round(result.duration, 3),
        }
    )
    assert (done.tool_name, done.call_id) == ("deploy", "call_1")
    denied = await rt.resume(await rt.call("deploy", {"service": "db"}), Approval.deny())
    shown = rt.display(ToolCall(id="c2", name="deploy", arguments={"service": "db"}), result=denied)
    assert (shown.title, shown.subtitle, shown.status) == (
        "Deploy db latest",
        "denied by the user",
        CallStatus.DENIED,
    )


class TopicArgs(BaseModel):
    topic: str = ""


class Broken(Tool):
    name = "broken"
    description = "A tool whose display fails."
    kind = ToolKind.READ
    read_only = True
    args_model: ClassVar[type[BaseModel] | None] = TopicArgs
    answer: Any = None

    def run(self, args: TopicArgs, ctx: ToolContext) -> str:
        return "fine"

    def display(self, view: CallView) -> Display:
        if self.answer is None:
            raise KeyError("file_path")
        return self.answer


@pytest.mark.parametrize("answer", [None, "not a display"])
async def test_a_display_that_fails_falls_back_to_the_default(ws: Path, answer: Any) -> None:
    tool = Broken()
    tool.answer = answer
    rt = Runtime(Registry([tool]), root=ws)
    call = ToolCall(id="call_1", name="broken", arguments={"topic": "logs"})
    running = rt.display(call)
    assert (running.title, running.status, running.group) == (
        "broken logs",
        CallStatus.RUNNING,
        DisplayGroup.READ,
    )
    result = await rt.call("broken", {}, call_id="call_1")
    done = rt.display(call, result=result)
    assert (done.status, done.subtitle, done.call_id) == (CallStatus.DONE, "fine", "call_1")


async def test_paths_are_shown_relative_to_the_working_folder(ws: Path) -> None:
    rt = Runtime(Registry([ReadFile()]), root=ws, cwd=ws / "src")

    def title(path: str) -> str:
        return rt.display(ToolCall(id="c", name="read_file", arguments={"file_path": path})).title

    assert title(str(ws / "src" / "util.py")) == "Read util.py"
    assert title("./lib/../util.py") == "Read util.py"
    assert title(str(ws / "src")) == "Read ."
    assert title(str(ws / "app.py")) == f"Read {ws}/app.py"  # outside the cwd: as given
    assert title("../app.py") == "Read ../app.py"
    # Finished, the title stays the one the call had while it ran.
    call = ToolCall(id="c", name="read_file", arguments={"file_path": str(ws / "src" / "util.py")})
    result = await rt.call(call.name, call.arguments, call_id=call.id)
    done = rt.display(call, result=result)
    assert (done.title, done.subtitle) == ("Read util.py", "2 lines")


def test_a_newline_in_a_path_is_spelled_out_not_read_as_a_space(ws: Path) -> None:
    # A model's path "new.txt\n  write /etc/motd" must not look like two words of a title.
    rt = Runtime(Registry([ReadFile()]), root=ws)
    call = ToolCall(id="c", name="read_file", arguments={"file_path": "new.txt\n  rm x\tz"})
    assert rt.display(call).title == "Read new.txt\\n rm x\\tz"


async def test_an_edit_waiting_for_approval_shows_the_lines_it_replaces(ws: Path) -> None:
    rt = Runtime(Registry(coding_tools(project_dir=ws)), root=ws, mode="default")
    assert (await rt.call("read_file", {"file_path": "app.py"})).ok
    before = (ws / "app.py").read_bytes()
    call = ToolCall(
        id="call_9",
        name="edit_file",
        arguments={
            "file_path": str(ws / "app.py"),
            "old_string": "    print('hi')\n    return 0",
            "new_string": "    print('hello')\n    return 0",
        },
    )
    asked = await rt.call(call.name, call.arguments, call_id=call.id)
    assert isinstance(asked, Interrupted)
    shown = rt.display(call, status=CallStatus.WAITING)
    assert isinstance(shown.body, DiffBody)
    assert shown.body.diff == snapshot("""\
--- a/app.py
+++ b/app.py
@@ -1,2 +1,2 @@
-    print('hi')
+    print('hello')
     return 0
""")
    assert (shown.title, shown.subtitle, shown.body.added, shown.body.removed) == (
        "Edit app.py",
        "+1 -1",
        1,
        1,
    )
    assert (ws / "app.py").read_bytes() == before  # showing it changed nothing
    done = rt.display(call, result=await rt.resume(asked, Approval.allow_once()))
    assert isinstance(done.body, DiffBody)
    assert "-    print('hi')\n+    print('hello')\n" in done.body.diff
    assert done.subtitle == "+1 -1"


async def test_a_command_shows_its_own_output_without_the_notes_for_the_model(ws: Path) -> None:
    # No sandbox (allowed), a file read then changed, a failing exit: the model's result says
    # all of that around the output; the display keeps the output and says `exit 3`.
    rt = Runtime(
        Registry([ReadFile(), RunShell(allow_unsandboxed=True, support=NO_SANDBOX)]),
        root=ws,
        mode="bypass",
    )
    assert (await rt.call("read_file", {"file_path": "app.py"})).ok
    command = "echo one; echo two >&2; echo '# end' >> app.py; exit 3"
    call = ToolCall(id="call_1", name="run_shell", arguments={"command": command})
    result = await rt.call(call.name, call.arguments, call_id=call.id)
    assert result.error is ErrorCode.NONZERO_EXIT
    framing = result.content.replace(str(ws), "<ws>").splitlines()
    assert framing[0].startswith("(No OS sandbox on this machine")
    assert framing[1] == "Exit code 3."
    assert framing[-1].startswith("Files read earlier in this session that changed")
    shown = rt.display(call, result=result)
    assert (shown.subtitle, shown.body) == (
        "exit 3",
        TextBody(head=("one", "[stderr]", "two")),
    )
