"""What handrail knows about providers and models without asking the network.

Presets map a short provider name to a wire format, a base URL and the variable that usually
holds the key. The model table gives context windows and prices (USD per million tokens, read
from the providers' price pages in 2026); a model that is not listed has no known price (cost
budgets then cannot be enforced, and the loop says so) and a conservative window. Both can be
overridden per client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["PRESETS", "ModelInfo", "Preset", "Prices", "model_info"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A provider name users type: which wire format, where, and which key."""

    provider: str
    """The wire format (`handrail.providers.PROVIDERS`)."""
    base_url: str
    key_env: str | None
    """The variable the key usually lives in; None for local servers that need none."""


PRESETS: dict[str, Preset] = {
    "openai": Preset(
        provider="openai_responses", base_url="https://api.openai.com/v1", key_env="OPENAI_API_KEY"
    ),
    "openai_responses": Preset(
        provider="openai_responses", base_url="https://api.openai.com/v1", key_env="OPENAI_API_KEY"
    ),
    "openai_chat": Preset(
        provider="openai_chat", base_url="https://api.openai.com/v1", key_env="OPENAI_API_KEY"
    ),
    "anthropic": Preset(
        provider="anthropic", base_url="https://api.anthropic.com/v1", key_env="ANTHROPIC_API_KEY"
    ),
    "gemini": Preset(
        provider="gemini",
        base_url="https://generativelanguage.googleapis.com/v1beta",
        key_env="GEMINI_API_KEY",
    ),
    "google": Preset(
        provider="gemini",
        base_url="https://generativelanguage.googleapis.com/v1beta",
        key_env="GEMINI_API_KEY",
    ),
    "deepseek": Preset(
        provider="openai_chat", base_url="https://api.deepseek.com", key_env="DEEPSEEK_API_KEY"
    ),
    "openrouter": Preset(
        provider="openai_chat",
        base_url="https://openrouter.ai/api/v1",
        key_env="OPENROUTER_API_KEY",
    ),
    "groq": Preset(
        provider="openai_chat", base_url="https://api.groq.com/openai/v1", key_env="GROQ_API_KEY"
    ),
    "mistral": Preset(
        provider="openai_chat", base_url="https://api.mistral.ai/v1", key_env="MISTRAL_API_KEY"
    ),
    "xai": Preset(provider="openai_chat", base_url="https://api.x.ai/v1", key_env="XAI_API_KEY"),
    "ollama": Preset(provider="openai_chat", base_url="http://127.0.0.1:11434/v1", key_env=None),
    "vllm": Preset(provider="openai_chat", base_url="http://127.0.0.1:8000/v1", key_env=None),
    "llamacpp": Preset(provider="openai_chat", base_url="http://127.0.0.1:8080/v1", key_env=None),
    "lmstudio": Preset(provider="openai_chat", base_url="http://127.0.0.1:1234/v1", key_env=None),
}
"""Provider names accepted in `PROVIDER:MODEL`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int) -> float:
        """The cost of a request (cached input billed at the cached price)."""
        fresh = max(0, input_tokens - cached_tokens)
        return (
            fresh * self.input + cached_tokens * self.cached_input + output_tokens * self.output
        ) / 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """A model's context window and, when known, its prices."""

    context_window: int
    prices: Prices | None = None


