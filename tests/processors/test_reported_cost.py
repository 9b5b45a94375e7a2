"""Our cost beside the producer's: what counts as a disagreement, and who is counted."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from llm_observe.processors.reported_cost import ReportedCostStats, disagree
from llm_observe.span import LlmSpan


def test_one_percent_and_one_micro_usd_are_tolerated() -> None:
    assert not disagree(10_000, 10_100)  # 1%: rounding and price-table dates
    assert disagree(10_000, 10_102)
    assert not disagree(3, 4)  # a micro-USD of rounding on a tiny call
    assert disagree(0, 5) and not disagree(0, 0)


def test_counts_by_known_provider_only_when_both_costs_are_known() -> None:
    stats = ReportedCostStats()
    registry = CollectorRegistry()
    registry.register(stats)
    for provider, ours, theirs in [("openai", 100, 100), ("openai", 100, 300),
                                   ("made-up-vendor-123", 100, 900), ("openai", None, 5),
                                   ("anthropic", 50, None)]:
        stats.observe(LlmSpan(model="m", provider=provider, cost_usd_micro=ours,
                              reported_cost_usd_micro=theirs))
    text = generate_latest(registry).decode()
    assert 'llm_observe_reported_cost_compared_total{provider="openai"} 2.0' in text
    assert 'llm_observe_reported_cost_disagreements_total{provider="openai"} 1.0' in text
    assert 'llm_observe_reported_cost_disagreements_total{provider="other"} 1.0' in text
    assert "anthropic" not in text and "made-up" not in text
