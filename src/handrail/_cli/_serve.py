"""`handrail serve`: the tools as an MCP server, over stdio or streamable HTTP.

Over stdio, stdout carries nothing but the protocol: the ready line and every log go to stderr.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

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
        '"handrail", "args": ["serve", "--root", "/path/to/project"]}}}',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765) instead of stdio",
    )
    return parser


def parse_http(value: str) -> tuple[str, int]:
    """`HOST:PORT` (or `[v6-address]:PORT`) as a (host, port) pair."""
    host, sep, port_text = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise CliError(f"--http {value}: expected HOST:PORT, e.g. 127.0.0.1:8765")
    return host, int(port_text)


async def run(ns: argparse.Namespace, opts: CommonOptions) -> int:
    """Serve until the client goes away (stdio) or the process is stopped."""
    http = parse_http(ns.http) if ns.http else None
    from ..mcp import serve  # the SDK itself is imported when the server starts

    tools = await load_tool_set(opts)
    extra = opts.settings
    mode = opts.mode or (
        extra.default_mode.value if extra is not None and extra.default_mode else "accept_edits"
    )
    try:

        def ready(where: str) -> None:
            sys.stderr.write(f"handrail: serving MCP on {where} (root {opts.root}, mode {mode})\n")
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
            )
        except ImportError as exc:  # no MCP SDK: the message says what to install
            raise CliError(str(exc)) from exc
    finally:
        await tools.aclose()
    return 0
