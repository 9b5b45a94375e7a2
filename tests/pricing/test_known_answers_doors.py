"""The known answers of test_known_answers.py through the doors: the REST record body, OTLP
in two dialects (our keys; GenAI semconv + OpenAI's semconv service tier + OpenInference's
audio details); tests/instrument/test_pricing_details.py runs them through the patched
SDKs. Each gives the vendor's worked figure in micro-USD."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from llm_observe.otlp.walk import decode_request, walk
from llm_observe.pricing import load_price_table
from llm_observe.processors.cost import CostProcessor
from llm_observe.span import LlmSpan

COST = CostProcessor(load_price_table())

# o3 flex (openai.com/api/pricing, Flex processing: $1.00 input, $0.25 cached, $4.00 output)
# with reasoning tokens inside the output: 8,000 x 1 + 2,000 x 0.25 + 1,000 x 4 = 12,500.
O3_FLEX = 12_500
# Claude Sonnet 4.5 (platform.claude.com pricing: input $3, 5m write $3.75, 1h write $6,
# hit $0.30, output $15): 1,000 x 3 + 10,000 x 0.3 + 2,000 x 3.75 + 4,000 x 6 + 500 x 15.
CLAUDE_1H = 45_000


def _priced(span: LlmSpan) -> int | None:
    COST.process([span])
    return span.cost_usd_micro


def test_rest_record_body_carries_the_counts() -> None:
    o3 = LlmSpan.from_dict({
        "model": "o3", "provider": "openai", "prompt_tokens": 10_000,
        "completion_tokens": 1_000, "cache_read_tokens": 2_000, "reasoning_tokens": 700,
        "service_tier": "flex"})
    claude = LlmSpan.from_dict({
        "model": "claude-sonnet-4-5", "provider": "anthropic", "prompt_tokens": 17_000,
        "completion_tokens": 500, "cache_read_tokens": 10_000, "cache_write_tokens": 6_000,
        "cache_write_1h_tokens": 4_000})
    assert (_priced(o3), _priced(claude)) == (O3_FLEX, CLAUDE_1H)


def _kv(key: str, value: Any) -> KeyValue:
    v = AnyValue(string_value=value) if isinstance(value, str) else AnyValue(int_value=value)
    return KeyValue(key=key, value=v)


def _otlp(attrs: dict[str, Any]) -> LlmSpan:
    req = ExportTraceServiceRequest()
    span = req.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "chat"
    span.start_time_unix_nano, span.end_time_unix_nano = 1_000_000_000, 2_000_000_000
    span.attributes.extend(_kv(k, v) for k, v in attrs.items())
    walked = walk(decode_request(req.SerializeToString()))
    assert not walked.rejected, walked.rejection_message()
    (mapped,) = walked.llm
    return mapped


@pytest.mark.parametrize("dialect", ["ours", "semconv"])
def test_otlp_dialects_carry_the_counts(dialect: str) -> None:
    ours = dialect == "ours"
    o3 = _otlp({
        "gen_ai.request.model": "o3", "gen_ai.provider.name": "openai",
        "gen_ai.usage.input_tokens": 10_000, "gen_ai.usage.output_tokens": 1_000,
        "gen_ai.usage.cache_read.input_tokens": 2_000,
        "gen_ai.usage.reasoning.output_tokens": 700,
        ("llm_observe.service_tier" if ours else "openai.response.service_tier"): "flex"})
    claude = _otlp({
        "gen_ai.request.model": "claude-sonnet-4-5", "gen_ai.provider.name": "anthropic",
        "gen_ai.usage.input_tokens": 17_000, "gen_ai.usage.output_tokens": 500,
        "gen_ai.usage.cache_read.input_tokens": 10_000,
        "gen_ai.usage.cache_creation.input_tokens": 6_000,
        "llm_observe.cache_write_1h_tokens": 4_000})
    assert (o3.service_tier, o3.reasoning_tokens, claude.cache_write_1h_tokens) == (
        "flex", 700, 4_000)
    assert (_priced(o3), _priced(claude)) == (O3_FLEX, CLAUDE_1H)
    audio = _otlp({  # OpenInference's audio detail: gpt-4o-audio-preview's audio input
        "llm.model_name": "gpt-4o-audio-preview", "llm.provider": "openai",
        "openinference.span.kind": "LLM", "llm.token_count.prompt": 1_000,
        "llm.token_count.completion": 0, "llm.token_count.prompt_details.audio": 1_000})
    assert audio.audio_input_tokens == 1_000
    priced = _priced(audio)
    text_only = _priced(_otlp({
        "llm.model_name": "gpt-4o-audio-preview", "llm.provider": "openai",
        "openinference.span.kind": "LLM", "llm.token_count.prompt": 1_000,
        "llm.token_count.completion": 0}))
    assert priced is not None and text_only is not None and priced > text_only
