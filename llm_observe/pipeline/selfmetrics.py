"""Every self-metric family (``llm_observe_*``) but the label guards': the pipeline's
processor and exporter stats, the OTLP receiver's and the forwarder's.

Receiver and forwarder families are one instance per registry (cached), so starting a
second receiver or forwarder on the same registry reuses them instead of failing on
duplicates. Processor and exporter stats are kept as plain numbers by the pipeline
(no lock on the hot path) and read at scrape time by :class:`PipelineStats`.
Labels take bounded values only: stage names, span kinds, outcomes, gRPC status names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeVar
from weakref import WeakKeyDictionary

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from llm_observe.pipeline.pipeline import Pipeline

# Forward-request latency, seconds: loopback Tempo answers in ms; a slow or
# far backend up to the per-attempt timeout.
# With ``serve --workers N`` each gauge is summed over the live workers (the queue and the
# spool of the whole host); a dead worker's share leaves the sum until its successor,
# which drains the same spool directory, reports it again.
LIVESUM: Final = "livesum"
EXPORT_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class ReceiverMetrics:
    """Requests and spans seen by the OTLP receiver."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.requests = Counter(
            "llm_observe_receiver_requests", "OTLP export requests by outcome "
            "(ok, partial = some spans rejected, invalid, refused = backpressure, error, "
            "unauthenticated)",
            ["outcome"], registry=r)
        self.received = Counter(
            "llm_observe_receiver_spans_received", "Spans in decodable OTLP requests, by kind "
            "(llm = mapped to an LLM call, other = passed through)", ["kind"], registry=r)
        self.accepted = Counter(
            "llm_observe_receiver_spans_accepted", "Spans accepted (answered OK), by kind",
            ["kind"], registry=r)
        self.refused = Counter(
            "llm_observe_receiver_spans_refused", "Spans not accepted, by reason (backpressure: "
            "sender told to retry; invalid: rejected in the partial success; error)",
            ["reason"], registry=r)
        self.discarded = Counter(
            "llm_observe_receiver_discarded", "Metric data points and log records taken on "
            "OTLP/HTTP /v1/metrics and /v1/logs and discarded (traces only are ingested; "
            "the sender is told in partial_success)", ["signal"], registry=r)
        self.ok = self.requests.labels("ok")
        self.received_llm, self.received_other = self.received.labels("llm"), \
            self.received.labels("other")
        self.accepted_llm, self.accepted_other = self.accepted.labels("llm"), \
            self.accepted.labels("other")


