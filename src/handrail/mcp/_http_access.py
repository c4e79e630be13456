"""Who may reach `handrail serve --http`: the token, and the Host and Origin values accepted.

A browser page on another site can reach a server on 127.0.0.1 by DNS rebinding (its own name
resolving to 127.0.0.1 a moment later), so every request's `Host` must name this server, and a
browser's `Origin` must be one the operator allowed. The MCP SDK checks these only for three
loopback bind addresses; handrail checks them for every bind:

- loopback bind (`127.0.0.1`, `::1`, `localhost`): `127.0.0.1`, `localhost` and `[::1]`, with
  the port;
- any other address: that address with the port;
- wildcard bind (`0.0.0.0`, `::`): the loopback names, plus the address the request arrived on
  (one of the machine's own, by construction: it is where the connection landed);
- plus each `allow_hosts` name (`NAME` accepts any port, `NAME:PORT` that port only).

Origins: `http://` plus each accepted Host value, plus each `allow_origins` entry. A request
with no `Origin` (any non-browser client) is fine; `Origin: null` is not.

Nothing here imports the MCP SDK: `serve` checks its options before the SDK loads.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from ..errors import ConfigurationError
from ._http_token import check_token, new_token

__all__ = [
    "AccessRules",
    "HttpSecurity",
    "access_rules",
    "host_port",
    "http_security",
    "is_loopback",
    "normalize_host",
    "normalize_origin",
]

_LOOPBACK_BINDS = frozenset({"127.0.0.1", "::1", "localhost"})
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = frozenset({"0.0.0.0", "::"})
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpSecurity:
    """The checked security options of one HTTP server (what `serve` was given)."""

    token: str | None
    """The bearer token every request must carry; None serves without one (loopback only)."""
    publish_token: bool
    """Write the token to the token file while serving (true when it was generated here)."""
    allow_hosts: tuple[str, ...] = ()
    """Extra accepted Host values, lowercased: `name` (any port) or `name:port`."""
    allow_origins: tuple[str, ...] = ()
    """Extra accepted origins, normalized (`scheme://host[:port]`, default port dropped)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessRules:
    """The Host and Origin values one listening server accepts (see the module docstring)."""

    hosts: frozenset[str]
    """Accepted Host values, lowercased, with the port."""
    any_port: frozenset[str]
    """Names accepted with any port (or none)."""
    origins: frozenset[str]
    """Accepted origins, normalized."""
    port: int
    wildcard: bool
    """Also accept the address each request arrived on."""

    def host_ok(self, host: str, local: str | None) -> bool:
        """Is `host` (a Host header, lowercased) this server, for a request that came to `local`?"""
        if host in self.hosts or _without_port(host) in self.any_port:
            return True
        return self.wildcard and local is not None and host in _with_port(local, self.port)

    def origin_ok(self, origin: str, local: str | None) -> bool:
        """Is `origin` (an Origin header) allowed, for a request that came to `local`?"""
        normal = _origin_of(origin)
        if normal is None:
            return False
        if normal in self.origins:
            return True
        scheme, _, host = normal.partition("://")
        if scheme == "http" and _without_port(host) in self.any_port:
            return True
        if self.wildcard and local is not None:
            return any(normal == _origin_of(f"http://{h}") for h in _with_port(local, self.port))
        return False


def is_loopback(host: str) -> bool:
    """Does binding `host` keep the server reachable from this machine only?"""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_port(host: str, port: int) -> str:
    """`host:port`, with an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _without_port(host: str) -> str:
    """`name` of `name:port` (`[v6]` of `[v6]:port`); `host` itself when it has no port."""
    name, sep, port = host.rpartition(":")
    if sep and name and port.isdigit() and not host.endswith("]"):
        return name
    return host


def _with_port(host: str, port: int) -> tuple[str, ...]:
    """The Host values naming `host` on `port` (the bare name too on port 80)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        host = str(address.ipv4_mapped)  # an IPv4 client of a dual-stack `::` bind
    host = host.lower()
    bare = f"[{host}]" if ":" in host else host
    return (f"{bare}:{port}", bare) if port == 80 else (f"{bare}:{port}",)


