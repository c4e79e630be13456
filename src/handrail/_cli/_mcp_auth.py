"""`handrail mcp login NAME` and `handrail mcp logout NAME`: sign in to an MCP server, or out.

A remote MCP server that needs OAuth is refused in a session until someone signed in to it:
sessions never wait on a browser. `login` does that ahead of time. It finds the server in
the user's and the workspace's `mcp.json` (the workspace's only once trusted), shows the
authorization URL (and opens the browser where there is a display), waits for the browser to
come back to handrail's loopback listener (`--timeout`, 300 s by default), and keeps the
sign-in in handrail's private state folder. `logout` deletes it. The logic is in
`handrail.mcp._client_login`; this parses and prints.

Exit status: 0 done, 1 the sign-in failed, 2 a usage or configuration error, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from ..display import terminal_text
from ..errors import ConfigurationError
from ._common import CliError, warn

if TYPE_CHECKING:
    from ..mcp import McpServerConfig
    from ._common import SubParsers

DEFAULT_TIMEOUT = 300.0


def add_parser(sub: SubParsers) -> argparse.ArgumentParser:
    """Register `handrail mcp`."""
    parser = sub.add_parser(
        "mcp",
        help="sign in to a remote MCP server (login NAME), or out (logout NAME)",
        description="A remote MCP server that asks for OAuth is refused in a session until\n"
        "you sign in to it once: `login` opens the sign-in in your browser (or prints its\n"
        "URL) and keeps the sign-in, private, in handrail's state folder; sessions then use\n"
        "and refresh it. `logout` forgets it. NAME is a server of your mcp.json or of the\n"
        "workspace's .handrail/mcp.json (once trusted).",
        epilog="examples:\n"
        "  handrail mcp login docs\n"
        "  handrail mcp login docs --no-browser   # print the URL only\n"
        "  handrail mcp logout docs",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("action", choices=("login", "logout"), help="sign in, or sign out")
    parser.add_argument("name", metavar="NAME", help="the server's name in mcp.json")
    parser.add_argument(
        "--root", metavar="DIR", help="the workspace whose mcp.json counts too (default: here)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for the browser (default: {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="only print the sign-in URL, do not open it"
    )
    return parser


def run(ns: argparse.Namespace) -> int:
    """Run `handrail mcp login|logout NAME`."""
    try:
        root = Path(ns.root or ".").resolve()
        config = _server(root, ns.name)
        if ns.action == "logout":
            return _logout(config)
        if ns.timeout <= 0:
            raise CliError("--timeout must be a positive number of seconds")
        return asyncio.run(_login(config, root, ns.timeout, open_browser=not ns.no_browser))
    except CliError as exc:
        warn(exc.message)
        return exc.status
    except KeyboardInterrupt:
        return 130


def _server(root: Path, name: str) -> McpServerConfig:
    from ..mcp import load_mcp_config

    try:
        servers = load_mcp_config(root)
    except ConfigurationError as exc:
        raise CliError(str(exc)) from exc
    config = servers.get(name)
    if config is None:
        known = ", ".join(sorted(n for n, c in servers.items() if c.url is not None)) or "none"
        raise CliError(f"no MCP server named {name!r} is configured (HTTP servers: {known})")
    return config


def _logout(config: McpServerConfig) -> int:
    from ..mcp._client_login import logout

    removed = logout(config)
    if removed is None:
        print(f"MCP server {config.name!r} had no stored sign-in.")
    else:
        print(f"Signed out of MCP server {config.name!r} (removed {removed}).")
    return 0


async def _login(config: McpServerConfig, root: Path, timeout: float, *, open_browser: bool) -> int:
    from ..mcp._client_login import LoginError, login

    async def show(url: str) -> None:
        sys.stderr.write(
            f"Sign in to MCP server {config.name!r} in your browser:\n\n  {terminal_text(url)}\n\n"
        )
        if open_browser and _has_display():
            await asyncio.to_thread(webbrowser.open, url)
        sys.stderr.write(f"Waiting up to {timeout:g} s for the browser to come back...\n")
        sys.stderr.flush()

    try:
        done = await login(config, browser=show, root=root, timeout=timeout)
    except LoginError as exc:
        warn(str(exc))
        return 1
    if done.signed_in:
        print(
            f"Signed in to MCP server {config.name!r} ({done.tools} tools); the sign-in is kept "
            f"in {done.path} and refreshed as needed."
        )
    else:
        print(f"MCP server {config.name!r} did not ask to sign in: its {done.tools} tools work.")
    return 0


def _has_display() -> bool:
    """Whether a graphical browser can open (elsewhere `webbrowser` may take the terminal)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
