"""Providers: the one registry of names and aliases, and request detection by URL.

Every alias (GenAI semconv values, LiteLLM and LangChain ids, OpenLLMetry's spellings,
the price table's names) maps to one canonical name, used by metric labels and by price
lookup alike (:func:`canonical_provider`).
"""

from __future__ import annotations

from llm_observe.providers.detect import (
    detect,
    detect_parts,
    detect_request,
    parse_body,
    provider_for_url,
    register_base_url,
    unregister_base_url,
)
from llm_observe.providers.registry import (
    CHAT,
    EMBEDDINGS,
    GENERATE_CONTENT,
    LLM_OPERATIONS,
    OTHER,
    SEMCONV_NAMES,
    TEXT_COMPLETION,
    Detection,
    canonical_provider,
    semconv_provider,
    wire_of,
)

__all__ = [
    "CHAT", "EMBEDDINGS", "GENERATE_CONTENT", "LLM_OPERATIONS", "OTHER", "SEMCONV_NAMES",
    "TEXT_COMPLETION", "Detection", "canonical_provider", "detect", "detect_parts",
    "detect_request", "parse_body", "provider_for_url", "register_base_url", "semconv_provider",
    "unregister_base_url", "wire_of",
]
