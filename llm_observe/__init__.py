"""llm-observe: observability for LLM calls.

The in-process public API lives here (spec 4.15); the collector process is
``llm-observe serve`` (see ``llm_observe.cli``).
"""

from __future__ import annotations

__version__ = "1.8.2"

from llm_observe.tokens import TokenCount, count_text_tokens, count_tokens

__all__ = ["TokenCount", "__version__", "count_text_tokens", "count_tokens"]
