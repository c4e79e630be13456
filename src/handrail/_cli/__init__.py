"""The `handrail` command.

For now `handrail demo` shows the runtime at work, with no model and no API key. The full CLI
(tools, call, serve) comes with the provider and MCP layers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence

from ._context import PermissionMode
from ._contract import Approval, ApprovalRequest, ProgressEvent, ToolCall, ToolResult
from ._registry import Registry
from ._tool import Tool, tool
from ._version import __version__
from .runtime import Runtime


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
    asked: list[ApprovalRequest] = []

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

    async def approve(request: ApprovalRequest) -> Approval:
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
    return 0


async def _demo_files() -> None:
    """Scene 4: the built-in coding tools on a throwaway workspace."""
    import tempfile
    from pathlib import Path

    from .builtin import coding_tools

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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `handrail` console script."""
    parser = argparse.ArgumentParser(prog="handrail", description="A tool runtime for LLM agents.")
    parser.add_argument("--version", action="version", version=f"handrail {__version__}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="run a scripted demo of the runtime (no model, no API key)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        try:
            return asyncio.run(_demo())
        except BrokenPipeError:
            # `handrail demo | head`: the reader left; exit quietly like other CLI tools.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
    parser.print_help(sys.stdout)
    return 0
