"""The URL guard: which URLs a fetch may request, and which addresses it may connect to (SSRF).

A model chooses the URL, and a URL can point back at the machine or the network handrail runs
in: a dev server on localhost, a database admin page on 10.0.0.5, the cloud metadata service at
169.254.169.254 that hands out credentials. The guard refuses those before any packet is sent.

Order of the checks, each one on the same parsed view of the URL:

1. `parse_url`: http or https only, at most `MAX_URL_CHARS`, no user:password@, no control
   characters, a host made of DNS characters once IDNA-encoded. A host that ends in a number is
   an IPv4 address however it is spelled (`2130706433`, `0x7f.1`, `017700000001`, `127.1`) and
   is read the way `inet_aton` reads it, so the check sees the address the OS would connect to.
2. `check_host`, no I/O: IP literals and names that are always internal (`localhost`,
   `metadata.google.internal`) are classified directly.
3. `check_url`: the host is resolved, and if ANY of its addresses is blocked the URL is refused
   (a name resolving to one public and one private address is refused). The caller gets the
   addresses that were checked and must connect to one of them, not resolve the name again:
   a second lookup could answer differently (DNS rebinding).

An allow list (`allow_hosts`: names, `host:port`, IP literals) lets a user reach a host of
their own, such as a local dev server; an allowed host skips only the address-class check.
Pure stdlib (`ipaddress`, `socket`): no HTTP client here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError

__all__ = [
    "MAX_URL_CHARS",
    "AddressBlock",
    "AllowEntry",
    "AllowList",
    "BlockedAddress",
    "CheckedUrl",
    "HostNotFound",
    "InvalidUrl",
    "ParsedUrl",
    "ResolveFunc",
    "UrlRefused",
    "allowed_entry",
    "check_host",
    "check_url",
    "classify_address",
    "parse_allow_hosts",
    "parse_url",
    "system_resolve",
]

MAX_URL_CHARS = 2000
"""Longest URL accepted (the limit browsers and CDNs commonly share)."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ResolveFunc = Callable[[str, int], Awaitable[Sequence[str]]]
"""`resolve(host, port)` -> the host's IP addresses as strings (tests inject one)."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_CHARS = re.compile(r"^[a-z0-9_.-]+$")
_HEX_PART = re.compile(r"^0[xX][0-9a-fA-F]*$")
_OCT_PART = re.compile(r"^0[0-7]+$")
_DEC_PART = re.compile(r"^[0-9]+$")
_ENDS_IN_NUMBER = re.compile(r"(?:^|\.)(?:[0-9]+|0[xX][0-9a-fA-F]*)\.?$")

# Names that always mean this machine (RFC 6761) or a cloud metadata service, whatever DNS says.
_LOOPBACK_NAMES = ("localhost",)
_METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data"}
)


# -- address classes -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AddressBlock:
    """Why an address is refused."""

    category: str
    """Stable key: loopback, private, shared, link_local, metadata, multicast, unspecified,
    broadcast or reserved."""
    network: str
    """The blocked range the address falls in, e.g. `127.0.0.0/8`."""
    embedded: str | None = None
    """For an IPv6 form that carries an IPv4 address (mapped, NAT64, 6to4, ...): that address."""


def _nets(
    table: Sequence[tuple[str, str]],
) -> tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]:
    return tuple((ipaddress.ip_network(net), category) for net, category in table)


# First match wins, so the narrow ranges (metadata endpoints) come before the ranges they sit in.
_V4_BLOCKS = _nets(
    [
        ("169.254.169.254/32", "metadata"),  # AWS, GCP, Azure, OpenStack, ...
        ("169.254.170.2/32", "metadata"),  # AWS ECS task credentials
        ("100.100.100.200/32", "metadata"),  # Alibaba Cloud
        ("0.0.0.0/8", "unspecified"),  # "this network": 0.0.0.0 connects to this machine
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared"),  # carrier-grade NAT (RFC 6598)
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link_local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
        ("192.0.2.0/24", "reserved"),  # documentation
        ("192.88.99.0/24", "reserved"),  # old 6to4 relay anycast
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "reserved"),  # benchmarking
        ("198.51.100.0/24", "reserved"),  # documentation
        ("203.0.113.0/24", "reserved"),  # documentation
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
    ]
)
_V6_BLOCKS = _nets(
    [
        ("fd00:ec2::254/128", "metadata"),  # AWS over IPv6
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "private"),  # local-use NAT64 (RFC 8215)
        ("100::/64", "reserved"),  # discard-only
        ("2001:db8::/32", "reserved"),  # documentation
        ("3fff::/20", "reserved"),  # documentation (RFC 9637)
        ("fc00::/7", "private"),  # unique local
        ("fe80::/10", "link_local"),
        ("fec0::/10", "private"),  # site-local (deprecated)
        ("ff00::/8", "multicast"),
    ]
)
# IPv6 forms that carry an IPv4 address: the IPv4 address decides.
_V4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_V4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_V4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")


def _v4_block(ip: ipaddress.IPv4Address) -> AddressBlock | None:
    for net, category in _V4_BLOCKS:
        if ip in net:
            return AddressBlock(category=category, network=str(net))
    return None


def _embedded_v4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 form carries, and the form's range."""
    for net in (_V4_MAPPED, _V4_TRANSLATED, _V4_COMPATIBLE, _NAT64):
        if ip in net:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), str(net)
    if ip.sixtofour is not None:
        return ip.sixtofour, "2002::/16"
    if ip.teredo is not None:
        return ip.teredo[1], "2001::/32"  # the client address, already de-obfuscated
    return None


