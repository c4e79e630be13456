"""`ModelServer`: a real HTTP server on 127.0.0.1 that plays a script in four wire formats.

Stdlib only: a `ThreadingHTTPServer` in a daemon thread, so the same process (async tests)
and child processes (a CLI under test) can both reach it.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Self

from ._http import Server
from ._player import BASES, Player
from ._script import RecordedRequest, ScriptItem

__all__ = ["ModelServer"]


class ModelServer:
    """A scripted model server speaking OpenAI Chat, OpenAI Responses, Anthropic and Gemini.

    Each request whose path names a provider consumes the next script item, whatever the
    provider: a `Reply` is rendered in that provider's format (streamed when the request asks
    for it), a `Fault` answers with an error in the provider's own shape, and a callable is
    called with the `RecordedRequest` and must return one of those. Every request is
    recorded; every protocol violation becomes a sentence in `problems`.

    Args:
        script: The items to play, in order (more can be `push`ed later).
        host: The address to listen on.
        port: The port; 0 picks a free one.
        require_key: When given, a request without this credential gets the provider's
            authentication error and consumes nothing (Bearer for OpenAI, `x-api-key` for
            Anthropic, `x-goog-api-key` or `key=` for Gemini).
        strict: Answer a request that breaks a provider rule (unpaired tool calls, no model,
            Anthropic without `max_tokens`) with a 400 in the provider's shape, consuming
            nothing, as the provider would. With False the problem is only recorded.
        seed: Seed of the generated ids, so a run's ids repeat.

    Example:
        ```python
        with ModelServer([Reply(text="Done.")]) as server:
            httpx.post(server.base_url("openai_chat") + "/chat/completions", json=...)
            assert server.problems == []
        ```
    """

    def __init__(
        self,
        script: Iterable[ScriptItem] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        require_key: str | None = None,
        strict: bool = True,
        seed: int = 0,
    ) -> None:
        self._player = Player(script, require_key=require_key, strict=strict, seed=seed)
        self._address = (host, port)
        self._httpd: Server | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind and serve in a daemon thread; returns self. Starting twice is a no-op."""
        with self._player.lock:
            if self._closed:
                raise RuntimeError("this ModelServer is closed; make a new one")
            if self._httpd is not None:
                return self
            self._httpd = Server(self._address, self._player)
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"handrail.testing.ModelServer:{self._httpd.server_address[1]}",
                daemon=True,
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, end open connections and waits; idempotent, done within ~1 s."""
        player = self._player
        with player.lock:
            if self._closed:
                return
            self._closed = True
            httpd, thread = self._httpd, self._thread
        player.closing.set()  # every scripted wait ends now
        if httpd is None:
            return
        httpd.shutdown()
        with player.lock:
            connections = list(player.connections)
        for sock in connections:  # idle keep-alive connections and streams alike
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=1.0)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what tests read ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started: use `with ModelServer(...)` or start()")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def base_url(self, provider: str) -> str:
        """The base URL a client of `provider` is configured with.

        `url + "/v1"` for openai_chat, openai_responses and anthropic (the OpenAI SDKs take
        this; Anthropic's SDK takes `url` and adds `/v1` itself), `url + "/v1beta"` for gemini.
        """
        if provider not in BASES:
            raise ValueError(f"unknown provider {provider!r}; choose one of {', '.join(BASES)}")
        return self.url + BASES[provider]

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order of arrival (a copy)."""
        with self._player.lock:
            return list(self._player.requests)

    @property
    def problems(self) -> list[str]:
        """Every protocol violation found so far, one sentence each (a copy)."""
        with self._player.lock:
            return list(self._player.problems)

    @property
    def remaining(self) -> list[ScriptItem]:
        """The script items not consumed yet (a copy)."""
        with self._player.lock:
            return list(self._player.items)

    def push(self, *items: ScriptItem) -> None:
        """Append items to the script, also while serving."""
        with self._player.lock:
            self._player.items.extend(items)
