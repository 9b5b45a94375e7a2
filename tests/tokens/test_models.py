from __future__ import annotations

import pytest

from llm_observe.tokens.models import encoding_name_for_model, normalize_model


@pytest.mark.parametrize(("model", "encoding"), [
    # o200k_base: gpt-4o / gpt-4.1 / gpt-4.5 / o-series / gpt-5 families
    ("gpt-4o", "o200k_base"),
    ("gpt-4o-mini", "o200k_base"),
    ("gpt-4o-2024-08-06", "o200k_base"),
    ("chatgpt-4o-latest", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.1-nano-2025-04-14", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-4.5-preview-2025-02-27", "o200k_base"),
    ("o1", "o200k_base"),
    ("o1-2024-12-17", "o200k_base"),
    ("o3-mini", "o200k_base"),
    ("o4-mini-2025-04-16", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-5-mini-2025-08-07", "o200k_base"),
    ("gpt-oss-120b", "o200k_base"),
    ("ft:gpt-4o-mini-2024-07-18:acme::abc123", "o200k_base"),
    # cl100k_base: gpt-4 / gpt-4-turbo / gpt-3.5-turbo / embeddings
    ("gpt-4", "cl100k_base"),
    ("gpt-4-0613", "cl100k_base"),
    ("gpt-4-turbo-2024-04-09", "cl100k_base"),
    ("gpt-3.5-turbo-0125", "cl100k_base"),
    ("gpt-35-turbo", "cl100k_base"),
    ("text-embedding-3-small", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    # provider prefixes and odd spelling
    ("openai/gpt-4o", "o200k_base"),
    ("azure/gpt-4-0613", "cl100k_base"),
    ("openrouter/openai/gpt-4o-mini", "o200k_base"),
    ("openai:gpt-4.1", "o200k_base"),
    ("  GPT-4o  ", "o200k_base"),
])
def test_known_models_resolve(model: str, encoding: str) -> None:
    assert encoding_name_for_model(model) == encoding


@pytest.mark.parametrize("model", [
    "claude-3-5-sonnet-20241022", "anthropic/claude-sonnet-4", "gemini-2.0-flash",
    "meta-llama/Llama-3.1-8B-Instruct", "mistral-large-latest", "", "   ", "/",
])
def test_unknown_models_resolve_to_none(model: str) -> None:
    assert encoding_name_for_model(model) is None


def test_normalize_strips_provider_prefixes_only() -> None:
    assert normalize_model("OpenRouter/OpenAI/GPT-4o") == "gpt-4o"
    assert normalize_model("azure:gpt-4o") == "gpt-4o"
    assert normalize_model("ft:gpt-4o:acme::x1") == "ft:gpt-4o:acme::x1"
