"""Settings files: reading, merging, errors, and their effect on a `Runtime`.

A project's files widen nothing until the folder is trusted (tests/permissions/test_trust.py);
the tests here that are about merging or about what a setting does trust the folder first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import handrail
from handrail import ErrorCode, PermissionMode, Runtime, Settings, tool
from handrail.permissions import (
    load_settings,
    read_settings_file,
    trust_folder,
    user_settings_path,
)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep the real user settings file out of every test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def project_file(root: Path, data: Any) -> Path:
    return write_json(root / ".handrail" / "settings.json", data)


def user_file(data: Any) -> Path:
    return write_json(user_settings_path(), data)


@tool
def touch(name: str) -> str:
    """Pretend to change something."""
    return f"touched {name}"


@tool(read_only=True)
def look(name: str) -> str:
    """Look at something."""
    return f"looked at {name}"


# -- reading and merging -------------------------------------------------------------------


def test_user_settings_path_respects_xdg(isolated_home: Path) -> None:
    assert user_settings_path() == isolated_home / ".config" / "handrail" / "settings.json"


def test_no_files_gives_empty_settings(project: Path) -> None:
    s = load_settings(project)
    assert (s.allow, s.ask, s.deny, s.default_mode, s.sources) == ((), (), (), None, ())


def test_read_one_file(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "s.json",
        {
            "permissions": {
                "allow": ["run_shell(npm test:*)"],
                "ask": ["edit_file(*.lock)"],
                "deny": ["web_fetch"],
                "default_mode": "accept_edits",
            },
            "disabled_tools": ["web_fetch"],
            "features": {"x": True},
            "locale": "zh",
            "tools": {"run_shell": {"env": {"A": "1"}}},
        },
    )
    s = read_settings_file(path)
    assert s.allow == ("run_shell(npm test:*)",)
    assert s.ask == ("edit_file(*.lock)",)
    assert s.deny == ("web_fetch",)
    assert s.default_mode is PermissionMode.ACCEPT_EDITS
    assert s.disabled_tools == ("web_fetch",)
    assert dict(s.features) == {"x": True}
    assert s.locale == "zh"
    assert s.tools["run_shell"] == {"env": {"A": "1"}}
    assert s.sources == (path,)


def test_project_and_user_lists_are_concatenated(project: Path, tmp_path: Path) -> None:
    user = write_json(
        tmp_path / "user.json",
        {"permissions": {"allow": ["look"], "deny": ["web_fetch"]}, "disabled_tools": ["a"]},
    )
    proj = project_file(
        project,
        {"permissions": {"allow": ["touch(x)"], "deny": ["run_shell"]}, "disabled_tools": ["b"]},
    )
    s = load_settings(project, user_path=user, trust=True)
    assert s.allow == ("look", "touch(x)")
    assert s.deny == ("web_fetch", "run_shell")
    assert s.disabled_tools == ("a", "b")
    assert s.sources == (user, proj)


def test_personal_project_settings_come_last(project: Path, tmp_path: Path) -> None:
    user = write_json(tmp_path / "user.json", {"locale": "zh"})
    shared = project_file(project, {"permissions": {"allow": ["look"]}, "locale": "en"})
    local = write_json(
        project / ".handrail" / "settings.local.json",
        {"permissions": {"allow": ["touch(x)"], "default_mode": "accept_edits"}},
    )
    s = load_settings(project, user_path=user, trust=True)
    assert s.allow == ("look", "touch(x)")
    assert s.locale == "en" and s.default_mode == PermissionMode.ACCEPT_EDITS
    assert s.sources == (user, shared, local)


def test_project_scalars_override_user_scalars(project: Path, tmp_path: Path) -> None:
    user = write_json(
        tmp_path / "user.json", {"permissions": {"default_mode": "plan"}, "locale": "zh"}
    )
    project_file(project, {"permissions": {"default_mode": "accept_edits"}, "locale": "en"})
    s = load_settings(project, user_path=user, trust=True)
    assert s.default_mode is PermissionMode.ACCEPT_EDITS
    assert s.locale == "en"


def test_user_scalars_apply_when_the_project_is_silent(project: Path, tmp_path: Path) -> None:
    user = write_json(
        tmp_path / "user.json", {"permissions": {"default_mode": "plan"}, "locale": "zh"}
    )
    project_file(project, {"permissions": {"allow": ["look"]}})
    s = load_settings(project, user_path=user, trust=True)
    assert s.default_mode is PermissionMode.PLAN
    assert s.locale == "zh"


def test_default_user_path_is_read(project: Path) -> None:
    user_file({"permissions": {"deny": ["touch"]}})
    assert load_settings(project).deny == ("touch",)


# -- errors --------------------------------------------------------------------------------


def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{\n  "permissions": {\n    "allow": [,]\n  }\n}\n', encoding="utf-8")
    with pytest.raises(handrail.ConfigurationError) as info:
        read_settings_file(path)
    text = str(info.value)
    assert str(path) in text
    assert "line 3" in text
    assert "column 15" in text


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("", encoding="utf-8")
    with pytest.raises(handrail.ConfigurationError, match="not valid JSON"):
        read_settings_file(path)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"permisions": {}}, "permisions"),
        ({"permissions": {"alow": ["x"]}}, "permissions.alow"),
        ({"permissions": {"allow": "look"}}, "permissions.allow"),
        ({"permissions": {"default_mode": "yolo"}}, "permissions.default_mode"),
        ({"disabled_tools": "x"}, "disabled_tools"),
        ({"locale": "fr"}, "locale"),
        ({"features": {"x": "maybe"}}, "features.x"),
        ({"hooks": {"pre_tool_use": [{"matcher": "x"}]}}, "hooks.pre_tool_use.0.command"),
        ({"hooks": {"before": []}}, "hooks.before"),
        ([1, 2], "(root)"),
    ],
)
def test_unknown_keys_and_wrong_types_name_the_field(tmp_path: Path, data: Any, field: str) -> None:
    path = write_json(tmp_path / "settings.json", data)
    with pytest.raises(handrail.ConfigurationError) as info:
        read_settings_file(path)
    assert str(path) in str(info.value)
    assert field in str(info.value)


def test_invalid_rule_names_the_file_and_rule(tmp_path: Path) -> None:
    path = write_json(tmp_path / "settings.json", {"permissions": {"deny": ["bad rule"]}})
    with pytest.raises(handrail.ConfigurationError) as info:
        read_settings_file(path)
    assert str(path) in str(info.value)
    assert "bad rule" in str(info.value)


def test_invalid_hook_matcher_names_the_file(tmp_path: Path) -> None:
    path = write_json(
        tmp_path / "settings.json",
        {"hooks": {"pre_tool_use": [{"matcher": "(unclosed", "command": "true"}]}},
    )
    with pytest.raises(handrail.ConfigurationError) as info:
        read_settings_file(path)
    assert str(path) in str(info.value)


def test_malformed_project_file_is_not_ignored_by_runtime(project: Path) -> None:
    (project / ".handrail").mkdir()
    (project / ".handrail" / "settings.json").write_text("{oops", encoding="utf-8")
    with pytest.raises(handrail.ConfigurationError, match=r"settings\.json"):
        Runtime([touch], root=project, load_settings=True)


def test_malformed_user_file_is_not_ignored_by_runtime(project: Path) -> None:
    path = user_settings_path()
    path.parent.mkdir(parents=True)
    path.write_text('{"permissions": {"deny": ["x("]}}', encoding="utf-8")
    with pytest.raises(handrail.ConfigurationError) as info:
        Runtime([touch], root=project, load_settings=True)
    assert str(path) in str(info.value)


# -- effect on a Runtime -------------------------------------------------------------------


async def test_user_deny_wins_over_project_allow(project: Path) -> None:
    user_file({"permissions": {"deny": ["touch"]}})
    project_file(project, {"permissions": {"allow": ["touch"]}})
    trust_folder(project)
    rt = Runtime([touch], root=project, load_settings=True)
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.rule == "touch"


async def test_project_deny_wins_over_user_allow(project: Path, tmp_path: Path) -> None:
    user = write_json(tmp_path / "user.json", {"permissions": {"allow": ["touch"]}})
    project_file(project, {"permissions": {"deny": ["touch"]}})
    rt = Runtime([touch], root=project, settings=load_settings(project, user_path=user))
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED


async def test_allow_rule_from_settings_runs_without_asking(project: Path) -> None:
    project_file(project, {"permissions": {"allow": ["touch"]}})
    trust_folder(project)
    rt = Runtime([touch], root=project, load_settings=True)
    r = await rt.call("touch", {"name": "a"})
    assert (r.ok, r.content) == (True, "touched a")


async def test_settings_passed_in_are_layered_over_loaded_files(project: Path) -> None:
    project_file(project, {"permissions": {"allow": ["touch"]}})
    trust_folder(project)
    rt = Runtime([touch], root=project, load_settings=True, settings=Settings(deny=("touch",)))
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED


async def test_deny_argument_adds_to_settings(project: Path) -> None:
    rt = Runtime([touch], root=project, settings=Settings(allow=("touch",)), deny=["touch"])
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED


def test_default_mode_from_settings(project: Path) -> None:
    project_file(project, {"permissions": {"default_mode": "plan"}})
    rt = Runtime([touch, look], root=project, load_settings=True)
    assert rt.session.mode is PermissionMode.PLAN
    rt = Runtime([touch, look], root=project, load_settings=True, mode="bypass")
    assert rt.session.mode is PermissionMode.BYPASS


async def test_plan_mode_from_settings_denies_writes(project: Path) -> None:
    project_file(project, {"permissions": {"default_mode": "plan"}})
    rt = Runtime([touch, look], root=project, load_settings=True)
    assert (await rt.call("look", {"name": "a"})).ok
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "plan mode" in r.content


async def test_disabled_tool_is_hidden_and_not_callable(project: Path) -> None:
    named = tool(name="old_touch_target", aliases=["old_touch"])(lambda: "x")
    project_file(project, {"disabled_tools": ["touch", "old_touch_target"]})
    rt = Runtime([touch, look, named], root=project, load_settings=True, mode="bypass")
    assert [t.name for t in rt.tools()] == ["look"]
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.TOOL_NOT_FOUND
    assert "`look`" in r.content
    r = await rt.call("old_touch", {})
    assert r.error is ErrorCode.TOOL_NOT_FOUND


async def test_disabled_tools_from_user_and_project_both_apply(project: Path) -> None:
    user_file({"disabled_tools": ["look"]})
    project_file(project, {"disabled_tools": ["touch"]})
    rt = Runtime([touch, look], root=project, load_settings=True)
    assert rt.tools() == []


def test_locale_from_settings(project: Path) -> None:
    project_file(project, {"locale": "zh"})
    assert Runtime([touch], root=project, load_settings=True).locale == "zh"


async def test_hooks_from_settings_run(project: Path) -> None:
    project_file(
        project,
        {
            "hooks": {
                "pre_tool_use": [{"matcher": "touch", "command": "echo 'no touching' >&2; exit 2"}]
            }
        },
    )
    trust_folder(project)
    rt = Runtime([touch, look], root=project, load_settings=True, mode="bypass")
    r = await rt.call("touch", {"name": "a"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "no touching" in r.content
    assert (await rt.call("look", {"name": "a"})).ok


async def test_tool_settings_reach_the_tool(project: Path) -> None:
    seen: list[dict[str, Any]] = []

    @tool(read_only=True)
    def configured(ctx: handrail.ToolContext) -> str:
        """Report its settings."""
        seen.append(dict(ctx.settings))
        return "ok"

    project_file(project, {"tools": {"configured": {"level": 3}}})
    trust_folder(project)
    rt = Runtime([configured], root=project, load_settings=True)
    assert (await rt.call("configured", {})).ok
    assert seen == [{"level": 3}]


def test_a_hidden_path_with_a_nul_byte_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "settings.json"
    bad.write_text('{"hidden_paths": ["x\\u0000y"]}')
    with pytest.raises(handrail.ConfigurationError, match="hidden_paths holds an empty path"):
        read_settings_file(bad)
