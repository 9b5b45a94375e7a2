"""In-process spans -> the collector's pipeline, for calls the collector makes itself.

The test-call and test-stream-call endpoints make a real LLM call through the patched
client inside the collector process. The library would export that span over OTLP to
``localhost:4317``; here it goes straight into the pipeline instead: an OpenTelemetry
SDK ``TracerProvider`` whose only processor is :class:`PipelineBridge` is handed to the
library with ``use_tracer_provider``. The bridge encodes the span as OTLP and maps it
with the receiver's dialects (:mod:`llm_observe.otlp`), submits the batch on the
collector's loop and wakes whoever waits for that trace id (the test-call handler).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from llm_observe.collector.assembly import Collector
from llm_observe.otlp.walk import decode_request, walk
from llm_observe.pipeline import Batch
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)

# service_name of the spans test calls record (their own label, apart from real traffic).
TEST_SERVICE = "llm-observe-test-call"
T = TypeVar("T")


def to_batch(span: ReadableSpan) -> Batch:
    """The pipeline batch of one library span: encoded as the OTLP exporter would send it
    and mapped by the receiver's own dialects, so a test call's span is read exactly as
    the same span arriving on :4317 (one mapping of attributes to LlmSpan fields)."""
    walked = walk(decode_request(encode_spans([span]).SerializeToString()))
    for rejection in walked.rejected:
        log.warning("in-process span not recorded: %s", rejection)
    return Batch(walked.llm, walked)


class PipelineBridge(SpanProcessor):
    """OTel span processor feeding finished LLM spans to one collector's pipeline.

    ``on_end`` runs on whichever thread ended the span; it never blocks and never
    raises: the span is handed to the collector's loop with ``call_soon_threadsafe``.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._collector: Collector | None = None
        self._waiters: dict[str, list[asyncio.Future[LlmSpan]]] = {}
        self._tasks: set[asyncio.Future[None]] = set()

    def attach(self, loop: asyncio.AbstractEventLoop, collector: Collector) -> None:
        self._loop = loop
        self._collector = collector

    def detach(self) -> None:
        self._loop = None
        self._collector = None
        for futures in self._waiters.values():
            for future in futures:
                if not future.done():
                    future.cancel()
        self._waiters.clear()

    def wait_for(self, trace_id: str) -> asyncio.Future[LlmSpan]:
        """A future resolved with the next enriched LLM span of ``trace_id`` (loop thread)."""
        future: asyncio.Future[LlmSpan] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(trace_id, []).append(future)
        return future

    def forget(self, trace_id: str) -> None:
        self._waiters.pop(trace_id, None)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        loop, ctx = self._loop, span.context
        if loop is None or ctx is None:
            return
        try:
            batch = to_batch(span)
            if batch:
                loop.call_soon_threadsafe(self._submit, batch)
        except Exception:  # an OTel processor must never raise into the caller
            log.exception("could not hand an in-process span to the pipeline")

    def _submit(self, batch: Batch) -> None:
        if self._collector is None:
            return
        task = asyncio.ensure_future(self._record(self._collector, batch))
        self._tasks.add(task)  # keep a reference until done (asyncio holds only weak ones)
        task.add_done_callback(self._tasks.discard)

    async def _record(self, collector: Collector, batch: Batch) -> None:
        try:
            await collector.pipeline.submit(batch)
        except Exception as exc:
            log.warning("in-process span(s) %s not recorded: %s",
                        ", ".join(s.span_id for s in batch), exc)
            for span in batch:
                span.extra["not_recorded"] = str(exc)
        for span in batch:
            for future in self._waiters.pop(span.trace_id, []):
                if not future.done():
                    future.set_result(span)

    def shutdown(self) -> None:
        self.detach()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


# One provider per process, whose only processor is the bridge; the bridge is re-targeted
# at whichever app is running (tests start several, one after another).
BRIDGE = PipelineBridge()
_provider: Any = None


def attach_bridge(collector: Collector) -> Callable[[], None]:
    """Send this process's library spans into ``collector``'s pipeline (call on its loop).

    Returns the undo: library spans go back to the global OpenTelemetry provider.
    """
    global _provider
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider

    from llm_observe.instrument import tracing

    if _provider is None:
        _provider = TracerProvider(resource=Resource.create({SERVICE_NAME: TEST_SERVICE}))
        _provider.add_span_processor(BRIDGE)
    # Whatever provider the process had chosen is put back on detach. tracing has no
    # public getter for it yet, hence the private read.
    previous = getattr(tracing, "_override", None)
    BRIDGE.attach(asyncio.get_running_loop(), collector)
    tracing.use_tracer_provider(_provider)

    def detach() -> None:
        BRIDGE.detach()
        tracing.use_tracer_provider(previous)

    return detach


def run_in_trace(trace_id: int, fn: Callable[[], T]) -> T:
    """Run ``fn`` under a non-recording parent span, so the LLM span it makes has ``trace_id``
    and the bridge can hand it to whoever waits for that trace (:meth:`wait_for`)."""
    parent = trace.NonRecordingSpan(trace.SpanContext(
        trace_id, random.getrandbits(64) or 1, is_remote=False,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED)))
    token = otel_context.attach(trace.set_span_in_context(parent))
    try:
        return fn()
    finally:
        otel_context.detach(token)
