"""Exceptions handrail raises, and the one tools raise to fail with a code.

The model never sees an exception: at run time everything a tool, its arguments, the policy or
the sandbox does ends as a `ToolResult`. Exceptions are for programmers, at setup time:

* HandrailError
  + ConfigurationError   misuse at setup: a bad tool name, duplicate names, malformed settings
  + ModelError           a model server refused or failed a request (after any retries); its
                         message says what to fix (key, model name, base URL)
* ToolFailure            raised by a tool to fail with a stable code and text for the model
                         (caught by the runtime, never propagated)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ._contract import ErrorCode

__all__ = ["ConfigurationError", "HandrailError", "ModelError", "ModelErrorKind", "ToolFailure"]


class HandrailError(Exception):
    """Base class of the errors handrail raises to its caller."""


class ConfigurationError(HandrailError):
    """Setup-time misuse: an invalid tool definition, duplicate names, a malformed settings file."""


ModelErrorKind = Literal[
    "auth",
    "not_found",
    "bad_request",
    "rate_limit",
    "server",
    "connection",
    "timeout",
    "protocol",
    "cut",
]
"""What went wrong with a model request (`ModelError.kind`)."""


class ModelError(HandrailError):
    """A model request failed for good: refused (4xx), or still failing after the retries.

    `str(error)` is one readable line that says what to fix; `kind` and `status` are for
    programs. `retryable` says whether trying again later could help (rate limits, 5xx, a
    dropped or hung connection), as opposed to a bad key, an unknown model or a bad request.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ModelErrorKind,
        status: int | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ModelErrorKind = kind
        self.status = status
        self.retryable = retryable


class ToolFailure(Exception):
    """Raise inside a tool to end the call with `ok=False`, a stable code and a message.

    The message is shown to the model, so say what went wrong and what to do next.
    """

    def __init__(
        self,
        message: str,
        *,
        code: ErrorCode = ErrorCode.EXECUTION_ERROR,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.metadata: Mapping[str, Any] = metadata or {}
