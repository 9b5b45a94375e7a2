"""The eight LLM metric families of spec 2.6, updated from enriched spans.

Names, types and labels are exactly the spec's. prometheus_client appends
``_total`` to counters, so counters are declared without it; the two histograms
keep their spec names (``llm_latency_ms_total`` exposes ``..._bucket``,
``..._sum`` and ``..._count``).

Label children are cached per (model, provider, service_name), and a batch is
summed per label group before any child is touched, so each child and histogram
bucket is updated once per batch: ``.labels()`` on every update runs ~55,000
spans/s, cached children with batching ~620,000 (bench/processors.py, one run).

Label values are guarded and every family's label sets are budgeted where a group or
child is created (``label_sets.py``): the exposition stays bounded in series and bytes
whatever the callers send.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sequence
from operator import attrgetter, countOf

from prometheus_client import CollectorRegistry, Counter, Histogram, values

from llm_observe.collector.exporters.buckets import SharedBounds, observe_batch, observe_shared
from llm_observe.collector.exporters.exemplars import Exemplars, Sink
from llm_observe.collector.exporters.genai import (
    DURATION_BUCKETS_S,
    GenAiMetrics,
    GenAiTally,
    observe_tokens,
)
from llm_observe.collector.exporters.label_sets import BASE_LABELS, Group, LabelLimits, LabelSets
from llm_observe.collector.exporters.multiprocess_exemplars import worker_store
from llm_observe.collector.longlived import long_lived
from llm_observe.semconv import STATUS_ERROR
from llm_observe.span import LlmSpan

__all__ = ["LATENCY_BUCKETS_MS", "TTFT_BUCKETS_MS", "LabelLimits", "LlmMetrics",
           "PrometheusExporter"]

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
# one bisect per latency for the spec's histogram and the GenAI one (seconds, bucketed in ms)
LATENCY_SHARED = SharedBounds(LATENCY_BUCKETS_MS, DURATION_BUCKETS_S, 1000)
TTFT_SHARED = SharedBounds(TTFT_BUCKETS_MS, DURATION_BUCKETS_S, 1000)
_ACTUAL_MODEL = attrgetter("actual_model")
# Recording gives the event loop back after ~SLICE_S: it may stop after every STEP spans
# tallied (a new label set costs ~170 µs: its children are made) and after every group
# flushed, so each group is still flushed once per batch.
SLICE_S = 0.004
STEP = 32


def multiprocess_values() -> bool:
    """True when prometheus_client keeps values in multiprocess files (``serve --workers``)."""
    return bool(getattr(values.ValueClass, "_multiprocess", False))


class LlmMetrics:
    """The metric families on one registry (tests get a fresh registry each)."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 limits: LabelLimits | None = None, *, batch_buckets: bool = True,
                 genai: bool = True, exemplars: bool = True,
                 exemplar_sink: Sink | None = None) -> None:
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
                                      "Label values and label sets folded into __overflow__",
                                      ["label"], registry=r)
        # the OTel GenAI client histograms (genai.py); None when Settings.genai_metrics is off
        self.genai = GenAiMetrics(r) if genai else None
        self.sets = LabelSets(self, limits)
        # trace exemplars on latency, TTFT, cost and tokens (exemplars.py); None when off
        if exemplar_sink is None and multiprocess_values():
            store = worker_store()  # serve --workers: the library's values drop exemplars
            exemplar_sink = store.keep if store is not None else None
        self.exemplars = Exemplars(exemplar_sink) if exemplars else None

    def record(self, batch: Sequence[LlmSpan]) -> None:
        """Update every family from a batch of enriched spans.

        Sums per label group first, then touches each child once per batch: every
        ``inc``/``observe`` takes a lock, and a 512-span batch usually has few groups.
        """
        for _ in self.steps(batch):
            pass

    def steps(self, batch: Sequence[LlmSpan]) -> Iterator[None]:
        """:meth:`record` in steps: yields after every :data:`STEP` spans summed, after
        every span that made a new label set (32 new sets held the loop 5-30 ms, the
        health probe behind them: bench.hostile) and after every group flushed, where a
        caller may give the event loop back (the batch is recorded when the iterator is
        exhausted; one abandoned midway records nothing of the groups not yet flushed)."""
        tallies: dict[Group, _Tally] = {}
        group = self.sets.group
        keep = self.genai is not None or self.exemplars is not None  # the group's spans
        made = long_lived.made_sets
        for start in range(0, len(batch), STEP):
            for span in batch[start:start + STEP]:
                if span.duplicate_of is not None:  # another span counts this call
                    continue
                g = group(span)
                t = tallies.get(g)
                if t is None:
                    t = tallies[g] = _Tally()
                    if long_lived.made_sets != made:  # a new label set: ~170 µs, not 1.5
                        made = long_lived.made_sets
                        yield
                t.prompt += span.prompt_tokens or 0
                t.completion += span.completion_tokens or 0
                if span.cost_usd_micro is not None:
                    t.cost += span.cost_usd_micro
                else:
                    t.unpriced += 1
                if span.latency_ms_total is not None:
                    t.latency.append(span.latency_ms_total)
                if span.latency_ms_ttft is not None:
                    t.ttft.append(span.latency_ms_ttft)
                t.pii += span.pii_detected
                t.injection += span.injection_attempt
                if span.finish_reason:
                    t.finish[span.finish_reason] = t.finish.get(span.finish_reason, 0) + 1
                skey = (span.status, span.retry_count > 0)
                t.spans[skey] = t.spans.get(skey, 0) + 1
                if keep:  # read at flush, in C loops
                    t.members.append(span)
            yield
        for g, t in tallies.items():
            self._flush(g, t)
            yield

    def _flush(self, g: Group, t: _Tally) -> None:
        for counter, amount in ((g.prompt, t.prompt), (g.completion, t.completion),
                                (g.cost, t.cost), (g.unpriced, t.unpriced), (g.pii, t.pii),
                                (g.injection, t.injection)):
            if amount:
                counter.inc(amount)
        if not (self.genai is not None and t.members and self._flush_genai(g, t)):
            # else observed with the GenAI ones
            observe_batch(g.latency, t.latency, self.batch_buckets)
            observe_batch(g.ttft, t.ttft, self.batch_buckets)
        if self.exemplars is not None:
            self.exemplars.group(g, t.members, t.latency, t.ttft)
        for reason, n in t.finish.items():
            child = g.finish.get(reason)
            if child is None:
                child = self.sets.finish_child(g, reason)
            child.inc(n)
        for skey, n in t.spans.items():
            child = g.spans.get(skey)
            if child is None:
                child = self.sets.spans_child(g, skey)
            child.inc(n)

    def _flush_genai(self, g: Group, t: _Tally) -> bool:
        """The GenAI histograms of a group's spans; True if the latency and TTFT histograms
        were observed here too.

        GenAI sets are keyed by response model, plus the error type on errors. A group
        whose spans all share one key (no errors, one response model: the usual batch)
        buckets each latency once for both families (:class:`buckets.SharedBounds`).
        """
        spans, batched = t.members, self.batch_buckets
        if not any(status == STATUS_ERROR for status, _ in t.spans):
            model = spans[0].actual_model
            if countOf(map(_ACTUAL_MODEL, spans), model) == len(spans):
                s = g.genai.get(model) or self.sets.genai_set(g, model)
                observe_tokens(s, spans, batched)
                observe_shared(g.latency, s.duration, t.latency, LATENCY_SHARED, batched)
                observe_shared(g.ttft, s.ttft, t.ttft, TTFT_SHARED, batched)
                return True
        tallies: dict[str | tuple[str | None, str | None] | None, GenAiTally] = {}
        for span in spans:
            k = span.actual_model if span.status != STATUS_ERROR \
                else (span.actual_model, span.error_type)
            o = tallies.get(k)
            if o is None:
                o = tallies[k] = GenAiTally()
            o.spans.append(span)
        for k, o in tallies.items():
            o.flush(g.genai.get(k) or self.sets.genai_set(g, k), batched)
        return False


