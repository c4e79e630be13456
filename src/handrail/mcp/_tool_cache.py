"""The tool lists of MCP servers, cached so a session can offer a server's tools unstarted.

One file per server configuration, `<state>/mcp-tools/<key>.json` (0600 in a 0700 folder of
handrail's private state folder, which every tool is refused), written atomically:

```json
{"format": 1, "server": "github", "listed_at": 1767225600.0, "ttl_ms": null,
 "instructions": "...", "tools": [{"name": "search_issues", "inputSchema": {...}}]}
```

Invariants:

* The key is a SHA-256 of everything that can change what a server lists: the transport, the
  command, its arguments, environment and working directory, or the URL, headers and OAuth
  settings (who signs in may change what is listed). A changed
  configuration is a different key, so it is never served an old list. Values (tokens in `env`
  or `headers`, say) reach the file only through that hash, never in clear; the file holds the
  server's name and what it listed.
* `tools` are the server's tools as it sent them (JSON, by their wire names): handrail builds
  its tools from them exactly as from a live `tools/list`, and compares them with the next one.
* A list is fresh for the server's `ttlMs` when it sent one (the 2026-07-28 protocol; `0` means
  stale at once), else for `DEFAULT_MAX_AGE`; never longer than the cache's `max_age`. A list
  dated in the future (a clock set back) is stale.
* Anything unexpected in a file (a bad shape, another format, not a regular file of this user)
  makes it a miss, never an error: the server is then started and listed as without a cache.
  Failing to write is logged, never raised: a cache cannot stop a session.

Standard library only: reading a warm cache must not import the `mcp` SDK.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import stat
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from .._atomic import read_private_file, write_file_atomic
from ..sandbox import state_dir
from ._config import McpServerConfig

__all__ = [
    "DEFAULT_MAX_AGE",
    "ListedTool",
    "Listing",
    "ToolCache",
    "ToolExecution",
    "config_key",
]

logger = logging.getLogger("handrail.mcp")

FORMAT = 1
"""The file format; a file of another format is a miss."""
DEFAULT_MAX_AGE = 24 * 3600.0
"""Seconds a list stays fresh when its server sent no `ttlMs`."""
PRUNE_AGE = 30 * 24 * 3600.0
"""Seconds after its last write that a file is deleted (its configuration is likely gone)."""
_MAX_BYTES = 16 * 1024 * 1024


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecution:
    """A tool's `execution` field: how it may be run."""

    task_support: str | None = None
    """`forbidden`, `optional` or `required` (MCP tasks); None when the server did not say."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ListedTool:
    """One tool as a server listed it, read from its wire form (`ListedTool.from_wire`)."""

    wire: Mapping[str, Any]
    """The tool as the server sent it (JSON, by its wire names); what the cache stores."""

    @classmethod
    def from_wire(cls, data: Any) -> ListedTool:
        """The tool of a `tools/list` entry; ValueError if it is not shaped like one."""
        if not isinstance(data, dict):
            raise ValueError("a tool is not an object")
        wire = cast(dict[str, Any], data)
        if not isinstance(wire.get("name"), str) or not wire["name"]:
            raise ValueError("a tool has no name")
        if not isinstance(wire.get("inputSchema"), dict):
            raise ValueError(f"tool {wire['name']!r} has no inputSchema object")
        for key in ("annotations", "execution", "outputSchema"):
            if wire.get(key) is not None and not isinstance(wire[key], dict):
                raise ValueError(f"tool {wire['name']!r}: {key} is not an object")
        for key in ("description", "title"):
            if wire.get(key) is not None and not isinstance(wire[key], str):
                raise ValueError(f"tool {wire['name']!r}: {key} is not a string")
        return cls(wire=wire)

    @property
    def name(self) -> str:
        """The tool's name on the server."""
        return cast(str, self.wire["name"])

    @property
    def title(self) -> str | None:
        """Its human-readable title, if any."""
        return self.wire.get("title")

    @property
    def description(self) -> str | None:
        """Its description, if any."""
        return self.wire.get("description")

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of its arguments."""
        return cast(dict[str, Any], self.wire["inputSchema"])

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of its structured content, if any."""
        return self.wire.get("outputSchema")

    @property
    def annotations(self) -> Mapping[str, Any]:
        """Its annotations by their wire names (`readOnlyHint`, ...); empty when none."""
        return self.wire.get("annotations") or {}

    @property
    def execution(self) -> ToolExecution | None:
        """How it may be run, when the server said."""
        found = self.wire.get("execution")
        if found is None:
            return None
        support = cast(dict[str, Any], found).get("taskSupport")
        return ToolExecution(task_support=support if isinstance(support, str) else None)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Listing:
    """What one server listed, and when."""

    tools: tuple[ListedTool, ...]
    """Its tools, in the order it sent them."""
    instructions: str | None = None
    """Its `instructions`, for the host's system prompt."""
    listed_at: float
    """When the list was received, in seconds since the epoch."""
    ttl_ms: int | None = None
    """The `ttlMs` the server sent with it; None when it sent none (older protocols)."""

    def fresh(self, now: float, max_age: float = DEFAULT_MAX_AGE) -> bool:
        """Whether the list may still stand in for the server's own at `now` (epoch seconds)."""
        limit = max_age if self.ttl_ms is None else min(self.ttl_ms / 1000, max_age)
        return 0 <= now - self.listed_at < limit


