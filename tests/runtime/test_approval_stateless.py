"""Stateless approvals (`Runtime.call(..., approval=...)`) and the preflight (`Runtime.check`).

What a framework needs when it resumes from its own saved state: the answer to an ask comes
with the call, in any runtime, and the call runs exactly once; a preflight tells whether a
call would ask without running it or leaving anything behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inline_snapshot import snapshot
from pydantic import BaseModel

from handrail import (
    Approval,
    ConfigurationError,
    ErrorCode,
    Hook,
    HookEvent,
    HookResponse,
    Interrupted,
    Registry,
    Runtime,
    Session,
    Tool,
    ToolContext,
    WritePath,
    tool,
)
from handrail.builtin import coding_tools


def notes_tools(log: Path) -> list[Tool]:
    """`save` asks in the default mode and appends to `log`, so every run is counted on disk."""

    @tool
    def save(text: str, ctx: ToolContext) -> str:
        """Append a note."""
        with log.open("a") as f:
            f.write(text + "\n")
        return f"saved {text!r}"

    @tool(read_only=True, concurrency_safe=True)
    def peek() -> str:
        """Read-only: never asks."""
        return "peeked"

    return [save, peek]


def runs(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


async def test_an_ask_answered_in_advance_runs_once_in_a_fresh_runtime(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    first = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await first.call("save", {"text": "milk"}, call_id="c1")
    assert isinstance(r, Interrupted)
    assert first.discard(r) is True
    assert first.pipeline.pending == {}
    # A new process resumes from the framework's saved state: a fresh runtime, the same call.
    second = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await second.call("save", {"text": "milk"}, call_id="c1", approval=Approval.allow_once())
    assert r.ok and r.content == "saved 'milk'"
    assert runs(log) == ["milk"]
    assert second.pipeline.pending == {}
    # allow_once is for this call only: the next one asks again.
    again = await second.call("save", {"text": "eggs"})
    assert isinstance(again, Interrupted)
    assert runs(log) == ["milk"]


async def test_allow_always_in_advance_adds_the_session_rule(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await rt.call("save", {"text": "a"}, approval=Approval.allow_always())
    assert r.ok
    assert rt.session.allow_rules == ["save"]
    r = await rt.call("save", {"text": "b"})
    assert r.ok
    assert runs(log) == ["a", "b"]


async def test_an_edit_in_advance_runs_the_edited_arguments_with_a_note(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await rt.call("save", {"text": "whole milk"}, approval=Approval.edit({"text": "oat milk"}))
    assert r.ok
    assert runs(log) == ["oat milk"]
    assert r.content == snapshot(
        """\
saved 'oat milk'

Note: the user edited this call's arguments before approving it; the result below is for the edited call, do not repeat the original call.\
"""
    )


async def test_an_invalid_edit_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await rt.call("save", {"text": "milk"}, approval=Approval.edit({"text": 3}))
    assert r.error is ErrorCode.INVALID_ARGS
    assert r.content.startswith("The arguments edited at approval are invalid.\n")
    assert runs(log) == []


