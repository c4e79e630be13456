"""Property-based fuzzing of every built-in tool through `Runtime.call` and `Runtime.call_many`.

Arguments are made two ways. Schema-guided: a small walker turns each tool's JSON Schema into a
Hypothesis strategy (types, enums, bounds, required and optional keys), with hostile values for
the fields that matter (paths with `..`, absolute paths outside the root, symlinks out, NUL
bytes, lone surrogates, huge and odd unicode strings), and then mutates a third of the calls
(missing required keys, extra keys, wrong types, deep nesting, a non-object). Raw: arbitrary
text, bytes and JSON (whole or cut short) as the `arguments`, under real and made-up names.

Every example runs over a fresh workspace: files in odd encodings and with odd names, symlinks
that point out of the root (to a canary folder the test owns, to /dev/zero, in a loop, to
nothing), a FIFO, and a canary tree outside the root holding a secret; in every permission
mode, with an approver that allows, denies or is absent, in English and Chinese. The properties,
checked after every call or example:

* no exception escapes; every result is a `ToolResult` whose `error` is None or an `ErrorCode`,
  with non-empty text when it failed, and all its text encodes as UTF-8; no tool crashed into
  the runtime's catch-all (an ERROR record on the `handrail` logger);
* nothing outside the root changed (names, bytes, modes and mtimes of the canary tree), and no
  result carries the canary's secret;
* nothing is left running after `aclose()` (no descendant of this process, no process whose
  command line carries this run's marker);
* nothing hangs: each call is bounded (see CALL_BOUND);
* no socket reaches past loopback: web_fetch resolves names through a resolver that answers only
  addresses the SSRF guard must refuse, and an audit hook refuses (and records) any connect or
  name lookup that is not loopback, so a guard bug fails the test instead of sending traffic.

run_shell runs only command lines this file built from a safe grammar (echo, printf, ls, cat of
files in the root, writes aimed at the canary, short sleeps, orphaned background sleeps): the
test's policy denies any other command line after it has been validated and parsed. Garbage
still goes through validation and the bash parser; only running it is withheld, because random
text can be `tail -f` or `rm -rf` and this suite must stay bounded and harmless.

Reproducible by default: examples are derandomized (a fixed seed) and no example database is
written. `HANDRAIL_FUZZ_RANDOM=1` explores new examples; `HANDRAIL_FUZZ_EXAMPLES=<n>` scales the
number of examples for a longer local run. A failure prints the falsifying draws and every call
with its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from handrail import (
    Approval,
    ApprovalRequest,
    ErrorCode,
    PermissionRequest,
    Registry,
    RunCommand,
    Runtime,
    Tool,
    ToolCall,
    ToolKind,
    ToolResult,
)
from handrail.builtin import Skill, WebFetch, coding_tools
from handrail.permissions import Decision, PermissionMode, Policy, Rule
from handrail.sandbox import sandbox_support

KEEPS_METADATA = sandbox_support().keeps_metadata
"""The OS sandbox keeps metadata outside the roots (read-only mounts) on this machine."""

# -- limits ------------------------------------------------------------------------------------

_SCALE = max(1, int(os.environ.get("HANDRAIL_FUZZ_EXAMPLES", "1")))
SCHEMA_EXAMPLES = 12 * _SCALE
"""Examples per tool for the schema-guided test (13 tools; each example is 1 to 7 calls)."""
RAW_EXAMPLES = 80 * _SCALE
"""Examples of raw arguments (1 to 3 calls each, any tool name)."""
CALL_BOUND = 30.0
"""Seconds one call (or one batch) may take before it counts as a hang. Nothing the fuzzer
runs needs more than about a second; the bound is generous because this 2-vCPU machine is
shared, and a real hang (a FIFO read, a 120 s shell default) is caught either way."""
PROCESS_GRACE = 3.0
"""Seconds after `aclose()` for the processes a session started to be gone and reaped. The
sandbox stops a tree with SIGTERM, then SIGKILL after 2 s; a process that outlives this is a
leak, not slowness."""

FUZZ = settings(
    max_examples=SCHEMA_EXAMPLES,
    deadline=None,
    derandomize=os.environ.get("HANDRAIL_FUZZ_RANDOM") is None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

MARK = f"hrfuzz{os.getpid()}"
"""Carried by every command line the fuzzer runs, to find its processes in /proc."""
SECRET = "hrfuzz-canary-5f1d0c7a9e"
"""Written only in the canary tree outside the root: no result may contain it."""
SECRET_REGEX = "hrfuzz-canary-[0-9a-f]+"
"""Finds the secret without containing it, so a result that shows it is a leak."""

TOOL_NAMES = (
    "edit_file",
    "enter_plan_mode",
    "exit_plan_mode",
    "grep_search",
    "list_files",
    "read_file",
    "run_shell",
    "shell_output",
    "skill",
    "todo_write",
    "tool_search",
    "web_fetch",
    "write_file",
)
DEFERRED = ("enter_plan_mode", "exit_plan_mode")


# -- the workspace -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workspace:
    """`fence/work/root` is the root; `fence/work/canary` and `fence/outside.txt` lie outside.

    Two levels below the fence, so the `../..` the fuzzer writes stays inside what the canary
    snapshot covers.
    """

    fence: Path
    root: Path
    canary: Path


def build_workspace(fence: Path) -> Workspace:
    """Wipe `fence` and lay out a fresh workspace in it (examples must not see each other)."""
    for child in fence.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    root, canary = fence / "work" / "root", fence / "work" / "canary"
    (canary / "sub").mkdir(parents=True)
    (canary / "secret.txt").write_text(f"{SECRET}\n")
    (canary / "sub" / "deep.txt").write_text(f"deep {SECRET}\n")
    (canary / "run.sh").write_text(f"#!/bin/sh\necho {SECRET} > {canary}/ran\n")
    (canary / "run.sh").chmod(0o755)
    (fence / "outside.txt").write_text(f"outside {SECRET}\n")
    (fence / "userskills").mkdir()
    files: dict[str, bytes] = {
        "a.txt": b"hello\nworld\n",
        "crlf.txt": b"one\r\ntwo\r\n",
        "bom.txt": "\ufeffbom text\n".encode(),
        "latin1.txt": "caf\xe9\n".encode("latin-1"),
        "sub/b.py": b"def f():\n    return 1\n",
        "sub/deeper/c.md": b"# title\n\ntext\n",
        "bin.dat": bytes(range(256)),
        "utf16.txt": "utf sixteen\n".encode("utf-16"),
        "mixed.txt": b"ok \xff\xfe bytes\n",
        "nul.txt": b"a\x00b\n",
        "longline.txt": b"xy" * 60_000 + b"\n",
        "odd\nname.txt": b"newline in the name\n",
        "caf\u00e9 \u4e2d.txt": b"unicode name\n",
        "empty.txt": b"",
        "image.png": b"\x89PNG\r\n\x1a\n" + bytes(32),
        ".gitignore": b"ignored/\n",
        "ignored/x.txt": b"ignored\n",
        ".git/config": b"[core]\n",
        ".handrail/skills/demo/SKILL.md": (
            b"---\nname: demo\ndescription: A demo skill for the fuzz test.\n"
            b"allowed_tools:\n  - run_shell(echo:*)\n---\nSay hello.\n"
        ),
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    links = {
        "link": "../canary",
        "secretlink": "../canary/secret.txt",
        "abslink": str(canary),
        "dangling": "../nowhere",
        "dangling_out": "../canary/created-through-a-link.txt",
        "loop1": "loop2",
        "loop2": "loop1",
        "devzero": "/dev/zero",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.mkfifo(root / "fifo")
    (root / os.fsdecode(b"latin\xe9.txt")).write_bytes(b"a name that is not UTF-8\n")
    return Workspace(fence=fence, root=root, canary=canary)


def snapshot_outside(ws: Workspace) -> dict[str, tuple[object, ...]]:
    """Every entry under the fence except the root: type, mode, size, mtime, bytes or target."""
    out: dict[str, tuple[object, ...]] = {}
    top = os.lstat(ws.fence)
    out["."] = (top.st_mode, top.st_mtime_ns)
    for dirpath, dirnames, filenames in os.walk(ws.fence, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = [d for d in dirnames if here / d != ws.root]
        for name in (*dirnames, *filenames):
            path = here / name
            if path == ws.root:
                continue
            st_ = os.lstat(path)
            if os.path.islink(path):
                content: object = os.readlink(path)
            elif os.path.isfile(path):
                content = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                content = None
            key = str(path.relative_to(ws.fence))
            out[key] = (st_.st_mode, st_.st_size, st_.st_mtime_ns, content)
    return out


# -- processes ---------------------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every process /proc shows now."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read().decode(errors="replace")
        except OSError:
            continue  # it exited while we looked
        fields_ = stat.rpartition(")")[2].split()
        table[int(entry.name)] = (int(fields_[1]), fields_[0])
    return table


def _descendants(pid: int, table: Mapping[int, tuple[int, str]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for child, (parent, _state) in table.items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _marked(table: Mapping[int, tuple[int, str]]) -> set[int]:
    found: set[int] = set()
    for pid in table:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if MARK.encode() in f.read():
                    found.add(pid)
        except OSError:
            continue
    return found


def leftover_processes(baseline: set[int], grace: float = PROCESS_GRACE) -> dict[int, str]:
    """Processes this example left (pid -> description), after polling for `grace` seconds."""
    deadline = time.monotonic() + grace
    while True:
        table = _proc_table()
        left = (_descendants(os.getpid(), table) - baseline) | _marked(table)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    described: dict[int, str] = {}
    for pid in sorted(left):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = "?"
        described[pid] = f"[{table.get(pid, (0, '?'))[1]}] {cmd[:120]}"
    return described


def kill_leftovers(left: Mapping[int, str]) -> None:
    """SIGKILL what an example left (ours: descendants, or marked with this run's MARK)."""
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# -- network tripwire --------------------------------------------------------------------------

_net_on = False
_net_events: list[str] = []


def _loopback(host: object) -> bool:
    if host is None or host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Refuses, before any packet, a connect or lookup past loopback while an example runs.
    if not _net_on:
        return
    if event in ("socket.connect", "socket.sendto"):
        address = args[-1]
        if isinstance(address, tuple) and address and not _loopback(address[0]):
            _net_events.append(f"{event} {address!r}")
            raise PermissionError(f"fuzz tripwire: {event} to {address!r}")
    elif event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex"):
        if args and not _loopback(args[0]):
            _net_events.append(f"{event} {args[0]!r}")
            raise socket.gaierror(socket.EAI_NONAME, "fuzz tripwire: no lookups")


sys.addaudithook(_audit)

_BLOCKED_ANSWERS = (
    ("127.0.0.1",),
    ("::1",),
    ("10.0.0.1",),
    ("169.254.169.254",),
    ("0.0.0.0",),
    ("fe80::1",),
    ("::ffff:127.0.0.1",),
    ("192.168.1.1", "127.0.0.2"),
    ("100.64.0.1",),
    ("224.0.0.1",),
)


async def blocked_resolve(host: str, port: int) -> list[str]:
    """A resolver that never asks the network and answers only addresses the guard refuses."""
    if "nx" in host:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return list(_BLOCKED_ANSWERS[zlib.crc32(host.encode(errors="replace")) % len(_BLOCKED_ANSWERS)])


# -- a loopback web server for web_fetch -------------------------------------------------------


class _Pages(BaseHTTPRequestHandler):
    """Pages that reach each branch of web_fetch's body handling."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        html = "<html><head><script>x()</script><title>T</title></head><body><nav>n</nav><h1>Hi</h1><p>caf\xe9 <a href='/text'>t</a></p></body></html>"
        pages: dict[str, tuple[int, str, bytes, dict[str, str]]] = {
            "/html": (200, "text/html; charset=utf-8", html.encode(), {}),
            "/latin": (200, "text/html; charset=latin-1", html.encode("latin-1"), {}),
            "/text": (200, "text/plain", "plain \u00e9\u4e2d\n".encode(), {}),
            "/json": (200, "application/json", b'{"a": [1, 2]}', {}),
            "/bin": (200, "application/octet-stream", bytes(range(256)), {}),
            "/sniff": (200, "", b"\x00\x01binary", {}),
            "/big": (200, "text/plain", b"line\n" * 60_000, {}),
            "/redirect": (302, "text/plain", b"", {"Location": "/html"}),
            "/loop": (302, "text/plain", b"", {"Location": "/loop"}),
            "/away": (302, "text/plain", b"", {"Location": "http://elsewhere.invalid/"}),
            "/inside": (302, "text/plain", b"", {"Location": "http://127.0.0.1:1/"}),
            "/badgzip": (200, "text/plain", b"not gzip", {"Content-Encoding": "gzip"}),
            "/500": (500, "text/plain", b"boom", {}),
        }
        status, ctype, body, headers = pages.get(path, (404, "text/plain", b"missing", {}))
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass(slots=True)
class FuzzEnv:
    """What the examples share, built once: the workspace's paths (rebuilt, same place, for
    every example), the web server's port, the tools (their schemas cost ~100 ms to build) and
    the strategies (recursive ones cost milliseconds to set up).

    Only `ws` and `port` are init fields: Hypothesis prints those of a dataclass in its
    reports, and the cached strategies refer back to this object.
    """

    ws: Workspace
    port: int
    tools: dict[str, Tool] = field(default_factory=dict[str, Tool], init=False, repr=False)
    keys: list[str] = field(default_factory=list[str], init=False, repr=False)
    """Every property name of every tool's schema."""
    safe_commands: set[str] = field(default_factory=set[str], init=False, repr=False)
    """Every command line the shell grammar made; the only ones run_shell may run."""
    _strategies: dict[str, st.SearchStrategy[Any]] = field(
        default_factory=dict[str, st.SearchStrategy[Any]], init=False, repr=False
    )

    def strategy(self, key: str, make: Callable[[], st.SearchStrategy[Any]]) -> Any:
        """The strategy cached under `key`, made on first use."""
        if key not in self._strategies:
            self._strategies[key] = make()
        return self._strategies[key]


