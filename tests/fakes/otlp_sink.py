"""A real OTLP/gRPC TraceService on loopback, standing in for Tempo.

It records what it receives (decoded with the official opentelemetry-proto
classes, so tests see exactly what a backend would), and can be told to fail
the next calls with a status (optionally carrying RetryInfo), to answer with a
partial success, to go down and to come back on the same port.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


@dataclass
class _Failure:
    code: grpc.StatusCode
    times: int
    retry_after_s: float | None
    message: str


@dataclass
class OtlpSink:
    """Start with ``await sink.start()``; ``sink.port`` is then the bound port."""

    port: int = 0
    keep: bool = True  # keep decoded requests (tests); False only counts (benchmarks)
    max_message_bytes: int = 64 * 1024 * 1024  # Tempo / the OTel Collector default to 4 MiB
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    calls: int = 0
    span_count: int = 0
    _failures: list[_Failure] = field(default_factory=list)
    _reject: tuple[int, str] | None = None
    _slow: list[float] = field(default_factory=list)
    _server: Any = None
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> int:
        """Listen (again) on ``port``; returns it."""
        server = grpc.aio.server(options=[("grpc.max_receive_message_length",
                                           self.max_message_bytes)])
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            SERVICE, {"Export": grpc.unary_unary_rpc_method_handler(self._export)}),))
        self.port = server.add_insecure_port(f"127.0.0.1:{self.port}")
        await server.start()
        self._server = server
        return self.port

    async def stop(self) -> None:
        """Go down: connections are refused until :meth:`start` is called again."""
        if self._server is not None:
            await self._server.stop(0)
            self._server = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def fail_next(self, code: grpc.StatusCode, times: int = 1, *,
                  retry_after_s: float | None = None, message: str = "told to fail") -> None:
        """Answer the next ``times`` calls with ``code`` (and RetryInfo if given)."""
        self._failures.append(_Failure(code, times, retry_after_s, message))

    def slow_next(self, seconds: float, times: int = 1) -> None:
        """Sleep ``seconds`` before answering each of the next ``times`` calls."""
        self._slow.extend([seconds] * times)

    def reject_next(self, spans: int, message: str) -> None:
        """Accept the next call but report ``spans`` rejected in a partial success."""
        self._reject = (spans, message)

    def spans(self) -> list[Span]:
        return [span for request in self.requests for rs in request.resource_spans
                for ss in rs.scope_spans for span in ss.spans]

    async def wait_for_spans(self, n: int, timeout: float = 10.0) -> None:
        """Wait until at least ``n`` spans have arrived (TimeoutError otherwise)."""
        async with asyncio.timeout(timeout):
            while self.span_count < n:
                self._arrived.clear()
                await self._arrived.wait()

    async def _export(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.calls += 1
        if self._slow:
            await asyncio.sleep(self._slow.pop(0))
            if context.cancelled() or context.done():
                return b""
        if self._failures:
            failure = self._failures[0]
            failure.times -= 1
            if failure.times <= 0:
                self._failures.pop(0)
            await context.abort(failure.code, failure.message,
                                trailing_metadata=_trailers(failure))
        decoded = ExportTraceServiceRequest.FromString(request)
        n = sum(len(ss.spans) for rs in decoded.resource_spans for ss in rs.scope_spans)
        if self.keep:
            self.requests.append(decoded)
        self.span_count += n
        self._arrived.set()
        if self._reject is not None:
            rejected, message = self._reject
            self._reject = None
            self.span_count -= rejected
            answer: bytes = ExportTraceServiceResponse(partial_success=ExportTracePartialSuccess(
                rejected_spans=rejected, error_message=message)).SerializeToString()
            return answer
        return b""


def _trailers(failure: _Failure) -> tuple[tuple[str, bytes], ...]:
    if failure.retry_after_s is None:
        return ()
    seconds = int(failure.retry_after_s)
    info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(
        seconds=seconds, nanos=int((failure.retry_after_s - seconds) * 1e9)))
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=failure.code.value[0], message=failure.message,
                               details=[detail])
    return (("grpc-status-details-bin", status.SerializeToString()),)


def attributes(span: Span) -> dict[str, Any]:
    """A span's attributes as plain Python values (arrays as lists)."""
    return {kv.key: _value(kv.value) for kv in span.attributes}


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None
