"""The server around the formats: faults, keys, drops, script handling, recording, closing."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from handrail.testing import Fault, ModelServer, RecordedRequest, Reply, ToolUse

PROVIDERS = ["openai_chat", "openai_responses", "anthropic", "gemini"]


def error_of(provider: str, body: Any) -> tuple[str, str]:
    """(type or status name, message) from a provider's error body."""
    if provider == "anthropic":
        assert body["type"] == "error"
        return body["error"]["type"], body["error"]["message"]
    if provider == "gemini":
        assert isinstance(body["error"]["code"], int)
        return body["error"]["status"], body["error"]["message"]
    assert set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]["type"], body["error"]["message"]


def finished(provider: str, answer: Any) -> bool:
    """Whether the stream carried its final marker."""
    if not answer.events:
        return False
    name, data = answer.events[-1]
    if provider == "openai_chat":
        return data == "[DONE]"
    if provider == "openai_responses":
        return name == "response.completed"
    if provider == "anthropic":
        return name == "message_stop"
    return "finishReason" in json.loads(data)["candidates"][0]


def text_of(provider: str, answer: Any) -> str:
    """The assistant text of a whole response."""
    body = answer.body
    if provider == "openai_chat":
        return body["choices"][0]["message"]["content"]
    if provider == "openai_responses":
        return body["output"][0]["content"][0]["text"]
    if provider == "anthropic":
        return body["content"][0]["text"]
    return body["candidates"][0]["content"]["parts"][0]["text"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_fault_with_retry_after_then_the_next_reply(serve: Any, provider: str) -> None:
    server, ask = serve(Fault(status=429, retry_after=0.2), Reply(text="Done."))
    answer = ask(provider)
    assert answer.status == 429
    assert answer.headers["retry-after"] == "0.2"
    kind, _ = error_of(provider, answer.body)
    assert (
        kind
        == {
            "openai_chat": "requests",
            "openai_responses": "requests",
            "anthropic": "rate_limit_error",
            "gemini": "RESOURCE_EXHAUSTED",
        }[provider]
    )
    assert text_of(provider, ask(provider)) == "Done."
    assert server.remaining == [] and server.problems == []


@pytest.mark.parametrize(
    ("provider", "status", "kind"),
    [
        ("openai_chat", 500, "server_error"),
        ("openai_responses", 503, "server_error"),
        ("anthropic", 529, "overloaded_error"),
        ("anthropic", 500, "api_error"),
        ("gemini", 503, "UNAVAILABLE"),
    ],
)
def test_fault_error_shapes(serve: Any, provider: str, status: int, kind: str) -> None:
    _, ask = serve(Fault(status=status, retry_after=3), Fault(status=status, body="custom words"))
    answer = ask(provider, stream=True)  # errors come before any stream, as JSON
    assert answer.status == status
    assert answer.headers["retry-after"] == "3"
    assert error_of(provider, answer.body)[0] == kind
    assert error_of(provider, ask(provider).body) == (kind, "custom words")


def test_fault_with_own_body_and_headers(serve: Any) -> None:
    _, ask = serve(
        Fault(status=400, body={"detail": "odd"}, headers={"x-thing": "1"}),
        Fault(status=502, body=b"<html>Bad gateway</html>"),
    )
    answer = ask("openai_chat")
    assert (answer.status, answer.body, answer.headers["x-thing"]) == (400, {"detail": "odd"}, "1")
    answer = ask("anthropic")
    assert answer.status == 502
    assert answer.raw == b"<html>Bad gateway</html>"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_require_key_refuses_without_consuming(serve: Any, provider: str) -> None:
    server, ask = serve(Reply(text="Done."), require_key="sk-test")
    good = {
        "openai_chat": {"authorization": "Bearer sk-test"},
        "openai_responses": {"authorization": "Bearer sk-test"},
        "anthropic": {"x-api-key": "sk-test"},
        "gemini": {"x-goog-api-key": "sk-test"},
    }[provider]
    bad = {name: value.replace("sk-test", "sk-nope") for name, value in good.items()}
    missing = ask(provider)
    wrong = ask(provider, headers=bad)
    if provider == "gemini":  # Gemini: 403 without a key, 400 API_KEY_INVALID with a bad one
        assert (missing.status, error_of(provider, missing.body)[0]) == (403, "PERMISSION_DENIED")
        assert (wrong.status, error_of(provider, wrong.body)[0]) == (400, "INVALID_ARGUMENT")
        assert wrong.body["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    else:
        expected = "authentication_error" if provider == "anthropic" else "invalid_request_error"
        for answer in (missing, wrong):
            assert answer.status == 401
            assert error_of(provider, answer.body)[0] == expected
    assert len(server.remaining) == 1
    assert text_of(provider, ask(provider, headers=good)) == "Done."
    assert server.problems == []
    assert len(server.requests) == 3


def test_gemini_key_in_the_query(serve: Any) -> None:
    _, ask = serve(Reply(text="Done."), require_key="k1")
    answer = ask("gemini", path="/models/gemini-test:generateContent?key=k1")
    assert answer.status == 200


@pytest.mark.parametrize("provider", PROVIDERS)
def test_disconnect_without_answer(serve: Any, provider: str) -> None:
    server, ask = serve(Fault(disconnect=True), Reply(text="Done."))
    with pytest.raises(httpx.RemoteProtocolError):
        ask(provider)
    assert text_of(provider, ask(provider)) == "Done."
    assert server.problems == []


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("cut", [2, 1000])
def test_cut_after_drops_the_stream_before_its_end(serve: Any, provider: str, cut: int) -> None:
    reply = Reply(text="Hello, world, and more words.", chunk_size=3, cut_after=cut)
    server, ask = serve(reply, Reply(text="Done."))
    answer = ask(provider, stream=True)
    assert answer.status == 200
    assert not answer.complete  # the chunked body ended early
    assert not finished(provider, answer)
    if cut == 2:
        assert len(answer.events) == 2
    assert text_of(provider, ask(provider)) == "Done."
    assert server.problems == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_after_sends_one_bad_line(serve: Any, provider: str) -> None:
    _, ask = serve(Reply(text="Hello, world!", chunk_size=4, malformed_after=2))
    answer = ask(provider, stream=True)
    assert answer.complete and finished(provider, answer)
    bad = []
    for index, (name, data) in enumerate(answer.events):
        try:
            json.loads(data)
        except ValueError:
            if data != "[DONE]":
                bad.append((index, name))
    assert [index for index, _ in bad] == [2]
    if provider in ("openai_responses", "anthropic"):  # named like the event it stands for
        assert bad[0][1] == answer.events[3][0]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_callable_item_sees_the_request(serve: Any, provider: str) -> None:
    seen: list[RecordedRequest] = []

    def answer(req: RecordedRequest) -> Reply:
        seen.append(req)
        return Reply(text=f"model {req.model}, stream {req.stream}")

    _, ask = serve(answer)
    result = ask(provider)
    assert seen[0].provider == provider
    assert text_of(provider, result) == f"model {seen[0].model}, stream False"


def test_callable_item_that_fails(serve: Any) -> None:
    def broken(req: RecordedRequest) -> Reply:
        raise RuntimeError("boom")

    server, ask = serve(broken, lambda req: "not a reply")
    for _ in range(2):
        answer = ask("anthropic")
        assert answer.status == 500
        assert error_of("anthropic", answer.body)[0] == "api_error"
    assert "boom" in server.problems[0]
    assert "not a Reply or Fault" in server.problems[1]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_script_exhausted(serve: Any, provider: str) -> None:
    server, ask = serve()
    answer = ask(provider)
    assert answer.status == 500
    assert "script exhausted" in error_of(provider, answer.body)[1]
    assert len(server.problems) == 1 and "script exhausted" in server.problems[0]


def test_unknown_path_and_method(serve: Any, client: httpx.Client) -> None:
    server, ask = serve(Reply(text="kept"))
    assert ask("openai_chat", path="/completions").status == 404
    assert client.get(server.base_url("openai_chat") + "/chat/completions").status_code == 404
    assert len(server.problems) == 2
    assert "no such endpoint" in server.problems[0]
    assert len(server.remaining) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_body_that_is_not_json(serve: Any, provider: str) -> None:
    server, ask = serve(Reply(text="kept"))
    answer = ask(provider, content=b"{not json", headers={"content-type": "application/json"})
    assert answer.status == 400
    assert error_of(provider, answer.body)[0] in ("invalid_request_error", "INVALID_ARGUMENT")
    assert server.problems and len(server.remaining) == 1


def test_recorded_request(serve: Any) -> None:
    server, ask = serve(Reply(text="a"), Reply(text="b"))
    ask("gemini", stream=True, headers={"X-Goog-Api-Key": "k"})
    ask("openai_chat", stream=False, temperature=0)
    first, second = server.requests
    assert first.provider == "gemini"
    assert (first.method, first.path) == (
        "POST",
        "/v1beta/models/gemini-test:streamGenerateContent",
    )
    assert first.query == {"alt": "sse"}
    assert first.headers["x-goog-api-key"] == "k"
    assert (first.stream, first.model) == (True, "gemini-test")
    assert first.body["contents"][0]["parts"] == [{"text": "Hi"}]
    assert second.provider == "openai_chat"
    assert (second.stream, second.model) == (False, "gpt-test")
    assert second.body["temperature"] == 0
    assert json.loads(second.raw) == second.body


def test_push_and_remaining(serve: Any) -> None:
    server, ask = serve(Reply(text="one"))
    server.push(Reply(text="two"), Fault(status=500))
    assert [type(i).__name__ for i in server.remaining] == ["Reply", "Reply", "Fault"]
    assert text_of("anthropic", ask("anthropic")) == "one"
    assert text_of("gemini", ask("gemini")) == "two"
    assert ask("openai_chat").status == 500
    assert server.remaining == []


def test_urls() -> None:
    server = ModelServer()
    with pytest.raises(RuntimeError):
        _ = server.url
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.base_url("openai_chat") == server.url + "/v1"
        assert server.base_url("openai_responses") == server.url + "/v1"
        assert server.base_url("anthropic") == server.url + "/v1"
        assert server.base_url("gemini") == server.url + "/v1beta"
        with pytest.raises(ValueError, match="unknown provider"):
            server.base_url("cohere")
    with pytest.raises(RuntimeError, match="closed"):
        server.start()


def test_close_is_prompt_with_a_hanging_stream_and_idempotent() -> None:
    server = ModelServer([Reply(text="never", hang=30)]).start()
    errors: list[BaseException] = []
    got_headers = threading.Event()

    def reader() -> None:
        try:
            with (
                httpx.Client(timeout=10, verify=False) as c,
                c.stream(
                    "POST",
                    server.base_url("anthropic") + "/messages",
                    json={
                        "model": "m",
                        "max_tokens": 5,
                        "stream": True,
                        "messages": [{"role": "user", "content": "x"}],
                    },
                ) as r,
            ):
                got_headers.set()
                for _ in r.iter_lines():
                    pass
        except httpx.HTTPError as exc:
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    assert got_headers.wait(5)
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 1.5
    thread.join(5)
    assert not thread.is_alive()
    assert errors  # the stream was cut, not completed
    server.close()  # again: a no-op


def test_close_ends_idle_keep_alive_connections(client: httpx.Client) -> None:
    server = ModelServer([Reply(text="a")]).start()
    url = server.base_url("openai_chat") + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert client.post(url, json=body).status_code == 200  # the connection stays open
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 1.5


def test_delays(serve: Any) -> None:
    _, ask = serve(
        Reply(text="abc", chunk_size=1, first_delay=0.2, delay=0.05),
        Fault(status=500, first_delay=0.2),
    )
    started = time.monotonic()
    answer = ask("openai_chat", stream=True)
    assert time.monotonic() - started >= 0.2 + 0.05 * (len(answer.events) - 1) - 0.01
    started = time.monotonic()
    assert ask("openai_chat").status == 500
    assert time.monotonic() - started >= 0.19


async def test_async_client_sees_events_as_they_are_written(serve: Any, sse: Any) -> None:
    server, _ = serve(Reply(text="abcd", chunk_size=1, delay=0.15))
    arrivals: list[float] = []
    lines: list[str] = []
    async with httpx.AsyncClient(timeout=5, verify=False) as c:
        started = time.monotonic()
        body = {
            "model": "m",
            "max_tokens": 5,
            "stream": True,
            "messages": [{"role": "user", "content": "x"}],
        }
        async with c.stream("POST", server.base_url("anthropic") + "/messages", json=body) as r:
            async for line in r.aiter_lines():
                lines.append(line)
                if line.startswith("data:"):
                    arrivals.append(time.monotonic() - started)
    events = sse(iter(lines))
    assert events[-1][0] == "message_stop"
    assert arrivals[0] < 0.1  # the first event did not wait for the rest
    assert arrivals[-1] >= 0.15 * (len(arrivals) - 1) - 0.02


def test_client_that_leaves_mid_stream_does_no_harm(serve: Any, client: httpx.Client) -> None:
    server, ask = serve(Reply(text="x" * 200, chunk_size=1, delay=0.01), Reply(text="Done."))
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
    with client.stream(
        "POST", server.base_url("openai_chat") + "/chat/completions", json=body
    ) as r:
        for _ in zip(range(3), r.iter_lines(), strict=False):
            pass
    # (leaving the block closes the response, and with it the connection)
    time.sleep(0.2)
    assert text_of("openai_chat", ask("openai_chat")) == "Done."
    assert server.problems == []


def test_concurrent_requests_each_take_one_item(serve: Any) -> None:
    server, _ = serve(*[Reply(text=str(n), delay=0.01, chunk_size=1) for n in range(8)])
    results: list[str] = []
    lock = threading.Lock()

    def one() -> None:
        with httpx.Client(timeout=5, verify=False) as c:
            r = c.post(
                server.base_url("openai_chat") + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            )
            with lock:
                results.append(r.json()["choices"][0]["message"]["content"])

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results, key=int) == [str(n) for n in range(8)]
    assert server.remaining == [] and len(server.requests) == 8


def test_ids_repeat_with_the_seed() -> None:
    def first_id(seed: int) -> str:
        with ModelServer([Reply(tool_calls=[ToolUse("ls")])], seed=seed) as server:
            r = httpx.post(
                server.base_url("openai_chat") + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
                timeout=5,
            )
            return r.json()["choices"][0]["message"]["tool_calls"][0]["id"]

    assert first_id(1) == first_id(1) != first_id(2)
