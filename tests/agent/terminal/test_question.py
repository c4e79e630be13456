"""The one terminal question of `handrail call`, `run` and `chat`: words, keys and answers.

The text a person reads is snapshot-tested (80 columns, no colour): a change to the choices'
words shows up in review as a diff. What each key answers, and how `call`/`run` read a line,
are checked directly.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest
from inline_snapshot import snapshot
from rich.console import Console

from handrail import Approval, ApprovalRequest, Confirmation, Question, ToolCall
from handrail.agent._terminal._question import (
    SAID_NO,
    Choice,
    QuestionBlock,
    choices,
    key_line,
    line_approver,
    pick,
    settle,
)
from handrail.agent._terminal._render import UNICODE
from handrail.display import CallStatus, DiffBody, Display, DisplayGroup

RULE_FILE = ".handrail/settings.local.json"

EDIT = ApprovalRequest(
    call=ToolCall(id="call_1", name="edit_file"),
    tool_name="edit_file",
    reason="`edit_file` can change things",
    allow_rules=("edit_file(calc.py)",),
    agent="main",
)
EDIT_SHOWN = Display(
    title="Edit calc.py",
    subtitle="+1 -1",
    status=CallStatus.WAITING,
    group=DisplayGroup.EDIT,
    body=DiffBody.of("@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"),
    tool_name="edit_file",
    call_id="call_1",
)
DOMAIN = Confirmation(
    reason="Allow fetching pages from example.com?",
    topic="domain",
    subject="example.com",
    tool_name="web_fetch",
    call_id="call_2",
)


def shown(question: Question, *, display: Display | None = None, save: bool = False) -> str:
    """The question as an 80-column terminal without colour shows it, key line included."""
    options = choices(question, rule_file=RULE_FILE if save else None)
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None, force_terminal=True, _environ={})
    console.print(
        QuestionBlock(
            question=question,
            options=options,
            g=UNICODE,
            display=display,
            footer=key_line(options, UNICODE),
        )
    )
    return out.getvalue()


# -- what is shown ------------------------------------------------------------------------------


def test_a_calls_approval_with_saving_in_the_project() -> None:
    assert shown(EDIT, display=EDIT_SHOWN, save=True) == snapshot("""\
? Edit calc.py  +1 -1
  └ @@ -1,2 +1,2 @@
     def add(a, b):
    -    return a - b
    +    return a + b
Reason: edit_file can change things
Do you want to make this edit?
  1. [y] Yes
  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session
  3. [p] Yes, and always allow edit_file(calc.py) in this project
     (.handrail/settings.local.json)
  4. [n] No, and tell the agent what to do instead
❯ choose y/s/p/n: \n\
""")


def test_a_calls_approval_without_saving() -> None:
    assert shown(EDIT, display=EDIT_SHOWN) == snapshot("""\
? Edit calc.py  +1 -1
  └ @@ -1,2 +1,2 @@
     def add(a, b):
    -    return a - b
    +    return a + b
Reason: edit_file can change things
Do you want to make this edit?
  1. [y] Yes
  2. [s] Yes, and don't ask again for edit_file(calc.py) in this session
  3. [n] No, and tell the agent what to do instead
❯ choose y/s/n: \n\
""")


def test_a_sub_agents_approval_names_it() -> None:
    asked = ApprovalRequest(
        call=ToolCall(id="c", name="run_shell"),
        tool_name="run_shell",
        reason="run_shell can change things",
        allow_rules=("run_shell(npm test:*)", "run_shell(npm run build:*)"),
        agent="explore#1",
    )
    command = Display(
        title="Run npm test && npm run build",
        status=CallStatus.WAITING,
        group=DisplayGroup.SHELL,
        tool_name="run_shell",
    )
    assert shown(asked, display=command, save=True) == snapshot("""\
? Run npm test && npm run build
Reason: run_shell can change things
explore#1 wants to run this command. Allow it?
  1. [y] Yes
  2. [s] Yes, and don't ask again for run_shell(npm test:*) + run_shell(npm run
     build:*) in this session
  3. [p] Yes, and always allow run_shell(npm test:*) + run_shell(npm run
     build:*) in this project (.handrail/settings.local.json)
  4. [n] No, and tell the agent what to do instead