def _fence_parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # tmpfs when there is one: every example rebuilds the workspace, and removing a dozen
    # folders costs ~40 ms on this machine's ext4 against well under 1 ms on tmpfs.
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm
    return tmp_path_factory.getbasetemp()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzEnv]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    fence = Path(tempfile.mkdtemp(prefix="fuzz-fence-", dir=_fence_parent(tmp_path_factory)))
    try:
        fuzz = FuzzEnv(ws=build_workspace(fence), port=server.server_address[1])
        registry = Registry(fuzz_tools(fuzz.ws, fuzz.port))
        fuzz.tools = {name: t for name in TOOL_NAMES if (t := registry.get(name)) is not None}
        fuzz.keys = sorted({k for t in fuzz.tools.values() for k in t.parameters["properties"]})
        yield fuzz
    finally:
        shutil.rmtree(fence, ignore_errors=True)
        if os.environ.get("HANDRAIL_FUZZ_STATS"):
            for name in sorted(_seconds):
                codes = {c: n for (t, c), n in sorted(_outcomes.items()) if t == name}
                print(f"\n{name}: {_seconds[name]:.2f} s {codes}", end="")
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- the runtime under test --------------------------------------------------------------------


class SafeShellPolicy(Policy):
    """The default policy, except that run_shell runs only command lines in `safe`.

    Everything else about the call (validation, parsing, roots, modes, approvals) is the
    runtime's own; a command line the fuzzer did not build from its grammar is denied here.
    """

    def __init__(self, safe: set[str]) -> None:
        super().__init__(allow=["web_fetch"])
        self.safe = safe

    def has_rules_for(self, names: tuple[str, ...]) -> bool:
        return names[0] == "run_shell" or super().has_rules_for(names)

    def decide(
        self,
        *,
        names: tuple[str, ...],
        kind: ToolKind,
        read_only: bool,
        requests: Sequence[PermissionRequest],
        mode: PermissionMode,
        read_roots: Sequence[Path],
        write_roots: Sequence[Path],
        session_allow: Sequence[Rule] = (),
        hook: Literal["allow", "ask", "deny"] | None = None,
        hook_reason: str = "",
        hidden_paths: Sequence[Path] = (),
    ) -> Decision:
        if names[0] == "run_shell" and not all(
            isinstance(q, RunCommand) and q.command in self.safe for q in requests
        ):
            return Decision(
                behavior="deny",
                reason="the fuzz test runs only command lines from its safe grammar",
                source="rule",
            )
        return super().decide(
            names=names,
            kind=kind,
            read_only=read_only,
            requests=requests,
            mode=mode,
            read_roots=read_roots,
            write_roots=write_roots,
            session_allow=session_allow,
            hook=hook,
            hook_reason=hook_reason,
            hidden_paths=hidden_paths,
        )


