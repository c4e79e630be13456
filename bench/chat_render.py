"""The terminal agent's rendering against the stream it shows, and against a naive renderer.

    python bench/chat_render.py                       # 1,000 chunks + 200 calls, about 7 minutes
    python bench/chat_render.py --renderers TurnView  # without the naive renderer: 2 minutes
    python bench/chat_render.py --quick               # 300 chunks + 60 calls, about 1 minute

The workload is a real run: `Agent` (the OpenAI Chat Completions client, streamed) against
`handrail.testing.ModelServer`, which runs in a child process (`python -m handrail.testing`)
so that its threads never take the benchmark's GIL, and the built-in coding tools in a
generated workspace (60 modules, mode bypass: no approvals). The script streams 1,000
`TextDelta` chunks of Markdown (paragraphs with bold and code, headings, bullet and numbered
lists, quotes, code fences, a table) 8 characters at a time and 200 tool calls: runs of reads,
searches and listings (which collapse into one line), edits with diffs (one long diff per
batch), new files, and shell commands, one per batch printing a line every 50 ms (progress
events). The server waits `--delay` (10 ms) before each streamed event, tool arguments
included: about 100 events a second, a fast model.

Runs, each in a fresh copy of the workspace and a fresh server:

- `stream`: the run with no renderer (the events are only recorded): the stream's own time,
  tools included. Everything else is compared with it.
- `TurnView`: the app's renderer wired as `ChatApp.busy` wires it: events go to
  `TurnView.handle` (finished blocks printed to scrollback once, complete paragraphs too), the
  live region (`_SyncLive`, transient, no auto refresh) is refreshed every 0.1 s by the app's
  own `_refresh` task, and the view is flushed when the run ends.
- `naive`: what a simple implementation does: one `rich.live.Live` holding the whole turn,
  the full Markdown of every text so far plus each call's block (the same `call_block`),
  rebuilt and redrawn on every event, `vertical_overflow="visible"` so nothing is hidden.
- `firehose TurnView`: the events recorded by `stream`, fed to TurnView as fast as it takes
  them (the event loop gets a turn between events, so the 0.1 s refresh still runs): its own
  throughput in events per second. (`--firehose naive` adds the naive renderer; it takes
  about as long as its paced run, whose CPU time already gives its throughput.)

The console is rich's, as the app makes it (`highlight=False, emoji=False`) at 100x30 with
`force_terminal=True`, writing to a sink that counts bytes and reads the frames rich draws:
every repaint of a live region starts by moving the cursor up over the previous frame, which
gives each frame's height. A frame taller than the terminal cannot be erased that way (the
cursor stops at the top) and leaves copies in the scrollback: a flicker frame. Render CPU is
`time.thread_time()` spent inside the renderer (event handling, printing, repaints); the
loop, the client and the tools are outside it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import math
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown

from handrail import Registry, Runtime
from handrail.agent import (
    Agent,
    Event,
    ModelClient,
    TextDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
)
from handrail.agent._terminal._app import _refresh, _SyncLive  # pyright: ignore[reportPrivateUsage]
from handrail.agent._terminal._render import UNICODE, call_block
from handrail.agent._terminal._view import TurnView
from handrail.builtin import coding_tools
from handrail.display import Display

COLUMNS, ROWS = 100, 30
CHUNK = 8
"""Characters of text (and of tool-argument JSON) per streamed event."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- the workload ----------------------------------------------------------------------------


def module_source(i: int) -> str:
    """A module of twelve small handlers (about 60 lines)."""
    out = [f'"""Handlers of group {i}."""\n', "from __future__ import annotations\n\n"]
    for j in range(12):
        out.append(f"\ndef handler_{i}_{j}(x: int) -> int:\n")
        out.append(f'    """Handler {j} of group {i}."""\n')
        out.append(f"    total = x + {j}\n")
        out.append(f"    return total * {i + 1}\n")
    return "".join(out)


