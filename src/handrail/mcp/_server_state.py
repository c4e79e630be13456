"""The signed `requestState` of a stateless approval (MCP 2026-07-28, `handrail serve --http`).

A 2026-07-28 client gets no session and no server-to-client request. When a call needs the
user's approval, the server answers `InputRequiredResult`: the question as an input request,
and a `requestState` the client sends back, verbatim, with the user's answer. The retry may
reach another replica. This module makes and checks that state.

What a state says: "this exact call (tool name + arguments, as the client sent them) was put
to the user with this exact question (a digest of the tool's canonical name, the arguments the
policy saw and the message the user read), at `iat`; it is good until `exp`; nonce `n`". It is
signed with HMAC-SHA256 (`hr1.<payload>.<mac>`, both base64url); it is not encrypted, as it
holds only digests and times. The answer itself (accept, decline) is not in it: it is the
client's input response, as over a session.

Invariants:

- A state verifies only under the key that signed it, unchanged, before `exp`, on a retry of
  the same tool name with the same arguments (`open`); anything else is refused with a reason
  (`invalid`, `expired`, `other_call`, `replayed`) and nothing runs.
- A state answers one retry per replica: `open` spends its nonce, so the same state sent again
  to that replica is `replayed`. Replicas share no memory, so a replay sent to *another*
  replica before `exp` is not detected; it can only repeat the exact call and question the
  user approved, within `ttl`.
- The key: `HMAC-SHA256(secret, label)` from the operator's `state_secret` when given (clients
  never see it: only a replica can mint a state), else from the bearer token (every replica
  started with the same token verifies every other's states; a token holder could mint one,
  but could equally answer the question, so it gains nothing), else a random key made at start
  (`--no-auth` without a secret): states then work against this one process only.

Nothing here imports the MCP SDK.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import hmac
import json
import math
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ConfigurationError

__all__ = [
    "DEFAULT_TTL",
    "MIN_SECRET",
    "Opened",
    "RequestStates",
    "StateRefusal",
    "call_digest",
    "question_digest",
]

StateRefusal = Literal["invalid", "expired", "other_call", "replayed"]
"""Why a state was refused: not signed by this server's key (or altered, or malformed); too
old; made for another call (tool or arguments swapped); already used on this replica."""

DEFAULT_TTL = 600.0
"""Seconds a state stays good: the time a person has to answer, plus the round trip."""
MIN_SECRET = 32
"""Shortest `state_secret` accepted (characters): it is the whole strength of the key."""
MAX_STATE = 1024
"""Longest state looked at (characters): a real one is under 300; more is refused unread."""
_SKEW = 30.0
"""Seconds replicas' clocks may disagree by (a state issued by one, opened by another)."""
_MAX_SPENT = 100_000
"""Nonces remembered at once (each until its state's `exp`); beyond, retries are refused."""
_PREFIX = "hr1."
_LABEL_SECRET = b"handrail/serve/request-state/v1/secret"
_LABEL_TOKEN = b"handrail/serve/request-state/v1/token"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    """The bytes of canonical unpadded base64url `text`; ValueError for anything else."""
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("not base64url") from exc
    if _b64(raw) != text:  # one encoding per value: no malleable variants of a signed text
        raise ValueError("not canonical base64url")
    return raw


def _canonical(value: object) -> bytes:
    # Sorted keys, no spaces, ASCII: the same arguments digest the same on every replica.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def call_digest(tool: str, arguments: Mapping[str, Any] | str) -> str:
    """The digest of a call as the client sent it: its tool name and arguments."""
    return _b64(hashlib.sha256(_canonical({"tool": tool, "arguments": arguments})).digest())


def question_digest(tool: str, arguments: Mapping[str, Any] | str, message: str) -> str:
    """The digest of a question as the user saw it.

    Its parts: the tool's canonical name, the arguments the policy saw (a hook may have
    rewritten them) and the message the user read.
    """
    payload = {"tool": tool, "arguments": arguments, "message": message}
    return _b64(hashlib.sha256(_canonical(payload)).digest())


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    """A verified state: the question it was made for."""

    question: str
    """The `question_digest` the user was shown."""


