"""The URL guard: parsing, address classes, resolution and the allow list, without connecting.

Every resolver here is injected and answers from a table; nothing is ever connected to, and the
only real lookup is of `localhost` (answered from the hosts file).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from typing import Any

import pytest

from handrail import ConfigurationError
from handrail.sandbox import (
    MAX_URL_CHARS,
    BlockedAddress,
    HostNotFound,
    InvalidUrl,
    check_host,
    check_url,
    parse_allow_hosts,
    parse_url,
)
from handrail.sandbox._urlguard import classify_address, system_resolve


class Resolver:
    """Answers from a fixed list and records every lookup."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = list(addresses)
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append((host, port))
        return self.addresses


async def never_resolve(host: str, port: int) -> Sequence[str]:
    raise AssertionError(f"an IP literal or a refused name was looked up: {host}")


# -- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/file", "scheme"),
        ("file:///etc/passwd", "scheme"),
        ("javascript:alert(1)", "scheme"),
        ("example.com/page", "no_scheme"),
        ("localhost:3000/x", "no_scheme"),
        ("http://user:secret@example.com/", "credentials"),
        ("http://user@example.com/", "credentials"),
        ("http://127.0.0.1\\@example.com/", "credentials"),
        ("http:///path", "no_host"),
        ("http://example.com:99999/", "bad_port"),
        ("http://example.com:0/", "bad_port"),
        ("http://exa mple.com/", "bad_host"),
        ("http://1.2.3.4.5/", "bad_host"),
        ("http://256.1.1.1/", "bad_host"),
        ("http://a.1/", "bad_host"),
        ("http://[::1/", "bad_host"),
        ("http://exa\tmple.com/", "control"),
        ("http://example.com/\nHost: evil", "control"),
        ("http://example.com/" + "a" * MAX_URL_CHARS, "too_long"),
    ],
)
def test_unacceptable_urls_are_refused_with_a_reason(url: str, reason: str) -> None:
    with pytest.raises(InvalidUrl) as info:
        parse_url(url)
    assert info.value.reason == reason


def test_a_url_of_exactly_the_limit_is_accepted() -> None:
    url = "https://example.com/" + "a" * (MAX_URL_CHARS - len("https://example.com/"))
    assert len(url) == MAX_URL_CHARS
    assert parse_url(url).host == "example.com"


def test_parsed_parts() -> None:
    p = parse_url("HTTPS://Docs.Example.COM./a/b?q=1#frag")
    assert (p.scheme, p.host, p.port, p.ip, p.target) == (
        "https",
        "docs.example.com",
        443,
        None,
        "/a/b?q=1",
    )
    assert p.host_header == "docs.example.com"
    v6 = parse_url("http://[2606:4700::1]:8080")
    assert (v6.host, v6.port, v6.target) == ("2606:4700::1", 8080, "/")
    assert v6.host_header == "[2606:4700::1]:8080"
    assert v6.origin == "http://[2606:4700::1]:8080"


def test_international_names_become_idna() -> None:
    assert parse_url("https://bücher.de/").host == "xn--bcher-kva.de"


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",  # one decimal number
        "http://0x7f000001/",  # one hex number
        "http://017700000001/",  # one octal number
        "http://0x7f.1/",  # hex + 24-bit rest
        "http://127.1/",  # short form
        "http://127.0.1/",
        "http://0177.0.0.1/",  # octal part
        "http://127.0.0.1./",  # trailing dot
        "http://%31%32%37.0.0.1/",  # percent-encoded digits
        "http://１２７．０．０．１/",  # full-width digits and dots
    ],
)
def test_every_ipv4_spelling_is_read_as_inet_aton_reads_it(url: str) -> None:
    parsed = parse_url(url)
    assert parsed.ip == ipaddress.IPv4Address("127.0.0.1")
    assert parsed.host == "127.0.0.1"


