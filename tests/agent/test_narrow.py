"""A sub-agent's permissions are its parent's, narrowed, for every rule x mode x definition.

The property test draws parent rules, the parent's mode and "allow always" rules, a
definition (mode, denied tools, read-only) and the child's own session rules, then checks for
many calls that the child's decision is never more permissive than the parent's
(deny < ask < allow).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from handrail import (
    FetchUrl,
    PermissionMode,
    ReadPath,
    Registry,
    RunCommand,
    Runtime,
    Session,
    SwitchMode,
    ToolKind,
    WritePath,
)
from handrail.agent import NarrowedPolicy
from handrail.agent._narrow import narrow_mode, narrowed_runtime
from handrail.builtin import coding_tools
from handrail.permissions import Policy, parse_rule

ROOT = Path("/work/project")
RANK = {"deny": 0, "ask": 1, "allow": 2}
MODES = list(PermissionMode)
RULES = [
    "run_shell",
    "run_shell(npm test:*)",
    "run_shell(rm:*)",
    "run_shell(ls:*)",
    "write_file",
    "write_file(src/**)",
    "edit_file(docs/**)",
    "read_file(secret/**)",
    "web_fetch(domain:example.com)",
    "web_fetch",
    "exit_plan_mode",
    "list_files",
]
# (names, kind, read_only, requests)
CALLS = [
    (("read_file",), ToolKind.READ, True, (ReadPath(path=str(ROOT / "a.py")),)),
    (("read_file",), ToolKind.READ, True, (ReadPath(path=str(ROOT / "secret" / "k")),)),
    (("read_file",), ToolKind.READ, True, (ReadPath(path="/etc/shadow"),)),
    (("write_file",), ToolKind.EDIT, False, (WritePath(path=str(ROOT / "src" / "a.py")),)),
    (("write_file",), ToolKind.EDIT, False, (WritePath(path=str(ROOT / ".handrail/plans/p.md")),)),
    (("write_file",), ToolKind.EDIT, False, (WritePath(path=str(ROOT / ".git" / "config")),)),
    (("write_file",), ToolKind.EDIT, False, (WritePath(path="/tmp/out.txt"),)),
    (("edit_file",), ToolKind.EDIT, False, (WritePath(path=str(ROOT / "docs" / "x.md")),)),
    (("run_shell",), ToolKind.EXECUTE, False, (RunCommand(command="npm test"),)),
    (("run_shell",), ToolKind.EXECUTE, False, (RunCommand(command="rm -rf build"),)),
    (("run_shell",), ToolKind.EXECUTE, True, (RunCommand(command="ls -la"),)),
    (("run_shell",), ToolKind.EXECUTE, False, (RunCommand(command="npm test && rm -rf /"),)),
    (("web_fetch",), ToolKind.FETCH, True, (FetchUrl(url="https://example.com/a"),)),
    (("web_fetch",), ToolKind.FETCH, True, (FetchUrl(url="https://evil.test/x"),)),
    (("exit_plan_mode",), ToolKind.OTHER, True, (SwitchMode(mode="default", plan="p"),)),
    (("list_files",), ToolKind.SEARCH, True, ()),
    (("todo_write",), ToolKind.OTHER, False, ()),
]

rules = st.lists(st.sampled_from(RULES), max_size=4, unique=True)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    allow=rules,
    ask=rules,
    deny=rules,
    parent_mode=st.sampled_from(MODES),
    parent_always=rules,
    child_mode=st.one_of(st.none(), st.sampled_from(MODES)),
    child_deny=rules,
    child_always=rules,
    read_only=st.booleans(),
    hook=st.sampled_from([None, "allow", "ask", "deny"]),
)
def test_a_child_never_decides_more_permissively_than_its_parent(
    allow: list[str],
    ask: list[str],
    deny: list[str],
    parent_mode: PermissionMode,
    parent_always: list[str],
    child_mode: PermissionMode | None,
    child_deny: list[str],
    child_always: list[str],
    read_only: bool,
    hook: str | None,
) -> None:
    parent = Policy(allow=allow, ask=ask, deny=deny)
    session = Session(mode=parent_mode, allow_rules=list(parent_always))
    child = NarrowedPolicy(
        parent,
        session,
        parent_read_roots=(ROOT,),
        parent_write_roots=(ROOT,),
        deny=child_deny,
    )
    mode = narrow_mode(parent_mode, child_mode)
    child_session_rules = [parse_rule(r) for r in child_always]
    parent_session_rules = [parse_rule(r) for r in parent_always]
    for names, kind, ro, requests in CALLS:
        theirs = parent.decide(
            names=names,
            kind=kind,
            read_only=ro,
            requests=requests,
            mode=parent_mode,
            read_roots=(ROOT,),
            write_roots=(ROOT,),
            session_allow=parent_session_rules,
            hook=hook,  # type: ignore[arg-type]
        )
        mine = child.decide(
            names=names,
            kind=kind,
            read_only=ro,
            requests=requests,
            mode=mode,
            read_roots=(ROOT,),
            write_roots=() if read_only else (ROOT,),
            session_allow=child_session_rules,
            hook=hook,
        )
        assert RANK[mine.behavior] <= RANK[theirs.behavior], (names, requests, mine, theirs)
        if any(isinstance(q, SwitchMode) for q in requests):
            assert mine.behavior == "deny"


def test_the_child_mode_is_the_narrower_one() -> None:
    assert narrow_mode(PermissionMode.DEFAULT, PermissionMode.BYPASS) is PermissionMode.DEFAULT
    assert narrow_mode(PermissionMode.BYPASS, PermissionMode.PLAN) is PermissionMode.PLAN
    assert narrow_mode(PermissionMode.ACCEPT_EDITS, None) is PermissionMode.ACCEPT_EDITS
    assert narrow_mode(PermissionMode.PLAN, PermissionMode.ACCEPT_EDITS) is PermissionMode.PLAN


def test_a_plan_mode_child_of_a_default_parent_still_asks_for_the_plan_file() -> None:
    # Plan mode alone would allow writing the plan file; the parent's default mode asks.
    parent = Policy()
    child = NarrowedPolicy(
        parent,
        Session(mode=PermissionMode.DEFAULT),
        parent_read_roots=(ROOT,),
        parent_write_roots=(ROOT,),
    )
    decision = child.decide(
        names=("write_file",),
        kind=ToolKind.EDIT,
        read_only=False,
        requests=(WritePath(path=str(ROOT / ".handrail/plans/p.md")),),
        mode=PermissionMode.PLAN,
        read_roots=(ROOT,),
        write_roots=(ROOT,),
    )
    assert decision.behavior == "ask"


def test_the_parents_later_always_rules_reach_a_running_child() -> None:
    session = Session(mode=PermissionMode.DEFAULT)
    child = NarrowedPolicy(Policy(), session, parent_read_roots=(ROOT,), parent_write_roots=(ROOT,))
    call = dict(
        names=("run_shell",),
        kind=ToolKind.EXECUTE,
        read_only=False,
        requests=(RunCommand(command="npm test"),),
        mode=PermissionMode.DEFAULT,
        read_roots=(ROOT,),
        write_roots=(ROOT,),
        session_allow=[parse_rule("run_shell(npm test:*)")],
    )
    assert child.decide(**call).behavior == "ask"  # type: ignore[arg-type]
    session.allow_rules.append("run_shell(npm test:*)")
    assert child.decide(**call).behavior == "allow"  # type: ignore[arg-type]


@pytest.mark.parametrize("read_only", [True, False])
def test_the_narrowed_runtime_keeps_roots_and_drops_mode_switches(
    tmp_path: Path, read_only: bool
) -> None:
    parent = Runtime(
        Registry(coding_tools(project_dir=tmp_path)),
        root=tmp_path,
        mode="accept_edits",
        deny=["web_fetch"],
    )

    async def approver(request: object) -> object:
        raise AssertionError("not asked here")

    child = narrowed_runtime(
        parent,
        allow=None,
        deny=("todo_write",),
        mode=PermissionMode.BYPASS,
        read_only=read_only,
        approver=approver,  # type: ignore[arg-type]
    )
    names = {t.name for t in child.registry.all()}
    assert "todo_write" not in names and "exit_plan_mode" not in names
    assert "enter_plan_mode" not in names and "read_file" in names
    assert child.session.mode is PermissionMode.ACCEPT_EDITS  # bypass asked, parent's kept
    assert child.session is not parent.session
    assert child.write_roots == (() if read_only else parent.write_roots)
    assert child.read_roots == parent.read_roots
    assert isinstance(child.policy, NarrowedPolicy)
    assert "web_fetch" in {r.tool for r in child.policy.deny}


async def test_a_session_allow_always_holds_for_the_child_within_its_mode(tmp_path: Path) -> None:
    # "Don't ask again in this session" is recorded once, in the list parent and child share:
    # it holds for the child too, but never past the child's own (narrower) mode.
    parent = Runtime(Registry(coding_tools(project_dir=tmp_path)), root=tmp_path, mode="default")
    parent.session.allow_rules.append("write_file")

    def child_in(mode: PermissionMode | None) -> Runtime:
        return narrowed_runtime(
            parent, allow=None, deny=(), mode=mode, read_only=False, approver=None
        )

    write = {"file_path": "a.txt", "content": "x"}
    assert (await child_in(None).check("write_file", write)).verdict == "run"
    assert (await child_in(PermissionMode.PLAN).check("write_file", write)).verdict == "refuse"
    child = child_in(None)
    child.session.allow_rules.append("run_shell(touch:*)")  # as the pipeline records it
    assert "run_shell(touch:*)" in parent.session.allow_rules
    # Without the rule, the child asks as before.
    parent.session.allow_rules.clear()
    assert (await child_in(None).check("write_file", write)).verdict == "ask"
