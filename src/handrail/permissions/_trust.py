"""Folder trust: a checkout's own `.handrail/` settings widen nothing until the user agrees.

A cloned repository is someone else's code. Its `.handrail/settings.json`,
`.handrail/settings.local.json` and `.handrail/mcp.json` could run commands (hooks, MCP
servers), allow tools, pick a wide permission mode or lift the sandbox. So a folder's files may
only narrow (deny and ask rules, hidden paths, disabled tools, ...) until the user trusts the
folder with `handrail trust DIR`; what they would widen is left out and named in one notice
per file.

Trust is remembered per folder (its resolved path) together with a SHA-256 of those three
files' contents, in `~/.config/handrail/trusted.json` (`XDG_CONFIG_HOME` respected; written
atomically, mode 0600). Any change to the files makes the folder untrusted again. The files
are read once into a `FolderConfig`: the bytes that are hashed are the bytes that are parsed,
through whatever symlinks lead to them (a `.handrail` that points elsewhere is trusted for what
it held when the user looked).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shlex
import stat
import threading
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .._atomic import write_file_atomic
from ..errors import ConfigurationError

__all__ = [
    "TRUST_FILES",
    "FolderConfig",
    "TrustedFolder",
    "is_trusted",
    "printable",
    "quoted_trust_command",
    "read_folder_config",
    "refusal_notice",
    "report_refused",
    "revoke_trust",
    "skill_files",
    "trust_command",
    "trust_folder",
    "trust_store_path",
    "trusted_folders",
]

logger = logging.getLogger("handrail")

SETTINGS_FILE = Path(".handrail") / "settings.json"
LOCAL_SETTINGS_FILE = Path(".handrail") / "settings.local.json"
MCP_FILE = Path(".handrail") / "mcp.json"
TRUST_FILES: tuple[Path, ...] = (SETTINGS_FILE, LOCAL_SETTINGS_FILE, MCP_FILE)
"""The files of a folder whose contents trust covers, relative to the folder."""

MAX_FILE_BYTES = 1024 * 1024
"""A bigger settings or MCP file is refused rather than read into memory."""

_HASH_VERSION = b"handrail-trust-1\0"


@dataclass(frozen=True, slots=True, kw_only=True)
class FolderConfig:
    """A folder's trust-relevant files, read once: what is hashed is what is parsed."""

    root: Path
    """The folder, resolved (symlinks followed)."""
    files: Mapping[Path, bytes] = field(default_factory=dict[Path, bytes])
    """The contents of the `TRUST_FILES` that exist (regular files), by relative path."""
    digest: str
    """SHA-256 over every `TRUST_FILES` entry: its name, and its contents or its absence."""

    def content(self, relative: Path) -> bytes | None:
        """One file's contents, or None when it does not exist."""
        return self.files.get(relative)

    def path(self, relative: Path) -> Path:
        """Where one of the files is (under the resolved root)."""
        return self.root / relative


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedFolder:
    """One entry of the trust store."""

    root: Path
    digest: str
    """The SHA-256 of the folder's files when the user trusted it."""
    trusted_at: str
    """When, as an ISO 8601 UTC timestamp."""


def trust_store_path() -> Path:
    """`~/.config/handrail/trusted.json` (respecting XDG_CONFIG_HOME)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "handrail" / "trusted.json"


def read_folder_config(root: str | Path) -> FolderConfig:
    """Read a folder's `.handrail` settings and MCP files (those that exist) and hash them.

    Raises:
        ConfigurationError: A file exists but cannot be read, or is over 1 MiB.
    """
    resolved = Path(root).expanduser().resolve()
    files: dict[Path, bytes] = {}
    digest = hashlib.sha256(_HASH_VERSION)
    for relative in (*TRUST_FILES, *skill_files(resolved)):
        data = _read_regular(resolved / relative)
        name = relative.as_posix().encode()
        if data is None:
            digest.update(b"absent\0" + name + b"\0")
            continue
        files[relative] = data
        digest.update(b"file\0" + name + b"\0" + str(len(data)).encode() + b"\0" + data)
    return FolderConfig(root=resolved, files=files, digest=digest.hexdigest())


SKILLS_DIR = Path(".handrail") / "skills"
MAX_SKILLS = 500


def skill_files(root: Path) -> list[Path]:
    """The folder's project skills (`.handrail/skills/*/SKILL.md`), relative, sorted.

    Their `allowed_tools` become allow rules while a skill is active, so trust covers them
    too: a skill added or changed after the user looked needs trust again.
    """
    try:
        names = sorted(os.listdir(root / SKILLS_DIR))[:MAX_SKILLS]
    except OSError:
        return []
    return [SKILLS_DIR / name / "SKILL.md" for name in names]


def _read_regular(path: Path) -> bytes | None:
    """A regular file's bytes; None when it is missing or not a regular file (a FIFO, a dir)."""
    try:
        # O_NONBLOCK: a FIFO planted under the name must not hang the open.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ConfigurationError(f"{path} is over {MAX_FILE_BYTES // 1024} KiB: not read")
    return data


