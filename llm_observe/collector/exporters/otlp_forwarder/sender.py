"""One export request to a destination, until it is taken or given up: the transport's
per-attempt timeout, retry with backoff (honouring the server's RetryInfo or
Retry-After), halving of a request the backend finds too large. Protocol-neutral: the
transport (:mod:`.grpc_transport`, :mod:`.http_transport`) makes each attempt. A retry
wait ends at once when the forwarder shuts down (:class:`Interrupted`)."""

from __future__ import annotations

import asyncio
import logging
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from llm_observe.collector.exporters.otlp_forwarder.retry import Backoff
from llm_observe.collector.exporters.otlp_forwarder.transport import (
    OK,
    RETRYABLE,
    TOO_LARGE,
    Attempt,
    Transport,
)
from llm_observe.otlp.encode import Encoder
from llm_observe.pipeline.selfmetrics import DestinationMetrics

log = logging.getLogger(__name__)


class Interrupted(Exception):
    """The forwarder began shutting down while a request waited to be retried."""


class Sender:
    """The retry loop over one destination's transport."""

    def __init__(self, endpoint: str, metrics: DestinationMetrics, encoder: Encoder,
                 transport: Transport, *, backoff: Backoff) -> None:
        self.endpoint = endpoint
        self.metrics = metrics
        self.encoder = encoder
        self.transport = transport
        self.backoff = backoff
        self.stopping = asyncio.Event()
        self._failing = False

    @property
    def is_open(self) -> bool:
        return self.transport.is_open

    def open(self) -> None:
        self.transport.open()

    async def close(self) -> None:
        await self.transport.close()

    async def send(self, data: bytes, spans: int) -> tuple[int, str]:
        """Send a request, retrying retryable failures; returns (spans the backend took,
        why the others were dropped). A request the backend finds too large is sent
        again in halves, so one huge span cannot stall forwarding for good."""
        m = self.metrics
        attempt = 0
        while True:
            start = time.perf_counter()
            result = await self.transport.export(data)
            m.seconds.observe(time.perf_counter() - start)
            if result.outcome == OK:
                m.requests.labels("ok").inc()
                if self._failing:
                    self._failing = False
                    log.warning("forwarding to %s recovered", self.endpoint)
                return spans - _rejected(result.response, spans), "rejected_by_backend"
            m.failures.labels(result.code).inc()
            if result.outcome == TOO_LARGE:
                m.requests.labels("too_large").inc()
                return await self._send_halves(data, spans, result)
            if result.outcome != RETRYABLE:
                m.requests.labels("permanent").inc()
                log.error("%s refused %d spans permanently (%s: %s); dropping them",
                          self.endpoint, spans, result.code, result.detail)
                return 0, "permanent_error"
            m.requests.labels("retryable").inc()
            m.retries.labels(result.code).inc()
            self._note_failure(result)
            attempt += 1
            await self._wait(self.backoff.delay(attempt - 1) if result.delay is None
                             else result.delay)

    async def _wait(self, delay: float) -> None:
        """Sleep ``delay`` s before a retry; raise Interrupted once shutdown has begun."""
        if self.stopping.is_set():
            raise Interrupted
        try:
            await asyncio.wait_for(self.stopping.wait(), delay)
        except TimeoutError:
            return
        raise Interrupted

    def _note_failure(self, result: Attempt) -> None:
        if not self._failing:
            self._failing = True
            log.warning("forwarding to %s failed (%s: %s); retrying with backoff",
                        self.endpoint, result.code, result.detail)

    async def _send_halves(self, data: bytes, spans: int, result: Attempt) -> tuple[int, str]:
        halves = self.encoder.halves(data)
        if halves is None:
            log.error("%s refused a span as too large (%s); dropping it", self.endpoint,
                      result.detail)
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
