"""Cost processor: prices each span from the price table (spec 2.4 / 2.5).

An unpriced model gets ``cost_usd_micro = None`` — never 0 — so the Prometheus
exporter can count it as unpriced; a warning is logged once per
(model, provider). Spans with status ``error`` are priced like any other: the
provider bills the tokens it reports. A cost the producer reported itself is compared
with ours (:mod:`processors.reported_cost`).
"""

from __future__ import annotations

import logging

from llm_observe.pricing.table import PriceTable
from llm_observe.pricing.unpriced import UnpricedTracker
from llm_observe.processors.reported_cost import ReportedCostStats
from llm_observe.processors.span_usage import span_usage
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)

# Bound on distinct unpriced (model, provider) pairs remembered for the
# log-once rule; beyond it a misbehaving client cannot flood the log or memory.
MAX_WARNED = 1_000


class CostProcessor:
    """Sets ``span.cost_usd_micro`` and ``span.price_version`` from a :class:`PriceTable`."""

    name = "cost"
    blocking = False

    def __init__(self, table: PriceTable, reported: ReportedCostStats | None = None) -> None:
        self.table = table
        # compares our cost with the producer's own (registered on the collector's registry)
        self.reported = reported if reported is not None else ReportedCostStats()
        self._warned: set[tuple[str, str]] = set()
        self._warned_full = False
        self.unpriced = UnpricedTracker()  # read by GET /v1/pricing/models

    def process(self, batch: list[LlmSpan]) -> None:
        """Price every span in place; unpriced spans get None and a one-time warning."""
        for span in batch:
            self.price(span)

    def price(self, span: LlmSpan) -> None:
        """Set ``span``'s cost and price version (None for an unpriced model, logged once).

        Also the one pricing path of the REST tool-call endpoint."""
        lookup = self.table.lookup
        entry = None
        # The provider's response model is the exact snapshot billed
        # (gpt-4o -> gpt-4o-2024-08-06); the requested name is the fallback.
        if span.actual_model:
            entry = lookup(span.actual_model, span.provider)
        if entry is None:
            entry = lookup(span.model, span.provider)
        if entry is None:
            span.cost_usd_micro = None
            span.price_version = None
            self.unpriced.record(span.model, span.provider)
            self._warn_unpriced(span)
            return
        usage = span_usage(span)
        span.cost_usd_micro = entry.cost(usage) if usage is not None else entry.cost_usd_micro(
            span.prompt_tokens, span.completion_tokens,
            span.cache_read_tokens, span.cache_write_tokens)
        span.price_version = entry.version
        if span.reported_cost_usd_micro is not None:
            self.reported.observe(span)

    def _warn_unpriced(self, span: LlmSpan) -> None:
        key = (span.model, span.provider)
        if key in self._warned:
            return
        if len(self._warned) >= MAX_WARNED:
            if not self._warned_full:
                self._warned_full = True
                log.warning("more than %d unpriced (model, provider) pairs; "
                            "no further unpriced models are logged", MAX_WARNED)
            return
        self._warned.add(key)
        log.warning("no price for model %r (provider %r) in %s: cost_usd_micro is null; "
                    "add an entry to the price file", span.model, span.provider,
                    self.table.source,
                    extra={"trace_id": span.trace_id, "span_id": span.span_id})
