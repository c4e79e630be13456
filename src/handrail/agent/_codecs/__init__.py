"""The four wire formats a model client speaks: a codec for each, behind one interface (`Codec`).

Each renders a provider-neutral `ModelRequest` into its provider's URL, headers and body (tool
schemas and results through `handrail.providers`, so the loop and a hand-written loop send the
same bytes), and decodes the streamed or whole response into deltas, ready calls and one
`AssistantMessage`. No network here: the client does I/O.
"""

from __future__ import annotations

from ._anthropic import AnthropicCodec as AnthropicCodec
from ._base import CallReady as CallReady
from ._base import Codec as Codec
from ._base import Decoder as Decoder
from ._base import ModelRequest as ModelRequest
from ._base import StreamItem as StreamItem
from ._base import error_text as error_text
from ._gemini import GeminiCodec as GeminiCodec
from ._openai_chat import OpenAIChatCodec as OpenAIChatCodec
from ._openai_responses import OpenAIResponsesCodec as OpenAIResponsesCodec

__all__ = [
    "AnthropicCodec",
    "CallReady",
    "Codec",
    "Decoder",
    "GeminiCodec",
    "ModelRequest",
    "OpenAIChatCodec",
    "OpenAIResponsesCodec",
    "StreamItem",
    "codec_for",
    "error_text",
]


def codec_for(provider: str, base_url: str) -> Codec:
    """The codec of the wire format named `provider` (one of `handrail.providers.PROVIDERS`)."""
    if provider == "openai_chat":
        return OpenAIChatCodec(base_url)
    if provider == "openai_responses":
        return OpenAIResponsesCodec()
    if provider == "anthropic":
        return AnthropicCodec()
    return GeminiCodec()