def config_key(config: McpServerConfig, cwd: Path) -> str:
    """The cache key of a server: a hash of everything that can change what it lists.

    `cwd` is the working directory a stdio server runs in (its relative paths depend on it).
    """
    stdio = config.command is not None
    material = {
        "format": FORMAT,
        "transport": config.transport,
        "command": config.command,
        "args": list(config.args),
        "env": sorted(config.env.items()),
        "cwd": str(cwd) if stdio else None,
        "url": config.url,
        # Header names are case-insensitive in HTTP.
        "headers": sorted((k.lower(), v) for k, v in config.headers.items()),
        "oauth": _plain(config.oauth),
    }
    text = json.dumps(material, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _plain(value: object) -> object:
    """A settings dataclass as plain data for the key (its secrets only ever hashed)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


class ToolCache:
    """The folder of cached tool lists (default: `<state_dir()>/mcp-tools`)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else state_dir() / "mcp-tools"

    def path(self, key: str) -> Path:
        """The file of the server with this key."""
        return self.folder / f"{key}.json"

    def load(self, key: str) -> Listing | None:
        """The cached list of the server with this key; None when missing or unusable."""
        path = self.path(key)
        try:
            data = _read_private(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.debug("MCP tool cache %s ignored: %s", path, exc)
            return None
        try:
            return _parse(data)
        except (ValueError, TypeError, KeyError) as exc:
            logger.debug("MCP tool cache %s ignored: %s", path, exc)
            return None

    def store(self, key: str, server: str, listing: Listing) -> None:
        """Write the list of the server with this key (atomically, 0600); logged on failure."""
        doc = {
            "format": FORMAT,
            "server": server,
            "listed_at": listing.listed_at,
            "ttl_ms": listing.ttl_ms,
            "instructions": listing.instructions,
            "tools": [dict(t.wire) for t in listing.tools],
        }
        data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
        try:
            self._ensure_folder()
            write_file_atomic(self.path(key), data, mode=0o600)
        except OSError as exc:
            logger.warning(
                "MCP server %r: its tool list could not be cached in %s (%s); the next session "
                "starts it to list its tools",
                server,
                self.folder,
                exc.strerror or exc,
            )
            return
        self._prune(keep=key)

    def _ensure_folder(self) -> None:
        # The state folder holds checkpoints and tokens too: made private if we make it.
        self.folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.folder.mkdir(mode=0o700, exist_ok=True)
        st = self.folder.lstat()
        if not stat.S_ISDIR(st.st_mode):
            raise NotADirectoryError(f"{self.folder} is not a folder")
        if st.st_mode & 0o077:
            os.chmod(self.folder, 0o700)  # ours alone: it says which servers a user runs

    def _prune(self, keep: str) -> None:
        """Delete lists not written for `PRUNE_AGE` (their configurations are likely gone)."""
        cutoff = time.time() - PRUNE_AGE
        with contextlib.suppress(OSError), os.scandir(self.folder) as entries:
            for entry in entries:
                if not entry.name.endswith(".json") or entry.name == f"{keep}.json":
                    continue
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                        os.unlink(entry.path)


def _read_private(path: Path) -> bytes:
    return read_private_file(path, _MAX_BYTES)


def _parse(data: bytes) -> Listing:
    doc: Any = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError("not an object")
    fields = cast(dict[str, Any], doc)
    if fields.get("format") != FORMAT:
        raise ValueError(f"format {fields.get('format')!r}, not {FORMAT}")
    listed_at, ttl, instructions = fields["listed_at"], fields["ttl_ms"], fields["instructions"]
    if isinstance(listed_at, bool) or not isinstance(listed_at, int | float):
        raise ValueError("listed_at is not a number")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
        raise ValueError("ttl_ms is not a count of milliseconds")
    if instructions is not None and not isinstance(instructions, str):
        raise ValueError("instructions is not text")
    tools = fields["tools"]
    if not isinstance(tools, list):
        raise ValueError("tools is not a list")
    listed: Sequence[Any] = cast(list[Any], tools)
    parsed = tuple(ListedTool.from_wire(t) for t in listed)
    if len({t.name for t in parsed}) != len(parsed):
        # No server lists a name twice; a file that does was not written from a listing.
        raise ValueError("a tool is listed twice")
    return Listing(
        tools=parsed,
        instructions=instructions,
        listed_at=float(listed_at),
        ttl_ms=ttl,
    )
