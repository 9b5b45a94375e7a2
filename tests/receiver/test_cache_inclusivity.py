"""One Anthropic call with cached input, as every dialect reports it, through the live
door: no dialect double counts or under counts the prompt, so tokens and cost agree.

The call: 200 uncached input tokens, 1,000 read from the cache, 300 written to it, 50
output tokens (Anthropic's usage: input_tokens=200, cache_read_input_tokens=1000,
cache_creation_input_tokens=300). Each dialect's spans are shaped as its producer
writes them (sources in docs/attribute-mapping.md), exported over OTLP/gRPC by the
real SDK exporter to a real receiver; /metrics is read per service.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from opentelemetry.sdk.trace.export import SpanExportResult

from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import Stack, export, llm_span, record_spans

MODEL, INPUT, READ, WRITE, OUTPUT = "claude-sonnet-4", 200, 1000, 300, 50
WHOLE = INPUT + READ + WRITE
SEMCONV = {"gen_ai.provider.name": "anthropic", "gen_ai.request.model": MODEL,
           "gen_ai.usage.output_tokens": OUTPUT}
ANTHROPIC_RAW = {"input_tokens": INPUT, "output_tokens": OUTPUT,
                 "cache_read_input_tokens": READ, "cache_creation_input_tokens": WRITE}

DIALECTS: dict[str, dict[str, Any]] = {
    # semconv registry: input_tokens includes the cache; both cache-write spellings
    "semconv": {**SEMCONV, "gen_ai.usage.input_tokens": WHOLE,
                "gen_ai.usage.cache_read.input_tokens": READ,
                "gen_ai.usage.cache_creation.input_tokens": WRITE},
    "semconv-cache-write": {**SEMCONV, "gen_ai.usage.input_tokens": WHOLE,
                            "gen_ai.usage.cache_read.input_tokens": READ,
                            "gen_ai.usage.cache_write.input_tokens": WRITE},
    # OpenLLMetry <= 0.4: Anthropic's input beside its cache keys
    "openllmetry-0.4": {"gen_ai.system": "Anthropic", "gen_ai.request.model": MODEL,
                        "gen_ai.usage.prompt_tokens": INPUT,
                        "gen_ai.usage.completion_tokens": OUTPUT,
                        "gen_ai.usage.cache_read_input_tokens": READ,
                        "gen_ai.usage.cache_creation_input_tokens": WRITE},
    # OpenInference: prompt_details are parts of llm.token_count.prompt
    "openinference": {"openinference.span.kind": "LLM", "llm.provider": "anthropic",
                      "llm.model_name": MODEL, "llm.token_count.prompt": WHOLE,
                      "llm.token_count.completion": OUTPUT,
                      "llm.token_count.prompt_details.cache_read": READ,
                      "llm.token_count.prompt_details.cache_write": WRITE},
    # Vercel AI SDK >= 6: inputTokens is the total, the details split it
    "vercel-6": {"gen_ai.system": "anthropic.messages", "gen_ai.request.model": MODEL,
                 "gen_ai.usage.input_tokens": WHOLE, "gen_ai.usage.output_tokens": OUTPUT,
                 "ai.usage.inputTokens": WHOLE, "ai.usage.outputTokens": OUTPUT,
                 "ai.usage.cachedInputTokens": READ,
                 "ai.usage.inputTokenDetails.noCacheTokens": INPUT,
                 "ai.usage.inputTokenDetails.cacheReadTokens": READ,
                 "ai.usage.inputTokenDetails.cacheWriteTokens": WRITE},
    # Vercel AI SDK 5: Anthropic's input_tokens, its raw usage in the provider metadata
    "vercel-5": {"gen_ai.system": "anthropic.messages", "gen_ai.request.model": MODEL,
                 "gen_ai.usage.input_tokens": INPUT, "gen_ai.usage.output_tokens": OUTPUT,
                 "ai.usage.inputTokens": INPUT, "ai.usage.outputTokens": OUTPUT,
                 "ai.usage.cachedInputTokens": READ,
                 "ai.response.providerMetadata": json.dumps({"anthropic": {
                     "usage": ANTHROPIC_RAW, "cacheCreationInputTokens": WRITE}})},
    # Pydantic AI / Logfire: inclusive (usage.py), their own cost beside
    "pydantic-ai": {**SEMCONV, "gen_ai.operation.name": "chat",
                    "gen_ai.usage.input_tokens": WHOLE,
                    "gen_ai.usage.cache_read.input_tokens": READ,
                    "gen_ai.usage.cache_creation.input_tokens": WRITE,
                    "operation.cost": 0.002775},
    # LiteLLM default mode: prompt_tokens include the cache; counts in the usage object
    "litellm": {"gen_ai.system": "anthropic", "gen_ai.request.model": MODEL,
                "llm.request.type": "acompletion", "gen_ai.usage.input_tokens": WHOLE,
                "gen_ai.usage.output_tokens": OUTPUT, "gen_ai.usage.total_tokens": WHOLE + OUTPUT,
                "metadata.usage_object": str({
                    "completion_tokens": OUTPUT, "prompt_tokens": WHOLE,
                    "total_tokens": WHOLE + OUTPUT, "cache_creation_input_tokens": WRITE,
                    "cache_read_input_tokens": READ, "prompt_tokens_details": {
                        "cached_tokens": READ, "cache_creation_tokens": WRITE}})},
    # Langfuse: Anthropic's usage passed through, and Langfuse's own buckets
    "langfuse-anthropic": {"langfuse.observation.type": "generation",
                           "langfuse.observation.model.name": MODEL,
                           "langfuse.observation.usage_details": json.dumps(ANTHROPIC_RAW),
                           "gen_ai.system": "anthropic",
                           "langfuse.observation.cost_details": json.dumps({"total": 0.0051})},
    "langfuse-buckets": {"langfuse.observation.type": "generation",
                         "langfuse.observation.model.name": MODEL, "gen_ai.system": "anthropic",
                         "langfuse.observation.usage_details": json.dumps({
                             "input": INPUT, "input_cache_read": READ,
                             "input_cache_creation": WRITE, "output": OUTPUT})},
}


async def test_every_dialect_counts_cached_input_once(stack: Stack, sink: OtlpSink) -> None:
    spans = [span for name, attrs in DIALECTS.items()
             for span in record_spans(lambda t, a=attrs: llm_span(t, "call", a), service=name)]
    assert await asyncio.to_thread(export, stack.endpoint, spans) == SpanExportResult.SUCCESS
    await sink.wait_for_spans(len(DIALECTS))
    m = stack.metrics()
    price = stack.collector.price_table.lookup(MODEL, "anthropic")
    cost = price.cost_usd_micro(WHOLE, OUTPUT, READ, WRITE)
    assert cost == 2775  # 200 x $3 + 1000 x $0.30 + 300 x $3.75 + 50 x $15, per 1M
    for name in DIALECTS:
        labels = {"model": MODEL, "provider": "anthropic", "service_name": name}
        got = (m.get("llm_tokens_total", **labels, token_type="prompt"),
               m.get("llm_cost_usd_micro_total", **labels))
        assert got == (WHOLE, cost), f"{name}: prompt tokens, cost = {got}"

    # the producers that priced the call themselves: Pydantic AI agrees, Langfuse's
    # 0.0051 is off by 84% (it priced the cached tokens at the input price)
    assert m("llm_observe_reported_cost_compared_total", provider="anthropic") == 2
    assert m("llm_observe_reported_cost_disagreements_total", provider="anthropic") == 1
