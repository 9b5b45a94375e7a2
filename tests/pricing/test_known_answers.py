"""Known answers from the vendors' own pricing pages, priced by the shipped table.

Each case cites the page whose numbers it uses; the expected micro-USD is the page's
arithmetic written out (tokens x USD per 1M tokens = micro-USD). These run at the engine
level with every count the providers report; tests/api/test_pricing.py runs the ones the
REST record body can carry through the record door.
"""

from __future__ import annotations

import pytest

from llm_observe.pricing import PriceTable, Usage, load_price_table


@pytest.fixture(scope="module")
def table() -> PriceTable:
    return load_price_table()


def cost(table: PriceTable, model: str, provider: str, usage: Usage) -> int:
    entry = table.lookup(model, provider)
    assert entry is not None, f"{model} ({provider}) is unpriced"
    return entry.cost(usage)


# Gemini API pricing (ai.google.dev/gemini-api/docs/pricing), Gemini 2.5 Pro: input $1.25
# "prompts <= 200k tokens", $2.50 "prompts > 200k tokens"; output $10 / $15; context
# caching $0.125 / $0.25. The tier is chosen by the prompt and applies to the whole call.
@pytest.mark.parametrize(("prompt", "cached", "completion", "expected"), [
    (250_000, 0, 10_000, 250_000 * 2.5 + 10_000 * 15),             # 775,000 = $0.775
    (200_000, 0, 10_000, 200_000 * 1.25 + 10_000 * 10),            # exactly 200k: base
    (200_001, 0, 0, 500_003),  # one over: all at $2.50; 500,002.5 rounds half up
    (250_000, 150_000, 1_000, 100_000 * 2.5 + 150_000 * 0.25 + 1_000 * 15),
])
def test_gemini_25_pro_long_prompt_is_billed_at_the_long_context_tier(
        table: PriceTable, prompt: int, cached: int, completion: int, expected: float) -> None:
    usage = Usage(prompt_tokens=prompt, completion_tokens=completion, cache_read_tokens=cached)
    assert cost(table, "gemini-2.5-pro", "gcp.gemini", usage) == round(expected)


def test_claude_cache_reads_and_5_minute_and_1_hour_writes(table: PriceTable) -> None:
    # platform.claude.com/docs/en/about-claude/pricing, Claude Sonnet 4.5: base input $3,
    # 5m cache writes $3.75, 1h cache writes $6, cache hits $0.30, output $15.
    # Anthropic reports input_tokens=1000, cache_read_input_tokens=10000,
    # cache_creation_input_tokens=6000 of which cache_creation.ephemeral_1h=4000.
    usage = Usage(prompt_tokens=17_000, completion_tokens=500, cache_read_tokens=10_000,
                  cache_write_tokens=6_000, cache_write_1h_tokens=4_000)
    expected = 1_000 * 3 + 10_000 * 0.3 + 2_000 * 3.75 + 4_000 * 6 + 500 * 15  # 45,000
    assert cost(table, "claude-sonnet-4-5-20250929", "anthropic", usage) == expected
    # The same call with every write at the 5-minute price (the old table) is 36,000:
    # 1-hour writes priced as 5-minute ones under-count by 9,000 micro-USD.
    assert cost(table, "claude-sonnet-4-5", "anthropic", Usage(
        17_000, 500, 10_000, 6_000)) == 36_000


def test_claude_sonnet_45_over_200k_input_tokens_with_cache(table: PriceTable) -> None:
    # Same page, "Long context pricing": > 200K input tokens (input + cache reads + cache
    # writes) -> $6 input / $22.50 output for the whole request; caching multipliers apply
    # on top (read 0.1x = $0.60, 5m write 1.25x = $7.50, 1h write 2x = $12).
    usage = Usage(prompt_tokens=210_000, completion_tokens=2_000, cache_read_tokens=150_000,
                  cache_write_tokens=50_000, cache_write_1h_tokens=10_000)
    expected = (10_000 * 6 + 150_000 * 0.6 + 40_000 * 7.5 + 10_000 * 12
                + 2_000 * 22.5)  # 615,000
    assert cost(table, "claude-sonnet-4-5", "anthropic", usage) == expected


def test_anthropic_batch_halves_every_price_and_stacks_with_long_context(
        table: PriceTable) -> None:
    # Same page, "Batch processing": 50% discount on input and output (Sonnet 4.5 batch
    # $1.50 / $7.50), stacking with caching and long-context prices. Batch results report
    # usage.service_tier = "batch".
    short = Usage(prompt_tokens=100_000, completion_tokens=10_000, service_tier="batch")
    assert cost(table, "claude-sonnet-4-5", "anthropic", short) == 100_000 * 1.5 + 10_000 * 7.5
    long = Usage(prompt_tokens=300_000, completion_tokens=10_000, service_tier="batch")
    assert cost(table, "claude-sonnet-4-5", "anthropic", long) == 300_000 * 3 + 10_000 * 11.25
    # "standard" (what non-batch calls report) is the list price.
    std = Usage(prompt_tokens=100_000, completion_tokens=10_000, service_tier="standard")
    assert cost(table, "claude-sonnet-4-5", "anthropic", std) == 300_000 + 150_000


