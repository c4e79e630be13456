"""Synthetic displays for the renderer: every status with every body kind, groups, questions.

Built by hand (not by the tools) so that the renderer's own cases stay fixed while the tools'
displays evolve; `test_render_builtin.py` covers what the built-in tools really produce.
"""

from __future__ import annotations

from dataclasses import replace

from handrail import ApprovalRequest, Confirmation, Question, ToolCall
from handrail.agent._terminal._question import QuestionBlock, choices, key_line
from handrail.agent._terminal._render import (
    Glyphs,
    call_block,
    call_line,
    group_block,
    group_line,
)
from handrail.display import (
    CallProgress,
    CallStatus,
    DiffBody,
    Display,
    DisplayGroup,
    TableBody,
    TextBody,
)

from ._golden import Build, Case

DIFF = """\
--- a/src/app.py
+++ b/src/app.py
@@ -10,5 +10,6 @@ def load(path):
     with open(path) as f:
-        data = f.read()
+        data = f.read().decode("utf-8", errors="replace")  # a long line, cut at 40 columns
+        data = data.strip()
     return parse(data)
 
 
"""

SQL_DIFF = """\
--- a/schema.sql
+++ b/schema.sql
@@ -1,3 +1,3 @@
--- the users
+-- the users, by id
 CREATE TABLE users (id INTEGER);
-DROP TABLE old;
\\ No newline at end of file
"""


def numbered_diff(pairs: int) -> str:
    """A one-hunk diff replacing `pairs` lines (2 * pairs + 1 lines shown)."""
    head = f"--- a/big.py\n+++ b/big.py\n@@ -1,{pairs} +1,{pairs} @@\n"
    return head + "".join(f"-old line {i}\n+new line {i}\n" for i in range(1, pairs + 1))


OUTPUT = "\n".join(
    [f"tests/test_{i:02d}.py::test_case PASSED" for i in range(1, 29)]
    + ["FAILED tests/test_29.py::test_render - AssertionError: 40 != 80", "1 failed, 28 passed"]
)

RULE_FILE = ".handrail/settings.local.json"


def approval(
    d: Display,
    g: Glyphs,
    *,
    reason: str,
    agent: str = "main",
    rules: tuple[str, ...] = ("run_shell(pytest:*)",),
    save: bool = True,
    selected: int | None = None,
    height: int | None = None,
) -> QuestionBlock:
    """The question about call `d` as the terminal asks it, key line included."""
    tool = d.tool_name or "tool"
    request = ApprovalRequest(
        call=ToolCall(id="call_1", name=tool),
        tool_name=tool,
        reason=reason,
        allow_rules=rules,
        agent=agent,
    )
    return asked(request, g, display=d, save=save, selected=selected, height=height)


def asked(
    question: Question,
    g: Glyphs,
    *,
    display: Display | None = None,
    save: bool = True,
    selected: int | None = None,
    height: int | None = None,
) -> QuestionBlock:
    """Any question as the terminal asks it (choices from `_question`, the key line under them)."""
    options = choices(question, rule_file=RULE_FILE if save else None)
    return QuestionBlock(
        question=question,
        options=options,
        g=g,
        display=display,
        selected=selected,
        footer=key_line(options, g),
        height=height,
        more="v shows all",
    )


# One display per body kind; the statuses are applied below.
KINDS: dict[str, Display] = {
    "read": Display(
        title="Read src/handrail/agent/_terminal/_render.py",
        subtitle="lines 1-200 of 812",
        group=DisplayGroup.READ,
    ),
    "edit": Display(
        title="Edit src/app.py",
        subtitle="+2 -1",
        group=DisplayGroup.EDIT,
        body=DiffBody.of(DIFF),
    ),
    "shell": Display(
        title="Run pytest -q tests/agent --maxfail=1",
        subtitle="exit 0",
        group=DisplayGroup.SHELL,
        body=TextBody.of(OUTPUT),
    ),
    "search": Display(
        title='Search "def render" in src',
        subtitle="5 matches in 3 files",
        group=DisplayGroup.SEARCH,
        body=TableBody(
            columns=("file", "matches"),
            rows=(
                ("src/handrail/agent/_terminal/_render.py", "3"),
                ("src/handrail/_cli/_call.py", "1"),
                ("tests/agent/terminal/test_render.py", "1"),
            ),
            omitted=2,
        ),
    ),
}

