"""The OTLP/HTTP door answers as the OTLP spec says: the SDK's HTTP exporter, raw posts."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import AsyncIterator

import httpx
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import llm_span, record_spans
from tests.receiver.httpdoor import (
    JSON,
    PROTOBUF,
    HttpStack,
    export_http,
    make_http_stack,
    otlp_json,
    status_of,
)
from tests.receiver.test_grpc_server import GOOD, request

LABELS = {"model": "gpt-4o", "provider": "openai", "service_name": "svc", "status": "success",
          "has_retries": "false"}


@pytest.fixture
async def door(sink: OtlpSink) -> AsyncIterator[HttpStack]:
    stack = await make_http_stack(sink)
    yield stack
    await stack.close()


def spans_total(stack: HttpStack) -> float:
    return stack.metrics().get("llm_spans_total", **LABELS) or 0


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip,
                                         Compression.Deflate])
async def test_the_sdk_http_exporter_lands_spans_in_every_encoding(
        door: HttpStack, sink: OtlpSink, compression: Compression) -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", GOOD), service="svc")
    result = await asyncio.to_thread(export_http, door.url, spans, compression=compression)
    assert result == SpanExportResult.SUCCESS
    m = door.metrics()
    assert m("llm_spans_total", **LABELS) == 1
    assert m("llm_tokens_total", model="gpt-4o", provider="openai", service_name="svc",
             token_type="completion") == 5
    await sink.wait_for_spans(1)  # forwarded to Tempo like a gRPC span


async def test_protobuf_success_is_an_empty_response_in_protobuf(door: HttpStack) -> None:
    resp = await door.post(request(GOOD).SerializeToString())
    assert resp.status_code == 200 and resp.headers["content-type"] == PROTOBUF
    assert not ExportTraceServiceResponse.FromString(resp.content).HasField("partial_success")


async def test_json_is_taken_with_hex_ids_enum_names_and_int64_strings(door: HttpStack) -> None:
    body = {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
        "scopeSpans": [{"scope": {"name": "js", "futureField": 1}, "spans": [{
            "traceId": "5B8EFFF798038103D269B633813FC60C", "spanId": "EEE19B7EC3C1B174",
            "name": "chat", "kind": "SPAN_KIND_CLIENT", "status": {"code": 1},
            "startTimeUnixNano": "1750000000000000000", "endTimeUnixNano": 1750000002000000000,
            "attributes": [
                {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "10"}},
                {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 5}}],
            "someNewField": {"nested": True}}]}]}]}
    resp = await door.post(json.dumps(body).encode(), JSON)
    assert resp.status_code == 200 and resp.headers["content-type"] == JSON
    assert resp.json() == {}
    assert door.metrics()("llm_tokens_total", model="gpt-4o", provider="openai",
                          service_name="svc", token_type="prompt") == 10
    assert spans_total(door) == 1


async def test_partial_success_names_the_bad_span_in_the_requests_encoding(
        door: HttpStack) -> None:
    bad = request(GOOD, {**GOOD, "gen_ai.usage.input_tokens": -5})
    resp = await door.post(bad.SerializeToString())
    partial = ExportTraceServiceResponse.FromString(resp.content).partial_success
    assert resp.status_code == 200 and partial.rejected_spans == 1
    assert "span 0000000000000002 ('span-2')" in partial.error_message
    resp = await door.post(otlp_json(bad), JSON)
    answer = json_format.Parse(resp.text, ExportTraceServiceResponse())
    assert resp.status_code == 200 and answer.partial_success.rejected_spans == 1
    assert "gen_ai.usage.input_tokens" in answer.partial_success.error_message
    assert spans_total(door) == 2  # the good neighbour, once per request


@pytest.mark.parametrize(("body", "content_type", "said"), [
    (b"\xff\xfe not protobuf", PROTOBUF, "not a valid OTLP ExportTraceServiceRequest"),
    (b'{"resourceSpans": [', JSON, "not valid JSON"),
    (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', JSON,
     "resourceSpans[0].scopeSpans[0].spans[0].traceId: must be hex"),
    (b'{"resourceSpans": {"not": "a list"}}', JSON, "resourceSpans: must be a list"),
], ids=["garbage-protobuf", "cut-json", "base64-id", "wrong-shape"])
async def test_a_malformed_body_is_400_with_a_status_naming_the_problem(
        door: HttpStack, body: bytes, content_type: str, said: str) -> None:
    resp = await door.post(body, content_type)
    assert resp.status_code == 400 and resp.headers["content-type"] == content_type
    status = status_of(resp)
    assert said in status.message and "Traceback" not in resp.text
    assert door.metrics()("llm_observe_receiver_requests_total", outcome="invalid") == 1


async def test_an_unknown_content_type_is_415(door: HttpStack) -> None:
    resp = await door.post(request(GOOD).SerializeToString(), "text/plain")
    assert resp.status_code == 415
    assert "application/x-protobuf or application/json" in status_of(resp).message
    assert spans_total(door) == 0


async def test_wrong_methods_are_405_and_unknown_paths_404(door: HttpStack) -> None:
    async with httpx.AsyncClient() as client:
        for method in ("GET", "PUT", "DELETE"):
            resp = await client.request(method, door.url + "/v1/traces")
            assert resp.status_code == 405 and resp.headers["allow"] == "POST"
            assert status_of(resp).message == "Method Not Allowed"
        resp = await client.post(door.url + "/v1/spans", content=b"",
                                 headers={"content-type": PROTOBUF})
        assert resp.status_code == 404 and resp.headers["content-type"] == PROTOBUF


async def test_the_langfuse_path_is_the_same_door(door: HttpStack) -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", GOOD), service="svc")
    result = await asyncio.to_thread(export_http, door.url, spans,
                                     path="/api/public/otel/v1/traces")
    assert result == SpanExportResult.SUCCESS and spans_total(door) == 1


def _metrics_request() -> ExportMetricsServiceRequest:
    req = ExportMetricsServiceRequest()
    metric = req.resource_metrics.add().scope_metrics.add().metrics.add(name="requests")
    metric.sum.data_points.add(as_int=3)
    metric.sum.data_points.add(as_int=4)
    req.resource_metrics[0].scope_metrics[0].metrics.add(name="t").histogram.data_points.add(
        count=2, bucket_counts=[1, 1], explicit_bounds=[0.5])
    return req


async def test_metrics_and_logs_are_taken_discarded_and_said_so(door: HttpStack) -> None:
    metrics = _metrics_request()
    resp = await door.post(metrics.SerializeToString(), path="/v1/metrics")
    answer = ExportMetricsServiceResponse.FromString(resp.content)
    assert resp.status_code == 200 and answer.partial_success.rejected_data_points == 3
    assert "traces only" in answer.partial_success.error_message
    resp = await door.post(otlp_json(metrics), JSON, path="/v1/metrics")
    assert resp.status_code == 200
    assert resp.json()["partialSuccess"]["rejectedDataPoints"] == "3"
    logs = ExportLogsServiceRequest()
    logs.resource_logs.add().scope_logs.add().log_records.add(severity_text="INFO")
    resp = await door.post(gzip.compress(otlp_json(logs)), JSON, path="/v1/logs",
                           **{"content-encoding": "gzip"})
    assert resp.status_code == 200
    assert json_format.Parse(resp.text, ExportLogsServiceResponse()).partial_success \
        .rejected_log_records == 1
    m = door.metrics()
    assert m("llm_observe_receiver_discarded_total", signal="metrics") == 6
    assert m("llm_observe_receiver_discarded_total", signal="logs") == 1
    resp = await door.post(zlib.compress(b"\x0a\x03bad"), PROTOBUF, path="/v1/logs",
                           **{"content-encoding": "deflate"})
    assert resp.status_code == 400  # a malformed body is still refused


async def test_an_empty_request_is_a_full_success(door: HttpStack) -> None:
    for body, content_type in ((b"", PROTOBUF), (b"{}", JSON)):
        resp = await door.post(body, content_type)
        assert resp.status_code == 200
