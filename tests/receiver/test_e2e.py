"""End to end: the real OTel SDK exports GenAI spans to the receiver; /metrics shows
every series with the right labels; the fake Tempo gets the spans, enriched."""

from __future__ import annotations

import asyncio

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Tracer

from tests.fakes.otlp_sink import OtlpSink, attributes
from tests.receiver.conftest import T0, Stack, export, llm_span, record_spans

CHAT = {
    "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
    "gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 50,
    "gen_ai.response.finish_reasons": ("stop",),
    "gen_ai.response.time_to_first_chunk": 0.25,
}
BASE = {"model": "gpt-4o", "provider": "openai", "service_name": "checkout"}


def _app(tracer: Tracer) -> None:
    """What a user's app emits: chat calls, a tool-call chain, an error, a retried call,
    a call whose prompt holds an email address, and plain HTTP spans around them."""
    with tracer.start_as_current_span("GET /checkout"):
        llm_span(tracer, "chat gpt-4o", CHAT, duration_ms=1500)
        llm_span(tracer, "chat gpt-4o", {**CHAT, "gen_ai.response.finish_reasons": ("tool_calls",),
                                         "gen_ai.usage.input_tokens": 200}, duration_ms=800)
        llm_span(tracer, "chat gpt-4o", {**CHAT, "gen_ai.usage.input_tokens": 300},
                 start=T0 + 2_000_000_000, duration_ms=600)
        failed = {k: v for k, v in CHAT.items() if "time_to_first" not in k}
        llm_span(tracer, "chat gpt-4o", {**failed, "error.type": "RateLimitError",
                                         "gen_ai.usage.input_tokens": 0,
                                         "gen_ai.usage.output_tokens": 0,
                                         "gen_ai.response.finish_reasons": ()},
                 duration_ms=40, error=True)
        llm_span(tracer, "chat gpt-4o", {**CHAT, "llm_observe.retry_count": 2}, duration_ms=3000)
        llm_span(tracer, "chat gpt-4o", {
            **CHAT, "llm_observe.prompt": "Please email the invoice to jane.doe@example.com",
            "llm_observe.completion": "Sure, I will send it."}, duration_ms=900)
        span = tracer.start_span("SELECT orders", attributes={"db.system": "postgresql"})
        span.end()


