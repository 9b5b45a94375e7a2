"""The stage contracts: :class:`Batch`, :class:`Processor` and :class:`Exporter`.

Tiny interfaces with written contracts, after the OTel Collector's ``consumer``
and OTel-python's ``SpanProcessor``: each says whether it may block or raise,
who owns the batch and which thread it runs on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from llm_observe.span import LlmSpan


@runtime_checkable
class Origin(Protocol):
    """Where a batch came from when a door received it as a whole (an OTLP request).

    Exporters that forward traces read it to send every span of the request on, not
    only the LLM ones. It is read-only from the moment the door built the batch.
    """

    @property
    def n_other(self) -> int:
        """Spans of the request that are no LLM call (passed through untouched)."""
        ...


class Batch(list[LlmSpan]):
    """The LLM spans of one request, plus the request they came from (``origin``).

    A list, so processors and exporters iterate it as one. ``origin`` is data for the
    exporters (an :class:`Origin`: for OTLP the decoded request, its other spans and the
    positions of rejected ones); None for spans built from JSON (the REST doors).
    """

    __slots__ = ("origin",)

    def __init__(self, spans: Iterable[LlmSpan] = (), origin: Origin | None = None) -> None:
        super().__init__(spans)
        self.origin = origin

    @property
    def size(self) -> int:
        """Every span an exporter is handed: the LLM spans and the origin's others."""
        return len(self) + (self.origin.n_other if self.origin is not None else 0)


@runtime_checkable
class Processor(Protocol):
    """One enrichment stage.

    Contract:
    - ``process(batch)`` enriches the spans in place and returns nothing.
    - It does no network I/O and must not block on anything but CPU.
    - It should not raise; if it does, the chain re-runs it span by span, marks
      the spans it failed on (``span.errors``) and counts them. Neighbours are
      never lost because one span was bad. Hence enrichment must be idempotent
      per span (set fields; never accumulate into them).
    - The batch is owned by the pipeline: do not keep references after return.
    - It runs on the collector's event-loop thread for a small batch, and in the
      pipeline's one worker thread for a large one (many spans or much text), so a
      big request never holds the loop; ``blocking`` (CPU-heavy work that releases
      the GIL, e.g. onnxruntime) always runs in that thread. State it shares with
      the doors (the tool-chain tracker the REST endpoints also use) takes a lock.
    - It may have a ``warm()`` method: the pipeline calls it once at start, in its worker
      thread, to load what would otherwise make the first span slow.
    """

    name: str
    blocking: bool

    def process(self, batch: list[LlmSpan]) -> None: ...


@runtime_checkable
class Exporter(Protocol):
    """A sink for enriched spans.

    Contract:
    - ``start()`` and ``shutdown(timeout)`` are called by the :class:`Pipeline` that owns
      the exporter, once each; ``shutdown`` drains what it can within ``timeout`` s.
    - ``export(batch)`` runs on the collector's event loop and must not block it:
      a slow backend sits behind the exporter's own bounded queue. It may keep
      references to the spans and the batch's origin but must not mutate either:
      every exporter sees the batch as the processors left it. The one exception is the
      OTLP forwarder (the first exporter), which rewrites the request of an origin holding
      LLM spans only in place (``otlp/inplace.py``): no exporter reads that request later.
    - ``has_room(n)`` says whether ``n`` more spans fit right now; the pipeline
      asks every exporter before processing a batch and answers the sender with
      backpressure (RESOURCE_EXHAUSTED / 503) instead of dropping.
    - ``export`` raises :class:`llm_observe.errors.RetryableError` only when it
      could not take the batch; every span it does take is either delivered or
      counted as dropped, never silently lost.
    """

    name: str

    def has_room(self, n: int) -> bool: ...

    async def start(self) -> None: ...

    async def export(self, batch: Batch) -> None: ...

    async def shutdown(self, timeout: float) -> None: ...
