"""What one call used, as the price engine reads it: :class:`Usage`.

Every count but ``prompt_tokens`` and ``completion_tokens`` is a *subset* of one of them,
because that is how providers report usage (OpenAI ``prompt_tokens_details`` /
``completion_tokens_details``, Anthropic ``cache_creation.ephemeral_1h_input_tokens``
inside ``cache_creation_input_tokens``, Gemini ``thoughtsTokenCount``). The engine clamps
inconsistent counts instead of adding them on top, so no token is billed twice.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one call and the service tier that served it.

    - ``prompt_tokens``: every input token, cached or not (the size a context tier is
      chosen by).
    - ``cache_read_tokens`` ⊆ prompt: read from the provider's prompt cache.
    - ``cache_write_tokens`` ⊆ prompt: written to the cache, any TTL (Anthropic
      ``cache_creation_input_tokens``); ``cache_write_1h_tokens`` ⊆ ``cache_write_tokens``
      are the ones written with the 1-hour TTL, the rest are 5-minute writes.
    - ``audio_input_tokens`` / ``image_input_tokens`` ⊆ the *uncached* prompt: a cached
      token of any modality is billed at the cache-read price.
    - ``reasoning_tokens``, ``audio_output_tokens``, ``image_output_tokens`` ⊆ completion.
    - ``service_tier``: as the response reports it (OpenAI ``service_tier``: ``flex``,
      ``priority``, ``scale``, ``default``; Anthropic ``usage.service_tier``: ``standard``,
      ``priority``, ``batch``); None, ``default``, ``standard``, ``auto`` or a tier the
      entry does not price mean the entry's own (standard) prices.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int = 0
    audio_input_tokens: int = 0
    audio_output_tokens: int = 0
    image_input_tokens: int = 0
    image_output_tokens: int = 0
    service_tier: str | None = None
