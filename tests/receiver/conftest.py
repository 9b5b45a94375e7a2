"""Shared set-up for the receiver tests: a fake Tempo, the real collector, SDK helpers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from llm_observe.collector.assembly import Collector, build_collector
from llm_observe.collector.exporters.otlp_forwarder import Backoff, OtlpForwarder
from llm_observe.collector.settings import Settings
from llm_observe.pipeline.selfmetrics import forwarder_metrics
from llm_observe.receiver import Receiver, start_receiver
from tests.fakes.otlp_sink import OtlpSink

MiB = 1024 * 1024
T0 = 1_750_000_000_000_000_000  # a fixed wall-clock start, ns


@dataclass
class Stack:
    registry: CollectorRegistry
    collector: Collector
    forwarder: OtlpForwarder
    receiver: Receiver

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.receiver.port}"

    def metrics(self) -> Scrape:
        """Scrape /metrics (the exposition text, parsed)."""
        return Scrape(generate_latest(self.registry).decode())


class Scrape:
    """Samples of one scrape, looked up by name and exact label set."""

    def __init__(self, text: str) -> None:
        self.samples = {(s.name, frozenset(s.labels.items())): s.value
                        for family in text_string_to_metric_families(text)
                        for s in family.samples}

    def get(self, name: str, **labels: str) -> float | None:
        return self.samples.get((name, frozenset(labels.items())))

    def __call__(self, name: str, **labels: str) -> float:
        value = self.get(name, **labels)
        assert value is not None, f"no sample {name}{labels}"
        return value

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}


def make_forwarder(endpoint: str, registry: CollectorRegistry, **kw: Any) -> OtlpForwarder:
    kw.setdefault("backoff", Backoff(initial=0.02, maximum=0.2))
    kw.setdefault("timeout_s", 5.0)
    return OtlpForwarder(endpoint, forwarder_metrics(registry), **kw)


async def make_stack(sink: OtlpSink, *, max_message_bytes: int = 4 * MiB,
                     settings: Settings | None = None, **forwarder_kw: Any) -> Stack:
    registry = CollectorRegistry()
    forwarder = make_forwarder(sink.endpoint, registry, **forwarder_kw)
    collector = build_collector(settings or Settings(embedding_enabled=False), registry,
                                exporters=[forwarder])
    await collector.pipeline.start()  # as serve does: processors warm, exporters started
    receiver = await start_receiver(collector.pipeline, registry, "127.0.0.1", 0,
                                    max_message_bytes)
    return Stack(registry, collector, forwarder, receiver)


@pytest.fixture
async def stack(sink: OtlpSink) -> AsyncIterator[Stack]:
    s = await make_stack(sink)
    yield s
    await s.receiver.stop(0)
    await s.collector.pipeline.shutdown(5)


def record_spans(build: Callable[[Tracer], None], service: str = "checkout",
                 resource: dict[str, Any] | None = None) -> Sequence[ReadableSpan]:
    """Spans made with the real OTel SDK, captured in memory."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service,
                                                       **(resource or {})}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    build(provider.get_tracer("tests.receiver"))
    provider.shutdown()
    return memory.get_finished_spans()


def export(endpoint: str, spans: Sequence[ReadableSpan], **kw: Any) -> SpanExportResult:
    """Send spans with the SDK's OTLPSpanExporter (blocking: call via asyncio.to_thread)."""
    exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10, **kw)
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


def llm_span(tracer: Tracer, name: str, attributes: dict[str, Any], *, start: int = T0,
             duration_ms: int = 1500, events: Sequence[tuple[str, int]] = (),
             error: bool = False, context: Any = None) -> Any:
    """One finished span with explicit times (ns) and events at offsets (ms)."""
    from opentelemetry.trace import SpanKind, Status, StatusCode
    span = tracer.start_span(name, context=context, kind=SpanKind.CLIENT, start_time=start,
                             attributes=attributes)
    for event_name, offset_ms in events:
        span.add_event(event_name, timestamp=start + offset_ms * 1_000_000)
    if error:
        span.set_status(Status(StatusCode.ERROR, "boom"))
    span.end(end_time=start + duration_ms * 1_000_000)
    return span