class RequestStates:
    """Makes and checks the states of one server (see the module docstring).

    Args:
        key: The HMAC key (32 bytes).
        ttl: Seconds a state stays good.
        shared: Whether other replicas can hold the key (a secret or token), for the docs.
        clock: Seconds since the epoch (`time.time`); the states carry wall-clock times so
            that replicas agree.
    """

    def __init__(
        self,
        key: bytes,
        *,
        ttl: float = DEFAULT_TTL,
        shared: bool,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if len(key) < 32:
            raise ValueError("the request-state key must be 32 bytes or more")
        if not (math.isfinite(ttl) and ttl > 0):
            raise ConfigurationError(f"state_ttl must be a positive number of seconds, not {ttl!r}")
        self._key = bytes(key)
        self.ttl = ttl
        self.shared = shared
        """True when the key comes from a secret or token other replicas can be given."""
        self._clock = clock
        self._spent: dict[str, float] = {}
        self._expiries: list[tuple[float, str]] = []

    @classmethod
    def for_server(
        cls, *, token: str | None, secret: str | None, ttl: float = DEFAULT_TTL
    ) -> RequestStates:
        """The states of a server with this bearer token and `state_secret` (either may be None).

        Raises:
            ConfigurationError: A secret shorter than `MIN_SECRET` characters, or a bad ttl.
        """
        if secret is not None:
            if len(secret) < MIN_SECRET:
                raise ConfigurationError(
                    f"state_secret must be at least {MIN_SECRET} characters, e.g. the output of "
                    "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
                )
            key = hmac.new(secret.encode(), _LABEL_SECRET, hashlib.sha256).digest()
            return cls(key, ttl=ttl, shared=True)
        if token is not None:
            key = hmac.new(token.encode(), _LABEL_TOKEN, hashlib.sha256).digest()
            return cls(key, ttl=ttl, shared=True)
        return cls(secrets.token_bytes(32), ttl=ttl, shared=False)

    def _mac(self, signed: str) -> bytes:
        return hmac.new(self._key, signed.encode("ascii"), hashlib.sha256).digest()

    def seal(self, call: str, question: str) -> str:
        """A new state for the call `call` (`call_digest`) asking `question` (`question_digest`)."""
        now = self._clock()
        claims = {
            "v": 1,
            "c": call,
            "q": question,
            "iat": round(now, 3),
            "exp": round(now + self.ttl, 3),
            "n": _b64(secrets.token_bytes(16)),
        }
        signed = _PREFIX + _b64(_canonical(claims))
        return f"{signed}.{_b64(self._mac(signed))}"

    def open(self, state: str, call: str) -> Opened | StateRefusal:
        """Check a state sent back with a retry of the call `call` (`call_digest`), and spend it.

        The signature is checked before the payload is parsed; the nonce is spent only for a
        state that passed every other check.
        """
        if len(state) > MAX_STATE or not state.isascii() or not state.startswith(_PREFIX):
            return "invalid"
        signed, dot, mac_text = state.rpartition(".")
        if not dot:
            return "invalid"
        try:
            mac = _unb64(mac_text)
        except ValueError:
            return "invalid"
        if not hmac.compare_digest(mac, self._mac(signed)):
            return "invalid"
        try:
            claims: Any = json.loads(_unb64(signed[len(_PREFIX) :]))
        except ValueError:
            return "invalid"
        # Signed by this key, so written by `seal`; still checked field by field (fail closed).
        if not isinstance(claims, dict):
            return "invalid"
        fields: dict[str, Any] = claims  # pyright: ignore[reportUnknownVariableType]
        question, exp, nonce = fields.get("q"), fields.get("exp"), fields.get("n")
        issued = fields.get("iat")
        if (
            fields.get("v") != 1
            or not isinstance(question, str)
            or not isinstance(nonce, str)
            or not isinstance(exp, int | float)
            or not isinstance(issued, int | float)
        ):
            return "invalid"
        now = self._clock()
        # A state lives at most this server's TTL, whoever signed it (with the token-derived
        # key, any token holder can): one that claims longer, or was issued in the future, is
        # not this server's, and could pin its nonce in `_spent` for good. Stated positively:
        # a NaN fails every comparison.
        if not (issued <= now + _SKEW and exp <= issued + self.ttl + _SKEW):
            return "invalid"
        if not now < exp:
            return "expired"
        if not hmac.compare_digest(str(fields.get("c")), call):
            return "other_call"
        return self._spend(nonce, float(exp), now) or Opened(question=question)

    def _spend(self, nonce: str, exp: float, now: float) -> StateRefusal | None:
        """Remember `nonce` until `exp`; "replayed" if it was spent already (or no room is left)."""
        while self._expiries and self._expiries[0][0] <= now:
            _, old = heapq.heappop(self._expiries)
            self._spent.pop(old, None)
        if nonce in self._spent or len(self._spent) >= _MAX_SPENT:
            return "replayed"
        self._spent[nonce] = exp
        heapq.heappush(self._expiries, (exp, nonce))
        return None
