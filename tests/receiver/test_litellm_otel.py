"""LiteLLM's own OTel callback (litellm/integrations/opentelemetry.py), the real one,
calling the fake OpenAI-compatible provider and exporting OTLP/gRPC to a live door.

Its ``litellm_request`` span is the call (tokens, cost breakdown, finish reasons as JSON
text, messages as semconv JSON); its ``raw_gen_ai_request`` child carries the provider's
raw request and response and is no second call.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.otlp_sink import OtlpSink, attributes
from tests.fakes.provider import FakeProvider
from tests.receiver.conftest import Stack

litellm = pytest.importorskip("litellm")


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def _call_through_litellm(endpoint: str, base_url: str) -> tuple[Any, Any]:
    """One completion through litellm with its OTel callback on our own TracerProvider
    (so no global provider is set for the rest of the suite), exported by the SDK's
    gRPC exporter to the door."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network
    from litellm.integrations.opentelemetry import OpenTelemetry, OpenTelemetryConfig
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(
        OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10)))
    callback = OpenTelemetry(config=OpenTelemetryConfig(exporter="console"),
                             tracer_provider=provider)
    saved = litellm.callbacks
    litellm.callbacks = [callback]
    try:  # litellm logs success on a background thread: the spans come a little later
        return provider, litellm.completion(
            model="openai/gpt-4o", api_base=base_url, api_key="k",
            messages=[{"role": "user", "content": "mail jane.doe@example.com please"}])
    finally:
        litellm.callbacks = saved


async def test_litellm_callback_spans_count_one_call(
        stack: Stack, sink: OtlpSink, fake: FakeProvider) -> None:
    provider, _ = await asyncio.to_thread(_call_through_litellm, stack.endpoint,
                                          fake.openai_base_url)
    try:
        await sink.wait_for_spans(2, timeout=30)
    finally:
        await asyncio.to_thread(provider.shutdown)
    m = stack.metrics()
    services = {dict(lb)["service_name"] for name, lb in m.samples
                if name == "llm_spans_total" and dict(lb).get("model") == "gpt-4o"}
    assert len(services) == 1, services
    labels = {"model": "gpt-4o", "provider": "openai", "service_name": services.pop()}
    assert m("llm_spans_total", **labels, status="success", has_retries="false") == 1
    assert m("llm_tokens_total", **labels, token_type="prompt") == fake.settings.prompt_tokens
    assert m("llm_finish_reason_total", **labels, finish_reason="stop") == 1
    # LiteLLM priced it too (gen_ai.cost.total_cost) with the same list price
    assert m("llm_observe_reported_cost_compared_total", provider="openai") == 1
    assert m("llm_observe_reported_cost_disagreements_total", provider="openai") == 0
    # the raw_gen_ai_request child is forwarded as the non-LLM span it is
    raw = [s for s in sink.spans() if s.name == "raw_gen_ai_request"]
    assert len(raw) == 1 and "llm.openai.messages" in attributes(raw[0])
