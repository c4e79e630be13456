"""`handrail run`: one headless agent run, the way `claude -p` and `codex exec` work.

The prompt comes as an argument or on stdin. Output formats: `text` (progress on stderr, only
the final answer on stdout), `json` (one result object at the end), `stream-json` (every event
as a JSON line, ending with the same result object). Calls that would ask for approval are
denied, and the model is told which rule would allow them, unless stdin and stderr are a
terminal and the output is text: then the terminal asks, with the choices and keys of
`handrail chat`. So is an MCP server's question (a form to fill in, a page to open): asked on
that terminal, else declined, with a notice on stderr naming the server. Ctrl-C interrupts
the run (every started call still gets a result, and the session can be resumed); a second
Ctrl-C quits.

A run keeps checkpoints of the workspace (a replay, or a fresh run with `--no-save`, keeps
none), so a saved session can go back:
`--resume ID --rewind N` puts the files and the conversation back to where prompt N began
before the new prompt runs (`--rewind-only` picks one of the two), and `--fork` carries on in a
new session, leaving the old one as it was. A rewind that would overwrite files changed outside
the session stops before any model request, unless `--rewind-overwrite` (or, on a terminal,
the person) says yes.

Exit status: 0 success, 1 model or runtime error (or a refused rewind), 2 usage error, 53 turn
limit reached, 54 budget spent, 130 interrupted, 143 terminated. A replay exits 0 when every
tool result matches the recording and 1 when some differ.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .._context import PermissionMode
from .._contract import Approval, Confirmation, Elicitation, Question
from ..display import terminal_text
from ._common import CliError, CommonOptions, json_text, load_tool_set, make_runtime

if TYPE_CHECKING:
    from .._contract import Approver
    from ..agent import Agent, Event, RunResult, SavedSession
    from ..runtime import Runtime
    from ._common import SubParsers

EXIT = {
    "success": 0,
    "error_model": 1,
    "error_context": 1,
    "error_max_turns": 53,
    "error_budget": 54,
    "interrupted": 130,
}
"""Exit status per result subtype."""
DEFAULT_MAX_TURNS = 100


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail run`."""
    parser = sub.add_parser(
        "run",
        help="run the agent headless on one prompt and print its answer",
        description="Run the agent on one prompt without a terminal UI: the model works with "
        "the coding tools until it answers. Exit status: 0 success, 1 model or runtime error "
        "(or a refused --rewind), 2 usage error, 53 turn limit, 54 budget spent, 130 "
        "interrupted.",
        epilog="examples:\n"
        '  handrail run "Fix the failing test" --model anthropic:claude-sonnet-4-5\n'
        '  handrail run --continue "Now add a test for it"\n'
        "  # go back to where prompt 2 of a session began (files and conversation), then\n"
        "  # carry on from there with a new prompt:\n"
        '  handrail run --resume 3f2a91c0 --rewind 2 "Do it without the cache"\n'
        "  # the same in a new session, the old one kept as it is:\n"
        '  handrail run --resume 3f2a91c0 --rewind 2 --fork "Try the other approach"\n'
        "  # only the conversation (the files stay), or only the files:\n"
        '  handrail run --resume 3f2a91c0 --rewind 2 --rewind-only conversation "..."\n'
        "\n"
        "Prompts are numbered from 1 in the order they were sent (/rewind lists them in "
        "handrail chat).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompt", nargs="?", help="the task (default: read from stdin)")
    add_model_options(parser)
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="text: the answer on stdout, progress on stderr; json: one result object; "
        "stream-json: every event as a JSON line",
    )
    add_agent_options(parser, max_turns=DEFAULT_MAX_TURNS)
    group = parser.add_mutually_exclusive_group()
    add_session_options(group)
    group.add_argument(
        "--replay",
        metavar="TRANSCRIPT",
        help="play a saved session's model responses back, run the tools anew, and report "
        "where the results now differ (no model needed)",
    )
    parser.add_argument("--no-save", action="store_true", help="do not write a session transcript")
    add_rewind_options(parser)
    return parser


