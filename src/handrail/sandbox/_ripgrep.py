"""Running ripgrep: the only place that spawns `rg`.

`rg` comes from the `ripgrep` wheel, a declared dependency: it is looked up in the running
interpreter's scripts directory first, then on PATH. It runs with an argument list (never a
shell), `--no-config` (a RIPGREP_CONFIG_PATH must not change what a tool runs), stdin from
/dev/null, in its own process group, so a time limit or a cancellation stops it and anything
it started (`kill_tree`). Its output is read on a dedicated thread as it arrives, split into
records (paths or lines), up to a memory cap; with `with_mtime` each path is statted on that
thread while rg is still running (one lstat per path: on a 2-vCPU VM about as long as rg's
whole `--files` walk, see bench/search.py). Whatever stops rg early (the time limit,
cancellation, the cap), what arrived so far is returned, flagged.

Globs: rg's `--glob` is an *override* that beats every ignore rule (`--glob '*.log'` lists
gitignored logs), so a glob that selects files is never passed that way. `compile_glob` turns
one into rg's own file-type filter on the file name (ignore rules still apply) plus, when the
glob names folders, an exact Python matcher with rg's glob semantics for the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import stat
import sys
import sysconfig
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .._context import ToolContext
from .._contract import ErrorCode
from ..errors import ToolFailure
from ._containment import confine_read, inside
from ._timed_command import kill_tree

__all__ = [
    "VCS_DIRS",
    "RipgrepGlob",
    "RipgrepRun",
    "SearchRoot",
    "compile_glob",
    "find_ripgrep",
    "run_ripgrep",
    "search_root",
]

VCS_DIRS = (".git", ".hg", ".svn", ".jj", ".bzr", ".sl")
"""Version-control folders no search ever enters, whatever the ignore settings."""

MAX_OUTPUT = 32 << 20
"""Bytes of rg output kept in memory; past it rg is stopped and the results are partial."""

_READ_SIZE = 1 << 20
_PIPE_SIZE = 1 << 20
_STDERR_CAP = 64 << 10
_GRACE = 0.5


def _grow_pipe(fd: int) -> None:
    """Linux: a 1 MiB pipe, so rg rarely waits for the reader."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    setpipe: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setpipe, _PIPE_SIZE)


Stopped = Literal["timeout", "cancelled", "output_limit"]


# -- locating rg -------------------------------------------------------------------------------


@functools.cache
def find_ripgrep() -> str | None:
    """The `rg` executable: the running interpreter's scripts directory first, then PATH."""
    dirs = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    with contextlib.suppress(KeyError):
        dirs.append(sysconfig.get_path("scripts", f"{os.name}_user"))
    for folder in dirs:
        candidate = os.path.join(folder, "rg")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("rg")


# -- what to search ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRoot:
    """A search path, resolved and confined, and how rg runs on it."""

    path: str
    """The resolved absolute path."""
    kind: Literal["dir", "file", "missing", "other"]
    """What is there: a folder, a regular file, nothing, or something else (FIFO, device)."""
    cwd: str
    """The folder rg runs in: the path itself, or a file's folder ("" when missing)."""
    name: str | None
    """A file's name (the one path rg is given), None for a folder."""
    prefix: str
    """Put before the paths rg prints to show them: relative to the session cwd when the search
    lies inside it (so they can be passed back to any tool as they are), else absolute."""
    nearby: tuple[str, ...] = ()
    """For a missing path: the names in its deepest existing folder (for "did you mean")."""