SUBTITLES: dict[CallStatus, str] = {
    CallStatus.FAILED: "OSError: [Errno 28] No space left on device",
    CallStatus.DENIED: "denied by the rule in .handrail/settings.json",
    CallStatus.CANCELLED: "the user interrupted this call",
}

RUNNING = CallProgress(
    elapsed=3.2,
    bytes=12_345,
    lines=(
        "tests/test_01.py::test_case PASSED",
        "tests/test_02.py::test_case PASSED",
        "tests/test_03.py::test_case PASSED",
        "tests/test_04.py::test_case PASSED",
        "tests/test_05.py::test_case PASSED",
        "downloading  10%\r downloading  50%\r downloading 100%",
    ),
)


def in_state(d: Display, status: CallStatus) -> Display:
    """`d` as it looks in `status`."""
    if status is CallStatus.RUNNING:
        return replace(d, status=status, progress=CallProgress(elapsed=0.4), subtitle="")
    if status is CallStatus.WAITING:
        return replace(d, status=status, subtitle="")
    duration = 0.0 if status is CallStatus.DENIED else 1.234
    return replace(d, status=status, subtitle=SUBTITLES.get(status, d.subtitle), duration=duration)


def _call(d: Display, *, expanded: bool = False, hint: str = "") -> Build:
    return lambda g: call_block(d, g, expanded=expanded, hint=hint)


