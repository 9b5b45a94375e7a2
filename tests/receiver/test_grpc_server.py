"""The receiver over the wire: bad input, size limits, partial success, backpressure."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.sdk.trace.export import SpanExportResult

from llm_observe.receiver import start_receiver
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import T0, MiB, Stack, export, llm_span, make_stack, record_spans

PATH = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
GOOD = {"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 5}


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def request(*spans: dict[str, Any], service: str = "svc") -> ExportTraceServiceRequest:
    """A request with one span per attribute dict (ids 1, 2, 3 ...; 2 s each)."""
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    rs.resource.attributes.append(KeyValue(key="service.name", value=any_value(service)))
    ss = rs.scope_spans.add()
    for i, attrs in enumerate(spans, 1):
        span = ss.spans.add(trace_id=bytes(15) + b"\x01", span_id=i.to_bytes(8, "big"),
                            name=f"span-{i}", start_time_unix_nano=T0,
                            end_time_unix_nano=T0 + 2_000_000_000)
        for key, value in attrs.items():
            span.attributes.append(KeyValue(key=key, value=any_value(value)))
    return req


async def call(endpoint: str, data: bytes, **kw: Any) -> tuple[grpc.StatusCode, str, Any, bytes]:
    """One raw Export call: (code, details, trailing metadata, response bytes)."""
    options = [("grpc.max_send_message_length", 128 * MiB)]
    async with grpc.aio.insecure_channel(endpoint, options=options) as channel:
        rpc = channel.unary_unary(PATH)
        try:
            response = await rpc(data, timeout=20, **kw)
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details() or "", error.trailing_metadata(), b""
    return grpc.StatusCode.OK, "", (), response


async def still_serving(stack: Stack, expected_spans: float) -> None:
    code, _, _, _ = await call(stack.endpoint, request(GOOD).SerializeToString())
    assert code == grpc.StatusCode.OK
    m = stack.metrics()
    assert m("llm_spans_total", model="gpt-4o", provider="openai", service_name="svc",
             status="success", has_retries="false") == expected_spans


async def test_garbage_and_truncated_requests_are_invalid_argument(stack: Stack) -> None:
    good = request(GOOD, GOOD).SerializeToString()
    for data in (b"\xff\xfe this is not protobuf \x00\x01", good[: len(good) // 2]):
        code, details, _, _ = await call(stack.endpoint, data)
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid OTLP ExportTraceServiceRequest" in details
    m = stack.metrics()
    assert m("llm_observe_receiver_requests_total", outcome="invalid") == 2
    assert m.get("llm_observe_receiver_spans_received_total", kind="llm") in (None, 0)
    await still_serving(stack, 1)


async def test_a_request_past_the_span_cap_is_invalid_argument_and_never_counted(
        sink: OtlpSink) -> None:
    # Mapping and enriching hundreds of thousands of spans would hold the event loop
    # (and with it the API and /metrics) for seconds: such a request is refused whole.
    stack = await make_stack(sink)
    await stack.receiver.stop(0)
    stack.receiver = await start_receiver(stack.collector.pipeline, stack.registry,
                                          "127.0.0.1", 0, 4 * MiB, max_spans=100)
    try:
        code, details, _, _ = await call(stack.endpoint,
                                         request(*[GOOD] * 101).SerializeToString())
        assert code == grpc.StatusCode.INVALID_ARGUMENT
        assert "101 spans" in details and "at most 100" in details
        assert stack.metrics().get("llm_spans_total", model="gpt-4o", provider="openai",
                                   service_name="svc", status="success",
                                   has_retries="false") in (None, 0)
        code, _, _, _ = await call(stack.endpoint, request(*[GOOD] * 100).SerializeToString())
        assert code == grpc.StatusCode.OK
    finally:
        await stack.receiver.stop(0)
        await stack.collector.pipeline.shutdown(5)


@pytest.mark.parametrize("bad, key", [
    ({"gen_ai.usage.input_tokens": "12"}, "gen_ai.usage.input_tokens"),
    ({"gen_ai.usage.output_tokens": -5}, "gen_ai.usage.output_tokens"),
    ({"gen_ai.usage.input_tokens": 1e30}, "gen_ai.usage.input_tokens"),
    ({"gen_ai.response.time_to_first_chunk": math.nan}, "gen_ai.response.time_to_first_chunk"),
    ({"gen_ai.request.model": 42}, "gen_ai.request.model"),
    ({"llm_observe.retry_count": True}, "llm_observe.retry_count"),
    ({"llm_observe.pii_detected": "yes"}, "llm_observe.pii_detected"),
], ids=["tokens-as-string", "negative", "1e30", "nan-ttft", "model-int", "bool-retries",
        "flag-string"])
async def test_absurd_values_are_rejected_by_name_and_never_counted(
        stack: Stack, sink: OtlpSink, bad: dict[str, Any], key: str) -> None:
    data = request(GOOD, {**GOOD, **bad}, {"http.route": "/x"}).SerializeToString()
    code, _, _, response = await call(stack.endpoint, data)
    assert code == grpc.StatusCode.OK
    partial = ExportTraceServiceResponse.FromString(response).partial_success
    assert partial.rejected_spans == 1
    assert "span 0000000000000002 ('span-2')" in partial.error_message
    assert key in partial.error_message
    m = stack.metrics()
    assert m("llm_tokens_total", model="gpt-4o", provider="openai", service_name="svc",
             token_type="prompt") == 10  # only the good neighbour
    assert m("llm_observe_receiver_spans_refused_total", reason="invalid") == 1
    assert m("llm_observe_receiver_requests_total", outcome="partial") == 1
    await sink.wait_for_spans(2)  # the good LLM span and the HTTP span went on
    assert sorted(s.name for s in sink.spans()) == ["span-1", "span-3"]


async def test_end_before_start_is_rejected(stack: Stack) -> None:
    req = request(GOOD)
    span = req.resource_spans[0].scope_spans[0].spans[0]
    span.end_time_unix_nano = span.start_time_unix_nano - 1
    _, _, _, response = await call(stack.endpoint, req.SerializeToString())
    partial = ExportTraceServiceResponse.FromString(response).partial_success
    assert partial.rejected_spans == 1 and "end_time_unix_nano" in partial.error_message


async def test_100k_attributes_are_served(stack: Stack, sink: OtlpSink) -> None:
    req = request(GOOD)
    span = req.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.extend(KeyValue(key=f"junk.{i}", value=AnyValue(int_value=i))
                           for i in range(100_000))
    code, _, _, response = await call(stack.endpoint, req.SerializeToString())
    assert (code, response) == (grpc.StatusCode.OK, b"")
    await sink.wait_for_spans(1)
    assert len(sink.spans()[0].attributes) > 100_000  # forwarded whole, enriched
    await still_serving(stack, 2)


async def test_oversized_requests_get_resource_exhausted(stack: Stack) -> None:
    huge = request({**GOOD, "llm_observe.prompt": "a" * (64 * MiB)}).SerializeToString()
    code, _, _, _ = await call(stack.endpoint, huge)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    # compressed it is tiny on the wire: the limit applies to the decompressed size
    code, _, _, _ = await call(stack.endpoint, huge, compression=grpc.Compression.Gzip)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    await still_serving(stack, 1)


@pytest.fixture
async def small_queue(sink: OtlpSink) -> AsyncIterator[Stack]:
    """A stack whose forwarder holds 10 spans, with Tempo down."""
    await sink.stop()
    s = await make_stack(sink, max_spans=10)
    yield s
    await s.receiver.stop(0)
    await s.collector.pipeline.shutdown(5)


def _retry_delay(trailers: Any) -> tuple[float, float]:
    meta = dict(trailers)
    status = status_pb2.Status.FromString(meta["grpc-status-details-bin"])
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info)
    bare = error_details_pb2.RetryInfo.FromString(meta["google.rpc.retryinfo-bin"])
    return info.retry_delay.seconds, bare.retry_delay.seconds


async def test_full_queue_answers_resource_exhausted_with_retry_info(
        small_queue: Stack, sink: OtlpSink) -> None:
    stack = small_queue
    ten = request(*[GOOD] * 10).SerializeToString()
    assert (await call(stack.endpoint, ten))[0] == grpc.StatusCode.OK
    code, details, trailers, _ = await call(stack.endpoint, ten)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "queue is full" in details
    assert _retry_delay(trailers) == (1, 1)
    m = stack.metrics()
    assert m("llm_observe_receiver_spans_refused_total", reason="backpressure") == 10
    assert m("llm_observe_otlp_queue_spans", destination="tempo") == 10
    labels = {"model": "gpt-4o", "provider": "openai", "service_name": "svc",
              "status": "success", "has_retries": "false"}
    assert m("llm_spans_total", **labels) == 10  # the refused request counted nothing
    await sink.start()  # Tempo is back: the queue drains and the retry is taken
    await sink.wait_for_spans(10)
    for _ in range(100):
        if (await call(stack.endpoint, ten))[0] == grpc.StatusCode.OK:
            break
        await asyncio.sleep(0.05)
    await sink.wait_for_spans(20)
    assert stack.metrics()("llm_spans_total", **labels) == 20


async def test_the_otel_sdk_backs_off_and_retries_until_accepted(
        small_queue: Stack, sink: OtlpSink) -> None:
    stack = small_queue
    assert (await call(stack.endpoint, request(*[GOOD] * 10).SerializeToString()))[0] \
        == grpc.StatusCode.OK
    spans = record_spans(lambda t: llm_span(t, "chat", GOOD), service="svc")
    sending = asyncio.create_task(asyncio.to_thread(export, stack.endpoint, spans))
    await asyncio.sleep(0.5)  # the SDK has been refused and is waiting out RetryInfo
    assert not sending.done()
    await sink.start()
    assert await sending == SpanExportResult.SUCCESS
    await sink.wait_for_spans(11)
    assert stack.metrics()("llm_observe_receiver_spans_refused_total", reason="backpressure") >= 1


async def test_port_zero_binds_a_free_port_and_a_taken_port_fails(stack: Stack) -> None:
    assert stack.receiver.port > 0
    with pytest.raises(OSError, match="cannot listen"):
        await start_receiver(stack.collector.pipeline, stack.registry, "127.0.0.1",
                             stack.receiver.port, MiB)
