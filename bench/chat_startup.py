"""Start-up of the terminal agent to a ready prompt, against python and other terminal agents.

    python bench/chat_startup.py                 # 7 samples per row, about 5 minutes
    python bench/chat_startup.py --quick         # 3 samples per row
    python bench/chat_startup.py --only handrail aider
    python bench/chat_startup.py --profile       # where `handrail chat`'s start-up goes

The first run installs the peers (about 5 minutes). What "ready" means: each sample starts
the command in a fresh pseudo-terminal (100x30, the kernel's echo off) whose output is read by
a terminal emulator (pyte) that answers what a terminal answers (prompt_toolkit asks for the
cursor position before it draws; vibe asks for the background colour and waits up to half a
second for it). As soon as the agent's prompt is on the screen, the harness types a probe
(`zqx`); the sample is the time from spawn until the probe shows on the screen. So it counts
everything up to an app that has drawn its prompt, reads keys and echoes them: what a user who
types the moment the prompt shows would see. Watching for the prompt alone would count a
prompt drawn before the app reads its keys; typing at spawn does not work for every agent
(kimi drops keys typed while it starts). Rows without a prompt (`python -c ...`) time the
process to its exit.

Every agent runs from its own virtual environment under the cache folder (never the project's
environment): handrail installed editable from this checkout, the peers pinned from PyPI.
Each venv uses the first Python that the package accepts, 3.11 first (this project's); a peer
that needs a newer one runs on it and its row says so. All rows get the same environment: an
empty HOME and XDG folders per row (kept across its samples, filled by an untimed warm-up as
a returning user's would be), TERM=xterm-256color, byte code cached under the cache folder
(this machine sets PYTHONDONTWRITEBYTECODE), keys that are dummies and model URLs that point
at a scripted model server on 127.0.0.1 (no agent sends a request before its prompt). Samples
are interleaved row by row; the table gives the median and the best.

The issue's target: handrail's median ready time at most 300 ms on this machine class.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyte
from ptyprocess import PtyProcess

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
COLUMNS, ROWS = 100, 30
PROBE = "zqx"
TARGET_MS = 300.0
SAMPLE_TIMEOUT = 60.0
"""Seconds one sample may take before it is given up."""
RETYPE_AFTER = 3.0
"""Seconds after which an unechoed probe is typed again (once)."""
INSTALL_TIMEOUT = 1200.0
"""Seconds one venv's pip install may take."""

Screen = list[str]
Check = Callable[[Screen], bool]


def cache_root() -> Path:
    """`$HANDRAIL_BENCH_CACHE/chat`, else `$XDG_CACHE_HOME/handrail-bench/chat` (~/.cache)."""
    if os.environ.get("HANDRAIL_BENCH_CACHE"):
        return Path(os.environ["HANDRAIL_BENCH_CACHE"]) / "chat"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "handrail-bench" / "chat"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# -- the rows ---------------------------------------------------------------------------------

Argv = Callable[[Path, str, Path], list[str]]
"""A command line from the venv's bin/, the model server's URL and the row's HOME."""


@dataclass
class Row:
    """One command to start, how to tell that it is ready, and what it needs installed."""

    name: str
    venv: str
    """The venv (under the cache folder) whose bin/ holds the command."""
    argv: Argv
    prompt: Check | None
    """True once the agent's prompt is on the screen; None: time the process to its exit."""
    env: Callable[[str, Path], dict[str, str]] = lambda url, home: {}
    """More environment, from the model server's URL and the row's HOME (may write config)."""
    settled: Check | None = None
    """Also report when this holds after the prompt (vibe: its backend finished starting)."""
    settled_label: str = ""
    what: str = "keys echo"
    """What the sample measures, for the table."""
    fallback: Argv | None = None
    """`--version` / `--help`, timed to exit instead when no prompt shows offline."""
    samples: list[float] = field(default_factory=list[float])
    settle_samples: list[float] = field(default_factory=list[float])
    status: str = "ok"
    note: str = ""
    python: str = ""
    version: str = ""


@dataclass(frozen=True)
class Venv:
    """A virtual environment the bench creates and fills."""

    name: str
    install: tuple[str, ...]
    """pip arguments (a pinned requirement, or `-e REPO`)."""
    dist: str
    """The distribution whose version the table shows."""
    pythons: tuple[str, ...] = ("3.11", "3.13", "3.12")
    """Interpreters to try, in order: this project's, then the newest (kimi-cli 1.51.0 fails
    to start on 3.12.1, a `super()` error in its slash commands)."""


