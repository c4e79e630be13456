"""Hidden paths: secret locations that no tool may read, list or search, and no command can see.

The built-in list covers the places where credentials, keys and histories live in a user's home
(`~/.ssh`, cloud and registry credentials, shell histories...), handrail's own config and state
(sessions, trust store, server tokens), and the system's secret files in `/etc`. The user adds
more with the `hidden_paths` setting. The policy refuses any `ReadPath` or `WritePath` inside a
hidden path, even inside a read or write root, and no rule, mode or hook lifts that; the search
tools leave them out of every walk, and the shell's sandbox covers them.

An entry is an absolute path; its last component may be a glob (`/etc/ssh/ssh_host_*_key`).
Entries are kept in two forms when they differ, as written (`~` expanded, normalised) and
resolved (symlinks followed), so a check by either spelling finds them.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .._contract import ErrorCode, PermissionRequest, ReadPath, WritePath

__all__ = [
    "HOME_SECRETS",
    "HOME_SECRETS_FORMATTED",
    "HOME_SECRET_FOLDERS",
    "SYSTEM_SECRETS",
    "hidden_entry",
    "hidden_message",
    "hidden_now",
    "hidden_paths",
    "hidden_refusal",
    "is_glob",
]

HOME_SECRETS: tuple[str, ...] = (
    # Keys and credentials.
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".kube",
    ".docker/config.json",
    ".config/containers/auth.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".config/composer/auth.json",
    ".composer/auth.json",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".config/op",
    ".local/share/keyrings",
    ".password-store",
    # Other agents' credentials.
    ".claude/.credentials.json",
    ".codex/auth.json",
    # Shell and REPL histories: commands typed with tokens in them.
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    ".rediscli_history",
    ".local/share/fish",
    # handrail's own config and state: settings, trust store, sessions, server tokens.
    ".config/handrail",
    ".local/state/handrail",
)
"""Secret locations relative to the user's home."""

HOME_SECRET_FOLDERS: frozenset[str] = frozenset(
    ".ssh .gnupg .aws .azure .config/gcloud .oci .kube .config/gh .config/hub .config/rclone"
    " .config/op .local/share/keyrings .password-store .local/share/fish .config/handrail"
    " .local/state/handrail".split()
)
"""The entries of `HOME_SECRETS` that are folders (the others are files)."""

HOME_SECRETS_FORMATTED: frozenset[str] = frozenset(
    ".docker/config.json .config/containers/auth.json .config/composer/auth.json"
    " .composer/auth.json .m2/settings.xml .terraform.d/credentials.tfrc.json"
    " .claude/.credentials.json .codex/auth.json .gem/credentials".split()
)
"""Files of `HOME_SECRETS` that their programs would refuse to read when empty (JSON, XML,
YAML): where one is missing, its folder is kept from gaining new names instead of an empty
file standing in for it (see `sandbox._write_guard`)."""

SYSTEM_SECRETS: tuple[str, ...] = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
)
"""The system's secret files and folders."""

_GLOB_CHARS = frozenset("*?[")


def is_glob(name: str) -> bool:
    """Does this path component hold glob characters?"""
    return not _GLOB_CHARS.isdisjoint(name)


def _state_folders(home: str, env: Mapping[str, str]) -> list[str]:
    """The config and state folders of handrail where the environment moves them.

    A relative value is taken from the current directory, as handrail's own readers of these
    variables take it: hidden where it is read, wherever that is.
    """
    out: list[str] = []
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR"):
        value = env.get(var)
        if value:
            out.append(os.path.join(os.path.abspath(value), "handrail"))
    explicit = env.get("HANDRAIL_STATE_DIR")
    if explicit:
        out.append(
            os.path.join(home, explicit[2:])
            if explicit.startswith("~/")
            else os.path.abspath(explicit)
        )
    return out


def hidden_paths(
    extra: Iterable[str | Path] = (),
    *,
    home: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    base: str | Path | None = None,
) -> tuple[Path, ...]:
    """The effective hidden set: the built-in secret locations plus `extra`, absolute.

    Args:
        extra: More paths (the `hidden_paths` setting, a host's own): `~` is expanded and a
            relative path is taken relative to `base`. The last component may be a glob.
        home: The user's home (default `Path.home()`), resolved.
        env: Where `XDG_CONFIG_HOME`, `XDG_STATE_HOME`, `XDG_RUNTIME_DIR` and
            `HANDRAIL_STATE_DIR` are read (default `os.environ`).
        base: What relative extras are relative to (default: the current directory).

    Each entry comes as written (normalised) and, when different, resolved as well; the order
    is stable and there are no duplicates.
    """
    environ = os.environ if env is None else env
    home_dir = os.path.realpath(str(home) if home is not None else str(Path.home()))
    folder = os.path.abspath(str(base) if base is not None else os.getcwd())
    written = [os.path.join(home_dir, rel) for rel in HOME_SECRETS]
    written += SYSTEM_SECRETS
    written += _state_folders(home_dir, environ)
    for item in extra:
        text = str(item)
        if text == "~" or text.startswith("~/"):
            text = os.path.join(home_dir, text[2:])
        elif text.startswith("~"):
            text = os.path.expanduser(text)  # ~user
        written.append(os.path.join(folder, text))
    seen: dict[str, None] = {}
    resolve = _Resolver()
    for path in written:
        plain = os.path.normpath(path)
        seen.setdefault(plain, None)
        seen.setdefault(resolve(plain), None)
    return tuple(Path(p) for p in seen if p != "/")


