"""GET /v1/pricing/models, and the known answers the REST record body can carry."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import MakeClient


async def record(api: Any, **span: Any) -> dict[str, Any]:
    resp = await api.post("/v1/metrics/record", json=span)
    assert resp.status == 200, await resp.text()
    body: dict[str, Any] = await resp.json()
    return body


async def test_lists_the_table_as_loaded_with_its_structures(api: Any) -> None:
    resp = await api.get("/v1/pricing/models")
    assert resp.status == 200
    body = await resp.json()
    assert body["source"].endswith("model_prices.yaml") and body["origin"] == "default"
    assert body["entries_count"] == len(body["entries"]) >= 140
    assert body["versions"] == sorted({e["version"] for e in body["entries"]})
    by_name = {(e["model"], e["provider"]): e for e in body["entries"]}
    gemini = by_name[("gemini-2.5-pro", "google")]
    assert (gemini["input_price_per_1m"], gemini["output_price_per_1m"]) == (1.25, 10)
    assert gemini["context_tiers"] == [{"above_prompt_tokens": 200000,
                                        "input_price_per_1m": 2.5, "output_price_per_1m": 15,
                                        "cache_read_price_per_1m": 0.25}]
    assert {"name": "priority", "multiplier": 1.8} in gemini["service_tiers"]
    sonnet = by_name[("claude-sonnet-4-5", "anthropic")]
    assert sonnet["cache_write_1h_price_per_1m"] == 6
    assert sonnet["service_tiers"] == [{"name": "batch", "multiplier": 0.5}]
    # An entry with only the spec's fields shows only those (and empty structures).
    assert by_name[("gpt-4", "openai")] == {
        "model": "gpt-4", "provider": "openai", "version": "litellm-2026-10-21",
        "input_price_per_1m": 30, "output_price_per_1m": 60, "context_tiers": [],
        "service_tiers": []}
    assert body["unpriced"]["models"] == [] and body["unpriced"]["total_spans"] == 0


async def test_models_seen_without_a_price_are_listed_with_counts(api: Any) -> None:
    for _ in range(3):
        await record(api, model="acme-llm-7b", provider="acme", prompt_tokens=5)
    await record(api, model="acme-llm-70b", provider="acme")
    await record(api, model="gpt-4o", provider="openai", prompt_tokens=5)  # priced
    batch = await api.post("/v1/metrics/record-batch", json={"spans": [
        {"model": "acme-llm-70b", "provider": "acme"}, {"model": "x", "provider": "y"}]})
    assert (await batch.json())["unpriced_count"] == 2
    unpriced = (await (await api.get("/v1/pricing/models")).json())["unpriced"]
    assert unpriced["models"] == [
        {"model": "acme-llm-7b", "provider": "acme", "count": 3},
        {"model": "acme-llm-70b", "provider": "acme", "count": 2},
        {"model": "x", "provider": "y", "count": 1}]
    assert (unpriced["distinct_models"], unpriced["total_spans"]) == (3, 6)
    assert unpriced["overflow_spans"] == 0 and unpriced["max_models"] == 1000


async def test_needs_the_token_like_every_v1_get(make_client: MakeClient) -> None:
    api = await make_client(api_token="s3cret")
    assert (await api.get("/v1/pricing/models")).status == 401
    ok = await api.get("/v1/pricing/models", headers={"Authorization": "Bearer s3cret"})
    assert ok.status == 200


# --- known answers through the REST record door --------------------------------------
# The record body carries prompt, completion and cache read/write tokens; the vendor
# examples needing more (1-hour writes, reasoning, service tier, audio) run at the engine
# level in tests/pricing/test_known_answers.py until the body carries those counts.

@pytest.mark.parametrize(("span", "cost"), [
    # ai.google.dev/gemini-api/docs/pricing, Gemini 2.5 Pro: $2.50 / $15 for prompts
    # > 200k tokens, $1.25 / $10 up to 200k.
    ({"model": "gemini-2.5-pro", "provider": "gcp.gemini", "prompt_tokens": 250_000,
      "completion_tokens": 10_000}, 775_000),
    ({"model": "gemini-2.5-pro", "provider": "gcp.gemini", "prompt_tokens": 200_000,
      "completion_tokens": 10_000}, 350_000),
    # platform.claude.com/docs/en/about-claude/pricing, Sonnet 4.5: $3 input, $0.30 cache
    # hits, $3.75 5-minute writes, $15 output (writes without a TTL split are 5-minute).
    ({"model": "claude-sonnet-4-5-20250929", "provider": "anthropic", "prompt_tokens": 13_000,
      "cache_read_tokens": 10_000, "cache_write_tokens": 2_000, "completion_tokens": 500},
     1_000 * 3 + 3_000 + 7_500 + 7_500),
    # Same page, long context: > 200K input tokens *including cache reads and writes*
    # -> $6 / $22.50, cache hits $0.60, 5m writes $7.50.
    ({"model": "claude-sonnet-4-5", "provider": "anthropic", "prompt_tokens": 210_000,
      "cache_read_tokens": 190_000, "cache_write_tokens": 10_000, "completion_tokens": 1_000},
     10_000 * 6 + 190_000 * 0.6 + 10_000 * 7.5 + 1_000 * 22.5),
    # openai.com/api/pricing, gpt-5.4: $2.50 / $15 up to 272K input tokens, $5 / $22.50 over.
    ({"model": "gpt-5.4", "provider": "openai", "prompt_tokens": 300_000,
      "completion_tokens": 1_000}, 300_000 * 5 + 1_000 * 22.5),
])
async def test_record_door_prices_the_vendor_examples(api: Any, span: dict[str, Any],
                                                      cost: float) -> None:
    body = await record(api, **span)
    assert body["cost_usd_micro"] == round(cost)
    assert body["price_version"]