# -- address classes -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "category", "embedded"),
    [
        ("127.0.0.1", "loopback", None),
        ("127.255.255.254", "loopback", None),
        ("::1", "loopback", None),
        ("10.0.0.5", "private", None),
        ("172.16.0.1", "private", None),
        ("192.168.1.1", "private", None),
        ("fc00::1", "private", None),
        ("fd12:3456::1", "private", None),
        ("100.64.0.1", "shared", None),
        ("169.254.1.1", "link_local", None),
        ("fe80::1", "link_local", None),
        ("fe80::1%eth0", "link_local", None),
        ("169.254.169.254", "metadata", None),
        ("fd00:ec2::254", "metadata", None),
        ("100.100.100.200", "metadata", None),
        ("224.0.0.1", "multicast", None),
        ("ff02::1", "multicast", None),
        ("0.0.0.0", "unspecified", None),
        ("0.1.2.3", "unspecified", None),
        ("::", "unspecified", None),
        ("255.255.255.255", "broadcast", None),
        ("240.0.0.1", "reserved", None),
        ("192.0.2.10", "reserved", None),
        ("198.18.0.1", "reserved", None),
        ("2001:db8::1", "reserved", None),
        ("100::1", "reserved", None),
        ("::ffff:127.0.0.1", "loopback", "127.0.0.1"),
        ("::ffff:169.254.169.254", "metadata", "169.254.169.254"),
        ("::ffff:0:10.0.0.1", "private", "10.0.0.1"),  # IPv4-translated
        ("::127.0.0.1", "loopback", "127.0.0.1"),  # IPv4-compatible
        ("64:ff9b::10.0.0.1", "private", "10.0.0.1"),  # NAT64
        ("2002:a9fe:a9fe::", "metadata", "169.254.169.254"),  # 6to4
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback", "127.0.0.1"),  # Teredo client
        ("64:ff9b:1::1", "private", None),  # local-use NAT64
        ("::93.184.216.34", "reserved", "93.184.216.34"),  # deprecated compatible form
        ("not-an-address", "reserved", None),
    ],
)
def test_blocked_address_classes(address: str, category: str, embedded: str | None) -> None:
    block = classify_address(address)
    assert block is not None, address
    assert (block.category, block.embedded) == (category, embedded)


@pytest.mark.parametrize(
    "address",
    [
        "93.184.216.34",
        "8.8.8.8",
        "1.1.1.1",
        "2606:4700:4700::1111",
        "::ffff:93.184.216.34",  # mapped form of a public address
        "64:ff9b::93.184.216.34",  # NAT64 of a public address (DNS64 networks)
    ],
)
def test_public_addresses_pass(address: str) -> None:
    assert classify_address(address) is None


# -- check_url: resolution, all addresses checked ---------------------------------------------


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("10.0.0.5", "private"),
        ("169.254.169.254", "metadata"),
        ("::ffff:127.0.0.1", "loopback"),
        ("fe80::1", "link_local"),
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "shared"),
        ("fc00::1", "private"),
        ("127.0.0.1", "loopback"),
        ("255.255.255.255", "broadcast"),
    ],
)
async def test_a_name_resolving_to_a_blocked_address_is_refused(
    address: str, category: str
) -> None:
    resolve = Resolver(address)
    with pytest.raises(BlockedAddress) as info:
        await check_url("https://intranet.example.com/admin", resolve=resolve)
    assert info.value.block.category == category
    assert info.value.address == address
    assert info.value.host == "intranet.example.com"
    assert resolve.calls == [("intranet.example.com", 443)]


async def test_one_blocked_address_among_public_ones_refuses_the_host() -> None:
    resolve = Resolver("93.184.216.34", "10.0.0.1", "2606:4700::1")
    with pytest.raises(BlockedAddress) as info:
        await check_url("http://mixed.example.com/", resolve=resolve)
    assert info.value.address == "10.0.0.1"


