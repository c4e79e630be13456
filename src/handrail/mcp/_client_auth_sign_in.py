"""Who can sign in to an MCP server now: the person behind a `signing_in` block, or nobody.

`signing_in(browser)` sets, for the code run inside it (and the tasks it starts), the function
that shows the person an authorization URL, and how long a sign-in may wait for the browser to
come back. This module owns that context variable; `current()` reads it. Outside such a block
nobody can be asked: a server that needs a person is refused at once (`SignInRequired`), never
waited on.

Standard library only.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Generator
from contextvars import ContextVar
from dataclasses import dataclass

from ._client_auth_redirect import Browser

__all__ = [
    "DEFAULT_SIGN_IN_TIMEOUT",
    "AuthorizationFailed",
    "SignIn",
    "SignInRequired",
    "current",
    "signing_in",
]

DEFAULT_SIGN_IN_TIMEOUT = 300.0
"""Seconds a person has to sign in once the browser was opened."""


@dataclass(frozen=True, slots=True)
class SignIn:
    """Who shows a sign-in, and how long its browser may take."""

    browser: Browser
    timeout: float


_SIGN_IN: ContextVar[SignIn | None] = ContextVar("handrail_mcp_sign_in", default=None)
"""Who shows the person a sign-in, in this context (None: nobody; the server is refused)."""


@contextlib.contextmanager
def signing_in(browser: Browser, timeout: float = DEFAULT_SIGN_IN_TIMEOUT) -> Generator[None]:
    """Let MCP servers started in this block ask the person to sign in, through `browser`.

    The sign-in then waits up to `timeout` seconds for the browser to come back to the
    loopback redirect. Servers started outside such a block are refused when they need a
    person (their stored sign-in, a refresh and machine grants still work).
    """
    token = _SIGN_IN.set(SignIn(browser, timeout))
    try:
        yield
    finally:
        _SIGN_IN.reset(token)


def current() -> SignIn | None:
    """Who can sign in here, if anyone."""
    return _SIGN_IN.get()


def carried() -> contextvars.Context:
    """A fresh context holding only the sign-in in force here (for a connection's own task).

    A server's connection outlives the call that started it: it must not carry that call's
    context (its request, its gate) into everything the server does later.
    """
    fresh = contextvars.Context()
    fresh.run(_SIGN_IN.set, _SIGN_IN.get())
    return fresh


class AuthorizationFailed(Exception):
    """Signing in to a server did not work; the message says why, as a clause."""


class SignInRequired(AuthorizationFailed):
    """The server needs a person to sign in, and nobody can be asked here."""