def classify_address(address: str | IPAddress) -> AddressBlock | None:
    """Why `address` must not be fetched from, or None for a public address.

    Covers loopback, private (RFC 1918, unique local), shared CGNAT space, link-local, cloud
    metadata endpoints, multicast, unspecified, broadcast and reserved ranges, and the IPv6
    forms that embed an IPv4 address (mapped, translated, compatible, NAT64, 6to4, Teredo).
    An IPv6 address outside global unicast space (2000::/3) is reserved. A string that is not
    an IP address is refused as reserved (fail closed).
    """
    if isinstance(address, str):
        try:
            ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return AddressBlock(category="reserved", network="(not an IP address)")
    else:
        ip = address
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_block(ip)
    ip = ipaddress.IPv6Address(int(ip))  # drop any scope id
    for net, category in _V6_BLOCKS[:3]:  # metadata, ::, ::1 before the IPv4-carrying forms
        if ip in net:
            return AddressBlock(category=category, network=str(net))
    carried = _embedded_v4(ip)
    if carried is not None:
        v4, form = carried
        inner = _v4_block(v4)
        if inner is not None:
            return AddressBlock(category=inner.category, network=inner.network, embedded=str(v4))
        if form == "::/96":  # deprecated IPv4-compatible form: nothing legitimate uses it
            return AddressBlock(category="reserved", network=form, embedded=str(v4))
        return None
    for net, category in _V6_BLOCKS[3:]:
        if ip in net:
            return AddressBlock(category=category, network=str(net))
    if ip not in _GLOBAL_UNICAST:
        return AddressBlock(category="reserved", network="outside 2000::/3")
    return None


# -- parsing ---------------------------------------------------------------------------------


class UrlRefused(Exception):
    """Base of the guard's refusals; `str()` is an English explanation for logs."""


class InvalidUrl(UrlRefused):
    """The URL itself is unacceptable (scheme, length, credentials, host syntax)."""

    def __init__(self, url: str, reason: str, detail: str = "") -> None:
        super().__init__(f"invalid URL ({reason}{': ' + detail if detail else ''}): {url[:200]}")
        self.url = url
        self.reason = reason
        """too_long, control, no_scheme, scheme, credentials, no_host, bad_host or bad_port."""
        self.detail = detail
        """The offending part (the scheme, the host, the port)."""


class BlockedAddress(UrlRefused):
    """The host is, or resolves to, an address of a blocked class."""

    def __init__(self, url: str, host: str, address: str | None, block: AddressBlock) -> None:
        where = f"{host} -> {address}" if address is not None and address != host else host
        super().__init__(f"blocked {block.category} address ({where}, {block.network}): {url}")
        self.url = url
        self.host = host
        self.address = address
        """The offending address; None when the host name itself is refused."""
        self.block = block


