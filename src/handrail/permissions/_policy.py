"""The policy: one central decision (allow / ask / deny) for every call.

Order of evaluation, first decisive step wins:
1. deny rules (any request matching, or a bare rule for the tool; a shell line no rule can
   read, `ShellCommand.dynamic`, matches every command rule);
2. sandbox limits: reads outside the read roots, writes outside the write roots or into
   protected folders (`.git`, `.handrail`) are refused;
3. plan mode: anything not read-only is refused (except writing a plan under
   `.handrail/plans/`, and a mode switch, which is how plan mode ends and always asks);
4. a pre-tool hook's decision (it can never allow past steps 1-3);
5. ask rules (bypass mode allows, except for a shell line no rule can read, which asks;
   dont_ask mode denies);
6. bypass mode allows;
7. allow rules, from settings and from "allow always" answers: every request must be covered;
8. a mode switch (`SwitchMode`, e.g. exit_plan_mode) asks: no mode's default may approve it,
   even for a read-only tool (dont_ask: denied);
9. the mode's default: read-only calls are allowed, except a fetch (`FetchUrl`), which asks
   unless an allow rule covers its host (a URL can carry data out of the session, so the user
   decides which sites the agent may contact); accept_edits also allows file edits inside the
   write roots; everything else asks (dont_ask: denied).

A rule's specifier matches a mode switch by the target mode's name: `exit_plan_mode(default)`.
A rule `mcp__<server>` names every tool of that MCP server (`mcp__<server>__<tool>`).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from .._context import Grant, PermissionMode
from .._contract import (
    ApprovalRequest,
    ErrorCode,
    FetchUrl,
    PermissionRequest,
    ReadPath,
    RunCommand,
    SwitchMode,
    ToolKind,
    WritePath,
)
from ._hidden import hidden_refusal
from ._rules import Rule, parse_rule, rule_matches_request, simple_commands, unreadable_reasons
from ._shell import parse_command

__all__ = ["ALLOW", "BYPASS", "Decision", "Policy", "covering_rules", "is_within", "rules_to_allow"]

Behavior = Literal["allow", "ask", "deny"]
PROTECTED_DIRS = (".git", ".handrail")
PLAN_DIR = (".handrail", "plans")
_EDIT_KINDS = frozenset({ToolKind.EDIT, ToolKind.DELETE, ToolKind.MOVE})


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """The policy's verdict for one call."""

    behavior: Behavior
    reason: str = ""
    rule: str | None = None
    source: Literal["rule", "mode", "roots", "hook", "user"] = "mode"
    code: ErrorCode = ErrorCode.PERMISSION_DENIED
    """For deny: PERMISSION_DENIED, or OUTSIDE_READ_ROOTS / OUTSIDE_WRITE_ROOTS."""
    grant: Grant = "read_only"
    """For allow: what allowed the call (see `Grant`)."""


ALLOW = Decision(behavior="allow", reason="allowed")
"""Allowed unasked because the call is read-only."""
BYPASS = Decision(behavior="allow", reason="allowed in bypass mode", grant="mode")


def is_within(path: str, root: Path) -> bool:
    """Is `path` inside `root`? Decided by path components, never by string prefix."""
    root_parts = Path(os.path.normpath(root)).parts
    parts = Path(os.path.normpath(path)).parts
    return len(parts) >= len(root_parts) and parts[: len(root_parts)] == root_parts


def protected_part(path: str, root: Path) -> str | None:
    """The protected folder (`.git`, `.handrail`) that `path` lies in below `root`, if any.

    Any depth counts (nested repositories, submodules); `.handrail/plans/` is not protected
    (plans are written in plan mode; they are not settings).
    """
    rel = Path(os.path.normpath(path)).parts[len(Path(os.path.normpath(root)).parts) :]
    if rel[:2] == PLAN_DIR:
        return None
    return next((d for d in rel if d in PROTECTED_DIRS), None)


