"""`handrail call`: one tool call through the whole pipeline, as a model would make it.

The arguments are a JSON object (given as is, so malformed JSON gets the same INVALID_ARGS a
model would), `-` for JSON on stdin, or `key=value` pairs whose values are JSON when they parse
and strings otherwise (always strings for the fields the tool's schema types as strings). A
call that needs approval asks on a terminal, with the choices and keys of `handrail chat`
(y, s for the session, p to save the rule in the project, n); without a terminal it is denied
unless `--yes`. Each call is a session of its own unless `--session FILE` carries one from
call to call (`_call_session`). The content goes to stdout (with the diff, when the content
does not already show it); the error code, issues and denial go to stderr. Exit status: 0
when the result is ok, 1 when it is not (or the session file could not be saved), 2 for usage
errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from .._atomic import write_file_atomic
from .._contract import (
    Approval,
    ApprovalRequest,
    Approver,
    Question,
    ToolCall,
    ToolResult,
    part_to_json,
)
from ..display import CallStatus, Display, terminal_text
from ..errors import ConfigurationError
from ..permissions import FolderConfig, is_trusted, read_folder_config, rules_to_allow, trust_folder
from ..permissions._settings import project_settings
from ..permissions._trust import quoted_trust_command
from ._call_session import load_session_file, results_folder, save_session_file
from ._common import (
    CliError,
    CommonOptions,
    consoles,
    json_text,
    load_tool_set,
    make_runtime,
    warn,
)

if TYPE_CHECKING:
    from rich.console import Console

    from ._common import SubParsers

SETTINGS_FILE = Path(".handrail") / "settings.local.json"  # personal, not the shared file


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail call`."""
    parser = sub.add_parser(
        "call",
        help="run one tool call through the whole pipeline, as a model would",
        description="Run one tool call through the whole pipeline (validation, permissions, "
        "sandbox), as a model would make it, and print the result. Exit status: 0 ok, 1 the "
        "call failed, 2 usage error.",
        epilog="examples:\n"
        "  handrail call read_file file_path=README.md limit=20\n"
        "  handrail call --session s.json read_file file_path=app.py\n"
        "  handrail call --session s.json edit_file file_path=app.py old_string=a new_string=b "
        "--yes\n"
        '  handrail call grep_search \'{"pattern": "TODO", "output_mode": "content"}\'\n'
        '  echo \'{"file_path": "notes.txt", "content": "hi"}\' | '
        "handrail call write_file - --yes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("tool", metavar="TOOL", help="the tool name, as a model would write it")
    parser.add_argument(
        "arguments",
        nargs="*",
        metavar="JSON | key=value",
        help="a JSON object, '-' to read it from stdin, or key=value pairs (values are JSON "
        "when they parse: n=3, flag=true, items='[1, 2]'; else strings, and always strings "
        "for string fields)",
    )
    parser.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help="approve the call if it asks (needed when not on a terminal)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the whole result as one JSON object instead",
    )
    parser.add_argument(
        "--session",
        metavar="FILE",
        type=Path,
        help="keep the session in FILE (JSON; created if missing) from one call to the next: "
        "files read, activated tools, session rules, the todo list. A read_file call lets a "
        "later edit_file call with the same FILE go ahead",
    )
    return parser


def _parse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: `x=NaN` stays the string "NaN".
    raise ValueError(name)


def _string_fields(schema: Mapping[str, Any] | None) -> set[str]:
    properties: Any = (schema or {}).get("properties")
    if not isinstance(properties, dict):
        return set()
    fields: set[str] = set()
    for name, prop in cast("dict[str, Any]", properties).items():
        if isinstance(prop, dict) and cast("dict[str, Any]", prop).get("type") == "string":
            fields.add(name)
    return fields