# Longest prefix wins, and only up to a version or date suffix (`claude-sonnet-4-5-20250929`,
# `gpt-4o-2024-08-06`): `gpt-5-pro` is not `gpt-5` (it costs ten times more), so a name the
# table does not list has no price. Names are matched without a `models/` or `vendor/` prefix,
# case-insensitively.
_MODELS: dict[str, ModelInfo] = {
    "gpt-5": ModelInfo(
        context_window=400_000, prices=Prices(input=1.25, output=10.0, cached_input=0.125)
    ),
    "gpt-5-mini": ModelInfo(
        context_window=400_000, prices=Prices(input=0.25, output=2.0, cached_input=0.025)
    ),
    "gpt-5-nano": ModelInfo(
        context_window=400_000, prices=Prices(input=0.05, output=0.4, cached_input=0.005)
    ),
    "gpt-4.1": ModelInfo(
        context_window=1_047_576, prices=Prices(input=2.0, output=8.0, cached_input=0.5)
    ),
    "gpt-4.1-mini": ModelInfo(
        context_window=1_047_576, prices=Prices(input=0.4, output=1.6, cached_input=0.1)
    ),
    "gpt-4.1-nano": ModelInfo(
        context_window=1_047_576, prices=Prices(input=0.1, output=0.4, cached_input=0.025)
    ),
    "gpt-4o": ModelInfo(
        context_window=128_000, prices=Prices(input=2.5, output=10.0, cached_input=1.25)
    ),
    "gpt-4o-mini": ModelInfo(
        context_window=128_000, prices=Prices(input=0.15, output=0.6, cached_input=0.075)
    ),
    "o3": ModelInfo(context_window=200_000, prices=Prices(input=2.0, output=8.0, cached_input=0.5)),
    "o3-pro": ModelInfo(
        context_window=200_000, prices=Prices(input=20.0, output=80.0, cached_input=20.0)
    ),
    "gpt-5-pro": ModelInfo(
        context_window=400_000, prices=Prices(input=15.0, output=120.0, cached_input=15.0)
    ),
    "o4-mini": ModelInfo(
        context_window=200_000, prices=Prices(input=1.1, output=4.4, cached_input=0.275)
    ),
    "claude-opus-4": ModelInfo(
        context_window=200_000, prices=Prices(input=15.0, output=75.0, cached_input=1.5)
    ),
    "claude-opus-4-5": ModelInfo(
        context_window=200_000, prices=Prices(input=5.0, output=25.0, cached_input=0.5)
    ),
    "claude-sonnet-4": ModelInfo(
        context_window=200_000, prices=Prices(input=3.0, output=15.0, cached_input=0.3)
    ),
    "claude-haiku-4": ModelInfo(
        context_window=200_000, prices=Prices(input=1.0, output=5.0, cached_input=0.1)
    ),
    "claude-3-5-haiku": ModelInfo(
        context_window=200_000, prices=Prices(input=0.8, output=4.0, cached_input=0.08)
    ),
    "gemini-2.5-pro": ModelInfo(
        context_window=1_048_576, prices=Prices(input=1.25, output=10.0, cached_input=0.31)
    ),
    "gemini-2.5-flash": ModelInfo(
        context_window=1_048_576, prices=Prices(input=0.3, output=2.5, cached_input=0.075)
    ),
    "gemini-2.5-flash-lite": ModelInfo(
        context_window=1_048_576, prices=Prices(input=0.1, output=0.4, cached_input=0.025)
    ),
    "deepseek-chat": ModelInfo(
        context_window=128_000, prices=Prices(input=0.28, output=0.42, cached_input=0.028)
    ),
    "deepseek-reasoner": ModelInfo(
        context_window=128_000, prices=Prices(input=0.28, output=0.42, cached_input=0.028)
    ),
}

_VERSION_SUFFIX = re.compile(r"^(-\d[\w.-]*|-latest|@[\w.-]+)$")
"""What may follow a listed name: a version or date (`-5-20250929`, `-2024-08-06`), `-latest`."""

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model the table does not know (most current models have more)."""


def model_info(model: str) -> ModelInfo:
    """The table's entry for `model` (longest matching prefix), or an unpriced default."""
    name = model.lower().removeprefix("models/")
    name = name.rsplit("/", 1)[-1]  # openrouter-style `vendor/model`
    best = ""
    for prefix in _MODELS:
        rest = name[len(prefix) :]
        if (
            name.startswith(prefix)
            and (not rest or _VERSION_SUFFIX.match(rest))
            and len(prefix) > len(best)
        ):
            best = prefix
    return _MODELS[best] if best else ModelInfo(context_window=DEFAULT_CONTEXT_WINDOW)
