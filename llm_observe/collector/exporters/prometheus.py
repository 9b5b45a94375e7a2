"""The eight LLM metric families of spec 2.6, updated from enriched spans.

Names, types and labels are exactly the spec's. prometheus_client appends
``_total`` to counters, so counters are declared without it; the two histograms
keep their spec names (``llm_latency_ms_total`` exposes ``..._bucket``,
``..._sum`` and ``..._count``).

Label children are cached per (model, provider, service_name), and a batch is
summed per label group before any child is touched, so each child and histogram
bucket is updated once per batch: ``.labels()`` on every update runs ~55,000
spans/s, cached children with batching ~620,000 (bench/processors.py, one run).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from llm_observe.collector.exporters.labels import LabelGuard
from llm_observe.span import LlmSpan

# Milliseconds, tens of ms to minutes: fast cached answers, typical chat calls
# (0.5-10 s) and long reasoning/agent calls (up to 10 min).
LATENCY_BUCKETS_MS = (
    25, 50, 100, 250, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 7_500,
    10_000, 15_000, 20_000, 30_000, 60_000, 120_000, 300_000, 600_000,
)
# Time to first token sits lower: tens of ms to about a minute.
TTFT_BUCKETS_MS = (
    10, 25, 50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000,
    10_000, 20_000, 60_000,
)

BASE_LABELS = ("model", "provider", "service_name")


@dataclass(frozen=True, slots=True)
class LabelLimits:
    """Distinct values allowed per label before values fold into ``__overflow__``."""

    models: int = 500
    providers: int = 100
    services: int = 500
    finish_reasons: int = 50

    def validate(self) -> None:
        for name in ("models", "providers", "services", "finish_reasons"):
            if getattr(self, name) < 1:
                raise ValueError(f"label limit {name} must be >= 1")


class _Group:
    """Cached label children for one (model, provider, service_name)."""

    __slots__ = ("completion", "cost", "finish", "injection", "key", "latency", "pii", "prompt",
                 "spans", "ttft", "unpriced")

    def __init__(self, m: LlmMetrics, key: tuple[str, str, str]) -> None:
        self.key = key
        self.prompt = m.tokens.labels(*key, "prompt")
        self.completion = m.tokens.labels(*key, "completion")
        self.cost = m.cost.labels(*key)
        self.latency = m.latency.labels(*key)
        self.ttft = m.ttft.labels(*key)
        self.pii = m.pii.labels(key[2])
        self.injection = m.injection.labels(key[2])
        self.unpriced = m.unpriced.labels(key[0], key[1])
        self.finish: dict[str, Any] = {}
        self.spans: dict[tuple[str, bool], Any] = {}


class LlmMetrics:
    """The metric families on one registry (tests get a fresh registry each)."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 limits: LabelLimits | None = None, *, batch_buckets: bool = True) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.batch_buckets = batch_buckets  # False: observe() per value (bench baseline)
        limits = limits or LabelLimits()
        limits.validate()
        r = self.registry
        self.tokens = Counter("llm_tokens", "LLM tokens by type (prompt, completion)",
                              [*BASE_LABELS, "token_type"], registry=r)
        self.cost = Counter("llm_cost_usd_micro", "LLM cost in micro-USD",
                            BASE_LABELS, registry=r)
        self.latency = Histogram("llm_latency_ms_total", "End-to-end LLM call latency, ms",
                                 BASE_LABELS, buckets=LATENCY_BUCKETS_MS, registry=r)
        self.ttft = Histogram("llm_latency_ms_ttft", "Time to first token, ms",
                              BASE_LABELS, buckets=TTFT_BUCKETS_MS, registry=r)
        self.pii = Counter("llm_pii_detected", "Spans with PII detected",
                           ["service_name"], registry=r)
        self.injection = Counter("llm_injection_attempts", "Spans with a prompt-injection attempt",
                                 ["service_name"], registry=r)
        self.finish_reason = Counter("llm_finish_reason", "LLM calls by finish reason",
                                     [*BASE_LABELS, "finish_reason"], registry=r)
        self.spans = Counter("llm_spans", "LLM spans by status and retries",
                             [*BASE_LABELS, "status", "has_retries"], registry=r)
        # self-metrics (llm_observe_<subsystem>_<thing>)
        self.unpriced = Counter("llm_observe_unpriced_spans",
                                "Spans whose model has no price entry (cost unknown, not $0)",
                                ["model", "provider"], registry=r)
        self.label_overflow = Counter("llm_observe_label_overflow",
                                      "Label values folded into __overflow__", ["label"],
                                      registry=r)
        self._model = LabelGuard(limits.models)
        self._provider = LabelGuard(limits.providers)
        self._service = LabelGuard(limits.services)
        self._finish = LabelGuard(limits.finish_reasons)
        self._groups: dict[tuple[str, str, str], _Group] = {}
        self._by_raw: dict[tuple[str, str, str], _Group] = {}

    def _group(self, span: LlmSpan) -> _Group:
        raw = (span.model, span.provider, span.service_name)
        group = self._by_raw.get(raw)
        if group is not None:
            return group
        before = (self._model.overflowed, self._provider.overflowed, self._service.overflowed)
        key = (self._model(span.model), self._provider(span.provider),
               self._service(span.service_name))
        for label, guard, n in zip(("model", "provider", "service_name"),
                                   (self._model, self._provider, self._service), before,
                                   strict=True):
            if guard.overflowed > n:
                self.label_overflow.labels(label).inc()
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(self, key)
        if len(self._by_raw) < 100_000:  # the raw-name cache is bounded too
            self._by_raw[raw] = group
        return group

    def record(self, batch: Sequence[LlmSpan]) -> None:
        """Update every family from a batch of enriched spans.

        Sums per label group first, then touches each child once per batch: every
        ``inc``/``observe`` takes a lock, and a 512-span batch usually has few groups.
        """
        tallies: dict[_Group, _Tally] = {}
        for span in batch:
            g = self._group(span)
            t = tallies.get(g)
            if t is None:
                t = tallies[g] = _Tally()
            t.prompt += span.prompt_tokens or 0
            t.completion += span.completion_tokens or 0
            if span.cost_usd_micro is not None:
                t.cost += span.cost_usd_micro
            else:
                t.unpriced += 1
            if span.latency_ms_total is not None:
                t.latency.add(span.latency_ms_total)
            if span.latency_ms_ttft is not None:
                t.ttft.add(span.latency_ms_ttft)
            t.pii += span.pii_detected
            t.injection += span.injection_attempt
            if span.finish_reason:
                t.finish[span.finish_reason] = t.finish.get(span.finish_reason, 0) + 1
            skey = (span.status, span.retry_count > 0)
            t.spans[skey] = t.spans.get(skey, 0) + 1
        for g, t in tallies.items():
            self._flush(g, t)

    def _flush(self, g: _Group, t: _Tally) -> None:
        for counter, amount in ((g.prompt, t.prompt), (g.completion, t.completion),
                                (g.cost, t.cost), (g.unpriced, t.unpriced), (g.pii, t.pii),
                                (g.injection, t.injection)):
            if amount:
                counter.inc(amount)
        t.latency.flush(g.latency, self.batch_buckets)
        t.ttft.flush(g.ttft, self.batch_buckets)
        for reason, n in t.finish.items():
            child = g.finish.get(reason)
            if child is None:
                child = g.finish[reason] = self.finish_reason.labels(*g.key, self._finish(reason))
            child.inc(n)
        for skey, n in t.spans.items():
            child = g.spans.get(skey)
            if child is None:
                child = g.spans[skey] = self.spans.labels(
                    *g.key, skey[0], "true" if skey[1] else "false")
            child.inc(n)


