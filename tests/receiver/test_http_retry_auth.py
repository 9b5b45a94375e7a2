"""OTLP/HTTP when the pipeline is full (429 + Retry-After) and with a token (401, Basic)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator

import pytest
from google.rpc import error_details_pb2
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import llm_span, record_spans
from tests.receiver.httpdoor import JSON, HttpStack, export_http, make_http_stack, status_of
from tests.receiver.test_grpc_server import GOOD, request

TOKEN = "s3cret-otlp-token"
LABELS = {"model": "gpt-4o", "provider": "openai", "service_name": "svc", "status": "success",
          "has_retries": "false"}


@pytest.fixture
async def full(sink: OtlpSink) -> AsyncIterator[HttpStack]:
    """A stack whose forwarder holds 10 spans, with Tempo down."""
    await sink.stop()
    stack = await make_http_stack(sink, queue_spans=10)
    yield stack
    await stack.close()


async def test_a_full_pipeline_is_429_with_retry_after_and_counts_nothing(
        full: HttpStack, sink: OtlpSink) -> None:
    ten = request(*[GOOD] * 10).SerializeToString()
    assert (await full.post(ten)).status_code == 200
    resp = await full.post(ten)
    assert resp.status_code == 429 and resp.headers["retry-after"] == "1"
    status = status_of(resp)
    assert "queue is full" in status.message
    info = error_details_pb2.RetryInfo()
    assert status.details[0].Unpack(info) and info.retry_delay.seconds == 1
    m = full.metrics()
    assert m("llm_observe_receiver_spans_refused_total", reason="backpressure") == 10
    assert m("llm_spans_total", **LABELS) == 10  # the refused request counted nothing
    await sink.start()
    await sink.wait_for_spans(10)


async def test_the_sdk_http_exporter_honours_retry_after_until_accepted(
        full: HttpStack, sink: OtlpSink) -> None:
    assert (await full.post(request(*[GOOD] * 10).SerializeToString())).status_code == 200
    spans = record_spans(lambda t: llm_span(t, "chat", GOOD), service="svc")
    sending = asyncio.create_task(asyncio.to_thread(export_http, full.url, spans))
    await asyncio.sleep(0.5)  # refused, waiting out Retry-After
    assert not sending.done()
    await sink.start()
    assert await sending == SpanExportResult.SUCCESS
    await sink.wait_for_spans(11)
    assert full.metrics()("llm_spans_total", **LABELS) == 11


@pytest.fixture
async def locked(sink: OtlpSink) -> AsyncIterator[HttpStack]:
    stack = await make_http_stack(sink, token=TOKEN)
    yield stack
    await stack.close()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("authorization", [
    None, "Bearer wrong-token", TOKEN, f"Token {TOKEN}", basic("pk-lf-1", "wrong"),
    basic(TOKEN, ""), "Basic !!!not-base64", "Basic " + base64.b64encode(TOKEN.encode()).decode(),
], ids=["none", "wrong", "no-scheme", "other-scheme", "basic-wrong", "token-as-user",
        "basic-garbage", "basic-no-colon"])
async def test_without_the_token_it_is_401_before_the_body_is_read(
        locked: HttpStack, authorization: str | None) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    resp = await locked.post(b"\xff garbage that is never decoded", **headers)
    assert resp.status_code == 401 and resp.headers["www-authenticate"].startswith("Bearer")
    assert "token" in status_of(resp).message
    m = locked.metrics()
    assert m("llm_observe_receiver_requests_total", outcome="unauthenticated") == 1
    assert m.get("llm_observe_receiver_requests_total", outcome="invalid") is None


async def test_bearer_and_the_langfuse_basic_header_pass(locked: HttpStack) -> None:
    spans = record_spans(lambda t: llm_span(t, "chat", GOOD), service="svc")
    for headers in ({"authorization": f"Bearer {TOKEN}"},
                    {"Authorization": basic("pk-lf-public", TOKEN)}):  # what Langfuse sends
        result = await asyncio.to_thread(export_http, locked.url, spans,
                                         path="/api/public/otel/v1/traces", headers=headers)
        assert result == SpanExportResult.SUCCESS
    assert locked.metrics()("llm_spans_total", **LABELS) == 2


async def test_the_token_guards_metrics_and_logs_too_and_json_gets_json(
        locked: HttpStack) -> None:
    resp = await locked.post(b"{}", JSON, path="/v1/metrics")
    assert resp.status_code == 401 and resp.headers["content-type"] == JSON
    resp = await locked.post(b"{}", JSON, path="/v1/metrics",
                             authorization=f"bearer {TOKEN}")
    assert resp.status_code == 200


async def test_two_authorization_headers_are_refused(locked: HttpStack) -> None:
    import httpx
    async with httpx.AsyncClient() as client:
        resp = await client.post(locked.url + "/v1/traces", content=b"", headers=[
            ("content-type", "application/x-protobuf"), ("authorization", f"Bearer {TOKEN}"),
            ("authorization", f"Bearer {TOKEN}")])
    assert resp.status_code == 401