def _rel_parts(path: str, roots: Sequence[Path]) -> tuple[str, ...] | None:
    for root in roots:
        if is_within(path, root):
            return Path(os.path.normpath(path)).parts[len(Path(os.path.normpath(root)).parts) :]
    return None


def _roots_text(roots: Sequence[Path]) -> str:
    # Each root once: the readable roots are the read roots plus the write roots, which are
    # often the same folder.
    return ", ".join(dict.fromkeys(str(r) for r in roots)) or "(none)"


class Policy:
    """Rules (allow / ask / deny) plus the sandbox's root limits; decides every call centrally."""

    def __init__(
        self,
        *,
        allow: Iterable[str | Rule] = (),
        ask: Iterable[str | Rule] = (),
        deny: Iterable[str | Rule] = (),
    ) -> None:
        self.allow = tuple(r if isinstance(r, Rule) else parse_rule(r) for r in allow)
        self.ask = tuple(r if isinstance(r, Rule) else parse_rule(r) for r in ask)
        self.deny = tuple(r if isinstance(r, Rule) else parse_rule(r) for r in deny)
        self._cache: dict[tuple[str, ...], tuple[tuple[Rule, ...], ...]] = {}

    def rules_for(self, names: tuple[str, ...]) -> tuple[tuple[Rule, ...], ...]:
        """(deny, ask, allow) rules that name one of these tool names."""
        cached = self._cache.get(names)
        if cached is None:
            cached = tuple(
                tuple(r for r in rules if r.tool in names or _names_server(r.tool, names))
                for rules in (self.deny, self.ask, self.allow)
            )
            self._cache[names] = cached
        return cached

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        """True if any rule names this tool (lets the runtime skip work when none does)."""
        return any(self.rules_for(names))

    def decide(
        self,
        *,
        names: tuple[str, ...],
        kind: ToolKind,
        read_only: bool,
        requests: Sequence[PermissionRequest],
        mode: PermissionMode,
        read_roots: Sequence[Path],
        write_roots: Sequence[Path],
        session_allow: Sequence[Rule] = (),
        hook: Behavior | None = None,
        hook_reason: str = "",
        hidden_paths: Sequence[Path] = (),
    ) -> Decision:
        """Decide one call. `requests` hold resolved absolute paths.

        `hidden_paths` (see `permissions.hidden_paths`) are refused like paths outside the
        roots, even inside a root; the runtime also checks them before any policy, so a
        `Policy` subclass cannot lift them.
        """
        tool = names[0]
        deny, ask, allow = self.rules_for(names)
        roots = (*write_roots, *read_roots)
        unreadable = next(filter(None, (unreadable_reasons(q) for q in requests)), ())
        for rule in deny:
            if rule.specifier is None or any(_matches(rule, q, roots) for q in requests):
                return Decision(
                    behavior="deny",
                    reason=_rule_reason(rule, "denies this call", unreadable, requests, roots),
                    rule=rule.text,
                    source="rule",
                )
        limit = self._check_roots(requests, read_roots, write_roots, hidden_paths)
        if limit is not None:
            return limit
        if mode is PermissionMode.PLAN and not read_only and not _only_switches(requests):
            writes = [q for q in requests if isinstance(q, WritePath)]
            if (
                writes
                and all(_is_plan_file(q, write_roots) for q in writes)
                and all(isinstance(q, ReadPath | WritePath) for q in requests)
            ):
                return Decision(
                    behavior="allow", reason="writing the plan file in plan mode", grant="mode"
                )
            return Decision(
                behavior="deny",
                reason=(
                    f"`{tool}` changes things and the session is in plan mode, where only "
                    "read-only calls run; finish the plan and exit plan mode first"
                ),
                source="mode",
            )
        if hook == "deny":
            return Decision(
                behavior="deny", reason=hook_reason or "a hook blocked this call", source="hook"
            )
        if hook == "allow":
            return Decision(
                behavior="allow",
                reason=hook_reason or "allowed by a hook",
                source="hook",
                grant="hook",
            )
        if hook == "ask":
            if mode is PermissionMode.BYPASS:
                return BYPASS
            return self._ask(mode, hook_reason or "a hook asks for approval", None, "hook")
        for rule in ask:
            if rule.specifier is None or any(_matches(rule, q, roots) for q in requests):
                # Bypass mode skips ask rules, but not for a line no rule can read: the rule
                # may be about the very command it hides.
                if mode is PermissionMode.BYPASS and not unreadable:
                    return BYPASS
                why = _rule_reason(rule, "asks for approval", unreadable, requests, roots)
                return self._ask(mode, why, rule.text, "rule")
        if mode is PermissionMode.BYPASS:
            return BYPASS
        allow_rules = [
            *allow,
            *(r for r in session_allow if r.tool in names or _names_server(r.tool, names)),
        ]
        covered = _covered(allow_rules, requests, roots)
        if covered is not None:
            return Decision(
                behavior="allow",
                reason=f"allowed by `{covered}`",
                rule=covered,
                source="rule",
                grant="rule",
            )
        switch = next((q for q in requests if isinstance(q, SwitchMode)), None)
        if switch is not None:
            return self._ask(
                mode, f"switching to {switch.mode} mode needs the user's approval", None, "mode"
            )
        if read_only:
            fetch = next((q for q in requests if isinstance(q, FetchUrl)), None)
            if fetch is None:
                return ALLOW
            try:
                host = urlsplit(fetch.url).hostname or fetch.url
            except ValueError:
                host = fetch.url
            return self._ask(
                mode, f"`{tool}` would contact {host}, which no allow rule covers", None, "mode"
            )
        if (
            mode is PermissionMode.ACCEPT_EDITS
            and kind in _EDIT_KINDS
            and requests
            and all(isinstance(q, ReadPath | WritePath) for q in requests)
        ):
            return Decision(
                behavior="allow",
                reason="file edits inside the write roots are accepted",
                grant="mode",
            )
        return self._ask(mode, f"`{tool}` can change things", None, "mode")

    @staticmethod
    def _ask(
        mode: PermissionMode, reason: str, rule: str | None, source: Literal["rule", "mode", "hook"]
    ) -> Decision:
        if mode is PermissionMode.DONT_ASK:
            return Decision(
                behavior="deny",
                reason=reason + ", and the session does not ask for approvals (dont_ask mode)",
                rule=rule,
                source=source,
            )
        return Decision(behavior="ask", reason=reason, rule=rule, source=source)

    @staticmethod
    def _check_roots(
        requests: Sequence[PermissionRequest],
        read_roots: Sequence[Path],
        write_roots: Sequence[Path],
        hidden: Sequence[Path] = (),
    ) -> Decision | None:
        # Hidden first: a secret location inside a root (the workspace is the home) stays shut.
        refused = hidden_refusal(requests, hidden)
        if refused is not None:
            return Decision(behavior="deny", reason=refused[0], source="roots", code=refused[1])
        readable = (*read_roots, *write_roots)
        for q in requests:
            if isinstance(q, WritePath):
                root = next((r for r in write_roots if is_within(q.path, r)), None)
                if root is None:
                    return Decision(
                        behavior="deny",
                        reason=f"{q.path} is outside the write roots ({_roots_text(write_roots)})",
                        source="roots",
                        code=ErrorCode.OUTSIDE_WRITE_ROOTS,
                    )
                protected = protected_part(q.path, root)
                if protected is not None:
                    return Decision(
                        behavior="deny",
                        reason=f"{q.path} is inside a {protected}/ folder, which stays read-only",
                        source="roots",
                        code=ErrorCode.OUTSIDE_WRITE_ROOTS,
                    )
            elif isinstance(q, ReadPath) and _rel_parts(q.path, readable) is None:
                return Decision(
                    behavior="deny",
                    reason=f"{q.path} is outside the read roots ({_roots_text(readable)})",
                    source="roots",
                    code=ErrorCode.OUTSIDE_READ_ROOTS,
                )
        return None


