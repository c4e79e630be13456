"""`handrail tools`: the table of visible tools, and the exact provider payload with --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handrail import Registry, Runtime
from handrail.builtin import coding_tools


def isolated_env(workspace: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.pop("TTY_COMPATIBLE", None)
    env["XDG_CONFIG_HOME"] = str(workspace.parent / "xdg")  # no user settings from this machine
    env.update(extra)
    return env


def run(workspace: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handrail", "tools", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=isolated_env(workspace, **env),
    )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def names(table: str) -> list[str]:
    return [line.split()[0] for line in table.splitlines()[1:]]


def test_piped_table_is_plain_aligned_text(workspace: Path) -> None:
    out = run(workspace)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "TOOL",
        "KIND",
        "READ-ONLY",
        "CONCURRENCY-SAFE",
        "DESTRUCTIVE",
        "NOTE",
    ]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert rows["read_file"].split() == ["read_file", "read", "yes", "yes", "no"]
    assert rows["write_file"].split() == ["write_file", "edit", "no", "no", "yes"]
    assert rows["run_shell"].split() == ["run_shell", "execute"] + ["depends", "on", "input"] * 3
    assert rows["enter_plan_mode"].split()[-1] == "deferred"
    # Visible tools in the model's order (sorted), then the deferred ones.
    assert names(out.stdout) == [
        "edit_file",
        "grep_search",
        "list_files",
        "read_file",
        "run_shell",
        "shell_output",
        "todo_write",
        "tool_search",
        "web_fetch",
        "write_file",
        "enter_plan_mode",
        "exit_plan_mode",
    ]
    # Columns line up: every field starts where its header does.
    kind_at = lines[0].index("KIND")
    assert all(line[kind_at - 2 : kind_at] == "  " and line[kind_at] != " " for line in lines)
    assert "\x1b[" not in out.stdout
    assert not any(ch in out.stdout for ch in "─│┃━")
    assert out.stderr == ""


def test_plan_mode_hides_the_tools_that_change_things(workspace: Path) -> None:
    listed = names(run(workspace, "--mode", "plan").stdout)
    assert "read_file" in listed
    assert "write_file" not in listed and "edit_file" not in listed
    assert "run_shell" in listed  # read-only for some inputs


def test_settings_files_and_options_decide_what_is_visible(workspace: Path) -> None:
    (workspace / ".handrail").mkdir()
    (workspace / ".handrail" / "settings.json").write_text('{"disabled_tools": ["web_fetch"]}')
    extra = workspace / "extra.json"
    extra.write_text('{"disabled_tools": ["todo_write"]}')
    user = workspace.parent / "xdg" / "handrail"
    user.mkdir(parents=True)
    (user / "settings.json").write_text('{"disabled_tools": ["list_files"]}')

    project_and_user = names(run(workspace).stdout)
    assert "web_fetch" not in project_and_user and "list_files" not in project_and_user
    assert "todo_write" in project_and_user

    with_extra = names(run(workspace, "--settings", str(extra)).stdout)
    assert {"web_fetch", "list_files", "todo_write"}.isdisjoint(with_extra)

    only_extra = names(run(workspace, "--no-settings", "--settings", str(extra)).stdout)
    assert "web_fetch" in only_extra and "list_files" in only_extra
    assert "todo_write" not in only_extra

    none = names(run(workspace, "--no-settings").stdout)
    assert {"web_fetch", "list_files", "todo_write"} <= set(none)


def test_a_broken_settings_file_is_one_line_and_exit_2(workspace: Path) -> None:
    (workspace / ".handrail").mkdir()
    (workspace / ".handrail" / "settings.json").write_text('{"permissions": {"allow": [1]}}')
    out = run(workspace)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1
    assert out.stderr.startswith("handrail: error: settings file ")
    assert "Traceback" not in out.stderr
    assert run(workspace, "--no-settings").returncode == 0


def test_terminal_table_is_styled(workspace: Path) -> None:
    out = run(workspace, TTY_COMPATIBLE="1", TERM="xterm-256color", COLUMNS="160")
    assert out.returncode == 0, out.stderr
    assert "\x1b[" in out.stdout
    assert "─" in out.stdout
    assert "10 tools visible to the model (mode default)" in out.stdout
    assert "Read a text file." in out.stdout  # descriptions fit on a wide terminal


def test_json_is_the_exact_provider_payload(workspace: Path) -> None:
    from handrail.providers import tools_payload

    out = run(workspace, "--json", "--provider", "anthropic")
    assert out.returncode == 0, out.stderr
    rt = Runtime(Registry(coding_tools(project_dir=workspace)), root=workspace)
    assert json.loads(out.stdout) == tools_payload("anthropic", rt.tools(provider="anthropic"))


def test_json_defaults_to_openai_chat(workspace: Path) -> None:
    from handrail.providers import tools_payload

    out = run(workspace, "--json")
    assert out.returncode == 0, out.stderr
    rt = Runtime(Registry(coding_tools(project_dir=workspace)), root=workspace)
    assert json.loads(out.stdout) == tools_payload("openai_chat", rt.tools(provider="openai_chat"))


def test_provider_filters_the_table(workspace: Path) -> None:
    out = run(workspace, "--provider", "gemini")
    assert out.returncode == 0, out.stderr
    assert "read_file" in names(out.stdout)


def test_unknown_provider_is_a_usage_error(workspace: Path) -> None:
    for args in (["--provider", "cohere"], ["--json", "--provider", "cohere"]):
        out = run(workspace, *args)
        assert out.returncode == 2
        assert len(out.stderr.splitlines()) == 1
        assert "cohere" in out.stderr and "anthropic" in out.stderr
        assert out.stdout == ""