def parse_arguments(
    values: Sequence[str], stdin: TextIO, schema: Mapping[str, Any] | None = None
) -> str | dict[str, Any]:
    """The call's arguments from the command line: raw JSON text, or an object of key=value.

    A value is JSON when it parses (`n=3`, `flag=true`, `items='[1]'`), else a string; a field
    the tool's `schema` types as a string only keeps the text as typed (`content=42`).
    """
    text_fields = _string_fields(schema)
    if not values:
        return "{}"
    if list(values) == ["-"]:
        text = stdin.read()
        if not text.strip():
            raise CliError("'-' reads the arguments from stdin, but stdin was empty")
        return text
    if len(values) == 1 and values[0].lstrip().startswith(("{", "[")):
        return values[0]  # validated by the pipeline, exactly as a model's JSON would be
    out: dict[str, Any] = {}
    for value in values:
        if value == "-":
            raise CliError("'-' (JSON on stdin) cannot be combined with other arguments")
        key, sep, raw = value.partition("=")
        if not sep or not key:
            raise CliError(
                f"argument {value!r} is neither a JSON object nor key=value "
                "(quote a JSON object as one argument: '{\"key\": 1}')"
            )
        if key in out:
            raise CliError(f"argument {key!r} is given twice")
        if key in text_fields:
            out[key] = raw
            continue
        try:
            out[key] = json.loads(raw, parse_constant=_parse_constant)
        except ValueError:
            out[key] = raw
    return out


def _shell_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


def not_a_terminal(request: ApprovalRequest) -> Approval:
    """The answer when nobody can be asked: deny, and say how to allow it next time."""
    flags = " ".join(f"--allow {_shell_quote(r)}" for r in rules_to_allow(request))
    return Approval.deny(
        f"handrail call is not on a terminal, so nobody could approve it ({request.reason}); "
        f"rerun with --yes, or allow it with {flags}",
        source=request.source,
    )