def test_o_series_reasoning_tokens_are_output_tokens_not_extra(table: PriceTable) -> None:
    # platform.openai.com/docs/guides/reasoning: reasoning tokens "are billed as output
    # tokens" and are counted in completion_tokens (completion_tokens_details
    # .reasoning_tokens). o3 at openai.com/api/pricing: $2 input, $8 output.
    usage = Usage(prompt_tokens=1_000, completion_tokens=5_000, reasoning_tokens=4_000)
    assert cost(table, "o3-2025-04-16", "openai", usage) == 1_000 * 2 + 5_000 * 8  # 42,000
    # Not 74,000 (reasoning added on top) and not 10,000 (reasoning unpriced).


def test_openai_flex_call(table: PriceTable) -> None:
    # openai.com/api/pricing, Flex processing: o3 $1.00 input, $0.25 cached, $4.00 output;
    # o4-mini $0.55 / $0.138 / $2.20 (own prices: $0.138 is not half of $0.275).
    # The response reports service_tier = "flex".
    o3 = Usage(prompt_tokens=10_000, completion_tokens=1_000, cache_read_tokens=2_000,
               service_tier="flex")
    assert cost(table, "o3", "openai", o3) == 8_000 * 1 + 2_000 * 0.25 + 1_000 * 4  # 12,500
    mini = Usage(prompt_tokens=10_000, completion_tokens=1_000, cache_read_tokens=2_000,
                 service_tier="flex")
    assert cost(table, "o4-mini", "openai", mini) == round(
        8_000 * 0.55 + 2_000 * 0.138 + 1_000 * 2.2)  # 6,876
    # "default" and an unlisted tier ("scale": prepaid units) are the list price.
    for tier in ("default", "scale", None):
        listed = Usage(prompt_tokens=10_000, completion_tokens=1_000, service_tier=tier)
        assert cost(table, "o3", "openai", listed) == 10_000 * 2 + 1_000 * 8


def test_openai_priority_call(table: PriceTable) -> None:
    # openai.com/api/pricing, Priority processing: gpt-5 $2.50 input, $0.25 cached, $20
    # output (2x the standard $1.25 / $0.125 / $10).
    usage = Usage(prompt_tokens=10_000, completion_tokens=1_000, cache_read_tokens=4_000,
                  service_tier="priority")
    assert cost(table, "gpt-5", "openai", usage) == 6_000 * 2.5 + 4_000 * 0.25 + 1_000 * 20


def test_gemini_batch_has_its_own_long_context_prices(table: PriceTable) -> None:
    # ai.google.dev/gemini-api/docs/pricing, Batch: Gemini 2.5 Pro $0.625 / $1.25 input
    # (<= / > 200k), $5 / $7.50 output; context caching is not discounted.
    short = Usage(prompt_tokens=100_000, completion_tokens=4_000, cache_read_tokens=20_000,
                  service_tier="batch")
    assert cost(table, "gemini-2.5-pro", "google", short) == \
        80_000 * 0.625 + 20_000 * 0.125 + 4_000 * 5
    long = Usage(prompt_tokens=400_000, completion_tokens=4_000, service_tier="batch")
    assert cost(table, "gemini-2.5-pro", "google", long) == 400_000 * 1.25 + 4_000 * 7.5


def test_audio_tokens_at_their_own_price(table: PriceTable) -> None:
    # openai.com/api/pricing, gpt-4o-audio-preview (2024-12-17): text $2.50 / $10, audio
    # $40 / $80. prompt_tokens_details.audio_tokens and completion_tokens_details
    # .audio_tokens are part of prompt_tokens / completion_tokens.
    usage = Usage(prompt_tokens=1_200, completion_tokens=900, audio_input_tokens=1_000,
                  audio_output_tokens=800)
    expected = 200 * 2.5 + 1_000 * 40 + 100 * 10 + 800 * 80  # 105,500
    assert cost(table, "gpt-4o-audio-preview-2024-12-17", "openai", usage) == expected
    # gpt-realtime (same page): text $4 / $16, audio $32 / $64, cached input $0.40.
    rt = Usage(prompt_tokens=5_000, completion_tokens=1_000, cache_read_tokens=3_000,
               audio_input_tokens=1_500, audio_output_tokens=1_000)
    assert cost(table, "gpt-realtime", "openai", rt) == \
        500 * 4 + 3_000 * 0.4 + 1_500 * 32 + 1_000 * 64
    # Gemini 2.5 Flash (ai.google.dev pricing): text/image/video $0.30, audio $1.00.
    gemini = Usage(prompt_tokens=10_000, completion_tokens=500, audio_input_tokens=8_000)
    assert cost(table, "gemini-2.5-flash", "google", gemini) == \
        2_000 * 0.3 + 8_000 * 1 + 500 * 2.5


def test_image_generation_output_tokens(table: PriceTable) -> None:
    # openai.com/api/pricing, gpt-image-1: text input $5, image output $40 per 1M tokens;
    # the image-generation guide counts a 1024x1024 high-quality image as 4,160 output
    # tokens, ~$0.167 an image.
    usage = Usage(prompt_tokens=50, completion_tokens=4_160, image_output_tokens=4_160)
    assert cost(table, "gpt-image-1", "openai", usage) == 50 * 5 + 4_160 * 40  # 166,650
    # Gemini 2.5 Flash Image: $30 per 1M output image tokens, 1,290 tokens an image
    # ($0.039 an image, ai.google.dev pricing).
    gem = Usage(prompt_tokens=0, completion_tokens=1_290, image_output_tokens=1_290)
    assert cost(table, "gemini-2.5-flash-image", "google", gem) == 38_700
