"""MCP client configuration: the `mcpServers` files, read strictly.

Two files, in the shape most MCP hosts share:

* `~/.config/handrail/mcp.json` (the user's servers; `XDG_CONFIG_HOME` is respected)
* `<root>/.handrail/mcp.json` (the project's servers; a server of the same name wins)

```json
{"mcpServers": {
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
             "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}},
  "docs":   {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
}}
```

The project's file comes with the checkout, and its servers are programs run (outside the
sandbox) or URLs sent requests: they are started only once the user trusts the folder
(`handrail trust DIR`, for exactly the folder's current files). Until then they are left out
and named in one warning; a project entry with `disabled: true` may still hide a user's server,
since that only takes tools away.

A server has either `command` (stdio: `args`, `env`, `cwd`) or `url` (streamable HTTP:
`headers`, and `oauth` for signing in: see `_config_oauth`); `type` may say which (`stdio`,
`http`), `timeout` caps one call in seconds and `disabled: true` skips the entry. `${VAR}`
and `${VAR:-default}` are expanded from the environment in every string. Anything else (bad
JSON, an unknown key, a missing variable) is a `ConfigurationError` naming the file and the
problem: a broken file never silently means "no servers" or "any server".

Nothing here imports the `mcp` SDK.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from ..permissions import FolderConfig, is_trusted, read_folder_config
from ..permissions._trust import MCP_FILE, printable, refusal_notice, report_refused
from ._config_oauth import McpOAuthConfig, destinations, parse_oauth, variables

__all__ = [
    "McpServerConfig",
    "describe_server",
    "load_mcp_config",
    "parse_mcp_config",
    "project_mcp_servers",
    "read_mcp_config_file",
    "user_mcp_config_path",
]

_STDIO_KEYS = frozenset({"command", "args", "env", "cwd"})
_HTTP_KEYS = frozenset({"url", "headers", "oauth"})
_COMMON_KEYS = frozenset({"type", "timeout", "disabled"})
_KEYS = _STDIO_KEYS | _HTTP_KEYS | _COMMON_KEYS
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamable_http": "http"}
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServerConfig:
    """One MCP server to connect to: a command to run (stdio) or a URL (streamable HTTP)."""

    name: str
    """The server's name as configured; its tools are called `mcp__<name>__<tool>`."""
    command: str | None = None
    """stdio: the program to run."""
    args: tuple[str, ...] = ()
    """stdio: its arguments."""
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """stdio: environment variables set for the server. Only HOME, LOGNAME, PATH, SHELL, TERM
    and USER are inherited besides these (the SDK's rule), so secrets stay out unless named."""
    cwd: str | None = None
    """stdio: the working directory (relative to the project root; default: the root)."""
    url: str | None = None
    """HTTP: the streamable-HTTP endpoint, `http://` or `https://`."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """HTTP: headers sent with every request (e.g. `Authorization`)."""
    oauth: McpOAuthConfig | None = None
    """HTTP: how to sign in with OAuth where discovery cannot tell (a pre-registered client,
    scopes, the callback port...); None: sign in as the server's metadata says."""
    timeout: float | None = None
    """Seconds one call may take before it is stopped with TIMEOUT (None: the runtime's)."""
    source: Path | None = None
    """The file this entry came from (None when built in code)."""

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ConfigurationError(
                f"MCP server {self.name!r}: give either `command` (stdio) or `url` (HTTP)"
            )
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigurationError(f"MCP server {self.name!r}: timeout must be positive seconds")
        if self.oauth is not None and self.url is None:
            raise ConfigurationError(f"MCP server {self.name!r}: `oauth` applies to a `url` only")

    @property
    def transport(self) -> str:
        """`stdio` or `http`."""
        return "stdio" if self.command is not None else "http"