def fuzz_tools(ws: Workspace, port: int) -> list[Tool]:
    """`coding_tools` as shipped, with web_fetch's resolver and allow list and skill's user
    folder pointed at things this test owns."""
    tools = [t for t in coding_tools(project_dir=ws.root) if t.name not in {"web_fetch", "skill"}]
    tools.append(
        # No cache: a page fetched in one example must not answer the next one.
        WebFetch(resolve=blocked_resolve, allow_hosts=[f"127.0.0.1:{port}"], cache_entries=0)
    )
    tools.append(Skill(project_dir=ws.root, user_dir=ws.fence / "userskills"))
    return tools


async def _allow(request: ApprovalRequest) -> Approval:
    return Approval.allow_once()


async def _deny(request: ApprovalRequest) -> Approval:
    return Approval.deny("The fuzz test says no.")


Arguments = str | bytes | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Plan:
    """One example: calls in order, and how to run them."""

    calls: tuple[tuple[str, Arguments], ...]
    mode: PermissionMode
    approver: Literal["allow", "deny", "none"]
    batch: bool
    """Through `call_many` (one batch) instead of one `call` each."""
    activate: bool
    """Activate the deferred tools first (else they answer TOOL_NOT_ACTIVATED)."""
    locale: Literal["en", "zh"] = "en"
    """The language of model-facing text (each catalog must have every message)."""


_outcomes: Counter[tuple[str, str]] = Counter()
"""(tool, error code or "ok") -> calls, printed with HANDRAIL_FUZZ_STATS=1 to see what the
fuzzer reaches (a run that only ever gets INVALID_ARGS tests little)."""
_seconds: defaultdict[str, float] = defaultdict(float)


def _count(name: str, result: ToolResult, seconds: float) -> None:
    _outcomes[name, result.error.value if result.error else "ok"] += 1
    _seconds[name] += seconds


class _ErrorLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(
            f"{record.getMessage()}: {record.exc_info[1] if record.exc_info else ''}"
        )


def _args_text(arguments: Arguments) -> str:
    if isinstance(arguments, bytes):
        return arguments.decode(errors="replace")
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, default=repr)