class _Tally:
    """One label group's sums over a batch."""

    __slots__ = ("completion", "cost", "finish", "injection", "latency", "members", "pii",
                 "prompt", "spans", "ttft", "unpriced")

    def __init__(self) -> None:
        self.prompt = self.completion = self.cost = self.unpriced = 0
        self.pii = self.injection = 0
        self.latency: list[int] = []
        self.ttft: list[int] = []
        self.finish: dict[str, int] = {}
        self.spans: dict[tuple[str, bool], int] = {}
        self.members: list[LlmSpan] = []  # the group's spans (GenAI metrics, exemplars)


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
        """Record the batch, yielding to the loop whenever a step ends past ~SLICE_S of
        loop time: ~1.5 µs a span once its label set exists, but ~170 µs for a new one,
        so 1,000 new label sets would hold the loop ~0.2 s in one go. The batch is summed
        whole and each group flushed once whatever the pauses: cutting it into slices
        flushed apart cost 3x the instructions when a busy CPU thread made the measured
        slices short (bench.receiver_ir, issue 24)."""
        clock = time.perf_counter
        deadline = clock() + SLICE_S
        for _ in self.metrics.steps(batch):
            if clock() >= deadline:
                await asyncio.sleep(0)
                deadline = clock() + SLICE_S
        long_lived.settle()  # new label sets made: out of the cyclic GC's way

    async def shutdown(self, timeout: float) -> None:
        return None
