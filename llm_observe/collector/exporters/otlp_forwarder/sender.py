"""One export request to the backend, until it is taken or given up: per-attempt timeout,
retry with backoff (honouring RetryInfo), halving of a request the backend finds too
large. A retry wait ends at once when the forwarder shuts down (:class:`Interrupted`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from llm_observe.collector.exporters.otlp_forwarder.retry import (
    RETRYABLE,
    Backoff,
    server_retry_delay,
    too_large,
)
from llm_observe.otlp.encode import Encoder
from llm_observe.pipeline.selfmetrics import ForwarderMetrics

log = logging.getLogger(__name__)

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


class Interrupted(Exception):
    """The forwarder began shutting down while a request waited to be retried."""


class Sender:
    """The gRPC channel to the backend and the retry loop over it."""

    def __init__(self, endpoint: str, metrics: ForwarderMetrics, encoder: Encoder, *,
                 backoff: Backoff, timeout_s: float, compression: grpc.Compression | None,
                 headers: Sequence[tuple[str, str]]) -> None:
        self.endpoint = endpoint
        self.metrics = metrics
        self.encoder = encoder
        self.backoff = backoff
        self.timeout_s = timeout_s
        self.compression = compression
        self.headers = tuple(headers) or None
        self.stopping = asyncio.Event()
        self._channel: grpc.aio.Channel | None = None
        self._call: Any = None
        self._failing = False

    @property
    def is_open(self) -> bool:
        return self._channel is not None

    def open(self) -> None:
        target, secure = _target(self.endpoint)
        ms = int(self.backoff.initial * 1000)
        options = [("grpc.initial_reconnect_backoff_ms", ms), ("grpc.min_reconnect_backoff_ms", ms),
                   ("grpc.max_reconnect_backoff_ms", int(self.backoff.maximum * 1000))]
        self._channel = (grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options)
                         if secure else grpc.aio.insecure_channel(target, options))
        self._call = self._channel.unary_unary(EXPORT_METHOD)  # bytes in, bytes out

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()

    async def send(self, data: bytes, spans: int) -> tuple[int, str]:
        """Send a request, retrying retryable failures; returns (spans the backend took,
        why the others were dropped). A request the backend finds too large is sent
        again in halves, so one huge span cannot stall forwarding for good."""
        m = self.metrics
        attempt = 0
        while True:
            start = time.perf_counter()
            try:
                response = await self._call(data, timeout=self.timeout_s,
                                            metadata=self.headers, compression=self.compression)
            except grpc.aio.AioRpcError as error:
                m.seconds.observe(time.perf_counter() - start)
                code = error.code()
                m.failures.labels(code.name).inc()
                server_delay = server_retry_delay(error)
                if server_delay is None and too_large(error):
                    m.requests.labels("too_large").inc()
                    return await self._send_halves(data, spans, error)
                if code not in RETRYABLE:
                    m.requests.labels("permanent").inc()
                    log.error("%s refused %d spans permanently (%s: %s); dropping them",
                              self.endpoint, spans, code.name, error.details())
                    return 0, "permanent_error"
                m.requests.labels("retryable").inc()
                m.retries.labels(code.name).inc()
                self._note_failure(code, error)
                attempt += 1
                await self._wait(self.backoff.delay(attempt - 1) if server_delay is None
                                 else server_delay)
                continue
            m.seconds.observe(time.perf_counter() - start)
            m.requests.labels("ok").inc()
            if self._failing:
                self._failing = False
                log.warning("forwarding to %s recovered", self.endpoint)
            return spans - _rejected(response, spans), "rejected_by_backend"

    async def _wait(self, delay: float) -> None:
        """Sleep ``delay`` s before a retry; raise Interrupted once shutdown has begun."""
        if self.stopping.is_set():
            raise Interrupted
        try:
            await asyncio.wait_for(self.stopping.wait(), delay)
        except TimeoutError:
            return
        raise Interrupted

    def _note_failure(self, code: grpc.StatusCode, error: grpc.aio.AioRpcError) -> None:
        if not self._failing:
            self._failing = True
            log.warning("forwarding to %s failed (%s: %s); retrying with backoff",
                        self.endpoint, code.name, error.details())

    async def _send_halves(self, data: bytes, spans: int,
                           error: grpc.aio.AioRpcError) -> tuple[int, str]:
        halves = self.encoder.halves(data)
        if halves is None:
            log.error("%s refused a span as too large (%s); dropping it", self.endpoint,
                      error.details())
            return 0, "too_large"
        delivered, reason = 0, "too_large"
        for part, n in halves:
            took, why = await self.send(part, n)
            delivered += took
            if took < n:
                reason = why
        return delivered, reason


def _rejected(response: bytes, spans: int) -> int:
    """Spans the backend rejected in an OTLP partial success (logged)."""
    if not response:
        return 0
    try:
        partial = ExportTraceServiceResponse.FromString(response).partial_success
    except Exception:  # an unreadable answer to a successful call: accepted
        return 0
    if partial.rejected_spans or partial.error_message:
        log.warning("backend rejected %d of %d spans: %s", partial.rejected_spans, spans,
                    partial.error_message)
    return min(max(int(partial.rejected_spans), 0), spans)


def _target(endpoint: str) -> tuple[str, bool]:
    """gRPC target and whether to use TLS: ``host:port``, ``http://...`` or ``https://...``."""
    if endpoint.startswith("https://"):
        return endpoint[len("https://"):].rstrip("/"), True
    if endpoint.startswith("http://"):
        return endpoint[len("http://"):].rstrip("/"), False
    return endpoint, False