class HostNotFound(UrlRefused):
    """The host name does not resolve."""

    def __init__(self, url: str, host: str, detail: str) -> None:
        super().__init__(f"cannot resolve {host} ({detail}): {url}")
        self.url = url
        self.host = host
        self.detail = detail


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedUrl:
    """A URL as the guard understands it; the request is built from these parts."""

    url: str
    """The URL as given."""
    scheme: str
    """`http` or `https`."""
    host: str
    """ASCII host: a lower-case IDNA name, or the canonical IP address (no brackets)."""
    port: int
    """The explicit port, else 80 or 443."""
    ip: IPAddress | None
    """The address, when the host is an IP literal (in any spelling)."""
    target: str
    """Path and query, as sent in the request line (`/` when empty); no fragment."""

    @property
    def default_port(self) -> bool:
        """True when the port is the scheme's default."""
        return _DEFAULT_PORTS[self.scheme] == self.port

    @property
    def host_header(self) -> str:
        """The `Host` header: the host (bracketed if IPv6), plus the port unless default."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if self.default_port else f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """`scheme://host[:port]`."""
        return f"{self.scheme}://{self.host_header}"


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """Read `host` the way `inet_aton` does: 1-4 parts, decimal, octal (0...) or hex (0x...)."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()  # "127.0.0.1." is the same address
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        if _HEX_PART.match(part):
            values.append(int(part[2:] or "0", 16))
        elif _OCT_PART.match(part):
            values.append(int(part, 8))
        elif _DEC_PART.match(part):
            values.append(int(part, 10))
        else:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, v in enumerate(head):
        number |= v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _ascii_host(raw: str, url: str) -> str:
    """The host IDNA-encoded (which also maps full-width digits and dots), lower case."""
    host = unquote(raw)  # %-escapes in a host name are decoded by browsers too
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError:
            raise InvalidUrl(url, "bad_host", raw) from None
    if not host or not _HOST_CHARS.match(host) or ".." in host or host.startswith("."):
        raise InvalidUrl(url, "bad_host", raw)
    return host