def synthetic_cases() -> list[Case]:
    """Every case the renderer's golden files hold, in order."""
    cases: list[Case] = []

    def add(case: str, build: Build) -> None:
        cases.append((case, build))

    for kind, base in KINDS.items():
        for status in CallStatus:
            add(f"{kind}/{status.value}", _call(in_state(base, status)))

    # Running: a command's last output lines, a sub-agent's activity, spinner frames.
    shell = KINDS["shell"]
    add("shell/running-output", _call(replace(shell, body=None, progress=RUNNING, subtitle="")))
    agent = Display(
        title="Agent explore: find where the settings files are loaded",
        group=DisplayGroup.AGENT,
        progress=CallProgress(elapsed=12.5, message="Read src/handrail/permissions/_settings.py"),
    )
    add("agent/running", _call(agent))
    add(
        "agent/done",
        _call(
            replace(agent, status=CallStatus.DONE, progress=None, subtitle="4 calls", duration=48.2)
        ),
    )

    # Bodies at their limits.
    long_diff = Display(
        title="Edit big.py", group=DisplayGroup.EDIT, status=CallStatus.DONE, duration=0.02
    )
    add("diff/capped", _call(replace(long_diff, body=DiffBody.of(numbered_diff(25)))))
    add("diff/one-over-is-shown", _call(replace(long_diff, body=DiffBody.of(numbered_diff(10)))))
    add(
        "diff/expanded",
        _call(replace(long_diff, body=DiffBody.of(numbered_diff(12))), expanded=True),
    )
    add("diff/sql-and-no-newline", _call(replace(long_diff, body=DiffBody.of(SQL_DIFF))))
    add(
        "text/expanded-wraps",
        _call(replace(in_state(shell, CallStatus.DONE), body=TextBody.of(OUTPUT)), expanded=True),
    )
    add(
        "table/no-headings",
        _call(
            Display(
                title="Todo 3 tasks",
                group=DisplayGroup.OTHER,
                status=CallStatus.DONE,
                body=TableBody(
                    columns=("", ""),
                    rows=(("[x]", "read the brief"), ("[ ]", "write the renderer"), ("[ ]",)),
                ),
            )
        ),
    )
    add(
        "hint",
        _call(replace(long_diff, body=DiffBody.of(numbered_diff(25))), hint="ctrl+o to expand"),
    )

    # Untrusted text: escape sequences, a bidi override, wide and accented characters.
    hostile = Display(
        title="Read \x1b]0;pwned\x07notes\x1b[2J\u202etxt.exe\u202c.md",
        subtitle="café 中文字符 naïve — “quoted” → done…",
        status=CallStatus.DONE,
        group=DisplayGroup.READ,
        body=TextBody.of(
            "\x1b[31mred\x1b[0m\tand\ttabs\nbell\x07 and backspace\x08\nwide: 中文字符中文字符中文字符中文字符中文字符中文字符"
        ),
        duration=0.003,
    )
    add("hostile-text", _call(hostile))

    # Durations as they read.
    for seconds in (0.0004, 0.012, 1.234, 59.96, 125.3, 3725.0):
        d = replace(KINDS["read"], status=CallStatus.DONE, duration=seconds)
        add(f"duration/{seconds}", lambda g, d=d: call_line(d, g))

    # Groups of reads, searches and listings.
    reads = [
        replace(KINDS["read"], status=CallStatus.DONE, duration=0.012, body=None),
        replace(KINDS["read"], title="Read README.md", status=CallStatus.DONE, duration=0.004),
        replace(KINDS["search"], status=CallStatus.DONE, duration=0.021, body=None),
        Display(
            title="List src/handrail",
            group=DisplayGroup.LIST,
            status=CallStatus.DONE,
            duration=0.002,
        ),
    ]
    running = [
        *reads[:2],
        replace(
            reads[2], status=CallStatus.RUNNING, subtitle="", progress=CallProgress(elapsed=1.5)
        ),
    ]
    failed = [
        *reads[:2],
        replace(
            KINDS["read"],
            title="Read src/missing.py",
            status=CallStatus.FAILED,
            subtitle="no such file",
            duration=0.001,
        ),
        replace(
            KINDS["read"],
            title="Read ~/.ssh/id_rsa",
            status=CallStatus.DENIED,
            subtitle="outside the read roots",
        ),
    ]
    add("group/done", lambda g: group_line(reads, g))
    add("group/running", lambda g: group_line(running, g, frame=3))
    add("group/failed", lambda g: group_line(failed, g))
    add("group/hint", lambda g: group_line(reads, g, hint="ctrl+o to expand"))
    add("group-block/collapsed-names-failures", lambda g: group_block(failed, g))
    add("group-block/collapsed-all-done", lambda g: group_block(reads, g))
    add("group-block/expanded", lambda g: group_block(reads, g, expanded=True))
    add("group-block/running", lambda g: group_block(running, g, frame=1))

    # Approvals.
    edit = replace(in_state(KINDS["edit"], CallStatus.WAITING), subtitle="+2 -1")
    command = Display(
        title="Run pytest -q tests/agent --maxfail=1 -k 'render and not slow'",
        status=CallStatus.WAITING,
        group=DisplayGroup.SHELL,
        body=TextBody.of("pytest -q tests/agent --maxfail=1 -k 'render and not slow'"),
    )
    reason = "edit_file changes files; default mode asks before every edit"
    rules = ("edit_file(src/app.py)",)
    add("approval/main-edit", lambda g: approval(edit, g, reason=reason, rules=rules, save=False))
    add(
        "approval/sub-agent-command",
        lambda g: approval(
            command, g, reason="run_shell can change things", agent="explore#1", selected=1
        ),
    )
    long_edit = replace(
        long_diff, status=CallStatus.WAITING, body=DiffBody.of(numbered_diff(25)), duration=0.0
    )
    # 15 rows: the region's 13, as `chat` fits it.
    big = ("edit_file(big.py)",)
    add(
        "approval/long-diff-fitted",
        lambda g: approval(long_edit, g, reason=reason, rules=big, height=13),
    )
    add("approval/long-diff-whole", lambda g: approval(long_edit, g, reason="", rules=big))
    add(
        "approval/other-tool",
        lambda g: approval(
            Display(title="deploy api", status=CallStatus.WAITING, tool_name="deploy"),
            g,
            reason="deploy is not read-only",
            agent="",
            rules=("deploy",),
            save=False,
            selected=0,
        ),
    )
    domain = Confirmation(
        reason="Allow fetching pages from example.com?",
        topic="domain",
        subject="example.com",
        tool_name="web_fetch",
    )
    add("confirmation/yes-no", lambda g: asked(domain, g))
    add(
        "confirmation/always",
        lambda g: asked(
            replace(domain, always="allow example.com for this session", agent="explore#1"), g
        ),
    )
    add("question/plain", lambda g: asked(Question(reason="Carry on with the migration?"), g))
    return cases