VENVS = {
    "handrail": Venv("handrail", ("-e", str(REPO)), "handrail", ("3.11",)),
    "mini-swe-agent": Venv("mini-swe-agent", ("mini-swe-agent==2.4.6",), "mini-swe-agent"),
    "aider-chat": Venv("aider-chat", ("aider-chat==0.86.2",), "aider-chat"),
    # 1.52.0, the last release, only says the package is archived and runs an installer script
    # from the web; 1.51.0 is the last release that is the agent.
    "kimi-cli": Venv("kimi-cli", ("kimi-cli==1.51.0",), "kimi-cli"),
    "mistral-vibe": Venv("mistral-vibe", ("mistral-vibe==3.0.2",), "mistral-vibe"),
}


def _has_line(pred: Callable[[str], bool]) -> Check:
    return lambda screen: any(pred(line) for line in screen)


HANDRAIL_PROMPT = _has_line(lambda s: s.startswith("\u276f"))


def _kimi_config(url: str, home: Path) -> dict[str, str]:
    (home / "kimi.toml").write_text(
        'default_model = "scripted"\n\n[providers.local]\ntype = "openai_legacy"\n'
        f'base_url = "{url}/v1"\napi_key = "bench-key"\n\n[models.scripted]\n'
        'provider = "local"\nmodel = "scripted"\nmax_context_size = 128000\n'
    )
    return {}


def rows() -> list[Row]:
    """Every row, references first."""
    # litellm (mini, aider) downloads its price list at import unless told to use its own copy;
    # offline, that is what a user does.
    litellm = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return [
        Row(
            "python -c pass",
            "handrail",
            lambda b, u, h: [str(b / "python"), "-c", "pass"],
            None,
            what="process exit",
        ),
        Row(
            'python -c "import rich, prompt_toolkit"',
            "handrail",
            lambda b, u, h: [str(b / "python"), "-c", "import rich, prompt_toolkit"],
            None,
            what="process exit",
        ),
        Row(
            "prompt_toolkit `prompt()` alone",
            "handrail",
            lambda b, u, h: [
                str(b / "python"),
                "-c",
                "from prompt_toolkit import prompt; prompt('\u276f ')",
            ],
            HANDRAIL_PROMPT,
        ),
        Row(
            "handrail chat",
            "handrail",
            lambda b, u, h: [
                str(b / "handrail"),
                "chat",
                "--model",
                "anthropic:scripted",
                "--base-url",
                f"{u}/v1",
            ],
            HANDRAIL_PROMPT,
        ),
        Row(
            "mini (mini-swe-agent)",
            "mini-swe-agent",
            lambda b, u, h: [str(b / "mini"), "--model", "openai/scripted"],
            _has_line(lambda s: s.startswith("Submit message:")),
            env=lambda u, h: {
                **litellm,
                "MSWEA_CONFIGURED": "true",  # skip the first-run setup questions
                "OPENAI_API_KEY": "bench-key",
                "OPENAI_API_BASE": f"{u}/v1",
            },
            fallback=lambda b, u, h: [str(b / "mini"), "--help"],
        ),
        Row(
            "aider",
            "aider-chat",
            lambda b, u, h: [
                str(b / "aider"),
                "--model",
                "openai/scripted",
                "--openai-api-base",
                f"{u}/v1",
                "--openai-api-key",
                "bench-key",
                "--no-git",
                "--no-check-update",
                "--no-show-release-notes",
                "--analytics-disable",
                "--no-show-model-warnings",
            ],
            _has_line(lambda s: s == ">" or s.startswith("> ")),
            env=lambda u, h: litellm,
            fallback=lambda b, u, h: [str(b / "aider"), "--version"],
        ),
        Row(
            "kimi (kimi-cli)",
            "kimi-cli",
            lambda b, u, h: [str(b / "kimi"), "--config-file", str(h / "kimi.toml")],
            lambda screen: (
                any("\u2500\u2500 input" in s for s in screen)
                and any("context:" in s for s in screen)
            ),
            env=_kimi_config,
            fallback=lambda b, u, h: [str(b / "kimi"), "--version"],
        ),
        Row(
            "vibe (mistral-vibe)",
            "mistral-vibe",
            lambda b, u, h: [str(b / "vibe")],
            _has_line(lambda s: s == ">" or s.startswith("> ")),
            env=lambda u, h: {"MISTRAL_API_KEY": "bench-key"},
            settled=lambda screen: not any("Initializing" in s for s in screen),
            settled_label="backend up (`Initializing…` gone)",
            fallback=lambda b, u, h: [str(b / "vibe"), "--version"],
        ),
    ]