def parse_url(url: str) -> ParsedUrl:
    """Parse and check a URL without any I/O; raises `InvalidUrl`."""
    if len(url) > MAX_URL_CHARS:
        raise InvalidUrl(url, "too_long", str(len(url)))
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        # urlsplit silently drops tabs and newlines; refuse rather than guess.
        raise InvalidUrl(url, "control")
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:
        raise InvalidUrl(url, "bad_host", str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        # `example.com/x` and `localhost:3000` parse as a path or as scheme "localhost":
        # both mean the scheme was left out; `ftp://x` and `file:x` name a wrong one.
        left_out = not scheme or (
            "://" not in url
            and ("." in scheme or scheme == "localhost" or parts.path[:1].isdigit())
        )
        raise InvalidUrl(url, "no_scheme" if left_out else "scheme", scheme)
    netloc = parts.netloc
    if "@" in netloc:
        raise InvalidUrl(url, "credentials")
    raw_host = parts.hostname
    if not raw_host:
        raise InvalidUrl(url, "no_host")
    try:
        port = parts.port
    except ValueError:
        raise InvalidUrl(url, "bad_port", netloc.rpartition(":")[2]) from None
    if port == 0:
        raise InvalidUrl(url, "bad_port", "0")
    ip: IPAddress | None = None
    if netloc.startswith("["):
        try:
            ip = ipaddress.IPv6Address(unquote(raw_host).split("%", 1)[0])
        except ValueError:
            raise InvalidUrl(url, "bad_host", raw_host) from None
        host = str(ip)
    else:
        host = _ascii_host(raw_host, url)
        if _ENDS_IN_NUMBER.search(host):
            # A host ending in a number is an IPv4 address to every resolver; one that does not
            # parse as one is invalid (browsers agree), never a name to look up.
            ip = _inet_aton(host)
            if ip is None:
                raise InvalidUrl(url, "bad_host", raw_host)
            host = str(ip)
        else:
            host = host.rstrip(".")
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    return ParsedUrl(
        url=url,
        scheme=scheme,
        host=host,
        port=port if port is not None else _DEFAULT_PORTS[scheme],
        ip=ip,
        target=target,
    )


# -- allow list ------------------------------------------------------------------------------

AllowList = frozenset[tuple[str, int | None]]
"""Compiled allow-list entries, see `parse_allow_hosts`."""


def parse_allow_hosts(entries: Iterable[str]) -> AllowList:
    """Compile allow-list entries: `name`, `name:port`, an IP literal, `[v6]:port`.

    Hosts are normalised like URL hosts, so `127.0.0.1` also matches `http://2130706433/`.
    A malformed entry is a `ConfigurationError`.
    """
    if isinstance(entries, str):
        raise ConfigurationError(f"allow_hosts must be a list of hosts, not the string {entries!r}")
    try:
        items = list(entries)
    except TypeError:
        raise ConfigurationError(f"allow_hosts must be a list of hosts, not {entries!r}") from None
    out: set[tuple[str, int | None]] = set()
    for entry in items:
        if not isinstance(entry, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigurationError(f"allow_hosts entry {entry!r} is not a string")
        out.add(_allow_entry(entry))
    return frozenset(out)


def _allow_entry(entry: str) -> tuple[str, int | None]:
    text = entry.strip()
    port_text: str | None = None
    if text.startswith("["):
        inner, bracket, rest = text[1:].partition("]")
        host = f"[{inner}]" if bracket else text
        if rest:
            port_text = rest[1:] if rest.startswith(":") else rest
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        host = f"[{text}]"  # a bare IPv6 address
    else:
        host = text
    problem = None
    port: int | None = None
    if port_text is not None:
        if port_text.isascii() and port_text.isdigit() and 0 < int(port_text) < 65536:
            port = int(port_text)
        else:
            problem = f"bad port {port_text!r}"
    if problem is None:
        try:
            return parse_url(f"http://{host}/").host, port
        except InvalidUrl as exc:
            problem = exc.reason.replace("_", " ")
    raise ConfigurationError(
        f"allow_hosts entry {entry!r} is not a host name, host:port or IP address ({problem})"
    )


AllowEntry = tuple[str, int | None]
"""One compiled allow-list entry: (host, port), port None for any port."""


def allowed_entry(parsed: ParsedUrl, allow: AllowList) -> AllowEntry | None:
    """The allow-list entry that covers this URL's host and port, or None."""
    for entry in ((parsed.host, parsed.port), (parsed.host, None)):
        if entry in allow:
            return entry
    return None


# -- the checks ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedUrl:
    """A URL that passed the guard, with the only addresses a request may connect to."""

    parsed: ParsedUrl
    addresses: tuple[str, ...]
    """Checked addresses, in resolver order. Connect to these, never to a new lookup."""
    allowed_by: AllowEntry | None = None
    """The allow-list entry that let the host skip the address-class check, if any."""


def check_host(parsed: ParsedUrl, allow: AllowList = frozenset()) -> AllowEntry | None:
    """The checks that need no I/O: IP literals and always-internal names.

    Returns the allow-list entry that covers the host (None if none); raises `BlockedAddress`.
    """
    entry = allowed_entry(parsed, allow)
    if entry is not None:
        return entry
    if parsed.ip is not None:
        block = classify_address(parsed.ip)
        if block is not None:
            raise BlockedAddress(parsed.url, parsed.host, parsed.host, block)
        return None
    name = parsed.host
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        raise BlockedAddress(
            parsed.url, name, None, AddressBlock(category="loopback", network="RFC 6761")
        )
    if name in _METADATA_NAMES:
        raise BlockedAddress(
            parsed.url, name, None, AddressBlock(category="metadata", network="metadata host name")
        )
    return None


async def system_resolve(host: str, port: int) -> list[str]:
    """The host's addresses from the OS resolver (`getaddrinfo`), in its order, deduplicated."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    seen: dict[str, None] = {}
    for _family, _type, _proto, _canon, sockaddr in infos:
        seen.setdefault(str(sockaddr[0]), None)
    return list(seen)


async def check_url(
    url: str | ParsedUrl,
    *,
    allow: AllowList = frozenset(),
    resolve: ResolveFunc | None = None,
) -> CheckedUrl:
    """Parse, resolve and check a URL; every address must pass (or the host be allowed).

    Raises `InvalidUrl`, `BlockedAddress` or `HostNotFound`. Nothing is connected to.
    """
    parsed = parse_url(url) if isinstance(url, str) else url
    allowed_by = check_host(parsed, allow)
    if parsed.ip is not None:
        return CheckedUrl(parsed=parsed, addresses=(parsed.host,), allowed_by=allowed_by)
    try:
        found = await (resolve or system_resolve)(parsed.host, parsed.port)
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        raise HostNotFound(parsed.url, parsed.host, _resolve_error(exc)) from None
    addresses = tuple(dict.fromkeys(found))
    if not addresses:
        raise HostNotFound(parsed.url, parsed.host, "no addresses")
    if allowed_by is None:
        for address in addresses:
            block = classify_address(address)
            if block is not None:
                raise BlockedAddress(parsed.url, parsed.host, address, block)
    return CheckedUrl(parsed=parsed, addresses=addresses, allowed_by=allowed_by)


def _resolve_error(exc: BaseException) -> str:
    if isinstance(exc, socket.gaierror) and exc.args and len(exc.args) > 1:
        return str(exc.args[1])
    return str(exc) or type(exc).__name__
