"""Each dialect, with spans shaped exactly as that project emits them.

OpenLLMetry and OpenInference: their real OpenAI instrumentations run against the
fake provider (skipped where the package is not installed). Older OpenLLMetry,
OpenLIT and the GenAI semconv variants: attribute sets copied from each project's
code (cited per test), recorded with the real OTel SDK. All go through the real
OTLP encoding (the exporter's encode_spans) and our decoder.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import openai
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from llm_observe.otlp.walk import Walked, decode_request, walk
from llm_observe.span import LlmSpan
from tests.fakes.provider import FakeProvider
from tests.receiver.conftest import llm_span, record_spans

MESSAGES = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi there jane@example.com"}]


def walked(spans: Sequence[ReadableSpan]) -> Walked:
    """The spans as the receiver sees them: OTLP-encoded by the SDK's encoder, decoded."""
    return walk(decode_request(encode_spans(spans).SerializeToString()))


def roles_of(span: LlmSpan) -> list[tuple[str, str, int]]:
    """(text, role, message index) of each part of the prompt (issue 23)."""
    assert span.prompt_text is not None and span.text_roles is not None
    return [(span.prompt_text[start:end], role, index)
            for start, end, role, index in span.text_roles["prompt"]]


def only_llm(spans: Sequence[ReadableSpan]) -> LlmSpan:
    w = walked(spans)
    assert not w.rejected, w.rejected
    assert len(w.llm) == 1, [s.model for s in w.llm]
    return w.llm[0]


# --- real instrumentations against the fake provider -------------------------------

@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        provider.settings.model_suffix = "-2024-08-06"
        provider.settings.chunk_delay_s = 0.02
        yield provider


