"""`handrail chat` (and `handrail` on a terminal): the interactive coding agent.

On a terminal it holds a conversation: the model reads, edits and runs commands through the
runtime, asking before what the mode does not allow. When stdin or stdout is not a terminal it
behaves as `handrail run` (one prompt from the argument or stdin, the answer on stdout).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from typing import TYPE_CHECKING, Any

from .._context import PermissionMode
from .._version import __version__
from ._common import CliError, CommonOptions, load_tool_set, make_runtime
from ._run import (
    add_agent_options,
    add_model_options,
    add_session_options,
    hide_key,
    make_client,
    saved_session,
)

if TYPE_CHECKING:
    from ._common import SubParsers


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail chat`."""
    parser = sub.add_parser(
        "chat",
        help="talk with the coding agent in this terminal (what `handrail` alone does)",
        description="Hold a coding session with the agent in this terminal: it reads, edits "
        "and runs commands through handrail's tools, asking before what the mode does not "
        "allow. Without a terminal it runs one prompt like `handrail run`.",
    )
    parser.add_argument("prompt", nargs="?", help="a first message (optional)")
    add_model_options(parser)
    add_agent_options(parser, max_turns=None)
    add_session_options(parser.add_mutually_exclusive_group())
    parser.add_argument("--no-save", action="store_true", help="do not write a session transcript")
    parser.add_argument(
        "--ascii",
        action="store_true",
        help="draw with ASCII only (also when the terminal's encoding is not UTF-8, or "
        "HANDRAIL_ASCII=1)",
    )
    return parser


def is_interactive() -> bool:
    """A person at a terminal: stdin and stdout are both TTYs."""
    return sys.stdin.isatty() and sys.stdout.isatty()


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Chat on a terminal; anywhere else, run the one prompt headless."""
    if not is_interactive():
        from . import _run

        headless = argparse.Namespace(**vars(ns))
        headless.output_format = "text"
        headless.replay = None
        if headless.max_turns is None:
            headless.max_turns = _run.DEFAULT_MAX_TURNS
        return await _run.run(headless, opts)
    return await _chat(ns, opts)


async def _chat(ns: argparse.Namespace, opts: CommonOptions) -> int:
    from rich.console import Console

    from ..agent import Agent, ModelClient, is_own_session
    from ..agent._sessions import project_dir, state_dir
    from ..agent._terminal._app import ChatApp, ChatOptions
    from ._call import SETTINGS_FILE, save_rule

    if ns.max_turns is not None and ns.max_turns < 1:
        raise CliError("--max-turns must be at least 1")
    saved = saved_session(ns, opts.root)
    own = saved is not None and is_own_session(saved.path)
    if saved is not None and not own and not ns.model:
        raise CliError(
            f"{saved.path} is not one of your saved sessions: name its model with --model"
        )
    client = make_client(ns, saved.header if own and saved is not None else None)
    hide_key(client, ns.api_key_env)
    if ns.max_budget_usd is not None and client.info.prices is None:
        raise CliError(
            f"--max-budget-usd needs the prices of {client.model!r}, which handrail does not "
            "know; use --max-budget-tokens"
        )

    def make_model(spec: str) -> Any:
        # /model: another model on the same endpoint options (a preset brings its own URL).
        again = replace_model(ns, spec)
        made = make_client(again, None)
        hide_key(made, ns.api_key_env)
        return made

    tools = await load_tool_set(opts)
    try:
        rt = make_runtime(opts, tools.registry, checkpoints=True)  # for /rewind
        if opts.mode is None and saved is None:
            rt.session.mode = PermissionMode.DEFAULT
        agent = Agent(
            client,
            rt,
            max_turns=ns.max_turns,
            max_tokens=ns.max_budget_tokens,
            max_cost_usd=ns.max_budget_usd,
            save=not ns.no_save,
            transcript=saved.path if saved is not None and own else None,
        )
        if saved is not None:
            if own:
                rt.session.id = saved.id
                agent.session_id = saved.id
            agent.restore(
                saved.messages,
                saved.state if own else None,
                prompts=saved.prompts if own else None,  # what /rewind goes back to
            )
            if opts.mode is not None:
                rt.session.mode = PermissionMode(opts.mode)
        ascii_only = ns.ascii or os.environ.get("HANDRAIL_ASCII") == "1" or not _utf8()
        console = Console(highlight=False, emoji=False)
        history = None if ns.no_save else project_dir(opts.root, state_dir()) / "prompt-history"
        app = ChatApp(
            agent,
            console,
            ChatOptions(
                ascii=ascii_only,
                history_file=history,
                make_model=make_model if isinstance(client, ModelClient) else None,
                save_rule=lambda rule: save_rule(opts.root, rule),
                rule_file=str(SETTINGS_FILE),
                version=__version__,
            ),
        )
        # What is loaded lives as long as the session: keep the collector from walking it.
        gc.freeze()
        gc.enable()
        try:
            return await app.run(ns.prompt, resumed=saved)
        finally:
            await agent.aclose()
            await rt.aclose()
    finally:
        await tools.aclose()


def replace_model(ns: argparse.Namespace, spec: str) -> argparse.Namespace:
    """The options with another `--model`."""
    again = argparse.Namespace(**vars(ns))
    again.model = spec
    return again


def _utf8() -> bool:
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    return encoding in ("utf8", "utf8sig")