def _names_server(rule_tool: str, names: tuple[str, ...]) -> bool:
    """Does `mcp__<server>` (no `__` after the prefix) name one of these MCP tools?"""
    return (
        rule_tool.startswith("mcp__")
        and "__" not in rule_tool[5:]
        and any(n.startswith(rule_tool + "__") for n in names)
    )


def _is_plan_file(q: WritePath, write_roots: Sequence[Path]) -> bool:
    rel = _rel_parts(q.path, write_roots)
    return rel is not None and len(rel) > 2 and rel[:2] == PLAN_DIR


def _matches(rule: Rule, q: PermissionRequest, roots: Sequence[Path]) -> bool:
    """`rule_matches_request`, plus mode switches: the specifier names the target mode."""
    if isinstance(q, SwitchMode):
        return rule.specifier is None or rule.specifier == q.mode
    return rule_matches_request(rule, q, roots)


def _rule_reason(
    rule: Rule,
    verdict: str,
    unreadable: Sequence[str],
    requests: Sequence[PermissionRequest],
    roots: Sequence[Path],
) -> str:
    """Why a rule decided: plainly, or, when only an unreadable line made it match, why."""
    reason = f"the rule `{rule.text}` {verdict}"
    if not unreadable or rule.specifier is None or _matches_literally(rule, requests, roots):
        return reason
    return (
        f"{reason}: no rule can tell which commands this line runs ({unreadable[0]}), so it "
        "counts as matching every deny and ask rule; write the command names and the values "
        "they depend on out literally, without variables, substitutions or eval"
    )