def _origin_of(value: str) -> str | None:
    """`scheme://host[:port]` (lowercased, default port dropped), or None if not an origin."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname
    if parts.scheme not in _DEFAULT_PORTS or not host or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == _DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{shown}"
    return f"{parts.scheme}://{shown}:{port}"


def normalize_origin(value: str, what: str = "allow_origins") -> str:
    """An `allow_origins` entry, normalized; `what` names the option in the error.

    Raises:
        ConfigurationError: Not an `http(s)://host[:port]` origin (a path, `*`, `null`).
    """
    normal = _origin_of(value)
    if normal is None:
        raise ConfigurationError(
            f"{what} {value}: not an origin; give scheme, host and port only, "
            "e.g. https://app.example.com or http://localhost:6274"
        )
    return normal


def normalize_host(value: str, what: str = "allow_hosts") -> str:
    """An `allow_hosts` entry, lowercased; `what` names the option in the error.

    Raises:
        ConfigurationError: Not `NAME` or `NAME:PORT` (IPv6 in brackets).
    """
    text = value.strip().lower()
    bare = _without_port(text)
    port = text[len(bare) + 1 :]
    inner = bare[1:-1] if bare.startswith("[") and bare.endswith("]") else bare
    try:
        ipaddress.ip_address(inner)
        valid = True
    except ValueError:
        valid = bool(inner) and all(c.isascii() and (c.isalnum() or c in "-._") for c in inner)
    if not valid or (":" in inner and not bare.startswith("[")) or (port and int(port) > 65535):
        raise ConfigurationError(
            f"{what} {value}: not a host name; give NAME or NAME:PORT, e.g. "
            "mcp.example.com (an IPv6 address in brackets: [fd00::1]:8765)"
        )
    return f"{bare}:{port}" if port else bare


def http_security(
    host: str,
    *,
    auth: bool,
    token: str | None,
    token_file: bool | None,
    allow_hosts: Sequence[str],
    allow_origins: Sequence[str],
) -> HttpSecurity:
    """Check `serve`'s HTTP security options; generate the token when none is given.

    Raises:
        ConfigurationError: No auth on an address other machines can reach, a token with no
            auth, a malformed token, host or origin.
    """
    if isinstance(allow_hosts, str) or isinstance(allow_origins, str):
        raise ConfigurationError("allow_hosts and allow_origins are lists of strings")
    hosts = tuple(normalize_host(h) for h in allow_hosts)
    origins = tuple(normalize_origin(o) for o in allow_origins)
    if not auth:
        if token is not None or token_file:
            raise ConfigurationError("a token was given with auth=False; drop one of them")
        if not is_loopback(host):
            raise ConfigurationError(
                f"serving without a token is allowed on a loopback address only "
                f"(127.0.0.1, ::1, localhost), not on {host}: anyone who can reach {host} "
                "could run the tools"
            )
        return HttpSecurity(
            token=None, publish_token=False, allow_hosts=hosts, allow_origins=origins
        )
    generated = token is None
    chosen = new_token() if token is None else check_token(token, "token:")
    publish = generated if token_file is None else token_file
    return HttpSecurity(
        token=chosen, publish_token=publish, allow_hosts=hosts, allow_origins=origins
    )


def access_rules(bind: str, port: int, security: HttpSecurity) -> AccessRules:
    """The Host and Origin values a server bound to `bind` on `port` accepts."""
    wildcard = bind in _WILDCARDS
    names: tuple[str, ...]
    if bind in _LOOPBACK_BINDS or wildcard:
        names = _LOOPBACK_NAMES
    else:
        names = (bind,)
    hosts = {value for name in names for value in _with_port(name, port)}
    any_port: set[str] = set()
    for entry in security.allow_hosts:
        (any_port if _without_port(entry) == entry else hosts).add(entry)
    origins = {o for h in hosts if (o := _origin_of(f"http://{h}")) is not None}
    origins |= set(security.allow_origins)
    return AccessRules(
        hosts=frozenset(hosts),
        any_port=frozenset(any_port),
        origins=frozenset(origins),
        port=port,
        wildcard=wildcard,
    )