class _Observations:
    """Histogram observations of one batch: a sum and a count per bucket."""

    __slots__ = ("values",)

    def __init__(self) -> None:
        self.values: list[float] = []

    def add(self, value: float) -> None:
        self.values.append(value)

    def flush(self, child: Any, batched: bool = True) -> None:
        """Add the batch to a histogram child as one update per touched bucket.

        The one place that writes prometheus_client's internals: the child's per-bucket
        values (non-cumulative counts in ``_buckets`` aligned with ``_upper_bounds``, the
        layout of every release since 0.4). Measured reason (``bench.processors``,
        ``metric_updates_batched_vs_public_observe``): public ``observe()`` per value
        takes a lock and a bisect per call. A client without that layout, or
        ``batched=False``, gets plain ``observe`` calls: the same exposition.
        """
        if not self.values:
            return
        buckets = getattr(child, "_buckets", None)
        bounds = getattr(child, "_upper_bounds", None)
        if not batched or buckets is None or bounds is None or len(buckets) != len(bounds):
            for value in self.values:
                child.observe(value)
            return
        counts: dict[int, int] = {}
        for value in self.values:
            i = bisect_left(bounds, value)  # first bound >= value: observe()'s "amount <= bound"
            counts[i] = counts.get(i, 0) + 1
        child._sum.inc(sum(self.values))
        for i, n in counts.items():
            buckets[i].inc(n)


class _Tally:
    """One label group's sums over a batch."""

    __slots__ = ("completion", "cost", "finish", "injection", "latency", "pii", "prompt",
                 "spans", "ttft", "unpriced")

    def __init__(self) -> None:
        self.prompt = self.completion = self.cost = self.unpriced = 0
        self.pii = self.injection = 0
        self.latency = _Observations()
        self.ttft = _Observations()
        self.finish: dict[str, int] = {}
        self.spans: dict[tuple[str, bool], int] = {}


class PrometheusExporter:
    """Exporter adapter: updates :class:`LlmMetrics`; never blocks, always has room."""

    name = "prometheus"

    def __init__(self, metrics: LlmMetrics) -> None:
        self.metrics = metrics

    def has_room(self, n: int) -> bool:
        return True

    async def start(self) -> None:
        return None

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        self.metrics.record(batch)

    async def shutdown(self, timeout: float) -> None:
        return None
