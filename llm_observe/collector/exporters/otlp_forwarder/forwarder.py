"""The OTLP forwarder: enriched spans on to one destination over its transport (OTLP/gRPC
or OTLP/HTTP, :mod:`.transport`); several destinations are several forwarders under one
:class:`~.fanout.Fanout`. Reliability is a chain, after the OTel collector's
``exporterhelper``: bounded queue (spans *and* bytes, :mod:`.queue`) -> batches -> one
attempt with a timeout -> retry with backoff and jitter on retryable codes, honouring the
server's delay (:mod:`.sender`) -> drain within a deadline on shutdown -> optional on-disk
spool (:mod:`.spool`). A span the pipeline handed over is delivered, or counted in
``llm_observe_otlp_dropped_spans_total`` with the reason. While the process runs nothing
is dropped for being slow (only a permanent refusal drops a batch); a full queue makes the
doors answer backpressure. At shutdown what is left goes to the spool (or is counted).

Write-ahead mode (``write_ahead``, needs ``spool_dir``): ``export`` returns only once the
batch is fsynced in the spool (:mod:`.writeahead`, group commit); the workers send spool
files and delete each once the backend took it; the spool's byte bound is the room. A
process killed at any moment loses no span it answered OK for.

Runs on the collector's event loop; the queue bound is soft by the requests in flight at
the moment it fills (``has_room`` is asked before processing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from llm_observe.collector.exporters.otlp_forwarder.grpc_transport import GrpcTransport
from llm_observe.collector.exporters.otlp_forwarder.probe import SpaceProbe
from llm_observe.collector.exporters.otlp_forwarder.queue import SendBatch, SendQueue
from llm_observe.collector.exporters.otlp_forwarder.retry import Backoff
from llm_observe.collector.exporters.otlp_forwarder.sender import Interrupted, Sender
from llm_observe.collector.exporters.otlp_forwarder.spool import Spool
from llm_observe.collector.exporters.otlp_forwarder.transport import Transport
from llm_observe.collector.exporters.otlp_forwarder.writeahead import GroupCommit
from llm_observe.otlp.encode import Encoder, Item
from llm_observe.otlp.walk import Walked
from llm_observe.pipeline import Backpressure, Batch, place, run_placed
from llm_observe.pipeline.selfmetrics import ForwarderMetrics
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)
MiB = 1024 * 1024


class OtlpForwarder:
    """Exporter that forwards spans to one destination; see the module docstring.
    ``transport`` defaults to OTLP/gRPC to ``endpoint``; ``encoder`` to one that redacts
    (``redact_pii``) and keeps every span; ``destination`` names the metrics' series."""

    name = "otlp"

    def __init__(self, endpoint: str, metrics: ForwarderMetrics, *, destination: str = "tempo",
                 transport: Transport | None = None, encoder: Encoder | None = None,
                 max_spans: int = 100_000, max_bytes: int = 256 * MiB,
                 batch_spans: int = 512, batch_bytes: int = 4 * MiB, timeout_s: float = 10.0,
                 backoff: Backoff | None = None, workers: int = 2,
                 spool_dir: str | None = None, spool_max_bytes: int = 1024 * MiB,
                 redact_pii: bool = True, write_ahead: bool = False,
                 spool_lock_wait_s: float = 0.0) -> None:
        self.endpoint = endpoint
        self.destination = destination
        self.metrics = metrics.bind(destination)
        self.max_spans, self.max_bytes = max_spans, max_bytes
        self.n_workers = workers
        self.encoder = encoder or Encoder(redact_pii=redact_pii, max_spans=batch_spans,
                                          max_bytes=batch_bytes)
        backoff = backoff or Backoff()
        transport = transport or GrpcTransport(endpoint, timeout_s=timeout_s, backoff=backoff)
        self.sender = Sender(endpoint, self.metrics, self.encoder, transport, backoff=backoff)
        self.spool = (Spool(spool_dir, spool_max_bytes, spool_lock_wait_s) if spool_dir
                      else None)
        self._queue = SendQueue(batch_spans, batch_bytes)
        if write_ahead and self.spool is None:
            raise ValueError("write_ahead needs spool_dir")
        self._commit = (GroupCommit(self.spool, self._queue.cut)
                        if write_ahead and self.spool is not None else None)
        self._inflight: set[SendBatch] = set()
        self._reading: set[Path] = set()  # spool files a worker is reading, not yet in flight
        self._probe = SpaceProbe()  # the pause after a failed spool write
        self._wakeup = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._closing = self._closed = False
        self._turn = 0
        self._update_gauges()

    # --- Exporter protocol -------------------------------------------------------
    def has_room(self, n: int) -> bool:
        if self._commit is not None:  # write-ahead: the spool is the queue
            return self._spool_usable(self._commit.pending_bytes)
        return self._queue.room(n, self.max_spans, self.max_bytes) or self._spool_usable()

    async def start(self) -> None:
        """Open the channel and start sending, a spool left by the last run first
        (idempotent; ``export`` starts it lazily too)."""
        self._ensure_started()

    async def export(self, batch: Sequence[LlmSpan]) -> None:
        """Queue the batch's spans: its received request as it came in plus our
        attributes, or spans built here (REST doors); transition spans beside. In
        write-ahead mode, return once they are on disk (Backpressure if they cannot be)."""
        await self.deliver(await self.encode(batch))

    async def encode(self, batch: Sequence[LlmSpan], last: bool = True) -> list[Item]:
        """The batch as this destination's encoder makes it (text policy, span filter),
        enriching the received request in place where it may (:mod:`otlp.inplace`;
        ``last``: no other destination encodes the batch after this one)."""
        origin = batch.origin if isinstance(batch, Batch) else None
        received = origin if isinstance(origin, Walked) else None
        encode = partial(self.encoder.items, batch, received, in_place=True, last=last)
        return await run_placed(place(batch), encode)  # a big request would hold the loop

    async def deliver(self, items: list[Item]) -> None:
        """Queue (or, write-ahead, commit) encoded items; see :meth:`export`."""
        if self._commit is not None:
            await self._write_ahead(self._commit, items)
        else:
            await self._admit(items)

    async def shutdown(self, timeout: float) -> None:
        """Deliver what is queued within ``timeout`` s; spool (or count as dropped) the rest."""
        if self._closed:
            return
        if self._commit is not None:
            await self._commit.wait()  # written files are sent in the drain below
        self._closing = True
        self._wakeup.set()
        if self._workers:
            _, pending = await asyncio.wait(self._workers, timeout=max(timeout, 0.0))
            self.sender.stopping.set()  # retry waits end; their batches are left over
            if pending:
                _, pending = await asyncio.wait(pending, timeout=0.5)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        self._closed = True
        leftover = [b for b in self._inflight if b.path is None]
        self._inflight.clear()
        leftover.extend(self._queue.drain())
        if leftover:
            await self._save_or_drop(leftover)
        self._update_gauges()
        await self.sender.close()
        if self.spool is not None:
            self.spool.close()  # a successor may take the directory now

    @property
    def queued_spans(self) -> int:
        return self._queue.spans

    @property
    def spooled_spans(self) -> int:
        return self.spool.spans if self.spool is not None else 0

    # --- admission -----------------------------------------------------------------
    def _spool_usable(self, pending: int = 0) -> bool:
        # After a failed write (disk full, read-only) the spool is left out for a short,
        # growing pause (probe.py), so backpressure holds instead of piling the overflow
        # up in memory, and ingest resumes soon after the disk has room.
        return (self.spool is not None and self.spool.has_room(pending)
                and self._probe.usable())

    async def _write_ahead(self, commit: GroupCommit, items: list[Item]) -> None:
        if not items:
            return
        self._ensure_started()
        written = await commit.write(items)
        self._update_gauges()
        if not written:  # not taken: the sender retries; the spool is left out a while
            self._probe.failed()
            raise Backpressure(self.name)
        self._probe.succeeded()
        self._wakeup.set()

    async def _admit(self, items: list[Item]) -> None:
        if not items:
            return
        n = sum(item.spans for item in items)
        if self._closed:
            await self._save_or_drop(self._queue.cut(items))
            return
        self._ensure_started()
        if (not self._queue.room(n, self.max_spans, self.max_bytes) and self._spool_usable()
                and await self._spool_batches(self._queue.cut(items))):
            self._wakeup.set()
            return
        self._queue.put(items)
        self._update_gauges()
        self._wakeup.set()

    async def _spool_batches(self, batches: list[SendBatch]) -> bool:
        assert self.spool is not None
        loop = asyncio.get_running_loop()
        try:
            for batch in batches:
                await loop.run_in_executor(None, self.spool.write, batch.spans, batch.data)
        except OSError as exc:
            log.error("cannot write to the spool %s (%s); trying it again in %g s",
                      self.spool.directory, exc, self._probe.failed())
            return False
        finally:
            self._update_gauges()
        self._probe.succeeded()
        return True

    async def _save_or_drop(self, batches: list[SendBatch]) -> None:
        spans = sum(b.spans for b in batches)
        if self.spool is not None and await self._spool_batches(batches):
            log.info("spooled %d undelivered spans to %s", spans, self.spool.directory)
            return
        self.metrics.dropped.labels("shutdown").inc(spans)
        log.error("dropped %d spans not delivered to %s before shutdown (%s)", spans,
                  self.destination, "no spool_dir" if self.spool is None else "spool unwritable")

    # --- workers ---------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self.sender.is_open or self._closing:
            return
        self.sender.open()
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
            try:
                delivered, reason = await self.sender.send(batch.data, batch.spans)
            except Interrupted:
                return  # left in flight: shutdown spools it
            self._finish(batch, delivered, reason)
            if batch.path is not None and self.spool is not None:  # an unlink can take ms
                await asyncio.get_running_loop().run_in_executor(None, self.spool.delete,
                                                                 batch.path)
                self._probe.succeeded()  # room on the spool's disk: try it at once

    async def _next_batch(self) -> SendBatch | None:
        # Spool and memory take turns, so a long spool does not starve new spans.
        # At shutdown the spool is left for the next run, but in write-ahead mode it is
        # the queue: it is delivered until the drain times out, like memory otherwise.
        self._turn += 1
        spool = self.spool if not self._closing or self._commit is not None else None
        if spool is not None and len(spool) > 0 and self._turn % 2 == 0:
            batch = await self._take_spooled()
            if batch is not None:
                return batch
        batch = self._queue.take()
        if batch is None and spool is not None:
            batch = await self._take_spooled()
        return batch

    async def _take_spooled(self) -> SendBatch | None:
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
        return SendBatch(data, spans, path)

    def _finish(self, batch: SendBatch, delivered: int, reason: str) -> None:
        self._inflight.discard(batch)
        if batch.path is not None:
            assert self.spool is not None
            self.spool.forget(batch.path)  # the worker deletes the file
        else:
            self._queue.release(batch)
        if delivered:
            self.metrics.exported.inc(delivered)
        if delivered < batch.spans:
            self.metrics.dropped.labels(reason).inc(batch.spans - delivered)
        self._update_gauges()

    def _update_gauges(self) -> None:
        self.metrics.held(self._queue, self.spool)