def check_result(result: object, arguments: Arguments) -> None:
    """The per-call properties."""
    assert isinstance(result, ToolResult), f"not a ToolResult: {result!r}"
    assert result.error is None or (
        isinstance(result.error, ErrorCode) and result.error in ErrorCode
    ), f"error {result.error!r} is not an ErrorCode"
    assert result.ok == (result.error is None), f"ok={result.ok} with error={result.error}"
    assert isinstance(result.content, str)
    for text in (result.content, result.summary, result.diff or ""):
        # Every provider and MCP sends UTF-8: a lone surrogate here breaks the whole turn.
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise AssertionError(f"result text is not UTF-8 encodable: {text[:200]!r}") from exc
    if not result.ok:
        assert result.content.strip(), f"{result.error} with empty content"
    if SECRET not in _args_text(arguments):
        shown = result.content + result.summary + (result.diff or "")
        assert SECRET not in shown, f"the canary's secret leaked into a result: {shown[:300]!r}"


def _exact(arguments: Arguments) -> Arguments:
    # `Huge` prints short; the runtime gets a plain str or bytes, as from a provider.
    if isinstance(arguments, str):
        return str(arguments)
    return bytes(arguments) if isinstance(arguments, bytes) else arguments


def _call_arguments(arguments: Arguments) -> str | Mapping[str, Any]:
    # A `ToolCall` carries text or a mapping; bytes arrive decoded, as a provider would.
    if isinstance(arguments, bytes):
        return arguments.decode(errors="replace")
    return str(arguments) if isinstance(arguments, str) else arguments


async def _run_calls(rt: Runtime, plan: Plan) -> None:
    if not plan.batch:
        for name, given_arguments in plan.calls:
            arguments = _exact(given_arguments)
            note(f"call {name!r} {_args_text(arguments)[:300]!r}")
            start = time.monotonic()
            try:
                async with asyncio.timeout(CALL_BOUND):
                    result = await rt.call(name, arguments)
            except TimeoutError:
                raise AssertionError(f"{name} hung for {CALL_BOUND} s") from None
            note(f"  -> {result.error} {result.content[:200]!r}")
            _count(name, result, time.monotonic() - start)
            check_result(result, arguments)
        return
    calls = [
        ToolCall(
            id=f"c{i}",
            name=name,
            arguments=_call_arguments(arguments),
        )
        for i, (name, arguments) in enumerate(plan.calls)
    ]
    note(f"call_many {[(c.name, _args_text(c.arguments)[:200]) for c in calls]!r}")
    start = time.monotonic()
    try:
        async with asyncio.timeout(CALL_BOUND * len(calls)):
            batch = await rt.call_many(calls)
    except TimeoutError:
        raise AssertionError(f"the batch hung for {CALL_BOUND * len(calls)} s") from None
    assert [r.call_id for r in batch] == [c.id for c in calls], "results out of request order"
    for call, result in zip(calls, batch, strict=True):
        note(f"  -> {call.name}: {result.error} {result.content[:200]!r}")
        _count(call.name, result, (time.monotonic() - start) / len(calls))
        check_result(result, call.arguments)


async def _run_plan(ws: Workspace, env: FuzzEnv, plan: Plan) -> None:
    approver = {"allow": _allow, "deny": _deny, "none": None}[plan.approver]
    rt = Runtime(
        Registry(t for t in env.tools.values() if t.name != "tool_search"),
        root=ws.root,
        mode=plan.mode,
        policy=SafeShellPolicy(env.safe_commands),
        approver=approver,
        locale=plan.locale,
    )
    if plan.activate:
        rt.session.activated.extend(DEFERRED)
    try:
        await _run_calls(rt, plan)
    finally:
        await rt.aclose()


def run_plan(env: FuzzEnv, plan: Plan) -> None:
    """Run one example and check every property."""
    global _net_on
    ws = build_workspace(env.ws.fence)
    note(f"{plan.mode=} {plan.approver=} {plan.batch=} {plan.activate=} {plan.locale=}")
    before = snapshot_outside(ws)
    baseline = _descendants(os.getpid(), _proc_table())
    errors = _ErrorLog()
    logger = logging.getLogger("handrail")
    logger.addHandler(errors)
    _net_events.clear()
    _net_on = True
    try:
        asyncio.run(_run_plan(ws, env, plan))
    finally:
        _net_on = False
        logger.removeHandler(errors)
    assert not _net_events, f"a socket reached past loopback: {_net_events}"
    assert not errors.records, f"a tool crashed into the runtime's catch-all: {errors.records}"
    left = leftover_processes(baseline)
    kill_leftovers(left)
    assert not left, f"processes left running after aclose(): {left}"
    after = snapshot_outside(ws)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"files outside the root changed: {changed}"


# -- strategies: values for the fields that matter ---------------------------------------------


class Huge(str):
    """A long string that prints short: Hypothesis prints every draw of a failing example, and
    warns (an error here) about reprs of hundreds of kB."""

    def __repr__(self) -> str:
        return f"Huge({str.__repr__(self[:40])} + ... {len(self)} chars)"


class HugeBytes(bytes):
    """`Huge`, for bytes."""

    def __repr__(self) -> str:
        return f"HugeBytes({bytes.__repr__(self[:40])} + ... {len(self)} bytes)"


def huge(value: Arguments) -> Arguments:
    """`value` as `Huge` / `HugeBytes` when it is long; unchanged otherwise."""
    if isinstance(value, str) and len(value) > 1000:
        return Huge(value)
    if isinstance(value, bytes) and len(value) > 1000:
        return HugeBytes(value)
    return value


_HOSTILE_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\n",
        "\r\n\r\n",
        "\t",
        "\u202eevil",
        "\ufeff",
        "e\u0301",
        "\U0001f600",
        "\ud83d",
        "a\udfffb",
        "\u4e2d\u6587",
        "$(touch pwned)",
        "`id`",
        "${HOME}",
        "%00",
        "-rf",
        "--pre=sh",
        "*",
        "**/*",
        "{",
        "[",
        "\\",
        "'",
        '"',
        "a" * 300,
    ]
)


def hostile_strings(ws: Workspace) -> st.SearchStrategy[str]:
    """Strings a careless or malicious model sends: huge, NUL, unicode, traversal, outside."""
    return st.one_of(
        _HOSTILE_TEXT,
        st.text(max_size=60),
        st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=20).map(
            lambda s: Huge(s * 5000)
        ),
        st.integers(1, 8).map(lambda n: "../" * n + "x"),
        st.sampled_from(
            [str(ws.canary / "secret.txt"), str(ws.fence / "outside.txt"), "/etc/passwd"]
        ),
    )


def reader_paths(ws: Workspace) -> st.SearchStrategy[str]:
    """Paths for tools that read or list: anything, including system files."""
    return st.one_of(
        writer_paths(ws),
        st.sampled_from(
            ["/", "/etc/passwd", "/proc/self/environ", "/dev/zero", "~", "~/.ssh/id_rsa", "/tmp"]
        ),
    )