def _matches_literally(
    rule: Rule, requests: Sequence[PermissionRequest], roots: Sequence[Path]
) -> bool:
    """Does the rule match a command the line shows (not only because it hides some)?"""
    for q in requests:
        if isinstance(q, RunCommand) and not q.commands:
            parsed = parse_command(q.command)
            seen = (*parsed.commands, *parsed.hidden)
            if any(rule.matches_command(c) for c in seen):
                return True
        elif _matches(rule, q, roots):
            return True
    return False


def _only_switches(requests: Sequence[PermissionRequest]) -> bool:
    return bool(requests) and all(isinstance(q, SwitchMode) for q in requests)


def _covered(
    rules: Sequence[Rule], requests: Sequence[PermissionRequest], roots: Sequence[Path]
) -> str | None:
    """The (first) allow rule text if the rules cover the whole call, else None."""
    if not rules:
        return None
    for rule in rules:
        if rule.specifier is None:
            return rule.text
    if not requests:
        return None
    first: str | None = None
    for q in requests:
        units: tuple[PermissionRequest, ...]
        if isinstance(q, RunCommand):
            # Every simple command of a compound must be allowed on its own, and a line whose
            # effects a rule cannot see (substitution, redirection) is never covered.
            commands, opaque = simple_commands(q)
            if opaque:
                return None
            units = tuple(RunCommand(command=c, commands=(c,)) for c in commands)
        else:
            units = (q,)
        for unit in units:
            hit = next((r for r in rules if _matches(r, unit, roots)), None)
            if hit is None:
                if isinstance(unit, RunCommand) and len(units) > 1 and _reads_only(unit, roots):
                    # `cd sub && npm test`: the read-only part needs no rule of its own.
                    continue
                return None
            first = first or hit.text
    return first


def _reads_only(unit: RunCommand, roots: Sequence[Path]) -> bool:
    """A read-only simple command that needs no rule beside the ones that change things.

    A `cd` counts only when it stays inside the roots: `cd /tmp/x && npm test` would run
    someone else's `package.json` under the `npm test:*` rule meant for this project.
    """
    parsed = parse_command(unit.command)
    if not parsed.read_only:
        return False
    argv = parsed.words[0] if parsed.words else ()
    if argv[:1] not in (("cd",), ("pushd",)):
        return True
    target = next((a for a in argv[1:] if not a.startswith("-")), None)
    if target is None or target.startswith("~") or "$" in target:
        return False
    if os.path.isabs(target):
        return any(is_within(target, r) for r in roots)
    return ".." not in Path(target).parts