class _Resolver:
    """realpath for many paths sharing folders: one lstat per distinct folder.

    Most entries do not exist, and most of the rest hold no symlink: walking down from `/`
    with the lstats remembered costs a fraction of one realpath each (a runtime starts with
    about sixty entries). A symlink on the way hands the path to realpath; a glob's pattern
    is kept as it is.
    """

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}  # path -> 0 missing, 1 plain, 2 symlink

    def _kind(self, path: str) -> int:
        kind = self.kinds.get(path)
        if kind is None:
            try:
                kind = 2 if stat.S_ISLNK(os.lstat(path).st_mode) else 1
            except OSError:
                kind = 0
            self.kinds[path] = kind
        return kind

    def __call__(self, path: str) -> str:
        folder, name = os.path.split(path)
        if is_glob(name):
            return os.path.join(self(folder), name)
        walked = ""
        for part in path.split(os.sep)[1:]:
            walked = walked + os.sep + part
            kind = self._kind(walked)
            if kind == 2:
                return os.path.realpath(path)
            if kind == 0:
                return path  # the rest does not exist: nothing more to resolve
        return path


def _split(path: str) -> tuple[str, ...]:
    """`/a/b` -> ("", "a", "b"): components of a normalised absolute path."""
    return tuple(os.path.normpath(path).split(os.sep))


class _Matcher:
    """Entries indexed by their folder: a lookup costs one dict probe per path component."""

    def __init__(self, hidden: Sequence[Path]) -> None:
        self.names: dict[tuple[str, ...], dict[str, Path]] = {}
        self.globs: dict[tuple[str, ...], list[tuple[str, Path]]] = {}
        for entry in hidden:
            parts = _split(str(entry))
            if len(parts) < 2 or not parts[-1]:
                continue  # "/" is never an entry: it would hide everything
            folder, name = parts[:-1], parts[-1]
            if is_glob(name):
                self.globs.setdefault(folder, []).append((name, entry))
            else:
                self.names.setdefault(folder, {}).setdefault(name, entry)

    def find(self, path: str) -> Path | None:
        parts = _split(path)
        names, globs = self.names, self.globs
        for depth in range(1, len(parts)):
            folder = parts[:depth]
            found = names.get(folder)
            if found is not None and parts[depth] in found:
                return found[parts[depth]]
            for pattern, entry in globs.get(folder, ()):
                if fnmatch.fnmatchcase(parts[depth], pattern):
                    return entry
        return None


# By identity: a runtime passes the same tuple on every call, so the index is built once.
_MATCHERS: dict[int, tuple[Sequence[Path], _Matcher]] = {}


def _matcher(hidden: Sequence[Path]) -> _Matcher:
    cached = _MATCHERS.get(id(hidden))
    if cached is not None and cached[0] is hidden:
        return cached[1]
    if len(_MATCHERS) >= 32:
        _MATCHERS.clear()
    matcher = _Matcher(hidden)
    _MATCHERS[id(hidden)] = (hidden, matcher)  # holding `hidden` keeps its id from reuse
    return matcher


def hidden_entry(path: str | Path, hidden: Sequence[Path]) -> Path | None:
    """The hidden entry that `path` (absolute) is, or lies inside; None when it is not hidden.

    Decided by path components, never by string prefix.
    """
    if not hidden:
        return None
    return _matcher(hidden).find(str(path))


def hidden_message(path: str | Path, entry: Path) -> str:
    """What the model reads when a call touches a hidden path."""
    where = f"{path}" if str(path) == str(entry) else f"{path} (inside {entry})"
    return (
        f"{where} is a protected secret location, hidden from every tool (read_file, "
        "grep_search, list_files and run_shell); no rule, mode or approval can open it. Work "
        "with files outside it; if the task needs something stored there, ask the user to "
        "provide it."
    )


def hidden_refusal(
    requests: Sequence[PermissionRequest], hidden: Sequence[Path]
) -> tuple[str, ErrorCode] | None:
    """The refusal (message, code) for the first request inside a hidden path, or None.

    Requests hold resolved absolute paths. A read is OUTSIDE_READ_ROOTS, a write
    OUTSIDE_WRITE_ROOTS: to the model a hidden path is simply outside what it may touch.
    """
    if not hidden:
        return None
    for q in requests:
        if isinstance(q, ReadPath | WritePath):
            entry = hidden_entry(q.path, hidden)
            if entry is not None:
                code = (
                    ErrorCode.OUTSIDE_WRITE_ROOTS
                    if isinstance(q, WritePath)
                    else ErrorCode.OUTSIDE_READ_ROOTS
                )
                return hidden_message(q.path, entry), code
    return None