def save_rule(root: Path, rule: str) -> Path:
    """Add an allow rule to `<root>/.handrail/settings.local.json`, keeping the rest of the file.

    The user chose this rule, so it should not be ignored next time for want of trust: when the
    folder was trusted before the write, or held nothing that needs trust, its new files are
    trusted. Otherwise the rule is saved, but the folder stays untrusted (a warning says so).
    """
    try:
        before = read_folder_config(root)
    except ConfigurationError as exc:  # the caller reports a ValueError and allows once
        raise ValueError(str(exc)) from exc
    keep_trust = _trusted_or_harmless(before)
    path = root / SETTINGS_FILE
    settings: dict[str, Any] = {}
    if path.is_file():
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise ValueError(f"{path} does not hold a JSON object")
        settings = cast("dict[str, Any]", loaded)
    perms = settings.setdefault("permissions", {})
    if not isinstance(perms, dict):
        raise ValueError(f"{path}: permissions is not an object")
    allow = cast("dict[str, Any]", perms).setdefault("allow", [])
    if not isinstance(allow, list):
        raise ValueError(f"{path}: permissions.allow is not a list")
    rules = cast("list[Any]", allow)
    if rule not in rules:
        rules.append(rule)
    data = (json.dumps(settings, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file_atomic(path, data)  # a kill leaves the old settings or the new, never half
    if keep_trust:
        _trust_again(before, data)
    else:
        warn(
            f"{before.root} is not trusted, so its .handrail settings, this rule included, "
            f"apply only after {quoted_trust_command(before.root)} (this answer still holds "
            "for now)"
        )
    return path


def _trusted_or_harmless(folder: FolderConfig) -> bool:
    """Trusted, or nothing in its files needs trust (only narrowing settings, no servers)."""
    from ..mcp._config import project_mcp_servers

    try:
        if is_trusted(folder):
            return True
        return (
            not project_settings(folder, trust=False).refused
            and not (project_mcp_servers(folder, trust=False)[1])
            # A project skill may list allowed_tools: the user has not looked at it.
            and not any(path.name == "SKILL.md" for path in folder.files)
        )
    except ConfigurationError:  # a broken file or trust store: decide nothing for the user
        return False


def _trust_again(before: FolderConfig, written: bytes) -> None:
    """Trust the folder's files after the write, if only the write changed them."""
    try:
        after = read_folder_config(before.root)
        others = {k: v for k, v in after.files.items() if k != SETTINGS_FILE}
        unchanged = others == {k: v for k, v in before.files.items() if k != SETTINGS_FILE}
        if unchanged and after.content(SETTINGS_FILE) == written:
            trust_folder(after)
            return
        reason = "its .handrail files changed meanwhile"
    except ConfigurationError as exc:
        reason = str(exc)
    warn(f"the rule is saved, but {before.root} could not stay trusted: {reason}")


async def read_line(stdin: TextIO) -> str:
    """A line from the terminal, waiting in the event loop so that Ctrl-C and SIGTERM work.

    A blocking readline would hold the loop: the cancellation that Ctrl-C starts could not land
    until the user pressed Enter. A terminal in canonical mode becomes readable only once a
    whole line (or end of file) is there, so the readline after the wait does not block.
    """
    loop = asyncio.get_running_loop()
    readable: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not readable.done():
            readable.set_result(None)

    try:
        loop.add_reader(stdin.fileno(), ready)
    except (NotImplementedError, OSError, ValueError):  # no reader support: block instead
        return stdin.readline()
    try:
        await readable
    finally:
        loop.remove_reader(stdin.fileno())
    return stdin.readline()


def terminal_approver(
    root: Path,
    err: Console,
    stdin: TextIO,
    display: Callable[[ToolCall], Display] | None = None,
) -> Approver:
    """Ask on the terminal, with the keys and words of `handrail chat` (`_question`).

    y allows once, s for the rest of the session, p also saves the rule in the project's
    `.handrail/settings.local.json`, n (or an empty line) declines and asks what to do
    instead. `display` shows the call as its tool does (the proposed diff, the command).
    """
    from ..agent._terminal._question import line_approver

    return line_approver(
        err,
        lambda: read_line(stdin),
        display=display,
        save_rule=lambda rule: save_rule(root, rule),
        rule_file=str(SETTINGS_FILE),
    )


def choose_approver(
    yes: bool,
    interactive: bool,
    root: Path,
    err: Console,
    display: Callable[[ToolCall], Display] | None = None,
) -> Approver:
    """--yes approves the call, a terminal asks, anything else denies with a hint.

    --yes answers the call's approval only: a question the tool asks while it runs ("overwrite
    a file changed by hand?") is put on the terminal when there is one, else answered no.
    """
    if yes:
        asker = terminal_approver(root, err, sys.stdin, display) if interactive else None

        async def approve_all(question: Question) -> Approval:
            if isinstance(question, ApprovalRequest):
                return Approval.allow_once()
            if asker is not None:
                return await asker(question)
            return Approval.deny(
                f"--yes approves calls, not what a tool asks, and nobody else could answer: "
                f"{question.reason}",
                source="mode",
            )

        return approve_all
    if interactive:
        return terminal_approver(root, err, sys.stdin, display)

    async def deny_all(question: Question) -> Approval:
        if isinstance(question, ApprovalRequest):
            return not_a_terminal(question)
        return Approval.deny(
            f"handrail call is not on a terminal, so nobody could answer: {question.reason}",
            source="mode",
        )

    return deny_all


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Make the call, print the result; 0 when it is ok, else 1."""
    out, err = consoles()
    interactive = ns.arguments != ["-"] and sys.stdin.isatty()
    session_file: Path | None = ns.session
    tools = await load_tool_set(opts)
    saved = True
    try:
        rt = make_runtime(opts, tools.registry)
        approver = choose_approver(
            ns.yes,
            interactive,
            opts.root,
            err,
            lambda call: rt.display(call, status=CallStatus.WAITING),
        )
        if session_file is not None:
            load_session_file(session_file, rt.session)
        # The printed path of a truncated result must outlive this process.
        rt.session.results_dir = results_folder(rt.session)
        target = rt.registry.get(ns.tool)
        try:
            arguments = parse_arguments(
                ns.arguments, sys.stdin, target.parameters if target is not None else None
            )
            result = await rt.call(ns.tool, arguments, call_id="cli_1", approver=approver)
            if session_file is not None:
                try:
                    save_session_file(session_file, rt.session)
                except OSError as exc:
                    saved = False
                    warn(f"--session {session_file}: the session could not be saved ({exc})")
        finally:
            await rt.aclose()
    finally:
        await tools.aclose()
    if ns.json:
        sys.stdout.write(json_text(as_json(result), indent=2) + "\n")
    else:
        render(result, out, err)
    return 0 if result.ok and saved else 1


def as_json(result: ToolResult) -> dict[str, Any]:
    """The result as a JSON object (`--json`): every field, `parts` as MCP content blocks.

    `parts` is `[]` for a text result (its text is `content`); each part is in the one JSON
    shape a part has (`part_to_json`: `type`, its fields, base64 data as it came,
    `annotations`, `_meta`). `structured` is the structured content, or null.
    """
    return {
        "ok": result.ok,
        "tool": result.tool_name,
        "error": result.error.value if result.error is not None else None,
        "content": result.content,
        "summary": result.summary,
        "diff": result.diff,
        "issues": [
            {"path": i.path, "expected": i.expected, "received": i.received, "message": i.message}
            for i in result.issues
        ],
        "denial": None
        if result.denial is None
        else {
            "reason": result.denial.reason,
            "source": result.denial.source,
            "rule": result.denial.rule,
        },
        "metadata": json.loads(json.dumps(dict(result.metadata), default=str)),
        "duration": result.duration,
        "parts": [part_to_json(p) for p in result.parts],
        "structured": None if result.structured is None else dict(result.structured),
    }


def diff_shown_in_content(content: str, diff: str) -> bool:
    """True when the content already holds the diff's hunks (edit_file shows them)."""
    body = "\n".join(
        line for line in diff.splitlines() if not line.startswith(("--- ", "+++ "))
    ).strip()
    return bool(body) and body in content


def render(result: ToolResult, out: Console, err: Console) -> None:
    """Content (and diff) on stdout; error code, issues and denial on stderr.

    What the tool, its arguments or a server wrote is shown with its control characters
    spelled out (`terminal_text`), on a terminal or not: `--json` has the exact text.
    """
    from rich.text import Text

    if result.content:
        _write(out, terminal_text(result.content))
    if result.diff and not diff_shown_in_content(result.content, result.diff):
        diff = terminal_text(result.diff)
        if out.is_terminal:
            from rich.syntax import Syntax

            out.print(Syntax(diff.rstrip("\n"), "diff", background_color="default"))
        else:
            _write(out, diff)
    if result.ok:
        if err.is_terminal:
            done = f"{result.summary or result.tool_name} ({result.duration * 1000:.1f} ms)"
            err.print(Text(terminal_text(done), style="dim green"), soft_wrap=True)
        return
    code = result.error.value if result.error is not None else "FAILED"
    err.print(Text(f"error: {code}", style="bold red"), soft_wrap=True)
    for issue in result.issues:
        where = issue.path or "(arguments)"
        line = terminal_text(f"  issue {where}: {issue.message}")
        err.print(Text(line, style="red"), soft_wrap=True)
    if result.denial is not None:
        by = result.denial.source + (f" {result.denial.rule}" if result.denial.rule else "")
        line = terminal_text(f"  denied by {by}: {result.denial.reason}")
        err.print(Text(line, style="red"), soft_wrap=True)


def _write(out: Console, text: str) -> None:
    out.file.write(text if text.endswith("\n") else text + "\n")
    out.file.flush()
