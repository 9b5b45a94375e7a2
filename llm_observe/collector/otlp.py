"""The OTLP forwarder: enriched spans on to Tempo (any OTLP/gRPC trace backend).

Reliability is a chain, after the OTel collector's ``exporterhelper``:
bounded queue (spans *and* bytes) -> batches -> one attempt with a timeout ->
retry with exponential backoff and jitter on retryable codes, honouring the
server's RetryInfo -> drain within a deadline on shutdown -> optional on-disk
spool. A span the pipeline handed over is delivered, or counted in
``llm_observe_otlp_dropped_spans_total`` with the reason; never lost silently.
While the process runs nothing is dropped for being slow: the backend is
retried until it answers (only a permanent refusal drops a batch), and a full
queue makes the receiver answer RESOURCE_EXHAUSTED so senders retry.

Runs on the collector's event loop; the queue bound is soft by the requests in
flight at the moment it fills (``has_room`` is asked before processing).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from prometheus_client import CollectorRegistry

from llm_observe.collector.otlp_encode import Encoder, Item
from llm_observe.collector.retry import RETRYABLE, Backoff, server_retry_delay, too_large
from llm_observe.collector.selfmetrics import ForwarderMetrics, forwarder_metrics
from llm_observe.collector.settings import Settings
from llm_observe.collector.spool import Spool
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MiB = 1024 * 1024
SPOOL_RETRY_S = 30.0  # a spool whose write failed is tried again after this


@dataclass(eq=False, slots=True)
class _Batch:
    data: bytes
    spans: int
    path: Path | None = None  # set when the batch is a spool file


class OtlpForwarder:
    """Exporter that forwards spans over OTLP/gRPC; see the module docstring."""

    name = "otlp"

    def __init__(self, endpoint: str, metrics: ForwarderMetrics, *,
                 max_spans: int = 100_000, max_bytes: int = 256 * MiB,
                 batch_spans: int = 512, batch_bytes: int = 4 * MiB, timeout_s: float = 10.0,
                 backoff: Backoff | None = None, workers: int = 2,
                 spool_dir: str | None = None, spool_max_bytes: int = 1024 * MiB,
                 redact_pii: bool = True, compression: grpc.Compression | None = None,
                 headers: Sequence[tuple[str, str]] = ()) -> None:
        self.endpoint = endpoint
        self.metrics = metrics
        self.max_spans, self.max_bytes = max_spans, max_bytes
        self.batch_spans, self.batch_bytes = batch_spans, batch_bytes
        self.timeout_s = timeout_s
        self.backoff = backoff or Backoff()
        self.n_workers = workers
        self.compression = compression
        self.headers = tuple(headers) or None
        self.encoder = Encoder(redact_pii=redact_pii, max_spans=batch_spans, max_bytes=batch_bytes)
        self.spool = Spool(spool_dir, spool_max_bytes) if spool_dir else None
        self._queue: deque[Item] = deque()
        self._spans = 0  # queued + in flight, from memory
        self._bytes = 0
        self._inflight: set[_Batch] = set()
        self._reading: set[Path] = set()  # spool files a worker is reading, not yet in flight
        self._spool_retry_at = 0.0  # monotonic time before which the spool is not tried
        self._wakeup = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._channel: grpc.aio.Channel | None = None
        self._call: Any = None
        self._closing = self._closed = False
        self._failing = False
        self._turn = 0
        self._update_gauges()

    # --- Exporter protocol -------------------------------------------------------
    def has_room(self, n: int) -> bool:
        if self._memory_room(n):
            return True
        return self._spool_usable()

    def _spool_usable(self) -> bool:
        # After a failed write (disk full, read-only) the spool is left out for a while, so
        # backpressure holds instead of piling the overflow up in memory.
        return (self.spool is not None and self.spool.has_room()
                and time.monotonic() >= self._spool_retry_at)

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        """Queue spans built here (REST doors, transitions); spans received over OTLP are
        enriched in place and travel with their request (:meth:`export_request`)."""
        await self._admit(self.encoder.llm_items(batch))

    async def export_request(self, request: Any, spans: int) -> None:
        """Forward a received request (a ``wire.Request`` of ``spans`` spans) as it is.

        The receiver calls this after the pipeline ran: ``export`` has enriched its LLM
        spans in place by then, and the non-LLM spans go on untouched.
        """
        await self._admit(self.encoder.request_items(request, spans))

    async def start(self) -> None:
        """Open the channel and start sending (idempotent; export starts it lazily too)."""
        self._ensure_started()

    async def shutdown(self, timeout: float) -> None:
        """Deliver what is queued within ``timeout`` s; spool (or count as dropped) the rest."""
        if self._closed:
            return
        self._closing = True
        self._wakeup.set()
        if self._workers:
            _, pending = await asyncio.wait(self._workers, timeout=max(timeout, 0.0))
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        self._closed = True
        leftover = [b for b in self._inflight if b.path is None]
        self._inflight.clear()
        leftover.extend(self._batches_from(list(self._queue)))
        self._queue.clear()
        if leftover:
            await self._save_or_drop(leftover)
        self._spans = self._bytes = 0
        self._update_gauges()
        if self._channel is not None:
            await self._channel.close()

    # --- introspection (tests, status) ---------------------------------------------
    @property
    def queued_spans(self) -> int:
        return self._spans

    @property
    def spooled_spans(self) -> int:
        return self.spool.spans if self.spool is not None else 0

    # --- admission -----------------------------------------------------------------
    def _memory_room(self, n: int) -> bool:
        # An empty queue takes any request, so an oversized one is not refused forever.
        return self._spans == 0 or (self._spans + n <= self.max_spans
                                    and self._bytes < self.max_bytes)

    async def _admit(self, items: list[Item]) -> None:
        if not items:
            return
        n = sum(item.spans for item in items)
        if self._closed:
            await self._save_or_drop(self._batches_from(items))
            return
        self._ensure_started()
        if (not self._memory_room(n) and self._spool_usable()
                and await self._spool_batches(self._batches_from(items))):
            self._wakeup.set()
            return
        self._queue.extend(items)
        self._spans += n
        self._bytes += sum(len(item.data) for item in items)
        self._update_gauges()
        self._wakeup.set()

    def _batches_from(self, items: list[Item]) -> list[_Batch]:
        """Cut items into send-sized batches (the same bounds the workers use)."""
        batches: list[_Batch] = []
        parts: list[bytes] = []
        spans = size = 0
        for item in items:
            if parts and (spans + item.spans > self.batch_spans
                          or size + len(item.data) > self.batch_bytes):
                batches.append(_Batch(b"".join(parts), spans))
                parts, spans, size = [], 0, 0
            parts.append(item.data)
            spans += item.spans
            size += len(item.data)
        if parts:
            batches.append(_Batch(b"".join(parts), spans))
        return batches

    async def _spool_batches(self, batches: list[_Batch]) -> bool:
        assert self.spool is not None
        loop = asyncio.get_running_loop()
        try:
            for batch in batches:
                await loop.run_in_executor(None, self.spool.write, batch.spans, batch.data)
        except OSError:
            log.exception("cannot write to the spool %s; not using it for %g s",
                          self.spool.directory, SPOOL_RETRY_S)
            self._spool_retry_at = time.monotonic() + SPOOL_RETRY_S
            return False
        finally:
            self._update_gauges()
        return True

    async def _save_or_drop(self, batches: list[_Batch]) -> None:
        spans = sum(b.spans for b in batches)
        if self.spool is not None and await self._spool_batches(batches):
            log.info("spooled %d undelivered spans to %s", spans, self.spool.directory)
            return
        self.metrics.dropped.labels("shutdown").inc(spans)
        log.error("dropped %d spans not delivered to %s before shutdown (%s)", spans,
                  self.endpoint, "no spool_dir set" if self.spool is None else "spool unwritable")

    # --- sending ---------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self._channel is not None or self._closing:
            return
        target, secure = _target(self.endpoint)
        ms = int(self.backoff.initial * 1000)
        options = [("grpc.initial_reconnect_backoff_ms", ms), ("grpc.min_reconnect_backoff_ms", ms),
                   ("grpc.max_reconnect_backoff_ms", int(self.backoff.maximum * 1000))]
        self._channel = (grpc.aio.secure_channel(target, grpc.ssl_channel_credentials(), options)
                         if secure else grpc.aio.insecure_channel(target, options))
        self._call = self._channel.unary_unary(EXPORT_METHOD)  # bytes in, bytes out
        self._workers = [asyncio.create_task(self._worker(), name=f"otlp-forwarder-{i}")
                         for i in range(self.n_workers)]

    async def _worker(self) -> None:
        while True:
            batch = await self._next_batch()
            if batch is None:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            self._inflight.add(batch)
            await self._deliver(batch)

    async def _next_batch(self) -> _Batch | None:
        self._turn += 1
        spool_first = self.spool is not None and len(self.spool) > 0 and self._turn % 2 == 0
        if spool_first and not self._closing:
            batch = await self._take_spooled()
            if batch is not None:
                return batch
        batch = self._take_memory()
        if batch is None and self.spool is not None and not self._closing:
            batch = await self._take_spooled()
        return batch

    def _take_memory(self) -> _Batch | None:
        if not self._queue:
            return None
        first = self._queue.popleft()
        parts, spans, size = [first.data], first.spans, len(first.data)
        while self._queue:
            item = self._queue[0]
            if spans + item.spans > self.batch_spans or size + len(item.data) > self.batch_bytes:
                break
            self._queue.popleft()
            parts.append(item.data)
            spans += item.spans
            size += len(item.data)
        return _Batch(b"".join(parts), spans)

    async def _take_spooled(self) -> _Batch | None:
        assert self.spool is not None
        busy = {b.path for b in self._inflight if b.path is not None} | self._reading
        found = self.spool.oldest(busy)
        if found is None:
            return None
        path, spans = found
        # Claimed before the read is awaited: another worker asking meanwhile must not
        # take (and send) the same file a second time.
        self._reading.add(path)
        try:
            data = await asyncio.get_running_loop().run_in_executor(None, self.spool.read, path)
        except OSError:
            log.exception("unreadable spool file %s; dropping it", path)
            self.spool.remove(path)
            self.metrics.dropped.labels("spool_error").inc(spans)
            self._update_gauges()
            return None
        finally:
            self._reading.discard(path)  # the caller puts the batch in flight, no await between
        return _Batch(data, spans, path)

    async def _deliver(self, batch: _Batch) -> None:
        """Send one batch until the backend takes or permanently refuses it."""
        delivered, reason = await self._send(batch.data, batch.spans)
        self._finish(batch, delivered, reason)

    async def _send(self, data: bytes, spans: int) -> tuple[int, str]:
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
                delay = self.backoff.delay(attempt) if server_delay is None else server_delay
                if not self._failing:
                    self._failing = True
                    log.warning("forwarding to %s failed (%s: %s); retrying with backoff",
                                self.endpoint, code.name, error.details())
                attempt += 1
                await asyncio.sleep(delay)
                continue
            m.seconds.observe(time.perf_counter() - start)
            m.requests.labels("ok").inc()
            if self._failing:
                self._failing = False
                log.warning("forwarding to %s recovered", self.endpoint)
            return spans - _rejected(response, spans), "rejected_by_backend"

    async def _send_halves(self, data: bytes, spans: int,
                           error: grpc.aio.AioRpcError) -> tuple[int, str]:
        halves = self.encoder.halves(data)
        if halves is None:
            log.error("%s refused a span as too large (%s); dropping it", self.endpoint,
                      error.details())
            return 0, "too_large"
        delivered, reason = 0, "too_large"
        for part, n in halves:
            took, why = await self._send(part, n)
            delivered += took
            if took < n:
                reason = why
        return delivered, reason

    def _finish(self, batch: _Batch, delivered: int, reason: str) -> None:
        self._inflight.discard(batch)
        if batch.path is not None:
            assert self.spool is not None
            self.spool.remove(batch.path)
        else:
            self._spans -= batch.spans
            self._bytes -= len(batch.data)
        if delivered:
            self.metrics.exported.inc(delivered)
        if delivered < batch.spans:
            self.metrics.dropped.labels(reason).inc(batch.spans - delivered)
        self._update_gauges()

    def _update_gauges(self) -> None:
        m = self.metrics
        m.queue_spans.set(self._spans)
        m.queue_bytes.set(self._bytes)
        if self.spool is not None:
            m.spool_spans.set(self.spool.spans)
            m.spool_bytes.set(self.spool.bytes)


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


def forwarder_from_settings(settings: Settings,
                            registry: CollectorRegistry) -> OtlpForwarder | None:
    """The forwarder configured by ``settings`` (None when ``tempo_endpoint`` is unset)."""
    if not settings.tempo_endpoint:
        return None
    return OtlpForwarder(settings.tempo_endpoint, forwarder_metrics(registry),
                         max_spans=settings.queue_max_spans, max_bytes=settings.queue_max_bytes,
                         spool_dir=settings.spool_dir, redact_pii=settings.redact_pii)
