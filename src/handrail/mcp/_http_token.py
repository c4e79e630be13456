"""The bearer token of `handrail serve --http`: made, checked, published in a file, read back.

A generated token is published for local clients in a file only the user can read:
`$HANDRAIL_STATE_DIR/serve/`, else `$XDG_RUNTIME_DIR/handrail/serve/`, else
`${XDG_STATE_HOME:-~/.local/state}/handrail/serve/`, named after the port (`8765.token`). The
folder is 0700 and the file 0600, created under a temporary name and renamed into place, so no
reader ever sees it half written or with wider permissions; it is removed when the server stops.

Nothing here imports the MCP SDK: `serve` checks its options with it before the SDK loads.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import tempfile
from pathlib import Path

from ..errors import ConfigurationError

__all__ = [
    "TOKEN_ENV",
    "check_token",
    "new_token",
    "publish_token",
    "read_token_file",
    "token_dir",
    "token_file_path",
    "withdraw_token",
]

TOKEN_ENV = "HANDRAIL_SERVE_TOKEN"
"""The environment variable `handrail serve` takes a token from."""
MIN_LENGTH = 16
"""Shortest token accepted: a short one can be guessed by a local program that keeps trying."""
_MAX_FILE = 4096
_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")
"""Visible ASCII without spaces: what an `Authorization` header carries unchanged."""


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def check_token(token: str, where: str) -> str:
    """`token` if it can be a bearer token; else a ConfigurationError naming `where` it came from.

    `where` starts the message: `"--token-file PATH:"`, `"$HANDRAIL_SERVE_TOKEN:"`.

    Raises:
        ConfigurationError: Empty, too short, or with spaces or non-ASCII characters.
    """
    if not token:
        raise ConfigurationError(f"{where} empty; it must hold the token")
    if not _TOKEN_CHARS.fullmatch(token):
        raise ConfigurationError(
            f"{where} spaces or characters outside visible ASCII; use a token such as "
            "the output of `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    if len(token) < MIN_LENGTH:
        raise ConfigurationError(
            f"{where} {len(token)} characters; use at least {MIN_LENGTH}, "
            "e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
        )
    return token


def token_dir() -> Path:
    """The folder the tokens of running servers are published in (see the module docstring)."""
    explicit = os.environ.get("HANDRAIL_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser() / "serve"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "handrail" / "serve"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "handrail" / "serve"


def token_file_path(port: int) -> Path:
    """Where the token of the server on `port` is published while it runs."""
    return token_dir() / f"{port}.token"


def _private_dir(folder: Path) -> None:
    """Create `folder` (0700), or make an existing one of ours private; refuse anyone else's."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = folder.lstat()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot create the token folder {folder}: {exc.strerror or exc}; set "
            "HANDRAIL_STATE_DIR to a folder you own"
        ) from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise ConfigurationError(
            f"the token folder {folder} is not a folder owned by you; set HANDRAIL_STATE_DIR "
            "to a folder you own"
        )
    if info.st_mode & 0o077:
        folder.chmod(0o700)  # ours, but once created with a looser umask


def publish_token(port: int, token: str) -> Path:
    """Write `token` to `token_file_path(port)`, readable by the user only; return the path.

    The file appears whole and 0600 (written under a temporary name, then renamed), replacing
    a file a killed server left behind.

    Raises:
        ConfigurationError: The folder or the file cannot be written.
    """
    path = token_file_path(port)
    _private_dir(path.parent)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{port}.", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ConfigurationError(
            f"cannot write the token file {path}: {exc.strerror or exc}"
        ) from None
    return path


def withdraw_token(path: Path, token: str) -> None:
    """Remove the published token file, unless another server has replaced it since."""
    with contextlib.suppress(OSError):
        if path.read_text(encoding="ascii", errors="replace").strip() == token:
            path.unlink()


def read_token_file(path: str | Path, flag: str = "--token-file") -> str:
    """The token held in `path` (surrounding whitespace ignored); errors name `flag`.

    Raises:
        ConfigurationError: The file is missing, not a regular file, not the user's own,
            readable or writable by group or others, empty, or not a usable token.
    """
    where = f"{flag} {path}:"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ConfigurationError(f"{where} {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())  # of the file opened, not of whatever the path names now
        if not stat.S_ISREG(info.st_mode):
            raise ConfigurationError(f"{where} not a regular file")
        if info.st_uid != os.geteuid():
            raise ConfigurationError(f"{where} owned by another user, who could change the token")
        if info.st_mode & 0o077:
            mode = stat.S_IMODE(info.st_mode)
            raise ConfigurationError(
                f"{where} readable or writable by others (mode {mode:04o}); run chmod 600 {path}"
            )
        data = f.read(_MAX_FILE + 1)
    if len(data) > _MAX_FILE:
        raise ConfigurationError(f"{where} larger than {_MAX_FILE} bytes; it must hold the token")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = "\x00"  # refused below as outside visible ASCII
    return check_token(text.strip(), where)
