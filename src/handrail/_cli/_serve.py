"""`handrail serve`: the tools as an MCP server, over stdio or streamable HTTP.

Over stdio, stdout carries nothing but the protocol: the ready line and every log go to stderr.
Over HTTP every request needs the bearer token: from `--token-file`, else `$HANDRAIL_SERVE_TOKEN`,
else a fresh one, printed once on stderr and kept in the token file while the server runs.
Every session keeps checkpoints; `--offer-restore` lets the client list and restore them, each
restore confirmed by its user.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..permissions import Settings
from ..runtime import Runtime
from ._common import CliError, CommonOptions, load_tool_set

if TYPE_CHECKING:
    from ._common import SubParsers


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail serve`."""
    parser = sub.add_parser(
        "serve",
        help="serve the tools to MCP clients (stdio, or streamable HTTP with --http)",
        description="Serve the built-in coding tools (and those of the MCP servers configured "
        "in .handrail/mcp.json) as an MCP server: over stdio by default, over streamable HTTP "
        "with --http. The default mode is accept_edits: file edits inside the root run, "
        "anything outside is refused, and run_shell asks the client unless a rule allows it.",
        epilog='an MCP client configuration:\n  {"mcpServers": {"handrail": {"command": '
        '"handrail", "args": ["serve", "--root", "/path/to/project"]}}}\n'
        "over HTTP (HANDRAIL_SERVE_TOKEN set for both the server and the client):\n"
        '  {"mcpServers": {"handrail": {"type": "http", "url": "http://127.0.0.1:8765/mcp", '
        '"headers": {"Authorization": "Bearer ${HANDRAIL_SERVE_TOKEN}"}}}}',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765) instead of stdio",
    )
    parser.add_argument(
        "--offer-restore",
        action="store_true",
        help="offer the tools list_checkpoints and restore_checkpoint: the client can put a "
        "session's files back as they were before one of its calls; every restore asks the "
        "client's user, and a client that cannot ask is refused",
    )
    http = parser.add_argument_group(
        "HTTP access",
        "with --http every request needs `Authorization: Bearer TOKEN`: the token comes from "
        "--token-file, else $HANDRAIL_SERVE_TOKEN, else a new one is printed once and written to "
        "a file only you can read, removed when the server stops. Requests must also name "
        "this server in Host (421 otherwise) and, from a browser, come from an allowed "
        "Origin (403 otherwise)",
    )
    http.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the bearer token from PATH (yours, mode 600, at least 16 characters)",
    )
    http.add_argument(
        "--no-auth",
        action="store_true",
        help="no token (loopback addresses only): any program on this machine can then call "
        "the tools and answer approvals",
    )
    http.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept this Host, e.g. a reverse proxy's public name (NAME or NAME:PORT; "
        "repeatable)",
    )
    http.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="URL",
        help="also accept requests from this browser origin, e.g. https://app.example.com "
        "(repeatable)",
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        help="also serve MCP 2026-07-28 clients without a session, so replicas behind a load "
        "balancer need no sticky sessions; such a client cannot edit files it read in an earlier "
        "request (without this flag they fall back to a session)",
    )
    http.add_argument(
        "--state-secret-file",
        metavar="PATH",
        help="with --stateless: the secret (at least 32 characters) that signs approvals asked "
        "of stateless clients; give every replica the same one (default: derived from the token)",
    )
    agent = parser.add_argument_group(
        "sub-agents",
        "offer the `agent` tool: the client's model hands a task to a sub-agent that runs on "
        "this model, with a policy never wider than the server's; its approvals are asked of "
        "the client's user",
    )
    agent.add_argument(
        "--agent-model", metavar="PROVIDER:MODEL", help="e.g. deepseek:deepseek-chat"
    )
    agent.add_argument("--agent-base-url", metavar="URL", help="the model API's root URL")
    agent.add_argument(
        "--agent-api-key-env", metavar="NAME", help="the variable holding the model's API key"
    )
    return parser


def _agent_setup(ns: argparse.Namespace) -> tuple[Callable[[Runtime], None] | None, list[Any]]:
    """What `serve` calls to add the `agent` tool, and what must be closed afterwards."""
    if not ns.agent_model:
        return None, []
    from ..agent import Agent, ModelClient

    options: dict[str, Any] = {}
    if ns.agent_base_url:
        options["base_url"] = ns.agent_base_url
        options["key_required"] = False
    if ns.agent_api_key_env:
        options["api_key_env"] = ns.agent_api_key_env
    client = ModelClient.from_spec(ns.agent_model, **options)
    from ._run import hide_key

    hide_key(client, ns.agent_api_key_env)  # no served tool or sub-agent command can read it
    opened: list[Any] = [client]

    def setup(rt: Runtime) -> None:
        # The agent only adds the `agent` tool. Its children ask the calling client: each
        # served call brings that client's approver, which the child's runtime inherits.
        opened.append(Agent(client, rt))

    return setup, opened