❯ choose y/s/p/n: \n\
""")


def test_a_confirmation_without_always() -> None:
    assert shown(DOMAIN) == snapshot("""\
? web_fetch asks: Allow fetching pages from example.com?
  1. [y] Yes
  2. [n] No
❯ choose y/n: \n\
""")


def test_a_confirmation_with_always() -> None:
    always = Confirmation(
        reason=DOMAIN.reason,
        topic="domain",
        subject="example.com",
        always="allow example.com for this session",
        tool_name="web_fetch",
        agent="explore#1",
    )
    assert shown(always) == snapshot("""\
? explore#1 • web_fetch asks: Allow fetching pages from example.com?
  1. [y] Yes
  2. [a] Yes, and allow example.com for this session
  3. [n] No
❯ choose y/a/n: \n\
""")


def test_any_other_question_is_yes_or_no() -> None:
    assert shown(Question(reason="Carry on with the migration?")) == snapshot("""\
? Carry on with the migration?
  1. [y] Yes
  2. [n] No
❯ choose y/n: \n\
""")


# -- keys and answers ---------------------------------------------------------------------------


def test_keys_numbers_and_words_pick_a_choice() -> None:
    options = choices(EDIT, rule_file=RULE_FILE)
    assert [c.key for c in options] == ["y", "s", "p", "n"]
    typed = ("y", "S", " p ", "n", "yes", "no", "3", "4")
    picked = [pick(options, t) for t in typed]
    assert [c.key if c else None for c in picked] == ["y", "s", "p", "n", "y", "n", "p", "n"]
    for typed in ("", "5", "0", "always", "a", "v", "yy"):
        assert pick(options, typed) is None, typed
    # Without a place to save rules there is no `p`; a confirmation without `always` no `a`.
    assert [c.key for c in choices(EDIT)] == ["y", "s", "n"]
    assert [c.key for c in choices(DOMAIN)] == ["y", "n"]


def test_what_each_choice_answers_a_call() -> None:
    saved: list[str] = []

    def save(rule: str) -> Path:
        saved.append(rule)
        return Path("/ws/.handrail/settings.local.json")

    options = {c.key: c for c in choices(EDIT, rule_file=RULE_FILE)}
    yes = settle(EDIT, options["y"], save_rule=save)
    assert (yes.approval, yes.said) == (Approval.allow_once(), "allowed once")
    session = settle(EDIT, options["s"], save_rule=save)
    assert session.approval == Approval.allow_always()
    assert session.said == "allowed edit_file(calc.py) for this session"
    assert saved == []
    project = settle(EDIT, options["p"], save_rule=save)
    assert project.approval == Approval.allow_always()
    assert project.said == "allowed edit_file(calc.py); saved in /ws/.handrail/settings.local.json"
    assert saved == ["edit_file(calc.py)"]
    no = settle(EDIT, options["n"])
    assert no.approval.kind == "deny" and no.approval.source == "user"
    assert no.approval.reason == snapshot(
        "The user declined this call. Do not retry it; ask what they want instead, or take another approach."
    )
    said = settle(EDIT, options["n"], reason="use pytest")
    assert said.said == "declined: use pytest"
    assert said.approval.reason == "The user declined this call and said: use pytest"


def test_a_rule_that_cannot_be_saved_allows_the_call_once() -> None:
    def broken(rule: str) -> Path:
        raise OSError("read-only file system")

    options = {c.key: c for c in choices(EDIT, rule_file=RULE_FILE)}
    answer = settle(EDIT, options["p"], save_rule=broken)
    assert answer.approval == Approval.allow_once()
    assert answer.warning == (
        "could not save edit_file(calc.py): read-only file system; allowing this call once"
    )


def test_what_each_choice_answers_a_confirmation() -> None:
    always = Confirmation(reason="?", topic="domain", always="allow example.com for this session")
    options = {c.key: c for c in choices(always)}
    assert settle(always, options["y"]).approval == Approval.allow_once()
    remembered = settle(always, options["a"])
    assert remembered.approval == Approval.allow_always()
    assert remembered.said == "yes, and allow example.com for this session"
    no = settle(always, options["n"])
    assert no.approval == Approval.deny(SAID_NO)
    assert no.said == "no"


# -- asking on a line (call, run) ---------------------------------------------------------------


async def ask(
    question: Question, *typed: str, save: bool = True
) -> tuple[Approval, str, list[str]]:
    """Ask on a line; returns the answer, what was printed, and the rules saved."""
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None, _environ={})
    answers = iter([*(f"{t}\n" for t in typed)])
    saved: list[str] = []

    async def read_line() -> str:
        return next(answers, "")  # then the end of input

    def save_rule(rule: str) -> Path:
        saved.append(rule)
        return Path("/ws") / RULE_FILE

    approve = line_approver(
        console,
        read_line,
        display=lambda call: EDIT_SHOWN,
        save_rule=save_rule if save else None,
        rule_file=RULE_FILE,
    )
    approval = await approve(question)
    return approval, out.getvalue(), saved


async def test_a_line_answers_with_the_same_keys() -> None:
    approval, out, saved = await ask(EDIT, "p")
    assert approval == Approval.allow_always()
    assert saved == ["edit_file(calc.py)"]
    # (Typed on a terminal, the answer's Enter starts the line the answer is said on.)
    said = "  → allowed edit_file(calc.py); saved in /ws/.handrail/settings.local.json\n"
    assert out.endswith(f"❯ choose y/s/p/n: {said}"), out
    assert "+    return a + b" in out  # the display it was given

    approval, out, _ = await ask(EDIT, "2")
    assert approval == Approval.allow_always()
    approval, out, _ = await ask(EDIT, "y", save=False)
    assert "[p]" not in out and "choose y/s/n:" in out


async def test_an_empty_line_or_the_end_of_input_is_no_without_a_reason() -> None:
    for typed in ([""], []):
        approval, out, _ = await ask(EDIT, *typed)
        assert approval.kind == "deny"
        assert "Do not retry it" in (approval.reason or "")
        assert "What should the agent do instead?" not in out
        assert out.endswith("  → declined\n"), out


async def test_no_then_what_to_do_instead() -> None:
    approval, out, _ = await ask(EDIT, "n", "use pytest instead")
    assert approval.reason == "The user declined this call and said: use pytest instead"
    assert "What should the agent do instead? (Enter to skip): " in out
    assert out.endswith("  → declined: use pytest instead\n"), out


async def test_anything_else_asks_again() -> None:
    approval, out, _ = await ask(EDIT, "maybe", "always", "y")
    assert approval == Approval.allow_once()
    assert out.count("Answer y, s, p, n, or 1-4.") == 2
    assert out.count("❯ choose y/s/p/n:") == 3


async def test_a_confirmation_on_a_line() -> None:
    approval, out, _ = await ask(DOMAIN, "n")
    assert approval == Approval.deny(SAID_NO)
    assert "What should the agent do instead?" not in out
    assert out.endswith("❯ choose y/n:   → no\n"), out


async def test_questions_asked_together_are_asked_one_after_the_other() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None, _environ={})
    reading = 0
    most = 0

    async def read_line() -> str:
        nonlocal reading, most
        reading += 1
        most = max(most, reading)
        await asyncio.sleep(0)
        reading -= 1
        return "y\n"

    approve = line_approver(console, read_line)
    first = Confirmation(reason="First?", topic="t")
    second = Confirmation(reason="Second?", topic="t")
    answers = await asyncio.gather(approve(first), approve(second))
    assert answers == [Approval.allow_once(), Approval.allow_once()]
    assert most == 1
    text = out.getvalue()
    assert text.index("First?") < text.index("→ yes") < text.index("Second?")


@pytest.mark.parametrize("key", ["y", "s", "p", "n"])
def test_every_call_choice_says_what_it_does(key: str) -> None:
    options = choices(EDIT, rule_file=RULE_FILE)
    choice = pick(options, key)
    assert isinstance(choice, Choice)
    assert choice.label.startswith("No" if key == "n" else "Yes")
