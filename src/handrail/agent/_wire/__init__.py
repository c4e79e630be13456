"""The four wire formats a model client speaks, behind one interface (`Wire`).

Each renders a provider-neutral `ModelRequest` into its provider's URL, headers and body (tool
schemas and results through `handrail.providers`, so the loop and a hand-written loop send the
same bytes), and decodes the streamed or whole response into deltas, ready calls and one
`AssistantMessage`. No network here: the client does I/O.
"""

from __future__ import annotations

from ._anthropic import AnthropicWire as AnthropicWire
from ._base import CallReady as CallReady
from ._base import Decoder as Decoder
from ._base import ModelRequest as ModelRequest
from ._base import StreamItem as StreamItem
from ._base import Wire as Wire
from ._base import error_text as error_text
from ._gemini import GeminiWire as GeminiWire
from ._openai_chat import OpenAIChatWire as OpenAIChatWire
from ._openai_responses import OpenAIResponsesWire as OpenAIResponsesWire

__all__ = [
    "AnthropicWire",
    "CallReady",
    "Decoder",
    "GeminiWire",
    "ModelRequest",
    "OpenAIChatWire",
    "OpenAIResponsesWire",
    "StreamItem",
    "Wire",
    "error_text",
    "wire_for",
]


def wire_for(provider: str, base_url: str) -> Wire:
    """The wire format named `provider` (one of `handrail.providers.PROVIDERS`)."""
    if provider == "openai_chat":
        return OpenAIChatWire(base_url)
    if provider == "openai_responses":
        return OpenAIResponsesWire()
    if provider == "anthropic":
        return AnthropicWire()
    return GeminiWire()
