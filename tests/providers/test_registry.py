"""One provider registry: every alias has one canonical name, and metric labels and price
lookup agree on it whichever door a span came in by."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from llm_observe.otlp.walk import decode_request, walk
from llm_observe.pricing import load_price_table
from llm_observe.providers.registry import (
    ALIASES,
    PROVIDERS,
    canonical,
    canonical_provider,
    provider_of_model,
)
from llm_observe.span import LlmSpan
from tests.receiver.conftest import llm_span, record_spans

TABLE = load_price_table()
SPELLINGS = sorted({*ALIASES, *(a.upper() for a in ALIASES), *(p.name for p in PROVIDERS),
                    *(e.provider for e in TABLE.entries)})


def otlp_label(provider: str) -> str:
    spans = record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.provider.name": provider}))
    [span] = walk(decode_request(encode_spans(spans).SerializeToString())).llm
    return span.provider


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_rest_and_otlp_label_an_alias_with_its_canonical_name(spelling: str) -> None:
    label = LlmSpan.from_dict({"model": "m", "provider": spelling}).provider
    assert label == canonical(spelling) == otlp_label(spelling)
    assert canonical(label) == label  # canonical names are fixed points


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_price_lookup_by_an_alias_is_the_lookup_by_its_label(spelling: str) -> None:
    label = canonical(spelling)
    for entry in TABLE.entries:
        assert TABLE.lookup(entry.model, spelling) is TABLE.lookup(entry.model, label), \
            (entry.model, spelling)


def test_the_price_tables_gemini_entries_answer_for_every_gemini_spelling() -> None:
    assert "gemini" in TABLE.providers and "google" not in TABLE.providers
    for spelling in ("google", "gemini", "gcp.gemini", "google_genai", "GOOGLE"):
        entry = TABLE.lookup("gemini-2.5-pro", spelling)
        assert entry is not None and entry.model == "gemini-2.5-pro"


def test_no_alias_chains_and_no_alias_shadows_a_provider() -> None:
    names = {p.name for p in PROVIDERS}
    assert all(target in names for target in ALIASES.values())
    assert not names & set(ALIASES)
    assert canonical_provider(None) is None and canonical_provider("") is None


@pytest.mark.parametrize(("model", "provider"), [
    ("gpt-4o", "openai"), ("o1", "openai"), ("o3-mini", "openai"), ("o4-mini-2025-04-16", "openai"),
    ("claude-sonnet-4-5", "anthropic"), ("gemini-2.5-pro", "gemini"), ("grok-4", "xai"),
    ("mistral-large-latest", "mistral"), ("command-r-plus", "cohere"),
    ("deepseek-chat", "deepseek"), ("openai/gpt-4o", "openai"), ("ANTHROPIC/claude-x", "anthropic"),
    # open-weights families are served by many hosts; unknown names stay unknown
    ("llama-3.1-70b", None), ("meta-llama/Llama-3.3-70B", None), ("qwen2.5-72b", None),
    ("omni-model", None), ("o10", None), ("", None), (None, None),
])
def test_a_span_without_provider_gets_its_model_family_vendor(model: str | None,
                                                              provider: str | None) -> None:
    assert provider_of_model(model) == provider