def writer_paths(ws: Workspace) -> st.SearchStrategy[str]:
    """Paths for tools that write: in the root, through symlinks out, `..` out, absolute out.

    Never system files: `..` climbs at most to the fence, so a confinement bug lands in the
    canary snapshot instead of on this machine.
    """
    return st.one_of(
        st.sampled_from(
            [
                "a.txt",
                "crlf.txt",
                "bom.txt",
                "latin1.txt",
                "sub/b.py",
                "sub",
                "sub/deeper/c.md",
                "bin.dat",
                "empty.txt",
                "image.png",
                "utf16.txt",
                "mixed.txt",
                "nul.txt",
                "longline.txt",
                "odd\nname.txt",
                "caf\u00e9 \u4e2d.txt",
                "latin\udce9.txt",
                "ignored/x.txt",
                ".git/config",
                ".gitignore",
                ".handrail/skills/demo/SKILL.md",
                "missing.txt",
                "new/dir/file.txt",
                ".",
                "./a.txt",
                "sub/../a.txt",
                "a.txt/",
                "A.TXT",
                "link",
                "link/secret.txt",
                "link/new.txt",
                "link/sub/deep.txt",
                "secretlink",
                "abslink/secret.txt",
                "dangling",
                "dangling_out",
                "loop1",
                "devzero",
                "fifo",
                "..",
                "../..",
                "../canary/secret.txt",
                "../canary/new.txt",
                "../../outside.txt",
                "../../new.txt",
                "sub/../../canary/secret.txt",
                "../root/a.txt",
                "a" * 300,
                Huge("x/" * 3000),
                "a\x00b",
                "\u202etxt.exe",
                "sp ace.txt",
            ]
        ),
        st.sampled_from(
            [
                str(ws.root / "a.txt"),
                str(ws.root / "made.txt"),
                str(ws.canary / "secret.txt"),
                str(ws.canary / "made.txt"),
                str(ws.fence / "outside.txt"),
                str(ws.fence),
                str(ws.root) + "/../canary/secret.txt",
            ]
        ),
        st.text(alphabet="ab./\\-_ \u00e9", min_size=1, max_size=12),
    )


