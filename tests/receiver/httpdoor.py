"""The OTLP/HTTP door's test set-up: the real collector behind both doors, real clients.

``HttpStack`` is :class:`tests.receiver.conftest.Stack` (gRPC door, forwarder to a fake
Tempo) plus an HTTP receiver on the same pipeline and registry. ``otlp_json`` writes a
request as OTLP/JSON with the official protobuf JSON printer (ids turned to hex, as the
spec asks), so the JSON tests do not lean on our own encoder.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from llm_observe.collector.settings import Settings
from llm_observe.receiver import HttpReceiver, start_http_receiver
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import MiB, Stack, make_stack

PROTOBUF, JSON = "application/x-protobuf", "application/json"
IDS = ("traceId", "spanId", "parentSpanId")


@dataclass
class HttpStack(Stack):
    http: HttpReceiver | None = None

    @property
    def url(self) -> str:
        assert self.http is not None
        return f"http://127.0.0.1:{self.http.port}"

    async def post(self, body: bytes, content_type: str = PROTOBUF, path: str = "/v1/traces",
                   **headers: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as client:
            return await client.post(self.url + path, content=body,
                                     headers={"content-type": content_type, **headers})

    async def close(self) -> None:
        assert self.http is not None
        await self.http.stop(0)
        await self.receiver.stop(0)
        await self.collector.pipeline.shutdown(5)


async def make_http_stack(sink: OtlpSink, *, max_message_bytes: int = 4 * MiB,
                          token: str | None = None, max_spans: int = 20_000,
                          settings: Settings | None = None,
                          queue_spans: int | None = None) -> HttpStack:
    """``queue_spans``: the forwarder's queue bound (make_stack's ``max_spans``)."""
    kw = {} if queue_spans is None else {"max_spans": queue_spans}
    base = await make_stack(sink, max_message_bytes=max_message_bytes, settings=settings, **kw)
    http = await start_http_receiver(base.collector.pipeline, base.registry, "127.0.0.1", 0,
                                     max_message_bytes, token=token, max_spans=max_spans)
    return HttpStack(base.registry, base.collector, base.forwarder, base.receiver, http)


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in IDS else _hex_ids(v)
                for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(message: Message) -> bytes:
    """OTLP/JSON of any OTLP request message: proto3 JSON with hex ids."""
    return json.dumps(_hex_ids(json_format.MessageToDict(message))).encode()


def spans_json(spans: Sequence[ReadableSpan]) -> bytes:
    """What a JSON exporter sends for ``spans`` (the SDK's own protobuf encoding, as JSON)."""
    return otlp_json(encode_spans(spans))


def export_http(url: str, spans: Sequence[ReadableSpan], *, path: str = "/v1/traces",
                compression: Compression = Compression.NoCompression,
                **kw: Any) -> SpanExportResult:
    """The SDK's OTLP/HTTP protobuf exporter (blocking: call via asyncio.to_thread)."""
    exporter = OTLPSpanExporter(endpoint=url + path, timeout=10, compression=compression, **kw)
    try:
        return exporter.export(spans)
    finally:
        exporter.shutdown()


def status_of(response: httpx.Response) -> status_pb2.Status:
    """The google.rpc.Status of an error answer, in the answer's own encoding."""
    if response.headers["content-type"].startswith(JSON):
        return json_format.Parse(response.text, status_pb2.Status())
    assert response.headers["content-type"].startswith(PROTOBUF)
    return status_pb2.Status.FromString(response.content)
