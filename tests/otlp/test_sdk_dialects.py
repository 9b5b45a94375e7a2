"""The dialects of today's SDKs, with spans carrying exactly the attributes each emits.

Attribute sets are copied from each producer's source (cited per test), recorded with
the real OTel SDK and read back through the real OTLP encoding and our decoder.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.otlp.test_dialects import only_llm, walked
from tests.receiver.conftest import T0, llm_span, record_spans

# vercel/ai packages/otel/src/legacy-open-telemetry.ts, onStepStart + onStepEnd of an
# ai.streamText.doStream step span (ai 6/7: inputTokenDetails present)
VERCEL_STEP = {
    "operation.name": "ai.streamText.doStream", "ai.operationId": "ai.streamText.doStream",
    "ai.model.provider": "openai.chat", "ai.model.id": "gpt-4o",
    "ai.prompt.messages": json.dumps([{"role": "user", "content": [
        {"type": "text", "text": "Hello jane@example.com"}]}]),
    "gen_ai.system": "openai.chat", "gen_ai.request.model": "gpt-4o",
    "ai.response.finishReason": "tool-calls", "ai.response.text": "Calling the tool.",
    "ai.response.id": "chatcmpl-1", "ai.response.model": "gpt-4o-2024-08-06",
    "ai.response.msToFirstChunk": 212.6, "ai.response.msToFinish": 900.2,
    "ai.usage.inputTokens": 1200, "ai.usage.outputTokens": 80, "ai.usage.totalTokens": 1280,
    "ai.usage.reasoningTokens": 30, "ai.usage.cachedInputTokens": 1000,
    "ai.usage.inputTokenDetails.noCacheTokens": 200,
    "ai.usage.inputTokenDetails.cacheReadTokens": 1000,
    "ai.usage.outputTokenDetails.textTokens": 50,
    "ai.usage.outputTokenDetails.reasoningTokens": 30,
    "gen_ai.response.finish_reasons": ("tool-calls",), "gen_ai.response.id": "chatcmpl-1",
    "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.usage.input_tokens": 1200,
    "gen_ai.usage.output_tokens": 80,
}


def test_vercel_step_span_is_the_call_and_the_outer_span_is_not() -> None:
    def app(tracer: Any) -> None:
        from opentelemetry import trace
        outer = tracer.start_span("ai.streamText", start_time=T0, attributes={
            "operation.name": "ai.streamText", "ai.model.provider": "openai.chat",
            "ai.model.id": "gpt-4o", "ai.prompt": '{"messages":[{"role":"user"}]}',
            "ai.usage.inputTokens": 1200, "ai.usage.outputTokens": 80})
        llm_span(tracer, "ai.streamText.doStream", VERCEL_STEP,
                 context=trace.set_span_in_context(outer))
        outer.end(end_time=T0 + 2_000_000_000)

    w = walked(record_spans(app))
    assert (len(w.llm), w.n_other, w.rejected) == (1, 1, [])  # the call is counted once
    span = w.llm[0]
    assert (span.model, span.actual_model, span.provider) == (
        "gpt-4o", "gpt-4o-2024-08-06", "openai")
    assert (span.prompt_tokens, span.cache_read_tokens, span.completion_tokens) == (1200, 1000, 80)
    assert (span.reasoning_tokens, span.latency_ms_ttft, span.finish_reason) == (
        30, 213, "tool_calls")
    assert span.prompt_text == "Hello jane@example.com"
    assert span.completion_text == "Calling the tool."


def test_vercel_ai_4_keys() -> None:
    # ai 4.3 packages/ai/core/generate-text/generate-text.ts: promptTokens/completionTokens
    span = only_llm(record_spans(lambda t: llm_span(t, "ai.generateText.doGenerate", {
        "ai.model.provider": "anthropic.messages", "ai.model.id": "claude-3-5-haiku-latest",
        "gen_ai.system": "anthropic.messages", "gen_ai.request.model": "claude-3-5-haiku-latest",
        "ai.usage.promptTokens": 40, "ai.usage.completionTokens": 9,
        "ai.response.finishReason": "stop"})))
    assert (span.provider, span.prompt_tokens, span.completion_tokens) == ("anthropic", 40, 9)


def test_pydantic_ai_chat_span_and_agent_span() -> None:
    # pydantic_ai_slim/pydantic_ai/_instrumentation.py open_model_request_span and
    # response_attributes; usage.py opentelemetry_attributes (inclusive cache counts)
    def app(tracer: Any) -> None:
        llm_span(tracer, "chat gpt-4o", {
            "gen_ai.operation.name": "chat", "gen_ai.system": "openai",
            "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
            "server.address": "api.openai.com", "logfire.json_schema": "{}",
            "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                {"type": "text", "content": "What is up?"}]}]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                {"type": "text", "content": "Not much."}], "finish_reason": "stop"}]),
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be kind."}]),
            "gen_ai.usage.input_tokens": 500, "gen_ai.usage.output_tokens": 40,
            "gen_ai.usage.cache_read.input_tokens": 300,
            "gen_ai.usage.details.cache_read_tokens": 300,
            "gen_ai.usage.details.reasoning_tokens": 12,
            "gen_ai.response.model": "gpt-4o-2024-08-06", "operation.cost": 0.00123,
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.client.operation.time_to_first_chunk": 0.31})
        llm_span(tracer, "invoke_agent agent", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent",
            "model_name": "gpt-4o", "gen_ai.aggregated_usage.input_tokens": 500})

    w = walked(record_spans(app))
    assert (len(w.llm), w.n_other) == (1, 1)
    span = w.llm[0]
    assert (span.prompt_tokens, span.cache_read_tokens, span.reasoning_tokens) == (500, 300, 12)
    assert (span.reported_cost_usd_micro, span.latency_ms_ttft) == (1230, 310)
    assert span.prompt_text == "What is up?\nBe kind." and span.completion_text == "Not much."


def test_logfire_pending_spans_and_streaming_logs_are_not_calls() -> None:
    # logfire/_internal/integrations/llm_providers/openai.py common_attrs + usage.py;
    # a pending span repeats the span's attributes (logfire.span_type = pending_span),
    # the streaming log repeats the request (llm_provider.py record_streaming)
    base = {"request_data": json.dumps({"model": "gpt-4o", "messages": [
                {"role": "user", "content": "call me at jane@example.com"}]}),
            "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o", "gen_ai.operation.name": "chat"}

    def app(tracer: Any) -> None:
        llm_span(tracer, "Chat Completion with 'gpt-4o'", {
            **base, "logfire.span_type": "span", "gen_ai.response.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 21, "gen_ai.usage.output_tokens": 7,
            "operation.cost": 0.0001225,
            "response_data": json.dumps({"message": {"role": "assistant", "content": "ok"}})})
        llm_span(tracer, "Chat Completion with 'gpt-4o'", {**base,
                                                           "logfire.span_type": "pending_span"})
        llm_span(tracer, "streaming response from 'gpt-4o' took 1.00s", {
            **base, "logfire.span_type": "log", "duration": 1.0}, duration_ms=0)

    w = walked(record_spans(app))
    assert (len(w.llm), w.n_other) == (1, 2)
    span = w.llm[0]
    assert (span.prompt_tokens, span.completion_tokens, span.reported_cost_usd_micro) == (
        21, 7, 123)
    assert span.prompt_text == "call me at jane@example.com" and span.completion_text == "ok"


def _langfuse(usage: dict[str, Any], **extra: Any) -> dict[str, Any]:
    # langfuse/_client/attributes.py create_generation_attributes: JSON-serialised values
    return {"langfuse.observation.type": "generation",
            "langfuse.observation.model.name": "claude-sonnet-4-20250514",
            "langfuse.observation.usage_details": json.dumps(usage),
            "langfuse.observation.input": json.dumps([{"role": "user", "content": "hi"}]),
            "langfuse.observation.output": json.dumps({"role": "assistant", "content": "yo"}),
            "langfuse.observation.model.parameters": json.dumps({"max_tokens": 100}),
            **extra}


def test_langfuse_generation_with_cost_details_and_completion_start() -> None:
    start = json.dumps("2025-06-01T12:00:00.250000+00:00")
    t0 = 1_748_779_200_000_000_000  # 2025-06-01T12:00:00Z
    w = walked(record_spans(lambda t: (
        llm_span(t, "anthropic-call", _langfuse(
            {"input": 200, "output": 50, "cache_read_input_tokens": 1000,
             "cache_creation_input_tokens": 300, "total": 1550},
            **{"langfuse.observation.cost_details": json.dumps(
                {"input": 0.0006, "output": 0.00075, "total": 0.0021}),
               "langfuse.observation.completion_start_time": start}), start=t0),
        llm_span(t, "retrieve", {"langfuse.observation.type": "span",
                                 "langfuse.observation.input": '"query"'}, start=t0))))
    assert (len(w.llm), w.n_other, w.rejected) == (1, 1, [])
    span = w.llm[0]
    assert (span.model, span.prompt_tokens, span.completion_tokens) == (
        "claude-sonnet-4-20250514", 1500, 50)
    assert (span.cache_read_tokens, span.cache_write_tokens) == (1000, 300)
    assert (span.reported_cost_usd_micro, span.latency_ms_ttft) == (2100, 250)
    assert (span.prompt_text, span.completion_text) == ("hi", "yo")


@pytest.mark.parametrize("usage, expected", [
    # langfuse/openai.py _parse_usage: OpenAI's usage as sent, cached tokens inside
    ({"prompt_tokens": 1200, "completion_tokens": 80, "total_tokens": 1280,
      "prompt_tokens_details": {"cached_tokens": 1000, "audio_tokens": 0},
      "completion_tokens_details": {"reasoning_tokens": 30}}, (1200, 80, 1000, 0, 30)),
    ({"input_tokens": 1200, "output_tokens": 80, "input_tokens_details": {"cached_tokens": 1000},
      "output_tokens_details": {"reasoning_tokens": 30}}, (1200, 80, 1000, 0, 30)),
    # Anthropic's usage passed through: input beside the cache
    ({"input_tokens": 200, "output_tokens": 80, "cache_read_input_tokens": 1000},
     (1200, 80, 1000, 0, 0)),
    # CallbackHandler._parse_usage_model: exclusive buckets
    ({"input": 200, "input_cache_read": 1000, "output": 50, "output_reasoning": 30},
     (1200, 80, 1000, 0, 30)),
], ids=["openai-chat", "openai-responses", "anthropic", "langfuse-buckets"])
def test_langfuse_usage_shapes(usage: dict[str, Any], expected: tuple[int, ...]) -> None:
    span = only_llm(record_spans(lambda t: llm_span(t, "gen", _langfuse(usage))))
    assert (span.prompt_tokens, span.completion_tokens, span.cache_read_tokens,
            span.cache_write_tokens, span.reasoning_tokens) == expected


def test_litellm_keys_with_json_finish_reasons() -> None:
    # litellm/integrations/opentelemetry.py set_attributes: cost breakdown, the finish
    # reasons array as JSON text, usage.prompt_tokens (litellm sums Anthropic's cache in)
    span = only_llm(record_spans(lambda t: llm_span(t, "litellm_request", {
        "gen_ai.request.model": "claude-sonnet-4", "llm.request.type": "acompletion",
        "gen_ai.system": "anthropic", "gen_ai.response.model": "claude-sonnet-4-20250514",
        "gen_ai.usage.input_tokens": 1500, "gen_ai.usage.output_tokens": 50,
        "gen_ai.usage.total_tokens": 1550, "gen_ai.cost.total_cost": 0.00177,
        "gen_ai.response.finish_reasons": '["stop"]'})))
    assert (span.prompt_tokens, span.finish_reason, span.reported_cost_usd_micro) == (
        1500, "stop", 1770)


def test_genai_semconv_newest_keys() -> None:
    # semantic-conventions-genai model/gen-ai/registry.yaml (cache_read, reasoning) and
    # the cache_write rename (semantic-conventions-genai#440)
    span = only_llm(record_spans(lambda t: llm_span(t, "chat claude", {
        "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4",
        "gen_ai.usage.input_tokens": 1500, "gen_ai.usage.output_tokens": 50,
        "gen_ai.usage.cache_read.input_tokens": 1000,
        "gen_ai.usage.cache_write.input_tokens": 300,
        "gen_ai.usage.reasoning.output_tokens": 20,
        "gen_ai.system_instructions": '[{"type": "text", "content": "Be terse."}]'})))
    assert (span.prompt_tokens, span.cache_read_tokens, span.cache_write_tokens) == (
        1500, 1000, 300)
    assert span.reasoning_tokens == 20 and span.prompt_text == "Be terse."


def test_reasoning_is_never_more_than_the_completion() -> None:
    span = only_llm(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gemini-2.5-pro", "gen_ai.usage.output_tokens": 50,
        "gen_ai.usage.reasoning.output_tokens": 200})))
    assert (span.completion_tokens, span.reasoning_tokens) == (50, 50)


@pytest.mark.parametrize("key, value", [
    ("operation.cost", float("nan")), ("gen_ai.usage.cost", -1.0),
    ("gen_ai.cost.total_cost", "0.1"), ("llm.cost.total", 1e300),
    ("gen_ai.usage.reasoning.output_tokens", -3), ("ai.usage.inputTokens", "12"),
    ("ai.response.msToFirstChunk", float("inf")),
    ("langfuse.observation.usage_details", "not json"),
    ("langfuse.observation.usage_details", '{"input": -1}'),
    ("langfuse.observation.cost_details", '{"total": "cheap"}'),
    ("langfuse.observation.completion_start_time", '"yesterday"'),
])
def test_garbage_in_a_new_key_rejects_the_span_naming_the_key(key: str, value: Any) -> None:
    kind = {"langfuse.observation.type": "generation"} if key.startswith("langfuse") else {}
    w = walked(record_spans(lambda t: llm_span(t, "chat", {
        "gen_ai.request.model": "gpt-4o", **kind, key: value})))
    assert not w.llm and len(w.rejected) == 1
    assert key in str(w.rejected[0]), w.rejected