def make_workspace(root: Path, modules: int) -> None:
    pkg = root / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The package."""\n')
    for i in range(modules):
        (pkg / f"module_{i:02d}.py").write_text(module_source(i))
    (root / "tests").mkdir()
    (root / "tests" / "conftest.py").write_text("")
    (root / "README.md").write_text("# pkg\n\nHandlers, grouped.\n")


def _long_edit(i: int) -> tuple[str, str]:
    """Replace one handler with a longer one: a diff of about 30 lines."""
    old = (
        f"def handler_{i}_5(x: int) -> int:\n"
        f'    """Handler 5 of group {i}."""\n'
        f"    total = x + 5\n"
        f"    return total * {i + 1}\n"
    )
    body = "".join(f"    if x == {n}:\n        return {n * (i + 1)}\n" for n in range(10))
    new = (
        f"def handler_{i}_5(x: int | None) -> int:\n"
        f'    """Handler 5 of group {i}, with the small cases spelled out."""\n'
        f"    if x is None:\n        return 0\n{body}"
        f"    total = x + 5\n"
        f"    return total * {i + 1}\n"
    )
    return old, new


def texts(k: int) -> list[str]:
    """The five texts of batch `k`: Markdown of every common kind."""
    a, b = 6 * k, 6 * k + 1
    return [
        f"I'll start with group **{k}**: reading `module_{a:02d}.py` and its neighbours, and "
        f"searching for the `handler_{a}_*` definitions.\n\n",
        f"The rest of the group:\n\n- `module_{a + 3:02d}.py` holds the *parsers*\n"
        f"- `module_{a + 4:02d}.py` the **handlers**\n- tests live in `tests/`\n\n",
        f"### Changes for group {k}\n\n1. Guard `handler_{a}_5` against `None`\n"
        f"2. Spell out the small cases\n3. Keep `handler_{b}_3` as it is:\n\n"
        f"```python\ndef handler(x: int | None) -> int:\n    if x is None:\n        return 0\n"
        f"    return sum(range(x))\n```\n\nApplying the edits now.\n\n",
        f"Adding `tests/test_group_{k}.py` so that the change is **covered**.\n\n",
        "Running the tests and a few checks:\n\n> the suite takes under a second here\n\n",
    ]


FINAL_PARTS = [
    "## Summary\n\nEvery group now guards its handlers against `None`, and the small cases are "
    "spelled out, so the **hot path** skips the multiplication.\n\n",
    "| group | handlers | edits | tests |\n|---|---|---|---|\n"
    + "".join(f"| {g} | 12 | 5 | 1 |\n" for g in range(6))
    + "\n",
    "What changed, file by file:\n\n"
    + "".join(f"- `src/pkg/module_{m:02d}.py`: `handler_{m}_5` rewritten\n" for m in range(8))
    + "\n",
    "To run the suite yourself:\n\n```bash\npython -m pytest tests -q\n```\n\n",
    "> Note: the handlers keep their signatures, so no caller changes.\n\n",
    "Next steps, if you want them:\n\n1. Type the remaining handlers\n2. Add property tests\n"
    "3. Remove the duplicated loops in `module_03.py`\n\n",
]


def pieces(text: str) -> int:
    return math.ceil(len(text) / CHUNK)


def final_text(chunks: int) -> str:
    """The closing answer, exactly `chunks` events long."""
    need = chunks * CHUNK
    out = ""
    i = 0
    while len(out) < need:
        out += FINAL_PARTS[i % len(FINAL_PARTS)]
        i += 1
    return out[: need - 1] + "\n"


def script(batches: int, chunks: int) -> list[dict[str, Any]]:
    """The model's replies: `batches` batches of 20 calls, then the answer (`chunks` in all)."""
    replies: list[dict[str, Any]] = []
    for k in range(batches):
        t = texts(k)
        files = [f"src/pkg/module_{6 * k + n:02d}.py" for n in range(6)]
        grep = {"pattern": f"def handler_{6 * k}_", "path": "src"}
        replies.append(
            {
                "text": t[0],
                "tool_calls": [
                    {"name": "read_file", "arguments": {"file_path": files[0]}},
                    {"name": "read_file", "arguments": {"file_path": files[1]}},
                    {"name": "read_file", "arguments": {"file_path": files[2]}},
                    {"name": "grep_search", "arguments": grep},
                    {"name": "list_files", "arguments": {"pattern": "src/**/*.py"}},
                ],
            }
        )
        extra = (
            {"name": "grep_search", "arguments": {"pattern": "return total", "path": files[4]}}
            if k % 2 == 0
            else {"name": "list_files", "arguments": {"path": "tests"}}
        )
        replies.append(
            {
                "text": t[1],
                "tool_calls": [
                    {"name": "read_file", "arguments": {"file_path": files[3]}},
                    {"name": "read_file", "arguments": {"file_path": files[4]}},
                    {"name": "read_file", "arguments": {"file_path": files[5]}},
                    {"name": "grep_search", "arguments": {"pattern": "total = x", "path": "src"}},
                    extra,
                ],
            }
        )
        edits: list[dict[str, Any]] = []
        for n in range(5):
            i = 6 * k + n
            if n == 0:
                old, new = _long_edit(i)
            else:
                old, new = f"    total = x + {n}\n", f"    total = x + {n}  # checked\n"
            edits.append(
                {
                    "name": "edit_file",
                    "arguments": {"file_path": files[n], "old_string": old, "new_string": new},
                }
            )
        replies.append({"text": t[2], "tool_calls": edits})
        test = "".join(
            f"def test_handler_{6 * k}_{j}() -> None:\n    assert {j} >= 0\n\n" for j in range(4)
        )
        replies.append(
            {
                "text": t[3],
                "tool_calls": [
                    {
                        "name": "write_file",
                        "arguments": {"file_path": f"tests/test_group_{k}.py", "content": test},
                    }
                ],
            }
        )
        progress = (
            'for i in $(seq 1 16); do echo "tests/test_group_$i.py::test_handler PASSED"; '
            'sleep 0.05; done; echo "16 passed in 0.80s"'
        )
        replies.append(
            {
                "text": t[4],
                "tool_calls": [
                    {"name": "run_shell", "arguments": {"command": progress}},
                    {"name": "run_shell", "arguments": {"command": f"wc -l {files[0]}"}},
                    {"name": "run_shell", "arguments": {"command": f"grep -c def {files[1]}"}},
                    {"name": "run_shell", "arguments": {"command": "ls tests"}},
                ],
            }
        )
    used = sum(pieces(r["text"]) for r in replies)
    if used >= chunks:
        raise SystemExit(f"the batches alone stream {used} chunks; ask for more than that")
    replies.append({"text": final_text(chunks - used)})
    for r in replies:
        r.update(chunk_size=CHUNK, delay=0.0)
    return replies