def search_root(path: str | None, ctx: ToolContext) -> SearchRoot:
    """Resolve and confine `path` (default: the session cwd) for a search.

    Raises `ToolFailure(OUTSIDE_READ_ROOTS)` outside the read roots.
    """
    resolved = confine_read(path or ".", ctx)
    try:
        st = os.stat(resolved)
    except OSError:
        return SearchRoot(
            path=resolved, kind="missing", cwd="", name=None, prefix="", nearby=_nearby(resolved)
        )
    if stat.S_ISDIR(st.st_mode):
        folder, name, kind = resolved, None, "dir"
    elif stat.S_ISREG(st.st_mode):
        folder, name, kind = os.path.dirname(resolved), os.path.basename(resolved), "file"
    else:
        return SearchRoot(path=resolved, kind="other", cwd="", name=None, prefix="")
    cwd = os.path.realpath(ctx.cwd)
    if inside(folder, [Path(cwd)]) is not None:
        rel = os.path.relpath(folder, cwd)
        prefix = "" if rel == "." else rel + "/"
    else:
        prefix = folder.rstrip("/") + "/"
    return SearchRoot(path=resolved, kind=kind, cwd=folder, name=name, prefix=prefix)


def _nearby(path: str, limit: int = 2000) -> tuple[str, ...]:
    parent = os.path.dirname(path)
    while parent and not os.path.isdir(parent):
        parent = os.path.dirname(parent)
    names: list[str] = []
    with contextlib.suppress(OSError), os.scandir(parent or "/") as entries:
        for entry in entries:
            names.append(entry.name)
            if len(names) >= limit:
                break
    return tuple(sorted(names))


# -- globs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RipgrepGlob:
    """A glob as rg arguments plus, where rg cannot express it, an exact path matcher."""

    args: tuple[str, ...]
    """Arguments for rg: a file-type filter on the file name, or an exclusion override."""
    match: Callable[[str], bool] | None
    """Matches a path relative to the searched folder; None when `args` say it all."""


_TYPE_NAME = "handrail"


def compile_glob(pattern: str, *, type_filter: bool = True) -> RipgrepGlob:
    """Compile a glob with rg's (gitignore-style) semantics, without weakening ignore rules.

    `*` and `?` stay within one path component, `**` spans folders, `[abc]` and `{a,b}` work;
    a pattern without `/` matches the file name at any depth, one with `/` is relative to the
    searched folder (a leading `/` or `./` is dropped); a trailing `/` means everything inside
    such folders. A leading `!` excludes instead (passed to rg as an exclusion override,
    which cannot un-ignore anything). `type_filter=False` never uses rg's file-type filter
    (needed when the caller also filters by a file type: rg ORs types together).

    Raises ValueError with rg's wording when the glob is malformed.
    """
    text = pattern.strip()
    if "\x00" in text or "\n" in text:
        raise ValueError("it contains a NUL byte or a newline")
    while text.startswith("./"):
        text = text[2:]
    if text.startswith("!"):
        rest = text[1:]
        if not rest.strip("/"):
            raise ValueError("nothing follows the '!'")
        _glob_regex(_gitignore_glob(rest))  # same syntax errors as rg would report
        return RipgrepGlob(args=("--glob", "!" + rest), match=None)
    if not text.strip("/"):
        raise ValueError("it is empty")
    actual = _gitignore_glob(text)
    regex = re.compile(_glob_regex(actual), re.DOTALL)
    if actual.startswith("**/") and _plain_name(actual[3:]):
        name = actual[3:]
        if _everything(name):
            return RipgrepGlob(args=(), match=None)
        if type_filter and ":" not in name:
            return RipgrepGlob(args=_type_args(name), match=None)
        return RipgrepGlob(args=(), match=_matcher(regex))
    if _everything_path(actual):
        return RipgrepGlob(args=(), match=None)
    last = _last_component(actual)
    args = _type_args(last) if type_filter and last and ":" not in last else ()
    return RipgrepGlob(args=args, match=_matcher(regex))


def _matcher(regex: re.Pattern[str]) -> Callable[[str], bool]:
    full = regex.fullmatch
    return lambda path: full(path) is not None


def _type_args(name: str) -> tuple[str, ...]:
    return (f"--type-add={_TYPE_NAME}:{name}", f"--type={_TYPE_NAME}")


def _gitignore_glob(line: str) -> str:
    """The glob rg actually matches for one pattern (ignore crate, `GitignoreBuilder`)."""
    anchored = False
    if line.startswith(("\\!", "\\#")):
        line = line[1:]
    elif line.startswith("/"):
        line = line.lstrip("/")
        anchored = True
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if dir_only else line
    if not anchored and "/" not in line and not (line.startswith("**/") or line == "**"):
        line = "**/" + line
    if dir_only:
        line += "/**"  # a folder pattern: everything inside such folders
    if line.endswith("/**"):
        line += "/*"
    return line


