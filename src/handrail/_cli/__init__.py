"""The `handrail` command: chat, tools, call, run, serve, trust, and a demo.

`handrail chat` (or `handrail` alone on a terminal) is the interactive coding agent;
`handrail demo` shows the runtime at work with no model and no API key; `handrail tools` lists
the tools a model would see; `handrail call` makes one call through the whole pipeline;
`handrail run` runs the agent headless on one prompt; `handrail serve` is the MCP server;
`handrail trust` lets a folder's own `.handrail/` settings and MCP servers apply. The
subcommands live in `_cli/_*.py`; what is slow to import (rich, the MCP SDK, the agent layer)
is imported only inside the command that needs it, so `handrail --help` stays quick and only
`serve` (or a configured MCP server) loads the MCP SDK.

Exit status: 0 ok, 1 a failed call (or an unexpected error), 2 a usage or configuration error,
130 interrupted (Ctrl-C), 143 terminated (SIGTERM); `run` adds 53 (turn limit) and 54 (budget).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import signal
import socket
import sys
import time
import types
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

from .._context import PermissionMode
from .._contract import Approval, ProgressEvent, Question, ToolCall, ToolResult
from .._registry import Registry
from .._tool import Tool, tool
from .._version import __version__
from ..runtime import Runtime

if TYPE_CHECKING:
    from ._common import SubParsers


def _demo_tools() -> list[Tool]:
    @tool(read_only=True, concurrency_safe=True)
    async def lookup(city: str) -> str:
        """Look up the weather for a city (a stand-in that takes 300 ms).

        Args:
            city: City name, e.g. "Oslo".
        """
        await asyncio.sleep(0.3)
        return f"{city}: 12 C, light rain"

    @tool(read_only=True, concurrency_safe=True, inline=True)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def save_note(text: str) -> str:
        """Save a note (changes state, so the default mode asks first)."""
        return f"saved {len(text)} characters"

    return [lookup, add, save_note]


def _line(result: ToolResult) -> str:
    status = "ok " if result.ok else (result.error.value if result.error else "err")
    first = result.content.splitlines()[0] if result.content else ""
    return f"  [{status}] {result.tool_name or '?'} ({result.duration * 1000:.1f} ms): {first}"


async def _demo() -> int:
    tools = _demo_tools()
    asked: list[Question] = []

    print(f"handrail {__version__} demo: a scripted 'model' calls tools through the runtime.\n")
    rt = Runtime(Registry(tools), mode=PermissionMode.DEFAULT)
    print("Tools the model would see:", ", ".join(t.name for t in rt.tools()))

    print("\n1. A batch: three read-only lookups run in parallel, plus two malformed calls.")
    calls = [
        ToolCall(id="c1", name="lookup", arguments='{"city": "Oslo"}'),
        ToolCall(id="c2", name="lookup", arguments='{"city": "Lima"}'),
        ToolCall(id="c3", name="lookup", arguments='{"city": "Pune"}'),
        ToolCall(id="c4", name="add", arguments='{"a": "one", "b": 2}'),
        ToolCall(id="c5", name="lookpu", arguments='{"city": "Rome"}'),
    ]
    t0 = time.perf_counter()
    batch = await rt.call_many(calls)
    print(f"   took {(time.perf_counter() - t0) * 1000:.0f} ms for 3 x 300 ms lookups")
    for r in batch:
        print(_line(r))
    print("   what the model reads for c4:\n     " + batch[3].content.replace("\n", "\n     "))

    print("\n2. A call that changes state needs approval: it comes back Interrupted.")
    r = await rt.call("save_note", '{"text": "buy milk"}')
    print(_line(r))
    r = await rt.resume(r, Approval.allow_once())  # pyright: ignore[reportArgumentType]
    print("   after the user allows it once:")
    print(_line(r))

    print("\n3. Streaming: calls start while the 'model' is still emitting them.")

    async def approve(request: Question) -> Approval:
        asked.append(request)
        return Approval.deny("The user said no in the demo.")

    rt2 = Runtime(Registry(_demo_tools()), approver=approve)
    t0 = time.perf_counter()
    async with rt2.stream() as ex:

        async def model() -> None:
            for i, city in enumerate(["Oslo", "Lima"]):
                await asyncio.sleep(0.2)
                ex.submit(ToolCall(id=f"s{i}", name="lookup", arguments={"city": city}))
                print(f"   t={time.perf_counter() - t0:.2f}s model emitted lookup({city})")
            ex.submit(ToolCall(id="s9", name="save_note", arguments={"text": "x"}))
            ex.close()

        feeder = asyncio.ensure_future(model())
        async for item in ex:
            if isinstance(item, ProgressEvent):
                continue
            print(f"   t={time.perf_counter() - t0:.2f}s result:" + _line(item)[1:])
        await feeder
    print(
        f"   the approver was asked {len(asked)} time(s) and denied; the model gets a clear result."
    )
    await _demo_files()
    from ._demo_agent import demo_agent

    await demo_agent()
    return 0


async def _demo_files() -> None:
    """Scene 4: the built-in coding tools on a throwaway workspace."""
    import tempfile
    from pathlib import Path

    from ..builtin import coding_tools

    with tempfile.TemporaryDirectory(prefix="handrail-demo-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        # A Windows-style file: the edit must keep its CRLF line endings.
        (root / "src" / "greet.py").write_bytes(
            b'def greet(name):\r\n    return "Hello, " + name\r\n'
        )
        (root / "README.md").write_text("# demo\n\nSay hello.\n")
        # The rule lets `touch` run without asking, to show that the OS sandbox still confines it.
        rt = Runtime(
            Registry(coding_tools(project_dir=root)),
            root=root,
            mode=PermissionMode.ACCEPT_EDITS,
            allow=["run_shell(touch:*)"],
        )
        print(f"\n4. Coding tools on a temporary workspace ({root}), mode accept_edits.")
        steps: list[tuple[str, dict[str, object]]] = [
            ("grep_search", {"pattern": "Hello", "output_mode": "content"}),
            (
                "edit_file",
                {"file_path": "src/greet.py", "old_string": '"Hello, "', "new_string": '"Hi, "'},
            ),
            ("read_file", {"file_path": "src/greet.py"}),
            (
                "edit_file",
                {"file_path": "src/greet.py", "old_string": '"Hello, "', "new_string": '"Hi, "'},
            ),
            ("write_file", {"file_path": "../outside.txt", "content": "escape"}),
            ("list_files", {"pattern": "**/*.py"}),
            ("run_shell", {"command": "grep -c Hi src/greet.py && wc -l < README.md"}),
            ("run_shell", {"command": "touch ok.txt ../escape.txt"}),
            ("run_shell", {"command": "echo working; sleep 30", "timeout_seconds": 1}),
        ]
        for name, args in steps:
            r = await rt.call(name, args)
            lines = [ln for ln in r.content.splitlines() if ln and ln != "[stderr]"]
            first = lines[0] if lines else ""
            if r.error is not None and r.error.value == "NONZERO_EXIT" and len(lines) > 1:
                first += " " + lines[1]  # the command's own error message
            status = "ok " if r.ok else (r.error.value if r.error else "err")
            print(f"  [{status}] {name}({', '.join(f'{k}={v!r}' for k, v in args.items())})")
            print("      " + first[:110])
        await rt.aclose()
        data = (root / "src" / "greet.py").read_bytes()
        crlf = data.count(b"\r\n") == 2
        print(f"   greet.py on disk now: {data!r} (CRLF line endings kept: {crlf})")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The main parser, and each subcommand's (whose errors name the subcommand)."""
    from . import _call, _chat, _mcp_auth, _run, _serve, _sessions, _tools, _trust
    from ._common import add_common_options

    parser = _Parser(
        prog="handrail",
        description="A tool runtime for LLM agents: validation, permissions, sandboxing and "
        "parallel execution for every tool call.",
    )
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands: dict[str, argparse.ArgumentParser] = {
        "demo": sub.add_parser(
            "demo", help="run a scripted demo of the runtime (no model, no API key)"
        )
    }
    for module in (_chat, _tools, _call, _run, _serve):
        command = module.add_parser(sub)
        add_common_options(command)
        commands[command.prog.split()[-1]] = command
    # `trust` runs no tool, so it takes no workspace or policy options.
    commands["trust"] = _trust.add_parser(cast("SubParsers", sub))
    commands["sessions"] = _sessions.add_parser(cast("SubParsers", sub))
    commands["mcp"] = _mcp_auth.add_parser(cast("SubParsers", sub))
    return parser, commands


