"""Permission rule strings: parsing and what each kind of specifier matches."""

from __future__ import annotations

from pathlib import Path

import pytest

import handrail
from handrail.permissions import parse_rule

# -- parsing -------------------------------------------------------------------------------


def test_bare_tool_name_matches_every_call() -> None:
    rule = parse_rule("read_file")
    assert rule.tool == "read_file"
    assert rule.specifier is None
    assert rule.matches_command("anything at all")


def test_tool_with_specifier() -> None:
    rule = parse_rule("run_shell(npm test:*)")
    assert rule.tool == "run_shell"
    assert rule.specifier == "npm test:*"
    assert rule.text == "run_shell(npm test:*)"


def test_star_specifier_is_the_same_as_a_bare_name() -> None:
    rule = parse_rule("edit_file(*)")
    assert rule.tool == "edit_file"
    assert rule.specifier is None


def test_surrounding_whitespace_is_ignored() -> None:
    rule = parse_rule("  run_shell( git status )  ")
    assert rule.tool == "run_shell"
    assert rule.specifier == "git status"


@pytest.mark.parametrize(
    "text", ["bad rule", "x()", "x(", "x)", "(x)", "", "   ", "a.b", "run shell(ls)"]
)
def test_malformed_rules_are_configuration_errors(text: str) -> None:
    with pytest.raises(handrail.ConfigurationError, match="rule"):
        parse_rule(text)


def test_malformed_rule_error_quotes_the_rule() -> None:
    with pytest.raises(handrail.ConfigurationError) as info:
        parse_rule("bad rule")
    assert "'bad rule'" in str(info.value)


def test_policy_refuses_malformed_rules_at_setup() -> None:
    with pytest.raises(handrail.ConfigurationError):
        handrail.permissions.Policy(allow=["x("])


# -- commands ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm test", True),
        ("npm test --watch", True),
        ("npm   test  --watch", True),
        ("npm testing", False),
        ("npm run test", False),
        ("npm", False),
        ("pnpm test", False),
    ],
)
def test_command_prefix(command: str, expected: bool) -> None:
    assert parse_rule("run_shell(npm test:*)").matches_command(command) is expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", True),
        ("git  status", True),
        ("git status --short", False),
        ("git stat", False),
    ],
)
def test_command_without_star_is_exact(command: str, expected: bool) -> None:
    assert parse_rule("run_shell(git status)").matches_command(command) is expected


# -- paths ---------------------------------------------------------------------------------


def test_relative_glob_matches_under_a_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    rule = parse_rule("edit_file(src/**)")
    assert rule.matches_path(str(root / "src" / "a.py"), [root])
    assert rule.matches_path(str(root / "src" / "deep" / "b.py"), [root])
    assert not rule.matches_path(str(root / "lib" / "a.py"), [root])
    assert not rule.matches_path(str(root / "lib" / "src" / "a.py"), [root])


def test_relative_glob_never_matches_outside_the_roots(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    rule = parse_rule("edit_file(src/**)")
    assert not rule.matches_path(str(tmp_path / "other" / "src" / "a.py"), [root])
    assert not rule.matches_path(str(tmp_path / "ws-evil" / "src" / "a.py"), [root])


def test_relative_glob_is_tried_against_every_root(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    rule = parse_rule("edit_file(src/**)")
    assert rule.matches_path(str(b / "src" / "x.py"), [a, b])


def test_gitignore_style_extension_glob(tmp_path: Path) -> None:
    rule = parse_rule("edit_file(*.md)")
    assert rule.matches_path(str(tmp_path / "README.md"), [tmp_path])
    assert rule.matches_path(str(tmp_path / "docs" / "guide.md"), [tmp_path])
    assert not rule.matches_path(str(tmp_path / "main.py"), [tmp_path])


def test_absolute_glob(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    rule = parse_rule("edit_file(/abs/**)")
    assert rule.matches_path("/abs/x.txt", [root])
    assert rule.matches_path("/abs/deep/y.txt", [root])
    assert not rule.matches_path("/other/abs/x.txt", [root])
    assert not rule.matches_path(str(root / "abs" / "x.txt"), [root])


def test_absolute_single_component_pattern_is_anchored_at_the_filesystem_root(
    tmp_path: Path,
) -> None:
    # `/notes.txt` names exactly one file; it must not match every notes.txt at any depth.
    root = tmp_path / "ws"
    rule = parse_rule("edit_file(/notes.txt)")
    assert rule.matches_path("/notes.txt", [root])
    assert not rule.matches_path(str(root / "notes.txt"), [root])


def test_home_single_component_pattern_is_anchored_at_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    rule = parse_rule("edit_file(~/.bashrc)")
    assert rule.matches_path(str(home / ".bashrc"), [tmp_path / "ws"])
    assert not rule.matches_path(str(home / "project" / ".bashrc"), [tmp_path / "ws"])


def test_home_glob(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    rule = parse_rule("edit_file(~/x/**)")
    assert rule.matches_path(str(home / "x" / "a.txt"), [tmp_path / "ws"])
    assert not rule.matches_path(str(home / "y" / "a.txt"), [tmp_path / "ws"])
    assert not rule.matches_path(str(tmp_path / "ws" / "x" / "a.txt"), [tmp_path / "ws"])


# -- URLs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com/page", True),
        ("http://EXAMPLE.com:8080/x?y=1", True),
        ("https://api.example.com/", False),
        ("https://example.com.evil.org/", False),
        ("https://notexample.com/", False),
        ("https://example.com@evil.org/", False),
    ],
)
def test_domain_rule_is_the_exact_host(url: str, expected: bool) -> None:
    assert parse_rule("web_fetch(domain:example.com)").matches_url(url) is expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.example.com/", True),
        ("https://a.b.example.com/", True),
        ("https://example.com.evil.org/", False),
        ("https://evilexample.com/", False),
        ("https://example.org/", False),
    ],
)
def test_wildcard_domain_rule_matches_subdomains(url: str, expected: bool) -> None:
    assert parse_rule("web_fetch(domain:*.example.com)").matches_url(url) is expected


def test_a_path_rule_never_matches_a_url() -> None:
    assert not parse_rule("web_fetch(src/**)").matches_url("https://example.com/src/a")
