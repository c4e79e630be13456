"""The listening sockets of `handrail serve --http`, bound before the server starts.

Binding first gives the real port (port 0 picks one) to the Host rules and the token file
before any request can arrive, and turns a busy port or a foreign address into one readable
`ConfigurationError` instead of a uvicorn log line and `sys.exit`.
"""

from __future__ import annotations

import contextlib
import errno
import socket

from ..errors import ConfigurationError
from ._http_access import host_port

__all__ = ["bind_sockets", "close_all"]


def _reason(exc: OSError, host: str) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name {host}"
    if exc.errno == errno.EADDRINUSE:
        return "the port is in use"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"this machine has no address {host}"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return exc.strerror or str(exc)


def _addresses(host: str, port: int) -> list[tuple[int, tuple[str, int]]]:
    """(family, address) pairs to bind: the address itself, or every address of a name."""
    found = socket.getaddrinfo(
        host, port, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    out: list[tuple[int, tuple[str, int]]] = []
    for family, _, _, _, address in found:
        pair = (family.value, (str(address[0]), port))
        if pair not in out and family in (socket.AF_INET, socket.AF_INET6):
            out.append(pair)
    return out


def bind_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound (not yet listening) sockets for `host:port`; all on the same port.

    A name (`localhost`) gets one socket per address; an address the machine lacks among
    several (`::1` without IPv6) is skipped, as long as one binds.

    Raises:
        ConfigurationError: `cannot listen on HOST:PORT: <why>`.
    """
    where = host_port(host, port)
    try:
        addresses = _addresses(host, port)
    except OSError as exc:
        raise ConfigurationError(f"cannot listen on {where}: {_reason(exc, host)}") from None
    sockets: list[socket.socket] = []
    first_error: OSError | None = None
    try:
        for family, (address, _) in addresses:
            # Named TCP, not left to the default (0): asyncio sets TCP_NODELAY on accepted
            # sockets only then, and without it each answer's body waits for the client's
            # delayed ACK (about 40 ms on Linux).
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            try:
                # As uvicorn does: a restart may take over a port still in TIME_WAIT (on Linux
                # this never lets two servers listen on one port).
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6 and address != "::":
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                # Port 0 picks a free port once; every other address takes the same one.
                chosen = sockets[0].getsockname()[1] if sockets else port
                sock.bind((address, chosen))
            except OSError as exc:
                sock.close()
                if exc.errno != errno.EADDRNOTAVAIL or len(addresses) == 1:
                    raise
                first_error = first_error or exc
                continue
            sockets.append(sock)
        if not sockets:
            assert first_error is not None
            raise first_error
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise ConfigurationError(f"cannot listen on {where}: {_reason(exc, host)}") from None
    return sockets


def close_all(sockets: list[socket.socket]) -> None:
    """Close sockets, ignoring ones already closed."""
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.close()