def _without_httpx_cli() -> None:
    """Keep httpx from importing its own command line into this process.

    httpx's `__init__` imports `httpx._main` (click, rich's console, pygments: 60-100 ms, a
    tenth of `handrail run`'s start-up) whenever click is installed, as it is beside the MCP
    SDK. The `handrail` command never runs httpx's CLI, so a stand-in takes its place; library
    users are not affected (this runs only in the console script).
    """
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    stand_in = types.ModuleType("httpx._main")

    def httpx_main() -> None:
        raise SystemExit("httpx's command line is not available inside handrail")

    stand_in.main = httpx_main  # pyright: ignore[reportAttributeAccessIssue]
    sys.modules["httpx._main"] = stand_in


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `handrail` console script."""
    _without_httpx_cli()
    # The collector is paused while the command imports and builds what lives as long as the
    # process; `chat` and `run` freeze that and resume it once set up, the rest resume it now.
    gc.disable()
    try:
        return _main(argv)
    finally:
        gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    parser, commands = _parser()
    argv = _default_command(list(sys.argv[1:] if argv is None else argv), commands)
    # parse_known_args, so that `call` accepts options after its key=value arguments too.
    args, extra = parser.parse_known_args(argv)
    if args.command not in ("chat", "run"):
        gc.enable()
    if extra:
        if args.command != "call" or any(e.startswith("-") and e != "-" for e in extra):
            command = commands.get(args.command or "", parser)
            command.error(f"unrecognized arguments: {' '.join(extra)}")
        args.arguments = [*args.arguments, *extra]
    if args.command == "demo":
        try:
            return asyncio.run(_demo())
        except BrokenPipeError:
            _quiet_stdout()
            return 0
    if args.command is None:
        parser.print_help(sys.stdout)
        return 0
    if args.command == "trust":
        from ._trust import run

        return run(args)
    if args.command == "sessions":
        from ._sessions import run as run_sessions

        return run_sessions(args)
    if args.command == "mcp":
        from ._mcp_auth import run as run_mcp

        return run_mcp(args)
    return _dispatch(args)


def _default_command(argv: list[str], commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    """`handrail` alone on a terminal, or with only chat options, means `handrail chat`."""
    if argv and (argv[0] in commands or argv[0] in ("-h", "--help", "--version")):
        return argv
    if not argv:
        from ._chat import is_interactive

        return ["chat"] if is_interactive() else argv
    return ["chat", *argv] if argv[0].startswith("-") else argv


def _quiet_stdout() -> None:
    # `handrail ... | head`: the reader left; exit quietly like other CLI tools.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


async def _until_terminated(command: Coroutine[Any, Any, int]) -> int:
    """Run a command; SIGTERM or SIGHUP cancels it, so that it stops its processes first.

    SIGHUP is what a closed terminal sends: the session then ends as cleanly as on SIGTERM
    (its processes stopped, its temporary directory removed). The command runs as its own
    task: the signal cancels that task (like Ctrl-C cancels the main
    one), even when the signal lands while the command is already finishing. A plain signal
    handler rather than the loop's, because servers that capture and re-raise signals (uvicorn)
    restore and call it synchronously.
    """
    loop = asyncio.get_running_loop()
    inner = asyncio.ensure_future(command)
    terminated = 0

    def terminate(signum: int, frame: object) -> None:
        nonlocal terminated
        terminated = signum
        inner.cancel()
        loop.call_soon_threadsafe(lambda: None)  # wake the loop if it waits in select()

    try:
        previous = {sig: signal.signal(sig, terminate) for sig in (signal.SIGTERM, signal.SIGHUP)}
    except ValueError:  # not the main thread: leave the signals alone
        return await inner
    wake = _SignalWakeup(loop)
    try:
        return await inner
    except asyncio.CancelledError:
        if not terminated:
            raise
        return 128 + terminated
    finally:
        wake.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _SignalWakeup:
    """Wake the event loop when a signal lands, whichever thread the kernel gives it to.

    A plain handler runs on the main thread only once that thread runs Python again; when the
    kernel delivers the signal to another thread (a worker of the default executor) while the
    main thread sleeps in the loop's select(), nothing would wake it: a prompt waiting for a
    line would ignore Ctrl-C and SIGTERM. The wakeup fd makes the C-level handler write a
    byte that the loop is watching.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.read, self.write = socket.socketpair()
        self.read.setblocking(False)
        self.write.setblocking(False)
        self.previous = signal.set_wakeup_fd(self.write.fileno(), warn_on_full_buffer=False)
        loop.add_reader(self.read.fileno(), self._drain)

    def _drain(self) -> None:
        with contextlib.suppress(OSError):
            while self.read.recv(512):
                pass

    def close(self) -> None:
        signal.set_wakeup_fd(self.previous)
        self.loop.remove_reader(self.read.fileno())
        self.read.close()
        self.write.close()


def _dispatch(args: argparse.Namespace) -> int:
    from ..errors import HandrailError
    from ._common import CliError, common_options, setup_logging, warn

    setup_logging(args.debug)
    try:
        opts = common_options(args)
        if args.command == "tools":
            from ._tools import run
        elif args.command == "call":
            from ._call import run
        elif args.command == "run":
            from ._run import run
        elif args.command == "chat":
            from ._chat import run
        else:
            from ._serve import run
        return asyncio.run(_until_terminated(run(args, opts)))
    except CliError as exc:
        if args.debug:
            raise
        warn(f"error: {exc.message}")
        return exc.status
    except HandrailError as exc:  # configuration: a bad rule, a broken settings file
        if args.debug:
            raise
        warn(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("\n")
        return 130
    except BrokenPipeError:
        _quiet_stdout()
        return 0
    except Exception as exc:
        if args.debug:
            raise
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        warn(f"error: {detail} (rerun with --debug for the traceback)")
        return 1
