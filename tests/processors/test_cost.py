"""CostProcessor: spans priced from the shipped table, cached input, unpriced spans."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from llm_observe.pipeline import Processor, ProcessorChain
from llm_observe.pricing import PriceTable, load_price_table
from llm_observe.processors.cost import CostProcessor
from llm_observe.span import LlmSpan

LOGGER = "llm_observe.processors.cost"


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return load_price_table()


def span(**fields: Any) -> LlmSpan:
    """A span as the REST door builds it from a client's JSON record."""
    return LlmSpan.from_dict({"service_name": "checkout", **fields})


def test_is_a_non_blocking_processor(table: PriceTable) -> None:
    proc = CostProcessor(table)
    assert isinstance(proc, Processor)
    assert (proc.name, proc.blocking) == ("cost", False)


def test_prices_known_models_with_their_price_version(table: PriceTable) -> None:
    batch = [
        span(model="gpt-4o", provider="openai", prompt_tokens=1000, completion_tokens=500),
        span(model="claude-3-5-sonnet-20241022", provider="anthropic", prompt_tokens=1200,
             completion_tokens=300),
        span(model="gemini-1.5-pro-002", provider="gcp.gemini", prompt_tokens=8000,
             completion_tokens=1000),
    ]
    CostProcessor(table).process(batch)
    assert [s.cost_usd_micro for s in batch] == [
        7_500,    # 1000 x $2.50 + 500 x $10 (per 1M) = 7,500 micro-USD = $0.0075
        8_100,    # 1200 x $3 + 300 x $15
        15_000,   # 8000 x $1.25 + 1000 x $5
    ]
    assert [s.price_version for s in batch] == [
        "litellm-1.109.1", "anthropic-2025-11", "google-2024-10"]


def test_openai_style_cached_prompt_is_billed_at_cache_price(table: PriceTable) -> None:
    # OpenAI: usage.prompt_tokens=2006 includes prompt_tokens_details.cached_tokens=1920.
    s = span(model="gpt-4o-2024-08-06", provider="openai", prompt_tokens=2006,
             completion_tokens=300, cache_read_tokens=1920)
    CostProcessor(table).process([s])
    assert s.cost_usd_micro == 5_615  # 86 x $2.50 + 1920 x $1.25 + 300 x $10; not 8,015


def test_anthropic_style_cache_write_then_read(table: PriceTable) -> None:
    # Anthropic reports input_tokens=100 beside cache_creation_input_tokens=2000
    # (first call) or cache_read_input_tokens=2000 (second); the mapping sums them.
    write = span(model="claude-sonnet-4-5-20250929", provider="anthropic", prompt_tokens=2100,
                 completion_tokens=500, cache_write_tokens=2000)
    read = span(model="claude-sonnet-4-5-20250929", provider="anthropic", prompt_tokens=2100,
                completion_tokens=500, cache_read_tokens=2000)
    CostProcessor(table).process([write, read])
    assert write.cost_usd_micro == 15_300  # 100 x $3 + 2000 x $3.75 + 500 x $15
    assert read.cost_usd_micro == 8_400    # 100 x $3 + 2000 x $0.30 + 500 x $15


def test_model_without_cache_prices_bills_cached_tokens_at_input_price(
        table: PriceTable) -> None:
    s = span(model="gpt-4", provider="openai", prompt_tokens=1000, cache_read_tokens=400)
    CostProcessor(table).process([s])
    assert s.cost_usd_micro == 30_000  # all 1000 prompt tokens at $30


def test_unpriced_model_is_null_not_zero_and_logged_once(
        table: PriceTable, caplog: pytest.LogCaptureFixture) -> None:
    proc = CostProcessor(table)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for _ in range(3):
        batch = [span(model="acme-llm-7b", provider="acme", prompt_tokens=10,
                      completion_tokens=5),
                 span(model="gpt-4o-mini", provider="openai", prompt_tokens=1000)]
        proc.process(batch)
        assert batch[0].cost_usd_micro is None
        assert batch[0].price_version is None
        assert batch[1].cost_usd_micro == 150
    proc.process([span(model="acme-llm-70b", provider="acme", prompt_tokens=1)])
    warnings = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 2
    assert "'acme-llm-7b'" in warnings[0] and "'acme'" in warnings[0]
    assert "'acme-llm-70b'" in warnings[1]


def test_priced_model_with_no_tokens_costs_zero(table: PriceTable) -> None:
    s = span(model="gpt-4o", provider="openai")
    CostProcessor(table).process([s])
    assert s.cost_usd_micro == 0
    assert s.price_version == "litellm-1.109.1"


def test_error_spans_still_cost_their_tokens(table: PriceTable) -> None:
    s = span(model="gpt-4o-mini", provider="openai", status="error", prompt_tokens=2000,
             completion_tokens=0)
    CostProcessor(table).process([s])
    assert s.cost_usd_micro == 300


def test_actual_model_from_the_response_is_preferred(table: PriceTable) -> None:
    # "gpt-4o" once pointed at the 2024-05-13 snapshot, billed at $5/$15.
    pinned = span(model="gpt-4o", provider="openai", actual_model="gpt-4o-2024-05-13",
                  prompt_tokens=1000, completion_tokens=1000)
    unknown = span(model="gpt-4o", provider="openai", actual_model="gpt-4o-custom-router",
                   prompt_tokens=1000, completion_tokens=1000)
    CostProcessor(table).process([pinned, unknown])
    assert pinned.cost_usd_micro == 20_000    # 1000 x $5 + 1000 x $15
    assert unknown.cost_usd_micro == 12_500   # falls back to gpt-4o: $2.50 + $10


def test_runs_in_the_processor_chain(table: PriceTable) -> None:
    chain = ProcessorChain([CostProcessor(table)])
    batch = [span(model="deepseek-chat", provider="deepseek", prompt_tokens=10_000,
                  completion_tokens=2000, cache_read_tokens=8000)]
    chain.run(batch)
    assert batch[0].cost_usd_micro == 1_624  # 2000 x $0.28 + 8000 x $0.028 + 2000 x $0.42
    assert chain.stats["cost"].spans == 1 and chain.stats["cost"].errors == 0


def test_unpriced_spans_are_counted_per_model_for_the_pricing_endpoint(
        table: PriceTable) -> None:
    proc = CostProcessor(table)
    proc.process([span(model="acme-llm-7b", provider="acme"),
                  span(model="acme-llm-7b", provider="acme"),
                  span(model="gpt-4o", provider="openai")])
    assert proc.unpriced.snapshot()["models"] == [
        {"model": "acme-llm-7b", "provider": "acme", "count": 2}]


def test_long_prompt_through_the_chain_is_billed_at_the_context_tier(
        table: PriceTable) -> None:
    # Gemini 2.5 Pro: prompts > 200k tokens at $2.50 / $15 (ai.google.dev pricing).
    s = span(model="gemini-2.5-pro", provider="gcp.gemini", prompt_tokens=250_000,
             completion_tokens=10_000)
    CostProcessor(table).process([s])
    assert s.cost_usd_micro == 775_000  # the old table said 412,500: half the input price


def test_span_detail_fields_are_usage_fields() -> None:
    # The span fields the cost step reads for the detailed Usage must keep Usage's names.
    from dataclasses import fields

    from llm_observe.pricing import Usage
    from llm_observe.processors.span_usage import DETAIL_FIELDS, span_usage

    assert set(DETAIL_FIELDS) <= {f.name for f in fields(Usage)}
    # A span with only the four counts takes the four-count path.
    assert span_usage(span(model="gpt-4o", provider="openai", prompt_tokens=10)) is None
