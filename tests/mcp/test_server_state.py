"""The signed `requestState` of stateless approvals (`handrail.mcp._server_state`).

Pure: no server, no SDK. A fake clock stands in for time; what each test checks is what a
replica would decide for a state a client sent back.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from handrail import ConfigurationError
from handrail.mcp._server_state import (
    MAX_STATE,
    Opened,
    RequestStates,
    call_digest,
    question_digest,
)

TOKEN = "token-0123456789abcdef-0123456789"
CALL = call_digest("write_file", {"file_path": "a.txt", "content": "x"})
QUESTION = question_digest("write_file", {"file_path": "a.txt", "content": "x"}, "allow?")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def replicas(clock: Clock, ttl: float = 600.0) -> tuple[RequestStates, RequestStates]:
    """Two replicas started with the same token."""
    a = RequestStates.for_server(token=TOKEN, secret=None, ttl=ttl)
    b = RequestStates.for_server(token=TOKEN, secret=None, ttl=ttl)
    a._clock = b._clock = clock
    return a, b


def test_a_state_made_on_one_replica_opens_on_another_once() -> None:
    a, b = replicas(Clock())
    state = a.seal(CALL, QUESTION)
    assert b.open(state, CALL) == Opened(question=QUESTION)
    assert b.open(state, CALL) == "replayed"


def test_the_same_call_twice_gets_two_states() -> None:
    a, b = replicas(Clock())
    first, second = a.seal(CALL, QUESTION), a.seal(CALL, QUESTION)
    assert first != second
    assert b.open(first, CALL) == b.open(second, CALL) == Opened(question=QUESTION)


def test_a_state_for_other_arguments_or_another_tool_is_refused() -> None:
    a, b = replicas(Clock())
    state = a.seal(CALL, QUESTION)
    other_args = call_digest("write_file", {"file_path": "b.txt", "content": "x"})
    other_tool = call_digest("edit_file", {"file_path": "a.txt", "content": "x"})
    assert b.open(state, other_args) == "other_call"
    assert b.open(state, other_tool) == "other_call"
    # Refused before its nonce was spent: the real retry still works.
    assert b.open(state, CALL) == Opened(question=QUESTION)


def test_the_arguments_digest_ignores_key_order_only() -> None:
    assert call_digest("t", {"a": 1, "b": 2}) == call_digest("t", {"b": 2, "a": 1})
    assert call_digest("t", {"a": 1}) != call_digest("t", {"a": "1"})
    assert call_digest("t", {"a": 1}) != call_digest("u", {"a": 1})


def test_an_expired_state_is_refused() -> None:
    clock = Clock()
    a, b = replicas(clock, ttl=60)
    state = a.seal(CALL, QUESTION)
    clock.now += 60
    assert b.open(state, CALL) == "expired"
    clock.now -= 0.5
    assert b.open(state, CALL) == Opened(question=QUESTION)


def _claims(state: str) -> dict[str, object]:
    payload = state.removeprefix("hr1.").rsplit(".", 1)[0]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def _resigned_payload(state: str, **changes: object) -> str:
    """The state with its payload changed and the old signature kept (a forgery)."""
    claims = {**_claims(state), **changes}
    raw = json.dumps(claims, sort_keys=True, separators=(",", ":")).encode()
    payload = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    return f"hr1.{payload}.{state.rsplit('.', 1)[1]}"


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda s: _resigned_payload(s, exp=4_000_000_000), id="longer life"),
        pytest.param(lambda s: _resigned_payload(s, q="approved"), id="other question"),
        pytest.param(lambda s: _resigned_payload(s, c="x"), id="other call"),
        pytest.param(lambda s: s[:-2] + ("AA" if not s.endswith("AA") else "BB"), id="mac"),
        pytest.param(lambda s: s.replace("hr1.", "hr2."), id="version"),
        pytest.param(lambda s: s + "=", id="padding"),
        pytest.param(lambda s: s.rsplit(".", 1)[0], id="no mac"),
        pytest.param(lambda s: "", id="empty"),
        pytest.param(lambda s: "hr1." + "A" * MAX_STATE, id="too long"),
        pytest.param(lambda s: "hr1.e30.", id="empty mac"),
    ],
)
def test_an_altered_state_is_invalid(forge: Callable[[str], str]) -> None:
    a, b = replicas(Clock())
    state = a.seal(CALL, QUESTION)
    forged = forge(state)
    assert forged != state
    assert b.open(forged, CALL) == "invalid"
    assert b.open(state, CALL) == Opened(question=QUESTION)  # the real one is untouched


def test_keys_differ_by_token_and_secret() -> None:
    clock = Clock()
    mine = RequestStates.for_server(token=TOKEN, secret=None)
    other_token = RequestStates.for_server(token=TOKEN + "x", secret=None)
    secret = "s" * 32
    with_secret = RequestStates.for_server(token=TOKEN, secret=secret)
    same_secret = RequestStates.for_server(token="another-token-0123456789", secret=secret)
    for s in (mine, other_token, with_secret, same_secret):
        s._clock = clock
    assert other_token.open(mine.seal(CALL, QUESTION), CALL) == "invalid"
    # A secret wins over the token: replicas with one secret agree whatever their tokens.
    assert mine.open(with_secret.seal(CALL, QUESTION), CALL) == "invalid"
    assert same_secret.open(with_secret.seal(CALL, QUESTION), CALL) == Opened(question=QUESTION)
    assert mine.shared and with_secret.shared


def test_without_token_or_secret_the_key_is_this_process_own() -> None:
    clock = Clock()
    one = RequestStates.for_server(token=None, secret=None)
    two = RequestStates.for_server(token=None, secret=None)
    one._clock = two._clock = clock
    state = one.seal(CALL, QUESTION)
    assert not one.shared
    assert two.open(state, CALL) == "invalid"
    assert one.open(state, CALL) == Opened(question=QUESTION)


def test_spent_nonces_are_forgotten_after_their_state_expired() -> None:
    clock = Clock()
    a, b = replicas(clock, ttl=10)
    for _ in range(5):
        assert isinstance(b.open(a.seal(CALL, QUESTION), CALL), Opened)
    assert len(b._spent) == 5
    clock.now += 11
    assert isinstance(b.open(a.seal(CALL, QUESTION), CALL), Opened)
    assert len(b._spent) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"secret": "short"}, "state_secret must be at least 32 characters"),
        ({"ttl": 0}, "state_ttl must be a positive number"),
        ({"ttl": float("nan")}, "state_ttl must be a positive number"),
    ],
)
def test_bad_options_are_refused(options: dict[str, object], message: str) -> None:
    kwargs: dict[str, object] = {"token": TOKEN, "secret": None, **options}
    with pytest.raises(ConfigurationError, match=message):
        RequestStates.for_server(**kwargs)  # pyright: ignore[reportArgumentType]