def run_instrumented(instrumentor: Any, fake: FakeProvider) -> list[ReadableSpan]:
    """One plain and one streamed chat call through an instrumented openai client."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    instrumentor.instrument(tracer_provider=provider)
    try:
        client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES)
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "stream please"}],
            stream=True, stream_options={"include_usage": True})
        for _ in stream:
            pass
    finally:
        instrumentor.uninstrument()
    return list(memory.get_finished_spans())


def _first_event_ms(span: ReadableSpan, names: set[str]) -> int:
    assert span.start_time is not None
    at = min(e.timestamp for e in span.events if e.name in names)
    return (at - span.start_time + 500_000) // 1_000_000


def test_openllmetry_instrumentation(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    module = pytest.importorskip("opentelemetry.instrumentation.openai")
    monkeypatch.setenv("TRACELOOP_TRACE_CONTENT", "true")
    spans = run_instrumented(module.OpenAIInstrumentor(), fake)
    plain, streamed = walked(spans).llm
    assert (plain.model, plain.actual_model, plain.provider) == (
        "gpt-4o", "gpt-4o-2024-08-06", "openai")
    assert (plain.prompt_tokens, plain.completion_tokens, plain.finish_reason) == (11, 5, "stop")
    assert plain.prompt_text == "be brief\nhi there jane@example.com"  # gen_ai.input.messages
    assert roles_of(plain) == [("be brief", "system", 0), ("hi there jane@example.com", "user", 1)]
    assert plain.completion_text == "You said: hi there jane@example.com"
    assert plain.latency_ms_ttft is None  # not streamed: no first-token time
    # streamed: one chunk event per chunk; TTFT is the first one
    assert streamed.latency_ms_ttft == _first_event_ms(
        spans[1], {"gen_ai.content.completion.chunk", "llm.content.completion.chunk"})
    assert streamed.latency_ms_ttft is not None and streamed.latency_ms_ttft >= 15
    assert streamed.completion_tokens == 4 and streamed.completion_text == "You said: stream please"


def test_openinference_instrumentation(fake: FakeProvider) -> None:
    module = pytest.importorskip("openinference.instrumentation.openai")
    spans = run_instrumented(module.OpenAIInstrumentor(), fake)
    plain, streamed = walked(spans).llm
    # llm.model_name is the answering model; the requested one is in the invocation params
    assert (plain.model, plain.actual_model, plain.provider) == (
        "gpt-4o", "gpt-4o-2024-08-06", "openai")
    assert (plain.prompt_tokens, plain.completion_tokens, plain.finish_reason) == (11, 5, "stop")
    assert plain.prompt_text == "be brief\nhi there jane@example.com"  # llm.input_messages.N
    assert roles_of(plain) == [("be brief", "system", 0), ("hi there jane@example.com", "user", 1)]
    assert plain.completion_text == "You said: hi there jane@example.com"
    assert streamed.latency_ms_ttft == _first_event_ms(spans[1], {"First Token Stream Event"})
    assert streamed.latency_ms_ttft is not None and streamed.latency_ms_ttft >= 15


# --- shapes copied from each project's code ---------------------------------------

def test_genai_semconv_current_keys() -> None:
    # semconv >= 1.37: gen_ai.provider.name, cache usage keys, time_to_first_chunk (s),
    # gen_ai.input/output.messages as JSON (docs/gen-ai/gen-ai-spans.md)
    messages = ('[{"role": "user", "parts": [{"type": "text", "content": "Hello"}]}, '
                '{"role": "user", "parts": [{"type": "image", "uri": "x"}, '
                '{"type": "text", "content": "and this"}]}]')
    span = only_llm(record_spans(lambda t: llm_span(t, "chat claude", {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4", "gen_ai.response.model": "claude-sonnet-4-0",
        "gen_ai.usage.input_tokens": 1200, "gen_ai.usage.output_tokens": 80,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_creation.input_tokens": 150,
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.response.time_to_first_chunk": 0.4,
        "gen_ai.conversation.id": "conv-7",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": '[{"role": "assistant", "parts": [{"type": "text", '
                                  '"content": "Hi!"}], "finish_reason": "stop"}]',
    }, duration_ms=2000), service="support"))
    assert (span.model, span.actual_model, span.provider, span.service_name) == (
        "claude-sonnet-4", "claude-sonnet-4-0", "anthropic", "support")
    assert (span.prompt_tokens, span.cache_read_tokens, span.cache_write_tokens) == (
        1200, 1000, 150)
    assert (span.finish_reason, span.latency_ms_ttft, span.latency_ms_total) == ("stop", 400, 2000)
    assert span.session_id == "conv-7"
    # Every text leaf is read, the image part's uri too: a URL can carry credentials or
    # an e-mail, and a text we do not scan is not forwarded raw.
    assert (span.prompt_text, span.completion_text) == ("Hello\nx\nand this", "Hi!")


def test_genai_semconv_deprecated_keys_and_content_events() -> None:
    # semconv <= 1.27: gen_ai.system, gen_ai.usage.prompt/completion_tokens, content in
    # gen_ai.content.prompt / gen_ai.content.completion events
    def app(tracer: Any) -> None:
        span = tracer.start_span("chat gpt-4o-mini", start_time=10**18, attributes={
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.prompt_tokens": 30, "gen_ai.usage.completion_tokens": 12})
        span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": "What is 2+2?"})
        span.add_event("gen_ai.content.completion", {"gen_ai.completion": "4"})
        span.end(end_time=10**18 + 300_000_000)

    span = only_llm(record_spans(app))
    assert (span.model, span.provider, span.prompt_tokens, span.completion_tokens) == (
        "gpt-4o-mini", "openai", 30, 12)
    assert (span.prompt_text, span.completion_text, span.latency_ms_total) == (
        "What is 2+2?", "4", 300)


def test_openllmetry_before_0_5_keys() -> None:
    # opentelemetry-semantic-conventions-ai <= 0.4 (MIGRATION.md): capitalised
    # gen_ai.system, prompt/completion token keys, Anthropic cache keys beside the input
    # count, llm.usage.total_tokens, indexed prompts, llm.content.completion.chunk events
    def app(tracer: Any) -> None:
        span = tracer.start_span("anthropic.chat", start_time=10**18, attributes={
            "gen_ai.system": "Anthropic", "llm.request.type": "chat",
            "gen_ai.request.model": "claude-3-5-sonnet-20241022",
            "gen_ai.usage.prompt_tokens": 20, "gen_ai.usage.cache_read_input_tokens": 900,
            "gen_ai.usage.cache_creation_input_tokens": 0, "llm.usage.total_tokens": 980,
            "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are terse.",
            "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Summarise.",
            "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Done.",
            "gen_ai.completion.0.finish_reason": "end_turn", "llm.is_streaming": True})
        for offset_ms in (180, 200, 240):
            span.add_event("llm.content.completion.chunk",
                           timestamp=10**18 + offset_ms * 1_000_000)
        span.end(end_time=10**18 + 900_000_000)

    span = only_llm(record_spans(app))
    assert (span.provider, span.model) == ("anthropic", "claude-3-5-sonnet-20241022")
    # cached tokens reported beside the input count are added to it (LlmSpan convention)
    assert (span.prompt_tokens, span.cache_read_tokens) == (920, 900)
    assert span.completion_tokens == 980 - 20  # from llm.usage.total_tokens
    assert (span.finish_reason, span.latency_ms_ttft) == ("stop", 180)
    assert span.prompt_text == "You are terse.\nSummarise." and span.completion_text == "Done."


def test_openlit_keys() -> None:
    # openlit sdk/python/src/openlit/semcov/__init__.py and its instrumentations'
    # common_chat_logic: service.name and cost on the span, TTFT in seconds, content as
    # span attributes *and* events
    def app(tracer: Any) -> None:
        span = tracer.start_span("chat gpt-4o", start_time=10**18, attributes={
            "telemetry.sdk.name": "openlit", "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.usage.input_tokens": 14,
            "gen_ai.usage.output_tokens": 9, "gen_ai.client.token.usage": 23,
            "gen_ai.usage.cost": 0.000125, "gen_ai.server.time_to_first_token": 0.212,
            "gen_ai.server.time_per_output_token": 0.01, "gen_ai.request.is_stream": True,
            "gen_ai.response.finish_reasons": ("stop",), "deployment.environment": "prod",
            "service.name": "billing-app", "gen_ai.sdk.version": "1.45.0",
            "gen_ai.prompt": "user: hello", "gen_ai.completion": "hi"})
        span.add_event("gen_ai.content.prompt", {"gen_ai.prompt": "user: hello"})
        span.add_event("gen_ai.content.completion", {"gen_ai.completion": "hi"})
        span.end(end_time=10**18 + 700_000_000)

    span = only_llm(record_spans(app, service="ignored-resource-name"))
    assert (span.service_name, span.model, span.actual_model) == (
        "billing-app", "gpt-4o", "gpt-4o-2024-08-06")
    assert (span.latency_ms_ttft, span.prompt_tokens, span.completion_tokens) == (212, 14, 9)
    assert span.cost_usd_micro is None  # their estimate is not ours; the cost stage prices
    assert (span.prompt_text, span.completion_text) == ("user: hello", "hi")


def test_llm_observe_keys() -> None:
    # our own in-process library: exact ms timings, retries, fallback chain, status
    span = only_llm(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 5, "gen_ai.usage.output_tokens": 7,
        "llm_observe.service_name": "svc", "llm_observe.endpoint": "/ask",
        "llm_observe.latency_ms_total": 1234, "llm_observe.latency_ms_ttft": 321,
        "llm_observe.retry_count": 2, "llm_observe.attempted_models": ("gpt-4o", "gpt-4o-mini"),
        "llm_observe.status": "error", "llm_observe.session_id": "s-1",
        "llm_observe.token_count_method": "exact", "llm_observe.prompt": "p",
        "llm_observe.completion": "c", "llm_observe.pii_detected": True,
    }, duration_ms=1300)))
    assert (span.service_name, span.endpoint, span.session_id) == ("svc", "/ask", "s-1")
    assert (span.latency_ms_total, span.latency_ms_ttft) == (1234, 321)
    assert (span.retry_count, span.attempted_models) == (2, ["gpt-4o", "gpt-4o-mini"])
    assert (span.status, span.token_count_method, span.pii_detected) == ("error", "exact", True)
    assert (span.prompt_text, span.completion_text) == ("p", "c")


@pytest.mark.parametrize("attrs, events", [
    ({"gen_ai.response.time_to_first_chunk": 0.25}, ()),
    ({"gen_ai.server.time_to_first_token": 0.25}, ()),
    ({"llm_observe.latency_ms_ttft": 250}, ()),
    ({}, (("First Token Stream Event", 250),)),
    ({}, (("llm.content.completion.chunk", 250), ("llm.content.completion.chunk", 300))),
    ({}, (("gen_ai.content.completion.chunk", 250),)),
], ids=["semconv", "openlit", "llm_observe", "openinference", "openllmetry", "openllmetry-0.5"])
def test_ttft_survives_every_convention(attrs: dict[str, Any],
                                        events: tuple[tuple[str, int], ...]) -> None:
    span = only_llm(record_spans(lambda t: llm_span(
        t, "chat", {"gen_ai.request.model": "m", **attrs}, events=events)))
    assert span.latency_ms_ttft == 250


@pytest.mark.parametrize("attrs", [
    {"gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o"},
    {"gen_ai.operation.name": "execute_tool", "gen_ai.request.model": "gpt-4o"},
    {"openinference.span.kind": "CHAIN", "llm.model_name": "gpt-4o"},
    {"openinference.span.kind": "EMBEDDING", "embedding.model_name": "text-embedding-3"},
    {"traceloop.span.kind": "workflow", "gen_ai.request.model": "gpt-4o"},
    {"http.request.method": "POST", "url.full": "https://api.openai.com/v1/chat/completions"},
    {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "text-embedding-3-small"},
    {"gen_ai.operation.name": "embedding", "gen_ai.request.model": "text-embedding-3-small"},
    {"llm.request.type": "embedding", "gen_ai.request.model": "text-embedding-3-small"},
], ids=["agent", "tool", "oi-chain", "oi-embedding", "traceloop-workflow", "http",
        "semconv-embeddings", "openlit-embedding", "openllmetry-embedding"])
def test_spans_that_are_not_one_llm_call_pass_through(attrs: dict[str, Any]) -> None:
    w = walked(record_spans(lambda t: llm_span(t, "op", attrs)))
    assert (len(w.llm), w.n_other, w.rejected) == (0, 1, [])


def test_openinference_llm_kind_without_model_still_counts() -> None:
    span = only_llm(record_spans(lambda t: llm_span(t, "llm", {
        "openinference.span.kind": "LLM", "llm.provider": "azure",
        "llm.token_count.prompt": 3})))
    assert (span.model, span.provider, span.prompt_tokens) == ("unknown", "azure_openai", 3)


def test_spans_without_captured_content_still_count() -> None:
    span = only_llm(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 9})))
    assert (span.prompt_text, span.completion_text, span.prompt_tokens) == (None, None, 9)


def test_a_reordered_llmspan_fails_at_import_instead_of_mixing_up_fields() -> None:
    import dataclasses

    from llm_observe.otlp import dialects
    from llm_observe.span import LlmSpan
    names = [f.name for f in dataclasses.fields(LlmSpan)]
    dialects.check_field_order(tuple(names))  # today's order passes
    names[3], names[5] = names[5], names[3]  # prompt_tokens <-> latency_ms_total
    with pytest.raises(ImportError, match="field order changed"):
        dialects.check_field_order(tuple(names))


def test_chunk_events_past_the_sdks_event_limit_give_no_ttft_rather_than_a_wrong_one() -> None:
    # The SDK keeps the newest 128 events: of 300 chunk events (first at 100 ms) the ones
    # left start at 1,820 ms. With events dropped, chunk events cannot tell the TTFT.
    chunks = [("gen_ai.content.completion.chunk", 100 + 10 * i) for i in range(300)]
    span = only_llm(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"}, events=chunks,
        duration_ms=4000)))
    assert span.latency_ms_ttft is None
    few = only_llm(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai"}, events=chunks[:50],
        duration_ms=4000)))
    assert few.latency_ms_ttft == 100


def test_a_huge_resource_is_read_but_never_kept_in_the_cache() -> None:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    from llm_observe.otlp import walk
    big = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value="svc")),
                               KeyValue(key="pad", value=AnyValue(string_value="x" * 1_000_000))])
    data = big.SerializeToString()
    assert walk.service_name(data) == "svc"
    assert data not in walk._services
    small = Resource(attributes=[KeyValue(key="service.name",
                                          value=AnyValue(string_value="svc"))]).SerializeToString()
    assert walk.service_name(small) == "svc" and small in walk._services