async def test_a_public_name_passes_with_the_addresses_to_connect_to() -> None:
    resolve = Resolver("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "93.184.216.34")
    checked = await check_url("http://example.com:8080/x", resolve=resolve)
    assert checked.addresses == ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946")
    assert checked.parsed.port == 8080
    assert checked.allowed_by is None
    assert resolve.calls == [("example.com", 8080)]


@pytest.mark.parametrize(
    "url",
    [
        "http://2130706433/",
        "http://0x7f.1/",
        "http://017700000001/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::1]:8080/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0:8000/",
        "http://[fd00:ec2::254]/",
    ],
)
async def test_ip_literals_are_refused_without_a_lookup(url: str) -> None:
    with pytest.raises(BlockedAddress):
        await check_url(url, resolve=never_resolve)


@pytest.mark.parametrize(
    ("url", "category"),
    [
        ("http://localhost:8000/", "loopback"),
        ("http://LOCALHOST./", "loopback"),
        ("http://api.localhost/", "loopback"),
        ("http://metadata.google.internal/computeMetadata/v1/", "metadata"),
        ("http://metadata/", "metadata"),
    ],
)
async def test_always_internal_names_are_refused_without_a_lookup(url: str, category: str) -> None:
    with pytest.raises(BlockedAddress) as info:
        await check_url(url, resolve=never_resolve)
    assert info.value.block.category == category
    assert info.value.address is None


def test_check_host_needs_no_io_for_literals_and_passes_names_on() -> None:
    with pytest.raises(BlockedAddress):
        check_host(parse_url("http://10.1.2.3/"))
    assert check_host(parse_url("http://example.com/")) is None


async def test_a_public_ip_literal_passes_without_a_lookup() -> None:
    checked = await check_url("https://93.184.216.34/", resolve=never_resolve)
    assert checked.addresses == ("93.184.216.34",)


async def test_an_unresolvable_host() -> None:
    async def fail(host: str, port: int) -> Sequence[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(HostNotFound) as info:
        await check_url("https://no-such-host.invalid/", resolve=fail)
    assert info.value.detail == "Name or service not known"
    with pytest.raises(HostNotFound):
        await check_url("https://empty.example/", resolve=Resolver())


async def test_the_system_resolver_answers_localhost_with_loopback_addresses() -> None:
    found = await system_resolve("localhost", 80)
    assert found
    blocks = [classify_address(a) for a in found]
    assert {b.category if b else None for b in blocks} == {"loopback"}


# -- the allow list --------------------------------------------------------------------------


async def test_an_allowed_host_skips_only_the_address_class_check() -> None:
    allow = parse_allow_hosts(["dev.internal", "127.0.0.1"])
    resolve = Resolver("10.0.0.7")
    checked = await check_url("http://dev.internal:3000/", allow=allow, resolve=resolve)
    assert checked.addresses == ("10.0.0.7",)  # still resolved once, still pinned
    assert checked.allowed_by == ("dev.internal", None)
    # Everything else still applies.
    with pytest.raises(InvalidUrl):
        await check_url("ftp://dev.internal/", allow=allow, resolve=resolve)
    with pytest.raises(InvalidUrl):
        await check_url("http://me:pw@dev.internal/", allow=allow, resolve=resolve)
    # Another name for the same place is not allowed.
    with pytest.raises(BlockedAddress):
        await check_url("http://localhost/", allow=allow, resolve=never_resolve)
    with pytest.raises(BlockedAddress):
        await check_url("http://127.0.0.2/", allow=allow, resolve=never_resolve)


async def test_an_allowed_ip_matches_every_spelling_of_it() -> None:
    allow = parse_allow_hosts(["127.0.0.1"])
    for url in ("http://127.0.0.1:8000/", "http://2130706433/", "http://0x7f.1/"):
        checked = await check_url(url, allow=allow, resolve=never_resolve)
        assert checked.addresses == ("127.0.0.1",)


async def test_a_host_port_entry_allows_only_that_port() -> None:
    allow = parse_allow_hosts(["localhost:8000", "[::1]:9000"])
    checked = await check_url("http://localhost:8000/", allow=allow, resolve=Resolver("127.0.0.1"))
    assert checked.allowed_by == ("localhost", 8000)
    with pytest.raises(BlockedAddress):
        await check_url("http://localhost:8001/", allow=allow, resolve=never_resolve)
    assert (await check_url("http://[::1]:9000/", allow=allow)).addresses == ("::1",)
    with pytest.raises(BlockedAddress):
        await check_url("http://[::1]/", allow=allow)


def test_allow_entries_are_normalised() -> None:
    assert parse_allow_hosts(["Example.COM", "::1", "[::1]:80", "0x7f.1", " dev:81 "]) == {
        ("example.com", None),
        ("::1", None),
        ("::1", 80),
        ("127.0.0.1", None),
        ("dev", 81),
    }


@pytest.mark.parametrize("entry", ["", "a b", "host:0", "host:http", "1.2.3.4.5", "[::1"])
def test_malformed_allow_entries_are_configuration_errors(entry: str) -> None:
    with pytest.raises(ConfigurationError, match="allow_hosts entry"):
        parse_allow_hosts([entry])


@pytest.mark.parametrize("value", ["localhost", 8080, [8080]])
def test_an_allow_list_must_be_a_list_of_strings(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="allow_hosts"):
        parse_allow_hosts(value)
