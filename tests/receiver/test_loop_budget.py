"""No OTLP request holds the collector's event loop: a 15 MiB prompt, a 20,000-span request.

The receiver runs on this test's event loop, so a 10 ms timer ticking here while a request
is handled shows how long the collector stopped serving the API, /metrics and every other
sender — measured as the loop thread's CPU per tick (tests/loopwatch.py), which a busy
machine does not inflate.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.fakes.otlp_sink import OtlpSink
from tests.loopwatch import worst_hold
from tests.receiver.conftest import T0, MiB, make_stack

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def request(n: int, attributes: dict[str, str | int]) -> bytes:
    out = ExportTraceServiceRequest()
    scope = out.resource_spans.add().scope_spans.add()
    kvs = [KeyValue(key=k, value=AnyValue(string_value=v) if isinstance(v, str)
                    else AnyValue(int_value=v)) for k, v in attributes.items()]
    for _ in range(n):
        scope.spans.append(Span(trace_id=os.urandom(16), span_id=os.urandom(8), name="chat",
                                start_time_unix_nano=T0, end_time_unix_nano=T0 + 10**9,
                                attributes=kvs))
    return out.SerializeToString()


def _send(port: int, data: bytes) -> bytes:
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.max_send_message_length", 64 * MiB)]) as channel:
        answer: bytes = channel.unary_unary(EXPORT)(data, timeout=60)
        return answer


def send(port: int, data: bytes) -> Awaitable[bytes]:
    """Export from another thread, as a sender in another process would: the sender's own
    work must not be counted against the collector's loop."""
    return asyncio.to_thread(_send, port, data)


async def test_a_15_mib_prompt_is_counted_on_a_bounded_prefix_without_freezing_the_loop(
        sink: OtlpSink) -> None:
    stack = await make_stack(sink, max_message_bytes=32 * MiB)
    try:
        prompt = "lorem ipsum dolor sit amet " * (15 * MiB // 27)
        data = request(1, {"gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai",
                           "llm_observe.prompt": prompt})
        holds, _ = await worst_hold(send(stack.receiver.port, data))
        scrape = stack.metrics()
        # 1.8.2 held the loop ~11 s here (every character token-counted on the loop)
        holds.check(0.1)
        tokens = scrape("llm_tokens_total", model="gpt-4o", provider="openai",
                        service_name="checkout", token_type="prompt") \
            if scrape.get("llm_tokens_total", model="gpt-4o", provider="openai",
                          service_name="checkout", token_type="prompt") is not None \
            else scrape("llm_tokens_total", model="gpt-4o", provider="openai",
                        service_name="default", token_type="prompt")
        assert 0.5 * len(prompt) / 4 < tokens < 2 * len(prompt) / 4  # extrapolated, sane
        await sink.wait_for_spans(1)
        [forwarded] = sink.spans()
        notes = [kv for kv in forwarded.attributes if kv.key == "llm_observe.processing_notes"]
        assert notes and "counted 100000 of" in str(notes[0].value)
        assert [kv.value.string_value for kv in forwarded.attributes
                if kv.key == "llm_observe.token_count_method"] == ["heuristic"]
    finally:
        await stack.receiver.stop(0)
        await stack.collector.pipeline.shutdown(5)


async def test_a_20000_span_request_is_walked_and_enriched_off_the_loop(
        sink: OtlpSink) -> None:
    stack = await make_stack(sink, max_message_bytes=32 * MiB)
    try:
        data = request(20_000, {"gen_ai.request.model": "gpt-4o", "gen_ai.system": "openai",
                                "gen_ai.usage.input_tokens": 10,
                                "gen_ai.usage.output_tokens": 5})
        holds, _ = await worst_hold(send(stack.receiver.port, data))
        holds.check(0.1)
        assert stack.metrics()("llm_spans_total", model="gpt-4o", provider="openai",
                               service_name="default", status="success",
                               has_retries="false") == 20_000
    finally:
        await stack.receiver.stop(0)
        await stack.collector.pipeline.shutdown(5)
