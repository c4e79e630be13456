"""HTTP plumbing on `http.server`: the handler, chunked event writing, body reading.

Knows nothing of providers or scripts: each request goes to an `App`. Streams use chunked
transfer encoding, one chunk per event, so a streaming client sees each event as it is
written, and a dropped stream looks like one (the body ends before its last chunk).
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast

__all__ = [
    "Abort",
    "App",
    "Handler",
    "Server",
    "read_body",
    "send",
    "send_json",
    "write_chunk",
    "write_last_chunk",
]

MAX_BODY = 64 * 1024 * 1024


class Abort(Exception):
    """Stop answering and drop the connection: closing, or a scripted drop."""


class App(Protocol):
    """What the HTTP layer calls."""

    def answer(self, h: Handler) -> None:
        """Answer one request (raise `Abort` to drop the connection instead)."""
        ...

    def track(self, sock: socket.socket, *, add: bool) -> None:
        """Note an open (or a finished) connection, so closing can end it."""
        ...

    def problem(self, message: str) -> None:
        """Record a problem."""
        ...


class Handler(BaseHTTPRequestHandler):
    """One connection: any method goes to the app; errors never reach the console."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # each event leaves at once (no 40 ms delayed-ACK stalls)

    @property
    def app(self) -> App:
        """The app this server answers for."""
        return cast(Server, self.server).app

    def setup(self) -> None:
        """Register the connection."""
        super().setup()
        self.app.track(self.connection, add=True)

    def finish(self) -> None:
        """Forget the connection."""
        self.app.track(self.connection, add=False)
        try:
            super().finish()
        except OSError:
            pass

    def _dispatch(self) -> None:
        try:
            self.app.answer(self)
        except (Abort, OSError):  # closing, a scripted drop, or a client that went away
            self.close_connection = True
        except Exception as exc:  # a bug here: say so where tests look, and drop the connection
            self.app.problem(f"server error on {self.command} {self.path}: {exc!r}")
            self.close_connection = True

    do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `requests` and `problems`, not a log."""


class Server(ThreadingHTTPServer):
    """A threading server whose handler threads never outlive the process."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is no error; anything else is recorded as a problem."""
        exc = sys.exc_info()[1]
        if not isinstance(exc, OSError):
            self.app.problem(f"server error: {exc!r}")


def send(h: Handler, status: int, data: bytes, headers: Mapping[str, str]) -> None:
    """A whole response with a body."""
    h.send_response(status)
    for name, value in headers.items():
        h.send_header(name, value)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def send_json(
    h: Handler, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> None:
    """A whole JSON response."""
    data = (json.dumps(body, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    send(h, status, data, {"Content-Type": "application/json", **(headers or {})})


def write_chunk(h: Handler, text: str) -> None:
    """One chunk of a chunked body, written at once."""
    data = text.encode("utf-8")
    h.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))


def write_last_chunk(h: Handler) -> None:
    """The end of a chunked body."""
    h.wfile.write(b"0\r\n\r\n")


def read_body(h: Handler) -> bytes:
    """The request body, by `Content-Length` or chunked."""
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        total = 0
        while True:
            size = int(h.rfile.readline(100).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline(65537).strip():  # trailers
                    pass
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise Abort
            parts.append(h.rfile.read(size))
            h.rfile.readline(3)
    length = int(h.headers.get("Content-Length") or 0)
    if length > MAX_BODY:
        raise Abort
    return h.rfile.read(length) if length > 0 else b""