def _glob_regex(glob: str) -> str:
    """Translate a glob to a regex the way globset does with `literal_separator` on."""
    out: list[str] = []
    i, n = 0, len(glob)
    in_alt = False
    while i < n:
        c = glob[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("dangling '\\'")
            out.append(re.escape(glob[i + 1]))
            i += 2
        elif c == "*":
            j = i
            while j < n and glob[j] == "*":
                j += 1
            # `**` spans folders only as a whole component; elsewhere it is a plain `*`.
            whole = (i == 0 or glob[i - 1] == "/") and (j == n or glob[j] == "/")
            if j - i >= 2 and whole:
                if j == n:
                    out.append(".*")
                else:
                    out.append("(?:.*/)?")
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            cls, i = _char_class(glob, i)
            out.append(cls)
        elif c == "{":
            if in_alt:
                raise ValueError("nested alternate groups are not allowed")
            in_alt = True
            out.append("(?:")
            i += 1
        elif c == "}":
            if not in_alt:
                raise ValueError("unopened alternate group; missing '{' (escape it as '\\}')")
            in_alt = False
            out.append(")")
            i += 1
        elif c == "," and in_alt:
            out.append("|")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    if in_alt:
        raise ValueError("unclosed alternate group; missing '}'")
    return "".join(out)


def _char_class(glob: str, start: int) -> tuple[str, int]:
    i = start + 1
    negated = i < len(glob) and glob[i] in "!^"
    if negated:
        i += 1
    members: list[str] = []
    first = True
    while i < len(glob) and (glob[i] != "]" or first):
        c = glob[i]
        if c == "-" and not first and i + 1 < len(glob) and glob[i + 1] != "]":
            members.append("-")
        else:
            members.append(re.escape(c))
        first = False
        i += 1
    if i >= len(glob):
        raise ValueError("unclosed character class; missing ']'")
    return "[" + ("^" if negated else "") + "".join(members) + "]", i + 1


def _plain_name(glob: str) -> bool:
    """True when `glob` can only match within one path component (no `/` anywhere)."""
    return "/" not in glob


def _everything(name: str) -> bool:
    return bool(name) and set(name) == {"*"}


def _everything_path(glob: str) -> bool:
    """`**`, `**/*`, `**/**/*`: globs that match every path."""
    *folders, last = glob.split("/")
    return (
        all(part == "**" for part in folders)
        and _everything(last)
        and (bool(folders) or last == "**")
    )


def _last_component(glob: str) -> str | None:
    """The file-name part of a glob, or None.

    None when it cannot be told apart (a `/` inside braces or a class) or filters nothing.
    """
    depth = 0
    cut = -1
    in_class = False
    for k, c in enumerate(glob):
        if in_class:
            if c == "]":
                in_class = False
            elif c == "/":
                return None
        elif c == "[":
            in_class = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "/":
            if depth:
                return None
            cut = k
    last = glob[cut + 1 :]
    if not last or _everything(last):
        return None
    return last


# -- running rg --------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class RipgrepRun:
    """How an rg run ended, and what it printed."""

    records: list[str] = field(default_factory=list[str])
    """Output records (NUL- or newline-separated), decoded as UTF-8 with surrogate escapes."""
    mtimes: list[int] = field(default_factory=list[int])
    """With `with_mtime`: each record's st_mtime_ns (the record is a path relative to `cwd`;
    0 when it vanished before it could be statted)."""
    exit_code: int | None = None
    """rg's exit status: 0 matches, 1 none, 2 an error; None when it was stopped."""
    error: str = ""
    """What rg wrote to stderr (its error message), without the `rg: ` prefix."""
    stopped: Stopped | None = None
    """Why rg was stopped early; the records are then partial."""
    elapsed: float = 0.0
    """Seconds from start to finish."""

    @property
    def partial(self) -> bool:
        """True when rg was stopped before it finished."""
        return self.stopped is not None

    @property
    def failed(self) -> bool:
        """True when rg refused to run (a bad regex, an unknown type): an error, no output."""
        return self.exit_code == 2 and bool(self.error) and not self.records


class _Reader:
    """Reads rg's stdout on its own thread: records, mtimes, the memory cap."""

    def __init__(
        self,
        fd: int,
        run: RipgrepRun,
        *,
        separator: str,
        stat_dir: int | None,
        keep: Callable[[str], bool] | None,
        cap: int,
    ) -> None:
        self.fd = fd
        self.run = run
        self.separator = separator
        self.stat_dir = stat_dir
        self.keep = keep
        self.cap = cap
        self.capped = False
        self.abandoned = False
        """Set when the caller stopped waiting: nothing more is added to the run."""
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self._read()
        except BaseException as exc:  # pragma: no cover - reported to the awaiting task
            self.error = exc
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            if self.stat_dir is not None:
                with contextlib.suppress(OSError):
                    os.close(self.stat_dir)

    def _read(self) -> None:
        sep = self.separator.encode()
        tail = b""
        total = 0
        while True:
            chunk = os.read(self.fd, _READ_SIZE)
            if not chunk:
                break
            total += len(chunk)
            if total > self.cap:
                self.capped = True  # keep what fits; closing the pipe then ends rg (EPIPE)
                chunk = chunk[: len(chunk) - (total - self.cap)]
            data = tail + chunk if tail else chunk
            cut = data.rfind(sep)
            if cut < 0:
                if self.capped:
                    return
                tail = data
                continue
            tail = data[cut + 1 :]
            self._add(data[:cut].decode("utf-8", "surrogateescape").split(self.separator))
            if self.capped:
                return
        # rg ends every record with the separator: a tail is a record cut short by a stop.

    def _add(self, records: list[str]) -> None:
        if self.abandoned:
            return
        if self.keep is not None:
            keep = self.keep
            records = [r for r in records if keep(r)]
        self.run.records.extend(records)
        if self.stat_dir is not None:
            self.run.mtimes.extend(_mtimes(records, self.stat_dir))


def _mtimes(paths: list[str], dir_fd: int) -> list[int]:
    st = os.stat
    try:
        return [st(p, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns for p in paths]
    except OSError:
        out: list[int] = []
        for p in paths:
            try:
                out.append(st(p, dir_fd=dir_fd, follow_symlinks=False).st_mtime_ns)
            except OSError:
                out.append(0)
        return out


async def _read_stderr(stream: asyncio.StreamReader | None) -> bytes:
    buf = bytearray()
    if stream is None:
        return b""
    while chunk := await stream.read(65536):
        if len(buf) < _STDERR_CAP:
            buf += chunk[: _STDERR_CAP - len(buf)]
    return bytes(buf)


async def run_ripgrep(
    args: Sequence[str],
    *,
    cwd: str,
    timeout: float | None = None,
    ctx: ToolContext | None = None,
    nul_separated: bool = False,
    with_mtime: bool = False,
    keep: Callable[[str], bool] | None = None,
    max_output: int = MAX_OUTPUT,
) -> RipgrepRun:
    """Run `rg --no-config ARGS` in `cwd` and collect its output records.

    Args:
        args: rg's arguments (options, then `--` and paths if any); no shell is involved.
        cwd: The folder rg runs in; the paths it prints are relative to it.
        timeout: Seconds before rg is stopped (its whole process tree); the records so far are
            returned with `stopped="timeout"`.
        ctx: The call's context: once it is cancelled rg is stopped (`stopped="cancelled"`).
            Cancelling the awaiting task stops rg as well, and the cancellation propagates.
        nul_separated: Records end with NUL (`--null` with `--files` or `-l`), not newline.
        with_mtime: Stat each record (a path) as it arrives and fill `mtimes`.
        keep: Drop records for which this returns False (before any stat).
        max_output: Bytes of output kept; past it rg is stopped (`stopped="output_limit"`).

    Raises:
        ToolFailure: rg cannot be found or started (EXECUTION_ERROR).
    """
    exe = find_ripgrep()
    if exe is None:
        raise ToolFailure(
            "ripgrep (rg) was not found. It comes with handrail's `ripgrep` dependency: "
            "reinstall handrail (`pip install --force-reinstall ripgrep`) or put rg on PATH.",
            code=ErrorCode.EXECUTION_ERROR,
        )
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    read_fd, write_fd = os.pipe()
    # Whoever still holds the output pipe when rg is stopped is stopped with it (a `--pre`
    # helper, a stray child), so the reader always sees the end of the output.
    pipes = {os.fstat(read_fd).st_ino}
    _grow_pipe(write_fd)
    stat_dir: int | None = None
    try:
        if with_mtime:
            stat_dir = os.open(cwd, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        proc = await asyncio.create_subprocess_exec(
            exe,
            "--no-config",
            *args,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=write_fd,
            stderr=asyncio.subprocess.PIPE,
            # Its own process group, so the tree can be stopped with one killpg. Not a new
            # session: with Linux autogroup scheduling a session is its own CPU group, and rg
            # measured up to 1.8x slower in one on a busy machine.
            process_group=0,
        )
    except (OSError, ValueError) as exc:
        os.close(read_fd)
        if stat_dir is not None:
            os.close(stat_dir)
        raise ToolFailure(
            f"Could not start ripgrep ({exe}): {exc}. Check that it is installed and runnable.",
            code=ErrorCode.EXECUTION_ERROR,
        ) from exc
    finally:
        os.close(write_fd)

    run = RipgrepRun()
    reader = _Reader(
        read_fd,
        run,
        separator="\x00" if nul_separated else "\n",
        stat_dir=stat_dir,
        keep=keep,
        cap=max_output,
    )
    finished: asyncio.Future[None] = loop.create_future()

    def _signal_done() -> None:
        if not finished.done():
            finished.set_result(None)

    def _thread() -> None:
        reader()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(_signal_done)

    threading.Thread(target=_thread, name="handrail-rg-reader", daemon=True).start()
    err_task = asyncio.ensure_future(_read_stderr(proc.stderr))
    cancel_task = asyncio.ensure_future(ctx.wait_cancelled()) if ctx is not None else None
    try:
        waiting: set[asyncio.Future[None]] = {finished}
        if cancel_task is not None:
            waiting.add(cancel_task)
        await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if not finished.done():
            run.stopped = (
                "cancelled" if cancel_task is not None and cancel_task.done() else "timeout"
            )
            await kill_tree(proc, grace=_GRACE, pipes=pipes)
            try:
                await asyncio.wait_for(asyncio.shield(finished), _GRACE * 4)
            except TimeoutError:  # the pipe is still held open somewhere: stop waiting
                reader.abandoned = True
                n = len(run.mtimes) if with_mtime else len(run.records)
                run.records, run.mtimes = run.records[:n], run.mtimes[:n]  # detached copies
        elif reader.capped:
            run.stopped = "output_limit"
        if proc.returncode is None:
            try:
                await asyncio.wait_for(proc.wait(), _GRACE * 4)
            except TimeoutError:
                await kill_tree(proc, grace=_GRACE, pipes=pipes)
        with contextlib.suppress(TimeoutError):
            stderr = await asyncio.wait_for(err_task, _GRACE * 4)
            run.error = _strip_prefix(stderr.decode("utf-8", "replace"))
    except BaseException:
        await kill_tree(proc, grace=_GRACE, pipes=pipes)
        raise
    finally:
        if cancel_task is not None:
            cancel_task.cancel()
        err_task.cancel()
    if reader.error is not None:
        raise reader.error
    run.exit_code = None if run.stopped in ("timeout", "cancelled") else proc.returncode
    run.elapsed = loop.time() - t0
    return run


def _strip_prefix(text: str) -> str:
    lines = [line[4:] if line.startswith("rg: ") else line for line in text.strip().splitlines()]
    return "\n".join(lines)
