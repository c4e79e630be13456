"""Permission rule strings: parsing and what each kind of specifier matches."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

import handrail
from handrail.permissions import is_read_only_command, parse_command, parse_rule
from handrail.permissions._rules import rule_matches_request, unreadable_reasons

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


# -- shell command lines: rules per simple command -----------------------------------------
# The request carries only the raw line (as `run_shell` sends it); the policy parses it.


def shell(
    policy: handrail.permissions.Policy,
    ws: Path,
    command: str,
    mode: handrail.PermissionMode = handrail.PermissionMode.DEFAULT,
) -> handrail.permissions.Decision:
    return policy.decide(
        names=("run_shell",),
        kind=handrail.ToolKind.EXECUTE,
        read_only=is_read_only_command(command),
        requests=(handrail.RunCommand(command=command),),
        mode=mode,
        read_roots=(ws,),
        write_roots=(ws,),
    )


NPM_TEST = handrail.permissions.Policy(allow=["run_shell(npm test:*)"])


@pytest.mark.parametrize(
    "command",
    [
        "npm test",
        "npm test -- -x",
        "npm test --watch",
        "npm test && npm test",
        "npm test; npm test",
        "npm test\nnpm test",
        "npm   test",
        'npm "test"',
        "npm test 2>&1",
        "npm test > /dev/null 2>&1",
        "npm test # runs the suite",
    ],
)
def test_prefix_rule_allows_commands_made_only_of_matching_parts(
    tmp_path: Path, command: str
) -> None:
    d = shell(NPM_TEST, tmp_path, command)
    assert (d.behavior, d.rule) == ("allow", "run_shell(npm test:*)")


@pytest.mark.parametrize(
    "command",
    [
        "npm test && rm -rf x",
        "npm test; rm x",
        "npm test || rm x",
        "npm test & rm x",
        "npm test\nrm x",
        "npm test | sh",
        "$(npm test)",
        "npm test $(rm x)",
        'npm test "$(rm x)"',
        "npm test `rm x`",
        "npm testx",
        "npm",
        'bash -c "npm test"',
        "sh -c 'npm test'",
        "eval npm test",
        "npm test > out",
        "npm test >> log.txt",
        "npm test <<< x",
        "(npm test)",
        "{ npm test; rm x; }",
        "if npm test; then rm x; fi",
        "f() { rm x; }; npm test",
        "PATH=/tmp/evil npm test",
        "timeout 5 npm test",
        'npm test "unterminated',
        "npm test ${x@P}",
    ],
)
def test_prefix_rule_does_not_cover_other_commands_or_hidden_effects(
    tmp_path: Path, command: str
) -> None:
    assert shell(NPM_TEST, tmp_path, command).behavior == "ask"
    dont_ask = shell(NPM_TEST, tmp_path, command, handrail.PermissionMode.DONT_ASK)
    assert dont_ask.behavior == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "echo ok && rm -rf /",
        "ls; rm x",
        "ls | xargs rm",
        "ls | xargs -0 -n 1 rm -f",
        "timeout 5 rm x",
        "nice -n 5 rm x",
        "env A=1 rm x",
        "sudo rm x",
        "command rm x",
        "FOO=1 rm x",
        "/bin/rm x",
        "\\rm x",
        "r''m x",
        "$'\\x72m' x",
        "bash -c 'cd /tmp && rm x'",
        'sh -c "sh -c \\"rm x\\""',
        "eval 'rm x'",
        "echo $(rm x)",
        "find . -name '*.tmp' -exec rm {} \\;",
        "if true; then rm x; fi",
        "f() { rm x; }",
        "(rm x)",
        "trap 'rm x' EXIT",
        'rm "unterminated',
        # spelled so that no rule can read the command name: it matches every deny rule
        "c=rm; $c x",
        "${c} x",
        '"$c" x',
        "{rm,x} y",
        "r? x",
        "/bin/r[m] x",
        "$(echo rm) x",
        "`echo rm` x",
        "echo ${x:-`rm x`}",
        "echo ${x#$(rm x)}",
        'eval "$c x"',
        'bash -c "$script"',
        "echo rm x | sh",
        "source ./cleanup.sh",
        "exec $c x",
        "ls \r#; rm x",
        "echo \\ #; rm x",
        "echo $'\\\\'; rm x; echo '",
        'echo "$\\\n(rm x)"',
        # wrappers, with their options read as the wrapper reads them
        '"rm" x',
        "builtin rm x",
        "time -p rm x",
        "ls | xargs -0 rm",
        "nice --adjustment=5 rm x",
        "timeout -k 1 --signal=KILL 5 rm x",
        "timeout --foo 5 rm x",
        "env -S 'rm x'",
        "env -i -S '-u X rm x'",
        "sudo -u root -- rm x",
        "watch 'rm x'",
        "flock /tmp/lock rm x",
        "chroot / rm x",
        "strace -f -o log rm x",
        "GIT_PAGER='rm x' git log",
        "git -c alias.x='!rm y' x",
        # bash's command and alias tables, history and builtins, changed by the line
        "BASH_CMDS[1]=/bin/rm; 1 canary",
        "BASH_CMDS+=([0]=/bin/rm); 0 canary",
        "declare -A BASH_CMDS=([1]=/bin/rm); 1 canary",
        "printf -v 'BASH_CMDS[1]' /bin/rm; 1 canary",
        'BASH_ALIASES[1]=eval; 1 "rm canary"',
        "shopt -s expand_aliases; alias e=eval\ne 'rm canary'",
        "hash -rp /bin/rm x; x canary",
        'mapfile -tC "rm canary #" -c 1 arr < in',
        "enable -nf lib.so x",
        "set -o history; fc -s echo=",
        "PATH=/tmp/evil ls",
        "env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls",
        "command_not_found_handle() { rm x; }; zzz",
    ],
)
def test_deny_rule_sees_every_command_including_wrapped_ones(tmp_path: Path, command: str) -> None:
    policy = handrail.permissions.Policy(allow=["run_shell"], deny=["run_shell(rm:*)"])
    for mode in (handrail.PermissionMode.DEFAULT, handrail.PermissionMode.BYPASS):
        d = shell(policy, tmp_path, command, mode)
        assert (d.behavior, d.rule) == ("deny", "run_shell(rm:*)"), (command, mode)


@pytest.mark.parametrize(
    "command", ["echo rm", "echo 'rm x'", "grep -rn rm src", "rmdir build", "git commit -m 'rm x'"]
)
def test_deny_rule_does_not_fire_on_mere_mentions(tmp_path: Path, command: str) -> None:
    policy = handrail.permissions.Policy(allow=["run_shell"], deny=["run_shell(rm:*)"])
    assert shell(policy, tmp_path, command).behavior == "allow"


@pytest.mark.parametrize(
    "command",
    ['for f in *.py; do cat "$f"; done', "echo ${HOME}", "echo $(date)", "echo '$c x'"],
)
def test_a_variable_that_is_only_an_argument_does_not_fire_a_deny_rule(
    tmp_path: Path, command: str
) -> None:
    policy = handrail.permissions.Policy(allow=["run_shell"], deny=["run_shell(rm:*)"])
    assert shell(policy, tmp_path, command).behavior == "allow"


@pytest.mark.parametrize("rule", ["run_shell(rm:*)", "run_shell(git push:*)", "run_shell(ls)"])
def test_a_line_no_rule_can_read_matches_every_command_rule(tmp_path: Path, rule: str) -> None:
    request = handrail.RunCommand(command="c=rm; $c x")
    assert unreadable_reasons(request) == ("variable expansion in the command name",)
    assert rule_matches_request(parse_rule(rule), request, (tmp_path,))
    # ...but not a rule about something else, and not when the tool split the line itself.
    assert not rule_matches_request(parse_rule("run_shell(domain:x.org)"), request, ())
    split = handrail.RunCommand(command="c=rm; $c x", commands=("npm test",))
    assert not rule_matches_request(parse_rule(rule), split, (tmp_path,))


def test_an_unreadable_line_asks_through_an_ask_rule_even_in_bypass_mode(tmp_path: Path) -> None:
    policy = handrail.permissions.Policy(ask=["run_shell(git push:*)"])
    bypass = handrail.PermissionMode.BYPASS
    assert shell(policy, tmp_path, "c=git; $c push", bypass).behavior == "ask"
    assert shell(policy, tmp_path, 'eval "$cmd"', bypass).behavior == "ask"
    # A line whose commands are all literal is still allowed in bypass mode.
    assert shell(policy, tmp_path, "git push", bypass).behavior == "allow"
    assert shell(policy, tmp_path, "ls $x", bypass).behavior == "allow"
    dont_ask = shell(policy, tmp_path, "c=git; $c push", handrail.PermissionMode.DONT_ASK)
    assert dont_ask.behavior == "deny"


def test_an_allow_rule_never_covers_an_unreadable_line(tmp_path: Path) -> None:
    policy = handrail.permissions.Policy(allow=["run_shell(echo:*)", "run_shell(c=rm)"])
    for command in ("echo ${x:-`rm x`}", "c=rm; $c x", "echo $'\\\\'; rm x; echo '"):
        assert shell(policy, tmp_path, command).behavior == "ask", command


def test_ask_rule_sees_a_wrapped_command(tmp_path: Path) -> None:
    policy = handrail.permissions.Policy(allow=["run_shell"], ask=["run_shell(git push:*)"])
    assert shell(policy, tmp_path, "timeout 60 git push origin").behavior == "ask"
    assert shell(policy, tmp_path, "git status && git push").behavior == "ask"
    assert shell(policy, tmp_path, "git status").behavior == "allow"


def test_an_allow_rule_never_matches_a_wrapped_command(tmp_path: Path) -> None:
    # Wrapped commands widen what deny and ask rules see; they never widen an allow rule.
    policy = handrail.permissions.Policy(allow=["run_shell(rm:*)"])
    assert shell(policy, tmp_path, "ls | xargs rm").behavior == "ask"
    assert shell(policy, tmp_path, "sudo rm x").behavior == "ask"


COMPOUNDS = [
    ("npm test && npm run lint", ["run_shell(npm test:*)", "run_shell(npm run lint:*)"]),
    ("git status; git diff", ["run_shell(git status)", "run_shell(git diff:*)"]),
    ("make build | tee log", ["run_shell(make:*)", "run_shell(tee:*)"]),
    ("npm test", ["run_shell(npm test:*)"]),
    ("pytest -q || true", ["run_shell(pytest:*)", "run_shell(true)"]),
    ("cargo build\ncargo test", ["run_shell(cargo:*)"]),
]
WRAPS = [
    "bash -c {}",
    "sh -c {}",
    "bash -lc {}",
    "zsh -c {}",
    "eval {}",
    "timeout 5 bash -c {}",
    "env bash -c {}",
    "sudo sh -c {}",
    "xargs sh -c {}",
]


@pytest.mark.parametrize(("compound", "rules"), COMPOUNDS)
def test_quoting_a_whole_compound_into_a_nested_shell_never_matches_an_allow_rule(
    tmp_path: Path, compound: str, rules: list[str]
) -> None:
    policy = handrail.permissions.Policy(allow=rules)
    assert shell(policy, tmp_path, compound).behavior == "allow"  # the rules do cover it
    for wrap in WRAPS:
        for quoted in (shlex.quote(compound), '"' + compound.replace('"', '\\"') + '"'):
            command = wrap.format(quoted)
            d = shell(policy, tmp_path, command)
            assert d.behavior == "ask", command
            assert parse_command(command).opaque, command


def test_a_tool_that_splits_its_own_line_keeps_its_split(tmp_path: Path) -> None:
    # Third-party tools that pass `commands` are taken at their word (and never opaque).
    policy = handrail.permissions.Policy(allow=["run_shell(npm test:*)"])
    req = handrail.RunCommand(command="npm test $(whoami)", commands=("npm test",))
    d = policy.decide(
        names=("run_shell",),
        kind=handrail.ToolKind.EXECUTE,
        read_only=False,
        requests=(req,),
        mode=handrail.PermissionMode.DEFAULT,
        read_roots=(tmp_path,),
        write_roots=(tmp_path,),
    )
    assert d.behavior == "allow"


# -- through the runtime: a shell-like tool that declares only its command line -------------


class PretendShellArgs(BaseModel):
    command: str


class PretendShell(handrail.Tool):
    name = "pretend_shell"
    description = "Pretend to run a shell command."
    kind = handrail.ToolKind.EXECUTE
    args_model = PretendShellArgs

    def __init__(self, log: list[str]) -> None:
        self.log = log
        super().__init__()

    @staticmethod
    def read_only(args: PretendShellArgs) -> bool:
        return is_read_only_command(args.command)

    def permission_requests(
        self, args: PretendShellArgs, ctx: handrail.ToolContext
    ) -> Sequence[handrail.PermissionRequest]:
        return [handrail.RunCommand(command=args.command)]

    async def run(self, args: PretendShellArgs, ctx: handrail.ToolContext) -> str:
        self.log.append(args.command)
        return f"ran {args.command}"


async def test_runtime_allows_a_compound_only_when_every_part_is_allowed(tmp_path: Path) -> None:
    log: list[str] = []
    rt = handrail.Runtime([PretendShell(log)], root=tmp_path, allow=["pretend_shell(npm test:*)"])
    assert (await rt.call("pretend_shell", {"command": "npm test && npm test"})).ok
    r = await rt.call("pretend_shell", {"command": "npm test && rm -rf x"})
    assert isinstance(r, handrail.Interrupted)
    assert log == ["npm test && npm test"]


async def test_runtime_deny_rule_catches_a_command_behind_xargs(tmp_path: Path) -> None:
    log: list[str] = []
    rt = handrail.Runtime(
        [PretendShell(log)], root=tmp_path, deny=["pretend_shell(rm:*)"], mode="bypass"
    )
    r = await rt.call("pretend_shell", {"command": "ls | xargs rm"})
    assert r.error is handrail.ErrorCode.PERMISSION_DENIED
    assert r.denial is not None
    assert r.denial.rule == "pretend_shell(rm:*)"
    assert log == []


async def test_runtime_plan_mode_runs_read_only_lines_only(tmp_path: Path) -> None:
    log: list[str] = []
    rt = handrail.Runtime([PretendShell(log)], root=tmp_path, mode="plan")
    assert (await rt.call("pretend_shell", {"command": "git status && ls -la | grep x"})).ok
    for command in ("npm test", "ls > listing.txt", "cat $(echo a)", "sed -i s/a/b/ f"):
        r = await rt.call("pretend_shell", {"command": command})
        assert r.error is handrail.ErrorCode.PERMISSION_DENIED, command
    assert log == ["git status && ls -la | grep x"]