def _quote(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def shell_commands(ws: Workspace, safe: set[str]) -> st.SearchStrategy[str]:
    """Command lines from a harmless grammar; each is recorded in `safe`, marked, and quick.

    Writes aim at the canary too (the OS sandbox must refuse them); orphans and double forks
    must die with the command (the PID namespace). Files are read only inside the root.
    """
    word = st.one_of(
        st.from_regex(r"[A-Za-z0-9_.,:=+-]{0,12}", fullmatch=True),
        st.text(max_size=30).map(_quote),
    )
    inside = st.sampled_from(["a.txt", "crlf.txt", "sub/b.py", "missing.txt", "bin.dat", "sub"])
    target = st.sampled_from(
        [
            "out.txt",
            "sub/new.txt",
            "link/new.txt",
            "../canary/new.txt",
            "../canary/secret.txt",
            "../../new.txt",
            str(ws.canary / "made.txt"),
            ".git/config",
            "fifo2",
        ]
    ).map(_quote)
    simple = st.one_of(
        st.lists(word, max_size=4).map(lambda ws_: " ".join(["echo", *ws_])),
        st.lists(word, max_size=3).map(lambda ws_: " ".join(["printf", "'%s\\n'", *ws_])),
        st.sampled_from(["true", "false", "pwd", "ls", "ls -la sub", "echo err >&2", "exit 3"]),
        inside.map(lambda p: f"cat {p}"),
        inside.map(lambda p: f"wc -c {p}"),
        st.tuples(st.integers(0, 5), inside).map(lambda t: f"head -n {t[0]} {t[1]}"),
        st.tuples(word, target).map(lambda t: f"echo {t[0]} > {t[1]}"),
        st.tuples(word, target).map(lambda t: f"echo {t[0]} >> {t[1]}"),
        # Metadata outside the roots is kept only where read-only mounts are available.
        *([target.map(lambda t: f"touch {t}")] if KEEPS_METADATA else []),
        target.map(lambda t: f"rm -f {t}"),
        target.map(lambda t: f"mkdir -p {t}"),
        target.map(lambda t: f"cp a.txt {t}"),
        st.sampled_from(
            [
                "sleep 0.1",
                "seq 1 20000",
                "yes | head -n 500",
                "kill -9 $$",
                f"(exec -a {MARK}-orphan sleep 5 &)",
                f"setsid sh -c 'exec -a {MARK}-setsid sleep 5' &",
                "sh -c 'exit 7'",
            ]
        ),
    )
    joiner = st.sampled_from([" && ", " || ", " ; ", " | ", "\n"])

    def line(parts: list[str], joins: list[str]) -> str:
        out = parts[0]
        for part, join in zip(parts[1:], joins, strict=False):
            out += join + part
        cmd = f"{out} # {MARK}"
        safe.add(cmd)
        return cmd

    return st.builds(line, st.lists(simple, min_size=1, max_size=3), st.lists(joiner, max_size=2))


def background_commands(safe: set[str]) -> st.SearchStrategy[str]:
    """Background jobs: some end at once, some still run when the session closes."""

    def mark(cmd: str) -> str:
        cmd = f"{cmd} # {MARK}"
        safe.add(cmd)
        return cmd

    return st.sampled_from(
        ["echo started", "sleep 0.3; echo done", "sleep 5", "seq 1 5000", "exit 4"]
    ).map(mark)


def urls(port: int) -> st.SearchStrategy[str]:
    """URLs to the loopback server (allowed), to blocked addresses, junk names, bad schemes."""
    here = f"http://127.0.0.1:{port}"
    paths = st.sampled_from(
        [
            "/html",
            "/latin",
            "/text",
            "/json",
            "/bin",
            "/sniff",
            "/big",
            "/redirect",
            "/loop",
            "/away",
            "/inside",
            "/badgzip",
            "/500",
            "/nope",
            "/",
        ]
    )
    junk_host = st.from_regex(r"[a-z0-9\u00e9-]{1,20}", fullmatch=True).map(
        lambda h: f"http://{h}.invalid/"  # a name, never an IP literal: the resolver answers
    )
    return st.one_of(
        paths.map(lambda p: here + p),
        st.tuples(paths, st.text(max_size=20)).map(lambda t: f"{here}{t[0]}?q={t[1]}"),
        st.sampled_from(
            [
                "http://localhost/",
                f"http://localhost:{port}/html",
                "http://[::1]:80/",
                "http://0x7f.1/",
                "http://127.1/",
                "http://2130706433/",
                "http://169.254.169.254/latest/meta-data/",
                "http://metadata.google.internal/",
                "http://10.0.0.1/",
                "http://[::ffff:127.0.0.1]/",
                "http://[fe80::1%25eth0]/",
                f"https://127.0.0.1:{port}/html",
                "file:///etc/passwd",
                "ftp://127.0.0.1/",
                "gopher://127.0.0.1/",
                "javascript:alert(1)",
                f"http://user:pw@127.0.0.1:{port}/html",
                "http://",
                "http:///x",
                "http://[::1/",
                "http://a b.invalid/",
                "http://nx-host.invalid/",
                "//127.0.0.1/",
                "127.0.0.1",
                "http://" + "a" * 70 + ".invalid/",
                "http://x.invalid/" + "p" * 2500,
            ]
        ),
        junk_host,
    )


def field_strategies(tool: str, env: FuzzEnv) -> dict[str, st.SearchStrategy[Any]]:
    """Per-tool overrides of the schema walker for the fields whose values matter."""
    ws = env.ws
    writes = tool in {"write_file", "edit_file"}
    paths = writer_paths(ws) if writes else reader_paths(ws)
    common: dict[str, st.SearchStrategy[Any]] = {"file_path": paths}
    if tool in {"list_files", "grep_search"}:
        common["path"] = st.none() | paths
        common["glob"] = st.none() | st.sampled_from(["*.py", "**/*.txt", "!*.md", "{a,b}*", "["])
    if tool == "list_files":
        common["pattern"] = st.sampled_from(
            ["**/*", "*.txt", "sub/**", "!**/*.md", "link/*", "{", "[!"]
        ) | st.text(max_size=20)
    if tool == "grep_search":
        common["pattern"] = st.sampled_from(
            ["hello", "o", "^def ", SECRET_REGEX, "(", "[", ".*", "\\", "caf\u00e9", "(a|b)*c"]
        ) | st.text(min_size=1, max_size=20)
        common["type"] = st.none() | st.sampled_from(["py", "md", "txt", "nonexistent", "-a"])
    if tool == "edit_file":
        common["old_string"] = st.sampled_from(
            [
                "hello",
                "world",
                "hello\nworld",
                "o",
                "one\ntwo",
                "one\r\ntwo",
                "caf\u00e9",
                "def f():",
                "",
                "missing",
            ]
        ) | st.text(max_size=20)
    if tool == "run_shell":
        common["command"] = shell_commands(ws, env.safe_commands)
        # Background jobs get their own commands (below), so a foreground call stays short.
        common["run_in_background"] = st.just(False)
    if tool == "shell_output":
        common["job_id"] = st.sampled_from(["sh-1", "sh-2", "sh-0", "sh-99", ""]) | st.text(
            max_size=10
        )
        common["wait_seconds"] = st.floats(0, 1)  # a running job is waited for at most 1 s
    if tool == "skill":
        common["name"] = st.sampled_from(["demo", "dem", "Demo", "none"]) | st.text(
            min_size=1, max_size=20
        )
    if tool == "tool_search":
        common["query"] = st.sampled_from(
            ["plan", "select:enter_plan_mode,exit_plan_mode", "select:", "select:nope", ""]
        ) | st.text(max_size=20)
    if tool == "web_fetch":
        common["url"] = urls(env.port)
    return common


# -- strategies: the schema walker and the mutator ---------------------------------------------


def from_schema(
    schema: Mapping[str, Any],
    defs: Mapping[str, Any],
    fields_: Mapping[str, st.SearchStrategy[Any]],
) -> st.SearchStrategy[Any]:
    """Valid values for `schema` (the subset of JSON Schema the tools use; anything else fails)."""
    if "$ref" in schema:
        return from_schema(defs[str(schema["$ref"]).rsplit("/", 1)[-1]], defs, fields_)
    if "anyOf" in schema:
        return st.one_of([from_schema(s, defs, fields_) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 40))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    if kind == "number":
        low = schema.get("exclusiveMinimum", schema.get("minimum"))
        return st.floats(
            min_value=low,
            max_value=schema.get("maximum"),
            exclude_min="exclusiveMinimum" in schema,
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = from_schema(schema["items"], defs, fields_)
        return st.lists(items, max_size=min(int(schema.get("maxItems", 4)), 4))
    if kind == "object":
        props: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))

        def prop(name: str) -> st.SearchStrategy[Any]:
            chosen = fields_.get(name)
            return chosen if chosen is not None else from_schema(props[name], defs, fields_)

        return st.fixed_dictionaries(
            {k: prop(k) for k in props if k in required},
            optional={k: prop(k) for k in props if k not in required},
        )
    raise AssertionError(f"the fuzz schema walker does not know {dict(schema)!r}")


def _with_keys(schema: Mapping[str, Any], require: set[str], omit: set[str]) -> dict[str, Any]:
    """`schema` with more keys required and some left out."""
    props = {k: v for k, v in schema["properties"].items() if k not in omit}
    return {**schema, "properties": props, "required": sorted({*schema["required"], *require})}


_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**20, max_value=10**400),
    st.floats(),
    st.text(max_size=20),
)


def json_values(keys: Sequence[str]) -> st.SearchStrategy[Any]:
    """Any JSON value, its object keys often the tools' own field names."""
    return st.recursive(
        _JSON_LEAVES,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(list(keys)) | st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=12,
    )


_NESTED = "@nested@"
"""Stands for deeply nested arrays until the arguments are JSON text: as a Python value, the
nesting would make repr and json.dumps recurse, deeper in the shrinker's stack than in the
first run."""


def _nest(text: str, depth: int) -> str:
    return text.replace(json.dumps(_NESTED), "[" * depth + "]" * depth)


