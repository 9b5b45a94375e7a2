"""The one helper that runs processors (the contract is in :mod:`.contracts`).

Processor authors write only the enrichment (after the OTel collector's
``processorhelper``): timing, counting, error isolation and ordering live in
:class:`ProcessorChain`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from llm_observe.pipeline.contracts import Processor
from llm_observe.span import LlmSpan

log = logging.getLogger(__name__)
LOGGED_FAILURES = 5  # spans of one batch a failing processor logs by id


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

    def warm(self) -> None:
        """Call each processor's optional ``warm()`` (load models, tables); never raises."""
        for processor in self.processors:
            warm = getattr(processor, "warm", None)
            if warm is None:
                continue
            try:
                warm()
            except Exception:
                log.exception("processor %s failed to warm up; it will load on first use",
                              processor.name)

    def run(self, batch: list[LlmSpan]) -> None:
        """Run every processor in order (all inline, including blocking ones)."""
        for processor in self.processors:
            self.run_one(processor, batch)
