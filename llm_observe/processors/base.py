"""The processor contract and the one helper that runs processors.

Processor authors write only the enrichment (after the OTel collector's
``processorhelper``): timing, counting, error isolation and ordering live in
:class:`ProcessorChain`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)
LOGGED_FAILURES = 5  # spans of one batch a failing processor logs by id


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
    - It runs on the collector's event-loop thread, unless ``blocking`` is true
      (CPU-heavy work that releases the GIL, e.g. onnxruntime), in which case
      the pipeline runs it in an executor thread while the loop keeps serving.
    """

    name: str
    blocking: bool

    def process(self, batch: list[LlmSpan]) -> None: ...


@dataclass(slots=True)
class ProcessorStats:
    """Per-processor counters, read by the self-metrics exporter."""

    spans: int = 0
    errors: int = 0
    seconds: float = 0.0


class ProcessorChain:
    """Runs processors in order with timing, counting and per-span error isolation."""

    def __init__(self, processors: Sequence[Processor]) -> None:
        self.processors = list(processors)
        self.stats = {p.name: ProcessorStats() for p in self.processors}

    def run_one(self, processor: Processor, batch: list[LlmSpan]) -> None:
        """Run one processor on a batch; never raises."""
        stats = self.stats[processor.name]
        start = time.perf_counter()
        try:
            processor.process(batch)
        except Exception:
            log.exception("processor %s failed on a batch of %d; isolating", processor.name,
                          len(batch))
            failed = 0
            for span in batch:
                try:
                    processor.process([span])
                except Exception as exc:
                    stats.errors += 1
                    span.errors.append(processor.name)
                    failed += 1
                    if failed <= LOGGED_FAILURES:  # with its trace id: "Logs for this span"
                        log.warning("processor %s failed on span %s: %s", processor.name,
                                    span.span_id, exc,
                                    extra={"trace_id": span.trace_id, "span_id": span.span_id})
        stats.spans += len(batch)
        stats.seconds += time.perf_counter() - start

    def run(self, batch: list[LlmSpan]) -> None:
        """Run every processor in order (all inline, including blocking ones)."""
        for processor in self.processors:
            self.run_one(processor, batch)
