"""Permissions end to end through `Runtime`: asking, approvals, rules, roots and modes."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

from handrail import (
    Approval,
    ApprovalRequest,
    Approver,
    ConfigurationError,
    ErrorCode,
    Interrupted,
    PermissionMode,
    PermissionRequest,
    Question,
    ReadPath,
    RunCommand,
    Runtime,
    Tool,
    ToolCall,
    ToolContext,
    ToolKind,
    WritePath,
    tool,
)
from handrail.permissions import Decision, Policy, Rule, Settings


class NoteArgs(BaseModel):
    path: str
    text: str = ""


class WriteNote(Tool):
    name = "write_note"
    aliases = ("save_note",)
    description = "Write a note to a file."
    kind = ToolKind.EDIT
    args_model = NoteArgs

    def __init__(self, log: list[NoteArgs]) -> None:
        self.log = log
        super().__init__()

    def permission_requests(self, args: NoteArgs, ctx: ToolContext) -> Sequence[PermissionRequest]:
        return [WritePath(path=args.path)]

    async def run(self, args: NoteArgs, ctx: ToolContext) -> str:
        self.log.append(args)
        return f"wrote {args.path}"


class PathArgs(BaseModel):
    path: str


class ReadNote(Tool):
    name = "read_note"
    description = "Read a note."
    kind = ToolKind.READ
    read_only = True
    args_model = PathArgs

    def __init__(self, log: list[str]) -> None:
        self.log = log
        super().__init__()

    def permission_requests(self, args: PathArgs, ctx: ToolContext) -> Sequence[PermissionRequest]:
        return [ReadPath(path=args.path)]

    def run(self, args: PathArgs, ctx: ToolContext) -> str:
        self.log.append(args.path)
        return f"read {args.path}"


class ShellArgs(BaseModel):
    command: str


class Shell(Tool):
    name = "sh"
    description = "Run a command (pretend)."
    kind = ToolKind.EXECUTE
    args_model = ShellArgs

    def __init__(self, log: list[str]) -> None:
        self.log = log
        super().__init__()

    def permission_requests(self, args: ShellArgs, ctx: ToolContext) -> Sequence[PermissionRequest]:
        parts = tuple(p.strip() for p in args.command.split("&&"))
        return [RunCommand(command=args.command, commands=parts if len(parts) > 1 else ())]

    async def run(self, args: ShellArgs, ctx: ToolContext) -> str:
        self.log.append(args.command)
        return f"ran {args.command}"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def writes() -> list[NoteArgs]:
    return []


@pytest.fixture
def reads() -> list[str]:
    return []


@pytest.fixture
def runs() -> list[str]:
    return []


@pytest.fixture
def tools(writes: list[NoteArgs], reads: list[str], runs: list[str]) -> list[Tool]:
    return [WriteNote(writes), ReadNote(reads), Shell(runs)]


def note(path: str, text: str = "hi") -> dict[str, str]:
    return {"path": path, "text": text}


# -- asking and answering ------------------------------------------------------------------


async def test_default_mode_asks_before_writing(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("notes/a.txt"), call_id="c1")
    assert isinstance(r, Interrupted)
    assert (r.ok, r.error, r.call_id, r.tool_name) == (
        False,
        ErrorCode.INTERRUPTED,
        "c1",
        "write_note",
    )
    assert writes == []
    req = r.approval
    assert isinstance(req, ApprovalRequest)
    assert req.tool_name == "write_note"
    assert req.reason
    assert req.requests == (WritePath(path=str(ws / "notes" / "a.txt")),)
    assert req.suggested_rules[0] == "write_note(notes/a.txt)"
    assert "write_note" in req.suggested_rules
    assert "approval" in r.content


async def test_read_only_call_runs_without_asking(
    ws: Path, tools: list[Tool], reads: list[str]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("read_note", {"path": "a.txt"})
    assert (r.ok, r.content) == (True, "read a.txt")
    assert reads == ["a.txt"]


async def test_allow_once_runs_the_call_and_asks_again_next_time(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.allow_once())
    assert (done.ok, done.content) == (True, "wrote a.txt")
    assert [w.path for w in writes] == ["a.txt"]
    again = await rt.call("write_note", note("a.txt"))
    assert isinstance(again, Interrupted)
    assert len(writes) == 1


async def test_an_approver_given_to_a_call_answers_in_place_of_the_runtimes(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    seen: list[str] = []

    def answering(who: str, answer: Approval) -> Approver:
        async def approve(request: Question) -> Approval:
            assert isinstance(request, ApprovalRequest)
            seen.append(f"{who}:{request.tool_name}")
            return answer

        return approve

    rt = Runtime(tools, root=ws, approver=answering("runtime", Approval.deny("no")))
    r = await rt.call(
        "write_note", note("a.txt"), approver=answering("call", Approval.allow_once())
    )
    assert (r.ok, seen, [w.path for w in writes]) == (True, ["call:write_note"], ["a.txt"])
    r = await rt.call("write_note", note("b.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert seen == ["call:write_note", "runtime:write_note"]
    assert [w.path for w in writes] == ["a.txt"]


async def test_an_approver_given_to_a_stream_answers_its_calls(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    asked: list[str] = []

    async def approve(request: Question) -> Approval:
        assert isinstance(request, ApprovalRequest)
        asked.append(request.call.id)
        return Approval.allow_once()

    rt = Runtime(tools, root=ws)
    calls = [ToolCall(id=f"c{i}", name="write_note", arguments=note(f"{i}.txt")) for i in (1, 2)]
    batch = await rt.call_many(calls, approver=approve)
    assert [r.ok for r in batch] == [True, True]
    assert asked == ["c1", "c2"]
    # Without one, the same calls stop for the stateless channel, as before.
    batch = await rt.call_many([ToolCall(id="c3", name="write_note", arguments=note("3.txt"))])
    assert isinstance(batch[0], Interrupted)
    assert sorted(w.path for w in writes) == ["1.txt", "2.txt"]


async def test_an_answer_cannot_be_used_twice(ws: Path, tools: list[Tool]) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    await rt.resume(r, Approval.allow_once())
    with pytest.raises(ConfigurationError, match="not waiting for approval"):
        await rt.resume(r, Approval.allow_once())


async def test_deny_answer_reaches_the_model(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.deny("keep the old notes"))
    assert done.error is ErrorCode.PERMISSION_DENIED
    assert "keep the old notes" in done.content
    assert done.denial is not None and done.denial.source == "user"
    assert writes == []


async def test_allow_always_adds_a_session_rule(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.allow_always())
    assert done.ok
    assert rt.session.allow_rules == ["write_note(a.txt)"]
    again = await rt.call("write_note", note("a.txt", "second"))
    assert (again.ok, again.content) == (True, "wrote a.txt")
    assert [w.text for w in writes] == ["hi", "second"]
    other = await rt.call("write_note", note("b.txt"))
    assert isinstance(other, Interrupted)


async def test_a_host_that_could_not_ask_denies_in_the_name_of_what_asked(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted) and r.approval is not None
    assert (r.approval.source, r.approval.allow_rules) == ("mode", ("write_note(a.txt)",))
    done = await rt.resume(r, Approval.deny("nobody to ask", source=r.approval.source))
    assert done.denial is not None and done.denial.source == "mode"
    asked = Runtime(tools, root=ws, ask=["write_note"])
    r = await asked.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted) and r.approval is not None
    assert r.approval.source == "rule"
    assert writes == []


async def test_allow_always_adds_every_rule_the_call_needed(ws: Path) -> None:
    from handrail.builtin import RunShell

    rt = Runtime([RunShell(sandbox=False)], root=ws)
    line = "touch one.txt && mkdir -p two"
    r = await rt.call("run_shell", {"command": line})
    assert isinstance(r, Interrupted)
    assert (await rt.resume(r, Approval.allow_always())).ok
    assert rt.session.allow_rules == ["run_shell(touch:*)", "run_shell(mkdir:*)"]
    again = await rt.call("run_shell", {"command": "touch three.txt && mkdir -p four"})
    assert not isinstance(again, Interrupted) and again.ok
    assert (ws / "three.txt").exists() and (ws / "four").is_dir()


async def test_allow_always_with_an_explicit_rule(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    assert (await rt.resume(r, Approval.allow_always("write_note"))).ok
    assert (await rt.call("write_note", note("b.txt"))).ok
    assert (await rt.call("save_note", note("c.txt"))).ok
    assert len(writes) == 3


async def test_session_rules_stay_in_their_session(ws: Path, tools: list[Tool]) -> None:
    from handrail import Session

    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    await rt.resume(r, Approval.allow_always())
    other = await rt.call("write_note", note("a.txt"), session=Session())
    assert isinstance(other, Interrupted)


async def test_allow_always_does_not_lift_a_deny_rule(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, deny=["write_note(secret/**)"])
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    await rt.resume(r, Approval.allow_always("write_note"))
    denied = await rt.call("write_note", note("secret/x"))
    assert denied.error is ErrorCode.PERMISSION_DENIED
    assert len(writes) == 1


async def test_edit_runs_with_the_edited_arguments(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt", "draft"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.edit({"path": "b.txt", "text": "final"}))
    assert done.ok
    assert [(w.path, w.text) for w in writes] == [("b.txt", "final")]
    assert done.content.startswith("wrote b.txt")
    assert "edited" in done.content


async def test_edit_accepts_a_json_string(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.edit('{"path": "c.txt"}'))
    assert done.ok
    assert [w.path for w in writes] == ["c.txt"]


async def test_invalid_edited_arguments_are_invalid_args(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.edit({"path": 5, "txt": "x"}))
    assert done.error is ErrorCode.INVALID_ARGS
    assert {i.path for i in done.issues} >= {"/path", "/txt"}
    assert "edited" in done.content
    assert writes == []


async def test_edited_arguments_are_checked_against_the_roots(
    ws: Path, tmp_path: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.edit(note(str(tmp_path / "escape.txt"))))
    assert done.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_edited_arguments_are_checked_against_deny_rules(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, deny=["write_note(*.key)"])
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)
    done = await rt.resume(r, Approval.edit(note("id.key")))
    assert done.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_inline_approver_answers_without_interrupting(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> Approval:
        asked.append(req)
        return Approval.allow_once()

    rt = Runtime(tools, root=ws, approver=approver)
    r = await rt.call("write_note", note("a.txt"))
    assert not isinstance(r, Interrupted)
    assert (r.ok, r.content) == (True, "wrote a.txt")
    assert [q.tool_name for q in asked] == ["write_note"]
    assert len(writes) == 1


async def test_inline_approver_deny(ws: Path, tools: list[Tool], writes: list[NoteArgs]) -> None:
    async def approver(req: ApprovalRequest) -> Approval:
        return Approval.deny("not today")

    rt = Runtime(tools, root=ws, approver=approver)
    r = await rt.call("write_note", note("a.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "not today" in r.content
    assert writes == []


async def test_inline_approver_is_not_asked_for_allowed_calls(ws: Path, tools: list[Tool]) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> Approval:
        asked.append(req)
        return Approval.allow_once()

    rt = Runtime(tools, root=ws, approver=approver, allow=["write_note"])
    assert (await rt.call("write_note", note("a.txt"))).ok
    assert (await rt.call("read_note", {"path": "a.txt"})).ok
    assert asked == []


async def test_inline_approver_allow_always_is_remembered(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    asked: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> Approval:
        asked.append(req)
        return Approval.allow_always()

    rt = Runtime(tools, root=ws, approver=approver)
    assert (await rt.call("write_note", note("a.txt"))).ok
    assert (await rt.call("write_note", note("a.txt", "again"))).ok
    assert len(asked) == 1
    assert [w.text for w in writes] == ["hi", "again"]


async def test_inline_approver_edit(ws: Path, tools: list[Tool], writes: list[NoteArgs]) -> None:
    async def approver(req: ApprovalRequest) -> Approval:
        return Approval.edit(note("reviewed.txt", "approved text"))

    rt = Runtime(tools, root=ws, approver=approver)
    r = await rt.call("write_note", note("a.txt"))
    assert r.ok
    assert [(w.path, w.text) for w in writes] == [("reviewed.txt", "approved text")]
    assert "edited" in r.content


async def test_approver_that_raises_denies_the_call(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    async def approver(req: ApprovalRequest) -> Approval:
        raise RuntimeError("terminal went away")

    rt = Runtime(tools, root=ws, approver=approver)
    r = await rt.call("write_note", note("a.txt"))
    assert not r.ok
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "terminal went away" in r.content
    assert writes == []


# -- rules, roots and modes ----------------------------------------------------------------


async def test_deny_rule(ws: Path, tools: list[Tool], writes: list[NoteArgs]) -> None:
    rt = Runtime(tools, root=ws, deny=["write_note(secret/**)"], mode="bypass")
    r = await rt.call("write_note", note("secret/plan.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None
    assert (r.denial.rule, r.denial.source) == ("write_note(secret/**)", "rule")
    assert "write_note(secret/**)" in r.content
    assert writes == []
    assert (await rt.call("write_note", note("public/plan.txt"))).ok


async def test_deny_rule_by_alias_applies_to_the_canonical_name(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, deny=["save_note"], mode="bypass")
    r = await rt.call("write_note", note("a.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []


async def test_allow_rule_runs_without_asking(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, allow=["write_note(notes/**)"])
    assert (await rt.call("save_note", note("notes/a.txt"))).ok
    assert isinstance(await rt.call("write_note", note("other/a.txt")), Interrupted)
    assert len(writes) == 1


async def test_write_outside_the_root_never_runs(
    ws: Path, tmp_path: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="bypass", allow=["write_note"])
    for path in ("../outside.txt", str(tmp_path / "outside.txt"), "@../x.txt"):
        r = await rt.call("write_note", note(path))
        assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS, path
        assert r.denial is not None and r.denial.source == "roots"
        assert str(ws) in r.content
    assert writes == []


async def test_sibling_directory_with_the_root_as_prefix_is_outside(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    evil = ws.parent / (ws.name + "-evil")
    evil.mkdir()
    rt = Runtime(tools, root=ws, mode="bypass")
    r = await rt.call("write_note", note(str(evil / "a.txt")))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_symlink_out_of_the_root_is_outside(
    ws: Path, tmp_path: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ws / "link")
    rt = Runtime(tools, root=ws, mode="bypass")
    r = await rt.call("write_note", note("link/new.txt"))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_dotdot_after_a_symlink_out_of_the_root_is_outside(
    ws: Path, tmp_path: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    # `link/../x` is opened by the OS as <link target>/../x, which is outside the root.
    (tmp_path / "outside" / "deep").mkdir(parents=True)
    os.symlink(tmp_path / "outside" / "deep", ws / "link")
    rt = Runtime(tools, root=ws, mode="bypass")
    r = await rt.call("write_note", note("link/../escape.txt"))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []


async def test_git_folder_is_read_only_even_in_bypass(
    ws: Path, tools: list[Tool], writes: list[NoteArgs], reads: list[str]
) -> None:
    rt = Runtime(tools, root=ws, mode="bypass")
    r = await rt.call("write_note", note(".git/config"))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS
    assert writes == []
    assert (await rt.call("read_note", {"path": ".git/config"})).ok


async def test_read_outside_read_roots(
    ws: Path, tmp_path: Path, tools: list[Tool], reads: list[str]
) -> None:
    rt = Runtime(tools, root=ws)
    r = await rt.call("read_note", {"path": str(tmp_path / "secret.txt")})
    assert r.error is ErrorCode.OUTSIDE_READ_ROOTS
    assert reads == []


async def test_extra_read_roots(ws: Path, tmp_path: Path, tools: list[Tool]) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    rt = Runtime(tools, root=ws, read_roots=[ws, lib], mode="bypass")
    assert (await rt.call("read_note", {"path": str(lib / "a.py")})).ok
    r = await rt.call("write_note", note(str(lib / "a.py")))
    assert r.error is ErrorCode.OUTSIDE_WRITE_ROOTS


async def test_plan_mode_denies_a_writing_tool(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="plan")
    r = await rt.call("write_note", note("a.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "plan mode" in r.content
    assert r.denial is not None and r.denial.source == "mode"
    assert writes == []
    assert (await rt.call("read_note", {"path": "a.txt"})).ok


async def test_plan_mode_allows_writing_the_plan(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="plan")
    r = await rt.call("write_note", note(".handrail/plans/plan.md"))
    assert r.ok
    assert len(writes) == 1


async def test_plan_mode_denies_a_function_tool_that_declares_nothing(ws: Path) -> None:
    ran: list[int] = []

    @tool
    def mutate(n: int) -> str:
        """Change something."""
        ran.append(n)
        return "changed"

    rt = Runtime([mutate], root=ws, mode=PermissionMode.PLAN)
    r = await rt.call("mutate", {"n": 1})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "plan mode" in r.content
    assert ran == []


async def test_plan_mode_denies_a_changing_tool_that_only_declares_reads(ws: Path) -> None:
    ran: list[str] = []

    class RunScript(Tool):
        name = "run_script"
        description = "Run a script file."
        kind = ToolKind.EXECUTE
        args_model = PathArgs

        def permission_requests(
            self, args: PathArgs, ctx: ToolContext
        ) -> Sequence[PermissionRequest]:
            return [ReadPath(path=args.path)]

        def run(self, args: PathArgs, ctx: ToolContext) -> str:
            ran.append(args.path)
            return "deployed"

    rt = Runtime([RunScript()], root=ws, mode="plan")
    r = await rt.call("run_script", {"path": "deploy.sh"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert "plan mode" in r.content
    assert ran == []


async def test_function_tool_asks_in_default_mode(ws: Path) -> None:
    ran: list[int] = []

    @tool
    def mutate(n: int) -> str:
        """Change something."""
        ran.append(n)
        return "changed"

    rt = Runtime([mutate], root=ws)
    r = await rt.call("mutate", {"n": 1})
    assert isinstance(r, Interrupted)
    assert r.approval is not None and r.approval.suggested_rules == ("mutate",)
    assert ran == []
    assert (await rt.resume(r, Approval.allow_once())).content == "changed"
    assert ran == [1]


async def test_dont_ask_denies_instead_of_asking(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="dont_ask")
    r = await rt.call("write_note", note("a.txt"))
    assert not isinstance(r, Interrupted)
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert writes == []
    assert (await rt.call("read_note", {"path": "a.txt"})).ok


async def test_bypass_runs(
    ws: Path, tools: list[Tool], writes: list[NoteArgs], runs: list[str]
) -> None:
    rt = Runtime(tools, root=ws, mode="bypass")
    assert (await rt.call("write_note", note("a.txt"))).ok
    assert (await rt.call("sh", {"command": "rm -rf build"})).ok
    assert len(writes) == 1
    assert runs == ["rm -rf build"]


async def test_accept_edits_runs_edits_but_asks_for_shell(
    ws: Path, tools: list[Tool], writes: list[NoteArgs], runs: list[str]
) -> None:
    rt = Runtime(tools, root=ws, mode="accept_edits")
    assert (await rt.call("write_note", note("a.txt"))).ok
    assert isinstance(await rt.call("sh", {"command": "make"}), Interrupted)
    assert len(writes) == 1
    assert runs == []


async def test_compound_command_needs_every_part_allowed(
    ws: Path, tools: list[Tool], runs: list[str]
) -> None:
    rt = Runtime(tools, root=ws, allow=["sh(npm test:*)"])
    assert (await rt.call("sh", {"command": "npm test --watch"})).ok
    r = await rt.call("sh", {"command": "npm test && rm -rf x"})
    assert isinstance(r, Interrupted)
    assert runs == ["npm test --watch"]
    rt = Runtime(tools, root=ws, allow=["sh(npm test:*)"], deny=["sh(rm:*)"])
    r = await rt.call("sh", {"command": "npm test && rm -rf x"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert runs == ["npm test --watch"]


async def test_mode_can_change_during_a_session(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="plan")
    assert (await rt.call("write_note", note("a.txt"))).error is ErrorCode.PERMISSION_DENIED
    rt.session.mode = PermissionMode.ACCEPT_EDITS
    assert (await rt.call("write_note", note("a.txt"))).ok
    assert len(writes) == 1


# -- batches -------------------------------------------------------------------------------


async def test_batch_resume_keeps_finished_results(
    ws: Path, tools: list[Tool], writes: list[NoteArgs], reads: list[str]
) -> None:
    rt = Runtime(tools, root=ws)
    batch = await rt.call_many(
        [
            ToolCall(id="r1", name="read_note", arguments='{"path": "a"}'),
            ToolCall(id="w1", name="write_note", arguments='{"path": "b"}'),
            ToolCall(id="r2", name="read_note", arguments='{"path": "c"}'),
        ]
    )
    assert batch[0].ok
    assert [r.call_id for r in batch.interrupted] == ["w1"]
    assert isinstance(batch[2], Interrupted)
    assert not batch.complete
    assert reads == ["a"]
    resumed = await rt.resume(batch, {"w1": Approval.allow_once()})
    assert [r.content for r in resumed] == ["read a", "wrote b", "read c"]
    assert resumed.complete
    assert reads == ["a", "c"]
    assert [w.path for w in writes] == ["b"]


# -- a policy passed in as it is ---------------------------------------------------------


async def test_a_deny_rule_of_the_passed_policy_refuses(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    rt = Runtime(tools, root=ws, mode="bypass", policy=Policy(deny=["write_note"]))
    r = await rt.call("write_note", note("a.txt"))
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert r.denial is not None and (r.denial.source, r.denial.rule) == ("rule", "write_note")
    assert writes == []


async def test_the_passed_policy_is_used_as_it_is(ws: Path, tools: list[Tool]) -> None:
    narrowed = Policy(deny=["sh"])
    rt = Runtime(tools, root=ws, policy=narrowed)
    assert rt.policy is narrowed


async def test_allow_beside_a_passed_policy_does_not_widen_it(
    ws: Path, tools: list[Tool], writes: list[NoteArgs]
) -> None:
    settings = Settings(allow=("write_note",))
    rt = Runtime(tools, root=ws, policy=Policy(), allow=["write_note"], settings=settings)
    r = await rt.call("write_note", note("a.txt"))
    assert isinstance(r, Interrupted)  # asks, as Policy() alone does
    assert writes == []
    # The same arguments without `policy=` allow the call: the rules were what made it run.
    plain = Runtime(tools, root=ws, allow=["write_note"], settings=settings)
    assert (await plain.call("write_note", note("a.txt"))).ok


async def test_deny_rules_from_settings_are_not_merged_into_a_passed_policy(
    ws: Path, tools: list[Tool], reads: list[str]
) -> None:
    settings = Settings(deny=("read_note",), default_mode=PermissionMode.PLAN)
    rt = Runtime(tools, root=ws, policy=Policy(), deny=["read_note"], settings=settings)
    assert rt.session.mode is PermissionMode.PLAN  # the rest of the settings still apply
    assert (await rt.call("read_note", {"path": "a.txt"})).ok
    assert reads == ["a.txt"]


class Lockdown(Policy):
    """Names every tool (so no call skips `decide`) and denies them all."""

    def __init__(self) -> None:
        super().__init__()
        self.decided: list[str] = []

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        return True

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
        hook: str | None = None,
        hook_reason: str = "",
    ) -> Decision:
        self.decided.append(names[0])
        return Decision(behavior="deny", reason="locked down", source="rule")


async def test_a_policy_subclass_decides_read_only_calls_no_rule_names(
    ws: Path, tools: list[Tool], reads: list[str]
) -> None:
    lockdown = Lockdown()
    rt = Runtime(tools, root=ws, policy=lockdown)
    for _ in range(2):  # the second call comes after the tool's plan is cached
        r = await rt.call("read_note", {"path": "a.txt"})
        assert r.error is ErrorCode.PERMISSION_DENIED
        assert "locked down" in r.content
    assert lockdown.decided == ["read_note", "read_note"]
    assert reads == []


async def test_a_policy_set_later_is_consulted_for_tools_already_called(
    ws: Path, tools: list[Tool], reads: list[str]
) -> None:
    rt = Runtime(tools, root=ws)
    assert (await rt.call("read_note", {"path": "a.txt"})).ok  # no rule: decide() skipped
    rt.policy = Lockdown()
    r = await rt.call("read_note", {"path": "a.txt"})
    assert r.error is ErrorCode.PERMISSION_DENIED
    assert reads == ["a.txt"]