def add_rewind_options(parser: argparse.ArgumentParser) -> None:
    """--rewind, --rewind-only, --fork and --rewind-overwrite (run)."""
    group = parser.add_argument_group("going back in a session (with --resume ID or --continue)")
    group.add_argument(
        "--rewind",
        type=int,
        metavar="N",
        help="first go back to where prompt N of the session began (1 is its first prompt): "
        "the files as that prompt found them, shell commands' changes included, and the "
        "conversation before it; then PROMPT runs from there",
    )
    group.add_argument(
        "--rewind-only",
        choices=("code", "conversation"),
        help="with --rewind: put back only the files (code; the conversation goes on as it "
        "is) or only the conversation (the files stay as they are)",
    )
    group.add_argument(
        "--fork",
        action="store_true",
        help="carry on in a new session, a copy of the resumed one (from prompt N with "
        "--rewind), and leave the old one as it is; the new id is printed on stderr and is "
        "the result's session_id",
    )
    group.add_argument(
        "--rewind-overwrite",
        action="store_true",
        help="let --rewind overwrite files that were changed outside the session since (by "
        "hand, by another program); without it such a rewind changes nothing and exits 1 "
        "naming them (on a terminal with text output, it asks)",
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--model, --base-url, --api-key-env, --timeout, --no-stream (run and chat)."""
    parser.add_argument(
        "--model",
        metavar="PROVIDER:MODEL",
        help="e.g. anthropic:claude-sonnet-4-5, openai:gpt-5, deepseek:deepseek-chat, "
        "ollama:qwen3, or a wire format (openai_chat, openai_responses, anthropic, gemini) "
        "with --base-url (default: $HANDRAIL_MODEL)",
    )
    parser.add_argument("--base-url", metavar="URL", help="the model API's root URL")
    parser.add_argument(
        "--api-key-env",
        metavar="NAME",
        help="the environment variable holding the API key (default: the provider's usual one)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="seconds the model server may stay silent before the request is retried",
    )
    parser.add_argument(
        "--no-stream", action="store_true", help="ask for whole responses instead of streams"
    )


def add_agent_options(parser: argparse.ArgumentParser, *, max_turns: int | None) -> None:
    """--max-turns and the budgets (run and chat)."""
    parser.add_argument(
        "--max-turns",
        type=int,
        default=max_turns,
        metavar="N",
        help=f"most model turns per message (default {max_turns or 'no limit'})",
    )
    parser.add_argument(
        "--max-budget-tokens", type=int, metavar="N", help="stop once N tokens were used"
    )
    parser.add_argument(
        "--max-budget-usd",
        type=float,
        metavar="USD",
        help="stop once this much was spent (models with known prices)",
    )


def add_session_options(group: Any) -> None:
    """--resume and --continue (run and chat)."""
    group.add_argument("--resume", metavar="ID", help="carry on the session with this id")
    group.add_argument(
        "--continue",
        dest="continue_",
        action="store_true",
        help="carry on the latest session of this workspace",
    )


def _prompt(ns: argparse.Namespace, stdin: TextIO) -> str | None:
    if ns.prompt is not None and ns.prompt != "-":
        return ns.prompt
    if ns.prompt is None and stdin.isatty():
        return None
    return stdin.read()


def make_client(ns: argparse.Namespace, header: dict[str, Any] | None) -> Any:
    from ..agent import ModelClient

    spec = ns.model or os.environ.get("HANDRAIL_MODEL") or None
    options: dict[str, Any] = {"timeout": ns.timeout, "stream": not ns.no_stream}
    if ns.base_url:
        options["base_url"] = ns.base_url
        options.setdefault("key_required", False)
    if ns.api_key_env:
        options["api_key_env"] = ns.api_key_env
    if not ns.model and header is not None and header.get("model"):
        # The user's own session: the same provider, endpoint and key variable as before.
        spec = str(header.get("model") or "")
        if header.get("base_url") and not ns.base_url:
            options["base_url"] = header["base_url"]
        if isinstance(header.get("api_key_env"), str) and not ns.api_key_env:
            options["api_key_env"] = header["api_key_env"]
    if not spec:
        raise CliError(
            "--model PROVIDER:MODEL is required (e.g. --model anthropic:claude-sonnet-4-5), or "
            "set HANDRAIL_MODEL"
        )
    return ModelClient.from_spec(spec, **options)


def saved_session(ns: argparse.Namespace, root: Path) -> SavedSession | None:
    """The session to replay or carry on, if the options name one."""
    from ..agent import find_session, latest_session, load_session

    if getattr(ns, "replay", None):
        return load_session(Path(ns.replay).expanduser())
    if not (ns.resume or ns.continue_):
        return None
    path = find_session(root, ns.resume) if ns.resume else latest_session(root)
    if path is None:
        raise CliError(f"no earlier session for {root} to continue")
    return load_session(path)


def hide_key(client: Any, named: str | None) -> None:
    """Keep a key from a variable the user named away from every process handrail starts.

    The usual variables (OPENAI_API_KEY, ...) are kept from shell commands already; a custom
    one is read into the client now and removed from this process's environment, so no shell
    command, hook or server started later can read it.
    """
    if named and named in os.environ:
        client.set_api_key(os.environ.pop(named))


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Run the agent; print as the output format says; return the exit status."""
    from ..agent import Agent, ModelClient, is_own_session

    back = _GoingBack.of(ns)
    prompt = None if ns.replay else _prompt(ns, sys.stdin)
    saved = saved_session(ns, opts.root)
    if not ns.replay and not (prompt or "").strip():
        raise CliError("no prompt: give it as an argument or on stdin")
    if ns.max_turns < 1:
        raise CliError("--max-turns must be at least 1")
    # A transcript from elsewhere (a checkout, a download) is data, not configuration: its
    # model, base URL and recorded approvals are trusted only from the user's own state folder.
    own = saved is not None and is_own_session(saved.path)
    back.check(None if ns.replay else saved, own, save=not ns.no_save)
    client: Any
    if ns.replay:
        from ..agent._replay import ReplayModel

        assert saved is not None
        client = ReplayModel(saved)
    else:
        if saved is not None and not own and not ns.model:
            raise CliError(
                f"{saved.path} is not one of your saved sessions: name the model to continue it "
                "with --model (and --base-url)"
            )
        client = make_client(ns, saved.header if own and saved is not None else None)
    if isinstance(client, ModelClient):
        hide_key(client, ns.api_key_env)
        if ns.max_budget_usd is not None and client.info.prices is None:
            raise CliError(
                f"--max-budget-usd needs the prices of {client.model!r}, which handrail does not "
                "know; use --max-budget-tokens"
            )
    if ns.replay and saved is not None and not own and opts.mode is None:
        # A transcript from elsewhere decides which calls run, as a model would: without an
        # explicit --mode, it replays read-only.
        opts = replace(opts, mode=PermissionMode.PLAN.value)
    tools = await load_tool_set(opts)
    # Everything imported and built so far lives as long as the process: keep the collector
    # from walking it on every collection and again at exit (about 200 ms of CPU at exit).
    gc.freeze()
    gc.enable()  # paused by the command line while it loaded (`_cli.main`)
    try:
        # Checkpoints let the session be rewound later; a replay, or a run whose transcript
        # is not kept (so nothing could rewind it), needs none.
        keep = not ns.replay and (not ns.no_save or back.code)
        rt = make_runtime(opts, tools.registry, checkpoints=keep)
        if saved is not None and own and not ns.replay:
            rt.session.id = saved.id  # carry on in the same transcript (a fork: its source)
        out = _Output(ns.output_format, sys.stdout, sys.stderr)
        approver: Approver | None = None
        if ns.replay and own:
            from ..agent._replay import recorded_approver

            assert saved is not None
            approver = recorded_approver(saved)
        elif ns.replay:
            out.note(
                f"{saved.path if saved else ns.replay} is not one of your saved sessions: its "
                "recorded approvals are not replayed (calls that would ask are denied), and "
                "without --mode it replays in plan mode (read-only)"
            )
        elif ns.output_format == "text" and sys.stdin.isatty() and sys.stderr.isatty():
            approver = _terminal(opts.root, rt)
        out.headless = approver is None
        agent = Agent(
            client,
            rt,
            approver=approver,
            max_turns=ns.max_turns,
            max_tokens=ns.max_budget_tokens,
            max_cost_usd=ns.max_budget_usd,
            save=not ns.no_save and not ns.replay,
            transcript=(
                saved.path
                if saved is not None and own and not ns.replay and not back.fork
                else None
            ),
            agents=not ns.replay,
        )
        if saved is not None and not ns.replay:
            # Only the user's own session brings its state back (mode, files read, session
            # rules, the prompts a rewind goes back to); a file from elsewhere brings only its
            # conversation. An explicit --mode wins over the saved one.
            agent.restore(
                saved.messages,
                saved.state if own else None,
                prompts=saved.prompts if own else None,
            )
        try:
            if saved is not None and back.wanted:
                await back.go(agent, saved, out, approver)
            if saved is not None and not ns.replay and opts.mode is not None:
                rt.session.mode = PermissionMode(opts.mode)
            if ns.replay:
                assert saved is not None
                return await _replay(agent, saved, out)
            assert prompt is not None
            try:
                result = await _interruptible(agent, prompt, out)
            except asyncio.CancelledError:  # SIGTERM: the run recorded its end; say it too
                if out.result is not None:
                    out.finish(out.result)
                raise
        finally:
            await agent.aclose()
            await rt.aclose()
    finally:
        await tools.aclose()
    out.finish(result)
    return EXIT.get(result.subtype, 1)


@dataclass(frozen=True, slots=True)
class _GoingBack:
    """What --rewind, --rewind-only, --fork and --rewind-overwrite ask for."""

    turn: int | None
    only: str | None
    fork: bool
    overwrite: bool

    @classmethod
    def of(cls, ns: argparse.Namespace) -> _GoingBack:
        # `chat` without a terminal runs as `run` with none of these options.
        return cls(
            turn=getattr(ns, "rewind", None),
            only=getattr(ns, "rewind_only", None),
            fork=bool(getattr(ns, "fork", False)),
            overwrite=bool(getattr(ns, "rewind_overwrite", False)),
        )

    @property
    def wanted(self) -> bool:
        return self.turn is not None or self.fork

    @property
    def code(self) -> bool:
        return self.turn is not None and self.only != "conversation"

    @property
    def conversation(self) -> bool:
        return self.turn is not None and self.only != "code"

    def check(self, saved: SavedSession | None, own: bool, *, save: bool) -> None:
        """The usage errors, found before anything starts."""
        if self.only is not None and self.turn is None:
            raise CliError("--rewind-only goes with --rewind N")
        if self.overwrite and self.turn is None:
            raise CliError("--rewind-overwrite goes with --rewind N")
        if not self.wanted:
            return
        if self.fork and not save:
            raise CliError("--fork makes a new saved session: it does not go with --no-save")
        flag = "--fork" if self.turn is None else "--rewind"
        if saved is None:
            raise CliError(f"{flag} goes with --resume ID or --continue")
        if not own:
            raise CliError(f"{saved.path} is not one of your saved sessions: {flag} needs one")
        if self.turn is not None and not 1 <= self.turn <= len(saved.prompts):
            count = len(saved.prompts)
            which = f"1 to {count}" if count > 1 else "1" if count == 1 else "nothing"
            raise CliError(
                f"--rewind {self.turn}: session {saved.id} has {count} "
                f"prompt{'' if count == 1 else 's'} to go back to ({which})"
            )

    async def go(
        self, agent: Agent, saved: SavedSession, out: _Output, asker: Approver | None
    ) -> None:
        """Fork and rewind as asked, before the prompt runs.

        Raises:
            CliError: The rewind would overwrite files changed outside the session and nobody
                said yes (exit 1); nothing was changed.
        """
        from ..agent._terminal._rewinding import rewound_lines

        approver: Approver | None = _overwrite_outside if self.overwrite else asker
        if self.fork:
            if self.code and approver is None:
                # A rewind that will be refused must not leave a new session behind.
                await self._refuse_if_outside(agent)
            old = agent.session_id
            new = agent.fork(saved)
            out.note(f"forked session {old} as {new} (the old one is left as it was)")
        if self.turn is None:
            return
        done = await agent.rewind(
            self.turn, code=self.code, conversation=self.conversation, approver=approver
        )
        if not done.ok:
            outside = done.restored.overwritten if done.restored is not None else ()
            message = self._refusal(outside, done.refused or "")
            if self.fork:  # asked on the terminal after the fork, and the answer was no
                message += f" (the new session {agent.session_id} was made; nothing ran in it)"
            raise CliError(message, status=1)
        undo = f"/rewind undo in `handrail --resume {agent.session_id}`"
        for line in rewound_lines(done, code=self.code, undo=undo):
            out.note(line)

    async def _refuse_if_outside(self, agent: Agent) -> None:
        assert self.turn is not None
        point = agent.checkpoints()[self.turn - 1].checkpoint
        if point is None:
            return
        plan = await agent.runtime.restore_plan(point)
        if plan.outside:
            raise CliError(self._refusal(plan.outside, ""), status=1)

    def _refusal(self, outside: Sequence[str], why: str) -> str:
        from ..agent._terminal._rewinding import names

        what = names(outside, 10) if outside else why
        return (
            f"--rewind {self.turn} would overwrite changes made outside this session to "
            f"{what}; nothing was changed and nothing was sent to the model. Pass "
            "--rewind-overwrite to overwrite them, or --rewind-only conversation to leave the "
            "files as they are"
        )


async def _overwrite_outside(question: Question) -> Approval:
    """--rewind-overwrite: yes to overwriting files changed outside the session, nothing else."""
    if isinstance(question, Confirmation) and question.topic == "restore":
        return Approval.allow_once()
    return Approval.deny(f"nobody could answer: {question.reason}", source="mode")


async def _interruptible(agent: Agent, prompt: str, out: _Output) -> RunResult:
    """Run; the first Ctrl-C interrupts the run cleanly, the second one quits at once."""
    loop = asyncio.get_running_loop()
    pressed = 0

    def on_sigint() -> None:
        nonlocal pressed
        pressed += 1
        if pressed == 1 and agent.interrupt():
            out.note("interrupting: stopping running tools (Ctrl-C again to quit now)")
            return
        raise KeyboardInterrupt

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False
    try:
        return await agent.run(prompt, on_event=out.event)
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGINT)