def _folder(folder: str | Path | FolderConfig) -> FolderConfig:
    return folder if isinstance(folder, FolderConfig) else read_folder_config(folder)


def is_trusted(folder: str | Path | FolderConfig) -> bool:
    """Whether the user trusted this folder with exactly its current files.

    Raises:
        ConfigurationError: The trust store or one of the folder's files cannot be read.
    """
    config = _folder(folder)
    entry = _read_store(trust_store_path()).get(str(config.root))
    return entry is not None and entry.digest == config.digest


def trust_folder(folder: str | Path | FolderConfig) -> FolderConfig:
    """Record that the user trusts the folder's current files (given, or read now).

    Returns the `FolderConfig` whose digest was recorded.

    Raises:
        ConfigurationError: The trust store is malformed or cannot be written.
    """
    config = _folder(folder)
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    with _locked_store() as entries:
        entries[str(config.root)] = TrustedFolder(
            root=config.root, digest=config.digest, trusted_at=now
        )
    return config


def revoke_trust(root: str | Path) -> bool:
    """Forget the folder (resolved, so it need not exist any more). False if it was not trusted.

    Raises:
        ConfigurationError: The trust store is malformed or cannot be written.
    """
    key = str(Path(root).expanduser().resolve())
    with _locked_store() as entries:
        return entries.pop(key, None) is not None


def trusted_folders() -> list[TrustedFolder]:
    """Every trusted folder, sorted by path (whether or not its files changed since).

    Raises:
        ConfigurationError: The trust store is malformed.
    """
    return sorted(_read_store(trust_store_path()).values(), key=lambda t: str(t.root))


# -- the store -------------------------------------------------------------------------------


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sha256: str
    trusted_at: str = ""


class _Store(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int = 1
    folders: dict[str, _Entry] = {}


def _read_store(path: Path) -> dict[str, TrustedFolder]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read the trust store {path}: {exc}") from exc
    try:
        store = _Store.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(
            f"the trust store {path} is invalid ({problems}); fix it, or delete it to untrust "
            "every folder"
        ) from exc
    return {
        key: TrustedFolder(root=Path(key), digest=e.sha256, trusted_at=e.trusted_at)
        for key, e in store.folders.items()
    }


@contextlib.contextmanager
def _locked_store() -> Generator[dict[str, TrustedFolder], None, None]:
    """The store's entries to change in place; written back atomically (0600) on success.

    An exclusive lock on the config folder keeps two handrail processes (two "allow always"
    answers, say) from losing each other's update.
    """
    path = trust_store_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = os.open(path.parent, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigurationError(f"cannot write the trust store {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = _read_store(path)
        yield entries
        store = {
            "version": 1,
            "folders": {
                key: {"sha256": e.digest, "trusted_at": e.trusted_at}
                for key, e in sorted(entries.items())
            },
        }
        _write_private(path, json.dumps(store, indent=2, ensure_ascii=False) + "\n")
    finally:
        os.close(lock)  # closing releases the lock


def _write_private(path: Path, text: str) -> None:
    try:
        # 0600 whatever was there: the store says which folders may run code.
        write_file_atomic(path, text.encode("utf-8"), mode=0o600)
    except OSError as exc:
        raise ConfigurationError(f"cannot write the trust store {path}: {exc.strerror}") from exc


# -- notices ---------------------------------------------------------------------------------


def printable(text: str, limit: int | None = 200) -> str:
    """`text` on one line with control and format characters escaped, cut to `limit` (if any).

    What a checkout wrote is shown to the user before they trust it: an escape sequence or a
    bidi override must not be able to hide or disguise part of it.
    """
    out = "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
    return out if limit is None or len(out) <= limit else out[: limit - 1] + "…"


def trust_command(root: Path, *options: str) -> str:
    """The command that trusts `root` (with `options`, e.g. `--revoke`), quoted for a shell."""
    return " ".join(["handrail", "trust", *options, shlex.quote(printable(str(root), None))])


def quoted_trust_command(root: Path, *options: str) -> str:
    """`trust_command` in quotes, to quote it in a sentence."""
    command = trust_command(root, *options)
    return f'"{command}"' if "'" in command else f"'{command}'"


def refusal_notice(source: Path, items: Sequence[str], root: Path) -> str:
    """The one line that names what was not applied from an untrusted file, and the fix."""
    return (
        f"not applied from {printable(str(source), None)} (folder not trusted): "
        f"{'; '.join(items)}; run {quoted_trust_command(root)} to apply them"
    )


_reported: set[str] = set()
_reported_lock = threading.Lock()


def report_refused(notices: Sequence[str]) -> None:
    """Log each notice once per process as a warning on the `handrail` logger.

    Settings are loaded more than once in one process (a CLI command, then its runtime); the
    user should read each refusal once.
    """
    for notice in notices:
        with _reported_lock:
            if notice in _reported:
                continue
            _reported.add(notice)
        logger.warning("%s", notice)