# -- venvs ------------------------------------------------------------------------------------


def find_python(version: str) -> str | None:
    """An interpreter of `version` (`3.11`): on PATH, or one pyenv installed."""
    found = shutil.which(f"python{version}")
    candidates = [found] if found else []
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        candidates += [
            str(p / "bin" / f"python{version}") for p in sorted(pyenv.glob(f"{version}.*"))
        ]
    for c in candidates:
        try:
            out = subprocess.run(
                [c, "-c", "import sys, venv; print(sys.version.split()[0])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.startswith(version):
            return c
    return None


def _stamp(venv: Venv) -> str:
    h = hashlib.sha256(repr((venv.install, venv.pythons)).encode())
    if "-e" in venv.install:  # handrail: reinstall when its dependencies change
        h.update((REPO / "pyproject.toml").read_bytes())
    return h.hexdigest()


def ensure_venv(venv: Venv, root: Path) -> tuple[Path | None, str]:
    """The venv's bin/ (installing it when needed), or None and why not."""
    where = root / "venvs" / venv.name
    stamp_file = where / ".bench-stamp"
    stamp = _stamp(venv)
    if stamp_file.exists() and stamp_file.read_text().split("\n")[0] == stamp:
        return where / "bin", stamp_file.read_text().split("\n")[1]
    tried: list[str] = []
    for version in venv.pythons:
        python = find_python(version)
        if python is None:
            tried.append(f"no python{version}")
            continue
        shutil.rmtree(where, ignore_errors=True)
        where.parent.mkdir(parents=True, exist_ok=True)
        log(f"installing {' '.join(venv.install)} with python{version} into {where}")
        logfile = root / "venvs" / f"{venv.name}.install.log"
        pip = [str(where / "bin" / "python"), "-m", "pip", "install"]
        with logfile.open("w") as out:
            try:
                ok = subprocess.run([python, "-m", "venv", str(where)], stdout=out, stderr=out)
                if ok.returncode == 0:
                    ok = subprocess.run(
                        [*pip, "--disable-pip-version-check", *venv.install],
                        stdout=out,
                        stderr=out,
                        timeout=INSTALL_TIMEOUT,
                    )
            except subprocess.TimeoutExpired:
                tried.append(f"python{version}: pip took over {INSTALL_TIMEOUT:.0f} s")
                continue
        if ok.returncode == 0:
            stamp_file.write_text(f"{stamp}\n{version}\n")
            return where / "bin", version
        lines = [x for x in logfile.read_text().splitlines() if x.startswith("ERROR")]
        reason = lines[-1] if lines else f"exit {ok.returncode}"
        tried.append(f"python{version}: {reason[:160]}")
    shutil.rmtree(where, ignore_errors=True)
    return None, "; ".join(tried)


def dist_version(bin_dir: Path, dist: str) -> str:
    out = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            f"import importlib.metadata as m; print(m.version({dist!r}))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() if out.returncode == 0 else "?"


# -- one sample -------------------------------------------------------------------------------


# Colour queries (OSC 10/11 `?`) a real terminal answers at once; an agent that asks (vibe)
# waits for the answer, up to a timeout, before it draws. pyte does not answer them.
_COLOUR_QUERY = re.compile(rb"\x1b\](1[01]);\?(\x07|\x1b\\)")


class Terminal(pyte.Screen):
    """A 100x30 screen answering what terminals answer: cursor position, attributes, colours."""

    def __init__(self, fd: int) -> None:
        super().__init__(COLUMNS, ROWS)
        self.fd = fd
        self.stream = pyte.ByteStream(self)

    def write_process_input(self, data: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self.fd, data.encode())

    def feed(self, data: bytes) -> None:
        """Take what the process wrote: answer colour queries, then draw."""
        for m in _COLOUR_QUERY.finditer(data):
            colour = b"0000/0000/0000" if m[1] == b"11" else b"ffff/ffff/ffff"  # dark theme
            with contextlib.suppress(OSError):
                os.write(self.fd, b"\x1b]" + m[1] + b";rgb:" + colour + m[2])
        self.stream.feed(data)


@dataclass
class Sample:
    """One start: seconds from spawn to each moment (None: it did not happen)."""

    t0: float = 0.0
    """`time.monotonic()` at spawn (the clock every process reads alike)."""
    ready_s: float | None = None
    """The probe echoed (or, without a prompt, the process exited)."""
    prompt_s: float | None = None
    settled_s: float | None = None
    retyped: bool = False
    screen: list[str] = field(default_factory=list[str])
    error: str = ""


def child_env(home: Path, extra: dict[str, str], pycache: Path) -> dict[str, str]:
    """The same environment for every row: its own HOME and XDG folders, one byte-code cache."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONPYCACHEPREFIX": str(pycache),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    env.update(extra)
    return env


def sample(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    prompt: Check | None,
    settled: Check | None,
    answer: bytes | None = None,
) -> Sample:
    """Spawn `argv` in a pty; time it to its echoed probe (or to its exit when `prompt` is None).

    `answer` is typed at the prompt instead of the probe (Ctrl-D to quit); the sample then
    waits for the process to exit.
    """
    out = Sample(t0=time.monotonic())
    proc = PtyProcess.spawn(
        list(argv), cwd=str(cwd), env=env, dimensions=(ROWS, COLUMNS), echo=False
    )
    screen = Terminal(proc.fd)
    typed_at: float | None = None
    try:
        while True:
            now = time.monotonic() - out.t0
            if now > SAMPLE_TIMEOUT:
                out.error = f"no {'echo' if prompt else 'exit'} within {SAMPLE_TIMEOUT:.0f} s"
                break
            waiting = typed_at is not None and out.ready_s is None and not out.retyped
            if waiting and typed_at is not None and now - typed_at > RETYPE_AFTER:
                os.write(proc.fd, answer or PROBE.encode())  # the first was dropped: again
                out.retyped = True
            readable, _, _ = select.select([proc.fd], [], [], 0.05)
            if not readable:
                continue
            try:
                data = os.read(proc.fd, 65536)
            except OSError:  # EIO: the process closed the terminal (exited)
                data = b""
            if not data:
                if prompt is None or answer is not None:
                    out.ready_s = time.monotonic() - out.t0
                else:
                    out.error = "exited before its prompt"
                break
            screen.feed(data)
            if prompt is None:
                continue
            lines = screen.display
            if typed_at is None and prompt(lines):
                out.prompt_s = typed_at = time.monotonic() - out.t0
                os.write(proc.fd, answer or PROBE.encode())
            if answer is not None:
                continue
            if typed_at is not None and out.ready_s is None and any(PROBE in s for s in lines):
                out.ready_s = time.monotonic() - out.t0
                if settled is None:
                    break
            if out.ready_s is not None and settled is not None and settled(lines):
                out.settled_s = time.monotonic() - out.t0
                break
    finally:
        out.screen = [s.rstrip() for s in screen.display if s.strip()]
        stop(proc)
    return out


def stop(proc: PtyProcess) -> None:
    """End the sample's process group and anything else left in its session (by pid)."""
    pid = proc.pid
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        for leftover in session_members(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(leftover, sig)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and (proc.isalive() or session_members(pid)):
            time.sleep(0.02)
        if not proc.isalive() and not session_members(pid):
            break
    with contextlib.suppress(OSError):
        proc.close(force=True)


def session_members(sid: int) -> list[int]:
    """Processes still in session `sid` (a backend the agent started, say)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields_ = stat.rsplit(")", 1)[1].split()
        if int(fields_[3]) == sid and fields_[0] != "Z":  # field 6 of proc(5): session id
            found.append(int(entry.name))
    return found


# -- the run ----------------------------------------------------------------------------------


def run(selected: list[Row], samples: int, root: Path) -> None:
    """Install what is missing, then take a warm-up and `samples` samples of each row."""
    from handrail.testing import ModelServer

    pycache = root / "pycache"
    homes = root / "homes"
    shutil.rmtree(homes, ignore_errors=True)  # every run starts from empty homes
    bins: dict[str, tuple[Path, str]] = {}
    for row in selected:
        venv = VENVS[row.venv]
        if venv.name not in bins:
            got, python = ensure_venv(venv, root)
            if got is None:
                row.status, row.note = "not installed", python
                log(f"skip {row.name}: does not install ({python})")
                continue
            bins[venv.name] = (got, python)
        row.python = bins[venv.name][1]
        if row.name == "handrail chat" or row.venv != "handrail":  # not for the references
            row.version = dist_version(bins[venv.name][0], venv.dist)
    runnable = [r for r in selected if r.status == "ok"]
    if not runnable:
        return
    with ModelServer([]) as server, tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
        for rep in range(-1, samples):
            shift = rep % len(runnable)  # rotate the order so no row always goes first
            for row in runnable[shift:] + runnable[:shift]:
                if row.status == "ok":
                    _one(row, rep, bins[row.venv][0], server.url, homes, Path(tmp), pycache)


def _one(
    row: Row, rep: int, bin_dir: Path, url: str, homes: Path, tmp: Path, pycache: Path
) -> None:
    slug = re.sub(r"\W+", "-", row.name).strip("-")
    home = homes / slug
    home.mkdir(parents=True, exist_ok=True)
    cwd = tmp / slug  # an empty working folder (no git repository)
    cwd.mkdir(exist_ok=True)
    env = child_env(home, row.env(url, home), pycache)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    got = sample(
        row.argv(bin_dir, url, home), cwd=cwd, env=env, prompt=row.prompt, settled=row.settled
    )
    label = "warm-up" if rep < 0 else f"sample {rep + 1}"
    if got.ready_s is None:
        log(f"  {row.name:42} {label:9} FAILED: {got.error}")
        for line in got.screen[-6:]:
            log(f"      | {line[:96]}")
        if rep < 0 and row.fallback is not None and row.prompt is not None:
            # No prompt offline: time its --version / --help instead, labelled as such.
            row.argv, row.prompt, row.settled = row.fallback, None, None
            row.what = f"`{' '.join(row.fallback(bin_dir, url, home)[1:])}` exit (no prompt)"
            log(f"  {row.name}: timing {row.what} instead")
            return
        row.status, row.note = "error", got.error
        return
    settled = (
        f", {row.settled_label} at {got.settled_s * 1e3:.0f} ms"
        if got.settled_s is not None
        else ""
    )
    retyped = " (probe typed twice)" if got.retyped else ""
    log(f"  {row.name:42} {label:9} {got.ready_s * 1e3:7.0f} ms{retyped}{settled}")
    if rep < 0:
        if row.prompt is not None:
            log("      the screen when ready (last lines):")
            for line in got.screen[-4:]:
                log(f"      | {line[:96]}")
        return
    row.samples.append(got.ready_s)
    if got.settled_s is not None:
        row.settle_samples.append(got.settled_s)


def report(selected: list[Row], samples: int) -> None:
    """The markdown table: medians, bests, and the ratios to handrail and to `python -c pass`."""

    def med(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None

    by_name = {r.name: r for r in selected}
    base = med(by_name["python -c pass"].samples) if "python -c pass" in by_name else None
    hr = med(by_name["handrail chat"].samples) if "handrail chat" in by_name else None

    def ratios(m: float) -> str:
        vs_hr = f"{m / hr:.2f}x" if hr else "-"
        vs_py = f"{m / base:.1f}x" if base else "-"
        return f"{vs_hr} | {vs_py}"

    print(f"\n## Start-up to a ready prompt (median of {samples} samples)\n")
    print("| agent | version | Python | timed until | median ms | best ms | ÷ handrail | ÷ pass |")
    print("|---|---|---|---|---|---|---|---|")
    for r in selected:
        m = med(r.samples)
        if r.status != "ok" or m is None:
            print(f"| {r.name} | {r.version or '-'} | - | - | {r.status}: {r.note[:140]} | | | |")
            continue
        print(
            f"| {r.name} | {r.version} | {r.python} | {r.what} | {m * 1e3:.0f} | "
            f"{min(r.samples) * 1e3:.0f} | {ratios(m)} |"
        )
        s = med(r.settle_samples)
        if s is not None:
            print(
                f"| {r.name} | | | {r.settled_label} | {s * 1e3:.0f} | "
                f"{min(r.settle_samples) * 1e3:.0f} | {ratios(s)} |"
            )
    if hr is not None:
        verdict = "met" if hr * 1e3 <= TARGET_MS else "NOT met"
        print(
            f"\nTarget: handrail chat ready in ≤ {TARGET_MS:.0f} ms: {hr * 1e3:.0f} ms, {verdict}."
        )


# -- --profile --------------------------------------------------------------------------------


# The chat's start-up, step by step: the driver imports in the order the command does, marking
# the time after each step, wraps the steps after the imports, then runs the real `main()`.
# Importing ahead moves no cost, it only names it. BENCH_GC_OFF=1 tries one fix: no garbage
# collection until the prompt is drawn (then `gc.freeze()`, as `_chat` already does, and on).
_DRIVER = """
import os, sys, time
if os.environ.get("BENCH_GC_OFF"):
    import gc
    gc.disable()
_marks = os.environ.get("BENCH_MARKS")
_out = open(_marks, "a") if _marks else None
def mark(name):
    if _out is not None:
        _out.write(f"{time.monotonic()!r}\\t{name}\\n"); _out.flush()
mark("interpreter up (python, site)")
import handrail._cli as cli
mark("import handrail._cli: the handrail package (runtime, pydantic, ...)")
from handrail._cli import _call, _chat, _run, _serve, _tools, _trust
mark("the subcommands' modules (the parser imports them all)")
import rich.console, handrail.agent
mark("import handrail.agent (loop, model client, events) + rich.console")
import handrail.agent._terminal._app
mark("import the chat UI (rich.markdown: markdown_it, pygments)")
import handrail.builtin
mark("import handrail.builtin (the coding tools)")
import handrail.agent._terminal._input as _input
mark("import prompt_toolkit (+ the input module)")

def gc_back():
    if os.environ.get("BENCH_GC_OFF"):
        gc.freeze()
        gc.enable()

def wrap(owner, name, before, after, hook=None):
    inner = getattr(owner, name)
    if name in ("load_tool_set", "read"):
        async def outer(*a, **k):
            mark(before)
            if hook: hook()
            try:
                return await inner(*a, **k)
            finally:
                if after: mark(after)
    else:
        def outer(*a, **k):
            mark(before)
            try:
                return inner(*a, **k)
            finally:
                if after: mark(after)
    setattr(owner, name, outer)

wrap(_chat, "load_tool_set", "parse the options, make the model client", "load_tool_set: the tools")
wrap(_input.PromptInput, "__init__", "runtime, agent, app, banner", "PromptSession built")
wrap(_input.PromptInput, "read", "first prompt_async: draw the prompt", None, gc_back)
sys.argv = ["handrail", *sys.argv[1:]]
sys.exit(cli.main())
"""

# Not handrail: what a prompt-first start would give. The prompt (with a status line) is up
# first; a thread imports the modules `handrail chat` needs behind it.
_PROMPT_FIRST = """
import gc, threading
gc.disable()
import asyncio
from prompt_toolkit import PromptSession

def load():
    import importlib
    for name in ("handrail._cli._chat", "rich.console", "handrail.agent",
                 "handrail.agent._terminal._app", "handrail.agent._terminal._input",
                 "handrail.builtin"):
        importlib.import_module(name)
    gc.freeze()
    gc.enable()

async def main():
    session = PromptSession(bottom_toolbar=" anthropic:scripted | mode default | ctx 0% ")
    threading.Thread(target=load, daemon=True).start()
    await session.prompt_async("\\u276f ")

asyncio.run(main())
"""


def profile(root: Path, samples: int) -> None:
    """Where `handrail chat`'s start-up goes: steps, imports by package, hot functions, fixes."""
    import pstats

    from handrail.testing import ModelServer

    bin_dir, python = ensure_venv(VENVS["handrail"], root)
    if bin_dir is None:
        print(f"handrail does not install: {python}")
        return
    home = root / "homes" / "profile"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = child_env(home, {}, root / "pycache")
    py = str(bin_dir / "python")
    handrail = str(bin_dir / "handrail")
    with ModelServer([]) as server, tempfile.TemporaryDirectory(prefix="bench-chat-") as tmp:
        work = Path(tmp)
        args = ["chat", "--model", "anthropic:scripted", "--base-url", server.base_url("anthropic")]
        driver = work / "driver.py"
        driver.write_text(_DRIVER)
        first = work / "prompt_first.py"
        first.write_text(_PROMPT_FIRST)

        def ready_sample(argv: list[str], extra: dict[str, str] | None = None) -> Sample:
            return sample(
                argv, cwd=work, env={**env, **(extra or {})}, prompt=HANDRAIL_PROMPT, settled=None
            )

        variants: dict[str, tuple[list[str], dict[str, str]]] = {
            "handrail chat": ([handrail, *args], {}),
            "handrail chat, no GC until the prompt (the driver, BENCH_GC_OFF=1)": (
                [py, str(driver), *args],
                {"BENCH_GC_OFF": "1"},
            ),
            "prototype: prompt first, the chat's modules imported behind it": (
                [py, str(first)],
                {},
            ),
        }
        times: dict[str, list[float]] = {k: [] for k in variants}
        steps: list[list[tuple[str, float]]] = []
        for rep in range(-1, samples):
            for name, (argv, extra) in variants.items():
                got = ready_sample(argv, extra)
                if rep >= 0 and got.ready_s is not None:
                    times[name].append(got.ready_s)
            marks = work / f"marks{rep}.tsv"
            got = ready_sample([py, str(driver), *args], {"BENCH_MARKS": str(marks)})
            if rep < 0 or got.ready_s is None or got.prompt_s is None or not marks.exists():
                continue
            run_: list[tuple[str, float]] = []
            last = got.t0
            for line in marks.read_text().splitlines():
                stamp, name = line.split("\t", 1)
                run_.append((name, float(stamp) - last))
                last = float(stamp)
            run_.append(("the prompt on the screen", got.t0 + got.prompt_s - last))
            run_.append(("type the probe until it echoes", got.ready_s - got.prompt_s))
            steps.append(run_)
        imports = work / "importtime.txt"
        ready_sample(
            ["sh", "-c", f'exec "$@" 2>{imports}', "sh", py, "-X", "importtime", handrail, *args]
        )
        prof = work / "chat.prof"
        # cProfile writes its file when the program ends: Ctrl-D at the prompt quits.
        sample(
            [py, "-m", "cProfile", "-o", str(prof), handrail, *args],
            cwd=work,
            env=env,
            prompt=HANDRAIL_PROMPT,
            settled=None,
            answer=b"\x04",
        )
        import_text = imports.read_text() if imports.exists() else ""
        stats = pstats.Stats(str(prof)) if prof.exists() else None
    print(f"\n## Where `handrail chat`'s start-up goes (its own venv, Python {python})\n")
    if steps:
        print(f"Step by step (median of {len(steps)} runs of a driver that marks each step):\n")
        print("| step | ms | from spawn |")
        print("|---|---|---|")
        at = 0.0
        for k, (name, _) in enumerate(steps[0]):
            ms = statistics.median(r[k][1] for r in steps if len(r) > k) * 1e3
            at += ms
            print(f"| {name} | {ms:.0f} | {at:.0f} |")
    print(f"\nWhat a fix would give (median / best of {samples}, ready = keys echo):\n")
    print("| variant | median ms | best ms |")
    print("|---|---|---|")
    for name, ts in times.items():
        if ts:
            print(f"| {name} | {statistics.median(ts) * 1e3:.0f} | {min(ts) * 1e3:.0f} |")
    print_importtime(import_text)
    if stats is not None:
        print_profile(stats)


_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|(\s+)(\S+)")

# How the import tree is summed: a module counts for the first group whose prefix it has.
_GROUPS = (
    ("handrail.agent._terminal", "handrail.agent._terminal (the chat UI)"),
    ("handrail.agent", "handrail.agent (loop, client, events)"),
    ("handrail.builtin", "handrail.builtin (the coding tools)"),
    ("handrail", "handrail (runtime, permissions, sandbox, validation, ...)"),
    ("pydantic", "pydantic + pydantic_core"),
    ("annotated_types", "pydantic + pydantic_core"),
    ("typing_inspection", "pydantic + pydantic_core"),
    ("prompt_toolkit", "prompt_toolkit + wcwidth"),
    ("wcwidth", "prompt_toolkit + wcwidth"),
    ("rich", "rich"),
    ("markdown_it", "markdown_it + mdurl + pygments (rich.markdown)"),
    ("mdurl", "markdown_it + mdurl + pygments (rich.markdown)"),
    ("pygments", "markdown_it + mdurl + pygments (rich.markdown)"),
    ("httpx", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("httpcore", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("h11", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("anyio", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("certifi", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("idna", "httpx + httpcore + h11 + anyio + certifi + idna"),
    ("yaml", "yaml"),
    ("pathspec", "pathspec"),
    ("rapidfuzz", "rapidfuzz"),
    ("jsonschema_rs", "jsonschema_rs"),
    ("tree_sitter", "tree_sitter + tree_sitter_bash"),
    ("tree_sitter_bash", "tree_sitter + tree_sitter_bash"),
    ("docstring_parser", "docstring_parser"),
    ("html_to_markdown", "html_to_markdown"),
    ("asyncio", "asyncio + ssl + selectors"),
    ("ssl", "asyncio + ssl + selectors"),
    ("_ssl", "asyncio + ssl + selectors"),
    ("selectors", "asyncio + ssl + selectors"),
)


def _group(name: str) -> str:
    for prefix, label in _GROUPS:
        if name == prefix or name.startswith(prefix + "."):
            return label
    return "other standard library"


def print_importtime(text: str) -> None:
    rows_: list[tuple[int, int, str]] = []
    for line in text.splitlines():
        m = _IMPORT.match(line)
        if m:
            rows_.append((int(m[1]), int(m[2]), m[4]))
    if not rows_:
        print("(no -X importtime output)")
        return
    total = sum(s for s, _, _ in rows_)
    groups: dict[str, int] = {}
    for self_us, _, name in rows_:
        groups[_group(name)] = groups.get(_group(name), 0) + self_us
    print(
        f"\nImports by package (self times from -X importtime, which inflates them): "
        f"{total / 1e3:.0f} ms in {len(rows_)} modules\n"
    )
    print("| group | ms | share |")
    print("|---|---|---|")
    for label, us in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"| {label} | {us / 1e3:.1f} | {us / total:.0%} |")
    print("\nSlowest modules (self ms / cumulative ms):")
    for self_us, cum_us, name in sorted(rows_, key=lambda r: -r[0])[:12]:
        print(f"  {self_us / 1e3:6.1f} {cum_us / 1e3:7.1f}  {name}")
    tops = [r for r in rows_ if r[2] in _TOP_LEVEL]
    if tops:
        print("\nWhat the chat's own imports pull in (cumulative ms, first import only):")
        for _, cum_us, name in tops:
            print(f"  {cum_us / 1e3:7.1f}  {name}")


_TOP_LEVEL = (
    "handrail",
    "handrail._cli",
    "handrail.agent",
    "handrail.builtin",
    "handrail.agent._terminal._app",
    "handrail.agent._terminal._input",
    "rich.console",
    "rich.markdown",
    "prompt_toolkit",
    "httpx",
    "pydantic",
    "yaml",
)


def print_profile(stats: Any) -> None:
    """cProfile: the handrail functions that took the time (imports they trigger included)."""
    entries: dict[Any, Any] = stats.stats  # (file, line, func) -> (cc, nc, tt, ct, callers)
    total = max(ct for _, _, _, ct, _ in entries.values())
    print(f"\ncProfile, spawn to the prompt and Ctrl-D out: {total * 1e3:.0f} ms in all.")
    print("handrail functions by cumulative ms (imports they trigger included):")
    own = [
        (ct, f"{Path(file).parent.name}/{Path(file).name}:{line} {func}")
        for (file, line, func), (_, _, _, ct, _) in entries.items()
        if "/handrail/" in file and func != "<module>"
    ]
    for ct, where in sorted(own, reverse=True)[:16]:
        print(f"  {ct * 1e3:7.1f}  {where}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 samples per row instead of 7")
    ap.add_argument("--samples", type=int, help="samples per row (default 7)")
    ap.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="rows whose name contains one of these (python rows always run)",
    )
    ap.add_argument("--profile", action="store_true", help="profile handrail chat's start-up")
    ap.add_argument("--cache", type=Path, help="where the venvs live (default ~/.cache/...)")
    args = ap.parse_args()
    root = args.cache or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    print(
        f"# handrail chat start-up — {platform.platform()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}; harness Python {platform.python_version()}"
    )
    print(f"# venvs and byte-code cache: {root}")
    if args.profile:
        profile(root, args.samples or (3 if args.quick else 7))
        return
    samples = args.samples or (3 if args.quick else 7)
    selected = rows()
    if args.only:
        selected = [
            r
            for r in selected
            if r.name.startswith("python")
            or "prompt_toolkit" in r.name
            or any(o in r.name for o in args.only)
        ]
    run(selected, samples, root)
    print(f"# load average after: {os.getloadavg()[0]:.2f}")
    report(selected, samples)


if __name__ == "__main__":
    main()