async def test_sdk_spans_become_every_series_and_reach_tempo_enriched(
        stack: Stack, sink: OtlpSink) -> None:
    spans = record_spans(_app)
    assert len(spans) == 8
    result = await asyncio.to_thread(export, stack.endpoint, spans)
    assert result == SpanExportResult.SUCCESS
    await sink.wait_for_spans(8 + 1)  # + the tool-call transition span

    m = stack.metrics()
    price = stack.collector.price_table.lookup("gpt-4o-2024-08-06", "openai")
    costs = [price.cost_usd_micro(p, 50, 0, 0) for p in (100, 200, 300, 100, 100)]
    assert m("llm_spans_total", **BASE, status="success", has_retries="false") == 4
    assert m("llm_spans_total", **BASE, status="error", has_retries="false") == 1
    assert m("llm_spans_total", **BASE, status="success", has_retries="true") == 1
    assert m("llm_tokens_total", **BASE, token_type="prompt") == 800
    assert m("llm_tokens_total", **BASE, token_type="completion") == 250
    assert m("llm_cost_usd_micro_total", **BASE) == sum(costs) > 0
    assert m("llm_latency_ms_total_count", **BASE) == 6
    assert m("llm_latency_ms_total_sum", **BASE) == 1500 + 800 + 600 + 40 + 3000 + 900
    assert m("llm_latency_ms_total_bucket", **BASE, le="1000.0") == 4
    assert m("llm_latency_ms_ttft_count", **BASE) == 5  # the failed call streamed nothing
    assert m("llm_latency_ms_ttft_sum", **BASE) == 5 * 250
    assert m("llm_latency_ms_ttft_bucket", **BASE, le="200.0") == 0
    assert m("llm_latency_ms_ttft_bucket", **BASE, le="300.0") == 5
    assert m("llm_finish_reason_total", **BASE, finish_reason="stop") == 4
    assert m("llm_finish_reason_total", **BASE, finish_reason="tool_calls") == 1
    assert m("llm_pii_detected_total", service_name="checkout") == 1
    assert not m.get("llm_injection_attempts_total", service_name="checkout")
    # every LLM series carries exactly the spec's labels, and no other service or model
    # appeared: the HTTP and DB spans touch only the receiver's own counters
    llm = [(n, dict(lb)) for n, lb in m.samples if n.startswith("llm_") and
           not n.startswith("llm_observe") and "model" in dict(lb)]
    assert {(d["model"], d["provider"], d["service_name"]) for _, d in llm} == {
        ("gpt-4o", "openai", "checkout")}
    assert m("llm_observe_receiver_spans_accepted_total", kind="llm") == 6
    assert m("llm_observe_receiver_spans_accepted_total", kind="other") == 2
    assert m("llm_observe_receiver_requests_total", outcome="ok") == 1
    await asyncio.sleep(0.05)  # the exported counter moves after the sink answers
    assert stack.metrics()("llm_observe_otlp_exported_spans_total", destination="tempo") == 9

    forwarded = {s.span_id: s for s in sink.spans()}
    chat = forwarded[spans[0].context.span_id.to_bytes(8, "big")]
    a = attributes(chat)
    assert a["llm_observe.cost_usd_micro"] == costs[0]
    assert a["llm_observe.price_version"] == price.version
    assert a["llm_observe.pii_detected"] is False and a["llm_observe.injection_attempt"] is False
    assert isinstance(a["llm_observe.is_sampled"], bool)
    assert a["gen_ai.usage.input_tokens"] == 100  # the sender's attributes are all kept
    assert chat.name == "chat gpt-4o" and chat.kind == trace.SpanKind.CLIENT.value + 1
    # the PII span goes on with the address redacted, the rest of the text intact
    pii = attributes(forwarded[spans[5].context.span_id.to_bytes(8, "big")])
    assert pii["llm_observe.prompt"] == "Please email the invoice to [REDACTED:EMAIL]"
    assert pii["llm_observe.completion"] == "Sure, I will send it."
    assert pii["llm_observe.pii_detected"] is True
    # the DB span is forwarded untouched
    db = forwarded[spans[6].context.span_id.to_bytes(8, "big")]
    assert attributes(db) == {"db.system": "postgresql"}
    # the tool-call span has a transition child carrying the chain's cost so far
    tool = spans[1].context.span_id.to_bytes(8, "big")
    transition = [s for s in forwarded.values() if s.parent_span_id == tool]
    assert len(transition) == 1
    t = attributes(transition[0])
    assert t["llm_observe.tool_call_transition"] is True
    assert t["llm_observe.trace_cost_usd_micro"] == costs[1]
    assert transition[0].name == "tool calls (turn 1)"
    # the next LLM span of that trace carries the cumulative cost
    after = attributes(forwarded[spans[2].context.span_id.to_bytes(8, "big")])
    assert after["llm_observe.trace_cost_usd_micro"] == costs[1] + costs[2]


async def test_gzip_requests_are_accepted(stack: Stack, sink: OtlpSink) -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", CHAT))
    result = await asyncio.to_thread(export, stack.endpoint, spans, compression=Compression.Gzip)
    assert result == SpanExportResult.SUCCESS
    await sink.wait_for_spans(1)
    assert stack.metrics()("llm_spans_total", **BASE, status="success", has_retries="false") == 1


async def test_the_thread_pool_flavour_serves_the_same(sink: OtlpSink) -> None:
    from llm_observe.receiver import start_receiver
    from tests.receiver.conftest import make_stack
    stack = await make_stack(sink)
    await stack.receiver.stop(0)  # swap the aio server for a thread-pool one
    stack.receiver = await start_receiver(stack.collector.pipeline, stack.registry,
                                          "127.0.0.1", 0, 4 * 1024 * 1024, flavour="threads")
    try:
        spans = record_spans(lambda t: llm_span(t, "chat", CHAT))
        assert await asyncio.to_thread(export, stack.endpoint, spans) == SpanExportResult.SUCCESS
        await sink.wait_for_spans(1)
        assert stack.metrics()("llm_spans_total", **BASE, status="success",
                               has_retries="false") == 1
    finally:
        await stack.receiver.stop(0)
        await stack.collector.pipeline.shutdown(5)
