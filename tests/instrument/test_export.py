"""CountingBatchSpanProcessor and the two ways a finished span reaches the SDK."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import openai
import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llm_observe import instrument, semconv
from llm_observe.instrument import fastspan
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans


class GatedExporter(SpanExporter):
    """Blocks in export until released; remembers every span it got."""

    def __init__(self) -> None:
        self.got: list[ReadableSpan] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.shut = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.entered.set()
        self.release.wait(10)
        self.got.extend(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.shut = True


def test_full_queue_drops_are_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    exporter = GatedExporter()
    processor = instrument.CountingBatchSpanProcessor(exporter, max_queue_size=10,
                                                      schedule_delay_s=60)
    tracer = TracerProvider()
    tracer.add_span_processor(processor)
    spans = tracer.get_tracer("test")
    with caplog.at_level(logging.WARNING, logger="llm_observe.instrument.export"):
        for _ in range(10):
            spans.start_span("s").end()
        assert exporter.entered.wait(5)  # the worker took the first batch and is stuck
        for _ in range(15):
            spans.start_span("s").end()
        assert processor.dropped == 5  # 10 exporting, 10 queued, 5 had no room
        # The first drop is logged at once; the rest are rate-limited into a summary.
        assert "dropped 1 spans (total 1)" in caplog.text
        exporter.release.set()
        assert processor.force_flush()
        assert len(exporter.got) == 20 and processor.exported == 20
        processor.shutdown()
        assert "dropped 4 spans (total 5)" in caplog.text
    assert exporter.shut
    spans.start_span("late").end()
    assert processor.dropped == 6  # after shutdown nothing is accepted, and it is counted


def test_queue_size_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "123")
    processor = instrument.CountingBatchSpanProcessor(InMemorySpanExporter())
    assert processor.max_queue_size == 123
    processor.shutdown()
    monkeypatch.delenv("OTEL_BSP_MAX_QUEUE_SIZE")
    default = instrument.CountingBatchSpanProcessor(InMemorySpanExporter())
    assert default.max_queue_size == 32_768  # 16x the SDK's 2,048: sized for bursts
    default.shutdown()


class OnStartProcessor(SpanProcessor):
    """A processor that enriches spans in on_start: forces the normal API path."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        span.set_attribute("enriched", True)


def test_fast_path_and_api_path_give_the_same_span(
        spans: Spans, fake: FakeProvider,
        test_provider: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    messages = [{"role": "user", "content": "same"}]
    memory = InMemorySpanExporter()
    enriching = TracerProvider()
    enriching.add_span_processor(OnStartProcessor())
    enriching.add_span_processor(SimpleSpanProcessor(memory))
    instrument.init_auto_instrumentation()
    try:
        with instrument.llm_span("outer", "openai"):
            client.chat.completions.create(model="gpt-4o", messages=messages)  # fast path
        instrument.use_tracer_provider(enriching)
        with instrument.llm_span("outer", "openai"):
            client.chat.completions.create(model="gpt-4o", messages=messages)  # API path
    finally:
        instrument.uninstrument_all()
        instrument.use_tracer_provider(test_provider[0])
    fast = next(s for s in spans.all() if s.name == "chat gpt-4o")
    slow = next(s for s in memory.get_finished_spans() if s.name == "chat gpt-4o")
    assert slow.attributes is not None and slow.attributes["enriched"] is True
    skip = {"enriched", semconv.LATENCY_MS_TOTAL}
    assert {k: v for k, v in (fast.attributes or {}).items() if k not in skip} == \
        {k: v for k, v in slow.attributes.items() if k not in skip}
    for span, exporter in ((fast, spans.exporter), (slow, memory)):
        outer = next(s for s in exporter.get_finished_spans() if s.name == "chat outer")
        assert span.parent is not None and span.parent.span_id == outer.context.span_id
        assert span.context.trace_id == outer.context.trace_id
        assert span.kind.name == "CLIENT" and span.start_time < span.end_time  # type: ignore[operator]
        assert span.instrumentation_scope is not None
        assert span.instrumentation_scope.name == semconv.INSTRUMENTATION_SCOPE


def test_fast_path_respects_the_sampler(spans: Spans) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    memory = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrument.use_tracer_provider(provider)
    try:
        with instrument.llm_streaming_span("gpt-4o", "openai") as span:
            list(span.wrap(["a", "b"]))
        stream = instrument.llm_streaming_span("gpt-4o", "openai").wrap(iter(["c"]))
        list(stream)
    finally:
        instrument.use_tracer_provider(None)
    assert memory.get_finished_spans() == ()
    assert spans.all() == []


def test_fast_path_eligibility() -> None:
    plain = TracerProvider()
    plain.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    assert fastspan._eligible(plain.get_tracer("x"))
    plain.add_span_processor(OnStartProcessor())
    assert not fastspan._eligible(plain.get_tracer("y"))