def _absolute(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def parse_http(value: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[v6-address]:PORT`) as a (host, port) pair."""
    host, sep, port_text = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise CliError(f"--http {value}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port_text)


def _http_options(ns: argparse.Namespace) -> tuple[dict[str, Any], str | None]:
    """`serve`'s HTTP access keywords, and the token to print (a generated one only)."""
    from ..mcp._http_access import is_loopback, normalize_host, normalize_origin
    from ..mcp._http_token import TOKEN_ENV, check_token, new_token, read_token_file

    given = [
        flag
        for flag, value in (
            ("--token-file", ns.token_file),
            ("--no-auth", ns.no_auth),
            ("--allow-host", ns.allow_host),
            ("--allow-origin", ns.allow_origin),
            ("--stateless", ns.stateless),
            ("--state-secret-file", ns.state_secret_file),
        )
        if value
    ]
    if not ns.http:
        if given:
            raise CliError(f"{given[0]} applies to --http only")
        return {}, None
    if ns.no_auth and ns.token_file:
        raise CliError("--no-auth and --token-file contradict each other; drop one")
    if ns.state_secret_file and not ns.stateless:
        raise CliError("--state-secret-file signs stateless approvals: add --stateless")
    options: dict[str, Any] = {
        "allow_hosts": [normalize_host(h, "--allow-host") for h in ns.allow_host],
        "allow_origins": [normalize_origin(o, "--allow-origin") for o in ns.allow_origin],
        "stateless": bool(ns.stateless),
    }
    if ns.state_secret_file:
        options["state_secret"] = read_token_file(ns.state_secret_file, "--state-secret-file")
    if ns.no_auth:
        host = parse_http(ns.http)[0]
        if not is_loopback(host):
            raise CliError(
                f"--no-auth is allowed on a loopback address only (127.0.0.1, ::1, localhost), "
                f"not {host}: anyone who can reach it could run the tools; serve with a token"
            )
        return {**options, "auth": False}, None
    if ns.token_file:
        return {**options, "token": read_token_file(ns.token_file)}, None
    from_env = os.environ.get(TOKEN_ENV)
    if from_env is not None:
        return {**options, "token": check_token(from_env.strip(), f"${TOKEN_ENV}:")}, None
    token = new_token()
    return {**options, "token": token, "token_file": True}, token


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Serve until the client goes away (stdio) or the process is stopped."""
    http = parse_http(ns.http) if ns.http else None
    access, generated = _http_options(ns)
    from ..mcp import serve  # the SDK itself is imported when the server starts

    setup, opened = _agent_setup(ns)
    tools = await load_tool_set(opts)
    extra = opts.settings
    secrets = [_absolute(p) for p in (ns.token_file, ns.state_secret_file) if p]
    if secrets:
        # The files holding the server's token and state secret are secrets: no tool may read
        # them, even when they lie inside the root.
        base = extra or Settings()
        extra = dataclasses.replace(base, hidden_paths=(*base.hidden_paths, *secrets))
    mode = opts.mode or (
        extra.default_mode.value if extra is not None and extra.default_mode else "accept_edits"
    )
    try:

        def ready(where: str) -> None:
            lines = f"handrail: serving MCP on {where} (root {opts.root}, mode {mode})\n"
            if ns.no_auth:
                lines += (
                    "handrail: warning: --no-auth: any program or user on this machine can call "
                    "the tools and answer their approvals\n"
                )
            if generated is not None:
                from ..mcp._http_token import token_file_path

                port = urlsplit(where).port or 0
                lines += (
                    f"handrail: bearer token {generated} (also in {token_file_path(port)} "
                    "until the server stops)\n"
                )
            sys.stderr.write(lines)
            sys.stderr.flush()

        try:
            await serve(
                tools.registry,
                root=opts.root,
                http=http,
                mode=mode,
                allow=opts.allow,
                deny=opts.deny,
                ask=opts.ask,
                load_settings=opts.load_settings,
                settings=extra,
                ready=ready,
                setup=setup,
                offer_restore=ns.offer_restore,
                **access,
            )
        except ImportError as exc:  # no MCP SDK: the message says what to install
            raise CliError(str(exc)) from exc
    finally:
        for item in reversed(opened):
            await item.aclose()
        await tools.aclose()
    return 0
