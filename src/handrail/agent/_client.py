"""The model client: one HTTP request per turn, streamed, retried when retrying can help.

Plain httpx and the small SSE reader; no vendor SDK (each costs hundreds of milliseconds to
import and brings a second HTTP stack). Retries: 408, 409, 429, 5xx, a refused or dropped
connection, a hung server (read timeout) and an error the server reports inside the stream are
retried with exponential backoff and jitter, honouring `Retry-After` / `retry-after-ms`, a
bounded number of times; 400, 401, 403, 404 and the rest are not, and end with a `ModelError`
whose message says what to fix. A stream that ends without its final marker is returned as a
message with `stop="cut"`: whether it can be retried is the loop's call (it can, unless a call
of that response already went to the runtime).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import replace
from typing import Any, cast

import httpx

from ..errors import ConfigurationError, ModelError
from ._catalog import PRESETS, ModelInfo, Prices, model_info
from ._codecs import (
    CallReady,
    Codec,
    Decoder,
    ModelRequest,
    StreamItem,
    codec_for,
    error_text,
)
from ._conversation import AssistantMessage
from ._events import ModelRetry, ReasoningDelta, TextDelta
from ._sse import read_sse

__all__ = ["ModelClient"]

_RETRY_STATUS = frozenset({408, 409, 429})
_ERROR_BODY_LIMIT = 64 * 1024


class ModelClient:
    """Talks to one model over one wire format.

    ```python
    client = ModelClient.from_spec("anthropic:claude-sonnet-4-5")
    client = ModelClient.from_spec("openai_chat:qwen3", base_url="http://127.0.0.1:8000/v1")
    ```

    Args:
        provider: The wire format: `openai_chat`, `openai_responses`, `anthropic` or `gemini`.
        model: The model name the server knows.
        base_url: The API root (default: the provider's public API).
        api_key: The key itself; default: read from `api_key_env`.
        api_key_env: The variable holding the key (default: the provider's usual one).
        headers: Extra headers sent with every request.
        timeout: Seconds a request may go without receiving anything (connecting excluded).
        max_retries: Retries after the first attempt, for failures worth retrying.
        stream: Stream responses (tools start while the model writes); False asks for whole ones.
        max_output_tokens: Cap on each response's length (Anthropic needs one: 16,000 default).
        extra_body: Merged into every request body (e.g. `{"temperature": 0}`).
        context_window: Overrides the model table's window (tokens).
        prices: Overrides the model table's prices (for cost and cost budgets).
        retry_delay: Base of the exponential backoff, in seconds.
        max_retry_wait: Longest `Retry-After` honoured; a longer one ends the request now.
        key_required: Refuse to send a request without a key (default: only when talking to
            the provider's public API).
    """

    def __init__(
        self,
        provider: str,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 300.0,
        max_retries: int = 4,
        stream: bool = True,
        max_output_tokens: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
        context_window: int | None = None,
        prices: Prices | None = None,
        retry_delay: float = 0.5,
        max_retry_wait: float = 60.0,
        key_required: bool | None = None,
    ) -> None:
        if provider not in ("openai_chat", "openai_responses", "anthropic", "gemini"):
            raise ConfigurationError(
                f"unknown wire format {provider!r}: use openai_chat, openai_responses, "
                "anthropic or gemini"
            )
        if not model:
            raise ConfigurationError("a model name is required")
        if max_retries < 0 or timeout <= 0:
            raise ConfigurationError("max_retries must be >= 0 and timeout positive")
        self.provider = provider
        self.model = model
        self.codec: Codec = codec_for(provider, base_url or "")
        self.base_url = (base_url or self.codec.default_base_url).rstrip("/")
        self.codec = codec_for(provider, self.base_url)
        """How requests and responses look on the wire (URL, headers, body, decoding)."""
        official = self.base_url == self.codec.default_base_url.rstrip("/")
        if api_key_env is None:
            # A provider's key goes only to that provider: another base URL (a local server, a
            # gateway) gets a key only from a variable named for it.
            api_key_env = self.codec.key_env if official else ""
        self.api_key_env = api_key_env
        """The variable the key is read from (`""`: none is sent)."""
        self.preset = provider
        """The provider name users typed (`deepseek`, or the wire format itself)."""
        self._api_key = api_key
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self.stream = stream
        self.max_output_tokens = max_output_tokens
        self.extra_body = dict(extra_body or {})
        info = model_info(model)
        self.info = ModelInfo(
            context_window=context_window or info.context_window,
            prices=prices if prices is not None else info.prices,
        )
        self.retry_delay = retry_delay
        self.max_retry_wait = max_retry_wait
        self.key_required = key_required if key_required is not None else official
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> ModelClient:
        """A client from `PROVIDER:MODEL`, e.g. `deepseek:deepseek-chat`, `ollama:qwen3`.

        PROVIDER is a wire format (`openai_chat`, `openai_responses`, `anthropic`, `gemini`)
        or a preset (`openai`, `deepseek`, `openrouter`, `groq`, `mistral`, `xai`, `ollama`,
        `vllm`, `llamacpp`, `lmstudio`, `google`), which also picks the base URL and the key's
        variable. `options` go to the constructor and win over the preset.
        """
        provider, sep, model = spec.partition(":")
        if not sep or not model or provider not in PRESETS:
            names = ", ".join(sorted(PRESETS))
            raise ConfigurationError(
                f"--model must be PROVIDER:MODEL (e.g. anthropic:claude-sonnet-4-5), with "
                f"PROVIDER one of {names}; got {spec!r}"
            )
        preset = PRESETS[provider]
        elsewhere = options.get("base_url") not in (None, preset.base_url)
        options.setdefault("base_url", preset.base_url)
        if preset.key_env is not None and not elsewhere:
            options.setdefault("api_key_env", preset.key_env)
            options.setdefault("key_required", True)
        else:
            # A local server needs no key, and another base URL (a gateway, a proxy) gets one
            # only from a variable named for it: the provider's own key never goes elsewhere.
            options.setdefault("api_key_env", "")
            options.setdefault("key_required", False)
        client = cls(preset.provider, model, **options)
        client.preset = provider
        return client

    def with_model(self, model: str) -> ModelClient:
        """The same endpoint, key and options, another model name."""
        client = ModelClient(
            self.provider,
            model,
            base_url=self.base_url,
            api_key=self._api_key,
            api_key_env=self.api_key_env,
            headers=self.headers,
            timeout=self.timeout,
            max_retries=self.max_retries,
            stream=self.stream,
            max_output_tokens=self.max_output_tokens,
            extra_body=self.extra_body,
            retry_delay=self.retry_delay,
            max_retry_wait=self.max_retry_wait,
            key_required=self.key_required,
        )
        client.preset = self.preset
        return client

    @property
    def spec(self) -> str:
        """`provider:model` as the user named it (`deepseek:deepseek-chat`)."""
        return f"{self.preset}:{self.model}"

    @property
    def api_key(self) -> str | None:
        """The key in use (never logged or written to a transcript)."""
        if self._api_key:
            return self._api_key
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

    def set_api_key(self, key: str) -> None:
        """Use this key from now on (instead of reading the variable at each request)."""
        self._api_key = key

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            # A plain-http server (a local model) never needs certificates: loading the CA
            # bundle costs 30-90 ms at start-up for nothing. Redirects are not followed, so a
            # request cannot move to https behind our back.
            plain = self.base_url.startswith("http://")
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(10.0, self.timeout)),
                follow_redirects=False,
                verify=not plain,
            )
        return self._http

    # -- one response ------------------------------------------------------------------------

    async def respond(
        self, request: ModelRequest
    ) -> AsyncGenerator[StreamItem | ModelRetry | AssistantMessage, None]:
        """Send one request; yield deltas, ready calls and retry notices, then the message.

        The last item is always the `AssistantMessage` (its `stop` is `cut` when the stream
        ended early). Raises `ModelError` when the request fails for good.
        """
        key = self.api_key
        if key is None and self.key_required:
            raise ModelError(
                f"no API key for {self.base_url}: set {self.api_key_env} (or name another "
                "variable with --api-key-env)",
                kind="auth",
            )
        if self.max_output_tokens is not None and request.max_output_tokens is None:
            request = replace(request, max_output_tokens=self.max_output_tokens)
        if self.extra_body:
            request = replace(request, extra={**self.extra_body, **request.extra})
        url = self.codec.url(self.base_url, self.model, stream=self.stream)
        headers = {**self.codec.headers(key), **self.headers}
        body = self.codec.body(request, stream=self.stream)
        attempt = 0
        while True:
            attempt += 1
            try:
                async for item in self._attempt(url, headers, body, request):
                    yield item
                return
            except _Retry as retry:
                if attempt > self.max_retries:
                    raise retry.final(attempt) from None
                delay = retry.delay if retry.delay is not None else self._backoff(attempt)
                if retry.delay is not None and delay > self.max_retry_wait:
                    raise ModelError(
                        f"{retry.reason}; the server asks to wait {delay:.0f} s, longer than "
                        f"{self.max_retry_wait:.0f} s: try again later",
                        kind=retry.kind,
                        status=retry.status,
                        retryable=True,
                    ) from None
                yield ModelRetry(attempt=attempt, delay=delay, reason=retry.reason)
                await asyncio.sleep(delay)

    def _backoff(self, attempt: int) -> float:
        base = self.retry_delay * (2 ** (attempt - 1))
        return min(30.0, base) * random.uniform(0.75, 1.0)

    async def _attempt(
        self, url: str, headers: dict[str, str], body: dict[str, Any], request: ModelRequest
    ) -> AsyncIterator[StreamItem | AssistantMessage]:
        started = False
        try:
            async with self._client().stream("POST", url, json=body, headers=headers) as resp:
                if resp.status_code >= 400:
                    raise await self._http_error(resp)
                if not self.stream:
                    data = await resp.aread()
                    decoder = self.codec.parse(_json_body(data), request)
                    for text_item in _whole_items(decoder):
                        yield text_item
                    yield decoder.message()
                    return
                decoder = self.codec.decoder(request)
                try:
                    # Read to the end of the body, past the final marker: a response read
                    # whole hands its connection back to the pool for the next turn.
                    async for event in read_sse(resp.aiter_lines()):
                        for item in decoder.feed(event):
                            started = True
                            yield item
                except ModelError as exc:  # a bad event, or an error reported mid-stream
                    if not started:
                        raise _Retry(exc.message, kind=exc.kind) from None
                    decoder.complete = False
                except httpx.TransportError:  # dropped or hung mid-stream
                    if not started and not decoder.complete:
                        raise
                    # After the final marker the answer is whole, whatever happens to the rest.
                cut = not decoder.complete
                for ready in decoder.close(cut=cut):
                    yield ready
                yield decoder.message()
        except httpx.TimeoutException as exc:
            raise _Retry(
                f"the model server at {self.base_url} did not answer within {self.timeout:g} s "
                f"({type(exc).__name__})",
                kind="timeout",
            ) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise _Retry(
                f"cannot reach the model server at {self.base_url} ({_exc_text(exc)}); check "
                "--base-url and that the server is running",
                kind="connection",
            ) from None
        except httpx.HTTPError as exc:
            raise ModelError(
                f"the request to {url} failed: {_exc_text(exc)}", kind="connection"
            ) from None

    async def _http_error(self, resp: httpx.Response) -> Exception:
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= _ERROR_BODY_LIMIT:
                break
        raw = b"".join(chunks)[:_ERROR_BODY_LIMIT]
        detail = _detail(raw)
        key = self.api_key
        if key:  # a proxy may quote the key back; it must not reach a message or a transcript
            detail = detail.replace(key, "***")
        status = resp.status_code
        if status == 400 and "API_KEY_INVALID" in raw.decode("utf-8", "replace"):
            status = 401  # Gemini answers a wrong key with 400 INVALID_ARGUMENT
        said = f"HTTP {status}" + (f": {detail}" if detail else "")
        if status in _RETRY_STATUS or status >= 500:
            kind = "rate_limit" if status == 429 else "server"
            return _Retry(
                f"the model server answered {said}",
                kind=kind,
                status=status,
                delay=_retry_after(resp.headers),
            )
        if status == 401:  # also Gemini's 400 API_KEY_INVALID
            if self.api_key:
                where = f"${self.api_key_env}" if self.api_key_env else "the key given"
            elif self.api_key_env:
                where = f"no key was sent (${self.api_key_env} is not set)"
            else:
                where = "no key was sent (name the variable that holds it)"
            return ModelError(
                f"the model server refused the API key ({said}); check the key: {where}, or "
                "name another variable with --api-key-env",
                kind="auth",
                status=status,
            )
        if status == 403:
            return ModelError(
                f"the API key may not use this model or endpoint ({said}); check the key's "
                f"permissions and the model name {self.model!r}",
                kind="auth",
                status=status,
            )
        if status == 404:
            return ModelError(
                f"not found at {resp.request.url} ({said}); check the model name "
                f"{self.model!r} and the base URL {self.base_url!r}",
                kind="not_found",
                status=status,
            )
        return ModelError(
            f"the model server rejected the request ({said})", kind="bad_request", status=status
        )


class _Retry(Exception):
    """A failure worth retrying; `final` is the error when no retry is left."""

    def __init__(
        self, reason: str, *, kind: Any, status: int | None = None, delay: float | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind
        self.status = status
        self.delay = delay

    def final(self, attempts: int) -> ModelError:
        return ModelError(
            f"{self.reason} (gave up after {attempts} attempts; try again later)",
            kind=self.kind,
            status=self.status,
            retryable=True,
        )


def _retry_after(headers: httpx.Headers) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _detail(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    try:
        data: Any = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:300]
    if isinstance(data, list) and data:
        data = cast(list[Any], data)[0]  # Gemini sometimes wraps the error in a list
    if isinstance(data, Mapping):
        found = error_text(cast(Mapping[str, Any], data))
        if found:
            return " ".join(found.split())[:300]
    return " ".join(text.split())[:300]


def _json_body(raw: bytes) -> Mapping[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        raise ModelError(
            f"the model server's response is not JSON: {raw[:120]!r}", kind="protocol"
        ) from None
    if not isinstance(data, dict):
        raise ModelError("the model server's response is not a JSON object", kind="protocol")
    return data  # pyright: ignore[reportUnknownVariableType]


def _whole_items(decoder: Decoder) -> list[StreamItem]:
    items: list[StreamItem] = []
    reasoning = "".join(decoder.reasoning)
    if reasoning:
        items.append(ReasoningDelta(text=reasoning))
    text = "".join(decoder.text)
    if text:
        items.append(TextDelta(text=text))
    items.extend(CallReady(c) for c in decoder.calls)
    return items


def _exc_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
