"""A sub-agent's runtime: the parent's, narrowed by the agent's definition, by construction.

The child gets the parent's roots (none to write to for a read-only definition), the parent's
settings and hooks, a subset of the parent's tools (the definition's allow and deny lists;
never the mode-switching tools; `agent` only while nesting is allowed), the narrower of the two
permission modes, and a `NarrowedPolicy`: every call is decided by the child's own policy and
by the parent's live policy (its rules, mode and "allow always" rules of the moment), and the
stricter answer wins. So whatever the definition says, a child can never do what its parent
could not, and it cannot change its own mode. The model never chooses any of this: the `agent`
tool's arguments carry no permission field.

The child's session shares the parent's list of "allow always" rules: a person's "don't ask
again in this session" holds for the session's sub-agents too (recorded once, wherever it was
answered), within the child's own mode and the parent's live decision, which still bound it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._context import PermissionMode, Session
from .._contract import Approver, PermissionRequest, SwitchMode, ToolKind
from .._registry import Registry
from .._tool import Tool
from ..permissions import Decision, Policy, Rule, parse_rule
from ..runtime import Runtime

__all__ = ["NarrowedPolicy", "narrow_mode", "narrowed_runtime"]

MODE_SWITCH_TOOLS = frozenset({"enter_plan_mode", "exit_plan_mode"})
_RANK = {"deny": 0, "ask": 1, "allow": 2}
# From least to most permissive, for choosing the child's mode: plan and dont_ask are not
# comparable (plan may write the plan file; dont_ask may run what allow rules cover), and the
# parent's policy decides every call too, so either order is safe.
_MODE_ORDER = (
    PermissionMode.PLAN,
    PermissionMode.DONT_ASK,
    PermissionMode.DEFAULT,
    PermissionMode.ACCEPT_EDITS,
    PermissionMode.BYPASS,
)


def narrow_mode(parent: PermissionMode, wanted: PermissionMode | None) -> PermissionMode:
    """The child's mode: the definition's, unless the parent's is narrower."""
    if wanted is None:
        return parent
    return min(parent, wanted, key=_MODE_ORDER.index)


class NarrowedPolicy(Policy):
    """A child's policy: its own decision, bounded by the parent's live decision."""

    def __init__(
        self,
        parent: Policy,
        parent_session: Session,
        *,
        parent_read_roots: Sequence[Path],
        parent_write_roots: Sequence[Path],
        deny: Sequence[str | Rule] = (),
    ) -> None:
        super().__init__(allow=parent.allow, ask=parent.ask, deny=(*parent.deny, *deny))
        self.parent = parent
        self.parent_session = parent_session
        self.parent_read_roots = tuple(parent_read_roots)
        self.parent_write_roots = tuple(parent_write_roots)
        self._parsed: dict[str, Rule] = {}

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        """A rule of either policy names the tool (then the runtime asks `decide`)."""
        return super().has_rules_for(names) or self.parent.has_rules_for(names)

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
        hook: Any = None,
        hook_reason: str = "",
        hidden_paths: Sequence[Path] = (),
    ) -> Decision:
        """The stricter of the child's and the parent's decisions for this call."""
        if any(isinstance(q, SwitchMode) for q in requests):
            return Decision(
                behavior="deny",
                reason="a sub-agent cannot change the permission mode",
                source="mode",
            )
        mine = super().decide(
            names=names,
            kind=kind,
            read_only=read_only,
            requests=requests,
            mode=mode,
            read_roots=read_roots,
            write_roots=write_roots,
            session_allow=session_allow,
            hook=hook,
            hook_reason=hook_reason,
            hidden_paths=hidden_paths,
        )
        if mine.behavior == "deny":
            return mine
        theirs = self.parent.decide(
            names=names,
            kind=kind,
            read_only=read_only,
            requests=requests,
            mode=self.parent_session.mode,
            read_roots=self.parent_read_roots,
            write_roots=self.parent_write_roots,
            session_allow=self._parent_allow(),
            hook=hook,
            hook_reason=hook_reason,
            hidden_paths=hidden_paths,
        )
        return theirs if _RANK[theirs.behavior] < _RANK[mine.behavior] else mine

    def _parent_allow(self) -> list[Rule]:
        rules: list[Rule] = []
        for text in self.parent_session.allow_rules:
            rule = self._parsed.get(text)
            if rule is None:
                rule = self._parsed[text] = parse_rule(text)
            rules.append(rule)
        return rules


def _listed(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def child_tools(
    parent: Registry,
    *,
    allow: Sequence[str] | None,
    deny: Sequence[str],
    keep_agent: bool,
) -> tuple[list[Tool], list[Tool]]:
    """(local, imported) tools of the parent a child may have."""
    local: list[Tool] = []
    imported: list[Tool] = []
    for t in parent.all():
        if t.name == "tool_search" or t.name in MODE_SWITCH_TOOLS:
            continue  # the child gets its own tool_search; it may not switch modes
        if t.name == "agent" and not keep_agent:
            continue
        if t.name != "agent" and allow is not None and not _listed(t.name, allow):
            continue
        if _listed(t.name, deny):
            continue
        (imported if parent.is_imported(t) else local).append(t)
    return local, imported


def narrowed_runtime(
    parent: Runtime,
    *,
    parent_session: Session | None = None,
    allow: Sequence[str] | None,
    deny: Sequence[str],
    mode: PermissionMode | None,
    read_only: bool,
    approver: Approver | None,
    extra_tools: Sequence[Tool] = (),
) -> Runtime:
    """A runtime for a sub-agent of `parent` (see the module docstring).

    `parent_session` is the session the parent's call runs in (default: the runtime's own);
    its mode and "allow always" rules bound the child's, live. The child's session shares
    that list of rules: an "allow always" answered for the child is recorded once, where both
    read it. `approver` answers the child's questions (the parent call's `ToolContext.approver`).
    """
    session = parent_session or parent.session
    local, imported = child_tools(parent.registry, allow=allow, deny=deny, keep_agent=False)
    policy = NarrowedPolicy(
        parent.policy,
        session,
        parent_read_roots=parent.read_roots,
        parent_write_roots=parent.write_roots,
    )
    settings_hooks = set(id(h) for h in parent.settings.hooks)
    child_session = Session(mode=narrow_mode(session.mode, mode), allow_rules=session.allow_rules)
    # What a child changes is recorded in the parent's session: it belongs to the parent's call.
    keeps = parent.keeps_checkpoints and not read_only
    return Runtime(
        Registry([*local, *extra_tools], imported=imported),
        root=parent.root,
        cwd=parent.cwd,
        read_roots=parent.read_roots,
        write_roots=() if read_only else parent.write_roots,
        session=child_session,
        settings=parent.settings,
        hooks=[h for h in parent.hooks if id(h) not in settings_hooks],
        policy=policy,
        approver=approver,
        locale=parent.locale,
        default_timeout=parent.default_timeout,
        max_concurrency=parent.max_concurrency,
        hidden_paths=parent.hidden_paths,
        checkpoints=parent.session_checkpoints(session) if keeps else False,
    )