@st.composite
def mutated(
    draw: st.DrawFn,
    base: Mapping[str, Any],
    keys: Sequence[str],
    junk: st.SearchStrategy[Any],
    hostile: st.SearchStrategy[str],
) -> Any:
    """`base` with one or two things wrong: a key missing, an extra key, a wrong type, a
    hostile string, deep nesting, or not an object at all."""
    value: Any = dict(base)
    for _ in range(draw(st.integers(1, 2))):
        how = draw(st.sampled_from(["drop", "extra", "retype", "hostile", "nested", "whole"]))
        present = sorted(value) if isinstance(value, dict) else []
        if how == "drop" and present:
            del value[draw(st.sampled_from(present))]
        elif how == "extra" and isinstance(value, dict):
            key = draw(
                st.sampled_from(["extra", "filepath", "File_Path", "cmd", "paths", "__proto__"])
                | st.sampled_from(keys)
                | st.text(max_size=12)
            )
            value[key] = draw(junk)
        elif how == "retype" and present:
            value[draw(st.sampled_from(present))] = draw(
                _JSON_LEAVES
                | st.sampled_from([float("nan"), float("inf"), -0.0, 1.0, "1", "true", [], {}])
                | junk
            )
        elif how == "hostile" and present:
            value[draw(st.sampled_from(present))] = draw(hostile)
        elif how == "nested" and present:
            value[draw(st.sampled_from(present))] = _NESTED
        elif how == "whole":
            value = draw(_JSON_LEAVES | st.lists(_JSON_LEAVES, max_size=3))
    return value


@st.composite
def encoded(draw: st.DrawFn, value: Any) -> Arguments:
    """As JSON text (ASCII or not, NaN allowed), as UTF-8 bytes, or as a mapping."""
    how = draw(st.sampled_from(["json", "json", "bytes", "mapping"]))
    if how == "mapping" and isinstance(value, dict):
        return cast(dict[str, Any], value)
    text = _nest(
        json.dumps(value, ensure_ascii=draw(st.booleans())), draw(st.sampled_from([50, 5000]))
    )
    return huge(text.encode("utf-8", "surrogatepass") if how == "bytes" else text)


def schema_calls(env: FuzzEnv, name: str) -> st.SearchStrategy[tuple[str, Arguments]]:
    """One call of tool `name`: valid for its schema, or (half the time) mutated."""

    def make() -> st.SearchStrategy[tuple[str, Arguments]]:
        schema = env.tools[name].parameters
        defs, fields_ = schema.get("$defs", {}), field_strategies(name, env)
        valid = from_schema(schema, defs, fields_)
        if name == "edit_file":  # the schema leaves both shapes optional; send each often
            one_edit = _with_keys(schema, {"old_string", "new_string"}, {"edits"})
            batch = _with_keys(schema, {"edits"}, {"old_string", "new_string", "replace_all"})
            valid = from_schema(one_edit, defs, fields_) | from_schema(batch, defs, fields_) | valid
        junk = env.strategy("json", lambda: json_values(env.keys))
        hostile = env.strategy("hostile", lambda: hostile_strings(env.ws))

        @st.composite
        def one(draw: st.DrawFn) -> tuple[str, Arguments]:
            value: Any = draw(valid)
            if draw(st.integers(0, 2)) == 0:  # a third of the calls
                value = draw(mutated(value, env.keys, junk, hostile))
            return name, draw(encoded(value))

        return one()

    return env.strategy(f"call:{name}", make)


_SNIPPETS = {
    "a.txt": ["hello", "world", "hello\nworld", "o", "l"],
    "crlf.txt": ["one", "one\ntwo", "two\n"],
    "bom.txt": ["bom", "bom text"],
    "latin1.txt": ["caf\u00e9", "caf"],
    "sub/b.py": ["def f():", "return 1", "    return 1\n"],
    "empty.txt": [""],
    "utf16.txt": ["utf", "sixteen"],
    "mixed.txt": ["ok", "bytes"],
    "longline.txt": ["xyxy"],
}
"""Text that occurs in each file of the workspace, so edits can succeed."""


@st.composite
def preludes(draw: st.DrawFn, tool: str, env: FuzzEnv) -> list[tuple[str, Arguments]]:
    """Calls that make the focus tool's deeper paths reachable: a full read then a change
    that can succeed, a background job before shell_output, plan mode before exit_plan_mode."""
    out: list[tuple[str, Arguments]] = []
    if tool in {"edit_file", "write_file"} and draw(st.booleans()):
        path = draw(st.sampled_from(sorted(_SNIPPETS)))
        out.append(("read_file", json.dumps({"file_path": path})))
        text = st.text(max_size=30) | st.sampled_from(["x\r\ny\n", "\u00e9\n", ""])
        if tool == "edit_file":
            edit = {
                "file_path": path,
                "old_string": draw(st.sampled_from(_SNIPPETS[path])),
                "new_string": draw(text),
                "replace_all": draw(st.booleans()),
            }
        else:
            edit = {"file_path": path, "content": draw(text)}
        out.append((tool, json.dumps(edit)))
    if tool == "shell_output" and draw(st.booleans()):
        cmd = draw(env.strategy("background", lambda: background_commands(env.safe_commands)))
        out.append(("run_shell", json.dumps({"command": cmd, "run_in_background": True})))
        wait = draw(st.sampled_from([0, 0.5]))
        out.append(("shell_output", json.dumps({"job_id": "sh-1", "wait_seconds": wait})))
    if tool == "exit_plan_mode" and draw(st.booleans()):
        out.append(("enter_plan_mode", "{}"))
    return out


@st.composite
def schema_plans(draw: st.DrawFn, tool: str, env: FuzzEnv) -> Plan:
    """Calls of `tool` (after a prelude, perhaps before another tool's call), and a setting."""
    calls = draw(preludes(tool, env))
    calls += draw(st.lists(schema_calls(env, tool), min_size=1, max_size=3))
    if draw(st.booleans()):
        calls.append(draw(schema_calls(env, draw(st.sampled_from(TOOL_NAMES)))))
    return Plan(
        calls=tuple(calls),
        mode=draw(st.sampled_from(list(PermissionMode))),
        approver=draw(st.sampled_from(["allow", "deny", "none"])),
        batch=draw(st.booleans()),
        activate=draw(st.booleans()) or tool == "exit_plan_mode",
        locale=draw(st.sampled_from(["en", "zh"])),
    )