def user_mcp_config_path() -> Path:
    """`~/.config/handrail/mcp.json` (respecting XDG_CONFIG_HOME)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "handrail" / "mcp.json"


def load_mcp_config(
    root: str | Path, *, user_path: Path | None = None, trust: bool | None = None
) -> dict[str, McpServerConfig]:
    """The configured servers by name: the user's file, then the project's (which wins).

    Disabled entries are left out. The project's servers are included only when the folder
    is trusted; otherwise they are named in one warning on the `handrail` logger.

    Args:
        root: The project folder; its servers are in `<root>/.handrail/mcp.json`.
        user_path: The user's file. Default: `~/.config/handrail/mcp.json`.
        trust: Whether the project folder is trusted. None: as the user recorded with
            `handrail trust` (`~/.config/handrail/trusted.json`), for these exact files.

    Raises:
        ConfigurationError: A malformed file, or an unreadable trust store.
    """
    servers: dict[str, McpServerConfig] = {}
    user = user_path if user_path is not None else user_mcp_config_path()
    if user.is_file():
        servers.update({n: c for n, c in read_mcp_config_file(user).items() if c is not None})
    found, notice = project_mcp_servers(read_folder_config(root), trust=trust)
    for name, config in found.items():
        servers.pop(name, None)
        if config is not None:
            servers[name] = config
    if notice:
        report_refused([notice])
    return servers


def project_mcp_servers(
    folder: FolderConfig, *, trust: bool | None = None
) -> tuple[dict[str, McpServerConfig | None], str]:
    """The project's entries (None: disabled), and the notice for what trust would start.

    Untrusted, only the disabled entries are returned, and the file is read without expanding
    `${VAR}`: neither the environment's values nor a missing variable matter for a server
    that does not start. Reads nothing: the file is the one `folder` holds.
    """
    data = folder.content(MCP_FILE)
    if data is None:
        return {}, ""
    if trust is None:
        trust = is_trusted(folder)
    path = folder.path(MCP_FILE)
    entries = parse_mcp_config(data, path, expand=trust)
    if trust:
        return entries, ""
    refused = [describe_server(c) for c in entries.values() if c is not None]
    kept: dict[str, McpServerConfig | None] = {n: c for n, c in entries.items() if c is None}
    if not refused:
        return kept, ""
    return kept, refusal_notice(path, ["MCP servers " + ", ".join(refused)], folder.root)


def describe_server(config: McpServerConfig, *, limit: int | None = 200) -> str:
    """`name (command args...)` or `name (url)`, on one line with control characters escaped.

    An HTTP entry also says what its `headers` and `oauth` send where: every `${VAR}` a header
    reads, and every secret, `${VAR}` and URL of `oauth`, grouped by the URL they go to
    (`name (url; sends headers.Authorization ${TOKEN} to it; oauth.client_secret ${SECRET} to
    https://as.example)`), so that trusting a checkout shows every host its entries hand
    credentials to. Each part is cut to `limit` characters (None: whole, to show before
    trusting).
    """
    if config.command is not None:
        target = shlex.join([config.command, *config.args])
        sent: list[tuple[str, str]] = []
    else:
        target = config.url or ""
        sent = [
            (" ".join([f"headers.{key}", *variables(value)]), "it")
            for key, value in config.headers.items()
            if variables(value)
        ]
        if config.oauth is not None:
            sent += destinations(config.oauth, target)
    by_place: dict[str, list[str]] = {}
    for what, where in sent:
        by_place.setdefault(where, []).append(printable(what, limit))
    shown = "".join(
        f"; {'sends ' if i == 0 else ''}{', '.join(whats)} to {printable(where, limit)}"
        for i, (where, whats) in enumerate(by_place.items())
    )
    return f"{printable(config.name, limit)} ({printable(target, limit)}{shown})"


def read_mcp_config_file(path: Path) -> dict[str, McpServerConfig | None]:
    """Read one `mcp.json`; disabled servers map to None (so they can hide a user's entry)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read MCP config {path}: {exc.strerror}") from exc
    return parse_mcp_config(data, path)


def parse_mcp_config(
    data: bytes, path: Path, *, expand: bool = True
) -> dict[str, McpServerConfig | None]:
    """Parse one `mcp.json`'s contents (`path` names it in errors); disabled servers map to None.

    `expand=False` keeps `${VAR}` as written (to show an entry without running it).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"MCP config {path} is not UTF-8 text: {exc.reason}") from exc
    try:
        raw: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"MCP config {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}"
        ) from exc
    if not isinstance(raw, dict):
        raise ConfigurationError(
            f'MCP config {path}: expected an object like {{"mcpServers": {{...}}}}, '
            f"got {_kind(raw)}"
        )
    top = cast(dict[str, Any], raw)
    unknown = sorted(k for k in top if k != "mcpServers")
    if unknown:
        raise ConfigurationError(
            f"MCP config {path}: unknown key {unknown[0]!r} (the file holds only `mcpServers`)"
        )
    entries: Any = top.get("mcpServers", {})
    if not isinstance(entries, dict):
        raise ConfigurationError(
            f"MCP config {path}: `mcpServers` must be an object mapping names to servers, "
            f"got {_kind(entries)}"
        )
    out: dict[str, McpServerConfig | None] = {}
    for name, entry in cast(dict[str, Any], entries).items():
        try:
            out[name] = _entry(name, entry, path, expand)
        except ConfigurationError as exc:
            raise ConfigurationError(f"MCP config {path}: {exc}") from exc
    return out


def _entry(name: str, entry: Any, path: Path, expand: bool) -> McpServerConfig | None:
    where = f"server {name!r}"
    string = partial(_string, expand=expand)
    if not name.strip():
        raise ConfigurationError("a server name is empty")
    if not isinstance(entry, dict):
        raise ConfigurationError(f"{where} must be an object, got {_kind(entry)}")
    data = cast(dict[str, Any], entry)
    unknown = sorted(k for k in data if k not in _KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_KEYS))})"
        )
    disabled = data.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ConfigurationError(f"{where}: `disabled` must be true or false")
    kind = _transport(where, data)
    wrong = sorted(k for k in data if k in (_HTTP_KEYS if kind == "stdio" else _STDIO_KEYS))
    if wrong:
        raise ConfigurationError(
            f"{where}: `{wrong[0]}` does not apply to a "
            f"{'command (stdio)' if kind == 'stdio' else 'URL (HTTP)'} server"
        )
    if disabled:
        return None
    timeout = data.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigurationError(f"{where}: `timeout` must be a positive number of seconds")
    if kind == "stdio":
        command = string(where, "command", data.get("command"))
        if not command.strip():
            raise ConfigurationError(f"{where}: `command` is empty")
        cwd = data.get("cwd")
        return McpServerConfig(
            name=name,
            command=command,
            args=tuple(_strings(where, "args", data.get("args", []), expand)),
            env=_mapping(where, "env", data.get("env", {}), expand),
            cwd=None if cwd is None else string(where, "cwd", cwd),
            timeout=None if timeout is None else float(timeout),
            source=path,
        )
    url = string(where, "url", data.get("url"))
    if expand:  # unexpanded, `${VAR}` may stand for the whole URL: checked once expanded
        _check_url(where, url)
    oauth = data.get("oauth")
    return McpServerConfig(
        name=name,
        url=url,
        headers=_mapping(where, "headers", data.get("headers", {}), expand),
        oauth=None if oauth is None else parse_oauth(where, oauth, string, _kind),
        timeout=None if timeout is None else float(timeout),
        source=path,
    )


def _check_url(where: str, url: str) -> None:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ConfigurationError(f"{where}: `url` {url!r} is not a URL ({exc})") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"{where}: `url` must be an http:// or https:// URL with a host, got {url!r}"
        )


def _transport(where: str, data: dict[str, Any]) -> str:
    declared = data.get("type")
    if declared is not None:
        if declared == "sse":
            raise ConfigurationError(
                f"{where}: the legacy SSE transport is not supported; use the server's "
                "streamable HTTP endpoint (`url`) or run it over stdio (`command`)"
            )
        if not isinstance(declared, str) or declared not in _TYPES:
            raise ConfigurationError(f"{where}: `type` must be 'stdio' or 'http', got {declared!r}")
    has_command, has_url = "command" in data, "url" in data
    if has_command and has_url:
        raise ConfigurationError(f"{where}: give either `command` or `url`, not both")
    if not has_command and not has_url:
        raise ConfigurationError(
            f"{where}: give `command` (a program to run over stdio) or `url` (an HTTP endpoint)"
        )
    kind = "stdio" if has_command else "http"
    if declared is not None and _TYPES[declared] != kind:
        raise ConfigurationError(
            f"{where}: `type` is {declared!r} but the entry has "
            f"{'`command`' if has_command else '`url`'}"
        )
    return kind


def _expand(where: str, key: str, value: str) -> str:
    def sub(m: re.Match[str]) -> str:
        found = os.environ.get(m.group(1))
        if found is not None:
            return found
        if m.group(2) is not None:
            return m.group(2)
        raise ConfigurationError(
            f"{where}: `{key}` uses ${{{m.group(1)}}}, which is not set in the environment "
            f"(set it, or write ${{{m.group(1)}:-default}})"
        )

    return _VAR.sub(sub, value)


def _string(where: str, key: str, value: Any, *, expand: bool = True) -> str:
    if not isinstance(value, str):
        raise ConfigurationError(f"{where}: `{key}` must be a string, got {_kind(value)}")
    return _expand(where, key, value) if expand else value


def _strings(where: str, key: str, value: Any, expand: bool) -> list[str]:
    if not isinstance(value, list):
        raise ConfigurationError(f"{where}: `{key}` must be a list of strings, got {_kind(value)}")
    return [
        _string(where, f"{key}[{i}]", v, expand=expand)
        for i, v in enumerate(cast(list[Any], value))
    ]


def _mapping(where: str, key: str, value: Any, expand: bool) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigurationError(
            f"{where}: `{key}` must be an object of strings, got {_kind(value)}"
        )
    return {
        str(k): _string(where, f"{key}.{k}", v, expand=expand)
        for k, v in cast(dict[str, Any], value).items()
    }


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__
