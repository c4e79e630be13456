"""The central policy: rules, modes, roots and hook decisions, via `Policy.decide`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot

from handrail import (
    ErrorCode,
    FetchUrl,
    PermissionMode,
    PermissionRequest,
    ReadPath,
    RunCommand,
    SwitchMode,
    ToolKind,
    WritePath,
)
from handrail.permissions import (
    BYPASS,
    Decision,
    Policy,
    covering_rules,
    is_within,
    parse_rule,
    suggest_rules,
)

M = PermissionMode


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def decide(
    policy: Policy,
    ws: Path,
    requests: Sequence[PermissionRequest] = (),
    *,
    names: tuple[str, ...] = ("edit_file",),
    kind: ToolKind = ToolKind.EDIT,
    read_only: bool = False,
    mode: PermissionMode = M.DEFAULT,
    read_roots: Sequence[Path] | None = None,
    write_roots: Sequence[Path] | None = None,
    **extra: Any,
) -> Decision:
    return policy.decide(
        names=names,
        kind=kind,
        read_only=read_only,
        requests=tuple(requests),
        mode=mode,
        read_roots=read_roots if read_roots is not None else (ws,),
        write_roots=write_roots if write_roots is not None else (ws,),
        **extra,
    )


def shell(
    policy: Policy, ws: Path, command: str, *parts: str, mode: PermissionMode = M.DEFAULT
) -> Decision:
    return decide(
        policy,
        ws,
        [RunCommand(command=command, commands=tuple(parts))],
        names=("run_shell",),
        kind=ToolKind.EXECUTE,
        mode=mode,
    )


# -- rule precedence -----------------------------------------------------------------------


def test_deny_beats_ask_beats_allow(ws: Path) -> None:
    write = [WritePath(path=str(ws / "src" / "a.py"))]
    all_three = Policy(allow=["edit_file"], ask=["edit_file(src/**)"], deny=["edit_file(*.py)"])
    d = decide(all_three, ws, write)
    assert (d.behavior, d.source, d.rule) == ("deny", "rule", "edit_file(*.py)")
    assert "edit_file(*.py)" in d.reason

    ask_and_allow = Policy(allow=["edit_file"], ask=["edit_file(src/**)"])
    d = decide(ask_and_allow, ws, write)
    assert (d.behavior, d.rule) == ("ask", "edit_file(src/**)")

    d = decide(Policy(allow=["edit_file(src/**)"]), ws, write)
    assert (d.behavior, d.rule, d.source) == ("allow", "edit_file(src/**)", "rule")


def test_rule_order_in_the_lists_does_not_matter(ws: Path) -> None:
    write = [WritePath(path=str(ws / "a.py"))]
    d = decide(Policy(allow=["edit_file"], deny=["edit_file"]), ws, write)
    assert d.behavior == "deny"


def test_deny_rule_for_another_tool_does_not_apply(ws: Path) -> None:
    d = decide(
        Policy(deny=["write_file"], allow=["edit_file"]), ws, [WritePath(path=str(ws / "a"))]
    )
    assert d.behavior == "allow"


def test_rules_match_aliases(ws: Path) -> None:
    write = [WritePath(path=str(ws / "a.txt"))]
    names = ("edit_file", "old_edit")
    d = decide(Policy(deny=["old_edit"]), ws, write, names=names)
    assert (d.behavior, d.rule) == ("deny", "old_edit")
    d = decide(Policy(allow=["old_edit(*.txt)"]), ws, write, names=names)
    assert d.behavior == "allow"


def test_deny_rule_denies_a_read_only_call(ws: Path) -> None:
    d = decide(
        Policy(deny=["read_file(secrets/**)"]),
        ws,
        [ReadPath(path=str(ws / "secrets" / "key"))],
        names=("read_file",),
        kind=ToolKind.READ,
        read_only=True,
    )
    assert (d.behavior, d.source) == ("deny", "rule")


def test_deny_rule_with_specifier_only_denies_matching_calls(ws: Path) -> None:
    policy = Policy(deny=["read_file(secrets/**)"])
    d = decide(
        policy,
        ws,
        [ReadPath(path=str(ws / "docs" / "a.md"))],
        names=("read_file",),
        kind=ToolKind.READ,
        read_only=True,
    )
    assert d.behavior == "allow"


def test_deny_rule_matches_if_any_request_matches(ws: Path) -> None:
    reqs = [WritePath(path=str(ws / "ok.txt")), WritePath(path=str(ws / ".env"))]
    d = decide(Policy(deny=["edit_file(.env)"]), ws, reqs)
    assert d.behavior == "deny"


def test_allow_rule_must_cover_every_request(ws: Path) -> None:
    reqs = [WritePath(path=str(ws / "src" / "a.py")), WritePath(path=str(ws / "lib" / "b.py"))]
    assert decide(Policy(allow=["edit_file(src/**)"]), ws, reqs).behavior == "ask"
    both = Policy(allow=["edit_file(src/**)", "edit_file(lib/**)"])
    assert decide(both, ws, reqs).behavior == "allow"


def test_domain_rules(ws: Path) -> None:
    def fetch(policy: Policy, url: str) -> Decision:
        return decide(policy, ws, [FetchUrl(url=url)], names=("web_fetch",), kind=ToolKind.FETCH)

    allow = Policy(allow=["web_fetch(domain:example.com)"])
    assert fetch(allow, "https://example.com/a").behavior == "allow"
    assert fetch(allow, "https://example.com.evil.org/a").behavior == "ask"
    deny = Policy(deny=["web_fetch(domain:*.evil.org)"], allow=["web_fetch"])
    assert fetch(deny, "https://cdn.evil.org/x").behavior == "deny"
    assert fetch(deny, "https://good.org/x").behavior == "allow"


def test_a_read_only_fetch_asks_unless_a_rule_covers_its_host(ws: Path) -> None:
    # Fetching changes nothing locally, but a URL can carry data out: the user picks the sites.
    def fetch(policy: Policy, mode: PermissionMode) -> Decision:
        return decide(
            policy,
            ws,
            [FetchUrl(url="https://docs.example.com/x?q=1")],
            names=("web_fetch",),
            kind=ToolKind.FETCH,
            read_only=True,
            mode=mode,
        )

    for mode in (M.DEFAULT, M.ACCEPT_EDITS, M.PLAN):
        d = fetch(Policy(), mode)
        assert d.behavior == "ask", mode
        assert d.reason == "`web_fetch` would contact docs.example.com, which no allow rule covers"
    assert fetch(Policy(), M.DONT_ASK).behavior == "deny"
    assert fetch(Policy(), M.BYPASS).behavior == "allow"
    assert fetch(Policy(allow=["web_fetch(domain:*.example.com)"]), M.DEFAULT).behavior == "allow"
    assert fetch(Policy(allow=["web_fetch(domain:*.example.com)"]), M.PLAN).behavior == "allow"


# -- compound shell commands ---------------------------------------------------------------


def test_prefix_rule_allows_a_simple_command(ws: Path) -> None:
    policy = Policy(allow=["run_shell(npm test:*)"])
    assert shell(policy, ws, "npm test --watch").behavior == "allow"
    assert shell(policy, ws, "npm testing").behavior == "ask"


def test_compound_command_is_not_allowed_by_a_rule_for_one_part(ws: Path) -> None:
    policy = Policy(allow=["run_shell(npm test:*)"])
    d = shell(policy, ws, "npm test && rm -rf x", "npm test", "rm -rf x")
    assert d.behavior == "ask"


def test_compound_command_is_allowed_when_every_part_is(ws: Path) -> None:
    policy = Policy(allow=["run_shell(npm test:*)", "run_shell(rm:*)"])
    d = shell(policy, ws, "npm test && rm -rf x", "npm test", "rm -rf x")
    assert d.behavior == "allow"


def test_deny_rule_for_one_part_denies_the_compound(ws: Path) -> None:
    policy = Policy(allow=["run_shell(npm test:*)"], deny=["run_shell(rm:*)"])
    d = shell(policy, ws, "npm test && rm -rf x", "npm test", "rm -rf x")
    assert (d.behavior, d.rule) == ("deny", "run_shell(rm:*)")


def test_a_line_no_rule_can_read_is_refused_by_a_deny_rule_saying_why(ws: Path) -> None:
    policy = Policy(allow=["run_shell"], deny=["run_shell(rm:*)"])
    d = shell(policy, ws, "c=rm; $c -rf build", mode=M.BYPASS)
    assert (d.behavior, d.rule, d.source) == ("deny", "run_shell(rm:*)", "rule")
    assert d.reason == snapshot(
        "the rule `run_shell(rm:*)` denies this call: no rule can tell which commands this line runs (variable expansion in the command name), so it counts as matching every deny and ask rule; write the command names and the values they depend on out literally, without variables, substitutions or eval"
    )
    hidden = shell(policy, ws, "echo ${x:-`rm -rf build`}")
    assert hidden.reason == snapshot(
        "the rule `run_shell(rm:*)` denies this call: no rule can tell which commands this line runs (an expansion the parser did not read), so it counts as matching every deny and ask rule; write the command names and the values they depend on out literally, without variables, substitutions or eval"
    )


def test_a_deny_rule_that_matches_a_literal_command_says_only_that(ws: Path) -> None:
    policy = Policy(deny=["run_shell(rm:*)"])
    d = shell(policy, ws, "rm -rf build; $c x")
    assert (d.behavior, d.reason) == ("deny", "the rule `run_shell(rm:*)` denies this call")


def test_a_line_no_rule_can_read_asks_through_an_ask_rule_even_in_bypass_mode(ws: Path) -> None:
    policy = Policy(ask=["run_shell(git push:*)"])
    d = shell(policy, ws, 'eval "$cmd"', mode=M.BYPASS)
    assert (d.behavior, d.rule) == ("ask", "run_shell(git push:*)")
    assert d.reason == snapshot(
        "the rule `run_shell(git push:*)` asks for approval: no rule can tell which commands this line runs (eval of words that are not literal), so it counts as matching every deny and ask rule; write the command names and the values they depend on out literally, without variables, substitutions or eval"
    )
    assert shell(policy, ws, "git push", mode=M.BYPASS) == BYPASS


def test_unparsed_command_line_with_operators_is_not_allowed_by_a_prefix_rule(ws: Path) -> None:
    # A tool that did not split its command line still must not get `npm test && rm -rf x`
    # through a rule written for `npm test`: a permission system fails closed.
    policy = Policy(allow=["run_shell(npm test:*)"])
    assert shell(policy, ws, "npm test && rm -rf x").behavior != "allow"
    assert shell(policy, ws, "npm test; rm -rf x").behavior != "allow"


# -- modes ---------------------------------------------------------------------------------


def test_default_mode_allows_read_only_and_asks_for_the_rest(ws: Path) -> None:
    policy = Policy()
    read = decide(policy, ws, [ReadPath(path=str(ws / "a"))], kind=ToolKind.READ, read_only=True)
    assert read.behavior == "allow"
    write = decide(policy, ws, [WritePath(path=str(ws / "a"))])
    assert (write.behavior, write.source) == ("ask", "mode")
    assert "edit_file" in write.reason
    assert shell(policy, ws, "ls").behavior == "ask"


def test_default_mode_asks_for_a_tool_that_declares_nothing(ws: Path) -> None:
    d = decide(Policy(), ws, [], kind=ToolKind.OTHER)
    assert d.behavior == "ask"


@pytest.mark.parametrize("kind", [ToolKind.EDIT, ToolKind.DELETE, ToolKind.MOVE])
def test_accept_edits_allows_file_edits_inside_write_roots(ws: Path, kind: ToolKind) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "a.txt"))], kind=kind, mode=M.ACCEPT_EDITS)
    assert d.behavior == "allow"


def test_accept_edits_still_asks_for_shell_and_other_kinds(ws: Path) -> None:
    assert shell(Policy(), ws, "make", mode=M.ACCEPT_EDITS).behavior == "ask"
    other = decide(
        Policy(), ws, [WritePath(path=str(ws / "a"))], kind=ToolKind.OTHER, mode=M.ACCEPT_EDITS
    )
    assert other.behavior == "ask"


def test_accept_edits_does_not_lift_the_write_roots(ws: Path, tmp_path: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(tmp_path / "out.txt"))], mode=M.ACCEPT_EDITS)
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)


def test_accept_edits_respects_ask_rules(ws: Path) -> None:
    d = decide(
        Policy(ask=["edit_file(*.lock)"]),
        ws,
        [WritePath(path=str(ws / "poetry.lock"))],
        mode=M.ACCEPT_EDITS,
    )
    assert d.behavior == "ask"


def test_plan_mode_denies_anything_not_read_only(ws: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "a.txt"))], mode=M.PLAN)
    assert (d.behavior, d.source, d.code) == ("deny", "mode", ErrorCode.PERMISSION_DENIED)
    assert "plan mode" in d.reason
    assert shell(Policy(), ws, "ls", mode=M.PLAN).behavior == "deny"


def test_plan_mode_is_not_lifted_by_allow_rules(ws: Path) -> None:
    d = decide(Policy(allow=["edit_file"]), ws, [WritePath(path=str(ws / "a"))], mode=M.PLAN)
    assert d.behavior == "deny"


def test_plan_mode_allows_reads(ws: Path) -> None:
    d = decide(
        Policy(),
        ws,
        [ReadPath(path=str(ws / "a"))],
        kind=ToolKind.READ,
        read_only=True,
        mode=M.PLAN,
    )
    assert d.behavior == "allow"


def test_plan_mode_allows_writing_the_plan_file(ws: Path) -> None:
    plan = ws / ".handrail" / "plans" / "p.md"
    d = decide(Policy(), ws, [WritePath(path=str(plan))], mode=M.PLAN)
    assert d.behavior == "allow"


def test_plan_mode_plan_file_exception_is_only_for_the_plans_folder(ws: Path) -> None:
    for path in (ws / "plans" / "p.md", ws / ".handrail" / "plans"):
        d = decide(Policy(), ws, [WritePath(path=str(path))], mode=M.PLAN)
        assert d.behavior == "deny", path


def test_plan_mode_plan_file_exception_needs_every_write_to_be_a_plan(ws: Path) -> None:
    reqs = [
        WritePath(path=str(ws / ".handrail" / "plans" / "p.md")),
        WritePath(path=str(ws / "src" / "a.py")),
    ]
    assert decide(Policy(), ws, reqs, mode=M.PLAN).behavior == "deny"


def test_plan_mode_denies_a_changing_call_that_only_declares_reads(ws: Path) -> None:
    # A tool that is not read-only (say, one that runs a script it names) changes things even
    # if all it declares is a read: plan mode lets through only read-only calls and plan files.
    d = decide(
        Policy(), ws, [ReadPath(path=str(ws / "deploy.sh"))], kind=ToolKind.EXECUTE, mode=M.PLAN
    )
    assert d.behavior == "deny"


def test_dont_ask_turns_ask_into_deny(ws: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "a"))], mode=M.DONT_ASK)
    assert (d.behavior, d.code) == ("deny", ErrorCode.PERMISSION_DENIED)
    assert "dont_ask" in d.reason
    d = decide(
        Policy(ask=["edit_file"], allow=["edit_file"]),
        ws,
        [WritePath(path=str(ws / "a"))],
        mode=M.DONT_ASK,
    )
    assert (d.behavior, d.rule) == ("deny", "edit_file")


def test_dont_ask_still_allows_what_is_allowed(ws: Path) -> None:
    d = decide(Policy(allow=["edit_file"]), ws, [WritePath(path=str(ws / "a"))], mode=M.DONT_ASK)
    assert d.behavior == "allow"
    d = decide(Policy(), ws, [ReadPath(path=str(ws / "a"))], read_only=True, mode=M.DONT_ASK)
    assert d.behavior == "allow"


def test_bypass_allows_everything_else(ws: Path) -> None:
    assert shell(Policy(), ws, "rm -rf build", mode=M.BYPASS).behavior == "allow"
    d = decide(Policy(ask=["edit_file"]), ws, [WritePath(path=str(ws / "a"))], mode=M.BYPASS)
    assert d.behavior == "allow"


def test_bypass_keeps_deny_rules(ws: Path) -> None:
    d = shell(Policy(deny=["run_shell(rm:*)"]), ws, "rm -rf /", mode=M.BYPASS)
    assert (d.behavior, d.source) == ("deny", "rule")


def test_bypass_keeps_the_roots(ws: Path, tmp_path: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(tmp_path / "x"))], mode=M.BYPASS)
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)
    d = decide(Policy(), ws, [WritePath(path=str(ws / ".git" / "config"))], mode=M.BYPASS)
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)


# -- roots ---------------------------------------------------------------------------------


def test_write_outside_write_roots_is_refused_naming_the_roots(ws: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "x.txt"
    d = decide(Policy(allow=["edit_file"]), ws, [WritePath(path=str(other))])
    assert (d.behavior, d.source, d.code) == ("deny", "roots", ErrorCode.OUTSIDE_WRITE_ROOTS)
    assert str(other) in d.reason
    assert str(ws) in d.reason


def test_roots_are_compared_by_component_not_string_prefix(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    evil = tmp_path / "ws-evil" / "a.txt"
    d = decide(Policy(), ws, [WritePath(path=str(evil))])
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)
    assert not is_within("/x/ws-evil", Path("/x/ws"))
    assert not is_within("/x/wsx/a", Path("/x/ws"))
    assert is_within("/x/ws", Path("/x/ws"))
    assert is_within("/x/ws/a/b", Path("/x/ws"))
    assert is_within("/x/ws/sub/../a", Path("/x/ws"))
    assert not is_within("/x/ws/../other", Path("/x/ws"))


def test_write_root_itself_is_writable(ws: Path) -> None:
    d = decide(Policy(allow=["edit_file"]), ws, [WritePath(path=str(ws))])
    assert d.behavior == "allow"


@pytest.mark.parametrize(
    "rel", [".git/config", ".git", ".handrail/settings.json", ".handrail", "sub/../.git/HEAD"]
)
def test_protected_folders_stay_read_only(ws: Path, rel: str) -> None:
    d = decide(Policy(allow=["edit_file"]), ws, [WritePath(path=str(ws / rel))], mode=M.BYPASS)
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)
    assert "read-only" in d.reason


def test_plans_folder_is_writable(ws: Path) -> None:
    d = decide(
        Policy(allow=["edit_file"]), ws, [WritePath(path=str(ws / ".handrail" / "plans" / "p.md"))]
    )
    assert d.behavior == "allow"


def test_protected_folders_can_still_be_read(ws: Path) -> None:
    d = decide(
        Policy(), ws, [ReadPath(path=str(ws / ".git" / "HEAD"))], kind=ToolKind.READ, read_only=True
    )
    assert d.behavior == "allow"


def test_read_outside_read_roots(ws: Path, tmp_path: Path) -> None:
    d = decide(
        Policy(allow=["read_file"]),
        ws,
        [ReadPath(path=str(tmp_path / "secret"))],
        names=("read_file",),
        kind=ToolKind.READ,
        read_only=True,
    )
    assert (d.behavior, d.source, d.code) == ("deny", "roots", ErrorCode.OUTSIDE_READ_ROOTS)
    assert str(tmp_path / "secret") in d.reason


def test_read_outside_the_roots_names_each_root_once(ws: Path, tmp_path: Path) -> None:
    # The readable roots are the read roots plus the write roots: the workspace is both.
    lib, out, secret = tmp_path / "lib", tmp_path / "out", tmp_path / "secret"

    def reason(
        read_roots: Sequence[Path] | None = None, write_roots: Sequence[Path] | None = None
    ) -> str:
        d = decide(
            Policy(),
            ws,
            [ReadPath(path=str(secret))],
            names=("read_file",),
            kind=ToolKind.READ,
            read_only=True,
            read_roots=read_roots,
            write_roots=write_roots,
        )
        assert d.code is ErrorCode.OUTSIDE_READ_ROOTS
        return d.reason

    assert reason() == f"{secret} is outside the read roots ({ws})"
    assert (
        reason(read_roots=(ws, lib), write_roots=(ws, out))
        == f"{secret} is outside the read roots ({ws}, {lib}, {out})"
    )


def test_extra_read_root_is_readable_but_not_writable(ws: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    read = decide(
        Policy(),
        ws,
        [ReadPath(path=str(lib / "a.py"))],
        kind=ToolKind.READ,
        read_only=True,
        read_roots=(ws, lib),
    )
    assert read.behavior == "allow"
    write = decide(Policy(), ws, [WritePath(path=str(lib / "a.py"))], read_roots=(ws, lib))
    assert write.code is ErrorCode.OUTSIDE_WRITE_ROOTS


def test_write_roots_are_readable(ws: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    d = decide(
        Policy(),
        ws,
        [ReadPath(path=str(out / "a"))],
        read_only=True,
        write_roots=(ws, out),
    )
    assert d.behavior == "allow"


# -- hooks and session rules ---------------------------------------------------------------


def test_hook_allow_cannot_override_a_deny_rule(ws: Path) -> None:
    d = decide(Policy(deny=["edit_file"]), ws, [WritePath(path=str(ws / "a"))], hook="allow")
    assert (d.behavior, d.source) == ("deny", "rule")


def test_hook_allow_cannot_override_the_roots(ws: Path, tmp_path: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(tmp_path / "x"))], hook="allow")
    assert (d.behavior, d.code) == ("deny", ErrorCode.OUTSIDE_WRITE_ROOTS)


def test_hook_allow_cannot_override_plan_mode(ws: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "x"))], hook="allow", mode=M.PLAN)
    assert d.behavior == "deny"


def test_hook_allow_skips_the_question(ws: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "a"))], hook="allow")
    assert (d.behavior, d.source) == ("allow", "hook")


def test_hook_deny_denies(ws: Path) -> None:
    d = decide(
        Policy(allow=["edit_file"]),
        ws,
        [WritePath(path=str(ws / "a"))],
        hook="deny",
        hook_reason="lint failed",
    )
    assert (d.behavior, d.source, d.reason) == ("deny", "hook", "lint failed")


def test_hook_ask_asks_even_a_read_only_call(ws: Path) -> None:
    d = decide(
        Policy(), ws, [ReadPath(path=str(ws / "a"))], read_only=True, hook="ask", hook_reason="hm"
    )
    assert (d.behavior, d.source) == ("ask", "hook")


def test_session_allow_rules_allow(ws: Path) -> None:
    write = [WritePath(path=str(ws / "src" / "a.py"))]
    assert decide(Policy(), ws, write).behavior == "ask"
    d = decide(Policy(), ws, write, session_allow=[parse_rule("edit_file(src/**)")])
    assert (d.behavior, d.rule) == ("allow", "edit_file(src/**)")


def test_session_allow_rules_for_other_tools_do_not_apply(ws: Path) -> None:
    d = decide(
        Policy(), ws, [WritePath(path=str(ws / "a"))], session_allow=[parse_rule("write_file")]
    )
    assert d.behavior == "ask"


def test_session_allow_rules_do_not_beat_deny_rules(ws: Path) -> None:
    d = decide(
        Policy(deny=["edit_file(*.py)"]),
        ws,
        [WritePath(path=str(ws / "a.py"))],
        session_allow=[parse_rule("edit_file")],
    )
    assert d.behavior == "deny"


# -- protected folders at any depth, hooks in bypass mode -------------------------------------


@pytest.mark.parametrize(
    "rel", ["sub/.git/config", "vendor/lib/.git/HEAD", "pkg/.handrail/settings.json"]
)
def test_nested_protected_folders_stay_read_only(ws: Path, rel: str) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / rel))], mode=M.BYPASS)
    assert d.behavior == "deny"
    assert d.code is ErrorCode.OUTSIDE_WRITE_ROOTS


def test_a_file_merely_named_like_git_is_writable(ws: Path) -> None:
    d = decide(Policy(), ws, [WritePath(path=str(ws / "docs" / ".gitignore"))], mode=M.BYPASS)
    assert d.behavior == "allow"


def test_hook_ask_is_allowed_in_bypass_mode_but_asks_otherwise(ws: Path) -> None:
    req = [WritePath(path=str(ws / "a.txt"))]
    assert decide(Policy(), ws, req, mode=M.BYPASS, hook="ask").behavior == "allow"
    assert decide(Policy(), ws, req, mode=M.ACCEPT_EDITS, hook="ask").behavior == "ask"


# -- mode switches (exit_plan_mode) ----------------------------------------------------------


def switch(
    policy: Policy,
    ws: Path,
    to: str = "default",
    *,
    mode: PermissionMode = M.PLAN,
    read_only: bool = True,
    extra: Sequence[PermissionRequest] = (),
    **options: Any,
) -> Decision:
    return decide(
        policy,
        ws,
        [SwitchMode(mode=to, plan="1. do it"), *extra],
        names=("exit_plan_mode",),
        kind=ToolKind.OTHER,
        read_only=read_only,
        mode=mode,
        **options,
    )


def test_a_mode_switch_asks_even_from_a_read_only_tool(ws: Path) -> None:
    d = switch(Policy(), ws)
    assert (d.behavior, d.source) == ("ask", "mode")
    assert d.reason == "switching to default mode needs the user's approval"
    assert switch(Policy(), ws, mode=M.DEFAULT).behavior == "ask"
    assert switch(Policy(), ws, mode=M.ACCEPT_EDITS).behavior == "ask"


def test_a_mode_switch_is_not_refused_by_plan_mode(ws: Path) -> None:
    # Leaving plan mode is what plan mode exists for: even a tool not marked read-only asks.
    assert switch(Policy(), ws, read_only=False).behavior == "ask"


def test_plan_mode_still_refuses_a_switch_bundled_with_a_change(ws: Path) -> None:
    d = switch(Policy(), ws, read_only=False, extra=[WritePath(path=str(ws / "a.py"))])
    assert (d.behavior, d.source) == ("deny", "mode")


def test_deny_rules_refuse_a_mode_switch_by_target_mode(ws: Path) -> None:
    policy = Policy(deny=["exit_plan_mode(bypass)"])
    d = switch(policy, ws, "bypass")
    assert (d.behavior, d.rule) == ("deny", "exit_plan_mode(bypass)")
    assert switch(policy, ws, "default").behavior == "ask"
    assert switch(Policy(deny=["exit_plan_mode"]), ws).behavior == "deny"


def test_only_an_explicit_allow_rule_skips_the_question(ws: Path) -> None:
    d = switch(Policy(allow=["exit_plan_mode"]), ws)
    assert (d.behavior, d.rule) == ("allow", "exit_plan_mode")
    assert switch(Policy(allow=["exit_plan_mode(default)"]), ws).behavior == "allow"
    assert switch(Policy(allow=["exit_plan_mode(default)"]), ws, "bypass").behavior == "ask"
    d = switch(Policy(), ws, session_allow=[parse_rule("exit_plan_mode(default)")])
    assert d.behavior == "allow"
    assert switch(Policy(allow=["read_file"]), ws).behavior == "ask"


def test_ask_rules_and_dont_ask_apply_to_mode_switches(ws: Path) -> None:
    d = switch(Policy(ask=["exit_plan_mode(default)"]), ws, mode=M.DEFAULT)
    assert (d.behavior, d.source) == ("ask", "rule")
    d = switch(Policy(), ws, mode=M.DONT_ASK)
    assert (d.behavior, d.source) == ("deny", "mode")


def test_suggested_rules_for_a_mode_switch_name_the_target_mode(ws: Path) -> None:
    reqs = [SwitchMode(mode="accept_edits", plan="p")]
    assert suggest_rules("exit_plan_mode", reqs, [ws]) == (
        "exit_plan_mode(accept_edits)",
        "exit_plan_mode",
    )


def test_suggested_rules_for_commands_come_from_the_parsed_line(ws: Path) -> None:
    def suggest(line: str) -> tuple[str, ...]:
        return suggest_rules("run_shell", [RunCommand(command=line)], [ws])

    # The read-only part of a line that changes things needs no rule of its own.
    assert suggest("npm test -- -x && ls -la") == ("run_shell(npm test:*)", "run_shell")
    assert suggest("npm test && npm run build") == (
        "run_shell(npm test:*)",
        "run_shell(npm run:*)",
        "run_shell",
    )
    assert suggest('git commit -m "a && b"') == ("run_shell(git commit:*)", "run_shell")
    # A prefix rule never covers leading assignments: the command itself is suggested.
    assert suggest("CI=1 npm test") == ("run_shell(CI=1 npm test)", "run_shell")
    # Nothing but the bare tool name can cover an opaque line.
    assert suggest("echo $(whoami) > out.txt") == ("run_shell",)
    # Every suggestion really covers the call it was made for.
    for line in [
        "npm test -- -x && ls -la",
        "CI=1 npm test",
        "./run.sh --fast",
        "cd sub && npm test",
        "npm test && npm run build",
    ]:
        d = shell(Policy(allow=list(suggest(line)[:-1])), ws, line)
        assert d.behavior == "allow", line


def test_a_cd_out_of_the_roots_is_not_covered_by_the_projects_rule(ws: Path) -> None:
    # `npm test:*` was meant for this project, not for another folder's package.json.
    policy = Policy(allow=["run_shell(npm test:*)"])
    assert shell(policy, ws, "cd sub && npm test").behavior == "allow"
    assert shell(policy, ws, f"cd {ws}/sub && npm test").behavior == "allow"
    for line in ["cd /tmp/elsewhere && npm test", "cd ../other && npm test", "cd && npm test"]:
        assert shell(policy, ws, line).behavior == "ask", line
        needed = covering_rules("run_shell", [RunCommand(command=line)], [ws])
        assert needed == ("run_shell(cd:*)", "run_shell(npm test:*)")


def test_covering_rules_name_every_rule_the_call_needs_and_no_more(ws: Path) -> None:
    def cover(line: str) -> tuple[str, ...]:
        return covering_rules("run_shell", [RunCommand(command=line)], [ws])

    assert cover("cd sub && npm test") == ("run_shell(npm test:*)",)
    assert cover("npm test && make build") == ("run_shell(npm test:*)", "run_shell(make build:*)")
    # No narrower rule can cover a redirection: the bare tool is the narrowest.
    assert cover("echo hi > x.txt") == ("run_shell",)
    # One rule short of the set still asks: every rule is needed.
    both = cover("npm test && make build")
    for missing in both:
        rest = [r for r in both if r != missing]
        d = shell(Policy(allow=rest), ws, "npm test && make build")
        assert d.behavior == "ask", missing
    assert shell(Policy(allow=list(both)), ws, "npm test && make build").behavior == "allow"


def test_suggested_rules_keep_only_real_subcommands(ws: Path) -> None:
    def first(line: str) -> str:
        return suggest_rules("run_shell", [RunCommand(command=line)], [ws])[0]

    assert first("touch x.txt") == "run_shell(touch:*)"
    assert first("cargo build --release") == "run_shell(cargo build:*)"
    assert first("git -C sub status") == "run_shell(git:*)"