# -- by identity -----------------------------------------------------------------------------

_WALK_LIMIT = 200_000
"""Most entries looked at to find where a hidden folder inside the roots was moved."""
_LOST_EVERY = 30.0
"""Seconds between looks for hidden entries that left the roots (they may come back)."""


class _Tracker:
    """(device, inode) of the hidden entries inside the roots, and where each is now.

    A rename keeps a file's identity: when a hidden entry is no longer at its path, it is looked
    for (first among the folders beside the one renamed, then through the roots) and its new
    place is hidden too. One not found (deleted, or moved out of the roots) is remembered, and
    looked for again now and then, in case it comes back under another name. Globs count by
    the paths they matched. Only entries inside the roots are tracked: those are the ones a
    tool could reach, so a runtime whose roots hold none pays nothing.
    """

    def __init__(self, hidden: Sequence[Path], roots: Sequence[Path]) -> None:
        self.roots = tuple(os.path.normpath(str(r)) for r in roots)
        inside = [str(e) for e in hidden if any(_inside(str(e), r) for r in self.roots)]
        self.entries = [e for e in inside if not is_glob(os.path.basename(e))]
        self.globs = [e for e in inside if is_glob(os.path.basename(e))]
        self.ids: dict[str, tuple[int, int]] = {}
        self.moved: dict[tuple[int, int], str] = {}
        self.lost: dict[tuple[int, int], str] = {}
        self.looked = 0.0

    def _note(self) -> None:
        matches: list[str] = []
        for pattern in self.globs:
            folder, name = os.path.split(pattern)
            with contextlib.suppress(OSError):
                names = fnmatch.filter(os.listdir(folder), name)
                matches += [os.path.join(folder, n) for n in names]
        for entry in (*self.entries, *matches):
            if entry not in self.ids:
                with contextlib.suppress(OSError):
                    st = os.lstat(entry)
                    self.ids[entry] = (st.st_dev, st.st_ino)

    def places(self) -> tuple[str, ...]:
        """Where hidden entries that were moved are now (empty when none was)."""
        if not self.entries and not self.globs:
            return ()
        self._note()
        out: list[str] = []
        for entry, ident in list(self.ids.items()):
            if _identity(entry) == ident:
                continue
            where = self.moved.get(ident)
            if where is None or _identity(where) != ident:
                where = self._find(entry, ident)
            if where is None:
                # Gone from the roots (deleted, or moved out): remembered, looked for later.
                del self.ids[entry]
                self.moved.pop(ident, None)
                self.lost[ident] = entry
                continue
            self.moved[ident] = where
            out.append(where)
        if self.lost and time.monotonic() - self.looked > _LOST_EVERY:
            self.looked = time.monotonic()
            for ident, entry in list(self.lost.items()):
                where = self._walk(ident)
                if where is not None:
                    del self.lost[ident]
                    self.ids[entry] = ident
                    self.moved[ident] = where
                    out.append(where)
        return tuple(out)

    def _find(self, entry: str, ident: tuple[int, int]) -> str | None:
        # A rename in place first: `conf` -> `conf2` leaves `conf2/secrets` beside where it was.
        path = entry
        while path not in ("/", "") and not os.path.isdir(path):
            parent = os.path.dirname(path)
            rest = os.path.relpath(entry, path)
            with contextlib.suppress(OSError), os.scandir(parent) as it:
                for e in it:
                    candidate = os.path.normpath(os.path.join(e.path, rest))
                    if _identity(candidate) == ident:
                        return candidate
            path = parent
        return self._walk(ident)

    def _walk(self, ident: tuple[int, int]) -> str | None:
        seen = 0
        stack = [r for r in self.roots if os.path.isdir(r)]
        while stack and seen < _WALK_LIMIT:
            folder = stack.pop()
            with contextlib.suppress(OSError), os.scandir(folder) as it:
                for e in it:
                    seen += 1
                    st = e.stat(follow_symlinks=False)
                    if (st.st_dev, st.st_ino) == ident:
                        return e.path
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(e.path)
        return None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


_TRACKERS: dict[tuple[int, tuple[str, ...]], tuple[Sequence[Path], _Tracker]] = {}


def hidden_now(hidden: Sequence[Path], roots: Sequence[Path]) -> Sequence[Path]:
    """`hidden`, plus where hidden entries inside `roots` are now if something moved them.

    Identity (device and inode) survives a rename: after `mv conf conf2` a hidden
    `conf/secrets` is hidden as `conf2/secrets` too. The first call for a runtime's list
    records the identities; each later one costs an lstat per tracked entry. Returns `hidden`
    itself when nothing moved.
    """
    if not hidden or not roots:
        return hidden
    key = (id(hidden), tuple(map(str, roots)))
    cached = _TRACKERS.get(key)
    if cached is None or cached[0] is not hidden:
        if len(_TRACKERS) >= 32:
            _TRACKERS.clear()
        cached = (hidden, _Tracker(hidden, roots))
        _TRACKERS[key] = cached
    places = cached[1].places()
    if not places:
        return hidden
    return (*hidden, *(Path(p) for p in places))