async def test_a_denial_in_advance_runs_nothing_and_reaches_the_model(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    seen: list[str] = []

    def pre(event: HookEvent) -> None:
        seen.append(event.tool_name)

    rt = Runtime(
        Registry(notes_tools(log)), root=tmp_path, hooks=[Hook(event="pre_tool_use", func=pre)]
    )
    r = await rt.call("save", {"text": "milk"}, approval=Approval.deny("Not on the list."))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and r.denial.source == "user"
    assert "Not on the list" in r.content
    assert runs(log) == []
    assert seen == []  # nothing of the call ran, not even its hooks
    assert rt.pipeline.pending == {}


async def test_an_approval_does_not_lift_a_deny_rule_the_mode_or_a_hook(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    by_rule = Runtime(Registry(notes_tools(log)), root=tmp_path, deny=["save"])
    r = await by_rule.call("save", {"text": "a"}, approval=Approval.allow_always())
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert by_rule.session.allow_rules == []

    by_mode = Runtime(Registry(notes_tools(log)), root=tmp_path, mode="plan")
    r = await by_mode.call("save", {"text": "b"}, approval=Approval.allow_once())
    assert r.error is ErrorCode.PERMISSION_DENIED

    def pre(event: HookEvent) -> HookResponse:
        return HookResponse(decision="deny", reason="frozen")

    hooked = Runtime(
        Registry(notes_tools(log)), root=tmp_path, hooks=[Hook(event="pre_tool_use", func=pre)]
    )
    r = await hooked.call("save", {"text": "c"}, approval=Approval.edit({"text": "d"}))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "frozen" in r.content
    assert runs(log) == []


async def test_a_hook_that_asks_is_answered_by_the_approval(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"

    def pre(event: HookEvent) -> HookResponse:
        return HookResponse(decision="ask", reason="the hook wants a look")

    rt = Runtime(
        Registry(notes_tools(log)),
        root=tmp_path,
        hooks=[Hook(event="pre_tool_use", func=pre)],
    )
    r = await rt.call("peek")
    assert isinstance(r, Interrupted)
    rt.discard(r)
    r = await rt.call("peek", approval=Approval.allow_once())
    assert r.ok and r.content == "peeked"


async def test_an_approval_for_a_call_that_would_not_ask_changes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path)
    r = await rt.call("peek", approval=Approval.allow_always())
    assert r.ok
    assert rt.session.allow_rules == []  # no ask, so no rule was needed or added


async def test_edit_without_arguments_is_a_programming_error(tmp_path: Path) -> None:
    rt = Runtime(Registry(notes_tools(tmp_path / "log")), root=tmp_path)
    with pytest.raises(ConfigurationError):
        await rt.call("save", {"text": "a"}, approval=Approval(kind="edit"))


async def test_discard_forgets_only_what_waits(tmp_path: Path) -> None:
    rt = Runtime(Registry(notes_tools(tmp_path / "log")), root=tmp_path)
    r = await rt.call("save", {"text": "a"}, call_id="x")
    assert isinstance(r, Interrupted)
    assert rt.discard("x") is True
    assert rt.discard("x") is False
    with pytest.raises(ConfigurationError):
        await rt.resume(r, Approval.allow_once())


# -- the preflight ---------------------------------------------------------------------------


async def test_check_tells_run_ask_or_refuse_and_runs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "notes.log"
    rt = Runtime(Registry(notes_tools(log)), root=tmp_path)
    run = await rt.check("peek")
    assert run.verdict == "run" and not run.needs_approval
    assert run.tool_name == "peek"

    ask = await rt.check("save", {"text": "milk"}, call_id="c9")
    assert ask.verdict == "ask" and ask.needs_approval
    assert ask.request is not None
    assert ask.request.call.id == "c9"
    assert ask.request.suggested_rules == ("save",)
    assert ask.request.reason == "`save` can change things"
    assert ask.request.source == "mode"

    bad = await rt.check("save", '{"text": 1}')
    assert bad.verdict == "refuse"
    assert bad.refusal is not None and bad.refusal.error is ErrorCode.INVALID_ARGS

    unknown = await rt.check("sav")
    assert unknown.verdict == "refuse"
    assert unknown.refusal is not None and unknown.refusal.error is ErrorCode.TOOL_NOT_FOUND

    denied = await Runtime(Registry(notes_tools(log)), root=tmp_path, deny=["save"]).check(
        "save", {"text": "x"}
    )
    assert denied.verdict == "refuse"
    assert denied.refusal is not None and denied.refusal.error is ErrorCode.PERMISSION_DENIED

    assert runs(log) == []
    assert rt.pipeline.pending == {}


async def test_check_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    rt = Runtime(Registry(coding_tools()), root=tmp_path)
    before = (dict(rt.session.files), list(rt.session.allow_rules), list(rt.session.activated))
    for name, args in [
        ("read_file", {"file_path": "a.txt"}),
        ("edit_file", {"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
        ("write_file", {"file_path": "b.txt", "content": "x"}),
        ("run_shell", {"command": "touch c.txt"}),
    ]:
        await rt.check(name, args)
    after = (dict(rt.session.files), list(rt.session.allow_rules), list(rt.session.activated))
    assert after == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]
    assert (tmp_path / "a.txt").read_text() == "one\n"
    await rt.aclose()


async def test_check_sees_the_tools_own_rules_and_the_roots(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    rt = Runtime(Registry(coding_tools()), root=tmp_path, mode="accept_edits")
    # An edit inside the roots would run in this mode.
    inside = await rt.check("write_file", {"file_path": "new.txt", "content": "x"})
    assert inside.verdict == "run"
    # A write outside the roots is refused by the policy, whatever the mode.
    out = await rt.check("write_file", {"file_path": str(outside), "content": "x"})
    assert out.verdict == "refuse"
    assert out.refusal is not None and out.refusal.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert not outside.exists()
    await rt.aclose()


async def test_check_reports_the_call_a_hook_rewrote(tmp_path: Path) -> None:
    def pre(event: HookEvent) -> HookResponse:
        return HookResponse(updated_input={"text": event.tool_input["text"].upper()})

    rt = Runtime(
        Registry(notes_tools(tmp_path / "log")),
        root=tmp_path,
        hooks=[Hook(event="pre_tool_use", func=pre)],
    )
    found = await rt.check("save", {"text": "milk"})
    assert found.verdict == "ask"
    assert found.call.arguments == {"text": "MILK"}


async def test_check_of_a_tool_whose_requests_fail_is_a_refusal(tmp_path: Path) -> None:
    class PickyArgs(BaseModel):
        path: str = ""

    class Picky(Tool):
        name = "picky"
        description = "Writes where it is told."
        args_model = PickyArgs

        def permission_requests(self, args: Any, ctx: ToolContext) -> list[WritePath]:
            from handrail import ToolFailure

            raise ToolFailure("no path given", code=ErrorCode.INVALID_ARGS)

        async def run(self, args: Any, ctx: ToolContext) -> str:
            raise AssertionError("never runs")

    rt = Runtime(Registry([Picky()]), root=tmp_path)
    found = await rt.check("picky")
    assert found.verdict == "refuse"
    assert found.refusal is not None and found.refusal.content == "no path given"


async def test_check_uses_the_session_given(tmp_path: Path) -> None:
    rt = Runtime(Registry(notes_tools(tmp_path / "log")), root=tmp_path)
    trusted = Session(allow_rules=["save"])
    assert (await rt.check("save", {"text": "a"}, session=trusted)).verdict == "run"
    assert (await rt.check("save", {"text": "a"})).verdict == "ask"


async def test_a_tool_whose_permission_requests_raise_fails_without_running(
    tmp_path: Path,
) -> None:
    ran: list[str] = []

    class BuggyArgs(BaseModel):
        path: str = ""

    class Buggy(Tool):
        name = "buggy"
        description = "Its permission_requests has a bug."
        args_model = BuggyArgs

        def permission_requests(self, args: Any, ctx: ToolContext) -> list[WritePath]:
            raise KeyError("oops")

        async def run(self, args: Any, ctx: ToolContext) -> str:
            ran.append("ran")
            return "ran"

    rt = Runtime(Registry([Buggy()]), root=tmp_path, mode="bypass")
    r = await rt.call("buggy")
    assert r.error is ErrorCode.EXECUTION_ERROR
    assert "oops" in r.content
    found = await rt.check("buggy")
    assert found.verdict == "refuse"
    assert found.refusal is not None and found.refusal.error is ErrorCode.EXECUTION_ERROR
    assert ran == []


async def test_a_read_only_flag_that_raises_counts_as_not_read_only(tmp_path: Path) -> None:
    def broken(args: Any) -> bool:
        raise RuntimeError("flag bug")

    @tool(read_only=broken)
    def probe() -> str:
        """Read-only, says a broken flag."""
        return "ran"

    rt = Runtime(Registry([probe]), root=tmp_path)  # default mode: not read-only asks
    found = await rt.check("probe")
    assert found.verdict == "ask"
    r = await rt.call("probe")
    assert isinstance(r, Interrupted)
    rt.discard(r)


async def test_an_approval_cannot_reach_a_hidden_secret_or_write_outside_the_roots(
    tmp_path: Path,
) -> None:
    # The attacker's aim: a framework's approval (or an edit smuggled into one) that lifts the
    # refusals no user answer may lift. Canaries show nothing was read or written.
    root = tmp_path / "work"
    root.mkdir()
    secrets = root / "vault"
    secrets.mkdir()
    (secrets / "key.txt").write_text("CANARY-7f3a9\n")
    outside = tmp_path / "outside.txt"
    rt = Runtime(Registry(coding_tools()), root=root, hidden_paths=[secrets])
    for approval in (Approval.allow_once(), Approval.allow_always("read_file")):
        r = await rt.call("read_file", {"file_path": "vault/key.txt"}, approval=approval)
        assert r.error is ErrorCode.OUTSIDE_READ_ROOTS  # a protected secret location
        assert "CANARY" not in r.content
    edit = Approval.edit({"file_path": "vault/key.txt"})
    r = await rt.call("read_file", {"file_path": "README.md"}, approval=edit)
    assert not r.ok and "CANARY" not in r.content
    r = await rt.call(
        "write_file",
        {"file_path": str(outside), "content": "pwned"},
        approval=Approval.allow_always(),
    )
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert not outside.exists()
    found = await rt.check("read_file", {"file_path": "vault/key.txt"})
    assert found.verdict == "refuse"
    assert found.refusal is not None and "CANARY" not in found.refusal.content
    await rt.aclose()