async def _replay(agent: Agent, saved: Any, out: _Output) -> int:
    from ..agent._replay import compare, prompts

    result = None
    for prompt in prompts(saved):
        result = await agent.run(prompt, on_event=out.event)
    differences = compare(saved.messages, agent.messages)
    out.replay(differences, result)
    return 1 if differences else 0


def _terminal(root: Path, rt: Runtime) -> Approver:
    """Ask on the terminal as `handrail call` and `chat` do; a sub-agent's question names it."""
    from rich.console import Console

    from ..display import CallStatus
    from ._call import terminal_approver

    return terminal_approver(
        root,
        Console(stderr=True, highlight=False),
        sys.stdin,
        lambda call: rt.display(call, status=CallStatus.WAITING),
    )


class _Output:
    """Writes what the output format asks for; progress lines go to stderr in text mode.

    Text goes out with its control characters spelled (`terminal_text`): the answer, the
    calls and what the tools said come from the model, tools and servers. The JSON formats
    keep the exact text.
    """

    def __init__(self, fmt: str, stdout: TextIO, stderr: TextIO) -> None:
        self.fmt = fmt
        self.stdout = stdout
        self.stderr = stderr
        self.result: RunResult | None = None
        """The run's result once it finished (printed even if the process is stopping)."""
        self.headless = False
        """Nobody answers the run's questions: an MCP server's question gets a notice."""

    def _line(self, stream: TextIO, text: str) -> None:
        try:
            stream.write(text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _text(self, stream: TextIO, text: str) -> None:
        self._line(stream, terminal_text(text))

    def note(self, text: str) -> None:
        """A message for the user, never on stdout."""
        self._text(self.stderr, f"handrail: {text}")

    def event(self, event: Event) -> None:
        """One event of the run."""
        from ..agent import ApprovalAsked, RunFinished

        if isinstance(event, RunFinished):
            self.result = event.result
        if (
            self.headless
            and isinstance(event, ApprovalAsked)
            and isinstance(event.request, Elicitation)
        ):
            self.note(declined_headless(event.request))
        if self.fmt == "stream-json":
            if event.type != "result":
                self._line(self.stdout, json_text(event.to_json()))
            return
        if self.fmt != "text":
            if event.type == "notice":  # json: stdout holds one object; warnings still show
                self.note(event.to_json()["text"])
            return
        line = _progress(event.to_json())
        if line:
            self._text(self.stderr, line)

    def finish(self, result: RunResult) -> None:
        """The end of the run: the answer (text) or the result object (json, stream-json)."""
        if self.fmt == "text":
            if result.result:
                self._text(self.stdout, result.result)
            if result.is_error:
                self.note(f"{result.subtype}: {result.error}")
            if result.session_id and result.subtype in (
                "interrupted",
                "error_max_turns",
                "error_budget",
            ):
                self.note(f"carry on with: handrail run --resume {result.session_id} PROMPT")
            return
        self._line(self.stdout, json_text(result.to_json()))

    def replay(self, differences: list[Any], result: RunResult | None) -> None:
        """The replay's report."""
        if self.fmt == "text":
            if not differences:
                self._line(self.stdout, "replay: every tool result matches the recording")
            for d in differences:
                self._text(self.stdout, d.describe())
            return
        report = {
            "type": "replay",
            "matches": not differences,
            "differences": [d.to_json() for d in differences],
            "result": result.to_json() if result is not None else None,
        }
        self._line(self.stdout, json_text(report))


def declined_headless(question: Elicitation) -> str:
    """The notice for an MCP server's question that nobody could answer in this run."""
    during = f" during {question.tool_name}" if question.tool_name else ""
    what = "to open a page" if question.url is not None else "to fill in a form"
    return (
        f"MCP server `{question.server}` asked {what}{during} ({_short(question.message, 80)}): "
        "declined, because nobody can answer in a headless run; run it on a terminal (handrail "
        "chat, or handrail run with text output) to answer"
    )


def _progress(data: dict[str, Any]) -> str | None:
    kind = data["type"]
    if kind == "tool_call_started":
        call = data["call"]
        args = call["arguments"]
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return f"-> {call['name']} {_short(text)}"
    if kind == "tool_call_finished":
        r = data["result"]
        status = "ok" if r["ok"] else r.get("error", "failed")
        ms = int(r.get("duration", 0) * 1000)
        summary = r.get("summary") or (r["content"].splitlines() or [""])[0]
        return f"   {status} {r['tool_name']} ({ms} ms) {_short(summary)}"
    if kind == "approval_answered" and data["by"] == "policy":
        return f"   denied (nobody to ask): {_short(data['reason'] or '')}"
    if kind == "model_retry":
        return f"handrail: retrying in {data['delay']:.1f} s: {_short(data['reason'])}"
    if kind == "notice":
        return f"handrail: {data['text']}"
    if kind == "compaction":
        return (
            f"handrail: compacted the conversation ({data['tokens_before']:,} -> "
            f"{data['tokens_after']:,} tokens)"
        )
    return None


def _short(text: str, limit: int = 100) -> str:
    # Spelled before it is flattened: a `\r` in it shows as `\r`, not as a space.
    one = " ".join(terminal_text(text).split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