# -- the model server, in its own process ------------------------------------------------------


@contextlib.contextmanager
def model_server(replies: list[dict[str, Any]], delay: float, tmp: Path):
    """`python -m handrail.testing` serving `replies`; yields its URL."""
    path = tmp / "script.json"
    path.write_text(json.dumps([{**r, "delay": delay} for r in replies]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "handrail.testing", "--script", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the model server did not start: {proc.stderr.read()[-500:]}")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=10)
        problems = [x for x in err.splitlines() if x.startswith("problem:")]
        if problems:
            log("  model server problems: " + "; ".join(problems[:3]))


# -- the terminal -------------------------------------------------------------------------------

_UP = "\x1b[1A\x1b[2K"
# rich's Live repaints by moving over its previous frame: `\r ESC[2K` then `ESC[1A ESC[2K` for
# each further line (position_cursor); when it stops, transient, `\r` then one per line.
_REPAINT = re.compile(r"\r\x1b\[2K((?:\x1b\[1A\x1b\[2K)*)")
_CLEAR = re.compile(r"\r((?:\x1b\[1A\x1b\[2K)+)")


class Sink(io.TextIOBase):
    """A terminal that keeps nothing: counts bytes and reads the frames' heights."""

    def __init__(self) -> None:
        self.bytes = 0
        self.heights: list[int] = []

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> int:
        self.bytes += len(s.encode("utf-8", "replace"))
        for m in _REPAINT.finditer(s):
            self.heights.append(1 + len(m[1]) // len(_UP))
        for m in _CLEAR.finditer(s):
            self.heights.append(len(m[1]) // len(_UP))
        return len(s)


def make_console(sink: Sink) -> Console:
    return Console(
        file=sink,
        width=COLUMNS,
        height=ROWS,
        force_terminal=True,
        force_interactive=True,
        color_system="256",
        highlight=False,
        emoji=False,
    )


# -- renderers ----------------------------------------------------------------------------------


@dataclass
class Meter:
    """CPU seconds spent inside a renderer."""

    cpu: float = 0.0

    def timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def inner(*args: Any) -> Any:
            t = time.thread_time()
            try:
                return fn(*args)
            finally:
                self.cpu += time.thread_time() - t

        return inner


class MeteredLive(_SyncLive):
    """The app's live region, with its repaints' CPU counted."""

    meter: Meter

    def refresh(self) -> None:
        t = time.thread_time()
        try:
            super().refresh()
        finally:
            self.meter.cpu += time.thread_time() - t


class TurnViewRenderer:
    """TurnView wired as `ChatApp.busy` wires it."""

    name = "TurnView"

    def __init__(self, console: Console, meter: Meter) -> None:
        self.view = TurnView(console, UNICODE, markdown=True, history=[])
        self.meter = meter
        self.live = MeteredLive(
            self.view.live(),
            console=console,
            auto_refresh=False,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.live.meter = meter
        self.handle = meter.timed(self.view.handle)
        self._refresher: asyncio.Future[None] | None = None

    def __enter__(self) -> TurnViewRenderer:
        self.view.running = True
        self.live.__enter__()
        self._refresher = asyncio.ensure_future(_refresh(self.live))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
        t = time.thread_time()
        self.view.running = False
        self.view.footer = None
        self.view.flush(final=True)
        self.meter.cpu += time.thread_time() - t
        self.live.refresh()
        self.live.__exit__(None, None, None)


class NaiveRenderer:
    """The whole turn in one Live, its full Markdown re-rendered on every event."""

    name = "naive"

    def __init__(self, console: Console, meter: Meter) -> None:
        self.blocks: list[str | Display] = []
        self.index: dict[str, int] = {}
        self.live = Live(
            console=console,
            auto_refresh=False,
            transient=True,
            vertical_overflow="visible",
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.handle = meter.timed(self._handle)

    def __enter__(self) -> NaiveRenderer:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def _handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if self.blocks and isinstance(self.blocks[-1], str):
                self.blocks[-1] += event.text
            else:
                self.blocks.append(event.text)
        elif isinstance(event, ToolCallStarted) and event.display is not None:
            self.index[event.display.call_id] = len(self.blocks)
            self.blocks.append(event.display)
        elif isinstance(event, ToolCallProgress | ToolCallFinished) and event.display is not None:
            at = self.index.get(event.display.call_id)
            if at is not None:
                self.blocks[at] = event.display
        else:
            return
        parts: list[RenderableType] = [
            Markdown(b) if isinstance(b, str) else call_block(b, UNICODE) for b in self.blocks
        ]
        self.live.update(Group(*parts), refresh=True)


Renderer = TurnViewRenderer | NaiveRenderer


# -- runs ---------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    wall: float = 0.0
    cpu: float = 0.0
    drain: float = 0.0
    """From the last event to the last frame."""
    events: int = 0
    frames: int = 0
    tallest: int = 0
    flicker: int = 0
    mb: float = 0.0
    counts: Counter[str] = field(default_factory=Counter[str])
    recorded: list[Event] = field(default_factory=list[Event])
    outcome: str = ""


def _finish(result: Result, sink: Sink) -> Result:
    result.frames = len(sink.heights)
    result.tallest = max(sink.heights, default=0)
    result.flicker = sum(1 for h in sink.heights if h > ROWS)
    result.mb = sink.bytes / 1e6
    return result


async def live_run(
    kind: str, replies: list[dict[str, Any]], delay: float, template: Path, tmp: Path
) -> Result:
    """One agent run against the scripted server, rendered by `kind` (`stream`: not at all)."""
    work = tmp / f"ws-{kind}"
    shutil.copytree(template, work)
    result = Result(kind)
    sink = Sink()
    console = make_console(sink)
    meter = Meter()
    with model_server(replies, delay, tmp) as url:
        client = ModelClient("openai_chat", "scripted", base_url=f"{url}/v1", api_key="bench")
        rt = Runtime(Registry(coding_tools(project_dir=work)), root=work, mode="bypass")
        agent = Agent(client, rt, save=False, agents=False, max_turns=500)
        renderer: Renderer | None = None
        if kind == "TurnView":
            renderer = TurnViewRenderer(console, meter)
        elif kind == "naive":
            renderer = NaiveRenderer(console, meter)
        last = 0.0

        def on_event(event: Event) -> None:
            nonlocal last
            result.counts[type(event).__name__] += 1
            if renderer is None:
                result.recorded.append(event)
            else:
                renderer.handle(event)
            last = time.perf_counter()

        t0 = time.perf_counter()
        try:
            if renderer is None:
                run = await agent.run("Tidy up the handlers.", on_event=on_event)
            else:
                with renderer:
                    run = await agent.run("Tidy up the handlers.", on_event=on_event)
        finally:
            await agent.aclose()
            await rt.aclose()
        end = time.perf_counter()
    result.wall = end - t0
    result.drain = end - last
    result.cpu = meter.cpu
    result.events = sum(result.counts.values())
    result.outcome = run.subtype + (f": {run.error}" if run.error else "")
    shutil.rmtree(work, ignore_errors=True)
    return _finish(result, sink)


async def firehose(kind: str, events: list[Event]) -> Result:
    """The recorded events into a renderer as fast as it takes them."""
    sink = Sink()
    console = make_console(sink)
    meter = Meter()
    renderer: Renderer = (
        TurnViewRenderer(console, meter) if kind == "TurnView" else NaiveRenderer(console, meter)
    )
    result = Result(f"firehose {kind}")
    t0 = time.perf_counter()
    with renderer:
        for event in events:
            renderer.handle(event)
            await asyncio.sleep(0)  # the loop's turn: the 0.1 s refresh runs when due
        last = time.perf_counter()
    end = time.perf_counter()
    result.wall = end - t0
    result.drain = end - last
    result.cpu = meter.cpu
    result.events = len(events)
    return _finish(result, sink)


def report(stream: Result, rows: list[Result]) -> None:
    """The markdown table and what it says."""
    c = stream.counts
    print(
        f"\n## Rendering a turn: {c['TextDelta']} text chunks, {c['ToolCallStarted']} tool calls, "
        f"{c['ToolCallProgress']} progress events ({stream.events} events), {COLUMNS}x{ROWS}\n"
    )
    print(
        "| run | wall s | ÷ stream | render CPU s | CPU ÷ stream | events per CPU s | drain ms | "
        "frames | tallest frame | flicker frames | MB written |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| stream, no renderer | {stream.wall:.2f} | 1.00x | - | - | - | - | - | - | - | - |")
    for r in rows:
        paced = not r.name.startswith("firehose")
        ratio = f"{r.wall / stream.wall:.2f}x" if paced else "-"
        share = f"{r.cpu / stream.wall:.1%}" if paced else "-"
        print(
            f"| {r.name} | {r.wall:.2f} | {ratio} | {r.cpu:.2f} | {share} | "
            f"{r.events / max(r.cpu, 1e-9):,.0f} | {r.drain * 1e3:.0f} | {r.frames} | "
            f"{r.tallest} / {ROWS} | {r.flicker} | {r.mb:.1f} |"
        )
    paced = {r.name: r for r in rows if not r.name.startswith("firehose")}
    tv, nv = paced.get("TurnView"), paced.get("naive")
    if tv is not None:
        keeps = "keeps up with" if tv.wall / stream.wall <= 1.05 else "falls behind"
        print(
            f"\nTurnView {keeps} the stream: {tv.wall:.2f} s against {stream.wall:.2f} s "
            f"({tv.wall / stream.wall:.2f}x), {tv.cpu:.2f} s of render CPU "
            f"({tv.cpu / stream.wall:.1%} of the stream's time), {tv.flicker} flicker frames "
            f"(tallest {tv.tallest} of {ROWS} rows)."
        )
    if tv is not None and nv is not None:
        print(
            f"Naive: {nv.wall:.2f} s ({nv.wall / stream.wall:.2f}x the stream), render CPU "
            f"{nv.cpu:.2f} s = {nv.cpu / max(tv.cpu, 1e-9):.0f}x TurnView's; tallest frame "
            f"{nv.tallest} rows, {nv.flicker} flicker frames."
        )
    for r in rows:
        if r.name.startswith("firehose"):
            print(
                f"{r.name}: {r.events / r.wall:,.0f} events/s "
                f"({r.events} events in {r.wall:.2f} s)."
            )


async def main_async(args: argparse.Namespace) -> None:
    batches, chunks = (3, 300) if args.quick else (10, 1000)
    replies = script(batches, chunks)
    with tempfile.TemporaryDirectory(prefix="bench-render-") as name:
        tmp = Path(name)
        template = tmp / "template"
        make_workspace(template, 6 * batches)
        log(f"stream: {len(replies)} replies, {args.delay * 1e3:.0f} ms between events")
        stream = await live_run("stream", replies, args.delay, template, tmp)
        log(f"  stream   {stream.wall:6.2f} s  {stream.outcome}  {dict(stream.counts)}")
        rows: list[Result] = []
        for kind in args.renderers:
            r = await live_run(kind, replies, args.delay, template, tmp)
            log(f"  {kind:8} {r.wall:6.2f} s  cpu {r.cpu:.2f} s  {r.outcome}")
            rows.append(r)
        for kind in args.firehose:
            r = await firehose(kind, stream.recorded)
            log(f"  firehose {kind:8} {r.wall:6.2f} s  cpu {r.cpu:.2f} s")
            rows.append(r)
    report(stream, rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="300 chunks and 60 calls")
    ap.add_argument(
        "--delay", type=float, default=0.01, help="seconds between streamed events (0.01)"
    )
    ap.add_argument(
        "--renderers",
        nargs="+",
        choices=("TurnView", "naive"),
        default=["TurnView", "naive"],
        help="renderers run against the paced stream (both by default)",
    )
    ap.add_argument(
        "--firehose",
        nargs="*",
        choices=("TurnView", "naive"),
        default=["TurnView"],
        help="renderers fed the recorded events as fast as they take them (TurnView; the "
        "naive one takes about as long as its paced run)",
    )
    args = ap.parse_args()
    print(
        f"# terminal rendering — {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
