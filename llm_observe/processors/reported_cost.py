"""Our cost beside the producer's own: count the spans where the two disagree.

Producers that price their calls (OpenLIT ``gen_ai.usage.cost``, OpenInference
``llm.cost.total``, Pydantic AI / Logfire ``operation.cost``, LiteLLM
``gen_ai.cost.total_cost``, Langfuse ``cost_details``) leave that estimate on the span
(``LlmSpan.reported_cost_usd_micro``). The cost stage compares it with ours: a relative
difference beyond :data:`TOLERANCE` (and more than one micro-USD, so rounding never
counts) is a disagreement — a stale price table on one side, or cache tokens counted
twice or not at all. The counts are plain numbers on the hot path, read at scrape time
as ``llm_observe_reported_cost_compared_total`` and
``llm_observe_reported_cost_disagreements_total`` by provider. The provider label takes
only the registry's known names (anything else is ``other``), so a sender cannot grow it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from llm_observe.providers.registry import BY_NAME
from llm_observe.span import LlmSpan

TOLERANCE = 0.01  # 1% of the larger of the two costs
OTHER = "other"


def disagree(ours: int, reported: int) -> bool:
    """Whether two costs (micro-USD) differ by more than the tolerance."""
    gap = abs(ours - reported)
    return gap > 1 and gap > TOLERANCE * max(ours, reported)


class ReportedCostStats:
    """Compared and disagreeing spans per provider; fed by :meth:`observe`.

    A prometheus_client collector by duck typing (``describe``/``collect``), so the
    in-process library prices spans without prometheus_client installed: it is imported
    only when the collector side scrapes."""

    def __init__(self) -> None:
        self.compared: dict[str, int] = {}
        self.disagreements: dict[str, int] = {}

    def observe(self, span: LlmSpan) -> None:
        """Count ``span`` if both costs are known (call after pricing it)."""
        reported, ours = span.reported_cost_usd_micro, span.cost_usd_micro
        if reported is None or ours is None:
            return
        provider = span.provider if span.provider in BY_NAME else OTHER
        self.compared[provider] = self.compared.get(provider, 0) + 1
        if disagree(ours, reported):
            self.disagreements[provider] = self.disagreements.get(provider, 0) + 1

    def describe(self) -> list[Any]:
        return []  # built at collect time, as PipelineStats does

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        compared = CounterMetricFamily(
            "llm_observe_reported_cost_compared", "Priced spans whose producer also reported "
            "a cost (gen_ai.usage.cost, llm.cost.total, operation.cost, Langfuse "
            "cost_details ...), by provider", labels=["provider"])
        disagreements = CounterMetricFamily(
            "llm_observe_reported_cost_disagreements", "Of those, spans where our cost and "
            f"the reported one differ by more than {TOLERANCE:.0%}, by provider",
            labels=["provider"])
        for provider, n in sorted(self.compared.items()):
            compared.add_metric([provider], n)
            disagreements.add_metric([provider], self.disagreements.get(provider, 0))
        yield from (compared, disagreements)