_RAW_TEXTS = st.sampled_from(
    [
        "",
        " ",
        "null",
        "[]",
        '"a.txt"',
        "1e999",
        "NaN",
        "-Infinity",
        '{"file_path": "a.txt", "file_path": "../canary/secret.txt"}',
        '{"file_path": "a.txt"}garbage',
        '\ufeff{"file_path": "a.txt"}',
        "{'file_path': 'a.txt'}",
        '{"file_path": "\\ud800"}',
        '{"command": "echo \\u0000"}',
        '{"url": "http://127.0.0.1:1/"}',
        '{"todos": [' + '{"id": "1", "content": "x", "status": "pending"},' * 3 + "]}",
        Huge("[" * 5000),
        Huge('{"a":' * 5000),
        Huge('{"file_path": "a.txt"' + " " * 100_000 + "}"),
        Huge('{"file_path": "' + "\\u00e9" * 50_000 + '"}'),
    ]
)
_TOOL_NAMES_RAW = st.sampled_from(TOOL_NAMES) | st.sampled_from(
    [
        *("", "READ_FILE", "read-file", "Read_File", "mcp__x__y", "a" * 300, "\x00", "run_shell "),
        *("read_file\ud800", "\udcff"),  # echoed back escaped: the text stays sendable
    ]
)
_SURROGATES = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1)
"""Lone surrogates: a Python str may hold them (JSON text only as escapes)."""


def raw_plans(env: FuzzEnv) -> st.SearchStrategy[Plan]:
    """One to three calls of any name with arbitrary text, bytes, JSON (whole or cut short)
    or a mapping as the arguments."""

    def make() -> st.SearchStrategy[Plan]:
        values = env.strategy("json", lambda: json_values(env.keys))
        arguments: st.SearchStrategy[Arguments] = st.one_of(
            _RAW_TEXTS,
            st.text(max_size=200),
            _SURROGATES.map(lambda s: '{"file_path": "' + s + '"}'),
            st.dictionaries(st.sampled_from(env.keys), _SURROGATES, min_size=1, max_size=2),
            st.binary(max_size=200),
            _RAW_TEXTS.map(lambda s: huge(s.encode("utf-16"))),
            values.map(lambda v: huge(json.dumps(v))),
            st.tuples(values.map(json.dumps), st.integers(0, 200)).map(lambda t: t[0][: t[1]]),
            st.dictionaries(st.sampled_from(env.keys), values, max_size=4),
        )
        return st.builds(
            Plan,
            calls=st.lists(st.tuples(_TOOL_NAMES_RAW, arguments), min_size=1, max_size=3).map(
                tuple
            ),
            mode=st.sampled_from(list(PermissionMode)),
            approver=st.just("allow"),
            batch=st.booleans(),
            activate=st.booleans(),
            locale=st.sampled_from(["en", "zh"]),
        )

    return env.strategy("raw", make)


# -- the tests ---------------------------------------------------------------------------------


def test_the_fuzzer_covers_every_built_in_tool(env: FuzzEnv) -> None:
    shipped = {t.name for t in coding_tools(project_dir=env.ws.root)} | {"tool_search"}
    assert set(TOOL_NAMES) == shipped == set(env.tools)


def test_the_checks_catch_what_they_guard(env: FuzzEnv) -> None:
    # The properties are only as good as these checks: each must see the thing it guards.
    global _net_on
    ws = build_workspace(env.ws.fence)
    before = snapshot_outside(ws)
    (ws.canary / "secret.txt").write_text("changed\n")
    os.utime(ws.fence / "outside.txt", ns=(1, 1))
    after = snapshot_outside(ws)
    assert {k for k in before if before[k] != after.get(k)} >= {
        "work/canary/secret.txt",
        "outside.txt",
    }

    baseline = _descendants(os.getpid(), _proc_table())
    child = subprocess.Popen(["sleep", "30"])
    left: dict[int, str] = {}
    try:
        # An orphan (reparented away from this process) is found by its marker alone.
        subprocess.run(["bash", "-c", f"(exec -a {MARK}-orphan sleep 30 &)"], check=True)
        left = leftover_processes(baseline, grace=0.1)
        assert child.pid in left
        assert any(f"{MARK}-orphan" in cmd for pid, cmd in left.items() if pid != child.pid)
    finally:
        kill_leftovers({**left, child.pid: ""})
        child.wait(timeout=5)

    _net_events.clear()
    _net_on = True
    try:
        with socket.socket() as sock, pytest.raises(PermissionError):
            sock.connect(("192.0.2.1", 80))  # TEST-NET-1: refused by the hook before any packet
        with pytest.raises(socket.gaierror):
            socket.getaddrinfo("example.com", 80)
    finally:
        _net_on = False
    assert len(_net_events) == 2

    leak = ToolResult.failure(ErrorCode.EXECUTION_ERROR, f"cat says {SECRET}")
    with pytest.raises(AssertionError, match="secret leaked"):
        check_result(leak, "{}")
    with pytest.raises(AssertionError, match="not UTF-8"):
        check_result(ToolResult.failure(ErrorCode.INVALID_ARGS, "bad \ud800"), "{}")
    with pytest.raises(AssertionError, match="empty content"):
        check_result(ToolResult.failure(ErrorCode.INVALID_ARGS, " "), "{}")


@pytest.mark.parametrize("tool_name", TOOL_NAMES)
@FUZZ
@given(data=st.data())
def test_schema_guided_calls_keep_the_properties(
    env: FuzzEnv, tool_name: str, data: st.DataObject
) -> None:
    plan = data.draw(env.strategy(f"plan:{tool_name}", lambda: schema_plans(tool_name, env)))
    run_plan(env, plan)


@settings(FUZZ, max_examples=RAW_EXAMPLES)
@given(data=st.data())
def test_raw_arguments_keep_the_properties(env: FuzzEnv, data: st.DataObject) -> None:
    run_plan(env, data.draw(raw_plans(env)))


async def test_an_unknown_tool_name_with_a_lone_surrogate_gets_sendable_text(env: FuzzEnv) -> None:
    async with Runtime(Registry(t for t in env.tools.values() if t.name != "tool_search")) as rt:
        result = await rt.call("read_file\ud800", "{}")
    assert result.error is ErrorCode.TOOL_NOT_FOUND
    result.content.encode("utf-8")


@pytest.mark.skipif(not KEEPS_METADATA, reason="no mount namespace with mount_setattr here")
async def test_the_sandbox_keeps_metadata_outside_the_root(env: FuzzEnv) -> None:
    # Found by this fuzzer: Landlock does not cover utime/chmod/chown; the mount namespace's
    # read-only mounts do.
    ws = build_workspace(env.ws.fence)
    before = snapshot_outside(ws)
    tools = Registry(t for t in env.tools.values() if t.name != "tool_search")
    rt = Runtime(tools, root=ws.root, mode="bypass")
    try:
        for command in ("touch ../canary/secret.txt", "chmod 000 ../canary/sub"):
            await rt.call("run_shell", {"command": command})
    finally:
        await rt.aclose()
    after = snapshot_outside(ws)
    assert [k for k in before if before[k] != after.get(k)] == []
