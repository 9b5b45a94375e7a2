"""Price structures: tier choice, inheritance, clamping, multipliers, and their errors."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from llm_observe.errors import ConfigError
from llm_observe.pricing import (
    ContextTier,
    PriceEntry,
    ServiceTier,
    Usage,
    load_price_table,
    parse_price_table,
)

D = Decimal
ENTRY = """\
- model: m
  provider: p
  input_price_per_1m: 2
  output_price_per_1m: 8
  cache_read_price_per_1m: 0.5
  version: v1
"""


def table_entry(extra: str) -> PriceEntry:
    found = parse_price_table(ENTRY.replace("  version: v1\n", extra + "  version: v1\n")) \
        .lookup("m", "p")
    assert found is not None
    return found


# --- rules --------------------------------------------------------------------------

def test_five_field_entry_costs_what_it_always_did() -> None:
    e = PriceEntry("m", "p", D("3"), D("15"), "v", D("0.3"), D("3.75"))
    usage = Usage(prompt_tokens=2_100, completion_tokens=500, cache_write_tokens=2_000,
                  cache_write_1h_tokens=2_000, reasoning_tokens=400, audio_input_tokens=50,
                  image_output_tokens=20, service_tier="batch")
    # Every detail falls back to the price those tokens had before the structures.
    assert e.cost(usage) == e.cost_usd_micro(2_100, 500, 0, 2_000) == 300 + 7_500 + 7_500


def test_context_tier_threshold_is_exclusive_and_picks_the_highest_passed() -> None:
    e = table_entry("  context_tiers:\n"
                    "    - {above_prompt_tokens: 1000, input_price_per_1m: 4}\n"
                    "    - {above_prompt_tokens: 100, output_price_per_1m: 80}\n")
    assert e.cost(Usage(100, 1_000)) == 100 * 2 + 1_000 * 8
    assert e.cost(Usage(101, 1_000)) == 101 * 2 + 1_000 * 80
    # Over 1000 only the 1000 tier applies; it inherits from the entry, not the 100 tier.
    assert e.cost(Usage(1_001, 1_000)) == 1_001 * 4 + 1_000 * 8
    assert e.cost_usd_micro(1_001, 1_000) == 1_001 * 4 + 1_000 * 8
    # The prompt size counts cached tokens too (the vendors' definition of the prompt).
    assert e.cost(Usage(1_001, 0, cache_read_tokens=1_000)) == 1 * 4 + 1_000 * 0.5


def test_tier_without_a_cache_price_bills_cache_at_its_own_input_when_entry_has_none() -> None:
    path = "- {model: m, provider: p, input_price_per_1m: 1, output_price_per_1m: 1, " \
           "version: v, context_tiers: [{above_prompt_tokens: 10, input_price_per_1m: 3}]}\n"
    e = parse_price_table(path).lookup("m", "p")
    assert e is not None
    # No cache price anywhere: cached tokens cost the input price of the tier in force.
    assert e.cost(Usage(20, 0, cache_read_tokens=20)) == 60


@pytest.mark.parametrize(("usage", "expected"), [
    # reasoning beyond completion is clamped to it
    (Usage(0, 100, reasoning_tokens=500), 100 * 30),
    # audio beyond the uncached prompt is clamped to what is left after cache
    (Usage(100, 0, cache_read_tokens=80, audio_input_tokens=100), 80 * 0.5 + 20 * 40),
    # 1h writes are a subset of writes; negative counts are zero
    (Usage(100, 0, cache_write_tokens=10, cache_write_1h_tokens=50), 90 * 2 + 10 * 6),
    (Usage(-5, -5, -5, -5, -5, -5, -5, -5, -5, -5), 0),
    # reasoning at its own rate, audio out after it, text output the rest
    (Usage(0, 100, reasoning_tokens=30, audio_output_tokens=50), 30 * 30 + 50 * 90 + 20 * 8),
])
def test_subsets_are_clamped_never_counted_twice(usage: Usage, expected: float) -> None:
    e = table_entry("  cache_write_1h_price_per_1m: 6\n  reasoning_price_per_1m: 30\n"
                    "  audio_input_price_per_1m: 40\n  audio_output_price_per_1m: 90\n")
    assert e.cost(usage) == round(expected)


def test_multiplier_scales_every_price_including_tiers_exactly() -> None:
    e = table_entry("  context_tiers: [{above_prompt_tokens: 10, input_price_per_1m: 4}]\n"
                    "  service_tiers: {Flex: {multiplier: 0.5}}\n")
    assert e.cost(Usage(10, 10, cache_read_tokens=4, service_tier="flex")) == round(
        6 * 1 + 4 * 0.25 + 10 * 4)
    assert e.cost(Usage(11, 10, service_tier=" FLEX ")) == 11 * 2 + 10 * 4


def test_service_tier_own_prices_inherit_from_the_entry() -> None:
    e = table_entry("  service_tiers:\n    priority: {input_price_per_1m: 3.5}\n")
    # output and cache read are the entry's
    assert e.cost(Usage(1_000, 100, cache_read_tokens=500, service_tier="priority")) == \
        500 * 3.5 + 500 * 0.5 + 100 * 8


def test_entry_built_in_code_validates_like_the_loader() -> None:
    with pytest.raises(ValueError, match="multiplier or own prices"):
        PriceEntry("m", "p", D(1), D(1), "v", service_tiers=(
            ServiceTier("flex", D("0.5"), (("input_price_per_1m", D(1)),)),))
    with pytest.raises(ValueError, match=r"context_tiers\[1\]\.above_prompt_tokens"):
        PriceEntry("m", "p", D(1), D(1), "v", context_tiers=(
            ContextTier(10, (("input_price_per_1m", D(2)),)),
            ContextTier(10, (("input_price_per_1m", D(3)),))))


def test_as_dict_is_the_file_as_given(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(ENTRY.replace("  version: v1\n", (
        "  context_tiers: [{above_prompt_tokens: 200000, input_price_per_1m: 2.5}]\n"
        "  service_tiers: {batch: {multiplier: 0.5}, flex: {output_price_per_1m: 0.1,"
        " context_tiers: [{above_prompt_tokens: 200000, input_price_per_1m: 1.25}]}}\n"
        "  version: v1\n")))
    entry = load_price_table(path).entries[0]
    assert entry.as_dict() == {
        "model": "m", "provider": "p", "version": "v1", "input_price_per_1m": 2,
        "output_price_per_1m": 8, "cache_read_price_per_1m": 0.5,
        "context_tiers": [{"above_prompt_tokens": 200000, "input_price_per_1m": 2.5}],
        "service_tiers": [
            {"name": "batch", "multiplier": 0.5},
            {"name": "flex", "output_price_per_1m": 0.1, "context_tiers": [
                {"above_prompt_tokens": 200000, "input_price_per_1m": 1.25}]}]}


# --- loader rejections --------------------------------------------------------------

@pytest.mark.parametrize(("extra", "expected"), [
    ("  cache_write_1h_price_per_1m: -6\n", ["'cache_write_1h_price_per_1m'", ">= 0"]),
    ("  reasoning_price_per_1m: lots\n", ["'reasoning_price_per_1m'", "must be a number"]),
    ("  audio_input_price_per_1m: .inf\n", ["'audio_input_price_per_1m'", "finite"]),
    ("  image_output_price_per_1m: 0.0000000001\n", ["'image_output_price_per_1m'",
                                                     "decimal places"]),
    ("  context_tiers: {above_prompt_tokens: 5}\n", ["'context_tiers'", "non-empty list"]),
    ("  context_tiers: []\n", ["'context_tiers'", "non-empty list", "empty list"]),
    ("  context_tiers: [7]\n", ["'context_tiers[0]'", "mapping"]),
    ("  context_tiers: [{input_price_per_1m: 4}]\n",
     ["'context_tiers[0].above_prompt_tokens'", ">= 1", "None"]),
    ("  context_tiers: [{above_prompt_tokens: 0, input_price_per_1m: 4}]\n",
     ["'context_tiers[0].above_prompt_tokens'", ">= 1"]),
    ("  context_tiers: [{above_prompt_tokens: 1.5e5, input_price_per_1m: 4}]\n",
     ["'context_tiers[0].above_prompt_tokens'", "whole number"]),
    ("  context_tiers: [{above_prompt_tokens: true, input_price_per_1m: 4}]\n",
     ["'context_tiers[0].above_prompt_tokens'"]),
    ("  context_tiers: [{above_prompt_tokens: 10}]\n", ["'context_tiers[0]'", "no price"]),
    ("  context_tiers: [{above_prompt_tokens: 10, input_price_per_1M: 4}]\n",
     ["'context_tiers[0].input_price_per_1M'", "unknown field"]),
    ("  context_tiers: [{above_prompt_tokens: 10, output_price_per_1m: -1}]\n",
     ["'context_tiers[0].output_price_per_1m'", ">= 0"]),
    ("  context_tiers:\n    - {above_prompt_tokens: 10, input_price_per_1m: 4}\n"
     "    - {above_prompt_tokens: 10, input_price_per_1m: 5}\n",
     ["'context_tiers[1].above_prompt_tokens'", "unique"]),
    ("  service_tiers: [flex]\n", ["'service_tiers'", "mapping"]),
    ("  service_tiers: {}\n", ["'service_tiers'", "got empty"]),
    ("  service_tiers: {flex: 0.5}\n", ["'service_tiers.flex'", "mapping"]),
    ("  service_tiers: {flex: {}}\n", ["'service_tiers.flex'", "empty"]),
    ("  service_tiers: {flex: {multiplier: 0}}\n", ["'service_tiers.flex.multiplier'", "> 0"]),
    ("  service_tiers: {flex: {multiplier: 1000}}\n", ["'service_tiers.flex.multiplier'",
                                                       "<= 100"]),
    ("  service_tiers: {flex: {multiplier: half}}\n", ["'service_tiers.flex.multiplier'",
                                                       "must be a number"]),
    ("  service_tiers: {flex: {multiplier: 0.5, input_price_per_1m: 1}}\n",
     ["'service_tiers.flex.multiplier'", "not both"]),
    ("  service_tiers: {flex: {multiplier: 0.333333333}}\n",
     ["'service_tiers.flex.cache_read_price_per_1m'", "0.1666666665", "more than 9"]),
    ("  service_tiers: {flex: {discount: 0.5}}\n", ["'service_tiers.flex.discount'",
                                                    "unknown field"]),
    ("  service_tiers: {standard: {multiplier: 1}}\n", ["'service_tiers.standard'",
                                                        "entry's own prices"]),
    ("  service_tiers: {Default: {multiplier: 1}}\n", ["'service_tiers.Default'"]),
    ("  service_tiers: {'flex tier': {multiplier: 0.5}}\n", ["'service_tiers.flex tier'",
                                                             "tier name"]),
    ("  service_tiers: {1: {multiplier: 0.5}}\n", ["'service_tiers.1'", "tier name"]),
    ("  service_tiers: {Flex: {multiplier: 0.5}, flex: {multiplier: 0.4}}\n",
     ["'service_tiers.flex'", "duplicate"]),
    ("  service_tiers: {batch: {context_tiers: [{above_prompt_tokens: 9}]}}\n",
     ["'service_tiers.batch.context_tiers[0]'", "no price"]),
    ("  context_tiers: [{above_prompt_tokens: 10, input_price_per_1m: 4}]\n"
     "  service_tiers: {batch: {input_price_per_1m: 1}}\n",
     ["'service_tiers.batch.context_tiers'", "must give its own"]),
])
def test_bad_structure_is_rejected_naming_entry_and_field(
        tmp_path: Path, extra: str, expected: list[str]) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(ENTRY.replace("  version: v1\n", extra + "  version: v1\n"))
    with pytest.raises(ConfigError) as info:
        load_price_table(path)
    message = str(info.value)
    assert message.startswith(f"{path}: entry[0] (line 1, model 'm'): field ")
    assert "\n" not in message
    for part in expected:
        assert part in message
