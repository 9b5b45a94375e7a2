"""Local token counting (spec 4.5): exact for OpenAI models via tiktoken, offline.

Public API: :func:`count_tokens`, :func:`count_text_tokens`, :class:`TokenCount`,
and :class:`TokenCounter` for callers that want their own encoding store.
See docs/token-counting.md.
"""

from __future__ import annotations

from llm_observe.tokens.counter import (
    TokenCount,
    TokenCounter,
    count_text_tokens,
    count_tokens,
    default_counter,
)

__all__ = ["TokenCount", "TokenCounter", "count_text_tokens", "count_tokens", "default_counter"]