class ForwarderMetrics:
    """Queue, spool and delivery of the OTLP forwarder, one series per ``destination``
    (the name in destinations.yaml; ``tempo`` for ``tempo_endpoint``): see :meth:`bind`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        d = ["destination"]
        self.queue_spans = Gauge("llm_observe_otlp_queue_spans",
                                 "Spans held in memory by the forwarder (queued or in flight)",
                                 d, registry=r, multiprocess_mode=LIVESUM)
        self.queue_bytes = Gauge("llm_observe_otlp_queue_bytes",
                                 "Encoded bytes held in memory by the forwarder", d, registry=r,
                                 multiprocess_mode=LIVESUM)
        self.spool_spans = Gauge("llm_observe_otlp_spool_spans",
                                 "Spans waiting in the on-disk spool", d, registry=r,
                                 multiprocess_mode=LIVESUM)
        self.spool_bytes = Gauge("llm_observe_otlp_spool_bytes",
                                 "Bytes in the on-disk spool", d, registry=r,
                                 multiprocess_mode=LIVESUM)
        self.exported = Counter("llm_observe_otlp_exported_spans",
                                "Spans the trace backend accepted", d, registry=r)
        self.requests = Counter("llm_observe_otlp_export_requests",
                                "Forward attempts by outcome (ok, retryable, permanent, "
                                "too_large)", [*d, "outcome"], registry=r)
        self.retries = Counter("llm_observe_otlp_export_retries",
                               "Forward attempts that failed and will be retried, by code (gRPC "
                               "status name; http_<status>, timeout, connect, tls, closed)",
                               [*d, "code"], registry=r)
        self.failures = Counter("llm_observe_otlp_export_failures",
                                "Forward attempts that failed, by code (as for retries)",
                                [*d, "code"], registry=r)
        self.dropped = Counter("llm_observe_otlp_dropped_spans",
                               "Spans given up, by reason (permanent_error, rejected_by_backend, "
                               "too_large, shutdown = undelivered at exit with no spool, "
                               "spool_error, destination_full = another destination took them)",
                               [*d, "reason"], registry=r)
        self.seconds = Histogram("llm_observe_otlp_export_seconds",
                                 "Duration of one forward attempt, seconds", d,
                                 buckets=EXPORT_BUCKETS_S, registry=r)

    def bind(self, destination: str) -> DestinationMetrics:
        """The families with ``destination`` filled in (what one forwarder updates)."""
        return DestinationMetrics(self, destination)


class _Partial:
    """A labelled family with its first label (the destination) given."""

    __slots__ = ("_family", "_first")

    def __init__(self, family: Counter, first: str) -> None:
        self._family, self._first = family, first

    def labels(self, *values: str) -> Counter:
        return self._family.labels(self._first, *values)


class DestinationMetrics:
    """One destination's series: the attributes of :class:`ForwarderMetrics`, bound."""

    def __init__(self, families: ForwarderMetrics, destination: str) -> None:
        f, d = families, destination
        self.destination = destination
        self.queue_spans, self.queue_bytes = f.queue_spans.labels(d), f.queue_bytes.labels(d)
        self.spool_spans, self.spool_bytes = f.spool_spans.labels(d), f.spool_bytes.labels(d)
        self.exported, self.seconds = f.exported.labels(d), f.seconds.labels(d)
        self.requests, self.retries = _Partial(f.requests, d), _Partial(f.retries, d)
        self.failures, self.dropped = _Partial(f.failures, d), _Partial(f.dropped, d)

    def held(self, queue: Any, spool: Any) -> None:
        """Set the gauges from what the queue (``spans``, ``bytes``) and the spool (or
        None) hold now."""
        self.queue_spans.set(queue.spans)
        self.queue_bytes.set(queue.bytes)
        if spool is not None:
            self.spool_spans.set(spool.spans)
            self.spool_bytes.set(spool.bytes)


_M = TypeVar("_M")


def per_registry(families: Callable[[CollectorRegistry], _M]) -> Callable[[CollectorRegistry], _M]:
    """A getter of ``families(registry)`` made once per registry (a family can be registered
    on a registry only once; the registry, not this memo, keeps it alive)."""
    made: WeakKeyDictionary[CollectorRegistry, _M] = WeakKeyDictionary()

    def get(registry: CollectorRegistry) -> _M:
        metrics = made.get(registry)
        if metrics is None:
            metrics = made[registry] = families(registry)
        return metrics

    return get


receiver_metrics = per_registry(ReceiverMetrics)
"""The receiver's families on a registry (created once per registry)."""
forwarder_metrics = per_registry(ForwarderMetrics)
"""The forwarder's families on a registry (created once per registry)."""


class PipelineStats(Collector):
    """The pipeline's processor and exporter stats as counters, read at scrape time."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    def describe(self) -> list[Metric]:
        return []  # families are built at collect time; no name clash checks needed

    def collect(self) -> Iterator[Metric]:
        spans = CounterMetricFamily("llm_observe_processor_spans",
                                    "Spans each processor ran on", labels=["processor"])
        errors = CounterMetricFamily("llm_observe_processor_errors",
                                     "Spans a processor failed on (marked, passed on)",
                                     labels=["processor"])
        seconds = CounterMetricFamily("llm_observe_processor_seconds",
                                      "Time spent in each processor, seconds",
                                      labels=["processor"])
        for name, s in self.pipeline.chain.stats.items():
            spans.add_metric([name], s.spans)
            errors.add_metric([name], s.errors)
            seconds.add_metric([name], s.seconds)
        exported = CounterMetricFamily("llm_observe_exporter_spans",
                                       "Spans handed to each exporter", labels=["exporter"])
        refused = CounterMetricFamily("llm_observe_exporter_refusals",
                                      "Batches refused with backpressure because this exporter "
                                      "had no room", labels=["exporter"])
        for name, e in self.pipeline.exporter_stats.items():
            exported.add_metric([name], e.spans)
            refused.add_metric([name], e.refusals)
        yield from (spans, errors, seconds, exported, refused)
