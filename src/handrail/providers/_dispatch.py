"""One entry point per job, choosing the provider by name (for the CLI and generic loops)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import ConfigurationError, Tool, ToolCall, ToolResult
from ._anthropic import AnthropicStream, anthropic_results, anthropic_tools, parse_anthropic
from ._common import PROVIDERS, StreamParser
from ._gemini import GeminiStream, gemini_results, gemini_tools, parse_gemini
from ._openai_chat import (
    OpenAIChatStream,
    openai_chat_results,
    openai_chat_tools,
    parse_openai_chat,
)
from ._openai_responses import (
    OpenAIResponsesStream,
    openai_responses_results,
    openai_responses_tools,
    parse_openai_responses,
)

__all__ = ["parse_response", "result_messages", "stream_parser", "tools_payload"]


def _check(provider: str) -> str:
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}"
        )
    return provider


def tools_payload(provider: str, tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Exactly the value of the request's `tools` field for `provider`.

    Pass the tools to show, in order (`Runtime.tools(provider=...)`). For gemini this is
    `[{"functionDeclarations": [...]}]`. Raises `ConfigurationError` for an unknown provider,
    a tool name the provider refuses, or a schema it cannot take at all.
    """
    match _check(provider):
        case "openai_chat":
            return openai_chat_tools(tools)
        case "openai_responses":
            return openai_responses_tools(tools)
        case "anthropic":
            return anthropic_tools(tools)
        case _:
            return gemini_tools(tools)


def parse_response(
    provider: str, response: Mapping[str, Any], *, tools: Sequence[Tool] | None = None
) -> list[ToolCall]:
    """The tool calls of a whole (non-streamed) response, in request order.

    `tools` (the ones sent) matter for the OpenAI formats, where strict mode sends `null` for
    an optional argument; they turn it back into "not given".
    """
    match _check(provider):
        case "openai_chat":
            return parse_openai_chat(response, tools=tools)
        case "openai_responses":
            return parse_openai_responses(response, tools=tools)
        case "anthropic":
            return parse_anthropic(response)
        case _:
            return parse_gemini(response)


def stream_parser(provider: str, *, tools: Sequence[Tool] | None = None) -> StreamParser:
    """A fresh parser for one streamed response: `feed(event)` returns completed calls."""
    match _check(provider):
        case "openai_chat":
            return OpenAIChatStream(tools=tools)
        case "openai_responses":
            return OpenAIResponsesStream(tools=tools)
        case "anthropic":
            return AnthropicStream()
        case _:
            return GeminiStream()


def result_messages(
    provider: str,
    results: Sequence[ToolResult],
    *,
    calls: Sequence[ToolCall] | None = None,
    locale: str = "en",
) -> list[dict[str, Any]]:
    """What to append to the conversation after a turn's calls ran, as a list.

    OpenAI chat: one `role: tool` message per call; Responses: one `function_call_output`
    item per call; Anthropic: one user message; Gemini: one user content. Every call gets
    exactly one result, in request order. Nothing to answer gives `[]`.
    """
    _check(provider)
    if not results and not calls:
        return []
    match provider:
        case "openai_chat":
            return openai_chat_results(results, calls=calls, locale=locale)
        case "openai_responses":
            return openai_responses_results(results, calls=calls, locale=locale)
        case "anthropic":
            return [anthropic_results(results, calls=calls, locale=locale)]
        case _:
            return [gemini_results(results, calls=calls, locale=locale)]