def suggest_rules(
    tool: str, requests: Sequence[PermissionRequest], roots: Sequence[Path]
) -> tuple[str, ...]:
    """Rules an "allow always" answer could add, most specific first (the bare tool last)."""
    return tuple(dict.fromkeys([*covering_rules(tool, requests, roots), tool]))


def covering_rules(
    tool: str, requests: Sequence[PermissionRequest], roots: Sequence[Path]
) -> tuple[str, ...]:
    """The narrowest allow rules that together cover the whole call.

    `npm test && npm run build` needs `run_shell(npm test:*)` and `run_shell(npm run build:*)`
    (a read-only part such as `cd sub` needs none); a line no prefix rule can cover (a
    redirection, a substitution) needs the bare tool name, and so does a call with nothing to
    match a rule against.
    """
    out: list[str] = []
    for q in requests:
        if isinstance(q, RunCommand):
            specs = _command_specs(q, roots)
            if not specs:
                return (tool,)
            out.extend(f"{tool}({spec})" for spec in specs)
        elif isinstance(q, ReadPath | WritePath):
            rel = _rel_parts(q.path, roots)
            out.append(f"{tool}({'/'.join(rel) if rel else q.path})")
        elif isinstance(q, FetchUrl):
            host = urlsplit(q.url).hostname
            if not host:
                return (tool,)
            out.append(f"{tool}(domain:{host})")
        elif isinstance(q, SwitchMode):
            out.append(f"{tool}({q.mode})")
        else:
            return (tool,)
    return tuple(dict.fromkeys(out)) or (tool,)


def rules_to_allow(request: ApprovalRequest) -> tuple[str, ...]:
    """The rules an "allow always" answer adds when it names none: the narrowest covering set."""
    return request.allow_rules or request.suggested_rules[:1] or (request.tool_name,)


# Programs whose second word is a subcommand worth keeping in a suggested rule (`npm test:*`,
# `git status:*`); for anything else the second word is an operand (`touch x.txt` -> `touch:*`).
_SUBCOMMAND_PROGRAMS = frozenset(
    "apt bun cargo composer deno docker dotnet gh git go gradle helm just kubectl make mvn npm "
    "npx pip pip3 pnpm poetry rustup swift terraform uv yarn".split()
)
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_:-]*")


def _command_specs(q: RunCommand, roots: Sequence[Path] = ()) -> list[str]:
    """Rule specifiers that would cover this command line, one per simple command.

    `npm test -- -x` gives `npm test:*` (program and subcommand), `ls -la` gives `ls:*`; a command
    with leading assignments gives itself exactly (a prefix rule never covers those). An opaque
    line gets none: no rule but the bare tool name can cover it.
    """
    if q.commands:
        texts = list(q.commands)
        words = [_split(t) for t in texts]
    else:
        parsed = parse_command(q.command)
        if parsed.opaque:
            return []
        texts, words = list(parsed.commands), [list(w) for w in parsed.words]
    specs: list[str] = []
    changing = [not _reads_only(RunCommand(command=t), roots) for t in texts]
    for text, argv, changes in zip(texts, words, changing, strict=False):
        if not argv or (any(changing) and not changes):
            continue  # a read-only part of a line that changes things needs no rule
        if not text.startswith(argv[0]):  # leading assignments
            specs.append(text)
            continue
        sub = argv[1] if len(argv) > 1 else ""
        is_sub = argv[0] in _SUBCOMMAND_PROGRAMS and _SUBCOMMAND.fullmatch(sub) is not None
        specs.append(f"{argv[0]} {sub}:*" if is_sub else f"{argv[0]}:*")
    return specs


def _split(cmd: str) -> list[str]:
    try:
        return shlex.split(cmd)
    except ValueError:
        return cmd.split()
