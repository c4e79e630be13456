"""What the `handrail` subcommands share: common options, the tool set, output and errors.

Every subcommand (tools, call, run, serve) takes the same options to choose the workspace and
the permission policy, builds the same tool set (the built-in coding tools, then the tools of
the MCP servers configured in the user's and the workspace's `mcp.json`), and reports its own
failures as one line on stderr. Heavy imports (rich, the MCP SDK) happen only inside the
commands that need them.

The workspace's own `.handrail/` files apply in full only once the user trusted the folder
(`handrail trust`); until then the settings loader and `load_mcp_config` leave out what they
would widen, and say so once on stderr (through the `handrail` logger).
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._context import PermissionMode
from .._contract import Approver
from .._registry import Registry
from .._tool import Tool
from ..display import terminal_text
from ..permissions import Settings, read_settings_file
from ..runtime import Runtime

if TYPE_CHECKING:
    from rich.console import Console

    # What `ArgumentParser.add_subparsers` returns: argparse names no public type for it, and
    # the class is not subscriptable at run time.
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]  # pyright: ignore[reportPrivateUsage]

MCP_CONFIG = Path(".handrail") / "mcp.json"
"""Where a workspace lists the MCP servers whose tools join the built-in ones (once trusted)."""

MODES = tuple(m.value for m in PermissionMode)


class CliError(Exception):
    """A mistake on the command line or in the configuration: one line on stderr, exit 2."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def add_common_options(parser: argparse.ArgumentParser) -> None:
    """The workspace and policy options shared by `tools`, `call` and `serve`."""
    group = parser.add_argument_group("workspace and permissions")
    group.add_argument(
        "--root",
        metavar="DIR",
        help="workspace root: tools read and write under it (default: the current directory)",
    )
    group.add_argument(
        "--mode",
        choices=MODES,
        help="permission mode (default: the settings' default_mode, else default; "
        "serve: accept_edits)",
    )
    for name, what in (("allow", "runs without asking"), ("deny", "is refused"), ("ask", "asks")):
        group.add_argument(
            f"--{name}",
            action="append",
            default=[],
            metavar="RULE",
            help=f"a call matching RULE {what}, e.g. 'run_shell(npm test:*)' (repeatable)",
        )
    group.add_argument(
        "--settings",
        metavar="PATH",
        help="an extra settings file, merged over the user and project ones",
    )
    group.add_argument(
        "--no-settings",
        action="store_true",
        help="ignore the settings and MCP server files: ~/.config/handrail/{settings,mcp}.json "
        "and <root>/.handrail/{settings,settings.local,mcp}.json (a --settings file still "
        "applies)",
    )
    group.add_argument(
        "--debug", action="store_true", help="log debug details and show tracebacks on errors"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """The common options, checked."""

    root: Path
    mode: str | None
    allow: tuple[str, ...]
    deny: tuple[str, ...]
    ask: tuple[str, ...]
    settings: Settings | None
    """The extra settings file's contents (`--settings`), if any."""
    load_settings: bool
    debug: bool


def common_options(ns: argparse.Namespace) -> CommonOptions:
    """Check the common options.

    Raises:
        CliError: The root is missing or not a directory.
        ConfigurationError: The `--settings` file cannot be read or is invalid.
    """
    root = Path(ns.root).expanduser() if ns.root else Path.cwd()
    if not root.exists():
        raise CliError(f"--root {root}: no such directory")
    if not root.is_dir():
        raise CliError(f"--root {root}: not a directory")
    settings = read_settings_file(Path(ns.settings).expanduser()) if ns.settings else None
    return CommonOptions(
        root=root.resolve(),
        mode=ns.mode,
        allow=tuple(ns.allow),
        deny=tuple(ns.deny),
        ask=tuple(ns.ask),
        settings=settings,
        load_settings=not ns.no_settings,
        debug=ns.debug,
    )


def make_runtime(
    opts: CommonOptions,
    registry: Registry,
    approver: Approver | None = None,
    *,
    checkpoints: bool = False,
) -> Runtime:
    """A runtime over `registry` with the options' root, mode, rules and settings.

    `checkpoints`: record the workspace before every call that can change files, so that the
    session can be rewound (`run` and `chat`; a one-shot `call` keeps none).
    """
    return Runtime(
        registry,
        root=opts.root,
        mode=opts.mode,
        allow=opts.allow,
        deny=opts.deny,
        ask=opts.ask,
        settings=opts.settings,
        load_settings=opts.load_settings,
        approver=approver,
        checkpoints=checkpoints,
    )


@dataclass(slots=True)
class ToolSet:
    """The tools a command works with, and what must be closed when it is done."""

    registry: Registry
    closers: list[Callable[[], Awaitable[Any]]] = field(
        default_factory=list[Callable[[], Awaitable[Any]]]
    )

    async def aclose(self) -> None:
        """Stop what loading the tools started (MCP server processes, connections)."""
        for close in reversed(self.closers):
            try:
                await close()
            except Exception as exc:  # closing must not hide the command's own outcome
                logging.getLogger("handrail").warning("closing the MCP servers failed: %s", exc)


async def load_tool_set(opts: CommonOptions) -> ToolSet:
    """The built-in coding tools, then the tools of the configured MCP servers.

    MCP servers come from the user's `mcp.json` and `<root>/.handrail/mcp.json` (started only
    when the folder is trusted; none at all with `--no-settings`). They are best effort: a
    broken configuration or a server that does not start is reported on stderr and its tools
    are left out; the command goes on with the others. The MCP SDK is imported only when some
    server is configured.
    """
    from ..builtin import coding_tools

    local: list[Tool] = coding_tools(project_dir=opts.root)
    tools = ToolSet(registry=Registry(local))
    imported = await _mcp_tools(opts, tools)
    if imported:
        tools.registry = Registry(local, imported=imported)
    return tools


async def _mcp_tools(opts: CommonOptions, tools: ToolSet) -> list[Tool]:
    from ..errors import ConfigurationError
    from ..mcp import McpTools, load_mcp_config

    if not opts.load_settings:  # --no-settings: no configured server runs either
        return []
    try:
        servers = load_mcp_config(opts.root)  # an untrusted folder's servers are left out
        if not servers:
            return []
        mcp = McpTools(servers, root=opts.root)
        tools.closers.append(mcp.aclose)
        await mcp.start()  # a server that fails is logged (one line on stderr) and skipped
    except (ConfigurationError, ImportError) as exc:
        warn(f"MCP servers left out: {exc}")
        return []
    return list(mcp.tools)


def warn(message: str) -> None:
    """One line on stderr, prefixed with the program name (controls in it spelled out)."""
    # It may quote a settings file, a server's error or a tool's output.
    sys.stderr.write(f"handrail: {terminal_text(message)}\n")
    sys.stderr.flush()


def consoles() -> tuple[Console, Console]:
    """Rich consoles for stdout and stderr: styled on a terminal, plain text when piped.

    Rich decides from the stream and the environment (NO_COLOR, FORCE_COLOR, TERM=dumb).
    """
    from rich.console import Console

    return Console(highlight=False), Console(stderr=True, highlight=False)


class _OneLineFormatter(logging.Formatter):
    """Log records as one line each; an exception adds its type and message, not a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"handrail: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})" if str(exc) else f" ({type(exc).__name__})"
        return terminal_text(text)  # a record may quote an MCP server or a model's server


class _DebugFormatter(logging.Formatter):
    """Log records in full (--debug), with what they quote shown, not obeyed."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_text(super().format(record))


def setup_logging(debug: bool) -> None:
    """Send log records to stderr: warnings on one line each, or everything in full (--debug).

    stdout is reserved for the command's output (and for the protocol under `serve`).
    """
    handler = logging.StreamHandler(sys.stderr)
    if debug:
        handler.setFormatter(_DebugFormatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    else:
        handler.setFormatter(_OneLineFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # --debug: handrail's own debug records, but only INFO from libraries (asyncio, httpx, mcp).
    root.setLevel(logging.INFO if debug else logging.WARNING)
    logging.getLogger("handrail").setLevel(logging.DEBUG if debug else logging.NOTSET)


# Characters json.dumps(ensure_ascii=False) leaves as they are that a terminal still acts on or
# that reorder what it shows: DEL, C1 controls (U+009B is a one-character CSI), the line and
# paragraph separators, bidi marks and overrides, zero-width characters, the BOM.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def json_text(value: Any, *, indent: int | None = None) -> str:
    r"""JSON for stdout: the exact text (readable UTF-8), nothing a terminal would act on.

    Such characters only occur inside JSON strings, where `\uXXXX` means the same thing: a
    program reading the output gets the exact text, a person `cat`-ing it sees no effect.
    """
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
