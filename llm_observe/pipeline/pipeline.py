"""The pipeline: processors in order, then every exporter. One path for every door.

The OTLP receiver, the REST record endpoints and the test-call bridge all call
:meth:`Pipeline.submit`, so a span gets the same enrichment and the same metrics
whichever way it came in. The pipeline owns its exporters' lifecycle:
:meth:`start` before the doors open, :meth:`shutdown` after they closed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass

from llm_observe.errors import RetryableError
from llm_observe.pipeline.chain import ProcessorChain
from llm_observe.pipeline.contracts import Batch, Exporter, Processor
from llm_observe.pipeline.cpu import cpu_executor
from llm_observe.pipeline.placement import STEP_S, Place, place
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)


class Backpressure(RetryableError):
    """An exporter's queue is full: retry later (gRPC RESOURCE_EXHAUSTED / HTTP 503)."""

    def __init__(self, exporter: str, retry_after_s: float = 1.0) -> None:
        self.exporter = exporter
        self.retry_after_s = retry_after_s
        super().__init__(f"exporter {exporter!r} queue is full; retry in {retry_after_s:g}s")


@dataclass(slots=True)
class ExporterStats:
    """Per-exporter counters, read by the self-metrics (``selfmetrics.PipelineStats``)."""

    spans: int = 0
    refusals: int = 0


class Pipeline:
    """Processors then exporters. Runs on one event loop; blocking processors go to a thread."""

    def __init__(self, processors: Sequence[Processor], exporters: Sequence[Exporter],
                 executor: Executor | None = None) -> None:
        self.chain = ProcessorChain(processors)
        self.exporters = list(exporters)
        self.exporter_stats = {e.name: ExporterStats() for e in self.exporters}
        # The process's one CPU thread by default (pipeline/cpu.py): one worker, so
        # processors still run one batch at a time.
        self._executor = executor or cpu_executor()
        self._started = self._stopped = False

    @property
    def processors(self) -> list[Processor]:
        return self.chain.processors

    async def start(self) -> None:
        """Warm the processors up in the worker thread (token encodings load in one long
        call), then start every exporter (a forwarder opens its channel and sends a spool
        left by the last run at once). Idempotent."""
        if self._started:
            return
        self._started = True
        await asyncio.get_running_loop().run_in_executor(self._executor, self.chain.warm)
        for exporter in self.exporters:
            await exporter.start()

    def check_room(self, n: int) -> None:
        """Raise Backpressure if an exporter cannot take ``n`` more spans now."""
        for exporter in self.exporters:
            if not exporter.has_room(n):
                self.exporter_stats[exporter.name].refusals += 1
                raise Backpressure(exporter.name)

    async def process(self, batch: list[LlmSpan]) -> None:
        """Run every processor on the batch (in place), where :func:`placement.place`
        says: a large batch all in the worker thread (the loop keeps serving other clients
        meanwhile), a middling one on the loop, yielding between processors once
        :data:`placement.STEP_S` has passed, a small one straight through; on the loop,
        only the ``blocking`` processors are sent to the thread."""
        loop = asyncio.get_running_loop()
        where = place(batch)
        if where is Place.THREAD:
            await loop.run_in_executor(self._executor, self.chain.run, batch)
            return
        held = loop.time()
        for processor in self.chain.processors:
            if where is Place.STEPS and loop.time() - held > STEP_S:
                await asyncio.sleep(0)
                held = loop.time()
            if processor.blocking:
                await loop.run_in_executor(self._executor, self.chain.run_one, processor, batch)
            else:
                self.chain.run_one(processor, batch)

    async def submit(self, batch: Sequence[LlmSpan]) -> None:
        """Admit, enrich and export a batch; raises Backpressure before doing any work,
        or when an exporter could not take the batch (a write-ahead spool that cannot be
        written).

        Exporters run in the order given and the first that raises stops the batch: the
        ones after it never see it. So exporters that may refuse (they commit the batch:
        the forwarder) come first and the ones that only count (Prometheus) last, and a
        refused request changes no series: its retry is counted once (assembly.py orders
        them so). A plain list of spans is a :class:`Batch` without origin (REST doors).
        """
        if not isinstance(batch, Batch):
            batch = Batch(batch)
        if not batch.size:
            return
        self.check_room(batch.size)
        await self.process(batch)
        for exporter in self.exporters:
            await exporter.export(batch)
            self.exporter_stats[exporter.name].spans += batch.size

    async def shutdown(self, timeout: float = 10.0) -> None:
        """Drain every exporter within ``timeout`` seconds in total. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for exporter in self.exporters:
            try:
                await exporter.shutdown(max(0.0, deadline - loop.time()))
            except Exception:
                log.exception("exporter %s failed to shut down cleanly", exporter.name)

